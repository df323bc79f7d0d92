/* SPDX-License-Identifier: MIT */

/* memstrack's "FORMAT:SUBARG:..." lists (report.h): the formats come from the table (report-formats.c). */

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "report.h"

ReportSort report_sort_from_string(const char *s) {
        if (!s || streq(s, "current"))
                return REPORT_SORT_CURRENT;
        if (streq(s, "peak"))
                return REPORT_SORT_PEAK;
        return _REPORT_SORT_INVALID;
}

bool report_has_format(const ReportOptions *o, const char *name) {
        for (size_t i = 0; i < o->n_formats; i++)
                if (streq(report_format_name(o->formats[i].format), name))
                        return true;
        return false;
}

bool report_wants_peak(const ReportOptions *o) {
        if (o->sort == REPORT_SORT_PEAK)
                return true;
        for (size_t i = 0; i < o->n_formats; i++)
                if (o->formats[i].sort == REPORT_SORT_PEAK)
                        return true;
        return false;
}

ReportOptions report_options_for(const ReportOptions *o, size_t i) {
        ReportOptions one = *o;
        const ReportFormatSpec *spec;

        assert(i < o->n_formats);
        spec = &o->formats[i];
        one.formats[0] = *spec;
        one.n_formats = 1;
        if (spec->top > 0)
                one.top = spec->top;
        if (spec->throttle > 0)
                one.throttle = spec->throttle;
        if (spec->sort >= 0)
                one.sort = spec->sort;
        return one;
}

/* "task_summary, task_top, ..." for messages. NULL on OOM. */
static char *known_formats(void) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);

        if (!f)
                return NULL;
        for (size_t i = 0; report_format_get(i); i++)
                fprintf(f, "%s%s", i > 0 ? ", " : "", report_format_name(report_format_get(i)));
        if (fclose(f) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

/* Sets *ret to a new message (NULL if even that fails) and returns -EINVAL. */
static int parse_error(char **ret, const char *format, ...) _printf_(2, 3);
static int parse_error(char **ret, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        if (vasprintf(ret, format, ap) < 0)
                *ret = NULL;
        va_end(ap);
        return -EINVAL;
}

/* One sub-argument of the format in spec. -EINVAL with a message. */
static int parse_subarg(const char *arg, ReportFormatSpec *spec, char **ret_message) {
        const char *name = report_format_name(spec->format);
        const char *value;
        uint64_t v;

        if (streq(arg, "sort_by_alloc") || streq(arg, "sort_by_peak")) {
                ReportSort sort = streq(arg, "sort_by_peak") ? REPORT_SORT_PEAK : REPORT_SORT_CURRENT;
                if (spec->sort >= 0 && spec->sort != sort)
                        return parse_error(ret_message, "%s: sort_by_alloc and sort_by_peak exclude each other.",
                                           name);
                spec->sort = sort;
                return 0;
        }
        if ((value = startswith(arg, "top="))) {
                if (parse_uint64(value, 1, REPORT_TOP_MAX, &v) < 0)
                        return parse_error(ret_message, "%s: top= takes a number from 1 to %u, not '%s'.", name,
                                           REPORT_TOP_MAX, value);
                spec->top = (unsigned) v;
                return 0;
        }
        if ((value = startswith(arg, "throttle="))) {
                if (parse_uint64(value, 1, 100, &v) < 0)
                        return parse_error(ret_message, "%s: throttle= takes a percentage from 1 to 100, not '%s'.",
                                           name, value);
                spec->throttle = (unsigned) v;
                return 0;
        }
        return parse_error(ret_message, "%s: unknown sub-argument '%s'; known: top=N, throttle=PERCENT, "
                           "sort_by_alloc, sort_by_peak.", name, arg);
}

static bool spec_equal(const ReportFormatSpec *a, const ReportFormatSpec *b) {
        return a->format == b->format && a->top == b->top && a->throttle == b->throttle && a->sort == b->sort;
}

int report_parse_formats(const char *list, ReportOptions *o, char **reterr_message) {
        ReportFormatSpec specs[REPORT_FORMATS_MAX];
        _cleanup_free_ char *copy = NULL;
        char *message = NULL, *state = NULL;
        size_t n = 0;
        int r = 0;

        assert(list);
        assert(o);

        copy = strdup(list);
        if (!copy)
                return -ENOMEM;
        for (char *entry = strtok_r(copy, ",", &state); entry; entry = strtok_r(NULL, ",", &state)) {
                char *args = strchr(entry, ':');
                ReportFormatSpec spec = { .sort = _REPORT_SORT_INVALID };
                bool dup = false;

                if (args)
                        *args++ = '\0';
                spec.format = report_format_find(entry);
                if (!spec.format) {
                        _cleanup_free_ char *known = known_formats();
                        r = parse_error(&message, "unknown report format '%s'; known: %s.", entry, known ?: "?");
                        break;
                }
                /* memstrack's separator: "module_top:top=5:sort_by_peak"; an empty one is a typo. */
                while (args && r >= 0) {
                        char *next = strchr(args, ':');
                        if (next)
                                *next++ = '\0';
                        r = args[0] ? parse_subarg(args, &spec, &message) :
                                parse_error(&message, "%s: empty sub-argument.", entry);
                        args = next;
                }
                if (r < 0)
                        break;
                for (size_t i = 0; i < n; i++)
                        if (specs[i].format == spec.format) {
                                if (!spec_equal(&specs[i], &spec))
                                        r = parse_error(&message, "%s is asked for twice, with different "
                                                        "sub-arguments.", entry);
                                dup = true;
                        }
                if (r < 0)
                        break;
                if (!dup)
                        specs[n++] = spec;
        }
        if (r >= 0 && n == 0)
                r = parse_error(&message, "no report format in '%s'.", list);
        if (r < 0) {
                if (reterr_message)
                        *reterr_message = message;
                else
                        free(message);
                return r;
        }
        memcpy(o->formats, specs, n * sizeof(ReportFormatSpec));
        o->n_formats = n;
        return 0;
}
