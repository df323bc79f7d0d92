/* SPDX-License-Identifier: MIT */

/*
 * The family "slab": the slab caches of /proc/slabinfo as memstrack prints them, read when the report
 * renders (proc_slab_static, slabinfo.h), and the live slab objects memstrackd traced, by call site or by
 * cache, from the document's Slab replies (slab_callsites, slab_caches).
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "report-select.h"
#include "slabinfo.h"

static const char *slabinfo_path(const ReportOptions *o) {
        return o->slabinfo_path ?: getenv("MEMSTRACK_SLABINFO") ?: "/proc/slabinfo";
}

static int compare_caches(const void *a, const void *b) {
        const SlabCache *x = a, *y = b;
        uint64_t px = slab_cache_pages(x), py = slab_cache_pages(y);

        if (px != py)
                return px > py ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* The caches to show, biggest first, cut at o->throttle percent of all slab pages and at o->top caches;
 * their count in *ret_n and all slab pages in *ret_total. -errno from reading (slabinfo_read()). */
static int slab_select(const ReportOptions *o, SlabInfo **ret, size_t *ret_n, uint64_t *ret_total) {
        _cleanup_(slabinfo_freep) SlabInfo *s = NULL;
        uint64_t total = 0, taken = 0, limit;
        size_t kept;
        int r;

        r = slabinfo_read(slabinfo_path(o), &s);
        if (r < 0)
                return r;
        qsort(s->caches, s->n_caches, sizeof(SlabCache), compare_caches);
        for (size_t i = 0; i < s->n_caches; i++)
                total += slab_cache_pages(&s->caches[i]);
        limit = report_throttle_limit(total, o->throttle);
        for (kept = 0; kept < s->n_caches && (o->top == 0 || kept < o->top); kept++) {
                /* memstrack lists empty caches too; the throttle stops once its share is there. */
                if (o->throttle < 100 && taken >= limit)
                        break;
                taken += slab_cache_pages(&s->caches[kept]);
        }
        *ret_n = kept;
        *ret_total = total;
        *ret = TAKE_PTR(s);
        return 0;
}

static const char *slab_error(int r) {
        return r == -EBADMSG ? "not a slabinfo file of version 2.x" : strerror(-r);
}

/* memstrack's "Top Slab Usage:", a "%17s: %.1f MB" line per cache. What cannot be read is said in the
 * section, so that the other formats of a report are still written. */
static int text_proc_slab_static(json_t *doc, const ReportOptions *o, FILE *f) {
        _cleanup_(slabinfo_freep) SlabInfo *s = NULL;
        uint64_t page_size = report_doc_page_size(doc), total;
        size_t n;
        int r;

        r = slab_select(o, &s, &n, &total);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                fprintf(f, "(cannot read %s: %s)\n", slabinfo_path(o), slab_error(r));
                return 0;
        }
        fputs("Top Slab Usage:\n", f);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *name = format_sanitize(s->caches[i].name);
                if (!name)
                        return -ENOMEM;
                fprintf(f, "%17s: %.1f MB\n", name,
                        report_megabytes(slab_cache_pages(&s->caches[i]), page_size));
        }
        if (s->n_bad_lines > 0)
                fprintf(f, "(%zu line%s not understood, skipped; the first is line %u)\n", s->n_bad_lines,
                        s->n_bad_lines == 1 ? "" : "s", s->first_bad_line);
        return 0;
}

/* {"totalPages", "pageSize", "caches": [{name, pages, ...}], "badLines"}, or {"path", "error"}. */
static int json_proc_slab_static(json_t *doc, const ReportOptions *o, json_t **ret) {
        _cleanup_(slabinfo_freep) SlabInfo *s = NULL;
        json_auto_t *caches = NULL;
        uint64_t total;
        size_t n;
        int r;

        r = slab_select(o, &s, &n, &total);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = json_pack("{s:s, s:s}", "path", slabinfo_path(o), "error", slab_error(r));
                return *ret ? 0 : -ENOMEM;
        }
        caches = json_array();
        if (!caches)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const SlabCache *c = &s->caches[i];
                _cleanup_free_ char *name = format_sanitize(c->name);
                if (!name || json_array_append_new(caches, json_pack(
                                "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name", name,
                                "pages", (json_int_t) slab_cache_pages(c),
                                "activeObjects", (json_int_t) c->active_objects,
                                "objects", (json_int_t) c->objects,
                                "objectSize", (json_int_t) c->object_size,
                                "objectsPerSlab", (json_int_t) c->objects_per_slab,
                                "pagesPerSlab", (json_int_t) c->pages_per_slab,
                                "activeSlabs", (json_int_t) c->active_slabs,
                                "slabs", (json_int_t) c->slabs)) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:I, s:I, s:O, s:I}", "totalPages", (json_int_t) total,
                         "pageSize", (json_int_t) report_doc_page_size(doc), "caches", caches,
                         "badLines", (json_int_t) s->n_bad_lines);
        return *ret ? 0 : -ENOMEM;
}

/* The Slab reply of the document for call sites or caches, or NULL: none taken (an earlier memstrackd or
 * memstrackctl), or slab objects not traced. */
static json_t *doc_slab(json_t *doc, bool callsites) {
        json_t *reply = reply_object(reply_object(doc, "slab"), callsites ? "callsites" : "caches");
        return json_is_true(json_object_get(reply, "tracing")) ? reply : NULL;
}

/* How many of the rows (most live bytes first) to show: at most o->top, while those taken hold less than
 * o->throttle percent of the live bytes, as the page reports cut. */
static size_t slab_rows_shown(json_t *reply, const ReportOptions *o) {
        json_t *rows = reply_array(reply, "rows");
        uint64_t limit = report_throttle_limit(reply_count(reply, "liveBytesAllocated"), o->throttle);
        uint64_t taken = 0;
        size_t n = 0;

        while (n < json_array_size(rows) && (o->top == 0 || n < o->top) && (n == 0 || taken < limit)) {
                taken += reply_count(json_array_get(rows, n), "liveBytesAllocated");
                n++;
        }
        return n;
}

/* What a call site's or cache's line adds: lost frees, the kernel's count, and whether its counts hold. */
static void print_row_notes(json_t *row, FILE *f) {
        json_t *kernel = reply_object(row, "kernel");

        if (reply_count(row, "lostFrees") > 0)
                fprintf(f, ", %" PRIu64 " lost frees", reply_count(row, "lostFrees"));
        if (kernel) {
                fprintf(f, "; kernel: %" PRIu64 " active", reply_count(kernel, "activeObjects"));
                if (json_is_integer(json_object_get(kernel, "driftObjects")))
                        fprintf(f, " (%" PRIu64 " at start, drift %" JSON_INTEGER_FORMAT ")",
                                reply_count(kernel, "activeObjectsAtStart"),
                                json_integer_value(json_object_get(kernel, "driftObjects")));
        }
        if (reply_count(row, "trimmedObjects") > 0)
                fprintf(f, "; %" PRIu64 " dropped above the kernel's count", reply_count(row, "trimmedObjects"));
        if (json_is_false(json_object_get(row, "freesVisible")))
                fputs("; frees not visible on this kernel: an upper bound", f);
        if (reply_bool(kernel, "drifting", false))
                fputs("; above the kernel's count", f);
}

static int text_slab_objects(json_t *doc, const ReportOptions *o, bool callsites, FILE *f) {
        json_t *reply = doc_slab(doc, callsites);
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX];

        if (!reply) {
                fputs("(no slab objects in this snapshot: memstrackd traces them with --slab)\n", f);
                return 0;
        }
        fprintf(f, "Slab objects by %s: %" PRIu64 " live, %s allocated for %s requested (waste %.1f%%), peak %s;"
                " %" PRIu64 " frees of unknown objects, %" PRIu64 " lost frees, %" PRIu64 " dropped\n",
                callsites ? "call site" : "cache", reply_count(reply, "liveObjects"),
                format_bytes(a, sizeof(a), reply_count(reply, "liveBytesAllocated")),
                format_bytes(b, sizeof(b), reply_count(reply, "liveBytesRequested")),
                json_number_value(json_object_get(reply, "wastePercent")),
                format_bytes(c, sizeof(c), reply_count(reply, "peakLiveBytes")), reply_count(reply, "unknownFrees"),
                reply_count(reply, "lostFrees"), reply_count(reply, "droppedObjects"));
        /* Replies of memstrackd before the reconciliation with /proc/slabinfo lack these. */
        if (json_object_get(reply, "lostFreesPerHour"))
                fprintf(f, "Lost frees: %.1f an hour, %.4f%% of the allocations whose frees are visible; frees not "
                        "visible on this kernel: %" PRIu64 " caches, %" PRIu64 " call sites; %" PRIu64 " objects "
                        "dropped above the kernel's count\n", reply_double(reply, "lostFreesPerHour", 0),
                        reply_double(reply, "visibleLostFreesPercent", 0), reply_count(reply, "invisibleFreeCaches"),
                        reply_count(reply, "invisibleFreeCallSites"), reply_count(reply, "trimmedObjects"));
        for (size_t i = 0, n = slab_rows_shown(reply, o); i < n; i++) {
                json_t *row = json_array_get(reply_array(reply, "rows"), i);
                _cleanup_free_ char *name = format_sanitize(reply_string(row, "name") ?: "?");
                if (!name)
                        return -ENOMEM;
                fprintf(f, "  %s: %" PRIu64 " objects, %s (%s requested, waste %.1f%%), peak %s, %" PRIu64
                        " allocs, %" PRIu64 " frees (%" PRIu64 " on another CPU)", name,
                        reply_count(row, "liveObjects"), format_bytes(a, sizeof(a), reply_count(row, "liveBytesAllocated")),
                        format_bytes(b, sizeof(b), reply_count(row, "liveBytesRequested")),
                        json_number_value(json_object_get(row, "wastePercent")),
                        format_bytes(c, sizeof(c), reply_count(row, "peakLiveBytes")), reply_count(row, "allocs"),
                        reply_count(row, "frees"), reply_count(row, "remoteFrees"));
                print_row_notes(row, f);
                fputc('\n', f);
        }
        return 0;
}

/* The Slab reply with the rows shown, or {"tracing": false} when the document has none. */
static int json_slab_objects(json_t *doc, const ReportOptions *o, bool callsites, json_t **ret) {
        json_t *reply = doc_slab(doc, callsites);
        json_auto_t *copy = NULL, *rows = json_array();

        if (!rows)
                return -ENOMEM;
        if (!reply) {
                *ret = json_pack("{s:b}", "tracing", false);
                return *ret ? 0 : -ENOMEM;
        }
        copy = json_copy(reply);
        for (size_t i = 0, n = slab_rows_shown(reply, o); i < n; i++)
                if (json_array_append(rows, json_array_get(reply_array(reply, "rows"), i)) < 0)
                        return -ENOMEM;
        if (!copy || json_object_set(copy, "rows", rows) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(copy);
        return 0;
}

static int text_slab_callsites(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_slab_objects(doc, o, true, f);
}

static int json_slab_callsites(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_slab_objects(doc, o, true, ret);
}

static int text_slab_caches(json_t *doc, const ReportOptions *o, FILE *f) {
        return text_slab_objects(doc, o, false, f);
}

static int json_slab_caches(json_t *doc, const ReportOptions *o, json_t **ret) {
        return json_slab_objects(doc, o, false, ret);
}

const ReportFormat report_format_proc_slab_static = {
        .name = "proc_slab_static",
        .family = "slab",
        .text = text_proc_slab_static,
        .json = json_proc_slab_static,
};

const ReportFormat report_format_slab_callsites = {
        .name = "slab_callsites",
        .family = "slab",
        .text = text_slab_callsites,
        .json = json_slab_callsites,
};

const ReportFormat report_format_slab_caches = {
        .name = "slab_caches",
        .family = "slab",
        .text = text_slab_caches,
        .json = json_slab_caches,
};
