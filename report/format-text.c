/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-text.h"
#include "utf8.h"

static bool is_continuation(unsigned char c) {
        return (c & 0xc0) == 0x80;
}

size_t format_text_width(const char *s) {
        size_t w = 0;

        for (; s && *s; s++)
                if (!is_continuation((unsigned char) *s))
                        w++;
        return w;
}

char *format_sanitize(const char *s) {
        return utf8_escape(s, UTF8_ESCAPE_CONTROL);
}

/* Byte length of the first n code points of s (or all of it). */
static size_t prefix_bytes(const char *s, size_t n) {
        size_t i = 0, cps = 0;

        while (s[i]) {
                if (!is_continuation((unsigned char) s[i])) {
                        if (cps == n)
                                break;
                        cps++;
                }
                i++;
        }
        return i;
}

char *format_ellipsize(const char *s, size_t width) {
        size_t w = format_text_width(s);
        char *out;

        if (w <= width)
                return strdup(s ?: "");
        if (width < 4)
                return strndup(s, prefix_bytes(s, width));

        size_t keep = prefix_bytes(s, width - 3);
        out = malloc(keep + 4);
        if (!out)
                return NULL;
        memcpy(out, s, keep);
        memcpy(out + keep, "...", 4);
        return out;
}

char *format_stack_sampling(char *buf, size_t size, uint64_t interval) {
        assert(buf);

        if (interval == 0)
                (void) snprintf(buf, size, "none");
        else if (interval == 1)
                (void) snprintf(buf, size, "every allocation");
        else
                (void) snprintf(buf, size, "1 in %" PRIu64 " pages, scaled to exact counts", interval);
        return buf;
}
