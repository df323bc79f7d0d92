/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The query layer: read-only JSON views of the accounting core, in the shapes of protocol/io.memstrack.varlink.
 * The only daemon module besides the server that builds JSON; the core stays free of jansson.
 *
 * Every function bounds its work: lists are cut at their limit (and QUERY_LIMIT_MAX), a stack tree at
 * QUERY_STACK_NODES_MAX rendered nodes. They return -errno: -ENOMEM, -ESRCH (no such task), -ENOENT
 * (no such module), -ENXIO (no such unit), -EINVAL (bad parameter). On success *ret is a new reference.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "macro.h"
#include "view.h"
#include "usym.h"

#define QUERY_LIMIT_MAX 10000
#define QUERY_STACK_NODES_MAX 20000

typedef enum QuerySort {
        QUERY_SORT_CURRENT,
        QUERY_SORT_PEAK,
        QUERY_SORT_ALLOCS,
        _QUERY_SORT_MAX,
        _QUERY_SORT_INVALID = -EINVAL,
} QuerySort;

/* NULL means the default (current). */
QuerySort query_sort_from_string(const char *s);

typedef struct QueryTasks {
        QuerySort sort;
        size_t limit;
        int32_t pid;            /* < 0: any */
        const char *comm;       /* NULL: any */
        bool include_exited;
        bool threads;           /* fill Task.threads */
        bool hide_zero;         /* leave out tasks whose sort key is 0 (unless pid is given) */
        const Coldness *coldness;       /* the access rounds: a process's "cold" (ColdPages); NULL: none */
} QueryTasks;

/* {"tasks": [Task...], "evicted": EvictedTasks}; the "[evicted]" record is never in tasks. */
int query_tasks(Accounting *a, const QueryTasks *q, json_t **ret);
/* EvictedTasks: what the tasks forgotten to bound memory still hold, in one sum. */
json_t *query_evicted_json(Accounting *a);
/* [Module...] sorted, at most limit; modules with no pages ever are left out. */
int query_modules(Accounting *a, QuerySort sort, size_t limit, json_t **ret);
/* The Task object of one record (threads not filled, nor the heap: query_task_heap()). */
json_t *query_task_json(const ViewTask *t);
/* The heap (its serial) the task's process records, if it is this process's: one still running, or one
 * its exit ended for a task that exited (an older one under the same pid was another process's);
 * VIEW_HEAP_NONE if none. */
uint32_t query_task_heap_serial(Accounting *a, const ViewTask *t);
/* Adds heapBytes and heapPeakBytes to task's object: its process's user-space heap (null when it records
 * none). -ENOMEM. */
int query_task_heap(Accounting *a, const ViewTask *t, json_t *task);

/*
 * Whose raw user-space addresses a reply shows, in user frames without a symbol ("[user] 0x7f..."; the
 * others read "[user] [unknown]") and in StackNode.address. Another user's process's addresses are kept
 * from a caller as the kernel's are: they give its memory layout away. The zero value shows none.
 */
typedef enum QueryUserAddresses {
        QUERY_USER_ADDRESSES_NONE,      /* a reply kept for any caller (OomKills) */
        QUERY_USER_ADDRESSES_OWN,       /* of the running processes that are wholly caller_uid's (read_proc_owner()) */
        QUERY_USER_ADDRESSES_ALL,       /* every process's: root */
        _QUERY_USER_ADDRESSES_MAX,
        _QUERY_USER_ADDRESSES_INVALID = -EINVAL,
} QueryUserAddresses;

#define QUERY_UNIT_STACKS_MAX 100

typedef struct QueryUnits {
        QuerySort sort;         /* current or peak */
        size_t limit;
        const char *name;       /* NULL: every unit; else only this one (as shown), -ENXIO if unknown */
        unsigned stacks;        /* Unit.topStacks: this many stacks per unit (<= QUERY_UNIT_STACKS_MAX); 0: null */
        bool hide_zero;         /* leave out units whose sort key is 0 */
        bool show_addresses;    /* raw kernel addresses in frames (root callers only) */
        QueryUserAddresses user_addresses;
        uid_t caller_uid;       /* for QUERY_USER_ADDRESSES_OWN */
        UserSymbols *usym;      /* symbolizes user frames of live processes; NULL: raw addresses */
        const Coldness *coldness;       /* the access rounds: a unit's "cold" (ColdPages); NULL: none */
} QueryUnits;

/*
 * [Unit...] sorted, at most limit. Units whose pages were never above 0 are left out unless asked for by
 * name. The listed units' stacks come from the charge index (cells of their cgroups: one walk of all
 * cells, whatever the limit), the biggest by current pages, innermost frame first.
 */
int query_units(Accounting *a, const QueryUnits *q, json_t **ret);

typedef struct QueryStackTree {
        int32_t pid;            /* < 0: all tasks */
        const char *unit;       /* NULL: all units */
        const char *module;     /* NULL: all modules */
        unsigned max_depth;
        uint64_t min_pages;
        unsigned max_children;
        QuerySort sort;         /* current or peak */
        bool show_addresses;    /* raw kernel addresses (root callers only) */
        QueryUserAddresses user_addresses;
        uid_t caller_uid;       /* for QUERY_USER_ADDRESSES_OWN */
        UserSymbols *usym;      /* symbolizes user frames of live processes; NULL: raw addresses */
} QueryStackTree;

/* {"root": StackNode, "totalPages": N} */
int query_stacktree(Accounting *a, const QueryStackTree *q, json_t **ret);

/* [StackPages...]: the limit biggest stacks by current pages over every task and unit (Unit.topStacks'
 * shape), from one walk of the charge cells. No raw user-space address is shown. */
int query_top_stacks(Accounting *a, size_t limit, bool show_addresses, UserSymbols *usym, json_t **ret);

/*
 * Names the frames of a tree one by one as StackTree's StackNode does (frame, module, address, with the
 * addresses view allows: show_addresses, user_addresses, caller_uid and usym; the rest ignored). User
 * frames are named in the process of the "[pid N comm]" node named last: name a process's node before
 * its user frames. query_framer_frame() returns {frame, module, address}, a new reference, NULL on OOM.
 */
typedef struct QueryFramer QueryFramer;
QueryFramer *query_framer_new(Accounting *a, ViewTree tree, const QueryStackTree *view);
QueryFramer *query_framer_free(QueryFramer *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(QueryFramer *, query_framer_free);
json_t *query_framer_frame(QueryFramer *f, uint32_t node);

/* A stack leaf's frames, innermost first, as StackPages.frames, with the addresses view (show_addresses,
 * user_addresses, caller_uid and usym; the rest ignored) allows; NULL on OOM. */
json_t *query_stack_frames_json(Accounting *a, uint32_t leaf, const QueryStackTree *view);
/* The same for a leaf of another tree of the core's (VIEW_TREE_SLAB). */
json_t *query_tree_frames_json(Accounting *a, ViewTree tree, uint32_t leaf, const QueryStackTree *view);
