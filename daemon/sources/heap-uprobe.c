/* SPDX-License-Identifier: MIT */

/*
 * The heap-uprobe source: the user-space heap of one running process, without a restart (memstrackctl
 * record --pid). It attaches its BPF program (bpf/heap-uprobe.bpf.c) as uprobes to the malloc family of the
 * libc the process maps, as memleak -p does, and turns what they report into the heap events the preloaded
 * library's source makes: START with the process's maps, ALLOC/FREE for the sampled blocks (with their user
 * stacks), STATE with the exact counters, END. The recording ends when the process exits (a pidfd says so),
 * when it is asked to (heap_stop: the HeapStop method) or when the daemon stops; the uprobes are detached
 * first, so the process runs on untouched, and BPF links die with the daemon, so nothing stays attached if
 * it is killed.
 *
 * --source-input=PID names the process; --heap-sample-interval its sampling (bytes per stack, 1: every
 * call). The only libbpf user besides ebpf.c; the libc's symbols are read from its ELF file here.
 */

#include <assert.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "heap-abi.h"
#include "heap-progress.h"
#include "heap-uprobe-bpf.h"
#include "heap-uprobe.skel.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "proc-seed.h"
#include "proc-maps.h"
#include "read-file.h"
#include "source.h"
#include "time-util.h"

#define UPROBE_POLL_USEC (UINT64_C(100) * 1000)         /* counters and the ring read every 100 ms */
#define UPROBE_RING_BYTES (UINT32_C(16) << 20)
#define UPROBE_BLOCKS_MAX (UINT32_C(1) << 21)           /* live blocks tracked (allocated as they come) */
#define UPROBE_DRAIN_BUDGET 65536u                      /* records per read: the loop stays responsive */
#define UPROBE_MAPS_MAX (UINT64_C(16) << 20)
#define UPROBE_MAPS_REFRESH_USEC (UINT64_C(1000) * 1000)
#define UPROBE_LINKS_MAX 16u

typedef struct Range {
        uint64_t start, end;
} Range;

typedef struct UprobeSource {
        EventSource source;
        int32_t pid;
        uint64_t sample_interval;
        char *libc;                     /* the libc as the process maps it, through /proc/PID/root */
        struct heap_uprobe_bpf *skel;
        struct bpf_link *links[UPROBE_LINKS_MAX];
        size_t n_links;
        struct ring_buffer *ring;
        int pidfd;

        sd_event *event;
        sd_event_source *ring_io, *exit_watch, *poll_timer, *drain_later;
        MsEventSink sink;
        uint64_t now_nsec;              /* the time records of this read are stamped with */

        Range *code;                    /* executable mappings of the maps last sent, sorted */
        size_t n_code;
        uint64_t maps_read_usec;
        bool maps_stale;                /* a frame fell in no mapping: read the maps again (rate-limited) */

        HeapProgress progress;
        bool ended;
        uint64_t records, bad_records, wakeups, budget_left;
        EventSourceLoss losses[3];
} UprobeSource;

static void emit(UprobeSource *s, const MsEvent *e) {
        s->sink.event(s->sink.userdata, e);
}

static MsEvent heap_event(UprobeSource *s, MsEventType type) {
        return (MsEvent) { .type = type, .pid = s->pid, .tid = s->pid, .timestamp_nsec = s->now_nsec };
}

/* ---- The process's files ------------------------------------------------------------------------------ */

/* /proc/PID/maps, its executable mappings and (if wanted) the libc among them. */
static int read_maps(int32_t pid, char **ret_text, Range **ret_code, size_t *ret_n_code, char **ret_libc) {
        _cleanup_free_ char *text = NULL, *libc = NULL;
        _cleanup_free_ Range *code = NULL;
        char path[64];
        size_t size, n = 0, allocated = 0;
        int r;

        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32 "/maps", pid);
        r = read_file_full(path, UPROBE_MAPS_MAX, &text, &size);
        if (r < 0)
                return r;
        MapsLine m;
        for (const char *cursor = text; (r = maps_next(&cursor, &m)) != 0;) {
                if (r < 0 || m.perms[2] != 'x')
                        continue;
                if (n == allocated) {
                        allocated = allocated ? allocated * 2 : 64;
                        Range *grown = realloc(code, allocated * sizeof(Range));
                        if (!grown)
                                return -ENOMEM;
                        code = grown;
                }
                code[n++] = (Range) { m.start, m.end };
                const char *base = maps_line_is_file(&m) ? memrchr(m.path, '/', m.path_len) : NULL;
                if (ret_libc && !libc && base && (size_t) (m.path + m.path_len - base) > 9 &&
                    strncmp(base + 1, "libc.so.6", 9) == 0) {
                        libc = strndup(m.path, m.path_len);
                        if (!libc)
                                return -ENOMEM;
                }
        }
        if (ret_libc && !libc)
                return -ENOENT;
        *ret_text = TAKE_PTR(text);
        *ret_code = TAKE_PTR(code);
        *ret_n_code = n;
        if (ret_libc)
                *ret_libc = TAKE_PTR(libc);
        return 0;
}

/* Whether ip is in an executable mapping: a bisection of the ranges, which /proc/PID/maps lists in address
 * order without overlap (every frame of every record asks). */
static bool in_code(const UprobeSource *s, uint64_t ip) {
        size_t lo = 0, hi = s->n_code;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ip < s->code[mid].start)
                        hi = mid;
                else if (ip >= s->code[mid].end)
                        lo = mid + 1;
                else
                        return true;
        }
        return false;
}

/* The file offsets of functions in an ELF file's dynamic symbol table (what a uprobe is placed at): 0 for a
 * name it does not have. */
static int function_offsets(const char *path, const char *const names[], size_t n, uint64_t ret[]) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ Elf64_Shdr *sections = NULL;
        _cleanup_free_ Elf64_Phdr *segments = NULL;
        _cleanup_free_ Elf64_Sym *symbols = NULL;
        _cleanup_free_ char *strings = NULL;
        Elf64_Ehdr eh;
        size_t n_symbols = 0, strings_size = 0;

        for (size_t i = 0; i < n; i++)
                ret[i] = 0;
        if (fd < 0)
                return negative_errno();
        if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t) sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
            eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
            eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_shnum == 0 || eh.e_shnum > 4096 || eh.e_phnum > 4096)
                return -ENOEXEC;
        sections = calloc(eh.e_shnum, sizeof(Elf64_Shdr));
        segments = calloc(MAX(eh.e_phnum, (Elf64_Half) 1), sizeof(Elf64_Phdr));
        if (!sections || !segments)
                return -ENOMEM;
        if (pread(fd, sections, eh.e_shnum * sizeof(Elf64_Shdr), (off_t) eh.e_shoff) !=
                    (ssize_t) (eh.e_shnum * sizeof(Elf64_Shdr)) ||
            pread(fd, segments, eh.e_phnum * sizeof(Elf64_Phdr), (off_t) eh.e_phoff) !=
                    (ssize_t) (eh.e_phnum * sizeof(Elf64_Phdr)))
                return -ENOEXEC;
        for (size_t i = 0; i < eh.e_shnum && !symbols; i++) {
                const Elf64_Shdr *sh = &sections[i];
                if (sh->sh_type != SHT_DYNSYM || sh->sh_link >= eh.e_shnum || sh->sh_entsize != sizeof(Elf64_Sym) ||
                    sh->sh_size > (64u << 20) || sections[sh->sh_link].sh_size > (64u << 20))
                        continue;
                const Elf64_Shdr *str = &sections[sh->sh_link];
                n_symbols = sh->sh_size / sizeof(Elf64_Sym);
                strings_size = str->sh_size;
                symbols = malloc(MAX(sh->sh_size, (uint64_t) 1));
                strings = malloc(strings_size + 1);
                if (!symbols || !strings)
                        return -ENOMEM;
                if (pread(fd, symbols, sh->sh_size, (off_t) sh->sh_offset) != (ssize_t) sh->sh_size ||
                    pread(fd, strings, strings_size, (off_t) str->sh_offset) != (ssize_t) strings_size)
                        return -ENOEXEC;
                strings[strings_size] = '\0';
        }
        if (!symbols)
                return -ENOEXEC;
        for (size_t k = 0; k < n_symbols; k++) {
                const Elf64_Sym *sym = &symbols[k];
                if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_value == 0 || sym->st_name >= strings_size)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (ret[i] != 0 || !streq(strings + sym->st_name, names[i]))
                                continue;
                        /* The address in the file: through the loadable segment that holds it. */
                        for (size_t p = 0; p < eh.e_phnum; p++) {
                                const Elf64_Phdr *ph = &segments[p];
                                if (ph->p_type == PT_LOAD && sym->st_value >= ph->p_vaddr &&
                                    sym->st_value - ph->p_vaddr < ph->p_filesz)
                                        ret[i] = sym->st_value - ph->p_vaddr + ph->p_offset;
                        }
                }
        }
        return 0;
}

/* ---- Reading ---------------------------------------------------------------------------------------------- */

static void send_maps(UprobeSource *s, MsEventType type, const char *comm, const char *cmdline) {
        _cleanup_free_ char *text = NULL;
        Range *code = NULL;
        size_t n_code = 0;

        s->maps_read_usec = now_usec(CLOCK_MONOTONIC);
        s->maps_stale = false;
        if (read_maps(s->pid, &text, &code, &n_code, NULL) >= 0) {
                free(s->code);
                s->code = code;
                s->n_code = n_code;
        }
        MsEvent e = heap_event(s, type);
        e.heap.maps = text;
        e.heap.sample_interval = s->sample_interval;
        e.heap.comm = comm;
        e.heap.cmdline = cmdline;
        if (type == MS_EVENT_HEAP_START || text)
                emit(s, &e);
}

static int on_record(void *ctx, void *data, size_t size) {
        UprobeSource *s = ctx;
        const HeapBpfRecord *r = data;

        if (size < sizeof(HeapBpfRecord) || (r->type != HEAP_BPF_ALLOC && r->type != HEAP_BPF_FREE) || r->ptr == 0 ||
            (size_t) r->n_frames > (size - sizeof(HeapBpfRecord)) / 8 || r->n_frames > HEAP_BPF_FRAMES_MAX) {
                s->bad_records++;
                return 0;
        }
        s->records++;
        MsEvent e = heap_event(s, r->type == HEAP_BPF_ALLOC ? MS_EVENT_HEAP_ALLOC : MS_EVENT_HEAP_FREE);
        uint64_t none = MS_FRAME_HEAP_NO_STACK;
        e.tid = r->tid > 0 && r->tid <= INT32_MAX ? (int32_t) r->tid : s->pid;
        e.heap.ptr = r->ptr;
        e.heap.bytes = r->bytes;
        e.heap.peak = heap_progress_record(&s->progress, r->type == HEAP_BPF_ALLOC, r->live_after, r->peak);
        if (r->type == HEAP_BPF_ALLOC) {
                e.heap.stack = r->n_frames > 0 ? (MsStack) { .frames = (const uint64_t *) r->frames, .n_frames = r->n_frames }
                                               : (MsStack) { .frames = &none, .n_frames = 1 };
                for (uint32_t i = 0; i < r->n_frames && !s->maps_stale; i++)
                        if (!in_code(s, r->frames[i]))
                                s->maps_stale = true;   /* a library loaded since, maybe */
        }
        emit(s, &e);
        /* A negative value stops ring_buffer__consume(): the rest waits for the next turn of the loop. */
        return --s->budget_left == 0 ? -EAGAIN : 0;
}

static void read_counters(UprobeSource *s, MsHeapCounters *ret) {
        HeapBpfCounters c = {};
        uint32_t zero = 0;

        (void) bpf_map__lookup_elem(s->skel->maps.counters, &zero, sizeof(zero), &c, sizeof(c), 0);
        *ret = (MsHeapCounters) {
                .live_bytes = c.live_bytes > 0 ? (uint64_t) c.live_bytes : 0,
                .peak_bytes = c.peak_bytes,
                .allocs = c.allocs,
                .frees = c.frees,
                .alloc_bytes = c.alloc_bytes,
                .unknown_frees = c.unknown_frees,
                .lost_records = c.lost_ring + c.lost_table + s->bad_records,
        };
}

/* Reads what the ring holds (at most a budget of it unless all), and the counters. */
static void drain(UprobeSource *s, bool all) {
        int r;

        s->now_nsec = now_nsec(CLOCK_MONOTONIC);
        if (s->ring) {
                do {
                        s->budget_left = all ? UINT64_MAX : UPROBE_DRAIN_BUDGET;
                        r = ring_buffer__consume(s->ring);
                } while (all && r > 0);
                if (!all && r == -EAGAIN)
                        source_drain_later(s->drain_later);
        }
        if (s->maps_stale && now_usec(CLOCK_MONOTONIC) - s->maps_read_usec >= UPROBE_MAPS_REFRESH_USEC)
                send_maps(s, MS_EVENT_HEAP_MAPS, NULL, NULL);

        MsHeapCounters now;
        read_counters(s, &now);
        MsHeapPeak peak;
        if (heap_progress_counters(&s->progress, &now, &peak)) {
                MsEvent e = heap_event(s, MS_EVENT_HEAP_STATE);
                e.heap.counters = &now;
                e.heap.peak = peak;
                emit(s, &e);
        }
}

static void detach(UprobeSource *s) {
        /* One moment for all: the probes count nothing more, then go one by one. */
        if (s->skel && s->skel->bss)
                __atomic_store_n(&s->skel->bss->stopped, 1, __ATOMIC_RELEASE);
        for (size_t i = 0; i < s->n_links; i++)
                bpf_link__destroy(s->links[i]);
        s->n_links = 0;
}

/* The recording is over: the uprobes go first (nothing more comes), then what they wrote is read. */
static void end_heap(UprobeSource *s, MsHeapEnd why) {
        if (s->ended)
                return;
        detach(s);
        drain(s, true);
        s->ended = true;
        MsEvent e = heap_event(s, MS_EVENT_HEAP_END);
        e.heap.end = why;
        emit(s, &e);
        if (why == MS_HEAP_END_EXIT) {
                MsEvent x = heap_event(s, MS_EVENT_TASK_EXIT);
                emit(s, &x);
        }
        s->ring_io = sd_event_source_disable_unref(s->ring_io);
        s->poll_timer = sd_event_source_disable_unref(s->poll_timer);
        s->exit_watch = sd_event_source_disable_unref(s->exit_watch);
        log_info("Stopped recording the heap of process %" PRIi32 " (%s).", s->pid,
                 why == MS_HEAP_END_EXIT ? "it exited" : "asked to");
}

static int on_ring(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        UprobeSource *s = userdata;

        s->wakeups++;
        drain(s, false);
        return 0;
}

static int on_drain_later(sd_event_source *es, void *userdata) {
        drain(userdata, false);
        return 0;
}

static int on_poll(sd_event_source *es, uint64_t usec, void *userdata) {
        UprobeSource *s = userdata;

        drain(s, false);
        (void) sd_event_source_set_time(es, usec + UPROBE_POLL_USEC);
        return sd_event_source_set_enabled(es, SD_EVENT_ON);
}

static int on_process_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        end_heap(userdata, MS_HEAP_END_EXIT);
        return 0;
}

/* ---- Attaching ------------------------------------------------------------------------------------------ */

typedef enum Probe {
        PROBE_ALLOC_RETURN,
        PROBE_FREE,
        PROBE_REALLOC,
        PROBE_REALLOC_RETURN,
        PROBE_POSIX_MEMALIGN,
        PROBE_POSIX_MEMALIGN_RETURN,
} Probe;

/* Where each program goes. Functions that are one (aligned_alloc is memalign in glibc 2.36) get it once. */
static const struct {
        const char *function;
        Probe probe;
        bool required;
} probes[] = {
        { "malloc", PROBE_ALLOC_RETURN, true },
        { "calloc", PROBE_ALLOC_RETURN, true },
        { "realloc", PROBE_REALLOC, true },
        { "realloc", PROBE_REALLOC_RETURN, true },
        { "free", PROBE_FREE, true },
        { "memalign", PROBE_ALLOC_RETURN, false },
        { "aligned_alloc", PROBE_ALLOC_RETURN, false },
        { "valloc", PROBE_ALLOC_RETURN, false },
        { "pvalloc", PROBE_ALLOC_RETURN, false },
        { "posix_memalign", PROBE_POSIX_MEMALIGN, false },
        { "posix_memalign", PROBE_POSIX_MEMALIGN_RETURN, false },
};

static struct bpf_program *probe_program(UprobeSource *s, Probe p) {
        switch (p) {
        case PROBE_ALLOC_RETURN:
                return s->skel->progs.alloc_return;
        case PROBE_FREE:
                return s->skel->progs.free_entry;
        case PROBE_REALLOC:
                return s->skel->progs.realloc_entry;
        case PROBE_REALLOC_RETURN:
                return s->skel->progs.realloc_return;
        case PROBE_POSIX_MEMALIGN:
                return s->skel->progs.posix_memalign_entry;
        default:
                return s->skel->progs.posix_memalign_return;
        }
}

static bool probe_is_return(Probe p) {
        return p == PROBE_ALLOC_RETURN || p == PROBE_REALLOC_RETURN || p == PROBE_POSIX_MEMALIGN_RETURN;
}

static int attach(UprobeSource *s) {
        const char *names[ELEMENTSOF(probes)];
        uint64_t offsets[ELEMENTSOF(probes)];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                names[i] = probes[i].function;
        r = function_offsets(s->libc, names, ELEMENTSOF(probes), offsets);
        if (r < 0)
                return log_error_errno(r, "Failed to read the symbols of %s: %m", s->libc);
        for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
                bool twice = false;
                if (offsets[i] == 0) {
                        if (probes[i].required)
                                return log_error_errno(ENOENT, "%s has no %s: not glibc's allocator.", s->libc,
                                                       names[i]);
                        continue;
                }
                for (size_t j = 0; j < i; j++)
                        twice |= offsets[j] == offsets[i] && probes[j].probe == probes[i].probe;
                if (twice)
                        continue;
                LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = probe_is_return(probes[i].probe));
                struct bpf_link *link = bpf_program__attach_uprobe_opts(probe_program(s, probes[i].probe), s->pid,
                                                                        s->libc, offsets[i], &opts);
                if (!link)
                        return log_error_errno(errno, "Failed to attach a uprobe to %s in %s: %m", names[i],
                                               s->libc);
                s->links[s->n_links++] = link;
        }
        return 0;
}

/* Bytes per sampled stack as the program draws them (see sample_gap() there). */
static void sample_setup(struct heap_uprobe_bpf *skel, uint64_t interval) {
        skel->rodata->sample_every = interval <= 1;
        skel->rodata->sample_scale = interval <= 1 ? 0 : (uint64_t) llround((double) interval * M_LN2);
        for (unsigned i = 0; i < HEAP_BPF_LOG2_STEPS; i++)
                skel->rodata->log2_fraction[i] = (uint32_t) llround(ldexp(log2(1.0 + (i + 0.5) / HEAP_BPF_LOG2_STEPS),
                                                                     HEAP_BPF_LOG2_SHIFT));
}

static int uprobe_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        UprobeSource *s = (UprobeSource *) es;
        char comm[16], cmdline_buf[PROC_CMDLINE_MAX];
        int r;

        s->event = event;
        s->sink = *sink;
        r = attach(s);
        if (r < 0)
                return r;
        s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
        if (!s->ring)
                return log_error_errno(errno, "Failed to read the heap uprobes' ring buffer: %m");
        r = sd_event_add_io(event, &s->ring_io, ring_buffer__epoll_fd(s->ring), EPOLLIN, on_ring, s);
        if (r >= 0)
                r = sd_event_add_io(event, &s->exit_watch, s->pidfd, EPOLLIN, on_process_exit, s);
        if (r >= 0)
                r = sd_event_add_time_relative(event, &s->poll_timer, CLOCK_MONOTONIC, UPROBE_POLL_USEC, 10000,
                                               on_poll, s);
        if (r >= 0)
                r = source_add_drain_later(event, &s->drain_later, on_drain_later, s,
                                           "heap-uprobe-drain");
        if (r < 0)
                return log_error_errno(r, "Failed to watch the heap uprobes: %m");
        (void) sd_event_source_set_description(s->ring_io, "heap-uprobe-ring");
        (void) sd_event_source_set_description(s->exit_watch, "heap-uprobe-exit");
        (void) sd_event_source_set_description(s->poll_timer, "heap-uprobe-poll");

        s->now_nsec = now_nsec(CLOCK_MONOTONIC);
        proc_read_comm(PROC_ROOT_DEFAULT, s->pid, comm);
        const char *cmdline = proc_read_cmdline(PROC_ROOT_DEFAULT, s->pid, cmdline_buf, sizeof(cmdline_buf));
        MsEvent task = heap_event(s, MS_EVENT_TASK_NEW);
        task.task.name = comm;
        task.task.cmdline = cmdline;
        emit(s, &task);
        send_maps(s, MS_EVENT_HEAP_START, comm, cmdline);
        log_info("Recording the heap of process %" PRIi32 " (%s) through uprobes on %s, a stack per %" PRIu64
                 " bytes.", s->pid, comm, s->libc, s->sample_interval);
        return 0;
}

static int uprobe_source_flush(EventSource *es) {
        UprobeSource *s = (UprobeSource *) es;

        if (!s->ended && s->skel)
                drain(s, true);
        return 0;
}

static int uprobe_source_heap_stop(EventSource *es, int32_t pid) {
        UprobeSource *s = (UprobeSource *) es;

        if (pid != s->pid)
                return -ESRCH;
        end_heap(s, MS_HEAP_END_CLOSED);
        return 0;
}

static void uprobe_source_get_stats(EventSource *es, EventSourceStats *ret) {
        UprobeSource *s = (UprobeSource *) es;
        HeapBpfCounters c = {};
        uint32_t zero = 0;

        if (s->skel)
                (void) bpf_map__lookup_elem(s->skel->maps.counters, &zero, sizeof(zero), &c, sizeof(c), 0);
        s->losses[0] = (EventSourceLoss) { .reason = "ringFull", .count = c.lost_ring };
        s->losses[1] = (EventSourceLoss) { .reason = "heapTable", .count = c.lost_table };
        s->losses[2] = (EventSourceLoss) { .reason = "badRecord", .count = s->bad_records };
        *ret = (EventSourceStats) {
                .records = s->records,
                .lost_records = c.lost_ring + c.lost_table + s->bad_records,
                .wakeups = s->wakeups,
                .losses = s->losses,
                .n_losses = ELEMENTSOF(s->losses),
                .stack_sample_interval = 1,
        };
}

static UprobeSource *uprobe_source_free(UprobeSource *s) {
        if (!s)
                return NULL;
        /* No events any more: the core may be gone already. Links first: the process is left alone. */
        detach(s);
        sd_event_source_disable_unref(s->ring_io);
        sd_event_source_disable_unref(s->exit_watch);
        sd_event_source_disable_unref(s->poll_timer);
        sd_event_source_disable_unref(s->drain_later);
        ring_buffer__free(s->ring);
        heap_uprobe_bpf__destroy(s->skel);
        safe_close(s->pidfd);
        free(s->code);
        free(s->libc);
        free(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(UprobeSource *, uprobe_source_free);

static void uprobe_source_free_op(EventSource *es) {
        uprobe_source_free((UprobeSource *) es);
}

/* User frames only: no kernel symbol table to read (an empty one). */
static const char *uprobe_source_symbols(EventSource *es) {
        return "";
}

static const EventSourceOps uprobe_source_ops = {
        .name = "heap-uprobe",
        .start = uprobe_source_start,
        .flush = uprobe_source_flush,
        .get_stats = uprobe_source_get_stats,
        .free = uprobe_source_free_op,
        .symbols = uprobe_source_symbols,
        .heap_stop = uprobe_source_heap_stop,
};

static int uprobe_source_new(const SourceOptions *options, EventSource **ret) {
        _cleanup_(uprobe_source_freep) UprobeSource *s = NULL;
        _cleanup_free_ char *maps = NULL, *libc = NULL;
        uint64_t pid;
        int r;

        assert(options);
        assert(ret);

        if (!options->input || parse_uint64(options->input, 1, INT32_MAX, &pid) < 0)
                return log_error_errno(EINVAL, "The heap-uprobe source records the process --source-input=PID names.");
        s = calloc(1, sizeof(UprobeSource));
        if (!s)
                return log_oom();
        s->source.ops = &uprobe_source_ops;
        s->pid = (int32_t) pid;
        s->pidfd = -EBADF;
        s->sample_interval = options->heap_sample_interval ?: HEAP_SAMPLE_INTERVAL_DEFAULT;

        s->pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
        if (s->pidfd < 0)
                return log_error_errno(errno, "Cannot record process %" PRIi32 ": %m", s->pid);
        r = read_maps(s->pid, &maps, &s->code, &s->n_code, &libc);
        if (r == -ENOENT)
                return log_error_errno(r, "Process %" PRIi32 " maps no libc.so.6 (a static program, or another "
                                       "libc): its allocator cannot be probed.", s->pid);
        if (r < 0)
                return log_error_errno(r, "Cannot read the mappings of process %" PRIi32 ": %m", s->pid);
        /* The file as the process sees it, in its own mount namespace. */
        if (asprintf(&s->libc, "/proc/%" PRIi32 "/root%s", s->pid, libc) < 0) {
                s->libc = NULL;
                return log_oom();
        }

        s->skel = heap_uprobe_bpf__open();
        if (!s->skel)
                return log_error_errno(errno, "Failed to open the heap uprobes' BPF program: %m");
        sample_setup(s->skel, s->sample_interval);
        r = bpf_map__set_max_entries(s->skel->maps.events, UPROBE_RING_BYTES);
        if (r >= 0)
                r = bpf_map__set_max_entries(s->skel->maps.blocks, UPROBE_BLOCKS_MAX);
        if (r < 0)
                return log_error_errno(r, "Failed to size the heap uprobes' maps: %m");
        r = heap_uprobe_bpf__load(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to load the heap uprobes' BPF program (root, or CAP_BPF and "
                                       "CAP_PERFMON, is needed): %m");
        *ret = &TAKE_PTR(s)->source;
        return 0;
}

const SourceType heap_uprobe_source_type = {
        .name = "heap-uprobe",
        .description = "the user-space heap of the running process --source-input=PID, through eBPF uprobes "
                       "on its libc's allocator (memstrackctl record --pid)",
        .automatic = false,
        .new = uprobe_source_new,
};
