/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The blocks that have a record, so that their frees get one too (heap/block-set.c): a set of pointers in
 * shards, each an open-addressing table under its own lock. In sampled mode most frees are of blocks
 * without a record: a filter of one bit per hash bucket answers them without a lock, inline in the hook
 * (block_set_may_hold()). In every-call mode every live block is in the set, and a free of a pointer not
 * in it is a double free or a pointer never handed out here.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* 2^14 buckets: 2 KiB of filter, small enough to stay in the first-level cache beside a busy program. */
#define BLOCK_FILTER_BITS 14u

/* Bit b: bucket b may have members. Changed under the bucket's shard's lock, read without it. */
extern uint64_t block_set_filter[(1u << BLOCK_FILTER_BITS) / 64];

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

/* sampled: the set holds only the sampled blocks, and the filter answers for the others; else it holds
 * every live block. Once, before the first insert. */
void block_set_init(bool sampled);
/* Adds ptr; nested (a call inside another on the thread) only tries the lock. false: not kept (the lock
 * was held, or the shard could not grow), for the caller to count. */
bool block_set_insert(uint64_t ptr, bool nested);
/* Removes ptr. 1: it was in the set, 0: it was not, -1: could not look (nested, the lock was held). */
int block_set_remove(uint64_t ptr, bool nested);

#pragma GCC visibility pop
