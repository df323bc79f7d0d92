/* SPDX-License-Identifier: MIT */

/*
 * What the heap formats build on, on hand-made recorded heaps: which processes report/heap-select.c
 * shows in full (the command's, the share of the total maximum, --all, --process by pid, by name and by
 * a comm the kernel cut, --task), which file says who the command was, and the table's order; and which
 * frame report/heap-sites.c makes a stack's call site (wrappers passed over, inlined ones too, frames
 * without a name, the C runtime's entry frames, --keep-frames, --fold-frame), equal sites added up.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "heap-select.h"
#include "heap-sites.h"
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

/* ---- Call sites --------------------------------------------------------------------------------------- */

/* A HeapNode: its frame text, function, file and line (NULL, 0: none), inlinedInto (stolen, NULL: none),
 * bytes at the maximum (a leaf's are its own) and children (stolen). */
static json_t *frame(const char *text, const char *function, const char *file, int line, json_t *inlined,
                json_int_t bytes, json_t *children) {
        json_t *n = json_pack("{s:s, s:s?, s:s?, s:o, s:o, s:I, s:I, s:o}", "frame", text, "function", function,
                              "file", file, "line", line > 0 ? json_integer(line) : json_null(), "inlinedInto",
                              inlined ?: json_array(), "maxBytes", bytes, "maxBlocks", (json_int_t) 1, "children",
                              children ?: json_array());
        ASSERT_NOT_NULL(n);
        return n;
}

/* The top call site's label under o, with its bytes. */
static void assert_top_site(json_t *root, const ReportOptions *o, const char *want, uint64_t bytes) {
        json_auto_t *h = json_pack("{s:O}", "root", root);
        _cleanup_(heap_sites_done) HeapSites c = {};

        ASSERT_OK(heap_sites_collect(h, false, o, &c));
        ASSERT_GE(c.n, 1);
        _cleanup_free_ char *label = heap_site_label(&c.sites[0]);
        ASSERT_STREQ(label, want);
        ASSERT_EQ(c.sites[0].bytes, bytes);
}

/* _start > __libc_start_call_main (a line of the C library's) > main: the program's frames above. */
static json_t *program(json_t *below, json_int_t bytes) {
        return frame("[heap pid 1 p]", NULL, NULL, 0, NULL, bytes, json_pack("[o]",
                frame("_start+0x21", "_start", NULL, 0, NULL, bytes, json_pack("[o]",
                frame("__libc_start_call_main+0x7a", "__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h",
                      58, NULL, bytes, json_pack("[o]", below))))));
}

static void test_sites_wrappers(void) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        const char *const fold[] = { "helper", "my_*" };

        /* main (a line) > helper (none) > xmalloc (a line of its own): the caller's line, as without wrappers
         * a library without debug information gives way to its caller's line. */
        json_auto_t *wrapped = program(frame("main+0x10", "main", "m.c", 5, NULL, 100, json_pack("[o]",
                frame("helper+0x8", "helper", NULL, 0, NULL, 100, json_pack("[o]",
                frame("xmalloc+0x4", "xmalloc", "x.c", 3, NULL, 100, NULL))))), 100);
        assert_top_site(wrapped, &o, "main  m.c:5", 100);
        o.keep_frames = true;
        assert_top_site(wrapped, &o, "xmalloc  x.c:3", 100);
        /* --fold-frame by name and by pattern; with --keep-frames too. */
        o.fold_frames = fold;
        o.n_fold_frames = 1;
        assert_top_site(wrapped, &o, "xmalloc  x.c:3", 100);
        o.keep_frames = false;
        json_auto_t *pool = program(frame("main+0x10", "main", "m.c", 7, NULL, 50, json_pack("[o]",
                frame("my_pool_get+0x4", "my_pool_get", "pool.c", 20, NULL, 50, NULL))), 50);
        assert_top_site(pool, &o, "my_pool_get  pool.c:20", 50);
        o.n_fold_frames = 2;
        assert_top_site(pool, &o, "main  m.c:7", 50);
}

static void test_sites_names(void) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;

        /* glibc's alias and a clone suffix name the listed function; the symbol does when DWARF has none. */
        json_auto_t *alias = program(frame("main+0x10", "main", "m.c", 9, NULL, 30, json_pack("[o]",
                frame("__strdup+0x1a", "__GI___strdup", "./string/strdup.c", 42, NULL, 30, NULL))), 30);
        assert_top_site(alias, &o, "main  m.c:9", 30);
        json_auto_t *clone = program(frame("main+0x10", "main", "m.c", 11, NULL, 40, json_pack("[o]",
                frame("xmalloc.constprop.0+0x4", "xmalloc.constprop.0", NULL, 0, NULL, 40, NULL))), 40);
        assert_top_site(clone, &o, "main  m.c:11", 40);
        json_auto_t *symbol = program(frame("main+0x10", "main", "m.c", 13, NULL, 60, json_pack("[o]",
                frame("_ZnamSt11align_val_t+0x9", NULL, NULL, 0, NULL, 60, NULL))), 60);
        assert_top_site(symbol, &o, "main  m.c:13", 60);
        o.keep_frames = true;
        assert_top_site(symbol, &o, "_ZnamSt11align_val_t+0x9", 60);
}

static void test_sites_inlined(void) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;

        /* ld.so's calloc inlined into allocate_dtv: the function it was inlined into, at the line of the call. */
        json_auto_t *inl = program(frame("allocate_dtv+0x30", "calloc", "../include/rtld-malloc.h", 44,
                json_pack("[{s:s, s:s, s:i}]", "function", "allocate_dtv", "file", "../elf/dl-tls.c", "line", 401), 70,
                NULL), 70);
        assert_top_site(inl, &o, "allocate_dtv  ../elf/dl-tls.c:401", 70);
        o.keep_frames = true;
        assert_top_site(inl, &o, "calloc  ../include/rtld-malloc.h:44 (inlined into allocate_dtv  ../elf/dl-tls.c:401)",
                        70);
}

static void test_sites_no_lines(void) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;

        /* A program without debug information under a C library with it (Debian's python3): its innermost
         * named function, not the C library's entry frame with its line. */
        json_auto_t *py = program(frame("Py_BytesMain+0x2d", "Py_BytesMain", NULL, 0, NULL, 80, json_pack("[o]",
                frame("PyList_New+0x13a", "PyList_New", NULL, 0, NULL, 80, json_pack("[o]",
                frame("_PyObject_GC_New+0x17c", "_PyObject_GC_New", NULL, 0, NULL, 80, json_pack("[o]",
                frame("[user] 0x4fb720", NULL, NULL, 0, NULL, 80, NULL))))))), 80);
        assert_top_site(py, &o, "PyList_New", 80);
        o.keep_frames = true;
        assert_top_site(py, &o, "_PyObject_GC_New", 80);
        o.keep_frames = false;
        /* Nothing named but the entry frames: the innermost of them; nothing at all: the frame itself. */
        json_auto_t *stripped = program(frame("[user] 0x1", NULL, NULL, 0, NULL, 90, NULL), 90);
        assert_top_site(stripped, &o, "__libc_start_call_main  ../sysdeps/nptl/libc_start_call_main.h:58", 90);
        json_auto_t *unsampled = frame("[heap pid 1 p]", NULL, NULL, 0, NULL, 10, json_pack("[o]",
                frame("[not sampled]", NULL, NULL, 0, NULL, 10, NULL)));
        assert_top_site(unsampled, &o, "[not sampled]", 10);
}

static void test_sites_merged(void) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;

        /* One line calling two wrappers in two stacks: one site of both's bytes, before a bigger other. */
        json_auto_t *two = program(frame("main+0x10", "main", "m.c", 20, NULL, 350, json_pack("[o, o, o]",
                frame("g_malloc+0x19", "g_malloc", NULL, 0, NULL, 100, NULL),
                frame("g_strdup+0x1d", "g_strdup", NULL, 0, NULL, 150, json_pack("[o]",
                        frame("g_malloc+0x19", "g_malloc", NULL, 0, NULL, 150, NULL))),
                frame("other+0x3", "other", "m.c", 30, NULL, 100, NULL))), 350);
        assert_top_site(two, &o, "main  m.c:20", 250);
        o.keep_frames = true;
        assert_top_site(two, &o, "g_malloc", 250);
}

int main(void) {
        TEST(test_sites_wrappers);
        TEST(test_sites_names);
        TEST(test_sites_inlined);
        TEST(test_sites_no_lines);
        TEST(test_sites_merged);
        TEST(test_default);
        TEST(test_choices);
        TEST(test_command);
        TEST(test_order);
        return 0;
}
