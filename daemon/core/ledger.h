/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Ledger: a current value and the most it ever was, for one owner (a task, a module, a stack node) in one
 * unit. The arithmetic is the same whatever is counted; the unit is where the ledger sits: owners keep
 * one ledger per LedgerUnit (Task.ledger[LEDGER_PAGES], ...), so pages of whole pages and bytes of slab
 * objects never mix in one number.
 *
 * A peak is the maximum the current value reached, raised on every change: never a sum of other peaks.
 *
 * No value wraps. ledger_add() is the page path's plain add: its callers keep every value at or below
 * COUNT_MAX (macro.h: 2^63 - 1, what a reply can carry), as the accounting core does by holding the total
 * that its ledgers of pages are parts of below ACCOUNTING_PAGES_MAX, and the ledgers a bytes sample
 * touches below COUNT_MAX. The rises of samples, which come in whole from a source, stop at COUNT_MAX
 * themselves (ledger_raise(), ledger_mark_rise()).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

typedef enum LedgerUnit {
        LEDGER_PAGES,           /* whole pages of the page allocator */
        LEDGER_BYTES,           /* bytes, e.g. of slab objects */
        _LEDGER_UNIT_MAX,
        _LEDGER_UNIT_INVALID = -EINVAL,
} LedgerUnit;

typedef struct Ledger {
        uint64_t current;
        uint64_t peak;
} Ledger;

/* "pages", "bytes"; NULL for an invalid unit. */
const char *ledger_unit_to_string(LedgerUnit unit);

/* Adds n; current + n must not go beyond COUNT_MAX (see above). */
static inline void ledger_add(Ledger *l, uint64_t n) {
        l->current += n;
        if (l->current > l->peak)
                l->peak = l->current;
}

/* Takes n off. false if the ledger held less (it is then 0): an unmatched release, for the caller to count. */
static inline bool ledger_sub(Ledger *l, uint64_t n) {
        if (_unlikely_(l->current < n)) {
                l->current = 0;
                return false;
        }
        l->current -= n;
        return true;
}

/*
 * A change known only as a whole, as an in-kernel aggregation reports it: at some moment the value stood
 * rise above its current value (rise >= 0), before or after which it ended up rising by delta. Raises
 * the peak to at least current + rise; the caller then applies delta with ledger_add()/ledger_sub().
 */
static inline void ledger_raise(Ledger *l, uint64_t rise) {
        uint64_t high = count_add(l->current, rise);

        if (high > l->peak)
                l->peak = high;
}

/* ledger_raise() and then delta. false if a negative delta took more than the ledger held (it is then 0). */
static inline bool ledger_apply(Ledger *l, uint64_t rise, int64_t delta) {
        ledger_raise(l, rise);
        if (delta >= 0) {
                ledger_add(l, (uint64_t) delta);
                return true;
        }
        /* -delta without overflow for INT64_MIN. */
        return ledger_sub(l, (uint64_t) -(delta + 1) + 1);
}

static inline void ledger_reset_peak(Ledger *l) {
        l->peak = l->current;
}

/*
 * An interval peak: the most a ledger's current value reached since the last ledger_interval_take(), for
 * history buckets (history.h). The ledger's own peak cannot give it: it only rises, so a bucket in which
 * the value climbed back to below an older peak would not see its maximum. It is a counter beside the
 * ledger, not in it (a stack node keeps none), raised by the owner's charge path after ledger_add(): one
 * compare on a cache line the charge already wrote. Releases never raise it.
 */
static inline void ledger_mark(const Ledger *l, uint64_t *interval_peak) {
        if (l->current > *interval_peak)
                *interval_peak = l->current;
}

/* As ledger_raise() for the interval peak: the value stood rise above current at some moment. */
static inline void ledger_mark_rise(const Ledger *l, uint64_t rise, uint64_t *interval_peak) {
        uint64_t high = count_add(l->current, rise);

        if (high > *interval_peak)
                *interval_peak = high;
}

/* The most the value reached since the last take (at least the current value), and a new interval
 * starting at the current value. */
static inline uint64_t ledger_interval_take(const Ledger *l, uint64_t *interval_peak) {
        uint64_t p = *interval_peak > l->current ? *interval_peak : l->current;
        *interval_peak = l->current;
        return p;
}
