/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "curses.h"
#include "format.h"
#include "macro.h"
#include "panel.h"

void panel_move(Panel *p, int y, int x, int height, int width) {
        p->y = y;
        p->x = x;
        p->height = MAX(height, 0);
        p->width = MAX(width, 0);
}

size_t panel_visible_rows(const Panel *p) {
        return p->height > 1 ? (size_t) (p->height - 1) : 0;
}

void panel_print_line(int y, int x, int width, const char *text, int attr) {
        _cleanup_free_ char *clean = NULL, *cut = NULL;
        size_t w;

        if (width <= 0)
                return;
        clean = format_sanitize(text);
        cut = clean ? format_ellipsize(clean, (size_t) width) : NULL;
        attrset(attr);
        move(y, x);
        if (cut) {
                addstr(cut);
                w = format_text_width(cut);
        } else
                w = 0;
        /* Pad to the width so highlighting spans the line and old text is overwritten (no clear needed,
         * so no flicker). */
        for (; w < (size_t) width; w++)
                addch(' ');
        attrset(A_NORMAL);
}

ssize_t panel_row_at(const Panel *p, int y, size_t n_rows) {
        if (y <= p->y || y >= p->y + p->height)
                return -1;
        size_t index = p->scroll + (size_t) (y - p->y - 1);
        return index < n_rows ? (ssize_t) index : -1;
}

void panel_draw(Panel *p, const char *header, size_t n_rows, size_t selected, PanelRowText row, PanelRowStyle style,
                void *userdata) {
        size_t visible = panel_visible_rows(p);

        if (p->height <= 0)
                return;
        panel_print_line(p->y, p->x, p->width, header, A_REVERSE | A_BOLD);

        /* Keep the selection in view, and do not scroll past the end after rows went away. */
        if (selected < p->scroll)
                p->scroll = selected;
        if (visible > 0 && selected >= p->scroll + visible)
                p->scroll = selected - visible + 1;
        if (p->scroll + visible > n_rows)
                p->scroll = n_rows > visible ? n_rows - visible : 0;

        for (size_t i = 0; i < visible; i++) {
                size_t index = p->scroll + i;
                _cleanup_free_ char *text = index < n_rows ? row(index, userdata) : NULL;
                PanelStyle look = {};
                int y = p->y + 1 + (int) i, on = index < n_rows && index == selected ? A_REVERSE : A_NORMAL;

                if (style && index < n_rows)
                        style(index, userdata, &look);
                panel_print_line(y, p->x, p->width, text ?: "", look.attr | on);
                for (size_t k = 0; k < PANEL_SPANS; k++) {
                        const PanelSpan *sp = &look.spans[k];
                        if (sp->width <= 0 || sp->x < 0 || sp->x >= p->width)
                                continue;
                        /* The attribute only: the characters stay. chgat takes the colour pair apart. */
                        mvchgat(y, p->x + sp->x, MIN(sp->width, p->width - sp->x), (attr_t) ((sp->attr | on) & ~A_COLOR),
                                (short) PAIR_NUMBER(sp->attr), NULL);
                }
        }
}
