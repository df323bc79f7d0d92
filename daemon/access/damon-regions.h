/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DamonRegions: damon:damon_aggregated records put back together into DAMON's complete sets of regions,
 * one stream per (kdamond, target). A kdamond writes, at the end of each aggregation interval, one record
 * per region of a target, nr_regions of them in address order; a set is complete when that many arrived
 * in order. Anything else is counted and dropped, never half used: a record lost by the kernel, a set cut
 * short by one with another count or target, a region out of order, and hostile values (an end before its
 * start, addresses beyond what a page frame number can be, a count past DAMON_REGIONS_MAX).
 *
 * The last complete set of each stream is kept with its time and turned into an AccessSample (coldness.h)
 * of page frames with idle times: a region DAMON found accessed in the interval is idle 0, one not
 * accessed has been idle for its age times the kdamond's aggregation interval (DAMON's age counts the
 * intervals its access frequency held). Memory: 32 bytes per region of the streams, at most
 * DAMON_REGIONS_MAX per set.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coldness.h"
#include "macro.h"
#include "stats.h"
#include "tracepoint.h"

#define DAMON_REGIONS_MAX (UINT32_C(1) << 20)
#define DAMON_STREAMS_MAX 16

typedef struct DamonRegions DamonRegions;

DamonRegions *damon_regions_new(void);
DamonRegions *damon_regions_free(DamonRegions *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DamonRegions *, damon_regions_free);

/* One record, read at time_nsec (CLOCK_MONOTONIC). -ENOMEM; everything else is counted. */
int damon_regions_add(DamonRegions *d, const DamonRecord *rec, uint64_t time_nsec);
/* The kernel dropped records of kdamond pid (a full ring): its sets in progress are dropped. */
void damon_regions_lost(DamonRegions *d, int32_t pid, uint64_t n_records);
/* Forgets the streams of kdamond pid (it stopped, or its settings changed: counted by the caller). */
void damon_regions_drop(DamonRegions *d, int32_t pid);

/*
 * The last complete set of kdamond pid's streams as page frames: addresses are in units of addr_unit
 * bytes (DAMON's addr_unit, 1 on kernels without it), pages of page_size bytes, idle time in units of
 * aggr_usec. Sets older than max_age_nsec at now_nsec are left out (stale). The regions go into *regions
 * (grown as needed, sorted; overlapping ones of two targets left out and counted), the oldest set's time
 * into *ret_time_nsec. Returns how many regions, 0 when no set is fresh; -ENOMEM.
 */
ssize_t damon_regions_sample(DamonRegions *d, int32_t pid, uint64_t addr_unit, uint64_t page_size,
                uint64_t aggr_usec, uint64_t now_nsec, uint64_t max_age_nsec, AccessRegion **regions,
                size_t *allocated, uint64_t *ret_time_nsec);

/* Whether kdamond pid has had a complete set, and when its last one arrived (0: none). */
uint64_t damon_regions_last_nsec(const DamonRegions *d, int32_t pid);

/* Counters over every stream: aggregations, incomplete, lost_records, rejected_records, target_changes
 * (a stream's address extent moved). */
void damon_regions_stats(const DamonRegions *d, ColdSourceStats *stats);
