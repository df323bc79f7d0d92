/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Binding the calls of an allocator preloaded before the library to the library (heap/rebind.c).
 */

#include <stdbool.h>

#pragma GCC visibility push(hidden)

/* Whether this architecture's relocations are known here (x86-64, AArch64). */
bool rebind_possible(void);
/* Points every loaded object's GOT slots for a name the library exports (own_code: one of its functions)
 * at the library's function. False: the library's own tables were not found, nothing changed. */
bool rebind_objects(const void *own_code);

#pragma GCC visibility pop
