/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Assertions for the unit tests: on failure they print file:line, the expression and both values,
 * then abort, so meson reports the test as failed with the reason in its log.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_TEST_SKIP 77

#define ASSERT_TRUE(expr)                                                                       \
        do {                                                                                    \
                if (!(expr)) {                                                                  \
                        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                \
                }                                                                               \
        } while (0)

#define ASSERT_INT_OP(a, op, b)                                                                 \
        do {                                                                                    \
                long long _a = (long long) (a), _b = (long long) (b);                           \
                if (!(_a op _b)) {                                                              \
                        fprintf(stderr, "%s:%d: expected %s %s %s, got %lld vs %lld\n", __FILE__,   \
                                __LINE__, #a, #op, #b, _a, _b);                                 \
                        abort();                                                                \
                }                                                                               \
        } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_OP(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP(a, !=, b)
#define ASSERT_GT(a, b) ASSERT_INT_OP(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT_OP(a, >=, b)
#define ASSERT_LT(a, b) ASSERT_INT_OP(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_OP(a, <=, b)
#define ASSERT_OK(r) ASSERT_INT_OP(r, >=, 0)

#define ASSERT_STREQ(a, b)                                                                      \
        do {                                                                                    \
                const char *_a = (a), *_b = (b);                                                \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                        \
                        fprintf(stderr, "%s:%d: expected %s == %s, got \"%s\" vs \"%s\"\n", __FILE__, \
                                __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)");      \
                        abort();                                                                \
                }                                                                               \
        } while (0)

#define ASSERT_NULL(p) ASSERT_TRUE((p) == NULL)
#define ASSERT_NOT_NULL(p) ASSERT_TRUE((p) != NULL)

/* Runs one test function and says so, so a log shows how far a failing program got. */
#define TEST(fn)                                                                                \
        do {                                                                                    \
                fprintf(stderr, "== %s\n", #fn);                                                \
                fn();                                                                           \
        } while (0)
