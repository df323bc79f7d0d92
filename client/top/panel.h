/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Panel: a scrollable list with a header row and a highlighted selection, drawn with curses. It keeps
 * only its place on the screen and how far it is scrolled; the rows and the selection belong to the
 * model, and the panel asks for each visible row's text through a callback.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct Panel {
        int y, x, height, width;        /* on the screen, header row included */
        size_t scroll;                  /* first row shown */
} Panel;

/* The text of row index (new string, UTF-8, NULL on OOM); the panel cuts and pads it to the width. */
typedef char *(*PanelRowText)(size_t index, void *userdata);

/* How a row looks: an attribute for the whole row and up to PANEL_SPANS stretches of columns (relative
 * to the panel) with attributes of their own (a growing CURRENT column, tree lines). */
#define PANEL_SPANS 3
typedef struct PanelSpan {
        int x, width, attr;
} PanelSpan;
typedef struct PanelStyle {
        int attr;
        PanelSpan spans[PANEL_SPANS];   /* width 0: unused */
} PanelStyle;
typedef void (*PanelRowStyle)(size_t index, void *userdata, PanelStyle *ret);

void panel_move(Panel *p, int y, int x, int height, int width);
/* Rows shown below the header (0 if the panel has no room). */
size_t panel_visible_rows(const Panel *p);
/* Scrolls so that selected is visible, then draws the header and the rows. */
/* style may be NULL (plain rows); the selected row is drawn in reverse video over its style. */
void panel_draw(Panel *p, const char *header, size_t n_rows, size_t selected, PanelRowText row, PanelRowStyle style,
                void *userdata);
/* The row index under screen line y, or -1 (the header, or no row there). */
ssize_t panel_row_at(const Panel *p, int y, size_t n_rows);
/* Draws text at y, x cut and padded to width columns, with attributes attr. */
void panel_print_line(int y, int x, int width, const char *text, int attr);
