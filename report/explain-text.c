/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "explain-text.h"
#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"

/* Bytes of a member that may be null: "-" then. */
static const char *bytes_or_dash(char *buf, size_t size, const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_integer(v))
                return "-";
        return format_bytes(buf, size, (uint64_t) MAX(json_integer_value(v), (json_int_t) 0));
}

static void print_sanitized(FILE *f, const char *prefix, const char *text, const char *suffix) {
        _cleanup_free_ char *s = format_sanitize(text ?: "?");
        fprintf(f, "%s%s%s", prefix, s ?: "?", suffix);
}

static void print_kernel(const json_t *k, FILE *f) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX], d[FORMAT_BUFFER_MAX];
        const json_t *x;
        size_t i;

        print_sanitized(f, "The kernel (cgroup ", reply_string(k, "hierarchy"), ") at ");
        print_sanitized(f, "", reply_string(k, "path"), ":\n");
        fprintf(f, "  current %s, peak %s, max %s, high %s\n", bytes_or_dash(a, sizeof(a), k, "currentBytes"),
                bytes_or_dash(b, sizeof(b), k, "peakBytes"),
                json_is_integer(json_object_get(k, "maxBytes")) ? bytes_or_dash(c, sizeof(c), k, "maxBytes") : "none",
                json_is_integer(json_object_get(k, "highBytes")) ? bytes_or_dash(d, sizeof(d), k, "highBytes") :
                "none");
        json_array_foreach(reply_array(k, "stat"), i, x) {
                _cleanup_free_ char *name = format_sanitize(reply_string(x, "name") ?: "?");
                _cleanup_free_ char *source = format_sanitize(reply_string(x, "source") ?: "?");
                fprintf(f, "  %-20s %12s  %s\n", name ?: "?", format_bytes(a, sizeof(a), reply_count(x, "bytes")),
                        source ?: "?");
        }
        const json_t *missing = reply_array(k, "missing");
        if (json_array_size(missing) > 0) {
                fputs("  Not counted by this hierarchy:", f);
                json_array_foreach(missing, i, x)
                        print_sanitized(f, i > 0 ? ", " : " ", json_string_value(x), "");
                fputc('\n', f);
        }
        const json_t *events = reply_array(k, "events");
        if (json_array_size(events) > 0) {
                fputs("  Events:", f);
                json_array_foreach(events, i, x) {
                        _cleanup_free_ char *name = format_sanitize(reply_string(x, "name") ?: "?");
                        fprintf(f, "%s %s %" PRIu64, i > 0 ? "," : "", name ?: "?", reply_count(x, "count"));
                }
                fputc('\n', f);
        }
}

static void print_comparisons(const json_t *reply, FILE *f) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        const json_t *x;
        size_t i;

        if (json_array_size(reply_array(reply, "comparisons")) == 0)
                return;
        fprintf(f, "\n  %-8s %12s %12s  %s\n", "", "KERNEL", "MEMSTRACK", "WHAT");
        json_array_foreach(reply_array(reply, "comparisons"), i, x) {
                _cleanup_free_ char *what = format_sanitize(reply_string(x, "what") ?: "?");
                _cleanup_free_ char *note = format_sanitize(reply_string(x, "note") ?: "");
                fprintf(f, "  %-8s %12s %12s  %s\n", what ?: "?", bytes_or_dash(a, sizeof(a), x, "kernelBytes"),
                        bytes_or_dash(b, sizeof(b), x, "memstrackBytes"), note ?: "");
        }
}

static void print_frames(const json_t *frames, FILE *f) {
        const json_t *frame;
        size_t k;

        json_array_foreach(frames, k, frame)
                print_sanitized(f, "        ", json_string_value(frame), "\n");
}

static void print_rows(const char *title, const json_t *rows, FILE *f) {
        char a[FORMAT_BUFFER_MAX];
        const json_t *x;
        size_t i;

        if (json_array_size(rows) == 0)
                return;
        fprintf(f, "    %s:\n", title);
        json_array_foreach(rows, i, x) {
                _cleanup_free_ char *name = format_sanitize(reply_string(x, "name") ?: "?");
                fprintf(f, "      %12s %8" PRIu64 " objects  %s\n", format_bytes(a, sizeof(a), reply_count(x, "bytes")),
                        reply_count(x, "objects"), name ?: "?");
        }
}

static void print_holders(const char *title, const json_t *h, bool tracing_slab, uint64_t page_size, FILE *f) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        const json_t *x;
        size_t i;

        fprintf(f, "\n%s: %s in %" PRIu64 " pages", title, format_pages(a, sizeof(a), reply_count(h, "pages"), page_size),
                reply_count(h, "pages"));
        if (tracing_slab)
                fprintf(f, ", %s in %" PRIu64 " slab objects", format_bytes(b, sizeof(b), reply_count(h, "slabBytes")),
                        reply_count(h, "slabObjects"));
        fputc('\n', f);

        const json_t *tasks = reply_array(h, "tasks");
        if (json_array_size(tasks) > 0) {
                fprintf(f, "    %8s %-16s %9s %12s %12s\n", "PID", "COMM", "PROCESSES", "PAGES", "SLAB");
                json_array_foreach(tasks, i, x) {
                        char pid[24] = "-";
                        _cleanup_free_ char *comm = format_sanitize(reply_string(x, "comm") ?: "?");
                        if (json_is_integer(json_object_get(x, "pid")))
                                (void) snprintf(pid, sizeof(pid), "%" PRIu64, reply_count(x, "pid"));
                        fprintf(f, "    %8s %-16s %9" PRIu64 " %12s %12s\n", pid, comm ?: "?", reply_count(x, "processes"),
                                format_pages(a, sizeof(a), reply_count(x, "pages"), page_size),
                                format_bytes(b, sizeof(b), reply_count(x, "slabBytes")));
                }
        }
        json_array_foreach(reply_array(h, "stacks"), i, x) {
                uint64_t pages = reply_count(x, "currentPages");
                fprintf(f, "    %s (%" PRIu64 " pages) allocated through:\n", format_pages(a, sizeof(a), pages, page_size),
                        pages);
                print_frames(reply_array(x, "frames"), f);
        }
        print_rows("Slab objects by cache", reply_array(h, "slabCaches"), f);
        print_rows("Slab objects by call site", reply_array(h, "slabCallSites"), f);
        json_array_foreach(reply_array(h, "slabStacks"), i, x) {
                fprintf(f, "    %s in %" PRIu64 " slab objects allocated through:\n",
                        format_bytes(a, sizeof(a), reply_count(x, "bytes")), reply_count(x, "objects"));
                print_frames(reply_array(x, "frames"), f);
        }
}

int explain_render_text(const json_t *reply, FILE *f) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        uint64_t page_size = reply_count(reply, "pageSize") ?: 4096;
        bool tracing_slab = reply_bool(reply, "tracingSlab", false);
        const json_t *kernel = json_object_get(reply, "kernel"), *x;
        size_t i;

        print_sanitized(f, "", reply_string(reply, "name"), "");
        print_sanitized(f, " (", reply_string(reply, "cgroup") ?: "cgroup not known", ")");
        uint64_t tasks = reply_count(reply, "tasks");
        fprintf(f, ": %" PRIu64 " live process%s%s\n", tasks, tasks == 1 ? "" : "es",
                reply_bool(reply, "live", true) ? "" : ", its cgroups are gone");
        if (json_is_object(kernel))
                print_kernel(kernel, f);
        else
                print_sanitized(f, "The kernel's figures: none, ", reply_string(reply, "kernelReason") ?: "unknown reason",
                                ".\n");

        uint64_t pages = reply_count(reply, "currentPages");
        fprintf(f, "memstrack: the unit's tasks allocated and still hold %s (%" PRIu64 " pages, peak %s)",
                format_pages(a, sizeof(a), pages, page_size), pages,
                format_pages(b, sizeof(b), reply_count(reply, "peakPages"), page_size));
        if (tracing_slab)
                fprintf(f, ", %s of slab objects", format_bytes(a, sizeof(a), reply_count(reply, "slabBytes")));
        fputc('\n', f);
        if (reply_count(reply, "descendantPages") > 0 || reply_count(reply, "descendantSlabBytes") > 0)
                fprintf(f, "  and the units below it %s (%" PRIu64 " pages), %s of slab objects\n",
                        format_pages(a, sizeof(a), reply_count(reply, "descendantPages"), page_size),
                        reply_count(reply, "descendantPages"),
                        format_bytes(b, sizeof(b), reply_count(reply, "descendantSlabBytes")));

        if (json_is_integer(json_object_get(reply, "differenceBytes")))
                fprintf(f, "Difference: the kernel charges %s %s than memstrack counts\n",
                        format_bytes(a, sizeof(a), reply_count(reply, "differenceBytes")),
                        reply_bool(reply, "kernelCountsMore", true) ? "more" : "less");
        print_comparisons(reply, f);
        print_holders("Held by live processes", reply_object(reply, "alive"), tracing_slab, page_size, f);
        print_holders("Held by no live process (allocated by tasks that have exited)", reply_object(reply, "orphaned"),
                      tracing_slab, page_size, f);

        fputs("\nWhy the kernel's figures and memstrack's differ:\n", f);
        json_array_foreach(reply_array(reply, "reasons"), i, x) {
                _cleanup_free_ char *reason = format_sanitize(reply_string(x, "reason") ?: "?");
                _cleanup_free_ char *text = format_sanitize(reply_string(x, "text") ?: "");
                if (json_is_integer(json_object_get(x, "bytes")))
                        fprintf(f, "  - %s (%s): %s\n", reason ?: "?", bytes_or_dash(a, sizeof(a), x, "bytes"), text ?: "");
                else
                        fprintf(f, "  - %s: %s\n", reason ?: "?", text ?: "");
        }
        return ferror(f) ? -EIO : 0;
}
