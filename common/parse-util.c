/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int parse_size(const char *s, uint64_t max, uint64_t *ret) {
        static const struct {
                const char *unit;
                unsigned shift;
        } units[] = {
                { "", 0 }, { "B", 0 },
                { "K", 10 }, { "k", 10 }, { "KiB", 10 },
                { "M", 20 }, { "MiB", 20 },
                { "G", 30 }, { "GiB", 30 },
                { "T", 40 }, { "TiB", 40 },
        };
        char number[32];
        size_t digits;
        uint64_t v;
        int r;

        assert(s);
        assert(ret);

        digits = strspn(s, "0123456789");
        if (digits == 0 || digits >= sizeof(number))
                return digits == 0 ? -EINVAL : -ERANGE;
        memcpy(number, s, digits);
        number[digits] = '\0';
        r = parse_uint64(number, 0, UINT64_MAX, &v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcmp(s + digits, units[i].unit) != 0)
                        continue;
                if (v > (UINT64_MAX >> units[i].shift) || (v << units[i].shift) > max)
                        return -ERANGE;
                *ret = v << units[i].shift;
                return 0;
        }
        return -EINVAL;
}
