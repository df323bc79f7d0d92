/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "format-util.h"
#include "macro.h"

char *strdup_printf(const char *format, ...) {
        char *s;
        va_list ap;

        va_start(ap, format);
        int r = vasprintf(&s, format, ap);
        va_end(ap);
        return r < 0 ? NULL : s;
}

char *format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        double v = (double) bytes;
        size_t u = 0;

        assert(buf);

        if (bytes < 1024) {
                (void) snprintf(buf, size, "%" PRIu64 " B", bytes);
                return buf;
        }
        v /= 1024.0;
        /* Switch units where one decimal would round up to 1024.0 of this one. */
        while (v >= 1023.95 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024.0;
                u++;
        }
        (void) snprintf(buf, size, "%.1f %s", v, units[u]);
        return buf;
}

char *format_pages(char *buf, size_t size, uint64_t pages, uint64_t page_size) {
        if (page_size == 0)
                page_size = 4096;
        if (pages > UINT64_MAX / page_size)
                return format_bytes(buf, size, UINT64_MAX);
        return format_bytes(buf, size, pages * page_size);
}
