/* SPDX-License-Identifier: MIT */

/*
 * The family "explain": each unit's memory as its memory cgroup counts it beside memstrack's attribution,
 * from the document's Explain replies (the biggest units': SNAPSHOT_EXPLAIN_UNITS), as memstrackctl explain
 * prints one. top=N shows the first N units.
 */

#include "explain-text.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"

static size_t explain_units_shown(json_t *list, const ReportOptions *o) {
        return o->top > 0 ? MIN(json_array_size(list), (size_t) o->top) : json_array_size(list);
}

static int text_explain(json_t *doc, const ReportOptions *o, FILE *f) {
        json_t *list = reply_array(doc, "explain");
        int r;

        if (!list) {
                fputs("(no Explain view in this snapshot: it comes from an earlier memstrackd or memstrackctl)\n", f);
                return 0;
        }
        if (json_array_size(list) == 0)
                fputs("(no unit holds pages)\n", f);
        for (size_t i = 0, n = explain_units_shown(list, o); i < n; i++) {
                if (i > 0)
                        fputc('\n', f);
                r = explain_render_text(json_array_get(list, i), f);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The Explain replies shown, or null when the document has none. */
static int json_explain(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_t *list = reply_array(doc, "explain");
        json_auto_t *shown = NULL;

        if (!list) {
                *ret = json_null();
                return 0;
        }
        shown = json_array();
        if (!shown)
                return -ENOMEM;
        for (size_t i = 0, n = explain_units_shown(list, o); i < n; i++)
                if (json_array_append(shown, json_array_get(list, i)) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(shown);
        return 0;
}

const ReportFormat report_format_explain = {
        .name = "explain",
        .family = "explain",
        .text = text_explain,
        .json = json_explain,
};
