/* SPDX-License-Identifier: MIT */
#pragma once

/* Task, module, unit and slab tables, shared by the verbs, top --batch and diff. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "varlink.h"


/* "running" or "exited". */
const char *tasks_state(const json_t *task);

/* Print an array of Task / Module objects (borrowed) as tables at most width columns wide. -ENOMEM. */
int tasks_print_table(json_t *tasks, uint64_t page_size, FILE *f, size_t width);
int modules_print_table(json_t *modules, uint64_t page_size, FILE *f, size_t width);
/* Unit objects (borrowed) as a table: name, current and peak, live tasks, state, and the cgroup path if
 * cgroup_column. -ENOMEM. */
int units_print_table(json_t *units, uint64_t page_size, bool cgroup_column, FILE *f, size_t width);
/* SlabRow objects (borrowed) grouped by by ("callsite", "cache", "task" or "unit") as a table (client/slab.c).
 * -ENOMEM. */
int slab_print_table(json_t *rows, const char *by, FILE *f, size_t width);
/* Whether a row of a Slab reply is noted (frees not visible, above the kernel's count), and what the notes
 * mean. */
bool slab_rows_marked(json_t *rows);
#define SLAB_NOTE_LEGEND                                                                                    \
        "frees not visible: this kernel frees these objects without a tracepoint (kfree_rcu batches, RCU "  \
        "sheaves, bulk frees), so their live counts are an upper bound and leaks leaves them out.\n"        \
        "above kernel: more live objects than /proc/slabinfo counts active; the oldest were dropped down to " \
        "it."
/* Adds --sort (as sortBy; "allocs" only if allocs, else a usage error naming what) and --limit to the
 * params of a list method. 0, -ENOMEM or CTL_EXIT_USAGE (the message printed). */
int list_params_sort_limit(json_t *params, const char *what, bool allocs);
/* One line about the pages of tasks evicted from the daemon's table (an EvictedTasks object, borrowed;
 * NULL or nothing held: no line). */
void tasks_print_evicted(const json_t *evicted, uint64_t page_size, FILE *f);
