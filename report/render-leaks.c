/* SPDX-License-Identifier: MIT */

/*
 * The family "leaks": what is old and still live, from the document's Leaks reply: slab objects by call
 * site and pages by process and stack, each with how its live part grew (memstrackctl leaks prints the
 * same text).
 */

#include <inttypes.h>

#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "report-select.h"

/* Frames of a page row printed under it: enough to tell stacks apart. */
#define LEAK_FRAMES_SHOWN 8

static size_t leak_rows_shown(json_t *rows, const ReportOptions *o) {
        return o->top > 0 ? MIN(json_array_size(rows), (size_t) o->top) : json_array_size(rows);
}

static void print_growth(json_t *row, FILE *f) {
        json_t *n;
        size_t k;

        fputs("; growth", f);
        json_array_foreach(reply_array(row, "growth"), k, n)
                fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(n));
        fputc('\n', f);
}

static int text_leaks(json_t *doc, const ReportOptions *o, FILE *f) {
        json_t *reply = reply_object(doc, "leaks"), *rows = reply_array(reply, "rows"), *pages = reply_array(reply, "pages");
        char a[FORMAT_BUFFER_MAX];

        if (!reply) {
                fputs("(no leak view in this snapshot: it comes from an earlier memstrackd or memstrackctl)\n", f);
                return 0;
        }
        fprintf(f, "Live slab objects and pages older than %" PRIu64 " s; growth: of what is still live, how much was "
                "allocated in each of the last %" PRIu64 " intervals of %" PRIu64 " s, oldest first\n",
                reply_count(reply, "minAgeUsec") / 1000000, reply_count(reply, "intervals"),
                reply_count(reply, "intervalUsec") / 1000000);
        if (!json_is_true(json_object_get(reply, "tracing")))
                fputs("Slab objects: not traced (memstrackd traces them with --slab)\n", f);
        else
                fprintf(f, "Slab objects by call site:%s\n", json_array_size(rows) ? "" : " none");
        for (size_t i = 0, n = leak_rows_shown(rows, o); i < n; i++) {
                json_t *row = json_array_get(rows, i);
                _cleanup_free_ char *name = format_sanitize(reply_string(row, "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                fprintf(f, "  %s: %" PRIu64 " objects, %s, oldest %" PRIu64 " s", name, reply_count(row, "objects"),
                        format_bytes(a, sizeof(a), reply_count(row, "bytes")), reply_count(row, "oldestAgeUsec") / 1000000);
                print_growth(row, f);
        }
        json_t *invisible = reply_array(reply, "freesNotVisible");
        if (json_array_size(invisible) > 0)
                fputs("Left out, frees not visible on this kernel (freed without a tracepoint, so they would look "
                      "leaked):\n", f);
        for (size_t i = 0, n = leak_rows_shown(invisible, o); i < n; i++) {
                json_t *row = json_array_get(invisible, i);
                _cleanup_free_ char *name = format_sanitize(reply_string(row, "name") ?: "?");
                _cleanup_free_ char *cache = format_sanitize(reply_string(row, "cache") ?: "?");
                if (!name || !cache)
                        return -ENOMEM;
                fprintf(f, "  %s (%s): at most %" PRIu64 " objects, %s; %" PRIu64 " lost frees\n", name, cache,
                        reply_count(row, "objects"), format_bytes(a, sizeof(a), reply_count(row, "bytes")),
                        reply_count(row, "lostFrees"));
        }
        fprintf(f, "Pages by process and stack:%s\n", json_array_size(pages) ? "" : " none");
        for (size_t i = 0, n = leak_rows_shown(pages, o); i < n; i++) {
                json_t *row = json_array_get(pages, i), *frame;
                _cleanup_free_ char *comm = format_sanitize(reply_string(row, "comm") ?: "?");
                size_t k;
                if (!comm)
                        return -ENOMEM;
                /* Pages of evicted processes ("[evicted]") have no pid. */
                int64_t pid = reply_int(row, "pid", -1);
                if (pid >= 0)
                        fprintf(f, "  %" PRIi64, pid);
                fprintf(f, "%s%s: %" PRIu64 " pages, oldest %" PRIu64 " s", pid >= 0 ? " " : "  ", comm,
                        reply_count(row, "pages"), reply_count(row, "oldestAgeUsec") / 1000000);
                print_growth(row, f);
                if (json_array_size(reply_array(row, "frames")) == 0)
                        fputs("      (no stack)\n", f);
                json_array_foreach(reply_array(row, "frames"), k, frame) {
                        if (k == LEAK_FRAMES_SHOWN) {
                                fprintf(f, "      ... %zu more\n", json_array_size(reply_array(row, "frames")) - k);
                                break;
                        }
                        _cleanup_free_ char *name = format_sanitize(json_string_value(frame) ?: "?");
                        if (!name)
                                return -ENOMEM;
                        fprintf(f, "      %s\n", name);
                }
        }
        return 0;
}

/* The Leaks reply with the rows shown, or null when the document has none. */
static int json_leaks(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_t *reply = reply_object(doc, "leaks");
        json_auto_t *copy = NULL;
        static const char *const lists[] = { "rows", "freesNotVisible", "pages" };

        if (!reply) {
                *ret = json_null();
                return 0;
        }
        copy = json_deep_copy(reply);
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                json_t *list = json_object_get(copy, lists[i]);
                while (json_is_array(list) && json_array_size(list) > leak_rows_shown(list, o))
                        if (json_array_remove(list, json_array_size(list) - 1) < 0)
                                return -ENOMEM;
        }
        *ret = TAKE_PTR(copy);
        return 0;
}

const ReportFormat report_format_leaks = {
        .name = "leaks",
        .family = "leaks",
        .text = text_leaks,
        .json = json_leaks,
};
