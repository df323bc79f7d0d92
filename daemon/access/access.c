/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "damon-regions.h"
#include "damon-watch.h"
#include "key-calibration.h"
#include "kpageflags.h"
#include "log.h"
#include "time-util.h"

/* A set of regions older than this many aggregation intervals is stale: the kdamond stopped or stalled. */
#define STALE_INTERVALS 3
/* Ticks (seconds) the calibration of page keys may take. */
#define CALIBRATION_TICKS 30
#define KEY_MASK ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1)

typedef enum Reading {
        READING_NONE,
        READING_DAMON,                  /* a kdamond's regions (its own or another's) */
        READING_KPAGEFLAGS,
} Reading;

struct AccessWatch {
        sd_event *event;                /* borrowed */
        Accounting *accounting;         /* borrowed */
        AccessConfig config;
        Coldness *coldness;             /* owned */
        Reading reading;

        /* DAMON */
        DamonRegions *regions;          /* owned */
        DamonWatch *watch;              /* owned */
        KdamondInfo kdamond;            /* the one read, as it was set when reading began */
        bool own;                       /* memstrackd started it: stopped at free */
        uint64_t last_set_nsec;         /* the set of the last round */
        uint64_t settings_changes;      /* its operations or intervals changed (the regions count moves) */
        uint64_t cpu_start_usec, cpu_start_nsec;        /* the kdamond's CPU time and ours when reading began */

        /* kpageflags */
        KpageflagsSampler *sampler;     /* owned */

        /* Page keys are pfn + key_offset (modulo 2^MS_PAGE_KEY_BITS): 0 for a source of pfns, else
         * calibrated (key-calibration.h) before the first round. */
        uint64_t key_offset;
        KeyCalibration *calibration;    /* owned, while it runs */
        unsigned calibration_ticks;
        char *source_name;              /* owned: the event source, for messages */

        AccessRegion *buf;              /* owned: a round's regions */
        size_t allocated;
        ColdSourceStats stats;
        uint64_t next_round_nsec;
        char detail[256];
        EventObserver observer;
};

static const char *const mode_names[_ACCESS_MODE_MAX] = {
        [ACCESS_OFF] = "off",
        [ACCESS_DAMON_READ] = "damon-read",
        [ACCESS_DAMON] = "damon",
        [ACCESS_KPAGEFLAGS] = "kpageflags",
        [ACCESS_AUTO] = "auto",
};

const char *access_mode_to_string(AccessMode m) {
        return m >= 0 && m < _ACCESS_MODE_MAX ? mode_names[m] : NULL;
}

AccessMode access_mode_from_string(const char *s) {
        for (AccessMode m = 0; s && m < _ACCESS_MODE_MAX; m++)
                if (streq(s, mode_names[m]))
                        return m;
        return _ACCESS_MODE_INVALID;
}

static uint64_t monotonic_nsec(void) {
        return now_nsec(CLOCK_MONOTONIC);
}

static void describe_kdamond(AccessWatch *w) {
        const KdamondInfo *k = &w->kdamond;

        (void) snprintf(w->detail, sizeof(w->detail),
                        "kdamond.%u (pid %" PRIi32 ", %s): paddr, sampling every %" PRIu64 " ms, aggregating every "
                        "%" PRIu64 " ms, %" PRIu64 " to %" PRIu64 " regions",
                        k->index, k->pid, w->own ? "memstrackd's own" : "not memstrackd's: read only",
                        k->sample_usec / 1000, k->aggr_usec / 1000, k->min_regions, k->max_regions);
        w->stats.interval_usec = k->aggr_usec;
        w->stats.sample_usec = k->sample_usec;
        w->stats.kdamond_pid = k->pid;
        w->stats.own_kdamond = w->own;
}

/* The running kdamond monitoring physical memory, if any (the first). */
static int find_paddr_kdamond(const AccessConfig *c, KdamondInfo *ret) {
        _cleanup_free_ KdamondInfo *list = NULL;
        size_t n = 0;
        int r = kdamond_list(c->damon_sysfs, &list, &n);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (list[i].on && list[i].pid > 0 && list[i].paddr && list[i].aggr_usec > 0) {
                        *ret = list[i];
                        return 1;
                }
        return 0;
}

static int start_damon(AccessWatch *w, bool may_start_own, const char **ret_reason) {
        const char *reason = NULL;
        int r;

        w->regions = damon_regions_new();
        if (!w->regions)
                return -ENOMEM;
        r = damon_watch_new(w->event, w->config.tracefs, w->regions, &w->watch, &reason);
        if (r < 0) {
                *ret_reason = reason;
                return r == -ENOMEM ? r : 0;
        }
        r = find_paddr_kdamond(&w->config, &w->kdamond);
        if (r == 0 && may_start_own) {
                r = kdamond_start_own(w->config.damon_sysfs, &w->config.kdamond, &w->kdamond, &reason);
                if (r < 0) {
                        *ret_reason = reason;
                        return 0;
                }
                w->own = true;
                log_info("Started memstrackd's own kdamond (pid %" PRIi32 ") on physical memory.", w->kdamond.pid);
                r = 1;
        }
        if (r <= 0) {
                *ret_reason = r == 0 ? "no kdamond monitors physical memory (operations paddr, state on)" :
                              "the kernel has no DAMON sysfs interface (CONFIG_DAMON_SYSFS)";
                return 0;
        }
        r = damon_watch_follow(w->watch, w->kdamond.pid);
        if (r < 0) {
                *ret_reason = "damon:damon_aggregated cannot be opened on the kdamond (needs root or CAP_PERFMON)";
                return 0;
        }
        w->reading = READING_DAMON;
        describe_kdamond(w);
        w->cpu_start_nsec = monotonic_nsec();
        (void) kdamond_cpu_usec(w->kdamond.pid, &w->cpu_start_usec);
        return 0;
}

/* Calibrates the page keys of a source that does not key pages by pfn: no round before it is done. */
static int start_calibration(AccessWatch *w) {
        int r = key_calibration_start(&w->calibration);
        if (r < 0)
                return r;
        event_observer_set_types(&w->observer, 0, MS_EVENT_BIT(MS_EVENT_PAGE_ALLOC));
        log_debug("Calibrating the %s source's page keys against pfns (child %d).", w->source_name,
                  (int) key_calibration_pid(w->calibration));
        return 0;
}

static void stop_calibration(AccessWatch *w) {
        w->calibration = key_calibration_free(w->calibration);
        event_observer_set_types(&w->observer, 0, 0);
}

static void no_source(AccessWatch *w, const char *reason) {
        w->reading = READING_NONE;
        w->stats.kdamond_pid = 0;
        coldness_forget(w->coldness);
        coldness_set_source(w->coldness, NULL, NULL, reason);
        coldness_set_source_stats(w->coldness, &w->stats);
}

static void on_event(void *userdata, const MsEvent *e, bool applied) {
        AccessWatch *w = userdata;
        if (w->calibration)
                key_calibration_event(w->calibration, e);
}

/* 1 once the keys are pfns or their offset is known, 0 while not yet, -errno given up (said in Cold). */
static int calibrated(AccessWatch *w) {
        uint64_t offset;
        char reason[256];

        if (!w->calibration)
                return 1;
        int r = key_calibration_result(w->calibration, &offset);
        if (r > 0) {
                w->key_offset = offset;
                log_info("The %s source's page keys are pfns plus %#llx.", w->source_name, (unsigned long long) offset);
                stop_calibration(w);
                return 1;
        }
        if (r == 0 && ++w->calibration_ticks < CALIBRATION_TICKS)
                return 0;
        if (r == -ENOTUNIQ && ++w->calibration_ticks < CALIBRATION_TICKS) {
                /* Pages of the child's in a row matched twice: another child, other pages. */
                key_calibration_free(w->calibration);
                w->calibration = NULL;
                if (key_calibration_start(&w->calibration) >= 0)
                        return 0;
        }
        stop_calibration(w);
        (void) snprintf(reason, sizeof(reason), "the %s source's page keys could not be matched to page frame "
                        "numbers (%s)", w->source_name,
                        r == -ENODATA ? "/proc/self/pagemap gives no pfns: not root" :
                        r == -ENOTUNIQ ? "a calibration child's pages fit more than one constant" :
                        "no allocation of a calibration child seen");
        log_notice("No access rounds: %s.", reason);
        if (w->own) {
                (void) kdamond_stop_own(w->config.damon_sysfs, w->kdamond.index);
                w->own = false;
        }
        no_source(w, reason);
        return -ENODATA;
}

int access_watch_start(AccessWatch *w, const char *source, bool keys_are_pfns) {
        const char *reason = NULL, *damon_reason = NULL;
        AccessMode m = w->config.mode;
        int r;

        w->source_name = strdup(source ?: "event");
        if (!w->source_name)
                return log_oom();

        if (m == ACCESS_OFF)
                reason = "no access source: memstrackd runs with --access=off";
        if (m == ACCESS_DAMON_READ || m == ACCESS_DAMON || m == ACCESS_AUTO) {
                r = start_damon(w, m != ACCESS_DAMON_READ, &damon_reason);
                if (r < 0)
                        return log_oom();
                reason = damon_reason;
        }
        if (w->reading == READING_NONE && (m == ACCESS_KPAGEFLAGS || m == ACCESS_AUTO)) {
                r = kpageflags_sampler_new(w->config.kpageflags, w->config.kpageflags_budget, &w->sampler, &reason);
                if (r == -ENOMEM)
                        return log_oom();
                if (r >= 0) {
                        w->reading = READING_KPAGEFLAGS;
                        w->stats.interval_usec = w->config.interval_usec;
                        (void) snprintf(w->detail, sizeof(w->detail),
                                        "/proc/kpageflags: the LRU's referenced and active flags of at most %zu "
                                        "tracked blocks a round", w->config.kpageflags_budget);
                        if (damon_reason)
                                log_info("No DAMON access source (%s): sampling /proc/kpageflags.", damon_reason);
                }
        }
        static const char *const names[] = { [READING_DAMON] = "damon", [READING_KPAGEFLAGS] = "kpageflags" };
        const char *name = w->reading == READING_NONE ? NULL :
                           w->reading == READING_DAMON && !w->own ? "damon-read" : names[w->reading];
        coldness_set_source(w->coldness, name, w->reading == READING_NONE ? NULL : w->detail,
                            w->reading == READING_NONE ? reason : NULL);
        coldness_set_source_stats(w->coldness, &w->stats);
        if (w->reading == READING_NONE) {
                if (m != ACCESS_OFF)
                        log_notice("No access source for --access=%s, cold memory is not measured: %s.",
                                   access_mode_to_string(m), reason);
                return 0;
        }
        log_info("Measuring cold memory with %s: %s.", name, w->detail);
        if (!keys_are_pfns) {
                r = start_calibration(w);
                if (r < 0) {
                        log_notice_errno(r, "Cannot calibrate the %s source's page keys, no access rounds: %m",
                                         w->source_name);
                        no_source(w, "the event source's page keys are not pfns and could not be calibrated");
                }
        }
        return 0;
}

/* The kdamond read as it is now: gone, stopped or changed means its regions are no longer of it. */
static void check_kdamond(AccessWatch *w) {
        _cleanup_free_ KdamondInfo *list = NULL;
        size_t n = 0;
        const char *what = NULL;

        if (kdamond_list(w->config.damon_sysfs, &list, &n) < 0)
                n = 0;
        const KdamondInfo *now = kdamond_find(list, n, w->kdamond.pid);
        if (!now || !now->on)
                what = "stopped";
        else if (!now->paddr || now->aggr_usec != w->kdamond.aggr_usec || now->sample_usec != w->kdamond.sample_usec ||
                 now->addr_unit != w->kdamond.addr_unit)
                what = "changed its operations or intervals";
        if (!what)
                return;
        if (now && now->on)
                w->settings_changes++;
        else {
                w->stats.kdamond_stops++;
                /* Stopped by someone else: its directory is theirs to remove now, not memstrackd's. */
                w->own = false;
        }
        log_notice("kdamond %" PRIi32 " %s: its regions are dropped.", w->kdamond.pid, what);
        damon_regions_drop(w->regions, w->kdamond.pid);
        if (now && now->on && now->paddr) {
                /* Still monitoring physical memory: read on with its new intervals. */
                w->kdamond = *now;
                describe_kdamond(w);
                coldness_set_source(w->coldness, w->own ? "damon" : "damon-read", w->detail, NULL);
                return;
        }
        damon_watch_unfollow(w->watch, w->kdamond.pid);
        /* Another that monitors physical memory, if one runs: read only, whoever started it. */
        KdamondInfo other;
        if (find_paddr_kdamond(&w->config, &other) > 0 && damon_watch_follow(w->watch, other.pid) >= 0) {
                w->kdamond = other;
                w->own = false;
                describe_kdamond(w);
                coldness_set_source(w->coldness, "damon-read", w->detail, NULL);
                return;
        }
        char reason[128];
        (void) snprintf(reason, sizeof(reason), "kdamond %" PRIi32 " %s and no other monitors physical memory",
                        w->kdamond.pid, what);
        no_source(w, reason);
}

static int by_start(const void *x, const void *y) {
        const AccessRegion *a = x, *b = y;
        return a->start_pfn < b->start_pfn ? -1 : a->start_pfn > b->start_pfn;
}

/* Regions of pfns as regions of the source's page keys, sorted again; one that would wrap past the
 * keys' end is split in two. Returns how many, -ENOMEM. */
static ssize_t to_keys(AccessWatch *w, size_t n) {
        size_t wraps = 0;

        if (w->key_offset == 0)
                return (ssize_t) n;
        for (size_t i = 0; i < n; i++)
                if (((w->buf[i].start_pfn + w->key_offset) & KEY_MASK) > ((w->buf[i].end_pfn - 1 + w->key_offset) & KEY_MASK))
                        wraps++;
        if (n + wraps > w->allocated) {
                AccessRegion *p = reallocarray(w->buf, n + wraps, sizeof(AccessRegion));
                if (!p)
                        return -ENOMEM;
                w->buf = p;
                w->allocated = n + wraps;
        }
        size_t k = n;
        for (size_t i = 0; i < n; i++) {
                AccessRegion *r = &w->buf[i];
                uint64_t start = (r->start_pfn + w->key_offset) & KEY_MASK, last = (r->end_pfn - 1 + w->key_offset) & KEY_MASK;
                if (start > last) {
                        w->buf[k++] = (AccessRegion) { 0, last + 1, r->idle_usec };
                        last = KEY_MASK;
                }
                *r = (AccessRegion) { start, last + 1, r->idle_usec };
        }
        qsort(w->buf, k, sizeof(AccessRegion), by_start);
        return (ssize_t) k;
}

static int sample_damon(AccessWatch *w, uint64_t now, AccessSample *ret) {
        uint64_t time_nsec = 0;

        damon_watch_drain(w->watch);
        check_kdamond(w);
        if (w->reading != READING_DAMON)
                return -ESRCH;
        uint64_t last = damon_regions_last_nsec(w->regions, w->kdamond.pid);
        if (last != 0 && last == w->last_set_nsec)
                return -EAGAIN;         /* nothing new since the last round */
        uint64_t max_age = STALE_INTERVALS * w->kdamond.aggr_usec * NSEC_PER_USEC;
        ssize_t n = damon_regions_sample(w->regions, w->kdamond.pid, w->kdamond.addr_unit,
                                         (uint64_t) sysconf(_SC_PAGESIZE), w->kdamond.aggr_usec, now, max_age,
                                         &w->buf, &w->allocated, &time_nsec);
        if (n < 0)
                return (int) n;
        if (n == 0) {
                /* No fresh set: a round would call everything unknown; the last one's figures go. */
                if (last != 0 || now - w->cpu_start_nsec > max_age) {
                        w->stats.stale_rounds++;
                        coldness_forget(w->coldness);
                }
                return -EAGAIN;
        }
        w->last_set_nsec = last;
        n = to_keys(w, (size_t) n);
        if (n < 0)
                return (int) n;
        *ret = (AccessSample) { w->buf, (size_t) n, time_nsec };
        return 0;
}

void access_watch_round(AccessWatch *w, uint64_t now) {
        AccessSample sample = {};
        int r;

        switch (w->reading) {
        case READING_DAMON:
                r = sample_damon(w, now, &sample);
                break;
        case READING_KPAGEFLAGS: {
                ssize_t n = kpageflags_sample(w->sampler, w->accounting, now, w->key_offset, &w->buf, &w->allocated,
                                              &w->stats);
                r = n < 0 ? (int) n : 0;
                sample = (AccessSample) { w->buf, n > 0 ? (size_t) n : 0, now };
                break;
        }
        default:
                return;
        }
        if (w->regions) {
                damon_regions_stats(w->regions, &w->stats);
                w->stats.target_changes += w->settings_changes;
        }
        if (w->reading == READING_DAMON) {
                uint64_t cpu;
                if (kdamond_cpu_usec(w->kdamond.pid, &cpu) >= 0 && cpu >= w->cpu_start_usec) {
                        w->stats.kdamond_cpu_usec = cpu - w->cpu_start_usec;
                        w->stats.kdamond_seconds = (now - w->cpu_start_nsec) / NSEC_PER_SEC;
                }
        }
        coldness_set_source_stats(w->coldness, &w->stats);
        if (r == -ENOMEM)
                log_oom();
        if (r < 0) {
                if (r != -EAGAIN && r != -ESRCH && r != -ENOMEM)
                        log_debug_errno(r, "No access round: %m");
                return;
        }
        r = coldness_round(w->coldness, w->accounting, &sample, now);
        if (r < 0)
                log_debug_errno(r, "Access round failed, keeping the last: %m");
}

static void on_tick(void *userdata) {
        AccessWatch *w = userdata;
        uint64_t now = monotonic_nsec();

        if (w->reading == READING_NONE || now < w->next_round_nsec || calibrated(w) <= 0)
                return;
        uint64_t interval = MAX(w->config.interval_usec, w->stats.interval_usec) * NSEC_PER_USEC;
        /* DAMON: a round every interval, and whenever a set arrived since (checked each tick) once the
         * interval passed; rounds of nothing new cost a drain and a compare. */
        access_watch_round(w, now);
        w->next_round_nsec = now + (w->reading == READING_DAMON ? MIN(interval, NSEC_PER_SEC) : interval);
}

static void observer_free(void *userdata) {
        access_watch_free(userdata);
}

int access_watch_new(sd_event *event, const AccessConfig *config, Accounting *accounting, AccessWatch **ret) {
        _cleanup_(access_watch_freep) AccessWatch *w = calloc(1, sizeof(AccessWatch));

        if (!w)
                return -ENOMEM;
        w->event = event;
        w->accounting = accounting;
        w->config = *config;
        w->coldness = coldness_new(config->warm_usec, config->cold_usec);
        if (!w->coldness)
                return -EINVAL;
        w->observer = (EventObserver) {
                .name = "access",
                .userdata = w,
                .event = on_event,
                .tick = on_tick,
                .free = observer_free,
        };
        *ret = TAKE_PTR(w);
        return 0;
}

AccessWatch *access_watch_free(AccessWatch *w) {
        if (!w)
                return NULL;
        key_calibration_free(w->calibration);
        damon_watch_free(w->watch);
        if (w->own) {
                int r = kdamond_stop_own(w->config.damon_sysfs, w->kdamond.index);
                if (r < 0)
                        log_warning_errno(r, "Failed to stop memstrackd's kdamond (pid %" PRIi32 "), ignoring: %m",
                                          w->kdamond.pid);
                else
                        log_info("Stopped memstrackd's own kdamond.");
        }
        damon_regions_free(w->regions);
        kpageflags_sampler_free(w->sampler);
        coldness_free(w->coldness);
        free(w->source_name);
        free(w->buf);
        free(w);
        return NULL;
}

const Coldness *access_watch_coldness(const AccessWatch *w) {
        return w ? w->coldness : NULL;
}

EventObserver *access_watch_observer(AccessWatch *w) {
        return &w->observer;
}
