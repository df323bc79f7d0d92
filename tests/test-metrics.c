/* SPDX-License-Identifier: MIT */

/*
 * memstrack-metrics' renderer on fixed replies: format negotiation, escaping of names that are not
 * text, the top-N bound, the "[other]" remainder adding up to the total, and the framing each format
 * wants (# UNIT and # EOF for OpenMetrics only).
 *
 * With --write DIR it also writes the fixture's exposition in both formats to DIR/fixture.prom and
 * DIR/fixture.om, for test-metrics-promtool.sh to give to promtool.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "macro.h"
#include "render.h"
#include "tests.h"

/* pageSize 4096. Tasks: six holders (one listed twice, one holding nothing) whose names need escaping.
 * Tracked 1000 pages: the listed tasks hold 100+50+30+20+10 = 210 of them (in order of the reply). */
static const char STATUS_JSON[] =
        "{\"backend\": \"perf\", \"backendReason\": \"asked for\", \"version\": \"0.1.0\", \"uptimeUsec\": 93000001,"
        " \"events\": 4100000, \"lostEvents\": 7, \"lostByReason\": [{\"reason\": \"perfLost\", \"count\": 7},"
        " {\"reason\": \"stackFailed\", \"count\": 2}, {\"reason\": \"perfLost\", \"count\": 9}],"
        " \"trackedPages\": 990, \"peakTrackedPages\": 1500, \"baselinePages\": 300, \"untrackedFrees\": 11,"
        " \"invalidEvents\": 0, \"saturatedEvents\": 2, \"daemonMemoryBytes\": 15000000, \"stackNodes\": 1234, \"stackNodeBudget\": 1048576,"
        " \"stacksTruncated\": 3, \"tasksEvicted\": 4, \"pageSize\": 4096}";

static const char TOP_JSON[] =
        "{\"timestampUsec\": 1, \"trackedPages\": 1000, \"peakTrackedPages\": 1500, \"uptimeUsec\": 1,"
        " \"eventsPerSecond\": 1.5, \"lostEvents\": 7, \"stacksTruncated\": 3,"
        " \"tasks\": ["
        "  {\"pid\": 10, \"comm\": \"say \\\"hi\\\"\", \"currentPages\": 100, \"peakPages\": 120},"
        "  {\"pid\": 11, \"comm\": \"back\\\\slash\", \"currentPages\": 50, \"peakPages\": 50},"
        "  {\"pid\": 12, \"comm\": \"two\\nlines\", \"currentPages\": 30, \"peakPages\": 30},"
        "  {\"pid\": 13, \"comm\": \"bad\\\\xff\\u001b[31m\", \"currentPages\": 20, \"peakPages\": 20},"
        "  {\"pid\": 10, \"comm\": \"say \\\"hi\\\"\", \"currentPages\": 10, \"peakPages\": 10},"
        "  {\"pid\": 14, \"comm\": \"idle\", \"currentPages\": 0, \"peakPages\": 5},"
        "  {\"pid\": 15, \"comm\": \"beyond the limit\", \"currentPages\": 5, \"peakPages\": 5}],"
        " \"evicted\": {\"tasks\": 0, \"currentPages\": 0, \"peakPages\": 0},"
        " \"modules\": [],"
        " \"units\": ["
        "  {\"name\": \"sshd.service\", \"cgroup\": \"/system.slice/sshd.service\", \"currentPages\": 600},"
        "  {\"name\": \"[unknown]\", \"cgroup\": null, \"currentPages\": 300}]}";

static const char MODULES_JSON[] =
        "{\"modules\": [{\"name\": \"vmlinux\", \"currentPages\": 900, \"peakPages\": 1400, \"loaded\": true},"
        " {\"name\": \"ext4\", \"currentPages\": 200, \"peakPages\": 250, \"loaded\": true},"
        " {\"name\": \"gone\", \"currentPages\": 0, \"peakPages\": 9, \"loaded\": false}]}";

/* ExplainUnits of the listed units (sshd.service with v1-like figures: no high, no slab) and the
 * breakdowns of all pages: nodes with and without a zone, GFP flags with a remainder. */
static const char EXPLAIN_UNITS_JSON[] =
        "{\"units\": [{\"name\": \"sshd.service\", \"cgroup\": \"/system.slice/sshd.service\", \"live\": true,"
        " \"aliveBytes\": 2400000, \"orphanedBytes\": 57600, \"aliveSlabBytes\": 1000, \"orphanedSlabBytes\": 2000,"
        " \"kernel\": {\"hierarchy\": \"v1\", \"path\": \"/sys/fs/cgroup/memory/system.slice/sshd.service\","
        " \"currentBytes\": 2600000, \"peakBytes\": 2700000, \"maxBytes\": 67108864, \"highBytes\": null,"
        " \"stat\": [{\"name\": \"anon\", \"bytes\": 2300000, \"source\": \"memory.stat total_rss\"},"
        " {\"name\": \"kernel\", \"bytes\": 300000, \"source\": \"memory.kmem.usage_in_bytes\"}],"
        " \"missing\": [\"high\", \"slab\"], \"events\": []}},"
        " {\"name\": \"[unknown]\", \"cgroup\": null, \"live\": true, \"aliveBytes\": 0, \"orphanedBytes\": 0,"
        " \"aliveSlabBytes\": 0, \"orphanedSlabBytes\": 0, \"kernel\": null}]}";

static const char *const BREAKDOWN_JSON[_METRICS_BY_MAX] = {
        [METRICS_BY_ORDER] = "{\"by\": \"order\", \"totalPages\": 1000, \"rows\": [{\"key\": \"0\", \"order\": 0,"
                             " \"pages\": 900}, {\"key\": \"3\", \"order\": 3, \"pages\": 100}], \"otherPages\": 0}",
        [METRICS_BY_MIGRATETYPE] = "{\"by\": \"migratetype\", \"totalPages\": 1000, \"rows\": [{\"key\": \"Movable\","
                                   " \"pages\": 700}, {\"key\": \"Unmovable\", \"pages\": 300}], \"otherPages\": 0}",
        [METRICS_BY_NODE] = "{\"by\": \"node\", \"totalPages\": 1000, \"rows\": [{\"key\": \"node 0 Normal\", \"node\": 0,"
                            " \"zone\": \"Normal\", \"pages\": 990}, {\"key\": \"[unknown]\", \"node\": null,"
                            " \"zone\": null, \"pages\": 10}], \"otherPages\": 0}",
        [METRICS_BY_GFP] = "{\"by\": \"gfp\", \"totalPages\": 1000, \"rows\": [{\"key\": \"GFP_HIGHUSER_MOVABLE|__GFP_ZERO\","
                           " \"pages\": 700}], \"otherPages\": 300}",
};

/* How many of the fixture's task entries the tests pass as top: the reply is cut after the fifth. */
#define FIXTURE_TOP 5

typedef struct Fixture {
        json_t *status, *top, *modules, *explain_units;
        json_t *breakdown[_METRICS_BY_MAX];
} Fixture;

static json_t *load(const char *s) {
        json_error_t e;
        json_t *j = json_loads(s, 0, &e);

        if (!j)
                fprintf(stderr, "fixture: %s at %d:%d\n", e.text, e.line, e.column);
        ASSERT_NOT_NULL(j);
        return j;
}

static Fixture fixture_new(void) {
        Fixture f = { load(STATUS_JSON), load(TOP_JSON), load(MODULES_JSON), load(EXPLAIN_UNITS_JSON), {} };
        for (MetricsBreakdown b = 0; b < _METRICS_BY_MAX; b++)
                f.breakdown[b] = load(BREAKDOWN_JSON[b]);
        return f;
}

static void fixture_done(Fixture *f) {
        json_decref(f->status);
        json_decref(f->top);
        json_decref(f->modules);
        json_decref(f->explain_units);
        for (MetricsBreakdown b = 0; b < _METRICS_BY_MAX; b++)
                json_decref(f->breakdown[b]);
}

static MetricsInput fixture_input(const Fixture *f) {
        MetricsInput in = { f->status, f->top, f->modules, f->explain_units, {} };
        for (MetricsBreakdown b = 0; b < _METRICS_BY_MAX; b++)
                in.breakdown[b] = f->breakdown[b];
        return in;
}

static char *render(const Fixture *f, MetricsFormat format, size_t top) {
        MetricsInput in = fixture_input(f);
        char *out = NULL;
        size_t size = 0;

        ASSERT_EQ(metrics_render(&in, format, top, &out, &size), 0);
        ASSERT_NOT_NULL(out);
        ASSERT_EQ(strlen(out), size);
        return out;
}

/* Whether text has this whole line. */
static bool has_line(const char *text, const char *line) {
        size_t len = strlen(line);

        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == 0))
                        return true;
        return false;
}

/* Sum and count of the samples whose line starts with prefix (the value is the line's last field). */
static uint64_t sum_samples(const char *text, const char *prefix, size_t *ret_n) {
        uint64_t sum = 0;
        size_t n = 0, len = strlen(prefix);

        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                if (strncmp(p, prefix, len) != 0)
                        continue;
                const char *end = strchr(p, '\n');
                const char *space = memrchr(p, ' ', (size_t) (end - p));
                ASSERT_NOT_NULL(space);
                sum += strtoull(space + 1, NULL, 10);
                n++;
        }
        if (ret_n)
                *ret_n = n;
        return sum;
}

static void test_accept(void) {
        ASSERT_EQ(metrics_format_from_accept(NULL), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept(""), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept("*/*"), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept("text/plain;version=0.0.4"), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept("application/openmetrics-text;version=1.0.0"), METRICS_FORMAT_OPENMETRICS);
        ASSERT_EQ(metrics_format_from_accept("application/openmetrics-text"), METRICS_FORMAT_OPENMETRICS);
        /* What Prometheus 2.x sends. */
        ASSERT_EQ(metrics_format_from_accept("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                             "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                  METRICS_FORMAT_OPENMETRICS);
        ASSERT_EQ(metrics_format_from_accept("Application/OpenMetrics-Text ; Version=1.0.0 ; q=0.9, text/plain"),
                  METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept("text/plain;q=0.5, application/openmetrics-text; q=0.6"),
                  METRICS_FORMAT_OPENMETRICS);
        /* A version we do not write, or q=0, is not accepted. */
        ASSERT_EQ(metrics_format_from_accept("application/openmetrics-text;version=2.0.0"), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept("application/openmetrics-text;q=0"), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept("application/openmetrics-text;q=0.000"), METRICS_FORMAT_PROMETHEUS);
        ASSERT_EQ(metrics_format_from_accept(",,;;=,application/openmetrics-text;=;q"), METRICS_FORMAT_OPENMETRICS);
        ASSERT_EQ(metrics_format_from_accept(";"), METRICS_FORMAT_PROMETHEUS);

        ASSERT_STREQ(metrics_content_type(METRICS_FORMAT_PROMETHEUS), "text/plain; version=0.0.4; charset=utf-8");
        ASSERT_STREQ(metrics_content_type(METRICS_FORMAT_OPENMETRICS),
                     "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

static void test_escaping(void) {
        Fixture f = fixture_new();
        _cleanup_free_ char *om = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);

        /* Quotes and backslashes escaped; the newline and ESC as memstrackctl shows them (\x0a, \x1b),
         * backslash-escaped again for the format; the daemon's \xff text stays text. */
        ASSERT_TRUE(has_line(om, "memstrack_task_bytes{pid=\"10\",comm=\"say \\\"hi\\\"\"} 450560"));
        ASSERT_TRUE(has_line(om, "memstrack_task_bytes{pid=\"11\",comm=\"back\\\\slash\"} 204800"));
        ASSERT_TRUE(has_line(om, "memstrack_task_bytes{pid=\"12\",comm=\"two\\\\x0alines\"} 122880"));
        ASSERT_TRUE(has_line(om, "memstrack_task_bytes{pid=\"13\",comm=\"bad\\\\xff\\\\x1b[31m\"} 81920"));
        /* No raw control character anywhere but the line ends. */
        for (const char *p = om; *p; p++)
                ASSERT_TRUE(*p == '\n' || (unsigned char) *p >= 0x20);
        fixture_done(&f);
}

static void test_bounds_and_other(void) {
        Fixture f = fixture_new();
        _cleanup_free_ char *om = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);
        _cleanup_free_ char *two = render(&f, METRICS_FORMAT_OPENMETRICS, 2);
        size_t n;

        ASSERT_TRUE(has_line(om, "memstrack_saturated_events_total 2"));
        /* Five entries asked for: pid 10 twice (one series holding both), pid 14 with nothing left out,
         * pid 15 beyond the limit: 4 named series and [other]. */
        ASSERT_EQ(sum_samples(om, "memstrack_task_bytes{", &n), 1000 * 4096);
        ASSERT_EQ(n, 5);
        ASSERT_TRUE(has_line(om, "memstrack_task_bytes{pid=\"[other]\",comm=\"[other]\"} 3235840"));
        ASSERT_TRUE(!strstr(om, "pid=\"14\""));
        ASSERT_TRUE(!strstr(om, "pid=\"15\""));
        /* The totals are Top's (1000 pages), not Status' (990): the lists add up to them. */
        ASSERT_TRUE(has_line(om, "memstrack_tracked_bytes 4096000"));

        ASSERT_EQ(sum_samples(two, "memstrack_task_bytes{", &n), 1000 * 4096);
        ASSERT_EQ(n, 3);
        ASSERT_EQ(sum_samples(two, "memstrack_unit_bytes{", &n), 1000 * 4096);
        ASSERT_EQ(n, 3);
        ASSERT_TRUE(has_line(two, "memstrack_unit_bytes{unit=\"[other]\"} 409600"));

        /* Every module holding pages, peaks beside them; a page counts in each module, so no remainder. */
        ASSERT_TRUE(has_line(om, "memstrack_module_bytes{module=\"vmlinux\"} 3686400"));
        ASSERT_TRUE(has_line(om, "memstrack_module_bytes{module=\"ext4\"} 819200"));
        ASSERT_TRUE(has_line(om, "memstrack_module_peak_bytes{module=\"ext4\"} 1024000"));
        ASSERT_TRUE(!strstr(om, "module=\"gone\""));

        /* A reason listed twice is one series (the first). */
        ASSERT_TRUE(has_line(om, "memstrack_lost_events_total{reason=\"perfLost\"} 7"));
        ASSERT_EQ(sum_samples(om, "memstrack_lost_events_total{", &n), 9);
        ASSERT_EQ(n, 2);

        /* A Top reply that lists more than it should is cut at top all the same. */
        json_t *tasks = json_object_get(f.top, "tasks");
        for (int i = 0; i < 3000; i++)
                ASSERT_EQ(json_array_append_new(tasks, json_pack("{s:i, s:s, s:i}", "pid", 1000 + i, "comm", "many",
                                                                 "currentPages", 0)), 0);
        for (size_t i = 0; i < json_array_size(tasks); i++)
                ASSERT_EQ(json_object_set_new(json_array_get(tasks, i), "currentPages", json_integer(1)), 0);
        _cleanup_free_ char *many = render(&f, METRICS_FORMAT_PROMETHEUS, 20);
        ASSERT_EQ(sum_samples(many, "memstrack_task_bytes{", &n), 1000 * 4096);
        ASSERT_EQ(n, 20); /* the first 20 entries: 19 pids (10 twice) and [other] */
        _cleanup_free_ char *most = render(&f, METRICS_FORMAT_PROMETHEUS, METRICS_TOP_MAX);
        ASSERT_EQ(sum_samples(most, "memstrack_task_bytes{", &n), 1000 * 4096);
        ASSERT_EQ(n, METRICS_TOP_MAX); /* 999 distinct pids (pid 10 twice) and [other] */

        /* More listed than the total (it cannot happen in one Top reply): [other] is 0, not negative. */
        ASSERT_EQ(json_object_set_new(f.top, "trackedPages", json_integer(2)), 0);
        _cleanup_free_ char *over = render(&f, METRICS_FORMAT_PROMETHEUS, 20);
        ASSERT_TRUE(has_line(over, "memstrack_task_bytes{pid=\"[other]\",comm=\"[other]\"} 0"));

        MetricsInput in = fixture_input(&f);
        char *out = NULL;
        size_t size;
        ASSERT_EQ(metrics_render(&in, METRICS_FORMAT_PROMETHEUS, 0, &out, &size), -EINVAL);
        ASSERT_EQ(metrics_render(&in, METRICS_FORMAT_PROMETHEUS, METRICS_TOP_MAX + 1, &out, &size), -EINVAL);
        ASSERT_NULL(out);
        fixture_done(&f);
}

static void test_framing(void) {
        Fixture f = fixture_new();
        _cleanup_free_ char *om = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);
        _cleanup_free_ char *prom = render(&f, METRICS_FORMAT_PROMETHEUS, FIXTURE_TOP);
        size_t len = strlen(om);

        ASSERT_TRUE(len > 6 && streq(om + len - 6, "# EOF\n"));
        ASSERT_TRUE(strstr(om, "# EOF") == om + len - 6);
        ASSERT_TRUE(has_line(om, "# TYPE memstrack_events counter"));
        ASSERT_TRUE(has_line(om, "memstrack_events_total 4100000"));
        ASSERT_TRUE(has_line(om, "# TYPE memstrack_tracked_bytes gauge"));
        ASSERT_TRUE(has_line(om, "# UNIT memstrack_tracked_bytes bytes"));
        ASSERT_TRUE(has_line(om, "# TYPE memstrack_source info"));
        ASSERT_TRUE(has_line(om, "memstrack_source_info{backend=\"perf\"} 1"));
        ASSERT_TRUE(has_line(om, "# UNIT memstrack_uptime_seconds seconds"));
        ASSERT_TRUE(has_line(om, "memstrack_uptime_seconds 93.000001"));
        ASSERT_TRUE(has_line(om, "memstrack_up 1"));

        ASSERT_TRUE(!strstr(prom, "# EOF"));
        ASSERT_TRUE(!strstr(prom, "# UNIT"));
        ASSERT_TRUE(!strstr(prom, " info\n"));
        ASSERT_TRUE(has_line(prom, "# TYPE memstrack_events_total counter"));
        ASSERT_TRUE(has_line(prom, "memstrack_events_total 4100000"));
        ASSERT_TRUE(has_line(prom, "# TYPE memstrack_source_info gauge"));
        ASSERT_TRUE(has_line(prom, "memstrack_source_info{backend=\"perf\"} 1"));
        ASSERT_TRUE(has_line(prom, "memstrack_evicted_tasks_total 4"));
        fixture_done(&f);
}

/* The explain figures of the listed units and the breakdowns of all pages, each key once, bounded. */
static void test_explain_and_breakdowns(void) {
        Fixture f = fixture_new();
        _cleanup_free_ char *prom = render(&f, METRICS_FORMAT_PROMETHEUS, FIXTURE_TOP);
        _cleanup_free_ char *om = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);
        size_t n;

        ASSERT_TRUE(has_line(prom, "memstrack_unit_held_bytes{unit=\"sshd.service\",holder=\"alive\",kind=\"pages\"} 2400000"));
        ASSERT_TRUE(has_line(prom, "memstrack_unit_held_bytes{unit=\"sshd.service\",holder=\"orphaned\",kind=\"pages\"} 57600"));
        ASSERT_TRUE(has_line(prom, "memstrack_unit_held_bytes{unit=\"sshd.service\",holder=\"orphaned\",kind=\"slab\"} 2000"));
        ASSERT_EQ(sum_samples(prom, "memstrack_unit_held_bytes{", &n), 2400000 + 57600 + 1000 + 2000);
        ASSERT_EQ(n, 8);                /* four per unit, [unknown] too */
        ASSERT_TRUE(has_line(prom, "memstrack_unit_kernel_bytes{unit=\"sshd.service\",figure=\"current\"} 2600000"));
        ASSERT_TRUE(has_line(prom, "memstrack_unit_kernel_bytes{unit=\"sshd.service\",figure=\"anon\"} 2300000"));
        (void) sum_samples(prom, "memstrack_unit_kernel_bytes{", &n);
        ASSERT_EQ(n, 3);                /* no kernel figures for [unknown] */
        ASSERT_TRUE(has_line(prom, "memstrack_unit_kernel_limit_bytes{unit=\"sshd.service\",limit=\"max\"} 67108864"));
        (void) sum_samples(prom, "memstrack_unit_kernel_limit_bytes{", &n);
        ASSERT_EQ(n, 1);                /* no high on v1 */

        ASSERT_TRUE(has_line(prom, "memstrack_pages_by_order_bytes{order=\"3\"} 409600"));
        ASSERT_EQ(sum_samples(prom, "memstrack_pages_by_order_bytes{", &n), 1000 * 4096);
        ASSERT_TRUE(has_line(prom, "memstrack_pages_by_migratetype_bytes{migratetype=\"Movable\"} 2867200"));
        ASSERT_TRUE(has_line(prom, "memstrack_pages_by_node_bytes{node=\"0\",zone=\"Normal\"} 4055040"));
        ASSERT_TRUE(has_line(prom, "memstrack_pages_by_node_bytes{node=\"[unknown]\",zone=\"\"} 40960"));
        ASSERT_TRUE(has_line(prom, "memstrack_pages_by_gfp_bytes{gfp=\"GFP_HIGHUSER_MOVABLE|__GFP_ZERO\"} 2867200"));
        ASSERT_TRUE(has_line(prom, "memstrack_pages_by_gfp_bytes{gfp=\"[other]\"} 1228800"));
        ASSERT_EQ(sum_samples(prom, "memstrack_pages_by_gfp_bytes{", &n), 1000 * 4096);
        ASSERT_TRUE(has_line(om, "# UNIT memstrack_pages_by_gfp_bytes bytes"));

        /* A memstrackd without them: the families are left out. */
        MetricsInput in = { f.status, f.top, f.modules, NULL, {} };
        _cleanup_free_ char *old = NULL;
        size_t size;
        ASSERT_EQ(metrics_render(&in, METRICS_FORMAT_PROMETHEUS, FIXTURE_TOP, &old, &size), 0);
        ASSERT_TRUE(!strstr(old, "memstrack_unit_held_bytes"));
        ASSERT_TRUE(!strstr(old, "memstrack_pages_by_order_bytes"));
        fixture_done(&f);
}

/* Idle bytes from Top's cold objects: per listed task and unit and state, the first of a key twice, none
 * beyond top; no family at all without them (memstrackd measures no access). */
static void test_idle(void) {
        Fixture f = fixture_new();
        _cleanup_free_ char *none = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);
        size_t n;

        ASSERT_TRUE(!strstr(none, "memstrack_task_idle_bytes"));
        ASSERT_TRUE(!strstr(none, "memstrack_unit_idle_bytes"));
        json_t *tasks = json_object_get(f.top, "tasks"), *units = json_object_get(f.top, "units");
        for (size_t i = 0; i < json_array_size(tasks); i++)
                ASSERT_EQ(json_object_set_new(json_array_get(tasks, i), "cold",
                                              json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "currentPages", 10,
                                                        "hotPages", 1, "warmPages", 2, "coldPages", 3 + (int) i,
                                                        "unknownPages", 4, "newerPages", 0)), 0);
        ASSERT_EQ(json_object_set_new(json_array_get(units, 0), "cold",
                                      json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "currentPages", 600, "hotPages",
                                                100, "warmPages", 0, "coldPages", 500, "unknownPages", 0,
                                                "newerPages", 0)), 0);
        ASSERT_EQ(json_object_set_new(json_array_get(units, 1), "cold", json_null()), 0);
        _cleanup_free_ char *om = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);
        ASSERT_TRUE(has_line(om, "memstrack_task_idle_bytes{pid=\"11\",comm=\"back\\\\slash\",state=\"cold\"} 16384"));
        /* pid 10 listed twice: its first entry's. */
        ASSERT_TRUE(has_line(om, "memstrack_task_idle_bytes{pid=\"10\",comm=\"say \\\"hi\\\"\",state=\"cold\"} 12288"));
        ASSERT_EQ(sum_samples(om, "memstrack_task_idle_bytes{", &n), (uint64_t) (1 + 2 + 4) * 4 * 4096 +
                  (uint64_t) (3 + 4 + 5 + 6) * 4096);
        ASSERT_EQ(n, 4 * 5);    /* pids 10, 11, 12, 13 within FIXTURE_TOP, five states each */
        ASSERT_TRUE(has_line(om, "memstrack_unit_idle_bytes{unit=\"sshd.service\",state=\"cold\"} 2048000"));
        ASSERT_TRUE(!strstr(om, "memstrack_unit_idle_bytes{unit=\"[unknown]\""));
        fixture_done(&f);
}

static void test_down(void) {
        MetricsInput in = {};
        _cleanup_free_ char *om = NULL, *prom = NULL;
        size_t size;

        /* memstrackd did not answer: up 0 and nothing else. */
        ASSERT_EQ(metrics_render(&in, METRICS_FORMAT_OPENMETRICS, 20, &om, &size), 0);
        ASSERT_STREQ(om, "# TYPE memstrack_up gauge\n"
                         "# HELP memstrack_up 1 if memstrackd answered this scrape, else 0 (and no other metric is written)\n"
                         "memstrack_up 0\n"
                         "# EOF\n");
        ASSERT_EQ(metrics_render(&in, METRICS_FORMAT_PROMETHEUS, 20, &prom, &size), 0);
        ASSERT_TRUE(has_line(prom, "memstrack_up 0"));
        ASSERT_TRUE(!strstr(prom, "memstrack_events"));

        /* A Status without its fields, and no Top: what is there, nothing made up. */
        json_auto_t *status = json_pack("{s:i}", "pageSize", 4096);
        _cleanup_free_ char *bare = NULL;
        in.status = status;
        ASSERT_EQ(metrics_render(&in, METRICS_FORMAT_OPENMETRICS, 20, &bare, &size), 0);
        ASSERT_TRUE(has_line(bare, "memstrack_up 1"));
        ASSERT_TRUE(!strstr(bare, "memstrack_task_bytes"));
        ASSERT_TRUE(!strstr(bare, "memstrack_events"));
}

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *path = NULL;
        FILE *f;

        ASSERT_TRUE(asprintf(&path, "%s/%s", dir, name) >= 0);
        f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        ASSERT_TRUE(fputs(text, f) >= 0);
        ASSERT_EQ(fclose(f), 0);
}

int main(int argc, char *argv[]) {
        if (argc == 3 && streq(argv[1], "--write")) {
                Fixture f = fixture_new();
                _cleanup_free_ char *om = render(&f, METRICS_FORMAT_OPENMETRICS, FIXTURE_TOP);
                _cleanup_free_ char *prom = render(&f, METRICS_FORMAT_PROMETHEUS, FIXTURE_TOP);
                write_file(argv[2], "fixture.om", om);
                write_file(argv[2], "fixture.prom", prom);
                fixture_done(&f);
                return 0;
        }
        TEST(test_accept);
        TEST(test_escaping);
        TEST(test_bounds_and_other);
        TEST(test_framing);
        TEST(test_explain_and_breakdowns);
        TEST(test_idle);
        TEST(test_down);
        return 0;
}
