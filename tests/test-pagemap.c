/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pagemap.h"
#include "tests.h"

/* Records what each release handed back, per owner task. */
typedef struct Released {
        uint64_t pages_by_task[8];
        unsigned calls;
} Released;

static void on_release(void *userdata, const PageOwner *o, uint64_t n) {
        Released *r = userdata;
        ASSERT_LT(o->task, 8);
        r->pages_by_task[o->task] += n;
        r->calls++;
}

/* A compound literal, so tests can pass &owner(n). */
#define owner(t) ((PageOwner) { .task = (t), .node = 100 + (t), .stamp = 1000 + (t) })

static void test_orders(void) {
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};

        /* One block of each order 0..10, each at a naturally aligned pfn of its own. */
        uint64_t total = 0;
        for (unsigned o = 0; o <= 10; o++) {
                ASSERT_EQ(pagemap_insert(m, (uint64_t) (o + 1) << 12, o, &owner(1), on_release, &r), 0);
                total += UINT64_C(1) << o;
        }
        ASSERT_EQ(pagemap_blocks(m), 11);
        ASSERT_EQ(pagemap_pages(m), total);
        ASSERT_EQ(total, 2047);

        PageOwner got;
        unsigned order;
        ASSERT_TRUE(pagemap_lookup(m, 4 << 12, &got, &order));
        ASSERT_EQ(order, 3);
        ASSERT_EQ(got.task, 1);
        ASSERT_EQ(got.node, 101);
        ASSERT_EQ(got.stamp, 1001);

        for (unsigned o = 0; o <= 10; o++)
                ASSERT_EQ(pagemap_release(m, (uint64_t) (o + 1) << 12, o, on_release, &r), UINT64_C(1) << o);
        ASSERT_EQ(r.pages_by_task[1], 2047);
        ASSERT_EQ(r.calls, 11);
        ASSERT_EQ(pagemap_blocks(m), 0);
        ASSERT_EQ(pagemap_pages(m), 0);
        pagemap_free(m);
}

static void test_split_frees(void) {
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};

        /* An order-3 block freed page by page in a scrambled order: every page comes back exactly once. */
        ASSERT_EQ(pagemap_insert(m, 64, 3, &owner(2), on_release, &r), 0);
        const unsigned scrambled[8] = { 5, 0, 7, 2, 3, 6, 1, 4 };
        for (unsigned i = 0; i < 8; i++) {
                ASSERT_EQ(pagemap_release(m, 64 + scrambled[i], 0, on_release, &r), 1);
                ASSERT_EQ(pagemap_pages(m), 7 - i);
                ASSERT_EQ(r.pages_by_task[2], i + 1);
        }
        ASSERT_EQ(pagemap_blocks(m), 0);

        /* An order-1 piece out of the middle of an order-3 block leaves 6 pages in 2 buddies. */
        ASSERT_EQ(pagemap_insert(m, 64, 3, &owner(3), on_release, &r), 0);
        ASSERT_EQ(pagemap_release(m, 66, 1, on_release, &r), 2);
        ASSERT_EQ(pagemap_pages(m), 6);
        unsigned order;
        ASSERT_TRUE(pagemap_lookup(m, 64, NULL, &order));
        ASSERT_EQ(order, 1);
        ASSERT_TRUE(pagemap_lookup(m, 68, NULL, &order));
        ASSERT_EQ(order, 2);
        /* Freeing the first half of a block at its base keeps the upper half. */
        ASSERT_EQ(pagemap_release(m, 68, 1, on_release, &r), 2);
        ASSERT_TRUE(pagemap_lookup(m, 70, NULL, &order));
        ASSERT_EQ(order, 1);
        /* The whole original range freed at once takes exactly what is left. */
        ASSERT_EQ(pagemap_release(m, 64, 3, on_release, &r), 4);
        ASSERT_EQ(r.pages_by_task[3], 8);
        ASSERT_EQ(pagemap_blocks(m), 0);

        /* An order-10 block: a page in its last quarter. */
        ASSERT_EQ(pagemap_insert(m, 1 << 20, 10, &owner(4), on_release, &r), 0);
        ASSERT_EQ(pagemap_release(m, (1 << 20) + 1000, 0, on_release, &r), 1);
        ASSERT_EQ(pagemap_pages(m), 1023);
        ASSERT_EQ(pagemap_blocks(m), 10);
        pagemap_free(m);
}

static void test_untracked_and_larger_frees(void) {
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};

        /* Never allocated (before tracing began): nothing released, nothing reported. */
        ASSERT_EQ(pagemap_release(m, 12345, 0, on_release, &r), 0);
        ASSERT_EQ(pagemap_release(m, 1 << 9, 9, on_release, &r), 0);
        ASSERT_EQ(r.calls, 0);

        /* Three single pages freed as one order-2 block: the three tracked pages come back. */
        ASSERT_EQ(pagemap_insert(m, 100, 0, &owner(1), on_release, &r), 0);
        ASSERT_EQ(pagemap_insert(m, 101, 0, &owner(2), on_release, &r), 0);
        ASSERT_EQ(pagemap_insert(m, 103, 0, &owner(1), on_release, &r), 0);
        ASSERT_EQ(pagemap_insert(m, 104, 0, &owner(1), on_release, &r), 0);
        ASSERT_EQ(pagemap_release(m, 100, 2, on_release, &r), 3);
        ASSERT_EQ(r.pages_by_task[1], 2);
        ASSERT_EQ(r.pages_by_task[2], 1);
        /* 104 is outside the freed range and stays. */
        ASSERT_EQ(pagemap_pages(m), 1);
        ASSERT_TRUE(pagemap_lookup(m, 104, NULL, NULL));

        /* Without a block at the base, sub-blocks inside are still found. */
        ASSERT_EQ(pagemap_insert(m, 202, 1, &owner(3), on_release, &r), 0);
        ASSERT_EQ(pagemap_release(m, 200, 2, on_release, &r), 2);
        ASSERT_EQ(r.pages_by_task[3], 2);
        pagemap_free(m);
}

static void test_stale_and_range(void) {
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};

        /* The same pfn allocated twice means the free in between was lost: the old owner is released. */
        ASSERT_EQ(pagemap_insert(m, 5, 2, &owner(1), on_release, &r), 0);
        ASSERT_EQ(pagemap_insert(m, 5, 0, &owner(2), on_release, &r), 1);
        ASSERT_EQ(r.pages_by_task[1], 4);
        ASSERT_EQ(pagemap_pages(m), 1);

        ASSERT_EQ(pagemap_insert(m, PAGEMAP_PFN_MAX + 1, 0, &owner(1), on_release, &r), -ERANGE);
        ASSERT_EQ(pagemap_insert(m, 1, PAGEMAP_ORDER_MAX + 1, &owner(1), on_release, &r), -ERANGE);
        ASSERT_EQ(pagemap_release(m, PAGEMAP_PFN_MAX + 1, 0, on_release, &r), 0);
        ASSERT_EQ(pagemap_blocks(m), 1);

        /* The largest valid values round-trip through the packed key. */
        PageOwner max = { .task = UINT32_MAX - 1, .node = UINT32_MAX - 1, .stamp = PAGEMAP_STAMP_MASK };
        ASSERT_EQ(pagemap_insert(m, PAGEMAP_PFN_MAX, 0, &max, on_release, &r), 0);
        PageOwner got;
        unsigned order;
        ASSERT_TRUE(pagemap_lookup(m, PAGEMAP_PFN_MAX, &got, &order));
        ASSERT_EQ(got.task, UINT32_MAX - 1);
        ASSERT_EQ(got.node, UINT32_MAX - 1);
        ASSERT_EQ(got.stamp, PAGEMAP_STAMP_MASK);
        ASSERT_EQ(order, 0);

        pagemap_clear(m);
        ASSERT_EQ(pagemap_blocks(m), 0);
        ASSERT_TRUE(!pagemap_lookup(m, 5, NULL, NULL));
        pagemap_free(m);
}

/* Allocation times: kept through a split, aged modulo 2^19 stamps, held at most PAGEMAP_STAMP_AGE_MAX old. */
static void test_stamps(void) {
        const uint64_t grain = UINT64_C(1) << PAGEMAP_STAMP_SHIFT;
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};
        PageOwner got;

        /* Near the wrap of the 19 bits: an age across it is still right. */
        uint64_t t0 = ((uint64_t) PAGEMAP_STAMP_MASK - 2) * grain;
        PageOwner o = { .task = 1, .node = 2, .stamp = pagemap_stamp(t0) };
        ASSERT_EQ(pagemap_insert(m, 64, 3, &o, on_release, &r), 0);
        ASSERT_EQ(pagemap_stamp_age_nsec(o.stamp, t0 + 10 * grain), 10 * grain);
        /* Half of the block freed: the buddies kept are as old as the block. */
        ASSERT_EQ(pagemap_release(m, 64, 0, on_release, &r), 1);
        ASSERT_TRUE(pagemap_lookup(m, 68, &got, NULL));
        ASSERT_EQ(got.stamp, o.stamp);
        ASSERT_TRUE(pagemap_lookup(m, 65, &got, NULL));
        ASSERT_EQ(got.stamp, o.stamp);

        /* A young block stays as it is; an old one is held at the maximum age, so it never wraps to young. */
        uint64_t later = t0 + ((uint64_t) PAGEMAP_STAMP_AGE_MAX + 100) * grain;
        PageOwner young = { .task = 3, .node = 4, .stamp = pagemap_stamp(later - 5 * grain) };
        ASSERT_EQ(pagemap_insert(m, 128, 0, &young, on_release, &r), 0);
        pagemap_clamp_ages(m, later);
        ASSERT_TRUE(pagemap_lookup(m, 68, &got, NULL));
        ASSERT_EQ(pagemap_stamp_age_nsec(got.stamp, later), (uint64_t) PAGEMAP_STAMP_AGE_MAX * grain);
        ASSERT_EQ(got.task, 1);
        ASSERT_TRUE(pagemap_lookup(m, 128, &got, NULL));
        ASSERT_EQ(pagemap_stamp_age_nsec(got.stamp, later), 5 * grain);
        /* Clamped at least every AGE_MAX / 2, ages stay below the wrap. */
        uint64_t next = later + ((uint64_t) PAGEMAP_STAMP_AGE_MAX / 2) * grain;
        ASSERT_TRUE(pagemap_lookup(m, 68, &got, NULL));
        ASSERT_TRUE(pagemap_stamp_age_nsec(got.stamp, next) > (uint64_t) PAGEMAP_STAMP_AGE_MAX * grain);
        ASSERT_EQ(pagemap_pages(m), 8);
        pagemap_free(m);
}

static void count_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        uint64_t *n = userdata;
        *n += UINT64_C(1) << order;
        o->task = 7; /* foreach may rewrite owners */
}

static void test_growth_past_a_million(void) {
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};
        const uint64_t n = 1500000;

        /* Scattered pfns, as real memory is. */
        for (uint64_t i = 0; i < n; i++)
                ASSERT_EQ(pagemap_insert(m, i * 7919 + 3, 0, &owner(i & 1), on_release, &r), 0);
        ASSERT_EQ(pagemap_blocks(m), n);
        ASSERT_EQ(pagemap_pages(m), n);

        /* The table stays within its memory promise: at most 32 bytes per tracked page. */
        ASSERT_LE(pagemap_memory_bytes(m), 32 * n);
        ASSERT_LE(pagemap_blocks(m) * 4, pagemap_capacity(m) * 3);

        for (uint64_t i = 0; i < n; i++) {
                PageOwner got;
                ASSERT_TRUE(pagemap_lookup(m, i * 7919 + 3, &got, NULL));
                ASSERT_EQ(got.task, i & 1);
        }
        ASSERT_TRUE(!pagemap_lookup(m, 4, NULL, NULL));

        /* Remove every other block; the rest must all still be found (backward-shift deletion). */
        for (uint64_t i = 0; i < n; i += 2)
                ASSERT_EQ(pagemap_release(m, i * 7919 + 3, 0, on_release, &r), 1);
        ASSERT_EQ(r.pages_by_task[0], n / 2);
        for (uint64_t i = 1; i < n; i += 2)
                ASSERT_TRUE(pagemap_lookup(m, i * 7919 + 3, NULL, NULL));
        for (uint64_t i = 0; i < n; i += 2)
                ASSERT_TRUE(!pagemap_lookup(m, i * 7919 + 3, NULL, NULL));

        uint64_t seen = 0;
        pagemap_foreach(m, count_block, &seen);
        ASSERT_EQ(seen, n / 2);
        PageOwner got;
        ASSERT_TRUE(pagemap_lookup(m, 1 * 7919 + 3, &got, NULL));
        ASSERT_EQ(got.task, 7);
        pagemap_free(m);
}

/*
 * One step against a plain array model of page ownership (owner task per pfn, -1 free): inserts
 * [pfn, pfn + 2^order) for task if asked to and the range is free, else frees it (possibly partly or not
 * tracked, as the kernel may) and checks the pages released against the model.
 */
static void model_step(PageMap *m, int8_t *model, uint64_t pfn, unsigned order, uint32_t task, bool insert,
                Released *r, uint64_t *expected) {
        bool range_free = true;

        for (uint64_t p = pfn; p < pfn + (1u << order); p++)
                range_free = range_free && model[p] < 0;

        if (insert && range_free) {
                ASSERT_EQ(pagemap_insert(m, pfn, order, &owner(task), on_release, r), 0);
                for (uint64_t p = pfn; p < pfn + (1u << order); p++)
                        model[p] = (int8_t) task;
        } else {
                uint64_t want = 0;
                for (uint64_t p = pfn; p < pfn + (1u << order); p++)
                        if (model[p] >= 0) {
                                expected[model[p]]++;
                                model[p] = -1;
                                want++;
                        }
                ASSERT_EQ(pagemap_release(m, pfn, order, on_release, r), want);
        }
}

/* At the end of a model test: what was released per owner, and what the map holds, are the model's. */
static void model_check(const PageMap *m, const int8_t *model, unsigned space, const Released *r,
                const uint64_t *expected) {
        uint64_t live = 0;

        for (unsigned t = 0; t < 8; t++)
                ASSERT_EQ(r->pages_by_task[t], expected[t]);
        for (unsigned i = 0; i < space; i++)
                live += model[i] >= 0;
        ASSERT_EQ(pagemap_pages(m), live);
}

/* Random inserts and frees checked against a plain array model of page ownership. */
static void test_against_model(void) {
        enum { SPACE = 4096 };
        static int8_t model[SPACE]; /* owner task per pfn, -1 free */
        PageMap *m = pagemap_new(0, NULL, NULL);
        Released r = {};
        uint64_t expected[8] = {};

        for (unsigned i = 0; i < SPACE; i++)
                model[i] = -1;
        srand(42);
        for (unsigned step = 0; step < 200000; step++) {
                unsigned order = (unsigned) rand() % 4;
                uint64_t pfn = ((uint64_t) rand() % (SPACE >> order)) << order;
                uint32_t task = (uint32_t) rand() % 8;

                model_step(m, model, pfn, order, task, rand() % 2, &r, expected);
        }
        model_check(m, model, SPACE, &r, expected);
        pagemap_free(m);
}

/* The task of a node, for maps that keep none: owner(t) gives node 100 + t. */
static uint32_t task_of_node(void *userdata, uint32_t node) {
        unsigned *calls = userdata;
        (*calls)++;
        return node - 100;
}

/* A region changes form with its blocks (inline, sparse, dense and back), and gives its memory back. */
static void test_region_forms(void) {
        unsigned calls = 0;
        PageMap *m = pagemap_new(0, task_of_node, &calls);
        size_t empty_bytes = pagemap_memory_bytes(m);
        Released r = {};
        PageMapShape shape;

        /* One block: inline, no array. */
        ASSERT_EQ(pagemap_insert(m, 1 << 20, 0, &owner(1), on_release, &r), 0);
        pagemap_shape(m, &shape);
        ASSERT_EQ(shape.inline_regions, 1);
        ASSERT_EQ(pagemap_memory_bytes(m), empty_bytes);

        /* A second: sparse; the first is still found with its owner. */
        ASSERT_EQ(pagemap_insert(m, (1 << 20) + 255, 0, &owner(2), on_release, &r), 0);
        pagemap_shape(m, &shape);
        ASSERT_EQ(shape.inline_regions, 0);
        ASSERT_EQ(shape.sparse_regions, 1);
        ASSERT_EQ(shape.sparse_blocks, 2);
        PageOwner got;
        ASSERT_TRUE(pagemap_lookup(m, 1 << 20, &got, NULL));
        ASSERT_EQ(got.task, 1);
        ASSERT_EQ(got.node, 101);
        ASSERT_EQ(got.stamp, 1001);

        /* The whole region, page by page: dense, 8 bytes a page. */
        for (uint64_t p = (1 << 20) + 1; p < (1 << 20) + 255; p++)
                ASSERT_EQ(pagemap_insert(m, p, 0, &owner(p & 7), on_release, &r), 0);
        pagemap_shape(m, &shape);
        ASSERT_EQ(shape.dense_regions, 1);
        ASSERT_EQ(shape.dense_blocks, 256);
        ASSERT_EQ(pagemap_memory_bytes(m) - empty_bytes, 256 * 8);
        ASSERT_TRUE(pagemap_lookup(m, (1 << 20) + 255, &got, NULL));
        ASSERT_EQ(got.task, 2);

        /* Freed down again: sparse below 192 blocks, inline at one, nothing at none. */
        for (uint64_t p = (1 << 20) + 1; p < (1 << 20) + 255; p++) {
                uint64_t before = r.pages_by_task[p & 7];
                ASSERT_EQ(pagemap_release(m, p, 0, on_release, &r), 1);
                ASSERT_EQ(r.pages_by_task[p & 7], before + 1);
                pagemap_shape(m, &shape);
                ASSERT_EQ(shape.inline_regions + shape.sparse_blocks + shape.dense_blocks, pagemap_blocks(m));
        }
        pagemap_shape(m, &shape);
        ASSERT_EQ(shape.sparse_regions, 1);
        ASSERT_EQ(shape.dense_regions, 0);
        ASSERT_EQ(pagemap_release(m, 1 << 20, 0, on_release, &r), 1);
        pagemap_shape(m, &shape);
        ASSERT_EQ(shape.inline_regions, 1);
        ASSERT_EQ(pagemap_memory_bytes(m), empty_bytes);
        ASSERT_EQ(pagemap_release(m, (1 << 20) + 255, 0, on_release, &r), 1);
        ASSERT_EQ(pagemap_blocks(m), 0);
        ASSERT_EQ(pagemap_memory_bytes(m), empty_bytes);
        ASSERT_GT(calls, 0);
        pagemap_free(m);
}

/* Memory, as the header promises: 8 bytes a page where every page is tracked, at most 16 in half-full
 * regions; never more than 1.2 times itself while it grows. */
static void test_memory_per_page(void) {
        unsigned calls = 0;
        PageMap *m = pagemap_new(0, task_of_node, &calls);
        Released r = {};
        const uint64_t n = 1 << 20;
        size_t before = pagemap_memory_bytes(m);

        for (uint64_t p = 0; p < n; p++) {
                size_t old = pagemap_memory_bytes(m);
                ASSERT_EQ(pagemap_insert(m, (1 << 24) + p, 0, &owner(p & 7), on_release, &r), 0);
                /* No step copies the map: at most a region (2 KiB) and a 64th of the directory. */
                ASSERT_LE(pagemap_memory_bytes(m), old + old / 5 + 4096);
        }
        /* The directory: a slot per region at 50 to 75 % load, at most 1/8 byte a page. */
        ASSERT_LE(pagemap_memory_bytes(m) - before, n * 8 + n / 8);

        /* Every other page freed: half-full regions, sparse, 8 bytes a block and a step of slack. */
        for (uint64_t p = 0; p < n; p += 2)
                ASSERT_EQ(pagemap_release(m, (1 << 24) + p, 0, on_release, &r), 1);
        ASSERT_LE(pagemap_memory_bytes(m) - before, (n / 2) * 16);
        for (uint64_t p = 1; p < n; p += 2)
                ASSERT_EQ(pagemap_release(m, (1 << 24) + p, 0, on_release, &r), 1);
        ASSERT_EQ(pagemap_blocks(m), 0);
        /* The directory's tables stay as they grew; every array is gone. */
        PageMapShape shape;
        pagemap_shape(m, &shape);
        ASSERT_EQ(shape.sparse_regions + shape.dense_regions + shape.inline_regions, 0);
        ASSERT_LE(pagemap_memory_bytes(m) - before, n / 8);
        pagemap_clear(m);
        ASSERT_EQ(pagemap_memory_bytes(m), before);
        pagemap_free(m);
}

/* Random inserts and frees of any order up to 10 over regions of every form, checked against a plain
 * array model; with tasks kept and with tasks from nodes. */
static void model_any_order(bool keep_tasks) {
        enum { SPACE = 1 << 14 };
        static int8_t model[SPACE];
        unsigned calls = 0;
        PageMap *m = keep_tasks ? pagemap_new(0, NULL, NULL) : pagemap_new(0, task_of_node, &calls);
        Released r = {};
        uint64_t expected[8] = {};

        memset(model, -1, sizeof(model));
        srand(7);
        for (unsigned step = 0; step < 400000; step++) {
                unsigned order = (unsigned) rand() % 100 < 90 ? (unsigned) rand() % 3 : (unsigned) rand() % 11;
                uint64_t pfn = ((uint64_t) rand() % (SPACE >> order)) << order;
                uint32_t task = (uint32_t) rand() % 8;

                model_step(m, model, pfn, order, task, rand() % 100 < 55, &r, expected);
                if (step % 50000 == 0) {
                        PageMapShape shape;
                        pagemap_shape(m, &shape);
                        ASSERT_EQ(shape.inline_regions + shape.sparse_blocks + shape.dense_blocks,
                                  pagemap_blocks(m));
                }
        }
        model_check(m, model, SPACE, &r, expected);
        /* Every tracked page is found by its block, with the model's owner. */
        for (unsigned i = 0; i < SPACE; i++) {
                PageOwner got;
                unsigned order;
                if (pagemap_lookup(m, i, &got, &order)) {
                        ASSERT_EQ(got.task, (uint32_t) model[i]);
                        ASSERT_EQ(got.node, 100 + (uint32_t) model[i]);
                        for (uint64_t p = i; p < i + (1u << order); p++)
                                ASSERT_EQ(model[p], model[i]);
                }
        }
        pagemap_free(m);
}


/* Blocks no kernel makes (unaligned, reaching into the next regions, overlapping after lost frees): the
 * map takes them as they come, and what it releases and still holds always adds up to what came. */
static void test_unaligned_blocks_balance(void) {
        unsigned calls = 0;
        PageMap *m = pagemap_new(0, task_of_node, &calls);
        Released r = {};
        uint64_t inserted = 0;

        srand(11);
        for (unsigned step = 0; step < 200000; step++) {
                unsigned order = (unsigned) rand() % 10;
                uint64_t pfn = (uint64_t) rand() % 20000;

                if (rand() % 2) {
                        int k = pagemap_insert(m, pfn, order, &owner(rand() % 8), on_release, &r);
                        ASSERT_OK(k);
                        inserted += UINT64_C(1) << order;
                } else
                        (void) pagemap_release(m, pfn, order, on_release, &r);
                uint64_t released = 0;
                for (unsigned t = 0; t < 8; t++)
                        released += r.pages_by_task[t];
                ASSERT_EQ(released + pagemap_pages(m), inserted);
        }
        uint64_t seen = 0;
        pagemap_foreach(m, count_block, &seen);
        ASSERT_EQ(seen, pagemap_pages(m));
        pagemap_free(m);
}

static void test_any_order_against_model(void) {
        model_any_order(true);
        model_any_order(false);
}

int main(void) {
        TEST(test_orders);
        TEST(test_split_frees);
        TEST(test_untracked_and_larger_frees);
        TEST(test_stale_and_range);
        TEST(test_stamps);
        TEST(test_growth_past_a_million);
        TEST(test_against_model);
        TEST(test_region_forms);
        TEST(test_memory_per_page);
        TEST(test_any_order_against_model);
        TEST(test_unaligned_blocks_balance);
        return 0;
}
