/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The time-ordered merge of per-CPU event streams, which every live source needs: each CPU's stream is
 * in order, but a page's life crosses CPUs (freed on one, reused on another), so delivering stream by
 * stream could deliver the reuse before the free and charge the page to the wrong task.
 *
 * A round: merge_begin(), merge_add() for every stream, merge_run() with a cut taken before the streams
 * were read. Only records stamped before the cut are delivered; later ones wait for the next round. That
 * suffices when a record is published before anything it causes can be stamped (a freed page is reused
 * only after its free record is published): whatever is stamped before the cut then has its causes in
 * this round.
 *
 * Records are delivered by timestamp; equal timestamps in the order the streams were added, and a
 * stream's own records always in its order. No allocation after merge_init().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MergeOps {
        /* Looks at the stream's next record: true and its timestamp in *ret_nsec, or false when the
         * stream has nothing more this round. Called again after every consume. */
        bool (*peek)(void *stream, uint64_t *ret_nsec);
        /* Delivers the record peek() looked at and steps over it. */
        void (*consume)(void *stream);
} MergeOps;

typedef struct MergeEntry {
        uint64_t nsec;                  /* timestamp of the stream's next record */
        size_t order;                   /* position in merge_add() order: breaks ties */
        void *stream;                   /* borrowed */
} MergeEntry;

typedef struct Merge {
        const MergeOps *ops;
        MergeEntry *heap;               /* owned, n_max entries: a binary min-heap by (nsec, order) */
        size_t n_heap, n_max;
        size_t n_added;                 /* streams added this round */
} Merge;

/* Prepares a merge of at most n_max streams per round. -ENOMEM. */
int merge_init(Merge *m, size_t n_max, const MergeOps *ops);
/* Frees what merge_init() allocated; takes a zeroed Merge too. */
void merge_done(Merge *m);

/* Starts a round with no streams. */
void merge_begin(Merge *m);
/* Adds a stream to the round if peek() finds a record in it. At most n_max per round. */
void merge_add(Merge *m, void *stream);
/* Delivers up to budget records stamped before cut_nsec, in time order. Returns true if deliverable
 * records (stamped before the cut) remain: the caller continues the round with another merge_run(). */
bool merge_run(Merge *m, uint64_t cut_nsec, uint64_t budget);
