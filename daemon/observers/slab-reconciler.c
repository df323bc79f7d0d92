/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "slab-reconciler.h"
#include "slabinfo.h"
#include "time-util.h"

struct SlabReconciler {
        Accounting *accounting;         /* borrowed */
        const char *path;               /* borrowed */
        uint64_t next_nsec;             /* CLOCK_MONOTONIC time of the next reconciliation, 0: the next tick */
        int last_error;                 /* of the last read, so that a lasting failure is logged once */
        EventObserver observer;
};

void slab_reconciler_tick(SlabReconciler *r, uint64_t now_nsec) {
        _cleanup_(slabinfo_freep) SlabInfo *info = NULL;
        Slab *slab = accounting_slab(r->accounting);
        int k;

        if (!accounting_traces_slab(r->accounting) || now_nsec < r->next_nsec)
                return;
        r->next_nsec = now_nsec + SLAB_RECONCILE_INTERVAL_NSEC;
        k = slabinfo_read(r->path, &info);
        if (k < 0) {
                slab_reconcile_failed(slab, k, now_nsec);
                if (k != r->last_error) {
                        if (k == -EBADMSG)
                                log_notice("Cannot read %s, slab counts are not held against the kernel's: not "
                                           "slabinfo version 2.x.", r->path);
                        else
                                log_notice_errno(k, "Cannot read %s, slab counts are not held against the "
                                                 "kernel's: %m", r->path);
                }
                r->last_error = k;
                return;
        }
        if (r->last_error < 0)
                log_info("Reading %s again: slab counts are held against the kernel's.", r->path);
        r->last_error = 0;
        if (info->n_bad_lines > 0)
                log_debug("%s: %zu lines not understood, skipped (the first is line %u).", r->path,
                          info->n_bad_lines, info->first_bad_line);
        uint64_t trimmed = slab_reconcile_stats(slab)->trimmed;
        k = accounting_slab_reconcile(r->accounting, info, now_nsec);
        if (k < 0) {
                log_warning_errno(k, "Failed to reconcile slab counts with %s, ignoring: %m", r->path);
                return;
        }
        const SlabReconcileStats *st = slab_reconcile_stats(slab);
        if (st->trimmed > trimmed)
                log_debug("Slab reconciliation: %zu of %zu caches above the kernel's count, %" PRIu64
                          " objects dropped.", st->drifting, st->caches, st->trimmed - trimmed);
}

static void on_tick(void *userdata) {
        slab_reconciler_tick(userdata, now_usec(CLOCK_MONOTONIC) * 1000);
}

static void observer_free(void *userdata) {
        slab_reconciler_free(userdata);
}

SlabReconciler *slab_reconciler_new(Accounting *accounting, const char *path) {
        SlabReconciler *r = calloc(1, sizeof(SlabReconciler));

        if (!r)
                return NULL;
        r->accounting = accounting;
        r->path = path;
        r->observer = (EventObserver) {
                .name = "slab-reconciler",
                .userdata = r,
                .tick = on_tick,
                .free = observer_free,
        };
        return r;
}

SlabReconciler *slab_reconciler_free(SlabReconciler *r) {
        free(r);
        return NULL;
}

EventObserver *slab_reconciler_observer(SlabReconciler *r) {
        return &r->observer;
}
