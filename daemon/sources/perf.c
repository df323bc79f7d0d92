/* SPDX-License-Identifier: MIT */

/*
 * The perf event source: the only module that knows the perf ABI. It turns the kernel's page
 * tracepoints into MsEvents through the generic EventSource vtable (source.h).
 *
 * Per online CPU: one tracepoint event each for kmem:mm_page_alloc (with call chains), kmem:mm_page_free
 * and, when tracefs has them, module:module_load and module:module_free. The allocation event owns the
 * CPU's only ring buffer; the others write into it (PERF_EVENT_IOC_SET_OUTPUT), so allocations and
 * frees of a CPU arrive in the order they happened, and it alone carries the COMM/FORK/EXIT side-band
 * records. No file descriptors beyond the events themselves.
 *
 * With --slab (config.slab) also kmem:kmalloc, kmem:kmem_cache_alloc (and their *_node twins before 6.1),
 * kmem:kfree and kmem:kmem_cache_free, each where the kernel has it, into the same ring: allocations with
 * call chains and the cgroup like pages, the daemon's own filtered out like its pages. Without it they are
 * not opened, so the kernel runs no slab hook for us and page tracing costs what it did.
 *
 * Any ring's wakeup (a large watermark: few wakeups) drains all rings, merged by timestamp up to a cut
 * taken when the round starts, because a page freed on one CPU may be reused on another. At most
 * drain_budget records per dispatch; the rest follows from a deferred source after other sources ran.
 * Below the watermark records wait in the rings: flush() delivers everything up to now.
 *
 * kmem:mm_page_free_batched is not attached: the kernel emits mm_page_free for every page it frees,
 * batched or not, and mm_page_free_batched in addition for the batched ones (on 6.18, munmap of 100000
 * touched pages: 100124 mm_page_free and 100010 mm_page_free_batched), so attaching it would report
 * those pages freed twice at the cost of one more record each.
 *
 * The daemon's own allocations are dropped (tgid == getpid()). Its frees are kept: a page it frees may
 * belong to another process (the last reference to a shared page, a pipe buffer).
 *
 * Steady state allocates nothing and logs nothing per record: one MsEvent and one frames array are
 * reused, and a record that wraps around the end of a ring is copied into a preallocated bounce buffer.
 * Exec side-band records read /proc/PID/cmdline (once per exec, not per page event).
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "array-util.h"
#include "live.h"
#include "log.h"
#include "macro.h"
#include "merge.h"
#include "perf-ring.h"
#include "proc-seed.h"
#include "read-file.h"
#include "source.h"
#include "time-util.h"
#include "tracefs.h"
#include "tracepoint.h"

/* Frames per allocation call chain and data pages per CPU ring: the generic defaults (source.h). */
#define PERF_DEPTH_DEFAULT SOURCE_DEPTH_DEFAULT
#define PERF_DEPTH_MAX SOURCE_DEPTH_MAX
#define PERF_BUFFER_PAGES_DEFAULT SOURCE_BUFFER_PAGES_DEFAULT
#define PERF_BUFFER_PAGES_MAX SOURCE_BUFFER_PAGES_MAX
/* Records decoded per dispatch before other event sources get their turn. */
#define PERF_DRAIN_BUDGET_DEFAULT 4096u
/* Arguments of an exec'd task, joined by spaces, at most this many bytes with the NUL. */
#define PERF_CMDLINE_MAX 4096u

/* What the source is opened with: the SourceOptions it supports (perf_source_new_from_options()) and
 * the drain budget, which keeps its default except in tests/test-perf.c, which includes this file. */
typedef struct PerfConfig {
        const char *tracefs;            /* tracefs mount point; NULL: find it, mounting it if needed */
        unsigned depth;                 /* frames per allocation call chain, 0 (none) ..PERF_DEPTH_MAX */
        bool user_stacks;               /* also record user frames (frame-pointer unwinding) */
        bool slab;                      /* also the slab object events */
        unsigned buffer_pages;          /* data pages per CPU ring, a power of two */
        size_t wakeup_bytes;            /* buffered bytes that wake the daemon; 0: a quarter of the ring */
        unsigned drain_budget;          /* records per dispatch, > 0 */
        pid_t self;                     /* whose allocations are dropped; 0: getpid() */
} PerfConfig;

/* Fields of every sample, in the kernel's order. IDENTIFIER comes first in a sample and last in the
 * sample_id trailer of side-band records, so the event is known before parsing the rest: events sharing
 * a ring have different layouts (only allocations carry a call chain). */
#define SAMPLE_TYPE_COMMON \
        (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW)
/* The sample_id trailer (sample_id_all): {pid, tid}, time, {cpu, res}, identifier. */
#define SAMPLE_ID_SIZE 32u
/* A sample before its call chain: identifier, {pid, tid}, time, {cpu, res}. */
#define SAMPLE_HEAD_SIZE 32u
/* The largest record the kernel writes: its size is a u16. */
#define RECORD_SIZE_MAX 65536u
/* Context markers the kernel may put into a chain beyond the frames we ask for. */
#define CALLCHAIN_MARKERS_MAX 16u

/* Events attached per CPU. PAGE_ALLOC comes first: it owns the ring and carries the side-band. The slab
 * events only with --slab (config.slab), each where the kernel has it. */
static const TracepointKind attached_kinds[] = {
        TRACEPOINT_PAGE_ALLOC,
        TRACEPOINT_PAGE_FREE,
        TRACEPOINT_MODULE_LOAD,
        TRACEPOINT_MODULE_FREE,
        TRACEPOINT_KMALLOC,
        TRACEPOINT_KMALLOC_NODE,
        TRACEPOINT_KMEM_CACHE_ALLOC,
        TRACEPOINT_KMEM_CACHE_ALLOC_NODE,
        TRACEPOINT_KFREE,
        TRACEPOINT_KMEM_CACHE_FREE,
};
#define N_ATTACHED ELEMENTSOF(attached_kinds)

typedef struct PerfSource PerfSource;

typedef struct PerfRing {
        PerfSource *source;
        unsigned cpu;
        int fds[N_ATTACHED];            /* owned; -EBADF where the tracepoint is absent; fds[0] owns the ring */
        uint64_t ids[N_ATTACHED];       /* kernel ids of the events (PERF_EVENT_IOC_ID), 0 if absent */
        struct perf_event_mmap_page *meta;      /* the mapping: one metadata page, then the data */
        size_t map_size;
        const uint8_t *data;
        uint64_t data_size;             /* a power of two */
        sd_event_source *io_source;     /* owned: the kernel's wakeups */

        /* The current drain round (see source_drain()). */
        uint64_t head;                  /* data_head when the round began */
        uint64_t tail;                  /* next record; published as data_tail when the round ends */
        uint64_t next_nsec;             /* timestamp of the record at tail */
        uint16_t next_size;
} PerfRing;

struct PerfSource {
        LiveSource live;                /* first: the skeleton every live source shares (live.h) */
        PerfConfig config;              /* config.tracefs points to tracefs below */
        char *tracefs;                  /* owned */
        Tracepoints *tracepoints;       /* owned */

        PerfRing *rings;                /* owned, one per online CPU */
        size_t n_rings;
        Merge merge;                    /* owned: the rings with records, by the time of their next one */
        size_t n_cpus;                  /* highest online CPU + 1: the size of lost_per_cpu */
        uint64_t *lost_per_cpu;         /* owned */


        /* Reused for every record, so the hot path allocates nothing. */
        MsEvent ev;
        uint64_t *frames;               /* owned, frames_max entries */
        size_t frames_max;
        uint8_t *bounce;                /* owned, RECORD_SIZE_MAX bytes */
        char *cmdline;                  /* owned, PERF_CMDLINE_MAX bytes */

        uint64_t records;               /* events delivered to the sink */
        uint64_t lost_records;
        uint64_t wakeups;
        uint64_t self_samples;          /* the daemon's own allocations, dropped */
        uint64_t failed_allocs;         /* mm_page_alloc without a page, slab allocations without an object */
        uint64_t bad_records;           /* malformed or unknown: skipped */
        bool cgroups;                   /* allocation samples carry the task's cgroup id (PERF_SAMPLE_CGROUP) */
        uint64_t throttles;
        EventSourceLoss loss;           /* "perfLost": lost_records, for Status lostByReason */
};

/* kernel.perf_event_paranoid as text for messages ("unknown" if unreadable); buf of at least 24 bytes. */
static const char *perf_event_paranoid(char *buf, size_t size) {
        long v;

        if (read_file_long("/proc/sys/kernel/perf_event_paranoid", &v) < 0)
                return "unknown";
        (void) snprintf(buf, size, "%ld", v);
        return buf;
}

/* Parses the kernel's CPU list format ("0-3,5,7-8") into a new array of CPU numbers. */
static int parse_cpu_list(const char *s, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ unsigned *cpus = NULL;
        size_t n = 0, allocated = 0;
        const char *p = s;

        while (*p && *p != '\n') {
                unsigned long a, b;
                char *end;

                errno = 0;
                a = strtoul(p, &end, 10);
                if (errno != 0 || end == p || a >= SOURCE_MAX_CPUS)
                        return -EINVAL;
                b = a;
                p = end;
                if (*p == '-') {
                        p++;
                        b = strtoul(p, &end, 10);
                        if (errno != 0 || end == p || b >= SOURCE_MAX_CPUS || b < a)
                                return -EINVAL;
                        p = end;
                }
                for (unsigned long c = a; c <= b; c++) {
                        if (ARRAY_GROW_ONE(cpus, allocated, n, 16) < 0)
                                return -ENOMEM;
                        cpus[n++] = (unsigned) c;
                }
                if (*p == ',')
                        p++;
                else if (*p && *p != '\n')
                        return -EINVAL;
        }
        if (n == 0)
                return -EINVAL;
        *ret = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

static void emit(PerfSource *s) {
        s->records++;
        s->live.sink.event(s->live.sink.userdata, &s->ev);
}

static void event_reset(PerfSource *s, MsEventType type, uint32_t cpu) {
        s->ev = (MsEvent) {
                .type = type,
                .cpu = cpu,
        };
}

static int ring_kind(const PerfRing *r, uint64_t id, TracepointKind *ret) {
        for (size_t i = 0; i < N_ATTACHED; i++)
                if (r->ids[i] == id && r->fds[i] >= 0) {
                        *ret = attached_kinds[i];
                        return 0;
                }
        return -ENOENT;
}

static uint32_t get_u32(const uint8_t *p) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

static uint64_t get_u64(const uint8_t *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

/* Whether samples of kind carry a call chain and the cgroup, and are dropped when they are the daemon's:
 * the allocations. */
static bool kind_is_alloc(TracepointKind kind) {
        return kind == TRACEPOINT_PAGE_ALLOC || tracepoint_kind_is_slab_alloc(kind);
}

/* Copies a call chain into s->frames without perf's context markers: kernel frames first, then user. */
static MsStack strip_callchain(PerfSource *s, const uint8_t *ips, uint64_t nr) {
        enum { CTX_NONE, CTX_KERNEL, CTX_USER, CTX_OTHER } ctx = CTX_NONE;
        uint32_t n = 0, n_kernel = 0;

        for (uint64_t i = 0; i < nr && n < s->frames_max; i++) {
                uint64_t ip = get_u64(ips + i * 8);

                if (ip >= (uint64_t) PERF_CONTEXT_MAX) {
                        ctx = ip == (uint64_t) PERF_CONTEXT_KERNEL ? CTX_KERNEL
                            : ip == (uint64_t) PERF_CONTEXT_USER   ? CTX_USER
                                                                   : CTX_OTHER;
                        continue;
                }
                /* Kernel frames only before any user frame, as the MsEvent layout needs. */
                if (ctx == CTX_KERNEL && n == n_kernel) {
                        s->frames[n++] = ip;
                        n_kernel++;
                } else if (ctx == CTX_USER)
                        s->frames[n++] = ip;
                /* Hypervisor and guest frames, or frames before any marker, are not ours to resolve. */
        }
        return (MsStack) { .frames = s->frames, .n_frames = n, .n_kernel_frames = n_kernel };
}

static void ring_handle_sample(PerfRing *r, const uint8_t *rec, size_t size) {
        PerfSource *s = r->source;
        const uint8_t *p = rec + sizeof(struct perf_event_header), *end = rec + size;
        TracepointKind kind;
        MsStack stack = {};
        uint32_t raw_size;
        int k;

        if ((size_t) (end - p) < SAMPLE_HEAD_SIZE + sizeof(uint32_t) ||
            ring_kind(r, get_u64(p), &kind) < 0) {
                s->bad_records++;
                return;
        }

        event_reset(s, _MS_EVENT_TYPE_INVALID, get_u32(p + 24));
        s->ev.pid = (int32_t) get_u32(p + 8);
        s->ev.tid = (int32_t) get_u32(p + 12);
        s->ev.timestamp_nsec = get_u64(p + 16);
        p += SAMPLE_HEAD_SIZE;

        if (kind_is_alloc(kind)) {
                uint64_t nr;

                if (s->ev.pid == s->live.self) {
                        s->self_samples++;
                        return;
                }
                if (s->config.depth > 0) {
                        if ((size_t) (end - p) < sizeof(uint64_t)) {
                                s->bad_records++;
                                return;
                        }
                        nr = get_u64(p);
                        p += sizeof(uint64_t);
                        if (nr > (uint64_t) (end - p) / 8) {
                                s->bad_records++;
                                return;
                        }
                        stack = strip_callchain(s, p, nr);
                        p += nr * 8;
                }
        }

        if ((size_t) (end - p) < sizeof(uint32_t)) {
                s->bad_records++;
                return;
        }
        raw_size = get_u32(p);
        p += sizeof(uint32_t);
        if (raw_size > (size_t) (end - p)) {
                s->bad_records++;
                return;
        }

        /* PERF_SAMPLE_CGROUP follows the raw data, which the kernel pads to keep it 8-byte aligned. */
        uint64_t cgroup_id = 0;
        if (kind_is_alloc(kind) && s->cgroups) {
                if ((size_t) (end - p) - raw_size < sizeof(uint64_t)) {
                        s->bad_records++;
                        return;
                }
                cgroup_id = get_u64(p + raw_size);
        }

        k = tracepoint_decode(s->tracepoints, p, raw_size, &s->ev);
        if (k == -ENODATA) {
                /* No page or object; kfree(NULL) is no failure, just nothing. */
                if (kind_is_alloc(kind))
                        s->failed_allocs++;
                return;
        }
        if (k < 0) {
                s->bad_records++;
                return;
        }
        s->ev.cgroup_id = cgroup_id;
        /* Set after decoding, which fills the body of the event's type. */
        if (s->ev.type == MS_EVENT_PAGE_ALLOC)
                s->ev.page.stack = stack;
        else if (s->ev.type == MS_EVENT_OBJECT_ALLOC)
                s->ev.object.stack = stack;
        emit(s);
}

/* Fills cpu and timestamp from the sample_id trailer of a side-band record; false if it is too short. */
static bool side_band_reset(PerfRing *r, MsEventType type, const uint8_t *rec, size_t size, size_t body) {
        PerfSource *s = r->source;

        if (size < sizeof(struct perf_event_header) + body + SAMPLE_ID_SIZE) {
                s->bad_records++;
                return false;
        }
        event_reset(s, type, get_u32(rec + size - 16));
        s->ev.timestamp_nsec = get_u64(rec + size - 24);
        return true;
}

static void ring_handle_record(PerfRing *r, const uint8_t *rec, size_t size) {
        const struct perf_event_header *h = (const struct perf_event_header *) rec;
        const uint8_t *body = rec + sizeof(*h);
        PerfSource *s = r->source;

        switch (h->type) {

        case PERF_RECORD_SAMPLE:
                ring_handle_sample(r, rec, size);
                return;

        case PERF_RECORD_COMM: {
                /* u32 pid, tid; char comm[] padded to 8 bytes; sample_id */
                size_t comm_size;

                if (!side_band_reset(r, MS_EVENT_TASK_COMM, rec, size, 8 + 8))
                        return;
                comm_size = size - sizeof(*h) - 8 - SAMPLE_ID_SIZE;
                if (!memchr(body + 8, '\0', comm_size)) {
                        s->bad_records++;
                        return;
                }
                s->ev.pid = (int32_t) get_u32(body);
                s->ev.tid = (int32_t) get_u32(body + 4);
                s->ev.task.name = (const char *) body + 8;
                if (h->misc & PERF_RECORD_MISC_COMM_EXEC)
                        s->ev.task.cmdline = proc_read_cmdline(PROC_ROOT_DEFAULT, s->ev.pid, s->cmdline,
                                                              PERF_CMDLINE_MAX);
                emit(s);
                return;
        }

        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                /* u32 pid, ppid, tid, ptid; u64 time; sample_id */
                if (!side_band_reset(r, h->type == PERF_RECORD_FORK ? MS_EVENT_TASK_FORK : MS_EVENT_TASK_EXIT,
                                     rec, size, 24))
                        return;
                s->ev.pid = (int32_t) get_u32(body);
                s->ev.task.parent_pid = (int32_t) get_u32(body + 4);
                s->ev.tid = (int32_t) get_u32(body + 8);
                s->ev.timestamp_nsec = get_u64(body + 16);
                emit(s);
                return;

        case PERF_RECORD_LOST:
        case PERF_RECORD_LOST_SAMPLES: {
                /* LOST: u64 id, lost; LOST_SAMPLES: u64 lost; then sample_id */
                size_t at = h->type == PERF_RECORD_LOST ? 8 : 0;

                if (!side_band_reset(r, MS_EVENT_LOST, rec, size, at + 8))
                        return;
                /* The ring is per CPU whatever the trailer says. */
                s->ev.cpu = r->cpu;
                s->ev.lost.n_lost = get_u64(body + at);
                s->lost_records = count_add(s->lost_records, s->ev.lost.n_lost);
                s->lost_per_cpu[r->cpu] = count_add(s->lost_per_cpu[r->cpu], s->ev.lost.n_lost);
                emit(s);
                return;
        }

        case PERF_RECORD_THROTTLE:
                /* Tracepoints sampled every time are not throttled; if a kernel does, say so once. */
                if (s->throttles++ == 0)
                        log_warning("The kernel throttled page event sampling on CPU %u, events are missing.",
                                    r->cpu);
                return;

        default:
                return;
        }
}

/* Copies len bytes at ring position pos, wrapping around the end of the data area. */
static void ring_copy(const PerfRing *r, uint64_t pos, void *dst, size_t len) {
        perf_ring_copy(r->data, r->data_size, pos, dst, len);
}

/*
 * Looks at the record at r->tail: sets next_size and next_nsec and returns true, or returns false when
 * the round's part of the ring is consumed. A header the kernel cannot have written makes the rest of
 * the ring unreadable: it is skipped and counted rather than looped on.
 */
static bool ring_peek(PerfRing *r) {
        struct perf_event_header h;
        uint64_t at;

        if (r->tail >= r->head)
                return false;
        ring_copy(r, r->tail, &h, sizeof(h));
        if (h.size < sizeof(h) || h.size > r->head - r->tail) {
                r->source->bad_records++;
                r->tail = r->head;
                return false;
        }
        r->next_size = h.size;

        /* The time is the third u64 of a sample and in the sample_id trailer of anything else. */
        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + SAMPLE_HEAD_SIZE)
                at = sizeof(h) + 16;
        else if (h.type != PERF_RECORD_SAMPLE && h.size >= sizeof(h) + SAMPLE_ID_SIZE)
                at = h.size - 24u;
        else {
                r->next_nsec = 0;       /* malformed: handled (and counted) at once */
                return true;
        }
        ring_copy(r, r->tail + at, &r->next_nsec, sizeof(r->next_nsec));
        return true;
}

/* Hands the record at r->tail to the decoder and steps over it. */
static void ring_consume(PerfRing *r) {
        PerfSource *s = r->source;
        uint64_t offset = r->tail & (r->data_size - 1);
        const uint8_t *rec;

        if (offset + r->next_size > r->data_size) {
                ring_copy(r, r->tail, s->bounce, r->next_size);
                rec = s->bounce;
        } else
                rec = r->data + offset;
        ring_handle_record(r, rec, r->next_size);
        r->tail += r->next_size;
}

static bool ring_merge_peek(void *stream, uint64_t *ret_nsec) {
        PerfRing *r = stream;

        if (!ring_peek(r))
                return false;
        *ret_nsec = r->next_nsec;
        return true;
}

static void ring_merge_consume(void *stream) {
        ring_consume(stream);
}

static const MergeOps ring_merge_ops = {
        .peek = ring_merge_peek,
        .consume = ring_merge_consume,
};

/*
 * Delivers up to budget records from all rings merged in timestamp order; returns true if deliverable
 * records remain.
 *
 * Each ring is in order, but a page's life crosses CPUs: freed on one, reused on another. Draining ring
 * by ring could deliver the reuse before the free and charge the page to the wrong task. So records are
 * merged by time, and only those stamped before the round's cut, taken before reading any head, are
 * delivered. That suffices: a freed page is reused only after its free record is published (the
 * tracepoint runs before the page reaches a free list), so if the reuse is stamped before the cut, the
 * free was published before the cut and is in this round. Later records wait for the next round.
 */
static bool source_drain(PerfSource *s, uint64_t budget) {
        uint64_t cut = now_nsec(CLOCK_MONOTONIC);
        bool more;

        merge_begin(&s->merge);
        for (size_t i = 0; i < s->n_rings; i++) {
                PerfRing *r = &s->rings[i];

                r->head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
                r->tail = r->meta->data_tail;
                merge_add(&s->merge, r);
        }
        more = merge_run(&s->merge, cut, budget);

        /* Everything before each tail is consumed: the kernel may overwrite it. */
        for (size_t i = 0; i < s->n_rings; i++)
                __atomic_store_n(&s->rings[i].meta->data_tail, s->rings[i].tail, __ATOMIC_RELEASE);
        return more;
}

static void source_drain_some(PerfSource *s) {
        if (source_drain(s, s->config.drain_budget))
                live_source_drain_later(&s->live);
}

static int ring_io_handler(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        PerfRing *r = userdata;

        /* Any ring's wakeup drains all of them: the merge needs every ring's records. */
        r->source->wakeups++;
        source_drain_some(r->source);
        if (revents & (EPOLLHUP | EPOLLERR)) {
                /* The events of this CPU are gone (e.g. the CPU went offline): stop polling a dead fd. */
                log_warning("Perf ring of CPU %u hung up, no more events from it.", r->cpu);
                (void) sd_event_source_set_enabled(es, SD_EVENT_OFF);
        }
        return 0;
}

static void drain_more(LiveSource *ls) {
        source_drain_some((PerfSource *) ls);
}

static void ring_done(PerfRing *r) {
        r->io_source = sd_event_source_disable_unref(r->io_source);
        if (r->meta)
                (void) munmap(r->meta, r->map_size);
        r->meta = NULL;
        for (size_t i = N_ATTACHED; i > 0; i--)
                r->fds[i - 1] = safe_close(r->fds[i - 1]);
}

static PerfSource *perf_source_from(EventSource *es) {
        return (PerfSource *) es;
}

static PerfSource *perf_source_free(PerfSource *s) {
        if (!s)
                return NULL;
        log_debug("Perf source: %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64 " wakeups, %" PRIu64
                  " own allocations dropped, %" PRIu64 " failed allocations, %" PRIu64 " bad records.",
                  s->records, s->lost_records, s->wakeups, s->self_samples, s->failed_allocs, s->bad_records);
        for (size_t i = s->n_rings; i > 0; i--)
                ring_done(&s->rings[i - 1]);
        merge_done(&s->merge);
        free(s->rings);
        live_source_done(&s->live);
        free(s->lost_per_cpu);
        free(s->cmdline);
        free(s->bounce);
        free(s->frames);
        tracepoint_free(s->tracepoints);
        free(s->tracefs);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(PerfSource *, perf_source_free);

static void perf_source_free_op(EventSource *es) {
        perf_source_free(perf_source_from(es));
}

/* LiveSourceSteps.attach: a ring per CPU, watched. */
static int attach(LiveSource *ls, sd_event *event) {
        PerfSource *s = (PerfSource *) ls;

        for (size_t i = 0; i < s->n_rings; i++) {
                PerfRing *ring = &s->rings[i];
                char description[sizeof("perf-ring-cpu") + 3 * sizeof(unsigned)];

                int r = sd_event_add_io(event, &ring->io_source, ring->fds[0], EPOLLIN, ring_io_handler, ring);
                if (r < 0)
                        return log_error_errno(r, "Failed to watch the perf ring of CPU %u: %m", ring->cpu);
                (void) snprintf(description, sizeof(description), "perf-ring-cpu%u", ring->cpu);
                (void) sd_event_source_set_description(ring->io_source, description);
        }
        return 0;
}

/* LiveSourceSteps.enable: every attached event on, CPU by CPU. */
static int enable(LiveSource *ls) {
        PerfSource *s = (PerfSource *) ls;

        for (size_t i = 0; i < s->n_rings; i++)
                for (size_t k = 0; k < N_ATTACHED; k++) {
                        if (s->rings[i].fds[k] < 0)
                                continue;
                        if (ioctl(s->rings[i].fds[k], PERF_EVENT_IOC_ENABLE, 0) < 0)
                                return log_error_errno(errno, "Failed to enable %s on CPU %u: %m",
                                                       tracepoint_kind_to_string(attached_kinds[k]),
                                                       s->rings[i].cpu);
                }
        return 0;
}

static const LiveSourceSteps perf_steps = {
        .name = "perf",
        .attach = attach,
        .enable = enable,
        .drain_more = drain_more,
};

static int perf_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        PerfSource *s = perf_source_from(es);
        uint64_t seeded = 0;

        /* Seeded after enabling: a task's baseline may include pages also reported as allocations; the
         * window is the length of the scan. */
        int r = live_source_start(&s->live, event, sink, &seeded);
        s->records += seeded;
        if (r < 0)
                return r;
        log_debug("Perf source started on %zu CPUs.", s->n_rings);
        return 0;
}

static int perf_source_flush(EventSource *es) {
        PerfSource *s = perf_source_from(es);

        assert(s);
        (void) source_drain(s, UINT64_MAX);
        return 0;
}

static void perf_source_get_stats(EventSource *es, EventSourceStats *ret) {
        PerfSource *s = perf_source_from(es);

        assert(s);
        assert(ret);
        s->loss = (EventSourceLoss) { .reason = "perfLost", .count = s->lost_records };
        *ret = (EventSourceStats) {
                .records = s->records,
                .lost_records = s->lost_records,
                .wakeups = s->wakeups,
                .n_cpus = s->n_cpus,
                .lost_per_cpu = s->lost_per_cpu,
                .losses = &s->loss,
                .n_losses = 1,
                .stack_sample_interval = s->config.depth > 0 ? 1 : 0,
                .pfns = s->tracepoints && !tracepoint_pfn_is_surrogate(s->tracepoints),
        };
}

/* perf's call chains start at the tracepoint's caller on the kernels seen; older ones began inside the
 * probe that fed the perf buffer. */
static const MsTracerFrames perf_tracer_frames = {
        .prefixes = (const char *const[]) { "__traceiter_", "perf_trace_", "trace_event_raw_event_", NULL },
};

static const EventSourceOps perf_source_ops = {
        .name = "perf",
        .tracer_frames = &perf_tracer_frames,
        .start = perf_source_start,
        .flush = perf_source_flush,
        .get_stats = perf_source_get_stats,
        .free = perf_source_free_op,
};

/* Fills in the defaults above. */
static void perf_config_init(PerfConfig *ret) {
        assert(ret);
        *ret = (PerfConfig) {
                .depth = PERF_DEPTH_DEFAULT,
                .buffer_pages = PERF_BUFFER_PAGES_DEFAULT,
                .drain_budget = PERF_DRAIN_BUDGET_DEFAULT,
        };
}

static int log_open_error(int error, TracepointKind kind, unsigned cpu, const PerfConfig *c) {
        const char *what = tracepoint_kind_to_string(kind);
        char buf[3 * sizeof(long) + 2];
        long v;

        switch (error) {
        case -EACCES:
        case -EPERM:
                return log_error_errno(error, "Not allowed to trace %s system-wide "
                                       "(kernel.perf_event_paranoid=%s): run as root or with CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8).",
                                       what, perf_event_paranoid(buf, sizeof(buf)));
        case -EOVERFLOW:
                if (read_file_long("/proc/sys/kernel/perf_event_max_stack", &v) < 0)
                        v = -1;
                return log_error_errno(error, "Call chain depth %u exceeds kernel.perf_event_max_stack=%ld.",
                                       c->depth, v);
        case -ENOENT:
        case -ENODEV:
                return log_error_errno(error, "The kernel has no perf tracepoint event %s on CPU %u: %m",
                                       what, cpu);
        default:
                return log_error_errno(error, "Failed to open perf event %s on CPU %u: %m", what, cpu);
        }
}

static int ring_open(PerfSource *s, PerfRing *ring, unsigned cpu, size_t page_size) {
        const PerfConfig *c = &s->config;
        void *map;

        ring->source = s;
        ring->cpu = cpu;

        for (size_t k = 0; k < N_ATTACHED; k++) {
                TracepointKind kind = attached_kinds[k];
                int id = tracepoint_id(s->tracepoints, kind), fd;
                struct perf_event_attr attr = {
                        .type = PERF_TYPE_TRACEPOINT,
                        .size = sizeof(attr),
                        .sample_period = 1,
                        .sample_type = SAMPLE_TYPE_COMMON,
                        .disabled = 1,
                        .watermark = 1,
                        .sample_id_all = 1,
                        .use_clockid = 1,
                        .clockid = CLOCK_MONOTONIC,
                };

                if (id < 0)
                        continue;       /* an optional tracepoint this kernel lacks */
                if (tracepoint_kind_is_slab(kind) && !c->slab)
                        continue;       /* opt-in: without --slab the kernel runs no slab hook for us */
                attr.config = (uint64_t) id;
                attr.wakeup_watermark = (uint32_t) c->wakeup_bytes;
                if (kind_is_alloc(kind)) {
                        /* Depth 0: no call chains at all, the kernel's cheapest sample. */
                        if (c->depth > 0) {
                                attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
                                attr.sample_max_stack = (uint16_t) c->depth;
                                attr.exclude_callchain_user = !c->user_stacks;
                        }
                        /* The allocating task's cgroup, for pages and objects per unit: 8 bytes copied
                         * per sample, no lookup. Frees need none: memory leaves whoever allocated it. */
                        if (s->cgroups)
                                attr.sample_type |= PERF_SAMPLE_CGROUP;
                }
                if (kind == TRACEPOINT_PAGE_ALLOC) {
                        /* Side-band on the ring owner only, so each record comes once, in order. */
                        attr.comm = 1;
                        attr.comm_exec = 1;
                        attr.task = 1;
                }

                fd = perf_event_open(&attr, -1, (int) cpu, -1, PERF_FLAG_FD_CLOEXEC);
                if (fd == -EINVAL && (attr.sample_type & PERF_SAMPLE_CGROUP) && ring == &s->rings[0]) {
                        /* FIXME: PERF_SAMPLE_CGROUP is Linux >= 5.7; drop this once older kernels are gone.
                         * Asked on the first ring only, so every ring has the same layout. */
                        log_notice("The kernel does not report cgroups in perf samples (PERF_SAMPLE_CGROUP, "
                                   "Linux 5.7), pages are not attributed to systemd units.");
                        s->cgroups = false;
                        attr.sample_type &= ~(uint64_t) PERF_SAMPLE_CGROUP;
                        fd = perf_event_open(&attr, -1, (int) cpu, -1, PERF_FLAG_FD_CLOEXEC);
                }
                if (fd < 0)
                        return log_open_error(fd, kind, cpu, c);
                ring->fds[k] = fd;

                if (ioctl(fd, PERF_EVENT_IOC_ID, &ring->ids[k]) < 0)
                        return log_error_errno(errno, "Failed to get the id of perf event %s on CPU %u: %m",
                                               tracepoint_kind_to_string(kind), cpu);

                /* Our own allocations are dropped anyway (the consumer checks the pid too). Filtered in
                 * the kernel they cost no call chain and no ring space: as the daemon's tables grow, its
                 * page faults were a quarter of its CPU time with --user-stacks, just when the stack
                 * tree fills and every record is dear. Frees stay: reclaim in our context frees other
                 * tasks' pages. */
                if (kind_is_alloc(kind)) {
                        char filter[sizeof("common_pid != ") + 3 * sizeof(pid_t)];
                        (void) snprintf(filter, sizeof(filter), "common_pid != %d", (int) s->live.self);
                        if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0)
                                log_debug_errno(errno, "Failed to filter our own allocations on CPU %u, "
                                                "dropping them when read instead: %m", cpu);
                }

                if (k == 0) {
                        ring->data_size = (uint64_t) c->buffer_pages * page_size;
                        ring->map_size = page_size + (size_t) ring->data_size;
                        map = mmap(NULL, ring->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                        if (map == MAP_FAILED) {
                                int r = negative_errno();

                                if (r == -EPERM)
                                        return log_error_errno(r, "Failed to map a %u-page perf ring on "
                                                               "CPU %u: over kernel.perf_event_mlock_kb "
                                                               "without CAP_IPC_LOCK: %m",
                                                               c->buffer_pages, cpu);
                                return log_error_errno(r, "Failed to map a %u-page perf ring on CPU %u: %m",
                                                       c->buffer_pages, cpu);
                        }
                        ring->meta = map;
                        ring->data = (const uint8_t *) map + page_size;
                } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fds[0]) < 0)
                        return log_error_errno(errno, "Failed to redirect %s into the ring of CPU %u: %m",
                                               tracepoint_kind_to_string(kind), cpu);
        }
        return 0;
}

static int config_check(const PerfConfig *c, size_t page_size) {
        if (c->depth > PERF_DEPTH_MAX)
                return log_error_errno(EINVAL, "Call chain depth %u out of range 0..%u.", c->depth,
                                       PERF_DEPTH_MAX);
        if (c->buffer_pages < 1 || c->buffer_pages > PERF_BUFFER_PAGES_MAX ||
            (c->buffer_pages & (c->buffer_pages - 1)) != 0)
                return log_error_errno(EINVAL, "Ring size of %u pages is not a power of two in 1..%u.",
                                       c->buffer_pages, PERF_BUFFER_PAGES_MAX);
        if (c->wakeup_bytes >= (size_t) c->buffer_pages * page_size || c->wakeup_bytes > UINT32_MAX)
                return log_error_errno(EINVAL, "Wakeup watermark of %zu bytes does not fit a ring of %zu "
                                       "bytes.", c->wakeup_bytes, (size_t) c->buffer_pages * page_size);
        if (c->drain_budget < 1)
                return log_error_errno(EINVAL, "Drain budget must be at least one record.");
        return 0;
}

/*
 * Opens the events on every online CPU (disabled) and maps their rings; start() enables them, seeds the
 * tasks alive at that point from /proc (MS_EVENT_TASK_NEW with comm, cmdline and resident pages as
 * baseline) and attaches the rings to the loop. The config is copied.
 *
 * Logs the reason once at error level and returns: -EINVAL for a bad config, -ENOENT when tracefs or a
 * required tracepoint is missing (named in the log), -EACCES/-EPERM without the privilege to trace (the
 * log gives kernel.perf_event_paranoid), -EOVERFLOW when depth exceeds kernel.perf_event_max_stack,
 * -ENOMEM, or the errno of another failing call. On success *ret is freed with event_source_free().
 */
static int perf_source_new(const PerfConfig *config, EventSource **ret) {
        _cleanup_(perf_source_freep) PerfSource *s = NULL;
        _cleanup_free_ unsigned *cpus = NULL;
        _cleanup_free_ char *online = NULL;
        const char *missing = NULL;
        size_t n_cpus, page_size;
        ssize_t n;
        int r;

        assert(config);
        assert(ret);

        page_size = (size_t) sysconf(_SC_PAGESIZE);
        r = config_check(config, page_size);
        if (r < 0)
                return r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        live_source_init(&s->live, &perf_source_ops, &perf_steps, config->self > 0 ? config->self : getpid());
        s->config = *config;
        s->cgroups = true;
        /* A quarter, not half: the headroom after a wakeup is what absorbs the daemon's scheduling delay. */
        if (s->config.wakeup_bytes == 0)
                s->config.wakeup_bytes = (size_t) s->config.buffer_pages * page_size / 4;

        if (config->tracefs) {
                s->tracefs = strdup(config->tracefs);
                if (!s->tracefs)
                        return log_oom();
        } else {
                r = tracefs_find(&s->tracefs);
                if (r < 0)
                        return log_error_errno(r, "Failed to find or mount tracefs (at /sys/kernel/tracing): "
                                               "%m");
                if (r > 0)
                        log_notice("Mounted tracefs at %s.", s->tracefs);
        }
        s->config.tracefs = s->tracefs;

        r = tracepoint_load(s->tracefs, TRACEPOINT_BYTE_ORDER_HOST, &s->tracepoints, &missing);
        if (r == -EACCES || r == -EPERM)
                return log_error_errno(r, "Not allowed to read the tracepoint formats (%s) in %s: run as root.",
                                       missing ? missing : "events", s->tracefs);
        if (r == -ENOENT && missing && streq(missing, "events"))
                return log_error_errno(r, "%s has no events directory: not a tracefs, or no tracepoint "
                                       "support.", s->tracefs);
        if (r == -ENOENT)
                return log_error_errno(r, "Tracepoint %s is missing in %s/events.", missing ? missing : "?",
                                       s->tracefs);
        if (r < 0)
                return log_error_errno(r, "Failed to load tracepoint %s from %s: %m",
                                       missing ? missing : "formats", s->tracefs);
        if (tracepoint_pfn_is_surrogate(s->tracepoints))
                log_info("Page tracepoints record struct page pointers: pages are keyed by pointer, not pfn.");
        for (TracepointKind k = TRACEPOINT_MODULE_LOAD; k <= TRACEPOINT_MODULE_FREE; k++)
                if (tracepoint_id(s->tracepoints, k) < 0)
                        log_debug("No %s tracepoint: module loads are not tracked.",
                                  tracepoint_kind_to_string(k));
        if (s->config.slab) {
                char missing_slab[128];

                if (*tracepoint_slab_missing(s->tracepoints, missing_slab, sizeof(missing_slab)))
                        log_notice("--slab: the kernel has no usable %s tracepoint, no slab events from it.",
                                   missing_slab);
        }

        /* "0-3,5" and so on: at most SOURCE_MAX_CPUS numbers of up to 4 digits and a separator each. */
        online = malloc(SOURCE_MAX_CPUS * 5 + 1);
        if (!online)
                return log_oom();
        n = read_file_small("/sys/devices/system/cpu/online", online, SOURCE_MAX_CPUS * 5 + 1);
        if (n < 0)
                return log_error_errno((int) n, "Failed to read /sys/devices/system/cpu/online: %m");
        r = parse_cpu_list(online, &cpus, &n_cpus);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the online CPU list \"%s\": %m", online);

        s->frames_max = s->config.depth + CALLCHAIN_MARKERS_MAX;
        s->frames = calloc(s->frames_max, sizeof(*s->frames));
        s->bounce = malloc(RECORD_SIZE_MAX);
        s->cmdline = malloc(PERF_CMDLINE_MAX);
        s->n_cpus = cpus[n_cpus - 1] + 1;
        s->lost_per_cpu = calloc(s->n_cpus, sizeof(*s->lost_per_cpu));
        s->rings = calloc(n_cpus, sizeof(*s->rings));
        if (!s->frames || !s->bounce || !s->cmdline || !s->lost_per_cpu || !s->rings ||
            merge_init(&s->merge, n_cpus, &ring_merge_ops) < 0)
                return log_oom();
        for (size_t i = 0; i < n_cpus; i++)
                for (size_t k = 0; k < N_ATTACHED; k++)
                        s->rings[i].fds[k] = -EBADF;
        s->n_rings = n_cpus;

        for (size_t i = 0; i < n_cpus; i++) {
                r = ring_open(s, &s->rings[i], cpus[i], page_size);
                if (r < 0)
                        return r;
        }

        log_debug("Perf source: %zu CPUs, %u-page rings, wakeup at %zu bytes, depth %u%s%s, budget %u.",
                  s->n_rings, s->config.buffer_pages, s->config.wakeup_bytes, s->config.depth,
                  s->config.user_stacks ? " with user frames" : "", s->config.slab ? ", slab objects" : "",
                  s->config.drain_budget);
        *ret = &TAKE_PTR(s)->live.base;
        return 0;
}

/*
 * Whether the kernel has perf events at all: a disabled dummy software event on ourselves opens
 * without privileges; only ENOSYS means there is no perf_event_open(). Any other failure is left to
 * the real open, which says what is missing (privileges, paranoia, a tracepoint). No /proc/sys file is
 * consulted: the unit's sandbox (ProtectKernelTunables=, ProcSubset=pid) hides them.
 */
static int perf_source_probe(const SourceOptions *options, const char **ret_reason) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = PERF_COUNT_SW_DUMMY,
                .disabled = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
        int fd;

        assert(ret_reason);

        fd = tracefs_lockdown_check(NULL, ret_reason);
        if (fd < 0)
                return fd;
        fd = perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd >= 0) {
                (void) close(fd);
                return 0;
        }
        if (fd == -ENOSYS) {
                *ret_reason = "the kernel has no perf events (perf_event_open() is not implemented)";
                return -EOPNOTSUPP;
        }
        return 0;
}

static int perf_source_new_from_options(const SourceOptions *options, EventSource **ret) {
        PerfConfig c;

        assert(options);

        perf_config_init(&c);
        c.tracefs = options->tracefs;
        c.depth = options->depth;
        c.user_stacks = options->user_stacks;
        c.slab = options->slab;
        c.buffer_pages = options->buffer_pages;
        c.wakeup_bytes = options->wakeup_bytes;
        c.self = options->self;
        return perf_source_new(&c, ret);
}

const SourceType perf_source_type = {
        .name = "perf",
        .description = "the kernel's page tracepoints through perf events (needs root or CAP_PERFMON)",
        .automatic = true,
        .probe = perf_source_probe,
        .new = perf_source_new_from_options,
};
