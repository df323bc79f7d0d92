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
        void *map;                      /* the metadata page and the data pages */
        size_t map_size, data_size;
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

/* Copies len bytes at offset of the ring's data area, which may wrap. */
static void ring_copy(const OomRing *r, uint64_t offset, void *dst, size_t len) {
        perf_ring_copy((const uint8_t *) r->map + (r->map_size - r->data_size), r->data_size, offset, dst, len);
}

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

static void handle_sample(OomWatch *w, const uint8_t *p, size_t size) {
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

static int on_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        OomRing *ring = userdata;
        struct perf_event_mmap_page *meta = ring->map;
        uint8_t buf[4096];

        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        while (tail + sizeof(struct perf_event_header) <= head) {
                struct perf_event_header h;

                ring_copy(ring, tail, &h, sizeof(h));
                if (h.size < sizeof(h) || tail + h.size > head)
                        break;
                size_t body = MIN((size_t) h.size - sizeof(h), sizeof(buf));
                ring_copy(ring, tail + sizeof(h), buf, body);
                if (h.type == PERF_RECORD_SAMPLE)
                        handle_sample(ring->watch, buf, body);
                else if (h.type == PERF_RECORD_LOST && body >= 2 * sizeof(uint64_t)) {
                        uint64_t n;
                        memcpy(&n, buf + sizeof(uint64_t), sizeof(n));
                        ring->watch->lost += n;
                }
                tail += h.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
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
        size_t page_size = (size_t) sysconf(_SC_PAGESIZE);
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
        ring->data_size = OOM_RING_DATA_PAGES * page_size;
        ring->map_size = ring->data_size + page_size;
        ring->map = mmap(NULL, ring->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, ring->fd, 0);
        if (ring->map == MAP_FAILED) {
                ring->map = NULL;
                return -errno;
        }
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
                if (w->rings[i].map)
                        munmap(w->rings[i].map, w->rings[i].map_size);
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
