/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include <jansson.h>

#include "list.h"
#include "log.h"
#include "macro.h"
#include "varlink-server.h"
#include "varlink.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* Work done per event-loop iteration, so one busy client cannot stall ingestion or other clients: one
 * message per connection (a call can be a big query), then the loop polls again and the owner's more
 * urgent sources (a smaller priority value) run first. */
#define PROCESS_BUDGET 1U
#define ACCEPT_BUDGET 16U
#define ACCEPT_RETRY_USEC (1U * 1000000U)
/* Output buffer kept allocated between replies; bigger ones are freed once sent. */
#define OUTPUT_KEEP_BYTES (256U * 1024U)
/* After a big reply (its JSON tree, text and buffer freed by now), the allocator is asked to return
 * free memory to the kernel this much later, once for a burst of replies: glibc keeps freed heap
 * memory, and a burst of StackTree replies left the daemon's RSS hundreds of MB above what it uses. */
#define TRIM_DELAY_USEC (1U * 1000000U)
#define TRIM_REPLY_BYTES (64U * 1024U)
/* Deadlines are checked this precisely; sd-event may merge wakeups within it. */
#define DEADLINE_ACCURACY_USEC (10U * 1000U)

typedef struct Connection Connection;

struct VarlinkCall {
        Connection *connection;
        char *method;
        json_t *parameters;
        VarlinkCallFlags flags;
        const VarlinkMethodSignature *signature; /* what the interface file declares of its parameters */
        /* The final message was queued but the call is kept until its connection goes (a stream
         * cut short by a limit): the owner still holds the pointer until its disconnect handler. */
        bool finished;
        VarlinkCallDisconnectHandler disconnect_handler;
        void *disconnect_userdata;
};

struct Connection {
        VarlinkServer *server;
        Connection *prev, *next;        /* VarlinkServer.connections: owned by the server */

        int fd;
        sd_event_source *io_source;
        sd_event_source *defer_source;  /* resumes work outside of handlers, frees dead connections */
        sd_event_source *timer_source;  /* the earliest deadline, see connection_deadline() */
        uint32_t io_events;

        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool allowed;
        bool is_root;

        VarlinkFramer *framer;
        char *out;                      /* queued output: [out_start, out_end) */
        size_t out_start, out_end, out_alloc;

        VarlinkCall *call;              /* the one call in progress, owned */
        bool backlog;                   /* budget ran out with messages left in the framer */
        bool read_eof;
        bool close_after_flush;
        bool dead;                      /* freed at the next safe point; no more I/O */
        bool had_message;               /* a complete message arrived: no longer a silent connection */

        /* CLOCK_MONOTONIC; the deadlines in VarlinkServerConfig run from these. */
        uint64_t accept_usec;
        uint64_t request_usec;          /* bytes of a message not handled yet arrived since; 0: none */
        uint64_t idle_usec;             /* the last complete message arrived or the last call ended */
        uint64_t output_usec;           /* output is queued without a break since; 0: queue empty */
};

struct VarlinkServer {
        sd_event *event;
        VarlinkServerConfig cfg;        /* string members point at the copies below */
        char *socket_path;              /* bound path, NULL when socket-activated */
        char *group;
        char *vendor, *product, *version, *url;
        gid_t gid;
        bool have_gid;

        int listen_fd;
        sd_event_source *listen_source;
        sd_event_source *accept_retry_source;

        Connection *connections;        /* newest first */
        unsigned n_connections;
        size_t output_bytes;            /* sum of the connections' out_alloc */
        sd_event_source *trim_source;   /* owned: malloc_trim() after big replies */
};

static void connection_schedule(Connection *c);

/* ---- Calls ------------------------------------------------------------------------------------------ */

static VarlinkCall *call_free(VarlinkCall *call) {
        if (!call)
                return NULL;
        free(call->method);
        json_decref(call->parameters);
        free(call);
        return NULL;
}

const char *varlink_call_get_method(const VarlinkCall *call) {
        assert(call);
        return call->method;
}

bool varlink_call_wants_more(const VarlinkCall *call) {
        assert(call);
        return call->flags & VARLINK_CALL_MORE;
}

bool varlink_call_is_oneway(const VarlinkCall *call) {
        assert(call);
        return call->flags & VARLINK_CALL_ONEWAY;
}

bool varlink_call_peer_is_root(const VarlinkCall *call) {
        assert(call);
        return call->connection->is_root;
}

uid_t varlink_call_get_peer_uid(const VarlinkCall *call) {
        assert(call);
        return call->connection->uid;
}

pid_t varlink_call_get_peer_pid(const VarlinkCall *call) {
        assert(call);
        return call->connection->pid;
}

void *varlink_call_get_userdata(const VarlinkCall *call) {
        assert(call);
        return call->connection->server->cfg.userdata;
}

size_t varlink_call_output_pending(const VarlinkCall *call) {
        assert(call);
        return call->connection->out_end - call->connection->out_start;
}

void varlink_call_set_disconnect_handler(VarlinkCall *call, VarlinkCallDisconnectHandler handler,
                void *userdata) {
        assert(call);
        call->disconnect_handler = handler;
        call->disconnect_userdata = userdata;
}

/* ---- Connections: output ---------------------------------------------------------------------------- */

static uint64_t server_now(VarlinkServer *s) {
        uint64_t now = 0;

        (void) sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        return now;
}

/* Frees the output buffer now: a dropped connection's backlog must not count against the others. */
static void connection_drop_output(Connection *c) {
        c->server->output_bytes -= c->out_alloc;
        free(c->out);
        c->out = NULL;
        c->out_start = c->out_end = c->out_alloc = 0;
        c->output_usec = 0;
}

static void connection_kill(Connection *c, const char *why) {
        if (c->dead)
                return;
        log_debug("varlink: dropping connection of uid %u pid %d: %s", (unsigned) c->uid, (int) c->pid, why);
        c->dead = true;
        connection_drop_output(c);
        connection_schedule(c);
}

static size_t connection_pending_output(const Connection *c) {
        return c->out_end - c->out_start;
}

/*
 * Makes room for extra more bytes of output buffers on c within max_total_output_bytes, by dropping
 * the connections with the most unread output, c included (counting want, what it is about to queue).
 * The clients that do not read lose their connection, the others keep theirs. 0, or -ECONNRESET when c
 * itself was dropped.
 */
static int server_make_output_room(VarlinkServer *s, Connection *c, size_t extra, size_t want) {
        while (s->output_bytes + extra > s->cfg.max_total_output_bytes) {
                Connection *victim = c;
                size_t most = connection_pending_output(c) + want;

                for (Connection *d = s->connections; d; d = d->next)
                        if (!d->dead && d != c && connection_pending_output(d) > most) {
                                victim = d;
                                most = connection_pending_output(d);
                        }
                log_debug("varlink: %zu bytes of output queued for all clients, over the %zu byte budget",
                                s->output_bytes + extra, s->cfg.max_total_output_bytes);
                connection_kill(victim, "total output budget exceeded, client has the most unread output");
                if (victim == c)
                        return -ECONNRESET;
        }
        return 0;
}

/* Queues one serialized message. Over the output limit the client is not reading: drop it. */
static int connection_enqueue(Connection *c, const char *text, size_t size) {
        size_t pending = c->out_end - c->out_start;

        if (c->dead)
                return -ECONNRESET;
        if (size > c->server->cfg.max_output_bytes - MIN(pending, c->server->cfg.max_output_bytes)) {
                connection_kill(c, "output limit reached, client does not read");
                return -ECONNRESET;
        }

        if (c->out_alloc - c->out_end < size) {
                size_t need, n;
                char *p;
                int r;

                /* Compact first: the bytes before out_start are sent. */
                if (c->out_start > 0) {
                        memmove(c->out, c->out + c->out_start, pending);
                        c->out_start = 0;
                        c->out_end = pending;
                }
                need = c->out_end + size;
                if (need > c->out_alloc) {
                        n = MAX(c->out_alloc, (size_t) 4096);
                        while (n < need)
                                n *= 2;
                        r = server_make_output_room(c->server, c, n - c->out_alloc, size);
                        if (r < 0)
                                return r;
                        p = realloc(c->out, n);
                        if (!p) {
                                connection_kill(c, "out of memory");
                                return -ENOMEM;
                        }
                        c->server->output_bytes += n - c->out_alloc;
                        c->out = p;
                        c->out_alloc = n;
                }
        }
        if (pending == 0)
                c->output_usec = server_now(c->server);
        memcpy(c->out + c->out_end, text, size);
        c->out_end += size;
        return 0;
}

/* Serializes a message for c (NUL included); a message that cannot be built or serialized ends c. */
static int connection_serialize(Connection *c, json_t *message, char **ret_text, size_t *ret_size) {
        if (!message) {
                connection_kill(c, "out of memory");
                return -ENOMEM;
        }
        int r = varlink_message_serialize(message, ret_text, ret_size);
        if (r < 0)
                connection_kill(c, "cannot serialize reply");
        return r;
}

static int connection_enqueue_json(Connection *c, json_t *message) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = connection_serialize(c, message, &text, &size);
        if (r < 0)
                return r;
        return connection_enqueue(c, text, size);
}

static int server_trim_handler(sd_event_source *source, uint64_t usec, void *userdata) {
#ifdef __GLIBC__
        /* Returns free heap pages to the kernel: what big replies left behind. */
        (void) malloc_trim(0);
#endif
        return 0;
}

static void server_schedule_trim(VarlinkServer *s) {
        uint64_t when = server_now(s) + TRIM_DELAY_USEC;
        int enabled = SD_EVENT_OFF, r;

        if (s->trim_source) {
                (void) sd_event_source_get_enabled(s->trim_source, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return; /* one trim for the whole burst */
                r = sd_event_source_set_time(s->trim_source, when);
                if (r >= 0)
                        r = sd_event_source_set_enabled(s->trim_source, SD_EVENT_ONESHOT);
        } else {
                r = sd_event_add_time(s->event, &s->trim_source, CLOCK_MONOTONIC, when, TRIM_DELAY_USEC / 4,
                                server_trim_handler, s);
                if (r >= 0) {
                        (void) sd_event_source_set_description(s->trim_source, "varlink-trim");
                        r = sd_event_source_set_priority(s->trim_source, s->cfg.priority);
                }
        }
        if (r < 0)
                log_debug_errno(r, "varlink: cannot schedule giving memory back, ignoring: %m");
}

static void connection_flush(Connection *c) {
        while (!c->dead && c->out_start < c->out_end) {
                ssize_t n = send(c->fd, c->out + c->out_start, c->out_end - c->out_start,
                                MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                connection_kill(c, "send failed");
                        break;
                }
                c->out_start += (size_t) n;
        }
        if (c->out_start == c->out_end) {
                c->out_start = c->out_end = 0;
                c->output_usec = 0;
                /* One big reply must not pin its buffer for the rest of a long-lived connection. */
                if (c->out_alloc > OUTPUT_KEEP_BYTES) {
                        connection_drop_output(c);
                        server_schedule_trim(c->server);
                }
        }
}

/* Sends one message for call, or nothing for a oneway call; ends the call when final. */
static int call_send(VarlinkCall *call, const char *error, json_t *params, bool continues) {
        Connection *c = call->connection;
        size_t max = c->server->cfg.max_message_bytes;
        _cleanup_free_ char *text = NULL;
        json_auto_t *message = NULL;
        size_t size;
        int r;

        if (params && !json_is_object(params))
                return -EINVAL;
        if (c->dead || call->finished)
                return -ECONNRESET;

        if (!(call->flags & VARLINK_CALL_ONEWAY)) {
                message = error ? varlink_reply_new_error(error, params) : varlink_reply_new(params, continues);
                r = connection_serialize(c, message, &text, &size);
                if (r < 0)
                        return r;
                if (size >= TRIM_REPLY_BYTES)
                        server_schedule_trim(c->server);

                if (size - 1 > max) {
                        json_auto_t *e = NULL;

                        /* Clients cut at the same limit: say why instead of sending what they drop. */
                        log_debug("varlink: reply to %s is %zu bytes, over the %zu byte limit",
                                        call->method, size - 1, max);
                        e = json_pack("{s:s, s:I}", "limit", "messageSize", "value", varlink_count(max));
                        json_decref(message);
                        message = varlink_reply_new_error(c->server->cfg.errors.limit_exceeded, e);
                        r = connection_enqueue_json(c, message);
                        if (r < 0)
                                return r;
                        if (continues) {
                                /* The owner still streams into this call: keep it until the
                                 * connection goes, which tells the owner via its handler. */
                                call->finished = true;
                                c->close_after_flush = true;
                                connection_schedule(c);
                                return -EMSGSIZE;
                        }
                        goto finish;
                }

                r = connection_enqueue(c, text, size);
                if (r < 0)
                        return r;
        }

        if (continues) {
                connection_schedule(c);
                return 0;
        }

finish:
        c->call = NULL;
        call_free(call);
        /* The next pipelined call can be read now: messages already buffered first (backlog), so the
         * input buffer never holds more than one unfinished message plus one read. Their deadline, like
         * the idle one, runs from now: they waited for this call. */
        c->backlog = true;
        c->idle_usec = server_now(c->server);
        if (c->request_usec != 0)
                c->request_usec = c->idle_usec;
        connection_schedule(c);
        return 0;
}

int varlink_call_reply(VarlinkCall *call, json_t *params) {
        assert(call);
        return call_send(call, NULL, params, false);
}

int varlink_call_reply_more(VarlinkCall *call, json_t *params) {
        assert(call);
        if (!(call->flags & VARLINK_CALL_MORE))
                return -EINVAL;
        return call_send(call, NULL, params, true);
}

int varlink_call_error(VarlinkCall *call, const char *error, json_t *params) {
        assert(call);
        assert(error);
        return call_send(call, error, params, false);
}

int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *parameter) {
        json_auto_t *p = varlink_error_parameters_invalid_parameter(parameter);

        assert(call);
        if (!p)
                return -ENOMEM;
        return varlink_call_error(call, VARLINK_ERROR_INVALID_PARAMETER, p);
}

/* An error for a message that never became a call (it could not be parsed far enough). */
static void connection_reply_error(Connection *c, const char *error, json_t *params) {
        json_auto_t *message = varlink_reply_new_error(error, params);

        (void) connection_enqueue_json(c, message);
}

/* ---- Connections: lifetime -------------------------------------------------------------------------- */

static Connection *connection_free(Connection *c) {
        VarlinkServer *s;

        if (!c)
                return NULL;
        s = c->server;
        c->dead = true;

        if (c->call) {
                VarlinkCall *call = TAKE_PTR(c->call);

                if (call->disconnect_handler)
                        call->disconnect_handler(call, call->disconnect_userdata);
                call_free(call);
        }

        LIST_REMOVE(s->connections, c);
        s->n_connections--;

        sd_event_source_disable_unref(c->io_source);
        sd_event_source_disable_unref(c->defer_source);
        sd_event_source_disable_unref(c->timer_source);
        safe_close(c->fd);
        varlink_framer_free(c->framer);
        connection_drop_output(c);
        free(c);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Connection *, connection_free);

static bool connection_wants_input(const Connection *c) {
        return !c->dead && !c->call && !c->read_eof && !c->close_after_flush && !c->backlog;
}

static void connection_update_events(Connection *c) {
        uint32_t events = 0;
        int r;

        if (connection_wants_input(c))
                events |= EPOLLIN;
        if (c->out_end > c->out_start)
                events |= EPOLLOUT;
        if (events == c->io_events)
                return;
        r = sd_event_source_set_io_events(c->io_source, events);
        if (r < 0) {
                connection_kill(c, "cannot update I/O events");
                return;
        }
        c->io_events = events;
}

static void connection_schedule(Connection *c) {
        if (!c->defer_source)
                return; /* still being set up: server_add_connection() fails or finishes it */
        if (sd_event_source_set_enabled(c->defer_source, SD_EVENT_ONESHOT) < 0)
                /* Without the defer source nothing would resume this connection: give up on it. */
                c->dead = true;
}

static void connection_read(Connection *c) {
        void *buf;
        size_t size;
        ssize_t n;
        int r;

        r = varlink_framer_get_space(c->framer, &buf, &size);
        if (r == -EMSGSIZE) {
                connection_kill(c, "message over the size limit");
                return;
        }
        if (r < 0) {
                connection_kill(c, "out of memory");
                return;
        }

        n = recv(c->fd, buf, size, MSG_DONTWAIT);
        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        connection_kill(c, "recv failed");
                return;
        }
        if (n == 0) {
                c->read_eof = true;
                return;
        }
        varlink_framer_commit(c->framer, (size_t) n);
        /* Reads happen only with no complete message buffered: these bytes start a message, or go on
         * with one that started earlier (request_usec set then). */
        if (c->request_usec == 0)
                c->request_usec = server_now(c->server);
}

/* ---- Dispatch --------------------------------------------------------------------------------------- */

static const VarlinkInterface *server_find_interface(VarlinkServer *s, const char *name) {
        for (size_t i = 0; i < s->cfg.n_interfaces; i++)
                if (streq(s->cfg.interfaces[i].name, name))
                        return s->cfg.interfaces + i;
        return NULL;
}

static const VarlinkMethod *server_find_method(VarlinkServer *s, const char *name) {
        for (size_t i = 0; i < s->cfg.n_methods; i++)
                if (streq(s->cfg.methods[i].name, name))
                        return s->cfg.methods + i;
        return NULL;
}

static int builtin_get_info(VarlinkCall *call, json_t *parameters, void *userdata) {
        VarlinkServer *s = call->connection->server;
        json_auto_t *reply = NULL, *ifaces = NULL;

        ifaces = json_array();
        if (!ifaces || json_array_append_new(ifaces, json_string(VARLINK_SERVICE_INTERFACE)) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->cfg.n_interfaces; i++)
                if (json_array_append_new(ifaces, json_string(s->cfg.interfaces[i].name)) < 0)
                        return -ENOMEM;

        reply = json_pack("{s:s, s:s, s:s, s:s, s:O}",
                        "vendor", s->vendor, "product", s->product, "version", s->version, "url", s->url,
                        "interfaces", ifaces);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int builtin_get_interface_description(VarlinkCall *call, json_t *parameters, void *userdata) {
        VarlinkServer *s = call->connection->server;
        const char *name = varlink_call_parameter_string(call, "interface"), *text;
        const VarlinkInterface *iface;
        json_auto_t *reply = NULL;

        if (streq(name, VARLINK_SERVICE_INTERFACE))
                text = varlink_interface_org_varlink_service;
        else {
                iface = server_find_interface(s, name);
                if (!iface) {
                        json_auto_t *e = json_pack("{s:s}", "interface", name);

                        return e ? varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND, e) : -ENOMEM;
                }
                text = iface->description;
        }

        reply = json_pack("{s:s}", "description", text);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int call_error_name(VarlinkCall *call, const char *error, const char *key, const char *value) {
        json_auto_t *e = json_pack("{s:s}", key, value);

        if (!e)
                return -ENOMEM;
        return varlink_call_error(call, error, e);
}

static const VarlinkMethod builtin_methods[] = {
        { VARLINK_SERVICE_INTERFACE ".GetInfo", builtin_get_info, 0 },
        { VARLINK_SERVICE_INTERFACE ".GetInterfaceDescription", builtin_get_interface_description, 0 },
};

/* The one way into every method: its parameters checked against what its interface file declares
 * (InvalidParameter naming the first one that is wrong), the owner's before_call, the handler, and the
 * owner's reply_errno for a failure the handler left unanswered. */
static int call_run(VarlinkCall *call, const VarlinkMethodSignature *signature, const VarlinkMethod *method,
                bool builtin) {
        Connection *c = call->connection;
        VarlinkServer *s = c->server;
        const char *bad = NULL;
        int r;

        if ((method->flags & VARLINK_METHOD_ROOT_ONLY) && !c->is_root)
                return call_error_name(call, s->cfg.errors.permission_denied, "reason",
                                "this method is for root only");
        if (varlink_parameters_check(call->parameters, signature, &bad) < 0)
                return varlink_call_error_invalid_parameter(call, bad);
        call->signature = signature;
        if (builtin)
                return method->handler(call, call->parameters, NULL);

        if (s->cfg.before_call)
                s->cfg.before_call(s->cfg.userdata);
        r = method->handler(call, call->parameters, s->cfg.userdata);
        /* Still unanswered (an answer clears c->call): the owner's errors before the internal one. */
        if (r < 0 && s->cfg.reply_errno && c->call == call && !call->finished && !c->dead)
                return s->cfg.reply_errno(call, r, s->cfg.userdata);
        return r;
}

static int connection_run_call(Connection *c, VarlinkCall *call) {
        VarlinkServer *s = c->server;
        _cleanup_free_ char *iface_name = NULL;
        const VarlinkMethodSignature *signature;
        const VarlinkInterface *iface;
        const VarlinkMethod *method;
        const char *member;
        int r;

        if (call->flags & VARLINK_CALL_UPGRADE)
                return varlink_call_error_invalid_parameter(call, "upgrade");

        r = varlink_method_name_split(call->method, &iface_name, &member);
        if (r < 0)
                return r;

        if (streq(iface_name, VARLINK_SERVICE_INTERFACE)) {
                signature = varlink_signature_find(&varlink_signature_org_varlink_service, call->method);
                for (size_t i = 0; signature && i < ELEMENTSOF(builtin_methods); i++)
                        if (streq(builtin_methods[i].name, call->method))
                                return call_run(call, signature, builtin_methods + i, true);
                return call_error_name(call, VARLINK_ERROR_METHOD_NOT_FOUND, "method", call->method);
        }

        iface = server_find_interface(s, iface_name);
        if (!iface)
                return call_error_name(call, VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", iface_name);

        /* varlink_server_new() made sure the interface file declares every method served. */
        signature = varlink_signature_find(iface->signature, call->method);
        method = server_find_method(s, call->method);
        if (!method || !method->handler)
                return call_error_name(call, signature ? VARLINK_ERROR_METHOD_NOT_IMPLEMENTED :
                                       VARLINK_ERROR_METHOD_NOT_FOUND, "method", call->method);
        assert(signature);
        return call_run(call, signature, method, false);
}

/* ---- Parameters, as checked against the interface file --------------------------------------------- */

/* The parameter's value, NULL when absent or null; asserts that the method declares it of this kind, so
 * that a misspelt name fails every test that reaches it instead of reading as "absent". */
static json_t *call_parameter(VarlinkCall *call, const char *name, VarlinkTypeKind kind) {
        assert(call->signature);
        const VarlinkType *t = varlink_method_parameter_type(call->signature, name);
        assert(t);
        if (t->kind == VARLINK_TYPE_REF)
                t = t->element;
        assert(t->kind == kind || (kind == VARLINK_TYPE_STRING && t->kind == VARLINK_TYPE_ENUM) ||
               (kind == _VARLINK_TYPE_KIND_MAX));
        json_t *v = json_object_get(call->parameters, name);
        return json_is_null(v) ? NULL : v;
}

bool varlink_call_declares_parameter(const VarlinkCall *call, const char *name) {
        return call->signature && varlink_method_parameter_type(call->signature, name);
}

bool varlink_call_has_parameter(VarlinkCall *call, const char *name) {
        return call_parameter(call, name, _VARLINK_TYPE_KIND_MAX);
}

json_t *varlink_call_parameter_json(VarlinkCall *call, const char *name) {
        return call_parameter(call, name, _VARLINK_TYPE_KIND_MAX);
}

int64_t varlink_call_parameter_int(VarlinkCall *call, const char *name, int64_t absent) {
        json_t *v = call_parameter(call, name, VARLINK_TYPE_INT);
        return v ? (int64_t) json_integer_value(v) : absent;
}

bool varlink_call_parameter_bool(VarlinkCall *call, const char *name, bool absent) {
        json_t *v = call_parameter(call, name, VARLINK_TYPE_BOOL);
        return v ? json_is_true(v) : absent;
}

const char *varlink_call_parameter_string(VarlinkCall *call, const char *name) {
        return json_string_value(call_parameter(call, name, VARLINK_TYPE_STRING));
}

static void connection_handle_message(Connection *c, const char *text, size_t size) {
        _cleanup_free_ char *bad = NULL;
        VarlinkCallMessage m = {};
        VarlinkCallFlags flags = 0;
        VarlinkCall *call;
        int r;

        r = varlink_call_parse(text, size, &m, &bad, &flags);
        if (r == -EBADMSG) {
                /* Not even a JSON object: the stream cannot be trusted, answer nothing more. */
                log_debug("varlink: malformed message from uid %u, closing", (unsigned) c->uid);
                c->close_after_flush = true;
                return;
        }
        if (r == -ENOMEM) {
                connection_kill(c, "out of memory");
                return;
        }

        if (!c->allowed) {
                json_auto_t *e = NULL;

                /* The first call of a refused peer gets the reason (unless it asked for no reply), then
                 * the connection ends. */
                if (!((r < 0 ? flags : m.flags) & VARLINK_CALL_ONEWAY)) {
                        e = json_pack("{s:s}", "reason", "not root and not in the allowed group");
                        connection_reply_error(c, c->server->cfg.errors.permission_denied, e);
                }
                c->close_after_flush = true;
                varlink_call_message_done(&m);
                return;
        }

        if (r < 0) {
                json_auto_t *e = NULL;

                /* A JSON object with a bad member: answer like for a bad parameter and go on. */
                if (!(flags & VARLINK_CALL_ONEWAY)) {
                        e = varlink_error_parameters_invalid_parameter(bad);
                        connection_reply_error(c, VARLINK_ERROR_INVALID_PARAMETER, e);
                }
                return;
        }

        call = calloc(1, sizeof(*call));
        if (!call) {
                varlink_call_message_done(&m);
                connection_kill(c, "out of memory");
                return;
        }
        *call = (VarlinkCall) {
                .connection = c,
                .method = TAKE_PTR(m.method),
                .parameters = TAKE_PTR(m.parameters),
                .flags = m.flags,
        };
        c->call = call;

        r = connection_run_call(c, call);
        /* c->call is cleared by the final reply, and no other call can start meanwhile: if it still
         * points at this call, the handler failed without answering. */
        if (r < 0 && c->call == call && !call->finished && !c->dead) {
                json_auto_t *e = json_pack("{s:i, s:s}", "errno", -r, "message", strerror(-r));

                log_debug("varlink: %s failed: %s", call->method, strerror(-r));
                if (!e || varlink_call_error(call, c->server->cfg.errors.internal, e) < 0)
                        connection_kill(c, "cannot send error reply");
        }
}

static void connection_process(Connection *c) {
        for (unsigned budget = PROCESS_BUDGET;; budget--) {
                const char *text;
                size_t size;
                int r;

                if (c->dead || c->call || c->close_after_flush)
                        return;
                if (budget == 0) {
                        /* Let other sources run; the defer source brings us back. */
                        c->backlog = true;
                        connection_schedule(c);
                        return;
                }

                r = varlink_framer_next(c->framer, &text, &size);
                if (r < 0) {
                        connection_kill(c, "message over the size limit");
                        return;
                }
                if (r == 0) {
                        c->backlog = false;
                        if (c->read_eof)
                                c->close_after_flush = true;
                        return;
                }
                c->had_message = true;
                c->idle_usec = server_now(c->server);
                /* What follows in the buffer is the next message, started now as far as we know. */
                c->request_usec = varlink_framer_pending(c->framer) > 0 ? c->idle_usec : 0;
                connection_handle_message(c, text, size);
        }
}

static uint64_t usec_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The earliest deadline of c (UINT64_MAX: none), and in *ret_why the rule that sets it. */
static uint64_t connection_deadline(const Connection *c, const char **ret_why) {
        const VarlinkServerConfig *cfg = &c->server->cfg;
        uint64_t best = UINT64_MAX, d;
        const char *why = NULL;

        if (!c->had_message) {
                d = usec_add(c->accept_usec, cfg->first_message_timeout_usec);
                if (d < best) {
                        best = d;
                        why = "no complete message in time after connecting";
                }
        }
        /* While a call is open nothing more is read: buffered bytes wait for it, not for the client. */
        if (c->request_usec != 0 && !c->call) {
                d = usec_add(c->request_usec, cfg->request_timeout_usec);
                if (d < best) {
                        best = d;
                        why = "message not completed in time";
                }
        }
        if (c->had_message && !c->call && c->request_usec == 0 && c->output_usec == 0) {
                d = usec_add(c->idle_usec, cfg->idle_timeout_usec);
                if (d < best) {
                        best = d;
                        why = "idle timeout";
                }
        }
        if (c->output_usec != 0) {
                d = usec_add(c->output_usec, cfg->output_timeout_usec);
                if (d < best) {
                        best = d;
                        why = "output not read in time";
                }
        }
        if (ret_why)
                *ret_why = why;
        return best;
}

static void connection_update_timer(Connection *c) {
        uint64_t deadline = connection_deadline(c, NULL);
        int r;

        if (deadline == UINT64_MAX)
                r = sd_event_source_set_enabled(c->timer_source, SD_EVENT_OFF);
        else {
                r = sd_event_source_set_time(c->timer_source, deadline);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->timer_source, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                connection_kill(c, "cannot arm the deadline timer");
}

/* The single exit of every event handler of a connection: does the pending work, then frees the
 * connection if it is done. Never called from inside a method handler. */
static void connection_dispatch(Connection *c) {
        if (!c->dead) {
                connection_process(c);
                connection_flush(c);
        }
        if (!c->dead && c->close_after_flush && c->out_start == c->out_end && (!c->call || c->call->finished))
                c->dead = true;
        if (!c->dead)
                connection_update_events(c);
        if (!c->dead)
                connection_update_timer(c);
        if (c->dead)
                connection_free(c);
}

static int connection_io_handler(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Connection *c = userdata;

        if (revents & EPOLLOUT)
                connection_flush(c);

        if ((revents & (EPOLLHUP | EPOLLERR)) && !connection_wants_input(c))
                /* Gone while a call is in progress or replies are pending: nobody to answer. */
                connection_kill(c, "peer hung up");
        else if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && connection_wants_input(c))
                connection_read(c);

        connection_dispatch(c);
        return 0;
}

static int connection_defer_handler(sd_event_source *source, void *userdata) {
        connection_dispatch(userdata);
        return 0;
}

static int connection_timer_handler(sd_event_source *source, uint64_t usec, void *userdata) {
        Connection *c = userdata;
        const char *why = NULL;

        if (usec >= connection_deadline(c, &why))
                connection_kill(c, why);
        /* Re-armed (or freed) there. */
        connection_dispatch(c);
        return 0;
}

/* ---- Access control --------------------------------------------------------------------------------- */

/* Supplementary groups from /proc, for kernels without SO_PEERGROUPS. */
static bool proc_groups_contain(pid_t pid, gid_t gid) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char path[64];
        size_t n = 0;

        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        while (getline(&line, &n, f) > 0) {
                char *p, *end;

                if (strncmp(line, "Groups:", 7) != 0)
                        continue;
                for (p = line + 7;; p = end) {
                        unsigned long v;

                        errno = 0;
                        v = strtoul(p, &end, 10);
                        if (end == p || errno != 0)
                                return false;
                        if (v == (unsigned long) gid)
                                return true;
                }
        }
        return false;
}

static bool peer_in_group(int fd, const struct ucred *cred, gid_t gid) {
        _cleanup_free_ gid_t *groups = NULL;
        socklen_t len = 64 * sizeof(gid_t);

        if (cred->gid == gid)
                return true;

        /* The groups the peer had when it connected, straight from the kernel. */
        for (;;) {
                gid_t *p = realloc(groups, len);

                if (!p)
                        return false;
                groups = p;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) >= 0)
                        break;
                if (errno == ERANGE)
                        continue; /* len now holds the size needed */
                if (errno == ENOPROTOOPT)
                        return proc_groups_contain(cred->pid, gid);
                return false;
        }
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                if (groups[i] == gid)
                        return true;
        return false;
}

/* ---- Accepting -------------------------------------------------------------------------------------- */

/* Frees the connections that are only waiting for their defer source to do it: their slots are free.
 * Only called from the listening socket's handler, where no connection's handler is running. */
static void server_reap(VarlinkServer *s) {
        Connection *next;

        for (Connection *c = s->connections; c; c = next) {
                next = c->next;
                if (c->dead)
                        connection_free(c);
        }
}

static unsigned server_connections_of_uid(VarlinkServer *s, uid_t uid) {
        unsigned n = 0;

        for (Connection *c = s->connections; c; c = c->next)
                n += c->uid == uid;
        return n;
}

/* The oldest connection (of uid, unless any_uid) that has not sent a complete message yet, or NULL. */
static Connection *server_oldest_silent(VarlinkServer *s, bool any_uid, uid_t uid) {
        Connection *found = NULL;

        /* Newest first: the last match is the oldest. */
        for (Connection *c = s->connections; c; c = c->next)
                if (!c->had_message && (any_uid || c->uid == uid))
                        found = c;
        return found;
}

/* Tells a peer why it is turned away, best effort: one error reply on a fresh socket always fits its
 * buffer, and nothing is waited for. */
static void send_too_many_connections(VarlinkServer *s, int fd, const char *reason) {
        json_auto_t *p = json_pack("{s:s}", "reason", reason);
        json_auto_t *message = p ? varlink_reply_new_error(s->cfg.errors.too_many_connections, p) : NULL;
        _cleanup_free_ char *text = NULL;
        size_t size;

        if (!message || varlink_message_serialize(message, &text, &size) < 0)
                return;
        (void) send(fd, text, size, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Makes a silent connection give its slot to a newcomer: connections that sent nothing are the
 * cheapest to lose (a client that connected and then waits for nothing is not a client). */
static void server_evict(VarlinkServer *s, Connection *victim, const char *reason) {
        log_debug("varlink: evicting silent connection of uid %u pid %d: %s", (unsigned) victim->uid,
                        (int) victim->pid, reason);
        send_too_many_connections(s, victim->fd, reason);
        connection_free(victim);
}

/*
 * Finds a slot for a peer of uid: a free one within its limits, else one freed by evicting the oldest
 * silent connection (of the same uid for the per-uid limit). Root may use the reserved slots and is
 * not limited per uid. Returns 0, or -EBUSY after telling the peer why.
 */
static int server_find_slot(VarlinkServer *s, int fd, uid_t uid) {
        unsigned limit = s->cfg.max_connections;
        char reason[128];
        Connection *victim;

        if (uid != 0)
                limit -= MIN(limit - 1, VARLINK_SERVER_ROOT_RESERVED_CONNECTIONS);

        if (uid != 0 && server_connections_of_uid(s, uid) >= s->cfg.max_connections_per_uid) {
                victim = server_oldest_silent(s, false, uid);
                if (!victim) {
                        (void) snprintf(reason, sizeof(reason), "uid %u has %u connections open, the limit",
                                        (unsigned) uid, s->cfg.max_connections_per_uid);
                        log_debug("varlink: refusing a connection: %s", reason);
                        send_too_many_connections(s, fd, reason);
                        return -EBUSY;
                }
                server_evict(s, victim, "a newer connection of the same user needs the slot");
        }
        if (s->n_connections >= limit) {
                victim = server_oldest_silent(s, true, 0);
                if (!victim) {
                        (void) snprintf(reason, sizeof(reason), "%u connections open, the limit%s",
                                        s->n_connections, uid != 0 ? " for users other than root" : "");
                        log_debug("varlink: refusing a connection of uid %u: %s", (unsigned) uid, reason);
                        send_too_many_connections(s, fd, reason);
                        return -EBUSY;
                }
                server_evict(s, victim, "the server is full and a new connection needs the slot");
        }
        return 0;
}

/* Takes fd in all cases. */
static int server_add_connection(VarlinkServer *s, int fd) {
        _cleanup_(connection_freep) Connection *c = NULL;
        _cleanup_close_ int cfd = fd;
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        int r;

        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return log_debug_errno(errno, "varlink: SO_PEERCRED failed, dropping connection: %m");

        server_reap(s);
        if (server_find_slot(s, cfd, cred.uid) < 0)
                return 0;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (Connection) {
                .server = s,
                .fd = TAKE_FD(cfd),
                .uid = cred.uid,
                .gid = cred.gid,
                .pid = cred.pid,
                .is_root = cred.uid == 0,
                .io_events = EPOLLIN,
                .accept_usec = server_now(s),
        };
        c->allowed = c->is_root || (s->have_gid && peer_in_group(c->fd, &cred, s->gid));

        /* Linked first so that connection_free() can undo everything below. */
        LIST_PREPEND(s->connections, c);
        s->n_connections++;

        r = varlink_framer_new(s->cfg.max_request_bytes, &c->framer);
        if (r < 0)
                return r;
        r = sd_event_add_io(s->event, &c->io_source, c->fd, EPOLLIN, connection_io_handler, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->io_source, "varlink-connection");
        r = sd_event_source_set_priority(c->io_source, s->cfg.priority);
        if (r < 0)
                return r;
        r = sd_event_add_defer(s->event, &c->defer_source, connection_defer_handler, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->defer_source, "varlink-connection-defer");
        r = sd_event_source_set_priority(c->defer_source, s->cfg.priority);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(c->defer_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        r = sd_event_add_time(s->event, &c->timer_source, CLOCK_MONOTONIC, c->accept_usec, DEADLINE_ACCURACY_USEC,
                        connection_timer_handler, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->timer_source, "varlink-connection-deadline");
        r = sd_event_source_set_priority(c->timer_source, s->cfg.priority);
        if (r < 0)
                return r;
        connection_update_timer(c);
        if (c->dead) {
                r = -ENOMEM;
                return r;
        }

        log_debug("varlink: connection from uid %u pid %d (%s)", (unsigned) c->uid, (int) c->pid,
                        c->allowed ? "allowed" : "refused");
        /* The server's list owns it now. */
        TAKE_PTR(c);
        return 0;
}

static int server_accept_retry_handler(sd_event_source *source, uint64_t usec, void *userdata) {
        VarlinkServer *s = userdata;

        (void) sd_event_source_set_enabled(s->listen_source, SD_EVENT_ON);
        return 0;
}

/* Out of fds or memory: the listening socket stays readable, so pause it instead of spinning. */
static void server_pause_accept(VarlinkServer *s) {
        uint64_t when = server_now(s) + ACCEPT_RETRY_USEC;
        int r;

        r = sd_event_source_set_enabled(s->listen_source, SD_EVENT_OFF);
        if (r < 0)
                return;
        if (!s->accept_retry_source) {
                r = sd_event_add_time(s->event, &s->accept_retry_source, CLOCK_MONOTONIC, when, 0,
                                server_accept_retry_handler, s);
                if (r < 0)
                        goto fail;
                (void) sd_event_source_set_description(s->accept_retry_source, "varlink-accept-retry");
                (void) sd_event_source_set_priority(s->accept_retry_source, s->cfg.priority);
        } else {
                r = sd_event_source_set_time(s->accept_retry_source, when);
                if (r < 0)
                        goto fail;
        }
        r = sd_event_source_set_enabled(s->accept_retry_source, SD_EVENT_ONESHOT);
        if (r < 0)
                goto fail;
        return;
fail:
        /* Better to spin than to stop accepting for good. */
        (void) sd_event_source_set_enabled(s->listen_source, SD_EVENT_ON);
}

static int server_listen_handler(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        VarlinkServer *s = userdata;

        for (unsigned i = 0; i < ACCEPT_BUDGET; i++) {
                int cfd, r;

                cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EAGAIN)
                                break;
                        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                                continue; /* that one connection failed, not the socket */
                        log_warning_errno(errno, "varlink: accept() failed, pausing for a second: %m");
                        server_pause_accept(s);
                        break;
                }
                r = server_add_connection(s, cfd);
                if (r == -ENOMEM) {
                        log_oom();
                        server_pause_accept(s);
                        break;
                }
        }
        return 0;
}

/* ---- Setup ------------------------------------------------------------------------------------------ */

static int server_resolve_group(VarlinkServer *s) {
        _cleanup_free_ char *buf = NULL;
        struct group grp, *result = NULL;
        long m = sysconf(_SC_GETGR_R_SIZE_MAX);
        size_t n = m > 0 ? (size_t) m : 4096;
        int r;

        if (s->group[0] == '\0')
                return 0;
        for (;;) {
                char *p = realloc(buf, n);

                if (!p)
                        return -ENOMEM;
                buf = p;
                r = getgrnam_r(s->group, &grp, buf, n, &result);
                if (r != ERANGE)
                        break;
                if (n > 1024U * 1024U)
                        return -ERANGE;
                n *= 2;
        }
        if (r != 0)
                return log_debug_errno(r, "varlink: cannot look up group %s: %m", s->group);
        if (!result) {
                log_notice("varlink: group %s does not exist, only root may connect", s->group);
                return 0;
        }
        s->gid = result->gr_gid;
        s->have_gid = true;
        return 0;
}

static int sockaddr_from_path(const char *path, struct sockaddr_un *ret, socklen_t *ret_len) {
        size_t n = strlen(path);

        if (n == 0 || path[0] != '/')
                return -EINVAL;
        if (n >= sizeof(ret->sun_path))
                return -ENAMETOOLONG;
        *ret = (struct sockaddr_un) { .sun_family = AF_UNIX };
        memcpy(ret->sun_path, path, n);
        *ret_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);
        return 0;
}

/* Creates the socket's directory 0755 if missing; an existing one must be a real directory. */
static int ensure_parent_dir(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        struct stat st;
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = '\0';

        if (mkdir(dir, 0755) >= 0) {
                /* The umask may have taken bits away: clients need to traverse it. */
                if (chmod(dir, 0755) < 0)
                        return log_debug_errno(errno, "varlink: cannot chmod %s: %m", dir);
                return 0;
        }
        if (errno != EEXIST)
                return log_debug_errno(errno, "varlink: cannot create %s: %m", dir);
        if (lstat(dir, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return log_debug_errno(ENOTDIR, "varlink: %s exists and is not a directory", dir);
        return 0;
}

/* A socket file left by a daemon that died is replaced; a live one is not. */
static int remove_stale_socket(const char *path, const struct sockaddr_un *sa, socklen_t len) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (!S_ISSOCK(st.st_mode))
                return log_debug_errno(EEXIST, "varlink: %s exists and is not a socket, not replacing it", path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (const struct sockaddr *) sa, len) >= 0)
                return log_debug_errno(EADDRINUSE, "varlink: another server is listening on %s", path);
        if (errno != ECONNREFUSED && errno != ENOENT)
                return log_debug_errno(errno, "varlink: cannot probe %s: %m", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return log_debug_errno(errno, "varlink: cannot remove stale socket %s: %m", path);
        log_debug("varlink: replaced stale socket %s", path);
        return 0;
}

static int server_bind(VarlinkServer *s, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa;
        socklen_t len;
        mode_t old_umask;
        int r;

        r = sockaddr_from_path(path, &sa, &len);
        if (r < 0)
                return log_debug_errno(r, "varlink: invalid socket path %s", path);
        r = ensure_parent_dir(path);
        if (r < 0)
                return r;
        r = remove_stale_socket(path, &sa, len);
        if (r < 0)
                return r;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();

        /* The umask makes the socket appear with its final mode: no window where others can connect. */
        old_umask = umask(~(mode_t) s->cfg.socket_mode & 0777);
        r = bind(fd, (const struct sockaddr *) &sa, len);
        (void) umask(old_umask);
        if (r < 0)
                return log_debug_errno(errno, "varlink: cannot bind %s: %m", path);

        s->socket_path = strdup(path);
        if (!s->socket_path) {
                (void) unlink(path);
                return -ENOMEM;
        }
        if (chmod(path, s->cfg.socket_mode) < 0)
                return log_debug_errno(errno, "varlink: cannot chmod %s: %m", path);
        if (s->have_gid && chown(path, (uid_t) -1, s->gid) < 0)
                /* Without root the group cannot be set; the mode still protects the socket. */
                log_debug_errno(errno, "varlink: cannot give %s to group %s, ignoring: %m", path, s->group);

        if (listen(fd, SOMAXCONN) < 0)
                return log_debug_errno(errno, "varlink: cannot listen on %s: %m", path);

        s->listen_fd = TAKE_FD(fd);
        return 0;
}

static int server_listen(VarlinkServer *s) {
        int n, r, fd = -EBADF;

        /* The others passed beside ours are other listeners' (the heap source's datagram-like socket). */
        n = sd_listen_fds(true);
        if (n < 0)
                return log_debug_errno(n, "varlink: cannot read LISTEN_FDS: %m");
        for (int i = SD_LISTEN_FDS_START; i < SD_LISTEN_FDS_START + n; i++) {
                r = sd_is_socket_unix(i, SOCK_STREAM, 1, NULL, 0);
                if (r < 0)
                        return log_debug_errno(r, "varlink: cannot inspect the passed socket: %m");
                if (r == 0)
                        continue;
                if (fd >= 0)
                        return log_debug_errno(EINVAL, "varlink: more than one stream socket passed, expected one");
                fd = i;
        }
        if (n > 0 && fd < 0)
                return log_debug_errno(EINVAL, "varlink: no listening AF_UNIX stream socket among the %d passed", n);
        if (fd >= 0) {
                int flags;

                flags = fcntl(fd, F_GETFL);
                if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                        return negative_errno();
                s->listen_fd = fd;
                log_debug("varlink: using the socket-activated fd");
                return 0;
        }

        if (!s->cfg.socket_path)
                return log_debug_errno(EINVAL, "varlink: no socket path and no socket-activated fd");
        return server_bind(s, s->cfg.socket_path);
}

static char *strdup_or(const char *s, const char *fallback) {
        return strdup(s ? s : fallback);
}

VarlinkServer *varlink_server_free(VarlinkServer *s) {
        if (!s)
                return NULL;

        while (s->connections)
                connection_free(s->connections);

        sd_event_source_disable_unref(s->listen_source);
        sd_event_source_disable_unref(s->accept_retry_source);
        sd_event_source_disable_unref(s->trim_source);
        safe_close(s->listen_fd);
        if (s->socket_path)
                (void) unlink(s->socket_path);
        free(s->socket_path);
        free(s->group);
        free(s->vendor);
        free(s->product);
        free(s->version);
        free(s->url);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

int varlink_server_new(sd_event *e, const VarlinkServerConfig *cfg, VarlinkServer **ret) {
        _cleanup_(varlink_server_freep) VarlinkServer *s = NULL;
        int r;

        assert(e);
        assert(cfg);
        assert(ret);
        assert(cfg->interfaces || cfg->n_interfaces == 0);
        assert(cfg->methods || cfg->n_methods == 0);

        for (size_t i = 0; i < cfg->n_interfaces; i++)
                if (!varlink_interface_name_is_valid(cfg->interfaces[i].name) || !cfg->interfaces[i].description)
                        return -EINVAL;
        /* The errors the server sends on its own belong to the caller's interface. */
        const char *const error_names[] = { cfg->errors.permission_denied, cfg->errors.too_many_connections,
                                            cfg->errors.limit_exceeded, cfg->errors.internal };
        for (size_t i = 0; i < ELEMENTSOF(error_names); i++)
                if (!error_names[i] || !varlink_method_name_is_valid(error_names[i]))
                        return -EINVAL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->listen_fd = -EBADF;
        s->event = sd_event_ref(e);
        s->cfg = *cfg;

        /* Every method served is declared by its interface's file, whose types check its calls. */
        for (size_t i = 0; i < cfg->n_methods; i++) {
                _cleanup_free_ char *iface_name = NULL;
                const VarlinkInterface *iface;
                const char *member;

                if (!varlink_method_name_is_valid(cfg->methods[i].name) ||
                    varlink_method_name_split(cfg->methods[i].name, &iface_name, &member) < 0)
                        return -EINVAL;
                iface = server_find_interface(s, iface_name);
                if (!iface || !varlink_signature_find(iface->signature, cfg->methods[i].name))
                        return -EINVAL;
        }

        if (s->cfg.socket_mode == 0)
                s->cfg.socket_mode = VARLINK_SERVER_SOCKET_MODE_DEFAULT;
        if (s->cfg.max_message_bytes == 0)
                s->cfg.max_message_bytes = VARLINK_MESSAGE_SIZE_MAX_DEFAULT;
        if (s->cfg.max_connections == 0)
                s->cfg.max_connections = VARLINK_SERVER_MAX_CONNECTIONS_DEFAULT;
        if (s->cfg.max_connections_per_uid == 0)
                s->cfg.max_connections_per_uid = VARLINK_SERVER_MAX_CONNECTIONS_PER_UID_DEFAULT;
        if (s->cfg.max_output_bytes == 0)
                s->cfg.max_output_bytes = VARLINK_SERVER_MAX_OUTPUT_BYTES_DEFAULT;
        if (s->cfg.max_request_bytes == 0)
                s->cfg.max_request_bytes = VARLINK_SERVER_MAX_REQUEST_BYTES_DEFAULT;
        if (s->cfg.max_total_output_bytes == 0)
                s->cfg.max_total_output_bytes = VARLINK_SERVER_MAX_TOTAL_OUTPUT_BYTES_DEFAULT;
        if (s->cfg.first_message_timeout_usec == 0)
                s->cfg.first_message_timeout_usec = VARLINK_SERVER_FIRST_MESSAGE_TIMEOUT_USEC_DEFAULT;
        if (s->cfg.request_timeout_usec == 0)
                s->cfg.request_timeout_usec = VARLINK_SERVER_REQUEST_TIMEOUT_USEC_DEFAULT;
        if (s->cfg.idle_timeout_usec == 0)
                s->cfg.idle_timeout_usec = VARLINK_SERVER_IDLE_TIMEOUT_USEC_DEFAULT;
        if (s->cfg.output_timeout_usec == 0)
                s->cfg.output_timeout_usec = VARLINK_SERVER_OUTPUT_TIMEOUT_USEC_DEFAULT;

        s->group = strdup_or(cfg->group, "");
        s->vendor = strdup_or(cfg->vendor, "");
        s->product = strdup_or(cfg->product, "");
        s->version = strdup_or(cfg->version, "");
        s->url = strdup_or(cfg->url, "");
        if (!s->group || !s->vendor || !s->product || !s->version || !s->url)
                return -ENOMEM;
        /* Borrowed copies would dangle: the config's strings belong to the caller. */
        s->cfg.group = s->group;
        s->cfg.socket_path = NULL;
        s->cfg.vendor = s->cfg.product = s->cfg.version = s->cfg.url = NULL;

        r = server_resolve_group(s);
        if (r < 0)
                return r;

        s->cfg.socket_path = cfg->socket_path;
        r = server_listen(s);
        s->cfg.socket_path = NULL;
        if (r < 0)
                return r;

        r = sd_event_add_io(e, &s->listen_source, s->listen_fd, EPOLLIN, server_listen_handler, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->listen_source, "varlink-listen");
        r = sd_event_source_set_priority(s->listen_source, s->cfg.priority);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

unsigned varlink_server_n_connections(const VarlinkServer *s) {
        assert(s);
        return s->n_connections;
}

size_t varlink_server_output_bytes(const VarlinkServer *s) {
        assert(s);
        return s->output_bytes;
}

const char *varlink_server_get_socket_path(const VarlinkServer *s) {
        assert(s);
        return s->socket_path;
}
