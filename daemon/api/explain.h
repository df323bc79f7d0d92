/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Explain view: a unit's memory as the kernel's memory controller counts it (memcg.h) beside what
 * memstrack attributes to it, and the difference between the two with its known reasons.
 *
 * memstrack's side splits what the unit's tasks allocated and still hold into what live processes hold
 * and what no live process owns any more (allocated by tasks that have exited: page cache, dentries,
 * inodes, socket buffers), each by process (exited ones by name), by page stack, and for slab objects by
 * cache, call site and stack. It costs one walk of the charge cells and, with --slab, one of the live
 * objects: a query, never the event path.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "view.h"
#include "memcg.h"
#include "query.h"
#include "usym.h"

#define EXPLAIN_LIMIT_DEFAULT 10
#define EXPLAIN_STACKS_DEFAULT 5
#define EXPLAIN_STACKS_MAX 100

typedef struct ExplainQuery {
        const char *name;               /* the unit, as Unit.name shows it; -ENXIO if unknown */
        size_t limit;                   /* rows per list (tasks, caches, call sites); 0: the default */
        unsigned stacks;                /* stacks per holder, <= EXPLAIN_STACKS_MAX */
        bool show_addresses;            /* raw kernel addresses (root callers only) */
        QueryUserAddresses user_addresses;
        uid_t caller_uid;
        UserSymbols *usym;
        const Memcg *memcg;             /* where the kernel's figures are; NULL: none, memcg_reason says why */
        const char *memcg_reason;
        long page_size;
        uint64_t lost_events;           /* records the source lost: memstrack's counts are lower bounds */
        unsigned stack_sample_interval; /* > 1: stacks are estimates (the counts are exact) */
        uint64_t uptime_usec;           /* how long memstrackd has been tracing */
        const Coldness *coldness;       /* the access rounds, held against the LRU's lists; NULL: none */
} ExplainQuery;

/* The Explain reply (io.memstrack.varlink). -ENXIO for an unknown unit, -ENOMEM. */
int explain_query_json(Accounting *a, const ExplainQuery *q, json_t **ret);

/* The ExplainUnits reply: for each unit named (a JSON array of names as Unit.name; unknown ones left out),
 * in that order, what its live processes and no live process hold, and its kernel figures. One walk of
 * the cells and one of the live objects for all of them. -ENOMEM. */
int explain_units_json(Accounting *a, json_t *names, const Memcg *memcg, long page_size, json_t **ret);

/* The kernel's figures of a cgroup as ExplainKernel: the hierarchy, the directory read, limits, memory.stat
 * figures with their sources, what the hierarchy lacks, and memory.events. New reference, NULL on OOM. */
json_t *explain_kernel_json(const Memcg *m, const char *cgroup, const MemcgFigures *f);
