/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * KeyIndex: open addressing from a non-zero 64-bit key to a 32-bit value (an index into the caller's
 * array), for tables built once and looked up many times: slab.c's call sites and caches, leaks.c's rows.
 * Linear probing, at most half full; keys are never removed.
 */

#include <stddef.h>
#include <stdint.h>

#define KEY_INDEX_NONE UINT32_MAX

typedef struct KeyIndex {
        uint64_t *keys;                 /* 0: an empty slot */
        uint32_t *values;
        size_t n_slots, n_used;
} KeyIndex;

/* The value of key (not 0), or KEY_INDEX_NONE. */
uint32_t key_index_get(const KeyIndex *x, uint64_t key);
/* Maps key (not 0, not present) to value. -ENOMEM (nothing changed). */
int key_index_put(KeyIndex *x, uint64_t key, uint32_t value);
void key_index_done(KeyIndex *x);
size_t key_index_memory_bytes(const KeyIndex *x);

/* The mixing step of the index's hash, for callers that derive keys from keys. */
static inline uint64_t key_index_mix(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        return x;
}
