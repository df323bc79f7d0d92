/* SPDX-License-Identifier: MIT */

/* Ledger (daemon/core/ledger.h): current and true peak in any unit. */

#include "ledger.h"
#include "tests.h"

static void test_add_sub(void) {
        Ledger l = {};

        ledger_add(&l, 10);
        ASSERT_TRUE(ledger_sub(&l, 4));
        ledger_add(&l, 2);
        ASSERT_EQ(l.current, 8);
        ASSERT_EQ(l.peak, 10);
        /* More than held: clamped, and said so. */
        ASSERT_TRUE(!ledger_sub(&l, 9));
        ASSERT_EQ(l.current, 0);
        ASSERT_EQ(l.peak, 10);
        ledger_add(&l, 3);
        ledger_reset_peak(&l);
        ASSERT_EQ(l.peak, 3);
}

static void test_apply(void) {
        Ledger l = { .current = 5, .peak = 5 };

        /* Rose 7 above 5, settled at +2. */
        ASSERT_TRUE(ledger_apply(&l, 7, 2));
        ASSERT_EQ(l.current, 7);
        ASSERT_EQ(l.peak, 12);
        /* A rise below the old peak leaves it. */
        ASSERT_TRUE(ledger_apply(&l, 1, -3));
        ASSERT_EQ(l.current, 4);
        ASSERT_EQ(l.peak, 12);
        ledger_raise(&l, 9);
        ASSERT_EQ(l.peak, 13);
        ASSERT_EQ(l.current, 4);
        /* The most negative delta there is: no overflow, clamped at zero. */
        ASSERT_TRUE(!ledger_apply(&l, 0, INT64_MIN));
        ASSERT_EQ(l.current, 0);
        ASSERT_TRUE(!ledger_apply(&l, 0, INT64_MIN + 1));
        ASSERT_EQ(l.current, 0);
}

/* A rise, which a source reports in whole, stops at COUNT_MAX rather than wrap; so does count_add(). */
static void test_saturation(void) {
        Ledger l = { .current = 10, .peak = 10 };

        ledger_raise(&l, UINT64_MAX);
        ASSERT_EQ(l.peak, COUNT_MAX);
        ASSERT_EQ(l.current, 10);
        l = (Ledger) { .current = COUNT_MAX - 5, .peak = COUNT_MAX - 5 };
        ASSERT_TRUE(ledger_apply(&l, COUNT_MAX, 5));
        ASSERT_EQ(l.current, COUNT_MAX);
        ASSERT_EQ(l.peak, COUNT_MAX);
        ASSERT_TRUE(ledger_sub(&l, 7));
        ASSERT_EQ(l.current, COUNT_MAX - 7);
        ASSERT_EQ(l.peak, COUNT_MAX);

        uint64_t interval = 0;
        l = (Ledger) { .current = COUNT_MAX - 1, .peak = COUNT_MAX - 1 };
        ledger_mark_rise(&l, 100, &interval);
        ASSERT_EQ(interval, COUNT_MAX);
        ASSERT_EQ(ledger_interval_take(&l, &interval), COUNT_MAX);

        ASSERT_EQ(count_add(1, 2), 3);
        ASSERT_EQ(count_add(COUNT_MAX, 1), COUNT_MAX);
        ASSERT_EQ(count_add(UINT64_MAX, UINT64_MAX), COUNT_MAX);
        ASSERT_EQ(count_add(COUNT_MAX - 1, 1), COUNT_MAX);
}

static void test_units(void) {
        ASSERT_STREQ(ledger_unit_to_string(LEDGER_PAGES), "pages");
        ASSERT_STREQ(ledger_unit_to_string(LEDGER_BYTES), "bytes");
        ASSERT_NULL(ledger_unit_to_string(_LEDGER_UNIT_MAX));
        ASSERT_NULL(ledger_unit_to_string(_LEDGER_UNIT_INVALID));
}

int main(void) {
        TEST(test_add_sub);
        TEST(test_apply);
        TEST(test_saturation);
        TEST(test_units);
        return 0;
}
