/* SPDX-License-Identifier: MIT */
#pragma once

/* The Slab method's reply: live slab objects by call site, cache, task or unit (slab.h keeps them). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "accounting.h"

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

typedef struct LeaksQuery {
        uint64_t now_nsec;              /* CLOCK_MONOTONIC, the clock of the events' times */
        uint64_t min_age_nsec;          /* only objects at least this old */
        uint64_t interval_nsec;         /* growth: objects still live per interval of this length... */
        unsigned intervals;             /* ...over this many intervals before now, newest last */
        int32_t pid;                    /* only this process's objects; 0: every task's */
        size_t limit;
} LeaksQuery;

/* The Leaks method's reply: live objects older than min_age by call site, most bytes first, each with
 * how many of its live objects were allocated in each recent interval. -ENOMEM. */
int leaks_query_json(Accounting *a, const LeaksQuery *q, bool show_addresses, json_t **ret);
