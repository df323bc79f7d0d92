/* SPDX-License-Identifier: MIT */
#pragma once

/* Arrays that grow by doubling as elements are appended one at a time. */

#include <errno.h>
#include <stdlib.h>

/* Makes *array, of *allocated elements of size bytes, hold at least n + 1: doubled, or initial elements
 * when empty. 0, or -ENOMEM with *array and *allocated unchanged. */
static inline int array_grow_one(void **array, size_t *allocated, size_t n, size_t size, size_t initial) {
        if (n < *allocated)
                return 0;
        size_t want = *allocated ? *allocated * 2 : initial;
        void *p = reallocarray(*array, want, size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = want;
        return 0;
}

/* array_grow_one() for a typed array and its size_t count of allocated elements. */
#define ARRAY_GROW_ONE(array, allocated, n, initial) \
        array_grow_one((void **) &(array), &(allocated), (n), sizeof(*(array)), (initial))
