/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl top: the Top stream, shown live with curses or printed as text (--batch).
 *
 * The live view runs one sd-event loop: stdin (keys), the stream connection (Top with "more"), a second
 * connection for a view's own call (the stacks' StackTree), Reset, History and Explain (a varlink
 * connection answers nothing else while a stream runs on it), SIGWINCH, SIGINT/SIGTERM/SIGHUP, and a
 * reconnect timer while the daemon is away. Every way out
 * goes back through verb_top(), which gives the terminal back.
 */

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "actions.h"
#include "connection.h"
#include "ctl.h"
#include "errors.h"
#include "format.h"
#include "graph.h"
#include "meminfo.h"
#include "model.h"
#include "reply.h"
#include "settings.h"
#include "tasks.h"
#include "view-class.h"
#include "view.h"

#define TOP_LIMIT_DEFAULT 200
#define TOP_RECONNECT_USEC (1000000ULL)
#define TOP_SEND_TIMEOUT_USEC (5000000ULL)

typedef enum SideRequest {
        SIDE_NONE,
        SIDE_FETCH,                             /* a view's own call (its class's fetch) */
        SIDE_RESET,
        SIDE_HISTORY,
        SIDE_EXPLAIN,
} SideRequest;

typedef struct Top {
        sd_event *event;
        TopModel *model;
        TopScreen screen;

        VarlinkClient *stream;                  /* the Top call; NULL while disconnected */
        sd_event_source *stream_source;
        VarlinkClient *side;                    /* the other calls, connected on demand */
        sd_event_source *side_source;
        SideRequest side_request;               /* the call in flight on side */
        TopView side_view;                      /* SIDE_FETCH: the view it is for */
        bool fetch_wanted;                      /* fetch the view's rows again once side is free */
        bool explain_wanted;                    /* fetch the Explain view again once side is free */
        TopGraph graph;                         /* the selection's history, above the status line */
        char *graph_key;                        /* owned: what the History call in flight is for */

        sd_event_source *reconnect_timer;
        sd_event_source *stdin_source;
        uint64_t updates;                       /* Top replies shown, for --iterations */
        char status[256];                       /* bottom line message, "" for none */
        bool connected;
} Top;

static void set_status(Top *t, const char *format, ...) _printf_(2, 3);
static void set_status(Top *t, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(t->status, sizeof(t->status), format, ap);
        va_end(ap);
}

static void draw(Top *t) {
        top_screen_draw(&t->screen, t->model, &t->graph, t->status[0] ? t->status : NULL, t->connected);
}

static void side_close(Top *t) {
        t->side_source = sd_event_source_disable_unref(t->side_source);
        t->side = varlink_client_free(t->side);
        t->side_request = SIDE_NONE;
        t->graph_key = mfree_ptr(t->graph_key);
}

static void stream_close(Top *t) {
        t->stream_source = sd_event_source_disable_unref(t->stream_source);
        t->stream = varlink_client_free(t->stream);
        t->connected = false;
}

static int schedule_reconnect(Top *t);

/* The daemon went away or refused us: keep the last data on screen and try again shortly. */
static void lost_daemon(Top *t, const char *why) {
        stream_close(t);
        side_close(t);
        set_status(t, "memstrackd gone (%s), reconnecting...", why);
        (void) schedule_reconnect(t);
        draw(t);
}

static void fetch_view(Top *t);
static void fetch_graph(Top *t);
static void fetch_explain(Top *t);

static int side_handler(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Top *t = userdata;
        _cleanup_free_ char *error = NULL;
        json_auto_t *reply = NULL;
        int r;

        r = varlink_client_read_reply(t->side, 0, &reply, &error);
        if (r == -EAGAIN)
                return 0;
        SideRequest done = t->side_request;
        t->side_request = SIDE_NONE;
        if (r >= 0 && done == SIDE_HISTORY) {
                /* The graph says nothing on its own: an error (the task is gone, a memstrackd without
                 * History) only empties it. */
                _cleanup_free_ char *key = TAKE_PTR(t->graph_key);
                if (error && streq(error, VARLINK_ERROR_METHOD_NOT_FOUND))
                        t->graph.unsupported = true;
                if (error || !key || top_graph_update(&t->graph, key, reply) < 0)
                        top_graph_clear(&t->graph);
                if (t->fetch_wanted)
                        fetch_view(t);
                draw(t);
                return 0;
        }
        if (r < 0) {
                side_close(t);
                set_status(t, "Lost the query connection: %s", strerror(-r));
        } else if (error) {
                /* The same sentence the verbs print (errors.h), with what to do here. */
                _cleanup_free_ char *m = ctl_error_message(error, reply);
                bool gone = streq(error, MEMSTRACK_ERROR_NO_SUCH_TASK) ||
                            streq(error, MEMSTRACK_ERROR_NO_SUCH_MODULE) ||
                            streq(error, MEMSTRACK_ERROR_NO_SUCH_UNIT);
                set_status(t, "%s%s", m ?: error, gone ? " Press a for all stacks." : "");
        } else if (done == SIDE_FETCH) {
                r = top_model_update_fetched(t->model, t->side_view, reply);
                if (r < 0)
                        set_status(t, "Cannot show %s: %s", top_view_class(t->side_view)->fetch->what, strerror(-r));
        } else if (done == SIDE_EXPLAIN) {
                r = top_model_update_explain(t->model, reply);
                if (r < 0)
                        set_status(t, "Cannot show the Explain view: %s", strerror(-r));
        } else if (done == SIDE_RESET)
                set_status(t, "Peaks reset.");
        /* The graph waits for the side connection behind a view's own rows and the Explain view. */
        if (t->explain_wanted)
                fetch_explain(t);
        else if (done == SIDE_FETCH || done == SIDE_EXPLAIN)
                fetch_graph(t);
        draw(t);
        return 0;
}

/* Sends a call on the side connection, connecting it first if needed. */
static int side_send(Top *t, SideRequest what, const char *method, json_t *params) {
        int r;

        if (t->side_request != SIDE_NONE)
                return -EBUSY;
        if (!t->side) {
                r = varlink_client_connect(ctl_address(), &t->side);
                if (r < 0)
                        return r;
                r = sd_event_add_io(t->event, &t->side_source, varlink_client_get_fd(t->side), EPOLLIN,
                                    side_handler, t);
                if (r < 0) {
                        side_close(t);
                        return r;
                }
                (void) sd_event_source_set_description(t->side_source, "top-side");
        }
        r = varlink_client_send(t->side, method, params, 0, TOP_SEND_TIMEOUT_USEC);
        if (r < 0) {
                side_close(t);
                return r;
        }
        t->side_request = what;
        return 0;
}

/* Asks for the selection's history when the side connection is free; skipped otherwise (the next
 * update asks again). */
static void fetch_graph(Top *t) {
        json_auto_t *params = NULL;
        _cleanup_free_ char *key = NULL;

        if (t->graph.unsupported || t->model->paused || !t->connected || t->side_request != SIDE_NONE)
                return;
        params = top_graph_parameters(t->model, &key);
        if (!params)
                return;
        if (side_send(t, SIDE_HISTORY, "io.memstrack.History", params) < 0)
                return;
        free(t->graph_key);
        t->graph_key = TAKE_PTR(key);
}

/* The rows of the view shown, when they come from a call of their own (the stacks' tree). */
static void fetch_view(Top *t) {
        const TopViewFetch *f = top_view_class(t->model->view)->fetch;
        json_auto_t *params = NULL;
        int r;

        if (!f || t->model->paused || !t->connected)
                return;
        if (t->side_request != SIDE_NONE) {
                t->fetch_wanted = true;
                return;
        }
        t->fetch_wanted = false;
        params = top_model_fetch_parameters(t->model, t->model->view);
        if (!params)
                return;
        r = side_send(t, SIDE_FETCH, f->method, params);
        if (r < 0)
                set_status(t, "Cannot ask for %s: %s", f->what, strerror(-r));
        else
                t->side_view = t->model->view;
}

/* The Explain view's reply, asked for at each update while it is shown. */
static void fetch_explain(Top *t) {
        json_auto_t *params = NULL;
        int r;

        if (t->model->mode != TOP_MODE_EXPLAIN || t->model->paused || !t->connected)
                return;
        if (t->side_request != SIDE_NONE) {
                t->explain_wanted = true;
                return;
        }
        t->explain_wanted = false;
        params = top_model_explain_parameters(t->model);
        if (!params)
                return;
        r = side_send(t, SIDE_EXPLAIN, "io.memstrack.Explain", params);
        if (r < 0)
                set_status(t, "Cannot ask for the Explain view: %s", strerror(-r));
}

static int stream_handler(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Top *t = userdata;
        bool updated = false;
        int r;

        for (;;) {
                _cleanup_free_ char *error = NULL;
                json_auto_t *reply = NULL;

                r = varlink_client_read_reply(t->stream, 0, &reply, &error);
                if (r == -EAGAIN)
                        break;
                if (r < 0) {
                        lost_daemon(t, r == -ECONNRESET ? "connection closed" : strerror(-r));
                        return 0;
                }
                if (error) {
                        _cleanup_free_ char *m = ctl_error_message(error, reply);
                        lost_daemon(t, m ?: error);
                        return 0;
                }
                /* The machine's memory for the meter, read as the daemon's figures arrive. */
                if (!t->model->paused && top_meminfo_read(NULL, &t->model->meminfo) < 0)
                        t->model->meminfo = (TopMemInfo) {};
                if (top_model_update(t->model, reply) < 0)
                        set_status(t, "Malformed Top reply, ignoring.");
                else if (!t->model->paused)
                        t->updates++;
                updated = true;
                if (r == 0) {
                        /* A stream does not end on its own: the daemon is going away. */
                        lost_daemon(t, "stream ended");
                        return 0;
                }
        }
        if (!updated)
                return 0;
        if (arg_iterations > 0 && t->updates >= arg_iterations)
                return sd_event_exit(t->event, 0);
        fetch_view(t);
        fetch_explain(t);
        fetch_graph(t);
        draw(t);
        return 0;
}

static int stream_open(Top *t) {
        json_auto_t *params = NULL;
        int r;

        stream_close(t);
        r = varlink_client_connect(ctl_address(), &t->stream);
        if (r < 0)
                return r;
        /* Tasks at 0 for the sort key are left out unless --all, as in tasks. */
        params = json_pack("{s:I, s:I, s:s, s:b}", "intervalUsec", (json_int_t) arg_delay_usec,
                           "limit", (json_int_t) (arg_limit ?: TOP_LIMIT_DEFAULT),
                           "sortBy", top_model_stream_sort(t->model), "hideZero", !arg_all);
        if (!params)
                return -ENOMEM;
        r = varlink_client_send(t->stream, "io.memstrack.Top", params, VARLINK_CALL_MORE, TOP_SEND_TIMEOUT_USEC);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(t->event, &t->stream_source, varlink_client_get_fd(t->stream), EPOLLIN, stream_handler, t);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(t->stream_source, "top-stream");
        t->connected = true;
        return 0;
fail:
        stream_close(t);
        return r;
}

static int reconnect_handler(sd_event_source *s, uint64_t usec, void *userdata) {
        Top *t = userdata;
        int r;

        r = stream_open(t);
        if (r < 0) {
                set_status(t, "memstrackd gone (%s), reconnecting...", strerror(-r));
                draw(t);
                return sd_event_source_set_time_relative(s, TOP_RECONNECT_USEC) < 0 ? 0 :
                       sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        set_status(t, "Connected to memstrackd at %s.", ctl_address());
        if (top_view_class(t->model->view)->fetch)
                t->fetch_wanted = true;
        draw(t);
        return 0;
}

static int schedule_reconnect(Top *t) {
        int r;

        if (t->reconnect_timer) {
                r = sd_event_source_set_time_relative(t->reconnect_timer, TOP_RECONNECT_USEC);
                if (r < 0)
                        return r;
                return sd_event_source_set_enabled(t->reconnect_timer, SD_EVENT_ONESHOT);
        }
        r = sd_event_add_time_relative(t->event, &t->reconnect_timer, CLOCK_MONOTONIC, TOP_RECONNECT_USEC, 0,
                                       reconnect_handler, t);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(t->reconnect_timer, "top-reconnect");
        return 0;
}

static int stdin_handler(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Top *t = userdata;
        TopReaction all = TOP_REACT_NONE;
        int key;

        if (revents & (EPOLLHUP | EPOLLERR))
                return sd_event_exit(t->event, 0);

        while ((key = top_screen_read_key(&t->screen)) >= 0) {
                TopActionContext c = {
                        .model = t->model,
                        .page_rows = top_screen_page_rows(&t->screen, t->model->view),
                };
                TopReaction r;
                MEVENT mouse;

                if (key == KEY_MOUSE) {
                        /* Where the terminal reports clicks: on a tab, a column header or a row. */
                        if (getmouse(&mouse) != OK)
                                continue;
                        TopHit hit = top_screen_hit(&t->screen, t->model, mouse.y, mouse.x);
                        int wheel = mouse.bstate & BUTTON4_PRESSED ? -1 : mouse.bstate & BUTTON5_PRESSED ? 1 : 0;
                        if (!wheel && !(mouse.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_DOUBLE_CLICKED)))
                                continue;
                        r = top_actions_handle_click(&c, hit.kind, hit.index,
                                                     mouse.bstate & BUTTON1_DOUBLE_CLICKED, wheel);
                } else
                        r = top_actions_handle_key(&c, key);
                if (c.message)
                        set_status(t, "%s", c.message);
                else if (r != TOP_REACT_NONE && t->connected)
                        t->status[0] = '\0';
                all |= r;
                if (r & TOP_REACT_QUIT)
                        return sd_event_exit(t->event, 0);
        }

        if (all & TOP_REACT_RESTREAM && t->connected) {
                int r = stream_open(t);
                if (r < 0)
                        lost_daemon(t, strerror(-r));
        }
        if (all & TOP_REACT_FETCH_VIEW)
                fetch_view(t);
        if (all & TOP_REACT_FETCH_EXPLAIN)
                fetch_explain(t);
        if (all & TOP_REACT_FETCH_GRAPH)
                fetch_graph(t);
        if (all & TOP_REACT_RESET_PEAKS) {
                json_auto_t *params = json_pack("{s:s}", "what", "peaks");
                int r = params ? side_send(t, SIDE_RESET, "io.memstrack.Reset", params) : -ENOMEM;
                if (r < 0)
                        set_status(t, "Cannot reset peaks: %s", strerror(-r));
        }
        if (all & TOP_REACT_CLEAR)
                top_screen_clear(&t->screen);
        if (all != TOP_REACT_NONE)
                draw(t);
        return 0;
}

static int winch_handler(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Top *t = userdata;

        top_screen_resize(&t->screen);
        draw(t);
        return 0;
}

static int exit_handler(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Top *t = userdata;
        return sd_event_exit(t->event, 0);
}

static void top_done(Top *t) {
        /* The terminal first, so that nothing below can leave it in curses mode. */
        top_screen_stop(&t->screen);
        t->stdin_source = sd_event_source_disable_unref(t->stdin_source);
        t->reconnect_timer = sd_event_source_disable_unref(t->reconnect_timer);
        stream_close(t);
        side_close(t);
        top_graph_done(&t->graph);
        t->model = top_model_free(t->model);
        t->event = sd_event_unref(t->event);
}

static int run_tui(void) {
        _cleanup_(top_done) Top t = {};
        sigset_t mask;
        int r;

        if (!isatty(STDIN_FILENO)) {
                fprintf(stderr, "memstrackctl top reads keys from a terminal; use --batch for text output.\n");
                return CTL_EXIT_USAGE;
        }

        /* Connect before taking over the screen, so a missing daemon is a plain error message. */
        r = ctl_connect(&t.stream);
        if (r != 0)
                return r;
        t.stream = varlink_client_free(t.stream);

        r = top_model_new((uint64_t) sysconf(_SC_PAGESIZE), &t.model);
        if (r < 0)
                return r;
        /* The user's remembered view, sorts, trees and chart; --sort still has the last word. */
        _cleanup_free_ char *settings = top_settings_path();
        if (settings && (r = top_settings_load(t.model, settings)) < 0 && r != -ENOENT)
                fprintf(stderr, "Cannot read %s: %s, ignoring.\n", settings, strerror(-r));
        (void) top_meminfo_read(NULL, &t.model->meminfo);
        if (arg_sort)
                (void) top_model_set_stream_sort(t.model, arg_sort);
        r = sd_event_default(&t.event);
        if (r < 0)
                return r;

        /* Signals come through the loop; ^Z (SIGTSTP) stays with curses, which suspends cleanly. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGWINCH);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGPIPE);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return negative_errno();
        if ((r = sd_event_add_signal(t.event, NULL, SIGWINCH, winch_handler, &t)) < 0 ||
            (r = sd_event_add_signal(t.event, NULL, SIGINT, exit_handler, &t)) < 0 ||
            (r = sd_event_add_signal(t.event, NULL, SIGTERM, exit_handler, &t)) < 0 ||
            (r = sd_event_add_signal(t.event, NULL, SIGHUP, exit_handler, &t)) < 0)
                return r;

        r = top_screen_start(&t.screen);
        if (r < 0) {
                fprintf(stderr, "Cannot start the terminal interface (TERM=%s).\n", getenv("TERM") ?: "");
                return CTL_EXIT_FAILURE;
        }
        r = sd_event_add_io(t.event, &t.stdin_source, STDIN_FILENO, EPOLLIN, stdin_handler, &t);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(t.stdin_source, "top-stdin");

        r = stream_open(&t);
        if (r < 0)
                lost_daemon(&t, strerror(-r));
        draw(&t);

        r = sd_event_loop(t.event);
        top_screen_stop(&t.screen);
        /* Remembered for next time; a read-only home only loses that. */
        if (settings) {
                int k = top_settings_save(t.model, settings);
                if (k < 0)
                        fprintf(stderr, "Cannot save the settings to %s: %s\n", settings, strerror(-k));
        }
        return r < 0 ? r : 0;
}

/* ---- --batch ---------------------------------------------------------------------------------------- */

static int print_batch(json_t *reply, uint64_t page_size, uint64_t iteration) {
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], up[FORMAT_BUFFER_MAX];
        size_t width = format_terminal_columns();
        int r;

        if (iteration > 0)
                printf("\n");
        if (arg_legend)
                printf("memstrack top - tracked %s (%" PRIu64 " pages), peak %s - %.0f events/s - lost %" PRIu64
                       " - up %s\n\n",
                       format_pages(cur, sizeof(cur), reply_count(reply, "trackedPages"), page_size),
                       reply_count(reply, "trackedPages"),
                       format_pages(peak, sizeof(peak), reply_count(reply, "peakTrackedPages"), page_size),
                       reply_double(reply, "eventsPerSecond", 0), reply_count(reply, "lostEvents"),
                       format_duration(up, sizeof(up), reply_count(reply, "uptimeUsec")));
        if (reply_count(reply, "stacksTruncated") > 0)
                printf("%s\n\n", TOP_STACK_WARNING);
        r = tasks_print_table(reply_array(reply, "tasks"), page_size, stdout, width);
        if (r < 0)
                return r;
        tasks_print_evicted(reply_object(reply, "evicted"), page_size, stdout);
        printf("\n");
        r = modules_print_table(reply_array(reply, "modules"), page_size, stdout, width);
        if (r < 0)
                return r;
        /* A memstrackd from before units sends none: no table rather than an empty one. */
        if (reply_array(reply, "units")) {
                printf("\n");
                r = units_print_table(reply_array(reply, "units"), page_size, false, stdout, width);
                if (r < 0)
                        return r;
        }
        /* Slab objects by call site, when memstrackd traces them. */
        if (reply_object(reply, "slab")) {
                printf("\n");
                r = slab_print_table(reply_array(reply_object(reply, "slab"), "rows"), "callsite", stdout, width);
                if (r < 0)
                        return r;
        }
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int run_batch(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *params = NULL;
        uint64_t page_size = 4096;
        int r;

        r = ctl_connect(&c);
        if (r != 0)
                return r;
        if (arg_json == CTL_JSON_OFF) {
                r = ctl_page_size(c, &page_size);
                if (r != 0)
                        return r;
        }
        params = json_pack("{s:I, s:I, s:s, s:b}", "intervalUsec", (json_int_t) arg_delay_usec,
                           "limit", (json_int_t) (arg_limit ?: 20), "sortBy", arg_sort ?: "current",
                           "hideZero", !arg_all);
        if (!params)
                return -ENOMEM;
        r = varlink_client_send(c, "io.memstrack.Top", params, VARLINK_CALL_MORE, CTL_CALL_TIMEOUT_USEC);
        if (r < 0)
                return ctl_report_transport_error(r);

        for (uint64_t i = 0; arg_iterations == 0 || i < arg_iterations; i++) {
                _cleanup_free_ char *error = NULL;
                json_auto_t *reply = NULL;

                r = varlink_client_read_reply(c, arg_delay_usec + CTL_CALL_TIMEOUT_USEC, &reply, &error);
                r = ctl_reply_result(r, error, reply);
                if (r != 0)
                        return r;
                r = arg_json != CTL_JSON_OFF ? ctl_print_json(reply) : print_batch(reply, page_size, i);
                if (r < 0)
                        return r;
        }
        return 0;
}

int verb_top(int argc, char *argv[]) {
        if (arg_sort && !streq(arg_sort, "current") && !streq(arg_sort, "peak") && !streq(arg_sort, "allocs"))
                return CTL_EXIT_USAGE;
        /* Output to a pipe or file gets text, as top -b: a curses screen there is of use to nobody. */
        if (arg_batch || arg_json != CTL_JSON_OFF || !isatty(STDOUT_FILENO))
                return run_batch();
        return run_tui();
}
