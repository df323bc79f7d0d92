/* SPDX-License-Identifier: MIT */

/* Finding, choosing and cutting what a report shows (report-select.h), and report_prune_tree(). */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "format-text.h"
#include "macro.h"
#include "reply.h"
#include "report-select.h"

int report_compare_items(const void *a, const void *b) {
        const ReportItem *x = a, *y = b;

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

uint64_t report_throttle_limit(uint64_t total, unsigned percent) {
        return total / 100 * percent + (total % 100 * percent + 99) / 100;
}

int report_select_items(json_t *array, const ReportOptions *o, unsigned max, ReportItem **ret,
                size_t *ret_n) {
        _cleanup_free_ ReportItem *items = calloc(MAX(json_array_size(array), (size_t) 1), sizeof(*items));
        uint64_t total = 0, taken = 0, limit;
        size_t n = 0, kept = 0, i;
        json_t *e;

        if (!items)
                return -ENOMEM;
        json_array_foreach(array, i, e) {
                uint64_t key = sort_key(e, o->sort);
                if (key == 0)
                        continue;
                items[n++] = (ReportItem) { e, key, i };
                total += key;
        }
        qsort(items, n, sizeof(ReportItem), report_compare_items);

        limit = report_throttle_limit(total, o->throttle);
        for (kept = 0; kept < n && taken < limit && (max == 0 || kept < max); kept++)
                taken += items[kept].key;
        *ret_n = kept;
        *ret = TAKE_PTR(items);
        return 0;
}

static json_t *prune(const json_t *node, const ReportOptions *o, int64_t depth) {
        json_t *children = reply_array(node, "children");
        size_t n_children = json_array_size(children), n = 0, dropped = 0, i;
        _cleanup_free_ ReportItem *items = calloc(MAX(n_children, (size_t) 1), sizeof(ReportItem));
        json_auto_t *copy = json_copy((json_t *) node), *kept = json_array();
        uint64_t current = reply_count(node, "currentPages"), in_children = 0, taken = 0;
        /* REPORT_DEPTH_MAX bounds the recursion for hand-edited files as deep as jansson allows. */
        bool cut_here = (o->max_depth >= 0 && depth >= o->max_depth) || depth >= REPORT_DEPTH_MAX;
        json_t *e;

        if (!items || !copy || !kept)
                return NULL;
        json_array_foreach(children, i, e) {
                items[n++] = (ReportItem) { e, sort_key(e, o->sort), i };
                in_children += reply_count(e, "currentPages");
        }
        qsort(items, n, sizeof(ReportItem), report_compare_items);

        uint64_t limit = report_throttle_limit(sort_key(node, o->sort), o->throttle);
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

uint64_t report_doc_page_size(json_t *doc) {
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

json_t *report_doc_scoped_tree(json_t *doc, const char *list, const char *key, json_t *value) {
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

/* ---- Heaps as a stack tree --------------------------------------------------------------------------- */

static json_t *doc_heaps(json_t *doc) {
        return reply_array(reply_object(doc, "heap"), "heaps");
}

bool report_doc_stacks_are_heaps(json_t *doc) {
        json_t *tree = reply_object(doc, "stackTree");
        return json_array_size(doc_heaps(doc)) > 0 && reply_count(reply_object(tree, "root"), "currentPages") == 0;
}

char *report_heap_frame_label_at(const json_t *node, size_t level) {
        json_t *inlined = reply_array(node, "inlinedInto"), *in;
        const json_t *at = level == 0 ? node : json_array_get(inlined, level - 1);
        const char *function = reply_string(at, "function"), *file = reply_string(at, "file");
        char *s = NULL;
        size_t i;
        int r;

        if (!at)
                return NULL;
        if (level == 0 && !function && !file)
                return strdup(reply_string(node, "frame") ?: "[unknown]");
        /* Only the frame itself has a symbol to fall back on; the functions inlined into it have names. */
        if (file)
                r = asprintf(&s, "%s  %s:%" PRIi64, function ?: (level == 0 ? reply_string(node, "frame") : NULL) ?: "?",
                             file, reply_int(at, "line", 0));
        else
                r = asprintf(&s, "%s", function ?: "?");
        if (r < 0)
                return NULL;
        json_array_foreach(inlined, i, in) {
                if (i < level)
                        continue;
                char *t = NULL;
                const char *f = reply_string(in, "file");
                r = f ? asprintf(&t, "%s (inlined into %s  %s:%" PRIi64 ")", s, reply_string(in, "function") ?: "?", f,
                                 reply_int(in, "line", 0))
                      : asprintf(&t, "%s (inlined into %s)", s, reply_string(in, "function") ?: "?");
                free(s);
                if (r < 0)
                        return NULL;
                s = t;
        }
        return s;
}

char *report_heap_frame_label(const json_t *node) {
        return report_heap_frame_label_at(node, 0);
}

/* A HeapNode at the heap's maximum as a StackNode whose counts are bytes: the frames holding nothing then
 * are left out. */
static json_t *heap_as_stack_node(const json_t *node) {
        json_auto_t *children = json_array();
        _cleanup_free_ char *label = report_heap_frame_label(node);
        uint64_t bytes = reply_count(node, "maxBytes"), below = 0;
        json_t *child;
        size_t i;

        if (!children || !label)
                return NULL;
        json_array_foreach(reply_array(node, "children"), i, child) {
                if (reply_count(child, "maxBytes") == 0)
                        continue;
                json_t *c = heap_as_stack_node(child);
                if (!c || json_array_append_new(children, c) < 0)
                        return NULL;
                below += reply_count(child, "maxBytes");
        }
        return json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:O}",
                         "frame", label,
                         "module", json_incref(json_object_get(node, "module")) ?: json_null(),
                         "currentPages", (json_int_t) bytes,
                         "currentBlocks", (json_int_t) reply_count(node, "maxBlocks"),
                         "selfPages", (json_int_t) (bytes - MIN(below, bytes)),
                         "peakPages", (json_int_t) reply_count(node, "peakBytes"),
                         "truncatedChildren", (json_int_t) reply_count(node, "truncatedChildren"),
                         "children", children);
}

int report_doc_heap_tree(json_t *doc, int64_t pid, json_t **ret) {
        json_auto_t *roots = json_array();
        json_t *h;
        size_t i;
        uint64_t total = 0;

        if (!roots)
                return -ENOMEM;
        json_array_foreach(doc_heaps(doc), i, h) {
                if (pid >= 0 && reply_int(h, "pid", -1) != pid)
                        continue;
                json_t *root = heap_as_stack_node(reply_object(h, "root"));
                if (!root || json_array_append_new(roots, root) < 0)
                        return -ENOMEM;
                total += reply_count(h, "peakBytes");
        }
        if (json_array_size(roots) == 0)
                return -ESRCH;
        uint64_t blocks = 0;
        json_array_foreach(roots, i, h)
                blocks += reply_count(h, "currentBlocks");
        json_auto_t *tree = json_array_size(roots) == 1 ? json_incref(json_array_get(roots, 0)) :
                json_pack("{s:s, s:n, s:I, s:I, s:I, s:I, s:I, s:O}", "frame", "[heaps]", "module", "currentPages",
                          (json_int_t) total, "currentBlocks", (json_int_t) blocks, "selfPages", (json_int_t) 0,
                          "peakPages", (json_int_t) total, "truncatedChildren", (json_int_t) 0, "children", roots);
        if (!tree || json_object_set_new(tree, "unit", json_string("bytes")) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(tree);
        return 0;
}

int report_doc_pruned_tree(json_t *doc, const ReportOptions *o, bool by_function, json_t **ret) {
        json_t *tree, *root;
        json_auto_t *heap_root = NULL;

        if (report_doc_stacks_are_heaps(doc)) {
                int r = report_doc_heap_tree(doc, o->pid, &heap_root);
                if (r < 0)
                        return r;
                json_auto_t *pruned = report_prune_tree(heap_root, o);
                if (!pruned || json_object_set_new(pruned, "unit", json_string("bytes")) < 0)
                        return -ENOMEM;
                *ret = TAKE_PTR(pruned);
                return 0;
        }
        if (o->pid >= 0) {
                json_auto_t *pid = json_integer((json_int_t) o->pid);
                tree = report_doc_scoped_tree(doc, "taskStacks", "pid", pid);
                if (!tree)
                        return -ESRCH;
        } else if (o->module) {
                json_auto_t *name = json_string(o->module);
                tree = report_doc_scoped_tree(doc, "moduleStacks", "name", name);
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

int report_doc_select(json_t *doc, const ReportOptions *o, bool tasks, unsigned max, ReportItem **ret,
                size_t *ret_n) {
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
                return report_select_items(tasks ? doc_tasks(doc) : doc_modules(doc), o, max, ret, ret_n);

        *ret = calloc(1, sizeof(ReportItem));
        if (!*ret)
                return -ENOMEM;
        (*ret)[0] = (ReportItem) { focus, sort_key(focus, o->sort), 0 };
        *ret_n = 1;
        return 0;
}

int report_doc_select_units(json_t *doc, const ReportOptions *o, unsigned max, ReportItem **ret,
                size_t *ret_n) {
        if (!doc_units(doc))
                return 1;
        return report_select_items(doc_units(doc), o, max, ret, ret_n);
}

double report_megabytes(uint64_t pages, uint64_t page_size) {
        return (double) pages * (double) page_size / 1024.0 / 1024.0;
}

void report_print_stack_sampling(json_t *doc, FILE *f) {
        uint64_t interval = reply_count(reply_object(doc, "status"), "stackSampleInterval");
        char buf[FORMAT_STACK_SAMPLING_MAX];

        if (interval > 1)
                fprintf(f, "Stacks sampled: %s\n", format_stack_sampling(buf, sizeof(buf), interval));
}
