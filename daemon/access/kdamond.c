/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kdamond.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "read-file.h"

#define LINE_MAX_BYTES 256

/* root/format..., into buf: its first line, its newline cut, or with whole set all of it. -errno. */
static int read_text(bool whole, char *buf, size_t size, const char *root, const char *format, ...) _printf_(5, 6);
static int read_text(bool whole, char *buf, size_t size, const char *root, const char *format, ...) {
        char path[512], rel[256];
        va_list ap;

        va_start(ap, format);
        int n = vsnprintf(rel, sizeof(rel), format, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(rel) || snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        ssize_t r = read_file_small(path, buf, size);
        if (r < 0)
                return (int) r;
        if (!whole)
                buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

#define read_line(buf, size, root, ...) read_text(false, buf, size, root, __VA_ARGS__)

static int read_number(const char *root, uint64_t *ret, const char *path) {
        char buf[LINE_MAX_BYTES];
        int r = read_line(buf, sizeof(buf), root, "%s", path);
        return r < 0 ? r : parse_uint64(buf, 0, UINT64_MAX, ret);
}

static int write_line(const char *root, const char *rel, const char *value) {
        char path[512];

        if (snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return log_debug_errno(errno, "Failed to open %s: %m", path);
        ssize_t n = write(fd, value, strlen(value));
        int r = n < 0 ? -errno : (size_t) n != strlen(value) ? -EIO : 0;
        close(fd);
        if (r < 0)
                return log_debug_errno(r, "Failed to write \"%s\" to %s: %m", value, path);
        return 0;
}

static int read_kdamond(const char *root, unsigned index, KdamondInfo *ret) {
        char buf[LINE_MAX_BYTES], path[128];
        uint64_t v;
        int r;

        *ret = (KdamondInfo) { .index = index, .addr_unit = 1 };
        r = read_line(buf, sizeof(buf), root, "kdamonds/%u/state", index);
        if (r < 0)
                return r;
        ret->on = streq(buf, "on");
        if (read_line(buf, sizeof(buf), root, "kdamonds/%u/pid", index) >= 0 &&
            parse_uint64(buf, 0, INT32_MAX, &v) >= 0)
                ret->pid = (int32_t) v;
        (void) snprintf(path, sizeof(path), "kdamonds/%u/contexts/nr_contexts", index);
        if (read_number(root, &v, path) >= 0)
                ret->n_contexts = (unsigned) MIN(v, (uint64_t) UINT32_MAX);
        if (ret->n_contexts == 0)
                return 0;
        if (read_line(buf, sizeof(buf), root, "kdamonds/%u/contexts/0/operations", index) >= 0)
                ret->paddr = streq(buf, "paddr");
        static const struct {
                const char *name;
                size_t offset;
        } numbers[] = {
                { "monitoring_attrs/intervals/sample_us", offsetof(KdamondInfo, sample_usec) },
                { "monitoring_attrs/intervals/aggr_us", offsetof(KdamondInfo, aggr_usec) },
                { "monitoring_attrs/intervals/update_us", offsetof(KdamondInfo, update_usec) },
                { "monitoring_attrs/nr_regions/min", offsetof(KdamondInfo, min_regions) },
                { "monitoring_attrs/nr_regions/max", offsetof(KdamondInfo, max_regions) },
                { "addr_unit", offsetof(KdamondInfo, addr_unit) },
        };
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                (void) snprintf(path, sizeof(path), "kdamonds/%u/contexts/0/%s", index, numbers[i].name);
                if (read_number(root, &v, path) >= 0)
                        *(uint64_t *) ((uint8_t *) ret + numbers[i].offset) = v;
        }
        if (ret->addr_unit == 0)
                ret->addr_unit = 1;
        return 0;
}

int kdamond_list(const char *root, KdamondInfo **ret, size_t *ret_n) {
        _cleanup_free_ KdamondInfo *list = NULL;
        uint64_t n;
        int r;

        root = root ?: KDAMOND_SYSFS_DEFAULT;
        r = read_number(root, &n, "kdamonds/nr_kdamonds");
        if (r < 0)
                return r;
        n = MIN(n, (uint64_t) 1024);
        list = calloc(MAX(n, (uint64_t) 1), sizeof(KdamondInfo));
        if (!list)
                return -ENOMEM;
        size_t k = 0;
        for (unsigned i = 0; i < n; i++)
                if (read_kdamond(root, i, &list[k]) >= 0)
                        k++;
        *ret = TAKE_PTR(list);
        *ret_n = k;
        return 0;
}

const KdamondInfo *kdamond_find(const KdamondInfo *list, size_t n, int32_t pid) {
        for (size_t i = 0; i < n; i++)
                if (pid > 0 && list[i].pid == pid)
                        return &list[i];
        return NULL;
}

/* The top-level "System RAM" ranges of /proc/iomem at least KDAMOND_RANGE_MIN_BYTES long, [start, end)
 * in bytes, in order: how many (0: none readable, as without root, whose view shows zeros). */
static size_t system_ram(const char *path, uint64_t (*ranges)[2]) {
        _cleanup_fclose_ FILE *f = fopen(path ?: "/proc/iomem", "re");
        char line[256];
        size_t n = 0;

        while (f && n < KDAMOND_RANGES_MAX && fgets(line, sizeof(line), f)) {
                unsigned long long start, last;
                int end = 0;
                if (line[0] == ' ' || sscanf(line, "%llx-%llx : %n", &start, &last, &end) != 2 || end == 0 ||
                    strncmp(line + end, "System RAM", 10) != 0 || last <= start)
                        continue;
                if (last + 1 - start >= KDAMOND_RANGE_MIN_BYTES) {
                        ranges[n][0] = start;
                        ranges[n][1] = last + 1;
                        n++;
                }
        }
        return n;
}

int kdamond_start_own(const char *root, const KdamondSettings *s, KdamondInfo *ret, const char **reterr_reason) {
        char value[32], buf[LINE_MAX_BYTES], rel[128];
        uint64_t n, ranges[KDAMOND_RANGES_MAX][2];
        int r;

        root = root ?: KDAMOND_SYSFS_DEFAULT;
        size_t n_ranges = system_ram(s->iomem, ranges);
        if (n_ranges == 0) {
                if (reterr_reason)
                        *reterr_reason = "/proc/iomem shows no System RAM range (needs root)";
                return -ENODATA;
        }
        r = read_number(root, &n, "kdamonds/nr_kdamonds");
        if (r < 0) {
                if (reterr_reason)
                        *reterr_reason = "the kernel has no DAMON sysfs interface (CONFIG_DAMON_SYSFS)";
                return r == -ENOENT ? r : -ENOENT;
        }
        if (n != 0) {
                if (reterr_reason)
                        *reterr_reason = "kdamonds are configured by someone else: memstrackd changes none of theirs, "
                                         "and cannot add its own beside them";
                return -EBUSY;
        }
        r = write_line(root, "kdamonds/nr_kdamonds", "1");
        if (r < 0) {
                if (reterr_reason)
                        *reterr_reason = "cannot make a kdamond (writing nr_kdamonds failed)";
                return r;
        }
        r = write_line(root, "kdamonds/0/contexts/nr_contexts", "1");
        if (r >= 0) {
                /* One name a line. Kernels before avail_operations (5.18 to 6.0) take the write or refuse it. */
                r = read_text(true, buf, sizeof(buf), root, "kdamonds/0/contexts/0/avail_operations");
                if (r >= 0 && !strstr(buf, "paddr"))
                        r = -EOPNOTSUPP;
                else
                        r = write_line(root, "kdamonds/0/contexts/0/operations", "paddr");
        }
        const struct {
                const char *name;
                uint64_t value;
        } attrs[] = {
                /* nr_regions: max first, so that min never passes it on the way. */
                { "kdamonds/0/contexts/0/monitoring_attrs/nr_regions/max", s->max_regions },
                { "kdamonds/0/contexts/0/monitoring_attrs/nr_regions/min", s->min_regions },
                { "kdamonds/0/contexts/0/monitoring_attrs/intervals/sample_us", s->sample_usec },
                { "kdamonds/0/contexts/0/monitoring_attrs/intervals/aggr_us", s->aggr_usec },
                { "kdamonds/0/contexts/0/monitoring_attrs/intervals/update_us", s->update_usec },
        };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(attrs); i++) {
                (void) snprintf(value, sizeof(value), "%" PRIu64, attrs[i].value);
                r = write_line(root, attrs[i].name, value);
        }
        if (r >= 0)
                r = write_line(root, "kdamonds/0/contexts/0/targets/nr_targets", "1");
        if (r >= 0) {
                (void) snprintf(value, sizeof(value), "%zu", n_ranges);
                r = write_line(root, "kdamonds/0/contexts/0/targets/0/regions/nr_regions", value);
        }
        for (size_t i = 0; r >= 0 && i < n_ranges * 2; i++) {
                (void) snprintf(rel, sizeof(rel), "kdamonds/0/contexts/0/targets/0/regions/%zu/%s", i / 2,
                                i % 2 ? "end" : "start");
                (void) snprintf(value, sizeof(value), "%" PRIu64, ranges[i / 2][i % 2]);
                r = write_line(root, rel, value);
        }
        if (r >= 0)
                r = write_line(root, "kdamonds/0/state", "on");
        if (r >= 0)
                r = read_kdamond(root, 0, ret);
        if (r >= 0 && (!ret->on || ret->pid <= 0))
                r = -ESRCH;
        if (r < 0) {
                if (reterr_reason)
                        *reterr_reason = r == -EOPNOTSUPP ? "the kernel's DAMON cannot monitor physical memory (no paddr)" :
                                         "the kernel refused memstrackd's kdamond";
                (void) write_line(root, "kdamonds/0/state", "off");
                (void) write_line(root, "kdamonds/nr_kdamonds", "0");
                return r;
        }
        return 0;
}

int kdamond_stop_own(const char *root, unsigned index) {
        char rel[64];
        int r;

        root = root ?: KDAMOND_SYSFS_DEFAULT;
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/state", index);
        r = write_line(root, rel, "off");
        /* Its directory goes with nr_kdamonds: as it was before memstrackd made one. */
        int k = write_line(root, "kdamonds/nr_kdamonds", "0");
        return r < 0 ? r : k;
}

int kdamond_cpu_usec(int32_t pid, uint64_t *ret) {
        char path[64], buf[1024];
        unsigned long long utime, stime;

        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32 "/stat", pid);
        ssize_t n = read_file_small(path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        /* The fields after the comm, which may hold spaces and parentheses: from the last ')'. */
        const char *p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
                return -EBADMSG;
        long hz = sysconf(_SC_CLK_TCK);
        *ret = (uint64_t) (utime + stime) * UINT64_C(1000000) / (uint64_t) (hz > 0 ? hz : 100);
        return 0;
}
