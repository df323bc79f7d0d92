/* SPDX-License-Identifier: MIT */

/*
 * The family "task-top-json": memstrack's task_top_json, the tasks task_top lists with their stack
 * trees as nested "tracenodes", printed in memstrack's own layout.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "report-select.h"

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
static int json_task_top_json(json_t *doc, const ReportOptions *o, json_t **ret) {
        _cleanup_free_ ReportItem *items = NULL;
        json_auto_t *list = json_array();
        size_t n;
        int r;

        if (!list)
                return -ENOMEM;
        r = report_doc_select(doc, o, true, 0, &items, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *e = items[i].json;
                json_t *tree = report_doc_scoped_tree(doc, "taskStacks", "pid", json_object_get(e, "pid"));
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

        r = json_task_top_json(doc, o, &list);
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

const ReportFormat report_format_task_top_json = {
        .name = "task_top_json",
        .family = "task-top-json",
        .text = text_task_top_json,
        .json = json_task_top_json,
};
