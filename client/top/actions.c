/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "curses.h"
#include "macro.h"
#include "view-class.h"
#include "view.h"

#define KEY_ESCAPE 27
#define KEY_CTRL_L 12

/* The number keys go up to 9: a view registered after the ninth is reached by Tab and its tab. */
#define TOP_VIEW_KEYS_MAX 9

typedef struct TopKeyHelp {
        const char *keys;       /* NULL: the views' number keys, in the order of their registration */
        const char *text;
} TopKeyHelp;

static const TopKeyHelp help[] = {
        { "Up/Down, PgUp/PgDn", "move the selection" },
        { "Home/End", "first/last row" },
        { "Tab, Shift-Tab", "next/previous view" },
        { NULL, "view" },
        { "Enter", "stacks of the selected task/module/unit; in stacks: open/close" },
        { "Right/+, Left/-", "stacks: expand, collapse (Left again: go to parent)" },
        { "a", "stacks of everything" },
        { "t", "tasks: tree by parent; units: tree by slice (Left/Right close/open)" },
        { "g", "history chart of the selection: 10 min, 24 h, off" },
        { "e", "units: explain the selected unit (its memory cgroup's figures beside memstrack's)" },
        { "mouse", "click a tab, a column header (sort) or a row; the wheel scrolls" },
        { "s or >, <", "sort by the next/previous column" },
        { "/", "filter by name (Enter keeps it, Esc clears it)" },
        { "Esc", "clear the filter" },
        { "p", "pause/resume updates" },
        { "r", "reset peaks (asks first)" },
        { "Ctrl-L", "redraw the screen" },
        { "? F1 h", "this help" },
        { "q F10", "quit" },
};

/* How many views have a number key: 1 for the first registered, and on. */
static size_t view_keys(void) {
        return MIN((size_t) _TOP_VIEW_MAX, (size_t) TOP_VIEW_KEYS_MAX);
}

char *top_actions_help(void) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(help); i++) {
                if (help[i].keys) {
                        fprintf(f, "  %-22s %s\n", help[i].keys, help[i].text);
                        continue;
                }
                /* "1 2 3", then "tasks, modules, stacks view" in the keys' column width. */
                size_t n = view_keys();
                int width = (int) (2 * n - 1);
                fputs("  ", f);
                for (size_t v = 0; v < n; v++)
                        fprintf(f, "%s%zu", v > 0 ? " " : "", v + 1);
                fprintf(f, "%*s ", MAX(22 - width, 0), "");
                for (size_t v = 0; v < n; v++)
                        fprintf(f, "%s%s", v > 0 ? ", " : "", top_view_class((TopView) v)->name);
                fprintf(f, " %s\n", help[i].text);
        }
        if (fclose(f) != 0)
                return mfree_ptr(text);
        return text;
}

static TopReaction act_up(TopActionContext *c, int key) {
        top_model_move(c->model, -1);
        return TOP_REACT_REDRAW;
}

static TopReaction act_down(TopActionContext *c, int key) {
        top_model_move(c->model, 1);
        return TOP_REACT_REDRAW;
}

static TopReaction act_page_up(TopActionContext *c, int key) {
        top_model_move(c->model, -(int64_t) MAX(c->page_rows, (size_t) 1));
        return TOP_REACT_REDRAW;
}

static TopReaction act_page_down(TopActionContext *c, int key) {
        top_model_move(c->model, (int64_t) MAX(c->page_rows, (size_t) 1));
        return TOP_REACT_REDRAW;
}

static TopReaction act_home(TopActionContext *c, int key) {
        top_model_move(c->model, INT64_MIN);
        return TOP_REACT_REDRAW;
}

static TopReaction act_end(TopActionContext *c, int key) {
        top_model_move(c->model, INT64_MAX);
        return TOP_REACT_REDRAW;
}

/* What a view whose rows come from a call of their own needs once it is shown. */
static TopReaction fetch_if_own(TopView v) {
        return top_view_class(v)->fetch ? TOP_REACT_FETCH_VIEW : TOP_REACT_NONE;
}

/* Entering a view with a call of its own (the stacks' tree) asks for fresh rows. */
static TopReaction show_view(TopActionContext *c, TopView v) {
        top_model_set_view(c->model, v);
        return TOP_REACT_REDRAW | fetch_if_own(v);
}

static TopReaction act_next_view(TopActionContext *c, int key) {
        return show_view(c, (TopView) ((c->model->view + 1) % _TOP_VIEW_MAX));
}

static TopReaction act_previous_view(TopActionContext *c, int key) {
        return show_view(c, (TopView) ((c->model->view + _TOP_VIEW_MAX - 1) % _TOP_VIEW_MAX));
}

/* After the current view's sort changed from the stream's order before: a view with its own call asks
 * for its rows in the new order, and the Top stream starts again when its order changed. */
static TopReaction sorted(const TopModel *m, const char *before) {
        if (top_view_class(m->view)->fetch)
                return TOP_REACT_REDRAW | TOP_REACT_FETCH_VIEW;
        return TOP_REACT_REDRAW | (streq(before, top_model_stream_sort(m)) ? 0 : TOP_REACT_RESTREAM);
}

static TopReaction sort(TopActionContext *c, int direction) {
        const char *before = top_model_stream_sort(c->model);

        top_model_sort_next(c->model, direction);
        return sorted(c->model, before);
}

static TopReaction act_sort_next(TopActionContext *c, int key) {
        return sort(c, 1);
}

static TopReaction act_sort_previous(TopActionContext *c, int key) {
        return sort(c, -1);
}

static TopReaction act_filter(TopActionContext *c, int key) {
        TopModel *m = c->model;
        char *edit = strdup(top_model_filter(m) ?: "");

        if (!edit)
                return TOP_REACT_NONE;
        free(m->filter_edit);
        m->filter_edit = edit;
        m->mode = TOP_MODE_FILTER;
        return TOP_REACT_REDRAW;
}

static TopReaction act_clear_filter(TopActionContext *c, int key) {
        (void) top_model_set_filter(c->model, NULL);
        return TOP_REACT_REDRAW;
}

static TopReaction act_pause(TopActionContext *c, int key) {
        top_model_toggle_pause(c->model);
        c->message = c->model->paused ? "Paused: press p to resume." : "Resumed.";
        return TOP_REACT_REDRAW;
}

static TopReaction act_reset(TopActionContext *c, int key) {
        c->model->mode = TOP_MODE_CONFIRM_RESET;
        return TOP_REACT_REDRAW;
}

static TopReaction act_help(TopActionContext *c, int key) {
        c->model->mode = TOP_MODE_HELP;
        return TOP_REACT_REDRAW;
}

static TopReaction act_quit(TopActionContext *c, int key) {
        return TOP_REACT_QUIT;
}

static TopReaction act_enter(TopActionContext *c, int key) {
        TopView before = c->model->view;
        int r = top_model_open_stacks(c->model);

        if (r < 0 || c->model->view == before)
                return TOP_REACT_REDRAW;
        return TOP_REACT_REDRAW | fetch_if_own(c->model->view);
}

static TopReaction act_expand(TopActionContext *c, int key) {
        (void) top_model_expand(c->model);
        return TOP_REACT_REDRAW;
}

static TopReaction act_collapse(TopActionContext *c, int key) {
        (void) top_model_collapse(c->model);
        return TOP_REACT_REDRAW;
}

static TopReaction act_scope_all(TopActionContext *c, int key) {
        (void) top_model_scope_all(c->model);
        return show_view(c, c->model->view);
}

static TopReaction act_tree(TopActionContext *c, int key) {
        int r = top_model_toggle_tree(c->model);
        if (r == -EOPNOTSUPP)
                c->message = "Trees: tasks by parent (1) and units by slice (4).";
        return TOP_REACT_REDRAW | TOP_REACT_FETCH_GRAPH;
}

static TopReaction act_chart(TopActionContext *c, int key) {
        c->model->chart = (c->model->chart + 1) % _TOP_CHART_SPAN_MAX;
        return TOP_REACT_REDRAW | TOP_REACT_FETCH_GRAPH;
}

static TopReaction act_explain(TopActionContext *c, int key) {
        int r = top_model_open_explain(c->model);

        if (r == -ENOENT) {
                c->message = "Explain: select a unit in the units view (4), then press e.";
                return TOP_REACT_REDRAW;
        }
        return r < 0 ? TOP_REACT_NONE : TOP_REACT_REDRAW | TOP_REACT_FETCH_EXPLAIN;
}

/* The Explain view: the movement keys scroll it, Esc, e and Left return; q quits as everywhere. */
static TopReaction explain_key(TopActionContext *c, int key) {
        TopModel *m = c->model;
        size_t page = MAX(c->page_rows, (size_t) 1);

        switch (key) {
        case KEY_UP:
        case 'k':
                top_model_scroll_explain(m, -1, page);
                break;
        case KEY_DOWN:
        case 'j':
                top_model_scroll_explain(m, 1, page);
                break;
        case KEY_PPAGE:
                top_model_scroll_explain(m, -(int64_t) page, page);
                break;
        case KEY_NPAGE:
        case ' ':
                top_model_scroll_explain(m, (int64_t) page, page);
                break;
        case KEY_HOME:
                top_model_scroll_explain(m, INT64_MIN, page);
                break;
        case KEY_END:
                top_model_scroll_explain(m, INT64_MAX, page);
                break;
        case KEY_ESCAPE:
        case KEY_LEFT:
        case 'e':
                top_model_close_explain(m);
                break;
        case 'q':
        case 'Q':
        case KEY_F(10):
                return TOP_REACT_QUIT;
        default:
                return TOP_REACT_NONE;
        }
        return TOP_REACT_REDRAW;
}

static TopReaction act_redraw(TopActionContext *c, int key) {
        return TOP_REACT_REDRAW | TOP_REACT_CLEAR;
}

static const TopKeyBinding bindings[] = {
        { KEY_UP, act_up },
        { 'k', act_up },
        { KEY_DOWN, act_down },
        { 'j', act_down },
        { KEY_PPAGE, act_page_up },
        { KEY_NPAGE, act_page_down },
        { KEY_HOME, act_home },
        { KEY_END, act_end },
        { '\t', act_next_view },
        { KEY_BTAB, act_previous_view },
        { '\n', act_enter },
        { '\r', act_enter },
        { KEY_ENTER, act_enter },
        { KEY_RIGHT, act_expand },
        { '+', act_expand },
        { KEY_LEFT, act_collapse },
        { '-', act_collapse },
        { 'a', act_scope_all },
        { 't', act_tree },
        { 'g', act_chart },
        { 'e', act_explain },
        { 's', act_sort_next },
        { '>', act_sort_next },
        { '.', act_sort_next },
        { '<', act_sort_previous },
        { ',', act_sort_previous },
        { '/', act_filter },
        { KEY_ESCAPE, act_clear_filter },
        { 'p', act_pause },
        { 'r', act_reset },
        { KEY_CTRL_L, act_redraw },
        { '?', act_help },
        { 'h', act_help },
        { KEY_F(1), act_help },
        { 'q', act_quit },
        { 'Q', act_quit },
        { KEY_F(10), act_quit },
};

/* Typing a filter: it applies as it is typed. */
static TopReaction filter_key(TopActionContext *c, int key) {
        TopModel *m = c->model;
        size_t n = strlen(m->filter_edit ?: "");

        switch (key) {
        case '\n':
        case '\r':
        case KEY_ENTER:
                m->mode = TOP_MODE_NORMAL;
                return TOP_REACT_REDRAW;
        case KEY_ESCAPE:
                m->mode = TOP_MODE_NORMAL;
                (void) top_model_set_filter(m, NULL);
                return TOP_REACT_REDRAW;
        case KEY_BACKSPACE:
        case 127:
        case 8:
                if (n > 0) {
                        /* Drop a whole UTF-8 character. */
                        do
                                n--;
                        while (n > 0 && ((unsigned char) m->filter_edit[n] & 0xc0) == 0x80);
                        m->filter_edit[n] = '\0';
                }
                break;
        default:
                /* Printable bytes, UTF-8 ones included; up to a sane length. */
                if (key < 0x20 || key > 0xff || key == 0x7f || n >= 64)
                        return TOP_REACT_NONE;
                char *e = realloc(m->filter_edit, n + 2);
                if (!e)
                        return TOP_REACT_NONE;
                e[n] = (char) key;
                e[n + 1] = '\0';
                m->filter_edit = e;
        }
        (void) top_model_set_filter(m, m->filter_edit);
        return TOP_REACT_REDRAW;
}

TopReaction top_actions_handle_key(TopActionContext *c, int key) {
        TopModel *m = c->model;

        switch (m->mode) {
        case TOP_MODE_FILTER:
                return filter_key(c, key);
        case TOP_MODE_HELP:
                m->mode = TOP_MODE_NORMAL;
                return TOP_REACT_REDRAW;
        case TOP_MODE_EXPLAIN:
                return explain_key(c, key);
        case TOP_MODE_CONFIRM_RESET:
                m->mode = TOP_MODE_NORMAL;
                if (key == 'y' || key == 'Y')
                        return TOP_REACT_REDRAW | TOP_REACT_RESET_PEAKS;
                c->message = "Reset cancelled.";
                return TOP_REACT_REDRAW;
        default:
                break;
        }

        /* The number keys, one per view from 1 in the order of their registration. */
        if (key >= '1' && key < '1' + (int) view_keys())
                return show_view(c, (TopView) (key - '1'));
        for (size_t i = 0; i < ELEMENTSOF(bindings); i++)
                if (bindings[i].key == key)
                        return bindings[i].action(c, key);
        return TOP_REACT_NONE;
}

TopReaction top_actions_handle_click(TopActionContext *c, int kind, size_t index, bool double_click, int wheel) {
        TopModel *m = c->model;

        if (m->mode == TOP_MODE_EXPLAIN) {
                /* The wheel scrolls the Explain view; clicks wait for its keys. */
                if (wheel == 0)
                        return TOP_REACT_NONE;
                top_model_scroll_explain(m, wheel * 3, MAX(c->page_rows, (size_t) 1));
                return TOP_REACT_REDRAW;
        }
        if (m->mode != TOP_MODE_NORMAL) {
                /* A click closes the help as a key does; prompts wait for their keys. */
                if (m->mode != TOP_MODE_HELP)
                        return TOP_REACT_NONE;
                m->mode = TOP_MODE_NORMAL;
                return TOP_REACT_REDRAW;
        }
        if (wheel != 0) {
                top_model_move(m, wheel * 3);
                return TOP_REACT_REDRAW | TOP_REACT_FETCH_GRAPH;
        }
        switch (kind) {
        case TOP_HIT_TAB:
                return show_view(c, (TopView) index) | TOP_REACT_FETCH_GRAPH;
        case TOP_HIT_COLUMN: {
                const char *before = top_model_stream_sort(m);
                top_model_set_sort(m, (unsigned) index);
                return sorted(m, before);
        }
        case TOP_HIT_ROW:
                top_model_select(m, index);
                if (double_click)
                        return act_enter(c, KEY_ENTER) | TOP_REACT_FETCH_GRAPH;
                return TOP_REACT_REDRAW | TOP_REACT_FETCH_GRAPH;
        default:
                return TOP_REACT_NONE;
        }
}
