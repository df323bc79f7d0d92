/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame-text.h"

#define BLANKS " \t\n"

/* "0x<hex>" at *p: the digits must be there and fit. Advances *p past them. */
static int parse_hex(const char **p, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (strncmp(*p, "0x", 2) != 0 || !isxdigit((unsigned char) (*p)[2]))
                return -EINVAL;
        errno = 0;
        v = strtoull(*p + 2, &end, 16);
        if (errno != 0)
                return -ERANGE;
        *p = end;
        *ret = v;
        return 0;
}

/* Names and modules are printable and free of the grammar's own characters. */
static bool valid_word(const char *s, size_t len, const char *forbidden) {
        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) s[i] < 0x21 || s[i] == 0x7f || strchr(forbidden, s[i]))
                        return false;
        return true;
}

int frame_text_parse(const char *text, FrameText *ret) {
        const char *p;
        FrameText f = {};
        int r;

        assert(text);
        assert(ret);

        p = text + strspn(text, BLANKS);
        if (strncmp(p, "0x", 2) == 0) {
                f.raw = true;
                f.name = p;
                r = parse_hex(&p, &f.address);
                if (r < 0)
                        return r;
                f.name_len = (size_t) (p - f.name);
        } else {
                f.name = p;
                f.name_len = strcspn(p, "+[" BLANKS);
                if (!valid_word(f.name, f.name_len, "]/"))
                        return -EINVAL;
                p += f.name_len;
                if (*p == '+') {
                        p++;
                        r = parse_hex(&p, &f.offset);
                        if (r < 0)
                                return r;
                        if (*p == '/') {
                                p++;
                                r = parse_hex(&p, &f.size);
                                if (r < 0)
                                        return r;
                                if (f.offset >= f.size)
                                        return -ERANGE;
                        }
                }
                p += strspn(p, " \t");
                if (*p == '[') {
                        /* "[module]", or "[module buildid]" with build ids (%pSb). */
                        const char *close;

                        p++;
                        close = strchr(p, ']');
                        f.module = p;
                        f.module_len = strcspn(p, " ]");
                        if (!close || !valid_word(f.module, f.module_len, "["))
                                return -EINVAL;
                        p = close + 1;
                }
        }
        if (p[strspn(p, BLANKS)] != '\0')
                return -EINVAL;
        *ret = f;
        return 0;
}

char *frame_text_function_name(const char *frame) {
        const char *plus;

        if (!frame)
                return strdup("");
        /* Only a trailing "+0x" and hex digits is an offset; "[user] 0x7f..." and names with '+' stay. */
        plus = strrchr(frame, '+');
        if (plus && plus > frame && plus[1] == '0' && plus[2] == 'x' && plus[3]) {
                const char *p = plus + 3;
                while (isxdigit((unsigned char) *p))
                        p++;
                if (*p == '\0')
                        return strndup(frame, (size_t) (plus - frame));
        }
        return strdup(frame);
}
