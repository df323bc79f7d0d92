/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Where memstrackctl finds the programs it runs itself: memstrackd (record, import) and the heap library
 * (record). In order: the environment ($MEMSTRACKD, $MEMSTRACK_HEAP_LIBRARY, which `meson devenv` sets),
 * then the build tree memstrackctl runs from (client/memstrackctl of a meson build directory: its own
 * daemon/memstrackd and heap/libmemstrack-heap.so, so that a build tree works before it is installed and
 * never mixes with an installed release), then the installed ones.
 */

typedef enum ProgramPath {
        PROGRAM_MEMSTRACKD,
        PROGRAM_HEAP_LIBRARY,
        _PROGRAM_PATH_MAX,
} ProgramPath;

typedef enum ProgramOrigin {
        PROGRAM_INSTALLED,
        PROGRAM_ENVIRONMENT,
        PROGRAM_BUILD_TREE,
} ProgramOrigin;

/* The path of a program (a new string in *ret) and where it came from; -ENOMEM. */
int program_path(ProgramPath which, char **ret, ProgramOrigin *ret_origin);
/* "installed", "from $MEMSTRACKD", "this build tree's", ... for messages. */
const char *program_origin_to_string(ProgramPath which, ProgramOrigin origin);
