/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The blocks that have a record, so that their frees get one too (heap/block-set.c): a set of pointers in
 * shards, each an open-addressing table under its own lock. In sampled mode most frees are of blocks
 * without a record: a filter of one bit per hash bucket answers them without a lock, inline in the hook
 * (block_set_may_hold()). In every-call mode every live block is in the set, and a free of a pointer not
 * in it is a double free or a pointer never handed out here.
 *
 * An insert and a removal are inline too, for record.c: in every-call mode each call makes one, and as
 * calls of their own they added 2.4 % to such a call's instructions. Only a shard's growth is out of line.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "library.h"
#include "spin-lock.h"

#pragma GCC visibility push(hidden)

/* 2^14 buckets: 2 KiB of filter, small enough to stay in the first-level cache beside a busy program. */
#define BLOCK_FILTER_BITS 14u
#define BLOCK_SET_SHARDS 64u

typedef struct BlockShard {
        int lock;
        uint64_t *slots;                /* 0: empty */
        size_t capacity, used;
} BlockShard;

/* Defined in block-set.c, changed only by the functions below. A bucket's members are all in one shard,
 * which keeps their count under its lock and clears the bucket's filter bit when the last one goes. */
extern BlockShard block_set_shards[BLOCK_SET_SHARDS];
/* Bit b: bucket b may have members. Changed under the bucket's shard's lock, read without it. */
extern uint64_t block_set_filter[(1u << BLOCK_FILTER_BITS) / 64];
/* Each bucket's members, under its shard's lock; stops at the top ("maybe" for good, never a wrong "no"). */
extern uint16_t block_set_filter_members[1u << BLOCK_FILTER_BITS];
/* block_set_init()'s sampled: the filter is kept and asked. */
extern bool block_set_filtered;

/* sampled: the set holds only the sampled blocks, and the filter answers for the others; else it holds
 * every live block. Once, before the first insert. */
void block_set_init(bool sampled);
/* Makes room in a full shard, under its lock; false if it cannot (no memory). */
bool block_shard_grow(BlockShard *s);

/* Where a pointer's filter bit and shard are: one multiply (Fibonacci hashing), as every free asks. */
static inline uint64_t block_hash(uint64_t ptr) {
        return (ptr >> 4) * UINT64_C(0x9E3779B97F4A7C15);
}

static inline size_t block_bucket(uint64_t h) {
        return (size_t) (h >> (64 - BLOCK_FILTER_BITS));
}

/* Sampled mode: false if the set surely holds no block of hash h, true if it may. */
static inline bool block_set_may_hold(uint64_t h) {
        size_t b = block_bucket(h);
        return (__atomic_load_n(&block_set_filter[b / 64], __ATOMIC_RELAXED) >> (b % 64)) & 1;
}

/* A bucket's shard: its low bits, so that the bucket's members share a lock. */
static inline BlockShard *block_shard_of(uint64_t h) {
        return &block_set_shards[block_bucket(h) & (BLOCK_SET_SHARDS - 1)];
}

/* Under the bucket's shard's lock; other bits of the word belong to other shards. */
static inline void block_filter_add(uint64_t h) {
        size_t b = block_bucket(h);
        if (block_set_filter_members[b] == UINT16_MAX)
                return;
        if (block_set_filter_members[b]++ == 0)
                __atomic_fetch_or(&block_set_filter[b / 64], UINT64_C(1) << (b % 64), __ATOMIC_RELAXED);
}

static inline void block_filter_sub(uint64_t h) {
        size_t b = block_bucket(h);
        if (block_set_filter_members[b] == UINT16_MAX)
                return;
        if (--block_set_filter_members[b] == 0)
                __atomic_fetch_and(&block_set_filter[b / 64], ~(UINT64_C(1) << (b % 64)), __ATOMIC_RELAXED);
}

static inline size_t block_slot_home(const BlockShard *s, uint64_t ptr) {
        return (mix64(ptr) >> 6) & (s->capacity - 1);
}

/* Adds ptr; nested (a call inside another on the thread) only tries the lock. false: not kept (the lock
 * was held, or the shard could not grow), for the caller to count. */
static inline bool block_set_insert(uint64_t ptr, bool nested) {
        uint64_t h = block_hash(ptr);
        BlockShard *s = block_shard_of(h);
        bool ok = false;

        if (!lock_take(&s->lock, nested))
                return false;
        if ((s->used + 1) * 2 > s->capacity && !block_shard_grow(s))
                goto out;
        size_t i = block_slot_home(s, ptr);
        while (s->slots[i] != 0 && s->slots[i] != ptr)
                i = (i + 1) & (s->capacity - 1);
        if (s->slots[i] == 0) {
                s->slots[i] = ptr;
                s->used++;
                if (block_set_filtered)
                        block_filter_add(h);
        }
        ok = true;
out:
        lock_release(&s->lock);
        return ok;
}

/* Removes ptr. 1: it was in the set, 0: it was not, -1: could not look (nested, the lock was held). */
static inline int block_set_remove(uint64_t ptr, bool nested) {
        uint64_t h = block_hash(ptr);
        BlockShard *s = block_shard_of(h);

        if (block_set_filtered && !block_set_may_hold(h))
                return 0;
        if (!lock_take(&s->lock, nested))
                return -1;
        if (s->capacity == 0) {
                lock_release(&s->lock);
                return 0;
        }
        size_t i = block_slot_home(s, ptr);
        while (s->slots[i] != 0 && s->slots[i] != ptr)
                i = (i + 1) & (s->capacity - 1);
        if (s->slots[i] == 0) {
                lock_release(&s->lock);
                return 0;
        }
        /* Backward-shift deletion: later members of the run that would become unreachable move back. */
        size_t hole = i;
        for (size_t j = (hole + 1) & (s->capacity - 1); s->slots[j] != 0; j = (j + 1) & (s->capacity - 1)) {
                size_t home = block_slot_home(s, s->slots[j]);
                bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (stays)
                        continue;
                s->slots[hole] = s->slots[j];
                hole = j;
        }
        s->slots[hole] = 0;
        s->used--;
        if (block_set_filtered)
                block_filter_sub(h);
        lock_release(&s->lock);
        return 1;
}

#pragma GCC visibility pop
