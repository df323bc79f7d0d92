/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * OomMoments: when the OOM log (oomlog.h) takes its snapshots, as the events arrive.
 *
 * A kill: the snapshot is of the moment the OOM killer picked the victim. Once the kill is heard of, the
 * snapshot is taken before the first record after the kill's time is applied, or when the records the
 * source held at the kill have been delivered (by the room's kill handler, oom.h), whichever comes first.
 * A peak: every page allocation or sample that brings the tracked total to the OOM log's threshold offers
 * a peak snapshot. Pressure: once a second (oom_moments_tick(), from the Manager's tick, not an observer
 * hook) its PressureWatch (pressure-watch.h) looks at units near their memory limits and at memory
 * pressure, and takes the pressure records.
 *
 * Its observer only reads the core: it never delivers records or runs other observers.
 */

#include <stdbool.h>

#include "accounting.h"
#include "macro.h"
#include "observer.h"
#include "oom.h"
#include "pressure-watch.h"
#include "oomkill.h"
#include "oomlog.h"
#include "usym.h"

typedef struct OomMoments OomMoments;

/* The snapshots go to log; config is the room's (oom.h): what is read, the hooks, and the pressure
 * records (none without config->event). Its flush_source is handed to the PressureWatch (its trigger
 * handler delivers before a record), never called here; name_units names new cgroups for a snapshot
 * (the cgroup namer alone, so safe inside delivery). NULL on OOM, or for a pressure trigger
 * pressure_trigger_parse() refuses (check it beforehand). */
OomMoments *oom_moments_new(const OomConfig *config, OomLog *log);
OomMoments *oom_moments_free(OomMoments *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(OomMoments *, oom_moments_free);

/* The OOM killer picked a victim (the OOM watcher's handler): its snapshot is taken at its moment, at the
 * latest by oom_moments_kill_delivered() once what the source held then has been delivered. */
void oom_moments_kill_heard(OomMoments *m, const OomKill *kill);
void oom_moments_kill_delivered(OomMoments *m);

/* The pressure checks, once a second. */
void oom_moments_tick(OomMoments *m);

/* The observer to register with the Manager; m keeps owning it (free the observers first). */
EventObserver *oom_moments_observer(OomMoments *m);
