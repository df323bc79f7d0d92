/* SPDX-License-Identifier: MIT */

/*
 * common/macro.h: the saturating count arithmetic and SORTED_COUNT_AT_MOST, each checked against a plain
 * loop or the bound it must stop at.
 */

#include <stdint.h>
#include <stdio.h>

#include "macro.h"
#include "tests.h"

typedef struct Range {
        uint64_t start, end;
} Range;

/* Every value around every start, against a linear count, for each length from empty to all. */
static void test_sorted_count_at_most(void) {
        const Range ranges[] = { { 0, 1 }, { 10, 20 }, { 10, 15 }, { 30, 40 }, { UINT64_MAX - 1, UINT64_MAX } };

        for (size_t n = 0; n <= ELEMENTSOF(ranges); n++)
                for (size_t r = 0; r < ELEMENTSOF(ranges); r++)
                        for (int delta = -1; delta <= 1; delta++) {
                                uint64_t v = ranges[r].start + (uint64_t) (int64_t) delta;
                                size_t expected = 0;
                                for (size_t i = 0; i < n; i++)
                                        expected += ranges[i].start <= v;
                                ASSERT_EQ(SORTED_COUNT_AT_MOST(ranges, n, start, v), expected);
                        }
        /* Equal keys: the count goes past all of them. */
        ASSERT_EQ(SORTED_COUNT_AT_MOST(ranges, ELEMENTSOF(ranges), start, 10), 3u);
        ASSERT_EQ(SORTED_COUNT_AT_MOST(ranges, ELEMENTSOF(ranges), start, 9), 1u);
}

static void test_count_saturation(void) {
        ASSERT_EQ(count_add(1, 2), 3u);
        ASSERT_EQ(count_add(COUNT_MAX - 1, 1), COUNT_MAX);
        ASSERT_EQ(count_add(COUNT_MAX, UINT64_MAX), COUNT_MAX);
        ASSERT_EQ(count_mul(3, 4), 12u);
        ASSERT_EQ(count_mul(0, UINT64_MAX), 0u);
        ASSERT_EQ(count_mul(COUNT_MAX / 2 + 1, 2), COUNT_MAX);
        ASSERT_EQ(count_mul(UINT64_MAX, UINT64_MAX), COUNT_MAX);
}

int main(void) {
        test_sorted_count_at_most();
        test_count_saturation();
        printf("ok\n");
        return 0;
}
