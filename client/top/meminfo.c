/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "meminfo.h"

int top_meminfo_parse(const char *text, TopMemInfo *ret) {
        static const struct {
                const char *key;
                size_t offset;
        } fields[] = {
                { "MemTotal", offsetof(TopMemInfo, total) },
                { "MemFree", offsetof(TopMemInfo, free) },
                { "MemAvailable", offsetof(TopMemInfo, available) },
                { "Cached", offsetof(TopMemInfo, cached) },
                { "Buffers", offsetof(TopMemInfo, buffers) },
                { "Slab", offsetof(TopMemInfo, slab) },
        };
        TopMemInfo mi = {};

        for (const char *line = text; line && *line;) {
                const char *colon = strchr(line, ':'), *eol = strchrnul(line, '\n');

                if (colon && colon < eol)
                        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                                uint64_t kib;
                                if (strlen(fields[i].key) != (size_t) (colon - line) ||
                                    strncmp(line, fields[i].key, colon - line) != 0)
                                        continue;
                                /* Values are in KiB ("kB"); one that does not parse stays 0. */
                                if (sscanf(colon + 1, " %" SCNu64, &kib) == 1 && kib <= UINT64_MAX / 1024)
                                        *(uint64_t *) ((char *) &mi + fields[i].offset) = kib * 1024;
                        }
                line = *eol ? eol + 1 : NULL;
        }
        if (mi.total == 0)
                return -EBADMSG;
        *ret = mi;
        return 0;
}

int top_meminfo_read(const char *path, TopMemInfo *ret) {
        _cleanup_close_ int fd = -EBADF;
        char buf[8192];
        size_t n = 0;

        fd = open(path ?: "/proc/meminfo", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
                if (k < 0)
                        return -errno;
                if (k == 0 || (n += (size_t) k) == sizeof(buf) - 1)
                        break;
        }
        buf[n] = '\0';
        return top_meminfo_parse(buf, ret);
}
