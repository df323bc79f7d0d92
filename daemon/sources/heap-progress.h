/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * HeapProgress: what a heap source has told the core of one process so far, the maximum as of the last
 * record and the exact counters as last sent, so that both heap sources (the preloaded library's channel
 * and the uprobes) mark peaks and send counters alike.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "event.h"

typedef struct HeapProgress {
        uint64_t last_peak;
        bool peak_provisional;          /* the last mark was not at the call that made the maximum */
        MsHeapCounters sent;
        bool sent_any;
} HeapProgress;

/* The peak mark of a record made when the maximum stood at peak, with live_after bytes live after it. */
static inline MsHeapPeak heap_progress_record(HeapProgress *p, bool alloc, uint64_t live_after, uint64_t peak) {
        if (peak < p->last_peak)
                return MS_HEAP_PEAK_NONE;
        if (peak == p->last_peak) {
                /* The maximum was seen (in the counters, or in a record another thread wrote after the call
                 * that made it raised the peak) before that call's own record: this is where it stands. */
                if (!p->peak_provisional || !alloc || live_after < peak)
                        return MS_HEAP_PEAK_NONE;
                p->peak_provisional = false;
                return MS_HEAP_PEAK_AFTER;
        }
        p->last_peak = peak;
        /* The maximum moved since the last record: this allocation made it, or something between (a call
         * with no record, or one whose record comes later). */
        p->peak_provisional = !(alloc && live_after >= peak);
        return p->peak_provisional ? MS_HEAP_PEAK_BEFORE : MS_HEAP_PEAK_AFTER;
}

/* Whether now differs from the counters last sent; if so they count as sent, and *ret_peak marks a
 * maximum reached after the last sampled record (the tree stands as it did then). */
static inline bool heap_progress_counters(HeapProgress *p, const MsHeapCounters *now, MsHeapPeak *ret_peak) {
        if (p->sent_any && memcmp(now, &p->sent, sizeof(*now)) == 0)
                return false;
        *ret_peak = MS_HEAP_PEAK_NONE;
        if (now->peak_bytes > p->last_peak) {
                *ret_peak = MS_HEAP_PEAK_AFTER;
                p->last_peak = now->peak_bytes;
                p->peak_provisional = true;
        }
        p->sent = *now;
        p->sent_any = true;
        return true;
}
