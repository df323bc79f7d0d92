/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-text.h"
#include "macro.h"
#include "view-class.h"

/* The registry: one class per line of TOP_VIEWS, in its order. */
#define TOP_VIEW_DECLARE_(NAME, name) extern const TopViewClass top_view_##name;
TOP_VIEWS(TOP_VIEW_DECLARE_)

#define TOP_VIEW_ENTRY_(NAME, name) [TOP_VIEW_##NAME] = &top_view_##name,
static const TopViewClass *const view_classes[_TOP_VIEW_MAX] = {
        TOP_VIEWS(TOP_VIEW_ENTRY_)
};

const TopViewClass *top_view_class(TopView v) {
        assert(v >= 0 && v < _TOP_VIEW_MAX);
        return view_classes[v];
}

/* The columns' texts as one line: each padded to its column's width, one space apart. */
static char *join_columns(const TopViewClass *c, char *const *texts) {
        char *line = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&line, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < c->n_columns; i++) {
                const TopColumn *col = &c->columns[i];
                int pad = MAX(col->width - (int) format_text_width(texts[i]), 0);

                if (i > 0)
                        fputc(' ', f);
                if (col->flags & TOP_COLUMN_LEFT)
                        fprintf(f, "%s%*s", texts[i], pad, "");
                else
                        fprintf(f, "%*s%s", pad, "", texts[i]);
        }
        if (fclose(f) != 0)
                return mfree_ptr(line);
        return line;
}

char *top_view_header(const TopModel *m, TopView v) {
        const TopViewClass *c = top_view_class(v);
        _cleanup_free_ char **texts = calloc(c->n_columns, sizeof(char *));
        char *line = NULL;
        size_t i;

        if (!texts)
                return NULL;
        for (i = 0; i < c->n_columns; i++) {
                const TopColumn *col = &c->columns[i];
                if (col->sort >= 0 && (unsigned) col->sort == m->sort[v]) {
                        if (top_field(&texts[i], "[%s]", col->title) < 0)
                                break;
                } else if (i + 1 == c->n_columns && c->last_title) {
                        if (!(texts[i] = c->last_title(m)))
                                break;
                } else if (!(texts[i] = strdup(col->title)))
                        break;
        }
        if (i == c->n_columns)
                line = join_columns(c, texts);
        for (i = 0; i < c->n_columns; i++)
                free(texts[i]);
        return line;
}

char *top_view_row_text(const TopModel *m, TopView v, size_t row, bool utf8) {
        const TopViewClass *c = top_view_class(v);
        size_t value = top_model_row_value(m, v, row);
        _cleanup_free_ char **fields = NULL;
        char *line = NULL;

        if (value == SIZE_MAX)
                return NULL;
        fields = calloc(c->n_columns, sizeof(char *));
        if (!fields)
                return NULL;
        if (c->write(m, value, top_model_tree_line(m, v, row), utf8, fields) >= 0)
                line = join_columns(c, fields);
        for (size_t i = 0; i < c->n_columns; i++)
                free(fields[i]);
        return line;
}

int top_view_column_x(const TopViewClass *c, size_t column) {
        int x = 0;

        for (size_t i = 0; i < column && i < c->n_columns; i++)
                x += c->columns[i].width + 1;
        return x;
}

bool top_text_matches(const char *text, const char *filter) {
        return text && strcasestr(text, filter);
}

int top_compare_u64_desc(uint64_t a, uint64_t b) {
        return a > b ? -1 : a < b;
}

int top_compare_i64(int64_t a, int64_t b) {
        return a < b ? -1 : a > b;
}

char *top_tree_guides(const TopTreeLine *line, bool utf8) {
        size_t len = line ? strlen(line->guides) : 0;
        char *s = malloc(len * 9 + 8), *p = s;

        if (!s)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                const char *piece;
                switch (line->guides[i]) {
                case '|':
                        piece = utf8 ? "\u2502  " : "|  ";
                        break;
                case 't':
                        piece = utf8 ? "\u251c\u2500 " : "|- ";
                        break;
                case 'l':
                        piece = utf8 ? "\u2514\u2500 " : "`- ";
                        break;
                default:
                        piece = "   ";
                }
                p = stpcpy(p, piece);
        }
        if (line && line->collapsed)
                p = stpcpy(p, "[+] ");
        *p = '\0';
        return s;
}

int top_tree_guides_width(const TopTreeLine *line) {
        if (!line)
                return 0;
        /* Three columns a level, four for the closed mark. */
        return (int) strlen(line->guides) * 3 + (line->collapsed ? 4 : 0);
}

int top_strdup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int top_field(char **ret, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(ret, format, ap);
        va_end(ap);
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}
