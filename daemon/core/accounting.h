/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Accounting: the core. Consumes MsEvents from any source and keeps, live, who owns every tracked page
 * (PageMap), pages per task and module (Usage), per cgroup and unit (Units) and per call-chain node
 * (StackTree), each a Ledger of its
 * unit (ledger.h). Page records charge through the PageMap; aggregated samples (MS_EVENT_SAMPLE) charge
 * the same counters by +n/-n with a known peak (see handle_sample() for what their peaks mean). Knows
 * nothing of perf, tracefs, JSON or sockets; the query layer reads it through the accessors below.
 *
 * Invariants (accounting_check_sums(), run after events in tests/test-accounting.c and the query fuzzer):
 *   - sum of current pages over processes == over stack leaves == tracked pages in the PageMap +
 *     sampled_pages;
 *   - a free takes pages off the task/node/module/cgroup that allocated them, whoever frees, wherever the
 *     allocating task has moved since;
 *   - sum of current pages over units == over processes;
 *   - every peak is the maximum its current value reached, never a sum of other peaks;
 *   - a free of pages never seen allocated is counted (untracked_*), never an error;
 *   - the ChargeIndex cells of a process (module) add up to its current pages;
 *   - every tracked page is charged to exactly one module record: the innermost module frame of its
 *     chain, "[loading]"/the module being loaded for the module loader, else "vmlinux".
 *   - no count wraps: the total of current pages, and its peak, stay at or below ACCOUNTING_PAGES_MAX, so
 *     its parts (tasks, modules, units, stack nodes, charge cells) do too; other counts stop at COUNT_MAX
 *     (macro.h). An event that would take a count beyond is applied up to it and counted
 *     (saturated_events). The invariants above hold while saturated_events is 0.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "chargeindex.h"
#include "event.h"
#include "heap.h"
#include "ksym.h"
#include "page-kinds.h"
#include "pagemap.h"
#include "stacktree.h"
#include "units.h"
#include "slab.h"
#include "usage.h"
#include "stats.h"

/*
 * The most pages the core counts in all, current or peak: 2^52 - 1, all but one of the pages a 64-bit
 * machine can have (MS_PAGES_MAX), what a charge cell holds, and an integer a JSON reader that reads
 * numbers as doubles still gets exactly.
 */
#define ACCOUNTING_PAGES_MAX CHARGE_CELL_PAGES_MAX

/* Module records every Accounting has: the kernel image, and module loads not yet named by the kernel. */
#define ACCOUNTING_KERNEL_MODULE "vmlinux"
#define ACCOUNTING_LOADING_MODULE "[loading]"

typedef struct AccountingConfig {
        size_t max_stack_nodes;         /* stack-tree node budget */
        size_t max_exited_tasks;        /* exited task records kept */
        size_t expected_pages;          /* sizing hint for the page table */
        bool track_threads;             /* per-thread records besides per-process ones */
        bool per_process_stacks;        /* a stack tree per process (true peaks per task and chain) besides
                                         * the global one; costs a second path walk per event and nodes per
                                         * (process, chain), so it is opt-in */
        bool slab;                      /* slab object events are traced (memstrackd --slab) */
        size_t max_slab_objects;        /* live slab objects kept; more are dropped and counted */
        size_t max_heap_blocks;         /* sampled user heap blocks kept (heap.h) */
        size_t max_heaps;               /* user heaps recorded (heap.h) */
        bool heap_shares;               /* one heap takes at most a share of the blocks and nodes (heap.h):
                                         * when every user's processes hand theirs over (--heap-socket) */
        uint64_t max_memory_bytes;      /* the core's tables held below it (budget.h); 0: no budget */
} AccountingConfig;

#define ACCOUNTING_CONFIG_DEFAULT                                                                       \
        ((AccountingConfig) {                                                                           \
                .max_stack_nodes = 1u << 20,                                                            \
                .max_exited_tasks = 4096,                                                               \
                .expected_pages = 1u << 18,                                                             \
                .max_slab_objects = 1u << 20,                                                           \
                .max_heap_blocks = 1u << 22,                                                            \
                .max_heaps = 1u << 16,                                                                  \
        })

typedef enum AccountingReset {
        ACCOUNTING_RESET_PEAKS,         /* peaks become current values */
        ACCOUNTING_RESET_ALL,           /* forget every page, task and stack: as if tracing began now */
        _ACCOUNTING_RESET_MAX,
        _ACCOUNTING_RESET_INVALID = -EINVAL,
} AccountingReset;

typedef struct Accounting Accounting;

/* ksym is borrowed (may be NULL: no module attribution); it must outlive the Accounting or be replaced. */
int accounting_new(const AccountingConfig *config, const Ksym *ksym, Accounting **ret);
Accounting *accounting_free(Accounting *a);

/* Applies one event of any type. Never fails: what cannot be applied is counted in AccountingStats. */
void accounting_handle_event(Accounting *a, const MsEvent *event);

/* A hint that a page event for pfn comes soon (pagemap_prefetch()): a source that holds a batch of events
 * calls it a few events ahead of each it delivers. */
void accounting_prefetch_page(Accounting *a, uint64_t pfn);
/* A sink that feeds this Accounting, for event sources. */
MsEventSink accounting_sink(Accounting *a);

/*
 * A module was loaded and the symbol table does not know it yet (the reload is deferred so a burst of
 * loads costs one): stack nodes created from now on are classified again by the next
 * accounting_set_ksym().
 */
void accounting_symbols_stale(Accounting *a);
bool accounting_symbols_are_stale(const Accounting *a);
/* Whether each process has a stack tree of its own (AccountingConfig.per_process_stacks). */
bool accounting_per_process_stacks(const Accounting *a);
/* Whether slab objects are traced (AccountingConfig.slab). */
bool accounting_traces_slab(const Accounting *a);
/*
 * Replaces the symbol table (e.g. after a module load). New stack nodes use it; nodes created since
 * accounting_symbols_stale() are classified again and, if one's module changed, the blocks allocated
 * through it move to that module (one walk of the page table). Older nodes keep their module.
 */
void accounting_set_ksym(Accounting *a, const Ksym *ksym);
/* The event source's own frames at the top of its kernel stacks (borrowed, static in the source; NULL:
 * none), which every chain then goes without. */
void accounting_set_tracer_frames(Accounting *a, const MsTracerFrames *tracer);
const Ksym *accounting_ksym(const Accounting *a);

void accounting_reset(Accounting *a, AccountingReset what);

Usage *accounting_usage(Accounting *a);
StackTree *accounting_stacktree(Accounting *a);
/* The stacks of slab objects (SlabObject.stack names its leaves): a tree of its own, which holds no pages,
 * with AccountingConfig.slab only; NULL otherwise. */
StackTree *accounting_slab_stacktree(Accounting *a);
/* Pages per cgroup and unit; the daemon names pending cgroups through it (units_cgroup_resolve()). */
Units *accounting_units(Accounting *a);
/* Slab objects (slab.h): task and cgroup indexes are Usage's and Units'. */
Slab *accounting_slab(Accounting *a);
/* slab_reconcile() with the kernel's figures in info, read at now_nsec: what it drops leaves its task and
 * unit. 0 or -ENOMEM. */
int accounting_slab_reconcile(Accounting *a, const SlabInfo *info, uint64_t now_nsec);
/* User-space heaps of processes that record them (heap.h). */
Heap *accounting_heap(Accounting *a);
/* Keeps the page table's allocation times from wrapping (pagemap.h): a walk of it when
 * pagemap_stamp_epoch(now_nsec) changed since the last, else nothing. Allocations call it; so do readers
 * of the ages. */
void accounting_clamp_page_ages(Accounting *a, uint64_t now_nsec);
PageMap *accounting_pagemap(Accounting *a);
/* The kinds of page allocation (order, GFP flags, migrate type, zone) charge cells name; the daemon sets
 * its zones (page_kinds_set_zones()) when its source's page keys are pfns. */
PageKinds *accounting_page_kinds(Accounting *a);
/* Current pages per (process, module, global stack leaf, cgroup, kind), for stack views of one task, module
 * or unit, and breakdowns by kind. */
const ChargeIndex *accounting_chargeindex(const Accounting *a);
void accounting_get_stats(const Accounting *a, AccountingStats *ret);
/* AccountingStats.current_pages alone: cheap enough to check per event. */
uint64_t accounting_current_pages(const Accounting *a);
/* The most current_pages reached since the last call (ledger_interval_take() for the total), and the
 * current pages in *ret_current_pages. */
uint64_t accounting_interval_take(Accounting *a, uint64_t *ret_current_pages);
/*
 * Whether the counts of pages agree with each other, as the invariants above say: over
 * processes, modules, units, cgroups, charge cells and each stack tree they add up to the total, the
 * cells of each process, module and cgroup to what it holds, and the page table with sampled_pages to the
 * total; no current count is above its peak. 0 if they do; -EBADMSG if not, the first that does not
 * named in *ret_what; -ENOMEM. A walk of every table: for tests and fuzzers, after any event.
 */
int accounting_check_sums(Accounting *a, const char **ret_what);
/* Gives the memory of freed tables back to the system (pagemap_trim()); a walk of the page table's
 * chunks, with system calls: once a second at most. Returns the pages given back. */
size_t accounting_trim(Accounting *a);
/* Heap bytes held by the core's tables. Cheap: no walk of any table. */
size_t accounting_memory_bytes(const Accounting *a);
/* The core's memory and its budget (budget.h), as Status shows them: a walk of the page table's
 * directory. */
void accounting_get_budget_stats(const Accounting *a, BudgetStats *ret);
