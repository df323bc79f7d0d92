/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "log.h"
#include "oom-moments.h"
#include "oom-watch.h"
#include "oom.h"
#include "oomlog.h"

struct Oom {
        OomConfig config;
        OomLog *log;                    /* owned: the last kills, peak snapshots and pressure records */
        OomMoments *moments;            /* owned: its observer is registered with the Manager */
        OomWatch *watch;                /* owned: oom:mark_victim; NULL when not watched */
};

Oom *oom_new(const OomConfig *config) {
        _cleanup_(oom_freep) Oom *o = calloc(1, sizeof(Oom));

        if (!o)
                return NULL;
        o->config = *config;
        o->log = oomlog_new();
        if (!o->log)
                return NULL;
        o->moments = oom_moments_new(config, o->log);
        if (!o->moments)
                return NULL;
        return TAKE_PTR(o);
}

Oom *oom_free(Oom *o) {
        if (!o)
                return NULL;
        oom_watch_free(o->watch);
        oom_moments_free(o->moments);
        oomlog_free(o->log);
        free(o);
        return NULL;
}

EventObserver *oom_observer(Oom *o) {
        return oom_moments_observer(o->moments);
}

/* The OOM watcher's handler, at the top of the loop (never inside delivery): the records up to the kill
 * first, then its snapshot. */
static void on_kill(void *userdata, const OomKill *kill) {
        Oom *o = userdata;

        oom_moments_kill_heard(o->moments, kill);
        o->config.flush_source(o->config.userdata);
        oom_moments_kill_delivered(o->moments);
        oomlog_set_lost(o->log, oom_watch_lost(o->watch));
}

int oom_start(Oom *o, bool watch, const char *reason, const char *tracefs) {
        if (watch) {
                int r = oom_watch_new(o->config.event, tracefs, on_kill, o, &o->watch, &reason);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        log_notice("Not watching OOM kills: %s.", reason ?: "oom:mark_victim could not be opened");
                watch = r >= 0;
        }
        return oomlog_set_watching(o->log, watch, watch ? NULL : reason) < 0 ? log_oom() : 0;
}

void oom_tick(Oom *o) {
        oom_moments_tick(o->moments);
}

void oom_service_view(const Oom *o, ServiceState *state) {
        oomlog_service_view(o->log, state);
}
