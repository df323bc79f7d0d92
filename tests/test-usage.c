/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "macro.h"
#include "tests.h"
#include "usage.h"

static Task *task(Usage *u, uint32_t i) {
        Task *t = usage_task(u, i);
        ASSERT_NOT_NULL(t);
        return t;
}

static void test_processes_fold_threads(void) {
        Usage *u = usage_new(false, 100);

        uint32_t a = usage_task_lookup(u, 10, 10, 1);
        uint32_t b = usage_task_lookup(u, 10, 11, 2);
        ASSERT_EQ(a, b); /* without thread tracking, threads are their process */
        usage_task_charge(u, a, LEDGER_PAGES, 4);
        usage_task_charge(u, b, LEDGER_PAGES, 2);
        usage_task_uncharge(u, a, LEDGER_PAGES, 5);
        ASSERT_EQ(task(u, a)->ledger[LEDGER_PAGES].current, 1);
        ASSERT_EQ(task(u, a)->ledger[LEDGER_PAGES].peak, 6);
        ASSERT_EQ(task(u, a)->allocs, 2);
        ASSERT_EQ(task(u, a)->frees, 1);
        ASSERT_TRUE(!task(u, a)->is_thread);
        usage_free(u);
}

static void test_thread_records(void) {
        Usage *u = usage_new(true, 100);

        uint32_t t1 = usage_task_lookup(u, 10, 10, 1);
        uint32_t t2 = usage_task_lookup(u, 10, 11, 1);
        ASSERT_NE(t1, t2);
        uint32_t p = task(u, t1)->process;
        ASSERT_EQ(task(u, t2)->process, p);
        ASSERT_TRUE(task(u, t2)->is_thread);
        ASSERT_EQ(usage_find_process(u, 10), p);

        usage_task_charge(u, t1, LEDGER_PAGES, 3);
        usage_task_charge(u, t2, LEDGER_PAGES, 5);
        usage_task_uncharge(u, t2, LEDGER_PAGES, 5);
        usage_task_charge(u, t1, LEDGER_PAGES, 1);
        ASSERT_EQ(task(u, t1)->ledger[LEDGER_PAGES].current, 4);
        ASSERT_EQ(task(u, t2)->ledger[LEDGER_PAGES].peak, 5);
        /* The process peak is its own maximum (8), not the sum of its threads' peaks (4 + 5). */
        ASSERT_EQ(task(u, p)->ledger[LEDGER_PAGES].current, 4);
        ASSERT_EQ(task(u, p)->ledger[LEDGER_PAGES].peak, 8);
        usage_free(u);
}

static void test_comm_fork_and_reuse(void) {
        Usage *u = usage_new(false, 100);

        uint32_t shell = usage_task_seed(u, 100, 0, "bash", "/bin/bash -l", 321, 1);
        ASSERT_STREQ(task(u, shell)->comm, "bash");
        ASSERT_STREQ(task(u, shell)->cmdline, "/bin/bash -l");
        ASSERT_EQ(task(u, shell)->baseline_pages, 321);
        ASSERT_TRUE(task(u, shell)->seeded);

        /* A child inherits its parent's name until it execs. */
        uint32_t child = usage_task_fork(u, 100, 200, 200, 2);
        ASSERT_STREQ(task(u, child)->comm, "bash");
        /* ... and its command line: without exec it runs the parent's program. */
        ASSERT_STREQ(task(u, child)->cmdline, "/bin/bash -l");
        usage_task_set_comm(u, 200, 200, "a-very-long-command-name", "cat /etc/passwd", 3);
        ASSERT_STREQ(task(u, child)->comm, "a-very-long-com"); /* TASK_COMM_LEN - 1 */
        ASSERT_STREQ(task(u, child)->cmdline, "cat /etc/passwd");
        usage_task_charge(u, child, LEDGER_PAGES, 7);

        usage_task_exit(u, 200, 200, 4);
        ASSERT_TRUE(task(u, child)->exited);
        ASSERT_EQ(task(u, child)->exit_nsec, 4);
        /* Still queryable, and a straggler event of pid 200 still goes to it. */
        ASSERT_EQ(usage_find_process(u, 200), child);
        ASSERT_EQ(usage_task_lookup(u, 200, 201, 5), child);

        /* pid 200 reused by a new process: a new record; the old one stays findable by index. */
        uint32_t reused = usage_task_fork(u, 100, 200, 200, 6);
        ASSERT_NE(reused, child);
        ASSERT_EQ(usage_find_process(u, 200), reused);
        ASSERT_EQ(task(u, child)->ledger[LEDGER_PAGES].current, 7);
        ASSERT_TRUE(!task(u, reused)->exited);
        usage_free(u);
}

/* The sources seed from /proc after they start tracing: a process forked in between is seeded from /proc
 * and then met again through its fork record, which comes earlier in time. One process: the seeded record
 * takes the fork, its exec and its exit, and none stays alive unmapped (test-pidns saw such a ghost). */
static void test_seed_after_fork(void) {
        Usage *u = usage_new(true, 100);

        uint32_t parent = usage_task_seed(u, 1, 0, "bash", "bash -c x", 10, 50);
        uint32_t seeded = usage_task_seed(u, 6, 0, "bash", "bash -c x", 90, 50);
        uint32_t forked = usage_task_fork(u, 1, 6, 6, 40);
        ASSERT_EQ(forked, seeded);
        ASSERT_EQ(task(u, seeded)->baseline_pages, 90);
        usage_task_set_comm(u, 6, 6, "memstrackctl", "memstrackctl status", 60);
        usage_task_exit(u, 6, 6, 70);
        ASSERT_TRUE(task(u, seeded)->exited);
        ASSERT_STREQ(task(u, seeded)->comm, "memstrackctl");
        ASSERT_TRUE(!task(u, parent)->exited);

        /* A fork after the seed is a new process on a reused pid: the seeded one is gone, though its exit
         * was never seen. */
        uint32_t old = usage_task_seed(u, 7, 0, "sleep", "sleep 1", 5, 50);
        uint32_t fresh = usage_task_fork(u, 1, 7, 7, 80);
        ASSERT_NE(fresh, old);
        ASSERT_TRUE(task(u, old)->exited);
        ASSERT_EQ(task(u, old)->exit_nsec, 80);
        ASSERT_TRUE(!task(u, fresh)->exited);
        ASSERT_EQ(usage_find_process(u, 7), fresh);

        /* A thread id that turns up in another process: the old thread is gone. */
        uint32_t thread = usage_task_lookup(u, 1, 9, 90);
        ASSERT_TRUE(task(u, thread)->is_thread);
        uint32_t other = usage_task_lookup(u, 7, 9, 95);
        ASSERT_NE(other, thread);
        ASSERT_TRUE(task(u, thread)->exited);
        ASSERT_TRUE(!task(u, other)->exited);

        /* A task first met at its exit (older than tracing, gone before the seed): its last frees are
         * charged to an exited record, not to a live one nobody will ever see exit. */
        usage_task_exit(u, 30, 30, 100);
        uint32_t late = usage_task_lookup(u, 30, 30, 101);
        ASSERT_TRUE(task(u, late)->exited);
        ASSERT_TRUE(task(u, task(u, late)->process)->exited);
        ASSERT_EQ(usage_find_process(u, 30), task(u, late)->process);
        /* The same for a thread of a known process; the process lives on. */
        usage_task_exit(u, 1, 31, 102);
        uint32_t late_thread = usage_task_lookup(u, 1, 31, 103);
        ASSERT_TRUE(task(u, late_thread)->exited);
        ASSERT_TRUE(!task(u, parent)->exited);
        usage_free(u);
}

static void test_eviction(void) {
        Usage *u = usage_new(false, 8);
        uint32_t owners[64]; /* stands in for page owners: never rewritten */
        UsageStats s;

        for (int32_t pid = 1; pid <= 64; pid++) {
                uint32_t t = usage_task_lookup(u, pid, pid, (uint64_t) pid);
                owners[pid - 1] = t;
                usage_task_charge(u, t, LEDGER_PAGES, (uint64_t) pid);
        }
        /* Exit in pid order: the bound is exact, after every exit; the oldest exit goes first. */
        for (int32_t pid = 1; pid <= 64; pid++) {
                usage_task_exit(u, pid, pid, 100 + (uint64_t) pid);
                ASSERT_EQ(usage_evict(u), pid > 8 ? 1 : 0);
                usage_get_stats(u, &s);
                ASSERT_EQ(s.n_exited, (size_t) MIN(pid, 8));
                ASSERT_EQ(s.tasks_evicted, (uint64_t) (pid - MIN(pid, 8)));
                if (pid > 8)
                        ASSERT_NULL(usage_task(u, owners[pid - 9]));
        }
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_evicted, 56);
        ASSERT_EQ(s.n_exited + s.tasks_evicted, 64);
        /* Every evicted slot still holds pages: none is reusable yet. */
        ASSERT_EQ(s.tasks_recycled, 0);

        /* The newest exited are kept, the oldest went, with their pages, to "[evicted]". */
        ASSERT_NE(usage_find_process(u, 64), USAGE_TASK_NONE);
        ASSERT_EQ(usage_find_process(u, 1), USAGE_TASK_NONE);
        const Task *ev = task(u, USAGE_TASK_EVICTED);
        ASSERT_STREQ(ev->comm, "[evicted]");
        uint64_t evicted_pages = 0;
        for (int32_t pid = 1; pid <= 64; pid++)
                if (!usage_task(u, owners[pid - 1])) {
                        ASSERT_EQ(usage_task_forward(u, owners[pid - 1]), USAGE_TASK_EVICTED);
                        evicted_pages += (uint64_t) pid;
                }
        ASSERT_EQ(ev->ledger[LEDGER_PAGES].current, evicted_pages);
        ASSERT_GT(evicted_pages, 0);

        /* New tasks do not take slots pages still name. */
        size_t slots = usage_task_slots(u);
        uint32_t fresh = usage_task_lookup(u, 500, 500, 500);
        ASSERT_EQ(fresh, slots);

        /* Freeing pages of an evicted task lands on the evicted record; its last page frees the slot. */
        usage_task_uncharge(u, owners[1], LEDGER_PAGES, 1);
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, evicted_pages - 1);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_recycled, 0);
        for (int32_t pid = 1; pid <= 64; pid++)
                if (!usage_task(u, owners[pid - 1]))
                        usage_task_uncharge(u, owners[pid - 1], LEDGER_PAGES, (uint64_t) pid - (pid == 2));
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 0);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_recycled, s.tasks_evicted);
        ASSERT_EQ(s.underflows, 0);

        /* Recycled slots are reused: 40 new tasks fit in the 56 freed ones without growing the array. */
        slots = usage_task_slots(u);
        for (int32_t pid = 1000; pid < 1040; pid++)
                ASSERT_NE(usage_task_lookup(u, pid, pid, 1000), USAGE_TASK_NONE);
        ASSERT_EQ(usage_task_slots(u), slots);
        usage_free(u);
}

static void test_threads_evicted_with_process(void) {
        Usage *u = usage_new(true, 1);
        UsageStats s;

        uint32_t th = usage_task_lookup(u, 10, 12, 1);
        uint32_t process = usage_task(u, th)->process;
        usage_task_charge(u, th, LEDGER_PAGES, 5);
        usage_task_exit(u, 10, 12, 2);
        usage_task_exit(u, 10, 10, 3);
        for (int32_t pid = 20; pid < 24; pid++) {
                (void) usage_task_lookup(u, pid, pid, 4);
                usage_task_exit(u, pid, pid, 5 + (uint64_t) pid);
                (void) usage_evict(u);
        }
        /* Process 10 and its thread are gone; the thread's pages now count for "[evicted]". */
        ASSERT_NULL(usage_task(u, th));
        ASSERT_NULL(usage_task(u, process));
        ASSERT_EQ(usage_task_forward(u, th), USAGE_TASK_EVICTED);
        ASSERT_EQ(usage_task_process(u, th), process);
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 5);
        usage_get_stats(u, &s);
        uint64_t recycled = s.tasks_recycled;
        usage_task_uncharge(u, th, LEDGER_PAGES, 5);
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 0);
        /* The thread's last page frees both slots: the thread's, then the process's it named. */
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_recycled, recycled + 2);
        ASSERT_EQ(s.underflows, 0);
        usage_free(u);
}

/* Tasks also end when a fork or a thread reuses their id: the bound holds after those too, always by
 * evicting the oldest exit, and a process goes with its threads, running or exited. */
static void test_bound_after_reuse(void) {
        Usage *u = usage_new(true, 2);
        UsageStats s;

        /* Process 10 with two threads: 11 exits, 12 runs on after the leader (whose exit makes a record of
         * thread 10 too). Three exited records, one over: thread 11, the oldest, goes. */
        uint32_t t11 = usage_task_lookup(u, 10, 11, 1);
        uint32_t t12 = usage_task_lookup(u, 10, 12, 1);
        uint32_t p10 = usage_task(u, t11)->process;
        usage_task_charge(u, t12, LEDGER_PAGES, 3);
        usage_task_exit(u, 10, 11, 2);
        ASSERT_EQ(usage_evict(u), 0);
        usage_task_exit(u, 10, 10, 3);
        uint32_t t10 = usage_task_lookup(u, 10, 10, 3);
        ASSERT_TRUE(task(u, t10)->exited);
        ASSERT_EQ(usage_evict(u), 1);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.n_exited, 2);
        ASSERT_NULL(usage_task(u, t11));
        ASSERT_NOT_NULL(usage_task(u, p10));

        /* Thread id 12 turns up in process 20: the old thread 12 is gone. Thread 10 is the oldest exit. */
        (void) usage_task_lookup(u, 20, 12, 4);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.n_exited, 3);
        ASSERT_EQ(usage_evict(u), 1);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.n_exited, 2);
        ASSERT_NULL(usage_task(u, t10));
        ASSERT_TRUE(task(u, t12)->exited);

        /* Pid 30 forked twice: the first is gone. Process 10 is the oldest exit and goes with thread 12, whose
         * pages now count for "[evicted]". */
        (void) usage_task_fork(u, 1, 30, 30, 5);
        (void) usage_task_fork(u, 1, 30, 30, 6);
        ASSERT_EQ(usage_evict(u), 2);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.n_exited, 1);
        ASSERT_NULL(usage_task(u, p10));
        ASSERT_NULL(usage_task(u, t12));
        ASSERT_EQ(usage_task_forward(u, t12), USAGE_TASK_EVICTED);
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 3);

        /* Thread 12's last page frees its slot and its process's. */
        usage_task_uncharge(u, t12, LEDGER_PAGES, 3);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_evicted, 4);
        ASSERT_EQ(s.tasks_recycled, 4);
        ASSERT_EQ(s.underflows, 0);
        usage_free(u);
}

/* Many exits against the default bound: exactly min(exits, bound) records kept after each one, the oldest
 * exit evicted each time, and slots reused once their page is freed, so the array stops growing. */
static void test_bound_many_exits(void) {
        enum { BOUND = 4096, N = 50000 };
        _cleanup_free_ uint32_t *idx = calloc(N + 1, sizeof(uint32_t));
        Usage *u = usage_new(false, BOUND);
        UsageStats s;

        ASSERT_NOT_NULL(idx);
        for (int32_t pid = 1; pid <= N; pid++) {
                idx[pid] = usage_task_fork(u, 1, pid, pid, (uint64_t) pid);
                usage_task_charge(u, idx[pid], LEDGER_PAGES, 1);
                usage_task_exit(u, pid, pid, (uint64_t) pid);
                ASSERT_EQ(usage_evict(u), pid > BOUND ? 1 : 0);
                usage_get_stats(u, &s);
                ASSERT_EQ(s.n_exited, (size_t) MIN(pid, BOUND));
                if (pid > BOUND) {
                        ASSERT_EQ(usage_find_process(u, pid - BOUND), USAGE_TASK_NONE);
                        ASSERT_NE(usage_find_process(u, pid - BOUND + 1), USAGE_TASK_NONE);
                        /* The evicted task's page is freed: its slot is free for the next fork. */
                        usage_task_uncharge(u, idx[pid - BOUND], LEDGER_PAGES, 1);
                }
        }
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_evicted, (uint64_t) (N - BOUND));
        ASSERT_EQ(s.tasks_recycled, (uint64_t) (N - BOUND));
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_LE(usage_task_slots(u), (size_t) BOUND + 2);
        ASSERT_EQ(s.underflows, 0);
        usage_free(u);
}

static void test_modules(void) {
        Usage *u = usage_new(false, 8);

        uint16_t ext4 = usage_module_intern(u, "ext4");
        uint16_t xfs = usage_module_intern(u, "xfs");
        ASSERT_EQ(ext4, 1);
        ASSERT_EQ(xfs, 2);
        ASSERT_EQ(usage_module_intern(u, "ext4"), ext4);
        ASSERT_EQ(usage_module_count(u), 2);
        ASSERT_NULL(usage_module(u, USAGE_MODULE_NONE));
        ASSERT_NULL(usage_module(u, 3));

        usage_module_charge(u, ext4, LEDGER_PAGES, 10);
        usage_module_uncharge(u, ext4, LEDGER_PAGES, 4);
        usage_module_charge(u, USAGE_MODULE_NONE, LEDGER_PAGES, 10); /* no module: nothing to charge, no crash */
        ASSERT_EQ(usage_module(u, ext4)->ledger[LEDGER_PAGES].current, 6);
        ASSERT_EQ(usage_module(u, ext4)->ledger[LEDGER_PAGES].peak, 10);

        usage_reset_peaks(u);
        ASSERT_EQ(usage_module(u, ext4)->ledger[LEDGER_PAGES].peak, 6);

        uint32_t t = usage_task_seed(u, 5, 0, "init", NULL, 0, 1);
        usage_task_charge(u, t, LEDGER_PAGES, 3);
        usage_clear(u);
        ASSERT_EQ(usage_module(u, ext4)->ledger[LEDGER_PAGES].current, 0);
        ASSERT_EQ(usage_module_intern(u, "xfs"), xfs);
        /* Live tasks keep their names across a clear. */
        ASSERT_STREQ(task(u, usage_find_process(u, 5))->comm, "init");
        ASSERT_EQ(task(u, usage_find_process(u, 5))->ledger[LEDGER_PAGES].current, 0);
        usage_free(u);
}

/* A reset forgets exited processes, and with them threads still running after their leader exited:
 * the process slot is reused, so nothing may keep naming it. */
static void test_clear_with_orphan_thread(void) {
        Usage *u = usage_new(true, 8);
        UsageStats s;

        uint32_t th = usage_task_lookup(u, 10, 11, 1);
        uint32_t process = usage_task(u, th)->process;
        usage_task_exit(u, 10, 10, 2);          /* the leader exits, thread 11 runs on */
        usage_clear(u);
        ASSERT_NULL(usage_task(u, th));
        ASSERT_NULL(usage_task(u, process));
        usage_get_stats(u, &s);
        ASSERT_EQ(s.n_tasks, 0);
        /* Both slots are reused, and a new thread of a new process is consistent. */
        uint32_t again = usage_task_lookup(u, 20, 21, 3);
        ASSERT_NE(again, USAGE_TASK_NONE);
        ASSERT_EQ(usage_task(u, usage_task(u, again)->process)->pid, 20);
        usage_free(u);
}

/* Bytes and pages sit side by side: an evicted process hands both to "[evicted]", and its slot is reused
 * only once it holds neither. A thread's aggregated change reaches its process, peak included. */
static void test_units(void) {
        Usage *u = usage_new(true, 1);
        UsageStats s;

        uint32_t th = usage_task_lookup(u, 10, 12, 1);
        uint32_t process = usage_task(u, th)->process;
        usage_task_apply(u, th, LEDGER_BYTES, 9000, 4000);
        usage_task_apply(u, th, LEDGER_PAGES, 3, 2);
        ASSERT_EQ(task(u, process)->ledger[LEDGER_BYTES].current, 4000);
        ASSERT_EQ(task(u, process)->ledger[LEDGER_BYTES].peak, 9000);
        ASSERT_EQ(task(u, th)->ledger[LEDGER_PAGES].peak, 3);
        ASSERT_EQ(task(u, process)->ledger[LEDGER_PAGES].current, 2);
        ASSERT_EQ(task(u, process)->allocs, 1);        /* page allocations only: bytes are slab.h's */

        usage_task_exit(u, 10, 12, 2);
        usage_task_exit(u, 10, 10, 3);
        for (int32_t pid = 20; pid < 24; pid++) {
                (void) usage_task_lookup(u, pid, pid, 4);
                usage_task_exit(u, pid, pid, 5 + (uint64_t) pid);
                (void) usage_evict(u);
        }
        ASSERT_NULL(usage_task(u, process));
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_BYTES].current, 4000);
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_PAGES].current, 2);

        usage_get_stats(u, &s);
        uint64_t recycled = s.tasks_recycled;
        usage_task_apply(u, th, LEDGER_PAGES, 0, -2);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_recycled, recycled);          /* bytes still name the slots */
        usage_task_uncharge(u, th, LEDGER_BYTES, 4000);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.tasks_recycled, recycled + 2);
        ASSERT_EQ(task(u, USAGE_TASK_EVICTED)->ledger[LEDGER_BYTES].current, 0);
        ASSERT_EQ(s.underflows, 0);

        /* A module ledger per unit too; taking more than it holds is an underflow, clamped at zero. */
        uint16_t m = usage_module_intern(u, "ext4");
        usage_module_apply(u, m, LEDGER_BYTES, 100, 50);
        usage_module_apply(u, m, LEDGER_BYTES, 0, -80);
        ASSERT_EQ(usage_module(u, m)->ledger[LEDGER_BYTES].current, 0);
        ASSERT_EQ(usage_module(u, m)->ledger[LEDGER_BYTES].peak, 100);
        ASSERT_EQ(usage_module(u, m)->ledger[LEDGER_PAGES].peak, 0);
        usage_get_stats(u, &s);
        ASSERT_EQ(s.underflows, 1);
        usage_free(u);
}

/*
 * A reused slot's scope key differs from its earlier task's, which no longer resolves; a slot whose
 * generation would wrap is retired instead of reused. Slab objects keep their slot, 0 bytes or not.
 */
static void test_slot_generations(void) {
        Usage *u = usage_new(false, 0);

        uint32_t a = usage_task_fork(u, 1, 10, 10, 1);
        uint64_t scope_a = usage_task_scope(u, a);
        ASSERT_EQ(usage_task_of_scope(u, scope_a), task(u, a));
        usage_task_exit(u, 10, 10, 2);
        ASSERT_EQ(usage_evict(u), 1);
        ASSERT_NULL(usage_task_of_scope(u, scope_a));

        uint32_t b = usage_task_fork(u, 1, 20, 20, 3);
        ASSERT_EQ(b, a);
        ASSERT_NE(usage_task_scope(u, b), scope_a);
        ASSERT_NULL(usage_task_of_scope(u, scope_a));
        ASSERT_EQ(usage_task_of_scope(u, usage_task_scope(u, b)), task(u, b));

        /* The last generation: its slot is retired, never reused. */
        task(u, b)->generation = UINT32_MAX;
        usage_task_exit(u, 20, 20, 4);
        ASSERT_EQ(usage_evict(u), 1);
        uint32_t c = usage_task_fork(u, 1, 30, 30, 5);
        ASSERT_NE(c, b);

        /* An object of 0 bytes holds the slot until it is dropped. */
        usage_task_hold_object(u, c);
        usage_task_exit(u, 30, 30, 6);
        ASSERT_EQ(usage_evict(u), 1);
        ASSERT_NE(usage_task_fork(u, 1, 40, 40, 7), c);
        usage_task_drop_object(u, c);
        ASSERT_EQ(usage_task_fork(u, 1, 50, 50, 8), c);
        ASSERT_EQ(usage_task_owner(u, c), c);
        ASSERT_EQ(usage_task_owner(u, b), USAGE_TASK_EVICTED);
        usage_free(u);
}

int main(void) {
        TEST(test_units);
        TEST(test_processes_fold_threads);
        TEST(test_thread_records);
        TEST(test_comm_fork_and_reuse);
        TEST(test_seed_after_fork);
        TEST(test_eviction);
        TEST(test_threads_evicted_with_process);
        TEST(test_bound_after_reuse);
        TEST(test_bound_many_exits);
        TEST(test_modules);
        TEST(test_clear_with_orphan_thread);
        TEST(test_slot_generations);
        return 0;
}
