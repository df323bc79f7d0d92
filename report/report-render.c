/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "report.h"
#include "slabinfo.h"

/* Levels below the root any tree is cut at; the daemon sends at most 255. */
#define REPORT_DEPTH_MAX 255

static void *mfree(void *p) {
        free(p);
        return NULL;
}

/* Borrowed value or JSON null, for json_pack()'s "O" which takes no NULL. */
static json_t *or_null(json_t *v) {
        return v ?: json_null();
}

/* ---- Selecting and ordering -------------------------------------------------------------------------- */

typedef struct Item {
        json_t *json;           /* borrowed */
        uint64_t key;
        size_t index;           /* position in the input: keeps equal keys in the daemon's order */
} Item;

static int compare_items(const void *a, const void *b) {
        const Item *x = a, *y = b;

        if (x->key != y->key)
                return x->key > y->key ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* current or peak pages of a Task, Module, Unit, StackNode or StackPages; a peak the daemon did not know
 * (or a StackPages, which has none) reads as current. */
static uint64_t sort_key(const json_t *j, ReportSort sort) {
        int64_t peak = reply_node_peak(j);

        if (sort == REPORT_SORT_PEAK && peak >= 0)
                return (uint64_t) peak;
        return reply_count(j, "currentPages");
}

/* ceil(total * percent / 100) without overflow. */
static uint64_t throttle_limit(uint64_t total, unsigned percent) {
        return total / 100 * percent + (total % 100 * percent + 99) / 100;
}

/*
 * The entries of array with a non-zero key, biggest first, cut at o->throttle percent of their sum the
 * way memstrack's --throttle cuts (entries are taken while the ones taken so far hold less than the
 * limit), and at max entries unless max is 0. *ret is malloc'ed.
 */
static int select_items(json_t *array, const ReportOptions *o, unsigned max, Item **ret, size_t *ret_n) {
        _cleanup_free_ Item *items = calloc(MAX(json_array_size(array), (size_t) 1), sizeof(Item));
        uint64_t total = 0, taken = 0, limit;
        size_t n = 0, kept = 0, i;
        json_t *e;

        if (!items)
                return -ENOMEM;
        json_array_foreach(array, i, e) {
                uint64_t key = sort_key(e, o->sort);
                if (key == 0)
                        continue;
                items[n++] = (Item) { e, key, i };
                total += key;
        }
        qsort(items, n, sizeof(Item), compare_items);

        limit = throttle_limit(total, o->throttle);
        for (kept = 0; kept < n && taken < limit && (max == 0 || kept < max); kept++)
                taken += items[kept].key;
        *ret_n = kept;
        *ret = TAKE_PTR(items);
        return 0;
}

static json_t *prune(const json_t *node, const ReportOptions *o, int64_t depth) {
        json_t *children = reply_array(node, "children");
        size_t n_children = json_array_size(children), n = 0, dropped = 0, i;
        _cleanup_free_ Item *items = calloc(MAX(n_children, (size_t) 1), sizeof(Item));
        json_auto_t *copy = json_copy((json_t *) node), *kept = json_array();
        uint64_t current = reply_count(node, "currentPages"), in_children = 0, taken = 0;
        /* REPORT_DEPTH_MAX bounds the recursion for hand-edited files as deep as jansson allows. */
        bool cut_here = (o->max_depth >= 0 && depth >= o->max_depth) || depth >= REPORT_DEPTH_MAX;
        json_t *e;

        if (!items || !copy || !kept)
                return NULL;
        json_array_foreach(children, i, e) {
                items[n++] = (Item) { e, sort_key(e, o->sort), i };
                in_children += reply_count(e, "currentPages");
        }
        qsort(items, n, sizeof(Item), compare_items);

        uint64_t limit = throttle_limit(sort_key(node, o->sort), o->throttle);
        size_t n_kept = 0;
        for (i = 0; i < n && !cut_here; i++) {
                if (items[i].key == 0 || taken >= limit || (o->top > 0 && n_kept >= o->top)) {
                        dropped++;
                        continue;
                }
                json_t *child = prune(items[i].json, o, depth + 1);
                if (!child || json_array_append_new(kept, child) < 0)
                        return NULL;
                taken += items[i].key;
                n_kept++;
        }
        if (cut_here)
                dropped = n;

        /* A node cut by depth shows its whole subtree as its own; throttled children just go away. */
        uint64_t self = cut_here ? current : current > in_children ? current - in_children : 0;
        if (json_object_set(copy, "children", kept) < 0 ||
            json_object_set_new(copy, "selfPages", json_integer((json_int_t) self)) < 0 ||
            json_object_set_new(copy, "truncatedChildren",
                                json_integer((json_int_t) (reply_count(node, "truncatedChildren") + dropped))) < 0)
                return NULL;
        return TAKE_PTR(copy);
}

json_t *report_prune_tree(const json_t *node, const ReportOptions *o) {
        if (!json_is_object(node))
                return json_pack("{s:s, s:n, s:n, s:i, s:i, s:[], s:i, s:i}", "frame", "[empty]", "module",
                                 "address", "currentPages", 0, "peakPages", 0, "children", "truncatedChildren", 0,
                                 "selfPages", 0);
        return prune(node, o, 0);
}

/* ---- Finding things in the document ----------------------------------------------------------------- */

static uint64_t doc_page_size(json_t *doc) {
        return reply_count(reply_object(doc, "status"), "pageSize") ?: 4096;
}

static json_t *doc_tasks(json_t *doc) {
        return reply_array(reply_object(doc, "tasks"), "tasks");
}

static json_t *doc_modules(json_t *doc) {
        return reply_array(reply_object(doc, "modules"), "modules");
}

/* The units, or NULL when the document has none: taken from a memstrackd without Units, or by an
 * earlier memstrackctl. Not the same as an empty list. */
static json_t *doc_units(json_t *doc) {
        return reply_array(reply_object(doc, "units"), "units");
}

/* The StackTree reply kept for a task (key "pid") or module (key "name"), or NULL. */
static json_t *doc_scoped_tree(json_t *doc, const char *list, const char *key, json_t *value) {
        json_t *e;
        size_t i;

        json_array_foreach(reply_array(doc, list), i, e)
                if (json_equal(json_object_get(e, key), value))
                        return reply_object(e, "stackTree");
        return NULL;
}

static json_t *find_task(json_t *doc, int64_t pid) {
        json_t *e;
        size_t i;

        json_array_foreach(doc_tasks(doc), i, e)
                if (reply_int(e, "pid", -1) == pid)
                        return e;
        return NULL;
}

static json_t *find_module(json_t *doc, const char *name) {
        json_t *e;
        size_t i;

        json_array_foreach(doc_modules(doc), i, e)
                if (streq(reply_string(e, "name") ?: "", name))
                        return e;
        return NULL;
}

/* The stack tree the report is about (everything, the --task's or the --module's), pruned by the
 * options; for a flame graph (by_function) with frames merged by function first, unless o->offsets.
 * *ret is a new reference. */
static int doc_pruned_tree(json_t *doc, const ReportOptions *o, bool by_function, json_t **ret) {
        json_t *tree, *root;

        if (o->pid >= 0) {
                json_auto_t *pid = json_integer((json_int_t) o->pid);
                tree = doc_scoped_tree(doc, "taskStacks", "pid", pid);
                if (!tree)
                        return -ESRCH;
        } else if (o->module) {
                json_auto_t *name = json_string(o->module);
                tree = doc_scoped_tree(doc, "moduleStacks", "name", name);
                if (!tree)
                        return -ENOENT;
        } else
                tree = reply_object(doc, "stackTree");
        root = reply_object(tree, "root");
        if (by_function && !o->offsets && root) {
                json_auto_t *merged = flamegraph_merge_functions(root);
                if (!merged)
                        return -ENOMEM;
                *ret = report_prune_tree(merged, o);
        } else
                *ret = report_prune_tree(root, o);
        return *ret ? 0 : -ENOMEM;
}

/* The tasks (or modules) a *_summary / *_top report lists, as items: the focused one, or those with pages
 * that make up the throttle share, at most max of them (0: no limit). */
static int doc_select(json_t *doc, const ReportOptions *o, bool tasks, unsigned max, Item **ret, size_t *ret_n) {
        json_t *focus = NULL;

        if (tasks && o->pid >= 0) {
                focus = find_task(doc, o->pid);
                if (!focus)
                        return -ESRCH;
        } else if (!tasks && o->module) {
                focus = find_module(doc, o->module);
                if (!focus)
                        return -ENOENT;
        }
        if (!focus)
                return select_items(tasks ? doc_tasks(doc) : doc_modules(doc), o, max, ret, ret_n);

        *ret = calloc(1, sizeof(Item));
        if (!*ret)
                return -ENOMEM;
        (*ret)[0] = (Item) { focus, sort_key(focus, o->sort), 0 };
        *ret_n = 1;
        return 0;
}

/* The units a unit_* report lists, as items: those with pages that make up the throttle share. Returns 1
 * (nothing in *ret) when the document has no units at all (see doc_units()), which each format says in its
 * own way; else 0 or -ENOMEM. */
static int doc_select_units(json_t *doc, const ReportOptions *o, unsigned max, Item **ret, size_t *ret_n) {
        if (!doc_units(doc))
                return 1;
        return select_items(doc_units(doc), o, max, ret, ret_n);
}

/* ---- Text ------------------------------------------------------------------------------------------- */

static double megabytes(uint64_t pages, uint64_t page_size) {
        return (double) pages * (double) page_size / 1024.0 / 1024.0;
}

/* Reports of stacks from sampled ones (Status stackSampleInterval above 1) say so first, as every stack
 * view does: their pages per stack are an estimate scaled to the exact counts. */
static void print_stack_sampling(json_t *doc, FILE *f) {
        uint64_t interval = reply_count(reply_object(doc, "status"), "stackSampleInterval");
        char buf[FORMAT_STACK_SAMPLING_MAX];

        if (interval > 1)
                fprintf(f, "Stacks sampled: %s\n", format_stack_sampling(buf, sizeof(buf), interval));
}

/* One line per node, memstrack's top-stack shape: "frame module (0xaddr) Pages: N (peak: M)". */
static int print_memstrack_tree(FILE *f, const json_t *node, unsigned indent) {
        _cleanup_free_ char *frame = format_sanitize(reply_string(node, "frame") ?: "[unknown]");
        _cleanup_free_ char *module = format_sanitize(reply_string(node, "module") ?: "");
        json_t *address = json_object_get(node, "address"), *child;
        int64_t peak = reply_node_peak(node);
        size_t i;
        int r;

        if (!frame || !module)
                return -ENOMEM;
        fprintf(f, "%*s%s", (int) indent, "", frame);
        if (module[0])
                fprintf(f, " %s", module);
        if (json_is_string(address))
                fprintf(f, " (%s)", json_string_value(address));
        fprintf(f, " Pages: %" PRIu64, reply_count(node, "currentPages"));
        if (peak >= 0)
                fprintf(f, " (peak: %" PRIi64 ")\n", peak);
        else
                fprintf(f, " (peak: n/a)\n");

        json_array_foreach(reply_array(node, "children"), i, child) {
                r = print_memstrack_tree(f, child, indent + 2);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int text_summary(json_t *doc, const ReportOptions *o, bool tasks, FILE *f) {
        _cleanup_free_ Item *items = NULL;
        uint64_t page_size = doc_page_size(doc);
        size_t n;
        int r;

        r = doc_select(doc, o, tasks, o->top, &items, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json;
                uint64_t cur = reply_count(e, "currentPages"), peak = reply_count(e, "peakPages");
                _cleanup_free_ char *name = format_sanitize(reply_string(e, tasks ? "comm" : "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                if (tasks)
                        fprintf(f, "Task %s (%" PRIi64 ") using %.1fMB (%" PRIu64 " pages), "
                                "peak usage %.1fMB (%" PRIu64 " pages)\n",
                                name, reply_int(e, "pid", -1), megabytes(cur, page_size), cur,
                                megabytes(peak, page_size), peak);
                else
                        fprintf(f, "Module %s using %.1fMB (%" PRIu64 " pages), "
                                "peak allocation %.1fMB (%" PRIu64 " pages)\n",
                                name, megabytes(cur, page_size), cur, megabytes(peak, page_size), peak);
        }
        return 0;
}

static int text_top(json_t *doc, const ReportOptions *o, bool tasks, FILE *f) {
        _cleanup_free_ Item *items = NULL;
        size_t n;
        int r;

        r = doc_select(doc, o, tasks, 0, &items, &n);
        if (r < 0)
                return r;
        print_stack_sampling(doc, f);
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json, *tree;
                _cleanup_free_ char *name = format_sanitize(reply_string(e, tasks ? "comm" : "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                if (tasks) {
                        fprintf(f, "Top stack usage of task %s (%" PRIi64 "):\n", name, reply_int(e, "pid", -1));
                        tree = doc_scoped_tree(doc, "taskStacks", "pid", json_object_get(e, "pid"));
                } else {
                        fprintf(f, "Top stack usage of module %s:\n", name);
                        tree = doc_scoped_tree(doc, "moduleStacks", "name", json_object_get(e, "name"));
                }
                if (!tree) {
                        fprintf(f, "  (no stack tree recorded)\n");
                        continue;
                }
                json_auto_t *pruned = report_prune_tree(reply_object(tree, "root"), o);
                if (!pruned)
                        return -ENOMEM;
                r = print_memstrack_tree(f, pruned, 2);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* unit_summary's line of one unit, as the task and module summaries' lines. */
static int print_unit_line(FILE *f, const json_t *e, const ReportOptions *o, uint64_t page_size) {
        uint64_t cur = reply_count(e, "currentPages"), peak = reply_count(e, "peakPages");
        uint64_t tasks = reply_count(e, "tasks");
        _cleanup_free_ char *name = format_sanitize(reply_string(e, "name") ?: "?");

        if (!name)
                return -ENOMEM;
        fprintf(f, "Unit %s using %.1fMB (%" PRIu64 " pages), peak usage %.1fMB (%" PRIu64 " pages), "
                "%" PRIu64 " task%s%s\n", name, megabytes(cur, page_size), cur,
                megabytes(peak, page_size), peak, tasks, tasks == 1 ? "" : "s",
                reply_bool(e, "live", true) ? "" : " (removed)");
        return 0;
}

/* unit_top's part of one unit: its biggest stacks as the daemon sent them (flat, innermost frame first,
 * as a backtrace), the stacks too cut at the throttle share of the unit's stacks. */
static int print_unit_stacks(FILE *f, const json_t *e, const ReportOptions *o, uint64_t page_size) {
        _cleanup_free_ char *name = format_sanitize(reply_string(e, "name") ?: "?");
        _cleanup_free_ Item *stacks = NULL;
        size_t n_stacks;
        int r;

        if (!name)
                return -ENOMEM;
        fprintf(f, "Top stacks of unit %s:\n", name);
        r = select_items(reply_array(e, "topStacks"), o, o->top, &stacks, &n_stacks);
        if (r < 0)
                return r;
        if (n_stacks == 0)
                fprintf(f, "  (no stacks recorded)\n");
        for (size_t k = 0; k < n_stacks; k++) {
                uint64_t pages = reply_count(stacks[k].json, "currentPages");
                json_t *frame;
                size_t j;

                fprintf(f, "  Pages: %" PRIu64 " (%.1fMB)\n", pages, megabytes(pages, page_size));
                json_array_foreach(reply_array(stacks[k].json, "frames"), j, frame) {
                        _cleanup_free_ char *clean = format_sanitize(json_string_value(frame) ?: "?");
                        if (!clean)
                                return -ENOMEM;
                        fprintf(f, "    %s\n", clean);
                }
        }
        return 0;
}

/* unit_summary, or with stacks unit_top: the units making up the throttle share, as the task and module
 * formats list theirs. */
static int text_units(json_t *doc, const ReportOptions *o, bool with_stacks, FILE *f) {
        _cleanup_free_ Item *items = NULL;
        uint64_t page_size = doc_page_size(doc);
        size_t n;
        int r;

        r = doc_select_units(doc, o, with_stacks ? 0 : o->top, &items, &n);
        if (r < 0)
                return r;
        if (r > 0) {
                fputs("(no units: memstrackd did not report them when the snapshot was taken)\n", f);
                return 0;
        }
        if (with_stacks)
                print_stack_sampling(doc, f);
        for (size_t i = 0; i < n; i++) {
                r = (with_stacks ? print_unit_stacks : print_unit_line)(f, items[i].json, o, page_size);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* memtrail-style: percentages of the total, ASCII branches. */
static int print_percent_tree(FILE *f, const json_t *node, uint64_t total, uint64_t page_size,
                char *prefix, size_t prefix_len, bool last, bool root) {
        _cleanup_free_ char *label = reply_frame_label(node), *clean = NULL;
        uint64_t cur = reply_count(node, "currentPages");
        int64_t peak = reply_node_peak(node);
        char size[FORMAT_BUFFER_MAX], peak_text[FORMAT_BUFFER_MAX];
        json_t *children = reply_array(node, "children"), *child;
        size_t i, n = json_array_size(children);
        int r;

        if (!label || !(clean = format_sanitize(label)))
                return -ENOMEM;
        if (peak >= 0)
                (void) snprintf(peak_text, sizeof(peak_text), "%" PRIi64, peak);
        else
                (void) snprintf(peak_text, sizeof(peak_text), "n/a");
        fprintf(f, "%.*s%s%6.2f%% (%s, %" PRIu64 " pages, peak %s) %s\n", (int) prefix_len, prefix,
                root ? "" : last ? "`-> " : "+-> ", total > 0 ? 100.0 * (double) cur / (double) total : 0.0,
                format_pages(size, sizeof(size), cur, page_size), cur, peak_text, clean);

        /* Children are drawn under this node: a continuing "|   " unless this was the last child. */
        size_t child_len = prefix_len;
        if (!root) {
                memcpy(prefix + prefix_len, last ? "    " : "|   ", 4);
                child_len += 4;
        }
        json_array_foreach(children, i, child) {
                r = print_percent_tree(f, child, total, page_size, prefix, child_len, i + 1 == n, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int text_stack_tree(json_t *doc, const ReportOptions *o, FILE *f) {
        char a[FORMAT_BUFFER_MAX];
        int r;

        json_auto_t *pruned = NULL;
        r = doc_pruned_tree(doc, o, false, &pruned);
        if (r < 0)
                return r;
        uint64_t total = reply_count(pruned, "currentPages");
        /* 4 columns per level; the daemon sends at most 255 levels. */
        _cleanup_free_ char *prefix = malloc(4 * (REPORT_DEPTH_MAX + 2));
        if (!prefix)
                return -ENOMEM;
        fprintf(f, "Total: %s (%" PRIu64 " pages); percentages are of this total\n",
                format_pages(a, sizeof(a), total, doc_page_size(doc)), total);
        print_stack_sampling(doc, f);
        return print_percent_tree(f, pruned, total, doc_page_size(doc), prefix, 0, true, true);
}

/* A frame for folded output: ';' separates frames there and would split one. */
static char *folded_label(const json_t *node) {
        _cleanup_free_ char *label = reply_frame_label(node);
        char *clean = label ? format_sanitize(label) : NULL;

        for (char *p = clean; p && *p; p++)
                if (*p == ';')
                        *p = ':';
        return clean;
}

typedef int (*FoldedCallback)(char **frames, size_t n_frames, uint64_t pages, void *userdata);

/* Calls cb for every node holding pages of its own, with the frames from below the root down to it. */
static int walk_folded(const json_t *node, char **frames, size_t depth, FoldedCallback cb, void *userdata) {
        uint64_t self = reply_count(node, "selfPages");
        json_t *child;
        size_t i;
        int r;

        if (self > 0 && depth > 0) {
                r = cb(frames, depth, self, userdata);
                if (r < 0)
                        return r;
        }
        json_array_foreach(reply_array(node, "children"), i, child) {
                frames[depth] = folded_label(child);
                if (!frames[depth])
                        return -ENOMEM;
                r = walk_folded(child, frames, depth + 1, cb, userdata);
                frames[depth] = mfree(frames[depth]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int folded_print_line(char **frames, size_t n, uint64_t pages, void *userdata) {
        FILE *f = userdata;

        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%s", i > 0 ? ";" : "", frames[i]);
        fprintf(f, " %" PRIu64 "\n", pages);
        return 0;
}

static int folded_json_line(char **frames, size_t n, uint64_t pages, void *userdata) {
        json_t *list = userdata;
        json_auto_t *stack = json_array();

        if (!stack)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(stack, json_string(frames[i])) < 0)
                        return -ENOMEM;
        if (json_array_append_new(list, json_pack("{s:O, s:I}", "stack", stack, "pages", (json_int_t) pages)) < 0)
                return -ENOMEM;
        return 0;
}

/* Root frame's pages without a stack go on a line of their own, named after the root. */
static int folded(json_t *doc, const ReportOptions *o, FoldedCallback cb, void *userdata) {
        char *frames[REPORT_DEPTH_MAX + 2] = {};
        int r;

        json_auto_t *pruned = NULL;
        r = doc_pruned_tree(doc, o, false, &pruned);
        if (r < 0)
                return r;
        if (reply_count(pruned, "selfPages") > 0) {
                _cleanup_free_ char *root = folded_label(pruned);
                if (!root)
                        return -ENOMEM;
                r = cb(&root, 1, reply_count(pruned, "selfPages"), userdata);
                if (r < 0)
                        return r;
        }
        return walk_folded(pruned, frames, 0, cb, userdata);
}

static int text_flamegraph(json_t *doc, const ReportOptions *o, FILE *f) {
        FlamegraphInfo info = {
                .page_size = doc_page_size(doc),
                .host = reply_string(doc, "host"),
                .realtime_usec = reply_count(doc, "realtimeUsec"),
        };
        int r;

        json_auto_t *pruned = NULL;
        r = doc_pruned_tree(doc, o, true, &pruned);
        if (r < 0)
                return r;
        return flamegraph_write(pruned, &info, f);
}

/* ---- task_top_json ---------------------------------------------------------------------------------- */

/* A StackNode's children as memstrack's "tracenodes": an object keyed by frame, each {"pages_alloc",
 * "pages_alloc_peak" (null when the daemon does not know it), "tracenodes" if it has children}. Two
 * siblings with one label (hand-edited files) get " #2", " #3"... so no key is lost. NULL on OOM. */
static json_t *tracenodes_json(const json_t *node) {
        json_auto_t *nodes = json_object();
        json_t *child;
        size_t i;

        if (!nodes)
                return NULL;
        json_array_foreach(reply_array(node, "children"), i, child) {
                _cleanup_free_ char *label = reply_frame_label(child);
                int64_t peak = reply_node_peak(child);
                json_auto_t *entry = NULL;

                if (!label)
                        return NULL;
                for (unsigned n = 2; json_object_get(nodes, label); n++) {
                        _cleanup_free_ char *base = TAKE_PTR(label);
                        char *end = strrchr(base, '#');
                        if (end && end > base && end[-1] == ' ' && n > 2)
                                end[-1] = '\0';
                        if (asprintf(&label, "%s #%u", base, n) < 0)
                                return NULL;
                }
                entry = json_pack("{s:I, s:o}", "pages_alloc", (json_int_t) reply_count(child, "currentPages"),
                                  "pages_alloc_peak", peak >= 0 ? json_integer((json_int_t) peak) : json_null());
                if (!entry)
                        return NULL;
                if (json_array_size(reply_array(child, "children")) > 0 &&
                    json_object_set_new(entry, "tracenodes", tracenodes_json(child)) < 0)
                        return NULL;
                if (json_object_set(nodes, label, entry) < 0)
                        return NULL;
        }
        return TAKE_PTR(nodes);
}

/* memstrack's task_top_json as JSON: [{"task_name", "pid" (a string, as memstrack writes it),
 * "pages_alloc", "pages_alloc_peak", "tracenodes"}], the tasks task_top lists, each with its pruned
 * stack tree (none recorded: no tracenodes). */
static int task_top_json(json_t *doc, const ReportOptions *o, json_t **ret) {
        _cleanup_free_ Item *items = NULL;
        json_auto_t *list = json_array();
        size_t n;
        int r;

        if (!list)
                return -ENOMEM;
        r = doc_select(doc, o, true, 0, &items, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json;
                json_t *tree = doc_scoped_tree(doc, "taskStacks", "pid", json_object_get(e, "pid"));
                json_auto_t *pruned = tree ? report_prune_tree(reply_object(tree, "root"), o) : NULL;
                _cleanup_free_ char *pid = NULL;

                if (tree && !pruned)
                        return -ENOMEM;
                if (asprintf(&pid, "%" PRIi64, reply_int(e, "pid", -1)) < 0)
                        return -ENOMEM;
                json_t *entry = json_pack("{s:s, s:s, s:I, s:I, s:o}",
                                          "task_name", reply_string(e, "comm") ?: "?",
                                          "pid", pid,
                                          "pages_alloc", (json_int_t) reply_count(e, "currentPages"),
                                          "pages_alloc_peak", (json_int_t) reply_count(e, "peakPages"),
                                          "tracenodes", pruned ? tracenodes_json(pruned) : json_object());
                if (json_array_append_new(list, entry) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

/* A JSON string with its quotes and escapes. */
static int print_json_string(FILE *f, const char *s) {
        json_auto_t *j = json_string(s);
        _cleanup_free_ char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

        if (!text)
                return -ENOMEM;
        fputs(text, f);
        return 0;
}

/* One tracenode in memstrack's layout: the key indented by indent + 1, its members one further. */
static int print_tracenode_json(FILE *f, const char *key, json_t *node, unsigned indent) {
        json_t *peak = json_object_get(node, "pages_alloc_peak"), *children = json_object_get(node, "tracenodes");
        const char *child_key;
        json_t *child;
        bool first = true;
        int pad = (int) indent + 1, r;

        fprintf(f, "%*s", pad, "");
        r = print_json_string(f, key);
        if (r < 0)
                return r;
        fprintf(f, ": {\n%*s \"pages_alloc\": %" PRIu64, pad, "", reply_count(node, "pages_alloc"));
        if (json_is_integer(peak))
                fprintf(f, ",\n%*s \"pages_alloc_peak\": %" PRIi64, pad, "", (int64_t) json_integer_value(peak));
        else
                fprintf(f, ",\n%*s \"pages_alloc_peak\": null", pad, "");
        if (children) {
                fprintf(f, ",\n%*s \"tracenodes\": {\n", pad, "");
                json_object_foreach(children, child_key, child) {
                        if (!first)
                                fputs(",\n", f);
                        first = false;
                        r = print_tracenode_json(f, child_key, child, indent + 2);
                        if (r < 0)
                                return r;
                }
                fprintf(f, "\n%*s }\n", pad, "");
        } else
                fputc('\n', f);
        fprintf(f, "%*s}", pad, "");
        return 0;
}

/* task_top_json as memstrack prints it, byte for byte where memstrack writes valid JSON: one member per
 * line, two columns more per level, '"pid" :"N"'. memstrack could end the list with a stray comma when
 * its throttle cut it; here a comma only separates tasks. */
static int text_task_top_json(json_t *doc, const ReportOptions *o, FILE *f) {
        json_auto_t *list = NULL;
        const char *key;
        json_t *task, *node;
        size_t i;
        int r;

        r = task_top_json(doc, o, &list);
        if (r < 0)
                return r;
        fputs("[\n", f);
        json_array_foreach(list, i, task) {
                bool first = true;

                fputs(" {\n  \"task_name\": ", f);
                r = print_json_string(f, reply_string(task, "task_name"));
                if (r < 0)
                        return r;
                fprintf(f, ",\n  \"pid\" :\"%s\",\n", reply_string(task, "pid"));
                fprintf(f, "  \"pages_alloc\": %" PRIu64 ",\n", reply_count(task, "pages_alloc"));
                fprintf(f, "  \"pages_alloc_peak\": %" PRIu64 ",\n", reply_count(task, "pages_alloc_peak"));
                fputs("  \"tracenodes\": {\n", f);
                json_object_foreach(json_object_get(task, "tracenodes"), key, node) {
                        if (!first)
                                fputs(",\n", f);
                        first = false;
                        r = print_tracenode_json(f, key, node, 2);
                        if (r < 0)
                                return r;
                }
                fputs("\n  }\n }", f);
                fputs(i + 1 < json_array_size(list) ? ",\n" : "\n", f);
        }
        fputs("]\n", f);
        return 0;
}

/* ---- proc_slab_static ------------------------------------------------------------------------------- */

static const char *slabinfo_path(const ReportOptions *o) {
        return o->slabinfo_path ?: getenv("MEMSTRACK_SLABINFO") ?: "/proc/slabinfo";
}

static int compare_caches(const void *a, const void *b) {
        const SlabCache *x = a, *y = b;
        uint64_t px = slab_cache_pages(x), py = slab_cache_pages(y);

        if (px != py)
                return px > py ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* The caches to show, biggest first, cut at o->throttle percent of all slab pages and at o->top caches;
 * their count in *ret_n and all slab pages in *ret_total. -errno from reading (slabinfo_read()). */
static int slab_select(const ReportOptions *o, SlabInfo **ret, size_t *ret_n, uint64_t *ret_total) {
        _cleanup_(slabinfo_freep) SlabInfo *s = NULL;
        uint64_t total = 0, taken = 0, limit;
        size_t kept;
        int r;

        r = slabinfo_read(slabinfo_path(o), &s);
        if (r < 0)
                return r;
        qsort(s->caches, s->n_caches, sizeof(SlabCache), compare_caches);
        for (size_t i = 0; i < s->n_caches; i++)
                total += slab_cache_pages(&s->caches[i]);
        limit = throttle_limit(total, o->throttle);
        for (kept = 0; kept < s->n_caches && (o->top == 0 || kept < o->top); kept++) {
                /* memstrack lists empty caches too; the throttle stops once its share is there. */
                if (o->throttle < 100 && taken >= limit)
                        break;
                taken += slab_cache_pages(&s->caches[kept]);
        }
        *ret_n = kept;
        *ret_total = total;
        *ret = TAKE_PTR(s);
        return 0;
}

static const char *slab_error(int r) {
        return r == -EBADMSG ? "not a slabinfo file of version 2.x" : strerror(-r);
}

/* memstrack's "Top Slab Usage:", a "%17s: %.1f MB" line per cache. What cannot be read is said in the
 * section, so that the other formats of a report are still written. */
static int text_slab(json_t *doc, const ReportOptions *o, FILE *f) {
        _cleanup_(slabinfo_freep) SlabInfo *s = NULL;
        uint64_t page_size = doc_page_size(doc), total;
        size_t n;
        int r;

        r = slab_select(o, &s, &n, &total);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                fprintf(f, "(cannot read %s: %s)\n", slabinfo_path(o), slab_error(r));
                return 0;
        }
        fputs("Top Slab Usage:\n", f);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *name = format_sanitize(s->caches[i].name);
                if (!name)
                        return -ENOMEM;
                fprintf(f, "%17s: %.1f MB\n", name, megabytes(slab_cache_pages(&s->caches[i]), page_size));
        }
        if (s->n_bad_lines > 0)
                fprintf(f, "(%zu line%s not understood, skipped; the first is line %u)\n", s->n_bad_lines,
                        s->n_bad_lines == 1 ? "" : "s", s->first_bad_line);
        return 0;
}

/* {"totalPages", "pageSize", "caches": [{name, pages, ...}], "badLines"}, or {"path", "error"}. */
static int json_slab(json_t *doc, const ReportOptions *o, json_t **ret) {
        _cleanup_(slabinfo_freep) SlabInfo *s = NULL;
        json_auto_t *caches = NULL;
        uint64_t total;
        size_t n;
        int r;

        r = slab_select(o, &s, &n, &total);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = json_pack("{s:s, s:s}", "path", slabinfo_path(o), "error", slab_error(r));
                return *ret ? 0 : -ENOMEM;
        }
        caches = json_array();
        if (!caches)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const SlabCache *c = &s->caches[i];
                _cleanup_free_ char *name = format_sanitize(c->name);
                if (!name || json_array_append_new(caches, json_pack(
                                "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name", name,
                                "pages", (json_int_t) slab_cache_pages(c),
                                "activeObjects", (json_int_t) c->active_objects,
                                "objects", (json_int_t) c->objects,
                                "objectSize", (json_int_t) c->object_size,
                                "objectsPerSlab", (json_int_t) c->objects_per_slab,
                                "pagesPerSlab", (json_int_t) c->pages_per_slab,
                                "activeSlabs", (json_int_t) c->active_slabs,
                                "slabs", (json_int_t) c->slabs)) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:I, s:I, s:O, s:I}", "totalPages", (json_int_t) total,
                         "pageSize", (json_int_t) doc_page_size(doc), "caches", caches,
                         "badLines", (json_int_t) s->n_bad_lines);
        return *ret ? 0 : -ENOMEM;
}

/* ---- slab_callsites, slab_caches -------------------------------------------------------------------- */

/* The Slab reply of the document for call sites or caches, or NULL: none taken (an earlier memstrackd or
 * memstrackctl), or slab objects not traced. */
static json_t *doc_slab(json_t *doc, bool callsites) {
        json_t *reply = reply_object(reply_object(doc, "slab"), callsites ? "callsites" : "caches");
        return json_is_true(json_object_get(reply, "tracing")) ? reply : NULL;
}

/* How many of the rows (most live bytes first) to show: at most o->top, while those taken hold less than
 * o->throttle percent of the live bytes, as the page reports cut. */
static size_t slab_rows_shown(json_t *reply, const ReportOptions *o) {
        json_t *rows = reply_array(reply, "rows");
        uint64_t limit = throttle_limit(reply_count(reply, "liveBytesAllocated"), o->throttle), taken = 0;
        size_t n = 0;

        while (n < json_array_size(rows) && (o->top == 0 || n < o->top) && (n == 0 || taken < limit)) {
                taken += reply_count(json_array_get(rows, n), "liveBytesAllocated");
                n++;
        }
        return n;
}

static int text_slab_objects(json_t *doc, const ReportOptions *o, bool callsites, FILE *f) {
        json_t *reply = doc_slab(doc, callsites);
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX];

        if (!reply) {
                fputs("(no slab objects in this snapshot: memstrackd traces them with --slab)\n", f);
                return 0;
        }
        fprintf(f, "Slab objects by %s: %" PRIu64 " live, %s allocated for %s requested (waste %.1f%%), peak %s;"
                " %" PRIu64 " frees of unknown objects, %" PRIu64 " lost frees, %" PRIu64 " dropped\n",
                callsites ? "call site" : "cache", reply_count(reply, "liveObjects"),
                format_bytes(a, sizeof(a), reply_count(reply, "liveBytesAllocated")),
                format_bytes(b, sizeof(b), reply_count(reply, "liveBytesRequested")),
                json_number_value(json_object_get(reply, "wastePercent")),
                format_bytes(c, sizeof(c), reply_count(reply, "peakLiveBytes")), reply_count(reply, "unknownFrees"),
                reply_count(reply, "lostFrees"), reply_count(reply, "droppedObjects"));
        for (size_t i = 0, n = slab_rows_shown(reply, o); i < n; i++) {
                json_t *row = json_array_get(reply_array(reply, "rows"), i);
                _cleanup_free_ char *name = format_sanitize(reply_string(row, "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                fprintf(f, "  %s: %" PRIu64 " objects, %s (%s requested, waste %.1f%%), peak %s, %" PRIu64
                        " allocs, %" PRIu64 " frees (%" PRIu64 " on another CPU)\n", name,
                        reply_count(row, "liveObjects"), format_bytes(a, sizeof(a), reply_count(row, "liveBytesAllocated")),
                        format_bytes(b, sizeof(b), reply_count(row, "liveBytesRequested")),
                        json_number_value(json_object_get(row, "wastePercent")),
                        format_bytes(c, sizeof(c), reply_count(row, "peakLiveBytes")), reply_count(row, "allocs"),
                        reply_count(row, "frees"), reply_count(row, "remoteFrees"));
        }
        return 0;
}

/* The Slab reply with the rows shown, or {"tracing": false} when the document has none. */
static int json_slab_objects(json_t *doc, const ReportOptions *o, bool callsites, json_t **ret) {
        json_t *reply = doc_slab(doc, callsites);
        json_auto_t *copy = NULL, *rows = json_array();

        if (!rows)
                return -ENOMEM;
        if (!reply) {
                *ret = json_pack("{s:b}", "tracing", false);
                return *ret ? 0 : -ENOMEM;
        }
        copy = json_copy(reply);
        for (size_t i = 0, n = slab_rows_shown(reply, o); i < n; i++)
                if (json_array_append(rows, json_array_get(reply_array(reply, "rows"), i)) < 0)
                        return -ENOMEM;
        if (!copy || json_object_set(copy, "rows", rows) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(copy);
        return 0;
}

/* ---- leaks ------------------------------------------------------------------------------------------ */

/* Frames of a page row printed under it: enough to tell stacks apart. */
#define LEAK_FRAMES_SHOWN 8

static size_t leak_rows_shown(json_t *rows, const ReportOptions *o) {
        return o->top > 0 ? MIN(json_array_size(rows), (size_t) o->top) : json_array_size(rows);
}

static void print_growth(json_t *row, FILE *f) {
        json_t *n;
        size_t k;

        fputs("; growth", f);
        json_array_foreach(reply_array(row, "growth"), k, n)
                fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(n));
        fputc('\n', f);
}

static int text_leaks(json_t *doc, const ReportOptions *o, FILE *f) {
        json_t *reply = reply_object(doc, "leaks"), *rows = reply_array(reply, "rows"), *pages = reply_array(reply, "pages");
        char a[FORMAT_BUFFER_MAX];

        if (!reply) {
                fputs("(no leak view in this snapshot: it comes from an earlier memstrackd or memstrackctl)\n", f);
                return 0;
        }
        fprintf(f, "Live slab objects and pages older than %" PRIu64 " s; growth: of what is still live, how much was "
                "allocated in each of the last %" PRIu64 " intervals of %" PRIu64 " s, oldest first\n",
                reply_count(reply, "minAgeUsec") / 1000000, reply_count(reply, "intervals"),
                reply_count(reply, "intervalUsec") / 1000000);
        if (!json_is_true(json_object_get(reply, "tracing")))
                fputs("Slab objects: not traced (memstrackd traces them with --slab)\n", f);
        else
                fprintf(f, "Slab objects by call site:%s\n", json_array_size(rows) ? "" : " none");
        for (size_t i = 0, n = leak_rows_shown(rows, o); i < n; i++) {
                json_t *row = json_array_get(rows, i);
                _cleanup_free_ char *name = format_sanitize(reply_string(row, "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                fprintf(f, "  %s: %" PRIu64 " objects, %s, oldest %" PRIu64 " s", name, reply_count(row, "objects"),
                        format_bytes(a, sizeof(a), reply_count(row, "bytes")), reply_count(row, "oldestAgeUsec") / 1000000);
                print_growth(row, f);
        }
        fprintf(f, "Pages by process and stack:%s\n", json_array_size(pages) ? "" : " none");
        for (size_t i = 0, n = leak_rows_shown(pages, o); i < n; i++) {
                json_t *row = json_array_get(pages, i), *frame;
                _cleanup_free_ char *comm = format_sanitize(reply_string(row, "comm") ?: "?");
                size_t k;
                if (!comm)
                        return -ENOMEM;
                /* Pages of evicted processes ("[evicted]") have no pid. */
                int64_t pid = reply_int(row, "pid", -1);
                if (pid >= 0)
                        fprintf(f, "  %" PRIi64, pid);
                fprintf(f, "%s%s: %" PRIu64 " pages, oldest %" PRIu64 " s", pid >= 0 ? " " : "  ", comm,
                        reply_count(row, "pages"), reply_count(row, "oldestAgeUsec") / 1000000);
                print_growth(row, f);
                if (json_array_size(reply_array(row, "frames")) == 0)
                        fputs("      (no stack)\n", f);
                json_array_foreach(reply_array(row, "frames"), k, frame) {
                        if (k == LEAK_FRAMES_SHOWN) {
                                fprintf(f, "      ... %zu more\n", json_array_size(reply_array(row, "frames")) - k);
                                break;
                        }
                        _cleanup_free_ char *name = format_sanitize(json_string_value(frame) ?: "?");
                        if (!name)
                                return -ENOMEM;
                        fprintf(f, "      %s\n", name);
                }
        }
        return 0;
}

/* The Leaks reply with the rows shown, or null when the document has none. */
static int json_leaks(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_t *reply = reply_object(doc, "leaks");
        json_auto_t *copy = NULL;
        static const char *const lists[] = { "rows", "pages" };

        if (!reply) {
                *ret = json_null();
                return 0;
        }
        copy = json_deep_copy(reply);
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                json_t *list = json_object_get(copy, lists[i]);
                while (json_is_array(list) && json_array_size(list) > leak_rows_shown(list, o))
                        if (json_array_remove(list, json_array_size(list) - 1) < 0)
                                return -ENOMEM;
        }
        *ret = TAKE_PTR(copy);
        return 0;
}

int report_render(json_t *doc, const ReportOptions *o, FILE *f) {
        int r = 0;

        assert(doc);
        assert(o);
        assert(f);

        for (size_t i = 0; i < o->n_formats; i++) {
                ReportOptions one = report_options_for(o, i);
                ReportFormat format = one.formats[0].format;
                if (o->n_formats > 1)
                        fprintf(f, "======== Report format %s: ========\n", report_format_to_string(format));
                switch (format) {
                case REPORT_TASK_SUMMARY:
                case REPORT_MODULE_SUMMARY:
                        r = text_summary(doc, &one, format == REPORT_TASK_SUMMARY, f);
                        break;
                case REPORT_TASK_TOP:
                case REPORT_MODULE_TOP:
                        r = text_top(doc, &one, format == REPORT_TASK_TOP, f);
                        break;
                case REPORT_UNIT_SUMMARY:
                case REPORT_UNIT_TOP:
                        r = text_units(doc, &one, format == REPORT_UNIT_TOP, f);
                        break;
                case REPORT_STACK_TREE:
                        r = text_stack_tree(doc, &one, f);
                        break;
                case REPORT_FOLDED:
                        r = folded(doc, &one, folded_print_line, f);
                        break;
                case REPORT_FLAMEGRAPH:
                        r = text_flamegraph(doc, &one, f);
                        break;
                case REPORT_TASK_TOP_JSON:
                        r = text_task_top_json(doc, &one, f);
                        break;
                case REPORT_PROC_SLAB_STATIC:
                        r = text_slab(doc, &one, f);
                        break;
                case REPORT_SLAB_CALLSITES:
                case REPORT_SLAB_CACHES:
                        r = text_slab_objects(doc, &one, format == REPORT_SLAB_CALLSITES, f);
                        break;
                case REPORT_LEAKS:
                        r = text_leaks(doc, &one, f);
                        break;
                default:
                        assert(false);
                }
                if (r < 0)
                        return r;
                if (o->n_formats > 1)
                        fprintf(f, "======== Report format %s END ========\n", report_format_to_string(format));
        }
        if (fflush(f) != 0 || ferror(f))
                return -EIO;
        return 0;
}

/* ---- JSON ------------------------------------------------------------------------------------------- */

static int json_list(json_t *doc, const ReportOptions *o, bool tasks, bool with_trees, json_t **ret) {
        _cleanup_free_ Item *items = NULL;
        json_auto_t *list = json_array();
        size_t n;
        int r;

        if (!list)
                return -ENOMEM;
        r = doc_select(doc, o, tasks, with_trees ? 0 : o->top, &items, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json;
                json_auto_t *entry = tasks ?
                        json_pack("{s:O, s:O, s:I, s:I, s:b}", "pid", or_null(json_object_get(e, "pid")),
                                  "comm", or_null(json_object_get(e, "comm")),
                                  "currentPages", (json_int_t) reply_count(e, "currentPages"),
                                  "peakPages", (json_int_t) reply_count(e, "peakPages"),
                                  "exited", reply_bool(e, "exited", false)) :
                        json_pack("{s:O, s:I, s:I}", "name", or_null(json_object_get(e, "name")),
                                  "currentPages", (json_int_t) reply_count(e, "currentPages"),
                                  "peakPages", (json_int_t) reply_count(e, "peakPages"));
                if (!entry)
                        return -ENOMEM;
                if (with_trees) {
                        json_t *tree = tasks ?
                                doc_scoped_tree(doc, "taskStacks", "pid", json_object_get(e, "pid")) :
                                doc_scoped_tree(doc, "moduleStacks", "name", json_object_get(e, "name"));
                        json_t *pruned = tree ? report_prune_tree(reply_object(tree, "root"), o) : json_null();
                        if (!pruned || json_object_set_new(entry, "stackTree", pruned) < 0)
                                return -ENOMEM;
                }
                if (json_array_append(list, entry) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

/* Units as a list (with their selected stacks for unit_top), or null when the document has none. */
static int json_unit_list(json_t *doc, const ReportOptions *o, bool with_stacks, json_t **ret) {
        _cleanup_free_ Item *items = NULL;
        json_auto_t *list = NULL;
        size_t n;
        int r;

        r = doc_select_units(doc, o, with_stacks ? 0 : o->top, &items, &n);
        if (r < 0)
                return r;
        if (r > 0) {
                *ret = json_null();
                return 0;
        }
        list = json_array();
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json;
                json_auto_t *entry = json_pack("{s:O, s:I, s:I, s:I, s:b}",
                                               "name", or_null(json_object_get(e, "name")),
                                               "currentPages", (json_int_t) reply_count(e, "currentPages"),
                                               "peakPages", (json_int_t) reply_count(e, "peakPages"),
                                               "tasks", (json_int_t) reply_count(e, "tasks"),
                                               "live", reply_bool(e, "live", true));
                if (!entry)
                        return -ENOMEM;
                if (with_stacks) {
                        _cleanup_free_ Item *stacks = NULL;
                        json_auto_t *kept = json_array();
                        size_t n_stacks;

                        if (!kept)
                                return -ENOMEM;
                        r = select_items(reply_array(e, "topStacks"), o, o->top, &stacks, &n_stacks);
                        if (r < 0)
                                return r;
                        for (size_t k = 0; k < n_stacks; k++) {
                                json_t *frames = reply_array(stacks[k].json, "frames");
                                json_int_t pages = (json_int_t) reply_count(stacks[k].json, "currentPages");
                                if (json_array_append_new(kept, json_pack("{s:o, s:I}", "frames",
                                                          frames ? json_incref(frames) : json_array(),
                                                          "currentPages", pages)) < 0)
                                        return -ENOMEM;
                        }
                        if (json_object_set(entry, "topStacks", kept) < 0)
                                return -ENOMEM;
                }
                if (json_array_append(list, entry) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

static int json_tree(json_t *doc, const ReportOptions *o, bool by_function, json_t **ret) {
        int r;

        json_auto_t *pruned = NULL;
        r = doc_pruned_tree(doc, o, by_function, &pruned);
        if (r < 0)
                return r;
        *ret = json_pack("{s:I, s:I, s:O}", "totalPages", (json_int_t) reply_count(pruned, "currentPages"),
                         "pageSize", (json_int_t) doc_page_size(doc), "root", pruned);
        return *ret ? 0 : -ENOMEM;
}

int report_render_json(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_auto_t *out = json_object();
        int r = 0;

        assert(doc);
        assert(o);
        assert(ret);

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_formats; i++) {
                ReportOptions one = report_options_for(o, i);
                ReportFormat format = one.formats[0].format;
                json_t *part = NULL;

                switch (format) {
                case REPORT_TASK_SUMMARY:
                case REPORT_MODULE_SUMMARY:
                        r = json_list(doc, &one, format == REPORT_TASK_SUMMARY, false, &part);
                        break;
                case REPORT_TASK_TOP:
                case REPORT_MODULE_TOP:
                        r = json_list(doc, &one, format == REPORT_TASK_TOP, true, &part);
                        break;
                case REPORT_UNIT_SUMMARY:
                case REPORT_UNIT_TOP:
                        r = json_unit_list(doc, &one, format == REPORT_UNIT_TOP, &part);
                        break;
                case REPORT_STACK_TREE:
                case REPORT_FLAMEGRAPH:
                        r = json_tree(doc, &one, format == REPORT_FLAMEGRAPH, &part);
                        break;
                case REPORT_FOLDED:
                        part = json_array();
                        if (!part)
                                return -ENOMEM;
                        r = folded(doc, &one, folded_json_line, part);
                        break;
                case REPORT_TASK_TOP_JSON:
                        r = task_top_json(doc, &one, &part);
                        break;
                case REPORT_PROC_SLAB_STATIC:
                        r = json_slab(doc, &one, &part);
                        break;
                case REPORT_SLAB_CALLSITES:
                case REPORT_SLAB_CACHES:
                        r = json_slab_objects(doc, &one, format == REPORT_SLAB_CALLSITES, &part);
                        break;
                case REPORT_LEAKS:
                        r = json_leaks(doc, &one, &part);
                        break;
                default:
                        assert(false);
                }
                if (r < 0) {
                        json_decref(part);
                        return r;
                }
                if (json_object_set_new(out, report_format_to_string(format), part) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}
