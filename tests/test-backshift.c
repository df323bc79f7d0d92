/* SPDX-License-Identifier: MIT */

/*
 * backshift_delete() (daemon/core/backshift.h): the backward-shift deletion the page table, the charge index and
 * the task id maps share. A small table with a chosen home per key, so probe runs collide and wrap around
 * the end; after every removal, every key still present must be found and no removed key may be.
 */

#include <stdbool.h>
#include <stdint.h>

#include "backshift.h"
#include "tests.h"

#define EMPTY UINT32_MAX

typedef struct Table {
        uint32_t keys[64];
        size_t capacity;
        unsigned buckets;       /* home = key % buckets * capacity / buckets: few homes, long runs */
} Table;

static size_t key_home(const Table *t, uint32_t key) {
        return (size_t) (key % t->buckets) * t->capacity / t->buckets;
}

static size_t table_home(const void *table, size_t i) {
        const Table *t = table;
        return t->keys[i] == EMPTY ? BACKSHIFT_EMPTY : key_home(t, t->keys[i]);
}

static void table_move(void *table, size_t to, size_t from) {
        Table *t = table;
        t->keys[to] = t->keys[from];
}

static void table_clear(void *table, size_t i) {
        Table *t = table;
        t->keys[i] = EMPTY;
}

static size_t next(const Table *t, size_t i) {
        return i + 1 == t->capacity ? 0 : i + 1;
}

static size_t find(const Table *t, uint32_t key) {
        for (size_t i = key_home(t, key);; i = next(t, i)) {
                if (t->keys[i] == EMPTY)
                        return SIZE_MAX;
                if (t->keys[i] == key)
                        return i;
        }
}

static void insert(Table *t, uint32_t key) {
        size_t i = key_home(t, key);
        while (t->keys[i] != EMPTY)
                i = next(t, i);
        t->keys[i] = key;
}

static void test_stays(void) {
        /* hole before i: stays only if home is in (hole, i]. */
        ASSERT_TRUE(backshift_entry_stays(2, 5, 3));
        ASSERT_TRUE(backshift_entry_stays(2, 5, 5));
        ASSERT_TRUE(!backshift_entry_stays(2, 5, 2));
        ASSERT_TRUE(!backshift_entry_stays(2, 5, 1));
        ASSERT_TRUE(!backshift_entry_stays(2, 5, 6));
        /* The run wrapped: hole near the end, i near the start. */
        ASSERT_TRUE(backshift_entry_stays(6, 1, 7));
        ASSERT_TRUE(backshift_entry_stays(6, 1, 0));
        ASSERT_TRUE(backshift_entry_stays(6, 1, 1));
        ASSERT_TRUE(!backshift_entry_stays(6, 1, 6));
        ASSERT_TRUE(!backshift_entry_stays(6, 1, 3));
}

/* A run that wraps: keys homed at the last slot spill into slot 0 and 1; deleting the first pulls them
 * back across the end. */
static void test_wrap(void) {
        Table t = { .capacity = 7, .buckets = 7 };
        for (size_t i = 0; i < t.capacity; i++)
                t.keys[i] = EMPTY;

        insert(&t, 6);          /* home 6 */
        insert(&t, 13);         /* home 6 -> slot 0 */
        insert(&t, 20);         /* home 6 -> slot 1 */
        insert(&t, 7);          /* home 0 -> slot 2 */
        ASSERT_EQ(find(&t, 20), 1);
        backshift_delete(&t, t.capacity, find(&t, 6), table_home, table_move, table_clear);
        ASSERT_EQ(find(&t, 6), SIZE_MAX);
        ASSERT_EQ(find(&t, 13), 6);
        ASSERT_EQ(find(&t, 20), 0);
        ASSERT_EQ(find(&t, 7), 1);
        ASSERT_EQ(t.keys[2], EMPTY);
}

/* Random inserts and deletes against a presence bitmap, at capacities that are and are not powers of two. */
static void test_random(void) {
        uint64_t rng = 0x9E3779B97F4A7C15;
        const size_t capacities[] = { 8, 13, 64 };

        for (size_t c = 0; c < sizeof(capacities) / sizeof(capacities[0]); c++)
                for (unsigned buckets = 1; buckets <= 5; buckets++) {
                        Table t = { .capacity = capacities[c], .buckets = buckets };
                        bool present[256] = {};
                        size_t n = 0;

                        for (size_t i = 0; i < t.capacity; i++)
                                t.keys[i] = EMPTY;
                        for (unsigned step = 0; step < 20000; step++) {
                                rng ^= rng >> 12;
                                rng ^= rng << 25;
                                rng ^= rng >> 27;
                                uint32_t key = (uint32_t) ((rng * UINT64_C(2685821657736338717)) >> 56);
                                if (present[key]) {
                                        size_t at = find(&t, key);
                                        ASSERT_NE(at, SIZE_MAX);
                                        backshift_delete(&t, t.capacity, at, table_home, table_move, table_clear);
                                        present[key] = false;
                                        n--;
                                } else if (n + 1 < t.capacity) {
                                        insert(&t, key);
                                        present[key] = true;
                                        n++;
                                }
                                for (uint32_t k = 0; k < 256; k++)
                                        ASSERT_EQ(find(&t, k) != SIZE_MAX, present[k]);
                        }
                }
}

int main(void) {
        TEST(test_stays);
        TEST(test_wrap);
        TEST(test_random);
        return 0;
}
