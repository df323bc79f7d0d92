/* SPDX-License-Identifier: MIT */

/* memstrackctl stacks: the StackTree reply as an indented table; with --task, the process's user-space
 * heap (StackTree heap) under its root, in bytes. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"
#include "tasks.h"

/* Rows for node and its subtree; each level indents by two columns. */
static int add_rows(Table *t, const json_t *node, unsigned depth, uint64_t page_size) {
        _cleanup_free_ char *label = reply_frame_label(node), *line = NULL;
        char size[FORMAT_BUFFER_MAX];
        uint64_t cur = reply_count(node, "currentPages");
        int64_t peak = reply_node_peak(node);
        json_t *child;
        size_t i;
        int r;

        if (!label || asprintf(&line, "%*s%s", (int) depth * 2, "", label) < 0)
                return -ENOMEM;
        if ((r = table_add_cellf(t, "%" PRIu64, cur)) < 0 ||
            (r = table_add_cell(t, format_pages(size, sizeof(size), cur, page_size))) < 0 ||
            (r = peak >= 0 ? table_add_cellf(t, "%" PRIi64, peak) : table_add_cell(t, "-")) < 0 ||
            (r = table_add_cell(t, line)) < 0)
                return r;

        json_array_foreach(reply_array(node, "children"), i, child) {
                r = add_rows(t, child, depth + 1, page_size);
                if (r < 0)
                        return r;
        }
        uint64_t truncated = reply_count(node, "truncatedChildren");
        if (truncated > 0) {
                free(line);
                line = NULL;
                if (asprintf(&line, "%*s... %" PRIu64 " smaller branches not shown", (int) (depth + 1) * 2, "",
                             truncated) < 0)
                        return -ENOMEM;
                if ((r = table_add_cell(t, "")) < 0 || (r = table_add_cell(t, "")) < 0 ||
                    (r = table_add_cell(t, "")) < 0 || (r = table_add_cell(t, line)) < 0)
                        return r;
        }
        return 0;
}

/* Rows for a heap node (HeapNode: bytes) and its subtree: bytes in the SIZE column, no pages. */
static int add_heap_rows(Table *t, const json_t *node, unsigned depth, bool root) {
        _cleanup_free_ char *label = root ? strdup("[heap] (user space, bytes)") : reply_frame_label(node), *line = NULL;
        char size[FORMAT_BUFFER_MAX];
        json_t *child;
        size_t i;
        int r;

        if (!label || asprintf(&line, "%*s%s", (int) depth * 2, "", label) < 0)
                return -ENOMEM;
        if ((r = table_add_cell(t, "-")) < 0 ||
            (r = table_add_cell(t, format_bytes(size, sizeof(size), reply_count(node, "currentBytes")))) < 0 ||
            (r = table_add_cell(t, "-")) < 0 || (r = table_add_cell(t, line)) < 0)
                return r;
        json_array_foreach(reply_array(node, "children"), i, child) {
                r = add_heap_rows(t, child, depth + 1, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

int verb_stacks(int argc, char *argv[]) {
        static const TableColumn columns[] = {
                { .header = "PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "SIZE", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK", .align = TABLE_ALIGN_RIGHT },
                { .header = "STACK (outermost caller first)", .align = TABLE_ALIGN_LEFT, .elastic = true,
                  .min_width = 20 },
        };
        _cleanup_(table_freep) Table *t = NULL;
        json_auto_t *params = json_object(), *reply = NULL;
        uint64_t page_size = 4096;
        int r;

        if (!params)
                return -ENOMEM;
        if (arg_sort && streq(arg_sort, "allocs")) {
                fprintf(stderr, "memstrackctl: stacks sort by current or peak.\n");
                return CTL_EXIT_USAGE;
        }
        if ((arg_task >= 0 && json_object_set_new(params, "pid", json_integer((json_int_t) arg_task)) < 0) ||
            (arg_module && json_object_set_new(params, "module", json_string(arg_module)) < 0) ||
            (arg_depth >= 0 && json_object_set_new(params, "maxDepth", json_integer((json_int_t) arg_depth)) < 0) ||
            (arg_limit > 0 && json_object_set_new(params, "maxChildren", json_integer((json_int_t) arg_limit)) < 0) ||
            (arg_sort && json_object_set_new(params, "sortBy", json_string(arg_sort)) < 0))
                return -ENOMEM;

        r = ctl_query("io.memstrack.StackTree", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        r = table_new(columns, ELEMENTSOF(columns), &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        r = add_rows(t, reply_object(reply, "root"), 0, page_size);
        if (r < 0)
                return r;
        /* The process's user-space heap, when it records one: a root of its own under the task's. */
        if (reply_object(reply, "heap")) {
                r = add_heap_rows(t, reply_object(reply, "heap"), 1, true);
                if (r < 0)
                        return r;
        }
        r = table_print(t, stdout, format_terminal_columns());
        /* Sampled stacks are an estimate: said under the table, with the legend. */
        if (r >= 0 && arg_legend && reply_count(reply, "stackSampleInterval") > 1) {
                char buf[FORMAT_STACK_SAMPLING_MAX];
                printf("\nStacks sampled: %s\n", format_stack_sampling(buf, sizeof(buf),
                                                        reply_count(reply, "stackSampleInterval")));
        }
        return r;
}
