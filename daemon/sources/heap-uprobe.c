/* SPDX-License-Identifier: MIT */

/*
 * The heap-uprobe source: the user-space heap of one running process, without a restart (memstrackctl
 * record --pid). It attaches its BPF program (bpf/heap-uprobe.bpf.c) as uprobes to the malloc family of
 * the allocator the process calls, as memleak -p attaches them to libc, and turns what they report into
 * the heap events the preloaded library's source makes: START with the process's maps, ALLOC/FREE for the
 * sampled blocks (with their user stacks), STATE with the exact counters, END. The recording ends when the
 * process exits (a pidfd says so), when it is asked to (heap_stop: the HeapStop method) or when the daemon
 * stops; the uprobes are detached first, so the process runs on untouched, and BPF links die with the
 * daemon, so nothing stays attached if it is killed.
 *
 * The allocator is the object that provides malloc in the process, found as the dynamic loader finds it:
 * the first of the process's objects in its link map (the program, the preloaded libraries, the needed
 * ones) that defines it, the program's own symbol table included (an allocator linked statically into
 * it, a static program). glibc's, jemalloc, tcmalloc and mimalloc are known; each gets the functions of
 * its API that it defines, C++'s operators new wherever they are (libstdc++'s too: its frames have no
 * frame pointers, so the call site is taken at their return).
 *
 * --source-input=PID names the process; --heap-sample-interval its sampling (bytes per stack, 1: every
 * call). The only libbpf user besides ebpf.c; the objects' symbols are read from their ELF files here.
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

#include "array-util.h"
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
#define UPROBE_LINKS_MAX 256u
#define UPROBE_OBJECTS_MAX 4096u                        /* objects of a link map walked */

typedef struct Range {
        uint64_t start, end;
} Range;

typedef struct UprobeSource {
        EventSource source;
        int32_t pid;
        uint64_t sample_interval;
        char *allocator_path;           /* the object providing malloc, through /proc/PID/root */
        const char *allocator_name;     /* glibc, jemalloc, tcmalloc, mimalloc */
        uint32_t allocator;             /* HEAP_BPF_GLIBC and its kin */
        struct heap_uprobe_bpf *skel;
        struct bpf_link *links[UPROBE_LINKS_MAX];
        char **objects;                 /* the process's objects in lookup order, through /proc/PID/root */
        size_t n_objects;
        struct Placement *placements;   /* where each of probes[] goes */
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

/* /proc/PID/maps and its executable mappings. */
static int read_maps(int32_t pid, char **ret_text, Range **ret_code, size_t *ret_n_code) {
        _cleanup_free_ char *text = NULL;
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
                if (ARRAY_GROW_ONE(code, allocated, n, 64) < 0)
                        return -ENOMEM;
                code[n++] = (Range) { m.start, m.end };
        }
        *ret_text = TAKE_PTR(text);
        *ret_code = TAKE_PTR(code);
        *ret_n_code = n;
        return 0;
}

/* The file mapped at address in maps, as the process sees it. */
static int maps_path_at(const char *maps, uint64_t address, char **ret) {
        MapsLine m;
        int r;

        for (const char *cursor = maps; (r = maps_next(&cursor, &m)) != 0;)
                if (r > 0 && address >= m.start && address < m.end && maps_line_is_file(&m)) {
                        *ret = strndup(m.path, m.path_len);
                        return *ret ? 0 : -ENOMEM;
                }
        return -ENOENT;
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

/* The file offsets of the functions an ELF file defines (what a uprobe is placed at), by name: 0 for a
 * name it does not define. The dynamic symbol table, and with symtab the full one too (a program's own
 * functions, which a static program has only there). */
static int function_offsets(const char *path, const char *const names[], size_t n, bool symtab, uint64_t ret[]) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ Elf64_Shdr *sections = NULL;
        _cleanup_free_ Elf64_Phdr *segments = NULL;
        Elf64_Ehdr eh;

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
        for (size_t t = 0; t < eh.e_shnum; t++) {
                const Elf64_Shdr *sh = &sections[t];
                if ((sh->sh_type != SHT_DYNSYM && (!symtab || sh->sh_type != SHT_SYMTAB)) ||
                    sh->sh_link >= eh.e_shnum || sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size > (256u << 20) ||
                    sections[sh->sh_link].sh_size > (256u << 20))
                        continue;
                const Elf64_Shdr *str = &sections[sh->sh_link];
                size_t n_symbols = sh->sh_size / sizeof(Elf64_Sym), strings_size = str->sh_size;
                _cleanup_free_ Elf64_Sym *symbols = malloc(MAX(sh->sh_size, (uint64_t) 1));
                _cleanup_free_ char *strings = malloc(strings_size + 1);
                if (!symbols || !strings)
                        return -ENOMEM;
                if (pread(fd, symbols, sh->sh_size, (off_t) sh->sh_offset) != (ssize_t) sh->sh_size ||
                    pread(fd, strings, strings_size, (off_t) str->sh_offset) != (ssize_t) strings_size)
                        return -ENOEXEC;
                strings[strings_size] = '\0';
                for (size_t k = 0; k < n_symbols; k++) {
                        const Elf64_Sym *sym = &symbols[k];
                        if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
                            ELF64_ST_BIND(sym->st_info) == STB_LOCAL || sym->st_value == 0 ||
                            sym->st_name >= strings_size)
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
        }
        return 0;
}

static int read_memory(int fd, uint64_t address, void *buf, size_t size) {
        ssize_t n = pread(fd, buf, size, (off_t) address);
        if (n < 0)
                return negative_errno();
        return (size_t) n == size ? 0 : -EIO;
}

/* The objects of process pid in the order its dynamic loader looks a symbol up in them, each through
 * /proc/PID/root: the program (at exe, as the process sees it) first, then its loader's link map (the
 * preloaded libraries, the needed ones breadth first, then those loaded later), read from its memory
 * (the program's dynamic section's DT_DEBUG is the loader's r_debug). A static program: itself alone. */
static int process_objects(int32_t pid, const char *maps, char ***ret, size_t *ret_n) {
        _cleanup_free_ char *auxv = NULL, *exe = NULL;
        _cleanup_close_ int mem = -EBADF;
        char path[64];
        size_t auxv_size, n = 0;
        uint64_t phdr = 0, phnum = 0, bias = 0, dynamic = 0, r_debug = 0, map = 0;
        char **objects = NULL;
        int r;

        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32 "/auxv", pid);
        r = read_file_full(path, 4096, &auxv, &auxv_size);
        if (r < 0)
                return r;
        for (size_t i = 0; i + 16 <= auxv_size; i += 16) {
                uint64_t type, value;
                memcpy(&type, auxv + i, 8);
                memcpy(&value, auxv + i + 8, 8);
                if (type == AT_PHDR)
                        phdr = value;
                else if (type == AT_PHNUM)
                        phnum = value;
        }
        r = maps_path_at(maps, phdr, &exe);
        if (r < 0)
                return r;
        objects = calloc(UPROBE_OBJECTS_MAX, sizeof(char *));
        if (!objects)
                return -ENOMEM;
        if (asprintf(&objects[n++], "/proc/%" PRIi32 "/root%s", pid, exe) < 0) {
                free(objects);
                return -ENOMEM;
        }
        *ret = objects;
        *ret_n = n;

        /* What follows only adds to the list: a program without a link map is alone in it. */
        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32 "/mem", pid);
        mem = open(path, O_RDONLY | O_CLOEXEC);
        if (mem < 0 || phnum == 0 || phnum > 256)
                return 0;
        Elf64_Phdr ph[256];
        if (read_memory(mem, phdr, ph, phnum * sizeof(Elf64_Phdr)) < 0)
                return 0;
        for (size_t i = 0; i < phnum; i++)
                if (ph[i].p_type == PT_PHDR)
                        bias = phdr - ph[i].p_vaddr;
        for (size_t i = 0; i < phnum; i++)
                if (ph[i].p_type == PT_DYNAMIC)
                        dynamic = bias + ph[i].p_vaddr;
        for (size_t i = 0; dynamic && i < 1024 && r_debug == 0; i++) {
                Elf64_Dyn d;
                if (read_memory(mem, dynamic + i * sizeof(d), &d, sizeof(d)) < 0 || d.d_tag == DT_NULL)
                        break;
                if (d.d_tag == DT_DEBUG)
                        r_debug = d.d_un.d_ptr;
        }
        /* struct r_debug { int r_version; struct link_map *r_map; ... }; struct link_map { l_addr, l_name,
         * l_ld, l_next, l_prev }: the program's entry first (no name), then the others. */
        if (r_debug == 0 || read_memory(mem, r_debug + 8, &map, sizeof(map)) < 0)
                return 0;
        for (size_t k = 0; map != 0 && k < UPROBE_OBJECTS_MAX && n < UPROBE_OBJECTS_MAX; k++) {
                uint64_t entry[4];
                char name[PATH_MAX];
                if (read_memory(mem, map, entry, sizeof(entry)) < 0)
                        break;
                map = entry[3];
                ssize_t got = entry[1] ? pread(mem, name, sizeof(name) - 1, (off_t) entry[1]) : -1;
                if (got <= 0)
                        continue;
                name[got] = '\0';
                if (name[0] != '/' || strlen(name) == (size_t) got)
                        continue;       /* the program, the vDSO, or a name cut short */
                if (asprintf(&objects[n], "/proc/%" PRIi32 "/root%s", pid, name) < 0)
                        return -ENOMEM;
                *ret_n = ++n;
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
        if (read_maps(s->pid, &text, &code, &n_code) >= 0) {
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

#define ALLOC(size, count, align) HEAP_BPF_COOKIE(HEAP_BPF_CALL_ALLOC, size, count, align)
#define FREE HEAP_BPF_COOKIE(HEAP_BPF_CALL_FREE, 0, 0, 0)
#define REALLOC(size, count, align) HEAP_BPF_COOKIE(HEAP_BPF_CALL_REALLOC, size, count, align)

/* The functions probed where the allocator defines them, and what each is (its cookie: the kind of call and
 * its arguments, 1-based). The first of several names for one function (mimalloc's malloc is mi_malloc)
 * gets it. new: C++'s operators new, probed wherever they are (libstdc++'s call malloc). */
static const struct {
        const char *function;
        uint64_t cookie;
        bool new;
} probes[] = {
        { "malloc", ALLOC(1, 0, 0), false },
        { "calloc", ALLOC(2, 1, 0), false },
        { "realloc", REALLOC(2, 0, 0), false },
        { "free", FREE, false },
        { "memalign", ALLOC(2, 0, 1), false },
        { "aligned_alloc", ALLOC(2, 0, 1), false },
        { "posix_memalign", HEAP_BPF_COOKIE(HEAP_BPF_CALL_POSIX_MEMALIGN, 3, 0, 2), false },
        { "valloc", ALLOC(1, 0, 0) | HEAP_BPF_ALIGN_PAGE, false },
        { "pvalloc", ALLOC(1, 0, 0) | HEAP_BPF_ALIGN_PAGE | HEAP_BPF_SIZE_PAGES, false },
        { "free_sized", FREE, false },
        { "free_aligned_sized", FREE, false },
        { "_Znwm", ALLOC(1, 0, 0), true },
        { "_Znam", ALLOC(1, 0, 0), true },
        { "_ZnwmRKSt9nothrow_t", ALLOC(1, 0, 0), true },
        { "_ZnamRKSt9nothrow_t", ALLOC(1, 0, 0), true },
        { "_ZnwmSt11align_val_t", ALLOC(1, 0, 2), true },
        { "_ZnamSt11align_val_t", ALLOC(1, 0, 2), true },
        { "_ZnwmSt11align_val_tRKSt9nothrow_t", ALLOC(1, 0, 2), true },
        { "_ZnamSt11align_val_tRKSt9nothrow_t", ALLOC(1, 0, 2), true },
        { "_ZdlPv", FREE, false },
        { "_ZdaPv", FREE, false },
        { "_ZdlPvm", FREE, false },
        { "_ZdaPvm", FREE, false },
        { "_ZdlPvSt11align_val_t", FREE, false },
        { "_ZdaPvSt11align_val_t", FREE, false },
        { "_ZdlPvmSt11align_val_t", FREE, false },
        { "_ZdaPvmSt11align_val_t", FREE, false },
        { "_ZdlPvRKSt9nothrow_t", FREE, false },
        { "_ZdaPvRKSt9nothrow_t", FREE, false },
        /* jemalloc */
        { "mallocx", ALLOC(1, 0, 2) | HEAP_BPF_ALIGN_FLAGS, false },
        { "rallocx", REALLOC(2, 0, 3) | HEAP_BPF_ALIGN_FLAGS, false },
        { "xallocx", HEAP_BPF_COOKIE(HEAP_BPF_CALL_IN_PLACE, 0, 0, 0), false },
        { "sdallocx", FREE, false },
        { "dallocx", FREE, false },
        /* tcmalloc */
        { "tc_malloc", ALLOC(1, 0, 0), false },
        { "tc_calloc", ALLOC(2, 1, 0), false },
        { "tc_realloc", REALLOC(2, 0, 0), false },
        { "tc_free", FREE, false },
        { "tc_free_sized", FREE, false },
        { "tc_memalign", ALLOC(2, 0, 1), false },
        { "tc_posix_memalign", HEAP_BPF_COOKIE(HEAP_BPF_CALL_POSIX_MEMALIGN, 3, 0, 2), false },
        { "tc_valloc", ALLOC(1, 0, 0) | HEAP_BPF_ALIGN_PAGE, false },
        { "tc_pvalloc", ALLOC(1, 0, 0) | HEAP_BPF_ALIGN_PAGE | HEAP_BPF_SIZE_PAGES, false },
        { "tc_new", ALLOC(1, 0, 0), false },
        { "tc_newarray", ALLOC(1, 0, 0), false },
        { "tc_new_nothrow", ALLOC(1, 0, 0), false },
        { "tc_newarray_nothrow", ALLOC(1, 0, 0), false },
        { "tc_delete", FREE, false },
        { "tc_deletearray", FREE, false },
        { "tc_delete_sized", FREE, false },
        { "tc_deletearray_sized", FREE, false },
        /* mimalloc */
        { "mi_malloc", ALLOC(1, 0, 0), false },
        { "mi_zalloc", ALLOC(1, 0, 0), false },
        { "mi_calloc", ALLOC(2, 1, 0), false },
        { "mi_mallocn", ALLOC(2, 1, 0), false },
        { "mi_realloc", REALLOC(2, 0, 0), false },
        { "mi_reallocn", REALLOC(3, 2, 0), false },
        { "mi_reallocf", REALLOC(2, 0, 0) | HEAP_BPF_FREES_ON_FAILURE, false },
        { "mi_strdup", ALLOC(0, 0, 0), false },
        { "mi_strndup", ALLOC(0, 0, 0), false },
        { "mi_malloc_aligned", ALLOC(1, 0, 2), false },
        { "mi_zalloc_aligned", ALLOC(1, 0, 2), false },
        { "mi_calloc_aligned", ALLOC(2, 1, 3), false },
        { "mi_realloc_aligned", REALLOC(2, 0, 3), false },
        { "mi_free", FREE, false },
        { "mi_free_size", FREE, false },
        { "mi_free_aligned", FREE, false },
        { "mi_free_size_aligned", FREE, false },
};

/* Which allocator an object's functions make it, from the names only it defines (all three others define
 * __libc_malloc too, glibc's alias of malloc). */
static const struct {
        const char *marker;
        uint32_t allocator;
        const char *name;
} allocators[] = {
        { "mallocx", HEAP_BPF_JEMALLOC, "jemalloc" },
        { "tc_malloc", HEAP_BPF_TCMALLOC, "tcmalloc" },
        { "mi_malloc", HEAP_BPF_MIMALLOC, "mimalloc" },
        { "__libc_malloc", HEAP_BPF_GLIBC, "glibc" },
};

/* Where each probe goes: its object (an index into s->objects) and offset there, none found: 0. */
typedef struct Placement {
        size_t object;
        uint64_t offset;
} Placement;

/* The first object in lookup order that defines each probe's function; sets the allocator from the one
 * that defines malloc. */
static int place_probes(UprobeSource *s) {
        const char *names[ELEMENTSOF(probes) + ELEMENTSOF(allocators)];
        uint64_t offsets[ELEMENTSOF(names)], markers[ELEMENTSOF(allocators)] = {};
        Placement *ret;
        int r;

        ret = s->placements = calloc(ELEMENTSOF(probes), sizeof(Placement));
        if (!ret)
                return log_oom();
        for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                names[i] = probes[i].function;
        for (size_t i = 0; i < ELEMENTSOF(allocators); i++)
                names[ELEMENTSOF(probes) + i] = allocators[i].marker;
        for (size_t o = 0; o < s->n_objects; o++) {
                /* The program's own functions bind its own calls, exported or not. */
                r = function_offsets(s->objects[o], names, ELEMENTSOF(names), o == 0, offsets);
                if (r < 0) {
                        log_debug_errno(r, "Failed to read the symbols of %s, ignoring: %m", s->objects[o]);
                        continue;
                }
                for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                        if (ret[i].offset == 0 && offsets[i] != 0)
                                ret[i] = (Placement) { o, offsets[i] };
                if (ret[0].object == o && ret[0].offset != 0)
                        for (size_t i = 0; i < ELEMENTSOF(allocators); i++)
                                markers[i] = offsets[ELEMENTSOF(probes) + i];
        }
        if (ret[0].offset == 0)
                return log_error_errno(ENOENT, "Process %" PRIi32 " has no symbol for malloc in %s or the libraries it "
                                       "loaded (a static program without its symbol table): its allocator cannot "
                                       "be probed.", s->pid, s->objects[0]);
        s->allocator_path = strdup(s->objects[ret[0].object]);
        if (!s->allocator_path)
                return log_oom();
        for (size_t i = 0; i < ELEMENTSOF(allocators) && !s->allocator_name; i++)
                if (markers[i] != 0) {
                        s->allocator = allocators[i].allocator;
                        s->allocator_name = allocators[i].name;
                }
        if (!s->allocator_name && strstr(s->allocator_path, "/libc.so.6")) {
                s->allocator = HEAP_BPF_GLIBC;
                s->allocator_name = "glibc";
        }
        if (!s->allocator_name)
                return log_error_errno(EPROTONOSUPPORT, "The malloc of process %" PRIi32 " is %s's, an allocator "
                                       "record --pid does not know the block sizes of (it knows glibc's, "
                                       "jemalloc, tcmalloc and mimalloc).", s->pid, s->allocator_path);
        return 0;
}

static int attach_one(UprobeSource *s, const char *path, uint64_t offset, uint64_t cookie, bool retprobe,
                const char *function) {
        if (s->n_links >= UPROBE_LINKS_MAX)
                return log_error_errno(E2BIG, "Too many uprobes for process %" PRIi32 ".", s->pid);
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
        struct bpf_link *link = bpf_program__attach_uprobe_opts(retprobe ? s->skel->progs.call_return :
                                                                           s->skel->progs.call_entry,
                                                                s->pid, path, offset, &opts);
        if (!link)
                return log_error_errno(errno, "Failed to attach a uprobe to %s in %s: %m", function, path);
        s->links[s->n_links++] = link;
        return 0;
}

/* Probes every function of the allocator's (and C++'s operators new). glibc's malloc family is probed at its
 * return only, its sizes read from the blocks; what needs its arguments or may call another probed
 * function (and under another allocator, everything) at its entry too. A free is probed at its entry,
 * and under another allocator at its return too, so that the free it may call inside is its own. */
static int attach(UprobeSource *s) {
        const Placement *at = s->placements;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
                bool twice = false;
                if (at[i].offset == 0 || (at[i].object != at[0].object && !probes[i].new))
                        continue;
                for (size_t j = 0; j < i; j++)
                        twice |= at[j].offset == at[i].offset && at[j].object == at[i].object;
                if (twice)
                        continue;
                uint64_t cookie = probes[i].cookie, kind = cookie & 0xff;
                if (s->allocator != HEAP_BPF_GLIBC || probes[i].new || kind == HEAP_BPF_CALL_REALLOC ||
                    kind == HEAP_BPF_CALL_POSIX_MEMALIGN || kind == HEAP_BPF_CALL_IN_PLACE)
                        cookie |= HEAP_BPF_HAS_ENTRY;
                const char *path = s->objects[at[i].object];
                if (kind == HEAP_BPF_CALL_FREE || (cookie & HEAP_BPF_HAS_ENTRY)) {
                        r = attach_one(s, path, at[i].offset, cookie, false, probes[i].function);
                        if (r < 0)
                                return r;
                }
                if (kind != HEAP_BPF_CALL_FREE || (cookie & HEAP_BPF_HAS_ENTRY)) {
                        r = attach_one(s, path, at[i].offset, cookie, true, probes[i].function);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* tcmalloc's (gperftools 2) size classes, as its SizeMap::Init() makes them, by class index (its
 * ClassIndex(): 8-byte steps to 1 KiB, 128-byte steps above): sizes from 8 bytes to 256 KiB in steps of
 * the alignment they have (8, 16 from 16 bytes, an eighth of the power of two below them from 128), each
 * with enough 8 KiB pages per span that less than an eighth is left over and a quarter of a transfer
 * batch (64 KiB of blocks, 2 to transfer_objects of them) fits, merged into the class before when that
 * leaves the blocks per span the same. */
static void tcmalloc_classes(uint32_t transfer_objects, uint32_t table[static HEAP_BPF_TC_CLASS_INDEXES]) {
        uint32_t class_bytes[256], class_pages[256];
        size_t n = 1, alignment = 8;

        for (size_t size = 8; size <= HEAP_BPF_TC_SMALL_MAX; size += alignment) {
                alignment = size >= 128 ? (UINT64_C(1) << (63 - __builtin_clzll(size))) / 8 : size >= 16 ? 16 : 8;
                alignment = MIN(alignment, (size_t) HEAP_BPF_TC_PAGE_BYTES);
                uint64_t move = MIN(MAX((uint64_t) (65536.0 / (double) size), (uint64_t) 2), (uint64_t) transfer_objects) / 4;
                uint64_t span = 0;
                do {
                        span += HEAP_BPF_TC_PAGE_BYTES;
                        while (span % size > span / 8)
                                span += HEAP_BPF_TC_PAGE_BYTES;
                } while (span / size < move);
                uint32_t pages = (uint32_t) (span / HEAP_BPF_TC_PAGE_BYTES);
                if (n > 1 && pages == class_pages[n - 1] &&
                    (uint64_t) pages * HEAP_BPF_TC_PAGE_BYTES / size ==
                            (uint64_t) class_pages[n - 1] * HEAP_BPF_TC_PAGE_BYTES / class_bytes[n - 1]) {
                        class_bytes[n - 1] = (uint32_t) size;
                        continue;
                }
                if (n == ELEMENTSOF(class_bytes))
                        break;
                class_pages[n] = pages;
                class_bytes[n++] = (uint32_t) size;
        }
        size_t next = 0;
        for (size_t c = 1; c < n; c++) {
                for (size_t size = next; size <= class_bytes[c]; size += 8) {
                        size_t index = size <= 1024 ? (size + 7) >> 3 : (size + 127 + (120 << 7)) >> 7;
                        if (index < HEAP_BPF_TC_CLASS_INDEXES)
                                table[index] = class_bytes[c];
                }
                next = class_bytes[c] + 8;
        }
}

/* tcmalloc's transfer batch as the process set it (TCMALLOC_TRANSFER_NUM_OBJ in its environment). */
static uint32_t tcmalloc_transfer_objects(int32_t pid) {
        _cleanup_free_ char *env_text = NULL;
        char path[64];
        size_t size;
        uint64_t v;

        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32 "/environ", pid);
        if (read_file_full(path, UPROBE_MAPS_MAX, &env_text, &size) < 0)
                return 32;
        for (size_t at = 0; at < size; at += strlen(env_text + at) + 1)
                if (strncmp(env_text + at, "TCMALLOC_TRANSFER_NUM_OBJ=", 26) == 0 &&
                    parse_uint64(env_text + at + 26, 2, 1 << 14, &v) >= 0)
                        return (uint32_t) v;
        return 32;
}

static int tcmalloc_setup(UprobeSource *s) {
        _cleanup_free_ uint32_t *table = calloc(HEAP_BPF_TC_CLASS_INDEXES, sizeof(uint32_t));

        if (!table)
                return -ENOMEM;
        tcmalloc_classes(tcmalloc_transfer_objects(s->pid), table);
        for (uint32_t i = 0; i < HEAP_BPF_TC_CLASS_INDEXES; i++) {
                int r = bpf_map__update_elem(s->skel->maps.tc_classes, &i, sizeof(i), &table[i], sizeof(table[i]), 0);
                if (r < 0)
                        return r;
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
        log_info("Recording the heap of process %" PRIi32 " (%s) through uprobes on %s (%s's allocator), a stack "
                 "per %" PRIu64 " bytes.", s->pid, comm, s->allocator_path, s->allocator_name, s->sample_interval);
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
        free(s->allocator_path);
        free(s->placements);
        for (size_t i = 0; i < s->n_objects; i++)
                free(s->objects[i]);
        free(s->objects);
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
        _cleanup_free_ char *maps = NULL;
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
        r = read_maps(s->pid, &maps, &s->code, &s->n_code);
        if (r >= 0)
                r = process_objects(s->pid, maps, &s->objects, &s->n_objects);
        if (r < 0)
                return log_error_errno(r, "Cannot read the mappings of process %" PRIi32 ": %m", s->pid);
        r = place_probes(s);
        if (r < 0)
                return r;

        s->skel = heap_uprobe_bpf__open();
        if (!s->skel)
                return log_error_errno(errno, "Failed to open the heap uprobes' BPF program: %m");
        sample_setup(s->skel, s->sample_interval);
        s->skel->rodata->allocator = s->allocator;
        r = bpf_map__set_max_entries(s->skel->maps.events, UPROBE_RING_BYTES);
        if (r >= 0)
                r = bpf_map__set_max_entries(s->skel->maps.blocks, UPROBE_BLOCKS_MAX);
        if (r < 0)
                return log_error_errno(r, "Failed to size the heap uprobes' maps: %m");
        r = heap_uprobe_bpf__load(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to load the heap uprobes' BPF program (root, or CAP_BPF and "
                                       "CAP_PERFMON, is needed): %m");
        if (s->allocator == HEAP_BPF_TCMALLOC) {
                r = tcmalloc_setup(s);
                if (r < 0)
                        return log_error_errno(r, "Failed to give the heap uprobes tcmalloc's size classes: %m");
        }
        *ret = &TAKE_PTR(s)->source;
        return 0;
}

const SourceType heap_uprobe_source_type = {
        .name = "heap-uprobe",
        .description = "the user-space heap of the running process --source-input=PID, through eBPF uprobes "
                       "on its allocator (memstrackctl record --pid)",
        .automatic = false,
        .new = uprobe_source_new,
};
