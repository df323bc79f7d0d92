/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "oom-watch.h"
#include "perf-ring.h"
#include "proc-seed.h"
#include "tracefs.h"
#include "tracepoint.h"

#define OOM_RING_DATA_PAGES 1   /* a power of two, as perf requires */

typedef struct OomRing {
        OomWatch *watch;
        int fd;
        PerfWatchRing ring;
        sd_event_source *io;
} OomRing;

struct OomWatch {
        TracepointOom *format;          /* owned */
        OomRing *rings;                 /* owned, n_rings */
        size_t n_rings;
        OomWatchHandler handler;
        void *userdata;
        uint64_t lost;
        bool translate_pids;            /* memstrackd is in a PID namespace of its own */
};

/*
 * The record names the victim by the kernel's pid, which is memstrackd's only in the initial PID namespace;
 * perf gives the sample's task (the one that ran the OOM killer) as memstrackd's namespace sees it. In
 * another namespace (a container) the victim's number there is known when it is that task, as when a
 * memory cgroup's limit stops its own allocation (the record's common_pid is the victim's pid); else 0.
 */
static int32_t victim_pid(const OomWatch *w, const OomKill *kill, uint32_t sample_pid) {
        if (!w->translate_pids)
                return kill->pid;
        return kill->current_pid == kill->pid ? (int32_t) sample_pid : 0;
}

static void handle_sample(void *userdata, const uint8_t *p, size_t size) {
        OomWatch *w = ((OomRing *) userdata)->watch;
        uint32_t pid_tid[2], raw_size;
        uint64_t time;
        OomKill kill;
        int r;

        /* PERF_SAMPLE_TID (u32 pid, u32 tid), PERF_SAMPLE_TIME, then PERF_SAMPLE_RAW: u32 size and the
         * trace entry. */
        if (size < sizeof(pid_tid) + sizeof(time) + sizeof(raw_size))
                return;
        memcpy(pid_tid, p, sizeof(pid_tid));
        p += sizeof(pid_tid);
        size -= sizeof(pid_tid);
        memcpy(&time, p, sizeof(time));
        memcpy(&raw_size, p + sizeof(time), sizeof(raw_size));
        if (raw_size > size - sizeof(time) - sizeof(raw_size))
                return;
        r = tracepoint_oom_decode(w->format, p + sizeof(time) + sizeof(raw_size), raw_size, &kill);
        if (r < 0) {
                log_debug_errno(r, "Ignoring a malformed oom:mark_victim record: %m");
                return;
        }
        kill.timestamp_nsec = time;
        kill.pid = victim_pid(w, &kill, pid_tid[0]);
        w->handler(w->userdata, &kill);
}

static void handle_lost(void *userdata, uint64_t n) {
        ((OomRing *) userdata)->watch->lost += n;
}

static int on_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        OomRing *ring = userdata;

        perf_watch_ring_drain(&ring->ring, handle_sample, handle_lost, ring);
        return 0;
}

static const char *reason_of(int r) {
        switch (r) {
        case -ENOENT:
                return "the kernel has no oom:mark_victim tracepoint";
        case -EACCES:
        case -EPERM:
                return "no permission to open oom:mark_victim (needs root or CAP_PERFMON)";
        case -ENOSYS:
                return "the kernel has no perf events";
        case -ENOMEM:
                return "out of memory";
        default:
                return "oom:mark_victim could not be opened";
        }
}

static int open_ring(OomWatch *w, sd_event *event, int cpu, OomRing *ring) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof(attr),
                .config = (uint64_t) tracepoint_oom_id(w->format),
                .sample_period = 1,
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
                .wakeup_events = 1,
                .use_clockid = 1,
                .clockid = CLOCK_MONOTONIC,
        };
        int r;

        ring->watch = w;
        ring->fd = perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (ring->fd < 0)
                return ring->fd;
        r = perf_watch_ring_map(ring->fd, OOM_RING_DATA_PAGES, &ring->ring);
        if (r < 0)
                return r;
        r = sd_event_add_io(event, &ring->io, ring->fd, EPOLLIN, on_ring, ring);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(ring->io, "oom-watch");
        /* Before the event sources' rings: the snapshot is of the moment of the kill. */
        return sd_event_source_set_priority(ring->io, SD_EVENT_PRIORITY_IMPORTANT);
}

int oom_watch_new(sd_event *event, const char *tracefs, OomWatchHandler handler, void *userdata, OomWatch **ret,
                const char **reterr_reason) {
        _cleanup_(oom_watch_freep) OomWatch *w = NULL;
        _cleanup_free_ char *found = NULL;
        long n_cpus = sysconf(_SC_NPROCESSORS_CONF);
        int r;

        assert(event);
        assert(handler);
        assert(ret);

        if (!tracefs) {
                r = tracefs_find(&found);
                if (r < 0) {
                        if (reterr_reason)
                                *reterr_reason = "tracefs is not mounted and cannot be mounted";
                        return log_debug_errno(r, "No tracefs for oom:mark_victim: %m");
                }
                tracefs = found;
        }
        w = calloc(1, sizeof(OomWatch));
        if (!w)
                return -ENOMEM;
        w->handler = handler;
        w->userdata = userdata;
        bool initial = true;
        r = proc_pid_namespace(NULL, NULL, &initial);
        if (r < 0)
                log_debug_errno(r, "Cannot tell memstrackd's PID namespace, taking the initial one: %m");
        w->translate_pids = !initial;
        r = tracepoint_oom_load(tracefs, &w->format);
        if (r < 0) {
                if (reterr_reason)
                        *reterr_reason = r == -EBADMSG ? "the format of oom:mark_victim has no pid" : reason_of(r);
                return r;
        }
        w->rings = calloc((size_t) MAX(n_cpus, 1L), sizeof(OomRing));
        if (!w->rings)
                return -ENOMEM;
        for (long cpu = 0; cpu < MAX(n_cpus, 1L); cpu++) {
                OomRing *ring = &w->rings[w->n_rings++];

                r = open_ring(w, event, (int) cpu, ring);
                /* An offline CPU has no event to open. */
                if (r == -ENODEV || (r == -EINVAL && cpu > 0)) {
                        w->n_rings--;
                        if (ring->fd >= 0)
                                close(ring->fd);
                        *ring = (OomRing) {};
                        continue;
                }
                if (r < 0) {
                        if (reterr_reason)
                                *reterr_reason = reason_of(r);
                        return log_debug_errno(r, "Failed to open oom:mark_victim on CPU %ld: %m", cpu);
                }
        }
        if (w->n_rings == 0) {
                if (reterr_reason)
                        *reterr_reason = reason_of(-ENODEV);
                return -ENODEV;
        }
        log_debug("Watching oom:mark_victim on %zu CPUs.", w->n_rings);
        *ret = TAKE_PTR(w);
        return 0;
}

OomWatch *oom_watch_free(OomWatch *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_rings; i++) {
                sd_event_source_disable_unref(w->rings[i].io);
                perf_watch_ring_unmap(&w->rings[i].ring);
                if (w->rings[i].fd > 0)
                        close(w->rings[i].fd);
        }
        free(w->rings);
        tracepoint_oom_free(w->format);
        free(w);
        return NULL;
}

uint64_t oom_watch_lost(const OomWatch *w) {
        return w ? w->lost : 0;
}
