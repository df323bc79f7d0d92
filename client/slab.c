/* SPDX-License-Identifier: MIT */

/* memstrackctl slab and leaks: the Slab reply (live slab objects by call site, cache, task or unit) and the
 * Leaks reply (old live objects by call site and old pages by process and stack, with their growth). */

#include <inttypes.h>
#include <stdio.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "macro.h"
#include "reply.h"
#include "report.h"
#include "tasks.h"

static const char *const slab_by_names[] = { "callsite", "cache", "task", "unit" };

/* A call site's or cache's note: its frees not visible on this kernel, above the kernel's count. NULL for
 * none. */
static const char *slab_row_note(json_t *row, char *buf, size_t size) {
        bool invisible = json_is_false(json_object_get(row, "freesVisible"));
        bool drifting = reply_bool(reply_object(row, "kernel"), "drifting", false);
        uint64_t lost = reply_count(row, "lostFrees"), known = lost + reply_count(row, "frees");
        char share[32] = "";

        if (!invisible && !drifting)
                return NULL;
        /* How many of its frees were not seen: all, or a few paths of many. */
        if (invisible && known > 0) {
                double percent = 100.0 * (double) lost / (double) known;
                (void) snprintf(share, sizeof(share), percent >= 1 ? " (%.0f%% lost)" : " (%.2f%% lost)", percent);
        }
        (void) snprintf(buf, size, "%s%s%s%s", invisible ? "frees not visible" : "", share,
                        invisible && drifting ? ", " : "", drifting ? "above kernel" : "");
        return buf;
}

bool slab_rows_marked(json_t *rows) {
        char note[64];
        json_t *row;
        size_t i;

        json_array_foreach(rows, i, row)
                if (slab_row_note(row, note, sizeof(note)))
                        return true;
        return false;
}

int slab_print_table(json_t *rows, const char *by, FILE *f, size_t width) {
        const bool task = streq(by, "task"), callsite = streq(by, "callsite"), cache = streq(by, "cache");
        const bool groups = callsite || cache;
        const TableColumn columns[] = {
                { .header = task ? "PID" : "", .align = TABLE_ALIGN_RIGHT },
                { .header = callsite ? "CALL SITE" : cache ? "CACHE" : task ? "COMMAND" : "UNIT",
                  .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 12 },
                { .header = "OBJECTS", .align = TABLE_ALIGN_RIGHT },
                { .header = "ALLOCATED", .align = TABLE_ALIGN_RIGHT },
                { .header = "REQUESTED", .align = TABLE_ALIGN_RIGHT },
                { .header = "WASTE", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK", .align = TABLE_ALIGN_RIGHT },
                /* Call sites and caches: */
                { .header = "ALLOCS", .align = TABLE_ALIGN_RIGHT },
                { .header = "FREES", .align = TABLE_ALIGN_RIGHT },
                { .header = "LOST", .align = TABLE_ALIGN_RIGHT },
                { .header = "REMOTE", .align = TABLE_ALIGN_RIGHT },
                /* Caches: */
                { .header = "KERNEL", .align = TABLE_ALIGN_RIGHT },
                /* Call sites and caches: */
                { .header = "NOTE", .align = TABLE_ALIGN_LEFT },
        };
        /* The first column is the task's pid; call sites add their counts and note, caches the kernel's
         * count too. */
        size_t first = task ? 0 : 1, n = groups ? ELEMENTSOF(columns) : 7;
        _cleanup_(table_freep) Table *t = NULL;
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX], note[64];
        TableColumn shown[ELEMENTSOF(columns)];
        size_t n_shown = 0;
        json_t *row;
        size_t i;
        int r;

        for (size_t k = first; k < n; k++)
                if (cache || !streq(columns[k].header, "KERNEL"))
                        shown[n_shown++] = columns[k];
        r = table_new(shown, n_shown, &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        json_array_foreach(rows, i, row) {
                json_t *peak = json_object_get(row, "peakLiveBytes"), *kernel = reply_object(row, "kernel");
                int64_t pid = reply_int(row, "pid", -1);
                /* The row of evicted tasks ("[evicted]") has no pid. */
                if ((task && (r = pid >= 0 ? table_add_cellf(t, "%" PRIi64, pid) : table_add_cell(t, NULL)) < 0) ||
                    (r = table_add_cell(t, reply_string(row, "name"))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(row, "liveObjects"))) < 0 ||
                    (r = table_add_cell(t, format_bytes(a, sizeof(a), reply_count(row, "liveBytesAllocated")))) < 0 ||
                    (r = table_add_cell(t, format_bytes(b, sizeof(b), reply_count(row, "liveBytesRequested")))) < 0 ||
                    (r = table_add_cellf(t, "%.1f%%", json_number_value(json_object_get(row, "wastePercent")))) < 0 ||
                    (r = table_add_cell(t, json_is_integer(peak) ?
                                                   format_bytes(c, sizeof(c), (uint64_t) json_integer_value(peak)) :
                                                   NULL)) < 0)
                        return r;
                if (!groups)
                        continue;
                if ((r = table_add_cellf(t, "%" PRIu64, reply_count(row, "allocs"))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(row, "frees"))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(row, "lostFrees"))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(row, "remoteFrees"))) < 0)
                        return r;
                if (cache && (r = kernel ? table_add_cellf(t, "%" PRIu64, reply_count(kernel, "activeObjects")) :
                                           table_add_cell(t, NULL)) < 0)
                        return r;
                r = table_add_cell(t, slab_row_note(row, note, sizeof(note)));
                if (r < 0)
                        return r;
        }
        return table_print(t, f, width);
}

int verb_slab(int argc, char *argv[]) {
        json_auto_t *params = json_object(), *reply = NULL;
        const char *by = arg_by ?: "callsite";
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX];
        bool known = false;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(slab_by_names); i++)
                known = known || streq(by, slab_by_names[i]);
        if (!known) {
                fprintf(stderr, "memstrackctl: slab: --by takes callsite, cache, task or unit, not '%s'.\n", by);
                return CTL_EXIT_USAGE;
        }
        if (!params || json_object_set_new(params, "by", json_string(by)) < 0 ||
            (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0))
                return -ENOMEM;
        uint64_t page_size;
        r = ctl_query("io.memstrack.Slab", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        if (!json_is_true(json_object_get(reply, "tracing")))
                printf("memstrackd does not trace slab objects: start it with --slab (Slab= in its configuration).\n");
        if (arg_legend)
                printf("Live slab objects: %" PRIu64 ", %s allocated for %s requested (waste %.1f%%), peak %s; "
                       "allocs %" PRIu64 ", frees %" PRIu64 ", unknown frees %" PRIu64 ", lost frees %" PRIu64
                       " (%.1f an hour; %.4f%% of the allocations whose frees are visible), dropped %" PRIu64
                       ", dropped above the kernel's count %" PRIu64 "\n\n",
                       reply_count(reply, "liveObjects"), format_bytes(a, sizeof(a), reply_count(reply, "liveBytesAllocated")),
                       format_bytes(b, sizeof(b), reply_count(reply, "liveBytesRequested")),
                       json_number_value(json_object_get(reply, "wastePercent")),
                       format_bytes(c, sizeof(c), reply_count(reply, "peakLiveBytes")), reply_count(reply, "allocs"),
                       reply_count(reply, "frees"), reply_count(reply, "unknownFrees"), reply_count(reply, "lostFrees"),
                       reply_double(reply, "lostFreesPerHour", 0), reply_double(reply, "visibleLostFreesPercent", 0),
                       reply_count(reply, "droppedObjects"), reply_count(reply, "trimmedObjects"));
        json_t *rows = reply_array(reply, "rows");
        r = slab_print_table(rows, by, stdout, format_terminal_columns());
        if (r < 0)
                return r;
        if (json_array_size(rows) == 0 && arg_legend)
                printf("(none)\n");
        if (arg_legend && slab_rows_marked(rows))
                printf("\n%s\n", SLAB_NOTE_LEGEND);
        return 0;
}

int verb_leaks(int argc, char *argv[]) {
        json_auto_t *params = json_object(), *reply = NULL, *doc = NULL;
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        uint64_t page_size;
        int r;

        if (!params ||
            (arg_min_age_seconds >= 0 &&
             json_object_set_new(params, "minAgeSeconds", json_integer((json_int_t) arg_min_age_seconds)) < 0) ||
            (arg_task > 0 && json_object_set_new(params, "pid", json_integer((json_int_t) arg_task)) < 0) ||
            (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0))
                return -ENOMEM;
        r = ctl_query("io.memstrack.Leaks", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        /* Printed as the leaks report prints it: one text for both. */
        doc = json_pack("{s:O}", "leaks", reply);
        if (!doc)
                return -ENOMEM;
        o.formats[0].format = report_format_find("leaks");
        o.n_formats = 1;
        return report_render(doc, &o, stdout);
}
