/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "actions.h"
#include "curses.h"
#include "format.h"
#include "macro.h"
#include "view.h"

/* Screen lines above and below the panel: totals, tabs; the history graph, status. */
#define TOP_HEADER_LINES 2
#define TOP_FOOTER_LINES 2

static void layout(TopScreen *s) {
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                panel_move(&s->panels[v], TOP_HEADER_LINES, 0, s->rows - TOP_HEADER_LINES - TOP_FOOTER_LINES,
                           s->cols);
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

static char *task_row(size_t index, void *userdata) {
        TopModel *m = userdata;
        const TopTask *t = top_model_task_row(m, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *comm = NULL;
        char *s;

        if (!t)
                return NULL;
        /* 15 columns of the escaped name (format_sanitize()), not 15 bytes: no cut inside a character or an
         * escape, and the columns after it stay aligned. */
        clean = format_sanitize(t->comm);
        comm = clean ? format_ellipsize(clean, 15) : NULL;
        if (!comm)
                return NULL;
        if (asprintf(&s, "%7" PRIi64 " %s%*s %10s %10s %9" PRIu64 " %9" PRIu64 " %-7s %s", t->pid, comm,
                     (int) (15 - format_text_width(comm)), "",
                     format_pages(cur, sizeof(cur), t->current_pages, m->page_size),
                     format_pages(peak, sizeof(peak), t->peak_pages, m->page_size), t->allocs, t->frees,
                     t->exited ? "exited" : "running", t->cmdline ?: "") < 0)
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

static char *module_row(size_t index, void *userdata) {
        TopModel *m = userdata;
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

static char *unit_row(size_t index, void *userdata) {
        TopModel *m = userdata;
        const TopUnit *u = top_model_unit_row(m, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *name = NULL;
        char *s;

        if (!u)
                return NULL;
        clean = format_sanitize(u->name);
        name = clean ? format_ellipsize(clean, TOP_UNIT_NAME_WIDTH) : NULL;
        if (!name)
                return NULL;
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

static char *slab_row(size_t index, void *userdata) {
        TopModel *m = userdata;
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
        if (asprintf(&s, "%s%*s %8" PRIu64 " %9s %9s %5.1f%% %9s %9" PRIu64 " %9" PRIu64, name,
                     (int) (TOP_SLAB_SITE_WIDTH - format_text_width(name)), "", site->objects,
                     format_bytes(bytes, sizeof(bytes), site->bytes),
                     format_bytes(requested, sizeof(requested), site->requested), site->waste_percent,
                     format_bytes(peak, sizeof(peak), site->peak_bytes), site->allocs, site->frees) < 0)
                return NULL;
        return s;
}

static char *slab_header(TopModel *m) {
        unsigned sorted = m->sort[TOP_VIEW_SLAB];
        char a[16], b[16], c[16], d[16], e[16], f[16];
        char *s;

        if (asprintf(&s, "%-*s %8s %9s %9s %6s %9s %9s %9s", TOP_SLAB_SITE_WIDTH,
                     column(a, sizeof(a), "CALL SITE", sorted == TOP_SLAB_SITE),
                     column(b, sizeof(b), "OBJECTS", sorted == TOP_SLAB_OBJECTS),
                     column(c, sizeof(c), "BYTES", sorted == TOP_SLAB_BYTES), "REQUESTED",
                     column(d, sizeof(d), "WASTE", sorted == TOP_SLAB_WASTE),
                     column(e, sizeof(e), "PEAK", sorted == TOP_SLAB_PEAK),
                     column(f, sizeof(f), "ALLOCS", sorted == TOP_SLAB_ALLOCS), "FREES") < 0)
                return NULL;
        return s;
}

static char *stack_row(size_t index, void *userdata) {
        TopModel *m = userdata;
        const TopStackRow *row = top_model_stack_row(m, index);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], more[48] = "";
        char *s;

        if (!row)
                return NULL;
        if (row->node->peak_pages >= 0)
                (void) format_pages(peak, sizeof(peak), (uint64_t) row->node->peak_pages, m->page_size);
        else
                (void) snprintf(peak, sizeof(peak), "-");
        if (row->node->truncated > 0)
                (void) snprintf(more, sizeof(more), "  (+%" PRIu64 " smaller)", row->node->truncated);
        if (asprintf(&s, "%10s %10s %*s%s %s%s", format_pages(cur, sizeof(cur), row->node->current_pages, m->page_size),
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

static void draw_header(TopScreen *s, TopModel *m) {
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], up[FORMAT_BUFFER_MAX], scope[300];
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

        /* Tabs, then the view's sort, filter and pause state. */
        static const char *const names[_TOP_VIEW_MAX] = {
                " 1 Tasks ", " 2 Modules ", " 3 Stacks ", " 4 Units ", " 5 Slab ",
        };
        int x = 0;
        move(1, 0);
        for (size_t v = 0; v < _TOP_VIEW_MAX && x < s->cols; v++) {
                attrset(v == (size_t) m->view ? A_REVERSE | A_BOLD : A_NORMAL);
                addnstr(names[v], s->cols - x);
                x += (int) strlen(names[v]);
                attrset(A_NORMAL);
                if (x < s->cols) {
                        addch(' ');
                        x++;
                }
        }
        _cleanup_free_ char *state = NULL;
        if (asprintf(&state, "%s%s sort: %s%s%s%s", m->view == TOP_VIEW_STACKS ? " " : "",
                     m->view == TOP_VIEW_STACKS ? top_model_scope_label(m, scope, sizeof(scope)) : "",
                     top_model_sort_name(m, m->view), top_model_filter(m) ? "  filter: " : "", top_model_filter(m) ?: "",
                     m->paused ? "  PAUSED" : "") >= 0 && x < s->cols)
                panel_print_line(1, x, s->cols - x, state, m->paused ? A_BOLD : A_NORMAL);
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

/* The line above the status line: the selection's history, the highest peak in reverse video. */
static void draw_graph(TopScreen *s, const TopModel *m, const TopGraph *graph) {
        _cleanup_free_ char *line = NULL;
        int peak_col = -1;

        if (s->rows < TOP_HEADER_LINES + TOP_FOOTER_LINES + 1)
                return;
        if (graph && top_graph_line(graph, m->page_size, (size_t) s->cols, streq(nl_langinfo(CODESET), "UTF-8"), &line, &peak_col) >= 0 && line) {
                panel_print_line(s->rows - 2, 0, s->cols, line, A_NORMAL);
                if (peak_col >= 0 && peak_col < s->cols)
                        mvchgat(s->rows - 2, peak_col, 1, A_REVERSE | A_BOLD, 0, NULL);
        } else
                panel_print_line(s->rows - 2, 0, s->cols, "", A_NORMAL);
}

void top_screen_draw(TopScreen *s, TopModel *m, const TopGraph *graph, const char *status, bool connected) {
        _cleanup_free_ char *header = NULL, *prompt = NULL;

        if (!s->active || s->rows <= 0 || s->cols <= 0)
                return;

        draw_header(s, m);
        if (m->mode == TOP_MODE_HELP)
                draw_help(s);
        else {
                switch (m->view) {
                case TOP_VIEW_TASKS:
                        header = task_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_task_rows, m->selected[m->view], task_row, m);
                        break;
                case TOP_VIEW_MODULES:
                        header = module_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_module_rows, m->selected[m->view],
                                   module_row, m);
                        break;
                case TOP_VIEW_UNITS:
                        header = unit_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_unit_rows, m->selected[m->view],
                                   unit_row, m);
                        /* An older memstrackd sends no units at all: not the same as none holding pages. */
                        if (m->have_data && !m->have_units && s->rows > TOP_HEADER_LINES + 2)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, "  memstrackd does not "
                                                 "report units (a version without them)", A_NORMAL);
                        break;
                case TOP_VIEW_SLAB:
                        header = slab_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_slab_rows, m->selected[m->view],
                                   slab_row, m);
                        if (m->have_data && !m->have_slab && s->rows > TOP_HEADER_LINES + 2)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, "  " TOP_SLAB_OFF_HINT, A_NORMAL);
                        break;
                default:
                        header = stack_header(m);
                        panel_draw(&s->panels[m->view], header ?: "", m->n_stack_rows, m->selected[m->view],
                                   stack_row, m);
                        if (!m->stack_root && s->rows > TOP_HEADER_LINES + 2)
                                panel_print_line(TOP_HEADER_LINES + 1, 0, s->cols, "  loading the stack tree...",
                                                 A_NORMAL);
                }
        }

        if (m->mode != TOP_MODE_HELP)
                draw_graph(s, m, graph);
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
                                 "F1/? help  Tab view  s/</> sort  / filter  Enter stacks  p pause  r reset  q quit",
                                 A_NORMAL);
        refresh();
}
