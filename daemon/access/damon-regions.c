/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "damon-regions.h"
#include "log.h"

/* A region as the kernel gave it. */
typedef struct RawRegion {
        uint64_t start, end;
        uint32_t nr_accesses, age;
} RawRegion;

typedef struct RegionSet {
        RawRegion *regions;             /* owned */
        size_t n, allocated;
} RegionSet;

typedef struct Stream {
        bool used;
        int32_t pid;
        uint64_t target_id;
        RegionSet building;             /* the set in progress */
        uint64_t expected;              /* its nr_regions */
        RegionSet complete;             /* the last complete one */
        uint64_t complete_nsec;         /* when its last record came, 0: none yet */
        uint64_t extent_start, extent_end;
} Stream;

struct DamonRegions {
        Stream streams[DAMON_STREAMS_MAX];
        ColdSourceStats stats;          /* the counters damon_regions_stats() gives */
};

DamonRegions *damon_regions_new(void) {
        return calloc(1, sizeof(DamonRegions));
}

static void stream_done(Stream *s) {
        free(s->building.regions);
        free(s->complete.regions);
        *s = (Stream) {};
}

DamonRegions *damon_regions_free(DamonRegions *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < DAMON_STREAMS_MAX; i++)
                stream_done(&d->streams[i]);
        free(d);
        return NULL;
}

static Stream *stream_of(DamonRegions *d, int32_t pid, uint64_t target_id) {
        Stream *free_slot = NULL;

        for (size_t i = 0; i < DAMON_STREAMS_MAX; i++) {
                Stream *s = &d->streams[i];
                if (s->used && s->pid == pid && s->target_id == target_id)
                        return s;
                if (!s->used && !free_slot)
                        free_slot = s;
        }
        if (free_slot)
                *free_slot = (Stream) { .used = true, .pid = pid, .target_id = target_id };
        return free_slot;
}

/* Drops the set in progress, counting it when it had begun. */
static void abandon(DamonRegions *d, Stream *s) {
        if (s->building.n > 0)
                d->stats.incomplete++;
        s->building.n = 0;
        s->expected = 0;
}

static int set_push(RegionSet *set, const RawRegion *r) {
        if (ARRAY_GROW_ONE(set->regions, set->allocated, set->n, 64) < 0)
                return -ENOMEM;
        set->regions[set->n++] = *r;
        return 0;
}

static void complete(DamonRegions *d, Stream *s, uint64_t time_nsec) {
        RegionSet done = s->building;
        uint64_t start = done.regions[0].start, end = done.regions[done.n - 1].end;

        /* The new set becomes the last complete one; the old one's memory takes the next set. */
        s->building = s->complete;
        s->building.n = 0;
        s->complete = done;
        s->expected = 0;
        if (s->complete_nsec > 0 && (start != s->extent_start || end != s->extent_end)) {
                d->stats.target_changes++;
                log_debug("kdamond %d target %llu now monitors %#llx-%#llx (was %#llx-%#llx).", (int) s->pid,
                          (unsigned long long) s->target_id, (unsigned long long) start, (unsigned long long) end,
                          (unsigned long long) s->extent_start, (unsigned long long) s->extent_end);
        }
        s->extent_start = start;
        s->extent_end = end;
        s->complete_nsec = time_nsec;
        d->stats.aggregations++;
}

int damon_regions_add(DamonRegions *d, const DamonRecord *rec, uint64_t time_nsec) {
        Stream *s = stream_of(d, rec->common_pid, rec->target_id);
        int r;

        if (!s) {
                d->stats.other_records++;
                return 0;
        }
        /* Hostile values: none of these is a region DAMON could have. */
        if (rec->end <= rec->start || rec->nr_regions == 0 || rec->nr_regions > DAMON_REGIONS_MAX ||
            rec->nr_accesses > UINT32_MAX || rec->age > UINT32_MAX) {
                d->stats.rejected_records++;
                abandon(d, s);
                return 0;
        }
        /* A set of another size, or a region out of order: the set in progress was cut short. */
        if (s->building.n > 0 && (rec->nr_regions != s->expected ||
                                  rec->start < s->building.regions[s->building.n - 1].end))
                abandon(d, s);
        if (s->building.n == 0)
                s->expected = rec->nr_regions;
        r = set_push(&s->building, &(RawRegion) { rec->start, rec->end, (uint32_t) rec->nr_accesses,
                                                  (uint32_t) rec->age });
        if (r < 0) {
                abandon(d, s);
                return r;
        }
        if (s->building.n == s->expected)
                complete(d, s, time_nsec);
        return 0;
}

void damon_regions_lost(DamonRegions *d, int32_t pid, uint64_t n_records) {
        d->stats.lost_records += n_records;
        for (size_t i = 0; i < DAMON_STREAMS_MAX; i++)
                if (d->streams[i].used && d->streams[i].pid == pid)
                        abandon(d, &d->streams[i]);
}

void damon_regions_drop(DamonRegions *d, int32_t pid) {
        for (size_t i = 0; i < DAMON_STREAMS_MAX; i++)
                if (d->streams[i].used && d->streams[i].pid == pid) {
                        abandon(d, &d->streams[i]);
                        stream_done(&d->streams[i]);
                }
}

uint64_t damon_regions_last_nsec(const DamonRegions *d, int32_t pid) {
        uint64_t last = 0;

        for (size_t i = 0; i < DAMON_STREAMS_MAX; i++)
                if (d->streams[i].used && d->streams[i].pid == pid)
                        last = MAX(last, d->streams[i].complete_nsec);
        return last;
}

static int by_start(const void *x, const void *y) {
        const AccessRegion *a = x, *b = y;
        return a->start_pfn < b->start_pfn ? -1 : a->start_pfn > b->start_pfn;
}

/* x * y, or UINT64_MAX where it would not fit. */
static uint64_t mul_saturate(uint64_t x, uint64_t y) {
        return y != 0 && x > UINT64_MAX / y ? UINT64_MAX : x * y;
}

ssize_t damon_regions_sample(DamonRegions *d, int32_t pid, uint64_t addr_unit, uint64_t page_size,
                uint64_t aggr_usec, uint64_t now_nsec, uint64_t max_age_nsec, AccessRegion **regions,
                size_t *allocated, uint64_t *ret_time_nsec) {
        uint64_t oldest = UINT64_MAX;
        size_t n = 0;

        if (addr_unit == 0 || page_size == 0)
                return -EINVAL;
        for (size_t i = 0; i < DAMON_STREAMS_MAX; i++) {
                const Stream *s = &d->streams[i];
                if (!s->used || s->pid != pid || s->complete_nsec == 0 || now_nsec - s->complete_nsec > max_age_nsec)
                        continue;
                for (size_t k = 0; k < s->complete.n; k++) {
                        const RawRegion *raw = &s->complete.regions[k];
                        /* Bytes, then whole page frames within them (DAMON's regions are page aligned
                         * with an addr_unit of 1: nothing is lost then). */
                        uint64_t start = mul_saturate(raw->start, addr_unit), end = mul_saturate(raw->end, addr_unit);
                        uint64_t first = start / page_size + (start % page_size != 0), last = end / page_size;
                        if (first >= last || last > (UINT64_C(1) << MS_PAGE_KEY_BITS)) {
                                d->stats.rejected_records++;
                                continue;
                        }
                        if (ARRAY_GROW_ONE(*regions, *allocated, n, 256) < 0)
                                return -ENOMEM;
                        (*regions)[n++] = (AccessRegion) {
                                .start_pfn = first,
                                .end_pfn = last,
                                .idle_usec = raw->nr_accesses > 0 ? 0 : mul_saturate(raw->age, aggr_usec),
                        };
                }
                oldest = MIN(oldest, s->complete_nsec);
        }
        if (n == 0)
                return 0;
        /* Targets of one kdamond may overlap: the first of two overlapping regions is kept. */
        qsort(*regions, n, sizeof(AccessRegion), by_start);
        size_t kept = 1;
        for (size_t i = 1; i < n; i++) {
                if ((*regions)[i].start_pfn < (*regions)[kept - 1].end_pfn) {
                        d->stats.rejected_records++;
                        continue;
                }
                (*regions)[kept++] = (*regions)[i];
        }
        *ret_time_nsec = oldest;
        return (ssize_t) kept;
}

void damon_regions_stats(const DamonRegions *d, ColdSourceStats *stats) {
        stats->aggregations = d->stats.aggregations;
        stats->incomplete = d->stats.incomplete;
        stats->lost_records = d->stats.lost_records;
        stats->rejected_records = d->stats.rejected_records;
        stats->other_records = d->stats.other_records;
        stats->target_changes = d->stats.target_changes;
}
