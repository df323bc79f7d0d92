/* SPDX-License-Identifier: MIT */

/*
 * The set of blocks that have a record (block-set.h). The first tables of the shards are small and side
 * by side (32 KiB in all), so that a sampled block's insert and removal find their slot in the cache: a
 * table spread over pages of its own missed it on almost every sampled call. A shard that fills moves to
 * mmap()ed memory, twice the size each time. A bucket's members are all in one shard, which keeps their
 * count under its lock and clears the bucket's filter bit when the last one goes.
 */

#include <sys/mman.h>

#include "block-set.h"
#include "library.h"
#include "spin-lock.h"

#define SHARDS 64u
#define SHARD_FIRST_SLOTS 64u

typedef struct Shard {
        int lock;
        uint64_t *slots;                /* 0: empty */
        size_t capacity, used;
} Shard;

static Shard shards[SHARDS];
static _Alignas(64) uint64_t first_slots[SHARDS][SHARD_FIRST_SLOTS];
_Alignas(64) uint64_t block_set_filter[(1u << BLOCK_FILTER_BITS) / 64];
/* Under the bucket's shard's lock; stops at the top. */
static uint16_t filter_members[1u << BLOCK_FILTER_BITS];
static bool filtered;                   /* block_set_init()'s sampled */

/* A bucket's shard: its low bits, so that the bucket's members share a lock. */
static Shard *shard_of(uint64_t h) {
        return &shards[block_bucket(h) & (SHARDS - 1)];
}

/* Under the bucket's shard's lock; other bits of the word belong to other shards. */
static void filter_add(uint64_t h) {
        size_t b = block_bucket(h);
        if (filter_members[b] == UINT16_MAX)
                return;
        if (filter_members[b]++ == 0)
                __atomic_fetch_or(&block_set_filter[b / 64], UINT64_C(1) << (b % 64), __ATOMIC_RELAXED);
}

static void filter_sub(uint64_t h) {
        size_t b = block_bucket(h);
        if (filter_members[b] == UINT16_MAX)
                return;         /* "maybe" for good, never a wrong "no" */
        if (--filter_members[b] == 0)
                __atomic_fetch_and(&block_set_filter[b / 64], ~(UINT64_C(1) << (b % 64)), __ATOMIC_RELAXED);
}

static size_t slot_home(const Shard *s, uint64_t ptr) {
        return (mix64(ptr) >> 6) & (s->capacity - 1);
}

static bool shard_grow(Shard *s) {
        uint64_t *first = first_slots[s - shards];

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
                size_t j = slot_home(s, old[i]);
                while (slots[j] != 0)
                        j = (j + 1) & (capacity - 1);
                slots[j] = old[i];
        }
        if (old != first)
                (void) munmap(old, old_capacity * sizeof(uint64_t));
        return true;
}

void block_set_init(bool sampled) {
        filtered = sampled;
}

bool block_set_insert(uint64_t ptr, bool nested) {
        uint64_t h = block_hash(ptr);
        Shard *s = shard_of(h);
        bool ok = false;

        if (!lock_take(&s->lock, nested))
                return false;
        if ((s->used + 1) * 2 > s->capacity && !shard_grow(s))
                goto out;
        size_t i = slot_home(s, ptr);
        while (s->slots[i] != 0 && s->slots[i] != ptr)
                i = (i + 1) & (s->capacity - 1);
        if (s->slots[i] == 0) {
                s->slots[i] = ptr;
                s->used++;
                if (filtered)
                        filter_add(h);
        }
        ok = true;
out:
        lock_release(&s->lock);
        return ok;
}

int block_set_remove(uint64_t ptr, bool nested) {
        uint64_t h = block_hash(ptr);
        Shard *s = shard_of(h);

        if (filtered && !block_set_may_hold(h))
                return 0;
        if (!lock_take(&s->lock, nested))
                return -1;
        if (s->capacity == 0) {
                lock_release(&s->lock);
                return 0;
        }
        size_t i = slot_home(s, ptr);
        while (s->slots[i] != 0 && s->slots[i] != ptr)
                i = (i + 1) & (s->capacity - 1);
        if (s->slots[i] == 0) {
                lock_release(&s->lock);
                return 0;
        }
        /* Backward-shift deletion: later members of the run that would become unreachable move back. */
        size_t hole = i;
        for (size_t j = (hole + 1) & (s->capacity - 1); s->slots[j] != 0; j = (j + 1) & (s->capacity - 1)) {
                size_t home = slot_home(s, s->slots[j]);
                bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (stays)
                        continue;
                s->slots[hole] = s->slots[j];
                hole = j;
        }
        s->slots[hole] = 0;
        s->used--;
        if (filtered)
                filter_sub(h);
        lock_release(&s->lock);
        return 1;
}
