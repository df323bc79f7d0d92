/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "damon-watch.h"
#include "log.h"
#include "perf-ring.h"
#include "tracefs.h"
#include "tracepoint.h"

#define DAMON_WATCH_MAX 16

typedef struct DamonRing {
        DamonWatch *watch;
        int32_t pid;                    /* 0: an unused slot */
        int fd;
        PerfWatchRing ring;
        sd_event_source *io;
} DamonRing;

struct DamonWatch {
        sd_event *event;                /* borrowed */
        DamonRegions *regions;          /* borrowed */
        TracepointDamon *format;        /* owned */
        DamonRing rings[DAMON_WATCH_MAX];
};

static void handle_sample(void *userdata, const uint8_t *p, size_t size) {
        DamonRing *ring = userdata;
        uint32_t raw_size;
        uint64_t time;
        DamonRecord rec;

        /* PERF_SAMPLE_TIME, then PERF_SAMPLE_RAW: u32 size and the trace entry. */
        if (size < sizeof(time) + sizeof(raw_size))
                return;
        memcpy(&time, p, sizeof(time));
        memcpy(&raw_size, p + sizeof(time), sizeof(raw_size));
        if (raw_size > size - sizeof(time) - sizeof(raw_size))
                return;
        if (tracepoint_damon_decode(ring->watch->format, p + sizeof(time) + sizeof(raw_size), raw_size, &rec) < 0)
                return;
        /* The event is the kdamond's: a record naming another thread is not what it seems. */
        rec.common_pid = ring->pid;
        if (damon_regions_add(ring->watch->regions, &rec, time) < 0)
                log_debug("Out of memory for DAMON's regions, dropping a set.");
}

static void handle_lost(void *userdata, uint64_t n) {
        DamonRing *ring = userdata;
        damon_regions_lost(ring->watch->regions, ring->pid, n);
}

static void drain_ring(DamonRing *ring) {
        perf_watch_ring_drain(&ring->ring, handle_sample, handle_lost, ring);
}

static int on_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        drain_ring(userdata);
        return 0;
}

static void ring_close(DamonRing *ring) {
        sd_event_source_disable_unref(ring->io);
        perf_watch_ring_unmap(&ring->ring);
        if (ring->fd >= 0)
                close(ring->fd);
        *ring = (DamonRing) { .fd = -1 };
}

static int ring_open(DamonWatch *w, DamonRing *ring, int32_t pid) {
        size_t page_size = (size_t) sysconf(_SC_PAGESIZE);
        struct perf_event_attr attr = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof(attr),
                .config = (uint64_t) tracepoint_damon_id(w->format),
                .sample_period = 1,
                .sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
                .watermark = 1,
                .wakeup_watermark = (uint32_t) (DAMON_WATCH_RING_PAGES * page_size / 2),
                .use_clockid = 1,
                .clockid = CLOCK_MONOTONIC,
        };
        int r;

        *ring = (DamonRing) { .watch = w, .pid = pid };
        ring->fd = perf_event_open(&attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (ring->fd < 0)
                return ring->fd;
        r = perf_watch_ring_map(ring->fd, DAMON_WATCH_RING_PAGES, &ring->ring);
        if (r < 0)
                return r;
        r = sd_event_add_io(w->event, &ring->io, ring->fd, EPOLLIN, on_ring, ring);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(ring->io, "damon-watch");
        return 0;
}

int damon_watch_new(sd_event *event, const char *tracefs, DamonRegions *regions, DamonWatch **ret,
                const char **reterr_reason) {
        _cleanup_(damon_watch_freep) DamonWatch *w = NULL;
        _cleanup_free_ char *found = NULL;
        int r;

        assert(event && regions && ret);

        if (!tracefs) {
                r = tracefs_find(&found);
                if (r < 0) {
                        if (reterr_reason)
                                *reterr_reason = "tracefs is not mounted and cannot be mounted";
                        return r;
                }
                tracefs = found;
        }
        w = calloc(1, sizeof(DamonWatch));
        if (!w)
                return -ENOMEM;
        w->event = event;
        w->regions = regions;
        for (size_t i = 0; i < DAMON_WATCH_MAX; i++)
                w->rings[i].fd = -1;
        r = tracepoint_damon_load(tracefs, &w->format);
        if (r < 0) {
                if (reterr_reason)
                        *reterr_reason = r == -ENOENT ? "the kernel has no damon:damon_aggregated tracepoint (no DAMON)" :
                                         "damon:damon_aggregated cannot be read";
                return r;
        }
        *ret = TAKE_PTR(w);
        return 0;
}

DamonWatch *damon_watch_free(DamonWatch *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < DAMON_WATCH_MAX; i++)
                if (w->rings[i].pid > 0)
                        ring_close(&w->rings[i]);
        tracepoint_damon_free(w->format);
        free(w);
        return NULL;
}

static DamonRing *ring_of(DamonWatch *w, int32_t pid) {
        for (size_t i = 0; i < DAMON_WATCH_MAX; i++)
                if (w->rings[i].pid == pid)
                        return &w->rings[i];
        return NULL;
}

bool damon_watch_follows(const DamonWatch *w, int32_t pid) {
        return pid > 0 && ring_of((DamonWatch *) w, pid);
}

int damon_watch_follow(DamonWatch *w, int32_t pid) {
        if (pid <= 0)
                return -EINVAL;
        if (ring_of(w, pid))
                return 0;
        DamonRing *ring = ring_of(w, 0);
        if (!ring)
                return -ENOSPC;
        int r = ring_open(w, ring, pid);
        if (r < 0) {
                ring_close(ring);
                return log_debug_errno(r, "Failed to open damon:damon_aggregated of kdamond %d: %m", (int) pid);
        }
        log_debug("Reading damon:damon_aggregated of kdamond %d.", (int) pid);
        return 0;
}

void damon_watch_unfollow(DamonWatch *w, int32_t pid) {
        DamonRing *ring = pid > 0 ? ring_of(w, pid) : NULL;

        if (ring)
                ring_close(ring);
}

void damon_watch_drain(DamonWatch *w) {
        for (size_t i = 0; i < DAMON_WATCH_MAX; i++)
                if (w->rings[i].pid > 0)
                        drain_ring(&w->rings[i]);
}
