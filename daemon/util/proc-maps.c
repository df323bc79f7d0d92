/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc-maps.h"

#define DELETED " (deleted)"

/* A hexadecimal number at *p, then the separator sep; false if either is missing. */
static bool hex_then(const char **p, const char *eol, char sep, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        size_t digits = 0;

        for (; s < eol && digits <= 16; s++, digits++) {
                int d = *s >= '0' && *s <= '9' ? *s - '0' :
                        *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 :
                        *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
                if (d < 0)
                        break;
                v = v << 4 | (uint64_t) d;
        }
        if (digits == 0 || digits > 16 || s >= eol || *s != sep)
                return false;
        *p = s + 1;
        *ret = v;
        return true;
}

/* Past the field at *p and the blanks after it; false if the line ends first. */
static bool skip_field(const char **p, const char *eol) {
        const char *s = *p;

        while (s < eol && *s != ' ')
                s++;
        if (s >= eol)
                return false;
        while (s < eol && *s == ' ')
                s++;
        *p = s;
        return true;
}

int maps_next(const char **cursor, MapsLine *ret) {
        const char *line = *cursor;

        if (!*line)
                return 0;
        const char *eol = strchrnul(line, '\n');
        *cursor = *eol ? eol + 1 : eol;

        const char *p = line;
        MapsLine m = {};
        if (!hex_then(&p, eol, '-', &m.start) || !hex_then(&p, eol, ' ', &m.end) || m.end <= m.start ||
            eol - p < 5 || p[4] != ' ')
                return -EINVAL;
        memcpy(m.perms, p, sizeof(m.perms));
        p += 5;
        if (!hex_then(&p, eol, ' ', &m.offset))
                return -EINVAL;
        /* The device, then the inode: the path, if any, begins after the blanks that follow it. */
        if (!skip_field(&p, eol))
                return -EINVAL;
        while (p < eol && *p != ' ')
                p++;
        while (p < eol && *p == ' ')
                p++;
        if (p < eol) {
                size_t len = (size_t) (eol - p);
                if (len > strlen(DELETED) && memcmp(eol - strlen(DELETED), DELETED, strlen(DELETED)) == 0) {
                        m.deleted = true;
                        len -= strlen(DELETED);
                }
                m.path = p;
                m.path_len = len;
        }
        *ret = m;
        return 1;
}
