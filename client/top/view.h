/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The live view's screen: curses setup and teardown, and drawing the model (header, view tabs, the
 * current view's panel, help, prompts and the status line). Reads the model, never changes it beyond
 * the panels' scroll positions, and never touches the socket.
 */

#include <stdbool.h>

#include "curses.h"
#include "graph.h"
#include "model.h"
#include "panel.h"

typedef struct TopScreen {
        SCREEN *screen;                 /* owned while active */
        bool active;                    /* curses is on: endwin() is owed */
        bool utf8;                      /* the locale's characters include box drawing and blocks */
        int rows, cols;
        int chart_rows;                 /* screen lines the chart takes at the bottom, 0: the sparkline */
        Panel panels[_TOP_VIEW_MAX];
} TopScreen;

/* What a mouse click landed on. */
typedef enum TopHitKind {
        TOP_HIT_NONE,
        TOP_HIT_TAB,                    /* index: the view */
        TOP_HIT_COLUMN,                 /* index: the sort column of the current view */
        TOP_HIT_ROW,                    /* index: the row */
} TopHitKind;

typedef struct TopHit {
        TopHitKind kind;
        size_t index;
} TopHit;

/* Takes over the terminal. -EIO if curses cannot start (no terminal, unknown TERM). */
int top_screen_start(TopScreen *s);
/* Gives the terminal back as it was; safe to call twice and on a screen never started. */
void top_screen_stop(TopScreen *s);
/* Adopts the terminal's new size (after SIGWINCH). */
void top_screen_resize(TopScreen *s);
/* Repaints everything from scratch on the next draw (Ctrl-L). */
void top_screen_clear(TopScreen *s);
/* The next key, or -1 if none is waiting. */
int top_screen_read_key(TopScreen *s);
/* Rows one page of the current view has. */
size_t top_screen_page_rows(const TopScreen *s, TopView v);

/* What is at screen line y, column x in the view last drawn. */
TopHit top_screen_hit(const TopScreen *s, const TopModel *m, int y, int x);

/* Draws the model, and the history graph of the selection above the bottom line (graph may be NULL);
 * status is the bottom line's message (NULL: key hints). */
void top_screen_draw(TopScreen *s, TopModel *m, const TopGraph *graph, const char *status, bool connected);
