/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "parse-util.h"

int parse_uint64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        char *end = NULL;
        unsigned long long v;

        assert(s);
        assert(ret);

        /* strtoull() would accept leading space and a minus sign (and wrap it around): refuse them. */
        if (!isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || !end || *end != '\0')
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = (uint64_t) v;
        return 0;
}
