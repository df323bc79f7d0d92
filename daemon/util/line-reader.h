/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * LineReader: the lines of an input that may be a pipe, a FIFO or endless, read with bounds: at most
 * max_bytes in all, lines longer than max_line bytes in pieces of that many (so a line without end
 * still comes back to the caller every max_line bytes), and every wait for more interrupted by SIGTERM
 * or SIGINT (stop-signal.h). What it reads can be copied to another descriptor as it goes, so
 * an input that cannot be read twice can be, from the copy.
 */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef enum LineFlags {
        LINE_UNTERMINATED = 1 << 0,     /* the end of the input, without a newline */
        LINE_CUT = 1 << 1,              /* max_line bytes of a line that goes on in the next piece */
        LINE_CONTINUED = 1 << 2,        /* the rest of the line of the piece before: not a new line */
} LineFlags;

typedef struct LineReader LineReader;

/*
 * Reads fd from where it stands. fd, copy_fd (every byte read is written there too; -EBADF: none) and
 * stop_fd (stop_signal_fd(); -EBADF: signals are not watched) are borrowed. NULL on OOM.
 */
LineReader *line_reader_new(int fd, uint64_t max_bytes, size_t max_line, int copy_fd, int stop_fd);
LineReader *line_reader_free(LineReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(LineReader *, line_reader_free);

/*
 * The next line without its newline, NUL-terminated in the reader's buffer (the caller may change it;
 * it may hold NUL bytes: *ret_len is its length), valid until the next call; *ret_flags are LineFlags.
 * Returns 1 with a line, 0 at the end, -EFBIG past max_bytes, -ECANCELED when SIGTERM or SIGINT is
 * pending, or -errno of read or of writing the copy.
 */
int line_reader_next(LineReader *r, char **ret_line, size_t *ret_len, unsigned *ret_flags);

/* Bytes read so far. */
uint64_t line_reader_bytes(const LineReader *r);
