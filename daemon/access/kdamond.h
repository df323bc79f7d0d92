/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Kdamond: DAMON's sysfs interface (/sys/kernel/mm/damon/admin): what each kdamond is set to, read
 * only, and a kdamond of memstrackd's own.
 *
 * The kdamonds of others are never written to: not their state, not a commit, not nr_kdamonds (writing
 * it rebuilds every kdamond's directory, so a kdamond of memstrackd's own is made only where nr_kdamonds
 * is 0, nobody having configured one). Memstrackd's own monitors physical memory (operations paddr) in
 * the System RAM ranges of /proc/iomem (a paddr target has no default range in the sysfs interface:
 * without regions a kdamond runs and measures nothing), with the intervals it is given, and is stopped
 * and removed (nr_kdamonds back to 0) at exit.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KDAMOND_SYSFS_DEFAULT "/sys/kernel/mm/damon/admin"

typedef struct KdamondInfo {
        unsigned index;                 /* kdamonds/INDEX */
        int32_t pid;                    /* its thread; 0 when off */
        bool on;
        bool paddr;                     /* its first context monitors physical memory */
        unsigned n_contexts;
        uint64_t sample_usec, aggr_usec, update_usec;
        uint64_t addr_unit;             /* the context's address unit; 1 where the kernel has none */
        uint64_t min_regions, max_regions;
} KdamondInfo;

/* Every kdamond under root (NULL: KDAMOND_SYSFS_DEFAULT), *ret_n of them in a new array. -ENOENT: no DAMON
 * sysfs interface (kernel without CONFIG_DAMON_SYSFS); -errno of a read. Reads only. */
int kdamond_list(const char *root, KdamondInfo **ret, size_t *ret_n);
/* The kdamond whose thread is pid, else NULL. */
const KdamondInfo *kdamond_find(const KdamondInfo *list, size_t n, int32_t pid);

typedef struct KdamondSettings {
        uint64_t sample_usec, aggr_usec, update_usec;
        uint64_t min_regions, max_regions;
        const char *iomem;              /* where the System RAM ranges are (NULL: /proc/iomem) */
} KdamondSettings;

/* At most this many System RAM ranges, each of at least KDAMOND_RANGE_MIN_BYTES, are monitored. */
#define KDAMOND_RANGES_MAX 16
#define KDAMOND_RANGE_MIN_BYTES (UINT64_C(16) << 20)

#define KDAMOND_SETTINGS_DEFAULT                                                                        \
        ((KdamondSettings) {                                                                           \
                .sample_usec = 100000, .aggr_usec = 2000000, .update_usec = 60000000,                  \
                .min_regions = 100, .max_regions = 1000,                                               \
        })

/*
 * Starts a kdamond of memstrackd's own monitoring physical memory, when nobody configured one: -EBUSY if
 * nr_kdamonds is not 0 (nothing written), -EOPNOTSUPP if the kernel's DAMON has no paddr operations,
 * -ENOENT without DAMON sysfs, -errno of a write (what was written is undone). Its info into *ret. On
 * failure *reterr_reason (if not NULL) is a static sentence for Status.
 */
int kdamond_start_own(const char *root, const KdamondSettings *settings, KdamondInfo *ret,
                const char **reterr_reason);
/* Stops and removes the kdamond kdamond_start_own() made (index). -errno of a write. */
int kdamond_stop_own(const char *root, unsigned index);

/* A kthread's CPU time so far (utime + stime of /proc/PID/stat) in usec; -errno. */
int kdamond_cpu_usec(int32_t pid, uint64_t *ret);
