/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl diff A.json B.json: two recordings of memstrackctl record --file compared by call site.
 *
 * One process is compared in each file: the command's (of a command that execs, its image with the
 * biggest maximum), or the process --process names (its image with the biggest maximum). Its call sites,
 * counted as the heap formats count them (report/heap-sites.h: wrappers passed over unless --keep-frames,
 * --fold-frame), are matched by name (function, file and line, inlined callers included) and each gets
 * its bytes at the maximum and never freed in A and B, and its blocks at the maximum; those that changed
 * are listed, the biggest change first. With every call's stack in both recordings any difference is a
 * change; with sampled ones, only a difference beyond the two estimates' stated errors together. A site of
 * one recording alone is marked so. No daemon is asked.
 */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "heap-select.h"
#include "heap-sites.h"
#include "macro.h"
#include "reply.h"
#include "report.h"
#include "snapshot.h"

enum { FILE_A, FILE_B, _FILES };
enum { VIEW_MAXIMUM, VIEW_NEVER_FREED, _VIEWS };

/* One recording's side. */
typedef struct DiffSide {
        const char *path;
        json_t *doc;                    /* owned */
        json_t *heap;                   /* borrowed from doc: the one compared */
        bool command;                   /* it is the command's */
        HeapSites sites[_VIEWS];        /* owned */
} DiffSide;

/* A call site of either side, in either view. */
typedef struct DiffRow {
        char *label;                    /* owned */
        const HeapSite *site;           /* borrowed from a side: names the site in JSON */
        uint64_t bytes[_FILES][_VIEWS], blocks[_FILES][_VIEWS];
        bool in[_FILES];
        uint64_t change;                /* the bigger of the two changes' sizes, for the order */
} DiffRow;

typedef struct DiffRows {
        DiffRow *rows;
        size_t n;
} DiffRows;

static void side_done(DiffSide *s) {
        for (int v = 0; v < _VIEWS; v++)
                heap_sites_done(&s->sites[v]);
        json_decref(s->doc);
        s->doc = NULL;
}

static void rows_done(DiffRows *r) {
        for (size_t i = 0; i < r->n; i++)
                free(r->rows[i].label);
        free(r->rows);
        *r = (DiffRows) {};
}

/* The heap of doc that diff compares (see above); NULL if none fits. */
static json_t *pick_heap(json_t *doc, const ReportOptions *o, bool *ret_command) {
        HeapSelection sel;
        json_t *best = NULL, *h;
        size_t i;

        heap_selection_init(doc, o, &sel);
        json_array_foreach(sel.heaps, i, h) {
                bool fits = o->n_heap_processes > 0 ? heap_selection_shows(&sel, h) :
                            sel.command_pid < 0 || heap_selection_is_command(&sel, h);
                if (fits && (!best || reply_count(h, "peakBytes") > reply_count(best, "peakBytes")))
                        best = h;
        }
        *ret_command = best && heap_selection_is_command(&sel, best);
        return best;
}

static int side_load(DiffSide *s, const char *path, const ReportOptions *o) {
        int r;

        s->path = path;
        r = snapshot_load(path, &s->doc);
        if (r != 0)
                return r;
        if (json_array_size(reply_array(reply_object(s->doc, "heap"), "heaps")) == 0) {
                fprintf(stderr, "memstrackctl: %s holds no heap recording (memstrackctl record --file writes one).\n",
                        path);
                return CTL_EXIT_FAILURE;
        }
        s->heap = pick_heap(s->doc, o, &s->command);
        if (!s->heap) {
                fprintf(stderr, "memstrackctl: no process recorded in %s fits --process.\n", path);
                return CTL_EXIT_FAILURE;
        }
        for (int v = 0; v < _VIEWS; v++) {
                r = heap_sites_collect(s->heap, v == VIEW_NEVER_FREED, o, &s->sites[v]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* An entry of the merge: one site of one side in one view. */
typedef struct DiffEntry {
        char *label;                    /* owned until moved into a row */
        const HeapSite *site;
        int file, view;
} DiffEntry;

static int compare_entries(const void *a, const void *b) {
        const DiffEntry *x = a, *y = b;
        return strcmp(x->label, y->label);
}

/* Every site of both sides, one row per name. */
static int merge_sites(DiffSide sides[_FILES], DiffRows *ret) {
        size_t n = 0, k = 0;
        int r = 0;

        for (int f = 0; f < _FILES; f++)
                for (int v = 0; v < _VIEWS; v++)
                        n += sides[f].sites[v].n;
        _cleanup_free_ DiffEntry *entries = calloc(MAX(n, (size_t) 1), sizeof(DiffEntry));
        DiffRows rows = { .rows = calloc(MAX(n, (size_t) 1), sizeof(DiffRow)) };
        if (!entries || !rows.rows) {
                free(rows.rows);
                return -ENOMEM;
        }
        for (int f = 0; f < _FILES; f++)
                for (int v = 0; v < _VIEWS; v++)
                        for (size_t i = 0; i < sides[f].sites[v].n; i++) {
                                const HeapSite *s = &sides[f].sites[v].sites[i];
                                entries[k] = (DiffEntry) { heap_site_label(s), s, f, v };
                                if (!entries[k++].label)
                                        r = -ENOMEM;
                        }
        if (r < 0)
                goto finish;
        qsort(entries, n, sizeof(DiffEntry), compare_entries);
        for (size_t i = 0; i < n; i++) {
                DiffEntry *e = &entries[i];
                if (rows.n == 0 || !streq(rows.rows[rows.n - 1].label, e->label))
                        rows.rows[rows.n++] = (DiffRow) { .label = TAKE_PTR(e->label), .site = e->site };
                DiffRow *row = &rows.rows[rows.n - 1];
                row->bytes[e->file][e->view] += e->site->bytes;
                row->blocks[e->file][e->view] += e->site->blocks;
                row->in[e->file] = true;
        }
        *ret = rows;
        rows = (DiffRows) {};
finish:
        for (size_t i = 0; i < n; i++)
                free(entries[i].label);
        rows_done(&rows);
        return r;
}

static uint64_t difference(uint64_t a, uint64_t b) {
        return a > b ? a - b : b - a;
}

/* Whether a row changed between the sides: any figure with every call's stack in both; with sampled
 * stacks, bytes beyond both estimates' errors together (three standard deviations each). */
static bool row_changed(DiffRow *row, const DiffSide sides[_FILES]) {
        uint64_t interval[_FILES] = { reply_count(sides[FILE_A].heap, "sampleInterval"),
                                      reply_count(sides[FILE_B].heap, "sampleInterval") };
        bool exact = interval[FILE_A] <= 1 && interval[FILE_B] <= 1, changed = false;

        row->change = 0;
        for (int v = 0; v < _VIEWS; v++) {
                uint64_t a = row->bytes[FILE_A][v], b = row->bytes[FILE_B][v], d = difference(a, b);
                double ea = (double) heap_site_error(a, interval[FILE_A]), eb = (double) heap_site_error(b, interval[FILE_B]);
                row->change = MAX(row->change, d);
                if (exact)
                        changed |= d > 0 || row->blocks[FILE_A][v] != row->blocks[FILE_B][v];
                else
                        changed |= (double) d > sqrt(ea * ea + eb * eb);
        }
        return changed;
}

static int compare_changes(const void *a, const void *b) {
        const DiffRow *x = a, *y = b;

        if (x->change != y->change)
                return x->change > y->change ? -1 : 1;
        return strcmp(x->label, y->label);
}

/* The changed rows first, biggest change first; returns how many changed. */
static size_t order_rows(DiffRows *rows, const DiffSide sides[_FILES]) {
        size_t changed = 0;

        for (size_t i = 0; i < rows->n; i++)
                if (row_changed(&rows->rows[i], sides)) {
                        DiffRow t = rows->rows[changed];
                        rows->rows[changed++] = rows->rows[i];
                        rows->rows[i] = t;
                }
        if (changed > 1)
                qsort(rows->rows, changed, sizeof(DiffRow), compare_changes);
        return changed;
}

static const char *row_where(const DiffRow *row) {
        return row->in[FILE_A] && row->in[FILE_B] ? "both" : row->in[FILE_A] ? "a" : "b";
}

/* ---- Text --------------------------------------------------------------------------------------------- */

static void print_side(const DiffSide *s, const char *name) {
        char peak[FORMAT_BUFFER_MAX], live[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *comm = format_sanitize(reply_string(s->heap, "comm") ?: "?");

        printf("%s: %s, pid %" PRIi64 " (%s)%s: maximum %s, never freed %s, %" PRIu64 " allocations, %" PRIu64
               " frees\n", name, s->path, reply_int(s->heap, "pid", 0), comm ?: "?", s->command ? ", the command's" : "",
               format_bytes(peak, sizeof(peak), reply_count(s->heap, "peakBytes")),
               format_bytes(live, sizeof(live), reply_count(s->heap, "liveBytes")), reply_count(s->heap, "allocs"),
               reply_count(s->heap, "frees"));
}

static int print_text(const DiffSide sides[_FILES], const DiffRows *rows, size_t changed) {
        static const TableColumn columns[] = {
                { .header = "MAXIMUM A", .align = TABLE_ALIGN_RIGHT },
                { .header = "MAXIMUM B", .align = TABLE_ALIGN_RIGHT },
                { .header = "CHANGE", .align = TABLE_ALIGN_RIGHT },
                { .header = "NEVER FREED A", .align = TABLE_ALIGN_RIGHT },
                { .header = "NEVER FREED B", .align = TABLE_ALIGN_RIGHT },
                { .header = "CHANGE", .align = TABLE_ALIGN_RIGHT },
                { .header = "BLOCKS A", .align = TABLE_ALIGN_RIGHT },
                { .header = "BLOCKS B", .align = TABLE_ALIGN_RIGHT },
                { .header = "CALL SITE", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 20 },
        };
        _cleanup_(table_freep) Table *t = NULL;
        size_t shown = arg_limit > 0 ? MIN(changed, (size_t) arg_limit) : changed;
        int r;

        if (arg_legend) {
                char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
                int64_t peak = (int64_t) reply_count(sides[FILE_B].heap, "peakBytes") -
                               (int64_t) reply_count(sides[FILE_A].heap, "peakBytes");
                int64_t live = (int64_t) reply_count(sides[FILE_B].heap, "liveBytes") -
                               (int64_t) reply_count(sides[FILE_A].heap, "liveBytes");
                print_side(&sides[FILE_A], "A");
                print_side(&sides[FILE_B], "B");
                printf("Maximum %s, never freed %s, allocations %+" PRIi64 ".\n\n", format_delta(a, sizeof(a), peak, 1),
                       format_delta(b, sizeof(b), live, 1),
                       (int64_t) reply_count(sides[FILE_B].heap, "allocs") -
                               (int64_t) reply_count(sides[FILE_A].heap, "allocs"));
        }
        r = table_new(columns, ELEMENTSOF(columns), &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        for (size_t i = 0; i < shown; i++) {
                const DiffRow *row = &rows->rows[i];
                char cells[6][FORMAT_BUFFER_MAX];
                const char *where = !row->in[FILE_A] ? "  (only in B)" : !row->in[FILE_B] ? "  (only in A)" : "";
                for (int v = 0; v < _VIEWS; v++) {
                        uint64_t a = row->bytes[FILE_A][v], b = row->bytes[FILE_B][v];
                        format_bytes(cells[3 * v], FORMAT_BUFFER_MAX, a);
                        format_bytes(cells[3 * v + 1], FORMAT_BUFFER_MAX, b);
                        format_delta(cells[3 * v + 2], FORMAT_BUFFER_MAX, (int64_t) b - (int64_t) a, 1);
                }
                for (int c = 0; c < 6; c++)
                        if ((r = table_add_cell(t, cells[c])) < 0)
                                return r;
                if ((r = table_add_cellf(t, "%" PRIu64, row->blocks[FILE_A][VIEW_MAXIMUM])) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, row->blocks[FILE_B][VIEW_MAXIMUM])) < 0 ||
                    (r = table_add_cellf(t, "%s%s", row->label, where)) < 0)
                        return r;
        }
        if (shown > 0) {
                r = table_print(t, stdout, format_terminal_columns());
                if (r < 0)
                        return r;
        }
        if (!arg_legend)
                return 0;
        if (changed == 0)
                printf("No call site changed.\n");
        if (shown < changed)
                printf("%zu more changed (--limit).\n", changed - shown);
        bool sampled = reply_count(sides[FILE_A].heap, "sampleInterval") > 1 ||
                       reply_count(sides[FILE_B].heap, "sampleInterval") > 1;
        printf("%zu call site%s the same in both%s.\n", rows->n - changed, rows->n - changed == 1 ? "" : "s",
               sampled ? " (within the sampling error of their figures)" : "");
        return 0;
}

/* ---- JSON --------------------------------------------------------------------------------------------- */

static json_t *side_json(const DiffSide *s) {
        return json_pack("{s:s, s:O?, s:O?, s:O?, s:b, s:O?, s:O?, s:O?, s:O?, s:O?}",
                         "file", s->path,
                         "pid", json_object_get(s->heap, "pid"),
                         "comm", json_object_get(s->heap, "comm"),
                         "cmdline", json_object_get(s->heap, "cmdline"),
                         "command", s->command,
                         "peakBytes", json_object_get(s->heap, "peakBytes"),
                         "liveBytes", json_object_get(s->heap, "liveBytes"),
                         "allocs", json_object_get(s->heap, "allocs"),
                         "frees", json_object_get(s->heap, "frees"),
                         "sampleInterval", json_object_get(s->heap, "sampleInterval"));
}

static json_t *figures_json(const DiffRow *row, int f) {
        if (!row->in[f])
                return json_null();
        return json_pack("{s:I, s:I, s:I, s:I}",
                         "maxBytes", (json_int_t) row->bytes[f][VIEW_MAXIMUM],
                         "maxBlocks", (json_int_t) row->blocks[f][VIEW_MAXIMUM],
                         "neverFreedBytes", (json_int_t) row->bytes[f][VIEW_NEVER_FREED],
                         "neverFreedBlocks", (json_int_t) row->blocks[f][VIEW_NEVER_FREED]);
}

static int print_json(const DiffSide sides[_FILES], const DiffRows *rows, size_t changed) {
        json_auto_t *list = json_array(), *out = NULL;
        size_t shown = arg_limit > 0 ? MIN(changed, (size_t) arg_limit) : changed;

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < shown; i++) {
                const DiffRow *row = &rows->rows[i];
                json_auto_t *site = heap_site_json(row->site, 1);
                if (!site ||
                    json_object_del(site, "bytes") < 0 || json_object_del(site, "blocks") < 0 ||
                    json_object_del(site, "errorBytes") < 0 ||
                    json_object_set_new(site, "label", json_string(row->label)) < 0 ||
                    json_object_set_new(site, "in", json_string(row_where(row))) < 0 ||
                    json_object_set_new(site, "a", figures_json(row, FILE_A)) < 0 ||
                    json_object_set_new(site, "b", figures_json(row, FILE_B)) < 0 ||
                    json_object_set_new(site, "maxBytesChange",
                                        json_integer((json_int_t) row->bytes[FILE_B][VIEW_MAXIMUM] -
                                                     (json_int_t) row->bytes[FILE_A][VIEW_MAXIMUM])) < 0 ||
                    json_object_set_new(site, "neverFreedBytesChange",
                                        json_integer((json_int_t) row->bytes[FILE_B][VIEW_NEVER_FREED] -
                                                     (json_int_t) row->bytes[FILE_A][VIEW_NEVER_FREED])) < 0 ||
                    json_array_append(list, site) < 0)
                        return -ENOMEM;
        }
        out = json_pack("{s:o, s:o, s:O, s:I, s:I}", "a", side_json(&sides[FILE_A]), "b", side_json(&sides[FILE_B]),
                        "sites", list, "moreChangedSites", (json_int_t) (changed - shown),
                        "unchangedSites", (json_int_t) (rows->n - changed));
        if (!out)
                return -ENOMEM;
        return ctl_print_json(out);
}

int heap_diff(const char *path_a, const char *path_b) {
        DiffSide sides[_FILES] = {};
        DiffRows rows = {};
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        int r;

        ctl_heap_options(&o);
        r = side_load(&sides[FILE_A], path_a, &o);
        if (r == 0)
                r = side_load(&sides[FILE_B], path_b, &o);
        if (r == 0)
                r = merge_sites(sides, &rows);
        if (r == 0) {
                size_t changed = order_rows(&rows, sides);
                r = arg_json != CTL_JSON_OFF ? print_json(sides, &rows, changed) : print_text(sides, &rows, changed);
        }
        rows_done(&rows);
        for (int f = 0; f < _FILES; f++)
                side_done(&sides[f]);
        return r;
}
