/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "read-file.h"
#include "zoneinfo.h"

/* /proc/zoneinfo is a few KiB per zone. */
#define ZONEINFO_SIZE_MAX (4u * 1024u * 1024u)

/* The number after a key at the start of a line ("  spanned  4095", "  start_pfn:  1"). */
static bool line_number(const char *line, const char *key, uint64_t *ret) {
        line += strspn(line, " \t");
        const char *p = startswith(line, key);
        if (!p)
                return false;
        if (*p == ':')
                p++;
        if (*p != ' ' && *p != '\t')
                return false;
        p += strspn(p, " \t");
        char buf[32];
        size_t n = strcspn(p, " \t\n");
        if (n == 0 || n >= sizeof(buf))
                return false;
        memcpy(buf, p, n);
        buf[n] = '\0';
        return parse_uint64(buf, 0, UINT64_MAX, ret) >= 0;
}

typedef struct ZoneParse {
        ZoneRange *zones;
        size_t n, allocated;
        ZoneRange cur;
        uint64_t spanned, start;
        bool in_zone, has_spanned, has_start;
} ZoneParse;

/* Ends the section being read, keeping its zone if it spans pages. */
static int close_section(ZoneParse *z) {
        if (z->in_zone && z->has_spanned && z->has_start && z->spanned > 0 && z->start + z->spanned > z->start) {
                if (greedy_realloc(&z->zones, &z->allocated, z->n + 1, sizeof(ZoneRange), 8) < 0)
                        return -ENOMEM;
                z->cur.start_pfn = z->start;
                z->cur.end_pfn = z->start + z->spanned;
                z->zones[z->n++] = z->cur;
        }
        z->in_zone = z->has_spanned = z->has_start = false;
        return 0;
}

int zoneinfo_parse(const char *text, ZoneRange **ret, size_t *ret_n) {
        ZoneParse z = {};
        int r = 0;

        assert(text && ret && ret_n);

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                int node;
                char name[ZONE_NAME_MAX];

                if (sscanf(line, "Node %d, zone %15s", &node, name) == 2) {
                        r = close_section(&z);
                        if (r < 0)
                                break;
                        z.in_zone = true;
                        z.cur = (ZoneRange) { .node = node };
                        (void) snprintf(z.cur.name, sizeof(z.cur.name), "%s", name);
                } else if (z.in_zone && !z.has_spanned && line_number(line, "spanned", &z.spanned))
                        z.has_spanned = true;
                else if (z.in_zone && !z.has_start && line_number(line, "start_pfn", &z.start))
                        z.has_start = true;
        }
        if (r >= 0)
                r = close_section(&z);
        if (r < 0) {
                free(z.zones);
                return r;
        }
        *ret = z.zones;
        *ret_n = z.n;
        return 0;
}

int zoneinfo_read(const char *path, ZoneRange **ret, size_t *ret_n) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = read_file_full(path ?: "/proc/zoneinfo", ZONEINFO_SIZE_MAX, &text, &size);
        if (r < 0)
                return r;
        return zoneinfo_parse(text, ret, ret_n);
}

int zoneinfo_node_count(const char *dir, unsigned *ret) {
        DIR *d = opendir(dir ?: "/sys/devices/system/node");
        unsigned n = 0;

        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                const char *p = startswith(de->d_name, "node");
                if (p && *p && strspn(p, "0123456789") == strlen(p))
                        n++;
        }
        closedir(d);
        *ret = n;
        return 0;
}

int zoneinfo_page_zones(const char *path, bool pfns, ZoneRange **ret, size_t *ret_n) {
        unsigned nodes = 0;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (pfns) {
                r = zoneinfo_read(path, ret, ret_n);
                if (r == -ENOMEM || (r >= 0 && *ret_n > 0))
                        return r;
        }
        if (zoneinfo_node_count(NULL, &nodes) < 0 || nodes != 1)
                return 0;
        ZoneRange *all = calloc(1, sizeof(ZoneRange));
        if (!all)
                return -ENOMEM;
        /* Keys are below 2^40 (event.h MS_PAGE_KEY_BITS). */
        *all = (ZoneRange) { .start_pfn = 0, .end_pfn = UINT64_C(1) << 40, .node = 0 };
        *ret = all;
        *ret_n = 1;
        return 0;
}
