/* SPDX-License-Identifier: MIT */

#include <math.h>
#include <stdlib.h>

#include <jansson.h>

#include "accounting.h"
#include "macro.h"
#include "marks.h"
#include "synthetic-events.h"
#include "tests.h"

static const uint64_t chain[] = { 0xffffffff81003010, 0xffffffff81005020 };

static void event(Accounting *a, MsEventType type, int32_t pid, uint64_t pfn) {
        static uint64_t now = 1000;
        MsEvent e = type == MS_EVENT_PAGE_ALLOC || type == MS_EVENT_PAGE_FREE ?
                synthetic_page_event(type, pid, pfn, 0, synthetic_stack(chain, ELEMENTSOF(chain), ELEMENTSOF(chain))) :
                synthetic_task_event(type, pid, NULL, 1);

        e.timestamp_nsec = now++;
        accounting_handle_event(a, &e);
}

/*
 * 100k tasks: the diff pairs every task of the snapshot with its current record. The old pairing was a
 * nested loop (10^10 comparisons here, and 2^24 exited tasks are allowed); a merge of sorted lists makes
 * it O(n log n), which the comparison count shows without timing anything.
 */
static void test_diff_many_tasks(void) {
        enum { N = 100000 };
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Marks *s = marks_new();
        json_auto_t *diff = NULL;
        Accounting *a = NULL;

        c.max_exited_tasks = 4;
        ASSERT_OK(accounting_new(&c, NULL, &a));
        ASSERT_NOT_NULL(s);
        for (int32_t pid = 1; pid <= N; pid++)
                event(a, MS_EVENT_PAGE_ALLOC, pid, (uint64_t) pid);
        ASSERT_OK(marks_save(s, 0, "before", a, 1));

        for (int32_t pid = 1; pid <= 1000; pid++)               /* +1 page each */
                event(a, MS_EVENT_PAGE_ALLOC, pid, N + (uint64_t) pid);
        for (int32_t pid = 1001; pid <= 1500; pid++)            /* -1 page each */
                event(a, MS_EVENT_PAGE_FREE, pid, (uint64_t) pid);
        for (int32_t pid = 2001; pid <= 2100; pid++)            /* exit: all but the last 4 evicted */
                event(a, MS_EVENT_TASK_EXIT, pid, 0);
        for (int32_t pid = N + 1; pid <= N + 50; pid++)         /* new tasks */
                event(a, MS_EVENT_PAGE_ALLOC, pid, 2 * N + (uint64_t) pid);

        ASSERT_OK(marks_diff(s, 0, "before", a, 2, 10000, &diff));
        double n = 2.0 * N;
        ASSERT_LE(marks_diff_steps(s), (uint64_t) (3 * n * ceil(log2(n))));

        json_t *tasks = json_object_get(diff, "tasks");
        size_t up = 0, down = 0, exited = 0, appeared = 0;
        json_int_t sum = 0;
        /* No row for what evicted tasks still hold: that is no task's (Tasks "evicted"). */
        ASSERT_EQ(json_array_size(tasks), 1000 + 500 + 96 + 50);
        for (size_t i = 0; i < json_array_size(tasks); i++) {
                json_t *t = json_array_get(tasks, i);
                json_int_t pid = json_integer_value(json_object_get(t, "pid"));
                json_int_t delta = json_integer_value(json_object_get(t, "deltaPages"));
                sum += delta;
                if (json_is_true(json_object_get(t, "exited"))) {
                        ASSERT_TRUE(pid >= 2001 && pid <= 2096);
                        ASSERT_EQ(delta, -1);
                        exited++;
                } else if (json_is_true(json_object_get(t, "appeared"))) {
                        ASSERT_TRUE(pid > N);
                        ASSERT_EQ(delta, 1);
                        appeared++;
                } else if (pid >= 1 && pid <= 1000) {
                        ASSERT_EQ(json_integer_value(json_object_get(t, "beforePages")), 1);
                        ASSERT_EQ(json_integer_value(json_object_get(t, "afterPages")), 2);
                        up++;
                } else if (pid >= 1001 && pid <= 1500) {
                        ASSERT_EQ(json_integer_value(json_object_get(t, "afterPages")), 0);
                        down++;
                }
        }
        ASSERT_EQ(up, 1000);
        ASSERT_EQ(down, 500);
        ASSERT_EQ(exited, 96);
        ASSERT_EQ(appeared, 50);
        /* The 96 evicted tasks' pages left their tasks but are still held: the total moved by 96 more. */
        ASSERT_EQ(sum, 1000 - 500 - 96 + 50);
        ASSERT_EQ(json_integer_value(json_object_get(diff, "afterPages")) -
                  json_integer_value(json_object_get(diff, "beforePages")), sum + 96);

        marks_free(s);
        accounting_free(a);
}

/* Modules are matched by name whatever order they were first seen in. */
static void test_diff_modules(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Marks *s = marks_new();
        json_auto_t *diff = NULL;
        Accounting *a = NULL;

        ASSERT_OK(accounting_new(&c, NULL, &a));
        Usage *u = accounting_usage(a);
        uint16_t zz = usage_module_intern(u, "zz");
        ASSERT_OK(marks_save(s, 0, "m", a, 1));
        uint16_t aa = usage_module_intern(u, "aa");
        usage_module_charge(u, aa, LEDGER_PAGES, 5);
        usage_module_charge(u, zz, LEDGER_PAGES, 3);
        ASSERT_OK(marks_diff(s, 0, "m", a, 2, 10, &diff));
        json_t *modules = json_object_get(diff, "modules");
        ASSERT_EQ(json_array_size(modules), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(modules, 0), "name")), "aa");
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(modules, 0), "beforePages")), 0);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(modules, 1), "name")), "zz");
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(modules, 1), "deltaPages")), 3);
        marks_free(s);
        accounting_free(a);
}

/* Names are per uid; MARKS_PER_UID_MAX per uid, MARKS_OTHERS_MAX for all but root, root's room its own. */
static void test_per_uid(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Marks *s = marks_new();
        json_auto_t *list = NULL, *all = NULL, *diff = NULL, *again = NULL;
        Accounting *a = NULL;
        char name[16];

        ASSERT_OK(accounting_new(&c, NULL, &a));
        ASSERT_NOT_NULL(s);
        event(a, MS_EVENT_PAGE_ALLOC, 7, 1);
        ASSERT_OK(marks_save(s, 0, "before", a, 1));
        event(a, MS_EVENT_PAGE_ALLOC, 7, 2);
        /* The same name for uid 1000 is another mark: root's keeps its count. */
        ASSERT_OK(marks_save(s, 1000, "before", a, 2));
        ASSERT_EQ(marks_count(s), 2);
        ASSERT_OK(marks_diff(s, 0, "before", a, 3, 10, &diff));
        ASSERT_EQ(json_integer_value(json_object_get(diff, "beforePages")), 1);
        ASSERT_EQ(marks_diff(s, 1001, "before", a, 3, 10, &diff), -ENOENT);

        for (int i = 1; i < MARKS_PER_UID_MAX; i++) {
                (void) snprintf(name, sizeof(name), "m%d", i);
                ASSERT_OK(marks_save(s, 1000, name, a, 3));
        }
        ASSERT_EQ(marks_save(s, 1000, "one-more", a, 4), -EDQUOT);
        ASSERT_OK(marks_save(s, 1000, "m1", a, 4));     /* replacing takes no room */
        /* Two more users fill what all but root share; the next finds no room, root still has its own. */
        for (uid_t uid = 1001; uid <= 1002; uid++)
                for (int i = 0; i < MARKS_PER_UID_MAX; i++) {
                        (void) snprintf(name, sizeof(name), "m%d", i);
                        ASSERT_OK(marks_save(s, uid, name, a, 5));
                }
        ASSERT_EQ(marks_save(s, 1003, "m0", a, 6), -ENOSPC);
        for (int i = 1; i < MARKS_PER_UID_MAX; i++) {
                (void) snprintf(name, sizeof(name), "r%d", i);
                ASSERT_OK(marks_save(s, 0, name, a, 6));
        }
        ASSERT_EQ(marks_save(s, 0, "r8", a, 7), -EDQUOT);
        ASSERT_EQ(marks_count(s), MARKS_MAX);

        ASSERT_OK(marks_list(s, a, false, 1000, &list));
        ASSERT_EQ(json_array_size(json_object_get(list, "snapshots")), MARKS_PER_UID_MAX);
        ASSERT_OK(marks_list(s, a, true, 0, &all));
        ASSERT_EQ(json_array_size(json_object_get(all, "snapshots")), MARKS_MAX);

        /* Deleting makes room; a name is deleted only for its own uid. */
        ASSERT_EQ(marks_delete(s, 1003, "before"), -ENOENT);
        ASSERT_OK(marks_delete(s, 1000, "before"));
        ASSERT_EQ(marks_delete(s, 1000, "before"), -ENOENT);
        ASSERT_OK(marks_save(s, 1003, "m0", a, 8));
        ASSERT_OK(marks_diff(s, 0, "before", a, 9, 10, &again));
        ASSERT_EQ(json_integer_value(json_object_get(again, "beforePages")), 1);
        marks_free(s);
        accounting_free(a);
}

int main(void) {
        TEST(test_diff_many_tasks);
        TEST(test_diff_modules);
        TEST(test_per_uid);
        return 0;
}
