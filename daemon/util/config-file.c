/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-file.h"
#include "file-util.h"
#include "log.h"
#include "macro.h"

/* Trims leading and trailing white space in place; returns the first non-space character. */
static char *strstrip(char *s) {
        size_t n;

        while (isspace((unsigned char) *s))
                s++;
        n = strlen(s);
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = '\0';
        return s;
}

int config_file_parse(FILE *f, const char *path, ConfigFileHandler handler, void *userdata) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        unsigned line = 0;
        ssize_t n;
        int r;

        assert(f);
        assert(path);
        assert(handler);

        errno = 0;
        while ((n = getline(&buf, &size, f)) >= 0) {
                char *l, *eq, *key, *value;

                line++;
                if (memchr(buf, '\0', (size_t) n)) {
                        log_warning("%s:%u: line contains a NUL byte, ignoring.", path, line);
                        continue;
                }
                l = strstrip(buf);
                if (l[0] == '\0' || l[0] == '#')
                        continue;

                eq = strchr(l, '=');
                if (!eq) {
                        log_warning("%s:%u: expected key=value, got \"%s\", ignoring.", path, line, l);
                        continue;
                }
                *eq = '\0';
                key = strstrip(l);
                value = strstrip(eq + 1);
                if (key[0] == '\0') {
                        log_warning("%s:%u: missing key before '=', ignoring.", path, line);
                        continue;
                }

                r = handler(path, line, key, value, userdata);
                if (r < 0)
                        return r;
                errno = 0;
        }
        /* getline() returns -1 both at the end and on errors; only ferror() tells them apart. */
        if (ferror(f))
                return errno > 0 ? -errno : -EIO;
        return 0;
}

int config_file_read(const char *path, ConfigFileHandler handler, void *userdata) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        assert(path);

        r = fopen_regular(path, 0, &f);
        if (r < 0)
                return r;
        return config_file_parse(f, path, handler, userdata);
}
