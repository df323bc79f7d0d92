/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Small helpers shared by every part of memstrack: scoped cleanup and ownership hand-over.
 * systemd's own macro headers are internal, so these are ours (see ../shared/STYLE.md, section 4).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _likely_(x) (__builtin_expect(!!(x), 1))
/* For a hot function called with constant arguments, whose dead branches then go. */
#define _always_inline_ inline __attribute__((always_inline))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Returns the pointer and leaves NULL behind, so the cleanup handler of the source does nothing. */
#define TAKE_PTR(p)                             \
        ({                                      \
                __typeof__(p) _p_ = (p);        \
                (p) = NULL;                     \
                _p_;                            \
        })

#define TAKE_FD(fd)                             \
        ({                                      \
                int _fd_ = (fd);                \
                (fd) = -EBADF;                  \
                _fd_;                           \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Declares xxx_freep() for a destructor xxx_free() that takes NULL, for use with _cleanup_(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        *p = func(*p);          \
        }

/* -errno from the last libc failure, never 0 even if errno was not set. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* Unique local names per expansion, so MIN(MAX(a, b), c) does not shadow. */
#define MS_CONCAT_(a, b) a##b
#define MS_CONCAT(a, b) MS_CONCAT_(a, b)
#define MS_UNIQ(name, n) MS_CONCAT(_uniq_##name, n)

#define MS_MINMAX_(a, b, op, n)                                                 \
        __extension__({                                                         \
                __typeof__(a) MS_UNIQ(x, n) = (a);                              \
                __typeof__(b) MS_UNIQ(y, n) = (b);                              \
                MS_UNIQ(x, n) op MS_UNIQ(y, n) ? MS_UNIQ(x, n) : MS_UNIQ(y, n); \
        })
#define MAX(a, b) MS_MINMAX_(a, b, >, __COUNTER__)
#define MIN(a, b) MS_MINMAX_(a, b, <, __COUNTER__)

/* How many of the n elements of array, sorted by member, have member <= value: the index just past the
 * last of them, so the one at or below value is at the result - 1 (none if the result is 0). */
#define SORTED_COUNT_AT_MOST(array, n, member, value) \
        MS_SORTED_COUNT_AT_MOST_(array, n, member, value, __COUNTER__)
#define MS_SORTED_COUNT_AT_MOST_(array, n, member, value, u)                                    \
        __extension__({                                                                         \
                size_t MS_UNIQ(lo, u) = 0, MS_UNIQ(hi, u) = (n);                                \
                while (MS_UNIQ(lo, u) < MS_UNIQ(hi, u)) {                                       \
                        size_t MS_UNIQ(mid, u) =                                                \
                                MS_UNIQ(lo, u) + (MS_UNIQ(hi, u) - MS_UNIQ(lo, u)) / 2;         \
                        if ((array)[MS_UNIQ(mid, u)].member <= (value))                         \
                                MS_UNIQ(lo, u) = MS_UNIQ(mid, u) + 1;                           \
                        else                                                                    \
                                MS_UNIQ(hi, u) = MS_UNIQ(mid, u);                               \
                }                                                                               \
                MS_UNIQ(lo, u);                                                                 \
        })

/*
 * The most any count holds: the largest signed 64-bit integer, so that every count fits in a reply
 * (varlink integers are signed 64-bit). Counts add with count_add(), which stops there instead of
 * wrapping; whoever keeps a count says somewhere that it stopped.
 */
#define COUNT_MAX ((uint64_t) INT64_MAX)

/* a + n, or COUNT_MAX if that is more. */
static inline uint64_t count_add(uint64_t a, uint64_t n) {
        uint64_t sum;

        if (__builtin_add_overflow(a, n, &sum) || sum > COUNT_MAX)
                return COUNT_MAX;
        return sum;
}

/* a * n, or COUNT_MAX if that is more. */
static inline uint64_t count_mul(uint64_t a, uint64_t n) {
        uint64_t product;

        if (__builtin_mul_overflow(a, n, &product) || product > COUNT_MAX)
                return COUNT_MAX;
        return product;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

/* The rest of s after prefix, or NULL if s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t n = strlen(prefix);
        return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

/* Makes room for need elements of size bytes in *array (a T **, with *allocated of them), doubling from
 * at least min so that appending one at a time costs amortized O(1). 0, or -ENOMEM (the array as it was). */
static inline int greedy_realloc(void *array, size_t *allocated, size_t need, size_t size, size_t min) {
        void **a = array;

        if (need <= *allocated)
                return 0;
        size_t n = need;
        if (n < min)
                n = min;
        if (*allocated <= SIZE_MAX / 2 && n < *allocated * 2)
                n = *allocated * 2;
        void *q = reallocarray(*a, n, size);
        if (!q)
                return -ENOMEM;
        *a = q;
        *allocated = n;
        return 0;
}
