/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include <systemd/sd-event.h>

#include "debounce.h"
#include "macro.h"
#include "tests.h"

static void count_run(void *userdata) {
        unsigned *n = userdata;
        (*n)++;
}

/* N module loads in a burst: one reload, not N. */
static void test_burst_runs_once(void) {
        sd_event *e = NULL;
        Debounce *d = NULL;
        unsigned runs = 0;

        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(debounce_new(e, "test", 1000, 1000000, count_run, &runs, &d));
        ASSERT_TRUE(!debounce_pending(d));
        for (unsigned i = 0; i < 100; i++)
                ASSERT_OK(debounce_request(d));
        ASSERT_TRUE(debounce_pending(d));
        ASSERT_EQ(runs, 0);
        /* Bounded waits: the run is due 1 ms after the last request. */
        for (unsigned i = 0; i < 1000 && runs == 0; i++)
                ASSERT_OK(sd_event_run(e, 100000));
        ASSERT_EQ(runs, 1);
        ASSERT_EQ(debounce_runs(d), 1);
        ASSERT_TRUE(!debounce_pending(d));
        /* Nothing more pending: the loop stays quiet. */
        ASSERT_OK(sd_event_run(e, 5000));
        ASSERT_EQ(runs, 1);

        /* A later burst gets its own run. */
        ASSERT_OK(debounce_request(d));
        for (unsigned i = 0; i < 1000 && runs == 1; i++)
                ASSERT_OK(sd_event_run(e, 100000));
        ASSERT_EQ(runs, 2);
        debounce_free(d);
        sd_event_unref(e);
}

/* Each request pushes the run back, but never past max_delay after the first request. */
static void test_due_time(void) {
        sd_event *e = NULL;
        Debounce *d = NULL, *capped = NULL;
        unsigned runs = 0;
        uint64_t now;

        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(debounce_new(e, "test", 200000, 2000000, count_run, &runs, &d));
        ASSERT_OK(sd_event_now(e, CLOCK_MONOTONIC, &now));
        ASSERT_OK(debounce_request(d));
        uint64_t first_due = debounce_due_usec(d);
        ASSERT_GE(first_due, now + 200000);
        ASSERT_LE(first_due, now + 2000000);
        ASSERT_OK(debounce_request(d));
        ASSERT_GE(debounce_due_usec(d), first_due);

        /* delay == max_delay: every later request is capped at the first one's due time. */
        ASSERT_OK(debounce_new(e, "capped", 1000000, 1000000, count_run, &runs, &capped));
        ASSERT_OK(debounce_request(capped));
        uint64_t capped_due = debounce_due_usec(capped);
        for (unsigned i = 0; i < 10; i++) {
                ASSERT_OK(debounce_request(capped));
                ASSERT_EQ(debounce_due_usec(capped), capped_due);
        }

        /* Flushing runs the pending work at once, exactly once. */
        debounce_flush(d);
        debounce_flush(d);
        ASSERT_EQ(runs, 1);
        ASSERT_EQ(debounce_due_usec(d), 0);
        debounce_free(capped);
        debounce_free(d);
        sd_event_unref(e);
}

int main(void) {
        TEST(test_burst_runs_once);
        TEST(test_due_time);
        return 0;
}
