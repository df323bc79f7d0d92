/* SPDX-License-Identifier: MIT */
#pragma once

/* The Slab method's reply: live slab objects by call site, cache, task or unit (slab.h keeps them). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "view.h"

typedef enum SlabBy {
        SLAB_BY_CALLSITE,
        SLAB_BY_CACHE,
        SLAB_BY_TASK,
        SLAB_BY_UNIT,
        _SLAB_BY_MAX,
        _SLAB_BY_INVALID = -EINVAL,
} SlabBy;

const char *slab_by_to_string(SlabBy by);
SlabBy slab_by_from_string(const char *s);

/* The rows with the most live bytes first, at most limit; raw call-site addresses only with
 * show_addresses. -ENOMEM. */
int slab_query_json(Accounting *a, SlabBy by, size_t limit, bool show_addresses, json_t **ret);

/* A call site's name (function+offset) and, with show_addresses, its address (else JSON null). */
void slab_call_site_json(Accounting *a, uint64_t address, bool show_addresses, json_t **ret_name,
                         json_t **ret_address);

/* The Top reply's slab field (TopSlab): the Slab reply by call site, names only. -ENOMEM. */
int slab_top_json(Accounting *a, size_t limit, json_t **ret);

/* Lost frees split by whether the call site's frees are visible (slab.h), and the marks. */
typedef struct SlabVisibility {
        uint64_t visible_allocs;        /* of call sites whose frees are visible */
        uint64_t visible_lost_frees;    /* of the same call sites */
        double visible_lost_frees_percent;
        uint64_t invisible_caches, invisible_sites;
        double lost_frees_per_hour;     /* all lost frees, over the time between the first and the last
                                         * allocation */
} SlabVisibility;
void slab_visibility_totals(Accounting *a, SlabVisibility *ret);

/* Status slabReconciliation: the reconciliations with /proc/slabinfo and the lost frees; JSON null without
 * --slab, NULL for lack of memory. */
json_t *slab_status_json(Accounting *a);
