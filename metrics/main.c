/* SPDX-License-Identifier: MIT */

/*
 * memstrack-metrics: memstrackd's counters as an OpenMetrics / Prometheus endpoint, and its memory as
 * pprof profiles at /debug/pprof (pprof-serve.c) for Parca, Pyroscope and go tool pprof.
 *
 * A program of its own so that memstrackd never opens a network port: this one only ever serves the
 * listening socket systemd passes it (memstrackd-metrics.socket, off until enabled), and asks memstrackd
 * over its varlink socket, as memstrackctl does, once per scrape. libmicrohttpd serves each connection
 * on a thread of its own (a delta profile waits seconds without holding up /metrics), at most
 * CONNECTION_LIMIT at once; /metrics scrapes run one after the other under a lock, profiles one at a
 * time behind pprof-serve.c's slot. The main thread only waits for SIGTERM. docs/metrics.md lists every
 * metric and profile.
 */

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include <jansson.h>
#include <microhttpd.h>

#include "config.h"
#include "http-reply.h"
#include "macro.h"
#include "parse-util.h"
#include "pprof-request.h"
#include "pprof-serve.h"
#include "render.h"
#include "varlink.h"

/* One scrape's calls each: well inside Prometheus' default scrape timeout of 10 s. */
#define CALL_TIMEOUT_USEC (8ULL * 1000000ULL)

/* Connections served at once, each on a thread of its own: enough for a burst of scrapers (each waits
 * for its turn or gets 429 at once), few enough to bound the threads. */
#define CONNECTION_LIMIT 60u
#define THREAD_STACK_BYTES (1024u * 1024u)

static const char *arg_address = MEMSTRACK_SOCKET_DEFAULT;
static size_t arg_top = METRICS_TOP_DEFAULT;

/* What the HTTP threads share. */
typedef struct Exporter {
        pthread_mutex_t metrics_lock;   /* one /metrics scrape at a time; guards was_down */
        bool was_down;                  /* the last scrape could not reach memstrackd */
        PprofServer *pprof;             /* owned */
} Exporter;

static int call(VarlinkClient *c, const char *method, json_t *parameters, json_t **ret, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        json_auto_t *reply = NULL;
        int r;

        r = varlink_client_call(c, method, parameters, CALL_TIMEOUT_USEC, &reply, &error);
        if (r < 0)
                return r;
        if (error) {
                *ret_error = TAKE_PTR(error);
                return -EBADE;
        }
        *ret = TAKE_PTR(reply);
        return 0;
}

/* A method an older memstrackd may lack: MethodNotFound leaves *ret NULL and its families out. */
static int call_optional(VarlinkClient *c, const char *method, json_t *parameters, json_t **ret) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = call(c, method, parameters, ret, &error);
        if (r == -EBADE && (streq(error, VARLINK_ERROR_METHOD_NOT_FOUND) ||
                            streq(error, VARLINK_ERROR_METHOD_NOT_IMPLEMENTED))) {
                *ret = NULL;
                return 0;
        }
        return r;
}

/* ExplainUnits of the units the Top reply listed (so the kernel's figures are of the same N units), and
 * the breakdowns of all pages (by GFP flags at most N rows: the flags a kernel uses are few, but not
 * bounded). */
static int collect_explain(VarlinkClient *c, MetricsInput *in) {
        json_auto_t *names = json_array(), *params = NULL;
        json_t *u;
        size_t i;
        int r;

        if (!names)
                return -ENOMEM;
        json_array_foreach(json_object_get(in->top, "units"), i, u)
                if (json_is_string(json_object_get(u, "name")) &&
                    json_array_append(names, json_object_get(u, "name")) < 0)
                        return -ENOMEM;
        params = json_pack("{s:O}", "names", names);
        if (!params)
                return -ENOMEM;
        r = call_optional(c, "io.memstrack.ExplainUnits", params, &in->explain_units);
        if (r < 0)
                return r;
        for (MetricsBreakdown b = 0; b < _METRICS_BY_MAX; b++) {
                json_auto_t *p = json_pack("{s:s}", "by", metrics_breakdown_by(b));
                if (!p || (b == METRICS_BY_GFP && json_object_set_new(p, "limit", json_integer((json_int_t) arg_top)) < 0))
                        return -ENOMEM;
                r = call_optional(c, "io.memstrack.PageBreakdown", p, &in->breakdown[b]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Asks memstrackd for one scrape: Status (health), Top (the biggest tasks and units and the total, all
 * from one moment, so the "[other]" remainder is exact) and Modules (all of them). On failure *ret_error
 * says why, for the log; the caller frees it. Fills in (new references) what it got.
 */
static int collect(MetricsInput *in, char **ret_error) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *top_parameters = NULL, *module_parameters = NULL;
        int r;

        r = varlink_client_connect(arg_address, &c);
        if (r < 0)
                return r;
        r = call(c, "io.memstrack.Status", NULL, &in->status, ret_error);
        if (r < 0)
                return r;
        top_parameters = json_pack("{s:I, s:b}", "limit", (json_int_t) arg_top, "hideZero", 1);
        module_parameters = json_pack("{s:I}", "limit", (json_int_t) METRICS_MODULES_MAX);
        if (!top_parameters || !module_parameters)
                return -ENOMEM;
        r = call(c, "io.memstrack.Top", top_parameters, &in->top, ret_error);
        if (r < 0)
                return r;
        r = call(c, "io.memstrack.Modules", module_parameters, &in->modules, ret_error);
        if (r < 0)
                return r;
        return collect_explain(c, in);
}

static void input_done(MetricsInput *in) {
        json_decref(in->status);
        json_decref(in->top);
        json_decref(in->modules);
        json_decref(in->explain_units);
        for (MetricsBreakdown b = 0; b < _METRICS_BY_MAX; b++)
                json_decref(in->breakdown[b]);
}

/* Logs when memstrackd stops or starts answering, not on every scrape. Under x->metrics_lock. */
static void log_reachable(Exporter *x, int r, const char *error) {
        if (r < 0 && !x->was_down) {
                if (error)
                        fprintf(stderr, SD_WARNING "memstrackd at %s answered %s, reporting memstrack_up 0.\n",
                                arg_address, error);
                else
                        fprintf(stderr, SD_WARNING "Cannot query memstrackd at %s: %s, reporting memstrack_up 0.\n",
                                arg_address, strerror(-r));
        } else if (r >= 0 && x->was_down)
                fprintf(stderr, SD_NOTICE "memstrackd at %s answers again.\n", arg_address);
        x->was_down = r < 0;
}

static enum MHD_Result serve_metrics(Exporter *x, struct MHD_Connection *conn) {
        _cleanup_(input_done) MetricsInput in = {};
        _cleanup_free_ char *error = NULL;
        MetricsFormat format;
        char *body = NULL;
        size_t size;
        int r;

        format = metrics_format_from_accept(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                                        MHD_HTTP_HEADER_ACCEPT));
        pthread_mutex_lock(&x->metrics_lock);
        r = collect(&in, &error);
        log_reachable(x, r, error);
        pthread_mutex_unlock(&x->metrics_lock);
        if (r < 0) {
                /* Up 0 and nothing else: a half answer would look like pages freed. */
                input_done(&in);
                in = (MetricsInput) {};
        }
        r = metrics_render(&in, format, arg_top, &body, &size);
        if (r < 0) {
                fprintf(stderr, SD_ERR "Cannot render the metrics: %s\n", strerror(-r));
                return http_respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "Cannot render the metrics.", NULL, 0);
        }
        return http_respond(conn, MHD_HTTP_OK, metrics_content_type(format), body, size, NULL, 0);
}

/* MHD_OPTION_URI_LOG_CALLBACK: the request's URI as it came, before libmicrohttpd decodes its query,
 * kept as the request's state (freed in request_completed()) for pprof-request.c's strict reading. */
static void *request_started(void *cls, const char *uri, struct MHD_Connection *conn) {
        return strdup(uri ?: "");
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                enum MHD_RequestTerminationCode toe) {
        free(*req_cls);
        *req_cls = NULL;
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *conn, const char *url,
                const char *method, const char *version, const char *upload_data, size_t *upload_data_size,
                void **req_cls) {
        Exporter *x = cls;
        const char *raw = *req_cls, *query = raw ? strchr(raw, '?') : NULL;

        /* A GET has no body: answer at once rather than on a second call. */
        if (startswith(url, "/debug/pprof"))
                return pprof_server_handle(x->pprof, conn, method, url, query ? query + 1 : NULL);
        if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
                return http_respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "Only GET and HEAD.", NULL, 0);
        if (streq(url, "/"))
                return http_respond_text(conn, MHD_HTTP_OK, "memstrack-metrics: the metrics are at /metrics, "
                                         "profiles at /debug/pprof/.", NULL, 0);
        if (!streq(url, "/metrics"))
                return http_respond_text(conn, MHD_HTTP_NOT_FOUND, "Not found: the metrics are at /metrics, "
                                         "profiles at /debug/pprof/.", NULL, 0);
        return serve_metrics(x, conn);
}

static void help(void) {
        printf("memstrack-metrics [OPTIONS...]\n\n"
               "Serves memstrackd's counters as OpenMetrics / Prometheus text at /metrics, and pprof profiles\n"
               "at /debug/pprof/ (heap, allocs, slab, userheap), on the listening socket systemd passes\n"
               "(memstrackd-metrics.socket); it opens none itself.\n\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "     --address=ADDR  memstrackd's socket (default " MEMSTRACK_SOCKET_DEFAULT ")\n"
               "     --top=N         Tasks and units listed by name (in metrics and profile labels),\n"
               "                     the rest summed as [other]\n"
               "                     (1..%d, default %d)\n"
               "\nSee memstrack-metrics(8).\n", METRICS_TOP_MAX, METRICS_TOP_DEFAULT);
}

/* 0 to go on, else an exit status (help, version: 0 after printing; usage errors: 2) + 1000. */
static int parse_argv(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_ADDRESS, ARG_TOP };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "top", required_argument, NULL, ARG_TOP },
                {}
        };
        uint64_t n;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 1000;
                case ARG_VERSION:
                        printf("memstrack-metrics %s\n", PACKAGE_VERSION);
                        return 1000;
                case ARG_ADDRESS:
                        if (!optarg[0]) {
                                fprintf(stderr, "--address needs a socket path.\n");
                                return 1002;
                        }
                        arg_address = optarg;
                        break;
                case ARG_TOP:
                        if (parse_uint64(optarg, 1, METRICS_TOP_MAX, &n) < 0) {
                                fprintf(stderr, "Invalid --top '%s': expected 1..%d.\n", optarg, METRICS_TOP_MAX);
                                return 1002;
                        }
                        arg_top = (size_t) n;
                        break;
                default:
                        return 1002;
                }
        if (optind < argc) {
                fprintf(stderr, "Unexpected argument '%s'.\n", argv[optind]);
                return 1002;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        Exporter x = { .metrics_lock = PTHREAD_MUTEX_INITIALIZER };
        struct MHD_Daemon *httpd;
        sigset_t mask;
        int n, sig, r;

        r = parse_argv(argc, argv);
        if (r > 0)
                return r - 1000;

        n = sd_listen_fds(true);
        if (n < 0) {
                fprintf(stderr, SD_ERR "Cannot read the sockets passed: %s\n", strerror(-n));
                return EXIT_FAILURE;
        }
        if (n != 1) {
                fprintf(stderr, SD_ERR "Expected one listening socket from systemd, got %d: start memstrack-metrics "
                        "through memstrackd-metrics.socket (or systemd-socket-activate --listen=ADDRESS).\n", n);
                return 2;
        }
        r = sd_is_socket(SD_LISTEN_FDS_START, 0, SOCK_STREAM, 1);
        if (r <= 0) {
                fprintf(stderr, SD_ERR "The socket passed is not a listening stream socket.\n");
                return 2;
        }

        /* Blocked before the HTTP thread starts, so it inherits the mask and the signals come here. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
                fprintf(stderr, SD_ERR "Cannot set up signals: %m\n");
                return EXIT_FAILURE;
        }

        /* One malloc arena for all the connection threads: they build one profile at a time, and what one
         * freed is then what the next reuses, instead of an arena per thread each at its own high mark. */
        (void) mallopt(M_ARENA_MAX, 1);
        r = pprof_server_new(arg_address, arg_top, &x.pprof);
        if (r < 0) {
                fprintf(stderr, SD_ERR "Cannot set up the profile server: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
                                 0, NULL, NULL, handle_request, &x,
                                 MHD_OPTION_LISTEN_SOCKET, (MHD_socket) SD_LISTEN_FDS_START,
                                 /* A slow or idle client must not hold a slot. */
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned) CONNECTION_LIMIT,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 30,
                                 MHD_OPTION_THREAD_STACK_SIZE, (size_t) THREAD_STACK_BYTES,
                                 MHD_OPTION_URI_LOG_CALLBACK, request_started, NULL,
                                 MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
                                 MHD_OPTION_END);
        if (!httpd) {
                fprintf(stderr, SD_ERR "Cannot start the HTTP server on the socket passed.\n");
                pprof_server_free(x.pprof);
                return EXIT_FAILURE;
        }
        (void) sd_notify(false, "READY=1");

        for (;;) {
                r = sigwait(&mask, &sig);
                if (r == 0 && sig != SIGHUP)
                        break;
        }
        (void) sd_notify(false, "STOPPING=1");
        /* Deltas and queued requests end first: stopping waits for every connection's thread. */
        pprof_server_stop(x.pprof);
        MHD_stop_daemon(httpd);
        pprof_server_free(x.pprof);
        return EXIT_SUCCESS;
}
