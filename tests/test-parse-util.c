/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "parse-util.h"
#include "tests.h"

static void test_parse_uint64(void) {
        uint64_t v = 7;

        ASSERT_EQ(parse_uint64("42", 0, 100, &v), 0);
        ASSERT_EQ(v, 42);
        ASSERT_EQ(parse_uint64("0", 0, 100, &v), 0);
        ASSERT_EQ(v, 0);
        ASSERT_EQ(parse_uint64("18446744073709551615", 0, UINT64_MAX, &v), 0);
        ASSERT_TRUE(v == UINT64_MAX);

        /* Failures leave the output alone. */
        v = 7;
        ASSERT_EQ(parse_uint64("101", 0, 100, &v), -ERANGE);
        ASSERT_EQ(parse_uint64("4", 5, 100, &v), -ERANGE);
        ASSERT_EQ(parse_uint64("-1", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("+1", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64(" 1", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("1x", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("1 ", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("0x10", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
        ASSERT_EQ(v, 7);
}

int main(void) {
        TEST(test_parse_uint64);
        return 0;
}
