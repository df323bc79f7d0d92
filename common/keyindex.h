/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * KeyIndex: open addressing from a 64-bit key to a 32-bit value (an index into the caller's array): the
 * core's one hash table for keyed maps (task ids, cgroup ids, slab call sites and caches, Leaks' rows, the
 * heap's processes and stack ids, the stack views' subsets). Linear probing, at most half full, removal by backward shift (backshift.h), so
 * lookups stay exact without tombstones. Key 0 is a key like any other (kept beside the slots, whose 0
 * means empty).
 *
 * The page table (pagemap.c), the charge index (chargeindex.c), the stack tree's children
 * (stacktree.c) and the heap's blocks (heap.c) keep tables of their own: their slots hold the record
 * itself, not an index, so a lookup on the event path is one cache line.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEY_INDEX_NONE UINT32_MAX

typedef struct KeyIndex {
        uint64_t *keys;                 /* 0: an empty slot */
        uint32_t *values;
        size_t n_slots, n_used;
        bool has_zero;                  /* key 0 is mapped, to zero_value */
        uint32_t zero_value;
} KeyIndex;

/* The value of key, or KEY_INDEX_NONE. */
uint32_t key_index_get(const KeyIndex *x, uint64_t key);
/* Maps key to value, replacing the value it had. -ENOMEM (nothing changed). */
int key_index_put(KeyIndex *x, uint64_t key, uint32_t value);
/* Unmaps key; false if it was not mapped. */
bool key_index_remove(KeyIndex *x, uint64_t key);
/* Unmaps every key, keeping the memory. */
void key_index_clear(KeyIndex *x);
void key_index_done(KeyIndex *x);
size_t key_index_count(const KeyIndex *x);
size_t key_index_memory_bytes(const KeyIndex *x);

/* The mixing step of the index's hash, for callers that derive keys from keys. */
static inline uint64_t key_index_mix(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        return x;
}
