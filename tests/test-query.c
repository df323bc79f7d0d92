/* SPDX-License-Identifier: MIT */

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "accounting.h"
#include "format-util.h"
#include "leaks.h"
#include "macro.h"
#include "query.h"
#include "read-file.h"
#include "slabquery.h"
#include "synthetic-events.h"
#include "test-json.h"
#include "tests.h"

/* Addresses from tests/data/kallsyms-modules. */
#define K_ALLOC_PAGES   0xffffffff81003010
#define K_ANON_PAGE     0xffffffff81005020
#define K_MM_FAULT      0xffffffff81006030
#define K_VFS_WRITE     0xffffffff8100a010
#define K_SYSCALL       0xffffffff8100e010
#define M_EXT4_ALLOC    0xffffffffc0002010
#define M_EXT4_WRITE    0xffffffffc0001010
#define M_XFS_BUF       0xffffffffc0100010

static const uint64_t chain_fault[] = { K_ALLOC_PAGES, K_ANON_PAGE, K_MM_FAULT, K_SYSCALL };
static const uint64_t chain_write[] = { K_ALLOC_PAGES, K_VFS_WRITE, K_SYSCALL };
static const uint64_t chain_ext4[] = { K_ALLOC_PAGES, M_EXT4_ALLOC, M_EXT4_WRITE, K_VFS_WRITE, K_SYSCALL };
static const uint64_t chain_xfs[] = { K_ALLOC_PAGES, M_XFS_BUF, K_VFS_WRITE, K_SYSCALL };
/* With a user part: hangs below the process's node. */
static const uint64_t chain_user[] = { K_ALLOC_PAGES, K_ANON_PAGE, 0x401000, 0x402000 };

static const uint64_t *const chains[] = { chain_fault, chain_write, chain_ext4, chain_xfs, chain_user };
static const uint32_t lens[] = { 4, 3, 5, 4, 4 };
static const uint32_t kernel_lens[] = { 4, 3, 5, 4, 2 };

static void alloc(Accounting *a, int32_t pid, uint64_t pfn, unsigned order, unsigned chain) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, order,
                                         synthetic_stack(chains[chain], lens[chain], kernel_lens[chain]));
        accounting_handle_event(a, &e);
}

/* The old way, as the truth: per node, the pages of matching blocks summed up to the root. */
typedef struct Truth {
        Accounting *a;
        uint64_t *pages;
        uint32_t process;
        uint16_t module;
} Truth;

static void truth_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        Truth *t = userdata;
        StackTree *st = accounting_stacktree(t->a);

        if (t->module != USAGE_MODULE_NONE && chargeindex_module(accounting_chargeindex(t->a), o->node) != t->module)
                return;
        if (t->process != USAGE_TASK_NONE && usage_task_process(accounting_usage(t->a), o->task) != t->process)
                return;
        uint32_t node = chargeindex_node(accounting_chargeindex(t->a), o->node);
        uint32_t leaf = stacktree_node(st, node)->twin != STACK_NODE_NONE ? stacktree_node(st, node)->twin : node;
        for (uint32_t i = leaf; i != STACK_NODE_NONE; i = stacktree_node(st, i)->parent)
                t->pages[i] += UINT64_C(1) << order;
}

/* Every rendered frame's currentPages equals the truth for its node; returns frames checked. */
static size_t check_frames(json_t *frame, const uint64_t *truth, StackTree *st, uint32_t node) {
        size_t n = 1;

        ASSERT_EQ((uint64_t) json_integer_value(json_object_get(frame, "currentPages")), truth[node]);
        ASSERT_TRUE(json_is_null(json_object_get(frame, "peakPages")));
        json_t *children = json_object_get(frame, "children");
        size_t shown = json_array_size(children), nonzero = 0;
        for (uint32_t c = stacktree_node(st, node)->first_child; c != STACK_NODE_NONE; c = stacktree_node(st, c)->next_sibling)
                nonzero += truth[c] > 0;
        ASSERT_EQ(shown, nonzero);
        /* Children sorted by pages, biggest first: match each to the node with its frame's pages. */
        for (size_t k = 0; k < shown; k++) {
                json_t *child = json_array_get(children, k);
                uint64_t pages = (uint64_t) json_integer_value(json_object_get(child, "currentPages"));
                const char *address = json_string_value(json_object_get(child, "address"));
                uint32_t match = STACK_NODE_NONE;
                for (uint32_t c = stacktree_node(st, node)->first_child; c != STACK_NODE_NONE;
                     c = stacktree_node(st, c)->next_sibling)
                        if (truth[c] == pages && (!address || strtoull(address, NULL, 16) == stacktree_node(st, c)->ip))
                                match = c;
                ASSERT_NE(match, STACK_NODE_NONE);
                n += check_frames(child, truth, st, match);
        }
        return n;
}

static void check_subset(Accounting *a, int32_t pid, const char *module_name) {
        StackTree *st = accounting_stacktree(a);
        Usage *u = accounting_usage(a);
        Truth t = { .a = a, .process = USAGE_TASK_NONE, .module = USAGE_MODULE_NONE };
        json_auto_t *reply = NULL;

        t.pages = calloc(stacktree_size(st), sizeof(uint64_t));
        ASSERT_NOT_NULL(t.pages);
        if (pid >= 0)
                t.process = usage_find_process(u, pid);
        if (module_name)
                for (uint16_t id = 1; id <= usage_module_count(u); id++)
                        if (streq(usage_module(u, id)->name, module_name))
                                t.module = id;
        pagemap_foreach(accounting_pagemap(a), truth_block, &t);

        QueryStackTree q = {
                .pid = pid,
                .module = module_name,
                .max_depth = 255,
                .max_children = 10000,
                .sort = QUERY_SORT_CURRENT,
                .show_addresses = true,
        };
        ASSERT_OK(query_stacktree(a, &q, &reply));
        ASSERT_EQ((uint64_t) json_integer_value(json_object_get(reply, "totalPages")), t.pages[STACK_NODE_ROOT]);
        ASSERT_GT(check_frames(json_object_get(reply, "root"), t.pages, st, STACK_NODE_ROOT), 0);
        free(t.pages);
}

/* A core with the test symbol table (*ret_ksym, freed by the caller after the core), keeping at most
 * max_exited_tasks exited tasks. */
static Accounting *core_new(size_t max_exited_tasks, Ksym **ret_ksym) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(ksym_load("data/kallsyms-modules", ret_ksym));
        c.max_exited_tasks = max_exited_tasks;
        ASSERT_OK(accounting_new(&c, *ret_ksym, &a));
        return a;
}

/* Stack views of one task or module, built from the charge index, equal what the page table says. */
static void test_filtered_views_match_page_table(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(8, &k);

        srand(3);
        for (unsigned step = 0; step < 200000; step++) {
                int32_t pid = 1 + rand() % 40;
                uint64_t pfn = (uint64_t) (rand() % 50000) * 4;
                if (rand() % 3)
                        alloc(a, pid, pfn, (unsigned) (rand() % 3), (unsigned) (rand() % ELEMENTSOF(chains)));
                else {
                        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_FREE, pid, pfn, (unsigned) (rand() % 3),
                                                         (MsStack) {});
                        accounting_handle_event(a, &e);
                }
                /* Processes come and go: evicted ones keep pages that others free later. */
                if (step % 5000 == 4999) {
                        MsEvent e = synthetic_event(MS_EVENT_TASK_EXIT, pid);
                        accounting_handle_event(a, &e);
                        MsEvent f = synthetic_task_event(MS_EVENT_TASK_FORK, pid, NULL, 1);
                        accounting_handle_event(a, &f);
                }
        }
        for (int32_t pid = 1; pid <= 40; pid++)
                check_subset(a, pid, NULL);
        check_subset(a, -1, "ext4");
        check_subset(a, -1, "xfs");
        check_subset(a, -1, "vmlinux");

        /* A task with no pages: an empty tree, not an error. */
        MsEvent f = synthetic_task_event(MS_EVENT_TASK_FORK, 999, NULL, 1);
        accounting_handle_event(a, &f);
        check_subset(a, 999, NULL);
        accounting_free(a);
        ksym_free(k);
}

/* The pids of a query_tasks() reply, in order, as "100 200"; every one a real task, never "[evicted]". */
static void expect_tasks(Accounting *a, QueryTasks q, const char *expected) {
        json_auto_t *reply = NULL;
        size_t i;
        json_t *t;

        ASSERT_OK(query_tasks(a, &q, &reply));
        json_array_foreach(json_object_get(reply, "tasks"), i, t)
                ASSERT_GT(json_integer_value(json_object_get(t, "pid")), 0);
        _cleanup_free_ char *s = test_json_join(json_object_get(reply, "tasks"), "pid");
        if (!streq(s, expected))
                fprintf(stderr, "sort %d limit %zu pid %d comm %s exited %d hideZero %d\n", (int) q.sort, q.limit,
                        (int) q.pid, q.comm ?: "-", q.include_exited, q.hide_zero);
        ASSERT_STREQ(s, expected);
}

static void expect_modules(Accounting *a, QuerySort sort, size_t limit, const char *expected) {
        json_auto_t *list = NULL;

        ASSERT_OK(query_modules(a, sort, limit, &list));
        _cleanup_free_ char *s = test_json_join(list, "name");
        ASSERT_STREQ(s, expected);
}

/*
 * Tasks and Modules: sort keys (ties by pid), limit, the pid and comm filters, exited tasks, hideZero,
 * and what evicted tasks still hold. With one exited task kept, 400 and 500 are evicted (1 + 2 pages).
 */
static void test_tasks_and_modules(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(1, &k);

        /* Besides synthetic_scene(): two more exit holding 2 and 4 pages, one holds nothing. */
        synthetic_scene(a);
        synthetic_task(a, 500, "eps");
        synthetic_task(a, 600, "zeta");
        synthetic_task(a, 700, "idle");
        synthetic_alloc(a, 500, 0x6000, 1, SYNTHETIC_KERNEL);
        synthetic_alloc(a, 600, 0x7000, 2, SYNTHETIC_KERNEL);
        synthetic_exit(a, 500);
        synthetic_exit(a, 600);

        const QueryTasks any = { .pid = -1 };
        expect_tasks(a, any, "100 200 300 700");
        expect_tasks(a, (QueryTasks) { .pid = -1, .hide_zero = true }, "100 200");
        expect_tasks(a, (QueryTasks) { .pid = -1, .include_exited = true }, "100 200 600 300 700");
        expect_tasks(a, (QueryTasks) { .pid = -1, .sort = QUERY_SORT_PEAK }, "300 100 200 700");
        expect_tasks(a, (QueryTasks) { .pid = -1, .sort = QUERY_SORT_PEAK, .hide_zero = true }, "300 100 200");
        expect_tasks(a, (QueryTasks) { .pid = -1, .sort = QUERY_SORT_ALLOCS }, "200 100 300 700");
        expect_tasks(a, (QueryTasks) { .pid = -1, .sort = QUERY_SORT_ALLOCS, .hide_zero = true }, "200 100 300");
        expect_tasks(a, (QueryTasks) { .pid = -1, .limit = 2 }, "100 200");
        expect_tasks(a, (QueryTasks) { .pid = -1, .limit = 1, .sort = QUERY_SORT_PEAK }, "300");
        /* Asked for by pid: shown exited, and holding nothing despite hideZero. */
        expect_tasks(a, (QueryTasks) { .pid = 600 }, "600");
        expect_tasks(a, (QueryTasks) { .pid = 700, .hide_zero = true }, "700");
        expect_tasks(a, (QueryTasks) { .pid = -1, .comm = "beta" }, "200");
        expect_tasks(a, (QueryTasks) { .pid = -1, .comm = "nobody" }, "");
        /* Evicted tasks are gone by pid; so is one never seen. */
        json_t *none = NULL;
        ASSERT_EQ(query_tasks(a, &(QueryTasks) { .pid = 400 }, &none), -ESRCH);
        ASSERT_EQ(query_tasks(a, &(QueryTasks) { .pid = 999 }, &none), -ESRCH);
        ASSERT_NULL(none);

        json_auto_t *reply = NULL;
        ASSERT_OK(query_tasks(a, &any, &reply));
        json_t *evicted = json_object_get(reply, "evicted");
        ASSERT_EQ(json_integer_value(json_object_get(evicted, "tasks")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(evicted, "currentPages")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(evicted, "peakPages")), 3);

        /* Modules: vmlinux 8 + 1 + 2 + 4 now (peak 24 while gamma held 16), ext4 4, xfs 2. One never
         * charged and not loaded is left out. */
        (void) usage_module_intern(accounting_usage(a), "btrfs");
        expect_modules(a, QUERY_SORT_CURRENT, 0, "vmlinux ext4 xfs");
        expect_modules(a, QUERY_SORT_PEAK, 2, "vmlinux ext4");
        expect_modules(a, QUERY_SORT_CURRENT, 1, "vmlinux");
        json_auto_t *mods = NULL;
        ASSERT_OK(query_modules(a, QUERY_SORT_CURRENT, 1, &mods));
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(mods, 0), "currentPages")), 15);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(mods, 0), "peakPages")), 24);

        ASSERT_EQ(query_sort_from_string(NULL), QUERY_SORT_CURRENT);
        ASSERT_EQ(query_sort_from_string("peak"), QUERY_SORT_PEAK);
        ASSERT_EQ(query_sort_from_string("allocs"), QUERY_SORT_ALLOCS);
        ASSERT_EQ(query_sort_from_string("size"), _QUERY_SORT_INVALID);
        accounting_free(a);
        ksym_free(k);
}

#define SEC UINT64_C(1000000000)

static void event_at(Accounting *a, MsEvent e, uint64_t t) {
        e.tid = e.pid;
        e.timestamp_nsec = t;
        accounting_handle_event(a, &e);
}

static void page_at(Accounting *a, int32_t pid, uint64_t pfn, unsigned order, unsigned chain, uint64_t t) {
        event_at(a, synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, order,
                                         synthetic_stack(chains[chain], lens[chain], kernel_lens[chain])), t);
}

static void object_at(Accounting *a, int32_t pid, uint64_t ptr, uint64_t bytes, uint64_t t) {
        event_at(a, synthetic_object_event(bytes > 0 ? MS_EVENT_OBJECT_ALLOC : MS_EVENT_OBJECT_FREE, pid, ptr, bytes,
                                           bytes, NULL, K_VFS_WRITE, (MsStack) {}), t);
}

static json_t *row_of_pid(json_t *rows, int pid) {
        json_t *row;
        size_t i;

        json_array_foreach(rows, i, row)
                if (json_integer_value(json_object_get(row, "pid")) == pid)
                        return row;
        return NULL;
}

/* Leaks at 100 s, 60 s and older, growth over three intervals of 10 s: what is old and live, with what its
 * kind allocated recently and kept; nothing freed, nothing young, and only the asked-for process. */
static void test_leaks(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(8, &k);
        json_auto_t *reply = NULL, *only = NULL, *one = NULL;

        page_at(a, 10, 0x100, 2, 0, 1 * SEC);           /* 4 old pages through the fault chain */
        page_at(a, 10, 0x200, 0, 0, 95 * SEC);          /* and 1 + 2 young ones after them */
        page_at(a, 10, 0x300, 1, 0, 99 * SEC);
        page_at(a, 10, 0x400, 0, 1, 85 * SEC);          /* 1 young page through the write chain: no row */
        page_at(a, 11, 0x800, 3, 1, 1 * SEC);           /* 8 old pages, freed */
        event_at(a, synthetic_page_event(MS_EVENT_PAGE_FREE, 11, 0x800, 3, (MsStack) {}),
                 2 * SEC);
        page_at(a, 12, 0x900, 0, 1, 30 * SEC);          /* 1 old page of another process */
        object_at(a, 10, 0xa000, 64, 1 * SEC);          /* 1 old object, 2 young ones, 1 old one freed */
        object_at(a, 10, 0xb000, 64, 75 * SEC);
        object_at(a, 10, 0xc000, 64, 99 * SEC);
        object_at(a, 12, 0xd000, 64, 1 * SEC);
        object_at(a, 12, 0xd000, 0, 3 * SEC);

        LeaksQuery q = { .now_nsec = 100 * SEC, .min_age_nsec = 60 * SEC, .interval_nsec = 10 * SEC,
                         .intervals = 3, .limit = 10 };
        ASSERT_OK(leaks_query_json(a, &q, &reply));
        json_t *pages = json_object_get(reply, "pages");
        ASSERT_EQ(json_array_size(pages), 2);
        json_t *row = json_array_get(pages, 0);
        ASSERT_EQ(json_integer_value(json_object_get(row, "pid")), 10);
        ASSERT_EQ(json_integer_value(json_object_get(row, "pages")), 4);
        /* Ages are kept to 268 ms: within one grain of 99 s. */
        json_int_t oldest = json_integer_value(json_object_get(row, "oldestAgeUsec"));
        ASSERT_TRUE(oldest >= 99000000 - 268435 && oldest <= 99000000 + 268435);
        _cleanup_free_ char *growth = json_dumps(json_object_get(row, "growth"), JSON_COMPACT);
        ASSERT_STREQ(growth, "[0,0,3]");
        ASSERT_TRUE(json_array_size(json_object_get(row, "frames")) == 4);
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(row, "frames"), 0)), "__alloc_pages+0x10");
        ASSERT_NOT_NULL(row_of_pid(pages, 12));
        ASSERT_NULL(row_of_pid(pages, 11));
        json_t *objects = json_object_get(reply, "rows");
        ASSERT_EQ(json_array_size(objects), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(objects, 0), "objects")), 1);
        _cleanup_free_ char *object_growth = json_dumps(json_object_get(json_array_get(objects, 0), "growth"),
                                                        JSON_COMPACT);
        ASSERT_STREQ(object_growth, "[1,0,1]");
        ASSERT_EQ(json_integer_value(json_object_get(reply, "pageAgeGrainUsec")), 268435);

        /* One process, any age: its one page. */
        q.pid = 12;
        q.min_age_nsec = 0;
        ASSERT_OK(leaks_query_json(a, &q, &only));
        ASSERT_EQ(json_array_size(json_object_get(only, "pages")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(only, "pages"), 0), "pages")), 1);
        ASSERT_EQ(json_array_size(json_object_get(only, "rows")), 0);

        /* The limit keeps the biggest. */
        q.pid = 0;
        q.limit = 1;
        ASSERT_OK(leaks_query_json(a, &q, &one));
        ASSERT_EQ(json_array_size(json_object_get(one, "pages")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(one, "pages"), 0), "pages")), 7);
        accounting_free(a);
        ksym_free(k);
}

static void cache_object_at(Accounting *a, int32_t pid, uint64_t ptr, const char *cache, uint64_t site, uint64_t t) {
        event_at(a, synthetic_object_event(MS_EVENT_OBJECT_ALLOC, pid, ptr, 256, 256, cache, site, (MsStack) {}), t);
}

/* A cache whose frees never come (maple_node on 6.18) keeps old objects that are not leaks: once its
 * pointers come back it is marked, Slab says so on its cache and call site, and Leaks lists its call site
 * apart, not among the leaks, beside a call site of a cache freeing in view that does leak. */
static void test_leaks_invisible_frees(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(8, &k);
        json_auto_t *reply = NULL, *sites = NULL, *caches = NULL;

        for (uint64_t i = 0; i < 20; i++)
                cache_object_at(a, 10, 0x10000 + i * 256, "maple_node", K_SYSCALL, 1 * SEC);
        for (uint64_t i = 0; i < SLAB_INVISIBLE_MIN_LOST; i++)
                cache_object_at(a, 10, 0x10000 + i * 256, "maple_node", K_SYSCALL, (10 + i) * SEC);
        for (uint64_t i = 0; i < 3; i++)
                cache_object_at(a, 10, 0x90000 + i * 256, "leaky", K_VFS_WRITE, (1 + 30 * i) * SEC);

        LeaksQuery q = { .now_nsec = 100 * SEC, .min_age_nsec = 60 * SEC, .interval_nsec = 10 * SEC,
                         .intervals = 3, .limit = 10 };
        ASSERT_OK(leaks_query_json(a, &q, &reply));
        json_t *rows = json_object_get(reply, "rows"), *invisible = json_object_get(reply, "freesNotVisible");
        ASSERT_EQ(json_array_size(rows), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rows, 0), "name")), "vfs_write+0x10");
        ASSERT_EQ(json_array_size(invisible), 1);
        json_t *site = json_array_get(invisible, 0);
        ASSERT_STREQ(json_string_value(json_object_get(site, "name")), "entry_SYSCALL_64+0x10");
        ASSERT_STREQ(json_string_value(json_object_get(site, "cache")), "maple_node");
        ASSERT_EQ(json_integer_value(json_object_get(site, "objects")), 20);
        ASSERT_EQ(json_integer_value(json_object_get(site, "bytes")), 20 * 256);
        ASSERT_EQ(json_integer_value(json_object_get(site, "lostFrees")), SLAB_INVISIBLE_MIN_LOST);

        ASSERT_OK(slab_query_json(a, SLAB_BY_CALLSITE, 10, false, &sites));
        ASSERT_EQ(json_integer_value(json_object_get(sites, "invisibleFreeCallSites")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(sites, "invisibleFreeCaches")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(sites, "lostFrees")), SLAB_INVISIBLE_MIN_LOST);
        ASSERT_EQ(json_integer_value(json_object_get(sites, "visibleLostFrees")), 0);
        ASSERT_EQ(json_integer_value(json_object_get(sites, "visibleAllocs")), 3);
        json_t *row;
        size_t i;
        json_array_foreach(json_object_get(sites, "rows"), i, row) {
                bool maple = streq(json_string_value(json_object_get(row, "cache")), "maple_node");
                ASSERT_TRUE(json_is_boolean(json_object_get(row, "freesVisible")));
                ASSERT_EQ(json_is_true(json_object_get(row, "freesVisible")), !maple);
                ASSERT_EQ(json_integer_value(json_object_get(row, "lostFrees")), maple ? SLAB_INVISIBLE_MIN_LOST : 0);
        }
        ASSERT_OK(slab_query_json(a, SLAB_BY_CACHE, 10, false, &caches));
        json_array_foreach(json_object_get(caches, "rows"), i, row) {
                bool maple = streq(json_string_value(json_object_get(row, "name")), "maple_node");
                ASSERT_EQ(json_is_true(json_object_get(row, "freesVisible")), !maple);
                ASSERT_TRUE(json_is_null(json_object_get(row, "kernel")));      /* no reconciliation yet */
                ASSERT_EQ(json_integer_value(json_object_get(row, "trimmedObjects")), 0);
        }
        accounting_free(a);
        ksym_free(k);
}

/* Processes that exited holding old pages and objects and were evicted (beyond max_exited_tasks): Leaks
 * and Slab by task show them as "[evicted]", with or without a pid asked for, rather than reading a record
 * that is gone. */
static void test_leaks_evicted(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(2, &k);
        json_auto_t *all = NULL, *one = NULL, *by_task = NULL;

        for (int32_t pid = 20; pid < 30; pid++) {
                page_at(a, pid, 0x1000 + (uint64_t) pid * 16, 0, 0, 1 * SEC);
                object_at(a, pid, 0x100000 + (uint64_t) pid * 64, 64, 1 * SEC);
                event_at(a, synthetic_event(MS_EVENT_TASK_EXIT, pid), 2 * SEC);
        }
        UsageStats us;
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_GE(us.tasks_evicted, 8);

        LeaksQuery q = { .now_nsec = 100 * SEC, .min_age_nsec = 60 * SEC, .interval_nsec = 10 * SEC,
                         .intervals = 3, .limit = 100 };
        ASSERT_OK(leaks_query_json(a, &q, &all));
        uint64_t pages = 0;
        json_t *row;
        size_t i;
        json_array_foreach(json_object_get(all, "pages"), i, row)
                pages += json_integer_value(json_object_get(row, "pages"));
        ASSERT_EQ(pages, 10);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(all, "rows"), 0), "objects")), 10);
        q.pid = 21;
        ASSERT_OK(leaks_query_json(a, &q, &one));
        ASSERT_EQ(json_array_size(json_object_get(one, "rows")), 0);
        ASSERT_OK(slab_query_json(a, SLAB_BY_TASK, 100, false, &by_task));
        uint64_t objects = 0;
        json_array_foreach(json_object_get(by_task, "rows"), i, row)
                objects += json_integer_value(json_object_get(row, "liveObjects"));
        ASSERT_EQ(objects, 10);
        accounting_free(a);
        ksym_free(k);
}

/* The user frames below the process node of pid, outermost first, in one string ("frame@address|..."). */
static void user_frames_of(json_t *node, int32_t pid, bool below, char *buf, size_t size) {
        char prefix[32];
        const char *frame = json_string_value(json_object_get(node, "frame"));
        json_t *child;
        size_t i;

        (void) snprintf(prefix, sizeof(prefix), "[pid %d ", (int) pid);
        if (below && startswith(frame, "[user]") && strlen(buf) + 64 < size) {
                const char *address = json_string_value(json_object_get(node, "address"));
                (void) snprintf(buf + strlen(buf), size - strlen(buf), "%s@%s|", frame, address ?: "null");
        }
        json_array_foreach(json_object_get(node, "children"), i, child)
                user_frames_of(child, pid, below || startswith(frame, prefix), buf, size);
}

static void expect_user_frames(Accounting *a, int32_t pid, QueryUserAddresses policy, uid_t uid, const char *expected) {
        QueryStackTree q = { .pid = -1, .max_depth = 255, .max_children = 10000, .sort = QUERY_SORT_CURRENT,
                             .show_addresses = true, .user_addresses = policy, .caller_uid = uid };
        json_auto_t *reply = NULL;
        char got[512] = "";

        ASSERT_OK(query_stacktree(a, &q, &reply));
        user_frames_of(json_object_get(reply, "root"), pid, false, got, sizeof(got));
        if (!streq(got, expected))
                fprintf(stderr, "pid %d, policy %d, uid %u: %s, expected %s\n", (int) pid, (int) policy, (unsigned) uid,
                        got, expected);
        ASSERT_STREQ(got, expected);
}

/*
 * Raw user-space addresses are shown as the kernel's are: to root for every process; to another caller
 * for its own running processes only (whole-owner and dumpable, as the kernel lets it read their maps),
 * never for an exited process, a process gone from /proc or another user's. Names stay either way.
 */
static void test_user_addresses(void) {
        static const char shown[] = "[user] 0x402000@0x0000000000402000|[user] 0x401000@0x0000000000401000|";
        static const char hidden[] = "[user] [unknown]@null|[user] [unknown]@null|";
        Ksym *k = NULL;
        Accounting *a = core_new(8, &k);
        uid_t me = geteuid(), owner = 12345;
        int32_t self = (int32_t) getpid();

        /* The owner of a process, from /proc: ours; none for one that is gone. */
        ASSERT_OK(read_proc_owner(self, &owner));
        ASSERT_EQ(owner, me);
        pid_t gone = fork();
        ASSERT_OK(gone);
        if (gone == 0)
                _exit(0);
        ASSERT_EQ(waitpid(gone, NULL, 0), gone);
        ASSERT_TRUE(read_proc_owner(gone, &owner) < 0);
        /* An undumpable process's layout is root's business, whoever runs it. */
        int ready[2];
        ASSERT_OK(pipe(ready));
        pid_t undumpable = fork();
        ASSERT_OK(undumpable);
        if (undumpable == 0) {
                /* Gone with the test, also when it fails. */
                char c = prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_DUMPABLE, 0) < 0 ? 'n' : 'y';
                if (write(ready[1], &c, 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        char c = 0;
        ASSERT_EQ(read(ready[0], &c, 1), 1);
        ASSERT_EQ(c, 'y');
        owner = 12345;
        int r = read_proc_owner(undumpable, &owner);
        ASSERT_TRUE(r == -EPERM || (r == 0 && owner == 0));
        ASSERT_TRUE(me == 0 || r == -EPERM);

        alloc(a, self, 0x10000, 0, 4);
        alloc(a, (int32_t) gone, 0x20000, 0, 4);
        alloc(a, (int32_t) undumpable, 0x30000, 0, 4);
        alloc(a, 4242, 0x40000, 0, 4);
        MsEvent exit_event = synthetic_event(MS_EVENT_TASK_EXIT, 4242);
        accounting_handle_event(a, &exit_event);

        /* Root: all. */
        expect_user_frames(a, self, QUERY_USER_ADDRESSES_ALL, 0, shown);
        expect_user_frames(a, 4242, QUERY_USER_ADDRESSES_ALL, 0, shown);
        /* A caller: its own running process only. */
        expect_user_frames(a, self, QUERY_USER_ADDRESSES_OWN, me, shown);
        expect_user_frames(a, self, QUERY_USER_ADDRESSES_OWN, me + 1, hidden);
        expect_user_frames(a, (int32_t) gone, QUERY_USER_ADDRESSES_OWN, me, hidden);
        expect_user_frames(a, 4242, QUERY_USER_ADDRESSES_OWN, me, hidden);
        if (me != 0)
                expect_user_frames(a, (int32_t) undumpable, QUERY_USER_ADDRESSES_OWN, me, hidden);
        /* A reply kept for anyone: none. */
        expect_user_frames(a, self, QUERY_USER_ADDRESSES_NONE, me, hidden);

        /* The same in the frames of a stack list (Units topStacks, Leaks, OomKills). */
        json_auto_t *top = NULL;
        ASSERT_OK(query_top_stacks(a, 10, true, NULL, &top));
        _cleanup_free_ char *text = json_dumps(top, JSON_COMPACT);
        ASSERT_NULL(strstr(text, "0x40"));
        ASSERT_NOT_NULL(strstr(text, "[user] [unknown]"));
        LeaksQuery lq = { .now_nsec = 100 * SEC, .interval_nsec = 10 * SEC, .intervals = 1, .limit = 10,
                          .pid = self, .user_addresses = QUERY_USER_ADDRESSES_OWN, .caller_uid = me };
        json_auto_t *mine = NULL, *theirs = NULL;
        ASSERT_OK(leaks_query_json(a, &lq, &mine));
        _cleanup_free_ char *mine_text = json_dumps(mine, JSON_COMPACT);
        ASSERT_NOT_NULL(strstr(mine_text, "[user] 0x401000"));
        lq.caller_uid = me + 1;
        ASSERT_OK(leaks_query_json(a, &lq, &theirs));
        _cleanup_free_ char *theirs_text = json_dumps(theirs, JSON_COMPACT);
        ASSERT_NULL(strstr(theirs_text, "[user] 0x"));

        (void) kill(undumpable, SIGKILL);
        ASSERT_EQ(waitpid(undumpable, NULL, 0), undumpable);
        safe_close(ready[0]);
        safe_close(ready[1]);
        accounting_free(a);
        ksym_free(k);
}

/* The only row of a reply list whose key is value; fails if there is none or more than one. */
static json_t *only_row(json_t *rows, const char *key, json_int_t value) {
        json_t *row, *found = NULL;
        size_t i;

        json_array_foreach(rows, i, row)
                if (json_integer_value(json_object_get(row, key)) == value) {
                        ASSERT_NULL(found);
                        found = row;
                }
        ASSERT_NOT_NULL(found);
        return found;
}

static void exit_at(Accounting *a, int32_t pid, uint64_t t) {
        event_at(a, synthetic_event(MS_EVENT_TASK_EXIT, pid), t);
}

/*
 * Owners forgotten to bound memory (one exited task kept): their pages and objects stay, and every view
 * that names an owner shows them as "[evicted]" with pid -1, one sum as in Tasks' "evicted", whatever
 * filter is asked for. Evicted processes were once followed through a NULL record.
 */
static void test_evicted_owners(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(1, &k);
        json_auto_t *leaks = NULL, *leaks_pid = NULL, *slab = NULL;

        page_at(a, 10, 0x100, 2, 0, 1 * SEC);
        page_at(a, 11, 0x200, 1, 0, 1 * SEC);
        object_at(a, 10, 0xa000, 64, 1 * SEC);
        object_at(a, 11, 0xb000, 32, 1 * SEC);
        object_at(a, 12, 0xc000, 16, 1 * SEC);
        exit_at(a, 10, 2 * SEC);
        exit_at(a, 11, 3 * SEC);
        exit_at(a, 12, 4 * SEC);
        UsageStats us;
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_EQ(us.tasks_evicted, 2);

        LeaksQuery q = { .now_nsec = 100 * SEC, .min_age_nsec = 0, .interval_nsec = 10 * SEC, .intervals = 3,
                         .limit = 10 };
        ASSERT_OK(leaks_query_json(a, &q, &leaks));
        json_t *pages = json_object_get(leaks, "pages");
        ASSERT_EQ(json_array_size(pages), 1);
        json_t *row = only_row(pages, "pid", -1);
        ASSERT_STREQ(json_string_value(json_object_get(row, "comm")), "[evicted]");
        ASSERT_EQ(json_integer_value(json_object_get(row, "pages")), 6);
        ASSERT_EQ(json_array_size(json_object_get(leaks, "rows")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(leaks, "rows"), 0), "objects")), 3);

        /* A process still known: only its object, none of the evicted ones'. */
        q.pid = 12;
        ASSERT_OK(leaks_query_json(a, &q, &leaks_pid));
        ASSERT_EQ(json_array_size(json_object_get(leaks_pid, "pages")), 0);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(leaks_pid, "rows"), 0), "objects")),
                  1);

        ASSERT_OK(slab_query_json(a, SLAB_BY_TASK, 10, false, &slab));
        json_t *rows = json_object_get(slab, "rows");
        ASSERT_EQ(json_array_size(rows), 2);
        row = only_row(rows, "pid", -1);
        ASSERT_STREQ(json_string_value(json_object_get(row, "name")), "[evicted]");
        ASSERT_EQ(json_integer_value(json_object_get(row, "liveObjects")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(row, "liveBytesAllocated")), 96);
        ASSERT_EQ(json_integer_value(json_object_get(row, "peakLiveBytes")), 96);
        ASSERT_EQ(json_integer_value(json_object_get(only_row(rows, "pid", 12), "liveObjects")), 1);
        accounting_free(a);
        ksym_free(k);
}

/* The root's children of a StackTree reply sorted by peak, as "frame:current:peak" joined by spaces. */
static char *process_nodes(Accounting *a, int32_t pid) {
        json_auto_t *reply = NULL;
        char *s = NULL;
        size_t size = 0, i;
        json_t *c;

        QueryStackTree q = { .pid = pid, .max_depth = 1, .max_children = 100, .sort = QUERY_SORT_PEAK,
                             .user_addresses = QUERY_USER_ADDRESSES_ALL };
        ASSERT_OK(query_stacktree(a, &q, &reply));
        FILE *m = open_memstream(&s, &size);
        ASSERT_NOT_NULL(m);
        json_t *root = json_object_get(reply, "root");
        fprintf(m, "%s:%lld:%lld", json_string_value(json_object_get(root, "frame")),
                (long long) json_integer_value(json_object_get(root, "currentPages")),
                (long long) json_integer_value(json_object_get(root, "peakPages")));
        json_array_foreach(json_object_get(root, "children"), i, c)
                fprintf(m, " %s:%lld:%lld", json_string_value(json_object_get(c, "frame")),
                        (long long) json_integer_value(json_object_get(c, "currentPages")),
                        (long long) json_integer_value(json_object_get(c, "peakPages")));
        ASSERT_EQ(fclose(m), 0);
        return s;
}

/*
 * A task slot is reused once its evicted process holds nothing. The process's stack-tree scope (its user
 * frames' node, its own tree) must not pass to the next process in the slot: the newcomer starts with
 * nothing, and the old node is the evicted process's, not named after the newcomer.
 */
static void test_reused_slot_scope(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        Ksym *k = NULL;

        ASSERT_OK(ksym_load("data/kallsyms-modules", &k));
        c.max_exited_tasks = 1;
        c.per_process_stacks = true;
        ASSERT_OK(accounting_new(&c, k, &a));
        Usage *u = accounting_usage(a);

        /* 10 holds 8 pages through a chain with user frames, frees them and is forgotten. */
        page_at(a, 10, 0x100, 3, 4, 1 * SEC);
        uint32_t slot = usage_find_process(u, 10);
        event_at(a, synthetic_page_event(MS_EVENT_PAGE_FREE, 10, 0x100, 3, (MsStack) {}),
                 2 * SEC);
        exit_at(a, 10, 3 * SEC);
        exit_at(a, 11, 4 * SEC);
        ASSERT_EQ(usage_find_process(u, 10), USAGE_TASK_NONE);

        /* 20 takes the slot and allocates 1 page through the same chain. */
        event_at(a, synthetic_task_event(MS_EVENT_TASK_FORK, 20, NULL, 1), 5 * SEC);
        event_at(a, synthetic_task_event(MS_EVENT_TASK_COMM, 20, "newcomer", 0), 5 * SEC);
        ASSERT_EQ(usage_find_process(u, 20), slot);
        page_at(a, 20, 0x200, 0, 4, 6 * SEC);

        _cleanup_free_ char *own = process_nodes(a, 20);
        ASSERT_STREQ(own, "[pid 20 newcomer]:1:1 [user] 0x402000:1:1");
        _cleanup_free_ char *all = process_nodes(a, -1);
        ASSERT_STREQ(all, "[all]:1:8 [evicted]:0:8 [pid 20 newcomer]:1:1");
        accounting_free(a);
        ksym_free(k);
}

/*
 * A slab object of 0 bytes (kmalloc(0)) charges its task nothing, yet names it: the task's slot must not
 * go to another process while it does, or the object would be shown as the newcomer's.
 */
static void test_object_holds_slot(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(1, &k);
        json_auto_t *slab = NULL;

        event_at(a, synthetic_object_event(MS_EVENT_OBJECT_ALLOC, 10, 0x10, 0, 0, NULL, K_VFS_WRITE, (MsStack) {}),
                 1 * SEC);
        uint32_t slot = usage_find_process(accounting_usage(a), 10);
        exit_at(a, 10, 2 * SEC);
        exit_at(a, 11, 3 * SEC);
        event_at(a, synthetic_task_event(MS_EVENT_TASK_FORK, 20, NULL, 1), 4 * SEC);
        ASSERT_NE(usage_find_process(accounting_usage(a), 20), slot);

        ASSERT_OK(slab_query_json(a, SLAB_BY_TASK, 10, false, &slab));
        json_t *rows = json_object_get(slab, "rows");
        ASSERT_EQ(json_array_size(rows), 1);
        ASSERT_STREQ(json_string_value(json_object_get(only_row(rows, "pid", -1), "name")), "[evicted]");

        /* Its free lets the slot go. */
        UsageStats us;
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_EQ(us.tasks_recycled, 0);
        object_at(a, 20, 0x10, 0, 5 * SEC);
        usage_get_stats(accounting_usage(a), &us);
        ASSERT_EQ(us.tasks_recycled, 1);
        accounting_free(a);
        ksym_free(k);
}

/* A frame's name is as long as its symbol: a Rust or C++ symbol of 700 bytes is not cut (the stack tree
 * and slab call sites). */
static void test_long_symbol_names(void) {
        char path[] = "/tmp/test-query-kallsyms.XXXXXX", symbol[701];
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        json_auto_t *reply = NULL, *name = NULL, *address = NULL;
        Accounting *a = NULL;
        Ksym *k = NULL;

        memset(symbol, 'a', sizeof(symbol) - 1);
        symbol[sizeof(symbol) - 1] = '\0';
        int fd = mkstemp(path);
        ASSERT_TRUE(fd >= 0);
        FILE *f = fdopen(fd, "w");
        ASSERT_NOT_NULL(f);
        fprintf(f, "ffffffff81000000 T _stext\nffffffff81001000 T %s\nffffffff81002000 T _etext\n", symbol);
        ASSERT_EQ(fclose(f), 0);
        ASSERT_OK(ksym_load(path, &k));
        ASSERT_OK(unlink(path));
        c.slab = true;
        ASSERT_OK(accounting_new(&c, k, &a));

        static const uint64_t frames[] = { 0xffffffff81001010 };
        MsEvent alloc_event = synthetic_page_event(MS_EVENT_PAGE_ALLOC, 7, 0x10, 0, synthetic_stack(frames, 1, 1));
        accounting_handle_event(a, &alloc_event);
        QueryStackTree q = { .pid = -1, .max_depth = 4, .max_children = 10, .sort = QUERY_SORT_CURRENT };
        ASSERT_OK(query_stacktree(a, &q, &reply));
        json_t *leaf = json_array_get(json_object_get(json_object_get(reply, "root"), "children"), 0);
        _cleanup_free_ char *expected = strdup_printf("%s+0x10", symbol);
        ASSERT_STREQ(json_string_value(json_object_get(leaf, "frame")), expected);

        slab_call_site_json(a, 0xffffffff81001010, false, &name, &address);
        ASSERT_STREQ(json_string_value(name), expected);
        accounting_free(a);
        ksym_free(k);
}

int main(void) {
        TEST(test_filtered_views_match_page_table);
        TEST(test_tasks_and_modules);
        TEST(test_leaks);
        TEST(test_leaks_invisible_frees);
        TEST(test_leaks_evicted);
        TEST(test_user_addresses);
        TEST(test_evicted_owners);
        TEST(test_reused_slot_scope);
        TEST(test_long_symbol_names);
        TEST(test_object_holds_slot);
        return 0;
}
