/* SPDX-License-Identifier: MIT */

/*
 * The family "summary-top": memstrack's lists of tasks and modules, a line each (task_summary,
 * module_summary) or each with its own stack tree (task_top, module_top).
 */

#include <inttypes.h>
#include <stdlib.h>

#include "format-text.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "report-select.h"

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
        _cleanup_free_ ReportItem *items = NULL;
        uint64_t page_size = report_doc_page_size(doc);
        size_t n;
        int r;

        r = report_doc_select(doc, o, tasks, o->top, &items, &n);
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
                                name, reply_int(e, "pid", -1), report_megabytes(cur, page_size), cur,
                                report_megabytes(peak, page_size), peak);
                else
                        fprintf(f, "Module %s using %.1fMB (%" PRIu64 " pages), "
                                "peak allocation %.1fMB (%" PRIu64 " pages)\n",
                                name, report_megabytes(cur, page_size), cur, report_megabytes(peak, page_size),
                                peak);
        }
        return 0;
}

static int text_top(json_t *doc, const ReportOptions *o, bool tasks, FILE *f) {
        _cleanup_free_ ReportItem *items = NULL;
        size_t n;
        int r;

        r = report_doc_select(doc, o, tasks, 0, &items, &n);
        if (r < 0)
                return r;
        report_print_stack_sampling(doc, f);
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json, *tree;
                _cleanup_free_ char *name = format_sanitize(reply_string(e, tasks ? "comm" : "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                if (tasks) {
                        fprintf(f, "Top stack usage of task %s (%" PRIi64 "):\n", name, reply_int(e, "pid", -1));
                        tree = report_doc_scoped_tree(doc, "taskStacks", "pid", json_object_get(e, "pid"));
                } else {
                        fprintf(f, "Top stack usage of module %s:\n", name);
                        tree = report_doc_scoped_tree(doc, "moduleStacks", "name",
                                                      json_object_get(e, "name"));
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

/* The tasks (or modules) as JSON objects, each with its pruned stack tree if with_trees (null when none
 * was recorded). */
static int json_list(json_t *doc, const ReportOptions *o, bool tasks, bool with_trees, json_t **ret) {
        _cleanup_free_ ReportItem *items = NULL;
        json_auto_t *list = json_array();
        size_t n;
        int r;

        if (!list)
                return -ENOMEM;
        r = report_doc_select(doc, o, tasks, with_trees ? 0 : o->top, &items, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json;
                json_auto_t *entry = tasks ?
                        json_pack("{s:O, s:O, s:I, s:I, s:b}",
                                  "pid", report_or_null(json_object_get(e, "pid")),
                                  "comm", report_or_null(json_object_get(e, "comm")),
                                  "currentPages", (json_int_t) reply_count(e, "currentPages"),
                                  "peakPages", (json_int_t) reply_count(e, "peakPages"),
                                  "exited", reply_bool(e, "exited", false)) :
                        json_pack("{s:O, s:I, s:I}", "name", report_or_null(json_object_get(e, "name")),
                                  "currentPages", (json_int_t) reply_count(e, "currentPages"),
                                  "peakPages", (json_int_t) reply_count(e, "peakPages"));
                if (!entry)
                        return -ENOMEM;
                if (with_trees) {
                        json_t *tree = tasks ?
                                report_doc_scoped_tree(doc, "taskStacks", "pid", json_object_get(e, "pid")) :
                                report_doc_scoped_tree(doc, "moduleStacks", "name",
                                                       json_object_get(e, "name"));
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

static int text_task_summary(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_summary(doc, o, true, f);
}

static int json_task_summary(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_list(doc, o, true, false, ret);
}

static int text_task_top(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_top(doc, o, true, f);
}

static int json_task_top(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_list(doc, o, true, true, ret);
}

static int text_module_summary(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_summary(doc, o, false, f);
}

static int json_module_summary(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_list(doc, o, false, false, ret);
}

static int text_module_top(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_top(doc, o, false, f);
}

static int json_module_top(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_list(doc, o, false, true, ret);
}

const ReportFormat report_format_task_summary = {
        .name = "task_summary",
        .family = "summary-top",
        .text = text_task_summary,
        .json = json_task_summary,
};

const ReportFormat report_format_task_top = {
        .name = "task_top",
        .family = "summary-top",
        .text = text_task_top,
        .json = json_task_top,
};

const ReportFormat report_format_module_summary = {
        .name = "module_summary",
        .family = "summary-top",
        .text = text_module_summary,
        .json = json_module_summary,
};

const ReportFormat report_format_module_top = {
        .name = "module_top",
        .family = "summary-top",
        .text = text_module_top,
        .json = json_module_top,
};
