/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * HeapTimeline: what each stack of one heap allocated and freed, by time: cells of (time bucket, stack
 * leaf) with the bytes and blocks allocated and freed in that bucket through that leaf (sampled blocks,
 * weighted as the stack tree counts them). The heap at any moment is then the sum of the buckets before
 * it, and what a window allocated and freed the sum of the buckets in it, stack by stack: `report --at`
 * and `--between` of a recorded heap.
 *
 * Buckets start HEAP_TIMELINE_STEP_NSEC wide; when a heap outlives HEAP_TIMELINE_BUCKETS of them, or its
 * cells would pass their budget, pairs of buckets merge into one twice as wide (their cells of one leaf
 * summed), so memory is bounded whatever the heap's life: at most max_cells cells. A free of a block is
 * counted at the leaf of its allocation. Events come nearly in time order (threads' records interleave
 * within microseconds); one older than the newest bucket counts in the newest.
 */

#include <stddef.h>
#include <stdint.h>

#include "keyindex.h"

#define HEAP_TIMELINE_STEP_NSEC UINT64_C(10000000)      /* 10 ms, as the heap source polls */
#define HEAP_TIMELINE_BUCKETS 128u

typedef struct HeapTimelineCell {
        uint32_t bucket;                /* its start is bucket * bucket_nsec after the heap's */
        uint32_t leaf;
        uint64_t alloc_bytes, alloc_blocks;     /* blocks in 1/STACK_HEAP_BLOCK_UNIT */
        uint64_t free_bytes, free_blocks;
} HeapTimelineCell;

typedef struct HeapTimeline {
        HeapTimelineCell *cells;        /* owned, in bucket order */
        size_t n_cells, n_allocated, max_cells;
        uint64_t bucket_nsec;
        uint32_t last_bucket;           /* the newest bucket with cells */
        KeyIndex open;                  /* leaf -> its cell in the newest bucket */
        uint64_t dropped;               /* changes not kept: no memory, or one bucket's cells past the budget */
} HeapTimeline;

void heap_timeline_init(HeapTimeline *t, size_t max_cells);
void heap_timeline_done(HeapTimeline *t);

/* A block of leaf allocated (bytes and blocks > 0) or freed (< 0) at since_nsec after the heap began. */
void heap_timeline_add(HeapTimeline *t, uint64_t since_nsec, uint32_t leaf, int64_t bytes, int64_t blocks);

size_t heap_timeline_memory_bytes(const HeapTimeline *t);
