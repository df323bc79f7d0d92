/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounting.h"
#include "view.h"
#include "macro.h"
#include "synthetic-events.h"
#include "tests.h"

/* Addresses from tests/data/kallsyms-modules. */
#define K_ALLOC_PAGES   0xffffffff81003010
#define K_ANON_PAGE     0xffffffff81005020
#define K_MM_FAULT      0xffffffff81006030
#define K_PAGE_FAULT    0xffffffff81008040
#define K_VFS_WRITE     0xffffffff8100a010
#define K_LOAD_MODULE   0xffffffff8100b100
#define K_INIT_MODULE   0xffffffff8100c100
#define K_FINIT_MODULE  0xffffffff8100d010
#define K_SYSCALL       0xffffffff8100e010
#define M_EXT4_ALLOC    0xffffffffc0002010
#define M_EXT4_WRITE    0xffffffffc0001010
#define M_XFS_BUF       0xffffffffc0100010
#define K_BPF_TRACE_RUN 0xffffffff81010080
#define K_TRACEITER     0xffffffff81011040
#define BPF_PROG        0xffffffffc0200010
#define K_ALLOC_BULK    0xffffffff81012005
#define K_MAS_ALLOC     0xffffffff81013040
#define BPF_TRAMPOLINE  0xffffffffc0202040

static const uint64_t fault_chain[] = { K_ALLOC_PAGES, K_ANON_PAGE, K_MM_FAULT, K_PAGE_FAULT };
static const uint64_t write_chain[] = { K_ALLOC_PAGES, K_VFS_WRITE, K_SYSCALL };
/* ext4 is nearest the allocation site; xfs further out: ext4 is charged. */
static const uint64_t ext4_chain[] = { K_ALLOC_PAGES, M_EXT4_ALLOC, M_EXT4_WRITE, M_XFS_BUF, K_VFS_WRITE, K_SYSCALL };
static const uint64_t loader_chain[] = { K_ALLOC_PAGES, K_LOAD_MODULE, K_FINIT_MODULE, K_SYSCALL };
/* do_init_module() as the tail call it is: load_module()'s frame is gone. */
static const uint64_t init_chain[] = { K_ALLOC_PAGES, K_INIT_MODULE, K_FINIT_MODULE, K_SYSCALL };

static Ksym *fixture_ksym(void) {
        Ksym *k = NULL;
        ASSERT_OK(ksym_load("data/kallsyms-modules", &k));
        return k;
}

static Accounting *new_accounting(const Ksym *k, bool threads) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        c.track_threads = threads;
        c.per_process_stacks = true;
        c.max_exited_tasks = 4;
        ASSERT_OK(accounting_new(&c, k, &a));
        return a;
}

/* The cgroup id the next allocations and samples carry. */
static uint64_t cgroup_id;

static void alloc_chain(Accounting *a, int32_t pid, int32_t tid, uint64_t pfn, unsigned order, const uint64_t *frames,
                size_t n) {
        static uint64_t now = 1000;
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, order, synthetic_stack(frames, n, n));

        e.tid = tid;
        e.cgroup_id = cgroup_id;
        e.timestamp_nsec = now++;
        accounting_handle_event(a, &e);
}

static void alloc(Accounting *a, int32_t pid, uint64_t pfn, unsigned order) {
        alloc_chain(a, pid, pid, pfn, order, fault_chain, ELEMENTSOF(fault_chain));
}

static void free_pages_(Accounting *a, int32_t pid, uint64_t pfn, unsigned order) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_FREE, pid, pfn, order, (MsStack) {});
        accounting_handle_event(a, &e);
}

static void sample_chain(Accounting *a, int32_t pid, LedgerUnit unit, int64_t delta, uint64_t peak, const uint64_t *frames,
                size_t n) {
        static uint64_t now = 1000000;
        MsEvent e = synthetic_sample_event(pid, synthetic_stack(frames, n, n), unit, delta, peak);

        e.cgroup_id = cgroup_id;
        e.timestamp_nsec = now++;
        accounting_handle_event(a, &e);
}

#define sample(a, pid, delta, peak, chain) \
        sample_chain(a, pid, LEDGER_PAGES, delta, peak, chain, ELEMENTSOF(chain))

/* The global stack-tree leaf of a chain allocated by a process (interning an existing chain creates nothing). */
static Ledger leaf_pages(Accounting *a, int32_t pid, const uint64_t *frames, size_t n) {
        StackTree *st = accounting_stacktree(a);
        Usage *u = accounting_usage(a);
        uint32_t leaf = stacktree_intern(st, frames, n, n, usage_task_scope(u, usage_find_process(u, pid)));
        uint32_t twin = stacktree_node(st, leaf)->twin;
        return stacktree_pages(st, twin != STACK_NODE_NONE ? twin : leaf);
}


static void task_event(Accounting *a, MsEventType type, int32_t pid, const char *name) {
        MsEvent e = type == MS_EVENT_MODULE_LOAD || type == MS_EVENT_MODULE_FREE ? synthetic_module_event(type, name) :
                    synthetic_task_event(type, pid, name, 1);

        e.pid = e.tid = pid;
        accounting_handle_event(a, &e);
}

static const Task *process(Accounting *a, int32_t pid) {
        Usage *u = accounting_usage(a);
        uint32_t i = usage_find_process(u, pid);
        ASSERT_NE(i, USAGE_TASK_NONE);
        return usage_task(u, i);
}

static const ModuleUsage *module(Accounting *a, const char *name) {
        Usage *u = accounting_usage(a);
        for (uint16_t id = 1; id <= usage_module_count(u); id++)
                if (streq(usage_module(u, id)->name, name))
                        return usage_module(u, id);
        ASSERT_TRUE(!"module not found");
        return NULL;
}

/* The unit of a cgroup id, named "cg<id>" if it was pending. */
static const UnitUsage *unit_of(Accounting *a, uint64_t id) {
        Units *u = accounting_units(a);
        uint32_t c = units_cgroup_intern(u, id);
        ASSERT_NE(c, UNITS_NONE);
        if (units_cgroup(u, c)->pending) {
                char name[32], path[64];
                (void) snprintf(name, sizeof(name), "cg%" PRIu64 ".service", id);
                (void) snprintf(path, sizeof(path), "/system.slice/%s", name);
                ASSERT_OK(units_cgroup_resolve(u, c, name, path));
        }
        return units_unit(u, units_unit_of(u, c));
}

/* Every view of current pages must agree: tasks, both stack trees, modules, units, cgroups, page table,
 * totals, the charge index. */
static void check_invariants(Accounting *a) {
        const char *what = NULL;
        int r = accounting_check_sums(a, &what);

        if (r < 0)
                fprintf(stderr, "sums disagree: %s\n", what ?: strerror(-r));
        ASSERT_OK(r);
}

/* The check finds a count out of step with the others, whichever it is, and names it. */
static void test_check_sums_finds_disagreement(void) {
        Accounting *a = new_accounting(NULL, false);
        const char *what = NULL;

        alloc(a, 100, 0x1000, 2);
        alloc(a, 200, 0x2000, 0);
        check_invariants(a);

        Task *t = usage_task(accounting_usage(a), usage_find_process(accounting_usage(a), 200));
        t->ledger[LEDGER_PAGES].current++;
        ASSERT_EQ(accounting_check_sums(a, &what), -EBADMSG);
        ASSERT_NOT_NULL(strstr(what, "current"));
        t->ledger[LEDGER_PAGES].current--;
        check_invariants(a);

        ModuleUsage *m = usage_module(accounting_usage(a), usage_find_module_shown(accounting_usage(a), "vmlinux"));
        m->ledger[LEDGER_PAGES].current--;
        what = NULL;
        ASSERT_EQ(accounting_check_sums(a, &what), -EBADMSG);
        ASSERT_NOT_NULL(what);
        m->ledger[LEDGER_PAGES].current++;

        free_pages_(a, 100, 0x1000, 2);
        free_pages_(a, 200, 0x2000, 0);
        check_invariants(a);
        accounting_free(a);
}

static void test_orders_and_untracked(void) {
        Accounting *a = new_accounting(NULL, false);
        AccountingStats s;

        for (unsigned o = 0; o <= 10; o++)
                alloc(a, 10, (uint64_t) (o + 1) << 11, o);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 2047);
        ASSERT_EQ(process(a, 10)->allocs, 11);
        check_invariants(a);

        for (unsigned o = 0; o <= 10; o++)
                free_pages_(a, 10, (uint64_t) (o + 1) << 11, o);
        /* Pages allocated before tracing began: counted, not charged to anyone. */
        free_pages_(a, 10, 999999, 0);
        free_pages_(a, 10, 1 << 20, 4);

        accounting_get_stats(a, &s);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 2047);
        ASSERT_EQ(s.allocs, 11);
        ASSERT_EQ(s.alloc_pages, 2047);
        ASSERT_EQ(s.frees, 11);
        ASSERT_EQ(s.freed_pages, 2047);
        ASSERT_EQ(s.untracked_frees, 2);
        ASSERT_EQ(s.untracked_free_pages, 17);
        ASSERT_EQ(s.peak_pages, 2047);
        check_invariants(a);
        accounting_free(a);
}

/* An order no kernel produces is counted and not applied: no charge, and no 2^31-pfn scan on a free. */
static void test_invalid_order(void) {
        Accounting *a = new_accounting(NULL, false);
        AccountingStats s;

        alloc(a, 10, 0, MS_EVENT_ORDER_MAX);
        alloc(a, 10, 1 << 22, 0);
        alloc(a, 10, 1 << 23, MS_EVENT_ORDER_MAX + 1);
        free_pages_(a, 10, 0, 31);
        free_pages_(a, 10, 1 << 22, UINT32_MAX);
        /* A chain of 3 frames without its frames: counted, not applied. */
        MsEvent missing = synthetic_page_event(MS_EVENT_PAGE_ALLOC, 10, 1 << 24, 0, synthetic_stack(NULL, 3, 3));
        accounting_handle_event(a, &missing);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.invalid_events, 4);
        ASSERT_EQ(s.allocs, 2);
        ASSERT_EQ(s.current_pages, (UINT64_C(1) << MS_EVENT_ORDER_MAX) + 1);
        ASSERT_EQ(s.untracked_frees, 0);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, (UINT64_C(1) << MS_EVENT_ORDER_MAX) + 1);
        check_invariants(a);

        /* The largest valid order still frees exactly, and a reset keeps the count. */
        free_pages_(a, 10, 0, MS_EVENT_ORDER_MAX);
        accounting_reset(a, ACCOUNTING_RESET_ALL);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(s.invalid_events, 4);
        accounting_free(a);
}

/* A block that does not end below 2^40 pfns, the page table's range, is invalid as an impossible order
 * is: counted, not applied, not a failure to allocate nor an untracked free. */
static void test_invalid_pfn(void) {
        Accounting *a = new_accounting(NULL, false);
        AccountingStats s;

        alloc(a, 10, MS_PAGE_KEY_MAX + 1, 0);
        alloc(a, 10, MS_PAGE_KEY_MAX, 1);
        alloc(a, 10, MS_PAGE_KEY_MAX + 1 - (UINT64_C(1) << MS_EVENT_ORDER_MAX), MS_EVENT_ORDER_MAX);
        alloc(a, 10, UINT64_MAX, 0);
        alloc(a, 10, MS_PAGE_KEY_MAX, 0);
        free_pages_(a, 10, UINT64_MAX - 1, 1);
        free_pages_(a, 10, MS_PAGE_KEY_MAX + 1, 0);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.invalid_events, 5);
        ASSERT_EQ(s.alloc_failures, 0);
        ASSERT_EQ(s.allocs, 2);
        ASSERT_EQ(s.current_pages, (UINT64_C(1) << MS_EVENT_ORDER_MAX) + 1);
        ASSERT_EQ(s.untracked_frees, 0);
        check_invariants(a);

        free_pages_(a, 10, MS_PAGE_KEY_MAX, 0);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.freed_pages, 1);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, UINT64_C(1) << MS_EVENT_ORDER_MAX);
        check_invariants(a);
        accounting_free(a);
}

/* Counts stop at their ceiling, never wrap, and say so: samples that would take the total of pages beyond
 * ACCOUNTING_PAGES_MAX apply up to it (every count of pages is part of the total, so none gets beyond
 * either), an allocation beyond it is not tracked, losses stop at COUNT_MAX, bytes ledgers there too;
 * a sample of more pages than a machine has is invalid. */
static void test_saturation(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        AccountingStats s;

        sample(a, 10, (int64_t) MS_PAGES_MAX + 1, 0, fault_chain);
        sample(a, 10, -(int64_t) MS_PAGES_MAX - 1, 0, fault_chain);
        sample(a, 10, 0, MS_PAGES_MAX + 1, fault_chain);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.invalid_events, 3);
        ASSERT_EQ(s.samples, 0);

        /* Two samples of 2^51 pages are 2^52: with one page allocated before them, the second applies
         * 2^51 - 2, the third nothing. */
        uint64_t half = MS_PAGES_MAX / 2;
        alloc(a, 12, 4096, 0);
        sample(a, 10, (int64_t) half, half, fault_chain);
        sample(a, 11, (int64_t) half, half, ext4_chain);
        sample(a, 10, (int64_t) half, half, ext4_chain);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.samples, 3);
        ASSERT_EQ(s.saturated_events, 2);
        ASSERT_EQ(s.current_pages, ACCOUNTING_PAGES_MAX);
        ASSERT_EQ(s.peak_pages, ACCOUNTING_PAGES_MAX);
        ASSERT_EQ(s.sampled_pages, ACCOUNTING_PAGES_MAX - 1);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, half);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_PAGES].current, half - 2);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].peak, half - 2);
        check_invariants(a);

        /* At the ceiling: a rise and a sample are held there, an allocation is not tracked; all counted.
         * What goes is taken off as ever, and an allocation then fits again. */
        sample(a, 10, 0, 1, write_chain);
        sample(a, 11, 1, 1, write_chain);
        alloc(a, 12, 8192, 3);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.saturated_events, 5);
        ASSERT_EQ(s.current_pages, ACCOUNTING_PAGES_MAX);
        ASSERT_EQ(s.peak_pages, ACCOUNTING_PAGES_MAX);
        ASSERT_EQ(process(a, 12)->ledger[LEDGER_PAGES].current, 1);
        check_invariants(a);
        free_pages_(a, 12, 8192, 3);
        sample(a, 10, -13, 0, fault_chain);
        alloc(a, 12, 8192, 3);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.untracked_frees, 1);
        ASSERT_EQ(s.current_pages, ACCOUNTING_PAGES_MAX - 5);
        ASSERT_EQ(process(a, 12)->ledger[LEDGER_PAGES].current, 9);
        check_invariants(a);

        /* Bytes have no total: their ledgers stop at COUNT_MAX on their own, and the core counts it. The
         * most a sample may say is 2^56 bytes: the 128th such sample gets there. */
        for (unsigned i = 0; i < 128; i++)
                sample_chain(a, 10, LEDGER_BYTES, (int64_t) MS_EVENT_SAMPLE_BYTES_MAX, 0, ext4_chain,
                             ELEMENTSOF(ext4_chain));
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.saturated_events, 6);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, COUNT_MAX);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_BYTES].peak, COUNT_MAX);

        /* Losses: 2^63 - 1 twice and 5 more are 2^63 - 1, not 3. */
        MsEvent lost = synthetic_lost_event(0, COUNT_MAX), five = synthetic_lost_event(0, 5);
        accounting_handle_event(a, &lost);
        accounting_handle_event(a, &lost);
        accounting_handle_event(a, &five);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.lost_events, COUNT_MAX);
        ASSERT_EQ(s.saturated_events, 8);

        /* A reset forgets the counts, not that they were held. */
        accounting_reset(a, ACCOUNTING_RESET_ALL);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(s.saturated_events, 8);
        accounting_free(a);
        ksym_free(k);
}

static void test_cross_task_and_split_frees(void) {
        Accounting *a = new_accounting(NULL, false);

        /* 10 allocates, 20 frees: the pages leave 10, and 20 never owned them. */
        alloc(a, 10, 512, 2);
        alloc(a, 20, 1024, 0);
        free_pages_(a, 20, 512, 2);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(process(a, 20)->ledger[LEDGER_PAGES].current, 1);
        ASSERT_EQ(process(a, 20)->frees, 0);

        /* An order-3 block split and freed one page at a time by two other tasks. */
        alloc(a, 10, 2048, 3);
        for (unsigned i = 0; i < 8; i++) {
                free_pages_(a, i % 2 ? 30 : 20, 2048 + 7 - i, 0);
                ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 7 - i);
                check_invariants(a);
        }
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 8);
        accounting_free(a);
}

static void test_peaks_not_summed(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);

        /* 10 pages through the fault path, all freed, then 10 through write: the process never held
         * more than 10 at once, though each stack's peak is 10. */
        for (unsigned i = 0; i < 10; i++)
                alloc_chain(a, 10, 10, 4096 + i, 0, fault_chain, ELEMENTSOF(fault_chain));
        for (unsigned i = 0; i < 10; i++)
                free_pages_(a, 10, 4096 + i, 0);
        for (unsigned i = 0; i < 10; i++)
                alloc_chain(a, 10, 10, 8192 + i, 0, write_chain, ELEMENTSOF(write_chain));
        free_pages_(a, 10, 8192, 0);

        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 9);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 10);

        StackTree *st = accounting_stacktree(a);
        const StackNode *root = stacktree_node(st, STACK_NODE_ROOT);
        ASSERT_EQ(stacktree_pages(st, STACK_NODE_ROOT).peak, 10);
        uint64_t sum_of_child_peaks = 0;
        for (uint32_t c = root->first_child; c != STACK_NODE_NONE; c = stacktree_node(st, c)->next_sibling)
                sum_of_child_peaks += stacktree_pages(st, c).peak;
        ASSERT_EQ(sum_of_child_peaks, 20);
        check_invariants(a);

        /* Resetting peaks brings them down to what is held now. */
        accounting_reset(a, ACCOUNTING_RESET_PEAKS);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 9);
        ASSERT_EQ(stacktree_pages(st, STACK_NODE_ROOT).peak, 9);
        accounting_free(a);
        ksym_free(k);
}

static void test_threads(void) {
        Accounting *a = new_accounting(NULL, true);

        /* Four threads of one process touch pages; a thread frees a page another allocated. */
        for (int32_t tid = 100; tid < 104; tid++)
                for (unsigned i = 0; i < 4; i++)
                        alloc_chain(a, 100, tid, (uint64_t) tid * 16 + i, 0, fault_chain, ELEMENTSOF(fault_chain));
        free_pages_(a, 101, 100 * 16, 0);

        ASSERT_EQ(process(a, 100)->ledger[LEDGER_PAGES].current, 15);
        ASSERT_EQ(process(a, 100)->ledger[LEDGER_PAGES].peak, 16);
        Usage *u = accounting_usage(a);
        unsigned threads = 0;
        for (uint32_t i = 0; i < usage_task_slots(u); i++) {
                const Task *t = usage_task(u, i);
                if (t && t->is_thread && t->tgid == 100) {
                        threads++;
                        ASSERT_EQ(t->ledger[LEDGER_PAGES].current, t->pid == 100 ? 3 : 4);
                }
        }
        ASSERT_EQ(threads, 4);
        check_invariants(a);
        accounting_free(a);
}

static void test_exited_tasks(void) {
        Accounting *a = new_accounting(NULL, false);
        AccountingStats s;

        task_event(a, MS_EVENT_TASK_NEW, 50, "systemd-journal");
        alloc(a, 50, 100, 0);
        task_event(a, MS_EVENT_TASK_EXIT, 50, NULL);
        ASSERT_TRUE(process(a, 50)->exited);
        ASSERT_STREQ(process(a, 50)->comm, "systemd-journal");
        ASSERT_EQ(process(a, 50)->ledger[LEDGER_PAGES].current, 1);

        /* Many more exits: 50 is evicted; its page is held by "[evicted]" and freed from it. */
        for (int32_t pid = 60; pid < 80; pid++) {
                alloc(a, pid, 1000 + (uint64_t) pid, 0);
                task_event(a, MS_EVENT_TASK_EXIT, pid, NULL);
        }
        Usage *u = accounting_usage(a);
        ASSERT_EQ(usage_find_process(u, 50), USAGE_TASK_NONE);
        ASSERT_GT(usage_task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 0);
        check_invariants(a);
        free_pages_(a, 1, 100, 0);
        for (int32_t pid = 60; pid < 80; pid++)
                free_pages_(a, 1, 1000 + (uint64_t) pid, 0);
        ASSERT_EQ(usage_task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 0);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(s.untracked_frees, 0);
        check_invariants(a);
        accounting_free(a);
}

/*
 * Eviction rewrites no page owner: pages keep naming evicted slots, which are reused only once their last
 * page is freed. Churn through many short-lived processes whose pages outlive them, freed by others.
 */
static void test_eviction_churn(void) {
        Accounting *a = new_accounting(NULL, true);
        Usage *u = accounting_usage(a);
        UsageStats us;
        AccountingStats s;

        srand(11);
        for (int32_t pid = 100; pid < 3100; pid++) {
                MsEvent fork = synthetic_task_event(MS_EVENT_TASK_FORK, pid, NULL, 1);
                accounting_handle_event(a, &fork);
                alloc_chain(a, pid, pid, (uint64_t) pid * 8, 1, fault_chain, ELEMENTSOF(fault_chain));
                alloc_chain(a, pid, pid + 100000, (uint64_t) pid * 8 + 4, 0, write_chain, ELEMENTSOF(write_chain));
                /* Some pages die with their task, some outlive it and are freed later by someone else. */
                if (rand() % 2)
                        free_pages_(a, pid, (uint64_t) pid * 8, 1);
                MsEvent exit_thread = synthetic_event(MS_EVENT_TASK_EXIT, pid);
                exit_thread.tid = pid + 100000;
                accounting_handle_event(a, &exit_thread);
                task_event(a, MS_EVENT_TASK_EXIT, pid, NULL);
                if (pid % 7 == 0)
                        for (int32_t old = pid - 50; old >= 100 && old < pid - 40; old++) {
                                free_pages_(a, 1, (uint64_t) old * 8, 1);
                                free_pages_(a, 1, (uint64_t) old * 8 + 4, 0);
                        }
                if (pid % 500 == 0)
                        check_invariants(a);
        }
        usage_get_stats(u, &us);
        ASSERT_GT(us.tasks_evicted, 5000);
        ASSERT_GT(us.tasks_recycled, 0);
        ASSERT_EQ(us.underflows, 0);
        check_invariants(a);

        /* Free everything left: every count returns to zero exactly, every evicted slot is reusable. */
        for (int32_t pid = 100; pid < 3100; pid++) {
                free_pages_(a, 1, (uint64_t) pid * 8, 1);
                free_pages_(a, 1, (uint64_t) pid * 8 + 4, 0);
        }
        accounting_get_stats(a, &s);
        usage_get_stats(u, &us);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(usage_task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(us.tasks_recycled, us.tasks_evicted);
        ASSERT_EQ(us.underflows, 0);
        check_invariants(a);
        accounting_free(a);
}

/* The bound on exited tasks (4 here) holds after every event: tasks also end when a fork reuses their
 * pid or an allocation shows their thread id in another process, with no exit event to evict after. */
static void test_exited_bound_every_event(void) {
        Accounting *a = new_accounting(NULL, true);
        Usage *u = accounting_usage(a);
        UsageStats us;

        for (int32_t round = 0; round < 3; round++)
                for (int32_t pid = 100; pid < 110; pid++) {
                        /* A fork on a pid seen before: whoever had it is gone. */
                        task_event(a, MS_EVENT_TASK_FORK, pid, NULL);
                        usage_get_stats(u, &us);
                        ASSERT_LE(us.n_exited, 4);
                        /* Thread 5000 + pid moves between processes: its old record is gone. */
                        alloc_chain(a, pid + round % 2, 5000 + pid, (uint64_t) (round * 100 + pid) * 8, 0, fault_chain,
                                    ELEMENTSOF(fault_chain));
                        usage_get_stats(u, &us);
                        ASSERT_LE(us.n_exited, 4);
                }
        usage_get_stats(u, &us);
        ASSERT_EQ(us.n_exited, 4);
        ASSERT_GT(us.tasks_evicted, 0);
        check_invariants(a);
        accounting_free(a);
}

static void test_module_attribution(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);

        alloc_chain(a, 10, 10, 100, 1, ext4_chain, ELEMENTSOF(ext4_chain));
        alloc_chain(a, 10, 10, 104, 0, ext4_chain, ELEMENTSOF(ext4_chain));
        alloc_chain(a, 10, 10, 200, 0, fault_chain, ELEMENTSOF(fault_chain));
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 3);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].current, 0);
        /* Loaded before tracing began: kallsyms lists them, no load event came. */
        ASSERT_TRUE(module(a, "ext4")->loaded);
        ASSERT_TRUE(module(a, "xfs")->loaded);
        /* No module frame: the kernel image. */
        ASSERT_EQ(module(a, "vmlinux")->ledger[LEDGER_PAGES].current, 1);

        /* Freed by anyone: the module's count goes down, its peak stays. */
        free_pages_(a, 20, 100, 1);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 1);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].peak, 3);

        /* Pages of the module loader are "[loading]" until the kernel names the module; then they move. */
        alloc_chain(a, 30, 30, 300, 2, loader_chain, ELEMENTSOF(loader_chain));
        ASSERT_EQ(module(a, "[loading]")->ledger[LEDGER_PAGES].current, 4);
        alloc_chain(a, 31, 31, 320, 0, loader_chain, ELEMENTSOF(loader_chain));        /* another loader */
        task_event(a, MS_EVENT_MODULE_LOAD, 30, "nfs");
        ASSERT_EQ(module(a, "[loading]")->ledger[LEDGER_PAGES].current, 1);
        ASSERT_EQ(module(a, "nfs")->ledger[LEDGER_PAGES].current, 4);
        /* The loader's cells changed module: no walk of the page table. */
        AccountingStats s;
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.module_walks, 0);
        check_invariants(a);
        /* Its blocks followed: freeing one takes it off nfs. */
        free_pages_(a, 1, 320, 0);
        ASSERT_EQ(module(a, "[loading]")->ledger[LEDGER_PAGES].current, 0);
        ASSERT_TRUE(module(a, "nfs")->loaded);
        /* After the announcement, the module's initialization (do_init_module) goes straight to it. */
        alloc_chain(a, 30, 30, 400, 0, init_chain, ELEMENTSOF(init_chain));
        ASSERT_EQ(module(a, "nfs")->ledger[LEDGER_PAGES].current, 5);
        /* The same process loading the next module (modprobe: the dependencies first): load_module()
         * allocates for a module not named yet, not for the one it announced before. Seen on Debian's
         * kernel: ext4's tracepoint directories were charged to crc16, loaded just before it. */
        alloc_chain(a, 30, 30, 600, 1, loader_chain, ELEMENTSOF(loader_chain));
        ASSERT_EQ(module(a, "nfs")->ledger[LEDGER_PAGES].current, 5);
        ASSERT_EQ(module(a, "[loading]")->ledger[LEDGER_PAGES].current, 2);
        task_event(a, MS_EVENT_MODULE_LOAD, 30, "sunrpc");
        ASSERT_EQ(module(a, "sunrpc")->ledger[LEDGER_PAGES].current, 2);
        ASSERT_EQ(module(a, "[loading]")->ledger[LEDGER_PAGES].current, 0);
        alloc_chain(a, 30, 30, 610, 0, init_chain, ELEMENTSOF(init_chain));
        ASSERT_EQ(module(a, "sunrpc")->ledger[LEDGER_PAGES].current, 3);
        ASSERT_EQ(module(a, "nfs")->ledger[LEDGER_PAGES].current, 5);
        free_pages_(a, 30, 600, 1);
        free_pages_(a, 30, 610, 0);
        ASSERT_EQ(module(a, "sunrpc")->ledger[LEDGER_PAGES].current, 0);
        check_invariants(a);
        /* Its ordinary page faults are its own, not the module's. */
        alloc_chain(a, 30, 30, 500, 0, fault_chain, ELEMENTSOF(fault_chain));
        ASSERT_EQ(module(a, "nfs")->ledger[LEDGER_PAGES].current, 5);
        free_pages_(a, 1, 300, 2);
        ASSERT_EQ(module(a, "nfs")->ledger[LEDGER_PAGES].current, 1);
        task_event(a, MS_EVENT_MODULE_FREE, 30, "nfs");
        ASSERT_TRUE(!module(a, "nfs")->loaded);
        /* Unloaded: symbols not reloaded yet still list it, and must not bring it back. */
        static const uint64_t new_ext4_node[] = { K_ALLOC_PAGES, M_EXT4_WRITE + 0x20, K_VFS_WRITE };
        task_event(a, MS_EVENT_MODULE_FREE, 30, "ext4");
        alloc_chain(a, 10, 10, 600, 0, new_ext4_node, ELEMENTSOF(new_ext4_node));
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 2);
        ASSERT_TRUE(!module(a, "ext4")->loaded);
        check_invariants(a);
        accounting_free(a);
        ksym_free(k);
}

/*
 * Symbols are reloaded a moment after a burst of module loads, not per load. Stack nodes created in between
 * were classified with the old table (a new module's code resolves to the previous module's last symbol);
 * the reload classifies them again and moves their pages, with one page-table walk, only if needed.
 */
static void test_deferred_symbols(void) {
        static const uint64_t xfs_chain[] = { K_ALLOC_PAGES, M_XFS_BUF + 0x1000, K_PAGE_FAULT };
        char path[] = "/tmp/test-accounting-kallsyms-XXXXXX";
        Ksym *full = fixture_ksym(), *old = NULL;
        AccountingStats s;
        char line[256];

        /* The table before xfs was loaded. */
        int fd = mkstemp(path);
        ASSERT_OK(fd);
        FILE *in = fopen("data/kallsyms-modules", "re"), *out = fdopen(fd, "w");
        ASSERT_NOT_NULL(in);
        ASSERT_NOT_NULL(out);
        while (fgets(line, sizeof(line), in))
                if (!strstr(line, "[xfs]"))
                        fputs(line, out);
        fclose(in);
        fclose(out);
        ASSERT_OK(ksym_load(path, &old));
        (void) unlink(path);

        Accounting *a = new_accounting(old, false);
        alloc_chain(a, 10, 10, 100, 0, ext4_chain, ELEMENTSOF(ext4_chain));
        task_event(a, MS_EVENT_MODULE_LOAD, 10, "xfs");
        accounting_symbols_stale(a);
        ASSERT_TRUE(accounting_symbols_are_stale(a));
        alloc_chain(a, 10, 10, 200, 1, xfs_chain, ELEMENTSOF(xfs_chain));
        /* Until the reload, xfs code looks like ext4's. */
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 3);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].current, 0);

        accounting_set_ksym(a, full);
        ASSERT_TRUE(!accounting_symbols_are_stale(a));
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.symbol_walks, 1);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 1);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].current, 2);
        check_invariants(a);
        /* The pages leave the module they were moved to. */
        free_pages_(a, 1, 200, 1);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].peak, 2);

        /* A reload that changes no node's module walks nothing. */
        accounting_symbols_stale(a);
        alloc_chain(a, 10, 10, 300, 0, write_chain, ELEMENTSOF(write_chain));
        accounting_set_ksym(a, full);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.symbol_walks, 1);
        check_invariants(a);

        /* Samples through the same chain, before and after the reload: the later negative sample finds
         * the pages the earlier one charged under the module the chain had then, and takes them off it. */
        task_event(a, MS_EVENT_MODULE_LOAD, 11, "xfs");
        accounting_set_ksym(a, old);
        accounting_symbols_stale(a);
        static const uint64_t xfs_chain2[] = { K_ALLOC_PAGES, M_XFS_BUF + 0x1008, K_VFS_WRITE };
        sample(a, 11, 6, 6, xfs_chain2);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 7);
        accounting_set_ksym(a, full);
        sample(a, 11, 2, 2, xfs_chain2);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].current, 2);
        sample(a, 11, -7, 0, xfs_chain2);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.sample_untracked_pages, 0);
        ASSERT_EQ(module(a, "xfs")->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 2);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_PAGES].current, 1);
        check_invariants(a);
        sample(a, 11, -1, 0, xfs_chain2);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 1);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_PAGES].current, 0);
        check_invariants(a);

        accounting_free(a);
        ksym_free(old);
        ksym_free(full);
}

static void test_reset_all_and_lost(void) {
        Accounting *a = new_accounting(NULL, false);
        AccountingStats s;

        alloc(a, 10, 100, 3);
        MsEvent lost = synthetic_lost_event(0, 17);
        accounting_handle_event(a, &lost);
        accounting_reset(a, ACCOUNTING_RESET_ALL);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(s.lost_events, 17);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        /* A free of a page forgotten by the reset is an untracked free, not an underflow. */
        free_pages_(a, 10, 100, 3);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.untracked_frees, 1);
        check_invariants(a);

        /* The same pfn allocated twice: the lost free is detected and balanced. */
        alloc(a, 10, 7, 0);
        alloc(a, 11, 7, 0);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.stale_blocks, 1);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_PAGES].current, 1);
        check_invariants(a);
        accounting_free(a);
}

/* A long random sequence against a plain model: per-process current and peak must match exactly. */
/* Aggregated samples charge the same counters page records do, and their peaks are true maxima. */
static void test_samples(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        AccountingStats s;

        /* "task 10, fault chain: +10 pages, rose 15 above where it stood". */
        sample(a, 10, 10, 15, fault_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 10);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 15);
        ASSERT_EQ(leaf_pages(a, 10, fault_chain, ELEMENTSOF(fault_chain)).current, 10);
        ASSERT_EQ(leaf_pages(a, 10, fault_chain, ELEMENTSOF(fault_chain)).peak, 15);
        ASSERT_EQ(module(a, ACCOUNTING_KERNEL_MODULE)->ledger[LEDGER_PAGES].current, 10);
        ASSERT_EQ(module(a, ACCOUNTING_KERNEL_MODULE)->ledger[LEDGER_PAGES].peak, 15);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.samples, 1);
        ASSERT_EQ(s.sampled_pages, 10);
        ASSERT_EQ(s.current_pages, 10);
        ASSERT_EQ(s.peak_pages, 15);
        check_invariants(a);

        /* A peak below the delta is read as the delta; a rise that fell back leaves only the peak. */
        sample(a, 10, 5, 0, fault_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 15);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 15);
        sample(a, 10, 0, 3, fault_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 15);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 18);

        /* Pages go back: the peak stays. */
        sample(a, 10, -12, 0, fault_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 3);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 18);
        ASSERT_EQ(leaf_pages(a, 10, fault_chain, ELEMENTSOF(fault_chain)).current, 3);
        check_invariants(a);

        /* More going back than samples charged (charged before tracing, or a lost sample): only what is
         * held leaves, the rest is counted. Nothing underflows. */
        sample(a, 10, -100, 0, fault_chain);
        accounting_get_stats(a, &s);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(s.sample_untracked_pages, 97);
        ASSERT_EQ(s.sampled_pages, 0);
        ASSERT_EQ(s.current_pages, 0);
        UsageStats us;
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_EQ(us.underflows, 0);
        StackTreeStats sts;
        stacktree_get_stats(accounting_stacktree(a), &sts);
        ASSERT_EQ(sts.underflows, 0);
        check_invariants(a);

        /* Bad samples are counted and not applied. */
        sample_chain(a, 10, _LEDGER_UNIT_MAX, 5, 5, fault_chain, ELEMENTSOF(fault_chain));
        sample_chain(a, 10, _LEDGER_UNIT_INVALID, 5, 5, fault_chain, ELEMENTSOF(fault_chain));
        sample(a, 10, INT64_MIN, 0, fault_chain);
        /* More kernel frames than frames, and frames missing. */
        MsEvent bad = synthetic_sample_event(10, synthetic_stack(fault_chain, 1, 2), LEDGER_PAGES, 1, 0);
        accounting_handle_event(a, &bad);
        bad = synthetic_sample_event(10, synthetic_stack(NULL, 3, 0), LEDGER_PAGES, 1, 0);
        accounting_handle_event(a, &bad);
        /* Sizes no machine has: the counts would wrap or lose bits. */
        sample(a, 10, INT64_MAX, 0, fault_chain);
        sample(a, 10, -(int64_t) MS_EVENT_SAMPLE_PAGES_MAX - 1, 0, fault_chain);
        sample(a, 10, 1, MS_EVENT_SAMPLE_PAGES_MAX + 1, fault_chain);
        sample_chain(a, 10, LEDGER_BYTES, INT64_MAX, 0, fault_chain, ELEMENTSOF(fault_chain));
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.invalid_events, 9);
        ASSERT_EQ(s.samples, 5);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 18);
        check_invariants(a);

        accounting_free(a);
        ksym_free(k);
}

/* Samples and page records of one task and chain (a page_owner log brings both): a negative sample takes
 * back what samples charged, never the pages a block in the page table still names, whose free would then
 * find them gone. */
static void test_samples_beside_blocks(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        AccountingStats s;

        sample(a, 11, 2, 0, write_chain);
        alloc(a, 10, 64, 2);
        sample(a, 10, -2, 0, fault_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 4);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.sampled_pages, 2);
        ASSERT_EQ(s.sample_untracked_pages, 2);
        check_invariants(a);

        sample(a, 10, 3, 0, fault_chain);
        sample(a, 10, -5, 0, fault_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 4);
        free_pages_(a, 10, 64, 2);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        UsageStats us;
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_EQ(us.underflows, 0);
        check_invariants(a);
        accounting_free(a);
        ksym_free(k);
}

/* Two chains of one task, each rising by 10 and falling back: each chain's peak is 10, and so is the
 * task's: the peak of a sum is never the sum of its parts' peaks. */
static void test_sample_peaks_not_summed(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        AccountingStats s;

        sample(a, 10, 0, 10, fault_chain);
        sample(a, 10, 0, 10, write_chain);
        ASSERT_EQ(leaf_pages(a, 10, fault_chain, ELEMENTSOF(fault_chain)).peak, 10);
        ASSERT_EQ(leaf_pages(a, 10, write_chain, ELEMENTSOF(write_chain)).peak, 10);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 10);
        ASSERT_EQ(stacktree_pages(accounting_stacktree(a), STACK_NODE_ROOT).peak, 10);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.peak_pages, 10);
        ASSERT_EQ(s.current_pages, 0);

        /* What one chain still holds adds to the other's rise: 4 held, then a rise of 10 elsewhere. */
        sample(a, 10, 4, 4, fault_chain);
        sample(a, 10, 0, 10, write_chain);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 14);
        ASSERT_EQ(leaf_pages(a, 10, write_chain, ELEMENTSOF(write_chain)).peak, 10);
        ASSERT_EQ(leaf_pages(a, 10, fault_chain, ELEMENTSOF(fault_chain)).peak, 10);
        check_invariants(a);

        /* Another task on the same chain: the chain's global leaf holds both. */
        sample(a, 11, 6, 6, fault_chain);
        ASSERT_EQ(leaf_pages(a, 11, fault_chain, ELEMENTSOF(fault_chain)).current, 10);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_PAGES].peak, 6);
        check_invariants(a);

        /* Page records and samples of one task and chain share the counters. */
        alloc_chain(a, 10, 10, 4096, 2, fault_chain, ELEMENTSOF(fault_chain));
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 8);
        check_invariants(a);
        free_pages_(a, 10, 4096, 2);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 4);
        check_invariants(a);

        accounting_reset(a, ACCOUNTING_RESET_PEAKS);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 4);
        accounting_reset(a, ACCOUNTING_RESET_ALL);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.sampled_pages, 0);
        ASSERT_EQ(s.current_pages, 0);
        check_invariants(a);

        accounting_free(a);
        ksym_free(k);
}

/* A bytes sample goes to the task's and module's bytes ledgers; no page count moves. */
static void test_sample_bytes(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, true);
        AccountingStats s;

        sample_chain(a, 10, LEDGER_BYTES, 4096, 8192, ext4_chain, ELEMENTSOF(ext4_chain));
        sample_chain(a, 10, LEDGER_BYTES, -1000, 0, ext4_chain, ELEMENTSOF(ext4_chain));
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 3096);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].peak, 8192);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].peak, 0);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_BYTES].current, 3096);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_BYTES].peak, 8192);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_PAGES].current, 0);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(s.peak_pages, 0);
        ASSERT_EQ(s.sampled_pages, 0);
        check_invariants(a);

        accounting_reset(a, ACCOUNTING_RESET_ALL);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 0);
        ASSERT_EQ(module(a, "ext4")->ledger[LEDGER_BYTES].peak, 0);
        accounting_free(a);
        ksym_free(k);
}

static void object_event(Accounting *a, MsEventType type, int32_t pid, uint32_t cpu, uint64_t ptr, uint64_t requested,
                uint64_t allocated, const char *cache, uint64_t call_site) {
        MsEvent e = synthetic_object_event(type, pid, ptr, requested, allocated, cache, call_site, (MsStack) {});

        e.cpu = cpu;
        e.cgroup_id = cgroup_id;
        accounting_handle_event(a, &e);
}

/* Slab objects: kept by pointer and charged to their task's bytes, per call site and cache; a free by
 * anyone releases the allocating task; a lost free (the pointer comes again) and an unknown pointer are
 * counted; page counts do not move. */
static void test_object_events(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        AccountingStats s;

        c.max_slab_objects = 3;
        ASSERT_OK(accounting_new(&c, NULL, &a));
        Slab *slab = accounting_slab(a);
        alloc(a, 10, 4096, 1);
        cgroup_id = 1234;
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0xa000, 100, 128, "kmalloc-128", K_VFS_WRITE);
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0xb000, 60, 64, "kmalloc-64", K_VFS_WRITE);
        object_event(a, MS_EVENT_OBJECT_ALLOC, 11, 1, 0xc000, 200, 0, NULL, K_SYSCALL);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 192);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_BYTES].current, 200);      /* allocated < requested: requested */
        const SlabStats *st = slab_stats(slab);
        ASSERT_EQ(st->live_objects, 3);
        ASSERT_EQ(st->live_requested, 360);
        ASSERT_EQ(st->live_allocated.current, 392);
        ASSERT_EQ(slab_site_count(slab), 2);
        ASSERT_EQ(slab_cache_count(slab), 2);
        const SlabGroup *vfs = slab_site(slab, 0);
        ASSERT_EQ(vfs->address, K_VFS_WRITE);
        ASSERT_EQ(vfs->live_objects, 2);
        ASSERT_EQ(vfs->live_requested, 160);
        ASSERT_EQ(vfs->live_allocated.current, 192);

        /* The table holds 3: a fourth is dropped, charged to no one. */
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0xd000, 8, 8, "kmalloc-8", K_VFS_WRITE);
        ASSERT_EQ(st->dropped, 1);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 192);

        /* Task 11 frees task 10's object on another CPU: task 10's bytes drop, a remote free. */
        object_event(a, MS_EVENT_OBJECT_FREE, 11, 1, 0xa000, 0, 0, NULL, K_SYSCALL);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 64);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].peak, 192);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_BYTES].current, 200);
        ASSERT_EQ(vfs->live_objects, 1);
        ASSERT_EQ(vfs->frees, 1);
        ASSERT_EQ(vfs->remote_frees, 1);
        ASSERT_EQ(vfs->live_allocated.peak, 192);
        ASSERT_EQ(slab_cache(slab, 0)->live_objects, 0);
        /* Unknown pointer, then a pointer allocated again without its free: counted, the old one released. */
        object_event(a, MS_EVENT_OBJECT_FREE, 10, 0, 0x42, 0, 0, NULL, 0);
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0xc000, 16, 16, "kmalloc-16", 0);
        ASSERT_EQ(st->unknown_frees, 1);
        ASSERT_EQ(st->replaced, 1);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_BYTES].current, 0);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 80);
        ASSERT_EQ(st->live_objects, 2);
        ASSERT_EQ(st->live_allocated.current, 80);
        ASSERT_EQ(st->live_allocated.peak, 392);
        /* Per unit: everything was in one cgroup, whose unit saw the true peak. */
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.current, 80);
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.peak, 392);
        /* A second cgroup of the same unit (a restarted service) brings its bytes along when it is named;
         * its free leaves the unit through it. */
        cgroup_id = 1235;
        object_event(a, MS_EVENT_OBJECT_ALLOC, 12, 0, 0xe000, 1000, 1024, "kmalloc-1k", K_SYSCALL);
        Units *u = accounting_units(a);
        ASSERT_OK(units_cgroup_resolve(u, units_cgroup_intern(u, 1235), "cg1234.service", "/system.slice/x"));
        ASSERT_TRUE(unit_of(a, 1235) == unit_of(a, 1234));
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.current, 1104);
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.peak, 1104);
        object_event(a, MS_EVENT_OBJECT_FREE, 10, 0, 0xe000, 0, 0, NULL, 0);
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.current, 80);
        ASSERT_EQ(process(a, 12)->ledger[LEDGER_BYTES].current, 0);
        cgroup_id = 1234;

        /* Pages and their counts did not move; object events count as events. */
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.unsupported_events, 0);
        ASSERT_EQ(s.allocs, 1);
        ASSERT_EQ(s.current_pages, 2);
        ASSERT_EQ(process(a, 10)->allocs, 1);
        ASSERT_EQ(process(a, 10)->frees, 0);

        accounting_reset(a, ACCOUNTING_RESET_PEAKS);
        ASSERT_EQ(slab_stats(accounting_slab(a))->live_allocated.peak, 80);
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.peak, 80);
        accounting_reset(a, ACCOUNTING_RESET_ALL);
        ASSERT_EQ(slab_stats(accounting_slab(a))->live_objects, 0);
        ASSERT_EQ(slab_stats(accounting_slab(a))->allocs, 0);
        ASSERT_EQ(slab_site(accounting_slab(a), 0)->live_objects, 0);
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.current, 0);
        /* An object from before the reset is unknown now; a new one is counted from 0 at its old site. */
        object_event(a, MS_EVENT_OBJECT_FREE, 10, 0, 0xc000, 0, 0, NULL, 0);
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0xf000, 8, 8, NULL, K_VFS_WRITE);
        ASSERT_EQ(slab_stats(accounting_slab(a))->unknown_frees, 1);
        ASSERT_EQ(slab_stats(accounting_slab(a))->live_objects, 1);
        ASSERT_EQ(slab_site(accounting_slab(a), 0)->live_objects, 1);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 8);
        cgroup_id = 0;
        check_invariants(a);
        accounting_free(a);
}

/* A failed kmalloc is traced with a NULL pointer: dropped and counted, never taken for a live object (an
 * empty slot of the table has pointer 0 too). */
static void test_object_at_null(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(accounting_new(&c, NULL, &a));
        const SlabStats *st = slab_stats(accounting_slab(a));
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0xa000, 64, 64, "kmalloc-64", K_VFS_WRITE);
        object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0, 32, 32, NULL, K_SYSCALL);
        object_event(a, MS_EVENT_OBJECT_FREE, 10, 0, 0, 0, 0, NULL, K_SYSCALL);
        ASSERT_EQ(st->live_objects, 1);
        ASSERT_EQ(st->replaced, 0);
        ASSERT_EQ(st->dropped, 1);
        ASSERT_EQ(st->unknown_frees, 1);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 64);
        object_event(a, MS_EVENT_OBJECT_FREE, 10, 0, 0xa000, 0, 0, NULL, K_SYSCALL);
        object_event(a, MS_EVENT_OBJECT_ALLOC, 11, 0, 0, 16, 16, NULL, K_SYSCALL);
        ASSERT_EQ(st->live_objects, 0);
        ASSERT_EQ(st->replaced, 0);
        ASSERT_EQ(st->dropped, 2);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, 0);
        UsageStats us;
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_EQ(us.underflows, 0);
        check_invariants(a);
        accounting_free(a);
}

/* Objects a reconciliation with /proc/slabinfo drops (maple_node above the kernel's count, on the files
 * recorded on 6.18) leave their task and unit as frees do. */
static void test_object_reconcile(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        SlabInfo *start = NULL, *churn = NULL;
        Accounting *a = NULL;

        ASSERT_OK(slabinfo_read("data/slabinfo-6.18-start.txt", &start));
        ASSERT_OK(slabinfo_read("data/slabinfo-6.18-churn.txt", &churn));
        ASSERT_OK(accounting_new(&c, NULL, &a));
        ASSERT_OK(accounting_slab_reconcile(a, start, 1));
        cgroup_id = 1234;
        uint64_t n = 0;
        for (size_t i = 0; i < churn->n_caches; i++)
                if (streq(churn->caches[i].name, "maple_node"))
                        n = 3 * churn->caches[i].active_objects;
        ASSERT_GT(n, 0);
        for (uint64_t i = 1; i <= n; i++)
                object_event(a, MS_EVENT_OBJECT_ALLOC, 10, 0, 0x100000 + i * 256, 256, 256, "maple_node", K_SYSCALL);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, n * 256);
        ASSERT_OK(accounting_slab_reconcile(a, churn, 2));
        const Slab *slab = accounting_slab(a);
        uint64_t live = slab_stats(slab)->live_objects;
        ASSERT_LT(live, n);
        ASSERT_EQ(slab_reconcile_stats(slab)->trimmed, n - live);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].current, live * 256);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_BYTES].peak, n * 256);
        ASSERT_EQ(unit_of(a, 1234)->slab_bytes.current, live * 256);
        cgroup_id = 0;
        accounting_free(a);
        slabinfo_free(start);
        slabinfo_free(churn);
}

/* Many objects in and out: the table's deletion keeps every live one findable. */
static void test_object_table(void) {
        Slab *s = slab_new(100000);
        SlabObject o;

        ASSERT_NOT_NULL(s);
        for (uint64_t i = 1; i <= 50000; i++)
                ASSERT_OK(slab_alloc(s, i * 64, 0xffffffff81000000 + (i % 7), NULL, 1, SLAB_NONE, 0, 32, 64, 0, i, &o));
        for (uint64_t i = 1; i <= 50000; i += 2)
                ASSERT_TRUE(slab_release(s, i * 64, 0, &o));
        for (uint64_t i = 2; i <= 50000; i += 2) {
                ASSERT_TRUE(slab_release(s, i * 64, 1, &o));
                ASSERT_EQ(o.time_nsec, i);
        }
        ASSERT_EQ(slab_stats(s)->live_objects, 0);
        ASSERT_EQ(slab_stats(s)->unknown_frees, 0);
        ASSERT_EQ(slab_site_count(s), 7);
        ASSERT_TRUE(!slab_release(s, 64, 0, &o));
        slab_free(s);
}

/* A task that moves to another cgroup leaves what it allocated before charged to the old one: frees (by
 * anyone) take the pages off the cgroup that allocated them. */
typedef struct ScopeSum {
        uint64_t pages, sampled;
        uint32_t unit;                  /* the one unit every cell named, or UNITS_NONE if they differ */
        size_t cells;
} ScopeSum;

static void sum_cell(void *userdata, const ViewCell *cell) {
        ScopeSum *s = userdata;

        s->pages += cell->pages;
        s->sampled += cell->sampled ? cell->pages : 0;
        s->unit = s->cells++ == 0 || s->unit == cell->unit ? cell->unit : UNITS_NONE;
}

static ScopeSum scope_sum(Accounting *a, ViewScopeKind kind, uint32_t id) {
        ScopeSum s = {};
        view_foreach_cell(a, (ViewScope) { kind, id }, sum_cell, &s);
        return s;
}

/* A scope's cells hold what its process, module or unit does, each with its unit looked up. */
static void test_view_cells(void) {
        Accounting *a = new_accounting(NULL, false);
        Usage *u = accounting_usage(a);
        Units *un = accounting_units(a);

        cgroup_id = 100;
        alloc(a, 10, 0x1000, 2);
        cgroup_id = 200;
        alloc(a, 10, 0x2000, 0);
        alloc(a, 11, 0x3000, 1);
        sample(a, 11, 5, 5, write_chain);
        (void) unit_of(a, 100);
        (void) unit_of(a, 200);
        uint32_t u100 = units_unit_of(un, units_cgroup_intern(un, 100));
        uint32_t u200 = units_unit_of(un, units_cgroup_intern(un, 200));
        ASSERT_NE(u100, u200);

        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_ALL, 0).pages, 4 + 1 + 2 + 5);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_ALL, 0).sampled, 5);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_PROCESS, usage_find_process(u, 10)).pages, process(a, 10)->ledger[LEDGER_PAGES].current);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_PROCESS, usage_find_process(u, 11)).pages, 2 + 5);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_UNIT, u100).pages, 4);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_UNIT, u100).unit, u100);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_UNIT, u200).pages, 1 + 2 + 5);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_UNIT, u200).unit, u200);
        uint16_t vmlinux = usage_find_module_shown(u, ACCOUNTING_KERNEL_MODULE);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_MODULE, vmlinux).pages, usage_module(u, vmlinux)->ledger[LEDGER_PAGES].current);
        ASSERT_EQ(scope_sum(a, VIEW_SCOPE_PROCESS, USAGE_TASK_NONE - 1).cells, 0);
        check_invariants(a);
        cgroup_id = 0;
        accounting_free(a);
}

static void test_cgroup_move(void) {
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);

        cgroup_id = 100;
        alloc(a, 10, 0x1000, 2);                /* 4 pages in cgroup 100 */
        cgroup_id = 200;
        alloc(a, 10, 0x2000, 0);                /* moved: 1 page in cgroup 200 */
        alloc(a, 11, 0x3000, 1);                /* another task: 2 pages in cgroup 200 */
        ASSERT_EQ(unit_of(a, 100)->ledger.current, 4);
        ASSERT_EQ(unit_of(a, 200)->ledger.current, 3);
        check_invariants(a);

        free_pages_(a, 11, 0x1000, 1);          /* another task frees half the first block */
        ASSERT_EQ(unit_of(a, 100)->ledger.current, 2);
        ASSERT_EQ(unit_of(a, 100)->ledger.peak, 4);
        ASSERT_EQ(unit_of(a, 200)->ledger.current, 3);
        check_invariants(a);

        /* Samples follow the same rule: the move sends later samples elsewhere, and a negative sample of
         * the chain takes the pages the old cgroup holds too. */
        cgroup_id = 300;
        sample(a, 12, 6, 6, write_chain);
        cgroup_id = 400;
        sample(a, 12, 2, 2, write_chain);
        sample(a, 12, -5, 0, write_chain);
        ASSERT_EQ(unit_of(a, 300)->ledger.current + unit_of(a, 400)->ledger.current, 3);
        ASSERT_EQ(unit_of(a, 300)->ledger.peak, 6);
        check_invariants(a);

        /* Peaks restart from the current values; reset-all zeroes the counts and keeps the names. */
        accounting_reset(a, ACCOUNTING_RESET_PEAKS);
        ASSERT_EQ(unit_of(a, 100)->ledger.peak, 2);
        accounting_reset(a, ACCOUNTING_RESET_ALL);
        ASSERT_EQ(unit_of(a, 100)->ledger.current, 0);
        ASSERT_EQ(unit_of(a, 100)->ledger.peak, 0);
        ASSERT_STREQ(unit_of(a, 100)->name, "cg100.service");
        check_invariants(a);
        cgroup_id = 0;
        alloc(a, 10, 0x5000, 0);
        ASSERT_STREQ(unit_of(a, 0)->name, UNITS_UNKNOWN_NAME);
        ASSERT_EQ(unit_of(a, 0)->ledger.current, 1);
        check_invariants(a);

        accounting_free(a);
        ksym_free(k);
}

/* Two cgroups of one name (a restarted service) are one unit: resolving the second merges it. */
static void test_cgroup_merge(void) {
        Accounting *a = new_accounting(NULL, false);
        Units *u = accounting_units(a);

        cgroup_id = 500;
        alloc(a, 10, 0x1000, 3);                /* 8 pages */
        ASSERT_STREQ(unit_of(a, 500)->name, "cg500.service");
        cgroup_id = 501;
        alloc(a, 11, 0x2000, 1);                /* 2 pages, still pending */
        uint32_t c = units_cgroup_intern(u, 501);
        ASSERT_TRUE(units_cgroup(u, c)->pending);
        ASSERT_EQ(units_pending(u), 1);
        ASSERT_OK(units_cgroup_resolve(u, c, "cg500.service", "/system.slice/cg500.service"));
        ASSERT_EQ(units_pending(u), 0);
        ASSERT_EQ(unit_of(a, 500)->ledger.current, 10);
        ASSERT_EQ(unit_of(a, 500)->ledger.peak, 10);
        ASSERT_EQ(unit_of(a, 500)->n_cgroups, 2);
        ASSERT_TRUE(unit_of(a, 500) == unit_of(a, 501));
        check_invariants(a);

        /* Frees leave the merged unit through either cgroup. */
        free_pages_(a, 1, 0x1000, 3);
        ASSERT_EQ(unit_of(a, 501)->ledger.current, 2);
        ASSERT_EQ(unit_of(a, 501)->ledger.peak, 10);
        /* Liveness: the unit lives while one of its cgroups does. */
        units_cgroup_set_removed(u, units_cgroup_intern(u, 500), true);
        ASSERT_EQ(unit_of(a, 501)->n_live, 1);
        units_cgroup_set_removed(u, c, true);
        ASSERT_EQ(unit_of(a, 501)->n_live, 0);

        /* A cgroup nobody could name joins "[removed]"; bad calls change nothing. */
        cgroup_id = 502;
        alloc(a, 12, 0x3000, 0);
        uint32_t d = units_cgroup_intern(u, 502);
        ASSERT_OK(units_cgroup_resolve(u, d, NULL, NULL));
        ASSERT_STREQ(units_unit(u, units_unit_of(u, d))->name, UNITS_REMOVED_NAME);
        ASSERT_NULL(units_unit(u, units_unit_of(u, d))->cgroup);
        ASSERT_EQ(units_cgroup_resolve(u, UNITS_NONE, "x.service", "/x.service"), -EINVAL);
        ASSERT_EQ(units_cgroup_resolve(u, 9999, "x.service", "/x.service"), -EINVAL);
        ASSERT_EQ(units_cgroup_resolve(u, d, "", "/"), -EINVAL);
        ASSERT_EQ(units_find(u, "x.service"), UNITS_NONE);
        check_invariants(a);
        accounting_free(a);
}

static void test_random_against_model(void) {
        enum { SPACE = 1 << 14, PIDS = 16, CGROUPS = 4 };
        static int16_t owner[SPACE];
        static int8_t owner_cgroup[SPACE];
        uint64_t current[PIDS] = {}, peak[PIDS] = {}, cg_current[CGROUPS] = {}, cg_peak[CGROUPS] = {};
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        const uint64_t *chains[] = { fault_chain, write_chain, ext4_chain };
        const size_t lens[] = { ELEMENTSOF(fault_chain), ELEMENTSOF(write_chain), ELEMENTSOF(ext4_chain) };

        for (unsigned i = 0; i < SPACE; i++)
                owner[i] = -1;
        srand(7);
        for (unsigned step = 0; step < 300000; step++) {
                unsigned order = (unsigned) (rand() % 8 == 0 ? rand() % 5 : 0);
                uint64_t pfn = ((uint64_t) rand() % (SPACE >> order)) << order;
                int32_t pid = rand() % PIDS;
                bool free_range = true;

                for (uint64_t p = pfn; p < pfn + (1u << order); p++)
                        free_range = free_range && owner[p] < 0;
                if (free_range && rand() % 3 != 0) {
                        unsigned c = (unsigned) rand() % 3;
                        /* Tasks move between cgroups now and then. */
                        int cg = (pid + (int) (step / 20000)) % CGROUPS;
                        cgroup_id = 1000 + (uint64_t) cg;
                        alloc_chain(a, pid + 1, pid + 1, pfn, order, chains[c], lens[c]);
                        for (uint64_t p = pfn; p < pfn + (1u << order); p++) {
                                owner[p] = (int16_t) pid;
                                owner_cgroup[p] = (int8_t) cg;
                        }
                        current[pid] += 1u << order;
                        peak[pid] = MAX(peak[pid], current[pid]);
                        cg_current[cg] += 1u << order;
                        cg_peak[cg] = MAX(cg_peak[cg], cg_current[cg]);
                } else {
                        free_pages_(a, rand() % PIDS + 1, pfn, order);
                        for (uint64_t p = pfn; p < pfn + (1u << order); p++)
                                if (owner[p] >= 0) {
                                        current[owner[p]]--;
                                        cg_current[owner_cgroup[p]]--;
                                        owner[p] = -1;
                                }
                }
                /* Name the cgroups early, so their units' peaks are their own from the start. */
                if (step == 0)
                        for (int cg = 0; cg < CGROUPS; cg++)
                                (void) unit_of(a, 1000 + (uint64_t) cg);
        }
        Usage *u = accounting_usage(a);
        StackTree *st = accounting_stacktree(a);
        for (int32_t pid = 0; pid < PIDS; pid++) {
                ASSERT_EQ(process(a, pid + 1)->ledger[LEDGER_PAGES].current, current[pid]);
                ASSERT_EQ(process(a, pid + 1)->ledger[LEDGER_PAGES].peak, peak[pid]);
                /* The process's own stack tree: same current, same true peak. */
                uint32_t scope = stacktree_process_scope(st, usage_task_scope(u, usage_find_process(u, pid + 1)));
                ASSERT_NE(scope, STACK_NODE_NONE);
                ASSERT_EQ(stacktree_pages(st, scope).current, current[pid]);
                ASSERT_EQ(stacktree_pages(st, scope).peak, peak[pid]);
        }
        for (int cg = 0; cg < CGROUPS; cg++) {
                ASSERT_EQ(unit_of(a, 1000 + (uint64_t) cg)->ledger.current, cg_current[cg]);
                ASSERT_EQ(unit_of(a, 1000 + (uint64_t) cg)->ledger.peak, cg_peak[cg]);
        }
        check_invariants(a);
        cgroup_id = 0;
        accounting_free(a);
        ksym_free(k);
}

/* What a source that takes its stacks from inside a BPF program declares (as the eBPF source does). */
static const MsTracerFrames bpf_tracer = {
        .prefixes = (const char *const[]) { "__traceiter_", "__bpf_trace_", "bpf_trace_run", NULL },
        .program_first = true,
};

/* The eBPF source's bulk allocation hook: its object events carry no call site, and their stack starts in
 * the hook (the program, its BPF trampoline, listed under [bpf], the hooked function): the call site is
 * the first frame past them, the bulk allocation's caller. */
static const MsTracerFrames bulk_tracer = {
        .prefixes = (const char *const[]) { "__traceiter_", "__bpf_trace_", "bpf_trace_run", "bpf_trampoline_",
                                            "kmem_cache_alloc_bulk", NULL },
        .program_first = true,
};

static void test_bulk_call_site(void) {
        static const uint64_t hook_chain[] = { BPF_PROG, BPF_TRAMPOLINE, K_ALLOC_BULK, K_MAS_ALLOC, K_SYSCALL };
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        Slab *slab = accounting_slab(a);

        accounting_set_tracer_frames(a, &bulk_tracer);
        alloc(a, 10, 4096, 1);
        MsStack hooked = synthetic_stack(hook_chain, ELEMENTSOF(hook_chain), ELEMENTSOF(hook_chain));
        MsEvent e = synthetic_object_event(MS_EVENT_OBJECT_ALLOC, 10, 0xffff888000001000, 256, 256, "maple_node", 0,
                                           hooked);
        accounting_handle_event(a, &e);
        ASSERT_EQ(slab_site_count(slab), 1);
        ASSERT_EQ(slab_site(slab, 0)->address, K_MAS_ALLOC);
        /* An event that names its call site keeps it, whatever its stack. */
        e = synthetic_object_event(MS_EVENT_OBJECT_ALLOC, 10, 0xffff888000001100, 256, 256, "maple_node", K_VFS_WRITE,
                                   hooked);
        accounting_handle_event(a, &e);
        ASSERT_EQ(slab_site_count(slab), 2);
        ASSERT_EQ(slab_site(slab, 1)->address, K_VFS_WRITE);
        accounting_free(a);
        ksym_free(k);
}

/* A chain that bpf_get_stack() took from inside the BPF program: the program, bpf_trace_run4 and the
 * tracepoint's iterator, which the source says are its own, are dropped, and the allocation is charged
 * where perf's chain would be. A source that declares none keeps every frame. */
static void test_tracer_frames_dropped(void) {
        static const uint64_t bpf_chain[] = { BPF_PROG, K_BPF_TRACE_RUN, K_TRACEITER, K_ALLOC_PAGES, K_ANON_PAGE,
                                              K_MM_FAULT, K_PAGE_FAULT };
        static const uint64_t prog_only[] = { BPF_PROG, K_ALLOC_PAGES, K_ANON_PAGE, K_MM_FAULT, K_PAGE_FAULT };
        static const uint64_t tracer_only[] = { BPF_PROG, K_BPF_TRACE_RUN, K_TRACEITER };
        Ksym *k = fixture_ksym();
        Accounting *a = new_accounting(k, false);
        StackTree *st = accounting_stacktree(a);

        accounting_set_tracer_frames(a, &bpf_tracer);
        alloc_chain(a, 10, 10, 100, 0, fault_chain, ELEMENTSOF(fault_chain));
        size_t n = stacktree_size(st);
        alloc_chain(a, 10, 10, 101, 0, bpf_chain, ELEMENTSOF(bpf_chain));
        alloc_chain(a, 10, 10, 102, 1, bpf_chain, ELEMENTSOF(bpf_chain));
        ASSERT_EQ(stacktree_size(st), n);
        uint32_t leaf = STACK_NODE_ROOT;
        for (size_t i = ELEMENTSOF(fault_chain); i > 0; i--)
                leaf = stacktree_find_child(st, leaf, STACK_FRAME_KERNEL, fault_chain[i - 1]);
        ASSERT_TRUE(leaf != STACK_NODE_NONE);
        ASSERT_EQ(stacktree_pages(st, leaf).current, 4);

        /* Only a named tracer function marks the tracer's part: without one, nothing is dropped. */
        alloc_chain(a, 10, 10, 104, 0, prog_only, ELEMENTSOF(prog_only));
        uint32_t prog = stacktree_find_child(st, leaf, STACK_FRAME_KERNEL, BPF_PROG);
        ASSERT_TRUE(prog != STACK_NODE_NONE);
        ASSERT_EQ(stacktree_pages(st, prog).current, 1);
        ASSERT_EQ(stacktree_pages(st, leaf).current, 5);
        /* A tracer function under the allocation's own frames (an allocation the tracing code made) is
         * the allocation's path: nothing is dropped. */
        static const uint64_t through_tracer[] = { K_ALLOC_PAGES, K_ANON_PAGE, K_TRACEITER, K_MM_FAULT };
        alloc_chain(a, 10, 10, 106, 0, through_tracer, ELEMENTSOF(through_tracer));
        uint32_t own = STACK_NODE_ROOT;
        for (size_t i = ELEMENTSOF(through_tracer); i > 0 && own != STACK_NODE_NONE; i--)
                own = stacktree_find_child(st, own, STACK_FRAME_KERNEL, through_tracer[i - 1]);
        ASSERT_TRUE(own != STACK_NODE_NONE);
        ASSERT_EQ(stacktree_pages(st, own).current, 1);
        /* ... also right under the allocation's first frame: only a BPF program's frame may come before
         * the tracer's run. */
        static const uint64_t first_then_tracer[] = { K_ANON_PAGE, K_TRACEITER, K_MM_FAULT, K_PAGE_FAULT };
        alloc_chain(a, 10, 10, 107, 0, first_then_tracer, ELEMENTSOF(first_then_tracer));
        own = STACK_NODE_ROOT;
        for (size_t i = ELEMENTSOF(first_then_tracer); i > 0 && own != STACK_NODE_NONE; i--)
                own = stacktree_find_child(st, own, STACK_FRAME_KERNEL, first_then_tracer[i - 1]);
        ASSERT_TRUE(own != STACK_NODE_NONE);
        ASSERT_EQ(stacktree_pages(st, own).current, 1);
        /* Nothing but the tracer: the root's own pages. */
        n = stacktree_size(st);
        alloc_chain(a, 10, 10, 105, 0, tracer_only, ELEMENTSOF(tracer_only));
        ASSERT_EQ(stacktree_size(st), n);
        ASSERT_EQ(stacktree_pages(st, STACK_NODE_ROOT).current, 8);
        ASSERT_EQ(process(a, 10)->ledger[LEDGER_PAGES].current, 8);
        check_invariants(a);
        accounting_free(a);

        /* Without symbols no frame can be told apart, and a source that declares no tracer frames keeps
         * them all: every frame stays. */
        for (int declared = 0; declared < 2; declared++) {
                a = new_accounting(declared ? k : NULL, false);
                accounting_set_tracer_frames(a, declared ? NULL : &bpf_tracer);
                st = accounting_stacktree(a);
                alloc_chain(a, 10, 10, 100, 0, bpf_chain, ELEMENTSOF(bpf_chain));
                leaf = STACK_NODE_ROOT;
                for (size_t i = ELEMENTSOF(bpf_chain); i > 0 && leaf != STACK_NODE_NONE; i--)
                        leaf = stacktree_find_child(st, leaf, STACK_FRAME_KERNEL, bpf_chain[i - 1]);
                ASSERT_TRUE(leaf != STACK_NODE_NONE);
                ASSERT_EQ(stacktree_pages(st, leaf).current, 1);
                accounting_free(a);
        }
        ksym_free(k);
}

static void alloc_kind(Accounting *a, int32_t pid, uint64_t pfn, unsigned order, uint64_t gfp, int32_t migrate_type) {
        MsEvent e = synthetic_page_kind_event(pid, pfn, order, synthetic_stack(fault_chain, 4, 4), gfp, migrate_type);

        e.timestamp_nsec = 5000;
        accounting_handle_event(a, &e);
}

typedef struct KindSums {
        const ChargeIndex *ci;
        uint64_t pages[PAGE_KINDS_MAX];
        uint64_t total;
} KindSums;

static void sum_kind(void *userdata, uint32_t cell) {
        KindSums *k = userdata;
        k->pages[chargeindex_kind(k->ci, cell)] += chargeindex_pages(k->ci, cell);
        k->total += chargeindex_pages(k->ci, cell);
}

/* The pages of each kind of allocation (order, GFP flags, migrate type, zone), summed over the charge cells:
 * exact through splits, frees and samples, and the same chain under two kinds is two cells. */
static void test_page_kinds(void) {
        Accounting *a = new_accounting(NULL, false);
        PageKinds *pk = accounting_page_kinds(a);
        const ZoneRange zones[] = {
                { .start_pfn = 0x100000, .end_pfn = 0x200000, .node = 1, .name = "Normal" },
                { .start_pfn = 0x1, .end_pfn = 0x1000, .node = 0, .name = "DMA" },
                { .start_pfn = 0x1000, .end_pfn = 0x100000, .node = 0, .name = "DMA32" },
        };
        const uint64_t user = 0x140cca, kernel = 0xcc0, comp = 0x40dc0;

        ASSERT_OK(page_kinds_set_zones(pk, zones, ELEMENTSOF(zones)));
        alloc_kind(a, 10, 0x2000, 0, user, 1);          /* DMA32, movable */
        alloc_kind(a, 10, 0x2001, 0, user, 1);
        alloc_kind(a, 10, 0x100000, 3, comp, 0);        /* node 1 */
        alloc_kind(a, 10, 0x10, 0, kernel, 0);          /* DMA */
        alloc_kind(a, 10, 0x300000, 0, kernel, 0);      /* in no zone */
        sample(a, 10, 5, 5, fault_chain);               /* no kind: unknown */

        KindSums k = { .ci = accounting_chargeindex(a) };
        chargeindex_foreach_cell(k.ci, sum_kind, &k);
        ASSERT_EQ(k.total, accounting_current_pages(a));
        ASSERT_EQ(k.total, 2 + 8 + 1 + 1 + 5);
        ASSERT_EQ(k.pages[PAGE_KIND_UNKNOWN], 5);
        ASSERT_EQ(page_kinds_count(pk), 5);             /* unknown and four kinds */
        size_t seen = 0;
        for (uint32_t id = 1; id < page_kinds_count(pk); id++) {
                const PageKind *x = page_kinds_get(pk, id);
                const ZoneRange *z = page_kinds_zone(pk, x->zone);
                ASSERT_TRUE(x->known);
                if (x->gfp_flags == user) {
                        ASSERT_EQ(k.pages[id], 2);
                        ASSERT_STREQ(z->name, "DMA32");
                        ASSERT_EQ(x->migrate_type, 1);
                } else if (x->order == 3) {
                        ASSERT_EQ(k.pages[id], 8);
                        ASSERT_EQ(z->node, 1);
                } else if (z) {
                        ASSERT_STREQ(z->name, "DMA");
                        ASSERT_EQ(k.pages[id], 1);
                } else {
                        ASSERT_EQ(x->zone, PAGE_ZONE_UNKNOWN);
                        ASSERT_EQ(k.pages[id], 1);
                }
                seen++;
        }
        ASSERT_EQ(seen, 4);
        ASSERT_NULL(page_kinds_get(pk, (uint32_t) page_kinds_count(pk)));

        /* Half of the order-3 block freed: what is left keeps the order it was allocated at. */
        free_pages_(a, 10, 0x100004, 2);
        free_pages_(a, 10, 0x2000, 0);
        memset(k.pages, 0, sizeof(k.pages));
        k.total = 0;
        chargeindex_foreach_cell(k.ci, sum_kind, &k);
        ASSERT_EQ(k.total, accounting_current_pages(a));
        ASSERT_EQ(k.total, 1 + 4 + 1 + 1 + 5);
        check_invariants(a);

        /* Flags beyond what a kind keeps are counted and charged as unknown, never lost. */
        alloc_kind(a, 11, 0x5000, 0, UINT64_C(1) << 50, 0);
        ASSERT_EQ(pk->dropped, 1);
        ASSERT_EQ(process(a, 11)->ledger[LEDGER_PAGES].current, 1);
        check_invariants(a);
        accounting_free(a);
}

/* GFP flags named as the kernel prints them: whole masks in order, the rest in hex. */
static void test_gfp_text(void) {
        GfpName names[] = {
                { 0x100cca, (char *) "GFP_HIGHUSER_MOVABLE" },
                { 0xcc0, (char *) "GFP_KERNEL" },
                { 0x100, (char *) "__GFP_ZERO" },
                { 0x40000, (char *) "__GFP_COMP" },
        };
        char buf[128];

        ASSERT_STREQ(gfp_names_format(names, ELEMENTSOF(names), 0xcc0, buf, sizeof(buf)), "GFP_KERNEL");
        ASSERT_STREQ(gfp_names_format(names, ELEMENTSOF(names), 0x40dc0, buf, sizeof(buf)),
                     "GFP_KERNEL|__GFP_ZERO|__GFP_COMP");
        ASSERT_STREQ(gfp_names_format(names, ELEMENTSOF(names), 0x100cca, buf, sizeof(buf)), "GFP_HIGHUSER_MOVABLE");
        ASSERT_STREQ(gfp_names_format(names, ELEMENTSOF(names), 0x40000cc0, buf, sizeof(buf)),
                     "GFP_KERNEL|0x40000000");
        ASSERT_STREQ(gfp_names_format(names, ELEMENTSOF(names), 0, buf, sizeof(buf)), "none");
        ASSERT_STREQ(gfp_names_format(NULL, 0, 0xcc0, buf, sizeof(buf)), "0xcc0");
        ASSERT_STREQ(gfp_names_format(names, ELEMENTSOF(names), 0x40dc0, buf, 12), "GFP_KERNEL|");
        ASSERT_STREQ(page_kinds_migrate_type_name(1), "Movable");
        ASSERT_NULL(page_kinds_migrate_type_name(-1));
}

int main(void) {
        TEST(test_check_sums_finds_disagreement);
        TEST(test_orders_and_untracked);
        TEST(test_gfp_text);
        TEST(test_page_kinds);
        TEST(test_invalid_order);
        TEST(test_invalid_pfn);
        TEST(test_saturation);
        TEST(test_cross_task_and_split_frees);
        TEST(test_peaks_not_summed);
        TEST(test_threads);
        TEST(test_exited_tasks);
        TEST(test_eviction_churn);
        TEST(test_exited_bound_every_event);
        TEST(test_module_attribution);
        TEST(test_tracer_frames_dropped);
        TEST(test_bulk_call_site);
        TEST(test_deferred_symbols);
        TEST(test_reset_all_and_lost);
        TEST(test_samples);
        TEST(test_samples_beside_blocks);
        TEST(test_sample_peaks_not_summed);
        TEST(test_sample_bytes);
        TEST(test_object_events);
        TEST(test_object_at_null);
        TEST(test_object_table);
        TEST(test_object_reconcile);
        TEST(test_view_cells);
        TEST(test_cgroup_move);
        TEST(test_cgroup_merge);
        TEST(test_random_against_model);
        return 0;
}
