/* SPDX-License-Identifier: MIT */

/*
 * heap_maximum and heap_leaks: user-space heaps (the Heap reply kept under "heap" in a snapshot document)
 * as memtrail prints them. For each heap, its call sites (the innermost frame of each stack that has a
 * source line: the line that called malloc, new or a wrapper without debug information), then its stack
 * tree, callers first, with percentages of the heap's total, bytes, blocks ("Nx"), function and file:line.
 * heap_maximum shows the heap as it stood when its live bytes were highest; heap_leaks what was never
 * freed (live now, for a heap still running). A document without heaps says so; --json gives null then.
 */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-text.h"
#include "format-util.h"
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

/* ---- Call sites --------------------------------------------------------------------------------------- */

typedef struct CallSite {
        const json_t *node;             /* borrowed: the frame that names it */
        uint64_t bytes, blocks, estimate;
} CallSite;

typedef struct CallSites {
        CallSite *sites;
        size_t n, allocated;
} CallSites;

static bool same_site(const json_t *a, const json_t *b) {
        return streq(reply_string(a, "file") ?: "", reply_string(b, "file") ?: "") &&
               reply_int(a, "line", 0) == reply_int(b, "line", 0) &&
               streq(reply_string(a, "function") ?: reply_string(a, "frame") ?: "",
                     reply_string(b, "function") ?: reply_string(b, "frame") ?: "");
}

static int add_site(CallSites *c, const json_t *site, uint64_t bytes, uint64_t blocks) {
        for (size_t i = 0; i < c->n; i++)
                if (same_site(c->sites[i].node, site)) {
                        c->sites[i].bytes += bytes;
                        c->sites[i].blocks += blocks;
                        return 0;
                }
        if (c->n == c->allocated) {
                size_t n = c->allocated ? c->allocated * 2 : 16;
                CallSite *s = realloc(c->sites, n * sizeof(CallSite));
                if (!s)
                        return -ENOMEM;
                c->sites = s;
                c->allocated = n;
        }
        c->sites[c->n++] = (CallSite) { .node = site, .bytes = bytes, .blocks = blocks };
        return 0;
}

/* What each node holds itself (not through its children) goes to its call site: the innermost frame of its
 * path with a source line, else its own frame. */
static int collect_sites(const json_t *node, const json_t *site, const HeapKeys *k, CallSites *c, unsigned depth) {
        uint64_t bytes = reply_count(node, k->bytes), blocks = reply_count(node, k->blocks);
        uint64_t child_bytes = 0, child_blocks = 0;
        json_t *child;
        size_t i;
        int r;

        if (depth > 0 && reply_string(node, "file"))
                site = node;
        json_array_foreach(reply_array(node, "children"), i, child) {
                child_bytes += reply_count(child, k->bytes);
                child_blocks += reply_count(child, k->blocks);
                if (depth < HEAP_DEPTH_MAX) {
                        r = collect_sites(child, site, k, c, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        if (bytes > child_bytes)
                return add_site(c, site && depth > 0 ? site : node, bytes - child_bytes,
                                blocks > child_blocks ? blocks - child_blocks : 0);
        return 0;
}

/* The sampling error the output states for bytes estimated from one stack per interval bytes: three
 * standard deviations of the Poisson estimate, 3 sqrt(bytes * interval); 0 when every stack is taken. */
static uint64_t site_error(uint64_t bytes, uint64_t interval) {
        return interval > 1 ? (uint64_t) (3.0 * sqrt((double) bytes * (double) interval)) : 0;
}

static int compare_sites(const void *a, const void *b) {
        const CallSite *x = a, *y = b;
        return x->bytes != y->bytes ? (x->bytes > y->bytes ? -1 : 1) : 0;
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

static void print_header(FILE *f, const json_t *h, bool leaks, uint64_t bytes, uint64_t blocks) {
        char size[FORMAT_BUFFER_MAX], interval[FORMAT_BUFFER_MAX];
        uint64_t every = reply_count(h, "sampleInterval");
        _cleanup_free_ char *comm = format_sanitize(reply_string(h, "comm") ?: "?");
        bool ended = reply_bool(h, "ended", false);

        fprintf(f, "Heap of pid %" PRIi64 " (%s)%s: %s (%" PRIu64 " bytes) in %" PRIu64 " blocks%s\n",
                reply_int(h, "pid", 0), comm ?: "?",
                !leaks ? " at its maximum" : ended ? ", never freed" : ", live now",
                format_bytes(size, sizeof(size), bytes), bytes, blocks,
                leaks && streq(reply_string(h, "end") ?: "", "exec") ? " (when it exec'd)" : "");
        fprintf(f, "  %" PRIu64 " allocations, %" PRIu64 " frees; stacks: ", reply_count(h, "allocs"),
                reply_count(h, "frees"));
        if (every <= 1)
                fprintf(f, "every allocation's, exact\n");
        else
                fprintf(f, "sampled, one per %s allocated on average; totals exact, each figure an estimate "
                        "scaled to them, +- three standard deviations\n", format_bytes(interval, sizeof(interval), every));
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
        CallSites c = {};
        int r;

        print_header(f, h, leaks, bytes, blocks);
        r = collect_sites(root, NULL, k, &c, 0);
        if (r < 0) {
                free(c.sites);
                return r;
        }
        if (c.n > 1)    /* c.sites is NULL when the heap has no call site */
                qsort(c.sites, c.n, sizeof(CallSite), compare_sites);
        fprintf(f, "Call sites:\n");
        size_t shown = 0;
        for (size_t i = 0; i < c.n && (o->top == 0 || shown < o->top); i++) {
                if (c.sites[i].bytes == 0)
                        continue;
                _cleanup_free_ char *label = report_heap_frame_label(c.sites[i].node);
                _cleanup_free_ char *clean = label ? format_sanitize(label) : NULL;
                if (!clean) {
                        free(c.sites);
                        return -ENOMEM;
                }
                fprintf(f, "  %6.2f%% (", bytes > 0 ? 100.0 * (double) c.sites[i].bytes / (double) bytes : 0.0);
                print_size(f, c.sites[i].bytes, c.sites[i].blocks,
                           site_error(c.sites[i].bytes, reply_count(h, "sampleInterval")));
                fprintf(f, ") %s\n", clean);
                shown++;
        }
        free(c.sites);
        if (shown == 0)
                fprintf(f, "  (none)\n");
        fprintf(f, "Stacks, callers first:\n");
        _cleanup_free_ char *prefix = malloc(4 * (HEAP_DEPTH_MAX + 2));
        if (!prefix)
                return -ENOMEM;
        return print_tree(f, root, k, o, reply_count(root, k->bytes), prefix, 0, true, 0);
}

static bool selected(const json_t *h, const ReportOptions *o) {
        return o->pid < 0 || reply_int(h, "pid", -1) == o->pid;
}

static int heap_render_text(json_t *doc, const ReportOptions *o, bool leaks, FILE *f) {
        json_t *h, *heaps = doc_heaps(doc);
        size_t i, n = 0;
        int r;

        if (!heaps) {
                fputs("(no heaps: the snapshot was not taken by memstrackctl record)\n", f);
                return 0;
        }
        json_array_foreach(heaps, i, h) {
                if (!selected(h, o))
                        continue;
                if (n++ > 0)
                        fputc('\n', f);
                r = text_one(f, h, leaks, o);
                if (r < 0)
                        return r;
        }
        if (n == 0 && o->pid >= 0)
                return -ESRCH;
        if (n == 0)
                fputs("(no heap was recorded)\n", f);
        return 0;
}

/* ---- JSON --------------------------------------------------------------------------------------------- */

static int heap_render_json(json_t *doc, const ReportOptions *o, bool leaks, json_t **ret) {
        const HeapKeys *k = leaks ? &keys_now : &keys_maximum;
        json_t *h, *heaps = doc_heaps(doc);
        json_auto_t *list = json_array();
        size_t i, n = 0;

        if (!list)
                return -ENOMEM;
        if (!heaps) {
                *ret = json_null();
                return 0;
        }
        json_array_foreach(heaps, i, h) {
                if (!selected(h, o))
                        continue;
                n++;
                const json_t *root = reply_object(h, "root");
                CallSites c = {};
                int r = collect_sites(root, NULL, k, &c, 0);
                json_auto_t *sites = json_array();
                if (r < 0 || !sites) {
                        free(c.sites);
                        return -ENOMEM;
                }
                if (c.n > 1)
                        qsort(c.sites, c.n, sizeof(CallSite), compare_sites);
                for (size_t j = 0; j < c.n && (o->top == 0 || j < o->top); j++) {
                        const json_t *s = c.sites[j].node;
                        if (json_array_append_new(sites, json_pack("{s:O?, s:O?, s:O?, s:O?, s:I, s:I, s:I}",
                                        "frame", json_object_get(s, "frame"),
                                        "function", json_object_get(s, "function"),
                                        "file", json_object_get(s, "file"),
                                        "line", json_object_get(s, "line"),
                                        "bytes", (json_int_t) c.sites[j].bytes,
                                        "blocks", (json_int_t) c.sites[j].blocks,
                                        "errorBytes", (json_int_t) site_error(c.sites[j].bytes,
                                                        reply_count(h, "sampleInterval")))) < 0) {
                                free(c.sites);
                                return -ENOMEM;
                        }
                }
                free(c.sites);
                json_t *one = json_pack("{s:O?, s:O?, s:O?, s:O?, s:I, s:I, s:O?, s:O?, s:O?, s:O?, s:O?, s:O, s:O?, "
                                        "s:O?}",
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
                                        "root", json_object_get(h, "root"));
                if (!one || json_array_append_new(list, one) < 0)
                        return -ENOMEM;
        }
        if (n == 0 && o->pid >= 0)
                return -ESRCH;
        *ret = TAKE_PTR(list);
        return 0;
}

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

const ReportFormat report_format_heap_maximum = {
        .name = "heap_maximum", .family = "heap", .text = text_maximum, .json = json_maximum,
};

const ReportFormat report_format_heap_leaks = {
        .name = "heap_leaks", .family = "heap", .text = text_leaks, .json = json_leaks,
};
