/* SPDX-License-Identifier: MIT */

/*
 * OOM kills explained, without a kernel: a synthetic oom:mark_victim record (of today's format with comm
 * and sizes, and of the old pid-only one) decoded by tracepoint_oom_decode() and handed to the OOM log
 * (daemon/api/oomlog.c) over a synthetic core. Checks the snapshot's victim, unit and top holders, the
 * bounds of every list and of the ring of kills, the rate limit of peak snapshots, and the log line.
 */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accounting.h"
#include "ksym.h"
#include "macro.h"
#include "oomlog.h"
#include "synthetic-events.h"
#include "tests.h"
#include "tracepoint.h"

#define FORMAT_HEADER                                                                                   \
        "name: mark_victim\nID: 609\nformat:\n"                                                         \
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                          \
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                          \
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"                  \
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"                                    \
        "\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n"

/* Linux 6.x: comm, sizes in KiB, uid, oom_score_adj. */
static const char format_new[] = FORMAT_HEADER
        "\tfield:__data_loc char[] comm;\toffset:12;\tsize:4;\tsigned:0;\n"
        "\tfield:unsigned long total_vm;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long anon_rss;\toffset:24;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long file_rss;\toffset:32;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long shmem_rss;\toffset:40;\tsize:8;\tsigned:0;\n"
        "\tfield:uid_t uid;\toffset:48;\tsize:4;\tsigned:0;\n"
        "\tfield:unsigned long pgtables;\toffset:56;\tsize:8;\tsigned:0;\n"
        "\tfield:short oom_score_adj;\toffset:64;\tsize:2;\tsigned:1;\n\n"
        "print fmt: \"pid=%d comm=%s\", REC->pid, __get_str(comm)\n";
/* Before Linux 6.x: the pid only. */
static const char format_old[] = FORMAT_HEADER "\nprint fmt: \"pid=%d\", REC->pid\n";

/* A tracefs with events/oom/mark_victim/format holding text; the caller removes it (remove_tracefs()). */
static char *fake_tracefs(const char *text) {
        char *dir = strdup("/tmp/test-oomlog-XXXXXX");
        _cleanup_free_ char *path = NULL;

        ASSERT_NOT_NULL(dir);
        ASSERT_NOT_NULL(mkdtemp(dir));
        for (const char *sub = "/events"; sub; sub = streq(sub, "/events") ? "/events/oom" :
                                                     streq(sub, "/events/oom") ? "/events/oom/mark_victim" : NULL) {
                _cleanup_free_ char *d = NULL;
                ASSERT_TRUE(asprintf(&d, "%s%s", dir, sub) > 0);
                ASSERT_EQ(mkdir(d, 0755), 0);
        }
        ASSERT_TRUE(asprintf(&path, "%s/events/oom/mark_victim/format", dir) > 0);
        FILE *f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        fputs(text, f);
        ASSERT_EQ(fclose(f), 0);
        return dir;
}

static void remove_tracefs(char *dir) {
        _cleanup_free_ char *cmd = NULL;
        ASSERT_TRUE(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
        ASSERT_EQ(system(cmd), 0);
        free(dir);
}

static void put(uint8_t *raw, size_t offset, const void *v, size_t n) {
        memcpy(raw + offset, v, n);
}

/* The record of the new format for pid, comm, anon_rss 24 KiB. */
static size_t record_new(uint8_t *raw, size_t size, int32_t pid, const char *comm) {
        uint16_t type = 609;
        uint32_t loc = (uint32_t) ((strlen(comm) + 1) << 16) | 72, uid = 1000;
        uint64_t total_vm = 4096, anon = 24, file = 8, shmem = 0, pgtables = 12;
        int16_t adj = -17;

        ASSERT_GE(size, 72 + strlen(comm) + 1);
        memset(raw, 0, size);
        put(raw, 0, &type, 2);
        put(raw, 8, &pid, 4);
        put(raw, 12, &loc, 4);
        put(raw, 16, &total_vm, 8);
        put(raw, 24, &anon, 8);
        put(raw, 32, &file, 8);
        put(raw, 40, &shmem, 8);
        put(raw, 48, &uid, 4);
        put(raw, 56, &pgtables, 8);
        put(raw, 64, &adj, 2);
        memcpy(raw + 72, comm, strlen(comm) + 1);
        return 72 + strlen(comm) + 1;
}

/* What oomlog_log_kill() writes on stderr without journald. */
static char *logged(const json_t *rec) {
        char path[] = "/tmp/test-oomlog-stderr-XXXXXX";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        char *text = calloc(1, 4096);

        ASSERT_NOT_NULL(text);
        ASSERT_GE(fd, 0);
        fflush(stderr);
        ASSERT_GE(dup2(fd, STDERR_FILENO), 0);
        int r = oomlog_log_kill(rec, false, NULL, 4096);
        fflush(stderr);
        ASSERT_GE(dup2(saved, STDERR_FILENO), 0);
        close(saved);
        ASSERT_EQ(r, 0);
        ASSERT_GE(pread(fd, text, 4095, 0), 0);
        close(fd);
        unlink(path);
        fprintf(stderr, "logged: %s", text);
        return text;
}

static Accounting *scene(Ksym **ret_ksym) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(ksym_load("data/kallsyms-modules", ret_ksym));
        ASSERT_OK(accounting_new(&c, *ret_ksym, &a));
        synthetic_scene(a);
        /* Eight more small holders, so every list has more than OOMLOG_TOP_N candidates. */
        for (int32_t pid = 1000; pid < 1008; pid++) {
                synthetic_task(a, pid, "small");
                synthetic_alloc(a, pid, 0x10000 + (uint64_t) pid, 0, SYNTHETIC_KERNEL);
        }
        return a;
}

static void test_decode_and_snapshot(void) {
        char *dir = fake_tracefs(format_new);
        _cleanup_(tracepoint_oom_freep) TracepointOom *t = NULL;
        _cleanup_(oomlog_freep) OomLog *l = oomlog_new();
        uint8_t raw[128];
        OomKill k;
        Ksym *ksym = NULL;

        ASSERT_NOT_NULL(l);
        ASSERT_OK(tracepoint_oom_load(dir, &t));
        ASSERT_EQ(tracepoint_oom_id(t), 609);
        size_t n = record_new(raw, sizeof(raw), 200, "beta");
        ASSERT_EQ(tracepoint_oom_decode(t, raw, n, &k), 0);
        ASSERT_EQ(k.pid, 200);
        ASSERT_STREQ(k.comm, "beta");
        ASSERT_EQ(k.anon_rss_kib, 24u);
        ASSERT_EQ(k.uid, 1000u);
        ASSERT_EQ(k.oom_score_adj, -17);
        ASSERT_EQ(k.fields, (unsigned) (OOM_KILL_HAS_COMM | OOM_KILL_HAS_TOTAL_VM | OOM_KILL_HAS_ANON_RSS |
                                        OOM_KILL_HAS_FILE_RSS | OOM_KILL_HAS_SHMEM_RSS | OOM_KILL_HAS_UID |
                                        OOM_KILL_HAS_PGTABLES | OOM_KILL_HAS_OOM_SCORE_ADJ));
        /* Too short, and a record of another event. */
        ASSERT_EQ(tracepoint_oom_decode(t, raw, 60, &k), -EBADMSG);
        raw[0] = 1;
        ASSERT_EQ(tracepoint_oom_decode(t, raw, n, &k), -ENOENT);
        raw[0] = 609 & 0xff;
        /* A comm that is not terminated inside the record: the pid still counts, the comm does not. */
        ASSERT_EQ(tracepoint_oom_decode(t, raw, n - 1, &k), 0);
        ASSERT_EQ(k.fields & OOM_KILL_HAS_COMM, 0u);
        ASSERT_EQ(tracepoint_oom_decode(t, raw, n, &k), 0);

        Accounting *a = scene(&ksym);
        const json_t *rec = NULL;
        k.timestamp_nsec = 5000000;
        ASSERT_OK(oomlog_record_kill(l, a, NULL, &k, 4096, &rec));
        ASSERT_NOT_NULL(rec);
        ASSERT_EQ(json_integer_value(json_object_get(rec, "pid")), 200);
        ASSERT_EQ(json_integer_value(json_object_get(rec, "timestampUsec")), 5000);
        ASSERT_STREQ(json_string_value(json_object_get(rec, "comm")), "beta");
        ASSERT_STREQ(json_string_value(json_object_get(rec, "unit")), "web.service");
        ASSERT_EQ(json_integer_value(json_object_get(rec, "anonRssBytes")), 24 * 1024);
        ASSERT_EQ(json_integer_value(json_object_get(rec, "oomScoreAdj")), -17);
        /* The victim as memstrack counted it: 4 + 2 pages. */
        json_t *victim = json_object_get(rec, "victim");
        ASSERT_EQ(json_integer_value(json_object_get(victim, "currentPages")), 6);
        json_t *h = json_object_get(rec, "holders");
        ASSERT_EQ(json_integer_value(json_object_get(h, "trackedPages")), 15 + 8);
        /* Top holders by current pages, at most OOMLOG_TOP_N of each. */
        json_t *tasks = json_object_get(h, "tasks");
        ASSERT_EQ(json_array_size(tasks), (size_t) OOMLOG_TOP_N);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(tasks, 0), "pid")), 100);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(tasks, 1), "pid")), 200);
        ASSERT_LE(json_array_size(json_object_get(h, "units")), (size_t) OOMLOG_TOP_N);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(json_object_get(h, "units"), 0), "name")),
                     "alpha.service");
        ASSERT_LE(json_array_size(json_object_get(h, "modules")), (size_t) OOMLOG_TOP_N);
        ASSERT_GE(json_array_size(json_object_get(h, "modules")), 1u);
        json_t *stacks = json_object_get(h, "stacks");
        ASSERT_GE(json_array_size(stacks), 1u);
        ASSERT_LE(json_array_size(stacks), (size_t) OOMLOG_TOP_N);
        /* The kernel chain holds alpha's 8, delta's 1 and the 8 small ones: the biggest stack. */
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(stacks, 0), "currentPages")), 8 + 1 + 8);

        /* The log line without journald: on stderr, naming the victim and the top task. */
        _cleanup_free_ char *text = logged(rec);
        ASSERT_NOT_NULL(strstr(text, "OOM killer picked pid 200 (beta) in web.service"));
        ASSERT_NOT_NULL(strstr(text, "top tasks: 100 alpha"));

        accounting_free(a);
        ksym_free(ksym);
        remove_tracefs(dir);
}

/* Old kernels: the pid only; the comm comes from memstrack's record, sizes are null. */
static void test_pid_only(void) {
        char *dir = fake_tracefs(format_old);
        _cleanup_(tracepoint_oom_freep) TracepointOom *t = NULL;
        _cleanup_(oomlog_freep) OomLog *l = oomlog_new();
        uint8_t raw[12] = {};
        uint16_t type = 609;
        int32_t pid = 100;
        OomKill k;
        Ksym *ksym = NULL;

        ASSERT_OK(tracepoint_oom_load(dir, &t));
        memcpy(raw, &type, 2);
        memcpy(raw + 8, &pid, 4);
        ASSERT_EQ(tracepoint_oom_decode(t, raw, sizeof(raw), &k), 0);
        ASSERT_EQ(k.pid, 100);
        ASSERT_EQ(k.fields, 0u);

        Accounting *a = scene(&ksym);
        const json_t *rec = NULL;
        ASSERT_OK(oomlog_record_kill(l, a, NULL, &k, 4096, &rec));
        ASSERT_STREQ(json_string_value(json_object_get(rec, "comm")), "alpha");
        ASSERT_STREQ(json_string_value(json_object_get(rec, "unit")), "alpha.service");
        ASSERT_TRUE(json_is_null(json_object_get(rec, "anonRssBytes")));
        ASSERT_TRUE(json_is_null(json_object_get(rec, "uid")));

        /* A comm with a newline stays on its line in the log. */
        OomKill bad = { .pid = 100, .fields = OOM_KILL_HAS_COMM };
        strcpy(bad.comm, "bad\nname");
        ASSERT_OK(oomlog_record_kill(l, a, NULL, &bad, 4096, &rec));
        _cleanup_free_ char *text = logged(rec);
        ASSERT_NOT_NULL(strstr(text, "(bad\\x0aname)"));
        ASSERT_NULL(strchr(text, '\n') == text + strlen(text) - 1 ? NULL : strchr(text, '\n'));

        /* A pid memstrack never saw: no victim record, no unit, no comm. */
        k.pid = 999999;
        ASSERT_OK(oomlog_record_kill(l, a, NULL, &k, 4096, &rec));
        ASSERT_TRUE(json_is_null(json_object_get(rec, "victim")));
        ASSERT_TRUE(json_is_null(json_object_get(rec, "unit")));
        ASSERT_TRUE(json_is_null(json_object_get(rec, "comm")));

        accounting_free(a);
        ksym_free(ksym);
        remove_tracefs(dir);
}

/* The ring keeps the last OOMLOG_KILLS_MAX kills, oldest first, and counts them all. */
static void test_ring_bounds(void) {
        _cleanup_(oomlog_freep) OomLog *l = oomlog_new();
        Ksym *ksym = NULL;
        Accounting *a = scene(&ksym);

        ASSERT_OK(oomlog_set_watching(l, true, NULL));
        for (int i = 0; i < OOMLOG_KILLS_MAX + 5; i++) {
                OomKill k = { .pid = 100, .timestamp_nsec = (uint64_t) (i + 1) * 1000 };
                ASSERT_OK(oomlog_record_kill(l, a, NULL, &k, 4096, NULL));
        }
        json_auto_t *reply = oomlog_json(l);
        ASSERT_NOT_NULL(reply);
        ASSERT_TRUE(json_is_true(json_object_get(reply, "watching")));
        ASSERT_EQ(json_integer_value(json_object_get(reply, "killsSeen")), OOMLOG_KILLS_MAX + 5);
        json_t *kills = json_object_get(reply, "kills");
        ASSERT_EQ(json_array_size(kills), (size_t) OOMLOG_KILLS_MAX);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(kills, 0), "timestampUsec")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(kills, OOMLOG_KILLS_MAX - 1), "timestampUsec")),
                  OOMLOG_KILLS_MAX + 5);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(reply, "limits"), "top")), OOMLOG_TOP_N);

        ASSERT_OK(oomlog_set_watching(l, false, "no tracepoint"));
        json_auto_t *off = oomlog_json(l);
        ASSERT_TRUE(json_is_false(json_object_get(off, "watching")));
        ASSERT_STREQ(json_string_value(json_object_get(off, "reason")), "no tracepoint");
        accounting_free(a);
        ksym_free(ksym);
}

/* Peak snapshots: at a new peak only, growth of OOMLOG_PEAK_GROWTH_PERCENT, one per interval. */
static void test_peaks(void) {
        _cleanup_(oomlog_freep) OomLog *l = oomlog_new();
        Ksym *ksym = NULL;
        Accounting *a = scene(&ksym);           /* current 23, below the peak: gamma's 16 came and went */
        uint64_t t0 = 100000000;

        /* Below the global peak: no snapshot. */
        ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a), t0 - OOMLOG_PEAK_INTERVAL_USEC), 0);
        /* Callers offer again at the next new peak only. */
        AccountingStats st;
        accounting_get_stats(a, &st);
        ASSERT_EQ(oomlog_peak_threshold(l), st.peak_pages);
        /* A new peak: 23 + 64 = 87 > 38; in the first interval (from the first offer) it is held back. */
        synthetic_alloc(a, 100, 0x100000, 6, SYNTHETIC_KERNEL);
        ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a), t0 - 1), 0);
        ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a), t0), 1);
        ASSERT_EQ(oomlog_peak_threshold(l), 87u + 8u);
        /* Higher within the interval: held back. */
        synthetic_alloc(a, 100, 0x200000, 6, SYNTHETIC_KERNEL);
        ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a), t0 + 1000000), 0);
        /* Offered again 1 % higher, not at every page. */
        ASSERT_EQ(oomlog_peak_threshold(l), accounting_current_pages(a) + accounting_current_pages(a) / 100);
        /* After it: taken. */
        ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a), t0 + OOMLOG_PEAK_INTERVAL_USEC), 1);
        /* Later, but less than 10 % above the last: not taken. */
        synthetic_alloc(a, 100, 0x300000, 0, SYNTHETIC_KERNEL);
        ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a), t0 + 3 * OOMLOG_PEAK_INTERVAL_USEC), 0);

        json_auto_t *reply = oomlog_json(l);
        json_t *peaks = json_object_get(reply, "peakSnapshots");
        ASSERT_EQ(json_array_size(peaks), 2u);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(json_array_get(peaks, 1), "holders"),
                                                     "trackedPages")), 87 + 64);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(peaks, 0), "timestampUsec")), (json_int_t) t0);

        /* The ring of peaks is bounded too. */
        for (int i = 0; i < OOMLOG_PEAKS_MAX + 3; i++) {
                /* At least 1/8 more: above the growth threshold whatever the total. */
                uint32_t order = 0;
                while ((UINT64_C(1) << order) < accounting_current_pages(a) / 8 + 1)
                        order++;
                synthetic_alloc(a, 100, (uint64_t) (i + 1) << 24, order, SYNTHETIC_KERNEL);
                ASSERT_EQ(oomlog_offer_peak(l, a, NULL, accounting_current_pages(a),
                                            t0 + (uint64_t) (4 + i) * OOMLOG_PEAK_INTERVAL_USEC), 1);
        }
        json_auto_t *full = oomlog_json(l);
        ASSERT_EQ(json_array_size(json_object_get(full, "peakSnapshots")), (size_t) OOMLOG_PEAKS_MAX);
        ASSERT_EQ(json_integer_value(json_object_get(full, "peakSnapshotsTaken")), 2 + OOMLOG_PEAKS_MAX + 3);
        accounting_free(a);
        ksym_free(ksym);
}

int main(void) {
        test_decode_and_snapshot();
        test_pid_only();
        test_ring_bounds();
        test_peaks();
        printf("test-oomlog: ok\n");
        return 0;
}
