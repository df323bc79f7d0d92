/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gfpnames.h"

void gfp_names_free(GfpName *names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i].name);
        free(names);
}

/* Appends text (and a "|" before it unless first) to buf at *at, cutting at size. */
static void append(char *buf, size_t size, size_t *at, const char *text) {
        if (*at >= size)
                return;
        int k = snprintf(buf + *at, size - *at, "%s%s", *at > 0 ? "|" : "", text);
        *at += k > 0 ? (size_t) k : 0;
}

char *gfp_names_format(const GfpName *names, size_t n, uint64_t flags, char *buf, size_t size) {
        size_t at = 0;
        char hex[24];

        if (size == 0)
                return buf;
        buf[0] = '\0';
        if (flags == 0) {
                (void) snprintf(buf, size, "none");
                return buf;
        }
        for (size_t i = 0; i < n && flags != 0; i++)
                if (names[i].mask != 0 && (flags & names[i].mask) == names[i].mask) {
                        append(buf, size, &at, names[i].name);
                        flags &= ~names[i].mask;
                }
        if (flags != 0) {
                (void) snprintf(hex, sizeof(hex), "0x%" PRIx64, flags);
                append(buf, size, &at, hex);
        }
        return buf;
}
