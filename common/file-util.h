/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Opening a file whose path someone gave (a configuration, a state file, an input, a symbol table): only
 * a regular file is read. A FIFO, a device, a socket or a directory is refused at once, instead of waited
 * on (opening a FIFO waits for a writer) or read without end (/dev/zero). Nothing is logged: callers
 * name the path, with file_error_string() for what went wrong.
 */

#include <stdio.h>

/*
 * Opens path read-only, with O_CLOEXEC, O_NOCTTY and O_NONBLOCK (so that opening a FIFO does not wait;
 * reads of a regular file do not mind it) and flags (e.g. O_NOFOLLOW), and checks that it is a regular
 * file. Returns the descriptor, -EBADFD when path is not a regular file, or -errno.
 */
int open_regular(const char *path, int flags);

/* open_regular() as a FILE for reading. 0, -EBADFD, -ENOMEM or -errno. */
int fopen_regular(const char *path, int flags, FILE **ret);

/* What went wrong, for messages: "not a regular file" for open_regular()'s -EBADFD, else strerror(). */
const char *file_error_string(int error);
