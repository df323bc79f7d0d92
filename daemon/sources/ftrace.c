/* SPDX-License-Identifier: MIT */

/*
 * The ftrace event source: the page and task tracepoints recorded into tracefs instances of its own and
 * read from their per-CPU trace_pipe_raw, parsed with libtraceevent's kbuffer. For kernels where perf is
 * unavailable or its call chains are broken; not picked by "auto" (see ftrace_source_type).
 *
 * Its instances, instances/memstrackd-PID and (with stacks) memstrackd-PID-stacks, are the only things it
 * changes in tracefs: the top-level instance's settings (tracing_on, current_tracer, trace_clock,
 * options, enabled events, buffer size) are never written. In each instance: trace_clock "mono", so times
 * compare with CLOCK_MONOTONIC like every other source's; overwrite off, so a full buffer drops new
 * records (counted from per_cpu/cpuN/stats) rather than silently eating old ones; buffer_size_kb and
 * buffer_percent from the ring size and wakeup watermark. The events: kmem:mm_page_free,
 * sched:sched_process_fork/exec/exit, task:task_newtask and task:task_rename where the kernel has them,
 * and module:module_load/free where it has modules, in memstrackd-PID; kmem:mm_page_alloc, filtered to
 * drop the daemon's own, in memstrackd-PID-stacks, and with --slab kmem:kfree and kmem:kmem_cache_free
 * beside the frees, kmem:kmalloc and kmem:kmem_cache_alloc (their *_node twins before 6.1) beside the
 * allocations, filtered alike, each where the kernel has it, whose "stacktrace" option is on (the option stacks
 * every event of an instance: apart, frees cost no stack walk). Without stacks everything goes into
 * memstrackd-PID. kmem:mm_page_free_batched is not enabled, for the reason perf.c gives: every batched
 * free is also an mm_page_free. The instances are removed when the source is freed; those left by a
 * daemon that died (SIGKILL, a crash) are removed by the next start.
 *
 * Stacks: the "stacktrace" option makes the kernel write a kernel_stack record after every event of the
 * instance, on the same CPU. An event and its stack are separated only by the records of an interrupt
 * that came in between, which are themselves followed by their stacks: so each stack belongs to the most
 * recent event of its CPU still waiting for one. Allocations wait (PENDING_MAX at most per CPU) and are
 * delivered with their stack; the daemon's own and failed allocations leave a marker that their stack
 * takes. A kernel without the option runs without stacks and says so once (Status stackSampleInterval 0).
 *
 * Tasks: trace records carry the running thread's tid (common_pid), not its process. The source keeps a
 * tid -> tgid table, learnt from task_newtask (CLONE_THREAD says whether a child is a thread) and from
 * /proc/TID/status for threads that were there before (once per thread), and emits MsEvents by process
 * as perf does. Pids are those of the initial PID namespace, which is what tracefs records.
 *
 * Per-CPU streams are merged by time (merge.c) up to a cut taken before reading, as perf does.
 */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>
#include <traceevent/kbuffer.h>

#include "live.h"
#include "log.h"
#include "macro.h"
#include "merge.h"
#include "proc-seed.h"
#include "read-file.h"
#include "source.h"
#include "time-util.h"
#include "tracefs.h"
#include "tracepoint.h"

/* Records decoded per dispatch before other event sources get their turn. */
#define FTRACE_DRAIN_BUDGET 4096u
/* Events of one CPU waiting for their stacks: one per context that can interrupt another (task,
 * softirq, irq, nmi) and some slack. Beyond it the oldest are delivered without a stack. */
#define PENDING_MAX 8u
/* The instance's name: this prefix and the daemon's pid. */
#define INSTANCE_PREFIX "memstrackd-"
#define INSTANCE_STACKS_SUFFIX "-stacks"
/* pid_max's ceiling (PID_MAX_LIMIT on 64-bit): the tid -> tgid table is this long at most, and only its
 * touched pages are resident. */
#define TID_MAX_LIMIT (4u * 1024u * 1024u)
#define CLONE_THREAD_FLAG UINT64_C(0x00010000)
#define TASK_COMM_MAX 16u

/* The events enabled in the instance; the optional ones where the kernel has them. */
static const TracepointKind enabled_kinds[] = {
        TRACEPOINT_PAGE_ALLOC,
        TRACEPOINT_PAGE_FREE,
        TRACEPOINT_SCHED_FORK,
        TRACEPOINT_SCHED_EXEC,
        TRACEPOINT_SCHED_EXIT,
        TRACEPOINT_TASK_NEWTASK,
        TRACEPOINT_TASK_RENAME,
        TRACEPOINT_MODULE_LOAD,
        TRACEPOINT_MODULE_FREE,
        /* With --slab only (s->slab). */
        TRACEPOINT_KMALLOC,
        TRACEPOINT_KMALLOC_NODE,
        TRACEPOINT_KMEM_CACHE_ALLOC,
        TRACEPOINT_KMEM_CACHE_ALLOC_NODE,
        TRACEPOINT_KFREE,
        TRACEPOINT_KMEM_CACHE_FREE,
};

/* The allocations: stacked (in the stacks instance), filtered to drop the daemon's own. */
static bool kind_is_alloc(TracepointKind k) {
        return k == TRACEPOINT_PAGE_ALLOC || tracepoint_kind_is_slab_alloc(k);
}

static bool kind_is_required(TracepointKind k) {
        return k == TRACEPOINT_PAGE_ALLOC || k == TRACEPOINT_PAGE_FREE || k == TRACEPOINT_SCHED_FORK ||
               k == TRACEPOINT_SCHED_EXEC || k == TRACEPOINT_SCHED_EXIT;
}

typedef struct FtraceSource FtraceSource;

/* An event waiting for its kernel_stack record: an allocation to deliver with it, or a marker. */
typedef struct Pending {
        bool alloc;
        MsEvent ev;
        /* An object's cache name, copied: the record it points into may be read over before the stack
         * comes. Longer names (none in the kernel's caches today) are cut. */
        char cache[64];
} Pending;

/* A tracefs instance of ours: its directory and whether its events come with stacks. */
typedef struct Instance {
        char *path;                     /* owned, NULL until made */
        bool stacks;
} Instance;

enum {
        INSTANCE_EVENTS,                /* memstrackd-PID: frees, tasks, modules; allocations without stacks */
        INSTANCE_STACKS,                /* memstrackd-PID-stacks: allocations, each followed by its stack */
        _INSTANCE_MAX,
};

/* One CPU's buffer of one instance. */
typedef struct FtraceCpu {
        FtraceSource *source;
        Instance *instance;             /* borrowed */
        unsigned cpu;
        int fd;                         /* owned: per_cpu/cpuN/trace_pipe_raw, non-blocking */
        char *stats_path;               /* owned: per_cpu/cpuN/stats */
        sd_event_source *io_source;     /* owned */
        struct kbuffer *kbuf;           /* owned */
        uint8_t *page;                  /* owned, page_size bytes: the sub-buffer in hand */
        void *next;                     /* the record at hand in page, NULL when none */
        unsigned long long next_nsec;
        bool drained;                   /* read() found nothing more this round */
        uint64_t lost;                  /* records the kernel counted lost on this CPU so far */
        Pending pending[PENDING_MAX];
        size_t n_pending;
} FtraceCpu;

struct FtraceSource {
        LiveSource live;                /* first: the skeleton every live source shares (live.h) */
        char *tracefs;                  /* owned */
        Instance instances[_INSTANCE_MAX];
        Tracepoints *tracepoints;       /* owned */
        unsigned depth;
        bool slab;                      /* also the slab object events (--slab) */
        bool stacks;                    /* the instance records a kernel stack after each event */
        size_t page_size;
        unsigned buffer_percent;

        FtraceCpu *cpus;                /* owned: each instance's CPUs, the events instance's first */
        size_t n_cpus_open;
        size_t n_cpus;                  /* highest CPU + 1: the size of lost_per_cpu */
        uint64_t *lost_per_cpu;         /* owned */
        Merge merge;                    /* owned */

        int32_t *tgids;                 /* owned, n_tgids entries: tid -> tgid, 0 unknown */
        size_t n_tgids;


        MsEvent ev;
        uint64_t *frames;               /* owned, depth entries */
        char *cmdline;                  /* owned, PROC_CMDLINE_MAX bytes */

        uint64_t records;
        uint64_t lost_records;
        uint64_t wakeups;
        uint64_t self_samples;
        uint64_t failed_allocs;
        uint64_t bad_records;
        uint64_t stack_failed;          /* allocations delivered without their stack */
        EventSourceLoss losses[2];      /* ringFull, stackFailed */
};

static void emit(FtraceSource *s, const MsEvent *ev) {
        s->records++;
        s->live.sink.event(s->live.sink.userdata, ev);
}

/* The process of thread tid: from the table, else from /proc (once), else tid itself. */
static int32_t tgid_of(FtraceSource *s, int32_t tid) {
        char path[sizeof("/proc//status") + 3 * sizeof(int32_t)], buf[1024];
        int32_t tgid = tid;
        const char *p;
        ssize_t n;

        if (tid <= 0)
                return tid;     /* the idle task */
        if ((size_t) tid < s->n_tgids && s->tgids[tid] != 0)
                return s->tgids[tid];

        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32 "/status", tid);
        n = read_file_small(path, buf, sizeof(buf));
        if (n > 0) {
                p = strstr(buf, "\nTgid:");
                if (p) {
                        long v = strtol(p + strlen("\nTgid:"), NULL, 10);

                        if (v > 0 && v <= INT32_MAX)
                                tgid = (int32_t) v;
                }
        }
        if ((size_t) tid < s->n_tgids)
                s->tgids[tid] = tgid;
        return tgid;
}

static void tgid_set(FtraceSource *s, int32_t tid, int32_t tgid) {
        if (tid > 0 && (size_t) tid < s->n_tgids)
                s->tgids[tid] = tgid;
}

static void pending_flush(FtraceSource *s, FtraceCpu *c) {
        for (size_t i = 0; i < c->n_pending; i++)
                if (c->pending[i].alloc) {
                        s->stack_failed++;
                        emit(s, &c->pending[i].ev);
                }
        c->n_pending = 0;
}

/* Queues what the next kernel_stack record of this CPU belongs to: ev (an allocation), or a marker. */
static void pending_push(FtraceSource *s, FtraceCpu *c, const MsEvent *ev) {
        if (!c->instance->stacks) {
                if (ev)
                        emit(s, ev);
                return;
        }
        /* Stacks that never came (a full ring, a kernel that skipped one): deliver what waits. */
        if (c->n_pending == PENDING_MAX)
                pending_flush(s, c);
        Pending *p = &c->pending[c->n_pending++];
        *p = (Pending) { .alloc = ev != NULL, .ev = ev ? *ev : (MsEvent) {} };
        if (ev && ev->type == MS_EVENT_OBJECT_ALLOC && ev->object.cache) {
                (void) snprintf(p->cache, sizeof(p->cache), "%s", ev->object.cache);
                p->ev.object.cache = p->cache;
        }
}

static void handle_stack(FtraceSource *s, FtraceCpu *c, const void *rec, size_t size) {
        Pending *p;
        size_t n = 0, kept = 0;

        if (c->n_pending == 0)
                return;         /* the stack of an event before we started, or of one we skipped */
        p = &c->pending[--c->n_pending];
        if (!p->alloc)
                return;
        if (tracepoint_decode_stack(s->tracepoints, rec, size, s->frames, s->depth, &n) < 0) {
                s->bad_records++;
                n = 0;
        }
        /* Old kernels end the array with ULONG_MAX; no frame is 0. */
        for (size_t i = 0; i < n; i++)
                if (s->frames[i] != 0 && s->frames[i] != UINT64_MAX && s->frames[i] != UINT32_MAX)
                        s->frames[kept++] = s->frames[i];
        MsStack stack = { .frames = s->frames, .n_frames = (uint32_t) kept, .n_kernel_frames = (uint32_t) kept };
        if (p->ev.type == MS_EVENT_OBJECT_ALLOC)
                p->ev.object.stack = stack;
        else
                p->ev.page.stack = stack;
        emit(s, &p->ev);
}

static void handle_task(FtraceSource *s, TracepointKind kind, const void *rec, size_t size, int32_t tid) {
        TracepointTask t;
        MsEvent *ev = &s->ev;
        const char *base;
        int32_t tgid;

        if (tracepoint_decode_task(s->tracepoints, rec, size, &t) < 0) {
                s->bad_records++;
                return;
        }

        switch (kind) {

        case TRACEPOINT_TASK_NEWTASK:
                /* In the parent's context, before sched_process_fork: whether the child is a thread. */
                tgid_set(s, t.pid, (t.clone_flags & CLONE_THREAD_FLAG) ? tgid_of(s, tid) : t.pid);
                return;

        case TRACEPOINT_SCHED_FORK:
                ev->type = MS_EVENT_TASK_FORK;
                ev->task.parent_pid = tgid_of(s, t.parent_pid);
                ev->pid = tgid_of(s, t.pid);
                ev->tid = t.pid;
                break;

        case TRACEPOINT_SCHED_EXEC:
                /* A thread that exec'd took its leader's pid; its own tid is gone. */
                if (t.old_pid != t.pid)
                        tgid_set(s, t.old_pid, 0);
                tgid_set(s, t.pid, t.pid);
                ev->type = MS_EVENT_TASK_COMM;
                ev->pid = ev->tid = t.pid;
                /* The kernel names an exec'd task after the file's base name (task_rename said so before;
                 * this one carries the arguments). */
                base = t.filename ? strrchr(t.filename, '/') : NULL;
                base = base ? base + 1 : t.filename ? t.filename : "";
                (void) snprintf(t.comm, sizeof(t.comm), "%.*s", (int) TASK_COMM_MAX - 1, base);
                ev->task.name = t.comm;
                ev->task.cmdline = proc_read_cmdline(PROC_ROOT_DEFAULT, t.pid, s->cmdline, PROC_CMDLINE_MAX);
                break;

        case TRACEPOINT_TASK_RENAME:
                ev->type = MS_EVENT_TASK_COMM;
                ev->pid = tgid_of(s, t.pid);
                ev->tid = t.pid;
                ev->task.name = t.comm;
                break;

        case TRACEPOINT_SCHED_EXIT:
                tgid = tgid_of(s, t.pid);
                ev->type = MS_EVENT_TASK_EXIT;
                ev->pid = tgid;
                ev->tid = t.pid;
                /* Its tid may be reused by a task whose fork we will see. */
                tgid_set(s, t.pid, 0);
                break;

        default:
                return;
        }
        emit(s, ev);
}

static void cpu_handle_record(FtraceCpu *c, const void *rec, size_t size, uint64_t nsec) {
        FtraceSource *s = c->source;
        MsEvent *ev = &s->ev;
        int32_t tid;
        int k;

        k = tracepoint_kind_of(s->tracepoints, rec, size, &tid);
        if (k == TRACEPOINT_KERNEL_STACK) {
                handle_stack(s, c, rec, size);
                return;
        }
        if (k < 0) {
                s->bad_records++;
                return;
        }

        *ev = (MsEvent) {
                .type = _MS_EVENT_TYPE_INVALID,
                .cpu = c->cpu,
                .tid = tid,
                .timestamp_nsec = nsec,
        };

        switch (k) {

        case TRACEPOINT_PAGE_ALLOC:
        case TRACEPOINT_PAGE_FREE:
        case TRACEPOINT_MODULE_LOAD:
        case TRACEPOINT_MODULE_FREE:
        case TRACEPOINT_KMALLOC:
        case TRACEPOINT_KMALLOC_NODE:
        case TRACEPOINT_KMEM_CACHE_ALLOC:
        case TRACEPOINT_KMEM_CACHE_ALLOC_NODE:
        case TRACEPOINT_KFREE:
        case TRACEPOINT_KMEM_CACHE_FREE: {
                int r = tracepoint_decode(s->tracepoints, rec, size, ev);

                ev->pid = tgid_of(s, tid);
                if (r == -ENODATA) {
                        /* No page or object; kfree(NULL) is no failure. */
                        if (kind_is_alloc(k))
                                s->failed_allocs++;
                } else if (r < 0)
                        s->bad_records++;
                else if (kind_is_alloc(k) && ev->pid == s->live.self)
                        s->self_samples++;
                else if (kind_is_alloc(k)) {
                        pending_push(s, c, ev);
                        return;
                } else
                        emit(s, ev);
                pending_push(s, c, NULL);
                return;
        }

        default:
                handle_task(s, k, rec, size, tid);
                pending_push(s, c, NULL);
                return;
        }
}

/* Adds what the kernel counted lost on this CPU since the last look (overwrite is off: "dropped events";
 * "overrun" too, should a kernel count there) and reports it once. */
static void cpu_check_lost(FtraceCpu *c, uint64_t nsec) {
        FtraceSource *s = c->source;
        char buf[1024];
        uint64_t total = 0;
        ssize_t n;

        n = read_file_small(c->stats_path, buf, sizeof(buf));
        if (n <= 0)
                return;
        for (const char *key = "overrun:"; key; key = streq(key, "overrun:") ? "dropped events:" : NULL) {
                const char *p = strstr(buf, key);

                if (p)
                        total = count_add(total, strtoull(p + strlen(key), NULL, 10));
        }
        if (total <= c->lost)
                return;
        s->ev = (MsEvent) {
                .type = MS_EVENT_LOST,
                .cpu = c->cpu,
                .timestamp_nsec = nsec,
                .lost.n_lost = total - c->lost,
        };
        s->lost_records = count_add(s->lost_records, total - c->lost);
        s->lost_per_cpu[c->cpu] = count_add(s->lost_per_cpu[c->cpu], total - c->lost);
        c->lost = total;
        /* What waited for a stack may have lost it. */
        pending_flush(s, c);
        emit(s, &s->ev);
}

/* Loads the next sub-buffer into c->page if the record at hand is used up; false when there is none. */
static bool cpu_peek(FtraceCpu *c) {
        FtraceSource *s = c->source;

        while (!c->next) {
                ssize_t n;

                if (c->drained)
                        return false;
                n = read(c->fd, c->page, s->page_size);
                if (n <= 0) {
                        if (n < 0 && errno != EAGAIN && errno != EINTR)
                                log_debug_errno(errno, "Failed to read the trace buffer of CPU %u: %m", c->cpu);
                        c->drained = true;
                        return false;
                }
                /* A partial sub-buffer: its header says how much is data. */
                memset(c->page + n, 0, s->page_size - (size_t) n);
                if (kbuffer_load_subbuffer(c->kbuf, c->page) < 0) {
                        s->bad_records++;
                        continue;
                }
                c->next = kbuffer_read_event(c->kbuf, &c->next_nsec);
        }
        return true;
}

static bool cpu_merge_peek(void *stream, uint64_t *ret_nsec) {
        FtraceCpu *c = stream;

        if (!cpu_peek(c))
                return false;
        *ret_nsec = c->next_nsec;
        return true;
}

static void cpu_merge_consume(void *stream) {
        FtraceCpu *c = stream;
        int size = kbuffer_event_size(c->kbuf);

        if (size > 0)
                cpu_handle_record(c, c->next, (size_t) size, c->next_nsec);
        else
                c->source->bad_records++;
        c->next = kbuffer_next_event(c->kbuf, &c->next_nsec);
}

static const MergeOps cpu_merge_ops = {
        .peek = cpu_merge_peek,
        .consume = cpu_merge_consume,
};

/* One round: every CPU's records stamped before a cut taken now, merged by time (see perf.c). */
static bool source_drain(FtraceSource *s, uint64_t budget, bool check_lost) {
        uint64_t cut = now_nsec(CLOCK_MONOTONIC);

        if (check_lost)
                for (size_t i = 0; i < s->n_cpus_open; i++)
                        cpu_check_lost(&s->cpus[i], cut);

        merge_begin(&s->merge);
        for (size_t i = 0; i < s->n_cpus_open; i++) {
                s->cpus[i].drained = false;
                merge_add(&s->merge, &s->cpus[i]);
        }
        return merge_run(&s->merge, cut, budget);
}

static void source_drain_some(FtraceSource *s, bool check_lost) {
        if (source_drain(s, FTRACE_DRAIN_BUDGET, check_lost))
                live_source_drain_later(&s->live);
}

static int cpu_io_handler(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        FtraceCpu *c = userdata;

        c->source->wakeups++;
        source_drain_some(c->source, true);
        if (revents & (EPOLLHUP | EPOLLERR)) {
                log_warning("Trace buffer of CPU %u hung up, no more events from it.", c->cpu);
                (void) sd_event_source_set_enabled(es, SD_EVENT_OFF);
        }
        return 0;
}

static void drain_more(LiveSource *ls) {
        source_drain_some((FtraceSource *) ls, false);
}

/* Writes value into <instance>/<file>; -errno. */
static int instance_write(const Instance *inst, const char *file, const char *value) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(value);

        if (asprintf(&path, "%s/%s", inst->path, file) < 0)
                return -ENOMEM;
        /* O_NONBLOCK: a FIFO where a tracefs file should be fails instead of waiting for a reader. */
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return log_debug_errno(errno, "Failed to open %s: %m", path);
        if (write(fd, value, len) != (ssize_t) len)
                return log_debug_errno(errno ?: EIO, "Failed to write \"%s\" to %s: %m", value, path);
        return 0;
}

/* The instance that records kind: allocations go where stacks are taken, the rest where they are not. */
static const Instance *kind_instance(const FtraceSource *s, TracepointKind kind) {
        return kind_is_alloc(kind) && s->stacks ? &s->instances[INSTANCE_STACKS] : &s->instances[INSTANCE_EVENTS];
}

/* Whether a memstrackd with this pid is alive: a pid that is gone, or reused by another program, is not. */
static bool instance_owner_alive(pid_t pid) {
        char path[sizeof("/proc//comm") + 3 * sizeof(pid_t)], comm[64];
        ssize_t n;

        if (kill(pid, 0) < 0 && errno == ESRCH)
                return false;
        (void) snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        n = read_file_small(path, comm, sizeof(comm));
        if (n <= 0)
                return true;    /* cannot tell: leave it */
        return strncmp(comm, "memstrackd", strlen("memstrackd")) == 0;
}

/* Removes instances left by daemons that died without removing theirs (SIGKILL, a crash), and one of
 * ours from an earlier daemon with our pid (another PID namespace). */
static void instances_clean_stale(const char *tracefs, pid_t self) {
        _cleanup_free_ char *dir = NULL;
        struct dirent *de;
        DIR *d;

        if (asprintf(&dir, "%s/instances", tracefs) < 0)
                return;
        d = opendir(dir);
        if (!d)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                char *end;
                long pid;

                if (strncmp(de->d_name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)) != 0)
                        continue;
                errno = 0;
                pid = strtol(de->d_name + strlen(INSTANCE_PREFIX), &end, 10);
                if (errno != 0 || (*end != '\0' && !streq(end, INSTANCE_STACKS_SUFFIX)) || pid <= 0 ||
                    pid > INT32_MAX)
                        continue;
                if (pid != self && instance_owner_alive((pid_t) pid))
                        continue;
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
                        break;
                if (rmdir(path) < 0)
                        log_warning_errno(errno, "Failed to remove the stale trace instance %s: %m", path);
                else
                        log_notice("Removed the trace instance %s, left by a memstrackd that is gone.", path);
        }
        (void) closedir(d);
}

static void cpu_done(FtraceCpu *c) {
        c->io_source = sd_event_source_disable_unref(c->io_source);
        c->fd = safe_close(c->fd);
        if (c->kbuf)
                kbuffer_free(c->kbuf);
        c->kbuf = NULL;
        free(c->page);
        c->page = NULL;
        free(c->stats_path);
        c->stats_path = NULL;
}

static FtraceSource *ftrace_source_free(FtraceSource *s) {
        if (!s)
                return NULL;
        log_debug("Ftrace source: %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64 " wakeups, %" PRIu64
                  " own allocations dropped, %" PRIu64 " failed allocations, %" PRIu64 " bad records, %" PRIu64
                  " allocations without their stack.", s->records, s->lost_records, s->wakeups,
                  s->self_samples, s->failed_allocs, s->bad_records, s->stack_failed);
        for (size_t i = s->n_cpus_open; i > 0; i--)
                cpu_done(&s->cpus[i - 1]);
        free(s->cpus);
        merge_done(&s->merge);
        /* With their files closed, the instances go with their events and buffers. */
        for (size_t i = 0; i < _INSTANCE_MAX; i++) {
                if (s->instances[i].path && rmdir(s->instances[i].path) < 0)
                        log_warning_errno(errno, "Failed to remove the trace instance %s: %m",
                                          s->instances[i].path);
                free(s->instances[i].path);
        }
        live_source_done(&s->live);
        free(s->lost_per_cpu);
        free(s->tgids);
        free(s->frames);
        free(s->cmdline);
        tracepoint_free(s->tracepoints);
        free(s->tracefs);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(FtraceSource *, ftrace_source_free);

static FtraceSource *ftrace_source_from(EventSource *es) {
        return (FtraceSource *) es;
}

static void ftrace_source_free_op(EventSource *es) {
        ftrace_source_free(ftrace_source_from(es));
}

/* LiveSourceSteps.attach: each CPU's buffer of each instance, watched. */
static int attach(LiveSource *ls, sd_event *event) {
        FtraceSource *s = (FtraceSource *) ls;

        for (size_t i = 0; i < s->n_cpus_open; i++) {
                FtraceCpu *c = &s->cpus[i];
                char description[sizeof("ftrace-cpu") + 3 * sizeof(unsigned)];

                int r = sd_event_add_io(event, &c->io_source, c->fd, EPOLLIN, cpu_io_handler, c);
                if (r < 0)
                        return log_error_errno(r, "Failed to watch the trace buffer of CPU %u in %s: %m", c->cpu,
                                               c->instance->path);
                (void) snprintf(description, sizeof(description), "ftrace-cpu%u", c->cpu);
                (void) sd_event_source_set_description(c->io_source, description);
        }
        return 0;
}

/* LiveSourceSteps.enable: the events in their instances; the optional ones go without on failure. */
static int enable(LiveSource *ls) {
        FtraceSource *s = (FtraceSource *) ls;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(enabled_kinds); i++) {
                TracepointKind k = enabled_kinds[i];
                _cleanup_free_ char *file = NULL;

                if (tracepoint_id(s->tracepoints, k) < 0)
                        continue;
                if (tracepoint_kind_is_slab(k) && !s->slab)
                        continue;
                if (asprintf(&file, "events/%s/enable", tracepoint_kind_to_string(k)) < 0)
                        return log_oom();
                r = instance_write(kind_instance(s, k), file, "1");
                if (r < 0 && kind_is_required(k))
                        return log_error_errno(r, "Failed to enable %s in %s: %m", tracepoint_kind_to_string(k),
                                               kind_instance(s, k)->path);
                if (r < 0)
                        log_debug_errno(r, "Failed to enable %s, going without it: %m",
                                        tracepoint_kind_to_string(k));
        }
        return 0;
}

static const LiveSourceSteps ftrace_steps = {
        .name = "ftrace",
        .attach = attach,
        .enable = enable,
        .drain_more = drain_more,
};

static int ftrace_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        FtraceSource *s = ftrace_source_from(es);
        uint64_t seeded = 0;

        int r = live_source_start(&s->live, event, sink, &seeded);
        s->records += seeded;
        if (r < 0)
                return r;
        log_debug("Ftrace source started: %zu CPU buffers in %s%s%s.", s->n_cpus_open,
                  s->instances[INSTANCE_EVENTS].path, s->stacks ? " and " : "",
                  s->stacks ? s->instances[INSTANCE_STACKS].path : "");
        return 0;
}

static int ftrace_source_flush(EventSource *es) {
        FtraceSource *s = ftrace_source_from(es);

        assert(s);
        (void) source_drain(s, UINT64_MAX, true);
        return 0;
}

static void ftrace_source_get_stats(EventSource *es, EventSourceStats *ret) {
        FtraceSource *s = ftrace_source_from(es);

        assert(s);
        assert(ret);
        s->losses[0] = (EventSourceLoss) { .reason = "ringFull", .count = s->lost_records };
        s->losses[1] = (EventSourceLoss) { .reason = "stackFailed", .count = s->stack_failed };
        *ret = (EventSourceStats) {
                .records = s->records,
                .lost_records = s->lost_records,
                .wakeups = s->wakeups,
                .n_cpus = s->n_cpus,
                .lost_per_cpu = s->lost_per_cpu,
                .losses = s->losses,
                .n_losses = ELEMENTSOF(s->losses),
                .stack_sample_interval = s->stacks ? 1 : 0,
                .pfns = s->tracepoints && !tracepoint_pfn_is_surrogate(s->tracepoints),
        };
}

/* The stacktrace option records from inside the probe that wrote the event. */
static const MsTracerFrames ftrace_tracer_frames = {
        .prefixes = (const char *const[]) { "__traceiter_", "trace_event_raw_event_", NULL },
};

static const EventSourceOps ftrace_source_ops = {
        .name = "ftrace",
        .tracer_frames = &ftrace_tracer_frames,
        .start = ftrace_source_start,
        .flush = ftrace_source_flush,
        .get_stats = ftrace_source_get_stats,
        .free = ftrace_source_free_op,
};

static int cpu_open(FtraceSource *s, FtraceCpu *c, Instance *inst, unsigned cpu) {
        _cleanup_free_ char *path = NULL;

        c->source = s;
        c->instance = inst;
        c->cpu = cpu;
        if (asprintf(&path, "%s/per_cpu/cpu%u/trace_pipe_raw", inst->path, cpu) < 0 ||
            asprintf(&c->stats_path, "%s/per_cpu/cpu%u/stats", inst->path, cpu) < 0)
                return log_oom();
        c->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (c->fd < 0)
                return log_error_errno(errno, "Failed to open %s: %m", path);
        c->kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
        c->page = malloc(s->page_size);
        if (!c->kbuf || !c->page)
                return log_oom();
        return 0;
}

/* The CPUs tracefs has buffers for (possible CPUs: an offline one just has no records), sorted. */
static int list_cpus(const char *instance, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_free_ unsigned *cpus = NULL;
        size_t n = 0;
        struct dirent *de;
        DIR *d;

        if (asprintf(&dir, "%s/per_cpu", instance) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                unsigned long cpu;
                char *end;
                unsigned *q;

                if (strncmp(de->d_name, "cpu", 3) != 0)
                        continue;
                errno = 0;
                cpu = strtoul(de->d_name + 3, &end, 10);
                if (errno != 0 || *end != '\0' || end == de->d_name + 3 || cpu >= SOURCE_MAX_CPUS)
                        continue;
                q = realloc(cpus, (n + 1) * sizeof(*cpus));
                if (!q) {
                        (void) closedir(d);
                        return -ENOMEM;
                }
                cpus = q;
                cpus[n++] = (unsigned) cpu;
        }
        (void) closedir(d);
        if (n == 0)
                return -ENOENT;
        /* Insertion sort: a few CPUs. */
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && cpus[j - 1] > cpus[j]; j--) {
                        unsigned t = cpus[j];
                        cpus[j] = cpus[j - 1];
                        cpus[j - 1] = t;
                }
        *ret = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

static int log_tracepoint_error(int r, const char *tracefs, const char *missing) {
        if (r == -EACCES || r == -EPERM)
                return log_error_errno(r, "Not allowed to read the tracepoint formats (%s) in %s: run as root.",
                                       missing ? missing : "events", tracefs);
        if (r == -ENOENT && missing && streq(missing, "events"))
                return log_error_errno(r, "%s has no events directory: not a tracefs, or no tracepoint "
                                       "support.", tracefs);
        if (r == -ENOENT)
                return log_error_errno(r, "Tracepoint %s is missing in %s/events.", missing ? missing : "?",
                                       tracefs);
        return log_error_errno(r, "Failed to load tracepoint %s from %s: %m", missing ? missing : "formats",
                               tracefs);
}

/* Makes <tracefs>/instances/memstrackd-PID<suffix> and sets what every instance of ours has: the mono
 * clock, no overwriting, the buffer size and wakeup fill. Events are enabled by start(). */
static int instance_make(FtraceSource *s, Instance *inst, const char *suffix, const SourceOptions *o) {
        _cleanup_free_ char *path = NULL;
        char value[64];
        int r;

        if (asprintf(&path, "%s/instances/" INSTANCE_PREFIX "%d%s", s->tracefs, (int) s->live.self, suffix) < 0)
                return log_oom();
        if (mkdir(path, 0700) < 0) {
                r = negative_errno();
                if (r == -ENOENT)
                        return log_error_errno(r, "%s/instances is missing: this kernel's tracefs has no "
                                               "instances (Linux 3.15).", s->tracefs);
                return log_error_errno(r, "Failed to create the trace instance %s: %m", path);
        }
        inst->path = TAKE_PTR(path);

        r = instance_write(inst, "trace_clock", "mono");
        if (r < 0)
                return log_error_errno(r, "Failed to set the trace clock of %s to mono: %m", inst->path);
        r = instance_write(inst, "options/overwrite", "0");
        if (r < 0)
                return log_error_errno(r, "Failed to turn off overwriting in %s: %m", inst->path);
        (void) snprintf(value, sizeof(value), "%zu", (size_t) o->buffer_pages * s->page_size / 1024);
        r = instance_write(inst, "buffer_size_kb", value);
        if (r < 0)
                return log_error_errno(r, "Failed to size the trace buffers of %s to %s KiB per CPU: %m",
                                       inst->path, value);
        /* Wakeups when this full; older kernels lack the file and wake at every page. */
        (void) snprintf(value, sizeof(value), "%u", s->buffer_percent);
        r = instance_write(inst, "buffer_percent", value);
        if (r < 0 && r != -ENOENT)
                log_debug_errno(r, "Failed to set buffer_percent, waking up at every page: %m");
        return 0;
}

/*
 * The instances: memstrackd-PID always; with stacks, memstrackd-PID-stacks for the allocations alone,
 * with the "stacktrace" option on. The option is per instance and stacks every event of it, so keeping
 * frees and task events apart saves a kernel stack walk per free: about half the cost of stacks.
 */
static int instances_setup(FtraceSource *s, const SourceOptions *o) {
        Instance *stacks = &s->instances[INSTANCE_STACKS];
        char value[64];
        int r;

        r = instance_make(s, &s->instances[INSTANCE_EVENTS], "", o);
        if (r < 0)
                return r;

        if (s->depth > 0) {
                if (tracepoint_id(s->tracepoints, TRACEPOINT_KERNEL_STACK) < 0)
                        r = -ENOENT;
                else {
                        r = instance_make(s, stacks, INSTANCE_STACKS_SUFFIX, o);
                        if (r < 0)
                                return r;
                        r = instance_write(stacks, "options/stacktrace", "1");
                }
                if (r < 0) {
                        log_notice("The kernel cannot record stacks in trace instances (options/stacktrace, "
                                   "ftrace/kernel_stack): running without allocation stacks.");
                        if (stacks->path && rmdir(stacks->path) < 0)
                                log_warning_errno(errno, "Failed to remove the trace instance %s: %m",
                                                  stacks->path);
                        free(stacks->path);
                        stacks->path = NULL;
                } else
                        s->stacks = stacks->stacks = true;
        }
        if (o->user_stacks)
                log_notice("The ftrace source records kernel stacks only: --user-stacks is ignored.");

        (void) snprintf(value, sizeof(value), "common_pid != %d", (int) s->live.self);
        for (size_t i = 0; i < ELEMENTSOF(enabled_kinds); i++) {
                TracepointKind k = enabled_kinds[i];
                _cleanup_free_ char *file = NULL;

                if (!kind_is_alloc(k) || tracepoint_id(s->tracepoints, k) < 0 ||
                    (tracepoint_kind_is_slab(k) && !s->slab))
                        continue;
                if (asprintf(&file, "events/%s/filter", tracepoint_kind_to_string(k)) < 0)
                        return log_oom();
                r = instance_write(kind_instance(s, k), file, value);
                if (r < 0)
                        log_debug_errno(r, "Failed to filter our own allocations from %s, dropping them when "
                                        "read instead: %m", tracepoint_kind_to_string(k));
        }
        return 0;
}

static int ftrace_source_new(const SourceOptions *o, EventSource **ret) {
        _cleanup_(ftrace_source_freep) FtraceSource *s = NULL;
        _cleanup_free_ unsigned *cpus = NULL;
        const char *missing = NULL;
        size_t n_cpus, n_instances, buffer_bytes;
        long pid_max;
        int r;

        assert(o);
        assert(ret);

        if (o->depth > SOURCE_DEPTH_MAX)
                return log_error_errno(EINVAL, "Call chain depth %u out of range 0..%u.", o->depth,
                                       SOURCE_DEPTH_MAX);
        if (o->buffer_pages < 1 || o->buffer_pages > SOURCE_BUFFER_PAGES_MAX)
                return log_error_errno(EINVAL, "Buffer of %u pages out of range 1..%u.", o->buffer_pages,
                                       SOURCE_BUFFER_PAGES_MAX);

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        live_source_init(&s->live, &ftrace_source_ops, &ftrace_steps, o->self > 0 ? o->self : getpid());
        s->depth = o->depth;
        s->slab = o->slab;
        s->page_size = (size_t) sysconf(_SC_PAGESIZE);
        buffer_bytes = (size_t) o->buffer_pages * s->page_size;
        if (o->wakeup_bytes >= buffer_bytes)
                return log_error_errno(EINVAL, "Wakeup watermark of %zu bytes does not fit a buffer of %zu "
                                       "bytes.", o->wakeup_bytes, buffer_bytes);
        /* A quarter by default, as perf (the headroom absorbs the daemon's scheduling delay); at least 1 %,
         * since 0 would mean a wakeup per record. */
        s->buffer_percent = o->wakeup_bytes > 0 ? (unsigned) MAX(o->wakeup_bytes * 100 / buffer_bytes, (size_t) 1)
                                                : 25;

        if (o->tracefs) {
                s->tracefs = strdup(o->tracefs);
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

        r = tracepoint_load(s->tracefs, TRACEPOINT_BYTE_ORDER_HOST, &s->tracepoints, &missing);
        if (r < 0)
                return log_tracepoint_error(r, s->tracefs, missing);
        for (size_t i = 0; i < ELEMENTSOF(enabled_kinds); i++)
                if (kind_is_required(enabled_kinds[i]) && tracepoint_id(s->tracepoints, enabled_kinds[i]) < 0)
                        return log_error_errno(ENOENT, "Tracepoint %s is missing in %s/events.",
                                               tracepoint_kind_to_string(enabled_kinds[i]), s->tracefs);
        if (tracepoint_id(s->tracepoints, TRACEPOINT_TASK_NEWTASK) < 0)
                log_info("No task/task_newtask tracepoint: new threads are told from processes by /proc.");
        if (tracepoint_pfn_is_surrogate(s->tracepoints))
                log_info("Page tracepoints record struct page pointers: pages are keyed by pointer, not pfn.");
        if (s->slab) {
                char missing_slab[128];

                if (*tracepoint_slab_missing(s->tracepoints, missing_slab, sizeof(missing_slab)))
                        log_notice("--slab: the kernel has no usable %s tracepoint, no slab events from it.",
                                   missing_slab);
        }

        instances_clean_stale(s->tracefs, s->live.self);
        r = instances_setup(s, o);
        if (r < 0)
                return r;

        r = list_cpus(s->instances[INSTANCE_EVENTS].path, &cpus, &n_cpus);
        if (r < 0)
                return log_error_errno(r, "Failed to list the CPU buffers of %s: %m",
                                       s->instances[INSTANCE_EVENTS].path);

        if (read_file_long("/proc/sys/kernel/pid_max", &pid_max) < 0 || pid_max <= 0 ||
            pid_max > (long) TID_MAX_LIMIT)
                pid_max = TID_MAX_LIMIT;
        s->n_tgids = (size_t) pid_max + 1;
        s->tgids = calloc(s->n_tgids, sizeof(*s->tgids));
        s->frames = calloc(MAX(s->depth, 1u), sizeof(*s->frames));
        s->cmdline = malloc(PROC_CMDLINE_MAX);
        s->n_cpus = cpus[n_cpus - 1] + 1;
        s->lost_per_cpu = calloc(s->n_cpus, sizeof(*s->lost_per_cpu));
        n_instances = s->stacks ? 2 : 1;
        s->cpus = calloc(n_cpus * n_instances, sizeof(*s->cpus));
        if (!s->tgids || !s->frames || !s->cmdline || !s->lost_per_cpu || !s->cpus ||
            merge_init(&s->merge, n_cpus * n_instances, &cpu_merge_ops) < 0)
                return log_oom();
        for (size_t i = 0; i < n_cpus * n_instances; i++)
                s->cpus[i].fd = -EBADF;
        /* The events instance's buffers first: on equal timestamps the merge delivers a free before an
         * allocation. */
        for (size_t k = 0; k < n_instances; k++)
                for (size_t i = 0; i < n_cpus; i++) {
                        s->n_cpus_open++;
                        r = cpu_open(s, &s->cpus[k * n_cpus + i], &s->instances[k], cpus[i]);
                        if (r < 0)
                                return r;
                }

        log_debug("Ftrace source: %zu CPUs, %zu KiB buffers per instance, wakeup at %u %%, depth %u%s, in %s.",
                  n_cpus, buffer_bytes / 1024, s->buffer_percent, s->depth,
                  s->stacks ? " with stacks from a second instance" : " (no stacks)",
                  s->instances[INSTANCE_EVENTS].path);
        *ret = &TAKE_PTR(s)->live.base;
        return 0;
}

const SourceType ftrace_source_type = {
        .name = "ftrace",
        .description = "the kernel's page tracepoints through a tracefs instance of its own (needs root)",
        /* Not for auto: it gives less than perf (no cgroups, so no units; no user frames; pids of the
         * initial PID namespace only), its daemon spends more CPU per event, it needs root (instances are
         * root's directories), and it leaves directories in tracefs while it runs. */
        .automatic = false,
        .new = ftrace_source_new,
};
