/* SPDX-License-Identifier: MIT */

/*
 * The set of blocks that have a record (block-set.h, where its inserts and removals are). The first tables
 * of the shards are small and side by side (32 KiB in all), so that a sampled block's insert and removal
 * find their slot in the cache: a table spread over pages of its own missed it on almost every sampled
 * call. A shard that fills moves to mmap()ed memory, twice the size each time.
 */

#include <sys/mman.h>

#include "block-set.h"

#define SHARD_FIRST_SLOTS 64u

BlockShard block_set_shards[BLOCK_SET_SHARDS];
_Alignas(64) uint64_t block_set_filter[(1u << BLOCK_FILTER_BITS) / 64];
uint16_t block_set_filter_members[1u << BLOCK_FILTER_BITS];
bool block_set_filtered;
static _Alignas(64) uint64_t first_slots[BLOCK_SET_SHARDS][SHARD_FIRST_SLOTS];

void block_set_init(bool sampled) {
        block_set_filtered = sampled;
}

bool block_shard_grow(BlockShard *s) {
        uint64_t *first = first_slots[s - block_set_shards];

        if (s->capacity == 0) {
                s->slots = first;
                s->capacity = SHARD_FIRST_SLOTS;
                return true;
        }
        size_t capacity = s->capacity * 2;
        uint64_t *slots = mmap(NULL, capacity * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (slots == MAP_FAILED)
                return false;
        uint64_t *old = s->slots;
        size_t old_capacity = s->capacity;
        s->slots = slots;
        s->capacity = capacity;
        for (size_t i = 0; i < old_capacity; i++) {
                if (old[i] == 0)
                        continue;
                size_t j = block_slot_home(s, old[i]);
                while (slots[j] != 0)
                        j = (j + 1) & (capacity - 1);
                slots[j] = old[i];
        }
        if (old != first)
                (void) munmap(old, old_capacity * sizeof(uint64_t));
        return true;
}
