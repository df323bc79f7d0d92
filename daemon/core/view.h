/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * View: the core as the query layer (api/) reads it, and the one core header api/ includes
 * (tests/check-layout.py holds it to that). A reader gets records as values with the figures a view
 * shows (ViewTask, ViewUnit, ViewNode, ViewCell, ...), by id or through an iterator over a scope, and
 * never a pointer into the core's tables: the page table, the charge index, the stack trees and the
 * tasks' array can change shape without a line of api/ changing.
 *
 * Ids are the core's indexes, stable until the next event is applied or a Reset; strings in a record
 * (names, comm, cmdline) are borrowed for as long. Nothing here changes a count, with one exception
 * stated where it is: view_reset(), the Reset a client may ask for.
 *
 * Besides this header a reader sees only the plain figures the core counts of itself (stats.h) and the
 * event record's vocabulary (event.h: frame markers, a heap's counters, a source's figures).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "ledger.h"
#include "stats.h"

typedef struct Accounting Accounting;
typedef struct Coldness Coldness;
typedef struct History History;
typedef struct HistorySeries HistorySeries;
typedef struct Ksym Ksym;

/* The Reset method: peaks become current values, or (all) every page, task and stack is forgotten. */
void view_reset(Accounting *a, bool all);

/* Figures of the core and its parts (stats.h). */
void view_accounting_stats(Accounting *a, AccountingStats *ret);
void view_usage_stats(Accounting *a, UsageStats *ret);
void view_stack_stats(Accounting *a, StackTreeStats *ret);
/* The core's memory and its budget (--max-memory): what it holds and what it gave up. */
void view_budget_stats(Accounting *a, BudgetStats *ret);
/* A step's name, for steps 0 .. BUDGET_STEPS - 1 in the order they are taken: "slabObjects", ... */
const char *view_budget_step_name(unsigned step);
/* Current pages charged to "[truncated]" nodes of the page stack tree: a scan of its nodes. */
uint64_t view_truncated_pages(Accounting *a);
/* Resident pages the live processes seeded at the start held before tracing, and how many they are. */
uint64_t view_baseline_pages(Accounting *a, size_t *ret_tasks);
/* The kernel symbols frames are named with (NULL: none), and whether slab objects are traced. */
const Ksym *view_ksym(Accounting *a);
bool view_traces_slab(Accounting *a);

/* --- Tasks ------------------------------------------------------------------------------------------ */

#define VIEW_TASK_NONE UINT32_MAX
/* The record that sums what evicted tasks still hold: no task, reported apart ("evicted"). */
#define VIEW_TASK_EVICTED 0u
#define VIEW_EVICTED_COMM "[evicted]"
#define VIEW_COMM_MAX 16

typedef struct ViewTask {
        uint32_t id;
        uint32_t process;               /* its process's record: itself for a process */
        int32_t pid;                    /* tgid for a process, tid for a thread */
        int32_t parent_pid;             /* a process's parent when it was forked or seeded; 0 unknown */
        const char *comm;
        const char *cmdline;            /* NULL when unknown */
        Ledger pages;
        Ledger slab_bytes;
        uint64_t allocs, frees;         /* charges and releases, of any unit */
        uint64_t baseline_pages;        /* resident before tracing began; 0 if not seeded */
        uint64_t first_seen_nsec;       /* tells a reused pid apart */
        uint32_t unit;                  /* a process: the unit of the cgroup it last allocated in; VIEW_UNIT_NONE */
        bool is_thread;
        bool exited;
} ViewTask;

/* Every id is below it. */
size_t view_task_slots(Accounting *a);
/* The task of a slot: false for a free slot or one whose task was evicted. */
bool view_task(Accounting *a, uint32_t id, ViewTask *ret);
/* The live process with this pid, else the newest that exited; VIEW_TASK_NONE if none. */
uint32_t view_find_process(Accounting *a, int32_t pid);
/* The task a process node of a stack tree stands for (ViewNode.ip); false once it was evicted. */
bool view_task_of_scope(Accounting *a, uint64_t scope, ViewTask *ret);
/* Who answers in views for what slot id holds (a page's, an object's): its process, or VIEW_TASK_EVICTED
 * once that was evicted. */
uint32_t view_task_owner(Accounting *a, uint32_t id);
/* The process record of any slot still named, evicted or not. */
uint32_t view_task_process(Accounting *a, uint32_t id);
bool view_tracks_threads(Accounting *a);

/* --- Kernel modules --------------------------------------------------------------------------------- */

#define VIEW_MODULE_NONE 0u
#define VIEW_KERNEL_MODULE "vmlinux"

typedef struct ViewModule {
        uint16_t id;
        const char *name;
        Ledger pages;
        uint64_t allocs, frees;
        bool loaded;                    /* a load, a free or kallsyms said so */
        bool kernel;                    /* the kernel image (VIEW_KERNEL_MODULE), which is always there */
} ViewModule;

/* Ids are 1 .. view_module_count(). */
size_t view_module_count(Accounting *a);
bool view_module(Accounting *a, uint16_t id, ViewModule *ret);
/* The module of a name as clients were shown it (UTF-8-escaped); VIEW_MODULE_NONE if none. */
uint16_t view_find_module_shown(Accounting *a, const char *name);

/* --- Systemd units ---------------------------------------------------------------------------------- */

#define VIEW_UNIT_NONE 0u
#define VIEW_UNKNOWN_UNIT "[unknown]"

typedef struct ViewUnit {
        uint32_t id;
        const char *name;               /* NULL while none of its cgroups is named */
        const char *cgroup;             /* the path of the cgroup named into it last; NULL: none */
        Ledger pages;
        Ledger slab_bytes;
        uint64_t allocs, frees;
        bool live;                      /* some cgroup of it is not known to be removed */
} ViewUnit;

/* Ids are 1 .. view_unit_count() - 1. */
size_t view_unit_count(Accounting *a);
bool view_unit(Accounting *a, uint32_t id, ViewUnit *ret);
/* The unit of a name as clients were shown it; VIEW_UNIT_NONE if none. */
uint32_t view_find_unit_shown(Accounting *a, const char *name);

/* --- Charge cells: pages of one (process, module, stack, cgroup, kind) -------------------------------- */

typedef enum ViewScopeKind {
        VIEW_SCOPE_ALL,
        VIEW_SCOPE_PROCESS,             /* id: a process record */
        VIEW_SCOPE_MODULE,              /* id: a module id */
        VIEW_SCOPE_UNIT,                /* id: a unit */
} ViewScopeKind;

typedef struct ViewScope {
        ViewScopeKind kind;
        uint32_t id;
} ViewScope;

#define VIEW_SCOPE_EVERY ((ViewScope) { .kind = VIEW_SCOPE_ALL })

typedef struct ViewCell {
        uint32_t id;                    /* below view_cell_bound() */
        uint32_t process;               /* the process record (maybe evicted since) */
        uint32_t node;                  /* the stack node charged: a process-tree leaf with per-process trees */
        uint32_t leaf;                  /* that leaf in the global tree */
        uint32_t unit;                  /* the unit of its cgroup now */
        uint32_t kind;                  /* a page kind (view_page_kind()) */
        uint16_t module;
        bool sampled;                   /* pages of aggregated samples, not blocks */
        uint64_t pages;
} ViewCell;

typedef void (*ViewCellFn)(void *userdata, const ViewCell *cell);

/* Calls fn with each cell of the scope: O(its cells) for a process or a module, a walk of every cell
 * for a unit or all. */
void view_foreach_cell(Accounting *a, ViewScope scope, ViewCellFn fn, void *userdata);
/* Every cell id is below it: for arrays indexed by cell. */
size_t view_cell_bound(Accounting *a);
/* The cell of an id; false if it holds no pages. */
bool view_cell(Accounting *a, uint32_t id, ViewCell *ret);

/* --- Tracked pages ---------------------------------------------------------------------------------- */

typedef struct ViewBlock {
        uint64_t pfn;
        unsigned order;                 /* 2^order pages */
        uint32_t cell;                  /* its charge cell */
        uint64_t age_nsec;              /* since its allocation, to VIEW_PAGE_AGE_GRAIN_NSEC */
} ViewBlock;

#define VIEW_PAGE_AGE_GRAIN_NSEC (UINT64_C(1) << 28)

typedef void (*ViewBlockFn)(void *userdata, const ViewBlock *block);
/* Calls fn with every tracked block (a walk of the page table), ages as of now_nsec. */
void view_foreach_block(Accounting *a, uint64_t now_nsec, ViewBlockFn fn, void *userdata);

/* --- How long pages went untouched (an access source's sampling rounds) ------------------------------- */

/* A cell's pages at the last round by class: hot, warm, cold, unknown (the source says nothing of them),
 * newer (allocated after the source's regions were taken). */
#define VIEW_COLD_CLASSES 5
#define VIEW_COLD_HOT 0u
#define VIEW_COLD_WARM 1u
#define VIEW_COLD_COLD 2u
#define VIEW_COLD_UNKNOWN 3u
#define VIEW_COLD_NEWER 4u

/* "hot", "warm", "cold", "unknown", "newer"; NULL past them. */
const char *view_cold_class_name(unsigned class);
/* Adds the cell's pages by class at the last round into sum (VIEW_COLD_CLASSES counts); false (nothing
 * added) if the round has none for it: it was made since, or its id is another owner's now. c NULL: no
 * access source runs. */
bool view_cold_cell(const Coldness *c, const ViewCell *cell, uint64_t sum[static VIEW_COLD_CLASSES]);
/* The rounds' figures and the source's name, detail and reason (borrowed until the next round; NULL:
 * none). c NULL: zeros and NULLs. */
void view_cold_stats(const Coldness *c, ColdStats *ret, const char **ret_source, const char **ret_detail,
                const char **ret_reason);

/* --- Kinds of page allocation ----------------------------------------------------------------------- */

#define VIEW_PAGE_KIND_UNKNOWN 0u

typedef struct ViewPageKind {
        bool known;                     /* false for aggregated samples and kinds past the bound */
        uint8_t order;
        int8_t migrate_type;            /* -1: the source does not know */
        uint16_t zone;                  /* view_zone() */
        uint64_t gfp_flags;
} ViewPageKind;

/* Ids are 0 .. view_page_kind_count() - 1. */
size_t view_page_kind_count(Accounting *a);
bool view_page_kind(Accounting *a, uint32_t id, ViewPageKind *ret);
/* GFP flags by the running kernel's names, into buf; buf. */
char *view_gfp_text(Accounting *a, uint64_t flags, char *buf, size_t size);
bool view_gfp_names_known(Accounting *a);
/* A migrate type's name as /proc/pagetypeinfo has it; NULL if unknown. */
const char *view_migrate_type_name(int32_t migrate_type);
/* A zone's NUMA node and name; false for a zone not known. */
bool view_zone(Accounting *a, uint16_t zone, int32_t *ret_node, const char **ret_name);
bool view_zones_known(Accounting *a);

/* --- Call stacks ------------------------------------------------------------------------------------ */

typedef enum ViewTree {
        VIEW_TREE_PAGES,                /* every page's allocation stack, and per process with --per-process-stacks */
        VIEW_TREE_SLAB,                 /* slab objects' stacks (ViewSlabObject.stack), with --slab */
        VIEW_TREE_HEAP,                 /* the recorded user-space heaps' stacks */
        _VIEW_TREE_MAX,
} ViewTree;

typedef enum ViewFrameKind {
        VIEW_FRAME_ROOT,
        VIEW_FRAME_KERNEL,
        VIEW_FRAME_USER,
        VIEW_FRAME_PROCESS,             /* a process's subtree; ip: its scope (view_task_of_scope()) */
        VIEW_FRAME_TRUNCATED,           /* "[truncated]": stacks the node budget cut short here */
} ViewFrameKind;

#define VIEW_NODE_ROOT 0u
#define VIEW_NODE_NONE UINT32_MAX

typedef struct ViewNode {
        uint32_t id;
        uint32_t parent, first_child, next_sibling;     /* VIEW_NODE_NONE: none */
        uint64_t ip;
        ViewFrameKind kind;
        uint16_t module;                /* the module of chains ending here (view_module()); VIEW_MODULE_NONE:
                                         * none of its frames is in a module (the kernel image's) */
} ViewNode;

/* Every node id of the tree is below it; 0 for a tree this daemon does not keep. */
size_t view_tree_size(Accounting *a, ViewTree tree);
/* false for an id out of range. */
bool view_node(Accounting *a, ViewTree tree, uint32_t id, ViewNode *ret);
/* A node's pages now and at their true peak (bytes in the heap tree); zeros out of range. */
Ledger view_node_pages(Accounting *a, ViewTree tree, uint32_t id);
/* The node of a process's own tree in the page tree (per-process stacks), VIEW_NODE_NONE if it has none. */
uint32_t view_process_tree(Accounting *a, uint32_t process);
/* Pages allocated through a node of the page tree since tracing began or the last Reset(all): blocks and
 * samples' pages, never taken off by a free; 0 out of range. */
uint64_t view_node_allocated(Accounting *a, uint32_t id);
/* Calls fn with each node of the page tree below its root (process trees left out) that chains ending
 * there allocated pages through, and how many (its allocations less its children's): the values add up
 * to the root's view_node_allocated(). A pass over every node; -ENOMEM. */
typedef void (*ViewNodeAllocatedFn)(void *userdata, uint32_t node, uint64_t pages);
int view_foreach_own_allocated(Accounting *a, ViewNodeAllocatedFn fn, void *userdata);

/* --- Slab objects (what slab events brought, traced or replayed) ----------------------------------- */

#define VIEW_SLAB_NONE UINT32_MAX
/* How often the slab counts are held against the kernel's. */
#define VIEW_SLAB_RECONCILE_INTERVAL_NSEC UINT64_C(2000000000)

typedef struct ViewSlabObject {
        uint32_t site, cache;           /* view_slab_site(), view_slab_cache(); cache VIEW_SLAB_NONE: unnamed */
        uint32_t task;                  /* the allocating task's slot (view_task_owner(), view_task_process()) */
        uint32_t unit;                  /* of the allocating cgroup; VIEW_UNIT_NONE: none known */
        uint32_t stack;                 /* its leaf in VIEW_TREE_SLAB */
        uint32_t requested, allocated;  /* bytes */
        uint64_t time_nsec;             /* of the allocation */
} ViewSlabObject;

typedef void (*ViewSlabObjectFn)(void *userdata, const ViewSlabObject *o);
/* Calls fn with every live object, in no order. */
void view_foreach_slab_object(Accounting *a, ViewSlabObjectFn fn, void *userdata);

/* A cache's figures from /proc/slabinfo at the last reconciliation. */
typedef struct ViewSlabKernel {
        bool known;                     /* the last reconciliation had a figure for it */
        uint64_t active_objects;
        uint64_t start_active_objects;  /* at the first reconciliation after tracing began */
        uint64_t bound, slack;          /* the most live objects memstrack may count, and what is allowed above */
        uint64_t live_objects, allocs;  /* memstrack's own, right after the reconciliation */
} ViewSlabKernel;

/* One call site or one cache. */
typedef struct ViewSlabGroup {
        uint64_t address;               /* a call site's kernel address; 0 for a cache */
        const char *name;               /* a cache's name; NULL for a call site */
        uint32_t cache;                 /* a call site: the cache of its last allocation; VIEW_SLAB_NONE */
        bool size_class;                /* "[size-N]": objects of unnamed caches of N bytes */
        bool drifting;                  /* held more live objects than the kernel counts active */
        bool frees_visible;             /* its frees fire tracepoints: its counts are not an upper bound */
        uint64_t live_objects, live_requested;
        Ledger live_allocated;
        uint64_t allocs, frees, remote_frees, lost_frees;
        uint64_t trimmed;               /* objects dropped to stay within the kernel's figures (caches) */
        ViewSlabKernel kernel;          /* caches */
} ViewSlabGroup;

size_t view_slab_site_count(Accounting *a);
bool view_slab_site(Accounting *a, uint32_t site, ViewSlabGroup *ret);
size_t view_slab_cache_count(Accounting *a);
bool view_slab_cache(Accounting *a, uint32_t cache, ViewSlabGroup *ret);
void view_slab_stats(Accounting *a, SlabStats *ret);
void view_slab_reconcile_stats(Accounting *a, SlabReconcileStats *ret);

/* --- Recorded user-space heaps ---------------------------------------------------------------------- */

#define VIEW_HEAP_NONE UINT32_MAX
/* Heap nodes count blocks in fractions of this: a sampled block stands for 1/p blocks. */
#define VIEW_HEAP_BLOCK_UNIT 256u

typedef struct ViewHeap {
        uint32_t serial;
        int32_t pid;
        const char *comm;
        const char *cmdline;            /* NULL: unknown */
        const char *maps;               /* /proc/PID/maps as last read; NULL: none */
        uint64_t sample_interval;       /* bytes per sampled stack; 1: every allocation */
        MsHeapCounters counters;        /* exact, as the process last reported them */
        uint64_t sampled_blocks, unmatched_frees, dropped;
        uint64_t start_nsec, end_nsec;
        MsHeapEnd end;
        bool ended;
        uint32_t n_growth;              /* points of its live bytes over its life (view_heap_point()) */
        uint64_t timeline_dropped;      /* changes its timeline could not keep */
} ViewHeap;

size_t view_heap_count(Accounting *a);
bool view_heap(Accounting *a, uint32_t serial, ViewHeap *ret);
/* The open heap of pid, else its latest; VIEW_HEAP_NONE. */
uint32_t view_find_heap(Accounting *a, int32_t pid);
bool view_heap_point(Accounting *a, uint32_t serial, uint32_t i, uint32_t *ret_msec, uint64_t *ret_live_bytes);
/* The heap's "[heap ...]" node in VIEW_TREE_HEAP, VIEW_NODE_NONE before its first sampled block. */
uint32_t view_heap_scope_node(Accounting *a, uint32_t serial);

/* Factors that turn a heap's estimates into its exact counts, now and at its maximum. */
typedef struct ViewHeapScale {
        double now_bytes, now_blocks;
        double max_bytes, max_blocks;
} ViewHeapScale;
ViewHeapScale view_heap_scale(Accounting *a, uint32_t serial);

/* A node's figures for one heap: bytes now and peak, blocks now, bytes and blocks at the heap's maximum. */
typedef struct ViewHeapNode {
        Ledger bytes;
        uint64_t blocks, max_bytes, max_blocks;         /* blocks in VIEW_HEAP_BLOCK_UNIT */
} ViewHeapNode;
void view_heap_node(Accounting *a, uint32_t serial, uint32_t node, ViewHeapNode *ret);
void view_heap_stats(Accounting *a, HeapStats *ret);

/* How long the sampled blocks freed at a node itself lived (the stacks that end there): freed[i] below
 * view_heap_lifetime_bound_usec(i), the last bucket beyond the last bound; temporary: freed on their own
 * thread before it allocated again, within a millisecond. Blocks in VIEW_HEAP_BLOCK_UNIT. */
#define VIEW_HEAP_LIFETIME_BUCKETS 6u
typedef struct ViewHeapLifetimes {
        uint64_t freed[VIEW_HEAP_LIFETIME_BUCKETS];
        uint64_t temporary;
} ViewHeapLifetimes;
uint64_t view_heap_lifetime_bound_usec(unsigned i);
typedef void (*ViewHeapLifetimesFn)(void *userdata, uint32_t node, const ViewHeapLifetimes *l);
/* Calls fn for every node of a heap's stacks that its blocks were freed at, in no order. */
void view_heap_foreach_lifetimes(Accounting *a, uint32_t serial, ViewHeapLifetimesFn fn, void *userdata);

/* A heap's timeline: what each stack leaf allocated and freed in each bucket of bucket_nsec from the heap's
 * start (bytes, and blocks in VIEW_HEAP_BLOCK_UNIT), in bucket order. */
typedef struct ViewHeapTimelineCell {
        uint32_t bucket;
        uint32_t node;
        uint64_t alloc_bytes, alloc_blocks, free_bytes, free_blocks;
} ViewHeapTimelineCell;
uint64_t view_heap_timeline_bucket_nsec(Accounting *a, uint32_t serial);
size_t view_heap_timeline_count(Accounting *a, uint32_t serial);
bool view_heap_timeline_cell(Accounting *a, uint32_t serial, size_t i, ViewHeapTimelineCell *ret);

/* --- History ---------------------------------------------------------------------------------------- */

typedef enum ViewHistoryKind {
        VIEW_HISTORY_TOTAL,
        VIEW_HISTORY_TASK,
        VIEW_HISTORY_UNIT,
        VIEW_HISTORY_MODULE,
} ViewHistoryKind;

#define VIEW_HISTORY_LEVELS 2

typedef struct ViewHistorySample {
        uint64_t time_usec;             /* the bucket's start, CLOCK_REALTIME */
        uint64_t current_pages;
        uint64_t peak_pages;
} ViewHistorySample;

/* "total", "task", "unit", "module". */
const char *view_history_kind_to_string(ViewHistoryKind kind);
uint64_t view_history_resolution_usec(unsigned level);
size_t view_history_buckets(unsigned level);
/* The finest level whose span covers seconds back from now; the coarsest if none. */
unsigned view_history_level_for(uint64_t seconds);
/*
 * The series of the total, a process (pid) or a unit or module named as clients were shown it (name),
 * tracked from now on if it was not (the one thing it changes: which series History keeps). Its id into
 * *ret and its owner's name into *ret_name (NULL for the total). -ESRCH no such process, -ENXIO no such
 * unit, -ENOENT no such module, -ENOSPC no series left to track it in.
 */
int view_history_series(History *h, Accounting *a, ViewHistoryKind kind, int32_t pid, const char *name,
                const HistorySeries **ret, const char **ret_name);
/* Buckets of level with a start at or after since_usec, oldest first, empty ones left out: at most
 * view_history_buckets(level) into buf. Returns how many, or -ENOMEM. */
ssize_t view_history_read(const HistorySeries *series, unsigned level, uint64_t since_usec, ViewHistorySample *buf);
