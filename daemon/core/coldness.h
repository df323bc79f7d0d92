/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Coldness: how long the tracked pages have gone untouched, per charge cell (chargeindex.h), as of the
 * last sampling round. The core knows who allocated every page but not whether it is used; an access
 * source (daemon/access/: DAMON's regions, /proc/kpageflags) knows the second by physical address. A
 * round joins the two: one walk of the tracked blocks (view_foreach_block()), each block looked up by
 * its pfn in the source's sorted regions, its pages counted hot, warm or cold by the idle time of the
 * region holding them. No byte per page: the figures are kept per cell, for the last round only.
 *
 * What a round cannot tell is counted, never guessed:
 *   - pages in no region (outside what DAMON monitors, not sampled, not on the LRU) are "unknown";
 *   - a block across several regions, or partly in none, has its pages split in proportion (counted);
 *   - a region whose tracked pages belong to more than one cell was measured for all of them together
 *     (DAMON samples one address per region): counted, with its pages;
 *   - a block allocated after the regions were taken is "newer" than them, not classified;
 *   - a block allocated while its region was already idle cannot have been idle longer than it lived:
 *     its idle time is its age (the pages were freed and reused since; counted as clamped).
 * A cell's pages may change after the round: readers get the round's figures with its time, and a
 * cell id whose cell was removed and reused for another owner since is recognized and dropped.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

typedef struct Accounting Accounting;

typedef enum ColdClass {
        COLD_CLASS_HOT,                 /* idle less than the warm threshold */
        COLD_CLASS_WARM,                /* idle at least the warm threshold, less than the cold one */
        COLD_CLASS_COLD,                /* idle at least the cold threshold */
        COLD_CLASS_UNKNOWN,             /* in no region: the source says nothing of it */
        COLD_CLASS_NEWER,               /* allocated after the regions were taken */
        _COLD_CLASS_MAX,
        _COLD_CLASS_INVALID = -EINVAL,
} ColdClass;

/* "hot", "warm", "cold", "unknown", "newer". */
const char *cold_class_to_string(ColdClass c);

/* A range of physical pages and how long it went untouched, as an access source measured it. */
typedef struct AccessRegion {
        uint64_t start_pfn, end_pfn;    /* [start, end), start < end */
        uint64_t idle_usec;             /* not accessed for at least this long at the sample's time; 0:
                                         * accessed within the source's last interval */
} AccessRegion;

/* One set of regions, sorted by start and not overlapping (coldness_round() checks). */
typedef struct AccessSample {
        const AccessRegion *regions;
        size_t n_regions;
        uint64_t time_nsec;             /* CLOCK_MONOTONIC time the regions describe */
} AccessSample;

typedef struct Coldness Coldness;

/* Thresholds in usec, warm <= cold (coldness_set_thresholds()). */
Coldness *coldness_new(uint64_t warm_usec, uint64_t cold_usec);
Coldness *coldness_free(Coldness *c);

/* -EINVAL unless 0 < warm_usec <= cold_usec. Takes effect at the next round. */
int coldness_set_thresholds(Coldness *c, uint64_t warm_usec, uint64_t cold_usec);
ColdClass coldness_classify(const Coldness *c, uint64_t idle_usec);

/*
 * A round: every tracked block of a classified by sample's regions, as of now_nsec (CLOCK_MONOTONIC, the
 * events' clock). Replaces the last round's figures. -EINVAL (nothing changed, counted in
 * ColdStats.rejected_samples) for regions out of order, overlapping or empty; -ENOMEM (the last round
 * kept).
 */
int coldness_round(Coldness *c, Accounting *a, const AccessSample *sample, uint64_t now_nsec);
/* No source can be read any more (a kdamond stopped): the last round's figures are dropped, its stats kept. */
void coldness_forget(Coldness *c);

/* A cell's pages by class at the last round; false if the round has no figures for it: it did not exist
 * then, or its id is now another owner's (process or stack node differ). */
bool coldness_cell(const Coldness *c, uint32_t cell, uint32_t process, uint32_t node,
                uint64_t ret_pages[static _COLD_CLASS_MAX]);

/* What the access source is and says, for replies: strings are copied (NULL: none). */
void coldness_set_source(Coldness *c, const char *name, const char *detail, const char *reason);
/* The source's own counters (aggregations, losses, kdamond changes), added to the stats as they are. */
void coldness_set_source_stats(Coldness *c, const ColdSourceStats *s);
/* Figures of the rounds and the source, and its strings (borrowed: valid until the next set). */
void coldness_get_stats(const Coldness *c, ColdStats *ret, const char **ret_name, const char **ret_detail,
                const char **ret_reason);
size_t coldness_memory_bytes(const Coldness *c);
