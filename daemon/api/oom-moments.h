/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * OomMoments: when the OOM log (oomlog.h) takes its snapshots, as the events arrive.
 *
 * A kill: the snapshot is of the moment the OOM killer picked the victim. The source's records up to
 * that moment are delivered first (the flush callback), and the snapshot is taken before the first
 * record after the kill's time is applied, or when the flush ends, whichever comes first. A peak: every
 * page allocation or sample that brings the tracked total to the OOM log's threshold offers a peak
 * snapshot. Pressure: once a second (the tick) its PressureWatch (pressure-watch.h) looks at units near
 * their memory limits and at memory pressure, and takes the pressure records.
 */

#include <stdbool.h>

#include "accounting.h"
#include "macro.h"
#include "observer.h"
#include "pressure-watch.h"
#include "oomkill.h"
#include "oomlog.h"
#include "usym.h"

typedef struct OomMomentsConfig {
        OomLog *log;                    /* borrowed: where the snapshots go */
        Accounting *accounting;         /* borrowed */
        UserSymbols *usym;              /* borrowed */
        long page_size;
        bool journal;                   /* log kills to the journal, else to stderr */
        const char *unit;               /* ours, for the journal entry; may be NULL */
        /* Delivers every record the event source holds now (through the observers, this one included). */
        void (*flush_source)(void *userdata);
        /* Names the units of the core's new cgroups now, so the snapshot names the victim's unit. */
        void (*name_units)(void *userdata);
        void *userdata;
        /* Pressure records (PressureWatchConfig's): the loop for PSI triggers, the memory controller, the
         * margin, the trigger, the interval. event NULL: none taken. */
        sd_event *event;
        const Memcg *memcg;
        PressureSettings pressure;
} OomMomentsConfig;

typedef struct OomMoments OomMoments;

/* NULL on OOM, or for a pressure trigger pressure_trigger_parse() refuses (check it beforehand). */
OomMoments *oom_moments_new(const OomMomentsConfig *config);
OomMoments *oom_moments_free(OomMoments *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(OomMoments *, oom_moments_free);

/* The OOM killer picked a victim (the OOM watcher's handler): its snapshot is taken at its moment. */
void oom_moments_kill(OomMoments *m, const OomKill *kill);

/* The observer to register with the Manager; it frees m. */
EventObserver *oom_moments_observer(OomMoments *m);
