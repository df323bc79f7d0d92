/* SPDX-License-Identifier: MIT */
#pragma once

/* Task and module tables, shared by the tasks/modules verbs, top --batch and diff. */

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "varlink.h"


/* "running" or "exited". */
const char *tasks_state(const json_t *task);

/* Print an array of Task / Module objects (borrowed) as tables at most width columns wide. -ENOMEM. */
int tasks_print_table(json_t *tasks, uint64_t page_size, FILE *f, size_t width);
int modules_print_table(json_t *modules, uint64_t page_size, FILE *f, size_t width);
