/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "macro.h"
#include "varlink-test-service.h"
#include "varlink.h"

/* A Stream call in progress, driven by a timer until its last reply or the client leaving. */
struct TestStream {
        TestService *service;
        TestStream *prev, *next;
        VarlinkCall *call;
        sd_event_source *timer;
        int64_t index, count, burst;
        uint64_t interval_usec;
};

static TestStream *stream_free(TestStream *st) {
        if (!st)
                return NULL;
        if (st->prev)
                st->prev->next = st->next;
        else if (st->service->streams == st)
                st->service->streams = st->next;
        if (st->next)
                st->next->prev = st->prev;
        sd_event_source_disable_unref(st->timer);
        free(st);
        return NULL;
}

static void stream_disconnected(VarlinkCall *call, void *userdata) {
        TestStream *st = userdata;

        st->service->streams_aborted++;
        stream_free(st);
}

static int stream_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        TestStream *st = userdata;
        int r = 0;

        for (int64_t i = 0; i < st->burst; i++) {
                json_auto_t *p = json_pack("{s:I, s:I}", "index", (json_int_t) st->index, "count",
                                (json_int_t) st->count);

                if (!p)
                        return -ENOMEM;
                if (st->index + 1 >= st->count) {
                        TestService *t = st->service;

                        r = varlink_call_reply(st->call, p);
                        if (r >= 0) {
                                t->streams_completed++;
                                stream_free(st);
                                return 0;
                        }
                        break;
                }
                r = varlink_call_reply_more(st->call, p);
                if (r < 0)
                        break;
                st->index++;
        }
        if (r < 0) {
                /* The connection is going: the disconnect handler frees us. */
                (void) sd_event_source_set_enabled(source, SD_EVENT_OFF);
                return 0;
        }
        (void) sd_event_source_set_time(source, usec + st->interval_usec);
        return 0;
}

static int method_stream(VarlinkCall *call, json_t *parameters, void *userdata) {
        TestService *t = userdata;
        int64_t count = varlink_call_parameter_int(call, "count", 0);
        int64_t interval = varlink_call_parameter_int(call, "intervalUsec", 0);
        int64_t burst = varlink_call_parameter_int(call, "burst", 1);
        TestStream *st;
        uint64_t now;
        int r;

        /* The ranges the interface file cannot say. */
        if (count < 1 || count > INT32_MAX)
                return varlink_call_error_invalid_parameter(call, "count");
        if (interval < 0 || interval > 60 * 1000000LL)
                return varlink_call_error_invalid_parameter(call, "intervalUsec");
        if (burst < 1 || burst > 100000)
                return varlink_call_error_invalid_parameter(call, "burst");

        if (!varlink_call_wants_more(call) || count == 1) {
                json_auto_t *p = json_pack("{s:i, s:I}", "index", 0, "count", (json_int_t) count);

                if (!p)
                        return -ENOMEM;
                r = varlink_call_reply(call, p);
                if (r >= 0)
                        t->streams_completed++;
                return r;
        }

        st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        *st = (TestStream) {
                .service = t,
                .call = call,
                .count = count,
                .burst = burst,
                .interval_usec = (uint64_t) interval,
                .next = t->streams,
        };
        if (st->next)
                st->next->prev = st;
        t->streams = st;

        r = sd_event_now(t->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(t->event, &st->timer, CLOCK_MONOTONIC, now, 0, stream_timer, st);
        if (r < 0) {
                stream_free(st);
                return r;
        }
        (void) sd_event_source_set_enabled(st->timer, SD_EVENT_ON);
        varlink_call_set_disconnect_handler(call, stream_disconnected, st);
        return 0;
}

static int method_echo(VarlinkCall *call, json_t *parameters, void *userdata) {
        json_auto_t *reply = NULL;

        reply = json_pack("{s:s, s:I, s:b}", "text", varlink_call_parameter_string(call, "text"), "uid",
                        (json_int_t) varlink_call_get_peer_uid(call), "isRoot", varlink_call_peer_is_root(call));
        if (!reply)
                return -ENOMEM;
        /* Optional members are echoed only when given, as a "?type" field should be. */
        if (varlink_call_has_parameter(call, "number") &&
            json_object_set_new(reply, "number", json_integer(varlink_call_parameter_int(call, "number", 0))) < 0)
                return -ENOMEM;
        if (varlink_call_has_parameter(call, "flag") &&
            json_object_set_new(reply, "flag", json_boolean(varlink_call_parameter_bool(call, "flag", false))) < 0)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_fail(VarlinkCall *call, json_t *parameters, void *userdata) {
        json_auto_t *e = json_pack("{s:I}", "pid", (json_int_t) varlink_call_parameter_int(call, "pid", 0));

        if (!e)
                return -ENOMEM;
        return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_TASK, e);
}

static int method_big(VarlinkCall *call, json_t *parameters, void *userdata) {
        int64_t bytes = varlink_call_parameter_int(call, "bytes", 0);
        _cleanup_free_ char *data = NULL;
        json_auto_t *reply = NULL;

        if (bytes < 0 || bytes > 64 * 1024 * 1024)
                return varlink_call_error_invalid_parameter(call, "bytes");
        data = malloc((size_t) bytes + 1);
        if (!data)
                return -ENOMEM;
        memset(data, 'x', (size_t) bytes);
        data[bytes] = '\0';
        reply = json_pack("{s:s}", "data", data);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_stats(VarlinkCall *call, json_t *parameters, void *userdata) {
        TestService *t = userdata;
        json_auto_t *reply = NULL;

        reply = json_pack("{s:I, s:I, s:I}",
                        "connections", (json_int_t) (t->server ? varlink_server_n_connections(t->server) : 0),
                        "streamsCompleted", (json_int_t) t->streams_completed,
                        "streamsAborted", (json_int_t) t->streams_aborted);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_root_only(VarlinkCall *call, json_t *parameters, void *userdata) {
        return varlink_call_reply(call, NULL);
}

static const VarlinkInterface test_interfaces[] = {
        { .name = "io.memstrack.test", .description = varlink_interface_io_memstrack_test,
          .signature = &varlink_signature_io_memstrack_test },
};

static const VarlinkMethod test_methods[] = {
        { .name = "io.memstrack.test.Echo", .handler = method_echo },
        { .name = "io.memstrack.test.Stream", .handler = method_stream },
        { .name = "io.memstrack.test.Fail", .handler = method_fail },
        { .name = "io.memstrack.test.Big", .handler = method_big },
        { .name = "io.memstrack.test.Stats", .handler = method_stats },
        { .name = "io.memstrack.test.RootOnly", .handler = method_root_only, .flags = VARLINK_METHOD_ROOT_ONLY },
};

void test_service_fill_config(TestService *t, VarlinkServerConfig *cfg) {
        assert(t);
        assert(cfg);

        cfg->interfaces = test_interfaces;
        cfg->n_interfaces = ELEMENTSOF(test_interfaces);
        cfg->methods = test_methods;
        cfg->n_methods = ELEMENTSOF(test_methods);
        cfg->userdata = t;
        /* The test interface declares none of its own: it borrows io.memstrack's, as the tests expect. */
        cfg->errors = (VarlinkServerErrors) {
                .permission_denied = MEMSTRACK_ERROR_PERMISSION_DENIED,
                .too_many_connections = MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS,
                .limit_exceeded = MEMSTRACK_ERROR_LIMIT_EXCEEDED,
                .internal = MEMSTRACK_ERROR_INTERNAL,
        };
}
