/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Keys of the live view: a table maps each key to a handler that changes the model and returns what
 * the event loop must do next (htop's Action_setBindings() and Htop_Reaction). The modal prompts
 * (filter, help, confirmation) take keys before the table does.
 */

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

typedef enum TopReaction {
        TOP_REACT_NONE         = 0,
        TOP_REACT_REDRAW       = 1 << 0,
        TOP_REACT_QUIT         = 1 << 1,
        TOP_REACT_FETCH_VIEW   = 1 << 2,        /* the view shown needs its own call again (its fetch) */
        TOP_REACT_RESET_PEAKS  = 1 << 3,        /* the user confirmed the reset */
        TOP_REACT_RESTREAM     = 1 << 4,        /* the daemon must send its lists sorted differently */
        TOP_REACT_CLEAR        = 1 << 5,        /* repaint the whole terminal, not just the changes */
        TOP_REACT_FETCH_GRAPH  = 1 << 6,        /* the history shown changed: ask for it now */
        TOP_REACT_FETCH_EXPLAIN = 1 << 7,       /* the Explain view needs its reply */
} TopReaction;

typedef struct TopActionContext {
        TopModel *model;
        size_t page_rows;       /* rows one page up/down moves */
        const char *message;    /* out: a line for the status bar, static string */
} TopActionContext;

typedef TopReaction (*TopAction)(TopActionContext *c, int key);

typedef struct TopKeyBinding {
        int key;
        TopAction action;
} TopKeyBinding;

/* Handles one key (a curses key code) in the model's current mode. */
TopReaction top_actions_handle_key(TopActionContext *c, int key);

/* A mouse click (view.h's TopHit: a tab, a column header, a row; double: a double click, which on a row
 * does what Enter does, where curses reports one) or the wheel (wheel -1 up, +1 down, 0 none). */
TopReaction top_actions_handle_click(TopActionContext *c, int kind, size_t index, bool double_click, int wheel);

/* The help screen's lines in order, each ending in a newline: the keys in a column, then what they do; the
 * number keys name the views in the order of TOP_VIEWS. New string, NULL on OOM. */
char *top_actions_help(void);
