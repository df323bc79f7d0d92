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

/* Header text of a column: the sorted one is marked with brackets. */
static const char *column(char *buf, size_t size, const char *name, bool sorted) {
        (void) snprintf(buf, size, sorted ? "[%s]" : "%s", name);
        return buf;
}

/* What the row callbacks need besides the model. */
typedef struct RowContext {
        TopModel *model;
        bool utf8;
} RowContext;

/* A tree row's guide lines (new string): box drawing, or ASCII without UTF-8; "[+] " after a collapsed
 * node's corner. *ret_columns: their screen width. */
static char *tree_guides(const TopTreeLine *line, bool utf8, int *ret_columns) {
        size_t len = line ? strlen(line->guides) : 0;
        char *s = malloc(len * 9 + 8), *p = s;

        *ret_columns = 0;
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
                *ret_columns += 3;
        }
        if (line && line->collapsed) {
                p = stpcpy(p, "[+] ");
                *ret_columns += 4;
        }
        *p = '\0';
        return s;
}

static int trend_color(TopTrend t) {
        return t == TOP_TREND_UP || t == TOP_TREND_NEW ? top_color(TOP_COLOR_GROWING) :
               t == TOP_TREND_DOWN ? top_color(TOP_COLOR_SHRINKING) : 0;
}

/* The CURRENT column of the tasks, modules and units rows (the format strings below). */
#define TASK_CURRENT_X 24
#define TASK_COMMAND_X 74
#define MODULE_CURRENT_X 25
#define UNIT_CURRENT_X 29

static void task_style(size_t index, void *userdata, PanelStyle *ret) {
        RowContext *c = userdata;
        const TopTask *t = top_model_task_row(c->model, index);
        const TopTreeLine *line = top_model_tree_line(c->model, TOP_VIEW_TASKS, index);
        int columns = 0;

        if (!t)
                return;
        ret->attr = t->exited ? top_color(TOP_COLOR_EXITED) :
                    top_model_is_high(c->model, t->current_pages) ? top_color(TOP_COLOR_HIGH) : 0;
        if (trend_color(t->trend))
                ret->spans[0] = (PanelSpan) { TASK_CURRENT_X, 10, trend_color(t->trend) | (ret->attr & A_BOLD) };
        if (line) {
                free(tree_guides(line, false, &columns));
                ret->spans[1] = (PanelSpan) { TASK_COMMAND_X, columns, top_color(TOP_COLOR_TREE) };
        }
}

static char *task_row(size_t index, void *userdata) {
        RowContext *c = userdata;
        TopModel *m = c->model;
        const TopTask *t = top_model_task_row(m, index);
        const TopTreeLine *line = top_model_tree_line(m, TOP_VIEW_TASKS, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *comm = NULL, *guides = NULL;
        int columns;
        char *s;

        if (!t)
                return NULL;
        /* 15 columns of the escaped name (format_sanitize()), not 15 bytes: no cut inside a character or an
         * escape, and the columns after it stay aligned. */
        clean = format_sanitize(t->comm);
        comm = clean ? format_ellipsize(clean, 15) : NULL;
        guides = tree_guides(line, c->utf8, &columns);
        if (!comm || !guides)
                return NULL;
        /* In the tree the COMMAND column starts with the lines to the parent (as htop's tree), and names
         * a task without a command line by its comm. */
        if (asprintf(&s, "%7" PRIi64 " %s%*s %10s %10s %9" PRIu64 " %9" PRIu64 " %-7s %s%s", t->pid, comm,
                     (int) (15 - format_text_width(comm)), "",
                     format_pages(cur, sizeof(cur), t->current_pages, m->page_size),
                     format_pages(peak, sizeof(peak), t->peak_pages, m->page_size), t->allocs, t->frees,
                     t->exited ? "exited" : "running", guides, t->cmdline ?: line ? comm : "") < 0)
                return NULL;
        return s;
}

static char *task_header(TopModel *m) {
        unsigned sorted = m->sort[TOP_VIEW_TASKS];
        char a[16], b[16], c[16], d[16], e[16], f[16], g[16];
        char *s;

        if (asprintf(&s, "%7s %-15s %10s %10s %9s %9s %-7s %s", column(a, sizeof(a), "PID", sorted == TOP_TASK_PID),
                     column(b, sizeof(b), "COMM", sorted == TOP_TASK_COMM),
                     column(c, sizeof(c), "CURRENT", sorted == TOP_TASK_CURRENT),
                     column(d, sizeof(d), "PEAK", sorted == TOP_TASK_PEAK),
                     column(e, sizeof(e), "ALLOCS", sorted == TOP_TASK_ALLOCS),
                     column(f, sizeof(f), "FREES", sorted == TOP_TASK_FREES),
                     column(g, sizeof(g), "STATE", sorted == TOP_TASK_STATE), "COMMAND") < 0)
                return NULL;
        return s;
}

static void module_style(size_t index, void *userdata, PanelStyle *ret) {
        RowContext *c = userdata;
        const TopModule *mod = top_model_module_row(c->model, index);

        if (!mod)
                return;
        ret->attr = !mod->loaded ? top_color(TOP_COLOR_EXITED) :
                    top_model_is_high(c->model, mod->current_pages) ? top_color(TOP_COLOR_HIGH) : 0;
        if (trend_color(mod->trend))
                ret->spans[0] = (PanelSpan) { MODULE_CURRENT_X, 10, trend_color(mod->trend) | (ret->attr & A_BOLD) };
}

static char *module_row(size_t index, void *userdata) {
        TopModel *m = ((RowContext *) userdata)->model;
        const TopModule *mod = top_model_module_row(m, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        char *s;

        if (!mod)
                return NULL;
        if (asprintf(&s, "%-24s %10s %10" PRIu64 " %10s %10" PRIu64 " %s", mod->name,
                     format_pages(cur, sizeof(cur), mod->current_pages, m->page_size), mod->current_pages,
                     format_pages(peak, sizeof(peak), mod->peak_pages, m->page_size), mod->peak_pages,
                     mod->loaded ? "loaded" : "unloaded") < 0)
                return NULL;
        return s;
}

static char *module_header(TopModel *m) {
        unsigned sorted = m->sort[TOP_VIEW_MODULES];
        char a[16], b[16], c[16];
        char *s;

        if (asprintf(&s, "%-24s %10s %10s %10s %10s %s", column(a, sizeof(a), "MODULE", sorted == TOP_MODULE_NAME),
                     column(b, sizeof(b), "CURRENT", sorted == TOP_MODULE_CURRENT), "PAGES",
                     column(c, sizeof(c), "PEAK", sorted == TOP_MODULE_PEAK), "PAGES", "STATE") < 0)
                return NULL;
        return s;
}

/* Unit names are kernel strings (cgroup paths for cgroups outside systemd's naming): escaped, and cut to
 * their column so the numbers after them stay aligned; 28 columns keep a whole row within 80. */
#define TOP_UNIT_NAME_WIDTH 28

static void unit_style(size_t index, void *userdata, PanelStyle *ret) {
        RowContext *c = userdata;
        const TopUnit *u = top_model_unit_row(c->model, index);
        const TopSlice *slice = top_model_slice_row(c->model, index);
        const TopTreeLine *line = top_model_tree_line(c->model, TOP_VIEW_UNITS, index);
        int columns = 0;

        if (line) {
                free(tree_guides(line, false, &columns));
                ret->spans[1] = (PanelSpan) { 0, MIN(columns, TOP_UNIT_NAME_WIDTH), top_color(TOP_COLOR_TREE) };
        }
        if (slice) {
                ret->attr = top_color(TOP_COLOR_LABEL);
                return;
        }
        if (!u)
                return;
        ret->attr = !u->live ? top_color(TOP_COLOR_EXITED) :
                    top_model_is_high(c->model, u->current_pages) ? top_color(TOP_COLOR_HIGH) : 0;
        if (trend_color(u->trend))
                ret->spans[0] = (PanelSpan) { UNIT_CURRENT_X, 10, trend_color(u->trend) | (ret->attr & A_BOLD) };
}

static char *unit_row(size_t index, void *userdata) {
        RowContext *c = userdata;
        TopModel *m = c->model;
        const TopUnit *u = top_model_unit_row(m, index);
        const TopSlice *slice = top_model_slice_row(m, index);
        const TopTreeLine *line = top_model_tree_line(m, TOP_VIEW_UNITS, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *name = NULL, *guides = NULL, *full = NULL;
        int columns;
        char *s;

        if (!u && !slice)
                return NULL;
        /* In the tree the name follows its lines to the slice above; a slice shows its units' sums. */
        guides = tree_guides(line, c->utf8, &columns);
        clean = format_sanitize(u ? u->name : slice->name);
        if (!guides || !clean || asprintf(&full, "%s%s", guides, clean) < 0)
                return NULL;
        name = format_ellipsize(full, TOP_UNIT_NAME_WIDTH);
        if (!name)
                return NULL;
        if (!u) {
                if (asprintf(&s, "%s%*s %10s %10" PRIu64 " %10s %7" PRIu64 " %s", name,
                             (int) (TOP_UNIT_NAME_WIDTH - format_text_width(name)), "",
                             format_pages(cur, sizeof(cur), slice->current_pages, m->page_size), slice->current_pages,
                             "-", slice->tasks, "slice") < 0)
                        return NULL;
                return s;
        }
        if (asprintf(&s, "%s%*s %10s %10" PRIu64 " %10s %7" PRIu64 " %s", name,
                     (int) (TOP_UNIT_NAME_WIDTH - format_text_width(name)), "",
                     format_pages(cur, sizeof(cur), u->current_pages, m->page_size), u->current_pages,
                     format_pages(peak, sizeof(peak), u->peak_pages, m->page_size), u->tasks,
                     u->live ? "live" : "removed") < 0)
                return NULL;
        return s;
}

static char *unit_header(TopModel *m) {
        unsigned sorted = m->sort[TOP_VIEW_UNITS];
        char a[16], b[16], c[16], d[16];
        char *s;

        if (asprintf(&s, "%-*s %10s %10s %10s %7s %s", TOP_UNIT_NAME_WIDTH,
                     column(a, sizeof(a), "UNIT", sorted == TOP_UNIT_NAME),
                     column(b, sizeof(b), "CURRENT", sorted == TOP_UNIT_CURRENT), "PAGES",
                     column(c, sizeof(c), "PEAK", sorted == TOP_UNIT_PEAK),
                     column(d, sizeof(d), "TASKS", sorted == TOP_UNIT_TASKS), "STATE") < 0)
                return NULL;
        return s;
}

/* Call sites are function+offset: 28 columns hold most, the rest is cut with an ellipsis. */
#define TOP_SLAB_SITE_WIDTH 28
/* A call site whose frees this kernel makes without a tracepoint: its counts are an upper bound. */
#define TOP_SLAB_INVISIBLE_NOTE "frees not visible"

static char *slab_row(size_t index, void *userdata) {
        TopModel *m = ((RowContext *) userdata)->model;
        const TopSlabSite *site = top_model_slab_row(m, index);
        char bytes[FORMAT_BUFFER_MAX], requested[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *name = NULL;
        char *s;

        if (!site)
                return NULL;
        clean = format_sanitize(site->name);
        name = clean ? format_ellipsize(clean, TOP_SLAB_SITE_WIDTH) : NULL;
        if (!name)
                return NULL;
        if (asprintf(&s, "%s%*s %8" PRIu64 " %9s %9s %5.1f%% %9s %9" PRIu64 " %9" PRIu64 " %8" PRIu64 " %s", name,
                     (int) (TOP_SLAB_SITE_WIDTH - format_text_width(name)), "", site->objects,
                     format_bytes(bytes, sizeof(bytes), site->bytes),
                     format_bytes(requested, sizeof(requested), site->requested), site->waste_percent,
                     format_bytes(peak, sizeof(peak), site->peak_bytes), site->allocs, site->frees, site->lost_frees,
                     site->frees_invisible ? TOP_SLAB_INVISIBLE_NOTE : "") < 0)
                return NULL;
        return s;
}

static char *slab_header(TopModel *m) {
        unsigned sorted = m->sort[TOP_VIEW_SLAB];
        char a[16], b[16], c[16], d[16], e[16], f[16];
        char *s;

        if (asprintf(&s, "%-*s %8s %9s %9s %6s %9s %9s %9s %8s %s", TOP_SLAB_SITE_WIDTH,
                     column(a, sizeof(a), "CALL SITE", sorted == TOP_SLAB_SITE),
                     column(b, sizeof(b), "OBJECTS", sorted == TOP_SLAB_OBJECTS),
                     column(c, sizeof(c), "BYTES", sorted == TOP_SLAB_BYTES), "REQUESTED",
                     column(d, sizeof(d), "WASTE", sorted == TOP_SLAB_WASTE),
                     column(e, sizeof(e), "PEAK", sorted == TOP_SLAB_PEAK),
                     column(f, sizeof(f), "ALLOCS", sorted == TOP_SLAB_ALLOCS), "FREES", "LOST", "NOTE") < 0)
                return NULL;
        return s;
}

static char *stack_row(size_t index, void *userdata) {
        TopModel *m = ((RowContext *) userdata)->model;
        const TopStackRow *row = top_model_stack_row(m, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], more[48] = "";
        char *s;

        if (!row)
                return NULL;
        /* A user-space heap's node counts bytes. */
        if (row->node->peak_pages >= 0 && row->node->bytes)
                (void) format_bytes(peak, sizeof(peak), (uint64_t) row->node->peak_pages);
        else if (row->node->peak_pages >= 0)
                (void) format_pages(peak, sizeof(peak), (uint64_t) row->node->peak_pages, m->page_size);
        else
                (void) snprintf(peak, sizeof(peak), "-");
        if (row->node->truncated > 0)
                (void) snprintf(more, sizeof(more), "  (+%" PRIu64 " smaller)", row->node->truncated);
        if (row->node->bytes)
                (void) format_bytes(cur, sizeof(cur), row->node->current_pages);
        else
                (void) format_pages(cur, sizeof(cur), row->node->current_pages, m->page_size);
        if (asprintf(&s, "%10s %10s %*s%s %s%s", cur,
                     peak, (int) MIN(row->depth, 40u) * 2, "",
                     row->node->n_children == 0 ? "   " : row->expanded ? "[-]" : "[+]", row->node->label, more) < 0)
                return NULL;
        return s;
}

/* Sampled stacks are an estimate, said first after STACK so that 80 columns still show it. */
static char *stack_header(TopModel *m) {
        unsigned sorted = m->sort[TOP_VIEW_STACKS];
        char a[16], b[16], sampling[FORMAT_STACK_SAMPLING_MAX + 16] = "";
        char *s;

        if (m->stack_sample_interval > 1) {
                char buf[FORMAT_STACK_SAMPLING_MAX];
                (void) snprintf(sampling, sizeof(sampling), " sampled %s;",
                                format_stack_sampling(buf, sizeof(buf), m->stack_sample_interval));
        }
        if (asprintf(&s, "%10s %10s STACK%s %s", column(a, sizeof(a), "CURRENT", sorted == TOP_STACK_CURRENT),
                     column(b, sizeof(b), "PEAK", sorted == TOP_STACK_PEAK), sampling,
                     sampling[0] ? "callers first; Enter/Right open, Left close" :
                                   "(callers first; Enter/Right open, Left close)") < 0)
                return NULL;
        return s;
}

/* Colours the first occurrence of needle on line y (an ASCII line: bytes are columns). */
static void color_part(int y, const char *line, const char *needle, int attr, int cols) {
        const char *at = line && needle ? strstr(line, needle) : NULL;

        if (!at || attr == A_NORMAL || at - line >= cols)
                return;
        mvchgat(y, (int) (at - line), MIN((int) strlen(needle), cols - (int) (at - line)), (attr_t) (attr & ~A_COLOR),
                (short) PAIR_NUMBER(attr), NULL);
}

static const char *const tab_names[_TOP_VIEW_MAX] = {
        " 1 Tasks ", " 2 Modules ", " 3 Stacks ", " 4 Units ", " 5 Slab ",
};

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
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], up[FORMAT_BUFFER_MAX], scope[300], lost[64] = "";
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
                attrset(v == (size_t) m->view ? A_REVERSE | A_BOLD : A_NORMAL);
                addnstr(tab_names[v], s->cols - x);
                x += (int) strlen(tab_names[v]);
                attrset(A_NORMAL);
                if (x < s->cols) {
                        addch(' ');
                        x++;
                }
        }
        _cleanup_free_ char *state = NULL;
        if (asprintf(&state, "%s%s sort: %s%s%s%s%s", m->view == TOP_VIEW_STACKS ? " " : "",
                     m->view == TOP_VIEW_STACKS ? top_model_scope_label(m, scope, sizeof(scope)) : "",
                     top_model_sort_name(m, m->view), m->tree[m->view] ? "  tree" : "",
                     top_model_filter(m) ? "  filter: " : "", top_model_filter(m) ?: "",
                     m->paused ? "  PAUSED" : "") >= 0 && x < s->cols)
                panel_print_line(2, x, s->cols - x, state, m->paused ? A_BOLD : A_NORMAL);
}

static void draw_help(TopScreen *s) {
        const TopKeyHelp *help;
        size_t n;
        int y = TOP_HEADER_LINES;

        help = top_actions_help(&n);
        panel_print_line(y++, 0, s->cols, "memstrack top help - any key returns", A_REVERSE | A_BOLD);
        for (size_t i = 0; i < n && y < s->rows - TOP_FOOTER_LINES; i++) {
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "  %-22s %s", help[i].keys, help[i].text) < 0)
                        continue;
                panel_print_line(y++, 0, s->cols, line, A_NORMAL);
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

/* Where the sort columns of each view's header are (the row formats above). */
typedef struct ColumnPlace {
        int x, width;
        unsigned column;
} ColumnPlace;

static const ColumnPlace task_places[] = {
        { 0, 7, TOP_TASK_PID }, { 8, 15, TOP_TASK_COMM }, { 24, 10, TOP_TASK_CURRENT }, { 35, 10, TOP_TASK_PEAK },
        { 46, 9, TOP_TASK_ALLOCS }, { 56, 9, TOP_TASK_FREES }, { 66, 7, TOP_TASK_STATE },
};
static const ColumnPlace module_places[] = {
        { 0, 24, TOP_MODULE_NAME }, { 25, 10, TOP_MODULE_CURRENT }, { 47, 10, TOP_MODULE_PEAK },
};
static const ColumnPlace unit_places[] = {
        { 0, 28, TOP_UNIT_NAME }, { 29, 10, TOP_UNIT_CURRENT }, { 51, 10, TOP_UNIT_PEAK }, { 62, 7, TOP_UNIT_TASKS },
};
static const ColumnPlace slab_places[] = {
        { 0, 28, TOP_SLAB_SITE }, { 29, 8, TOP_SLAB_OBJECTS }, { 38, 9, TOP_SLAB_BYTES }, { 58, 6, TOP_SLAB_WASTE },
        { 65, 9, TOP_SLAB_PEAK }, { 75, 9, TOP_SLAB_ALLOCS },
};
static const ColumnPlace stack_places[] = { { 0, 10, TOP_STACK_CURRENT }, { 11, 10, TOP_STACK_PEAK } };

TopHit top_screen_hit(const TopScreen *s, const TopModel *m, int y, int x) {
        const Panel *p = &s->panels[m->view];

        if (y == 2) {
                int start = 0;
                for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                        int end = start + (int) strlen(tab_names[v]);
                        if (x >= start && x < end)
                                return (TopHit) { TOP_HIT_TAB, v };
                        start = end + 1;
                }
                return (TopHit) {};
        }
        if (m->mode == TOP_MODE_HELP || m->mode == TOP_MODE_EXPLAIN)
                return (TopHit) {};
        if (y == p->y) {
                const ColumnPlace *places;
                size_t n;
                switch (m->view) {
                case TOP_VIEW_TASKS:
                        places = task_places, n = ELEMENTSOF(task_places);
                        break;
                case TOP_VIEW_MODULES:
                        places = module_places, n = ELEMENTSOF(module_places);
                        break;
                case TOP_VIEW_UNITS:
                        places = unit_places, n = ELEMENTSOF(unit_places);
                        break;
                case TOP_VIEW_SLAB:
                        places = slab_places, n = ELEMENTSOF(slab_places);
                        break;
                default:
                        places = stack_places, n = ELEMENTSOF(stack_places);
                }
                for (size_t i = 0; i < n; i++)
                        if (x >= places[i].x && x < places[i].x + places[i].width)
                                return (TopHit) { TOP_HIT_COLUMN, places[i].column };
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
                switch (m->view) {
                case TOP_VIEW_TASKS:
                        header = task_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_task_rows, m->selected[m->view], task_row,
                                   task_style, &ctx);
                        break;
                case TOP_VIEW_MODULES:
                        header = module_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_module_rows, m->selected[m->view],
                                   module_row, module_style, &ctx);
                        break;
                case TOP_VIEW_UNITS:
                        header = unit_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_unit_rows, m->selected[m->view],
                                   unit_row, unit_style, &ctx);
                        /* An older memstrackd sends no units at all: not the same as none holding pages. */
                        if (m->have_data && !m->have_units && s->rows > TOP_HEADER_LINES + 2)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, "  memstrackd does not "
                                                 "report units (a version without them)", A_NORMAL);
                        break;
                case TOP_VIEW_SLAB:
                        header = slab_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_slab_rows, m->selected[m->view],
                                   slab_row, NULL, &ctx);
                        if (m->have_data && !m->have_slab && s->rows > TOP_HEADER_LINES + 2)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, "  " TOP_SLAB_OFF_HINT, A_NORMAL);
                        break;
                default:
                        header = stack_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_stack_rows, m->selected[m->view],
                                   stack_row, NULL, &ctx);
                        if (!m->stack_root && s->rows > TOP_HEADER_LINES + 2)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, "  loading the stack tree...",
                                                 A_NORMAL);
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
