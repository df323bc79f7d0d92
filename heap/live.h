/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The process's live bytes and their exact peak (heap/live.c). Far below the peak, each thread keeps its
 * changes in an allowance of its own, with plain stores; near it, every change goes to the one shared
 * counter, as the peak needs one order for all threads.
 */

#include <stdbool.h>
#include <stdint.h>

#include "heap-abi.h"

/* A call's record, if it writes one: its ring slot is reserved inside the change of the live bytes, so
 * that near the peak the records are in the order of the changes they report (the tree at the maximum
 * is the one the peak's own record closes). */
typedef struct LiveRecord {
        bool reserved;                  /* out: seq is the record's slot; false: dropped, counted */
        uint64_t seq;
        uint64_t peak;                  /* out: the peak right after the change */
} LiveRecord;

typedef enum LiveMode {
        MODE_EXACT,
        MODE_FAST,
        MODE_FOLDING,           /* to MODE_EXACT: the deltas are being folded in */
        MODE_LEAVING,           /* to MODE_FAST, if the bound holds once the exact calls under way are done */
        MODE_RECHECK,           /* MODE_FAST, and a nested call left bytes in nested_pending: fold */
} LiveMode;

typedef enum LiveThreadKind {
        THREAD_NEW,             /* no ordinary call yet */
        THREAD_FAST,            /* its slot is among the fast slots */
        THREAD_SHARED,          /* no slot of its own: always exact */
} LiveThreadKind;

/* What every call reads, on one cache line; heap/live.c changes it. */
typedef struct LiveState {
        HeapAbiHeader *header;
        int64_t allowance;
        int mode;                       /* LiveMode */
        unsigned n_fast;                /* threads with a fast slot */
        bool fast_possible;             /* membarrier is registered and every thread has a fast slot */
        HeapAbiThread *owner;           /* MODE_EXACT: the fast slot of the thread that changes the counter
                                         * with plain stores; NULL: every thread atomically */
} LiveState;

extern LiveState live_state;
extern __thread int live_thread_kind __attribute__((tls_model("initial-exec")));
extern __thread bool live_leave_wanted __attribute__((tls_model("initial-exec")));

/* Reserves a ring slot; nested: may not wait. false: dropped (counted by it). */
typedef bool (*LiveReserveFn)(bool nested, uint64_t *ret_seq);

/* Counts into h's live_bytes and peak_bytes, with allowances of allowance bytes per thread (0: none).
 * Allowances need the kernel's expedited membarrier; without it every change is shared. */
void live_init(HeapAbiHeader *h, uint64_t allowance, LiveReserveFn reserve);
/* Forgets the region (a forked child, which records nothing). */
void live_reset(void);

/*
 * Adds bytes (negative: a free) to the live bytes for a call on this thread: own is its counts slot,
 * NULL for a thread that shares the last one; nested: the call runs inside another on this thread (a
 * signal handler), which may be amid this module's own work; record: its record's slot to reserve, or
 * NULL. Returns the live bytes after it, as this thread sees them, for the record: exact near the peak,
 * where it matters; without a record, far below the peak, not looked up (this thread's own part only).
 */
int64_t live_change(HeapAbiThread *own, int64_t bytes, bool nested, LiveRecord *record);
/* After the call's record is written (or there is none): what live_change() left for later, done now. */
void live_leave(void);
static inline void live_done(bool nested) {
        if (__builtin_expect(live_leave_wanted, 0) && !nested)
                live_leave();
}

/* Marks the thread's slot busy around a call's look at the mode and what it does by it (heap/live.c). */
static inline void live_mark(HeapAbiThread *own, uint64_t busy) {
        __atomic_store_n(&own->live_busy, busy, __ATOMIC_RELEASE);
        /* Only the compiler may not move it past the mode's load: membarrier() orders it for the CPU. */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* One thread in all: it owns the counter in MODE_EXACT (heap/live.c). */
static inline bool live_alone(void) {
        return __atomic_load_n(&live_state.n_fast, __ATOMIC_RELAXED) == 1 &&
               __atomic_load_n(&live_state.fast_possible, __ATOMIC_RELAXED);
}

/*
 * live_change() of the common calls, inline: an ordinary call of a thread with a fast slot and no record
 * to reserve, far below the peak and within its allowance (MODE_FAST), or owning the counter with no
 * bytes pending from nested calls (MODE_EXACT): in MODE_EXACT nobody else changes the counter or the peak
 * then, so plain stores do what the locked operations do for many, and the records are in the owner's
 * order. false: nothing done, live_change() does it.
 */
__attribute__((always_inline)) static inline bool live_change_quick(HeapAbiThread *own, int64_t bytes) {
        if (__builtin_expect(live_thread_kind != THREAD_FAST, 0))
                return false;
        bool done = false;
        live_mark(own, 1);
        int m = __atomic_load_n(&live_state.mode, __ATOMIC_ACQUIRE);
        if (__builtin_expect(m == MODE_FAST, 1)) {
                int64_t delta = __atomic_load_n(&own->live_delta, __ATOMIC_RELAXED) + bytes;
                if (delta >= -live_state.allowance && delta <= live_state.allowance) {
                        __atomic_store_n(&own->live_delta, delta, __ATOMIC_RELAXED);
                        done = true;
                }
        } else if (m == MODE_EXACT && __atomic_load_n(&live_state.owner, __ATOMIC_RELAXED) == own &&
                   __atomic_load_n(&live_state.header->nested_pending, __ATOMIC_RELAXED) == 0) {
                HeapAbiHeader *h = live_state.header;
                int64_t live = __atomic_load_n(&h->live_bytes, __ATOMIC_RELAXED) + bytes;
                int64_t peak = (int64_t) __atomic_load_n(&h->peak_bytes, __ATOMIC_RELAXED);
                __atomic_store_n(&h->live_bytes, live, __ATOMIC_RELEASE);
                if (live > peak)
                        __atomic_store_n(&h->peak_bytes, (uint64_t) live, __ATOMIC_RELAXED);
                else if (__builtin_expect(live + 2 * (int64_t) live_state.n_fast * live_state.allowance <= peak, 0))
                        live_leave_wanted = true;       /* MODE_FAST, once the call is done */
                done = true;
        }
        live_mark(own, 0);
        return done;
}
