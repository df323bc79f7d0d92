/* SPDX-License-Identifier: MIT */

/*
 * heap_processes, heap_maximum, heap_leaks and heap_lifetimes: user-space heaps (the Heap reply kept under "heap" in a snapshot
 * document) as memtrail prints them. heap_processes is a table of every heap recorded, biggest maximum first;
 * the other two show in full the heaps heap-select.h chooses (the command's and the biggest, by default): for
 * each, its call sites (the function that called the allocator, wrappers passed over: heap-sites.h), then
 * its stack tree, every frame kept, callers first, with
 * percentages of the heap's total, bytes, blocks ("Nx"), function and file:line; a heap with no sampled
 * stack gets one line of its exact totals instead. heap_maximum shows the heap as it stood when its live
 * bytes were highest; heap_leaks what was never freed (live now, for a heap still running), or, for a heap
 * report --at or --between rewrote (heap-moment.h), the heap at that moment or what that window allocated
 * and freed; heap_lifetimes the call sites blocks were freed at, by how long they lived, temporary ones
 * (freed on their thread before it allocated again, within 1 ms) first. A document without heaps says so;
 * --json gives null then.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-text.h"
#include "format-util.h"
#include "heap-select.h"
#include "heap-sites.h"
#include "report-format.h"
#include "macro.h"
#include "reply.h"
#include "report-select.h"

#define HEAP_DEPTH_MAX 255

/* The values of a view: at the maximum, or now. */
typedef struct HeapKeys {
        const char *bytes, *blocks, *error;
} HeapKeys;

static const HeapKeys keys_maximum = { "maxBytes", "maxBlocks", "maxErrorBytes" };
static const HeapKeys keys_now = { "currentBytes", "currentBlocks", "errorBytes" };

static json_t *doc_heaps(json_t *doc) {
        return reply_array(reply_object(doc, "heap"), "heaps");
}

/* ---- Text --------------------------------------------------------------------------------------------- */

static void print_size(FILE *f, uint64_t bytes, uint64_t blocks, uint64_t error) {
        char size[FORMAT_BUFFER_MAX], err[FORMAT_BUFFER_MAX];

        fprintf(f, "%s, %" PRIu64 "x", format_bytes(size, sizeof(size), bytes), blocks);
        if (error > 0)
                fprintf(f, ", +-%s", format_bytes(err, sizeof(err), error));
}

typedef struct HeapChildItem {
        const json_t *node;
        uint64_t key;
        size_t index;
} HeapChildItem;

static int compare_child_items(const void *a, const void *b) {
        const HeapChildItem *x = a, *y = b;
        if (x->key != y->key)
                return x->key > y->key ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

static int print_tree(FILE *f, const json_t *node, const HeapKeys *k, const ReportOptions *o, uint64_t total,
                char *prefix, size_t prefix_len, bool last, unsigned depth) {
        uint64_t bytes = reply_count(node, k->bytes);
        _cleanup_free_ char *label = report_heap_frame_label(node), *clean = label ? format_sanitize(label) : NULL;
        json_t *children = reply_array(node, "children"), *child;
        size_t n = json_array_size(children), i, kept = 0;
        int r;

        if (!clean)
                return -ENOMEM;
        fprintf(f, "%.*s%s%6.2f%% (", (int) prefix_len, prefix, depth == 0 ? "" : last ? "`-> " : "+-> ",
                total > 0 ? 100.0 * (double) bytes / (double) total : 0.0);
        print_size(f, bytes, reply_count(node, k->blocks), reply_count(node, k->error));
        fprintf(f, ") %s\n", clean);

        if ((o->max_depth >= 0 && depth >= (unsigned) o->max_depth) || depth >= HEAP_DEPTH_MAX)
                return 0;
        _cleanup_free_ HeapChildItem *items = calloc(MAX(n, (size_t) 1), sizeof(HeapChildItem));
        if (!items)
                return -ENOMEM;
        size_t m = 0;
        json_array_foreach(children, i, child) {
                uint64_t v = reply_count(child, k->bytes);
                if (v > 0)
                        items[m++] = (HeapChildItem) { child, v, i };
        }
        qsort(items, m, sizeof(HeapChildItem), compare_child_items);
        /* memstrack's throttle: children while those taken hold less than that share of this node. */
        uint64_t limit = bytes / 100 * o->throttle + (bytes % 100 * o->throttle + 99) / 100, taken = 0;
        for (i = 0; i < m && taken < limit && (o->top == 0 || i < o->top); i++)
                taken += items[i].key, kept++;
        size_t child_len = prefix_len;
        if (depth > 0) {
                memcpy(prefix + prefix_len, last ? "    " : "|   ", 4);
                child_len += 4;
        }
        for (i = 0; i < kept; i++) {
                r = print_tree(f, items[i].node, k, o, total, prefix, child_len, i + 1 == kept, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

#define HEAP_GROWTH_SHOWN 8

/* "live bytes over time: SIZE at T s, ..." from the heap's growth series, at most HEAP_GROWTH_SHOWN points
 * spread over it (the first and the last among them). */
static void print_growth(FILE *f, const json_t *h) {
        json_t *growth = reply_array(h, "growth");
        size_t n = json_array_size(growth);

        if (n < 2)
                return;
        fprintf(f, "  live bytes over time:");
        size_t shown = MIN(n, (size_t) HEAP_GROWTH_SHOWN);
        for (size_t k = 0; k < shown; k++) {
                const json_t *p = json_array_get(growth, shown > 1 ? k * (n - 1) / (shown - 1) : 0);
                char size[FORMAT_BUFFER_MAX];
                fprintf(f, "%s %s at %.2f s", k > 0 ? "," : "",
                        format_bytes(size, sizeof(size), reply_count(p, "liveBytes")),
                        (double) reply_count(p, "msec") / 1000.0);
        }
        fputc('\n', f);
}

/* What the now-values of a heap are: a moment or a window (heap-moment.h), else now (never freed, for an
 * ended heap). */
static void print_when(FILE *f, const json_t *h) {
        const json_t *moment = reply_object(h, "moment"), *window = reply_object(h, "window");

        if (moment)
                fprintf(f, " at %.2f s", (double) reply_count(moment, "usec") / 1e6);
        else if (window)
                fprintf(f, " allocated between %.2f s and %.2f s", (double) reply_count(window, "fromUsec") / 1e6,
                        (double) reply_count(window, "toUsec") / 1e6);
        else
                fputs(reply_bool(h, "ended", false) ? ", never freed" : ", live now", f);
}

/* "Heap of pid N (comm) at its maximum: SIZE (N bytes)", no newline. */
static void print_title(FILE *f, const json_t *h, bool leaks, uint64_t bytes) {
        char size[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *comm = format_sanitize(reply_string(h, "comm") ?: "?");

        fprintf(f, "Heap of pid %" PRIi64 " (%s)", reply_int(h, "pid", 0), comm ?: "?");
        if (leaks)
                print_when(f, h);
        else
                fputs(" at its maximum", f);
        fprintf(f, ": %s (%" PRIu64 " bytes)", format_bytes(size, sizeof(size), bytes), bytes);
}

/* A moment's or a window's figures come from the timeline's sampled blocks: how exact they are. */
static void print_timeline_note(FILE *f, const json_t *h) {
        const json_t *mark = reply_object(h, "moment") ?: reply_object(h, "window");

        if (!mark)
                return;
        fprintf(f, "  from the heap's timeline, in buckets of %.0f ms; %s\n",
                (double) reply_count(mark, "bucketUsec") / 1000.0, reply_count(h, "sampleInterval") <= 1 ? "exact (every allocation's stack)" :
                "estimates from the sampled stacks");
}

static const char *exec_note(const json_t *h, bool leaks) {
        return leaks && streq(reply_string(h, "end") ?: "", "exec") ? " (when it exec'd)" : "";
}

/* A heap with no sampled stack has no tree to show: its exact totals in one line. Its blocks at the
 * maximum are not known (only the tree counts them), its blocks never freed are. */
static void print_unsampled(FILE *f, const json_t *h, bool leaks) {
        char interval[FORMAT_BUFFER_MAX];

        print_title(f, h, leaks, reply_count(h, leaks ? "liveBytes" : "peakBytes"));
        if (leaks)
                fprintf(f, " in %" PRIu64 " blocks%s", reply_count(h, "liveBlocks"), exec_note(h, leaks));
        fprintf(f, "; %" PRIu64 " allocations, %" PRIu64 " frees; ", reply_count(h, "allocs"), reply_count(h, "frees"));
        if (reply_count(h, "allocs") == 0)
                fputs("nothing allocated\n", f);
        else
                fprintf(f, "no stack sampled (one per %s allocated on average)\n",
                        format_bytes(interval, sizeof(interval), reply_count(h, "sampleInterval")));
}

static void print_header(FILE *f, const json_t *h, bool leaks, uint64_t bytes, uint64_t blocks) {
        char interval[FORMAT_BUFFER_MAX];
        uint64_t every = reply_count(h, "sampleInterval");

        print_title(f, h, leaks, bytes);
        fprintf(f, " in %" PRIu64 " blocks%s\n", blocks, exec_note(h, leaks));
        fprintf(f, "  %" PRIu64 " allocations, %" PRIu64 " frees; stacks: ", reply_count(h, "allocs"),
                reply_count(h, "frees"));
        if (every <= 1)
                fprintf(f, "every allocation's, exact\n");
        else
                fprintf(f, "sampled, one per %s allocated on average; totals exact, each figure an estimate "
                        "scaled to them, +- three standard deviations\n", format_bytes(interval, sizeof(interval), every));
        print_timeline_note(f, h);
        if (leaks && reply_object(h, "window")) {
                const json_t *root = reply_object(h, "root");
                char size[FORMAT_BUFFER_MAX];
                fprintf(f, "  freed there: %s (%" PRIu64 " bytes) in %" PRIu64 " blocks, counted at the call sites "
                        "that had allocated them\n",
                        format_bytes(size, sizeof(size), reply_count(root, "windowFreedBytes")),
                        reply_count(root, "windowFreedBytes"), reply_count(root, "windowFreedBlocks"));
        }
        print_growth(f, h);
        uint64_t lost = reply_count(h, "lostRecords"), unknown = reply_count(h, "unknownFrees"),
                 invalid = reply_count(h, "invalidFrees");
        if (lost || unknown || invalid)
                fprintf(f, "  lost records %" PRIu64 ", frees of unknown pointers %" PRIu64 ", invalid frees %" PRIu64
                        "\n", lost, unknown, invalid);
}

static int text_one(FILE *f, const json_t *h, bool leaks, const ReportOptions *o) {
        const HeapKeys *k = leaks ? &keys_now : &keys_maximum;
        const json_t *root = reply_object(h, "root");
        uint64_t bytes = leaks ? reply_count(h, "liveBytes") : reply_count(h, "peakBytes");
        uint64_t blocks = leaks ? reply_count(h, "liveBlocks") : reply_count(root, "maxBlocks");
        _cleanup_(heap_sites_done) HeapSites c = {};
        int r;

        if (!heap_is_sampled(h)) {
                print_unsampled(f, h, leaks);
                return 0;
        }
        print_header(f, h, leaks, bytes, blocks);
        r = heap_sites_collect(h, leaks, o, &c);
        if (r < 0)
                return r;
        fprintf(f, "Call sites:\n");
        size_t shown = 0;
        for (size_t i = 0; i < c.n && (o->top == 0 || shown < o->top); i++) {
                _cleanup_free_ char *label = heap_site_label(&c.sites[i]);
                _cleanup_free_ char *clean = label ? format_sanitize(label) : NULL;
                if (!clean)
                        return -ENOMEM;
                fprintf(f, "  %6.2f%% (", bytes > 0 ? 100.0 * (double) c.sites[i].bytes / (double) bytes : 0.0);
                print_size(f, c.sites[i].bytes, c.sites[i].blocks,
                           heap_site_error(c.sites[i].bytes, reply_count(h, "sampleInterval")));
                if (leaks && reply_object(h, "window")) {
                        fputs("; freed ", f);
                        print_size(f, c.sites[i].freed_bytes, c.sites[i].freed_blocks, 0);
                }
                fprintf(f, ") %s\n", clean);
                shown++;
        }
        if (shown == 0)
                fprintf(f, "  (none)\n");
        fprintf(f, "Stacks, callers first:\n");
        _cleanup_free_ char *prefix = malloc(4 * (HEAP_DEPTH_MAX + 2));
        if (!prefix)
                return -ENOMEM;
        return print_tree(f, root, k, o, reply_count(root, k->bytes), prefix, 0, true, 0);
}

static void print_no_heaps(FILE *f) {
        fputs("(no heaps: the snapshot was not taken by memstrackctl record)\n", f);
}

/* What the text formats render of one heap. */
typedef int (*HeapTextFn)(FILE *f, json_t *doc, const json_t *h, const ReportOptions *o, bool leaks);

/* one() of each heap the selection shows in full (with sampled_only, of those with a sampled stack), a
 * blank line between them; how many into *ret_n. -ESRCH when the task asked for recorded none. */
static int render_shown(json_t *doc, const ReportOptions *o, bool leaks, bool sampled_only, HeapTextFn one,
                FILE *f, HeapSelection *sel, size_t *ret_n) {
        json_t *h;
        size_t i, n = 0;
        int r;

        heap_selection_init(doc, o, sel);
        json_array_foreach(doc_heaps(doc), i, h) {
                if (!heap_selection_shows(sel, h) || (sampled_only && !heap_is_sampled(h)))
                        continue;
                if (n++ > 0)
                        fputc('\n', f);
                r = one(f, doc, h, o, leaks);
                if (r < 0)
                        return r;
        }
        *ret_n = n;
        return n == 0 && o->pid >= 0 ? -ESRCH : 0;
}

static int text_heap(FILE *f, json_t *doc, const json_t *h, const ReportOptions *o, bool leaks) {
        return text_one(f, h, leaks, o);
}

static int heap_render_text(json_t *doc, const ReportOptions *o, bool leaks, FILE *f) {
        HeapSelection sel;
        size_t n;
        int r;

        if (!doc_heaps(doc)) {
                print_no_heaps(f);
                return 0;
        }
        r = render_shown(doc, o, leaks, false, text_heap, f, &sel, &n);
        if (r < 0)
                return r;
        size_t hidden = heap_selection_hidden(&sel);
        if (n == 0 && hidden == 0)
                fputs("(no heap was recorded)\n", f);
        else if (hidden > 0)
                fprintf(f, "%s(%zu more process%s in heap_processes; --all shows every one in full)\n", n > 0 ? "\n" : "",
                        hidden, hidden == 1 ? "" : "es");
        return 0;
}

/* ---- JSON --------------------------------------------------------------------------------------------- */

static int heap_render_json(json_t *doc, const ReportOptions *o, bool leaks, json_t **ret) {
        const HeapKeys *k = leaks ? &keys_now : &keys_maximum;
        json_t *h, *heaps = doc_heaps(doc);
        json_auto_t *list = json_array();
        HeapSelection sel;
        size_t i, n = 0;

        if (!list)
                return -ENOMEM;
        if (!heaps) {
                *ret = json_null();
                return 0;
        }
        heap_selection_init(doc, o, &sel);
        json_array_foreach(heaps, i, h) {
                if (!heap_selection_shows(&sel, h))
                        continue;
                n++;
                const json_t *root = reply_object(h, "root");
                _cleanup_(heap_sites_done) HeapSites c = {};
                json_auto_t *sites = json_array();
                int r = heap_sites_collect(h, leaks, o, &c);
                if (r < 0)
                        return r;
                if (!sites)
                        return -ENOMEM;
                bool window = leaks && reply_object(h, "window");
                for (size_t j = 0; j < c.n && (o->top == 0 || j < o->top); j++) {
                        json_t *site = heap_site_json(&c.sites[j], reply_count(h, "sampleInterval"));
                        if (!site || json_array_append_new(sites, site) < 0 ||
                            (window && (json_object_set_new(site, "windowFreedBytes",
                                                            json_integer((json_int_t) c.sites[j].freed_bytes)) < 0 ||
                                        json_object_set_new(site, "windowFreedBlocks",
                                                            json_integer((json_int_t) c.sites[j].freed_blocks)) < 0)))
                                return -ENOMEM;
                }
                json_t *one = json_pack("{s:O?, s:O?, s:O?, s:O?, s:I, s:I, s:O?, s:O?, s:O?, s:O?, s:O?, s:O, s:O?, "
                                        "s:O?, s:O*, s:O*}",
                                        "pid", json_object_get(h, "pid"),
                                        "comm", json_object_get(h, "comm"),
                                        "ended", json_object_get(h, "ended"),
                                        "end", json_object_get(h, "end"),
                                        "bytes", (json_int_t) (leaks ? reply_count(h, "liveBytes") :
                                                                       reply_count(h, "peakBytes")),
                                        "blocks", (json_int_t) (leaks ? reply_count(h, "liveBlocks") :
                                                                        reply_count(root, k->blocks)),
                                        "sampleInterval", json_object_get(h, "sampleInterval"),
                                        "allocs", json_object_get(h, "allocs"),
                                        "frees", json_object_get(h, "frees"),
                                        "lostRecords", json_object_get(h, "lostRecords"),
                                        "unknownFrees", json_object_get(h, "unknownFrees"),
                                        "callSites", sites,
                                        "growth", json_object_get(h, "growth"),
                                        "root", json_object_get(h, "root"),
                                        "moment", leaks ? json_object_get(h, "moment") : NULL,
                                        "window", leaks ? json_object_get(h, "window") : NULL);
                if (!one || json_array_append_new(list, one) < 0)
                        return -ENOMEM;
        }
        if (n == 0 && o->pid >= 0)
                return -ESRCH;
        *ret = TAKE_PTR(list);
        return 0;
}

/* ---- heap_processes ---------------------------------------------------------------------------------- */

/* What the heap formats show in full, in words, for the table's head. */
static void print_selection(FILE *f, const HeapSelection *s) {
        const ReportOptions *o = s->options;

        fputs("Full reports (*) of ", f);
        if (o->pid >= 0)
                fprintf(f, "pid %" PRIi64 " (--task).\n", o->pid);
        else if (o->heap_all)
                fputs("every process (--all).\n", f);
        else if (o->n_heap_processes > 0)
                fputs("the processes --process names.\n", f);
        else
                fprintf(f, "%seach holding at least %u%% of the total maximum; --all shows every process, "
                        "--process PID|COMM chooses.\n", s->command_pid >= 0 ? "the command's and " : "",
                        o->heap_min_share);
}

static int text_processes(json_t *doc, const ReportOptions *o, FILE *f) {
        _cleanup_free_ json_t **rows = NULL;
        char total[FORMAT_BUFFER_MAX];
        HeapSelection sel;
        size_t n;
        int r;

        if (!doc_heaps(doc)) {
                print_no_heaps(f);
                return 0;
        }
        heap_selection_init(doc, o, &sel);
        r = heap_selection_by_peak(&sel, &rows, &n);
        if (r < 0)
                return r;
        fprintf(f, "%zu process%s recorded, %s at their maximum in all (the sum of each one's own)", n,
                n == 1 ? "" : "es", format_bytes(total, sizeof(total), sel.total_peak_bytes));
        if (sel.command_pid >= 0)
                fprintf(f, "; the command is pid %" PRIi64 "%s", sel.command_pid,
                        sel.command_pid_recorded ? "" : " (the first process recorded: the file does not say)");
        fputs(".\n", f);
        print_selection(f, &sel);
        fprintf(f, "  %7s %10s %12s %11s %6s  %s\n", "PID", "MAXIMUM", "NEVER FREED", "ALLOCATIONS", "SHARE",
                "COMMAND");
        for (size_t i = 0; i < n; i++) {
                const json_t *h = rows[i];
                char peak[FORMAT_BUFFER_MAX], live[FORMAT_BUFFER_MAX];
                const char *cmdline = reply_string(h, "cmdline");
                _cleanup_free_ char *command = format_sanitize(cmdline && *cmdline ? cmdline :
                                                               reply_string(h, "comm") ?: "?");
                if (!command)
                        return -ENOMEM;
                fprintf(f, "%c %7" PRIi64 " %10s %12s %11" PRIu64 " %5.1f%%  %s%s%s%s\n",
                        heap_selection_shows(&sel, h) ? '*' : ' ', reply_int(h, "pid", 0),
                        format_bytes(peak, sizeof(peak), reply_count(h, "peakBytes")),
                        format_bytes(live, sizeof(live), reply_count(h, "liveBytes")), reply_count(h, "allocs"),
                        heap_selection_share(&sel, h), command,
                        heap_selection_is_command(&sel, h) ? "  [the command]" : "",
                        !reply_bool(h, "ended", false) ? "  [running: never freed is live now]" :
                        streq(reply_string(h, "end") ?: "", "exec") ? "  [exec'd: never freed by then]" : "",
                        heap_is_sampled(h) ? "" : "  [no stack sampled]");
        }
        return 0;
}

static int json_processes(json_t *doc, const ReportOptions *o, json_t **ret) {
        _cleanup_free_ json_t **rows = NULL;
        json_auto_t *list = json_array();
        HeapSelection sel;
        size_t n;
        int r;

        if (!list)
                return -ENOMEM;
        if (!doc_heaps(doc)) {
                *ret = json_null();
                return 0;
        }
        heap_selection_init(doc, o, &sel);
        r = heap_selection_by_peak(&sel, &rows, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *h = rows[i];
                json_t *row = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, "
                                        "s:b, s:b, s:b, s:f}",
                                        "pid", json_object_get(h, "pid"),
                                        "serial", json_object_get(h, "serial"),
                                        "comm", json_object_get(h, "comm"),
                                        "cmdline", json_object_get(h, "cmdline"),
                                        "ended", json_object_get(h, "ended"),
                                        "end", json_object_get(h, "end"),
                                        "peakBytes", json_object_get(h, "peakBytes"),
                                        "liveBytes", json_object_get(h, "liveBytes"),
                                        "liveBlocks", json_object_get(h, "liveBlocks"),
                                        "allocs", json_object_get(h, "allocs"),
                                        "frees", json_object_get(h, "frees"),
                                        "sampleInterval", json_object_get(h, "sampleInterval"),
                                        "sampled", heap_is_sampled(h),
                                        "command", heap_selection_is_command(&sel, h),
                                        "shown", heap_selection_shows(&sel, h),
                                        "sharePercent", heap_selection_share(&sel, h));
                if (!row || json_array_append_new(list, row) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:o, s:b, s:i, s:I, s:O}",
                         "commandPid", sel.command_pid >= 0 ? json_integer(sel.command_pid) : json_null(),
                         "commandPidRecorded", sel.command_pid_recorded,
                         "minSharePercent", (int) o->heap_min_share,
                         "totalPeakBytes", (json_int_t) sel.total_peak_bytes,
                         "processes", list);
        return *ret ? 0 : -ENOMEM;
}

/* ---- heap_lifetimes ----------------------------------------------------------------------------------- */

/* The Heap reply's bounds of the lifetime buckets (microseconds), the defaults of memstrackd's when an
 * older document lacks them. */
static uint64_t lifetime_bound(json_t *doc, size_t i) {
        static const uint64_t defaults[HEAP_SITE_LIFETIMES - 1] = { 1000, 10000, 100000, 1000000, 10000000 };
        const json_t *b = json_array_get(reply_array(reply_object(doc, "heap"), "lifetimeBoundsUsec"), i);

        return json_is_integer(b) && json_integer_value(b) > 0 ? (uint64_t) json_integer_value(b) :
               i < ELEMENTSOF(defaults) ? defaults[i] : UINT64_MAX;
}

/* "<1ms", "<10ms", ..., ">=10s": a bucket's heading. */
static void bucket_title(json_t *doc, size_t i, char *buf, size_t size) {
        uint64_t usec = lifetime_bound(doc, i < HEAP_SITE_LIFETIMES - 1 ? i : i - 1);
        const char *unit = usec >= 1000000 ? "s" : "ms";
        double v = usec >= 1000000 ? (double) usec / 1e6 : (double) usec / 1e3;

        (void) snprintf(buf, size, "%s%g%s", i < HEAP_SITE_LIFETIMES - 1 ? "<" : ">=", v, unit);
}

static void lifetimes_totals(const HeapSites *c, uint64_t *ret_freed, uint64_t *ret_temporary) {
        *ret_freed = *ret_temporary = 0;
        for (size_t i = 0; i < c->n; i++) {
                *ret_freed += heap_site_freed(&c->sites[i]);
                *ret_temporary += c->sites[i].temporary;
        }
}

static int text_lifetimes_one(FILE *f, json_t *doc, const json_t *h, const ReportOptions *o, bool leaks) {
        _cleanup_(heap_sites_done) HeapSites c = {};
        _cleanup_free_ char *comm = format_sanitize(reply_string(h, "comm") ?: "?");
        uint64_t freed, temporary;
        int r;

        /* A recording made before memstrackd counted lifetimes has none to show. */
        if (!json_is_array(json_object_get(reply_object(h, "root"), "freedBlocks"))) {
                fprintf(f, "Lifetimes in the heap of pid %" PRIi64 " (%s): not in this recording\n",
                        reply_int(h, "pid", 0), comm ?: "?");
                return 0;
        }
        r = heap_sites_collect_lifetimes(h, o, &c);
        if (r < 0)
                return r;
        lifetimes_totals(&c, &freed, &temporary);
        fprintf(f, "Lifetimes in the heap of pid %" PRIi64 " (%s): %" PRIu64 " blocks freed, %" PRIu64
                " temporary (%.1f %%: freed on their thread before it allocated again, within 1 ms); %s\n",
                reply_int(h, "pid", 0), comm ?: "?", freed, temporary,
                freed > 0 ? 100.0 * (double) temporary / (double) freed : 0.0,
                reply_count(h, "sampleInterval") <= 1 ? "exact" : "estimates from the sampled stacks");
        if (c.n == 0) {
                fputs("  (no block freed with a stack)\n", f);
                return 0;
        }
        fprintf(f, "  %9s %9s", "TEMPORARY", "FREED");
        for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++) {
                char title[32];
                bucket_title(doc, b, title, sizeof(title));
                fprintf(f, " %8s", title);
        }
        fprintf(f, " %12s  CALL SITE\n", "NEVER FREED");
        for (size_t i = 0; i < c.n && (o->top == 0 || i < o->top); i++) {
                const HeapSite *s = &c.sites[i];
                char size[FORMAT_BUFFER_MAX];
                _cleanup_free_ char *label = heap_site_label(s), *clean = label ? format_sanitize(label) : NULL;
                if (!clean)
                        return -ENOMEM;
                fprintf(f, "  %9" PRIu64 " %9" PRIu64, s->temporary, heap_site_freed(s));
                for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                        fprintf(f, " %8" PRIu64, s->lifetimes[b]);
                fprintf(f, " %12s  %s\n", format_bytes(size, sizeof(size), s->bytes), clean);
        }
        return 0;
}

static int text_lifetimes(json_t *doc, const ReportOptions *o, FILE *f) {
        HeapSelection sel;
        size_t n;
        int r;

        if (!doc_heaps(doc)) {
                print_no_heaps(f);
                return 0;
        }
        r = render_shown(doc, o, false, true, text_lifetimes_one, f, &sel, &n);
        if (r < 0)
                return r;
        if (n == 0)
                fputs("(no heap with a sampled stack)\n", f);
        return 0;
}

static int json_lifetimes(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_auto_t *list = json_array(), *bounds = json_array();
        json_t *h, *heaps = doc_heaps(doc);
        HeapSelection sel;
        size_t i, n = 0;

        if (!list || !bounds)
                return -ENOMEM;
        if (!heaps) {
                *ret = json_null();
                return 0;
        }
        for (size_t b = 0; b + 1 < HEAP_SITE_LIFETIMES; b++)
                if (json_array_append_new(bounds, json_integer((json_int_t) lifetime_bound(doc, b))) < 0)
                        return -ENOMEM;
        heap_selection_init(doc, o, &sel);
        json_array_foreach(heaps, i, h) {
                _cleanup_(heap_sites_done) HeapSites c = {};
                json_auto_t *sites = json_array();
                uint64_t freed, temporary;

                if (!heap_selection_shows(&sel, h))
                        continue;
                n++;
                if (!sites || heap_sites_collect_lifetimes(h, o, &c) < 0)
                        return -ENOMEM;
                lifetimes_totals(&c, &freed, &temporary);
                for (size_t j = 0; j < c.n && (o->top == 0 || j < o->top); j++) {
                        const HeapSite *s = &c.sites[j];
                        json_auto_t *buckets = json_array();
                        for (size_t b = 0; buckets && b < HEAP_SITE_LIFETIMES; b++)
                                if (json_array_append_new(buckets, json_integer((json_int_t) s->lifetimes[b])) < 0)
                                        return -ENOMEM;
                        json_t *site = heap_site_json(s, reply_count(h, "sampleInterval"));
                        if (!buckets || !site || json_array_append_new(sites, site) < 0 ||
                            json_object_set(site, "freedBlocks", buckets) < 0 ||
                            json_object_set_new(site, "freed", json_integer((json_int_t) heap_site_freed(s))) < 0 ||
                            json_object_set_new(site, "temporaryBlocks", json_integer((json_int_t) s->temporary)) < 0)
                                return -ENOMEM;
                }
                json_t *one = json_pack("{s:O?, s:O?, s:O?, s:I, s:I, s:O}",
                                        "pid", json_object_get(h, "pid"),
                                        "comm", json_object_get(h, "comm"),
                                        "sampleInterval", json_object_get(h, "sampleInterval"),
                                        "freedBlocks", (json_int_t) freed,
                                        "temporaryBlocks", (json_int_t) temporary,
                                        "callSites", sites);
                if (!one || json_array_append_new(list, one) < 0)
                        return -ENOMEM;
        }
        if (n == 0 && o->pid >= 0)
                return -ESRCH;
        *ret = json_pack("{s:O, s:O}", "lifetimeBoundsUsec", bounds, "heaps", list);
        return *ret ? 0 : -ENOMEM;
}

/* ---- The table's entries ------------------------------------------------------------------------------ */

static int text_maximum(json_t *doc, const ReportOptions *o, FILE *f) {
        return heap_render_text(doc, o, false, f);
}

static int text_leaks(json_t *doc, const ReportOptions *o, FILE *f) {
        return heap_render_text(doc, o, true, f);
}

static int json_maximum(json_t *doc, const ReportOptions *o, json_t **ret) {
        return heap_render_json(doc, o, false, ret);
}

static int json_leaks(json_t *doc, const ReportOptions *o, json_t **ret) {
        return heap_render_json(doc, o, true, ret);
}

const ReportFormat report_format_heap_processes = {
        .name = "heap_processes", .family = "heap", .text = text_processes, .json = json_processes,
};

const ReportFormat report_format_heap_maximum = {
        .name = "heap_maximum", .family = "heap", .text = text_maximum, .json = json_maximum,
};

const ReportFormat report_format_heap_leaks = {
        .name = "heap_leaks", .family = "heap", .text = text_leaks, .json = json_leaks,
};

const ReportFormat report_format_heap_lifetimes = {
        .name = "heap_lifetimes", .family = "heap", .text = text_lifetimes, .json = json_lifetimes,
};
