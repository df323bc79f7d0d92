/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The OOM log: who held the memory when the kernel's OOM killer picked a victim, and at each new global
 * peak. Every record is a bounded snapshot taken at that moment from the core: the top OOMLOG_TOP_N
 * tasks, units, modules and stacks by current pages, and for a kill the victim as the kernel named it
 * (oomkill.h) and as memstrack counted it. The last OOMLOG_KILLS_MAX kills and OOMLOG_PEAKS_MAX peak
 * snapshots are kept (older ones are dropped), for the OomKills call; each kill is also logged, as one
 * structured journal entry (OOMLOG_MESSAGE_ID) or a line on stderr.
 *
 * Peak snapshots are rate-limited: one when the tracked total reaches a new peak at least
 * OOMLOG_PEAK_GROWTH_PERCENT above the last snapshot's, at most one per OOMLOG_PEAK_INTERVAL_USEC; a
 * peak reached within the interval is taken at the first new peak after it (within 1 %). A peak the
 * total falls back from within the interval gets no snapshot of its own. The first interval starts at the
 * first offer: no snapshot in the first OOMLOG_PEAK_INTERVAL_USEC of tracing.
 *
 * Pressure records are the evidence before a kill: taken when a unit comes within a margin of its memory
 * limit, or when the system's or a unit's memory pressure (PSI) crosses a threshold (pressure-watch.h
 * decides when), each with the same holders as a kill and the unit's Explain view; the last
 * OOMLOG_PRESSURE_MAX are kept, and each is logged under OOMLOG_PRESSURE_MESSAGE_ID.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "accounting.h"
#include "macro.h"
#include "oomkill.h"
#include "status.h"
#include "usym.h"

#define OOMLOG_MESSAGE_ID "3d1f9a6c0b8e4f27a5c2e7d4b1906f38"
#define OOMLOG_TOP_N 5
#define OOMLOG_KILLS_MAX 16
#define OOMLOG_PEAKS_MAX 16
#define OOMLOG_PEAK_INTERVAL_USEC (10 * UINT64_C(1000000))
#define OOMLOG_PEAK_GROWTH_PERCENT 10
#define OOMLOG_PRESSURE_MESSAGE_ID "5b7e2c9d4a1f4e08b3c6d2a9e7f1c054"
#define OOMLOG_PRESSURE_MAX 16

typedef enum OomPressureReason {
        OOM_PRESSURE_LIMIT,             /* a unit within the margin of memory.max or memory.high */
        OOM_PRESSURE_PSI,               /* memory pressure (PSI) past the threshold */
        _OOM_PRESSURE_REASON_MAX,
        _OOM_PRESSURE_REASON_INVALID = -EINVAL,
} OomPressureReason;

/* What made a pressure record. Strings are borrowed for the call. */
typedef struct OomPressure {
        OomPressureReason reason;
        const char *unit;               /* NULL: the whole system (PSI only) */
        const char *cgroup;             /* the unit's cgroup path */
        const char *limit;              /* LIMIT: "max" or "high" */
        uint64_t current_bytes, limit_bytes;
        unsigned margin_percent;
        const char *pressure;           /* PSI: the line of the pressure file that crossed, or the trigger */
        uint64_t timestamp_usec;        /* CLOCK_MONOTONIC */
} OomPressure;

typedef struct OomLog OomLog;

OomLog *oomlog_new(void);
OomLog *oomlog_free(OomLog *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(OomLog *, oomlog_free);

/* Whether kills are watched, and if not why (copied); OomKills and Status say so. */
int oomlog_set_watching(OomLog *l, bool watching, const char *reason);
bool oomlog_watching(const OomLog *l);
const char *oomlog_reason(const OomLog *l);

/* Kill records the watcher lost so far (oom_watch_lost()). */
void oomlog_set_lost(OomLog *l, uint64_t n);

/*
 * Takes the snapshot of kill k from a now (the caller brought it up to the kill's time; cgroups named)
 * and keeps it, dropping the oldest beyond OOMLOG_KILLS_MAX. page_size converts the kernel's KiB and
 * pages. The record (an OomKill of io.memstrack.varlink) is borrowed into *ret_record if not NULL, valid
 * until the next record. -ENOMEM.
 */
int oomlog_record_kill(OomLog *l, Accounting *a, UserSymbols *usym, const OomKill *k, long page_size,
                const json_t **ret_record);
/* Sends the kill record as a journal entry (journal) or a line on stderr; unit: ours, for
 * OBJECT_SYSTEMD_UNIT, or NULL. */
int oomlog_log_kill(const json_t *record, bool journal, const char *unit, long page_size);

/* The total a new peak must reach for the next snapshot: callers compare the core's current pages
 * with it per event and call oomlog_offer_peak() only above it. */
uint64_t oomlog_peak_threshold(const OomLog *l);
/* Takes a peak snapshot if one is due at now_usec (CLOCK_MONOTONIC) for a total of current_pages:
 * returns 1 if it took one, 0 if not due, -ENOMEM. */
int oomlog_offer_peak(OomLog *l, Accounting *a, UserSymbols *usym, uint64_t current_pages, uint64_t usec);

/*
 * Keeps a pressure record of p, with the holders now and explain (the unit's Explain reply, borrowed; NULL
 * for the system), dropping the oldest beyond OOMLOG_PRESSURE_MAX. The record (a PressureRecord of
 * io.memstrack.varlink) is borrowed into *ret_record if not NULL, valid until the next record. -ENOMEM.
 */
int oomlog_record_pressure(OomLog *l, Accounting *a, UserSymbols *usym, const OomPressure *p, json_t *explain,
                const json_t **ret_record);
/* Sends a pressure record as a journal entry (journal) or a line on stderr; unit: ours, or NULL. */
int oomlog_log_pressure(const json_t *record, bool journal, const char *unit, long page_size);
/* What watches pressure (a PressureWatch object of io.memstrack.varlink: borrowed reference taken), for
 * OomKills. */
void oomlog_set_pressure_watch(OomLog *l, json_t *watch);

/* The OomKills reply. New reference, NULL on OOM. */
json_t *oomlog_json(const OomLog *l);

/* What Status, OomKills and the document show of l (ServiceState's oom_ fields): they read it through these,
 * as api/ sits below this room. */
void oomlog_service_view(const OomLog *l, ServiceState *state);
