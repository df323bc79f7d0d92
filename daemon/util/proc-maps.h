/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The lines of /proc/PID/maps text, read in place: no copy of a line, no allocation.
 *
 *   start-end perms offset major:minor inode   path
 *   7f2b1c000000-7f2b1c022000 r--p 00000000 08:01 1837 /usr/lib/x86_64-linux-gnu/libc.so.6
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MapsLine {
        uint64_t start, end;            /* addresses, start < end */
        uint64_t offset;                /* in the file */
        char perms[4];                  /* "r-xp", not NUL-terminated */
        const char *path;               /* into the text: what is mapped ("/usr/...", "[heap]"), or NULL */
        size_t path_len;                /* without " (deleted)" */
        bool deleted;                   /* the path ended in " (deleted)": the file is gone */
} MapsLine;

/* Whether the mapping is of a file by its absolute path, and the file is still there. */
static inline bool maps_line_is_file(const MapsLine *m) {
        return m->path && m->path[0] == '/' && !m->deleted;
}

/*
 * Reads the line at *cursor (up to its newline or the text's end) and moves *cursor past it. 1: *ret is
 * the mapping; 0: the text ended; -EINVAL: the line is not a mapping (the cursor moved past it, the next
 * call goes on).
 */
int maps_next(const char **cursor, MapsLine *ret);
