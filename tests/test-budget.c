/* SPDX-License-Identifier: MIT */

/*
 * The memory budget (budget.h): the order of its steps, taking and lifting them, and the core held under
 * a budget its load would pass, counting what it gave up and taking it back when memory falls.
 */

#include "accounting.h"
#include "budget.h"
#include "synthetic-events.h"
#include "tests.h"

#define MIB (UINT64_C(1) << 20)

static void test_ladder(void) {
        Budget b;
        BudgetStep step = _BUDGET_STEP_INVALID;
        uint32_t all = (UINT32_C(1) << _BUDGET_STEP_MAX) - 1;

        /* No budget: never a step. */
        budget_init(&b, 0);
        ASSERT_EQ(budget_check(&b, UINT64_MAX, all, &step), BUDGET_KEEP);

        budget_init(&b, 16 * MIB);
        ASSERT_EQ(budget_check(&b, 14 * MIB, all, &step), BUDGET_KEEP);
        /* Within a sixteenth of the limit: the steps in order, one per check, passing over what does not
         * apply (slab objects untraced). */
        uint32_t no_slab = all & ~(UINT32_C(1) << BUDGET_STEP_SLAB_OBJECTS);
        const BudgetStep order[] = { BUDGET_STEP_HEAP_BLOCKS, BUDGET_STEP_EXITED_TASKS, BUDGET_STEP_STACKS,
                                     BUDGET_STEP_PAGES };
        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                ASSERT_EQ(budget_check(&b, 15 * MIB + MIB / 2, no_slab, &step), BUDGET_TAKE);
                ASSERT_EQ(step, order[i]);
                budget_changed(&b, BUDGET_TAKE, step);
                ASSERT_TRUE(budget_in_effect(&b, step));
        }
        /* Every step taken: nothing more to give up. */
        ASSERT_EQ(budget_check(&b, 20 * MIB, no_slab, &step), BUDGET_KEEP);
        /* Between three quarters and the line: steps stay. */
        ASSERT_EQ(budget_check(&b, 12 * MIB, no_slab, &step), BUDGET_KEEP);
        /* Below three quarters: lifted, last taken first. */
        for (size_t i = ELEMENTSOF(order); i-- > 0;) {
                ASSERT_EQ(budget_check(&b, 11 * MIB, no_slab, &step), BUDGET_LIFT);
                ASSERT_EQ(step, order[i]);
                budget_changed(&b, BUDGET_LIFT, step);
                ASSERT_TRUE(!budget_in_effect(&b, step));
        }
        ASSERT_EQ(budget_check(&b, 11 * MIB, no_slab, &step), BUDGET_KEEP);
        ASSERT_EQ(b.taken[BUDGET_STEP_PAGES], 1);
        ASSERT_EQ(b.taken[BUDGET_STEP_SLAB_OBJECTS], 0);
        ASSERT_EQ(b.peak_bytes, 20 * MIB);
        ASSERT_STREQ(budget_step_to_string(BUDGET_STEP_PAGES), "pages");
        ASSERT_NULL(budget_step_to_string(_BUDGET_STEP_MAX));
}

static void alloc(Accounting *a, int32_t pid, uint64_t pfn, const uint64_t *frames, size_t n) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, 0, synthetic_stack(frames, n, n));
        accounting_handle_event(a, &e);
}

static void release(Accounting *a, int32_t pid, uint64_t pfn) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_FREE, pid, pfn, 0, synthetic_stack(NULL, 0, 0));
        accounting_handle_event(a, &e);
}

static void check_sums(Accounting *a) {
        const char *what = NULL;
        int r = accounting_check_sums(a, &what);
        if (r < 0)
                fprintf(stderr, "sums disagree: %s\n", what);
        ASSERT_EQ(r, 0);
}

/* A load of distinct stacks and scattered pages against a budget a few MiB above the idle core: the core
 * stays under it, says what it gave up, keeps every count it does keep in agreement, and takes tracking
 * back up once the pages are freed. */
static void test_core_under_budget(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        BudgetStats b;
        uint64_t frames[8];

        ASSERT_OK(accounting_new(&c, NULL, &a));
        uint64_t idle = accounting_memory_bytes(a);
        accounting_free(a);

        c.max_memory_bytes = idle + 4 * MIB;
        ASSERT_OK(accounting_new(&c, NULL, &a));
        /* 2 M pages, a region of their own each (inline slots), every 4,096th through a new chain: the
         * load needs far more than 4 MiB above idle, nearly all of it the page table's. */
        const uint64_t n = 2000000;
        for (uint64_t i = 0; i < n; i++) {
                for (size_t f = 0; f < ELEMENTSOF(frames); f++)
                        frames[f] = UINT64_C(0xffffffff81000000) + (f == 0 ? (i / 4096) * 64 : f * 0x1000);
                alloc(a, 100 + (int32_t) (i % 50), i * 256, frames, ELEMENTSOF(frames));
                /* Between two checks the core grows by what 1,024 events add; never past the limit by
                 * more than the line's sixteenth and that. */
                if (i % 4096 == 0)
                        ASSERT_LE(accounting_memory_bytes(a), c.max_memory_bytes + MIB);
        }
        accounting_get_budget_stats(a, &b);
        ASSERT_LE(b.core_bytes, c.max_memory_bytes);
        ASSERT_EQ(b.limit_bytes, c.max_memory_bytes);
        /* Exited tasks, stacks, then pages: everything but slab objects (not traced) and heap blocks. */
        ASSERT_EQ(b.in_effect, UINT32_C(1) << BUDGET_STEP_EXITED_TASKS | UINT32_C(1) << BUDGET_STEP_STACKS |
                                       UINT32_C(1) << BUDGET_STEP_PAGES);
        /* Chains after the step stacks stop at what the tree held: its budget is the nodes it has. */
        StackTreeStats st;
        stacktree_get_stats(accounting_stacktree(a), &st);
        ASSERT_EQ(st.max_nodes, st.n_nodes);
        ASSERT_GT(b.untracked_allocs, 0);
        ASSERT_EQ(b.untracked_allocs, b.untracked_pages);
        AccountingStats s;
        accounting_get_stats(a, &s);
        /* What was not tracked is the rest of what came. */
        ASSERT_EQ(s.current_pages + b.untracked_pages, n);
        check_sums(a);

        /* Everything freed: the untracked frees are counted as such, and the steps are lifted as memory
         * falls (one per check). */
        for (uint64_t i = 0; i < n; i++)
                release(a, 100 + (int32_t) (i % 50), i * 256);
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 0);
        ASSERT_EQ(s.untracked_frees, b.untracked_allocs);
        accounting_get_budget_stats(a, &b);
        ASSERT_EQ(b.in_effect, 0);
        ASSERT_EQ(b.taken[BUDGET_STEP_PAGES], 1);
        check_sums(a);

        /* Tracked again, and the stack budget back as configured. */
        alloc(a, 100, 1, frames, ELEMENTSOF(frames));
        accounting_get_stats(a, &s);
        ASSERT_EQ(s.current_pages, 1);
        stacktree_get_stats(accounting_stacktree(a), &st);
        ASSERT_EQ(st.max_nodes, c.max_stack_nodes);
        accounting_free(a);
}

int main(void) {
        TEST(test_ladder);
        TEST(test_core_under_budget);
        return 0;
}
