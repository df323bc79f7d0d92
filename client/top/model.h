/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The live view's model: the latest Top snapshot's figures, each view's rows (opaque here: their types are
 * their classes' own, view-class.h), and what the user chose to look at (view, sort column, filter,
 * selection, expanded tree nodes). No curses and no socket here: the event loop (top.c) feeds replies in,
 * the widgets (view.c) read rows out, the key actions (actions.c) change the choices. The selection is kept
 * by identity (a pid, a module or unit name, a stack path), so it stays on the same row when a refresh
 * reorders or filters the lists.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

/*
 * The views, in the order of their tabs and number keys: one line each. X(NAME, name) makes TOP_VIEW_NAME
 * and names the class `const TopViewClass top_view_name` its file view-name.c defines (view-class.h).
 * A build may add views after these with -D'TOP_VIEWS_EXTRA(X)=X(NAME, name)': test-top-views registers a
 * view of its own so, to show that a view is its class and one line here.
 */
#ifndef TOP_VIEWS_EXTRA
#define TOP_VIEWS_EXTRA(X)
#endif
#define TOP_VIEWS(X)                                                                                    \
        X(TASKS, tasks)                                                                                 \
        X(MODULES, modules)                                                                             \
        X(STACKS, stacks)                                                                               \
        X(UNITS, units)         /* after stacks, so the keys 1-3 keep their meaning */                  \
        X(SLAB, slab)           /* slab objects by call site (memstrackd --slab) */                     \
        TOP_VIEWS_EXTRA(X)                                                                              \
        /* end of the list */

#define TOP_VIEW_ENUM_(NAME, name) TOP_VIEW_##NAME,
typedef enum TopView {
        TOP_VIEWS(TOP_VIEW_ENUM_)
        _TOP_VIEW_MAX,
        _TOP_VIEW_INVALID = -EINVAL,
} TopView;
#undef TOP_VIEW_ENUM_

/* The history chart below the view: off (a one-line sparkline instead), or over one of the spans the
 * daemon keeps (memstrackd(8) HISTORY). */
typedef enum TopChartSpan {
        TOP_CHART_OFF,
        TOP_CHART_10MIN,        /* 1 s buckets */
        TOP_CHART_24H,          /* 1 min buckets */
        _TOP_CHART_SPAN_MAX,
} TopChartSpan;

/* What keys do at the moment: the normal bindings, or one of the modal prompts. */
typedef enum TopMode {
        TOP_MODE_NORMAL,
        TOP_MODE_FILTER,        /* typing a filter */
        TOP_MODE_HELP,          /* help shown; any key closes it */
        TOP_MODE_CONFIRM_RESET, /* "reset peaks? y/n" */
        TOP_MODE_EXPLAIN,       /* a unit's Explain view over the current one; Esc returns */
        _TOP_MODE_MAX,
        _TOP_MODE_INVALID = -EINVAL,
} TopMode;

/* How a row's current pages moved since the previous update: shown in colour. */
typedef enum TopTrend {
        TOP_TREND_SAME,
        TOP_TREND_UP,
        TOP_TREND_DOWN,
        TOP_TREND_NEW,          /* not in the previous update */
} TopTrend;

/* Where a row of a tree view sits: drawn as guide lines before its name. */
typedef struct TopTreeLine {
        unsigned depth;         /* 0: a root */
        char *guides;           /* owned, depth characters: per ancestor level below the roots, '|' if that
                                 * ancestor has a later sibling (a vertical line), ' ' if not; the last
                                 * one is this row's own: 't' (a tee, more siblings follow) or 'l' (last) */
        bool has_children;
        bool collapsed;
} TopTreeLine;

/* The machine's memory from /proc/meminfo, in bytes; total 0: unknown. */
typedef struct TopMemInfo {
        uint64_t total, free, available, cached, buffers, slab;
} TopMemInfo;

/* A view's visible rows and its selection, derived from the rows read and the user's choices. A row's
 * value is what the view's class makes of it: an index into its rows read (tasks, units, ...), or, in a
 * tree, a node the class adds (the units tree's slices). */
typedef struct TopTable {
        size_t *rows;                   /* owned, n_rows: the values shown, in order */
        size_t n_rows;
        TopTreeLine *lines;             /* owned, one per row when laid out as a tree; NULL when flat */
        size_t selected;                /* row index of the selection */
        char *selected_key;             /* owned: the selected row's key, so a refresh keeps it; NULL: none yet */
        char **toggled;                 /* owned set of the keys of tree nodes the user opened or closed
                                         * (against the tree's default: open, or closed for stacks) */
        size_t n_toggled;
} TopTable;

typedef struct TopModel {
        /* The latest Top reply. */
        bool have_data;
        uint64_t page_size;
        uint64_t tracked_pages, peak_tracked_pages, lost_events, uptime_usec;
        uint64_t stacks_truncated;      /* the daemon's stack tree is full when not 0 */
        double events_per_second;
        TopMemInfo meminfo;             /* the header's memory meter, set by the caller */
        double high_percent;            /* rows holding at least this share of MemTotal are marked; 0: none */

        /* Each view's rows: owned, its class's rows_size bytes, which only its hooks set up, read and empty;
         * their type is the class's own (the stacks' include their scope). */
        void *rows[_TOP_VIEW_MAX];

        /* The user's choices. */
        TopView view;
        TopMode mode;
        unsigned sort[_TOP_VIEW_MAX];   /* column per view */
        char *filter[_TOP_VIEW_MAX];    /* owned, per view, NULL for none; case-insensitive substring of the
                                         * comm, module or unit name, or frame */
        char *filter_edit;              /* owned, the text being typed in TOP_MODE_FILTER */
        bool paused;
        bool tree[_TOP_VIEW_MAX];       /* tasks by parent, units by slice */
        TopChartSpan chart;             /* the selection's history as a chart, and over how long */

        /* Derived: each view's visible rows and selection, rebuilt after every change. */
        TopTable tables[_TOP_VIEW_MAX];

        /* The Explain view (TOP_MODE_EXPLAIN): the unit, its reply as text lines, the first line shown. */
        char *explain_unit;             /* owned */
        char **explain_lines;           /* owned, n_explain_lines; NULL until the first reply */
        size_t n_explain_lines;
        size_t explain_scroll;
} TopModel;

/* Shown (batch: above the tables; TUI: the bottom line) while the daemon's stack node budget is full. */
#define TOP_STACK_WARNING                                                                               \
        "Warning: stack node budget full, new stacks go to [truncated] (memstrackctl status; --max-stack-nodes)"

int top_model_new(uint64_t page_size, TopModel **ret);
TopModel *top_model_free(TopModel *m);

/* Takes a Top reply's parameters (borrowed). Ignored while paused (returns 0). -ENOMEM, -EBADMSG. */
int top_model_update(TopModel *m, json_t *reply);

/* A view whose rows come from a call of their own (its class's fetch, view-class.h): the call's parameters
 * for the view as it stands (new reference; NULL on OOM or for a view without one), and taking its reply's
 * parameters (borrowed; ignored while paused, returns 0). -ENOMEM, -EOPNOTSUPP for a view without one. */
json_t *top_model_fetch_parameters(const TopModel *m, TopView v);
int top_model_update_fetched(TopModel *m, TopView v, json_t *reply);

/* The Top call's sortBy: what the view that orders the daemon's cut to the limit (its class's stream_sort)
 * sorts by, "current" without one. */
const char *top_model_stream_sort(const TopModel *m);
/* Sorts that view by the sort key the Top call names so (memstrackctl top --sort). -EINVAL for none. */
int top_model_set_stream_sort(TopModel *m, const char *name);
size_t top_model_rows(const TopModel *m, TopView v);
size_t top_model_selected(const TopModel *m, TopView v);
/* The value behind a visible row of a view (see TopTable), SIZE_MAX if out of range: what its class's hooks
 * take. */
size_t top_model_row_value(const TopModel *m, TopView v, size_t row);
/* A tree view's line of a row: NULL when the view is flat. */
const TopTreeLine *top_model_tree_line(const TopModel *m, TopView v, size_t row);
/* Whether a row's current pages reach the high_percent share of MemTotal. */
bool top_model_is_high(const TopModel *m, uint64_t pages);

/* Whose pages a row counts, for the calls about one owner (StackTree, History). */
typedef struct TopOwner {
        int64_t pid;            /* -1: not a task */
        const char *module;     /* borrowed, NULL: not a module */
        const char *unit;       /* borrowed, NULL: not a unit; none of the three: everything */
} TopOwner;

/* The owner of a visible row of a view (in the stacks view: the scope): false for rows that have none (a
 * slab call site, a slice of the units tree), or out of range. */
bool top_model_owner(const TopModel *m, TopView v, size_t row, TopOwner *ret);

/* Tasks by parent and units by slice: on or off (other views have no tree; returns -EOPNOTSUPP). */
int top_model_toggle_tree(TopModel *m);

void top_model_set_view(TopModel *m, TopView v);
/* Moves the selection by delta rows (clamped); to the first row for INT64_MIN, to the last for INT64_MAX. */
void top_model_move(TopModel *m, int64_t delta);
/* Selects a visible row of the current view (clamped). */
void top_model_select(TopModel *m, size_t row);
/* Sorts the current view by a sort key of its class (its sort_names' index); out of range: ignored. */
void top_model_set_sort(TopModel *m, unsigned column);
/* Cycles the sort column of the current view. */
void top_model_sort_next(TopModel *m, int direction);
/* Name of the sorted column of a view, lower case ("current", "comm", ...): its class's sort_names. */
const char *top_model_sort_name(const TopModel *m, TopView v);
/* Sets the current view's filter (NULL or "" for none). */
int top_model_set_filter(TopModel *m, const char *filter);
/* The current view's filter, NULL if none. */
const char *top_model_filter(const TopModel *m);
void top_model_toggle_pause(TopModel *m);

/* Stacks view: expand (with the single-child chain below it), collapse, or toggle the selected node.
 * Collapse on a collapsed node selects its parent. The tree views of tasks and units do the same with
 * their nodes (the whole subtree is shown again on expand). */
int top_model_expand(TopModel *m);
int top_model_collapse(TopModel *m);
int top_model_toggle(TopModel *m);

/* Enter, as the current view's class does it: the stacks view for the selected task, module or unit (in
 * the stacks view: opens or closes the selected node; slab call sites: nothing); top_model_scope_all():
 * the stacks view of everything. Returns 1 if the scope changed (the stacks must be fetched again), 0 if
 * not, -ENOMEM. */
int top_model_open_stacks(TopModel *m);
int top_model_scope_all(TopModel *m);

/* The Explain view of the unit selected in the units view: -ENOENT when none is (another view, a slice,
 * nothing listed), -ENOMEM. The caller asks for the reply (top_model_explain_parameters()). */
int top_model_open_explain(TopModel *m);
void top_model_close_explain(TopModel *m);
/* The Explain call's parameters for the unit shown (new reference), NULL on OOM or without one. */
json_t *top_model_explain_parameters(const TopModel *m);
/* Takes an Explain reply's parameters (borrowed) as text lines, keeping the scroll where it can. -ENOMEM. */
int top_model_update_explain(TopModel *m, json_t *reply);
/* Scrolls the Explain view by delta lines (clamped; INT64_MIN/INT64_MAX: first/last). */
void top_model_scroll_explain(TopModel *m, int64_t delta, size_t page_lines);

/* Recomputes the visible rows and the selection after any change. -ENOMEM. */
int top_model_rebuild(TopModel *m);

/* free() that returns NULL, for resetting owned pointers in one statement. */
static inline void *mfree_ptr(void *p) {
        free(p);
        return NULL;
}
