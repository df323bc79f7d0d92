/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One class per view of the live view, as htop gives each kind of row a class of its own: how its rows
 * come out of a reply, the key that keeps a row selected (and open or closed) across updates, what the
 * filter matches, how each sort key orders rows, where a row hangs in the view's tree, its columns and
 * the text of each. model.c selects, sorts, filters and lays trees out through these hooks and never asks
 * which view it has; view.c draws any view from them. No curses here: a class says what a row is (gone,
 * growing), the screen picks the colours.
 *
 * Adding a view: a file view-NAME.c defining `const TopViewClass top_view_NAME`, one X(NAME, name) line
 * in TOP_VIEWS (model.h), and its file in meson.build. The file keeps its row type and its sort keys to
 * itself: TopModel holds its rows as an opaque block (rows[TOP_VIEW_NAME], rows_size) that only its
 * hooks open. Its tab, number key, help line, settings, filter, sort, trends, trees, drawing and clicks
 * then follow from the class; a call of its own (fetch) and the Top call's order (stream_sort) are hooks
 * too. tests/test-top-views.c is such a view, registered in its own build only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "macro.h"
#include "model.h"

/* How a view's rows hang together. */
typedef enum TopTreeKind {
        TOP_TREE_NONE,          /* a list */
        TOP_TREE_OPTIONAL,      /* a list, or a tree at the user's choice ('t'): its nodes start open, and
                                 * the filter picks rows whose parents among them are their tree parents
                                 * (htop's tree) */
        TOP_TREE_BROWSE,        /* always a tree, closed below its roots and opened node by node; the
                                 * filter shows each match with the way down to it and all below it */
} TopTreeKind;

typedef enum TopColumnFlags {
        TOP_COLUMN_LEFT = 1 << 0,       /* aligned left (names); otherwise right (figures) */
        TOP_COLUMN_TREND = 1 << 1,      /* coloured by how the row's pages moved */
        TOP_COLUMN_TREE = 1 << 2,       /* begins with the tree's guide lines in a tree */
} TopColumnFlags;

/* A column: its header, its width in screen columns (0: the last, as wide as its text), and the sort key it
 * stands for (a click on its header sorts by it). Columns are separated by one space. */
typedef struct TopColumn {
        const char *title;
        int width;
        int sort;                       /* -1: none */
        TopColumnFlags flags;
} TopColumn;

/* How a row looks besides its text. */
typedef enum TopRowState {
        TOP_ROW_PLAIN,
        TOP_ROW_GONE,                   /* an exited task, an unloaded module, a removed unit */
        TOP_ROW_GROUP,                  /* a node that sums others (a slice of the units tree) */
} TopRowState;

typedef struct TopRowLook {
        TopRowState state;
        bool high;                      /* holds the high_percent share of the machine's memory */
        TopTrend trend;
} TopRowLook;

/* Rows that come from a call of their own rather than from the Top stream (the stacks' StackTree). The
 * call goes out when the view is shown, after each Top update while it is, and when its sort or what Enter
 * scoped it to changes; its reply replaces the rows. */
typedef struct TopViewFetch {
        const char *method;             /* "io.memstrack.StackTree" */
        const char *what;               /* "the stack tree": the status line's word for the rows */
        json_t *(*parameters)(const TopModel *m);       /* new reference, NULL on OOM */
        int (*read)(TopModel *m, json_t *reply);        /* reply borrowed; -ENOMEM */
} TopViewFetch;

/* A tree to lay out: values (what the rows will hold) and the index in values of each one's parent,
 * SIZE_MAX for a root. Owned by whoever fills it. */
typedef struct TopForest {
        size_t *values;
        size_t *parent;
        size_t n;
} TopForest;

typedef struct TopViewClass {
        const char *name;               /* "tasks": its word in the settings file */
        const char *title;              /* "Tasks": its tab */
        const char *const *sort_names;  /* n_sorts names of its sort keys, in the order 's' cycles them */
        unsigned n_sorts;
        unsigned default_sort;
        const TopColumn *columns;
        size_t n_columns;
        TopTreeKind tree;

        /* Its rows, of a type of the file's own: the model keeps rows_size zeroed bytes for them in
         * m->rows[its view] from its start to its end, which rows_init (optional) sets up first and rows_done
         * (optional) empties last. Nothing but the class's hooks looks inside. They come from a Top reply:
         * required names the reply's field every memstrackd sends (a reply without it is refused before
         * anything changes), NULL if the view's rows are optional; read drops the previous rows and takes
         * the reply's (NULL: not from Top replies). Or from a call of their own (fetch, NULL for none).
         * n_items: how many rows were read. */
        size_t rows_size;
        void (*rows_init)(void *rows);
        void (*rows_done)(void *rows);
        const char *required;
        int (*read)(TopModel *m, json_t *reply);
        const TopViewFetch *fetch;
        size_t (*n_items)(const TopModel *m);

        /* On a value (see TopTable). key: the row's identity as a new string (NULL on OOM), the same in every
         * update; compare: a total order for each sort key (numbers biggest first, names alphabetically). */
        char *(*key)(const TopModel *m, size_t value);
        int (*compare)(const TopModel *m, unsigned sort, size_t a, size_t b);
        /* On an item (a row read): whether the / filter's text matches it. */
        bool (*matches)(const TopModel *m, size_t item, const char *filter);

        /* Trees: the forest of the given items (a browse tree gets all its items, in order), values and
         * parents allocated into ret; -ENOMEM. only_child (optional): the value of a node's only child, SIZE_MAX
         * if it has none or several: opening a node opens that chain too. */
        int (*forest)(TopModel *m, const size_t *items, size_t n, TopForest *ret);
        size_t (*only_child)(const TopModel *m, size_t value);

        /* Optional: the Top call's sortBy for a sort key of this view, for the one view whose rows the
         * daemon cuts to the call's limit in that order (the tasks'). */
        const char *(*stream_sort)(unsigned sort);

        /* Trends (optional, both or neither): an item's current pages, and where its trend goes. */
        uint64_t (*current)(const TopModel *m, size_t item);
        void (*set_trend)(TopModel *m, size_t item, TopTrend trend);

        /* The text of each column of a row, into fields[n_columns] (new strings, which the caller frees
         * whatever this returns); line is the row's place in a tree, NULL when flat. -ENOMEM. */
        int (*write)(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields);
        /* Optional: how the row looks (plain without); the last column's title when it changes and what
         * the rows are about (before the sort in the tab line), new strings, NULL on OOM; a note shown
         * instead of rows that are not there, saying why (NULL: none). */
        TopRowLook (*look)(const TopModel *m, size_t value);
        char *(*last_title)(const TopModel *m);
        char *(*caption)(const TopModel *m);
        const char *(*empty_note)(const TopModel *m);

        /* Optional: whose pages a row counts; what Enter does (NULL: nothing); whether 'e' explains the
         * selected row's unit. */
        bool (*owner)(const TopModel *m, size_t value, TopOwner *ret);
        int (*enter)(TopModel *m);
        bool explains;
} TopViewClass;

/* The class of a view; v must be one. */
const TopViewClass *top_view_class(TopView v);

/* The header line of a view's panel, the sorted column's title in brackets; the text of a visible row.
 * New strings, NULL on OOM (or for a row out of range). */
char *top_view_header(const TopModel *m, TopView v);
char *top_view_row_text(const TopModel *m, TopView v, size_t row, bool utf8);
/* The screen column a column of a class starts at. */
int top_view_column_x(const TopViewClass *c, size_t column);

/* ---- For the classes ------------------------------------------------------------------------------ */

/* Case-insensitive substring; a NULL text matches nothing. */
bool top_text_matches(const char *text, const char *filter);
int top_compare_u64_desc(uint64_t a, uint64_t b);
int top_compare_i64(int64_t a, int64_t b);
/* A tree row's guide lines (new string, NULL on OOM): box drawing with utf8, else ASCII; "[+] " after
 * a closed node's corner. Empty for NULL. */
char *top_tree_guides(const TopTreeLine *line, bool utf8);
/* Their width in screen columns. */
int top_tree_guides_width(const TopTreeLine *line);
/* A copy of s into *ret, NULL for NULL; -ENOMEM. */
int top_strdup_or_null(const char *s, char **ret);
/* asprintf() into *ret that leaves it NULL on failure; -ENOMEM. */
int top_field(char **ret, const char *format, ...) _printf_(2, 3);

/* ---- What a view's file offers beside its class ------------------------------------------------------ */

/* Enter on a row that has an owner: the stacks view, scoped to it (view-stacks.c). 1 if the scope
 * changed, 0 if not, -ENOMEM. */
int top_model_open_owner(TopModel *m);

/* The comm of the task of this pid among the tasks read, NULL if none is listed (view-tasks.c): the stacks
 * view names its scope with it. Borrowed until the next update. */
const char *top_task_comm(const TopModel *m, int64_t pid);

/* The totals of Top's slab field as read (view-slab.c; its rows are the call sites listed, its caption these
 * totals of all of them): false when memstrackd does not trace slab objects. */
typedef struct TopSlabTotals {
        uint64_t objects, bytes, peak_bytes;
        double waste_percent;
} TopSlabTotals;
bool top_slab_totals(const TopModel *m, TopSlabTotals *ret);
