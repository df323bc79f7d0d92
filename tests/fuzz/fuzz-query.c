/* SPDX-License-Identifier: MIT */

/*
 * A stateful fuzzer of the query layer. Each input is a program: events fed to a core (the Accounting,
 * through its event sink, as a source feeds it) interleaved with calls of every io.memstrack method with
 * fuzzed parameters, made through a socket to a Service on an sd-event loop, so every call goes through
 * the server and the method's own parameter checks. The state changes under the queries as in the daemon:
 * processes and threads fork, rename and exit, and at most 0 to 3 exited records are kept, so records are
 * evicted and their slots reused all the time; pids are reused; modules load and unload (the symbol table
 * reloaded); cgroups appear, are named, merged and removed; pages come and go (stale blocks, sizes no kernel
 * makes), as do slab objects (NULL, 0 bytes) and aggregated samples; records are lost; Reset forgets all.
 * Between the calls the daemon's other readers run too: History ticks, the OOM log, the summary, the
 * snapshot document of --report.
 *
 * Input: two bytes choose the core's configuration (threads, per-process trees, slab, symbols, exited
 * records kept, stack node and slab object budgets), then each op is a byte and its operands (bytes past
 * the end read as 0). A program is deterministic: its clock is the events' and the Service's
 * (ServiceConfig.now_nsec), and no state survives an input but the symbol tables and the event loop.
 *
 * Oracles: the sanitizers (ASan, UBSan, LeakSanitizer); every call gets a final reply or an error of the
 * interface, never InternalError nor a dropped connection; after every op the core's sums agree
 * (accounting_check_sums(): tasks, modules, units, cgroups, stack trees, charge cells and the page table).
 *
 * Built as a libFuzzer target (-Dfuzzers=true) and, with fuzz-driver.c, as a unit test running a fixed
 * number of pseudo-random programs (test-fuzz-query).
 */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "accounting.h"
#include "document.h"
#include "history.h"
#include "ksym.h"
#include "log.h"
#include "macro.h"
#include "oomlog.h"
#include "query.h"
#include "service.h"
#include "slabinfo.h"
#include "summary.h"
#include "time-util.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OPS_MAX 3000                    /* per program: bounds the time of one input */
#define CALL_SLICE_USEC 100000U
#define CALL_SLICES_MAX 600U            /* a minute: a call never takes that long, it hangs */
#define REALTIME_OFFSET_NSEC (UINT64_C(1700000000) * NSEC_PER_SEC)

/* The symbol tables a program chooses from (and reloads between): none, the test table, the same after
 * xfs was unloaded and btrfs loaded at its addresses, and one whose addresses are hidden. */
static const char *const ksym_files[] = { NULL, "kallsyms-modules", "kallsyms-reloaded", "kallsyms-hidden" };

typedef struct Fixture {
        char dir[PATH_MAX];
        char socket[PATH_MAX + 16];
        char group[256];
        sd_event *event;
        Ksym *ksyms[ELEMENTSOF(ksym_files)];
        bool root;
        bool trace;                     /* $FUZZ_QUERY_TRACE: every op said */
        int log_level;
} Fixture;

typedef struct Program {
        const uint8_t *start, *p;
        size_t n;

        Fixture *f;
        Accounting *accounting;
        History *history;
        OomLog *oom;
        Service *service;
        VarlinkClient *client;
        sd_event_source *client_source;  /* wakes the loop when a reply comes, so no call waits a slice */
        uint64_t clock_nsec;            /* CLOCK_MONOTONIC of the events and the Service */
        uint64_t lost_per_cpu[2];
} Program;

static uint8_t next_byte(Program *p) {
        if (p->n == 0)
                return 0;
        p->n--;
        return *p->p++;
}

static size_t pick(Program *p, size_t n) {
        return next_byte(p) % n;
}

#define PICK(p, array) ((array)[pick(p, ELEMENTSOF(array))])

/* Setup: once per process. */

static void fixture_cleanup(void);
static Fixture fixture;

static Fixture *fixture_get(void) {
        static bool done;
        const char *tmp = getenv("TMPDIR") ?: "/tmp";
        struct group *gr;

        if (done)
                return &fixture;
        if (snprintf(fixture.dir, sizeof(fixture.dir), "%s/fuzz-query.XXXXXX", tmp) >= (int) sizeof(fixture.dir) ||
            !mkdtemp(fixture.dir)) {
                perror("mkdtemp");
                abort();
        }
        (void) snprintf(fixture.socket, sizeof(fixture.socket), "%s/io.memstrack", fixture.dir);
        /* Our own group may connect, whoever runs this. */
        gr = getgrgid(getgid());
        if (!gr) {
                /* As test-service: the Service lets in a group by name only. A test that cannot run says so. */
                fprintf(stderr, "SKIP: our group %u has no name, so the service cannot be told to let us in\n",
                        (unsigned) getgid());
                (void) rmdir(fixture.dir);
                exit(77);
        }
        (void) snprintf(fixture.group, sizeof(fixture.group), "%s", gr->gr_name);
        if (sd_event_new(&fixture.event) < 0)
                abort();
        for (size_t i = 0; i < ELEMENTSOF(ksym_files); i++) {
                char path[PATH_MAX];

                if (!ksym_files[i])
                        continue;
                (void) snprintf(path, sizeof(path), "%s/%s", FUZZ_DATA_DIR, ksym_files[i]);
                if (ksym_load(path, &fixture.ksyms[i]) < 0) {
                        fprintf(stderr, "cannot load %s\n", path);
                        abort();
                }
        }
        fixture.root = geteuid() == 0;
        fixture.trace = getenv("FUZZ_QUERY_TRACE");
        /* Errors only: the Service logs every Reset and SetLogLevel at notice. */
        log_set_max_level(LOG_ERR);
        fixture.log_level = LOG_ERR;
        (void) atexit(fixture_cleanup);
        done = true;
        return &fixture;
}

static void fixture_cleanup(void) {
        for (size_t i = 0; i < ELEMENTSOF(fixture.ksyms); i++)
                fixture.ksyms[i] = ksym_free(fixture.ksyms[i]);
        fixture.event = sd_event_unref(fixture.event);
        (void) rmdir(fixture.dir);
}

/* What events carry. */

#define K_ALLOC_PAGES   UINT64_C(0xffffffff81003010)
#define K_ANON_PAGE     UINT64_C(0xffffffff81005020)
#define K_MM_FAULT      UINT64_C(0xffffffff81006030)
#define K_VFS_WRITE     UINT64_C(0xffffffff8100a010)
#define K_LOAD_MODULE   UINT64_C(0xffffffff8100b010)
#define K_INIT_MODULE   UINT64_C(0xffffffff8100c010)
#define K_SYSCALL       UINT64_C(0xffffffff8100e010)
#define K_BPF_TRACE_RUN UINT64_C(0xffffffff81010010)
#define K_TRACEITER     UINT64_C(0xffffffff81011010)
#define M_EXT4_WRITE    UINT64_C(0xffffffffc0001010)
#define M_EXT4_ALLOC    UINT64_C(0xffffffffc0002010)
#define M_EXT4_INIT     UINT64_C(0xffffffffc0003010)
#define M_XFS_BUF       UINT64_C(0xffffffffc0100010)  /* btrfs_alloc_chunk once reloaded */
#define M_XFS_INIT      UINT64_C(0xffffffffc0101010)
#define M_BPF_PROG      UINT64_C(0xffffffffc0200010)
#define K_NOWHERE       UINT64_C(0xffffffff90000000)

static const uint64_t kernel_frames[] = {
        K_ALLOC_PAGES, K_ANON_PAGE, K_MM_FAULT, K_VFS_WRITE, K_LOAD_MODULE, K_INIT_MODULE, K_SYSCALL,
        K_BPF_TRACE_RUN, K_TRACEITER, M_EXT4_WRITE, M_EXT4_ALLOC, M_EXT4_INIT, M_XFS_BUF, M_XFS_INIT, M_BPF_PROG,
        K_NOWHERE, MS_FRAME_NOT_SAMPLED, 0, UINT64_MAX,
};
static const uint64_t user_frames[] = { 0x401000, 0x402000, 0x7f0000001000, 0, UINT64_MAX };

/* Chains as the kernel makes them, innermost frame first. */
static const uint64_t chain_fault[] = { K_ALLOC_PAGES, K_ANON_PAGE, K_MM_FAULT, K_SYSCALL };
static const uint64_t chain_write[] = { K_ALLOC_PAGES, K_VFS_WRITE, K_SYSCALL };
static const uint64_t chain_ext4[] = { K_ALLOC_PAGES, M_EXT4_ALLOC, M_EXT4_WRITE, K_VFS_WRITE, K_SYSCALL };
static const uint64_t chain_xfs[] = { K_ALLOC_PAGES, M_XFS_BUF, K_VFS_WRITE, K_SYSCALL };
static const uint64_t chain_loader[] = { K_ALLOC_PAGES, K_LOAD_MODULE, K_SYSCALL };
static const uint64_t chain_module_init[] = { K_ALLOC_PAGES, M_EXT4_INIT, K_INIT_MODULE, K_SYSCALL };
static const uint64_t chain_loader_init[] = { K_ALLOC_PAGES, K_INIT_MODULE, K_SYSCALL };
static const uint64_t chain_bpf[] = { M_BPF_PROG, K_BPF_TRACE_RUN, K_TRACEITER, K_ALLOC_PAGES, K_ANON_PAGE };
static const uint64_t chain_not_sampled[] = { MS_FRAME_NOT_SAMPLED };

static const struct {
        const uint64_t *frames;
        size_t n;
} chains[] = {
        { chain_fault, ELEMENTSOF(chain_fault) },
        { chain_write, ELEMENTSOF(chain_write) },
        { chain_ext4, ELEMENTSOF(chain_ext4) },
        { chain_xfs, ELEMENTSOF(chain_xfs) },
        { chain_loader, ELEMENTSOF(chain_loader) },
        { chain_module_init, ELEMENTSOF(chain_module_init) },
        { chain_loader_init, ELEMENTSOF(chain_loader_init) },
        { chain_bpf, ELEMENTSOF(chain_bpf) },
        { chain_not_sampled, ELEMENTSOF(chain_not_sampled) },
};

#define CHAIN_MAX 300

typedef struct Chain {
        uint64_t frames[CHAIN_MAX];
        MsStack stack;
} Chain;

/* A chain: empty, one the kernel makes (with user frames below it, or not), made of random frames, or
 * long (past the 255 levels a node's depth counts). */
static const MsStack *next_chain(Program *p, Chain *c) {
        size_t n = 0, n_kernel;
        uint8_t mode = next_byte(p);

        switch (mode % 8) {
        case 0:
                break;
        case 6:
                n = 1 + pick(p, 16);
                for (size_t i = 0; i < n; i++)
                        c->frames[i] = pick(p, 4) == 0 ? PICK(p, user_frames) : PICK(p, kernel_frames);
                break;
        case 7:
                n = 64 + pick(p, CHAIN_MAX - 63);
                for (size_t i = 0; i < n; i++)
                        c->frames[i] = kernel_frames[(i * 7 + mode) % ELEMENTSOF(kernel_frames)];
                break;
        default: {
                size_t k = pick(p, ELEMENTSOF(chains));
                memcpy(c->frames, chains[k].frames, chains[k].n * sizeof(uint64_t));
                n = chains[k].n;
        }
        }
        n_kernel = n;
        /* User frames below: the process's own part of the chain. */
        if (mode & 0x80)
                for (size_t u = 1 + pick(p, 3); u > 0 && n < CHAIN_MAX; u--)
                        c->frames[n++] = PICK(p, user_frames);
        c->stack = (MsStack) { .frames = n > 0 ? c->frames : NULL, .n_frames = (uint32_t) n,
                               .n_kernel_frames = (uint32_t) n_kernel };
        /* Now and then, what no source sends: more kernel frames than frames, frames missing. */
        if ((mode & 0x70) == 0x70) {
                uint8_t b = next_byte(p);
                if (b < 240)
                        c->stack.n_kernel_frames = b;
                else
                        c->stack.frames = NULL;
        }
        return &c->stack;
}

/* A few pids, so that they meet, are reused and have threads; now and then one no kernel gives. */
static int32_t next_pid(Program *p) {
        static const int32_t odd[] = { 0, 100, 4194304, INT32_MAX, -1, 32768 };
        uint8_t b = next_byte(p);
        return b < 224 ? 1 + b % 8 : odd[b % ELEMENTSOF(odd)];
}

/* The thread: mostly the process itself, else one of its threads, or another process's id. */
static int32_t next_tid(Program *p, int32_t pid) {
        uint8_t b = next_byte(p);

        if (b < 128)
                return pid;
        if (b < 240)
                return (int32_t) ((uint32_t) pid + 1000 * (1 + b % 3));
        return next_pid(p);
}

static uint64_t next_cgroup_id(Program *p) {
        static const uint64_t odd[] = { 0, UINT64_MAX, 1 };
        uint8_t b = next_byte(p);
        return b < 224 ? UINT64_C(1001) + b % 8 : odd[b % ELEMENTSOF(odd)];
}

static const char long_name[] = "a-name-longer-than-any-table-keeps-it-whole-0123456789abcdef-0123456789abcdef-"
                                "0123456789abcdef-0123456789abcdef-0123456789abcdef-0123456789abcdef-0123456789"
                                "abcdef-0123456789abcdef-0123456789abcdef-0123456789abcdef-0123456789abcdef-01234"
                                "56789abcdef.service";

static const char *const comms[] = {
        "alpha", "beta", "python3", "", "bad\xff\xfe", "a\nb\tc\x7f", "[evicted]", "swapper",
        "exactly15bytes!", "longer-than-sixteen-bytes", "\xe2\x82\xac\xe2\x82",
};
static const char *const cmdlines[] = { NULL, "/bin/sh -c true", "", "bad\xff", long_name };
static const char *const module_names[] = {
        "ext4", "xfs", "btrfs", "nf_tables", ACCOUNTING_KERNEL_MODULE, ACCOUNTING_LOADING_MODULE, "", "bad\xff",
        long_name,
};
static const char *const cache_names[] = { NULL, "kmalloc-64", "kmalloc-4k", "dentry", "bad\xff", "" };
/* Unit names cgroups resolve to; NULL: the cgroup was gone before it was named. */
static const char *const unit_names[] = {
        "alpha.service", "web.service", "web.service", "session-3.scope", "init.scope", NULL, "bad\xff.service",
        "/user.slice/odd", long_name, "", UNITS_UNKNOWN_NAME,
};

/* Events. */

static void trace_event(const MsEvent *e) {
        const MsStack *stack = NULL;

        fprintf(stderr, "  event %d pid %d tid %d at %" PRIu64 " cpu %u cgroup %" PRIu64, (int) e->type, (int) e->pid,
                (int) e->tid, e->timestamp_nsec, (unsigned) e->cpu, e->cgroup_id);
        switch (e->type) {
        case MS_EVENT_PAGE_ALLOC:
        case MS_EVENT_PAGE_FREE:
                fprintf(stderr, " pfn %" PRIx64 " order %u", e->page.pfn, (unsigned) e->page.order);
                stack = e->type == MS_EVENT_PAGE_ALLOC ? &e->page.stack : NULL;
                break;
        case MS_EVENT_OBJECT_ALLOC:
        case MS_EVENT_OBJECT_FREE:
                fprintf(stderr, " ptr %" PRIx64 " bytes %" PRIu64 "/%" PRIu64, e->object.ptr, e->object.bytes_requested,
                        e->object.bytes_allocated);
                break;
        case MS_EVENT_SAMPLE:
                fprintf(stderr, " unit %d delta %" PRIi64 " peak %" PRIu64, (int) e->sample.unit, e->sample.delta,
                        e->sample.peak);
                stack = &e->sample.stack;
                break;
        default:
                break;
        }
        if (stack)
                fprintf(stderr, " frames %u (%u kernel)%s", stack->n_frames, stack->n_kernel_frames,
                        stack->frames ? "" : " missing");
        fputc('\n', stderr);
}

static void feed(Program *p, MsEvent e) {
        e.timestamp_nsec = p->clock_nsec;
        /* Now and then a little out of order, as per-CPU streams merge. */
        if (next_byte(p) >= 248)
                e.timestamp_nsec -= MIN(e.timestamp_nsec, (uint64_t) next_byte(p) * 1000000);
        e.cpu = next_byte(p) % 3;
        if (p->f->trace)
                trace_event(&e);
        MsEventSink sink = accounting_sink(p->accounting);
        sink.event(sink.userdata, &e);
}

/*
 * Operands are read into locals one declaration at a time: the expressions of an initializer list are
 * evaluated in no set order, which would make the same bytes another program under another compiler.
 */

static void op_fork(Program *p) {
        int32_t parent = next_pid(p), pid = next_pid(p), tid = next_tid(p, pid);
        feed(p, (MsEvent) { .type = MS_EVENT_TASK_FORK, .pid = pid, .tid = tid, .task.parent_pid = parent });
}

static void op_seed(Program *p) {
        int32_t pid = next_pid(p);
        const char *comm = PICK(p, comms), *cmdline = PICK(p, cmdlines);
        uint64_t baseline = next_byte(p);
        feed(p, (MsEvent) { .type = MS_EVENT_TASK_NEW, .pid = pid, .tid = pid,
                            .task = { .name = comm, .cmdline = cmdline, .baseline_pages = baseline } });
}

static void op_comm(Program *p) {
        int32_t pid = next_pid(p), tid = next_tid(p, pid);
        const char *comm = PICK(p, comms), *cmdline = PICK(p, cmdlines);
        feed(p, (MsEvent) { .type = MS_EVENT_TASK_COMM, .pid = pid, .tid = tid,
                            .task = { .name = comm, .cmdline = cmdline } });
}

static void op_exit(Program *p) {
        int32_t pid = next_pid(p), tid = next_tid(p, pid);
        feed(p, (MsEvent) { .type = MS_EVENT_TASK_EXIT, .pid = pid, .tid = tid });
}

/* Small aligned pfns, so that blocks overlap and come back without their free; now and then one past the
 * page table's range, or an order no kernel makes. */
static void next_block(Program *p, uint64_t *ret_pfn, uint32_t *ret_order) {
        uint8_t b = next_byte(p);

        *ret_pfn = (uint64_t) pick(p, 64) * 8;
        *ret_order = b % 4;
        if (b >= 240)
                *ret_order = b % 2 ? 10 : MS_EVENT_ORDER_MAX + 1 + next_byte(p);
        else if (b >= 232)
                *ret_pfn = (UINT64_C(1) << MS_PAGE_KEY_BITS) - 8 + (b % 16);
}

static void op_page_alloc(Program *p) {
        int32_t pid = next_pid(p), tid = next_tid(p, pid);
        uint64_t cgroup_id = next_cgroup_id(p);
        Chain c;
        MsEvent e = { .type = MS_EVENT_PAGE_ALLOC, .pid = pid, .tid = tid, .cgroup_id = cgroup_id };

        next_block(p, &e.page.pfn, &e.page.order);
        e.page.migrate_type = -1;
        e.page.stack = *next_chain(p, &c);
        feed(p, e);
}

static void op_page_free(Program *p) {
        int32_t pid = next_pid(p);
        MsEvent e = { .type = MS_EVENT_PAGE_FREE, .pid = pid, .tid = pid };

        next_block(p, &e.page.pfn, &e.page.order);
        feed(p, e);
}

static uint64_t next_object_ptr(Program *p) {
        uint8_t b = next_byte(p);
        /* NULL (a failed kmalloc) and ZERO_SIZE_PTR (kmalloc(0)) too. */
        return b < 240 ? UINT64_C(0xffff888000000000) + (uint64_t) (b % 32) * 64 : b % 2 ? 0 : 0x10;
}

static void op_object_alloc(Program *p) {
        static const uint64_t sizes[] = { 0, 1, 8, 64, 4096, 1 << 20, UINT32_MAX, UINT64_MAX };
        int32_t pid = next_pid(p), tid = next_tid(p, pid);
        uint64_t cgroup_id = next_cgroup_id(p);
        Chain c;
        MsEvent e = { .type = MS_EVENT_OBJECT_ALLOC, .pid = pid, .tid = tid, .cgroup_id = cgroup_id };

        e.object.ptr = next_object_ptr(p);
        e.object.bytes_requested = PICK(p, sizes);
        e.object.bytes_allocated = next_byte(p) < 200 ? e.object.bytes_requested * 2 : PICK(p, sizes);
        e.object.cache = PICK(p, cache_names);
        e.object.call_site = PICK(p, kernel_frames);
        e.object.stack = *next_chain(p, &c);
        feed(p, e);
}

static void op_object_free(Program *p) {
        int32_t pid = next_pid(p);
        MsEvent e = { .type = MS_EVENT_OBJECT_FREE, .pid = pid, .tid = pid };

        e.object.ptr = next_object_ptr(p);
        e.object.call_site = PICK(p, kernel_frames);
        feed(p, e);
}

/* A process's user-space heap, as the heap source reports it: a start (with maps that are text, empty or
 * none), sampled blocks with user frames, frees of them or of pointers never seen, exact counters that
 * need not agree with the blocks, a library loaded, the end for any reason. */
static void op_heap(Program *p) {
        static const char *const maps[] = { NULL, "", "00400000-00452000 r-xp 00000000 08:01 42 /usr/bin/x\n",
                                            "garbage\xff\n" };
        static const uint64_t sizes[] = { 0, 1, 24, 4096, 1 << 20, UINT64_MAX };
        static const uint64_t pointers[] = { 0x5000, 0x5010, 0x7f0000000000, 0, UINT64_MAX };
        int32_t pid = next_pid(p);
        MsEvent e = { .pid = pid, .tid = pid };
        MsHeapCounters counters = {};
        uint64_t frames[8];
        uint8_t b = next_byte(p);

        e.heap.peak = (MsHeapPeak) (next_byte(p) % _MS_HEAP_PEAK_MAX);
        switch (b % 8) {
        case 0:
                e.type = MS_EVENT_HEAP_START;
                e.heap.sample_interval = next_byte(p) < 128 ? 1 : 524288;
                e.heap.maps = PICK(p, maps);
                e.heap.comm = next_byte(p) < 240 ? "heapy" : "bad\xff";
                e.heap.cmdline = next_byte(p) < 128 ? "heapy --run" : NULL;
                break;
        case 1:
        case 2:
        case 3: {
                size_t n = pick(p, ELEMENTSOF(frames) + 1);
                for (size_t i = 0; i < n; i++)
                        frames[i] = PICK(p, user_frames);
                e.type = MS_EVENT_HEAP_ALLOC;
                e.heap.ptr = PICK(p, pointers);
                e.heap.bytes = PICK(p, sizes);
                e.heap.stack = (MsStack) { .frames = n > 0 ? frames : NULL, .n_frames = (uint32_t) n };
                e.heap.stack_id = next_byte(p) % 4;
                break;
        }
        case 4:
                e.type = MS_EVENT_HEAP_FREE;
                e.heap.ptr = PICK(p, pointers);
                e.heap.bytes = PICK(p, sizes);
                break;
        case 5:
                counters = (MsHeapCounters) { .live_bytes = PICK(p, sizes), .peak_bytes = PICK(p, sizes),
                                              .allocs = next_byte(p), .frees = next_byte(p),
                                              .alloc_bytes = PICK(p, sizes), .lost_records = next_byte(p) % 2 };
                e.type = MS_EVENT_HEAP_STATE;
                e.heap.counters = &counters;
                break;
        case 6:
                e.type = MS_EVENT_HEAP_MAPS;
                e.heap.maps = PICK(p, maps);
                break;
        default:
                e.type = MS_EVENT_HEAP_END;
                e.heap.end = (MsHeapEnd) (next_byte(p) % _MS_HEAP_END_MAX);
        }
        feed(p, e);
}

/* The slab counts held against a /proc/slabinfo: each cache's active objects from nothing to more than
 * were ever allocated, or a cache the kernel destroyed (absent). */
static void op_slab_reconcile(Program *p) {
        static const uint64_t actives[] = { 0, 1, 2, 8, 1000, UINT64_MAX };
        SlabCache caches[ELEMENTSOF(cache_names)] = {};
        SlabInfo info = { .caches = caches };

        for (size_t i = 0; i < ELEMENTSOF(cache_names); i++) {
                if (!cache_names[i] || next_byte(p) < 32)
                        continue;
                caches[info.n_caches++] = (SlabCache) { .name = (char *) cache_names[i],
                                                         .active_objects = PICK(p, actives),
                                                         .objects = UINT64_MAX, .object_size = 64,
                                                         .index = i };
        }
        if (accounting_slab_reconcile(p->accounting, &info, p->clock_nsec) == -ENOMEM)
                abort();
}

static void op_sample(Program *p) {
        static const int64_t deltas[] = { 1, 2, 16, -1, -2, -16, 0, 1000000, -1000000, INT64_C(1) << 40,
                                          -(INT64_C(1) << 40), (INT64_C(1) << 40) + 1, INT64_MAX, INT64_MIN };
        static const uint64_t peaks[] = { 0, 1, 32, UINT64_C(1) << 40, (UINT64_C(1) << 40) + 1, UINT64_MAX };
        static const int units[] = { LEDGER_PAGES, LEDGER_PAGES, LEDGER_PAGES, LEDGER_BYTES, _LEDGER_UNIT_MAX, -1 };
        int32_t pid = next_pid(p), tid = next_tid(p, pid);
        uint64_t cgroup_id = next_cgroup_id(p);
        Chain c;
        MsEvent e = { .type = MS_EVENT_SAMPLE, .pid = pid, .tid = tid, .cgroup_id = cgroup_id };

        e.sample.unit = (LedgerUnit) PICK(p, units);
        e.sample.delta = PICK(p, deltas);
        e.sample.peak = PICK(p, peaks);
        e.sample.stack = *next_chain(p, &c);
        feed(p, e);
}

static const char *next_module_name(Program *p, char *buf, size_t size) {
        uint8_t b = next_byte(p);

        if (b < 200)
                return module_names[b % ELEMENTSOF(module_names)];
        (void) snprintf(buf, size, "mod_%u", (unsigned) b % 16);
        return buf;
}

static void op_module_load(Program *p) {
        char buf[32];
        int32_t pid = next_pid(p), tid = next_tid(p, pid);
        const char *name = next_module_name(p, buf, sizeof(buf));
        feed(p, (MsEvent) { .type = MS_EVENT_MODULE_LOAD, .pid = pid, .tid = tid, .module.name = name });
        /* As the daemon does: the symbols are stale until the next reload (op_symbols_reload). */
        accounting_symbols_stale(p->accounting);
}

static void op_module_free(Program *p) {
        char buf[32];
        feed(p, (MsEvent) { .type = MS_EVENT_MODULE_FREE, .module.name = next_module_name(p, buf, sizeof(buf)) });
}

/* Hundreds of modules at once (one time in four: interning is a walk of every name): four of these fill
 * the module id space. */
static void op_module_burst(Program *p) {
        uint8_t b = next_byte(p);
        if (b < 192)
                return;
        unsigned base = b * 512u;
        for (unsigned i = 0; i < 600; i++) {
                char name[32];
                (void) snprintf(name, sizeof(name), "burst_%u", base + i);
                feed(p, (MsEvent) { .type = MS_EVENT_MODULE_LOAD, .pid = 1, .tid = 1, .module.name = name });
        }
}

static void op_lost(Program *p) {
        static const uint64_t counts[] = { 1, 1000, UINT64_MAX };
        feed(p, (MsEvent) { .type = MS_EVENT_LOST, .lost.n_lost = PICK(p, counts) });
}

/* The daemon names new cgroups after a walk of the cgroup tree; some are gone by then, some get renamed,
 * some share a name (a restarted service) and are merged into one unit. */
static void op_cgroup_resolve(Program *p) {
        Units *u = accounting_units(p->accounting);
        size_t n = units_cgroup_count(u);
        if (n <= 1)
                return;
        uint32_t c = 1 + (uint32_t) pick(p, n - 1);
        const char *name = PICK(p, unit_names);
        (void) units_cgroup_resolve(u, c, name, name ? "/system.slice/x" : NULL);
}

static void op_cgroup_resolve_pending(Program *p) {
        Units *u = accounting_units(p->accounting);

        for (uint32_t c = 1; c < units_cgroup_count(u); c++)
                if (units_cgroup(u, c)->pending) {
                        const char *name = PICK(p, unit_names);
                        (void) units_cgroup_resolve(u, c, name, name ? "/system.slice/y" : NULL);
                }
}

static void op_cgroup_removed(Program *p) {
        Units *u = accounting_units(p->accounting);
        size_t n = units_cgroup_count(u);
        if (n <= 1)
                return;
        uint32_t c = 1 + (uint32_t) pick(p, n - 1);
        units_cgroup_set_removed(u, c, next_byte(p) < 192);
}

/* A module load makes the symbols stale until the (coalesced) reload, which may bring another table. */
static void op_symbols_stale(Program *p) {
        accounting_symbols_stale(p->accounting);
}

static void op_symbols_reload(Program *p) {
        accounting_set_ksym(p->accounting, PICK(p, p->f->ksyms));
}

static void op_clock(Program *p) {
        static const uint64_t steps[] = { 1000, NSEC_PER_SEC / 10, NSEC_PER_SEC, 61 * NSEC_PER_SEC,
                                          3600 * NSEC_PER_SEC, 20 * 3600 * NSEC_PER_SEC };
        uint64_t step = PICK(p, steps);
        p->clock_nsec += step * (1 + pick(p, 4));
}

/* The daemon's other readers of the core. */

static uint64_t realtime_usec(const Program *p) {
        return (p->clock_nsec + REALTIME_OFFSET_NSEC) / NSEC_PER_USEC;
}

static void op_history_tick(Program *p) {
        history_tick(p->history, p->accounting, realtime_usec(p));
}

static void op_oom_kill(Program *p) {
        const json_t *record = NULL;
        int32_t pid = next_pid(p);
        unsigned fields = next_byte(p);
        OomKill k = {
                .timestamp_nsec = p->clock_nsec,
                .pid = pid,
                .current_pid = -1,
                .fields = fields,
                .total_vm_kib = 1024, .anon_rss_kib = 512, .file_rss_kib = 256, .shmem_rss_kib = UINT64_MAX / 1024,
                .uid = 1000, .oom_score_adj = -1000,
        };
        (void) snprintf(k.comm, sizeof(k.comm), "%s", PICK(p, comms));
        if (oomlog_record_kill(p->oom, p->accounting, NULL, &k, 4096, &record) < 0)
                abort();
        if (oomlog_log_kill(record, false, NULL, 4096) < 0)
                abort();
}

static void op_oom_peak(Program *p) {
        if (oomlog_offer_peak(p->oom, p->accounting, NULL, accounting_current_pages(p->accounting),
                              p->clock_nsec / NSEC_PER_USEC) < 0)
                abort();
}

static ServiceState state_of(Program *p) {
        static const EventSourceLoss losses[] = { { "ringFull", 3 }, { "stackFailed", 0 } };
        ServiceState state = {
                .backend = "fuzz",
                .backend_reason = "chosen by the fuzzer",
                .source = { .records = 42, .lost_records = 5, .n_cpus = ELEMENTSOF(p->lost_per_cpu),
                            .lost_per_cpu = p->lost_per_cpu, .losses = losses, .n_losses = ELEMENTSOF(losses),
                            .stack_sample_interval = 1 },
                .uptime_usec = p->clock_nsec / NSEC_PER_USEC,
                .events_per_second = 1.5,
        };
        oomlog_service_view(p->oom, &state);
        return state;
}

static void op_summary(Program *p) {
        ServiceState state = state_of(p);
        SummaryInput in = { .accounting = p->accounting, .source = &state.source, .reason = "fuzz",
                            .uptime_usec = state.uptime_usec, .page_size = 4096 };
        _cleanup_free_ char *text = summary_format(&in);
        if (!text)
                abort();
}

static void op_document(Program *p) {
        ServiceState state = state_of(p);
        DocumentInput in = { .accounting = p->accounting, .state = &state, .page_size = 4096,
                             .sort_by_peak = next_byte(p) % 2, .now_nsec = p->clock_nsec };
        json_auto_t *doc = NULL;
        if (document_build(&in, &doc) < 0)
                abort();
}

/* Calls. */

static const char *const errors_expected[] = {
        VARLINK_ERROR_INVALID_PARAMETER,
        MEMSTRACK_ERROR_NO_SUCH_TASK,
        MEMSTRACK_ERROR_NO_SUCH_MODULE,
        MEMSTRACK_ERROR_NO_SUCH_UNIT,
        MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT,
        MEMSTRACK_ERROR_LIMIT_EXCEEDED,
};

/* Sends the call and runs the loop until its final reply, which must be a reply or an expected error. */
static void call(Program *p, const char *method, json_t *params) {
        json_auto_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = varlink_client_send(p->client, method, params, 0, UINT64_MAX);
        if (r < 0) {
                fprintf(stderr, "%s: cannot send: %s\n", method, strerror(-r));
                abort();
        }
        for (unsigned i = 0;; i++) {
                r = varlink_client_read_reply(p->client, 0, &reply, &error);
                if (r != -EAGAIN)
                        break;
                if (i == CALL_SLICES_MAX) {
                        fprintf(stderr, "%s: no reply\n", method);
                        abort();
                }
                if (sd_event_run(p->f->event, CALL_SLICE_USEC) < 0)
                        abort();
        }
        if (p->f->trace) {
                _cleanup_free_ char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
                fprintf(stderr, "  %s(%s): %s\n", method, text ?: "", r < 0 ? strerror(-r) : error ?: "reply");
        }
        if (r != 0) {
                _cleanup_free_ char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
                fprintf(stderr, "%s(%s): %s\n", method, text ?: "", r > 0 ? "not a final reply" : strerror(-r));
                abort();
        }
        if (!error)
                return;
        /* Root-only methods answer group members so: what they would have done is done below. */
        if (!p->f->root && streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED) &&
            (streq(method, "io.memstrack.Reset") || streq(method, "io.memstrack.SetLogLevel")))
                return;
        for (size_t i = 0; i < ELEMENTSOF(errors_expected); i++)
                if (streq(error, errors_expected[i]))
                        return;
        _cleanup_free_ char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
        _cleanup_free_ char *reply_text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
        fprintf(stderr, "%s(%s): %s %s\n", method, text ?: "", error, reply_text ?: "");
        abort();
}

typedef enum ParamKind {
        PARAM_LIMIT,
        PARAM_PID,
        PARAM_SORT,
        PARAM_BOOL,
        PARAM_COMM,
        PARAM_UNIT,
        PARAM_MODULE,
        PARAM_SNAPSHOT,
        PARAM_DEPTH,
        PARAM_PAGES,
        PARAM_CHILDREN,
        PARAM_SECONDS,
        PARAM_INTERVALS,
        PARAM_RESOLUTION,
        PARAM_STACKS,
        PARAM_BY,
        PARAM_INTERVAL_USEC,
        PARAM_WHAT,
        PARAM_LEVEL,
        PARAM_UNITS,
        PARAM_PAGE_BY,
        PARAM_UID,
        PARAM_PPM,
} ParamKind;

static json_t *int_value(Program *p, const int64_t *values, size_t n) {
        return json_integer((json_int_t) values[pick(p, n)]);
}

static json_t *string_value(Program *p, const char *const *values, size_t n) {
        return json_string(values[pick(p, n)]);
}

#define INTS(...) int_value(p, (const int64_t[]) { __VA_ARGS__ }, ELEMENTSOF(((const int64_t[]) { __VA_ARGS__ })))
#define STRINGS(...) string_value(p, (const char *const[]) { __VA_ARGS__ }, \
                                  ELEMENTSOF(((const char *const[]) { __VA_ARGS__ })))

/* A value of the parameter's kind: valid ones around the limits mostly, out of range ones too. */
static json_t *param_value(Program *p, ParamKind kind) {
        switch (kind) {
        case PARAM_LIMIT:
                return INTS(1, 2, 3, 50, QUERY_LIMIT_MAX, 0, QUERY_LIMIT_MAX + 1, -1, INT64_MAX);
        case PARAM_PID:
                return next_byte(p) < 200 ? json_integer(next_pid(p)) : INTS(0, -1, INT32_MAX, INT64_MAX, 4242);
        case PARAM_SORT:
                return STRINGS("current", "peak", "allocs", "size", "");
        case PARAM_BOOL:
                return json_boolean(next_byte(p) % 2);
        case PARAM_COMM:
                return STRINGS("alpha", "beta", "python3", "", "bad\\xff\\xfe", "[evicted]", "<unknown>",
                               "exactly15bytes!", "longer-than-si");
        case PARAM_UNIT:
                return STRINGS("alpha.service", "web.service", "session-3.scope", "init.scope", "bad\\xff.service",
                               "/user.slice/odd", UNITS_UNKNOWN_NAME, UNITS_REMOVED_NAME, "", "nothing.service",
                               long_name);
        case PARAM_MODULE:
                return STRINGS("ext4", "xfs", "btrfs", "nf_tables", ACCOUNTING_KERNEL_MODULE, ACCOUNTING_LOADING_MODULE,
                               "mod_3", "burst_7", "", "bad\\xff", long_name);
        case PARAM_SNAPSHOT:
                return STRINGS("a", "b", "before", "", "0123456789012345678901234567890123456789012345678901234567890123",
                               "01234567890123456789012345678901234567890123456789012345678901234", "s1", "s2", "s3",
                               "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16");
        case PARAM_DEPTH:
                return INTS(0, 1, 2, 32, 255, 256, -1);
        case PARAM_PAGES:
                return INTS(0, 1, 2, 8, 1000, INT64_MAX, -1);
        case PARAM_CHILDREN:
                return INTS(1, 2, 16, 10000, 0, 10001);
        case PARAM_SECONDS:
                return INTS(0, 1, 10, 60, 3600, INT32_MAX, -1, (int64_t) INT32_MAX + 1);
        case PARAM_INTERVALS:
                return INTS(1, 2, 6, 60, 0, 61);
        case PARAM_RESOLUTION:
                return INTS(1, 60, 2, 0, INT32_MAX);
        case PARAM_STACKS:
                return INTS(0, 1, 3, 100, 101, -1);
        case PARAM_BY:
                return STRINGS("callsite", "cache", "task", "unit", "pid", "");
        case PARAM_INTERVAL_USEC:
                return INTS(100000, 99999, 1000000, INT64_MAX);
        case PARAM_WHAT:
                return STRINGS("peaks", "all", "nothing");
        case PARAM_LEVEL:
                return STRINGS("debug", "info", "notice", "warning", "err", "loud");
        case PARAM_UNITS: {
                json_t *names = json_array();
                for (size_t n = pick(p, 4); names && n > 0; n--)
                        if (json_array_append_new(names, param_value(p, PARAM_UNIT)) < 0)
                                abort();
                return names;
        }
        case PARAM_PAGE_BY:
                return STRINGS("order", "gfp", "migratetype", "node", "zone", "");
        case PARAM_UID:
                return INTS(0, p->f->root ? 0 : (int64_t) getuid(), 65534, -1, (int64_t) UINT32_MAX + 1);
        case PARAM_PPM:
                return INTS(0, 1, 1000, 1000000, 1000001, -1);
        }
        return json_null();
}

/* Sets key in params now and then (the mandatory ones of Reset, Snapshot, Diff, SetLogLevel, ExplainUnits
 * and PageBreakdown mostly): mostly a value of its kind, sometimes one of another type. */
static void param(Program *p, json_t *params, const char *key, ParamKind kind) {
        bool mandatory = kind == PARAM_WHAT || kind == PARAM_SNAPSHOT || kind == PARAM_LEVEL || kind == PARAM_UNITS ||
                         kind == PARAM_PAGE_BY;
        uint8_t b = next_byte(p);
        json_t *v;

        if (b < (mandatory ? 16 : 96))
                return;
        if (b >= 240) {
                switch (b % 6) {
                case 0:
                        v = json_string("1");
                        break;
                case 1:
                        v = json_real(1.5);
                        break;
                case 2:
                        v = json_null();
                        break;
                case 3:
                        v = json_array();
                        break;
                case 4:
                        v = json_object();
                        break;
                default:
                        v = json_integer(-1);
                }
        } else
                v = param_value(p, kind);
        if (!v || json_object_set_new(params, key, v) < 0)
                abort();
}

typedef struct MethodParam {
        const char *name;
        ParamKind kind;
} MethodParam;

typedef struct Method {
        const char *name;
        MethodParam params[8];
} Method;

/* Every io.memstrack method with every parameter it takes (Top as a one-shot call: streams run on the
 * loop's clock). */
static const Method methods[] = {
        { "io.memstrack.Status", {} },
        { "io.memstrack.Summary", { { "limit", PARAM_LIMIT } } },
        { "io.memstrack.Tasks", { { "sortBy", PARAM_SORT }, { "limit", PARAM_LIMIT }, { "pid", PARAM_PID },
                                  { "comm", PARAM_COMM }, { "includeExited", PARAM_BOOL },
                                  { "threads", PARAM_BOOL }, { "hideZero", PARAM_BOOL } } },
        { "io.memstrack.Modules", { { "sortBy", PARAM_SORT }, { "limit", PARAM_LIMIT } } },
        { "io.memstrack.Units", { { "sortBy", PARAM_SORT }, { "limit", PARAM_LIMIT }, { "name", PARAM_UNIT },
                                  { "stacks", PARAM_STACKS }, { "hideZero", PARAM_BOOL } } },
        { "io.memstrack.History", { { "pid", PARAM_PID }, { "unit", PARAM_UNIT }, { "module", PARAM_MODULE },
                                    { "seconds", PARAM_SECONDS }, { "resolution", PARAM_RESOLUTION } } },
        { "io.memstrack.StackTree", { { "pid", PARAM_PID }, { "unit", PARAM_UNIT }, { "module", PARAM_MODULE },
                                      { "maxDepth", PARAM_DEPTH }, { "minPages", PARAM_PAGES },
                                      { "maxChildren", PARAM_CHILDREN }, { "sortBy", PARAM_SORT } } },
        { "io.memstrack.Top", { { "intervalUsec", PARAM_INTERVAL_USEC }, { "limit", PARAM_LIMIT },
                                { "sortBy", PARAM_SORT }, { "hideZero", PARAM_BOOL } } },
        { "io.memstrack.Reset", { { "what", PARAM_WHAT } } },
        { "io.memstrack.Snapshot", { { "name", PARAM_SNAPSHOT } } },
        { "io.memstrack.Diff", { { "name", PARAM_SNAPSHOT }, { "limit", PARAM_LIMIT } } },
        { "io.memstrack.ListSnapshots", { { "allUsers", PARAM_BOOL } } },
        { "io.memstrack.DeleteSnapshot", { { "name", PARAM_SNAPSHOT }, { "uid", PARAM_UID } } },
        { "io.memstrack.BootPhase", {} },
        { "io.memstrack.SetLogLevel", { { "level", PARAM_LEVEL } } },
        { "io.memstrack.OomKills", {} },
        { "io.memstrack.Slab", { { "by", PARAM_BY }, { "limit", PARAM_LIMIT } } },
        { "io.memstrack.Leaks", { { "minAgeSeconds", PARAM_SECONDS }, { "intervalSeconds", PARAM_SECONDS },
                                  { "intervals", PARAM_INTERVALS }, { "pid", PARAM_PID }, { "limit", PARAM_LIMIT } } },
        { "io.memstrack.Explain", { { "name", PARAM_UNIT }, { "limit", PARAM_LIMIT }, { "stacks", PARAM_STACKS } } },
        { "io.memstrack.ExplainUnits", { { "names", PARAM_UNITS } } },
        { "io.memstrack.PageBreakdown", { { "by", PARAM_PAGE_BY }, { "pid", PARAM_PID }, { "unit", PARAM_UNIT },
                                          { "module", PARAM_MODULE }, { "limit", PARAM_LIMIT } } },
        { "io.memstrack.Heap", { { "pid", PARAM_PID }, { "maxDepth", PARAM_DEPTH },
                                 { "maxChildren", PARAM_CHILDREN }, { "minPartsPerMillion", PARAM_PPM } } },
        { "io.memstrack.HeapStop", { { "pid", PARAM_PID } } },
};

static void op_call(Program *p) {
        const Method *m = &PICK(p, methods);
        json_auto_t *params = json_object();

        if (!params)
                abort();
        for (size_t i = 0; i < ELEMENTSOF(m->params) && m->params[i].name; i++)
                param(p, params, m->params[i].name, m->params[i].kind);
        /* A parameter no method has. */
        if (next_byte(p) >= 250 && json_object_set_new(params, "bogus", json_integer(1)) < 0)
                abort();
        call(p, m->name, params);

        /* What the root-only methods do, for a caller that is not root (its call was refused). */
        if (!p->f->root && streq(m->name, "io.memstrack.Reset")) {
                const char *what = json_string_value(json_object_get(params, "what"));
                if (what && streq(what, "all"))
                        accounting_reset(p->accounting, ACCOUNTING_RESET_ALL);
                else if (what && streq(what, "peaks"))
                        accounting_reset(p->accounting, ACCOUNTING_RESET_PEAKS);
        }
        /* SetLogLevel changes the process's level: back to ours. */
        log_set_max_level(p->f->log_level);
}

/* The last state, asked for in full: Leaks of every age, Slab by task, the whole tree by peak. */
static void final_calls(Program *p) {
        static const char *const final[][2] = {
                { "io.memstrack.Leaks", "{\"minAgeSeconds\": 0, \"intervalSeconds\": 1, \"intervals\": 60}" },
                { "io.memstrack.Slab", "{\"by\": \"task\"}" },
                { "io.memstrack.Slab", "{\"by\": \"unit\"}" },
                { "io.memstrack.StackTree", "{\"sortBy\": \"peak\", \"maxDepth\": 255, \"maxChildren\": 10000, "
                                            "\"minPages\": 0}" },
                { "io.memstrack.Tasks", "{\"includeExited\": true, \"threads\": true, \"limit\": 10000}" },
                { "io.memstrack.Units", "{\"stacks\": 100, \"sortBy\": \"peak\"}" },
                { "io.memstrack.ExplainUnits", "{\"names\": []}" },
                { "io.memstrack.PageBreakdown", "{\"by\": \"order\", \"limit\": 10000}" },
                { "io.memstrack.PageBreakdown", "{\"by\": \"gfp\", \"limit\": 10000}" },
        };

        for (size_t i = 0; i < ELEMENTSOF(final); i++) {
                json_auto_t *params = json_loads(final[i][1], 0, NULL);
                if (!params)
                        abort();
                call(p, final[i][0], params);
        }
        /* Every unit a cgroup of the program may be named. */
        static const char *const units[] = { "alpha.service", "web.service", "session-3.scope", "init.scope",
                                             "bad\\xff.service", "/user.slice/odd", UNITS_UNKNOWN_NAME };
        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                json_auto_t *params = json_pack("{s:s, s:i}", "name", units[i], "stacks", 100);
                if (!params)
                        abort();
                call(p, "io.memstrack.Explain", params);
        }
        for (int32_t pid = 1; pid <= 8; pid++) {
                if (usage_find_process(accounting_usage(p->accounting), pid) == USAGE_TASK_NONE)
                        continue;
                json_auto_t *params = json_pack("{s:i, s:s}", "pid", (int) pid, "sortBy", "peak");
                json_auto_t *leaks = json_pack("{s:i, s:i}", "pid", (int) pid, "minAgeSeconds", 0);
                if (!params || !leaks)
                        abort();
                call(p, "io.memstrack.StackTree", params);
                call(p, "io.memstrack.Leaks", leaks);
        }
}

/* The core's sums agree: every tracked page is charged once per view. */
static void check_core(Program *p) {
        const char *what = NULL;
        int r = accounting_check_sums(p->accounting, &what);

        if (r == -ENOMEM)
                abort();
        if (r < 0) {
                fprintf(stderr, "the core disagrees with itself: %s\n", what);
                abort();
        }
}

/* A program. */

typedef void (*OpFn)(Program *p);

typedef struct Op {
        const char *name;
        OpFn fn;
} Op;

#define OP(f) { #f, op_##f }

/* Events most, calls often, the rest now and then. */
static const Op ops[] = {
        OP(page_alloc), OP(page_alloc), OP(page_alloc), OP(page_alloc), OP(page_alloc), OP(page_free),
        OP(page_free), OP(page_free), OP(object_alloc), OP(object_alloc), OP(object_free), OP(sample), OP(fork),
        OP(fork), OP(fork), OP(exit), OP(exit), OP(exit), OP(comm), OP(seed), OP(module_load), OP(module_free),
        OP(lost), OP(cgroup_resolve), OP(cgroup_resolve_pending), OP(cgroup_removed), OP(symbols_stale),
        OP(symbols_reload), OP(clock), OP(clock), OP(history_tick), OP(oom_kill), OP(oom_peak), OP(call), OP(call),
        OP(call), OP(call), OP(call), OP(call), OP(call), OP(summary), OP(document), OP(module_burst),
        OP(heap), OP(heap), OP(heap), OP(slab_reconcile),
};

static void fuzz_flush(void *userdata) {
}

/* The client reads its replies itself (call()): the loop only has to return. */
static int reply_ready(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return 0;
}

static void fuzz_get_state(void *userdata, ServiceState *ret) {
        *ret = state_of(userdata);
}

static uint64_t fuzz_now_nsec(void *userdata, clockid_t clock) {
        const Program *p = userdata;
        return clock == CLOCK_REALTIME ? p->clock_nsec + REALTIME_OFFSET_NSEC : p->clock_nsec;
}

static void run(Program *p) {
        static const size_t max_stack_nodes[] = { 2, 24, 400, 1u << 20 };
        static const size_t max_slab_objects[] = { 1, 8, 1u << 20 };
        static const size_t max_exited[] = { 0, 1, 2, 3 };
        uint8_t c0 = next_byte(p), c1 = next_byte(p);
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;

        c.track_threads = c0 & 1;
        c.per_process_stacks = c0 & 2;
        c.slab = c0 & 4;
        c.max_exited_tasks = max_exited[c0 >> 3 & 3];
        c.max_stack_nodes = max_stack_nodes[c1 & 3];
        c.max_slab_objects = max_slab_objects[(c1 >> 2) % ELEMENTSOF(max_slab_objects)];
        c.expected_pages = 64;
        if (accounting_new(&c, p->f->ksyms[c0 >> 5 & 3], &p->accounting) < 0)
                abort();
        p->history = history_new();
        p->oom = oomlog_new();
        if (!p->history || !p->oom || oomlog_set_watching(p->oom, true, NULL) < 0)
                abort();

        ServiceConfig sc = {
                .event = p->f->event,
                .accounting = p->accounting,
                .history = p->history,
                .page_size = 4096,
                .socket_path = p->f->socket,
                .group = p->f->group,
                .userdata = p,
                .flush = fuzz_flush,
                .get_state = fuzz_get_state,
                .now_nsec = fuzz_now_nsec,
        };
        if (service_new(&sc, &p->service) < 0 || varlink_client_connect(p->f->socket, &p->client) < 0 ||
            sd_event_add_io(p->f->event, &p->client_source, varlink_client_get_fd(p->client), EPOLLIN,
                            reply_ready, NULL) < 0)
                abort();

        for (unsigned i = 0; i < OPS_MAX && p->n > 0; i++) {
                const Op *op = &ops[pick(p, ELEMENTSOF(ops))];
                /* FUZZ_QUERY_TRACE=1: which op did it, for a saved input run again. */
                if (p->f->trace)
                        fprintf(stderr, "op %u: %s at byte %zu\n", i, op->name, (size_t) (p->p - p->start));
                op->fn(p);
                check_core(p);
        }
        final_calls(p);
        check_core(p);

        p->client_source = sd_event_source_disable_unref(p->client_source);
        p->client = varlink_client_free(p->client);
        p->service = service_free(p->service);
        p->oom = oomlog_free(p->oom);
        p->history = history_free(p->history);
        p->accounting = accounting_free(p->accounting);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Program p = {
                .start = data,
                .p = data,
                .n = size,
                .f = fixture_get(),
                .clock_nsec = 1000 * NSEC_PER_SEC,
                .lost_per_cpu = { 0, 5 },
        };

        run(&p);
        return 0;
}
