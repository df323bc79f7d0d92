/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The call stacks of sampled blocks (heap/stacks.c): the stack of the hook's caller, taken past the
 * library's own frames; the region's stack table, which gives each distinct stack an id once, so that a
 * record carries an id and not its frames; and the region's list of loaded objects, which tells the daemon
 * what each frame's address is.
 */

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Notes where the library's own code is, whose frames no stack shows. Once, before any stack is taken. */
void stacks_init(void);
/* Rewrites the region's loaded objects from the loader's list; skipped while another thread does it. */
void stacks_publish_objects(void);
/* The id of the stack of the hook's caller in the region's table, HEAP_STACK_FULL if the table is full. A
 * new stack with a frame in no known object publishes the objects again: a library was loaded since. */
uint32_t stacks_take(void);
/* The path of the loaded object whose code holds address ("" for the main program), NULL if none. */
const char *stacks_code_path(const void *address);

#pragma GCC visibility pop
