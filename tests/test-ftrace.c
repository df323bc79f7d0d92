/* SPDX-License-Identifier: MIT */

/*
 * The ftrace source's record handling without a kernel: records are written byte by byte as this kernel
 * (tests/data/tracefs-6.18) lays them out and handed to the per-CPU record handler, and the sink is
 * checked: stacks paired with their allocations (nested ones too), the tracing code's frames dropped,
 * threads folded into their processes, the daemon's own allocations dropped, allocations whose stack
 * never comes delivered without one. And the removal of stale instances in a fake tracefs. ftrace.c is
 * included rather than linked: what is tested is static.
 */

#include <sys/prctl.h>
#include <sys/wait.h>

#include "../daemon/sources/ftrace.c"

#include "slab-live.h"
#include "tests.h"

#define ID_ALLOC 653            /* tracepoint ids of tests/data/tracefs-6.18 */
#define ID_FREE 655
#define ID_KERNEL_STACK 4
#define ID_NEWTASK 205
#define ID_SCHED_FORK 366
#define ID_SCHED_EXIT 369
#define SELF 4242
#define MAX_SEEN 32

typedef struct Seen {
        MsEvent ev;
        uint64_t frames[8];
        char cache[64];                 /* OBJECT_ALLOC: the cache name as it was during the call */
} Seen;

static Seen seen[MAX_SEEN];
static size_t n_seen;

static void sink_event(void *userdata, const MsEvent *ev) {
        Seen *s;

        ASSERT_LT(n_seen, MAX_SEEN);
        s = &seen[n_seen++];
        s->ev = *ev;
        if (ev->type == MS_EVENT_PAGE_ALLOC)
                for (size_t i = 0; i < ev->page.stack.n_frames && i < ELEMENTSOF(s->frames); i++)
                        s->frames[i] = ev->page.stack.frames[i];
        if (ev->type == MS_EVENT_OBJECT_ALLOC) {
                for (size_t i = 0; i < ev->object.stack.n_frames && i < ELEMENTSOF(s->frames); i++)
                        s->frames[i] = ev->object.stack.frames[i];
                (void) snprintf(s->cache, sizeof(s->cache), "%s", ev->object.cache ?: "");
        }
}

static void put(uint8_t *rec, size_t offset, size_t n, uint64_t v) {
        for (size_t i = 0; i < n; i++)
                rec[offset + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? n - 1 - i : i)] = (uint8_t) (v >> (i * 8));
}

static void put_common(uint8_t *rec, uint16_t type, int32_t pid) {
        put(rec, 0, 2, type);
        rec[2] = rec[3] = 0;
        put(rec, 4, 4, (uint32_t) pid);
}

typedef struct Fixture {
        FtraceSource *s;
        FtraceCpu *allocs;              /* the stacks instance's CPU 0 */
        FtraceCpu *events;              /* the events instance's CPU 0 */
} Fixture;

static void fixture_init(Fixture *f) {
        FtraceSource *s = calloc(1, sizeof(*s));

        ASSERT_NOT_NULL(s);
        live_source_init(&s->live, &ftrace_source_ops, &ftrace_steps, SELF);
        s->depth = 4;
        s->stacks = true;
        s->instances[INSTANCE_STACKS].stacks = true;
        ASSERT_OK(tracepoint_load("data/tracefs-6.18", TRACEPOINT_BYTE_ORDER_HOST, &s->tracepoints, NULL));
        s->frames = calloc(s->depth, sizeof(uint64_t));
        s->cmdline = malloc(PROC_CMDLINE_MAX);
        s->n_tgids = 1u << 16;
        s->tgids = calloc(s->n_tgids, sizeof(int32_t));
        s->n_cpus = 1;
        s->lost_per_cpu = calloc(1, sizeof(uint64_t));
        s->cpus = calloc(2, sizeof(FtraceCpu));
        ASSERT_TRUE(s->frames && s->cmdline && s->tgids && s->lost_per_cpu && s->cpus);
        ASSERT_OK(merge_init(&s->merge, 2, &cpu_merge_ops));
        s->live.sink = (MsEventSink) { .event = sink_event };
        for (size_t i = 0; i < 2; i++)
                s->cpus[i] = (FtraceCpu) { .source = s, .fd = -EBADF,
                                           .instance = &s->instances[i == 0 ? INSTANCE_EVENTS : INSTANCE_STACKS] };
        s->n_cpus_open = 2;
        /* Known processes, so nothing is looked up in this machine's /proc. */
        s->tgids[100] = 100;
        s->tgids[SELF] = SELF;
        f->s = s;
        f->events = &s->cpus[0];
        f->allocs = &s->cpus[1];
        n_seen = 0;
}

static void fixture_done(Fixture *f) {
        ftrace_source_free(f->s);
}

static void alloc(FtraceCpu *c, int32_t tid, uint64_t pfn) {
        uint8_t rec[36] = {};

        put_common(rec, ID_ALLOC, tid);
        put(rec, 8, 8, pfn);
        put(rec, 16, 4, 0);
        put(rec, 24, 8, 0xcc0);
        put(rec, 32, 4, 1);
        cpu_handle_record(c, rec, sizeof(rec), 1000);
}

static void stack(FtraceCpu *c, int32_t tid, const uint64_t *frames, size_t n) {
        uint8_t rec[16 + 8 * 8] = {};

        ASSERT_LE(n, 8);
        put_common(rec, ID_KERNEL_STACK, tid);
        put(rec, 8, 4, (uint32_t) n);
        for (size_t i = 0; i < n; i++)
                put(rec, 16 + 8 * i, 8, frames[i]);
        cpu_handle_record(c, rec, 16 + 8 * n, 1001);
}

static void test_stacks_paired(void) {
        static const uint64_t outer[] = { 0xffffffff81000010, 0xffffffff81000011 },
                              inner[] = { 0xffffffff81000020 };
        Fixture f;

        fixture_init(&f);

        /* An allocation, one from an interrupt before its stack, then both stacks, inner first. */
        alloc(f.allocs, 100, 1);
        alloc(f.allocs, 100, 2);
        ASSERT_EQ(n_seen, 0);
        stack(f.allocs, 100, inner, 1);
        ASSERT_EQ(n_seen, 1);
        ASSERT_EQ(seen[0].ev.page.pfn, 2);
        ASSERT_EQ(seen[0].ev.page.stack.n_frames, 1);
        ASSERT_EQ(seen[0].ev.page.stack.n_kernel_frames, 1);
        ASSERT_TRUE(seen[0].frames[0] == inner[0]);
        stack(f.allocs, 100, outer, 2);
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(seen[1].ev.page.pfn, 1);
        ASSERT_EQ(seen[1].ev.pid, 100);
        ASSERT_EQ(seen[1].ev.tid, 100);
        ASSERT_EQ(seen[1].ev.page.stack.n_frames, 2);
        ASSERT_TRUE(seen[1].frames[0] == outer[0] && seen[1].frames[1] == outer[1]);
        ASSERT_TRUE(seen[1].ev.timestamp_nsec == 1000);

        /* The daemon's own allocation leaves a marker: its stack does not go to the next one. */
        alloc(f.allocs, SELF, 3);
        stack(f.allocs, SELF, outer, 2);
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(f.s->self_samples, 1);
        /* So does a failed allocation (pfn -1). */
        alloc(f.allocs, 100, UINT64_MAX);
        stack(f.allocs, 100, outer, 2);
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(f.s->failed_allocs, 1);
        alloc(f.allocs, 100, 4);
        stack(f.allocs, 100, inner, 1);
        ASSERT_EQ(n_seen, 3);
        ASSERT_EQ(seen[2].ev.page.pfn, 4);
        ASSERT_TRUE(seen[2].frames[0] == inner[0]);

        /* A stack with nothing waiting (the event came before we started reading) is ignored. */
        stack(f.allocs, 100, inner, 1);
        ASSERT_EQ(n_seen, 3);
        ASSERT_EQ(f.s->stack_failed, 0);
        fixture_done(&f);
}

/* kmem_cache_alloc (id 659 in tests/data/tracefs-6.18): call_site@8, ptr@16, name@24 (data_loc),
 * bytes_req@32, bytes_alloc@40; the name at 64. */
static void cache_alloc(FtraceCpu *c, int32_t tid, uint64_t ptr, uint8_t *rec) {
        memset(rec, 0, 72);
        put_common(rec, 659, tid);
        put(rec, 8, 8, UINT64_C(0xffffffff81000300));
        put(rec, 16, 8, ptr);
        put(rec, 24, 4, (5u << 16) | 64u);
        put(rec, 32, 8, 184);
        put(rec, 40, 8, 192);
        memcpy(rec + 64, "filp", 5);
        cpu_handle_record(c, rec, 72, 1000);
}

/* Slab objects: an allocation waits for its stack like a page's and keeps its cache name though its
 * record is read over meanwhile; the daemon's own leaves a marker; a kfree comes at once, kfree(NULL)
 * not at all. */
static void test_slab(void) {
        static const uint64_t frames[] = { 0xffffffff81000040, 0xffffffff81000041 };
        uint8_t rec[72], free_rec[24] = {};
        Fixture f;

        fixture_init(&f);
        cache_alloc(f.allocs, 100, UINT64_C(0xffff888000005000), rec);
        memset(rec, 0xee, sizeof(rec));         /* the reader's page, reused before the stack comes */
        ASSERT_EQ(n_seen, 0);
        stack(f.allocs, 100, frames, 2);
        ASSERT_EQ(n_seen, 1);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_OBJECT_ALLOC);
        ASSERT_EQ(seen[0].ev.pid, 100);
        ASSERT_TRUE(seen[0].ev.object.ptr == UINT64_C(0xffff888000005000));
        ASSERT_TRUE(seen[0].ev.object.call_site == UINT64_C(0xffffffff81000300));
        ASSERT_EQ(seen[0].ev.object.bytes_requested, 184);
        ASSERT_EQ(seen[0].ev.object.bytes_allocated, 192);
        ASSERT_STREQ(seen[0].cache, "filp");
        ASSERT_EQ(seen[0].ev.object.stack.n_frames, 2);
        ASSERT_TRUE(seen[0].frames[1] == frames[1]);

        cache_alloc(f.allocs, SELF, UINT64_C(0xffff888000006000), rec);
        stack(f.allocs, SELF, frames, 2);
        ASSERT_EQ(n_seen, 1);
        ASSERT_EQ(f.s->self_samples, 1);

        /* kfree (id 657): call_site@8, ptr@16. */
        put_common(free_rec, 657, SELF);
        put(free_rec, 8, 8, UINT64_C(0xffffffff81000400));
        put(free_rec, 16, 8, UINT64_C(0xffff888000005000));
        cpu_handle_record(f.events, free_rec, sizeof(free_rec), 1002);
        put(free_rec, 16, 8, 0);
        cpu_handle_record(f.events, free_rec, sizeof(free_rec), 1003);
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_OBJECT_FREE);
        ASSERT_TRUE(seen[1].ev.object.ptr == UINT64_C(0xffff888000005000));
        ASSERT_EQ(f.s->failed_allocs, 0);
        ASSERT_EQ(f.s->bad_records, 0);
        fixture_done(&f);
}

static void test_stack_frames_cleaned(void) {
        /* ULONG_MAX ends old kernels' arrays, and no frame is 0. (The tracing code's own frames at the
         * top are the core's to drop: accounting.c, test-accounting.) */
        static const uint64_t frames[] = { 0xffffffff81000030, 0, 0xffffffff81000031, 0xffffffff81000032,
                                           UINT64_MAX };
        Fixture f;

        fixture_init(&f);
        alloc(f.allocs, 100, 5);
        stack(f.allocs, 100, frames, ELEMENTSOF(frames));
        ASSERT_EQ(n_seen, 1);
        ASSERT_EQ(seen[0].ev.page.stack.n_frames, 3);
        ASSERT_TRUE(seen[0].frames[0] == 0xffffffff81000030);
        ASSERT_TRUE(seen[0].frames[2] == 0xffffffff81000032);
        fixture_done(&f);
}

static void test_stack_never_comes(void) {
        Fixture f;

        fixture_init(&f);
        for (uint64_t pfn = 10; pfn < 10 + PENDING_MAX; pfn++)
                alloc(f.allocs, 100, pfn);
        ASSERT_EQ(n_seen, 0);
        /* One more than can wait: those waiting go without a stack, in their order. */
        alloc(f.allocs, 100, 10 + PENDING_MAX);
        ASSERT_EQ(n_seen, PENDING_MAX);
        for (size_t i = 0; i < PENDING_MAX; i++) {
                ASSERT_EQ(seen[i].ev.page.pfn, 10 + i);
                ASSERT_EQ(seen[i].ev.page.stack.n_frames, 0);
        }
        ASSERT_EQ(f.s->stack_failed, PENDING_MAX);
        fixture_done(&f);
}

static void test_tasks(void) {
        uint8_t rec[64];
        Fixture f;

        fixture_init(&f);

        /* task_newtask: pid@8, comm@12, clone_flags@32. A thread of 100, then a process. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_NEWTASK, 100);
        put(rec, 8, 4, 101);
        memcpy(rec + 12, "worker", 7);
        put(rec, 32, 8, 0x3d0f00);      /* CLONE_THREAD among them: what pthread_create() passes */
        cpu_handle_record(f.events, rec, 42, 1);
        put(rec, 8, 4, 102);
        put(rec, 32, 8, 0x1200011);     /* fork(): no CLONE_THREAD */
        cpu_handle_record(f.events, rec, 42, 2);
        ASSERT_EQ(n_seen, 0);

        /* sched_process_fork: parent_comm@8, parent_pid@12, child_comm@16, child_pid@20. */
        for (int32_t child = 101; child <= 102; child++) {
                memset(rec, 0, sizeof(rec));
                put_common(rec, ID_SCHED_FORK, 100);
                put(rec, 8, 4, (5u << 16) | 24u);
                put(rec, 12, 4, 100);
                put(rec, 16, 4, (5u << 16) | 29u);
                put(rec, 20, 4, (uint32_t) child);
                memcpy(rec + 24, "load", 5);
                memcpy(rec + 29, "load", 5);
                cpu_handle_record(f.events, rec, 34, 3);
        }
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_TASK_FORK);
        ASSERT_EQ(seen[0].ev.pid, 100);
        ASSERT_EQ(seen[0].ev.tid, 101);
        ASSERT_EQ(seen[0].ev.task.parent_pid, 100);
        ASSERT_EQ(seen[1].ev.pid, 102);
        ASSERT_EQ(seen[1].ev.tid, 102);
        ASSERT_EQ(seen[1].ev.task.parent_pid, 100);

        /* The thread's pages are its process's. */
        alloc(f.allocs, 101, 7);
        stack(f.allocs, 101, NULL, 0);
        ASSERT_EQ(n_seen, 3);
        ASSERT_EQ(seen[2].ev.pid, 100);
        ASSERT_EQ(seen[2].ev.tid, 101);

        /* sched_process_exit: comm@8, pid@24, prio@28, group_dead@32; the tid is forgotten. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_SCHED_EXIT, 101);
        memcpy(rec + 8, "worker", 7);
        put(rec, 24, 4, 101);
        cpu_handle_record(f.events, rec, 33, 4);
        ASSERT_EQ(n_seen, 4);
        ASSERT_EQ(seen[3].ev.type, MS_EVENT_TASK_EXIT);
        ASSERT_EQ(seen[3].ev.pid, 100);
        ASSERT_EQ(seen[3].ev.tid, 101);
        ASSERT_EQ(f.s->tgids[101], 0);

        /* A free from the events instance goes at once, charged by page, not stacked. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_FREE, 100);
        put(rec, 8, 8, 7);
        cpu_handle_record(f.events, rec, 20, 5);
        ASSERT_EQ(n_seen, 5);
        ASSERT_EQ(seen[4].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[4].ev.page.pfn, 7);
        ASSERT_EQ(f.events->n_pending, 0);
        fixture_done(&f);
}

static void mkdirf(const char *dir, const char *name) {
        char path[512];

        (void) snprintf(path, sizeof(path), "%s/instances/%s", dir, name);
        ASSERT_OK(mkdir(path, 0700));
}

static bool exists(const char *dir, const char *name) {
        char path[512];

        (void) snprintf(path, sizeof(path), "%s/instances/%s", dir, name);
        return access(path, F_OK) == 0;
}

static void test_stale_instances(void) {
        char dir[] = "/tmp/test-ftrace.XXXXXX", path[512], name[64], live[64], dead[64], dead_stacks[64];
        int pipefd[2];
        pid_t child, gone;

        ASSERT_NOT_NULL(mkdtemp(dir));
        (void) snprintf(path, sizeof(path), "%s/instances", dir);
        ASSERT_OK(mkdir(path, 0700));

        /* A live memstrackd: a child named so, which says when it is (readyfd) and lives until pipefd
         * closes. */
        int readyfd[2];
        char c;
        ASSERT_OK(pipe(pipefd));
        ASSERT_OK(pipe(readyfd));
        child = fork();
        ASSERT_OK(child);
        if (child == 0) {
                (void) prctl(PR_SET_NAME, "memstrackd");
                (void) close(pipefd[1]);
                (void) close(readyfd[0]);
                /* read() returns 0 once the parent closes its end. Results used: _FORTIFY_SOURCE (as
                 * distributions build) marks both warn_unused_result, which (void) does not silence. */
                if (write(readyfd[1], "r", 1) != 1)
                        _exit(1);
                _exit(read(pipefd[0], &c, 1) < 0);
        }
        (void) close(pipefd[0]);
        (void) close(readyfd[1]);
        ASSERT_EQ(read(readyfd[0], &c, 1), 1);
        (void) close(readyfd[0]);
        /* A memstrackd that is gone: a child that exited and was reaped. */
        gone = fork();
        ASSERT_OK(gone);
        if (gone == 0)
                _exit(0);
        ASSERT_EQ(waitpid(gone, NULL, 0), gone);

        (void) snprintf(live, sizeof(live), "memstrackd-%d", (int) child);
        (void) snprintf(dead, sizeof(dead), "memstrackd-%d", (int) gone);
        (void) snprintf(dead_stacks, sizeof(dead_stacks), "memstrackd-%d-stacks", (int) gone);
        mkdirf(dir, live);
        mkdirf(dir, dead);
        mkdirf(dir, dead_stacks);
        /* A pid alive but not a memstrackd (ourselves, named test-ftrace): reused, so stale. */
        (void) snprintf(name, sizeof(name), "memstrackd-%d", (int) getpid());
        mkdirf(dir, name);
        /* Not ours to judge. */
        mkdirf(dir, "memstrackd-x");
        mkdirf(dir, "memstrackd-12-other");
        mkdirf(dir, "someone-else");

        instances_clean_stale(dir, 1);
        ASSERT_TRUE(exists(dir, live));
        ASSERT_TRUE(!exists(dir, dead));
        ASSERT_TRUE(!exists(dir, dead_stacks));
        ASSERT_TRUE(!exists(dir, name));
        ASSERT_TRUE(exists(dir, "memstrackd-x"));
        ASSERT_TRUE(exists(dir, "memstrackd-12-other"));
        ASSERT_TRUE(exists(dir, "someone-else"));

        (void) close(pipefd[1]);
        ASSERT_EQ(waitpid(child, NULL, 0), child);
        /* The live one's turn, now that it is gone; and our own pid's is always stale to us. */
        instances_clean_stale(dir, getpid());
        ASSERT_TRUE(!exists(dir, live));

        (void) snprintf(path, sizeof(path), "rm -rf '%s'", dir);
        ASSERT_EQ(system(path), 0);
}

int main(int argc, char *argv[]) {
        log_set_max_level(LOG_WARNING);
        int r = slab_live_mode(argc, argv, &ftrace_source_type);
        if (r >= 0)
                return r;
        TEST(test_stacks_paired);
        TEST(test_stack_frames_cleaned);
        TEST(test_stack_never_comes);
        TEST(test_tasks);
        TEST(test_stale_instances);
        TEST(test_slab);
        return 0;
}
