/* SPDX-License-Identifier: MIT */

/*
 * KeyIndex (daemon/core/keyindex.c) against a plain array model: puts that add and replace, removals from
 * the middle of probe runs (backward shift), key 0, growth, clear; every key looked up after every step.
 */

#include <stdlib.h>

#include "keyindex.h"
#include "tests.h"

#define KEYS 4096

static uint64_t keys[KEYS];
static uint32_t model[KEYS];            /* KEY_INDEX_NONE: not mapped */

static void check(const KeyIndex *x) {
        size_t n = 0;

        for (size_t i = 0; i < KEYS; i++) {
                ASSERT_EQ(key_index_get(x, keys[i]), model[i]);
                n += model[i] != KEY_INDEX_NONE;
        }
        ASSERT_EQ(key_index_count(x), n);
}

static void test_against_model(void) {
        KeyIndex x = {};
        unsigned seed = 7;

        /* Keys that collide in the low bits (multiples of a large power of two), key 0 among them. */
        for (size_t i = 0; i < KEYS; i++) {
                keys[i] = i % 3 == 0 ? (uint64_t) i << 40 : UINT64_C(0x9000000000000000) + i;
                model[i] = KEY_INDEX_NONE;
        }
        ASSERT_EQ(key_index_get(&x, 0), KEY_INDEX_NONE);
        ASSERT_TRUE(!key_index_remove(&x, 42));
        for (unsigned step = 0; step < 40000; step++) {
                size_t i = (size_t) rand_r(&seed) % KEYS;
                if (rand_r(&seed) % 3 == 0) {
                        ASSERT_EQ(key_index_remove(&x, keys[i]), model[i] != KEY_INDEX_NONE);
                        model[i] = KEY_INDEX_NONE;
                } else {
                        uint32_t v = (uint32_t) rand_r(&seed) % 100000;
                        ASSERT_OK(key_index_put(&x, keys[i], v));
                        model[i] = v;
                }
                if (step % 1000 == 0)
                        check(&x);
        }
        check(&x);
        ASSERT_GT(key_index_memory_bytes(&x), 0);

        key_index_clear(&x);
        for (size_t i = 0; i < KEYS; i++)
                model[i] = KEY_INDEX_NONE;
        check(&x);
        ASSERT_OK(key_index_put(&x, 0, 5));
        ASSERT_EQ(key_index_get(&x, 0), 5);
        ASSERT_EQ(key_index_count(&x), 1);
        key_index_done(&x);
        ASSERT_EQ(key_index_count(&x), 0);
}

int main(void) {
        TEST(test_against_model);
        return 0;
}
