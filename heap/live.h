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
extern __thread bool live_leave_wanted __attribute__((tls_model("initial-exec")));
void live_leave(void);
static inline void live_done(bool nested) {
        if (__builtin_expect(live_leave_wanted, 0) && !nested)
                live_leave();
}
