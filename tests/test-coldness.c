/* SPDX-License-Identifier: MIT */

/* The sampling rounds of daemon/core/coldness.c on synthetic pages and regions: the classification by
 * idle time, a block split across regions, regions shared by owners, pages newer than the regions, pages
 * reused while their region was idle, and samples refused. */

#include <stdlib.h>

#include "accounting.h"
#include "coldness.h"
#include "macro.h"
#include "synthetic-events.h"
#include "tests.h"
#include "view.h"

#define SEC UINT64_C(1000000000)
#define USEC_PER_SEC UINT64_C(1000000)

static const uint64_t other_chain[] = { 0xffffffff81003010, 0xffffffff8100a010, 0xffffffff8100e010 };

static void alloc_at(Accounting *a, int32_t pid, uint64_t pfn, unsigned order, const uint64_t *chain, size_t n,
                uint64_t time_nsec) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, order, synthetic_stack(chain, n, n));
        e.timestamp_nsec = time_nsec;
        accounting_handle_event(a, &e);
}

static void free_at(Accounting *a, int32_t pid, uint64_t pfn, unsigned order) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_FREE, pid, pfn, order, (MsStack) {});
        accounting_handle_event(a, &e);
}

static Accounting *new_accounting(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(accounting_new(&c, NULL, &a));
        return a;
}

/* A process's pages by class at the last round, summed over its cells; false if no cell had figures. */
typedef struct Sum {
        const Coldness *c;
        uint64_t pages[VIEW_COLD_CLASSES];
        unsigned known, unknown_cells;
} Sum;

static void add_cell(void *userdata, const ViewCell *cell) {
        Sum *s = userdata;
        if (view_cold_cell(s->c, cell, s->pages))
                s->known++;
        else
                s->unknown_cells++;
}

static Sum process_sum(Accounting *a, const Coldness *c, int32_t pid) {
        Sum s = { .c = c };
        uint32_t process = view_find_process(a, pid);

        ASSERT_NE(process, VIEW_TASK_NONE);
        view_foreach_cell(a, (ViewScope) { VIEW_SCOPE_PROCESS, process }, add_cell, &s);
        return s;
}

static void test_classes(void) {
        Accounting *a = new_accounting();
        Coldness *c = coldness_new(20 * USEC_PER_SEC, 80 * USEC_PER_SEC);
        ColdStats st;

        ASSERT_NOT_NULL(c);
        ASSERT_EQ(coldness_classify(c, 0), COLD_CLASS_HOT);
        ASSERT_EQ(coldness_classify(c, 20 * USEC_PER_SEC - 1), COLD_CLASS_HOT);
        ASSERT_EQ(coldness_classify(c, 20 * USEC_PER_SEC), COLD_CLASS_WARM);
        ASSERT_EQ(coldness_classify(c, 80 * USEC_PER_SEC), COLD_CLASS_COLD);
        ASSERT_EQ(coldness_classify(c, UINT64_MAX), COLD_CLASS_COLD);

        /* pid 100: ten single pages at 1000..1009 and one at 5000, which no region holds; pid 101: a page
         * at 1004 inside pid 100's run; pid 200: four pages at 2000 across two regions. All at 10 s. */
        for (uint64_t pfn = 1000; pfn < 1010; pfn++)
                if (pfn != 1004)
                        alloc_at(a, 100, pfn, 0, synthetic_chain_kernel, ELEMENTSOF(synthetic_chain_kernel), 10 * SEC);
        alloc_at(a, 101, 1004, 0, synthetic_chain_kernel, ELEMENTSOF(synthetic_chain_kernel), 10 * SEC);
        alloc_at(a, 100, 5000, 0, synthetic_chain_kernel, ELEMENTSOF(synthetic_chain_kernel), 10 * SEC);
        alloc_at(a, 200, 2000, 2, other_chain, ELEMENTSOF(other_chain), 10 * SEC);
        /* pid 300: eight pages allocated after the regions were taken (at 100 s). */
        alloc_at(a, 300, 3000, 3, other_chain, ELEMENTSOF(other_chain), 150 * SEC);

        const AccessRegion regions[] = {
                { 1000, 1005, 0 },                              /* accessed: hot, shared by 100 and 101 */
                { 1005, 1010, 700 * USEC_PER_SEC },             /* idle longer than its pages lived: 90 s */
                { 2000, 2002, 30 * USEC_PER_SEC },              /* warm */
                { 2002, 2010, 85 * USEC_PER_SEC },              /* cold */
                { 3000, 3008, 900 * USEC_PER_SEC },             /* of pid 300's page's last owner */
        };
        AccessSample s = { regions, ELEMENTSOF(regions), 100 * SEC };
        ASSERT_OK(coldness_round(c, a, &s, 160 * SEC));

        Sum p100 = process_sum(a, c, 100);
        ASSERT_EQ(p100.pages[VIEW_COLD_HOT], 4u);
        /* Idle 700 s in a region, but allocated 90 s before it was taken: 90 s, which is cold. */
        ASSERT_EQ(p100.pages[VIEW_COLD_COLD], 5u);
        ASSERT_EQ(p100.pages[VIEW_COLD_UNKNOWN], 1u);
        Sum p101 = process_sum(a, c, 101);
        ASSERT_EQ(p101.pages[VIEW_COLD_HOT], 1u);
        Sum p200 = process_sum(a, c, 200);
        ASSERT_EQ(p200.pages[VIEW_COLD_WARM], 2u);
        ASSERT_EQ(p200.pages[VIEW_COLD_COLD], 2u);
        Sum p300 = process_sum(a, c, 300);
        ASSERT_EQ(p300.pages[VIEW_COLD_NEWER], 8u);
        ASSERT_EQ(p300.pages[VIEW_COLD_COLD], 0u);

        const char *name, *detail, *reason;
        coldness_set_source(c, "test", "synthetic", NULL);
        view_cold_stats(c, &st, &name, &detail, &reason);
        ASSERT_STREQ(name, "test");
        ASSERT_NULL(reason);
        ASSERT_EQ(st.rounds, 1u);
        ASSERT_EQ(st.blocks, 13u);
        ASSERT_EQ(st.pages[_COLD_CLASS_MAX], 23u);
        ASSERT_EQ(st.pages[COLD_CLASS_HOT], 5u);
        ASSERT_EQ(st.pages[COLD_CLASS_WARM], 2u);
        ASSERT_EQ(st.pages[COLD_CLASS_COLD], 7u);
        ASSERT_EQ(st.pages[COLD_CLASS_UNKNOWN], 1u);
        ASSERT_EQ(st.pages[COLD_CLASS_NEWER], 8u);
        ASSERT_EQ(st.split_blocks, 1u);
        ASSERT_EQ(st.shared_regions, 1u);
        ASSERT_EQ(st.shared_region_pages, 5u);
        /* pid 100's five pages in the long idle region, and pid 200's two in the 85 s one (lived 90 s:
         * not clamped). */
        ASSERT_EQ(st.clamped_pages, 5u);
        ASSERT_EQ(st.sample_nsec, 100 * SEC);
        ASSERT_EQ(st.round_nsec, 160 * SEC);
        ASSERT_EQ(st.warm_usec, 20 * USEC_PER_SEC);

        coldness_free(c);
        accounting_free(a);
}

/* A block partly in a region, partly in none: split, the rest unknown. */
static void test_partial_block(void) {
        Accounting *a = new_accounting();
        Coldness *c = coldness_new(USEC_PER_SEC, 10 * USEC_PER_SEC);
        ColdStats st;

        alloc_at(a, 100, 4096, 4, other_chain, ELEMENTSOF(other_chain), SEC);
        const AccessRegion regions[] = { { 4000, 4100, 60 * USEC_PER_SEC }, { 4110, 4111, 0 } };
        AccessSample s = { regions, ELEMENTSOF(regions), 100 * SEC };
        ASSERT_OK(coldness_round(c, a, &s, 100 * SEC));
        Sum p = process_sum(a, c, 100);
        ASSERT_EQ(p.pages[VIEW_COLD_COLD], 4u);
        ASSERT_EQ(p.pages[VIEW_COLD_HOT], 1u);
        ASSERT_EQ(p.pages[VIEW_COLD_UNKNOWN], 11u);
        view_cold_stats(c, &st, &(const char *) { NULL }, &(const char *) { NULL }, &(const char *) { NULL });
        ASSERT_EQ(st.split_blocks, 1u);
        ASSERT_EQ(st.shared_regions, 0u);
        coldness_free(c);
        accounting_free(a);
}

/* Pages freed and their cell reused by another owner between rounds: the round's figures are not given
 * to it; a new round sees the new owner. */
static void test_reused_between_rounds(void) {
        Accounting *a = new_accounting();
        Coldness *c = coldness_new(USEC_PER_SEC, 10 * USEC_PER_SEC);

        alloc_at(a, 100, 100, 0, other_chain, ELEMENTSOF(other_chain), SEC);
        const AccessRegion regions[] = { { 0, 1000, 600 * USEC_PER_SEC } };
        AccessSample s = { regions, 1, 50 * SEC };
        ASSERT_OK(coldness_round(c, a, &s, 50 * SEC));
        ASSERT_EQ(process_sum(a, c, 100).pages[VIEW_COLD_COLD], 1u);

        free_at(a, 100, 100, 0);
        alloc_at(a, 200, 100, 0, synthetic_chain_kernel, ELEMENTSOF(synthetic_chain_kernel), 55 * SEC);
        Sum p = process_sum(a, c, 200);
        ASSERT_EQ(p.known, 0u);
        ASSERT_EQ(p.unknown_cells, 1u);
        /* The next round, with the same regions (taken before the page came back): newer than them. */
        ASSERT_OK(coldness_round(c, a, &s, 60 * SEC));
        ASSERT_EQ(process_sum(a, c, 200).pages[VIEW_COLD_NEWER], 1u);
        /* Regions taken later, idle since before the reuse: idle only as long as the page lived. */
        AccessSample later = { regions, 1, 60 * SEC };
        ASSERT_OK(coldness_round(c, a, &later, 70 * SEC));
        ASSERT_EQ(process_sum(a, c, 200).pages[VIEW_COLD_WARM], 1u);

        coldness_forget(c);
        ASSERT_EQ(process_sum(a, c, 200).known, 0u);
        coldness_free(c);
        accounting_free(a);
}

/* Regions out of order, overlapping, empty or absent are refused, and the last round stays. */
static void test_hostile_samples(void) {
        Accounting *a = new_accounting();
        Coldness *c = coldness_new(USEC_PER_SEC, 10 * USEC_PER_SEC);
        ColdStats st;

        ASSERT_NULL(coldness_new(0, 1));
        ASSERT_NULL(coldness_new(10, 9));
        ASSERT_EQ(coldness_set_thresholds(c, 5, 4), -EINVAL);
        alloc_at(a, 100, 7, 0, other_chain, ELEMENTSOF(other_chain), SEC);
        const AccessRegion good[] = { { 0, 8, 0 }, { 8, UINT64_MAX, UINT64_MAX } };
        AccessSample s = { good, 2, 2 * SEC };
        ASSERT_OK(coldness_round(c, a, &s, 3 * SEC));
        const AccessRegion overlap[] = { { 0, 8, 0 }, { 7, 9, 0 } };
        const AccessRegion empty[] = { { 5, 5, 0 } };
        const AccessRegion backwards[] = { { 9, 4, 0 } };
        const AccessSample bad[] = { { overlap, 2, 2 * SEC }, { empty, 1, 2 * SEC }, { backwards, 1, 2 * SEC },
                                     { NULL, 3, 2 * SEC } };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_EQ(coldness_round(c, a, &bad[i], 4 * SEC), -EINVAL);
        view_cold_stats(c, &st, &(const char *) { NULL }, &(const char *) { NULL }, &(const char *) { NULL });
        ASSERT_EQ(st.rejected_samples, 4u);
        ASSERT_EQ(st.rounds, 1u);
        ASSERT_EQ(process_sum(a, c, 100).pages[VIEW_COLD_HOT], 1u);
        /* No regions at all: every page unknown. */
        AccessSample none = { NULL, 0, 5 * SEC };
        ASSERT_OK(coldness_round(c, a, &none, 6 * SEC));
        ASSERT_EQ(process_sum(a, c, 100).pages[VIEW_COLD_UNKNOWN], 1u);
        /* Without a source: nothing. */
        ViewCell cell = {};
        uint64_t sum[VIEW_COLD_CLASSES] = {};
        ASSERT_TRUE(!view_cold_cell(NULL, &cell, sum));
        view_cold_stats(NULL, &st, &(const char *) { NULL }, &(const char *) { NULL }, &(const char *) { NULL });
        ASSERT_EQ(st.rounds, 0u);
        coldness_free(c);
        accounting_free(a);
}

int main(void) {
        TEST(test_classes);
        TEST(test_partial_block);
        TEST(test_reused_between_rounds);
        TEST(test_hostile_samples);
        return 0;
}
