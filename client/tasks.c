/* SPDX-License-Identifier: MIT */

/* memstrackctl tasks and modules: tables of the Tasks and Modules replies. */

#include <inttypes.h>
#include <stdio.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"
#include "tasks.h"

const char *tasks_state(const json_t *task) {
        return reply_bool(task, "exited", false) ? "exited" : "running";
}

#define TASKS_HEAP_COLUMN 7

int tasks_print_table(json_t *tasks, uint64_t page_size, FILE *f, size_t width) {
        static const TableColumn all_columns[] = {
                { .header = "PID", .align = TABLE_ALIGN_RIGHT },
                { .header = "COMM", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 8 },
                { .header = "CURRENT", .align = TABLE_ALIGN_RIGHT },
                { .header = "PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK PAGES", .align = TABLE_ALIGN_RIGHT },
                /* Resident before tracing began: not in CURRENT, which counts allocations since. */
                { .header = "BASELINE", .align = TABLE_ALIGN_RIGHT },
                /* The process's user-space heap, live bytes, when it records one (TASKS_HEAP_COLUMN). */
                { .header = "HEAP", .align = TABLE_ALIGN_RIGHT },
                { .header = "ALLOCS", .align = TABLE_ALIGN_RIGHT },
                { .header = "FREES", .align = TABLE_ALIGN_RIGHT },
                { .header = "STATE", .align = TABLE_ALIGN_LEFT },
                { .header = "COMMAND", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 10 },
        };
        TableColumn columns[ELEMENTSOF(all_columns)];
        _cleanup_(table_freep) Table *t = NULL;
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX], d[FORMAT_BUFFER_MAX];
        bool heaps = false;
        size_t n = 0;
        json_t *task;
        size_t i;
        int r;

        /* The HEAP column only where some process records its heap. */
        json_array_foreach(tasks, i, task)
                heaps |= json_is_integer(json_object_get(task, "heapBytes"));
        for (i = 0; i < ELEMENTSOF(all_columns); i++)
                if (i != TASKS_HEAP_COLUMN || heaps)
                        columns[n++] = all_columns[i];
        r = table_new(columns, n, &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        json_array_foreach(tasks, i, task) {
                uint64_t cur = reply_count(task, "currentPages"), peak = reply_count(task, "peakPages");
                uint64_t baseline = reply_count(task, "baselinePages");
                if ((r = table_add_cellf(t, "%" PRIi64, reply_int(task, "pid", -1))) < 0 ||
                    (r = table_add_cell(t, reply_string(task, "comm"))) < 0 ||
                    (r = table_add_cell(t, format_pages(a, sizeof(a), cur, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, cur)) < 0 ||
                    (r = table_add_cell(t, format_pages(b, sizeof(b), peak, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, peak)) < 0 ||
                    (r = table_add_cell(t, format_pages(c, sizeof(c), baseline, page_size))) < 0 ||
                    (heaps && (r = table_add_cell(t, json_is_integer(json_object_get(task, "heapBytes")) ?
                                                  format_bytes(d, sizeof(d), reply_count(task, "heapBytes")) : "-")) < 0) ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(task, "allocs"))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(task, "frees"))) < 0 ||
                    (r = table_add_cell(t, tasks_state(task))) < 0 ||
                    (r = table_add_cell(t, reply_string(task, "cmdline"))) < 0)
                        return r;
        }
        return table_print(t, f, width);
}

void tasks_print_evicted(const json_t *evicted, uint64_t page_size, FILE *f) {
        char a[FORMAT_BUFFER_MAX];
        uint64_t pages = reply_count(evicted, "currentPages");

        /* Nothing to say while the forgotten tasks hold nothing. */
        if (!evicted || pages == 0)
                return;
        fprintf(f, "Evicted: %s (%" PRIu64 " pages) still held by %" PRIu64
                " exited tasks no longer listed (--max-exited-tasks)\n",
                format_pages(a, sizeof(a), pages, page_size), pages, reply_count(evicted, "tasks"));
}

int modules_print_table(json_t *modules, uint64_t page_size, FILE *f, size_t width) {
        static const TableColumn columns[] = {
                { .header = "MODULE", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 12 },
                { .header = "CURRENT", .align = TABLE_ALIGN_RIGHT },
                { .header = "PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "STATE", .align = TABLE_ALIGN_LEFT },
        };
        _cleanup_(table_freep) Table *t = NULL;
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        json_t *m;
        size_t i;
        int r;

        r = table_new(columns, ELEMENTSOF(columns), &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        json_array_foreach(modules, i, m) {
                uint64_t cur = reply_count(m, "currentPages"), peak = reply_count(m, "peakPages");
                if ((r = table_add_cell(t, reply_string(m, "name"))) < 0 ||
                    (r = table_add_cell(t, format_pages(a, sizeof(a), cur, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, cur)) < 0 ||
                    (r = table_add_cell(t, format_pages(b, sizeof(b), peak, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, peak)) < 0 ||
                    (r = table_add_cell(t, reply_bool(m, "loaded", true) ? "loaded" : "unloaded")) < 0)
                        return r;
        }
        return table_print(t, f, width);
}

int units_print_table(json_t *units, uint64_t page_size, bool cgroup_column, FILE *f, size_t width) {
        static const TableColumn columns[] = {
                { .header = "UNIT", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 12 },
                { .header = "CURRENT", .align = TABLE_ALIGN_RIGHT },
                { .header = "PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK", .align = TABLE_ALIGN_RIGHT },
                { .header = "PEAK PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "TASKS", .align = TABLE_ALIGN_RIGHT },
                /* "removed": every cgroup of the unit is gone, its pages are still held. */
                { .header = "STATE", .align = TABLE_ALIGN_LEFT },
                /* Last, so it can be left out. */
                { .header = "CGROUP", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 10 },
        };
        _cleanup_(table_freep) Table *t = NULL;
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        json_t *u;
        size_t i;
        int r;

        r = table_new(columns, ELEMENTSOF(columns) - !cgroup_column, &t);
        if (r < 0)
                return r;
        table_set_header(t, arg_legend);
        json_array_foreach(units, i, u) {
                uint64_t cur = reply_count(u, "currentPages"), peak = reply_count(u, "peakPages");
                const char *cgroup = reply_string(u, "cgroup");
                if ((r = table_add_cell(t, reply_string(u, "name"))) < 0 ||
                    (r = table_add_cell(t, format_pages(a, sizeof(a), cur, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, cur)) < 0 ||
                    (r = table_add_cell(t, format_pages(b, sizeof(b), peak, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, peak)) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, reply_count(u, "tasks"))) < 0 ||
                    (r = table_add_cell(t, reply_bool(u, "live", true) ? "live" : "removed")) < 0 ||
                    (cgroup_column && (r = table_add_cell(t, cgroup && *cgroup ? cgroup : "-")) < 0))
                        return r;
        }
        return table_print(t, f, width);
}

int list_params_sort_limit(json_t *params, const char *what, bool allocs) {
        if (arg_sort) {
                if (!allocs && streq(arg_sort, "allocs")) {
                        fprintf(stderr, "memstrackctl: %s sort by current or peak.\n", what);
                        return CTL_EXIT_USAGE;
                }
                if (json_object_set_new(params, "sortBy", json_string(arg_sort)) < 0)
                        return -ENOMEM;
        }
        if (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0)
                return -ENOMEM;
        return 0;
}

/* Calls method with the verb's --sort/--limit and prints the table (or the JSON reply). */
static int list_verb(const char *method, const char *list, bool tasks) {
        json_auto_t *params = json_object(), *reply = NULL;
        uint64_t page_size = 4096;
        int r;

        if (!params)
                return -ENOMEM;
        r = list_params_sort_limit(params, list, tasks);
        if (r != 0)
                return r;
        /* Without --all, exited tasks and tasks at 0 for the sort key (kernel threads, mostly) are left
         * out by the daemon, before the limit. */
        if (tasks && json_object_set_new(params, arg_all ? "includeExited" : "hideZero", json_true()) < 0)
                return -ENOMEM;
        /* Names are shown with other bytes than UTF-8 as \xNN: that is what the daemon compares (the option
         * table takes only UTF-8). */
        if (tasks && arg_comm && json_object_set_new(params, "comm", json_string(arg_comm)) < 0)
                return -ENOMEM;

        r = ctl_query(method, params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        json_t *items = reply_array(reply, list);
        if (tasks)
                r = tasks_print_table(items, page_size, stdout, format_terminal_columns());
        else
                r = modules_print_table(items, page_size, stdout, format_terminal_columns());
        if (r < 0)
                return r;
        if (json_array_size(items) == 0 && arg_legend)
                printf("(none)\n");
        if (tasks)
                tasks_print_evicted(reply_object(reply, "evicted"), page_size, stdout);
        return 0;
}

int verb_tasks(int argc, char *argv[]) {
        return list_verb("io.memstrack.Tasks", "tasks", true);
}

int verb_modules(int argc, char *argv[]) {
        return list_verb("io.memstrack.Modules", "modules", false);
}
