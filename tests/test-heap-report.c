/* SPDX-License-Identifier: MIT */

/*
 * What the heap formats build on, on hand-made recorded heaps: which processes report/heap-select.c
 * shows in full (the command's, the share of the total maximum, --all, --process by pid, by name and by
 * a comm the kernel cut, --task), which file says who the command was, and the table's order.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "heap-select.h"
#include "macro.h"
#include "report.h"
#include "tests.h"

/* A HeapImage: pid, serial, comm, peak bytes, and a root with a sampled child or only "[not sampled]". */
static json_t *heap(int pid, int serial, const char *comm, json_int_t peak, bool sampled) {
        return json_pack("{s:i, s:i, s:s, s:s, s:I, s:I, s:{s:s, s:I, s:[{s:s, s:I, s:[]}]}}", "pid", pid, "serial",
                         serial, "comm", comm, "cmdline", comm, "peakBytes", peak, "liveBytes", peak / 2, "root",
                         "frame", "[heap]", "maxBytes", peak, "children", "frame",
                         sampled ? "main+0x10" : "[not sampled]", "maxBytes", peak, "children");
}

/* A record's document: its page tree empty, heaps of a shell (the command, 100 pid), a helper, a big
 * program and one whose comm the kernel cut; with or without the command's pid. */
static json_t *recording(bool with_command) {
        json_t *doc = json_pack("{s:{s:{s:I, s:[]}}, s:{s:[o, o, o, o]}}", "stackTree", "root", "currentPages",
                                (json_int_t) 0, "children", "heap", "heaps",
                                heap(100, 0, "build.sh", 6000, false),
                                heap(101, 1, "sed", 40000, false),
                                heap(102, 2, "cc1", 900000, true),
                                heap(103, 3, "a-very-long-pro", 100000, true));
        ASSERT_NOT_NULL(doc);
        if (with_command)
                ASSERT_OK(json_object_set_new(doc, "heapCommandPid", json_integer(100)));
        return doc;
}

/* The pids shown in full, in document order, as "100 102". */
static void assert_shown(json_t *doc, const ReportOptions *o, const char *want) {
        HeapSelection s;
        char got[128] = "";
        json_t *h;
        size_t i;

        heap_selection_init(doc, o, &s);
        json_array_foreach(s.heaps, i, h)
                if (heap_selection_shows(&s, h))
                        (void) snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lld", got[0] ? " " : "",
                                        (long long) json_integer_value(json_object_get(h, "pid")));
        ASSERT_STREQ(got, want);
}

static void test_default(void) {
        json_auto_t *doc = recording(true);
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        HeapSelection s;

        /* Total 1046000: cc1 86 %, the long one 9.6 %, below 10 %; the command whatever it holds. */
        assert_shown(doc, &o, "100 102");
        heap_selection_init(doc, &o, &s);
        ASSERT_EQ(s.command_pid, 100);
        ASSERT_TRUE(s.command_pid_recorded);
        ASSERT_EQ(s.total_peak_bytes, 1046000);
        ASSERT_EQ(heap_selection_hidden(&s), 2);
        /* At the share exactly: in. 100000 / 1046000 is 9.56 %: in at 9, out at 10. */
        o.heap_min_share = 9;
        assert_shown(doc, &o, "100 102 103");
        o.heap_min_share = 100;
        assert_shown(doc, &o, "100");
        o.heap_min_share = 1;
        assert_shown(doc, &o, "100 101 102 103");
}

static void test_choices(void) {
        json_auto_t *doc = recording(true);
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        const char *const words[] = { "sed,102", "a-very-long-program-name" };
        const char *const missing[] = { "sed", "cc1,nope,103" };
        HeapSelection s;
        size_t len = 0;

        o.heap_all = true;
        assert_shown(doc, &o, "100 101 102 103");
        o.heap_all = false;
        /* Pids and names, a comma list and the option again; a name longer than the kernel keeps. */
        o.heap_processes = words;
        o.n_heap_processes = ELEMENTSOF(words);
        assert_shown(doc, &o, "101 102 103");
        heap_selection_init(doc, &o, &s);
        ASSERT_NULL(heap_selection_unmatched(&s, &len));
        o.heap_processes = missing;
        o.n_heap_processes = ELEMENTSOF(missing);
        heap_selection_init(doc, &o, &s);
        const char *word = heap_selection_unmatched(&s, &len);
        ASSERT_NOT_NULL(word);
        ASSERT_EQ(len, 4);
        ASSERT_TRUE(strncmp(word, "nope", len) == 0);
        /* --task wins over all of them. */
        o.pid = 101;
        assert_shown(doc, &o, "101");
}

static void test_command(void) {
        json_auto_t *old = recording(false), *daemon = recording(false);
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        HeapSelection s;

        /* A record's file from before heapCommandPid: the first heap. */
        heap_selection_init(old, &o, &s);
        ASSERT_EQ(s.command_pid, 100);
        ASSERT_TRUE(!s.command_pid_recorded);
        /* A daemon's document (pages traced too): no command at all, the share alone. */
        ASSERT_OK(json_object_set_new(json_object_get(json_object_get(daemon, "stackTree"), "root"), "currentPages",
                                      json_integer(5)));
        heap_selection_init(daemon, &o, &s);
        ASSERT_EQ(s.command_pid, -1);
        assert_shown(daemon, &o, "102");
}

static void test_order(void) {
        json_auto_t *doc = recording(true);
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        _cleanup_free_ json_t **rows = NULL;
        HeapSelection s;
        size_t n;

        heap_selection_init(doc, &o, &s);
        ASSERT_OK(heap_selection_by_peak(&s, &rows, &n));
        ASSERT_EQ(n, 4);
        ASSERT_EQ(json_integer_value(json_object_get(rows[0], "pid")), 102);
        ASSERT_EQ(json_integer_value(json_object_get(rows[1], "pid")), 103);
        ASSERT_EQ(json_integer_value(json_object_get(rows[3], "pid")), 100);
        ASSERT_TRUE(heap_is_sampled(rows[0]));
        ASSERT_TRUE(!heap_is_sampled(rows[3]));
}

int main(void) {
        test_default();
        test_choices();
        test_command();
        test_order();
        return 0;
}
