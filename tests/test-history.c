/* SPDX-License-Identifier: MIT */

/* History (daemon/core/history.h): rings, the fold into coarser buckets, exact peaks between ticks,
 * top-N selection under the cap, and the state file. */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accounting.h"
#include "history.h"
#include "ksym.h"
#include "macro.h"
#include "synthetic-events.h"
#include "tests.h"

#define SEC UINT64_C(1000000)
#define T0 (UINT64_C(1700000000) * SEC) /* a minute boundary: 1700000000 = 28333333 * 60 + 20 */
#define MIN0 (UINT64_C(28333334) * 60 * SEC)

static HistorySeries *new_series(History *h, int32_t pid) {
        HistorySeries *s = history_track(h, HISTORY_TASK, pid, NULL);
        ASSERT_TRUE(s);
        return s;
}

static void test_fold(void) {
        _cleanup_(history_freep) History *h = history_new();
        HistorySample buf[1440];
        ASSERT_TRUE(h);
        HistorySeries *s = new_series(h, 42);

        /* One minute of second buckets: peaks 0..59 + 100 at second 7; current the second's number. */
        for (uint64_t i = 0; i < 60; i++)
                history_series_put(s, MIN0 + i * SEC, i, i == 7 ? 100 : i);
        /* Two samples in one second: the last current, the higher peak. */
        history_series_put(s, MIN0 + 3 * SEC + 500000, 1, 2);
        ASSERT_EQ(history_series_read(s, 0, 0, buf), 60);
        ASSERT_EQ(buf[0].time_usec, MIN0);
        ASSERT_EQ(buf[7].peak_pages, 100);
        /* The late sample landed in the newest bucket (59): the clock never rewrites the past. */
        ASSERT_EQ(buf[3].current_pages, 3);
        ASSERT_EQ(buf[59].current_pages, 1);
        ASSERT_EQ(buf[59].peak_pages, 59);

        /* The minute bucket is the fold of its seconds: last current, max peak. */
        ASSERT_EQ(history_series_read(s, 1, 0, buf), 1);
        ASSERT_EQ(buf[0].time_usec, MIN0);
        ASSERT_EQ(buf[0].current_pages, 1);
        ASSERT_EQ(buf[0].peak_pages, 100);

        /* The next minute opens a new bucket; a peak below current is raised to it. */
        history_series_put(s, MIN0 + 60 * SEC, 7, 3);
        ASSERT_EQ(history_series_read(s, 1, 0, buf), 2);
        ASSERT_EQ(buf[1].current_pages, 7);
        ASSERT_EQ(buf[1].peak_pages, 7);

        /* since: only buckets that end after it. */
        ASSERT_EQ(history_series_read(s, 0, MIN0 + 58 * SEC + 1, buf), 3);
        ASSERT_EQ(history_series_read(s, 1, MIN0 + 60 * SEC, buf), 1);
}

static void test_wraparound(void) {
        _cleanup_(history_freep) History *h = history_new();
        HistorySample buf[1440];
        ASSERT_TRUE(h);
        HistorySeries *s = new_series(h, 1);

        /* 1000 seconds into a ring of 600: the last 600 remain, oldest first. */
        for (uint64_t i = 0; i < 1000; i++)
                history_series_put(s, T0 + i * SEC, i, i);
        ASSERT_EQ(history_series_read(s, 0, 0, buf), 600);
        ASSERT_EQ(buf[0].current_pages, 400);
        ASSERT_EQ(buf[599].current_pages, 999);
        for (size_t i = 1; i < 600; i++)
                ASSERT_EQ(buf[i].time_usec, buf[i - 1].time_usec + SEC);

        /* A gap (no samples for 100 s) leaves empty buckets out, and overwrites what they held. */
        history_series_put(s, T0 + 1100 * SEC, 5, 5);
        size_t n = history_series_read(s, 0, 0, buf);
        ASSERT_EQ(n, 500);
        ASSERT_EQ(buf[498].current_pages, 999);
        ASSERT_EQ(buf[499].current_pages, 5);

        /* A gap longer than the ring: only the new bucket. */
        history_series_put(s, T0 + 5000 * SEC, 9, 9);
        ASSERT_EQ(history_series_read(s, 0, 0, buf), 1);

        /* Minutes: 2000 of them into 1440. */
        HistorySeries *m = new_series(h, 2);
        for (uint64_t i = 0; i < 2000; i++)
                history_series_put(m, MIN0 + i * 60 * SEC, i, i + 1);
        ASSERT_EQ(history_series_read(m, 1, 0, buf), 1440);
        ASSERT_EQ(buf[0].current_pages, 560);
        ASSERT_EQ(buf[0].peak_pages, 561);
        ASSERT_EQ(buf[1439].current_pages, 1999);
}

static void test_levels(void) {
        ASSERT_EQ(history_level_for(0), 0);
        ASSERT_EQ(history_level_for(600), 0);
        ASSERT_EQ(history_level_for(601), 1);
        ASSERT_EQ(history_level_for(86400), 1);
        ASSERT_EQ(history_level_for(10 * 86400), 1);
        ASSERT_STREQ(history_kind_to_string(HISTORY_MODULE), "module");
        ASSERT_NULL(history_kind_to_string(_HISTORY_KIND_MAX));
}

static void test_memory_bound(void) {
        _cleanup_(history_freep) History *h = history_new();
        ASSERT_TRUE(h);

        /* Tracking more than the cap replaces the smallest series not in the top N; nothing grows. */
        for (int32_t pid = 1; pid <= 3 * HISTORY_SERIES_MAX; pid++) {
                HistorySeries *s = history_track(h, HISTORY_TASK, pid, NULL);
                ASSERT_TRUE(s);
                history_series_put(s, T0, (uint64_t) pid, (uint64_t) pid);
                ASSERT_LE(history_count(h, HISTORY_TASK), HISTORY_SERIES_MAX);
        }
        ASSERT_EQ(history_count(h, HISTORY_TASK), HISTORY_SERIES_MAX);
        ASSERT_EQ(history_count(h, HISTORY_TOTAL), 1);
        /* Each new one replaced the smallest: the biggest stay. */
        ASSERT_TRUE(history_find(h, HISTORY_TASK, 3 * HISTORY_SERIES_MAX, NULL));
        ASSERT_NULL(history_find(h, HISTORY_TASK, 1, NULL));
        /* Names too long to keep are not tracked. */
        char name[HISTORY_NAME_MAX + 1];
        memset(name, 'x', HISTORY_NAME_MAX);
        name[HISTORY_NAME_MAX] = 0;
        ASSERT_NULL(history_track(h, HISTORY_UNIT, 0, name));
        /* The stated bound: every series, with its rings, in one allocation. */
        ASSERT_LE(HISTORY_SERIES_TOTAL * sizeof(HistorySeries), HISTORY_MEMORY_MAX);
        ASSERT_LE(HISTORY_MEMORY_MAX, 4 * 1024 * 1024);
        ASSERT_EQ(sizeof(HistoryPoint), 16);
}

static Accounting *new_accounting(Ksym **ret_ksym) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(ksym_load("data/kallsyms-modules", ret_ksym));
        ASSERT_OK(accounting_new(&c, *ret_ksym, &a));
        return a;
}

/* The newest second bucket of a series. */
static HistorySample newest(History *h, HistoryKind kind, int32_t pid, const char *name) {
        HistorySample buf[600];
        HistorySeries *s = history_find(h, kind, pid, name);
        ASSERT_TRUE(s);
        size_t n = history_series_read(s, 0, 0, buf);
        ASSERT_GT(n, 0);
        return buf[n - 1];
}

static void test_tick(void) {
        _cleanup_(history_freep) History *h = history_new();
        Ksym *k = NULL;
        Accounting *a = new_accounting(&k);
        ASSERT_TRUE(h);

        synthetic_task(a, 100, "alpha");
        synthetic_task(a, 200, "web");
        synthetic_task(a, 300, "quiet");
        for (uint64_t i = 0; i < 8; i++)
                synthetic_alloc(a, 100, 0x1000 + i, 0, SYNTHETIC_EXT4);
        synthetic_alloc(a, 200, 0x2000, 2, SYNTHETIC_KERNEL);
        synthetic_name_units(a);
        history_tick(h, a, T0);

        HistorySample s = newest(h, HISTORY_TASK, 100, NULL);
        ASSERT_EQ(s.current_pages, 8);
        ASSERT_EQ(s.peak_pages, 8);
        ASSERT_STREQ(history_find(h, HISTORY_TASK, 100, NULL)->name, "alpha");
        ASSERT_EQ(newest(h, HISTORY_TASK, 200, NULL).current_pages, 4);
        /* Holding nothing: not among the top. */
        ASSERT_NULL(history_find(h, HISTORY_TASK, 300, NULL));
        ASSERT_EQ(newest(h, HISTORY_TOTAL, 0, NULL).current_pages, 12);
        ASSERT_EQ(newest(h, HISTORY_UNIT, 0, "alpha.service").current_pages, 8);
        ASSERT_EQ(newest(h, HISTORY_MODULE, 0, "ext4").current_pages, 8);

        /* Between two ticks alpha goes up to 16 and back down to 2: the next bucket's peak is 16, not
         * the 8 or 2 that the ticks saw. The ledger's own peak (16) would say so too here ... */
        for (uint64_t i = 8; i < 16; i++)
                synthetic_alloc(a, 100, 0x1000 + i, 0, SYNTHETIC_EXT4);
        for (uint64_t i = 2; i < 16; i++)
                synthetic_free(a, 100, 0x1000 + i, 0);
        history_tick(h, a, T0 + SEC);
        s = newest(h, HISTORY_TASK, 100, NULL);
        ASSERT_EQ(s.current_pages, 2);
        ASSERT_EQ(s.peak_pages, 16);
        ASSERT_EQ(newest(h, HISTORY_TOTAL, 0, NULL).peak_pages, 20);
        ASSERT_EQ(newest(h, HISTORY_UNIT, 0, "alpha.service").peak_pages, 16);
        ASSERT_EQ(newest(h, HISTORY_MODULE, 0, "ext4").peak_pages, 16);

        /* ... but not here: up to 10 and back, below the old peak of 16, which never moves. */
        for (uint64_t i = 2; i < 10; i++)
                synthetic_alloc(a, 100, 0x1000 + i, 0, SYNTHETIC_EXT4);
        for (uint64_t i = 2; i < 10; i++)
                synthetic_free(a, 100, 0x1000 + i, 0);
        history_tick(h, a, T0 + 2 * SEC);
        s = newest(h, HISTORY_TASK, 100, NULL);
        ASSERT_EQ(s.current_pages, 2);
        ASSERT_EQ(s.peak_pages, 10);
        ASSERT_EQ(newest(h, HISTORY_MODULE, 0, "ext4").peak_pages, 10);

        /* A quiet interval: the peak is the current value. */
        history_tick(h, a, T0 + 3 * SEC);
        s = newest(h, HISTORY_TASK, 100, NULL);
        ASSERT_EQ(s.peak_pages, 2);

        /* The minute bucket holds the max of its seconds and the last current. */
        HistorySample buf[1440];
        size_t n = history_series_read(history_find(h, HISTORY_TASK, 100, NULL), 1, 0, buf);
        ASSERT_EQ(n, 1);
        ASSERT_EQ(buf[0].peak_pages, 16);
        ASSERT_EQ(buf[0].current_pages, 2);

        /* A task that starts tracking late begins with its own interval only: quiet (300) was taken at
         * every tick, so its first bucket is not what it did before. */
        synthetic_alloc(a, 300, 0x3000, 3, SYNTHETIC_KERNEL);
        synthetic_free(a, 300, 0x3000, 3);
        history_tick(h, a, T0 + 4 * SEC);
        ASSERT_TRUE(history_track(h, HISTORY_TASK, 300, NULL));
        synthetic_alloc(a, 300, 0x3000, 0, SYNTHETIC_KERNEL);
        history_tick(h, a, T0 + 5 * SEC);
        s = newest(h, HISTORY_TASK, 300, NULL);
        ASSERT_EQ(s.current_pages, 1);
        ASSERT_EQ(s.peak_pages, 1);

        accounting_free(a);
        ksym_free(k);
}

static void test_top_n(void) {
        _cleanup_(history_freep) History *h = history_new();
        Ksym *k = NULL;
        Accounting *a = new_accounting(&k);
        ASSERT_TRUE(h);

        /* More tasks holding pages than the top N: the biggest N are tracked. */
        for (int32_t i = 0; i < HISTORY_TOP_N + 5; i++) {
                char comm[16];
                snprintf(comm, sizeof(comm), "t%d", i);
                synthetic_task(a, 1000 + i, comm);
                for (int32_t j = 0; j <= i; j++)
                        synthetic_alloc(a, 1000 + i, 0x10000 + (uint64_t) i * 100 + (uint64_t) j, 0, SYNTHETIC_KERNEL);
        }
        history_tick(h, a, T0);
        ASSERT_EQ(history_count(h, HISTORY_TASK), HISTORY_TOP_N);
        ASSERT_TRUE(history_find(h, HISTORY_TASK, 1000 + HISTORY_TOP_N + 4, NULL));
        ASSERT_NULL(history_find(h, HISTORY_TASK, 1000, NULL));
        /* A tracked series stays when its task drops out of the top N. */
        for (int32_t j = 0; j < HISTORY_TOP_N + 5; j++)
                synthetic_free(a, 1000 + HISTORY_TOP_N + 4, 0x10000 + (uint64_t) (HISTORY_TOP_N + 4) * 100 + (uint64_t) j, 0);
        history_tick(h, a, T0 + SEC);
        ASSERT_EQ(newest(h, HISTORY_TASK, 1000 + HISTORY_TOP_N + 4, NULL).current_pages, 0);
        ASSERT_EQ(history_count(h, HISTORY_TASK), HISTORY_TOP_N + 1);

        accounting_free(a);
        ksym_free(k);
}

static void test_save_load(void) {
        _cleanup_(history_freep) History *h = history_new(), *g = history_new();
        char dir[] = "/tmp/test-history.XXXXXX", path[64], bad[64];
        HistorySample a[1440], b[1440];
        ASSERT_TRUE(h && g);
        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/history", dir);

        ASSERT_EQ(history_load(g, path), -ENOENT);
        for (uint64_t i = 0; i < 700; i++)
                history_series_put(history_find(h, HISTORY_TOTAL, 0, NULL), T0 + i * SEC, i, i * 2);
        HistorySeries *u = history_track(h, HISTORY_UNIT, 0, "alpha.service");
        ASSERT_TRUE(u);
        history_series_put(u, T0, 5, 9);
        ASSERT_OK(history_save(h, path));
        ASSERT_OK(history_load(g, path));

        size_t n = history_series_read(history_find(h, HISTORY_TOTAL, 0, NULL), 0, 0, a);
        ASSERT_EQ(n, 600);
        ASSERT_EQ(history_series_read(history_find(g, HISTORY_TOTAL, 0, NULL), 0, 0, b), n);
        ASSERT_TRUE(memcmp(a, b, n * sizeof(HistorySample)) == 0);
        n = history_series_read(history_find(h, HISTORY_TOTAL, 0, NULL), 1, 0, a);
        ASSERT_EQ(history_series_read(history_find(g, HISTORY_TOTAL, 0, NULL), 1, 0, b), n);
        ASSERT_TRUE(memcmp(a, b, n * sizeof(HistorySample)) == 0);
        HistorySeries *v = history_find(g, HISTORY_UNIT, 0, "alpha.service");
        ASSERT_TRUE(v);
        ASSERT_EQ(history_series_read(v, 0, 0, b), 1);
        ASSERT_EQ(b[0].peak_pages, 9);
        /* A loaded series goes on. */
        history_series_put(v, T0 + SEC, 6, 6);
        ASSERT_EQ(history_series_read(v, 0, 0, b), 2);

        /* A corrupt file (one byte changed, cut short, or empty) is refused and changes nothing. */
        snprintf(bad, sizeof(bad), "%s/bad", dir);
        _cleanup_free_ uint8_t *data = malloc(HISTORY_MEMORY_MAX);
        ASSERT_TRUE(data);
        FILE *f = fopen(path, "re");
        ASSERT_TRUE(f);
        size_t size = fread(data, 1, HISTORY_MEMORY_MAX, f);
        fclose(f);
        ASSERT_GT(size, 100);
        size_t cuts[] = { 0, 5, size / 2, size - 1 };
        for (size_t i = 0; i < ELEMENTSOF(cuts); i++) {
                f = fopen(bad, "we");
                ASSERT_TRUE(f);
                ASSERT_EQ(fwrite(data, 1, cuts[i], f), cuts[i]);
                fclose(f);
                ASSERT_EQ(history_load(g, bad), -EBADMSG);
        }
        data[size / 2] ^= 0x40;
        f = fopen(bad, "we");
        ASSERT_TRUE(f);
        ASSERT_EQ(fwrite(data, 1, size, f), size);
        fclose(f);
        ASSERT_EQ(history_load(g, bad), -EBADMSG);
        /* Another version. */
        data[size / 2] ^= 0x40;
        data[8] = 99;
        f = fopen(bad, "we");
        ASSERT_TRUE(f);
        ASSERT_EQ(fwrite(data, 1, size, f), size);
        fclose(f);
        ASSERT_EQ(history_load(g, bad), -EBADMSG);
        ASSERT_TRUE(history_find(g, HISTORY_UNIT, 0, "alpha.service"));

        /* A FIFO is refused at once (its open would wait for a writer), a symlink too: the file is ours,
         * and we never make one. */
        ASSERT_OK(unlink(bad));
        ASSERT_OK(mkfifo(bad, 0600));
        ASSERT_EQ(history_load(g, bad), -EBADFD);
        ASSERT_OK(unlink(bad));
        ASSERT_OK(symlink(path, bad));
        ASSERT_EQ(history_load(g, bad), -ELOOP);
        ASSERT_TRUE(history_find(g, HISTORY_UNIT, 0, "alpha.service"));

        /* No temporary file is left behind. */
        ASSERT_OK(unlink(bad));
        ASSERT_OK(unlink(path));
        ASSERT_OK(rmdir(dir));
}

int main(void) {
        TEST(test_fold);
        TEST(test_wraparound);
        TEST(test_levels);
        TEST(test_memory_bound);
        TEST(test_tick);
        TEST(test_top_n);
        TEST(test_save_load);
        return 0;
}
