/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "actions.h"
#include "colors.h"
#include "curses.h"
#include "format.h"
#include "macro.h"
#include "view-class.h"
#include "view.h"

/* Screen lines above and below the panel: totals, the memory meter, tabs; the history graph (a line,
 * or the chart), status. */
#define TOP_HEADER_LINES 3
#define TOP_FOOTER_LINES 2
/* The chart: a title, the plot and the time axis; shown only with this many rows left for the view. */
#define TOP_CHART_MIN_PLOT 4
#define TOP_CHART_MIN_VIEW 6
#define TOP_CHART_AXIS_WIDTH 11         /* "123.4 MiB " and the axis line */

/* Lines the chart takes: a third of the screen, between a small plot and what the view needs. */
static int chart_lines(const TopScreen *s, const TopModel *m) {
        int lines;

        if (m->chart == TOP_CHART_OFF || m->mode == TOP_MODE_HELP || m->mode == TOP_MODE_EXPLAIN)
                return 0;
        lines = MAX(s->rows / 3, TOP_CHART_MIN_PLOT + 2);
        if (s->rows - TOP_HEADER_LINES - 1 - lines < TOP_CHART_MIN_VIEW || s->cols < TOP_CHART_AXIS_WIDTH + 20)
                return 0;
        return lines;
}

static void layout(TopScreen *s) {
        /* With the chart, it takes the sparkline's line and more. */
        int footer = s->chart_rows > 0 ? s->chart_rows + 1 : TOP_FOOTER_LINES;
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                panel_move(&s->panels[v], TOP_HEADER_LINES, 0, s->rows - TOP_HEADER_LINES - footer, s->cols);
}

int top_screen_start(TopScreen *s) {
        if (s->active)
                return 0;
        /* newterm(), not initscr(): initscr() exits the process when TERM is unknown. */
        s->screen = newterm(NULL, stdout, stdin);
        if (!s->screen)
                return -EIO;
        (void) set_term(s->screen);
        s->active = true;
        cbreak();
        noecho();
        nonl();
        keypad(stdscr, TRUE);
        nodelay(stdscr, TRUE);
        (void) curs_set(0);
        set_escdelay(25);
        top_colors_start();
        s->utf8 = streq(nl_langinfo(CODESET), "UTF-8");
        /* Clicks select rows and sort by columns where the terminal reports them; nothing else changes
         * (no motion tracking, so the terminal's own selection works with Shift). A press acts at once:
         * no wait to tell clicks from double clicks (mouseinterval 0). */
        (void) mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED |
                         BUTTON5_PRESSED, NULL);
        mouseinterval(0);
        getmaxyx(stdscr, s->rows, s->cols);
        layout(s);
        return 0;
}

void top_screen_stop(TopScreen *s) {
        if (!s->active)
                return;
        (void) curs_set(1);
        endwin();
        delscreen(s->screen);
        s->screen = NULL;
        s->active = false;
}

void top_screen_resize(TopScreen *s) {
        struct winsize ws = {};

        if (!s->active)
                return;
        /* SIGWINCH reaches us through sd-event, not curses' own handler: tell curses the size. */
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_row > 0 && ws.ws_col > 0)
                resizeterm(ws.ws_row, ws.ws_col);
        getmaxyx(stdscr, s->rows, s->cols);
        layout(s);
        clearok(curscr, TRUE);
}

void top_screen_clear(TopScreen *s) {
        if (s->active)
                clearok(curscr, TRUE);
}

int top_screen_read_key(TopScreen *s) {
        int key = getch();
        return key == ERR ? -1 : key;
}

size_t top_screen_page_rows(const TopScreen *s, TopView v) {
        return panel_visible_rows(&s->panels[v]);
}

/* What the row callbacks need besides the model. */
typedef struct RowContext {
        TopModel *model;
        bool utf8;
} RowContext;

static int trend_color(TopTrend t) {
        return t == TOP_TREND_UP || t == TOP_TREND_NEW ? top_color(TOP_COLOR_GROWING) :
               t == TOP_TREND_DOWN ? top_color(TOP_COLOR_SHRINKING) : 0;
}

static char *row_text(size_t index, void *userdata) {
        RowContext *c = userdata;
        return top_view_row_text(c->model, c->model->view, index, c->utf8);
}

/* A row's colours from what its class says of it: gone or a group, high, its trend on the column that
 * shows it, and the tree's lines in their colour. */
static void row_style(size_t index, void *userdata, PanelStyle *ret) {
        RowContext *c = userdata;
        TopView v = c->model->view;
        const TopViewClass *k = top_view_class(v);
        size_t value = top_model_row_value(c->model, v, index);
        const TopTreeLine *line = top_model_tree_line(c->model, v, index);

        if (value == SIZE_MAX)
                return;
        for (size_t i = 0; line && i < k->n_columns; i++)
                if (k->columns[i].flags & TOP_COLUMN_TREE) {
                        int width = top_tree_guides_width(line);
                        if (k->columns[i].width > 0)
                                width = MIN(width, k->columns[i].width);
                        ret->spans[1] = (PanelSpan) { top_view_column_x(k, i), width, top_color(TOP_COLOR_TREE) };
                }
        if (!k->look)
                return;
        TopRowLook look = k->look(c->model, value);
        ret->attr = look.state == TOP_ROW_GONE ? top_color(TOP_COLOR_EXITED) :
                    look.state == TOP_ROW_GROUP ? top_color(TOP_COLOR_LABEL) :
                    look.high ? top_color(TOP_COLOR_HIGH) : 0;
        for (size_t i = 0; trend_color(look.trend) && i < k->n_columns; i++)
                if (k->columns[i].flags & TOP_COLUMN_TREND)
                        ret->spans[0] = (PanelSpan) { top_view_column_x(k, i), k->columns[i].width,
                                                      trend_color(look.trend) | (ret->attr & A_BOLD) };
}

/* Colours the first occurrence of needle on line y (an ASCII line: bytes are columns). */
static void color_part(int y, const char *line, const char *needle, int attr, int cols) {
        const char *at = line && needle ? strstr(line, needle) : NULL;

        if (!at || attr == A_NORMAL || at - line >= cols)
                return;
        mvchgat(y, (int) (at - line), MIN((int) strlen(needle), cols - (int) (at - line)), (attr_t) (attr & ~A_COLOR),
                (short) PAIR_NUMBER(attr), NULL);
}

/* A view's tab: " 1 Tasks ", its number key and its class's title; written into buf. */
static const char *tab_name(TopView v, char *buf, size_t size) {
        (void) snprintf(buf, size, " %d %s ", (int) v + 1, top_view_class(v)->title);
        return buf;
}

/*
 * The memory meter, as htop's: the machine's memory (MemTotal) as a bar of what memstrack tracks, slab,
 * page cache and buffers and the rest in use, each its own character and colour, free memory blank, then
 * the figures. memstrack's pages include part of the slab and page cache: the bar draws them first and
 * the other parts in what is left of the memory in use, so it never shows more than is in use.
 */
static void draw_meter(TopScreen *s, const TopModel *m, int y) {
        const TopMemInfo *mi = &m->meminfo;
        char total[FORMAT_BUFFER_MAX], tracked[FORMAT_BUFFER_MAX], slab[FORMAT_BUFFER_MAX],
                cache[FORMAT_BUFFER_MAX], free_text[FORMAT_BUFFER_MAX], used_text[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *figures = NULL;

        if (mi->total == 0) {
                panel_print_line(y, 0, s->cols, "Mem: /proc/meminfo cannot be read", A_NORMAL);
                return;
        }
        uint64_t used = mi->total - MIN(mi->free, mi->total);
        uint64_t parts[4] = { MIN(m->tracked_pages * m->page_size, used), mi->slab, mi->cached + mi->buffers, 0 };
        uint64_t left = used;
        for (size_t i = 0; i < 3; i++) {
                parts[i] = MIN(parts[i], left);
                left -= parts[i];
        }
        parts[3] = left;

        if (asprintf(&figures, " %s/%s  tracked %s  slab %s  cache %s  free %s",
                     format_bytes(used_text, sizeof(used_text), used), format_bytes(total, sizeof(total), mi->total),
                     format_bytes(tracked, sizeof(tracked), m->tracked_pages * m->page_size),
                     format_bytes(slab, sizeof(slab), mi->slab),
                     format_bytes(cache, sizeof(cache), mi->cached + mi->buffers),
                     format_bytes(free_text, sizeof(free_text), mi->free)) < 0)
                return;
        /* The bar takes what the figures leave, between 10 and 60 columns. */
        int width = s->cols - 6 - (int) strlen(figures);
        width = MIN(MAX(width, 10), 60);
        static const char marks[4] = { '#', '=', ':', '|' };
        static const TopColor colors[4] = { TOP_COLOR_TRACKED, TOP_COLOR_SLAB, TOP_COLOR_CACHE, TOP_COLOR_USED };

        panel_print_line(y, 0, s->cols, "", A_NORMAL);
        move(y, 0);
        attrset(top_color(TOP_COLOR_LABEL));
        addnstr("Mem", s->cols);
        attrset(A_NORMAL);
        if (s->cols < 5 + width)
                return;
        addch('[');
        int x = 0;
        uint64_t before = 0;
        for (size_t i = 0; i < 4; i++) {
                /* Cells from the running sum, so rounding never makes the bar longer than the memory used. */
                int upto = (int) ((before + parts[i]) * (unsigned __int128) width / mi->total);
                before += parts[i];
                attrset(top_color(colors[i]));
                for (; x < upto; x++)
                        addch((chtype) marks[i]);
        }
        attrset(A_NORMAL);
        for (; x < width; x++)
                addch(' ');
        addch(']');
        addnstr(figures, s->cols - width - 5);
        /* The legend's words in the colours of their parts. */
        _cleanup_free_ char *line = malloc((size_t) s->cols + 1);
        if (!line)
                return;
        (void) snprintf(line, (size_t) s->cols + 1, "Mem[%*s]%s", width, "", figures);
        for (size_t i = 0; i < 3; i++)
                color_part(y, line, (const char *[]) { " tracked ", " slab ", " cache " }[i], top_color(colors[i]), s->cols);
}

static void draw_header(TopScreen *s, TopModel *m) {
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], up[FORMAT_BUFFER_MAX], lost[64] = "";
        _cleanup_free_ char *line = NULL;

        if (m->have_data) {
                if (asprintf(&line, "memstrack top - tracked %s (%" PRIu64 " pages), peak %s - %.0f events/s - "
                             "lost %" PRIu64 " - up %s",
                             format_pages(cur, sizeof(cur), m->tracked_pages, m->page_size), m->tracked_pages,
                             format_pages(peak, sizeof(peak), m->peak_tracked_pages, m->page_size),
                             m->events_per_second, m->lost_events, format_duration(up, sizeof(up), m->uptime_usec)) < 0)
                        line = NULL;
        }
        panel_print_line(0, 0, s->cols, line ?: "memstrack top - waiting for memstrackd...", A_BOLD);
        /* The daemon's health: the event rate, and lost events in red (the counts are short then). */
        if (line) {
                (void) snprintf(lost, sizeof(lost), "lost %" PRIu64, m->lost_events);
                const char *rate = strstr(line, "peak ");
                rate = rate ? strstr(rate, " - ") : NULL;
                if (rate) {
                        const char *rate_end = strstr(rate, " events/s");
                        if (rate_end)
                                mvchgat(0, (int) (rate - line) + 3, MIN((int) (rate_end - rate) + 6, s->cols - (int) (rate - line) - 3),
                                        (attr_t) ((top_color(TOP_COLOR_HEALTHY) | A_BOLD) & ~A_COLOR),
                                        (short) PAIR_NUMBER(top_color(TOP_COLOR_HEALTHY)), NULL);
                }
                color_part(0, line, lost, m->lost_events > 0 ? top_color(TOP_COLOR_LOST) :
                                                               top_color(TOP_COLOR_HEALTHY) | (int) A_BOLD, s->cols);
        }
        draw_meter(s, m, 1);

        /* Tabs, then the view's sort, filter and pause state. */
        int x = 0;
        move(2, 0);
        for (size_t v = 0; v < _TOP_VIEW_MAX && x < s->cols; v++) {
                char tab[64];
                attrset(v == (size_t) m->view ? A_REVERSE | A_BOLD : A_NORMAL);
                addnstr(tab_name((TopView) v, tab, sizeof(tab)), s->cols - x);
                x += (int) strlen(tab);
                attrset(A_NORMAL);
                if (x < s->cols) {
                        addch(' ');
                        x++;
                }
        }
        const TopViewClass *k = top_view_class(m->view);
        _cleanup_free_ char *state = NULL, *caption = k->caption ? k->caption(m) : NULL;
        if (asprintf(&state, "%s%s sort: %s%s%s%s%s", caption ? " " : "", caption ?: "",
                     top_model_sort_name(m, m->view), m->tree[m->view] ? "  tree" : "",
                     top_model_filter(m) ? "  filter: " : "", top_model_filter(m) ?: "",
                     m->paused ? "  PAUSED" : "") >= 0 && x < s->cols)
                panel_print_line(2, x, s->cols - x, state, m->paused ? A_BOLD : A_NORMAL);
}

static void draw_help(TopScreen *s) {
        _cleanup_free_ char *help = top_actions_help();
        int y = TOP_HEADER_LINES;

        panel_print_line(y++, 0, s->cols, "memstrack top help - any key returns", A_REVERSE | A_BOLD);
        for (char *line = help; line && *line && y < s->rows - TOP_FOOTER_LINES;) {
                char *end = strchrnul(line, '\n'), *next = *end ? end + 1 : end;
                *end = '\0';
                panel_print_line(y++, 0, s->cols, line, A_NORMAL);
                line = next;
        }
        while (y < s->rows - TOP_FOOTER_LINES)
                panel_print_line(y++, 0, s->cols, "", A_NORMAL);
}

/* The Explain view over the current one: its title, then the reply's lines from the scroll position. */
static void draw_explain(TopScreen *s, const TopModel *m) {
        _cleanup_free_ char *title = NULL;
        int y = TOP_HEADER_LINES, bottom = s->rows - TOP_FOOTER_LINES;

        if (asprintf(&title, "Explain %s - Up/Down/PgUp/PgDn scroll, Esc returns", m->explain_unit ?: "?") >= 0)
                panel_print_line(y++, 0, s->cols, title, A_REVERSE | A_BOLD);
        if (!m->explain_lines && y < bottom)
                panel_print_line(y++, 0, s->cols, "  asking memstrackd...", A_NORMAL);
        for (size_t i = m->explain_scroll; i < m->n_explain_lines && y < bottom; i++) {
                /* The renderer sanitized names and frames already; tabs would move the cursor. */
                panel_print_line(y++, 0, s->cols, m->explain_lines[i], A_NORMAL);
        }
        while (y < bottom)
                panel_print_line(y++, 0, s->cols, "", A_NORMAL);
}

/* The line above the status line: the selection's history, the highest peak in reverse video. */
static void draw_graph(TopScreen *s, const TopModel *m, const TopGraph *graph) {
        _cleanup_free_ char *line = NULL;
        int peak_col = -1;

        if (s->rows < TOP_HEADER_LINES + TOP_FOOTER_LINES + 1)
                return;
        if (graph && top_graph_line(graph, m->page_size, (size_t) s->cols, s->utf8, &line, &peak_col) >= 0 && line) {
                panel_print_line(s->rows - 2, 0, s->cols, line, A_NORMAL);
                if (peak_col >= 0 && peak_col < s->cols)
                        mvchgat(s->rows - 2, peak_col, 1, A_REVERSE | A_BOLD, 0, NULL);
        } else
                panel_print_line(s->rows - 2, 0, s->cols, "", A_NORMAL);
}

/* "-10m", "-5m", "now": the time axis's label at a fraction of the span before the newest bucket. */
static void time_label(char *buf, size_t size, uint64_t ago_usec) {
        uint64_t sec = ago_usec / 1000000;

        if (sec == 0)
                (void) snprintf(buf, size, "now");
        else if (sec % 3600 == 0)
                (void) snprintf(buf, size, "-%" PRIu64 "h", sec / 3600);
        else if (sec % 60 == 0)
                (void) snprintf(buf, size, "-%" PRIu64 "m", sec / 60);
        else
                (void) snprintf(buf, size, "-%" PRIu64 "s", sec);
}

/*
 * The chart of the selection's history over the lines from y: a title, the plot (the current pages as
 * filled columns, eighth blocks at the top, and the peak as a line where it rose above them), the time
 * axis. Without UTF-8: '#' and '=' '.' for the fill, '-' for the peak.
 */
static void draw_chart(TopScreen *s, const TopModel *m, const TopGraph *graph, int y, int lines) {
        static const char *const eighths[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586",
                                               "\u2587", "\u2588" };
        char top_text[FORMAT_BUFFER_MAX], half_text[FORMAT_BUFFER_MAX], peak_text[FORMAT_BUFFER_MAX],
                now_text[FORMAT_BUFFER_MAX];
        _cleanup_(top_chart_done) TopChart c = {};
        _cleanup_free_ char *title = NULL;
        int plot_rows = lines - 2, width = s->cols - TOP_CHART_AXIS_WIDTH;
        const char *span = m->chart == TOP_CHART_24H ? "24 h, 1 min buckets" : "10 min, 1 s buckets";

        for (int i = 0; i < lines; i++)
                panel_print_line(y + i, 0, s->cols, "", A_NORMAL);
        if (!graph || !graph->key || graph->n == 0) {
                panel_print_line(y, 0, s->cols, graph && graph->unsupported ? "History: this memstrackd keeps none" :
                                 "History: waiting for the daemon's samples...", A_NORMAL);
                return;
        }
        if (top_graph_chart(graph, m->page_size, (size_t) width, (size_t) plot_rows, &c) < 0)
                return;
        /* The key without the span, which the title says in words. */
        _cleanup_free_ char *what = strdup(graph->key);
        char *suffix = what ? strstr(what, " (") : NULL;
        if (suffix && (streq(suffix, " (10 min)") || streq(suffix, " (24 h)")))
                *suffix = '\0';
        uint64_t top_peak = 0;
        for (size_t i = 0; i < graph->n; i++)
                top_peak = MAX(top_peak, graph->timestamp_usec[i] + c.span_usec >=
                                         graph->timestamp_usec[graph->n - 1] + graph->resolution_usec ? graph->peak[i] : 0);
        if (asprintf(&title, "%s over %s: current %s, peak %s   peak %s  now %s   (g: %s)", what ?: graph->key, span,
                     s->utf8 ? "\u2588" : "#", s->utf8 ? "\u2500" : "-",
                     format_pages(peak_text, sizeof(peak_text), top_peak, m->page_size),
                     format_pages(now_text, sizeof(now_text), graph->current[graph->n - 1], m->page_size),
                     m->chart == TOP_CHART_10MIN ? "24 h" : "off") < 0)
                return;
        panel_print_line(y, 0, s->cols, title, A_BOLD);

        (void) format_pages(top_text, sizeof(top_text), c.top_pages, m->page_size);
        (void) format_pages(half_text, sizeof(half_text), c.top_pages / 2, m->page_size);
        for (int r = 0; r < plot_rows; r++) {
                int line = y + 1 + r;
                uint32_t bottom = (uint32_t) (plot_rows - 1 - r) * 8;
                const char *label = r == 0 ? top_text : r == plot_rows / 2 && plot_rows > 2 ? half_text :
                                    r == plot_rows - 1 ? "0" : "";

                attrset(top_color(TOP_COLOR_AXIS));
                mvprintw(line, 0, "%9.9s %s", label, s->utf8 ? "\u2502" : "|");
                for (int col = 0; col < width; col++) {
                        uint32_t cur = c.current[col], pk = c.peak[col];
                        move(line, TOP_CHART_AXIS_WIDTH + col);
                        if (cur == TOP_CHART_EMPTY) {
                                attrset(A_NORMAL);
                                addch(' ');
                                continue;
                        }
                        if (cur >= bottom + 8 || (cur > bottom && cur < bottom + 8)) {
                                uint32_t k = MIN(cur - bottom, 8u);
                                attrset(top_color(TOP_COLOR_CHART_CURRENT));
                                if (s->utf8)
                                        addstr(eighths[k]);
                                else
                                        addch(k == 8 ? '#' : k >= 4 ? '=' : '.');
                        } else if (pk > bottom && pk <= bottom + 8 && pk > cur) {
                                /* The peak's level, where it stands above the current pages. */
                                attrset(top_color(TOP_COLOR_CHART_PEAK));
                                if (s->utf8)
                                        addstr("\u2500");
                                else
                                        addch('-');
                        } else {
                                attrset(A_NORMAL);
                                addch(' ');
                        }
                }
        }
        /* The time axis: the start of the span, its middle and now. */
        int axis = y + lines - 1;
        char start[32], middle[32];
        time_label(start, sizeof(start), c.span_usec);
        time_label(middle, sizeof(middle), c.span_usec / 2);
        attrset(top_color(TOP_COLOR_AXIS));
        move(axis, 0);
        for (int i = 0; i < s->cols; i++)
                addstr(i == TOP_CHART_AXIS_WIDTH - 1 ? (s->utf8 ? "\u2514" : "+") :
                       i >= TOP_CHART_AXIS_WIDTH ? " " : " ");
        mvaddstr(axis, TOP_CHART_AXIS_WIDTH, start);
        mvaddstr(axis, TOP_CHART_AXIS_WIDTH + width / 2 - (int) strlen(middle) / 2, middle);
        mvaddstr(axis, s->cols - 3, "now");
        attrset(A_NORMAL);
}

TopHit top_screen_hit(const TopScreen *s, const TopModel *m, int y, int x) {
        const Panel *p = &s->panels[m->view];

        if (y == 2) {
                int start = 0;
                for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                        char tab[64];
                        int end = start + (int) strlen(tab_name((TopView) v, tab, sizeof(tab)));
                        if (x >= start && x < end)
                                return (TopHit) { TOP_HIT_TAB, v };
                        start = end + 1;
                }
                return (TopHit) {};
        }
        if (m->mode == TOP_MODE_HELP || m->mode == TOP_MODE_EXPLAIN)
                return (TopHit) {};
        if (y == p->y) {
                /* The columns that stand for a sort key, where the class's widths put them. */
                const TopViewClass *k = top_view_class(m->view);
                for (size_t i = 0; i < k->n_columns; i++) {
                        int start = top_view_column_x(k, i);
                        if (k->columns[i].sort >= 0 && x >= start && x < start + k->columns[i].width)
                                return (TopHit) { TOP_HIT_COLUMN, (size_t) k->columns[i].sort };
                }
                return (TopHit) {};
        }
        ssize_t row = panel_row_at(p, y, top_model_rows(m, m->view));
        return row >= 0 ? (TopHit) { TOP_HIT_ROW, (size_t) row } : (TopHit) {};
}

void top_screen_draw(TopScreen *s, TopModel *m, const TopGraph *graph, const char *status, bool connected) {
        _cleanup_free_ char *header = NULL, *prompt = NULL;

        if (!s->active || s->rows <= 0 || s->cols <= 0)
                return;

        /* The chart comes and goes with the key and the terminal's size. */
        int lines = chart_lines(s, m);
        if (lines != s->chart_rows) {
                s->chart_rows = lines;
                layout(s);
        }
        RowContext ctx = { .model = m, .utf8 = s->utf8 };
        draw_header(s, m);
        if (m->mode == TOP_MODE_HELP)
                draw_help(s);
        else if (m->mode == TOP_MODE_EXPLAIN)
                draw_explain(s, m);
        else {
                const TopViewClass *k = top_view_class(m->view);
                const char *note = k->empty_note ? k->empty_note(m) : NULL;

                header = top_view_header(m, m->view);
                panel_draw(&s->panels[m->view], header ?: "", top_model_rows(m, m->view),
                           top_model_selected(m, m->view), row_text, row_style, &ctx);
                if (note && s->rows > TOP_HEADER_LINES + 2) {
                        _cleanup_free_ char *line = NULL;
                        if (asprintf(&line, "  %s", note) >= 0)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, line, A_NORMAL);
                }
        }

        if (s->chart_rows > 0)
                draw_chart(s, m, graph, s->rows - 1 - s->chart_rows, s->chart_rows);
        else if (m->mode != TOP_MODE_HELP)
                draw_graph(s, m, graph);        /* in the Explain view: the unit's own history */
        /* Bottom line: a prompt, a message, or the key hints. */
        if (m->mode == TOP_MODE_FILTER) {
                if (asprintf(&prompt, "Filter: %s_   (Enter keeps, Esc clears)", m->filter_edit ?: "") >= 0)
                        panel_print_line(s->rows - 1, 0, s->cols, prompt, A_BOLD);
        } else if (m->mode == TOP_MODE_CONFIRM_RESET)
                panel_print_line(s->rows - 1, 0, s->cols, "Reset all peaks to the current values? [y/N]",
                                 A_BOLD | A_REVERSE);
        else if (status)
                panel_print_line(s->rows - 1, 0, s->cols, status, connected ? A_BOLD : A_BOLD | A_REVERSE);
        else if (m->stacks_truncated > 0)
                panel_print_line(s->rows - 1, 0, s->cols, TOP_STACK_WARNING, A_BOLD);
        else
                panel_print_line(s->rows - 1, 0, s->cols,
                                 "F1/? help  Tab view  s/</> sort  / filter  Enter stacks  e explain  t tree  g chart  p pause  r reset  q quit",
                                 A_NORMAL);
        refresh();
}
