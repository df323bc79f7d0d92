/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <string.h>

#include "heap-timeline.h"
#include "macro.h"

void heap_timeline_init(HeapTimeline *t, size_t max_cells) {
        *t = (HeapTimeline) { .max_cells = MAX(max_cells, (size_t) 16), .bucket_nsec = HEAP_TIMELINE_STEP_NSEC };
}

void heap_timeline_done(HeapTimeline *t) {
        free(t->cells);
        key_index_done(&t->open);
        *t = (HeapTimeline) {};
}

/* The newest bucket's cells, mapped again from scratch (after a merge moved them). */
static void reopen(HeapTimeline *t) {
        key_index_clear(&t->open);
        for (size_t i = t->n_cells; i-- > 0 && t->cells[i].bucket == t->last_bucket;)
                if (key_index_put(&t->open, t->cells[i].leaf, (uint32_t) i) < 0)
                        break;          /* that leaf's next change opens a cell of its own: sums stay right */
}

/* Buckets twice as wide: each pair's cells of one leaf become one, in place (a cell only moves down). */
static void widen(HeapTimeline *t) {
        KeyIndex merged = {};           /* leaf -> its cell in the new bucket being made */
        uint32_t current = UINT32_MAX;
        size_t n = 0;

        for (size_t i = 0; i < t->n_cells; i++) {
                HeapTimelineCell c = t->cells[i];
                c.bucket /= 2;
                if (c.bucket != current) {
                        key_index_clear(&merged);
                        current = c.bucket;
                }
                uint32_t at = key_index_get(&merged, c.leaf);
                if (at != KEY_INDEX_NONE) {
                        HeapTimelineCell *d = &t->cells[at];
                        d->alloc_bytes = count_add(d->alloc_bytes, c.alloc_bytes);
                        d->alloc_blocks = count_add(d->alloc_blocks, c.alloc_blocks);
                        d->free_bytes = count_add(d->free_bytes, c.free_bytes);
                        d->free_blocks = count_add(d->free_blocks, c.free_blocks);
                        continue;
                }
                /* Without memory for the map, cells of one leaf stay apart: the sums are the same. */
                (void) key_index_put(&merged, c.leaf, (uint32_t) n);
                t->cells[n++] = c;
        }
        key_index_done(&merged);
        t->n_cells = n;
        t->bucket_nsec *= 2;
        t->last_bucket /= 2;
        reopen(t);
}

void heap_timeline_add(HeapTimeline *t, uint64_t since_nsec, uint32_t leaf, int64_t bytes, int64_t blocks) {
        uint64_t bucket = since_nsec / t->bucket_nsec;

        while (bucket >= HEAP_TIMELINE_BUCKETS) {
                widen(t);
                bucket = since_nsec / t->bucket_nsec;
        }
        /* Late by a few microseconds (another thread's record): the newest bucket takes it. */
        if (t->n_cells > 0 && bucket < t->last_bucket)
                bucket = t->last_bucket;
        if (t->n_cells == 0 || bucket > t->last_bucket) {
                t->last_bucket = (uint32_t) bucket;
                key_index_clear(&t->open);
        }

        uint32_t at = key_index_get(&t->open, leaf);
        /* A full budget: wider buckets hold fewer cells, until the newest alone fills it. */
        while (at == KEY_INDEX_NONE && t->n_cells >= t->max_cells && t->last_bucket > 0) {
                widen(t);
                bucket = t->last_bucket;
                at = key_index_get(&t->open, leaf);
        }
        if (at == KEY_INDEX_NONE) {
                if (t->n_cells >= t->max_cells ||
                    greedy_realloc(&t->cells, &t->n_allocated, t->n_cells + 1, sizeof(HeapTimelineCell), 64) < 0 ||
                    key_index_put(&t->open, leaf, (uint32_t) t->n_cells) < 0) {
                        t->dropped++;
                        return;
                }
                at = (uint32_t) t->n_cells++;
                t->cells[at] = (HeapTimelineCell) { .bucket = (uint32_t) bucket, .leaf = leaf };
        }
        HeapTimelineCell *c = &t->cells[at];
        if (bytes >= 0) {
                c->alloc_bytes = count_add(c->alloc_bytes, (uint64_t) bytes);
                c->alloc_blocks = count_add(c->alloc_blocks, (uint64_t) blocks);
        } else {
                c->free_bytes = count_add(c->free_bytes, (uint64_t) -bytes);
                c->free_blocks = count_add(c->free_blocks, (uint64_t) -blocks);
        }
}

size_t heap_timeline_memory_bytes(const HeapTimeline *t) {
        return t->n_allocated * sizeof(HeapTimelineCell) + key_index_memory_bytes(&t->open);
}
