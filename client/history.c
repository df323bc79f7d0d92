/* SPDX-License-Identifier: MIT */

/* memstrackctl history: the History reply as a table of time, current and peak pages. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "history-chart.h"
#include "macro.h"
#include "reply.h"

int history_parse_duration(const char *s, uint64_t *ret_seconds) {
        static const struct {
                const char *suffix;
                uint64_t seconds;
        } units[] = { { "", 1 }, { "s", 1 }, { "m", 60 }, { "min", 60 }, { "h", 3600 }, { "d", 86400 } };
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
                return -ERANGE;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(end, units[i].suffix)) {
                        if (v > INT32_MAX / units[i].seconds)
                                return -ERANGE;
                        *ret_seconds = v * units[i].seconds;
                        return 0;
                }
        return -EINVAL;
}

/* The chart to --output (through a temporary file, so a failure leaves no half chart) or stdout. */
static int write_svg(json_t *reply, uint64_t page_size) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        if (!arg_output)
                return history_chart_write(reply, page_size, NULL, true, stdout) < 0 || fflush(stdout) != 0 ?
                       CTL_EXIT_FAILURE : 0;
        if (asprintf(&tmp, "%s.tmp", arg_output) < 0)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f) {
                fprintf(stderr, "memstrackctl: cannot write %s: %m\n", tmp);
                return CTL_EXIT_FAILURE;
        }
        r = history_chart_write(reply, page_size, NULL, true, f);
        if (r >= 0 && fflush(f) != 0)
                r = -errno;
        if (r < 0 || rename(tmp, arg_output) < 0) {
                if (r >= 0)
                        r = -errno;
                fprintf(stderr, "memstrackctl: cannot write %s: %s\n", arg_output, strerror(-r));
                (void) unlink(tmp);
                return CTL_EXIT_FAILURE;
        }
        return 0;
}

int verb_history(int argc, char *argv[]) {
        json_auto_t *params = json_object(), *reply = NULL;
        uint64_t page_size = 4096;
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        json_t *p;
        size_t i;
        int r;

        if (!params)
                return -ENOMEM;
        bool svg = arg_format && streq(arg_format, "svg");
        if (arg_format && !svg && !streq(arg_format, "text")) {
                fprintf(stderr, "memstrackctl: history --format takes text or svg, not '%s'.\n", arg_format);
                return CTL_EXIT_USAGE;
        }
        if (arg_output && !svg) {
                fprintf(stderr, "memstrackctl: history --output is for --format=svg.\n");
                return CTL_EXIT_USAGE;
        }
        if ((arg_task >= 0) + !!arg_unit + !!arg_module > 1) {
                fprintf(stderr, "memstrackctl: --task, --unit and --module exclude each other.\n");
                return CTL_EXIT_USAGE;
        }
        if (arg_task >= 0 && json_object_set_new(params, "pid", json_integer((json_int_t) arg_task)) < 0)
                return -ENOMEM;
        if (arg_unit && json_object_set_new(params, "unit", json_string(arg_unit)) < 0)
                return -ENOMEM;
        if (arg_module && json_object_set_new(params, "module", json_string(arg_module)) < 0)
                return -ENOMEM;
        if (arg_since_seconds >= 0 &&
            json_object_set_new(params, "seconds", json_integer((json_int_t) arg_since_seconds)) < 0)
                return -ENOMEM;

        r = ctl_query("io.memstrack.History", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        if (svg)
                return write_svg(reply, page_size);
        json_t *points = reply_array(reply, "points");
        if (arg_legend) {
                _cleanup_free_ char *name = format_sanitize(reply_string(reply, "name"));
                printf("History of the %s%s%s, %" PRIu64 " s buckets\n", reply_string(reply, "what") ?: "?",
                       name && *name ? " " : "", name ?: "", reply_count(reply, "resolution"));
                printf("%-19s %12s %12s\n", "TIME", "CURRENT", "PEAK");
        }
        json_array_foreach(points, i, p) {
                time_t t = (time_t) (reply_count(p, "timestampUsec") / 1000000);
                struct tm tm;
                char when[32] = "?";
                if (localtime_r(&t, &tm))
                        (void) strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
                printf("%-19s %12s %12s\n", when,
                       format_pages(cur, sizeof(cur), reply_count(p, "current"), page_size),
                       format_pages(peak, sizeof(peak), reply_count(p, "peak"), page_size));
        }
        if (json_array_size(points) == 0 && arg_legend)
                printf("(none yet)\n");
        return 0;
}
