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

static void test_units(void) {
        ASSERT_STREQ(ledger_unit_to_string(LEDGER_PAGES), "pages");
        ASSERT_STREQ(ledger_unit_to_string(LEDGER_BYTES), "bytes");
        ASSERT_NULL(ledger_unit_to_string(_LEDGER_UNIT_MAX));
        ASSERT_NULL(ledger_unit_to_string(_LEDGER_UNIT_INVALID));
}

int main(void) {
        TEST(test_add_sub);
        TEST(test_apply);
        TEST(test_units);
        return 0;
}
