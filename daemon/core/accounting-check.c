/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "accounting.h"
#include "macro.h"

/* The first sum that disagrees ends the check, named as written. */
#define SUM_AGREES(expr)                                                                                \
        do {                                                                                            \
                if (!(expr)) {                                                                          \
                        *ret_what = #expr;                                                              \
                        return -EBADMSG;                                                                \
                }                                                                                       \
        } while (0)

static void add_cell_pages(void *userdata, uint32_t node, uint64_t pages) {
        *(uint64_t *) userdata += pages;
}

typedef struct CgroupSums {
        const ChargeIndex *index;
        uint64_t *pages;                /* by cgroup record */
} CgroupSums;

static void add_cgroup_cell(void *userdata, uint32_t cell) {
        CgroupSums *c = userdata;
        c->pages[chargeindex_cgroup(c->index, cell)] += chargeindex_pages(c->index, cell);
}

static int check_tasks_and_modules(Accounting *a, uint64_t total, const char **ret_what) {
        Usage *u = accounting_usage(a);
        const ChargeIndex *ci = accounting_chargeindex(a);
        uint64_t by_process = 0, by_module = 0, in_cells = 0;

        for (uint32_t i = 0; i < usage_task_slots(u); i++) {
                const Task *t = usage_task(u, i);
                uint64_t cells = 0;

                /* Evicted slots still name pages in their cells: "[evicted]" counts those. */
                chargeindex_foreach_process(ci, i, add_cell_pages, &cells);
                in_cells += cells;
                if (!t || t->is_thread)
                        continue;
                SUM_AGREES(t->ledger[LEDGER_PAGES].current <= t->ledger[LEDGER_PAGES].peak);
                SUM_AGREES(i == USAGE_TASK_EVICTED || cells == t->ledger[LEDGER_PAGES].current);
                by_process += t->ledger[LEDGER_PAGES].current;
        }
        SUM_AGREES(by_process == total);
        SUM_AGREES(in_cells == total);

        for (uint16_t id = 1; id <= usage_module_count(u); id++) {
                const ModuleUsage *m = usage_module(u, id);
                uint64_t cells = 0;

                chargeindex_foreach_module(ci, id, add_cell_pages, &cells);
                SUM_AGREES(cells == m->ledger[LEDGER_PAGES].current);
                SUM_AGREES(m->ledger[LEDGER_PAGES].current <= m->ledger[LEDGER_PAGES].peak);
                by_module += m->ledger[LEDGER_PAGES].current;
        }
        SUM_AGREES(by_module == total);
        return 0;
}

/* Each node holds at least what its children do; what the nodes hold beyond their children adds up to
 * the total in the global tree, and in the per-process one when kept unless the node budget left some
 * chains to the global tree alone. */
static int check_stacks(Accounting *a, uint64_t total, bool per_process, const char **ret_what) {
        StackTree *st = accounting_stacktree(a);
        uint64_t own[2] = {};

        for (uint32_t i = 0; i < stacktree_size(st); i++) {
                const StackNode *n = stacktree_node(st, i);
                Ledger pages = stacktree_pages(st, i);
                uint64_t children = 0;
                uint32_t root = i;

                for (uint32_t c = n->first_child; c != STACK_NODE_NONE; c = stacktree_node(st, c)->next_sibling)
                        children += stacktree_pages(st, c).current;
                SUM_AGREES(children <= pages.current);
                SUM_AGREES(pages.current <= pages.peak);
                while (stacktree_node(st, root)->parent != STACK_NODE_NONE)
                        root = stacktree_node(st, root)->parent;
                SUM_AGREES(root == STACK_NODE_ROOT || root == STACK_NODE_PROCESSES);
                own[root] += pages.current - children;
        }
        SUM_AGREES(stacktree_pages(st, STACK_NODE_ROOT).current == total);
        SUM_AGREES(own[STACK_NODE_ROOT] == total);
        StackTreeStats stats;
        stacktree_get_stats(st, &stats);
        SUM_AGREES(own[STACK_NODE_PROCESSES] <= total);
        SUM_AGREES(!per_process || stats.process_paths_truncated > 0 || own[STACK_NODE_PROCESSES] == total);
        return 0;
}

static int check_units(Accounting *a, uint64_t total, const char **ret_what) {
        Units *un = accounting_units(a);
        size_t n_cgroups = units_cgroup_count(un);
        _cleanup_free_ uint64_t *by_unit = calloc(MAX(units_unit_count(un), (size_t) 1), sizeof(uint64_t));
        CgroupSums cells = { accounting_chargeindex(a), calloc(MAX(n_cgroups, (size_t) 1), sizeof(uint64_t)) };
        uint64_t units_total = 0;
        int r = 0;

        if (!by_unit || !cells.pages) {
                free(cells.pages);
                return -ENOMEM;
        }
        chargeindex_foreach_cell(cells.index, add_cgroup_cell, &cells);
        for (uint32_t i = 1; i < n_cgroups && r == 0; i++) {
                const CgroupUsage *c = units_cgroup(un, i);
                if (!c || cells.pages[i] != c->current_pages) {
                        *ret_what = "the cells of each cgroup hold what it does";
                        r = -EBADMSG;
                } else
                        by_unit[c->unit] += c->current_pages;
        }
        free(cells.pages);
        if (r < 0)
                return r;
        for (uint32_t i = 1; i < units_unit_count(un); i++) {
                const UnitUsage *unit = units_unit(un, i);
                if (!unit)
                        continue;
                SUM_AGREES(unit->ledger.current == by_unit[i]);
                SUM_AGREES(unit->ledger.current <= unit->ledger.peak);
                units_total += unit->ledger.current;
        }
        SUM_AGREES(units_total == total);
        return 0;
}

int accounting_check_sums(Accounting *a, const char **ret_what) {
        AccountingStats s;
        int r;

        accounting_get_stats(a, &s);
        SUM_AGREES(s.current_pages <= s.peak_pages);
        /* Pages of aggregated samples have no pfn: the page table holds the rest. */
        SUM_AGREES(pagemap_pages(accounting_pagemap(a)) + s.sampled_pages == s.current_pages);
        r = check_tasks_and_modules(a, s.current_pages, ret_what);
        if (r == 0)
                r = check_stacks(a, s.current_pages, accounting_per_process_stacks(a), ret_what);
        if (r == 0)
                r = check_units(a, s.current_pages, ret_what);
        return r;
}
