/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * HistoryKeeper: samples the core into the History (history.h) once a second and keeps it in the state
 * directory across restarts: read at start (a corrupt file is logged and replaced), written every
 * HISTORY_SAVE_INTERVAL_USEC and when the daemon stops.
 */

#include "accounting.h"
#include "history.h"
#include "macro.h"
#include "observer.h"

/* The history is written this often and at exit, if it is kept. */
#define HISTORY_SAVE_INTERVAL_USEC (UINT64_C(5) * 60 * 1000000)

typedef struct HistoryKeeper HistoryKeeper;

/* state_directory: where the file "history" is kept; NULL: $STATE_DIRECTORY's first (systemd's
 * StateDirectory=), "": not kept. accounting is borrowed. -errno, logged. */
int history_keeper_new(const char *state_directory, Accounting *accounting, HistoryKeeper **ret);
HistoryKeeper *history_keeper_free(HistoryKeeper *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(HistoryKeeper *, history_keeper_free);

/* The history, for queries. */
History *history_keeper_history(HistoryKeeper *k);

/* The observer to register with the Manager (its tick samples, its finish saves); it frees k. */
EventObserver *history_keeper_observer(HistoryKeeper *k);
