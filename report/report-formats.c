/* SPDX-License-Identifier: MIT */

/*
 * The table of report formats: one X(NAME) line per format, in the order --help, the shell completions
 * and "unknown report format" messages list them. X(NAME) names the `const ReportFormat
 * report_format_NAME` its family's file defines (report-format.h); the comment after each group says
 * which file that is.
 */

#include <string.h>

#include "macro.h"
#include "report-format.h"

#define REPORT_FORMATS(X)                                                                               \
        X(task_summary)                                         /* render-summary-top.c */              \
        X(task_top)                                                                                     \
        X(module_summary)                                                                               \
        X(module_top)                                                                                   \
        X(unit_summary)                                         /* render-units.c */                    \
        X(unit_top)                                                                                     \
        X(stack_tree)                                           /* render-stacks.c */                   \
        X(folded)                                                                                       \
        X(flamegraph)                                                                                   \
        X(task_top_json)                                        /* render-task-top-json.c */            \
        X(proc_slab_static)                                     /* render-slab.c */                     \
        X(slab_callsites)                                                                               \
        X(slab_caches)                                                                                  \
        X(leaks)                                                /* render-leaks.c */                    \
        X(explain)                                              /* render-explain.c */                  \
        X(cold)                                                 /* render-cold.c */                     \
        X(cold_flamegraph)                                                                              \
        X(html)                                                 /* render-html.c */                     \
        X(heap_processes)                                       /* render-heap.c */                     \
        X(heap_maximum)                                                                                 \
        X(heap_leaks)                                                                                   \
        X(heap_lifetimes)                                                                               \
        X(crashkernel)                                          /* render-crashkernel.c */              \
        /* end of the table */

#define REPORT_FORMAT_DECLARE(n) extern const ReportFormat report_format_##n;
REPORT_FORMATS(REPORT_FORMAT_DECLARE)

#define REPORT_FORMAT_ENTRY(n) &report_format_##n,
static const ReportFormat *const report_formats[] = {
        REPORT_FORMATS(REPORT_FORMAT_ENTRY)
};

/* ReportOptions holds every format once (report_parse_formats() drops repeats). */
_Static_assert(ELEMENTSOF(report_formats) <= REPORT_FORMATS_MAX, "raise REPORT_FORMATS_MAX in report.h");

const ReportFormat *report_format_get(size_t i) {
        return i < ELEMENTSOF(report_formats) ? report_formats[i] : NULL;
}

const ReportFormat *report_format_find(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(report_formats); i++)
                if (streq(report_formats[i]->name, name))
                        return report_formats[i];
        return NULL;
}

const char *report_format_name(const ReportFormat *f) {
        return f ? f->name : NULL;
}
