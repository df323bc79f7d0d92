/* SPDX-License-Identifier: MIT */

/*
 * The family "cold": how long the pages of each holder went untouched, from the document's Cold reply
 * (memstrackctl cold prints the same text): "cold", the tables by task, unit, module and call stack, with
 * the access source and its thresholds; "cold_flamegraph", the cold pages by allocating stack as a flame
 * graph (flamegraph.h) of the stacks the reply lists, the rest of the cold pages as one box.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "flamegraph.h"
#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"

/* Frames of a stack printed under it: the innermost ones and, past them, the outermost (the user frames of a
 * process's call site come last). */
#define COLD_FRAMES_INNER 5
#define COLD_FRAMES_OUTER 4

static size_t rows_shown(json_t *rows, const ReportOptions *o) {
        return o->top > 0 ? MIN(json_array_size(rows), (size_t) o->top) : json_array_size(rows);
}

static const char *duration(char *buf, size_t size, uint64_t usec) {
        if (usec < 1000)
                (void) snprintf(buf, size, "%" PRIu64 " us", usec);
        else if (usec % 60000000 == 0)
                (void) snprintf(buf, size, "%" PRIu64 " min", usec / 60000000);
        else if (usec % 1000000 == 0)
                (void) snprintf(buf, size, "%" PRIu64 " s", usec / 1000000);
        else
                (void) snprintf(buf, size, "%" PRIu64 " ms", usec / 1000);
        return buf;
}

/* "  hot 1.2 GiB  warm 3 MiB  cold 500 MiB  unknown 0 B  newer 0 B  (of 1.7 GiB now)" */
static void print_pages(json_t *pages, uint64_t page_size, FILE *f) {
        static const char *const classes[] = { "hot", "warm", "cold", "unknown", "newer" };
        char buf[FORMAT_BUFFER_MAX], key[32];

        for (size_t i = 0; i < ELEMENTSOF(classes); i++) {
                (void) snprintf(key, sizeof(key), "%sPages", classes[i]);
                fprintf(f, "  %s %s", classes[i], format_bytes(buf, sizeof(buf), reply_count(pages, key) * page_size));
        }
        fprintf(f, "  (holds %s now)\n", format_bytes(buf, sizeof(buf), reply_count(pages, "currentPages") * page_size));
}

static int print_owners(json_t *rows, const char *title, const ReportOptions *o, uint64_t page_size, FILE *f) {
        fprintf(f, "%s:%s\n", title, json_array_size(rows) ? "" : " none");
        for (size_t i = 0, n = rows_shown(rows, o); i < n; i++) {
                json_t *row = json_array_get(rows, i);
                _cleanup_free_ char *name = format_sanitize(reply_string(row, "name") ?: reply_string(row, "comm") ?: "?");
                if (!name)
                        return -ENOMEM;
                if (json_object_get(row, "pid"))
                        fprintf(f, "  %" PRIi64 " %s%s\n", reply_int(row, "pid", 0), name,
                                reply_bool(row, "exited", false) ? " (exited)" : "");
                else
                        fprintf(f, "  %s\n", name);
                print_pages(reply_object(row, "pages"), page_size, f);
        }
        return 0;
}

static int text_cold(json_t *doc, const ReportOptions *o, FILE *f) {
        json_t *reply = reply_object(doc, "cold");
        char warm[32], cold[32], interval[32], a[FORMAT_BUFFER_MAX];
        int r;

        if (!reply) {
                fputs("(no cold memory view in this snapshot: it comes from an earlier memstrackd or memstrackctl)\n", f);
                return 0;
        }
        uint64_t page_size = reply_count(reply, "pageSize") ?: 4096;
        const char *source = reply_string(reply, "source");
        _cleanup_free_ char *detail = format_sanitize(reply_string(reply, "detail") ?: reply_string(reply, "reason") ?: "");
        if (!detail)
                return -ENOMEM;
        if (!source) {
                fprintf(f, "Cold memory is not measured: %s\n", detail);
                return 0;
        }
        fprintf(f, "Access source: %s, %s\n", source, detail);
        fprintf(f, "Idle less than %s: hot; at least %s: cold; between: warm. Resolution %s.\n",
                duration(warm, sizeof(warm), reply_count(reply, "warmAfterUsec")),
                duration(cold, sizeof(cold), reply_count(reply, "coldAfterUsec")),
                duration(interval, sizeof(interval), reply_count(reply, "intervalUsec")));
        if (reply_bool(reply, "ownKdamond", false))
                fprintf(f, "memstrackd's kdamond used %" PRIu64 " ms of CPU in %" PRIu64 " s.\n",
                        reply_count(reply, "kdamondCpuUsec") / 1000, reply_count(reply, "kdamondSeconds"));
        if (json_is_null(json_object_get(reply, "roundTimestampUsec"))) {
                fputs("No sampling round yet.\n", f);
                return 0;
        }
        json_t *counters = reply_object(reply, "counters");
        fprintf(f, "Round %" PRIu64 " of %" PRIu64 " regions and %" PRIu64 " blocks, in %s; regions %.1f s older "
                "than the round.\n", reply_count(counters, "rounds"), reply_count(counters, "regions"),
                reply_count(counters, "blocks"), duration(a, sizeof(a), reply_count(reply, "roundDurationUsec")),
                (double) (reply_count(reply, "roundTimestampUsec") - reply_count(reply, "regionsTimestampUsec")) / 1e6);
        fputs("All tracked pages:\n", f);
        print_pages(reply_object(reply, "total"), page_size, f);
        r = print_owners(reply_array(reply, "tasks"), "By process, most cold first", o, page_size, f);
        if (r >= 0)
                r = print_owners(reply_array(reply, "units"), "By unit", o, page_size, f);
        if (r >= 0)
                r = print_owners(reply_array(reply, "modules"), "By module", o, page_size, f);
        if (r < 0)
                return r;
        json_t *stacks = reply_array(reply, "stacks"), *frame;
        fprintf(f, "By allocating stack:%s\n", json_array_size(stacks) ? "" : " none");
        for (size_t i = 0, n = rows_shown(stacks, o); i < n; i++) {
                json_t *row = json_array_get(stacks, i), *frames = reply_array(row, "frames");
                size_t k, n_frames = json_array_size(frames);
                print_pages(reply_object(row, "pages"), page_size, f);
                json_array_foreach(frames, k, frame) {
                        bool cut = n_frames > COLD_FRAMES_INNER + COLD_FRAMES_OUTER + 1;
                        if (cut && k == COLD_FRAMES_INNER)
                                fprintf(f, "      ... %zu more\n", n_frames - COLD_FRAMES_INNER - COLD_FRAMES_OUTER);
                        if (cut && k >= COLD_FRAMES_INNER && k < n_frames - COLD_FRAMES_OUTER)
                                continue;
                        _cleanup_free_ char *name = format_sanitize(json_string_value(frame) ?: "?");
                        if (!name)
                                return -ENOMEM;
                        fprintf(f, "      %s\n", name);
                }
        }
        fprintf(f, "Split blocks %" PRIu64 ", regions shared by holders %" PRIu64 " (%" PRIu64 " pages), pages reused "
                "while idle %" PRIu64 "; sets: %" PRIu64 " complete, %" PRIu64 " incomplete, %" PRIu64 " records lost, %"
                PRIu64 " refused; kdamond stops %" PRIu64 ", target changes %" PRIu64 ", stale rounds %" PRIu64 "\n",
                reply_count(counters, "splitBlocks"), reply_count(counters, "sharedRegions"),
                reply_count(counters, "sharedRegionPages"), reply_count(counters, "clampedPages"),
                reply_count(counters, "aggregations"), reply_count(counters, "incompleteSets"),
                reply_count(counters, "lostRecords"), reply_count(counters, "rejectedRecords"),
                reply_count(counters, "kdamondStops"), reply_count(counters, "targetChanges"),
                reply_count(counters, "staleRounds"));
        return 0;
}

/* The Cold reply with the rows shown, or null when the document has none. */
static int json_cold(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_t *reply = reply_object(doc, "cold");
        static const char *const lists[] = { "tasks", "units", "modules", "stacks" };

        if (!reply) {
                *ret = json_null();
                return 0;
        }
        json_auto_t *copy = json_deep_copy(reply);
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                json_t *list = json_object_get(copy, lists[i]);
                while (json_is_array(list) && json_array_size(list) > rows_shown(list, o))
                        if (json_array_remove(list, json_array_size(list) - 1) < 0)
                                return -ENOMEM;
        }
        *ret = TAKE_PTR(copy);
        return 0;
}

/* The child of node framed name, made if missing. */
static json_t *child(json_t *node, const char *name) {
        json_t *children = json_object_get(node, "children"), *c;
        size_t i;

        json_array_foreach(children, i, c)
                if (streq(reply_string(c, "frame") ?: "", name))
                        return c;
        c = json_pack("{s:s, s:n, s:n, s:I, s:n, s:[], s:i}", "frame", name, "module", "address", "currentPages",
                      (json_int_t) 0, "peakPages", "children", "truncatedChildren", 0);
        if (!c || json_array_append_new(children, c) < 0)
                return NULL;
        return c;
}

static int add_pages(json_t *node, uint64_t pages) {
        return json_object_set_new(node, "currentPages",
                                   json_integer((json_int_t) (reply_count(node, "currentPages") + pages)));
}

/* A StackNode tree of the cold pages of the listed stacks, outermost frame below; the cold pages of stacks
 * not listed as one child "[other stacks]". Frames of one function are merged as the flame graph of the
 * stacks merges them (flamegraph_merge_functions()), unless o asks for offsets. */
static int cold_tree(json_t *reply, const ReportOptions *o, json_t **ret) {
        json_auto_t *root = json_pack("{s:s, s:n, s:n, s:I, s:n, s:[], s:i}", "frame", "[all]", "module", "address",
                                      "currentPages", (json_int_t) 0, "peakPages", "children", "truncatedChildren", 0);
        json_t *row;
        uint64_t listed = 0;
        size_t i;

        if (!root)
                return -ENOMEM;
        json_array_foreach(reply_array(reply, "stacks"), i, row) {
                uint64_t pages = reply_count(reply_object(row, "pages"), "coldPages");
                json_t *frames = reply_array(row, "frames"), *node = root;
                if (pages == 0)
                        continue;
                listed += pages;
                if (add_pages(root, pages) < 0)
                        return -ENOMEM;
                for (size_t k = json_array_size(frames); k > 0; k--) {
                        node = child(node, json_string_value(json_array_get(frames, k - 1)) ?: "?");
                        if (!node || add_pages(node, pages) < 0)
                                return -ENOMEM;
                }
        }
        uint64_t all = reply_count(reply_object(reply, "total"), "coldPages");
        if (all > listed) {
                json_t *other = child(root, "[other stacks]");
                if (!other || add_pages(other, all - listed) < 0 || add_pages(root, all - listed) < 0)
                        return -ENOMEM;
        }
        if (!o->offsets) {
                json_t *merged = flamegraph_merge_functions(root);
                if (!merged)
                        return -ENOMEM;
                json_decref(root);
                root = merged;
        }
        *ret = TAKE_PTR(root);
        return 0;
}

static int text_cold_flamegraph(json_t *doc, const ReportOptions *o, FILE *f) {
        json_t *reply = reply_object(doc, "cold");
        json_auto_t *tree = NULL;
        int r;

        if (!reply) {
                fputs("(no cold memory view in this snapshot: it comes from an earlier memstrackd or memstrackctl)\n", f);
                return 0;
        }
        r = cold_tree(reply, o, &tree);
        if (r < 0)
                return r;
        FlamegraphInfo info = {
                .page_size = reply_count(reply, "pageSize"),
                .host = reply_string(doc, "host"),
                .realtime_usec = reply_count(doc, "realtimeUsec"),
        };
        return flamegraph_write(tree, &info, f);
}

static int json_cold_flamegraph(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_t *reply = reply_object(doc, "cold");

        if (!reply) {
                *ret = json_null();
                return 0;
        }
        return cold_tree(reply, o, ret);
}

const ReportFormat report_format_cold = {
        .name = "cold",
        .family = "cold",
        .text = text_cold,
        .json = json_cold,
};

const ReportFormat report_format_cold_flamegraph = {
        .name = "cold_flamegraph",
        .family = "cold",
        .text = text_cold_flamegraph,
        .json = json_cold_flamegraph,
};
