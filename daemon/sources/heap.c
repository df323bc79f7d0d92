/* SPDX-License-Identifier: MIT */

/*
 * The heap source: user-space heaps of processes that preload libmemstrack-heap.so (heap/channel.c,
 * memstrackctl record). It listens on the socket --source-input names; a process connects once, at its
 * start, and hands over the sealed memfd of its region (heap-abi.h). The peer's credentials say which
 * process it is, never the message. From then on the source polls each region: the sampled records become
 * MS_EVENT_HEAP_ALLOC/FREE, the exact counters MS_EVENT_HEAP_STATE; a pidfd says when the process is gone
 * (what it wrote is still read then, even after SIGKILL), a new connection of the same pid that it ran
 * another program.
 *
 * Nothing in a region is trusted: its layout is copied once and checked against the region's size (sealed
 * against shrinking, so reading it cannot fault), every index and count read from it is bounded again, and
 * a record that makes no sense is counted and skipped. A process can spoil only its own records.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "array-util.h"
#include "heap-abi.h"
#include "heap-progress.h"
#include "log.h"
#include "macro.h"
#include "proc-seed.h"
#include "source.h"
#include "time-util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define HEAP_POLL_USEC (UINT64_C(10) * 1000)
#define HEAP_PENDING_MAX 64u            /* connections that have not said hello yet */
#define HEAP_CHANNELS_MAX 4096u         /* heaps read at once */
#define HEAP_CHANNELS_PER_UID 64u       /* of them, of one user (beside a kernel source, every user's come) */
#define HEAP_DRAIN_BUDGET (1u << 16)    /* records per channel per poll: the loop stays responsive */
#define HEAP_BUSY_USEC 1000             /* the next poll after a busy one: a gap for the clients' sources */

typedef struct HeapSource HeapSource;

typedef struct HeapPending {
        HeapSource *source;
        int fd;
        sd_event_source *io;
} HeapPending;

typedef struct HeapChannel {
        HeapSource *source;
        int32_t pid;
        uid_t uid;
        int pidfd;
        sd_event_source *exit_watch;
        void *region;
        size_t region_bytes;
        HeapAbiHeader *header;          /* in the region: every read of it is untrusted */
        /* The layout, copied and checked once. */
        HeapAbiRecord *ring;
        uint64_t ring_records;
        HeapAbiStackSlot *slots;
        uint64_t n_slots;
        uint64_t *frames;
        uint64_t n_frames;
        uint64_t sample_interval;

        uint64_t tail;                  /* our read position; the region's copy is only for the producers */
        HeapProgress progress;
        HeapAbiObject *objects;
        uint64_t n_objects_max;
        HeapAbiThread *threads;
        uint64_t n_thread_slots;
        uint64_t objects_generation;    /* as last sent */
        uint64_t bad_records, dead_records;
        bool exited;                    /* its pidfd said so: the rest is being read */
} HeapChannel;

struct HeapSource {
        EventSource source;
        char *socket_path;              /* what it listens on, for messages; bound here unless passed */
        bool passed;                    /* the socket was passed (socket activation): not ours to remove */
        bool beside;                    /* SourceOptions.heap_beside */
        int listen_fd;
        sd_event *event;
        sd_event_source *listen_io, *poll_timer;
        MsEventSink sink;
        HeapPending *pending[HEAP_PENDING_MAX];
        HeapChannel **channels;
        size_t n_channels, n_allocated;
        uint64_t records, wakeups, refused, bad_records, dead_records, ended_lost;
        uint64_t poll_nsec;             /* CLOCK_MONOTONIC when the current poll began */
        EventSourceLoss losses[5];
};

static void emit(HeapSource *s, const MsEvent *e) {
        s->sink.event(s->sink.userdata, e);
}

/* Stamped with the time of the poll that read it: one clock read per poll, not per record. */
static MsEvent heap_event(HeapChannel *c, MsEventType type) {
        return (MsEvent) { .type = type, .pid = c->pid, .tid = c->pid, .timestamp_nsec = c->source->poll_nsec };
}

static uint64_t load(const uint64_t *p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* ---- The objects the process has loaded --------------------------------------------------------------- */

static uint64_t path_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return (h & UINT64_C(0x7fffffffffff)) ?: 1;
}

/*
 * The process's objects as /proc/PID/maps text (what the symbolizer reads), or NULL when they did not
 * change since the last call. They are read under the region's sequence lock: a rewrite while we copy
 * makes us try at the next poll. Inode numbers stand for the paths (libdwfl groups segments by them).
 */
static int read_objects(HeapChannel *c, char **ret) {
        HeapAbiHeader *h = c->header;
        uint64_t gen = load(&h->objects_generation);
        _cleanup_free_ char *text = NULL;
        size_t size = 0;

        *ret = NULL;
        if (gen % 2 != 0 || gen == c->objects_generation)
                return 0;
        uint64_t n = MIN(__atomic_load_n(&h->n_objects, __ATOMIC_RELAXED), c->n_objects_max);
        _cleanup_fclose_ FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (uint64_t i = 0; i < n; i++) {
                HeapAbiObject o;
                memcpy(&o, &c->objects[i], sizeof(o));
                o.path[sizeof(o.path) - 1] = '\0';
                if (o.path[0] != '/' || o.end <= o.start || strpbrk(o.path, "\n"))
                        continue;
                fprintf(f, "%" PRIx64 "-%" PRIx64 " %c%c%cp %08" PRIx64 " 00:01 %" PRIu64 " %s\n", o.start, o.end,
                        o.flags & 4 ? 'r' : '-', o.flags & 2 ? 'w' : '-', o.flags & 1 ? 'x' : '-', o.offset,
                        path_hash(o.path), o.path);
        }
        if (fflush(f) != 0)
                return -ENOMEM;
        fclose(TAKE_PTR(f));
        if (load(&h->objects_generation) != gen)
                return 0;       /* rewritten meanwhile: next time */
        c->objects_generation = gen;
        *ret = TAKE_PTR(text);
        return 0;
}

/* Sends the objects when they changed (a library was loaded). */
static void check_objects(HeapChannel *c) {
        _cleanup_free_ char *text = NULL;

        if (read_objects(c, &text) < 0 || !text)
                return;
        MsEvent e = heap_event(c, MS_EVENT_HEAP_MAPS);
        e.heap.maps = text;
        emit(c->source, &e);
}

/* ---- Reading a region --------------------------------------------------------------------------------- */

/* The frames of stack id, copied out of the region into f; the count. */
static size_t read_stack(HeapChannel *c, uint32_t id, uint64_t f[static HEAP_FRAMES_MAX]) {
        if (id == HEAP_STACK_NONE)
                return 0;
        if (id >= HEAP_STACK_FIRST && id - HEAP_STACK_FIRST < c->n_slots) {
                HeapAbiStackSlot *slot = &c->slots[id - HEAP_STACK_FIRST];
                if (load(&slot->hash) != 0) {
                        uint64_t offset = __atomic_load_n(&slot->offset, __ATOMIC_RELAXED);
                        uint64_t n = __atomic_load_n(&slot->n_frames, __ATOMIC_RELAXED);
                        if (n <= HEAP_FRAMES_MAX && offset <= c->n_frames && n <= c->n_frames - offset) {
                                memcpy(f, c->frames + offset, n * sizeof(uint64_t));
                                if (n > 0)
                                        return n;
                        }
                }
        }
        f[0] = MS_FRAME_HEAP_STACK_FULL;
        return 1;
}

static void apply_record(HeapChannel *c, const HeapAbiRecord *r) {
        MsEvent e = heap_event(c, r->type == HEAP_RECORD_ALLOC ? MS_EVENT_HEAP_ALLOC : MS_EVENT_HEAP_FREE);
        uint64_t f[HEAP_FRAMES_MAX];

        if ((r->type != HEAP_RECORD_ALLOC && r->type != HEAP_RECORD_FREE) || r->ptr == 0) {
                c->bad_records++;
                return;
        }
        e.tid = r->tid > 0 && r->tid <= INT32_MAX ? (int32_t) r->tid : c->pid;
        e.heap.ptr = r->ptr;
        e.heap.bytes = r->bytes;
        e.heap.peak = heap_progress_record(&c->progress, r->type == HEAP_RECORD_ALLOC, r->live_after, r->peak);
        e.heap.time_nsec = r->time_nsec;
        e.heap.thread_allocs = r->thread_allocs;
        if (r->type == HEAP_RECORD_ALLOC) {
                size_t n = read_stack(c, r->stack, f);
                e.heap.stack = (MsStack) { .frames = f, .n_frames = (uint32_t) n };
                /* A published slot never changes: its id names these frames for good. */
                if (r->stack >= HEAP_STACK_FIRST && !(n == 1 && f[0] == MS_FRAME_HEAP_STACK_FULL))
                        e.heap.stack_id = r->stack;
        }
        emit(c->source, &e);
}

static void read_counters(HeapChannel *c, MsHeapCounters *ret) {
        HeapAbiHeader *h = c->header;
        /* Threads far below the peak keep their changes to themselves a while (heap/live.c). The counter is
         * read first: bytes moved into it leave the slots and nested_pending before they arrive, so a read
         * in between misses them for a moment, never counts them twice. */
        uint64_t live = (uint64_t) __atomic_load_n(&h->live_bytes, __ATOMIC_ACQUIRE) +
                        (uint64_t) __atomic_load_n(&h->nested_pending, __ATOMIC_RELAXED);

        uint64_t allocs = 0, frees = 0, alloc_bytes = 0;
        uint64_t used = MIN(__atomic_load_n(&h->threads_used, __ATOMIC_RELAXED), c->n_thread_slots);
        for (uint64_t i = 0; i < used; i++) {
                const HeapAbiThread *t = &c->threads[i];
                allocs += __atomic_load_n(&t->allocs, __ATOMIC_RELAXED) +
                          __atomic_load_n(&t->nested_allocs, __ATOMIC_RELAXED);
                frees += __atomic_load_n(&t->frees, __ATOMIC_RELAXED) +
                         __atomic_load_n(&t->nested_frees, __ATOMIC_RELAXED);
                alloc_bytes += __atomic_load_n(&t->alloc_bytes, __ATOMIC_RELAXED) +
                               __atomic_load_n(&t->nested_alloc_bytes, __ATOMIC_RELAXED);
                live += (uint64_t) __atomic_load_n(&t->live_delta, __ATOMIC_RELAXED);      /* untrusted: wraps */
        }
        /* Read last: an add lands before the peak it raises, and a signal handler's bytes wait for the next
         * call to reach the peak; the peak is never below the live bytes it is shown with. */
        uint64_t peak = __atomic_load_n(&h->peak_bytes, __ATOMIC_ACQUIRE);
        live = (int64_t) live > 0 ? live : 0;
        *ret = (MsHeapCounters) {
                .live_bytes = live,
                .peak_bytes = MAX(peak, live),
                .allocs = allocs,
                .frees = frees,
                .alloc_bytes = alloc_bytes,
                .unknown_frees = __atomic_load_n(&h->unknown_frees, __ATOMIC_RELAXED),
                .invalid_frees = __atomic_load_n(&h->invalid_frees, __ATOMIC_RELAXED),
                .lost_records = __atomic_load_n(&h->lost_ring_full, __ATOMIC_RELAXED) +
                                __atomic_load_n(&h->lost_nested, __ATOMIC_RELAXED) +
                                __atomic_load_n(&h->lost_table, __ATOMIC_RELAXED) + c->bad_records +
                                c->dead_records,
                .stacks_full = __atomic_load_n(&h->stacks_full, __ATOMIC_RELAXED),
                .nested_calls = __atomic_load_n(&h->nested_calls, __ATOMIC_RELAXED),
        };
}

/* Reads what the process published, at most HEAP_DRAIN_BUDGET records with budget. final: it is gone,
 * so records it reserved and never finished are skipped (counted). Returns the records read. */
static uint64_t drain(HeapChannel *c, bool final, bool budget) {
        HeapSource *s = c->source;
        uint64_t head = load(&c->header->ring_head), n = 0;

        s->poll_nsec = now_nsec(CLOCK_MONOTONIC);
        /* Objects first: the records may name frames in a library loaded since. */
        check_objects(c);
        for (;; c->tail++) {
                HeapAbiRecord *slot = &c->ring[c->tail & (c->ring_records - 1)];
                if (n >= HEAP_DRAIN_BUDGET && budget)
                        break;
                if (load(&slot->commit) != c->tail + 1) {
                        /* Reserved but never written: the writer died in between. */
                        if (final && head > c->tail && head - c->tail <= c->ring_records) {
                                c->dead_records++;
                                n++;
                                continue;
                        }
                        break;
                }
                HeapAbiRecord r;
                memcpy(&r, slot, sizeof(r));
                apply_record(c, &r);
                n++;
        }
        __atomic_store_n(&c->header->ring_tail, c->tail, __ATOMIC_RELEASE);
        __atomic_fetch_add(&c->header->consumer_polls, 1, __ATOMIC_RELAXED);
        s->records += n;

        MsHeapCounters now;
        read_counters(c, &now);
        MsHeapPeak peak;
        if (heap_progress_counters(&c->progress, &now, &peak)) {
                MsEvent e = heap_event(c, MS_EVENT_HEAP_STATE);
                e.heap.counters = &now;
                e.heap.peak = peak;
                emit(s, &e);
        }
        return n;
}

/* ---- Channels ----------------------------------------------------------------------------------------- */

static HeapChannel *channel_free(HeapChannel *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->exit_watch);
        safe_close(c->pidfd);
        if (c->region)
                (void) munmap(c->region, c->region_bytes);
        free(c);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(HeapChannel *, channel_free);

/* Reads the rest, says the heap ended and forgets the channel. */
static void channel_end(HeapChannel *c, MsHeapEnd why) {
        HeapSource *s = c->source;

        (void) drain(c, why != MS_HEAP_END_CLOSED, false);
        MsEvent e = heap_event(c, MS_EVENT_HEAP_END);
        e.heap.end = why;
        emit(s, &e);
        if (why == MS_HEAP_END_EXIT && !s->beside) {
                MsEvent x = heap_event(c, MS_EVENT_TASK_EXIT);
                emit(s, &x);
        }
        s->dead_records += c->dead_records;
        s->bad_records += c->bad_records;
        for (size_t i = 0; i < s->n_channels; i++)
                if (s->channels[i] == c) {
                        s->channels[i] = s->channels[--s->n_channels];
                        break;
                }
        channel_free(c);
}

/* The process is gone: what it wrote is read in the polls, a budget at a time (a big ring takes seconds,
 * and clients are answered meanwhile), and then its heap ends. */
static int on_process_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        HeapChannel *c = userdata;
        HeapSource *s = c->source;

        log_debug("Process %" PRIi32 " ended: the rest of its heap is read.", c->pid);
        c->exited = true;
        (void) sd_event_source_set_enabled(es, SD_EVENT_OFF);
        uint64_t now;
        if (sd_event_now(s->event, CLOCK_MONOTONIC, &now) >= 0)
                (void) sd_event_source_set_time(s->poll_timer, now);
        return 0;
}

/* Maps the memfd and checks its layout. */
static int channel_map(HeapChannel *c, int memfd) {
        struct stat st;
        int seals;

        seals = fcntl(memfd, F_GET_SEALS);
        if (seals < 0 || !(seals & F_SEAL_SHRINK))
                return -EPERM;  /* it could shrink under us: reading it would fault */
        if (fstat(memfd, &st) < 0)
                return negative_errno();
        if (st.st_size < (off_t) sizeof(HeapAbiHeader) || (uint64_t) st.st_size > HEAP_REGION_MAX)
                return -EMSGSIZE;
        c->region_bytes = (size_t) st.st_size;
        c->region = mmap(NULL, c->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
        if (c->region == MAP_FAILED) {
                c->region = NULL;
                return negative_errno();
        }

        HeapAbiHeader h;
        memcpy(&h, c->region, sizeof(h));
        uint64_t size = c->region_bytes;
#define FITS(offset, count, item) \
        ((offset) % 8 == 0 && (offset) <= size && (count) <= (size - (offset)) / (item))
        if (h.magic != HEAP_ABI_MAGIC || h.version != HEAP_ABI_VERSION || h.header_bytes != sizeof(HeapAbiHeader) ||
            h.ring_records == 0 || (h.ring_records & (h.ring_records - 1)) != 0 ||
            h.ring_offset < sizeof(HeapAbiHeader) || h.ring_offset % 64 != 0 ||
            !FITS(h.ring_offset, h.ring_records, sizeof(HeapAbiRecord)) ||
            !FITS(h.stack_slots_offset, h.n_stack_slots, sizeof(HeapAbiStackSlot)) ||
            !FITS(h.frames_offset, h.n_frames, sizeof(uint64_t)) ||
            !FITS(h.objects_offset, h.n_objects_max, sizeof(HeapAbiObject)) ||
            !FITS(h.threads_offset, h.n_thread_slots, sizeof(HeapAbiThread)) || h.n_thread_slots == 0 ||
            h.sample_interval == 0 ||
            h.sample_interval > HEAP_SAMPLE_INTERVAL_MAX)
                return -EBADMSG;
#undef FITS
        c->header = c->region;
        c->ring = (HeapAbiRecord *) ((char *) c->region + h.ring_offset);
        c->ring_records = h.ring_records;
        c->slots = (HeapAbiStackSlot *) ((char *) c->region + h.stack_slots_offset);
        c->n_slots = h.n_stack_slots;
        c->frames = (uint64_t *) ((char *) c->region + h.frames_offset);
        c->n_frames = h.n_frames;
        c->objects = (HeapAbiObject *) ((char *) c->region + h.objects_offset);
        c->n_objects_max = h.n_objects_max;
        c->threads = (HeapAbiThread *) ((char *) c->region + h.threads_offset);
        c->n_thread_slots = h.n_thread_slots;
        c->sample_interval = h.sample_interval;
        c->tail = load(&c->header->ring_tail);
        return 0;
}

/* A process handed over its region: after checks, a channel, and START. */
static int channel_open(HeapSource *s, int conn, int memfd) {
        _cleanup_(channel_freep) HeapChannel *c = NULL;
        _cleanup_free_ char *maps = NULL;
        char cmdline_buf[PROC_CMDLINE_MAX];
        struct ucred cred;
        socklen_t len = sizeof(cred);
        char comm[16];
        int r;

        if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return negative_errno();
        /* A private daemon takes only its owner's processes (or root's); beside a kernel source every
         * user's, each handing over its own heap (the peer's credentials name it), a bounded number each. */
        if (!s->beside && cred.uid != geteuid() && cred.uid != 0)
                return -EPERM;
        if (s->n_channels >= HEAP_CHANNELS_MAX)
                return -ENOSPC;
        size_t of_uid = 0;
        for (size_t i = 0; i < s->n_channels; i++)
                of_uid += s->channels[i]->uid == cred.uid;
        if (of_uid >= HEAP_CHANNELS_PER_UID)
                return -EUSERS;

        c = calloc(1, sizeof(HeapChannel));
        if (!c)
                return -ENOMEM;
        c->source = s;
        c->pid = cred.pid;
        c->uid = cred.uid;
        c->pidfd = -EBADF;
        len = sizeof(c->pidfd);
        if (getsockopt(conn, SOL_SOCKET, SO_PEERPIDFD, &c->pidfd, &len) < 0)
                c->pidfd = (int) syscall(SYS_pidfd_open, cred.pid, 0);
        if (c->pidfd < 0)
                return negative_errno();
        r = channel_map(c, memfd);
        if (r < 0)
                return r;
        r = sd_event_add_io(s->event, &c->exit_watch, c->pidfd, EPOLLIN, on_process_exit, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->exit_watch, "heap-exit");

        if (ARRAY_GROW_ONE(s->channels, s->n_allocated, s->n_channels, 8) < 0)
                return -ENOMEM;

        /* The same process again: it exec'd; its old heap is over. */
        for (size_t i = 0; i < s->n_channels; i++)
                if (s->channels[i]->pid == c->pid) {
                        channel_end(s->channels[i], MS_HEAP_END_EXEC);
                        break;
                }

        s->poll_nsec = now_nsec(CLOCK_MONOTONIC);
        proc_read_comm(PROC_ROOT_DEFAULT, c->pid, comm);
        const char *cmdline = proc_read_cmdline(PROC_ROOT_DEFAULT, c->pid, cmdline_buf, sizeof(cmdline_buf));
        /* Taken: the process waits for this answer, the rest reads only the region. */
        (void) send(conn, "y", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) read_objects(c, &maps);
        if (!s->beside) {
                MsEvent task = heap_event(c, MS_EVENT_TASK_NEW);
                task.task.name = comm;
                task.task.cmdline = cmdline;
                emit(s, &task);
        }
        MsEvent e = heap_event(c, MS_EVENT_HEAP_START);
        e.heap.sample_interval = c->sample_interval;
        e.heap.maps = maps;
        e.heap.comm = comm;
        e.heap.cmdline = cmdline;
        emit(s, &e);
        log_debug("Process %" PRIi32 " (%s) records its heap, a stack per %" PRIu64 " bytes.", c->pid, comm,
                  c->sample_interval);
        s->channels[s->n_channels++] = TAKE_PTR(c);
        return 0;
}

static HeapPending *pending_free(HeapPending *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < HEAP_PENDING_MAX; i++)
                if (p->source->pending[i] == p)
                        p->source->pending[i] = NULL;
        sd_event_source_disable_unref(p->io);
        safe_close(p->fd);
        free(p);
        return NULL;
}

/* The hello: magic and version, and the memfd. Answered 'y' (by channel_open(), as soon as it is sure) or
 * 'n'; the connection is then closed. */
static int on_hello(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        HeapPending *p = userdata;
        HeapSource *s = p->source;
        char control[CMSG_SPACE(sizeof(int) * 4)];
        uint64_t hello[2] = {};
        struct iovec iov = { .iov_base = hello, .iov_len = sizeof(hello) };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                              .msg_controllen = sizeof(control) };
        int memfd = -EBADF, r = -EBADMSG;

        ssize_t k = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int fds[4];
                        memcpy(fds, CMSG_DATA(c), MIN(n, ELEMENTSOF(fds)) * sizeof(int));
                        for (size_t i = 0; i < MIN(n, ELEMENTSOF(fds)); i++) {
                                if (memfd < 0)
                                        memfd = fds[i];
                                else
                                        safe_close(fds[i]);
                        }
                }
        if (k == (ssize_t) sizeof(hello) && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
            hello[0] == HEAP_ABI_MAGIC && hello[1] == HEAP_ABI_VERSION && memfd >= 0)
                r = channel_open(s, fd, memfd);
        if (r < 0) {
                s->refused++;
                log_warning_errno(r, "Refused a heap to record: %m");
        }
        if (r < 0)
                (void) send(fd, "n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        safe_close(memfd);
        pending_free(p);
        return 0;
}

static int on_connect(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        HeapSource *s = userdata;

        for (unsigned n = 0; n < 16; n++) {
                int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (conn < 0)
                        return 0;
                size_t slot = 0;
                while (slot < HEAP_PENDING_MAX && s->pending[slot])
                        slot++;
                if (slot == HEAP_PENDING_MAX) {
                        /* A flood of silent connections: the oldest goes. */
                        slot = 0;
                        pending_free(s->pending[0]);
                }
                HeapPending *p = calloc(1, sizeof(HeapPending));
                if (!p) {
                        safe_close(conn);
                        return 0;
                }
                *p = (HeapPending) { .source = s, .fd = conn };
                if (sd_event_add_io(s->event, &p->io, conn, EPOLLIN, on_hello, p) < 0) {
                        safe_close(conn);
                        free(p);
                        return 0;
                }
                s->pending[slot] = p;
        }
        return 0;
}

static int on_poll(sd_event_source *es, uint64_t usec, void *userdata) {
        HeapSource *s = userdata;
        bool busy = false;

        s->wakeups++;
        /* Backwards: a heap whose process is gone and whose records are all read ends, and leaves. */
        for (size_t i = s->n_channels; i > 0; i--) {
                HeapChannel *c = s->channels[i - 1];
                uint64_t n = drain(c, c->exited, true);
                if (c->exited && n < HEAP_DRAIN_BUDGET)
                        channel_end(c, MS_HEAP_END_EXIT);
                else
                        busy |= n >= MIN(c->ring_records / 4, (uint64_t) HEAP_DRAIN_BUDGET);
        }
        /* A ring a quarter full in one poll: read again soon rather than let its writers wait, yet not at
         * once: the gap lets the loop answer clients, whose sources rank below this one. */
        (void) sd_event_source_set_time(es, usec + (busy ? HEAP_BUSY_USEC : HEAP_POLL_USEC));
        return sd_event_source_set_enabled(es, SD_EVENT_ON);
}

/* ---- The source --------------------------------------------------------------------------------------- */

static int heap_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        HeapSource *s = (HeapSource *) es;
        int r;

        s->event = event;
        s->sink = *sink;
        r = sd_event_add_io(event, &s->listen_io, s->listen_fd, EPOLLIN, on_connect, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the heap socket: %m");
        (void) sd_event_source_set_description(s->listen_io, "heap-listen");
        r = sd_event_add_time_relative(event, &s->poll_timer, CLOCK_MONOTONIC, HEAP_POLL_USEC, 1000,
                                       on_poll, s);
        if (r < 0)
                return log_error_errno(r, "Failed to add the heap poll timer: %m");
        (void) sd_event_source_set_description(s->poll_timer, "heap-poll");
        log_info("Recording the heaps of processes that connect to %s.", s->socket_path);
        return 0;
}

static int heap_source_flush(EventSource *es) {
        HeapSource *s = (HeapSource *) es;

        for (size_t i = 0; i < s->n_channels; i++)
                (void) drain(s->channels[i], false, false);
        return 0;
}

static int heap_source_heap_stop(EventSource *es, int32_t pid) {
        HeapSource *s = (HeapSource *) es;

        for (size_t i = 0; i < s->n_channels; i++)
                if (s->channels[i]->pid == pid) {
                        /* The library stops recording at its next sampled record, its counts with it. */
                        __atomic_fetch_or(&s->channels[i]->header->flags, HEAP_ABI_FLAG_CLOSED, __ATOMIC_RELEASE);
                        channel_end(s->channels[i], MS_HEAP_END_CLOSED);
                        return 0;
                }
        return -ESRCH;
}

static void heap_source_get_stats(EventSource *es, EventSourceStats *ret) {
        HeapSource *s = (HeapSource *) es;
        uint64_t ring_full = 0, nested = 0, table = 0, bad = s->bad_records, dead = s->dead_records;

        for (size_t i = 0; i < s->n_channels; i++) {
                HeapAbiHeader *h = s->channels[i]->header;
                ring_full += __atomic_load_n(&h->lost_ring_full, __ATOMIC_RELAXED);
                nested += __atomic_load_n(&h->lost_nested, __ATOMIC_RELAXED);
                table += __atomic_load_n(&h->lost_table, __ATOMIC_RELAXED);
                bad += s->channels[i]->bad_records;
                dead += s->channels[i]->dead_records;
        }
        s->losses[0] = (EventSourceLoss) { .reason = "ringFull", .count = ring_full };
        s->losses[1] = (EventSourceLoss) { .reason = "nestedCall", .count = nested };
        s->losses[2] = (EventSourceLoss) { .reason = "heapTable", .count = table };
        s->losses[3] = (EventSourceLoss) { .reason = "badRecord", .count = bad };
        s->losses[4] = (EventSourceLoss) { .reason = "unfinishedRecord", .count = dead };
        *ret = (EventSourceStats) {
                .records = s->records,
                .lost_records = ring_full + nested + table + bad + dead,
                .wakeups = s->wakeups,
                .losses = s->losses,
                .n_losses = ELEMENTSOF(s->losses),
                .stack_sample_interval = 1,
        };
}

static HeapSource *heap_source_free(HeapSource *s) {
        if (!s)
                return NULL;
        /* No events any more: the core may be gone already. */
        for (size_t i = 0; i < s->n_channels; i++)
                channel_free(s->channels[i]);
        for (size_t i = 0; i < HEAP_PENDING_MAX; i++)
                pending_free(s->pending[i]);
        free(s->channels);
        sd_event_source_disable_unref(s->listen_io);
        sd_event_source_disable_unref(s->poll_timer);
        safe_close(s->listen_fd);
        if (s->socket_path && !s->passed)
                (void) unlink(s->socket_path);
        free(s->socket_path);
        free(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(HeapSource *, heap_source_free);

static void heap_source_free_op(EventSource *es) {
        heap_source_free((HeapSource *) es);
}

/* Heaps have user frames only: no kernel symbol table to read at the start (an empty one). */
static const char *heap_source_symbols(EventSource *es) {
        return "";
}

static const EventSourceOps heap_source_ops = {
        .name = "heap",
        .start = heap_source_start,
        .flush = heap_source_flush,
        .get_stats = heap_source_get_stats,
        .free = heap_source_free_op,
        .symbols = heap_source_symbols,
        .heap_stop = heap_source_heap_stop,
};

/* The socket passed under the name "heap" (LISTEN_FDNAMES: memstrackctl record, or a socket unit), if
 * any: -ENOENT if none. The environment stays for the varlink server, which takes its own. */
static int passed_socket(void) {
        char **names = NULL;
        int n = sd_listen_fds_with_names(false, &names), fd = -ENOENT;

        for (int i = 0; i < n; i++) {
                if (fd < 0 && names && names[i] && streq(names[i], "heap") &&
                    sd_is_socket_unix(SD_LISTEN_FDS_START + i, SOCK_SEQPACKET, 1, NULL, 0) > 0)
                        fd = SD_LISTEN_FDS_START + i;
                if (names)
                        free(names[i]);
        }
        free(names);
        return fd;
}

static int heap_source_new(const SourceOptions *options, EventSource **ret) {
        _cleanup_(heap_source_freep) HeapSource *s = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        assert(options);
        assert(ret);

        s = calloc(1, sizeof(HeapSource));
        if (!s)
                return log_oom();
        s->source.ops = &heap_source_ops;
        s->beside = options->heap_beside;
        s->listen_fd = passed_socket();
        if (s->listen_fd >= 0) {
                int flags = fcntl(s->listen_fd, F_GETFL);
                if (flags < 0 || fcntl(s->listen_fd, F_SETFL, flags | O_NONBLOCK) < 0)
                        return log_error_errno(errno, "Failed to set up the passed heap socket: %m");
                s->socket_path = strdup("the passed socket");
                if (!s->socket_path)
                        return log_oom();
                s->passed = true;
                *ret = &TAKE_PTR(s)->source;
                return 0;
        }
        if (!options->input)
                return log_error_errno(EINVAL, "The heap source listens on the socket --source-input=PATH names, "
                                       "or on one passed under the name \"heap\".");
        if (strlen(options->input) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "The heap socket path %s is too long.", options->input);
        s->socket_path = strdup(options->input);
        if (!s->socket_path)
                return log_oom();
        memcpy(sa.sun_path, options->input, strlen(options->input));

        s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->listen_fd < 0)
                return log_error_errno(errno, "Failed to create the heap socket: %m");
        /* A private daemon's: only this user (and root) may connect, the peer's uid is checked again at the
         * hello. Beside a kernel source: every user, and a stale socket of an earlier run goes. */
        if (s->beside) {
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *) &sa, sizeof(sa)) < 0 && errno == ECONNREFUSED)
                        (void) unlink(options->input);
        }
        mode_t mask = umask(s->beside ? 0 : 0077);
        int r = bind(s->listen_fd, (struct sockaddr *) &sa, sizeof(sa));
        (void) umask(mask);
        if (r < 0) {
                r = -errno;
                /* Not ours: not to be removed when we go. */
                free(s->socket_path);
                s->socket_path = NULL;
                return log_error_errno(r, "Failed to bind the heap socket %s: %m", options->input);
        }
        if (listen(s->listen_fd, 64) < 0)
                return log_error_errno(errno, "Failed to listen on the heap socket: %m");
        *ret = &TAKE_PTR(s)->source;
        return 0;
}

const SourceType heap_source_type = {
        .name = "heap",
        .description = "user-space heaps of processes preloading libmemstrack-heap.so, on the socket "
                       "--source-input names (memstrackctl record)",
        .automatic = false,
        .user_space_only = true,
        .new = heap_source_new,
};
