/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the files of libmemstrack-heap.so share. What one of them defines for the others is declared in its
 * header between `#pragma GCC visibility push(hidden)` and `pop`: the compiler then reaches it as it
 * reaches a static of its own file, without the global offset table, so that a hook inlines the fast path
 * of another file at the cost it had when the library was one file.
 */

#include <stdint.h>
#include <time.h>

/* initial-exec: a thread's first use allocates nothing (the dynamic model may, in __tls_get_addr()). */
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* MurmurHash3's 64-bit finalizer: every input bit moves every output bit. */
static inline uint64_t mix64(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x *= UINT64_C(0xc4ceb9fe1a85ec53);
        x ^= x >> 33;
        return x;
}

static inline uint64_t now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static inline uint64_t now_msec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}
