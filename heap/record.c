/* SPDX-License-Identifier: MIT */

/*
 * What a call of the malloc family records (record.h), beyond the common call that the hooks inline: the
 * thread's first call (its counts slot), nested calls, threads that share a slot, sampled blocks and their
 * frees, and every call in every-call mode.
 */

#include <malloc.h>
#include <string.h>
#include <unistd.h>

#include "block-set.h"
#include "channel.h"
#include "library.h"
#include "live.h"
#include "record.h"
#include "stacks.h"

RecordSettings record_settings = { .sample_interval = HEAP_SAMPLE_INTERVAL_DEFAULT,
                                   .block_align_mask = 2 * sizeof(void *) - 1 };

TLS unsigned record_in_call;
TLS int64_t record_bytes_until_sample;
TLS HeapAbiThread *record_own_counts;
TLS bool record_counts_shared;

static TLS uint64_t rng;
static uint64_t threads_seeded;

/* ---- Counts ------------------------------------------------------------------------------------------- */

/* This thread's counts: a slot of its own, claimed at its first call, or the shared last one. */
static inline HeapAbiThread *counts(void) {
        if (unlikely(!record_own_counts)) {
                HeapAbiHeader *h = channel.header;
                uint64_t i = __atomic_fetch_add(&h->threads_used, 1, __ATOMIC_RELAXED);
                record_counts_shared = i >= h->n_thread_slots - 1;
                record_own_counts = &channel.thread_slots[record_counts_shared ? h->n_thread_slots - 1 : i];
        }
        return record_own_counts;
}

/* One call's counts; nested: made inside another call on this thread, which may be amid
 * record_count_own(). */
static inline void count_call(bool nested, bool alloc, uint64_t bytes) {
        HeapAbiThread *t = counts();

        if (likely(!nested && !record_counts_shared)) {
                if (alloc) {
                        record_count_own(&t->allocs, 1);
                        record_count_own(&t->alloc_bytes, bytes);
                } else
                        record_count_own(&t->frees, 1);
                return;
        }
        if (alloc) {
                __atomic_fetch_add(&t->nested_allocs, 1, __ATOMIC_RELAXED);
                __atomic_fetch_add(&t->nested_alloc_bytes, bytes, __ATOMIC_RELAXED);
        } else
                __atomic_fetch_add(&t->nested_frees, 1, __ATOMIC_RELAXED);
}

/* The low half of this thread's own allocations for its records, 0 when its count is not its own alone
 * (heap-abi.h thread_allocs): a nested call, a thread on the shared slot. */
static inline uint32_t thread_allocs(bool nested) {
        return !nested && !record_counts_shared && record_own_counts ?
                (uint32_t) __atomic_load_n(&record_own_counts->allocs, __ATOMIC_RELAXED) : 0;
}

void record_forget_thread(void) {
        record_own_counts = NULL;
}

/* ---- Sampling ----------------------------------------------------------------------------------------- */

static uint64_t next_random(void) {
        /* Each thread its own stream: the seed and the thread's order of first use (reproducible with a
         * fixed seed, as far as the threads' order is). */
        if (unlikely(rng == 0))
                rng = mix64(record_settings.seed + __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED) *
                                                           UINT64_C(0x9E3779B97F4A7C15)) | 1;
        /* xorshift64* */
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * UINT64_C(2685821657736338717);
}

/* -ln(u) for u uniform in (0, 1], without libm: log2 from the exponent and an odd series in
 * t = (m - 1) / (m + 1) for the mantissa m (error below 1e-5, far inside the sampling noise). */
static double exponential_draw(void) {
        double u = (double) ((next_random() >> 11) + 1) * 0x1.0p-53;
        uint64_t bits;

        memcpy(&bits, &u, sizeof(bits));
        int exponent = (int) ((bits >> 52) & 0x7ff) - 1023;
        bits = (bits & ~(UINT64_C(0x7ff) << 52)) | (UINT64_C(1023) << 52);
        double m;
        memcpy(&m, &bits, sizeof(m));
        double t = (m - 1.0) / (m + 1.0), t2 = t * t;
        double ln_m = 2.0 * t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 / 9))));
        return -(exponent * 0.6931471805599453 + ln_m);
}

static int64_t next_sample_distance(void) {
        double d = exponential_draw() * (double) record_settings.sample_interval;
        return d < 1.0 ? 1 : d > (double) INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t) d;
}

void record_init(uint64_t sample_interval, uint64_t seed) {
        record_settings.sample_interval = sample_interval;
        record_settings.seed = seed ?: mix64((uint64_t) getpid() ^ (uint64_t) now_msec() << 20);
        block_set_init(sample_interval > 1);
}

/* ---- Block sizes -------------------------------------------------------------------------------------- */

bool record_check_chunks(void *(*real_malloc)(size_t), void *(*real_memalign)(size_t, size_t),
                void (*real_free)(void *)) {
        /* One of each kind. The mmap()ed one is beyond glibc's largest dynamic mmap threshold (32 MiB): a
         * smaller one's free would raise the program's threshold, and its blocks would come from elsewhere
         * than they do without the library. */
        static const size_t sizes[] = { 1, 24, 100, 1000, 5000, 70000, (size_t) 40 << 20 };
        const char *libc = stacks_code_path((const void *) real_malloc);

        if (!libc || !strstr(libc, "/libc.so")) {
                record_settings.block_align_mask = sizeof(void *) - 1;
                return false;
        }
        record_settings.glibc_chunks = true;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) * 2 && record_settings.glibc_chunks; i++) {
                size_t n = sizes[i / 2];
                void *p = i % 2 == 0 || !real_memalign ? real_malloc(n) : real_memalign(256, n);
                if (!p)
                        continue;
                record_settings.glibc_chunks = record_usable_size(p) == malloc_usable_size(p);
                real_free(p);
        }
        return true;
}

/* ---- Every case --------------------------------------------------------------------------------------- */

void record_alloc_any(void *p) {
        bool nested = record_in_call > 0;
        if (unlikely(nested) && record_in_call >= RECORD_IN_ALLOCATOR)
                return;         /* the allocator's own call inside an entry point's: that one records */
        uint64_t bytes = record_usable_size(p);

        record_in_call++;
        count_call(nested, true, bytes);
        if (nested)
                __atomic_fetch_add(&channel.header->nested_calls, 1, __ATOMIC_RELAXED);

        bool sampled = record_settings.sample_interval <= 1;
        if (!sampled) {
                if (record_bytes_until_sample == 0)
                        record_bytes_until_sample = next_sample_distance();
                record_bytes_until_sample -= (int64_t) (bytes ?: 1);
                if (record_bytes_until_sample <= 0) {
                        sampled = true;
                        record_bytes_until_sample = next_sample_distance();
                }
        }
        if (sampled && !block_set_insert((uint64_t) (uintptr_t) p, nested)) {
                __atomic_fetch_add(nested ? &channel.header->lost_nested : &channel.header->lost_table, 1,
                                   __ATOMIC_RELAXED);
                sampled = false;
        }
        /* The stack before the change: near the peak its record's slot is reserved under a lock. */
        uint32_t stack = sampled && !nested ? stacks_take() : HEAP_STACK_NONE;
        LiveRecord slot;
        int64_t live = live_change(record_counts_shared ? NULL : record_own_counts, (int64_t) bytes, nested,
                                   sampled ? &slot : NULL);
        if (sampled)
                channel_emit(&slot, HEAP_RECORD_ALLOC, (uint64_t) (uintptr_t) p, bytes, live, stack,
                             thread_allocs(nested));
        live_done(nested);
        record_in_call--;
}

/* A pointer no allocator hands out (misaligned) is counted, not measured. */
void record_free_any(void *p) {
        bool nested = record_in_call > 0;
        if (unlikely(nested) && record_in_call >= RECORD_IN_ALLOCATOR)
                return;
        uint64_t ptr = (uint64_t) (uintptr_t) p;

        record_in_call++;
        if (nested)
                __atomic_fetch_add(&channel.header->nested_calls, 1, __ATOMIC_RELAXED);
        if (!record_block_aligned(ptr)) {
                __atomic_fetch_add(&channel.header->invalid_frees, 1, __ATOMIC_RELAXED);
                goto out;
        }
        int was = block_set_remove(ptr, nested);
        if (was == 0 && record_settings.sample_interval <= 1) {
                /* Every live block is in the set: this one was freed before, or never allocated here. */
                __atomic_fetch_add(&channel.header->unknown_frees, 1, __ATOMIC_RELAXED);
                goto out;
        }
        if (was < 0)
                __atomic_fetch_add(&channel.header->lost_nested, 1, __ATOMIC_RELAXED);
        uint64_t bytes = record_usable_size(p);
        count_call(nested, false, 0);
        LiveRecord slot;
        int64_t live = live_change(record_counts_shared ? NULL : record_own_counts, -(int64_t) bytes, nested,
                                   was > 0 ? &slot : NULL);
        if (was > 0)
                channel_emit(&slot, HEAP_RECORD_FREE, ptr, bytes, live, HEAP_STACK_NONE, thread_allocs(nested));
        live_done(nested);
out:
        record_in_call--;
}
