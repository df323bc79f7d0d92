/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What a call of the malloc family records (heap/record.c): its counts in the thread's slot of the region,
 * its change of the live bytes (heap/live.c), and for a sampled block (one per sample interval of bytes
 * on average, a Poisson process over the bytes as tcmalloc and jemalloc sample; every block with interval
 * 1) its stack and a record, and for the free of a sampled block a record too.
 *
 * The common call is here, inline, for the hooks to inline: an ordinary call (not nested) of a thread that
 * counts in a slot of its own, for a block without a record, whose live bytes live_change_quick() takes.
 * It costs a few plain loads and stores and no call; everything else is record_alloc_any() and
 * record_free_any().
 */

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "block-set.h"
#include "heap-abi.h"
#include "library.h"
#include "live.h"

#pragma GCC visibility push(hidden)

/* How calls are recorded: set once, by record_init() and record_check_chunks(), before the first call is
 * recorded. */
typedef struct RecordSettings {
        uint64_t sample_interval;       /* bytes per sampled stack on average; 1: every call */
        uint64_t seed;                  /* of every thread's random stream */
        bool glibc_chunks;              /* sizes read from glibc's chunk headers (record_usable_size()) */
        uint64_t block_align_mask;      /* the allocator's least alignment of a block, less one */
} RecordSettings;

extern RecordSettings record_settings;

/* The guard against reentry: calls of the library running on this thread. More than one: the call is
 * nested, made inside another (a signal handler that allocates, or an allocation by what the library
 * calls itself). A nested call still counts exactly, takes no stack and only tries locks. */
extern TLS unsigned record_in_call;
/* Added to record_in_call around a call of the allocator's own that may come back into the library's entry
 * points (another allocator calls its exported functions through its PLT, as mimalloc's posix_memalign()
 * calls mi_malloc_aligned()): the outer entry point records the call, the inner ones only pass it on. */
#define RECORD_IN_ALLOCATOR (UINT32_C(1) << 20)
/* Bytes this thread may still allocate before its next sampled block; 0: not drawn yet. */
extern TLS int64_t record_bytes_until_sample;
/* This thread's counts in the region: a slot of its own, claimed at its first recorded call, or the last
 * one (record_counts_shared), shared by the threads beyond the slots. */
extern TLS HeapAbiThread *record_own_counts;
extern TLS bool record_counts_shared;

/* Samples a stack per sample_interval bytes on average (1: every call), from a random stream of seed
 * (0: one of its own). */
void record_init(uint64_t sample_interval, uint64_t seed);
/* Reads block sizes from glibc's chunk headers where the real allocator is glibc's and agrees with
 * malloc_usable_size() on blocks of every kind, which it allocates and frees through the real functions
 * given (real_memalign may be NULL); takes the least alignment of the allocator's blocks (glibc's 16 bytes,
 * another's 8: jemalloc, tcmalloc and mimalloc hand out 8-byte blocks 8 bytes apart). True: glibc's. */
bool record_check_chunks(void *(*real_malloc)(size_t), void *(*real_memalign)(size_t, size_t),
                void (*real_free)(void *));
/* In a forked child: the thread's slot is the parent's. */
void record_forget_thread(void);

/* A block the allocator handed out, and one about to go back to it: every case. Never inlined: the hooks
 * keep only the common call. */
__attribute__((noinline)) void record_alloc_any(void *p);
__attribute__((noinline)) void record_free_any(void *p);

/* Adds to a count of this thread's own: a plain store, as no one else writes it (the daemon reads). */
static inline void record_count_own(uint64_t *c, uint64_t n) {
        __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* A pointer less aligned than the allocator's blocks is none of theirs (and glibc's malloc_usable_size()
 * would read outside the heap for it). */
static inline bool record_block_aligned(uint64_t ptr) {
        return (ptr & record_settings.block_align_mask) == 0;
}

/* What malloc_usable_size() says of a block in use, without the call: glibc keeps a chunk's size in the
 * word before the block, its low three bits flags (0x2: mmap()ed, whose header takes a word more). Only
 * that word is read: whether the chunk is in use is in the next chunk's header, often another cache line,
 * and a block freed twice that glibc does not stop (a fastbin's, under its top) has that bit set anyway. */
static inline uint64_t record_usable_size(void *p) {
        if (likely(record_settings.glibc_chunks)) {
                size_t head;
                memcpy(&head, (const char *) p - sizeof(size_t), sizeof(head));
                return (head & ~(size_t) 7) - (head & 2 ? 2 : 1) * sizeof(size_t);
        }
        /* Another allocator's answer, marked as its own call (tcmalloc's allocates, through operator new);
         * none inside such a call, which is not recorded. */
        if (record_in_call >= RECORD_IN_ALLOCATOR)
                return 0;
        record_in_call += RECORD_IN_ALLOCATOR;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        uint64_t bytes = malloc_usable_size(p);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        record_in_call -= RECORD_IN_ALLOCATOR;
        return bytes;
}

/* The common call begins: record_in_call is set around the change, so that a signal handler's call made
 * meanwhile is a nested one; the fences keep the compiler from moving it past the change. */
static inline bool record_quick_begin(HeapAbiThread *own) {
        if (unlikely(record_in_call != 0 || !own || record_counts_shared))
                return false;
        record_in_call = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        return true;
}

/* What live_change_quick() left for later runs inside the call too (a switch takes locks a handler's
 * call must know to be held). */
static inline void record_quick_end(bool done) {
        if (done)
                live_done(false);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        record_in_call = 0;
}

/* A block the allocator handed out. */
__attribute__((always_inline)) static inline void record_alloc(void *p) {
        HeapAbiThread *own = record_own_counts;
        uint64_t bytes = record_usable_size(p);
        int64_t until = record_bytes_until_sample - (int64_t) (bytes ?: 1);

        if (likely(until > 0 && record_settings.sample_interval > 1) && record_quick_begin(own)) {
                bool done = live_change_quick(own, (int64_t) bytes);
                if (likely(done)) {
                        record_bytes_until_sample = until;
                        record_count_own(&own->allocs, 1);
                        record_count_own(&own->alloc_bytes, bytes);
                }
                record_quick_end(done);
                if (likely(done))
                        return;
        }
        record_alloc_any(p);
}

/* A block about to go back to the allocator, before it does. */
__attribute__((always_inline)) static inline void record_free(void *p) {
        HeapAbiThread *own = record_own_counts;
        uint64_t ptr = (uint64_t) (uintptr_t) p;

        if (likely(record_settings.sample_interval > 1 && record_block_aligned(ptr) &&
                   !block_set_may_hold(block_hash(ptr))) &&
            record_quick_begin(own)) {
                bool done = live_change_quick(own, -(int64_t) record_usable_size(p));
                if (likely(done))
                        record_count_own(&own->frees, 1);
                record_quick_end(done);
                if (likely(done))
                        return;
        }
        record_free_any(p);
}

#pragma GCC visibility pop
