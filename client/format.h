/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Text in and out for memstrackctl: number parsing, sizes with units, durations, terminal-safe strings
 * and tables sized to the terminal. No varlink, no curses: the TUI and the unit tests use these too.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format-text.h"
#include "format-util.h"
#include "macro.h"

/* Parses seconds such as "2", "0.5" or "1.25" into microseconds, at least 1. -EINVAL, -ERANGE. */
int format_parse_seconds(const char *s, uint64_t *ret_usec);

/* A change of pages * page_size bytes (page_size 1: of bytes): "+64.0 MiB", "-4.0 KiB", "0 B". */
char *format_delta(char *buf, size_t size, int64_t pages, uint64_t page_size);

/* "45s", "12min 3s", "3h 02min", "2d 04h". */
char *format_duration(char *buf, size_t size, uint64_t usec);


/* Columns to format for: $COLUMNS if set and valid, else the terminal's width if stdout is a TTY, else
 * SIZE_MAX (piped output is never cut). */
size_t format_terminal_columns(void);

typedef enum TableAlign {
        TABLE_ALIGN_LEFT,
        TABLE_ALIGN_RIGHT,
        _TABLE_ALIGN_MAX,
        _TABLE_ALIGN_INVALID = -EINVAL,
} TableAlign;

typedef struct TableColumn {
        const char *header;
        TableAlign align;
        /* Elastic columns give up width, down to min_width, when the line would be too long. */
        bool elastic;
        size_t min_width;
} TableColumn;

/* Rows of cells under a header line; cells are sanitized copies (the table owns them). */
typedef struct Table Table;

/* columns is borrowed and must outlive the table. */
int table_new(const TableColumn *columns, size_t n_columns, Table **ret);
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);

/* Appends one cell to the current row; a row is complete after n_columns cells. NULL prints as "-". */
int table_add_cell(Table *t, const char *text);
int table_add_cellf(Table *t, const char *format, ...) _printf_(2, 3);
size_t table_rows(const Table *t);

/* Whether table_print() prints the header line (default yes; --no-legend says no). */
void table_set_header(Table *t, bool show);

/* Prints the header and the rows, columns separated by one space, each line at most width columns
 * (elastic columns cut first, then the line itself). */
int table_print(const Table *t, FILE *f, size_t width);
