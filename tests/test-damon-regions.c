/* SPDX-License-Identifier: MIT */

/* The access room without a kernel: damon:damon_aggregated records put back together into sets of regions
 * (complete, cut short, lost, out of order, hostile, of a kdamond that changed its target), the regions as
 * page frames with idle times, and DAMON's sysfs interface in a directory of the test's own (a kdamond of
 * others only read, memstrackd's own made only where none is). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "damon-regions.h"
#include "kdamond.h"
#include "key-calibration.h"
#include "macro.h"
#include "tests.h"

#define MIB (UINT64_C(1) << 20)
#define PID 107

static DamonRecord rec(uint64_t target, uint64_t n, uint64_t start, uint64_t end, uint64_t accesses, uint64_t age) {
        return (DamonRecord) { .common_pid = PID, .target_id = target, .nr_regions = n, .start = start,
                               .end = end, .nr_accesses = accesses, .age = age };
}

static void feed_set(DamonRegions *d, uint64_t base, uint64_t time_nsec) {
        /* Three regions of 1 MiB: accessed, idle 3 intervals, idle 10. */
        DamonRecord set[] = { rec(0, 3, base, base + MIB, 4, 2), rec(0, 3, base + MIB, base + 2 * MIB, 0, 3),
                              rec(0, 3, base + 2 * MIB, base + 3 * MIB, 0, 10) };
        for (size_t i = 0; i < ELEMENTSOF(set); i++)
                ASSERT_OK(damon_regions_add(d, &set[i], time_nsec));
}

static ssize_t sample(DamonRegions *d, uint64_t now, AccessRegion **regions, size_t *allocated, uint64_t *time) {
        /* 5 s aggregations, 4 KiB pages; a set older than 15 s is stale. */
        return damon_regions_sample(d, PID, 1, 4096, 5000000, now, 15000000000, regions, allocated, time);
}

static void test_sets(void) {
        DamonRegions *d = damon_regions_new();
        _cleanup_free_ AccessRegion *regions = NULL;
        size_t allocated = 0;
        uint64_t time = 0;
        ColdSourceStats st = {};

        ASSERT_NOT_NULL(d);
        /* No set yet. */
        ASSERT_EQ(sample(d, 1000, &regions, &allocated, &time), 0);
        feed_set(d, 4096 * MIB, 1000);
        ASSERT_EQ(damon_regions_last_nsec(d, PID), 1000u);
        ASSERT_EQ(sample(d, 2000, &regions, &allocated, &time), 3);
        ASSERT_EQ(time, 1000u);
        ASSERT_EQ(regions[0].start_pfn, 4096 * MIB / 4096);
        ASSERT_EQ(regions[0].end_pfn, 4097 * MIB / 4096);
        ASSERT_EQ(regions[0].idle_usec, 0u);
        ASSERT_EQ(regions[1].idle_usec, 15000000u);
        ASSERT_EQ(regions[2].idle_usec, 50000000u);
        /* Stale once three intervals passed without a set. */
        ASSERT_EQ(sample(d, 1000 + 15000000001, &regions, &allocated, &time), 0);

        /* A set cut short by one of another count, then lost records: neither is used. */
        DamonRecord a = rec(0, 3, 0, MIB, 0, 1), b = rec(0, 2, 0, MIB, 0, 1);
        ASSERT_OK(damon_regions_add(d, &a, 3000));
        ASSERT_OK(damon_regions_add(d, &b, 3000));
        damon_regions_lost(d, PID, 5);
        /* Out of order: the second record starts before the first ends. */
        DamonRecord c = rec(0, 2, 2 * MIB, 3 * MIB, 0, 1), e = rec(0, 2, MIB, 2 * MIB, 0, 1);
        ASSERT_OK(damon_regions_add(d, &c, 3000));
        ASSERT_OK(damon_regions_add(d, &e, 3000));
        /* The last complete set is still the first. */
        ASSERT_EQ(sample(d, 4000, &regions, &allocated, &time), 3);
        ASSERT_EQ(time, 1000u);
        damon_regions_stats(d, &st);
        ASSERT_EQ(st.aggregations, 1u);
        ASSERT_EQ(st.lost_records, 5u);
        /* a (cut by b), b (by the loss), c (by e); e is in progress. */
        ASSERT_EQ(st.incomplete, 3u);

        /* The target moved: counted, the new set used. */
        feed_set(d, 8192 * MIB, 5000);
        damon_regions_stats(d, &st);
        ASSERT_EQ(st.target_changes, 1u);
        ASSERT_EQ(sample(d, 6000, &regions, &allocated, &time), 3);
        ASSERT_EQ(regions[0].start_pfn, 8192 * MIB / 4096);

        /* Dropped: gone. */
        damon_regions_drop(d, PID);
        ASSERT_EQ(sample(d, 6000, &regions, &allocated, &time), 0);
        ASSERT_EQ(damon_regions_last_nsec(d, PID), 0u);
        damon_regions_free(d);
}

static void test_hostile(void) {
        DamonRegions *d = damon_regions_new();
        _cleanup_free_ AccessRegion *regions = NULL;
        size_t allocated = 0;
        uint64_t time = 0;
        ColdSourceStats st = {};

        const DamonRecord bad[] = {
                rec(0, 1, MIB, MIB, 0, 0),                      /* empty */
                rec(0, 1, 2 * MIB, MIB, 0, 0),                  /* backwards */
                rec(0, 0, 0, MIB, 0, 0),                        /* no regions */
                rec(0, DAMON_REGIONS_MAX + 1, 0, MIB, 0, 0),    /* too many */
                rec(0, 1, 0, MIB, UINT64_MAX, 0),               /* past the field's width */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_OK(damon_regions_add(d, &bad[i], 100));
        damon_regions_stats(d, &st);
        ASSERT_EQ(st.rejected_records, ELEMENTSOF(bad));
        ASSERT_EQ(st.aggregations, 0u);

        /* Complete, but beyond any page frame, and an age whose idle time would overflow: the first
         * refused when turned into frames, the second saturated. */
        DamonRecord far = rec(1, 2, UINT64_MAX - 2 * MIB, UINT64_MAX - MIB, 0, 1);
        DamonRecord far2 = rec(1, 2, UINT64_MAX - MIB, UINT64_MAX, 0, UINT32_MAX);
        ASSERT_OK(damon_regions_add(d, &far, 100));
        ASSERT_OK(damon_regions_add(d, &far2, 100));
        DamonRecord ok = rec(2, 1, 0, MIB, 0, UINT32_MAX);
        ASSERT_OK(damon_regions_add(d, &ok, 100));
        ASSERT_EQ(damon_regions_sample(d, PID, 1, 4096, UINT64_MAX / 2, 200, UINT64_MAX, &regions, &allocated,
                                       &time), 1);
        ASSERT_EQ(regions[0].idle_usec, UINT64_MAX);
        /* An address unit of 0 or a page size of 0 is refused. */
        ASSERT_EQ(damon_regions_sample(d, PID, 0, 4096, 1, 200, UINT64_MAX, &regions, &allocated, &time), -EINVAL);

        /* Two targets of one kdamond overlapping: the first region kept. */
        DamonRecord t3 = rec(3, 1, 0, 2 * MIB, 1, 0);
        ASSERT_OK(damon_regions_add(d, &t3, 100));
        ASSERT_EQ(damon_regions_sample(d, PID, 1, 4096, 1, 200, UINT64_MAX, &regions, &allocated, &time), 1);
        damon_regions_stats(d, &st);
        ASSERT_GE(st.rejected_records, ELEMENTSOF(bad) + 2);

        /* More streams than kept: counted as other records. */
        for (uint64_t t = 0; t < DAMON_STREAMS_MAX + 2; t++) {
                DamonRecord r = rec(100 + t, 1, 0, MIB, 0, 0);
                r.common_pid = 500;
                ASSERT_OK(damon_regions_add(d, &r, 100));
        }
        damon_regions_stats(d, &st);
        ASSERT_GT(st.other_records, 0u);
        damon_regions_free(d);
}

/* --- DAMON's sysfs interface, in a directory of the test's own --- */

static void put(const char *root, const char *rel, const char *value) {
        char path[512];
        (void) snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        fputs(value, f);
        fclose(f);
}

static void get(const char *root, const char *rel, char *buf, size_t size) {
        char path[512];
        (void) snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *f = fopen(path, "re");
        ASSERT_NOT_NULL(f);
        buf[0] = '\0';
        if (!fgets(buf, (int) size, f))
                buf[0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
}

static void mkdirs(const char *root, const char *rel) {
        char path[512];
        (void) snprintf(path, sizeof(path), "%s/%s", root, rel);
        for (char *p = path + strlen(root) + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        (void) mkdir(path, 0755);
                        *p = '/';
                }
        (void) mkdir(path, 0755);
}

/* A kdamond directory as the kernel makes it, its files empty but state and pid. */
static void make_kdamond(const char *root, unsigned i, const char *state, const char *pid, const char *ops) {
        char rel[256];
        static const char *const attrs[] = { "intervals/sample_us", "intervals/aggr_us", "intervals/update_us",
                                             "nr_regions/min", "nr_regions/max" };

        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/monitoring_attrs/intervals", i);
        mkdirs(root, rel);
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/monitoring_attrs/nr_regions", i);
        mkdirs(root, rel);
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/targets/0/regions/0", i);
        mkdirs(root, rel);
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/targets/0/regions/1", i);
        mkdirs(root, rel);
        static const char *const region_files[] = { "nr_regions", "0/start", "0/end", "1/start", "1/end" };
        for (size_t k = 0; k < ELEMENTSOF(region_files); k++) {
                (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/targets/0/regions/%s", i, region_files[k]);
                put(root, rel, "0\n");
        }
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/state", i);
        put(root, rel, state);
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/pid", i);
        put(root, rel, pid);
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/nr_contexts", i);
        put(root, rel, "1\n");
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/operations", i);
        put(root, rel, ops);
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/avail_operations", i);
        put(root, rel, "vaddr\nfvaddr\npaddr\n");
        (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/targets/nr_targets", i);
        put(root, rel, "0\n");
        for (size_t k = 0; k < ELEMENTSOF(attrs); k++) {
                (void) snprintf(rel, sizeof(rel), "kdamonds/%u/contexts/0/monitoring_attrs/%s", i, attrs[k]);
                put(root, rel, "5000000\n");
        }
}

static void test_sysfs(void) {
        char root[] = "/tmp/test-damon-sysfs.XXXXXX", buf[64];
        KdamondInfo *list = NULL, own;
        const char *reason = NULL;
        size_t n = 0;

        ASSERT_NOT_NULL(mkdtemp(root));
        /* What a paddr target's regions come from: the top-level System RAM ranges of 16 MiB or more. */
        char iomem[600];
        (void) snprintf(iomem, sizeof(iomem), "%s/iomem", root);
        put(root, "iomem", "00000000-00000fff : Reserved\n00001000-0009fbff : System RAM\n"
                           "00100000-bfffffff : System RAM\n  01000000-01ffffff : Kernel code\n"
                           "100000000-63fffffff : System RAM\n");
        KdamondSettings s = KDAMOND_SETTINGS_DEFAULT;
        s.iomem = iomem;
        s.aggr_usec = 1000000;
        /* None readable (a user's view): refused. */
        KdamondSettings none = s;
        none.iomem = "/nonexistent";
        ASSERT_EQ(kdamond_start_own(root, &none, &own, &reason), -ENODATA);

        /* No interface: ENOENT. */
        ASSERT_EQ(kdamond_list(root, &list, &n), -ENOENT);
        ASSERT_EQ(kdamond_start_own(root, &s, &own, &reason), -ENOENT);
        ASSERT_NOT_NULL(reason);

        /* Someone else's kdamond, running on physical memory: listed, and never written to. */
        mkdirs(root, "kdamonds");
        put(root, "kdamonds/nr_kdamonds", "1\n");
        make_kdamond(root, 0, "on\n", "107\n", "paddr\n");
        ASSERT_OK(kdamond_list(root, &list, &n));
        ASSERT_EQ(n, 1u);
        ASSERT_TRUE(list[0].on);
        ASSERT_TRUE(list[0].paddr);
        ASSERT_EQ(list[0].pid, 107);
        ASSERT_EQ(list[0].aggr_usec, 5000000u);
        ASSERT_EQ(list[0].addr_unit, 1u);      /* no addr_unit file: 1 */
        ASSERT_NOT_NULL(kdamond_find(list, n, 107));
        ASSERT_NULL(kdamond_find(list, n, 108));
        free(list);
        reason = NULL;
        ASSERT_EQ(kdamond_start_own(root, &s, &own, &reason), -EBUSY);
        ASSERT_NOT_NULL(reason);
        get(root, "kdamonds/nr_kdamonds", buf, sizeof(buf));
        ASSERT_STREQ(buf, "1");
        get(root, "kdamonds/0/state", buf, sizeof(buf));
        ASSERT_STREQ(buf, "on");
        get(root, "kdamonds/0/contexts/0/monitoring_attrs/intervals/aggr_us", buf, sizeof(buf));
        ASSERT_STREQ(buf, "5000000");

        /* None configured: memstrackd's own, with its settings, and removed at stop. (The fake's state file
         * keeps what was written, and its pid file what the kernel would have put there.) */
        put(root, "kdamonds/nr_kdamonds", "0\n");
        make_kdamond(root, 0, "off\n", "4242\n", "vaddr\n");
        ASSERT_OK(kdamond_start_own(root, &s, &own, NULL));
        ASSERT_EQ(own.pid, 4242);
        ASSERT_TRUE(own.paddr);
        ASSERT_EQ(own.aggr_usec, 1000000u);
        get(root, "kdamonds/0/state", buf, sizeof(buf));
        ASSERT_STREQ(buf, "on");
        get(root, "kdamonds/0/contexts/0/targets/nr_targets", buf, sizeof(buf));
        ASSERT_STREQ(buf, "1");
        get(root, "kdamonds/0/contexts/0/targets/0/regions/nr_regions", buf, sizeof(buf));
        ASSERT_STREQ(buf, "2");
        get(root, "kdamonds/0/contexts/0/targets/0/regions/0/start", buf, sizeof(buf));
        ASSERT_STREQ(buf, "1048576");
        get(root, "kdamonds/0/contexts/0/targets/0/regions/1/end", buf, sizeof(buf));
        ASSERT_STREQ(buf, "26843545600");
        ASSERT_OK(kdamond_stop_own(root, own.index));
        get(root, "kdamonds/0/state", buf, sizeof(buf));
        ASSERT_STREQ(buf, "off");
        get(root, "kdamonds/nr_kdamonds", buf, sizeof(buf));
        ASSERT_STREQ(buf, "0");

        /* A kernel without paddr: refused, undone. */
        make_kdamond(root, 0, "off\n", "0\n", "vaddr\n");
        put(root, "kdamonds/0/contexts/0/avail_operations", "vaddr\nfvaddr\n");
        reason = NULL;
        ASSERT_EQ(kdamond_start_own(root, &s, &own, &reason), -EOPNOTSUPP);
        ASSERT_NOT_NULL(reason);
        get(root, "kdamonds/nr_kdamonds", buf, sizeof(buf));
        ASSERT_STREQ(buf, "0");

        char cmd[600];
        (void) snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        ASSERT_EQ(system(cmd), 0);
}

/* Page keys against pfns: the one constant; none; two when the pages run in a row among more of the
 * child's; and the wrap at 2^MS_PAGE_KEY_BITS. */
static void test_calibration(void) {
        const uint64_t pfns[] = { 1000, 1030, 1077, 2000 };
        const uint64_t keys[] = { 5, 900005, 901000, 901030, 901077, 902000, 77 };
        uint64_t offset = 0;

        ASSERT_EQ(key_calibration_match(pfns, ELEMENTSOF(pfns), keys, ELEMENTSOF(keys), &offset), 1);
        ASSERT_EQ(offset, 900000u);
        ASSERT_EQ(key_calibration_match(pfns, ELEMENTSOF(pfns), keys, 3, &offset), 0);
        const uint64_t row[] = { 10, 11, 12 }, row_keys[] = { 110, 111, 112, 113 };
        ASSERT_EQ(key_calibration_match(row, ELEMENTSOF(row), row_keys, ELEMENTSOF(row_keys), &offset), -ENOTUNIQ);
        const uint64_t high[] = { 5 }, wrapped[] = { 2 };
        ASSERT_EQ(key_calibration_match(high, 1, wrapped, 1, &offset), 1);
        ASSERT_EQ((high[0] + offset) & ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1), 2u);
}

static void test_cpu(void) {
        uint64_t usec;
        ASSERT_OK(kdamond_cpu_usec(getpid(), &usec));
        ASSERT_EQ(kdamond_cpu_usec(-1, &usec) < 0, true);
}

int main(void) {
        TEST(test_sets);
        TEST(test_hostile);
        TEST(test_sysfs);
        TEST(test_calibration);
        TEST(test_cpu);
        return 0;
}
