/* SPDX-License-Identifier: MIT */

/*
 * The family "stacks": the one stack tree a report is about (everything, a task's or a module's) as a
 * tree with percentages (stack_tree), as folded stacks for flame graph tools (folded), or as an SVG
 * flame graph (flamegraph, flamegraph.h). A recorded heap's document gives its heaps at their maximum in
 * bytes instead (report_doc_pruned_tree()).
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "report-select.h"

static void *mfree(void *p) {
        free(p);
        return NULL;
}

/* Whether a pruned tree counts a heap's bytes (report_doc_pruned_tree()). */
static bool tree_in_bytes(const json_t *root) {
        return streq(reply_string(root, "unit") ?: "", "bytes");
}

/* memtrail-style: percentages of the total, ASCII branches. */
/* page_size 0: the tree counts bytes (a heap's). */
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
        if (page_size == 0)
                fprintf(f, "%.*s%s%6.2f%% (%s, %" PRIu64 " bytes, most ever %s) %s\n", (int) prefix_len, prefix,
                        root ? "" : last ? "`-> " : "+-> ", total > 0 ? 100.0 * (double) cur / (double) total : 0.0,
                        format_bytes(size, sizeof(size), cur), cur, peak_text, clean);
        else
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
        r = report_doc_pruned_tree(doc, o, false, &pruned);
        if (r < 0)
                return r;
        uint64_t total = reply_count(pruned, "currentPages");
        /* 4 columns per level; the daemon sends at most 255 levels. */
        _cleanup_free_ char *prefix = malloc(4 * (REPORT_DEPTH_MAX + 2));
        if (!prefix)
                return -ENOMEM;
        if (tree_in_bytes(pruned)) {
                fprintf(f, "User-space heap at its maximum: %s (%" PRIu64 " bytes); percentages are of this "
                        "total\n", format_bytes(a, sizeof(a), total), total);
                return print_percent_tree(f, pruned, total, 0, prefix, 0, true, true);
        }
        fprintf(f, "Total: %s (%" PRIu64 " pages); percentages are of this total\n",
                format_pages(a, sizeof(a), total, report_doc_page_size(doc)), total);
        report_print_stack_sampling(doc, f);
        return print_percent_tree(f, pruned, total, report_doc_page_size(doc), prefix, 0, true, true);
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
        r = report_doc_pruned_tree(doc, o, false, &pruned);
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
                .page_size = report_doc_page_size(doc),
                .host = reply_string(doc, "host"),
                .realtime_usec = reply_count(doc, "realtimeUsec"),
        };
        int r;

        json_auto_t *pruned = NULL;
        r = report_doc_pruned_tree(doc, o, true, &pruned);
        if (r < 0)
                return r;
        info.bytes = tree_in_bytes(pruned);
        return flamegraph_write(pruned, &info, f);
}

/* {"totalPages", "pageSize", "root": the pruned tree}, for stack_tree and (by_function) flamegraph. */
static int json_tree(json_t *doc, const ReportOptions *o, bool by_function, json_t **ret) {
        int r;

        json_auto_t *pruned = NULL;
        r = report_doc_pruned_tree(doc, o, by_function, &pruned);
        if (r < 0)
                return r;
        if (tree_in_bytes(pruned))
                *ret = json_pack("{s:s, s:I, s:O}", "unit", "bytes", "totalBytes",
                                 (json_int_t) reply_count(pruned, "currentPages"), "root", pruned);
        else
                *ret = json_pack("{s:I, s:I, s:O}", "totalPages", (json_int_t) reply_count(pruned, "currentPages"),
                                 "pageSize", (json_int_t) report_doc_page_size(doc), "root", pruned);
        return *ret ? 0 : -ENOMEM;
}

static int json_stack_tree(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_tree(doc, o, false, ret);
}

static int text_folded(json_t *doc, const ReportOptions *o, FILE *f) {
        return folded(doc, o, folded_print_line, f);
}

/* [{"stack": [frame...], "pages": N}], the lines of folded. */
static int json_folded(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_auto_t *lines = json_array();
        int r;

        if (!lines)
                return -ENOMEM;
        r = folded(doc, o, folded_json_line, lines);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(lines);
        return 0;
}

static int json_flamegraph(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_tree(doc, o, true, ret);
}

const ReportFormat report_format_stack_tree = {
        .name = "stack_tree",
        .family = "stacks",
        .text = text_stack_tree,
        .json = json_stack_tree,
};

const ReportFormat report_format_folded = {
        .name = "folded",
        .family = "stacks",
        .text = text_folded,
        .json = json_folded,
};

const ReportFormat report_format_flamegraph = {
        .name = "flamegraph",
        .family = "stacks",
        .text = text_flamegraph,
        .json = json_flamegraph,
};
