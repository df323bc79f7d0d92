/* SPDX-License-Identifier: MIT */

/* memstrackctl report: a snapshot document from the daemon or a file, rendered by report-render.c. */

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "report.h"
#include "snapshot.h"

#define REPORT_FORMAT_DEFAULT "module_summary,module_top"

int verb_report(int argc, char *argv[]) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        _cleanup_free_ char *bad = NULL;
        _cleanup_fclose_ FILE *out = NULL;
        json_auto_t *doc = NULL;
        int r;

        r = report_parse_formats(arg_format ?: REPORT_FORMAT_DEFAULT, &o, &bad);
        if (r == -EINVAL) {
                fprintf(stderr, "memstrackctl: unknown report format '%s'; known: task_summary, task_top, "
                        "module_summary, module_top, stack_tree, folded, flamegraph.\n", bad ?: "");
                return CTL_EXIT_USAGE;
        }
        if (r < 0)
                return r;
        o.sort = report_sort_from_string(arg_sort);
        if (o.sort < 0) {
                fprintf(stderr, "memstrackctl: report sorts by current or peak.\n");
                return CTL_EXIT_USAGE;
        }
        o.throttle = arg_throttle;
        o.pid = arg_task;
        o.module = arg_module;
        o.max_depth = arg_depth;

        if (arg_from) {
                r = snapshot_load(arg_from, &doc);
                if (r != 0)
                        return r;
        } else {
                _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
                SnapshotFetch f = {
                        .sort = o.sort == REPORT_SORT_PEAK ? "peak" : "current",
                        .max_depth = arg_depth >= 0 ? (unsigned) arg_depth : 0,
                        .pid = arg_task,
                        .module = arg_module,
                };
                r = ctl_connect(&c);
                if (r != 0)
                        return r;
                r = snapshot_fetch(c, &f, &doc);
                if (r != 0)
                        return r;
        }

        if (arg_output) {
                out = fopen(arg_output, "we");
                if (!out) {
                        fprintf(stderr, "Cannot write %s: %m\n", arg_output);
                        return CTL_EXIT_FAILURE;
                }
        }

        if (arg_json != CTL_JSON_OFF) {
                json_auto_t *j = NULL;
                r = report_render_json(doc, &o, &j);
                if (r >= 0) {
                        size_t flags = arg_json == CTL_JSON_PRETTY ? JSON_INDENT(2) : JSON_COMPACT;
                        if (!out) {
                                r = ctl_print_json(j);
                        } else if (json_dumpf(j, out, flags) < 0 || fputc('\n', out) == EOF)
                                r = -EIO;
                }
        } else
                r = report_render(doc, &o, out ?: stdout);

        if (r == -ESRCH) {
                fprintf(stderr, "No task %lld%s.\n", (long long) arg_task,
                        arg_from ? " with a stack tree in the snapshot file" : " known to memstrackd");
                return CTL_EXIT_FAILURE;
        }
        if (r == -ENOENT) {
                fprintf(stderr, "No module '%s'%s.\n", arg_module,
                        arg_from ? " with a stack tree in the snapshot file" : " known to memstrackd");
                return CTL_EXIT_FAILURE;
        }
        if (r < 0)
                return r;
        if (out && fflush(out) != 0) {
                fprintf(stderr, "Failed to write %s: %m\n", arg_output);
                return CTL_EXIT_FAILURE;
        }
        return 0;
}
