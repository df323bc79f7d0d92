/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Heap: the user-space heaps of processes that record theirs (heap/, memstrackctl record). A heap image is
 * one process from the start of its recording to its exit or exec; the counts it reports itself are exact
 * (live bytes, true peak, allocations, frees), and its sampled blocks (every block with sample interval 1)
 * are kept by pointer, each charged to its call stack in a stack tree of their own (stacktree.h with heap
 * counters: bytes, blocks, and the values at the image's maximum).
 *
 * A sampled block of s bytes out of a Poisson process of one sample per T bytes was sampled with
 * probability p = 1 - exp(-s / T); it stands for s / p bytes and 1 / p blocks, which makes every node's
 * sum an unbiased estimate. Readers scale the estimates so that a heap's totals are its exact counts
 * (heap_scale()). The tree at the maximum is the tree as it stood when the exact live bytes were highest:
 * the source says where a new maximum lies among the sampled records (MsHeapPeak), and the tree keeps that
 * moment at the cost of one increment (stacktree_heap_apply()).
 *
 * Bounded: past max_images heaps new ones are not recorded, past max_blocks sampled blocks are dropped;
 * both counted. With shares, one image takes at most a quarter of the blocks and of the tree's nodes (its
 * further stacks share one node), so that a process cannot crowd out the others. Frees of blocks not kept are
 * counted (unmatched_frees), never an error.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "heap-timeline.h"
#include "ledger.h"
#include "stats.h"
#include "stacktree.h"

#define HEAP_NONE UINT32_MAX

/* The growth of a heap's live bytes: at most HEAP_GROWTH_POINTS points over its whole life, evenly spaced
 * (a point per step, the step doubled and every other point dropped when they are all taken). */
#define HEAP_GROWTH_POINTS 32u
#define HEAP_GROWTH_STEP_USEC 10000u    /* the first step: the heap source's poll */

/* What the events of a process's own making may say, beyond which they are invalid (counted, not applied):
 * no block is larger than a 57-bit address space, no sample interval longer than the library's. Weights
 * then stay far below 2^63, the stack tree's signed deltas. */
#define HEAP_BLOCK_BYTES_MAX (UINT64_C(1) << 57)
#define HEAP_EVENT_SAMPLE_INTERVAL_MAX (UINT64_C(1) << 40)

/*
 * How long sampled blocks lived, from their allocation's record to their free's (the library stamps both):
 * bucket i holds lifetimes below heap_lifetime_bounds_usec[i] and at least the bound before it; the last
 * bucket has no bound. A temporary allocation (heaptrack's word) was freed on its own thread before that
 * thread allocated again, and within HEAP_TEMPORARY_NSEC. Counted per stack leaf, in blocks of
 * 1/STACK_HEAP_BLOCK_UNIT (a sampled block stands for 1/p of them): exact with every call's stack.
 */
#define HEAP_LIFETIME_BUCKETS 6u
extern const uint64_t heap_lifetime_bounds_usec[HEAP_LIFETIME_BUCKETS - 1];
#define HEAP_TEMPORARY_NSEC UINT64_C(1000000)

typedef struct HeapLifetimes {
        uint32_t node;                  /* the tree's node whose stacks' blocks these are */
        uint32_t image;                 /* the heap that node's stacks are of */
        uint64_t freed[HEAP_LIFETIME_BUCKETS];
        uint64_t temporary;             /* of those freed, temporary */
} HeapLifetimes;

typedef struct HeapPoint {
        uint32_t msec;                  /* since the heap's start */
        uint64_t live_bytes;
} HeapPoint;

typedef struct HeapImage {
        int32_t pid;
        uint32_t serial;                /* its index: the scope of its stacks in the tree */
        char comm[16];
        char *cmdline;                  /* owned, or NULL */
        char *maps;                     /* owned: /proc/PID/maps as the source last read it, or NULL */
        uint64_t sample_interval;       /* bytes per sampled stack; 1: every allocation */
        MsHeapCounters counters;        /* exact, as the process last reported them */
        uint32_t gen;                   /* maxima reached so far: the tree's snapshot of the maximum */
        uint64_t sampled_blocks;        /* sampled blocks live now */
        uint64_t sampled_allocs, sampled_frees;
        uint64_t unmatched_frees;       /* sampled frees of blocks not kept here */
        uint64_t replaced;              /* sampled allocations of a pointer still live: its free was lost */
        uint64_t dropped;               /* sampled blocks not kept (max_blocks, its share of them, or out of
                                         * memory) */
        size_t nodes;                   /* stack tree nodes its stacks made: at most a share of max_nodes */
        uint64_t start_nsec, end_nsec;
        MsHeapEnd end;
        bool ended;
        HeapPoint *growth;              /* owned: HEAP_GROWTH_POINTS of them, allocated at the first count */
        uint32_t n_growth;
        uint64_t growth_step_usec;
        HeapTimeline timeline;          /* what its stacks allocated and freed, by time */
} HeapImage;

typedef struct Heap Heap;

/* max_nodes: the stack tree's node budget. shares: one image takes at most a quarter of the blocks and the
 * nodes (processes that do not trust each other); else one may take all. Returns NULL on OOM. */
Heap *heap_new(size_t max_nodes, size_t max_blocks, size_t max_images, bool shares);
/* Changes the bound on sampled blocks kept (the memory budget, budget.h); blocks kept stay. */
void heap_set_max_blocks(Heap *h, size_t max_blocks);
Heap *heap_free(Heap *h);

/* Applies a MS_EVENT_HEAP_* event; others are ignored. Never fails: what cannot be applied is counted. */
void heap_handle_event(Heap *h, const MsEvent *e);

size_t heap_image_count(const Heap *h);
/* NULL past the end. */
const HeapImage *heap_image(const Heap *h, uint32_t serial);
/* The open heap of pid, else its latest one; HEAP_NONE if pid never recorded one. */
uint32_t heap_find(const Heap *h, int32_t pid);
/* The tree of every heap (NULL before the first); an image's stacks hang below its scope node. */
const StackTree *heap_stacktree(const Heap *h);
/* The image's "[heap ...]" node in the tree, STACK_NODE_NONE before its first sampled block. */
uint32_t heap_scope_node(const Heap *h, uint32_t serial);
/* The lifetimes of the blocks freed at each node of the tree itself (the stacks that end there), for the
 * nodes that have any, in no order. */
size_t heap_lifetimes_count(const Heap *h);
const HeapLifetimes *heap_lifetimes(const Heap *h, size_t i);

/* The weights of a sampled block of bytes with this sample interval: bytes and blocks
 * (in 1/STACK_HEAP_BLOCK_UNIT) it stands for. */
void heap_block_weight(uint64_t bytes, uint64_t sample_interval, uint64_t *ret_bytes, uint64_t *ret_blocks);

/* Factors that turn the image's estimates into its exact counts, now and at its maximum (1 when there is
 * nothing to scale). */
typedef struct HeapScale {
        double now_bytes, now_blocks;
        double max_bytes, max_blocks;
} HeapScale;
HeapScale heap_scale(const Heap *h, uint32_t serial);

void heap_get_stats(const Heap *h, HeapStats *ret);
/* Forgets every heap (Reset all). */
void heap_clear(Heap *h);
size_t heap_memory_bytes(const Heap *h);
