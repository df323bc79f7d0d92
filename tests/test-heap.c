/* SPDX-License-Identifier: MIT */

/* The core's user-space heaps (daemon/core/heap.c) on synthetic events: sampled blocks by pointer, the tree
 * at the maximum, frees nobody allocated, weights and scales, exec and the end of a heap. */

#include <math.h>
#include <string.h>

#include "heap.h"
#include "synthetic-events.h"
#include "tests.h"

/* Every event at 1000 ns unless a case says otherwise. */
static void feed(Heap *h, MsEvent e) {
        if (e.timestamp_nsec == 0)
                e.timestamp_nsec = 1000;
        heap_handle_event(h, &e);
}

static void start(Heap *h, int32_t pid, uint64_t interval) {
        feed(h, synthetic_heap_start_event(pid, interval, "prog"));
}

static void alloc(Heap *h, int32_t pid, uint64_t ptr, uint64_t bytes, uint64_t frame, MsHeapPeak peak) {
        uint64_t frames[2] = { frame, 0x1000 };
        feed(h, synthetic_heap_block_event(MS_EVENT_HEAP_ALLOC, pid, ptr, bytes, synthetic_stack(frames, 2, 0), 0, peak));
}

static void release(Heap *h, int32_t pid, uint64_t ptr, MsHeapPeak peak) {
        feed(h, synthetic_heap_block_event(MS_EVENT_HEAP_FREE, pid, ptr, 0, (MsStack) {}, 0, peak));
}

static void state(Heap *h, int32_t pid, uint64_t live, uint64_t peak, uint64_t allocs, uint64_t frees,
                MsHeapPeak new_peak) {
        MsHeapCounters c = { .live_bytes = live, .peak_bytes = peak, .allocs = allocs, .frees = frees };
        feed(h, synthetic_heap_state_event(pid, &c, new_peak));
}

/* The leaf of a two-frame stack (innermost frame first) below the heap's scope. */
static uint32_t leaf(const Heap *h, uint32_t serial, uint64_t frame) {
        const StackTree *t = heap_stacktree(h);
        uint32_t outer = stacktree_find_child(t, heap_scope_node(h, serial), STACK_FRAME_USER, 0x1000);
        return stacktree_find_child(t, outer, STACK_FRAME_USER, frame);
}

static void values(const Heap *h, uint32_t node, uint32_t serial, uint64_t *now, uint64_t *max) {
        uint64_t blocks, max_blocks;
        *now = stacktree_pages(heap_stacktree(h), node).current;
        stacktree_heap_values(heap_stacktree(h), node, heap_image(h, serial)->gen, &blocks, max, &max_blocks);
}

static void test_maximum(void) {
        Heap *h = heap_new(1024, 1024, 16, false);
        uint64_t now, max;

        start(h, 100, 1);
        alloc(h, 100, 0x10, 100, 0xa, MS_HEAP_PEAK_AFTER);
        alloc(h, 100, 0x20, 200, 0xb, MS_HEAP_PEAK_AFTER);      /* the maximum: 300 */
        release(h, 100, 0x20, MS_HEAP_PEAK_NONE);
        alloc(h, 100, 0x30, 50, 0xa, MS_HEAP_PEAK_NONE);         /* 150, below it */
        state(h, 100, 150, 300, 3, 1, MS_HEAP_PEAK_NONE);

        uint32_t a = leaf(h, 0, 0xa), b = leaf(h, 0, 0xb);
        ASSERT_TRUE(a != STACK_NODE_NONE && b != STACK_NODE_NONE);
        values(h, a, 0, &now, &max);
        ASSERT_EQ(now, 150u);
        ASSERT_EQ(max, 100u);
        values(h, b, 0, &now, &max);
        ASSERT_EQ(now, 0u);
        ASSERT_EQ(max, 200u);
        values(h, heap_scope_node(h, 0), 0, &now, &max);
        ASSERT_EQ(now, 150u);
        ASSERT_EQ(max, 300u);

        /* A new maximum reached between two sampled records (before this one): the tree as it was. */
        state(h, 100, 400, 400, 3, 1, MS_HEAP_PEAK_AFTER);          /* unsampled allocations raised it, the tree did not move */
        values(h, heap_scope_node(h, 0), 0, &now, &max);
        ASSERT_EQ(max, 150u);
        HeapScale s = heap_scale(h, 0);
        ASSERT_TRUE(fabs(s.max_bytes - 400.0 / 150.0) < 1e-9);
        ASSERT_TRUE(fabs(s.now_bytes - 400.0 / 150.0) < 1e-9);

        /* A free of a pointer never sampled, an allocation over a live pointer. */
        release(h, 100, 0x999, MS_HEAP_PEAK_NONE);
        ASSERT_EQ(heap_image(h, 0)->unmatched_frees, 1u);
        alloc(h, 100, 0x10, 10, 0xb, MS_HEAP_PEAK_NONE);
        ASSERT_EQ(heap_image(h, 0)->replaced, 1u);
        values(h, a, 0, &now, &max);
        ASSERT_EQ(now, 50u);

        /* The end: the blocks leave the table, the tree keeps what was never freed. */
        feed(h, synthetic_heap_end_event(100, MS_HEAP_END_EXIT));
        HeapStats st;
        heap_get_stats(h, &st);
        ASSERT_EQ(st.live_blocks, 0u);
        ASSERT_TRUE(heap_image(h, 0)->ended);
        values(h, heap_scope_node(h, 0), 0, &now, &max);
        ASSERT_EQ(now, 60u);

        /* Nothing is open for pid 100 now. */
        alloc(h, 100, 0x40, 1, 0xa, MS_HEAP_PEAK_NONE);
        heap_get_stats(h, &st);
        ASSERT_EQ(st.invalid_events, 1u);
        heap_free(h);
}

static void test_exec(void) {
        Heap *h = heap_new(1024, 1024, 16, false);

        start(h, 7, 1);
        alloc(h, 7, 0x10, 100, 0xa, MS_HEAP_PEAK_AFTER);
        start(h, 7, 1);                         /* the same process again: it exec'd */
        ASSERT_EQ(heap_image_count(h), 2u);
        ASSERT_TRUE(heap_image(h, 0)->ended);
        ASSERT_EQ((int) heap_image(h, 0)->end, (int) MS_HEAP_END_EXEC);
        ASSERT_EQ(heap_find(h, 7), 1u);
        /* The new heap's pointer 0x10 is another block. */
        alloc(h, 7, 0x10, 30, 0xa, MS_HEAP_PEAK_AFTER);
        ASSERT_EQ(heap_image(h, 1)->replaced, 0u);

        /* Past max_images, heaps are dropped and counted. */
        Heap *small = heap_new(1024, 1024, 1, false);
        start(small, 1, 1);
        start(small, 2, 1);
        HeapStats st;
        heap_get_stats(small, &st);
        ASSERT_EQ(st.n_images, 1u);
        ASSERT_EQ(st.images_dropped, 1u);
        heap_free(small);
        heap_free(h);
}

static void test_weights(void) {
        uint64_t bytes, blocks;

        heap_block_weight(1000, 1, &bytes, &blocks);
        ASSERT_EQ(bytes, 1000u);
        ASSERT_EQ(blocks, (uint64_t) STACK_HEAP_BLOCK_UNIT);
        /* s / (1 - exp(-s / T)): a small block stands for about T bytes, a huge one for itself. */
        heap_block_weight(1000, 524288, &bytes, &blocks);
        ASSERT_TRUE(llabs((long long) bytes - 524788) <= 1);
        heap_block_weight(UINT64_C(1) << 30, 524288, &bytes, &blocks);
        ASSERT_EQ(bytes, UINT64_C(1) << 30);
        ASSERT_EQ(blocks, (uint64_t) STACK_HEAP_BLOCK_UNIT);

        /* Sampled: the tree holds weights, the scale brings them to the exact counts. */
        Heap *h = heap_new(1024, 1024, 16, false);
        start(h, 9, 524288);
        alloc(h, 9, 0x10, 1000, 0xa, MS_HEAP_PEAK_AFTER);
        state(h, 9, 262394, 262394, 100, 0, MS_HEAP_PEAK_AFTER);
        uint64_t now, max;
        values(h, heap_scope_node(h, 0), 0, &now, &max);
        ASSERT_TRUE(llabs((long long) now - 524788) <= 1);
        HeapScale s = heap_scale(h, 0);
        ASSERT_TRUE(fabs(s.now_bytes * (double) now - 262394.0) < 1.0);
        /* Blocks at the maximum follow the bytes' factor, but never past the 100 blocks ever allocated
         * (the one sampled block of 1000 bytes stands for about 525 of them). */
        uint64_t blocks_now, max_bytes, max_blocks;
        stacktree_heap_values(heap_stacktree(h), heap_scope_node(h, 0), heap_image(h, 0)->gen, &blocks_now,
                              &max_bytes, &max_blocks);
        ASSERT_GT((double) max_blocks * s.max_bytes, 100.0 * STACK_HEAP_BLOCK_UNIT);
        ASSERT_TRUE(fabs(s.max_blocks * (double) max_blocks - 100.0 * STACK_HEAP_BLOCK_UNIT) < 1.0);
        heap_free(h);
}

static void alloc_with_id(Heap *h, int32_t pid, uint64_t ptr, uint64_t frame, uint32_t id) {
        uint64_t frames[2] = { frame, 0x1000 };
        feed(h, synthetic_heap_block_event(MS_EVENT_HEAP_ALLOC, pid, ptr, 10, synthetic_stack(frames, 2, 0), id,
                                           MS_HEAP_PEAK_NONE));
}

/* A stack id names the frames it first came with for the rest of its heap (the source's promise: the
 * core need not look at frames again), and nothing after the heap ended: another heap's id 5 is its own. */
static void test_stack_ids(void) {
        Heap *h = heap_new(1024, 1024, 16, false);
        uint64_t now, max;

        start(h, 100, 1);
        alloc_with_id(h, 100, 0x10, 0xa, 5);
        /* Frames that differ under the same id: the core trusts the id. */
        alloc_with_id(h, 100, 0x20, 0xb, 5);
        alloc_with_id(h, 100, 0x30, 0xc, 0);
        ASSERT_EQ(leaf(h, 0, 0xb), STACK_NODE_NONE);
        values(h, leaf(h, 0, 0xa), 0, &now, &max);
        ASSERT_EQ(now, 20u);
        values(h, leaf(h, 0, 0xc), 0, &now, &max);
        ASSERT_EQ(now, 10u);

        feed(h, synthetic_heap_end_event(100, MS_HEAP_END_EXIT));
        start(h, 200, 1);
        alloc_with_id(h, 200, 0x10, 0xb, 5);
        values(h, leaf(h, 1, 0xb), 1, &now, &max);
        ASSERT_EQ(now, 10u);
        ASSERT_EQ(leaf(h, 1, 0xa), STACK_NODE_NONE);
        heap_free(h);
}

/* With shares, a heap that allocates without end keeps a quarter of the blocks and of the nodes; another
 * heap keeps its own blocks and stacks. */
static void test_shares(void) {
        Heap *h = heap_new(64, 64, 16, true);
        uint64_t now, max;

        start(h, 100, 1);
        start(h, 200, 1);
        for (uint64_t i = 0; i < 100; i++)
                alloc(h, 100, 0x1000 + 16 * i, 10, 0x100 + i, MS_HEAP_PEAK_NONE);
        ASSERT_EQ(heap_image(h, 0)->sampled_blocks, 16u);
        ASSERT_EQ(heap_image(h, 0)->dropped, 84u);
        /* Its stacks beyond its nodes share the "stack table full" node. */
        ASSERT_LE(heap_image(h, 0)->nodes, 17u);
        for (uint64_t i = 0; i < 10; i++)
                alloc(h, 200, 0x1000 + 16 * i, 10, 0xa, MS_HEAP_PEAK_NONE);
        ASSERT_EQ(heap_image(h, 1)->sampled_blocks, 10u);
        ASSERT_EQ(heap_image(h, 1)->dropped, 0u);
        values(h, leaf(h, 1, 0xa), 1, &now, &max);
        ASSERT_EQ(now, 100u);
        heap_free(h);
}

/* The growth series: at most HEAP_GROWTH_POINTS points spread over the whole life, in time order, the last
 * one the latest count. */
static void test_growth(void) {
        Heap *h = heap_new(1024, 1024, 16, false);

        start(h, 100, 1);
        for (uint64_t i = 0; i <= 1000; i++) {
                MsHeapCounters c = { .live_bytes = i * 100, .peak_bytes = i * 100 };
                MsEvent e = synthetic_heap_state_event(100, &c, MS_HEAP_PEAK_NONE);
                e.timestamp_nsec = 1000 + i * 10 * 1000 * 1000;         /* every 10 ms for 10 s */
                feed(h, e);
        }
        const HeapImage *img = heap_image(h, 0);
        ASSERT_LE(img->n_growth, HEAP_GROWTH_POINTS);
        ASSERT_GE(img->n_growth, HEAP_GROWTH_POINTS / 2);
        ASSERT_EQ(img->growth[0].msec, 0u);
        ASSERT_EQ(img->growth[0].live_bytes, 0u);
        ASSERT_EQ(img->growth[img->n_growth - 1].msec, 10000u);
        ASSERT_EQ(img->growth[img->n_growth - 1].live_bytes, 100000u);
        for (uint32_t i = 1; i < img->n_growth; i++) {
                ASSERT_GT(img->growth[i].msec, img->growth[i - 1].msec);
                /* The counts grew by 100 bytes per 10 ms: each point is its moment's. */
                ASSERT_EQ(img->growth[i].live_bytes, (uint64_t) img->growth[i].msec * 10);
        }
        heap_free(h);
}

/* A process's own events may say anything: a block larger than any address space is counted invalid, not
 * applied, and a sample interval past the library's is held to it, so no weight leaves the tree's signed
 * range. */
static void test_impossible_sizes(void) {
        Heap *h = heap_new(1024, 1024, 16, false);
        uint64_t now, max;
        HeapStats st;

        start(h, 100, UINT64_MAX);
        ASSERT_EQ(heap_image(h, 0)->sample_interval, HEAP_EVENT_SAMPLE_INTERVAL_MAX);
        alloc(h, 100, 0x10, UINT64_MAX, 0xa, MS_HEAP_PEAK_AFTER);
        alloc(h, 100, 0x20, HEAP_BLOCK_BYTES_MAX + 1, 0xa, MS_HEAP_PEAK_AFTER);
        heap_get_stats(h, &st);
        ASSERT_EQ(st.invalid_events, 2u);
        ASSERT_EQ(st.live_blocks, 0u);
        alloc(h, 100, 0x30, HEAP_BLOCK_BYTES_MAX, 0xa, MS_HEAP_PEAK_AFTER);
        values(h, leaf(h, 0, 0xa), 0, &now, &max);
        ASSERT_GE(now, HEAP_BLOCK_BYTES_MAX);
        ASSERT_LT(now, UINT64_C(1) << 62);
        release(h, 100, 0x30, MS_HEAP_PEAK_NONE);
        values(h, leaf(h, 0, 0xa), 0, &now, &max);
        ASSERT_EQ(now, 0u);
        heap_free(h);
}

/* An allocation or free at time t on thread tid, having made thread_allocs allocations. */
static void timed(Heap *h, MsEventType type, uint64_t ptr, uint64_t frame, uint64_t t, int32_t tid,
                uint32_t thread_allocs) {
        uint64_t frames[2] = { frame, 0x1000 };
        MsEvent e = synthetic_heap_block_event(type, 100, ptr, type == MS_EVENT_HEAP_ALLOC ? 64 : 0,
                                               type == MS_EVENT_HEAP_ALLOC ? synthetic_stack(frames, 2, 0) : (MsStack) {},
                                               0, MS_HEAP_PEAK_NONE);
        e.tid = tid;
        e.heap.time_nsec = t;
        e.heap.thread_allocs = thread_allocs;
        feed(h, e);
}

static HeapLifetimes lifetimes_at(const Heap *h, uint32_t node) {
        for (size_t i = 0; i < heap_lifetimes_count(h); i++)
                if (heap_lifetimes(h, i)->node == node)
                        return *heap_lifetimes(h, i);
        return (HeapLifetimes) {};
}

/* Lifetimes by bucket, and which frees are temporary: same thread, no allocation of it in between, under a
 * millisecond; a free without a time, or a block whose free was lost, has no lifetime. */
static void test_lifetimes(void) {
        Heap *h = heap_new(1024, 1024, 16, false);
        const uint64_t ms = 1000000, unit = STACK_HEAP_BLOCK_UNIT;

        start(h, 100, 1);
        timed(h, MS_EVENT_HEAP_ALLOC, 0x1000, 0xa, 10 * ms, 100, 1);
        timed(h, MS_EVENT_HEAP_FREE, 0x1000, 0, 10 * ms + 500, 100, 1);        /* temporary */
        timed(h, MS_EVENT_HEAP_ALLOC, 0x2000, 0xa, 11 * ms, 100, 2);
        timed(h, MS_EVENT_HEAP_FREE, 0x2000, 0, 11 * ms + 500, 101, 0);        /* another thread freed it */
        timed(h, MS_EVENT_HEAP_ALLOC, 0x3000, 0xa, 12 * ms, 100, 3);
        timed(h, MS_EVENT_HEAP_FREE, 0x3000, 0, 12 * ms + 500, 100, 4);        /* the thread allocated again */
        timed(h, MS_EVENT_HEAP_ALLOC, 0x4000, 0xa, 13 * ms, 100, 5);
        timed(h, MS_EVENT_HEAP_FREE, 0x4000, 0, 15 * ms, 100, 5);              /* 2 ms: not temporary */
        timed(h, MS_EVENT_HEAP_ALLOC, 0x5000, 0xb, 20 * ms, 100, 6);
        timed(h, MS_EVENT_HEAP_FREE, 0x5000, 0, 20 * ms + 50000 * ms, 100, 9); /* 50 s */
        timed(h, MS_EVENT_HEAP_ALLOC, 0x6000, 0xb, 30 * ms, 100, 10);
        timed(h, MS_EVENT_HEAP_ALLOC, 0x6000, 0xb, 31 * ms, 100, 11);          /* its free was lost */
        timed(h, MS_EVENT_HEAP_FREE, 0x6000, 0, 0, 100, 11);                   /* no time */

        HeapLifetimes a = lifetimes_at(h, leaf(h, 0, 0xa)), b = lifetimes_at(h, leaf(h, 0, 0xb));
        ASSERT_EQ(a.freed[0], 3 * unit);        /* under 1 ms */
        ASSERT_EQ(a.freed[1], 1 * unit);        /* 2 ms */
        ASSERT_EQ(a.temporary, 1 * unit);
        ASSERT_EQ(b.freed[5], 1 * unit);        /* beyond 10 s */
        ASSERT_EQ(b.freed[0] + b.freed[1] + b.freed[2] + b.freed[3] + b.freed[4], 0);
        ASSERT_EQ(b.temporary, 0);
        heap_free(h);
}

static uint64_t timeline_sum(const HeapTimeline *t, uint32_t leaf, bool alloc) {
        uint64_t sum = 0;
        for (size_t i = 0; i < t->n_cells; i++)
                if (t->cells[i].leaf == leaf)
                        sum += alloc ? t->cells[i].alloc_bytes : t->cells[i].free_bytes;
        return sum;
}

/* The timeline keeps its sums whatever it merges: wider buckets past HEAP_TIMELINE_BUCKETS and past its
 * cell budget, cells in bucket order, a late event in the newest bucket. */
static void test_timeline(void) {
        HeapTimeline t;
        uint64_t step = HEAP_TIMELINE_STEP_NSEC;

        heap_timeline_init(&t, 64);
        for (uint32_t i = 0; i < 3 * HEAP_TIMELINE_BUCKETS; i++) {
                heap_timeline_add(&t, i * step, i % 7, 100, 256);
                heap_timeline_add(&t, i * step + step / 2, i % 7, -40, -256);
        }
        heap_timeline_add(&t, 0, 3, 5, 256);            /* late: into the newest bucket */
        ASSERT_TRUE(t.bucket_nsec >= 4 * step);
        ASSERT_TRUE(t.n_cells <= 64);
        ASSERT_EQ(t.dropped, 0);
        uint64_t alloc = 0, freed = 0;
        for (uint32_t leaf = 0; leaf < 7; leaf++) {
                alloc += timeline_sum(&t, leaf, true);
                freed += timeline_sum(&t, leaf, false);
        }
        ASSERT_EQ(alloc, 3 * HEAP_TIMELINE_BUCKETS * 100 + 5);
        ASSERT_EQ(freed, 3 * HEAP_TIMELINE_BUCKETS * 40);
        for (size_t i = 1; i < t.n_cells; i++)
                ASSERT_TRUE(t.cells[i - 1].bucket <= t.cells[i].bucket);
        ASSERT_EQ(t.cells[t.n_cells - 1].bucket, t.last_bucket);
        /* Each bucket holds one cell per leaf. */
        for (size_t i = 0; i < t.n_cells; i++)
                for (size_t j = i + 1; j < t.n_cells && t.cells[j].bucket == t.cells[i].bucket; j++)
                        ASSERT_TRUE(t.cells[i].leaf != t.cells[j].leaf);
        heap_timeline_done(&t);
}

int main(void) {
        test_lifetimes();
        test_timeline();
        test_growth();
        test_shares();
        test_stack_ids();
        test_maximum();
        test_exec();
        test_weights();
        test_impossible_sizes();
        return 0;
}
