/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl report: a snapshot document from the daemon or a file, rendered by the report library
 * (report.h).
 *
 * One format goes to standard output or the --output file as it is. Several formats to standard output
 * are framed by "======== Report format NAME ========" lines, as memstrack prints them; with --output
 * they go to one file each in the directory --output names (NAME.txt, flamegraph.svg, html.html,
 * NAME.json with --json), since an SVG or a page framed by text lines is no SVG or page any more. A
 * flame graph or the HTML page with other formats on standard output is refused for the same reason.
 */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format-text.h"
#include "heap-moment.h"
#include "heap-select.h"
#include "macro.h"
#include "reply.h"
#include "report.h"
#include "report-select.h"
#include "snapshot.h"

#define REPORT_FORMAT_DEFAULT "module_summary,module_top"

/* The formats of o to out as text, or as one JSON object keyed by format name. With part, only the
 * value of that format (o then holds that one format). 0 or -errno (-ESRCH, -ENOENT as report_render()). */
static int write_report(json_t *doc, const ReportOptions *o, FILE *out, bool part) {
        json_auto_t *j = NULL;
        int r;

        if (arg_json == CTL_JSON_OFF)
                return report_render(doc, o, out);

        r = report_render_json(doc, o, &j);
        if (r < 0)
                return r;
        json_t *value = part ? json_object_get(j, report_format_name(o->formats[0].format)) : j;
        if (out == stdout)
                return ctl_print_json(value);
        size_t flags = arg_json == CTL_JSON_PRETTY ? JSON_INDENT(2) : JSON_COMPACT;
        if (json_dumpf(value, out, flags | JSON_ENCODE_ANY) < 0 || fputc('\n', out) == EOF)
                return -EIO;
        return 0;
}

/* Writes path from the formats of o; closes and checks it. -errno, having said which file failed. */
static int write_file(json_t *doc, const ReportOptions *o, const char *path, bool part) {
        _cleanup_fclose_ FILE *out = NULL;
        int r;

        out = fopen(path, "we");
        if (!out) {
                r = negative_errno();
                fprintf(stderr, "Cannot write %s: %s\n", path, strerror(-r));
                return r;
        }
        r = write_report(doc, o, out, part);
        if (r == -ESRCH || r == -ENOENT || r == -ENOMEM)
                return r;
        if (r >= 0 && (fflush(out) != 0 || ferror(out)))
                r = -EIO;
        if (r < 0)
                fprintf(stderr, "Failed to write %s: %s\n", path, strerror(-r));
        return r;
}

/* Each format of o to its own file in dir: NAME.json with --json, flamegraph.svg, html.html, else NAME.txt. */
static int write_directory(json_t *doc, const ReportOptions *o, const char *dir) {
        int r;

        if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
                r = negative_errno();
                fprintf(stderr, "Cannot create the directory %s: %s\n", dir, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < o->n_formats; i++) {
                ReportOptions one = *o;
                _cleanup_free_ char *path = NULL;

                one.formats[0] = o->formats[i];
                one.n_formats = 1;
                const char *name = report_format_name(o->formats[i].format);
                if (asprintf(&path, "%s/%s.%s", dir, name, arg_json != CTL_JSON_OFF ? "json" :
                             streq(name, "flamegraph") ? "svg" : streq(name, "html") ? "html" : "txt") < 0)
                        return -ENOMEM;
                r = write_file(doc, &one, path, true);
                if (r < 0)
                        return r;
        }
        return 0;
}

void ctl_heap_options(ReportOptions *o) {
        o->heap_all = arg_all;
        o->heap_processes = arg_processes.items;
        o->n_heap_processes = arg_processes.n;
        o->heap_min_share = (unsigned) arg_min_share;
        o->keep_frames = arg_keep_frames;
        o->fold_frames = arg_fold_frames.items;
        o->n_fold_frames = arg_fold_frames.n;
}

int ctl_report_options(const char *default_formats, ReportOptions *ret) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        _cleanup_free_ char *message = NULL;
        int r;

        r = report_parse_formats(arg_format ?: default_formats, &o, &message);
        if (r == -EINVAL) {
                fprintf(stderr, "memstrackctl: %s\n", message ?: "invalid --format.");
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
        o.offsets = arg_offsets;
        ctl_heap_options(&o);

        /* Usage first, before asking the daemon for anything. */
        if (o.n_formats > 1 && !arg_output && arg_json == CTL_JSON_OFF &&
            (report_has_format(&o, "flamegraph") || report_has_format(&o, "html"))) {
                fprintf(stderr, "memstrackctl: a %s cannot share standard output with other formats; "
                        "ask for it alone, or give --output DIRECTORY for one file per format.\n",
                        report_has_format(&o, "flamegraph") ? "flame graph" : "HTML page");
                return CTL_EXIT_USAGE;
        }
        if (arg_output && o.n_formats > 1) {
                struct stat st;
                if (stat(arg_output, &st) >= 0 && !S_ISDIR(st.st_mode)) {
                        fprintf(stderr, "memstrackctl: with several formats --output names a directory "
                                "(one file per format), and %s is not one.\n", arg_output);
                        return CTL_EXIT_USAGE;
                }
        }
        *ret = o;
        return 0;
}

const char *ctl_heap_default_formats(json_t *doc) {
        return json_array_size(reply_array(reply_object(doc, "heap"), "heaps")) > 1 ? CTL_HEAP_FORMAT_PROCESSES :
                                                                                    CTL_HEAP_FORMAT_DEFAULT;
}

/* 0 when each word of --process names a heap of doc, else CTL_EXIT_FAILURE after saying which does not. */
static int check_heap_processes(json_t *doc, const ReportOptions *o) {
        HeapSelection sel;
        const char *word;
        size_t len;

        heap_selection_init(doc, o, &sel);
        word = heap_selection_unmatched(&sel, &len);
        if (!word)
                return 0;
        _cleanup_free_ char *name = strndup(word, len), *clean = name ? format_sanitize(name) : NULL;
        if (!clean)
                return -ENOMEM;
        fprintf(stderr, "memstrackctl: no process recorded has the pid or name '%s' (--process).\n", clean);
        return CTL_EXIT_FAILURE;
}

int ctl_heap_report_options(json_t *doc, bool recording, ReportOptions *o) {
        int r;

        if (!arg_format && (recording || report_doc_stacks_are_heaps(doc))) {
                r = ctl_report_options(ctl_heap_default_formats(doc), o);
                if (r != 0)
                        return r;
        }
        return check_heap_processes(doc, o);
}

/* Seconds (a decimal number, at least 0) as microseconds; -EINVAL for anything else. */
static int parse_seconds(const char *s, size_t len, uint64_t *ret) {
        char buf[64], *end;

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, len);
        buf[len] = '\0';
        errno = 0;
        double v = strtod(buf, &end);
        if (errno != 0 || *end != '\0' || !(v >= 0) || v > 1e9 || buf[0] == '-' || isspace((unsigned char) buf[0]))
                return -EINVAL;
        *ret = (uint64_t) (v * 1e6 + 0.5);
        return 0;
}

/* report --at and --between: each heap of a record file rewritten to the moment or the window
 * (heap-moment.h), and the heap formats that show it by default. 0, or an exit status after saying why. */
static int heap_time(json_t *doc, ReportOptions *o) {
        uint64_t from = 0, to = 0;
        bool window = arg_between != NULL;
        json_t *h;
        size_t i;
        int r;

        if (!arg_from || !json_is_array(reply_array(reply_object(doc, "heap"), "heaps"))) {
                fprintf(stderr, "memstrackctl: --%s goes with --from FILE, a heap recording that memstrackctl record "
                        "--file saved.\n", window ? "between" : "at");
                return CTL_EXIT_USAGE;
        }
        if (window) {
                const char *comma = strchr(arg_between, ',');
                if (!comma || parse_seconds(arg_between, (size_t) (comma - arg_between), &from) < 0 ||
                    parse_seconds(comma + 1, strlen(comma + 1), &to) < 0 || to <= from) {
                        fprintf(stderr, "memstrackctl: --between takes FROM,TO: two times in seconds after each "
                                "heap's start, FROM before TO, not '%s'.\n", arg_between);
                        return CTL_EXIT_USAGE;
                }
        } else if (streq(arg_at, "max")) {
                /* The heap at its maximum is what heap_maximum shows: no timeline needed. */
                return arg_format ? 0 : ctl_report_options("heap_maximum", o);
        } else if (parse_seconds(arg_at, strlen(arg_at), &to) < 0) {
                fprintf(stderr, "memstrackctl: --at takes a time in seconds after each heap's start, or max, "
                        "not '%s'.\n", arg_at);
                return CTL_EXIT_USAGE;
        }
        json_array_foreach(reply_array(reply_object(doc, "heap"), "heaps"), i, h) {
                r = window ? heap_moment_between(h, from, to) : heap_moment_at(h, to);
                if (r == -ENODATA) {
                        fprintf(stderr, "memstrackctl: %s has no timeline of the heap of pid %" PRIi64 " (recorded "
                                "by a memstrackctl that did not keep one).\n", arg_from, reply_int(h, "pid", 0));
                        return CTL_EXIT_FAILURE;
                }
                if (r == -EINVAL) {
                        fprintf(stderr, "memstrackctl: %s: the timeline of the heap of pid %" PRIi64 " is "
                                "malformed.\n", arg_from, reply_int(h, "pid", 0));
                        return CTL_EXIT_FAILURE;
                }
                if (r < 0)
                        return r;
        }
        /* The moment or the window is what heap_leaks shows of each heap now. */
        return arg_format ? 0 : ctl_report_options("heap_leaks", o);
}

int ctl_report_write(json_t *doc, const ReportOptions *o) {
        if (arg_output && o->n_formats > 1)
                return write_directory(doc, o, arg_output);
        if (arg_output)
                return write_file(doc, o, arg_output, false);
        return write_report(doc, o, stdout, false);
}

int verb_report(int argc, char *argv[]) {
        ReportOptions o;
        json_auto_t *doc = NULL;
        int r;

        r = ctl_report_options(REPORT_FORMAT_DEFAULT, &o);
        if (r != 0)
                return r;

        if (arg_from || arg_boot) {
                r = arg_boot ? snapshot_fetch_boot(&doc) : snapshot_load(arg_from, &doc);
                if (r != 0)
                        return r;
                /* A heap that memstrackctl record saved: its own views, as record shows them. */
                r = ctl_heap_report_options(doc, false, &o);
                if (r != 0)
                        return r;
                if (arg_at || arg_between) {
                        r = heap_time(doc, &o);
                        if (r != 0)
                                return r;
                }
        } else {
                _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
                SnapshotRequest req = {
                        /* The trees come cut at their biggest children: by peak if a format sorts so. */
                        .sort_by_peak = report_wants_peak(&o),
                        .max_depth = arg_depth >= 0 ? (unsigned) arg_depth : 0,
                        .pid = arg_task,
                        .module = arg_module,
                };
                r = ctl_connect(&c);
                if (r != 0)
                        return r;
                r = snapshot_fetch(c, &req, &doc);
                if (r != 0)
                        return r;
        }

        r = ctl_report_write(doc, &o);

        /* The daemon knew the task or module (snapshot_fetch() asked for it by name), but the document
         * lists it nowhere a report looks: say it as the daemon's error would be said. */
        if ((r == -ESRCH || r == -ENOENT) && !arg_from && !arg_boot) {
                json_auto_t *p = r == -ESRCH ? json_pack("{s:I}", "pid", (json_int_t) arg_task) :
                                               json_pack("{s:s}", "name", arg_module);
                if (!p)
                        return -ENOMEM;
                return ctl_report_error_reply(r == -ESRCH ? MEMSTRACK_ERROR_NO_SUCH_TASK :
                                              MEMSTRACK_ERROR_NO_SUCH_MODULE, p);
        }
        if (r == -ESRCH) {
                fprintf(stderr, "No task with pid %lld in %s%s.\n", (long long) arg_task,
                        arg_boot ? "the boot phase" : "the snapshot file ", arg_boot ? "" : arg_from);
                return CTL_EXIT_FAILURE;
        }
        if (r == -ENOENT) {
                fprintf(stderr, "No module '%s' in %s%s.\n", arg_module,
                        arg_boot ? "the boot phase" : "the snapshot file ", arg_boot ? "" : arg_from);
                return CTL_EXIT_FAILURE;
        }
        if (r < 0 && arg_output && r != -ENOMEM)
                return CTL_EXIT_FAILURE;        /* write_file() or write_directory() said what failed */
        return r;
}
