/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The time now, as the integer units memstrack counts in (time is uint64_t usec, or nsec where the
 * kernel's timestamps are compared). Header-only: bench/loadgen, which links neither library, uses it
 * too. In protocol/ because every folder, the client included, may include it (docs/layout.md).
 */

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_SEC  UINT64_C(1000000000)

/* clock_gettime() cannot fail for the clocks we read (CLOCK_MONOTONIC, CLOCK_REALTIME). */
static inline uint64_t now_nsec(clockid_t clock) {
        struct timespec ts = {};

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static inline uint64_t now_usec(clockid_t clock) {
        return now_nsec(clock) / NSEC_PER_USEC;
}
