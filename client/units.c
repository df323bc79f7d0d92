/* SPDX-License-Identifier: MIT */

/* memstrackctl units: the Units reply as a table, and with --stacks the biggest stacks of each unit. */

#include <inttypes.h>
#include <stdio.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"
#include "tasks.h"

/* Each unit's stacks: a line with its pages, then its frames innermost first, indented. */
static void units_print_stacks(json_t *units, uint64_t page_size, FILE *f) {
        char a[FORMAT_BUFFER_MAX];
        json_t *u, *s, *frame;
        size_t i, j, k;

        json_array_foreach(units, i, u) {
                json_t *stacks = reply_array(u, "topStacks");
                /* Names are the kernel's bytes: no escape sequence reaches the terminal (format.h). */
                _cleanup_free_ char *name = format_sanitize(reply_string(u, "name"));
                fprintf(f, "\n%s: %zu biggest stacks\n", name ?: "?", json_array_size(stacks));
                json_array_foreach(stacks, j, s) {
                        uint64_t pages = reply_count(s, "currentPages");
                        fprintf(f, "  %s (%" PRIu64 " pages)\n", format_pages(a, sizeof(a), pages, page_size), pages);
                        json_array_foreach(reply_array(s, "frames"), k, frame) {
                                _cleanup_free_ char *text = format_sanitize(json_string_value(frame) ?: "?");
                                fprintf(f, "      %s\n", text ?: "?");
                        }
                }
        }
}

int verb_units(int argc, char *argv[]) {
        json_auto_t *params = json_object(), *reply = NULL;
        uint64_t page_size = 4096;
        int r;

        if (!params)
                return -ENOMEM;
        r = list_params_sort_limit(params, "units", false);
        if (r != 0)
                return r;
        if (arg_stacks > 0 && json_object_set_new(params, "stacks", json_integer((json_int_t) arg_stacks)) < 0)
                return -ENOMEM;
        /* Without --all, units holding nothing by the sort key are left out, before the limit. */
        if (!arg_all && json_object_set_new(params, "hideZero", json_true()) < 0)
                return -ENOMEM;

        r = ctl_query("io.memstrack.Units", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        json_t *units = reply_array(reply, "units");
        r = units_print_table(units, page_size, true, stdout, format_terminal_columns());
        if (r < 0)
                return r;
        if (json_array_size(units) == 0 && arg_legend)
                printf("(none)\n");
        if (arg_stacks > 0)
                units_print_stacks(units, page_size, stdout);
        return 0;
}
