/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The PageBreakdown view: pages by allocation order, GFP flags, migrate type or NUMA node and zone, for the
 * whole system, one task, one unit or one module. The charge cells keep the kind of every allocation
 * (page-kinds.h), so this is a walk of the cells of what is asked about, summing exact counts.
 */

#include <errno.h>
#include <stdint.h>

#include <jansson.h>

#include "view.h"

typedef enum BreakdownBy {
        BREAKDOWN_BY_ORDER,
        BREAKDOWN_BY_GFP,
        BREAKDOWN_BY_MIGRATETYPE,
        BREAKDOWN_BY_NODE,
        _BREAKDOWN_BY_MAX,
        _BREAKDOWN_BY_INVALID = -EINVAL,
} BreakdownBy;

const char *breakdown_by_to_string(BreakdownBy by);
BreakdownBy breakdown_by_from_string(const char *s);

typedef struct BreakdownQuery {
        BreakdownBy by;
        int32_t pid;            /* < 0: any */
        const char *unit;       /* NULL: any; as Unit.name */
        const char *module;     /* NULL: any; as Module.name */
        size_t limit;           /* rows; 0: all */
} BreakdownQuery;

/* The PageBreakdown reply. -ESRCH (no such task), -ENXIO (unit), -ENOENT (module), -ENOMEM. */
int breakdown_query_json(Accounting *a, const BreakdownQuery *q, json_t **ret);
