/* SPDX-License-Identifier: MIT */

/*
 * Pressure records (daemon/api/pressure-watch.c, oomlog.c): the trigger syntax, the margin arithmetic,
 * PSI averages; then the watcher over a synthetic core and memory cgroups of files in a temporary
 * directory: a unit within the margin of its limit gets one record (with its Explain view) per interval, one
 * far from it none, a cgroup2 memory.high counts before memory.max, and the system's pressure past the
 * threshold gets a record of its own.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "pressure-watch.h"
#include "synthetic-events.h"
#include "tests.h"

static void test_parse(void) {
        bool full;
        uint64_t stall, window, limit;
        double avg;

        ASSERT_OK(pressure_trigger_parse("some 150000 1000000", &full, &stall, &window));
        ASSERT_TRUE(!full);
        ASSERT_EQ(stall, 150000);
        ASSERT_EQ(window, 1000000);
        ASSERT_OK(pressure_trigger_parse("full 1 500000", &full, &stall, &window));
        ASSERT_TRUE(full);
        ASSERT_EQ(pressure_trigger_parse("some 150000", &full, &stall, &window), -EINVAL);
        ASSERT_EQ(pressure_trigger_parse("most 1 1000000", &full, &stall, &window), -EINVAL);
        ASSERT_EQ(pressure_trigger_parse("some 2000000 1000000", &full, &stall, &window), -EINVAL);
        ASSERT_EQ(pressure_trigger_parse("some 1 100000", &full, &stall, &window), -EINVAL);      /* window < 0.5 s */
        ASSERT_EQ(pressure_trigger_parse("some 1 1000000 x", &full, &stall, &window), -EINVAL);

        /* 10 % of 100 MiB: from 90 MiB on. */
        ASSERT_NULL(pressure_limit_crossed(90 * 1048576 - 1, 100 * 1048576, MEMCG_UNLIMITED, 10, &limit));
        ASSERT_STREQ(pressure_limit_crossed(90 * 1048576, 100 * 1048576, MEMCG_UNLIMITED, 10, &limit), "max");
        ASSERT_EQ(limit, 100 * 1048576);
        /* high is the lower one in use: it counts first. */
        ASSERT_STREQ(pressure_limit_crossed(60 * 1048576, 100 * 1048576, 64 * 1048576, 10, &limit), "high");
        ASSERT_EQ(limit, 64 * 1048576);
        ASSERT_NULL(pressure_limit_crossed(UINT64_MAX - 1, MEMCG_UNLIMITED, MEMCG_UNLIMITED, 10, &limit));
        ASSERT_STREQ(pressure_limit_crossed(UINT64_MAX - 1, UINT64_MAX - 2, MEMCG_UNLIMITED, 0, &limit), "max");

        ASSERT_OK(pressure_avg10("some avg10=12.50 avg60=1.00 avg300=0.00 total=1\nfull avg10=3.25 avg60=0.00 "
                                 "avg300=0.00 total=1\n", true, &avg));
        ASSERT_TRUE(avg == 3.25);
        ASSERT_OK(pressure_avg10("some avg10=12.50 avg60=1.00 avg300=0.00 total=1\n", false, &avg));
        ASSERT_TRUE(avg == 12.5);
        ASSERT_EQ(pressure_avg10("some total=1\n", false, &avg), -EINVAL);
        ASSERT_EQ(pressure_avg10("", true, &avg), -EINVAL);
}

static char root[] = "/tmp/test-pressure-XXXXXX";

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *path = NULL;
        ASSERT_TRUE(asprintf(&path, "%s/%s%s%s", root, dir, *dir ? "/" : "", name) > 0);
        FILE *f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        fputs(text, f);
        ASSERT_EQ(fclose(f), 0);
}

static void make_dir(const char *dir) {
        _cleanup_free_ char *path = NULL;
        ASSERT_TRUE(asprintf(&path, "%s/%s", root, dir) > 0);
        ASSERT_EQ(mkdir(path, 0755), 0);
}

static void nothing(void *userdata) {
        (void) userdata;
}

/* Units tight.service (1001, alpha), web.service (1002) and session-3.scope (1003) from synthetic-events.h. */
static void test_watch(void) {
        _cleanup_(memcg_freep) Memcg *v1 = NULL, *v2 = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(oomlog_freep) OomLog *log = oomlog_new();
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        PressureWatch *w = NULL;

        ASSERT_NOT_NULL(log);
        ASSERT_OK(sd_event_new(&event));
        ASSERT_OK(accounting_new(&c, NULL, &a));
        synthetic_scene(a);
        ASSERT_NOT_NULL(mkdtemp(root));
        /* v1: alpha.service at 95 % of its limit, web.service at 50 %. */
        make_dir("v1");
        make_dir("v1/system.slice");
        make_dir("v1/system.slice/alpha.service");
        make_dir("v1/system.slice/web.service");
        write_file("v1/system.slice/alpha.service", "memory.usage_in_bytes", "99614720\n");
        write_file("v1/system.slice/alpha.service", "memory.limit_in_bytes", "104857600\n");
        write_file("v1/system.slice/web.service", "memory.usage_in_bytes", "52428800\n");
        write_file("v1/system.slice/web.service", "memory.limit_in_bytes", "104857600\n");
        write_file("", "pressure", "some avg10=2.00 avg60=1.00 avg300=0.00 total=100\n"
                                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=10\n");
        _cleanup_free_ char *v1_root = NULL, *pressure = NULL;
        ASSERT_TRUE(asprintf(&v1_root, "%s/v1", root) > 0);
        ASSERT_TRUE(asprintf(&pressure, "%s/pressure", root) > 0);
        ASSERT_OK(memcg_new("data/memcg/unified", v1_root, &v1));

        PressureWatchConfig config = {
                .event = event,
                .log = log,
                .accounting = a,
                .memcg = v1,
                .page_size = 4096,
                .margin_percent = 10,
                .trigger = "some 300000 2000000",       /* 15 % */
                .system_pressure = pressure,
                .interval_usec = 3600 * UINT64_C(1000000),
                .flush_source = nothing,
                .name_units = nothing,
        };
        ASSERT_OK(pressure_watch_new(&config, &w));
        /* A regular file takes the trigger but cannot be polled: averages. */
        json_auto_t *oom = oomlog_json(log);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(oom, "pressureWatch"), "psi")), "averages");

        pressure_watch_check(w);
        pressure_watch_check(w);        /* within the interval: nothing more */
        json_decref(oom);
        oom = oomlog_json(log);
        ASSERT_EQ(json_integer_value(json_object_get(oom, "pressureRecordsTaken")), 1);
        const json_t *rec = json_array_get(json_object_get(oom, "pressureRecords"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(rec, "reason")), "limit");
        ASSERT_STREQ(json_string_value(json_object_get(rec, "unit")), "alpha.service");
        ASSERT_STREQ(json_string_value(json_object_get(rec, "limit")), "max");
        ASSERT_EQ(json_integer_value(json_object_get(rec, "currentBytes")), 99614720);
        ASSERT_EQ(json_integer_value(json_object_get(rec, "limitBytes")), 104857600);
        ASSERT_EQ(json_integer_value(json_object_get(rec, "marginPercent")), 10);
        const json_t *explain = json_object_get(rec, "explain");
        ASSERT_STREQ(json_string_value(json_object_get(explain, "name")), "alpha.service");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(explain, "kernel"), "currentBytes")), 99614720);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(rec, "holders"), "trackedPages")), 15);

        /* The system's pressure past 15 %: a record without a unit, quoting the line. */
        write_file("", "pressure", "some avg10=31.25 avg60=4.00 avg300=1.00 total=999\n"
                                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=10\n");
        pressure_watch_check(w);
        json_decref(oom);
        oom = oomlog_json(log);
        ASSERT_EQ(json_integer_value(json_object_get(oom, "pressureRecordsTaken")), 2);
        rec = json_array_get(json_object_get(oom, "pressureRecords"), 1);
        ASSERT_STREQ(json_string_value(json_object_get(rec, "reason")), "pressure");
        ASSERT_TRUE(json_is_null(json_object_get(rec, "unit")));
        ASSERT_TRUE(json_is_null(json_object_get(rec, "explain")));
        ASSERT_STREQ(json_string_value(json_object_get(rec, "pressure")), "some avg10=31.25 avg60=4.00 avg300=1.00 total=999");
        ASSERT_OK(oomlog_log_pressure(rec, false, NULL, 4096));
        pressure_watch_free(w);

        /* cgroup2: memory.high first. */
        make_dir("v2");
        write_file("v2", "cgroup.controllers", "cpu memory\n");
        make_dir("v2/system.slice");
        make_dir("v2/system.slice/web.service");
        write_file("v2/system.slice/web.service", "memory.current", "62914560\n");
        write_file("v2/system.slice/web.service", "memory.max", "max\n");
        write_file("v2/system.slice/web.service", "memory.high", "67108864\n");
        _cleanup_free_ char *v2_root = NULL;
        ASSERT_TRUE(asprintf(&v2_root, "%s/v2", root) > 0);
        ASSERT_OK(memcg_new(NULL, v2_root, &v2));
        config.memcg = v2;
        config.trigger = NULL;
        ASSERT_OK(pressure_watch_new(&config, &w));
        pressure_watch_check(w);
        json_decref(oom);
        oom = oomlog_json(log);
        ASSERT_EQ(json_integer_value(json_object_get(oom, "pressureRecordsTaken")), 3);
        rec = json_array_get(json_object_get(oom, "pressureRecords"), 2);
        ASSERT_STREQ(json_string_value(json_object_get(rec, "unit")), "web.service");
        ASSERT_STREQ(json_string_value(json_object_get(rec, "limit")), "high");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(oom, "pressureWatch"), "psi")), "off");
        pressure_watch_free(w);

        ASSERT_EQ(pressure_watch_new(&(PressureWatchConfig) { .event = event, .log = log, .accounting = a,
                                                              .trigger = "sometimes", .flush_source = nothing,
                                                              .name_units = nothing }, &w), -EINVAL);
        accounting_free(a);
        _cleanup_free_ char *rm = NULL;
        ASSERT_TRUE(asprintf(&rm, "rm -rf '%s'", root) > 0);
        ASSERT_EQ(system(rm), 0);
}

int main(void) {
        TEST(test_parse);
        TEST(test_watch);
        return 0;
}
