/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "format.h"
#include "parse-util.h"

int format_parse_seconds(const char *s, uint64_t *ret_usec) {
        uint64_t whole, frac = 0, scale = 1000000;
        const char *dot;
        int r;

        assert(s);
        assert(ret_usec);

        dot = strchr(s, '.');
        if (dot) {
                _cleanup_free_ char *integer = strndup(s, (size_t) (dot - s));
                if (!integer)
                        return -ENOMEM;
                if (integer[0] == '\0')
                        whole = 0;
                else {
                        r = parse_uint64(integer, 0, UINT32_MAX, &whole);
                        if (r < 0)
                                return r;
                }
                /* Up to six decimals: microseconds. */
                const char *p = dot + 1;
                if (*p == '\0' || strlen(p) > 6)
                        return -EINVAL;
                for (; *p; p++) {
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                        scale /= 10;
                        frac += (uint64_t) (*p - '0') * scale;
                }
        } else {
                r = parse_uint64(s, 0, UINT32_MAX, &whole);
                if (r < 0)
                        return r;
        }
        if (whole == 0 && frac == 0)
                return -ERANGE;
        *ret_usec = whole * 1000000 + frac;
        return 0;
}

char *format_delta(char *buf, size_t size, int64_t pages, uint64_t page_size) {
        char b[FORMAT_BUFFER_MAX];
        uint64_t abs_pages = pages < 0 ? (uint64_t) -(pages + 1) + 1 : (uint64_t) pages;

        (void) snprintf(buf, size, "%s%s", pages > 0 ? "+" : pages < 0 ? "-" : "",
                        format_pages(b, sizeof(b), abs_pages, page_size));
        return buf;
}

char *format_duration(char *buf, size_t size, uint64_t usec) {
        uint64_t s = usec / 1000000;

        assert(buf);

        if (s < 60)
                (void) snprintf(buf, size, "%" PRIu64 "s", s);
        else if (s < 3600)
                (void) snprintf(buf, size, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
        else if (s < 86400)
                (void) snprintf(buf, size, "%" PRIu64 "h %02" PRIu64 "min", s / 3600, s / 60 % 60);
        else
                (void) snprintf(buf, size, "%" PRIu64 "d %02" PRIu64 "h", s / 86400, s / 3600 % 24);
        return buf;
}

size_t format_terminal_columns(void) {
        const char *e = getenv("COLUMNS");
        struct winsize ws = {};
        uint64_t v;

        if (e && parse_uint64(e, 1, 100000, &v) >= 0)
                return (size_t) v;
        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_col > 0)
                return ws.ws_col;
        return SIZE_MAX;
}

struct Table {
        const TableColumn *columns;     /* borrowed */
        size_t n_columns;
        char **cells;                   /* owned, n_cells strings, row after row */
        size_t n_cells, allocated;
        bool no_header;                 /* --no-legend: rows only */
};

int table_new(const TableColumn *columns, size_t n_columns, Table **ret) {
        Table *t;

        assert(columns);
        assert(n_columns > 0);
        assert(ret);

        t = calloc(1, sizeof(Table));
        if (!t)
                return -ENOMEM;
        t->columns = columns;
        t->n_columns = n_columns;
        *ret = t;
        return 0;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}

int table_add_cell(Table *t, const char *text) {
        assert(t);

        if (greedy_realloc(&t->cells, &t->allocated, t->n_cells + 1, sizeof(char *), 64) < 0)
                return -ENOMEM;
        char *copy = format_sanitize(text ?: "-");
        if (!copy)
                return -ENOMEM;
        t->cells[t->n_cells++] = copy;
        return 0;
}

int table_add_cellf(Table *t, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return table_add_cell(t, s);
}

size_t table_rows(const Table *t) {
        return t->n_cells / t->n_columns;
}

static int print_cell(FILE *f, const char *text, size_t width, TableAlign align, bool last) {
        _cleanup_free_ char *cut = format_ellipsize(text, width);
        size_t pad;

        if (!cut)
                return -ENOMEM;
        pad = width - format_text_width(cut);
        if (align == TABLE_ALIGN_RIGHT)
                fprintf(f, "%*s%s", (int) pad, "", cut);
        else if (last)
                /* No trailing blanks at the end of a line. */
                fputs(cut, f);
        else
                fprintf(f, "%s%*s", cut, (int) pad, "");
        return 0;
}

void table_set_header(Table *t, bool show) {
        assert(t);
        t->no_header = !show;
}

int table_print(const Table *t, FILE *f, size_t width) {
        _cleanup_free_ size_t *widths = calloc(t->n_columns, sizeof(size_t));
        size_t n_rows = table_rows(t), total;
        int r;

        if (!widths)
                return -ENOMEM;
        for (size_t c = 0; c < t->n_columns; c++) {
                /* At least 1 without a header, so that no column is left out of the rows. */
                widths[c] = t->no_header ? 1 : format_text_width(t->columns[c].header);
                for (size_t row = 0; row < n_rows; row++)
                        widths[c] = MAX(widths[c], format_text_width(t->cells[row * t->n_columns + c]));
        }

        total = t->n_columns - 1;
        for (size_t c = 0; c < t->n_columns; c++)
                total += widths[c];
        /* Too wide: take columns from the elastic cells, rightmost first, down to their minimum. */
        for (size_t c = t->n_columns; c-- > 0 && total > width;) {
                if (!t->columns[c].elastic)
                        continue;
                size_t min = MAX(t->columns[c].min_width, t->no_header ? 1 : format_text_width(t->columns[c].header));
                if (widths[c] <= min)
                        continue;
                size_t give = MIN(widths[c] - min, total - width);
                widths[c] -= give;
                total -= give;
        }
        /* Still too wide: the line is cut, the leftmost columns (pid, name) stay readable. */
        if (total > width) {
                size_t left = width;
                for (size_t c = 0; c < t->n_columns; c++) {
                        widths[c] = MIN(widths[c], left);
                        left -= widths[c];
                        left -= left > 0 ? 1 : 0;
                }
        }

        for (size_t row = t->no_header ? 1 : 0; row <= n_rows; row++)
                for (size_t c = 0; c < t->n_columns; c++) {
                        const char *text = row == 0 ? t->columns[c].header : t->cells[(row - 1) * t->n_columns + c];
                        bool last = c + 1 == t->n_columns || widths[c + 1] == 0;
                        if (widths[c] == 0)
                                continue;
                        r = print_cell(f, text, widths[c], t->columns[c].align, last);
                        if (r < 0)
                                return r;
                        fputc(last ? '\n' : ' ', f);
                        if (last)
                                break;
                }
        return 0;
}
