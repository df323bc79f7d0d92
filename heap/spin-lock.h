/* SPDX-License-Identifier: MIT */
#pragma once

/* The heap library's locks: a word, taken by exchange, held for a few instructions (libc only, no
 * allocation, safe in a signal handler that only tries). */

#include <sched.h>
#include <stdbool.h>

static inline void lock_release(int *l) {
        __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Takes the lock; try_once (a nested call: the thread it interrupted may hold it) tries once. */
static inline bool lock_take(int *l, bool try_once) {
        for (unsigned spins = 0;; spins++) {
                if (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0)
                        return true;
                if (try_once)
                        return false;
                if (spins > 64)
                        sched_yield();
        }
}
