/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Delivery in number order of entries numbered by one counter (0, 1, 2, ...) that arrive in runs: each
 * run's entries in increasing order, the runs in any order. The eBPF source needs it: each CPU sends its
 * page events in batches of its own, and a page's life crosses CPUs (freed on one, reused on another), so
 * delivering batch by batch could deliver the reuse before the free and charge the page to the wrong task.
 * The BPF program numbers every event from one counter as it writes it.
 *
 * An entry whose number is next is delivered at once, from the caller's buffer; a run that has to wait is
 * copied, and waits in a heap by its next entry's number until that number is next. A number that never
 * comes (its record was lost) holds everything after it until seq_order_skip() gives up on it. An entry
 * that arrives after its number was skipped is delivered when it comes ("late").
 *
 * What a run and an entry are is the owner's business (SeqOrderOps): a run is bytes, an entry a span of
 * them from an offset.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef struct SeqOrderOps {
        /* The entry at offset in the run: true with its number and length in bytes (> 0), or false when
         * it is malformed; the rest of the run is dropped then. */
        bool (*entry)(void *userdata, const uint8_t *run, size_t size, size_t offset, uint64_t *ret_seq,
                      size_t *ret_length);
        void (*deliver)(void *userdata, const uint8_t *run, size_t size, size_t offset, size_t length);
} SeqOrderOps;

typedef struct SeqOrderStats {
        uint64_t waiting_entries;       /* in runs that wait */
        uint64_t waiting_bytes;         /* the copies of those runs */
        uint64_t skipped;               /* numbers given up on (seq_order_skip()) */
        uint64_t late;                  /* entries delivered after their number was skipped */
        uint64_t malformed;             /* runs cut short at a malformed entry */
} SeqOrderStats;

typedef struct SeqOrder SeqOrder;

SeqOrder *seq_order_new(const SeqOrderOps *ops, void *userdata);
SeqOrder *seq_order_free(SeqOrder *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(SeqOrder *, seq_order_free);

/* Delivers what of the run (from offset) and of the waiting runs is next, keeps the rest. -ENOMEM when the
 * rest cannot be kept: it is dropped, and its numbers are skipped in time. */
int seq_order_add(SeqOrder *o, const void *run, size_t size, size_t offset);

/* The number delivered next. */
uint64_t seq_order_next(const SeqOrder *o);

/* The lowest number that waits (above next): false when nothing waits. */
bool seq_order_first_waiting(const SeqOrder *o, uint64_t *ret);

/* Gives up on the numbers below upto that have not come: delivers, in order, what waits below upto and
 * what becomes next after it. Returns how many numbers were given up on. */
uint64_t seq_order_skip(SeqOrder *o, uint64_t upto);

void seq_order_get_stats(const SeqOrder *o, SeqOrderStats *ret);
