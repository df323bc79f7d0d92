/* SPDX-License-Identifier: MIT */
#pragma once

/* Reading replies in the API tests: a list of objects as one comparable string. */

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "tests.h"

/* The member key of every object in array, in order, joined by spaces: integers in decimal, strings as
 * they are ("100 200", "vmlinux ext4"). New string. */
static inline char *test_json_join(const json_t *array, const char *key) {
        char *s = NULL;
        size_t size = 0, i;
        json_t *o;

        FILE *m = open_memstream(&s, &size);
        ASSERT_NOT_NULL(m);
        json_array_foreach(array, i, o) {
                json_t *v = json_object_get(o, key);
                ASSERT_TRUE(json_is_integer(v) || json_is_string(v));
                if (json_is_integer(v))
                        fprintf(m, "%s%lld", i ? " " : "", (long long) json_integer_value(v));
                else
                        fprintf(m, "%s%s", i ? " " : "", json_string_value(v));
        }
        ASSERT_EQ(fclose(m), 0);
        return s;
}
