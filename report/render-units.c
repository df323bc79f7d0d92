/* SPDX-License-Identifier: MIT */

/*
 * The family "units": pages per systemd unit (or cgroup outside systemd's naming), a line each
 * (unit_summary) or each with its biggest stacks (unit_top). A document without units (a memstrackd
 * without the Units method, a file from before units) says so, and its JSON value is null.
 */

#include <inttypes.h>

#include "format-text.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "report-select.h"

/* unit_summary's line of one unit, as the task and module summaries' lines. */
static int print_unit_line(FILE *f, const json_t *e, const ReportOptions *o, uint64_t page_size) {
        uint64_t cur = reply_count(e, "currentPages"), peak = reply_count(e, "peakPages");
        uint64_t tasks = reply_count(e, "tasks");
        _cleanup_free_ char *name = format_sanitize(reply_string(e, "name") ?: "?");

        if (!name)
                return -ENOMEM;
        fprintf(f, "Unit %s using %.1fMB (%" PRIu64 " pages), peak usage %.1fMB (%" PRIu64 " pages), "
                "%" PRIu64 " task%s%s\n", name, report_megabytes(cur, page_size), cur,
                report_megabytes(peak, page_size), peak, tasks, tasks == 1 ? "" : "s",
                reply_bool(e, "live", true) ? "" : " (removed)");
        return 0;
}

/* unit_top's part of one unit: its biggest stacks as the daemon sent them (flat, innermost frame first,
 * as a backtrace), the stacks too cut at the throttle share of the unit's stacks. */
static int print_unit_stacks(FILE *f, const json_t *e, const ReportOptions *o, uint64_t page_size) {
        _cleanup_free_ char *name = format_sanitize(reply_string(e, "name") ?: "?");
        _cleanup_free_ ReportItem *stacks = NULL;
        size_t n_stacks;
        int r;

        if (!name)
                return -ENOMEM;
        fprintf(f, "Top stacks of unit %s:\n", name);
        r = report_select_items(reply_array(e, "topStacks"), o, o->top, &stacks, &n_stacks);
        if (r < 0)
                return r;
        if (n_stacks == 0)
                fprintf(f, "  (no stacks recorded)\n");
        for (size_t k = 0; k < n_stacks; k++) {
                uint64_t pages = reply_count(stacks[k].json, "currentPages");
                json_t *frame;
                size_t j;

                fprintf(f, "  Pages: %" PRIu64 " (%.1fMB)\n", pages, report_megabytes(pages, page_size));
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
        _cleanup_free_ ReportItem *items = NULL;
        uint64_t page_size = report_doc_page_size(doc);
        size_t n;
        int r;

        r = report_doc_select_units(doc, o, with_stacks ? 0 : o->top, &items, &n);
        if (r < 0)
                return r;
        if (r > 0) {
                fputs("(no units: memstrackd did not report them when the snapshot was taken)\n", f);
                return 0;
        }
        if (with_stacks)
                report_print_stack_sampling(doc, f);
        for (size_t i = 0; i < n; i++) {
                r = (with_stacks ? print_unit_stacks : print_unit_line)(f, items[i].json, o, page_size);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Units as a list (with their selected stacks for unit_top), or null when the document has none. */
static int json_unit_list(json_t *doc, const ReportOptions *o, bool with_stacks, json_t **ret) {
        _cleanup_free_ ReportItem *items = NULL;
        json_auto_t *list = NULL;
        size_t n;
        int r;

        r = report_doc_select_units(doc, o, with_stacks ? 0 : o->top, &items, &n);
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
                                               "name", report_or_null(json_object_get(e, "name")),
                                               "currentPages", (json_int_t) reply_count(e, "currentPages"),
                                               "peakPages", (json_int_t) reply_count(e, "peakPages"),
                                               "tasks", (json_int_t) reply_count(e, "tasks"),
                                               "live", reply_bool(e, "live", true));
                if (!entry)
                        return -ENOMEM;
                if (with_stacks) {
                        _cleanup_free_ ReportItem *stacks = NULL;
                        json_auto_t *kept = json_array();
                        size_t n_stacks;

                        if (!kept)
                                return -ENOMEM;
                        r = report_select_items(reply_array(e, "topStacks"), o, o->top, &stacks, &n_stacks);
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

static int text_unit_summary(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_units(doc, o, false, f);
}

static int json_unit_summary(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_unit_list(doc, o, false, ret);
}

static int text_unit_top(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_units(doc, o, true, f);
}

static int json_unit_top(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_unit_list(doc, o, true, ret);
}

const ReportFormat report_format_unit_summary = {
        .name = "unit_summary",
        .family = "units",
        .text = text_unit_summary,
        .json = json_unit_summary,
};

const ReportFormat report_format_unit_top = {
        .name = "unit_top",
        .family = "units",
        .text = text_unit_top,
        .json = json_unit_top,
};
