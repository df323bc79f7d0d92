/* SPDX-License-Identifier: MIT */

/*
 * bench-query: what the client-triggered views cost on a big core. Builds N_TASKS processes holding
 * LIVE_PAGES pages between them over 2,000 kernel call chains, then times, each as the best of a few
 * calls: Diff against a snapshot (every task paired with its snapshot record), and StackTree filtered
 * to one small task, to an empty module and to the module holding every page (no symbols here: all is
 * vmlinux), next to the unfiltered tree, Leaks of every task and of one small task, Explain of the unit
 * holding every page (and every one of OBJECTS slab objects), PageBreakdown of everything and ExplainUnits,
 * and Profile (what memstrack-metrics' /debug/pprof/heap asks for) of every page and of the slab objects.
 * Usage: bench-query [TASKS] [LIVE_PAGES]
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <jansson.h>

#include "accounting.h"
#include "breakdown.h"
#include "explain.h"
#include "leaks.h"
#include "macro.h"
#include "marks.h"
#include "profilequery.h"
#include "query.h"
#include "time-util.h"

#define DEPTH 12
#define N_CHAINS 2000
#define OBJECTS 200000

static uint64_t chains[N_CHAINS][DEPTH];

static void alloc(Accounting *a, int32_t pid, uint64_t pfn, unsigned chain) {
        MsEvent e = {
                .type = MS_EVENT_PAGE_ALLOC,
                .pid = pid,
                .tid = pid,
                .page.pfn = pfn,
                .page.stack.frames = chains[chain],
                .page.stack.n_frames = DEPTH,
                .page.stack.n_kernel_frames = DEPTH,
        };
        accounting_handle_event(a, &e);
}

typedef int (*Query)(Accounting *a, Marks *s, int32_t pid);

static int run_diff(Accounting *a, Marks *s, int32_t pid) {
        json_auto_t *r = NULL;
        return marks_diff(s, 0, "bench", a, 2, 50, &r);
}

static int run_tree(Accounting *a, Marks *s, int32_t pid, const char *module) {
        QueryStackTree q = { .pid = pid, .module = module, .max_depth = 32, .min_pages = 1, .max_children = 16,
                             .sort = QUERY_SORT_CURRENT };
        json_auto_t *r = NULL;
        return query_stacktree(a, &q, &r);
}

static int run_tree_pid(Accounting *a, Marks *s, int32_t pid) {
        return run_tree(a, s, pid, NULL);
}

static int run_tree_module(Accounting *a, Marks *s, int32_t pid) {
        return run_tree(a, s, -1, "[loading]");
}

static int run_tree_all_module(Accounting *a, Marks *s, int32_t pid) {
        return run_tree(a, s, -1, "vmlinux");
}

static int run_tree_all(Accounting *a, Marks *s, int32_t pid) {
        return run_tree(a, s, -1, NULL);
}

static int run_leaks(Accounting *a, Marks *s, int32_t pid) {
        LeaksQuery q = { .now_nsec = 120 * UINT64_C(1000000000), .min_age_nsec = 60 * UINT64_C(1000000000),
                         .interval_nsec = 10 * UINT64_C(1000000000), .intervals = 6, .pid = pid, .limit = 20 };
        json_auto_t *r = NULL;
        return leaks_query_json(a, &q, &r);
}

/* Every page and object is charged to cgroup id 0, the unit "[unknown]". */
static int run_explain(Accounting *a, Marks *s, int32_t pid) {
        ExplainQuery q = { .name = UNITS_UNKNOWN_NAME, .stacks = 5, .page_size = 4096 };
        json_auto_t *r = NULL;
        return explain_query_json(a, &q, &r);
}

static int run_breakdown(Accounting *a, Marks *s, int32_t pid) {
        json_auto_t *r = NULL;
        return breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_GFP, .pid = -1 }, &r);
}

static int run_explain_units(Accounting *a, Marks *s, int32_t pid) {
        json_auto_t *names = json_pack("[s]", UNITS_UNKNOWN_NAME), *r = NULL;
        return names ? explain_units_json(a, names, NULL, 4096, &r) : -ENOMEM;
}

static int run_profile(Accounting *a, Marks *s, int32_t pid, ProfileOf of) {
        ProfileQuery q = { .of = of, .pid = -1, .top = PROFILE_TOP_DEFAULT, .page_size = 4096 };
        json_auto_t *r = NULL;
        return profile_query_json(a, &q, &r);
}

static int run_profile_pages(Accounting *a, Marks *s, int32_t pid) {
        return run_profile(a, s, pid, PROFILE_OF_PAGES);
}

static int run_profile_slab(Accounting *a, Marks *s, int32_t pid) {
        return run_profile(a, s, pid, PROFILE_OF_SLAB);
}

static void time_query(const char *what, Query q, Accounting *a, Marks *s, int32_t pid) {
        uint64_t best = UINT64_MAX;

        for (unsigned i = 0; i < 5; i++) {
                uint64_t t0 = now_nsec(CLOCK_MONOTONIC);
                int r = q(a, s, pid);
                uint64_t t = now_nsec(CLOCK_MONOTONIC) - t0;
                if (r < 0) {
                        fprintf(stderr, "%s failed: %d\n", what, r);
                        exit(EXIT_FAILURE);
                }
                best = MIN(best, t);
        }
        printf("  %-34s %10.3f ms\n", what, best / 1e6);
}

int main(int argc, char **argv) {
        int32_t n_tasks = argc > 1 ? (int32_t) strtol(argv[1], NULL, 10) : 100000;
        uint64_t live = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        Marks *s = marks_new();

        c.max_exited_tasks = (size_t) n_tasks * 2;
        c.slab = true;
        c.expected_pages = live;
        if (!s || accounting_new(&c, NULL, &a) < 0)
                return EXIT_FAILURE;
        for (unsigned i = 0; i < N_CHAINS; i++)
                for (unsigned d = 0; d < DEPTH; d++)
                        /* Outer frames shared by many chains, inner ones unique. */
                        chains[i][d] = UINT64_C(0xffffffff81000000) + (d < DEPTH / 2 ? i * DEPTH + d : (i % 50) * DEPTH + d) * 64;

        /* Pages spread over the tasks; the last task holds just 3 pages. */
        uint64_t pfn = 0;
        for (uint64_t p = 0; p < live; p++)
                alloc(a, 1 + (int32_t) (p % (uint64_t) (n_tasks - 1)), pfn++, (unsigned) (p * 7919 % N_CHAINS));
        for (unsigned i = 0; i < 3; i++)
                alloc(a, n_tasks, pfn++, i);
        /* A module subset: pages of a module being loaded, charged to "[loading]" (no symbols here). */
        if (marks_save(s, 0, "bench", a, 1) < 0)
                return EXIT_FAILURE;
        for (int32_t pid = 1; pid < n_tasks; pid += 10)
                alloc(a, pid, pfn++, (unsigned) pid % N_CHAINS);

        for (uint64_t i = 0; i < OBJECTS; i++) {
                MsEvent e = { .type = MS_EVENT_OBJECT_ALLOC, .pid = 1 + (int32_t) (i % (uint64_t) (n_tasks - 1)),
                              .object = { .ptr = 0x10000 + i * 64, .bytes_requested = 48, .bytes_allocated = 64,
                                          .cache = i % 2 ? "dentry" : NULL, .call_site = 0xffffffff81000000 + i % 300,
                                          .stack = { .frames = chains[i % N_CHAINS], .n_frames = DEPTH,
                                                     .n_kernel_frames = DEPTH } } };
                e.pid = e.tid = e.pid;
                accounting_handle_event(a, &e);
        }

        printf("%d tasks, %" PRIu64 " live pages, %zu stack nodes, %d slab objects:\n", n_tasks,
               pagemap_pages(accounting_pagemap(a)), stacktree_size(accounting_stacktree(a)), OBJECTS);
        time_query("Diff", run_diff, a, s, -1);
        time_query("StackTree of a 3-page task", run_tree_pid, a, s, n_tasks);
        time_query("StackTree of an empty module", run_tree_module, a, s, -1);
        time_query("StackTree of vmlinux (every page)", run_tree_all_module, a, s, -1);
        time_query("StackTree, unfiltered", run_tree_all, a, s, -1);
        time_query("Leaks, every task", run_leaks, a, s, 0);
        time_query("Leaks of a 3-page task", run_leaks, a, s, n_tasks);
        time_query("Explain of the unit of every page", run_explain, a, s, -1);
        time_query("PageBreakdown by gfp, everything", run_breakdown, a, s, -1);
        time_query("ExplainUnits of that unit", run_explain_units, a, s, -1);
        time_query("Profile of every page (pprof heap)", run_profile_pages, a, s, -1);
        time_query("Profile of the slab objects", run_profile_slab, a, s, -1);

        marks_free(s);
        accounting_free(a);
        return EXIT_SUCCESS;
}
