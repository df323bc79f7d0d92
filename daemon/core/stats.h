/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What each part of the core counts of its own work: plain figures it fills on request
 * (accounting_get_stats(), usage_get_stats(), ...) and the read interface (view.h) hands to the query
 * layer. Kept apart from the parts' own headers so that a reader of the figures needs none of them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"

typedef struct AccountingStats {
        uint64_t events;
        uint64_t allocs, alloc_pages;
        uint64_t frees, freed_pages;                    /* frees that released tracked pages */
        uint64_t untracked_frees, untracked_free_pages; /* frees of pages allocated before tracing */
        uint64_t stale_blocks;          /* an alloc found its pfn still tracked: that free was lost */
        uint64_t alloc_failures;        /* allocations not tracked for lack of memory or bad input */
        uint64_t lost_events;           /* reported by the source */
        uint64_t resets;                /* ACCOUNTING_RESET_ALL so far: tells counts from before a reset apart */
        uint64_t invalid_events;        /* not applied: page events with order > MS_EVENT_ORDER_MAX, a block
                                         * beyond MS_PAGE_KEY_MAX or frames missing; samples of a bad unit, size
                                         * (MS_EVENT_SAMPLE_*_MAX) or chain */
        uint64_t saturated_events;      /* would have taken a count beyond ACCOUNTING_PAGES_MAX or COUNT_MAX:
                                         * samples and losses applied up to it, allocations not at all */
        uint64_t symbol_walks;          /* page-table walks moving blocks to a module named by a reload */
        uint64_t module_walks;          /* page-table walks moving a module loader's blocks (rare fallback) */
        uint64_t samples;               /* aggregated samples applied (MS_EVENT_SAMPLE) */
        uint64_t sampled_pages;         /* of current_pages, charged by samples: not in the page table */
        uint64_t sample_untracked_pages;        /* pages negative samples took that no sample had charged */
        uint64_t unsupported_events;    /* events of a kind the core does not apply yet (object alloc/free) */
        uint64_t current_pages, peak_pages;
        uint64_t first_event_nsec, last_event_nsec;
} AccountingStats;

typedef struct UsageStats {
        size_t n_tasks;                 /* records in use, exited ones included */
        size_t n_exited;
        uint64_t tasks_evicted;
        uint64_t tasks_recycled;        /* evicted slots made reusable (at eviction, or at their last free) */
        uint64_t modules_dropped;       /* modules beyond the id space, charged to none */
        uint64_t underflows;
} UsageStats;

typedef struct StackTreeStats {
        size_t n_nodes;
        size_t max_nodes;
        size_t n_process_nodes;                 /* of n_nodes, in process trees (at most max_nodes / 2) */
        uint64_t process_paths_truncated;       /* process chains charged to the global tree only (budget) */
        uint64_t stacks_truncated;      /* chains cut short because the node budget was reached */
        uint64_t cache_hits;
        uint64_t cache_misses;
        uint64_t underflows;            /* uncharges of more than a node held: a bug or lost events */
} StackTreeStats;

typedef struct SlabStats {
        uint64_t live_objects, live_requested;
        Ledger live_allocated;
        uint64_t allocs, frees;
        uint64_t unknown_frees;         /* of pointers not live here: allocated before tracing, or dropped */
        uint64_t replaced;              /* an allocation found its pointer live: that free was lost */
        uint64_t dropped;               /* allocations not kept: the table was full, or out of memory */
        uint64_t first_nsec, last_nsec; /* the first and the last allocation's time: the span rates are of */
        uint64_t lost_events;           /* events the source lost (slab_note_lost()) */
} SlabStats;

/* The reconciliations with /proc/slabinfo (slab_reconcile()). */
typedef struct SlabReconcileStats {
        uint64_t runs;                  /* reconciliations that read the kernel's figures */
        uint64_t last_nsec;             /* CLOCK_MONOTONIC time of the last attempt, 0: none yet */
        int error;                      /* its -errno when it could not read them, else 0 */
        size_t caches;                  /* caches and size classes with a figure at the last */
        size_t drifting;                /* of them, those above their bound at the last */
        uint64_t trimmed;               /* objects dropped above the bounds, in all */
        uint64_t destroyed;             /* objects dropped because the kernel destroyed their cache */
} SlabReconcileStats;

/* The core's memory and its budget (budget.h): steps by BudgetStep, named by view_budget_step_name(). */
#define BUDGET_STEPS 5
typedef struct BudgetStats {
        uint64_t limit_bytes;           /* 0: no budget */
        uint64_t core_bytes;            /* the core's tables now (accounting_memory_bytes()) */
        uint64_t page_table_bytes;      /* of them, the page table's */
        uint64_t dense_regions, sparse_regions, single_regions; /* the page table's regions by form */
        uint64_t dense_blocks, sparse_blocks;   /* blocks in them (a single region holds one) */
        uint32_t in_effect;             /* 1 << step of the steps in effect now */
        uint64_t taken[BUDGET_STEPS];   /* times each step was taken */
        uint64_t untracked_allocs;      /* page allocations not tracked while "pages" was in effect */
        uint64_t untracked_pages;       /* ... and their pages */
} BudgetStats;

typedef struct HeapStats {
        size_t n_images;
        uint64_t images_dropped;        /* heaps not recorded: max_images reached, or out of memory */
        uint64_t live_blocks;           /* sampled blocks kept now, over every heap */
        uint64_t invalid_events;        /* heap events for no open heap, or with bad fields */
} HeapStats;

/* What an access source (daemon/access/) counts of its own reading: kept with the rounds (coldness.h). */
typedef struct ColdSourceStats {
        uint64_t warm_usec, cold_usec;  /* the thresholds in force */
        uint64_t interval_usec;         /* the source's resolution: DAMON's aggregation interval, the sampler's */
        uint64_t sample_usec;           /* DAMON's sampling interval; 0 for others */
        int32_t kdamond_pid;            /* the kdamond read, 0: none */
        bool own_kdamond;               /* memstrackd started it (and stops it at exit) */
        uint64_t kdamond_cpu_usec;      /* the kdamond's CPU time since memstrackd began to read it */
        uint64_t kdamond_seconds;       /* ... over this long */
        uint64_t aggregations;          /* complete sets of regions received */
        uint64_t incomplete;            /* sets dropped unfinished: records lost, out of order or cut short */
        uint64_t lost_records;          /* the kernel dropped them (a full ring) */
        uint64_t rejected_records;      /* hostile values: end before start, beyond the physical address space */
        uint64_t other_records;         /* of kdamonds not monitoring physical memory, or not read */
        uint64_t kdamond_stops;         /* the kdamond read stopped or vanished */
        uint64_t target_changes;        /* its target, operations or intervals changed */
        uint64_t stale_rounds;          /* rounds skipped: no new regions for three aggregation intervals */
        uint64_t sampled_pages;         /* kpageflags: pages read at the last round */
        uint64_t sample_budget;         /* kpageflags: at most this many per round */
} ColdSourceStats;

/* The sampling rounds (coldness.h), the last one's figures, and the source's counters. */
typedef struct ColdStats {
        uint64_t rounds;                /* rounds that classified pages */
        uint64_t rejected_samples;      /* sets of regions refused: out of order, overlapping or empty */
        uint64_t round_nsec;            /* CLOCK_MONOTONIC time of the last round, 0: none yet */
        uint64_t sample_nsec;           /* the time its regions describe */
        uint64_t duration_nsec;         /* what its walk took */
        uint64_t regions;               /* regions it was given */
        uint64_t blocks;                /* tracked blocks it walked */
        uint64_t pages[6];              /* its pages by ColdClass (hot, warm, cold, unknown, newer), and all */
        uint64_t split_blocks;          /* blocks across several regions (or partly in none): split in proportion */
        uint64_t shared_regions;        /* regions whose tracked pages belong to more than one charge cell */
        uint64_t shared_region_pages;   /* tracked pages in those */
        uint64_t clamped_pages;         /* pages allocated while their region was idle: idle time is their age */
        uint64_t warm_usec, cold_usec;  /* the thresholds of the last round */
        ColdSourceStats source;
} ColdStats;
