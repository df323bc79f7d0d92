/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * History: current and peak pages over time, of the total and of a bounded set of tasks (processes), units
 * and modules, at HISTORY_LEVELS resolutions, in fixed memory.
 *
 * Each series keeps one ring of buckets per level: 1 s buckets for 10 minutes, 1 min buckets for 24 hours.
 * A bucket holds the last current value seen in it and the true peak within it: every sample folds into
 * the bucket of its time at every level (last current wins, peaks take the maximum), so a minute bucket is
 * exactly the fold of its second buckets. The peak of a sample is the owner's interval peak
 * (ledger_interval_take(), ledger.h), the most its current value reached since the previous tick, so a
 * peak that lasted a microsecond between two ticks is not lost.
 *
 * Which series: the total always; per kind (task, unit, module), the HISTORY_TOP_N biggest by current pages
 * at each tick plus every series already tracked, at most HISTORY_SERIES_MAX. A new top-N owner past the
 * cap replaces the tracked series of its kind that is not in the top N and holds least now. Series are
 * never freed otherwise: their memory is allocated once, HISTORY_MEMORY_MAX bytes in all.
 *
 * Times are CLOCK_REALTIME usec (history survives a restart, see history_save()).
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting.h"

typedef enum HistoryKind {
        HISTORY_TOTAL,
        HISTORY_TASK,
        HISTORY_UNIT,
        HISTORY_MODULE,
        _HISTORY_KIND_MAX,
        _HISTORY_KIND_INVALID = -EINVAL,
} HistoryKind;

#define HISTORY_LEVELS 2
#define HISTORY_TOP_N 10
#define HISTORY_SERIES_MAX 32           /* per kind, besides the one total */
#define HISTORY_NAME_MAX 256            /* longer unit and module names are not tracked */

typedef struct HistoryLevel {
        uint64_t resolution_usec;
        size_t n_buckets;
} HistoryLevel;

extern const HistoryLevel history_levels[HISTORY_LEVELS];

#define HISTORY_BUCKETS_ALL (600 + 1440)

typedef struct HistoryPoint {
        uint64_t current_pages;         /* HISTORY_NO_DATA: the bucket is empty */
        uint64_t peak_pages;
} HistoryPoint;

#define HISTORY_NO_DATA UINT64_MAX

/* A bucket as read out: its start time. */
typedef struct HistorySample {
        uint64_t time_usec;
        uint64_t current_pages;
        uint64_t peak_pages;
} HistorySample;

typedef struct HistoryRing {
        uint64_t newest;                /* bucket number (time / resolution) of the newest bucket */
        bool used;                      /* newest is set */
        HistoryPoint *points;           /* points into the series' storage; slot = bucket % n_buckets */
} HistoryRing;

typedef struct HistorySeries {
        HistoryKind kind;
        bool used;
        bool in_top;                    /* among the top N at the last tick */
        int32_t pid;                    /* task */
        char name[HISTORY_NAME_MAX];    /* unit or module name; task: its comm when last seen */
        uint64_t last_current;          /* the last sample's current pages */
        HistoryRing ring[HISTORY_LEVELS];
        HistoryPoint storage[HISTORY_BUCKETS_ALL];
} HistorySeries;

#define HISTORY_SERIES_TOTAL (1 + 3 * HISTORY_SERIES_MAX)
/* Everything a History ever allocates. */
#define HISTORY_MEMORY_MAX (HISTORY_SERIES_TOTAL * sizeof(HistorySeries) + 64)

typedef struct History History;

/* NULL on OOM. Allocates all its memory now. */
History *history_new(void);
History *history_free(History *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(History *, history_free);

/* "total", "task", "unit", "module". */
const char *history_kind_to_string(HistoryKind k);

/*
 * One sample of every tracked series and of the top N of each kind: reads every owner's current pages and
 * takes its interval peak (which restarts the interval of untracked owners too, so a series that starts
 * tracking later begins with the peak of its first interval only). Walks tasks, units and modules once.
 */
void history_tick(History *h, Accounting *a, uint64_t now_usec);

/* Folds one sample into a series (what history_tick() does per series): for tests and loading. */
void history_series_put(HistorySeries *s, uint64_t now_usec, uint64_t current_pages, uint64_t peak_pages);

/* The series of this owner (pid for a task, name for a unit or module), NULL if not tracked. */
HistorySeries *history_find(History *h, HistoryKind kind, int32_t pid, const char *name);
/*
 * Finds or starts tracking a series (a query asked for an owner not tracked yet): past the cap it replaces
 * the smallest series not in the top N. NULL if every series of the kind is in the top N (cannot be with
 * HISTORY_TOP_N < HISTORY_SERIES_MAX) or the name is too long.
 */
HistorySeries *history_track(History *h, HistoryKind kind, int32_t pid, const char *name);
size_t history_count(const History *h, HistoryKind kind);

/* Buckets of level with a start time >= since_usec, oldest first, empty ones left out: at most
 * history_levels[level].n_buckets into buf. Returns how many. */
size_t history_series_read(const HistorySeries *s, unsigned level, uint64_t since_usec, HistorySample *buf);

/* The finest level whose span covers seconds back from now; the coarsest if none. */
unsigned history_level_for(uint64_t seconds);

/*
 * Writes every series to path atomically (a temporary file in the same directory, then rename()), in a
 * versioned binary format with a checksum. -errno.
 */
int history_save(const History *h, const char *path);
/*
 * Replaces the series with those in path. -ENOENT if there is none; -EBADMSG if it is corrupt, of another
 * version or of other levels (the History is then unchanged); -EBADFD if it is not a regular file, -ELOOP
 * if it is a symlink (file-util.h); other -errno on read errors.
 */
int history_load(History *h, const char *path);
