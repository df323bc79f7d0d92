/* SPDX-License-Identifier: MIT */

/* memstrackctl pages --by KEY: pages held by allocation order, GFP flags, migrate type or node (PageBreakdown),
 * of all tasks or of one task, unit or module. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"

static const TableColumn columns[] = {
        { "KEY", TABLE_ALIGN_LEFT, true, 16 },
        { "PAGES", TABLE_ALIGN_RIGHT, false, 0 },
        { "SIZE", TABLE_ALIGN_RIGHT, false, 0 },
        { "SHARE", TABLE_ALIGN_RIGHT, false, 0 },
};

int verb_pages(int argc, char *argv[]) {
        json_auto_t *params = NULL, *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        uint64_t page_size = 4096;
        char a[FORMAT_BUFFER_MAX];
        const json_t *row;
        size_t i;
        int r;

        if (!arg_by || !(streq(arg_by, "order") || streq(arg_by, "gfp") || streq(arg_by, "migratetype") ||
                         streq(arg_by, "node"))) {
                fprintf(stderr, "memstrackctl pages: --by order, gfp, migratetype or node is needed.\n");
                return CTL_EXIT_USAGE;
        }
        params = json_pack("{s:s}", "by", arg_by);
        if (!params ||
            (arg_task >= 0 && json_object_set_new(params, "pid", json_integer(arg_task)) < 0) ||
            (arg_unit && json_object_set_new(params, "unit", json_string(arg_unit)) < 0) ||
            (arg_module && json_object_set_new(params, "module", json_string(arg_module)) < 0) ||
            (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0))
                return -ENOMEM;
        r = ctl_query("io.memstrack.PageBreakdown", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;

        uint64_t total = reply_count(reply, "totalPages");
        r = table_new(columns, ELEMENTSOF(columns), &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        json_array_foreach(reply_array(reply, "rows"), i, row) {
                uint64_t pages = reply_count(row, "pages");
                if (table_add_cell(t, reply_string(row, "key")) < 0 ||
                    table_add_cellf(t, "%" PRIu64, pages) < 0 ||
                    table_add_cell(t, format_pages(a, sizeof(a), pages, page_size)) < 0 ||
                    table_add_cellf(t, "%.1f%%", total > 0 ? 100.0 * (double) pages / (double) total : 0.0) < 0)
                        return -ENOMEM;
        }
        if (reply_count(reply, "otherPages") > 0) {
                uint64_t pages = reply_count(reply, "otherPages");
                if (table_add_cell(t, "[other]") < 0 || table_add_cellf(t, "%" PRIu64, pages) < 0 ||
                    table_add_cell(t, format_pages(a, sizeof(a), pages, page_size)) < 0 ||
                    table_add_cellf(t, "%.1f%%", total > 0 ? 100.0 * (double) pages / (double) total : 0.0) < 0)
                        return -ENOMEM;
        }
        r = table_print(t, stdout, format_terminal_columns());
        if (r < 0)
                return r;
        if (arg_legend) {
                _cleanup_free_ char *scope = format_sanitize(reply_string(reply, "scope") ?: "?");
                printf("\n%s: %" PRIu64 " pages (%s) by %s", scope ?: "?", total,
                       format_pages(a, sizeof(a), total, page_size), arg_by);
                if (streq(arg_by, "gfp") && !reply_bool(reply, "gfpNamesKnown", true))
                        printf("; the kernel's flag names are not known, flags in hex");
                if (streq(arg_by, "node") && !reply_bool(reply, "zonesKnown", true))
                        printf("; this source's page keys are not pfns and the machine has several nodes: "
                               "nodes unknown");
                printf("\n");
        }
        return 0;
}
