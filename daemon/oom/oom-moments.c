/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "log.h"
#include "oom-moments.h"
#include "time-util.h"

struct OomMoments {
        OomConfig config;
        OomLog *log;                    /* borrowed: where the snapshots go */
        bool pending;                   /* a kill heard of whose snapshot waits for the records up to it */
        OomKill pending_kill;
        uint64_t peak_threshold_pages;  /* oomlog_peak_threshold(), cached for the per-event check */
        PressureWatch *pressure;        /* owned: the pressure records, checked at each tick; NULL: none */
        EventObserver observer;
};

/* Told before the core applies an event only while a kill is pending: then every event, since the first
 * one after the kill's time takes the snapshot. */
static void set_pending(OomMoments *m, bool pending) {
        m->pending = pending;
        event_observer_set_types(&m->observer, pending ? ~UINT32_C(0) : 0, m->observer.after_types);
}

/* The snapshot of the pending kill, from the core as it is now. */
static void snapshot(OomMoments *m) {
        const OomConfig *c = &m->config;
        const json_t *record = NULL;
        int r;

        set_pending(m, false);
        /* The victim's unit by name. */
        if (units_pending(accounting_units(c->accounting)) > 0)
                c->name_units(c->userdata);
        r = oomlog_record_kill(m->log, c->accounting, c->usym, &m->pending_kill, c->page_size, &record);
        if (r < 0)
                return (void) log_warning_errno(r, "Failed to take the snapshot of the OOM kill of pid %d: %m",
                                                (int) m->pending_kill.pid);
        r = oomlog_log_kill(record, c->journal, c->unit, c->page_size);
        if (r < 0)
                log_warning_errno(r, "Failed to log the OOM kill of pid %d: %m", (int) m->pending_kill.pid);
}

/* A new global peak high enough above the last snapshot's: maybe a snapshot (rate-limited). */
static void offer_peak(OomMoments *m, uint64_t current) {
        const OomConfig *c = &m->config;

        int r = oomlog_offer_peak(m->log, c->accounting, c->usym, current, now_usec(CLOCK_MONOTONIC));
        if (r < 0)
                log_debug_errno(r, "Failed to take a peak snapshot: %m");
        m->peak_threshold_pages = oomlog_peak_threshold(m->log);
}

static void on_event(void *userdata, const MsEvent *e, bool applied) {
        OomMoments *m = userdata;

        if (!applied) {
                if (m->pending && e->timestamp_nsec > m->pending_kill.timestamp_nsec)
                        snapshot(m);
                return;
        }
        uint64_t current = accounting_current_pages(m->config.accounting);
        if (_unlikely_(current >= m->peak_threshold_pages))
                offer_peak(m, current);
}

void oom_moments_kill_heard(OomMoments *m, const OomKill *kill) {
        if (m->pending)
                snapshot(m);    /* two kills at once: the first one's moment is now */
        m->pending_kill = *kill;
        set_pending(m, true);
}

void oom_moments_kill_delivered(OomMoments *m) {
        if (m->pending)
                snapshot(m);
}

void oom_moments_tick(OomMoments *m) {
        if (m->pressure)
                pressure_watch_check(m->pressure);
}

OomMoments *oom_moments_new(const OomConfig *config, OomLog *log) {
        OomMoments *m = calloc(1, sizeof(OomMoments));

        if (!m)
                return NULL;
        m->config = *config;
        m->log = log;
        m->peak_threshold_pages = oomlog_peak_threshold(log);
        if (config->event && pressure_watch_new(&(PressureWatchConfig) {
                        .event = config->event,
                        .log = log,
                        .accounting = config->accounting,
                        .usym = config->usym,
                        .memcg = config->memcg,
                        .page_size = config->page_size,
                        .journal = config->journal,
                        .unit = config->unit,
                        .margin_percent = config->pressure.margin_percent,
                        .trigger = config->pressure.trigger,
                        .interval_usec = config->pressure.interval_usec,
                        .flush_source = config->flush_source,
                        .name_units = config->name_units,
                        .userdata = config->userdata,
                }, &m->pressure) < 0) {
                free(m);
                return NULL;
        }
        m->observer = (EventObserver) {
                .name = "oom-moments",
                .after_types = MS_EVENT_BIT(MS_EVENT_PAGE_ALLOC) | MS_EVENT_BIT(MS_EVENT_SAMPLE),
                .userdata = m,
                .event = on_event,
        };
        return m;
}

OomMoments *oom_moments_free(OomMoments *m) {
        if (m)
                pressure_watch_free(m->pressure);
        free(m);
        return NULL;
}

EventObserver *oom_moments_observer(OomMoments *m) {
        return &m->observer;
}
