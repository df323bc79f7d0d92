/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include <jansson.h>

#include "http-reply.h"
#include "macro.h"
#include "pprof-render.h"
#include "pprof-request.h"
#include "pprof-serve.h"
#include "time-util.h"
#include "varlink.h"

/* memstrackd's answer for a profile: well inside a scraper's timeout (Parca's and Alloy's default 10 s
 * is for the whole scrape, a profile of a million pages takes a tenth of a second). */
#define CALL_TIMEOUT_USEC (8ULL * 1000000ULL)
/* Heap trees: whole stacks, the frames that hold at least a millionth of their heap. */
#define HEAP_MAX_DEPTH 255
#define HEAP_MAX_CHILDREN 1000
#define HEAP_MIN_PPM 1

struct PprofServer {
        const char *address;            /* borrowed */
        size_t top;

        pthread_mutex_t lock;           /* guards what follows */
        pthread_cond_t changed;         /* the slot freed, or stopping */
        bool building;                  /* a request holds the slot: it asks memstrackd and builds */
        unsigned waiting;               /* requests waiting for the slot */
        bool delta;                     /* a delta is being taken */
        uint64_t delta_end_usec;        /* CLOCK_MONOTONIC: when it will have its second profile */
        bool stopping;
        bool failing;                   /* the last request failed for memstrackd: logged once */
};

/* A refusal: the status and its one-line reason (owned), and Retry-After for 429. */
typedef struct Refusal {
        unsigned status;
        char *reason;
        unsigned retry_after;
} Refusal;

static void refusal_done(Refusal *f) {
        free(f->reason);
}

static int refuse(Refusal *f, unsigned status, const char *format, ...) _printf_(3, 4);
static int refuse(Refusal *f, unsigned status, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&f->reason, format, ap);
        va_end(ap);
        if (r < 0) {
                f->reason = NULL;
                return -ENOMEM;
        }
        f->status = status;
        return -EAGAIN;
}

int pprof_server_new(const char *address, size_t top, PprofServer **ret) {
        _cleanup_free_ PprofServer *s = calloc(1, sizeof(PprofServer));
        pthread_condattr_t attr;
        int r;

        if (!s)
                return -ENOMEM;
        s->address = address;
        s->top = top;
        r = pthread_condattr_init(&attr);
        if (r != 0)
                return -r;
        /* Waits are measured on the monotonic clock, as now_usec() reads it. */
        r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (r == 0)
                r = pthread_cond_init(&s->changed, &attr);
        (void) pthread_condattr_destroy(&attr);
        if (r != 0)
                return -r;
        r = pthread_mutex_init(&s->lock, NULL);
        if (r != 0) {
                (void) pthread_cond_destroy(&s->changed);
                return -r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

PprofServer *pprof_server_free(PprofServer *s) {
        if (!s)
                return NULL;
        (void) pthread_mutex_destroy(&s->lock);
        (void) pthread_cond_destroy(&s->changed);
        free(s);
        return NULL;
}

void pprof_server_stop(PprofServer *s) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
}

/* Waits on s->changed until deadline_usec (CLOCK_MONOTONIC); with s->lock held. */
static void wait_until(PprofServer *s, uint64_t deadline_usec) {
        struct timespec ts = {
                .tv_sec = (time_t) (deadline_usec / USEC_PER_SEC),
                .tv_nsec = (long) (deadline_usec % USEC_PER_SEC * 1000),
        };
        (void) pthread_cond_timedwait(&s->changed, &s->lock, &ts);
}

/* Takes the slot, waiting behind at most PPROF_WAITERS_MAX others for at most PPROF_WAIT_USEC. */
static int slot_take(PprofServer *s, Refusal *f) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + PPROF_WAIT_USEC;
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (s->building && s->waiting >= PPROF_WAITERS_MAX) {
                f->retry_after = 1;
                r = refuse(f, MHD_HTTP_TOO_MANY_REQUESTS, "busy: a profile is being built and %u requests wait for "
                           "it; profiles are built one at a time", s->waiting);
                goto finish;
        }
        s->waiting++;
        while (s->building && !s->stopping && now_usec(CLOCK_MONOTONIC) < deadline)
                wait_until(s, deadline);
        s->waiting--;
        if (s->stopping)
                r = refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrack-metrics is stopping");
        else if (s->building) {
                f->retry_after = 1;
                r = refuse(f, MHD_HTTP_TOO_MANY_REQUESTS, "busy: waited %llu s for the profile being built",
                           PPROF_WAIT_USEC / USEC_PER_SEC);
        } else
                s->building = true;
finish:
        pthread_mutex_unlock(&s->lock);
        return r;
}

static void slot_give(PprofServer *s) {
        pthread_mutex_lock(&s->lock);
        s->building = false;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
}

/* The delta's own slot: one at a time, and none taken while stopping. */
static int delta_take(PprofServer *s, unsigned seconds, Refusal *f) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (s->stopping)
                r = refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrack-metrics is stopping");
        else if (s->delta) {
                uint64_t left = s->delta_end_usec > now ? s->delta_end_usec - now : 0;
                f->retry_after = (unsigned) ((left + USEC_PER_SEC - 1) / USEC_PER_SEC) + 1;
                r = refuse(f, MHD_HTTP_TOO_MANY_REQUESTS, "busy: a delta profile is being taken (one at a time), "
                           "done in about %u s", f->retry_after);
        } else {
                s->delta = true;
                s->delta_end_usec = now + (uint64_t) seconds * USEC_PER_SEC;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

static void delta_give(PprofServer *s) {
        pthread_mutex_lock(&s->lock);
        s->delta = false;
        pthread_mutex_unlock(&s->lock);
}

/* Sleeps seconds from now (the older profile is in), or until the server stops (-ECANCELED). */
static int delta_wait(PprofServer *s, unsigned seconds) {
        int r = 0;

        pthread_mutex_lock(&s->lock);
        s->delta_end_usec = now_usec(CLOCK_MONOTONIC) + (uint64_t) seconds * USEC_PER_SEC;
        while (!s->stopping && now_usec(CLOCK_MONOTONIC) < s->delta_end_usec)
                wait_until(s, s->delta_end_usec);
        if (s->stopping)
                r = -ECANCELED;
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* Logs when asking memstrackd starts or stops failing, not on every scrape. */
static void log_failing(PprofServer *s, const Refusal *f) {
        bool failing = f && f->status >= 500;

        /* A refusal of the request itself says nothing of memstrackd. */
        if (f && !failing)
                return;
        pthread_mutex_lock(&s->lock);
        if (failing && !s->failing)
                fprintf(stderr, SD_WARNING "Cannot serve profiles: %s\n", f->reason);
        else if (!failing && s->failing)
                fprintf(stderr, SD_NOTICE "Profiles are served again.\n");
        s->failing = failing;
        pthread_mutex_unlock(&s->lock);
}

static json_t *call_parameters(const PprofServer *s, const PprofRequest *q) {
        json_auto_t *p = NULL;

        if (q->endpoint == PPROF_USERHEAP)
                p = json_pack("{s:i, s:i, s:i}", "maxDepth", HEAP_MAX_DEPTH, "maxChildren", HEAP_MAX_CHILDREN,
                              "minPartsPerMillion", HEAP_MIN_PPM);
        else
                p = json_pack("{s:s, s:I}", "of", q->endpoint == PPROF_SLAB ? "slab" : "pages", "top",
                              (json_int_t) s->top);
        if (!p || (q->pid > 0 && json_object_set_new(p, "pid", json_integer(q->pid)) < 0) ||
            (q->unit && json_object_set_new(p, "unit", json_string(q->unit)) < 0) ||
            (q->module && json_object_set_new(p, "module", json_string(q->module)) < 0))
                return NULL;
        return TAKE_PTR(p);
}

/* What an error reply of memstrackd means for the request. */
static int refuse_error(Refusal *f, const char *method, const char *error, const json_t *p) {
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *reason = json_string_value(json_object_get(p, "reason"));

        if (streq(error, MEMSTRACK_ERROR_NO_SUCH_TASK))
                return refuse(f, MHD_HTTP_NOT_FOUND, "no task with pid %" JSON_INTEGER_FORMAT " %s",
                              json_integer_value(json_object_get(p, "pid")),
                              streq(method, "io.memstrack.Heap") ? "records its heap" : "is known to memstrackd");
        if (streq(error, MEMSTRACK_ERROR_NO_SUCH_UNIT))
                return refuse(f, MHD_HTTP_NOT_FOUND, "no unit named \"%s\" is known to memstrackd", name ?: "");
        if (streq(error, MEMSTRACK_ERROR_NO_SUCH_MODULE))
                return refuse(f, MHD_HTTP_NOT_FOUND, "no module named \"%s\" is known to memstrackd", name ?: "");
        if (streq(error, MEMSTRACK_ERROR_NOT_TRACING))
                return refuse(f, MHD_HTTP_NOT_FOUND, "%s", reason ?: "memstrackd does not trace what was asked for");
        if (streq(error, VARLINK_ERROR_METHOD_NOT_FOUND))
                return refuse(f, MHD_HTTP_NOT_IMPLEMENTED, "memstrackd has no %s: it is older than memstrack-metrics",
                              method);
        if (streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED) || streq(error, MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS))
                return refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrackd refuses memstrack-metrics: %s",
                              reason ?: error);
        if (streq(error, MEMSTRACK_ERROR_LIMIT_EXCEEDED))
                return refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrackd's answer is over its limit \"%s\"",
                              json_string_value(json_object_get(p, "limit")) ?: "?");
        return refuse(f, MHD_HTTP_BAD_GATEWAY, "memstrackd answered %s", error);
}

/* Asks memstrackd for the request's profile and adds it to render with scale; in the slot. */
static int fetch(PprofServer *s, const PprofRequest *q, PprofRender *render, int scale, int64_t *ret_time_nanos,
                Refusal *f) {
        const char *method = q->endpoint == PPROF_USERHEAP ? "io.memstrack.Heap" : "io.memstrack.Profile";
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        json_auto_t *parameters = call_parameters(s, q), *reply = NULL;
        int r;

        if (!parameters)
                return -ENOMEM;
        r = varlink_client_connect(s->address, &c);
        if (r >= 0)
                r = varlink_client_call(c, method, parameters, CALL_TIMEOUT_USEC, &reply, &error);
        if (r == -ENOMEM)
                return r;
        if (r == -ETIMEDOUT)
                return refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrackd at %s did not answer within %llu s",
                              s->address, CALL_TIMEOUT_USEC / USEC_PER_SEC);
        if (r < 0)
                return refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrackd cannot be reached at %s: %s", s->address,
                              strerror(-r));
        if (error)
                return refuse_error(f, method, error, reply);
        *ret_time_nanos = (int64_t) now_nsec(CLOCK_REALTIME);
        r = pprof_render_add(render, reply, scale);
        if (r == -EBADMSG)
                return refuse(f, MHD_HTTP_BAD_GATEWAY, "memstrackd's %s reply is not what memstrack-metrics reads",
                              method);
        return r;
}

static int fetch_in_slot(PprofServer *s, const PprofRequest *q, PprofRender *render, int scale,
                int64_t *ret_time_nanos, Refusal *f) {
        int r = slot_take(s, f);

        if (r < 0)
                return r;
        r = fetch(s, q, render, scale, ret_time_nanos, f);
        slot_give(s);
        return r;
}

/* What the request narrowed the profile to, for its comment; NULL: nothing. */
static char *scope_text(const PprofRequest *q) {
        char *s = NULL;

        if (q->pid > 0 && asprintf(&s, "task %" PRIi32, q->pid) < 0)
                return NULL;
        if (q->unit && asprintf(&s, "unit %s", q->unit) < 0)
                return NULL;
        if (q->module && asprintf(&s, "module %s", q->module) < 0)
                return NULL;
        return s;
}

/* The profile of q, gzipped, into *ret. */
static int take_profile(PprofServer *s, const PprofRequest *q, uint8_t **ret, size_t *ret_size, Refusal *f) {
        _cleanup_(pprof_render_freep) PprofRender *render = NULL;
        _cleanup_free_ char *scope = scope_text(q);
        int64_t before = 0, after = 0;
        int r;

        if ((q->pid > 0 || q->unit || q->module) && !scope)
                return -ENOMEM;
        r = pprof_render_new(q->endpoint, scope, &render);
        if (r < 0)
                return r;
        if (q->seconds == 0) {
                r = fetch_in_slot(s, q, render, 1, &after, f);
                if (r < 0)
                        return r;
                return pprof_render_finish(render, after, 0, ret, ret_size);
        }

        r = delta_take(s, q->seconds, f);
        if (r < 0)
                return r;
        /* The older profile is added at once: the wait holds its interned tables, not the reply. */
        r = fetch_in_slot(s, q, render, -1, &before, f);
        if (r >= 0 && delta_wait(s, q->seconds) < 0)
                r = refuse(f, MHD_HTTP_SERVICE_UNAVAILABLE, "memstrack-metrics is stopping");
        if (r >= 0)
                r = fetch_in_slot(s, q, render, 1, &after, f);
        delta_give(s);
        if (r < 0)
                return r;
        return pprof_render_finish(render, after, after - before, ret, ret_size);
}

static enum MHD_Result answer_index(struct MHD_Connection *conn, const HttpHeader *nosniff) {
        return http_respond_text(conn, MHD_HTTP_OK,
                                 "memstrack-metrics serves pprof profiles (gzipped profile.proto), as Go's "
                                 "net/http/pprof does:\n"
                                 "/debug/pprof/heap      kernel pages held now and allocated since tracing began, "
                                 "by call stack, task, unit and module\n"
                                 "/debug/pprof/allocs    the same, alloc_space shown first\n"
                                 "/debug/pprof/slab      live slab objects (memstrackd --slab)\n"
                                 "/debug/pprof/userheap  the user-space heaps memstrackd records\n"
                                 "Parameters: seconds=N (a delta over N seconds, at most 60), pid=N, unit=NAME, "
                                 "module=NAME (one of the three; userheap takes pid only), debug=0, gc=N (ignored).",
                                 nosniff, 1);
}

enum MHD_Result pprof_server_handle(PprofServer *s, struct MHD_Connection *conn, const char *method, const char *path,
                const char *query) {
        static const HttpHeader nosniff = { "X-Content-Type-Options", "nosniff" };
        _cleanup_(pprof_request_done) PprofRequest q = {};
        _cleanup_(refusal_done) Refusal f = {};
        _cleanup_free_ char *reason = NULL, *disposition = NULL;
        _cleanup_free_ uint8_t *body = NULL;
        char retry[16];
        size_t size;
        int r;

        if (streq(path, "/debug/pprof") || streq(path, "/debug/pprof/"))
                return answer_index(conn, &nosniff);
        PprofEndpoint e = pprof_endpoint_from_path(path);
        if (e < 0)
                return http_respond_text(conn, MHD_HTTP_NOT_FOUND, "unknown profile: memstrack-metrics serves "
                                         "/debug/pprof/heap, allocs, slab and userheap", &nosniff, 1);
        if (!streq(method, MHD_HTTP_METHOD_GET))
                return http_respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET",
                                         (const HttpHeader[]) { nosniff, { MHD_HTTP_HEADER_ALLOW, "GET" } }, 2);
        r = pprof_request_parse(e, query, &q, &reason);
        if (r == -EINVAL)
                return http_respond_text(conn, MHD_HTTP_BAD_REQUEST, reason,
                                         (const HttpHeader[]) { nosniff, { "X-Go-Pprof", "1" } }, 2);
        if (r >= 0) {
                r = take_profile(s, &q, &body, &size, &f);
                /* The reply and the profile's tables are freed by now: their memory goes back to the kernel,
                 * so that between scrapes the exporter holds little. */
                (void) malloc_trim(0);
        }
        if (r == -EAGAIN) {
                HttpHeader headers[3] = { nosniff, { "X-Go-Pprof", "1" } };
                size_t n = 2;
                log_failing(s, &f);
                if (f.retry_after > 0) {
                        (void) snprintf(retry, sizeof(retry), "%u", f.retry_after);
                        headers[n++] = (HttpHeader) { MHD_HTTP_HEADER_RETRY_AFTER, retry };
                }
                return http_respond_text(conn, f.status, f.reason, headers, n);
        }
        if (r < 0) {
                fprintf(stderr, SD_ERR "Cannot build the %s profile: %s\n", pprof_endpoint_to_string(e), strerror(-r));
                return http_respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot build the profile",
                                         (const HttpHeader[]) { nosniff, { "X-Go-Pprof", "1" } }, 2);
        }
        log_failing(s, NULL);
        if (asprintf(&disposition, "attachment; filename=\"%s%s\"", pprof_endpoint_to_string(e),
                     q.seconds > 0 ? "-delta" : "") < 0)
                return MHD_NO;
        const HttpHeader headers[] = { nosniff, { MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition } };
        return http_respond(conn, MHD_HTTP_OK, "application/octet-stream", TAKE_PTR(body), size, headers,
                            ELEMENTSOF(headers));
}
