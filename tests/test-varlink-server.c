/* SPDX-License-Identifier: MIT */

/*
 * Tests of daemon/varlink/varlink-server.c: a real socket in a temporary directory, the server on an sd-event
 * loop driven step by step from the test, and clients in the same process (or forked and setuid'ed for
 * the access-control cases). Waiting is always "run the loop until a condition holds", bounded.
 *
 * Without arguments: everything but access control. With "access-control": only that, as root, with a
 * group of its own that exists only while the test runs; not root, it exits 77 and says why.
 */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "log.h"
#include "macro.h"
#include "tests.h"
#include "varlink-server.h"
#include "varlink-test-service.h"
#include "varlink.h"

/* Upper bound of loop iterations for any wait; each iteration waits at most 10 ms. */
#define PUMP_MAX 20000U
#define PUMP_WAIT_USEC 10000U

typedef struct Fixture {
        sd_event *event;
        VarlinkServer *server;
        TestService service;
        char dir[64];
        char path[128];
        char address[160];
} Fixture;

static void fixture_start(Fixture *f, const VarlinkServerConfig *extra) {
        VarlinkServerConfig cfg = extra ? *extra : (VarlinkServerConfig) {};

        memset(f, 0, sizeof(*f));
        strcpy(f->dir, "/tmp/test-varlink-server-XXXXXX");
        ASSERT_NOT_NULL(mkdtemp(f->dir));
        /* Other users must reach the socket for the access-control cases. */
        ASSERT_OK(chmod(f->dir, 0755));
        (void) snprintf(f->path, sizeof(f->path), "%s/sub/io.memstrack.test", f->dir);
        (void) snprintf(f->address, sizeof(f->address), "unix:%s", f->path);

        ASSERT_OK(sd_event_new(&f->event));
        f->service.event = f->event;
        cfg.socket_path = f->path;
        if (!cfg.group)
                cfg.group = "";
        if (!cfg.socket_mode)
                cfg.socket_mode = 0666;
        cfg.vendor = "memstrack tests";
        cfg.product = "memstrackd";
        cfg.version = "1.2.3";
        test_service_fill_config(&f->service, &cfg);
        ASSERT_OK(varlink_server_new(f->event, &cfg, &f->server));
        f->service.server = f->server;
}

static void fixture_stop(Fixture *f) {
        char sub[96];

        f->server = varlink_server_free(f->server);
        /* The server removes its socket, so the directories are empty now. */
        (void) snprintf(sub, sizeof(sub), "%s/sub", f->dir);
        ASSERT_OK(rmdir(sub));
        ASSERT_OK(rmdir(f->dir));
        f->event = sd_event_unref(f->event);
}

static void pump_once(Fixture *f) {
        ASSERT_OK(sd_event_run(f->event, PUMP_WAIT_USEC));
}

static VarlinkClient *connect_client(Fixture *f) {
        VarlinkClient *c = NULL;

        ASSERT_OK(varlink_client_connect(f->address, &c));
        return c;
}

/* Runs the loop until a reply (or an error such as the server closing) is there. */
static int pump_reply(Fixture *f, VarlinkClient *c, json_t **ret_params, char **ret_error) {
        for (unsigned i = 0; i < PUMP_MAX; i++) {
                int r = varlink_client_read_reply(c, 0, ret_params, ret_error);

                if (r != -EAGAIN)
                        return r;
                pump_once(f);
        }
        fprintf(stderr, "no reply after %u loop iterations\n", PUMP_MAX);
        abort();
}

static void send_call(VarlinkClient *c, const char *method, json_t *params, VarlinkCallFlags flags) {
        /* Small calls fit the socket buffer, so this never waits for the (same-thread) server. */
        ASSERT_OK(varlink_client_send(c, method, params, flags, 0));
}

/* Sends raw bytes without blocking on the server, which runs in this thread. Returns 0, or -errno
 * when the server closed the connection first. */
static int send_raw(Fixture *f, int fd, const void *data, size_t size) {
        const char *p = data;

        for (unsigned i = 0; size > 0 && i < PUMP_MAX; i++) {
                ssize_t n = send(fd, p, size, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno != EAGAIN)
                                return -errno;
                        pump_once(f);
                        continue;
                }
                p += n;
                size -= (size_t) n;
        }
        ASSERT_EQ(size, 0);
        return 0;
}

/* One call with a reply expected: returns the parameters, checks the error name (NULL: success). */
static json_t *call_expect(Fixture *f, VarlinkClient *c, const char *method, json_t *params,
                const char *expect_error) {
        json_t *reply = NULL;
        char *error = NULL;

        send_call(c, method, params, 0);
        ASSERT_EQ(pump_reply(f, c, &reply, &error), 0);
        if (expect_error)
                ASSERT_STREQ(error, expect_error);
        else if (error) {
                fprintf(stderr, "%s failed: %s\n", method, error);
                abort();
        }
        free(error);
        return reply;
}

static void expect_echo(Fixture *f, VarlinkClient *c, const char *text) {
        json_auto_t *p = json_pack("{s:s}", "text", text);
        json_auto_t *reply = call_expect(f, c, "io.memstrack.test.Echo", p, NULL);

        ASSERT_STREQ(json_string_value(json_object_get(reply, "text")), text);
}

/* The server closed the connection: reads end with -ECONNRESET. */
static void expect_closed(Fixture *f, VarlinkClient *c) {
        json_t *p = NULL;
        char *error = NULL;

        ASSERT_EQ(pump_reply(f, c, &p, &error), -ECONNRESET);
}

static void pump_until_connections(Fixture *f, unsigned n) {
        for (unsigned i = 0; i < PUMP_MAX && varlink_server_n_connections(f->server) != n; i++)
                pump_once(f);
        ASSERT_EQ(varlink_server_n_connections(f->server), n);
}

/* The server turned the connection away: one TooManyConnections reply with a reason, then closed. */
static void expect_turned_away(Fixture *f, VarlinkClient *c) {
        json_t *p = NULL;
        char *error = NULL;

        ASSERT_EQ(pump_reply(f, c, &p, &error), 0);
        ASSERT_STREQ(error, MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS);
        ASSERT_TRUE(json_is_string(json_object_get(p, "reason")));
        json_decref(p);
        free(error);
        expect_closed(f, c);
}

/* Runs the loop for at least usec of loop time (a bound for "nothing happened", never a measurement). */
static void pump_for(Fixture *f, uint64_t usec) {
        uint64_t start = 0, now = 0;

        ASSERT_OK(sd_event_now(f->event, CLOCK_MONOTONIC, &start));
        do {
                pump_once(f);
                ASSERT_OK(sd_event_now(f->event, CLOCK_MONOTONIC, &now));
        } while (now - start < usec);
}

static void test_info_and_describe(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *info = NULL, *d1 = NULL, *d2 = NULL, *e = NULL, *p = NULL;
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);

        info = call_expect(&f, c, "org.varlink.service.GetInfo", NULL, NULL);
        ASSERT_STREQ(json_string_value(json_object_get(info, "vendor")), "memstrack tests");
        ASSERT_STREQ(json_string_value(json_object_get(info, "version")), "1.2.3");
        ASSERT_STREQ(json_string_value(json_object_get(info, "product")), "memstrackd");
        ASSERT_TRUE(json_is_string(json_object_get(info, "url")));
        ASSERT_EQ(json_array_size(json_object_get(info, "interfaces")), 2);
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(info, "interfaces"), 0)),
                        "org.varlink.service");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(info, "interfaces"), 1)),
                        "io.memstrack.test");

        /* The description is the embedded IDL, byte for byte. */
        p = json_pack("{s:s}", "interface", "io.memstrack.test");
        d1 = call_expect(&f, c, "org.varlink.service.GetInterfaceDescription", p, NULL);
        ASSERT_STREQ(json_string_value(json_object_get(d1, "description")), varlink_interface_io_memstrack_test);
        json_decref(p);
        p = json_pack("{s:s}", "interface", "org.varlink.service");
        d2 = call_expect(&f, c, "org.varlink.service.GetInterfaceDescription", p, NULL);
        ASSERT_STREQ(json_string_value(json_object_get(d2, "description")), varlink_interface_org_varlink_service);
        json_decref(p);

        p = json_pack("{s:s}", "interface", "io.nothere");
        e = call_expect(&f, c, "org.varlink.service.GetInterfaceDescription", p, VARLINK_ERROR_INTERFACE_NOT_FOUND);
        ASSERT_STREQ(json_string_value(json_object_get(e, "interface")), "io.nothere");
        json_decref(e);
        json_decref(p);
        p = json_pack("{s:i}", "interface", 1);
        e = call_expect(&f, c, "org.varlink.service.GetInterfaceDescription", p, VARLINK_ERROR_INVALID_PARAMETER);
        ASSERT_STREQ(json_string_value(json_object_get(e, "parameter")), "interface");
        json_decref(e);
        e = call_expect(&f, c, "org.varlink.service.GetInterfaceDescription", NULL, VARLINK_ERROR_INVALID_PARAMETER);
        ASSERT_STREQ(json_string_value(json_object_get(e, "parameter")), "interface");

        c = varlink_client_free(c);
        fixture_stop(&f);
}

static void expect_error_param(Fixture *f, VarlinkClient *c, const char *method, json_t *params,
                const char *error, const char *key, const char *value) {
        json_auto_t *e = call_expect(f, c, method, params, error);

        ASSERT_STREQ(json_string_value(json_object_get(e, key)), value);
}

static void test_standard_errors(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *p = NULL, *e = NULL;
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);

        expect_error_param(&f, c, "io.nothere.Foo", NULL, VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface",
                        "io.nothere");
        expect_error_param(&f, c, "io.memstrack.test.Nope", NULL, VARLINK_ERROR_METHOD_NOT_FOUND, "method",
                        "io.memstrack.test.Nope");
        expect_error_param(&f, c, "org.varlink.service.Nope", NULL, VARLINK_ERROR_METHOD_NOT_FOUND, "method",
                        "org.varlink.service.Nope");
        expect_error_param(&f, c, "io.memstrack.test.Unimplemented", NULL, VARLINK_ERROR_METHOD_NOT_IMPLEMENTED,
                        "method", "io.memstrack.test.Unimplemented");

        /* Parameters: missing, wrong type, unknown, out of range. */
        expect_error_param(&f, c, "io.memstrack.test.Echo", NULL, VARLINK_ERROR_INVALID_PARAMETER, "parameter",
                        "text");
        p = json_pack("{s:s, s:s}", "text", "a", "number", "1");
        expect_error_param(&f, c, "io.memstrack.test.Echo", p, VARLINK_ERROR_INVALID_PARAMETER, "parameter",
                        "number");
        json_decref(p);
        p = json_pack("{s:s, s:i}", "text", "a", "bogus", 1);
        expect_error_param(&f, c, "io.memstrack.test.Echo", p, VARLINK_ERROR_INVALID_PARAMETER, "parameter",
                        "bogus");
        json_decref(p);
        p = json_pack("{s:i}", "count", 0);
        expect_error_param(&f, c, "io.memstrack.test.Stream", p, VARLINK_ERROR_INVALID_PARAMETER, "parameter",
                        "count");
        json_decref(p);

        /* Our own error with its parameters. */
        p = json_pack("{s:i}", "pid", 4242);
        e = call_expect(&f, c, "io.memstrack.test.Fail", p, MEMSTRACK_ERROR_NO_SUCH_TASK);
        ASSERT_EQ(json_integer_value(json_object_get(e, "pid")), 4242);

        /* After all of that the connection still works. */
        expect_echo(&f, c, "still here");

        c = varlink_client_free(c);
        fixture_stop(&f);
}

static json_t *read_raw_reply(Fixture *f, VarlinkClient *c, char **ret_error) {
        json_t *p = NULL;

        ASSERT_EQ(pump_reply(f, c, &p, ret_error), 0);
        return p;
}

static void test_bad_call_objects(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        static const struct {
                const char *text, *parameter;
        } cases[] = {
                { "{\"method\":\"io.memstrack.test.Echo\",\"more\":1}", "more" },
                { "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":[]}", "parameters" },
                { "{\"method\":\"echo\"}", "method" },
                { "{\"method\":42}", "method" },
                { "{\"parameters\":{}}", "method" },
                { "{\"method\":\"io.memstrack.test.Echo\",\"extra\":true}", "extra" },
        };
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);

        /* A JSON object with a bad member gets InvalidParameter naming it, and the connection stays. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_auto_t *e = NULL;
                char *error = NULL;

                ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), cases[i].text, strlen(cases[i].text) + 1));
                e = read_raw_reply(&f, c, &error);
                ASSERT_STREQ(error, VARLINK_ERROR_INVALID_PARAMETER);
                ASSERT_STREQ(json_string_value(json_object_get(e, "parameter")), cases[i].parameter);
                free(error);
        }
        /* With a valid "oneway": true nothing is sent back, even for a bad member. */
        {
                static const char t[] = "{\"method\":\"io.memstrack.test.Echo\",\"oneway\":true,\"x\":1}";
                ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), t, sizeof(t)));
        }
        expect_echo(&f, c, "after bad calls");

        c = varlink_client_free(c);
        fixture_stop(&f);
}

/* A number jansson cannot hold gets InvalidParameter naming its parameter (nothing for a oneway call),
 * and the connection goes on: it is a bad parameter, not a broken stream. */
static void test_numbers_out_of_range(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        static const struct {
                const char *text, *parameter;
        } cases[] = {
                { "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":{\"text\":\"a\",\"number\":99999999999999999999999}}",
                  "number" },
                { "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":{\"number\":-99999999999999999999999,\"text\":\"a\"}}",
                  "number" },
                { "{\"method\":\"io.memstrack.test.Stream\",\"parameters\":{\"count\":1e999}}", "count" },
                { "{\"method\":\"io.memstrack.test.Echo\",\"more\":1e999}", "more" },
        };
        static const char oneway[] = "{\"method\":\"io.memstrack.test.Echo\",\"oneway\":true,"
                                     "\"parameters\":{\"text\":\"a\",\"number\":99999999999999999999999}}";
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_auto_t *e = NULL;
                char *error = NULL;

                ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), cases[i].text, strlen(cases[i].text) + 1));
                e = read_raw_reply(&f, c, &error);
                ASSERT_STREQ(error, VARLINK_ERROR_INVALID_PARAMETER);
                ASSERT_STREQ(json_string_value(json_object_get(e, "parameter")), cases[i].parameter);
                free(error);
        }
        ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), oneway, sizeof(oneway)));
        expect_echo(&f, c, "after numbers out of range");

        c = varlink_client_free(c);
        fixture_stop(&f);
}

/* Input that is not a JSON object closes that connection; another client is unaffected. */
static void test_malformed_closes(void) {
        static const char *const inputs[] = {
                "not json", "{\"method\":", "[1,2]", "{\"method\":\"a.b.C\",\"method\":\"a.b.D\"}",
                "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":{\"text\":\"\xff\"}}", "",
        };
        _cleanup_(varlink_client_freep) VarlinkClient *other = NULL;
        Fixture f;

        fixture_start(&f, NULL);
        other = connect_client(&f);
        expect_echo(&f, other, "before");

        for (size_t i = 0; i < ELEMENTSOF(inputs); i++) {
                _cleanup_(varlink_client_freep) VarlinkClient *c = connect_client(&f);

                ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), inputs[i], strlen(inputs[i]) + 1));
                expect_closed(&f, c);
        }

        expect_echo(&f, other, "after");
        other = varlink_client_free(other);
        pump_until_connections(&f, 0);
        fixture_stop(&f);
}

static void test_oneway(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "oneway");
        json_auto_t *stats = NULL;
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);

        /* Neither a success nor an error produces anything for oneway calls: the first reply the client
         * sees belongs to the normal call sent last. */
        send_call(c, "io.memstrack.test.Echo", p, VARLINK_CALL_ONEWAY);
        send_call(c, "io.memstrack.test.Nope", NULL, VARLINK_CALL_ONEWAY);
        send_call(c, "io.memstrack.test.Echo", NULL, VARLINK_CALL_ONEWAY);
        send_call(c, "io.memstrack.test.Fail", NULL, VARLINK_CALL_ONEWAY);
        /* A oneway stream (a stream nobody reads, that would hold the connection past every deadline) is
         * refused without a reply: the method does not run and the call pipelined behind is answered. */
        {
                static const char t[] = "{\"method\":\"io.memstrack.test.Stream\",\"parameters\":{\"count\":3},"
                                        "\"oneway\":true,\"more\":true}";
                ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), t, sizeof(t)));
        }
        expect_echo(&f, c, "normal");
        stats = call_expect(&f, c, "io.memstrack.test.Stats", NULL, NULL);
        ASSERT_EQ(json_integer_value(json_object_get(stats, "streamsCompleted")), 0);
        ASSERT_EQ(json_integer_value(json_object_get(stats, "streamsAborted")), 0);

        c = varlink_client_free(c);
        fixture_stop(&f);
}

static void expect_stream_reply(Fixture *f, VarlinkClient *c, int64_t index, bool continues) {
        json_auto_t *p = NULL;
        char *error = NULL;

        ASSERT_EQ(pump_reply(f, c, &p, &error), continues ? 1 : 0);
        ASSERT_NULL(error);
        ASSERT_EQ(json_integer_value(json_object_get(p, "index")), index);
}

static void test_more_stream_and_pipelining(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *s = json_pack("{s:i, s:i}", "count", 4, "intervalUsec", 1000);
        json_auto_t *a = json_pack("{s:s}", "text", "first after stream");
        json_auto_t *b = json_pack("{s:s}", "text", "second after stream");
        json_auto_t *one = json_pack("{s:i}", "count", 5);
        json_t *p = NULL;
        char *error = NULL;
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);

        /* Three calls pipelined before reading anything: the stream's replies come first, then the
         * two echoes in call order. */
        send_call(c, "io.memstrack.test.Stream", s, VARLINK_CALL_MORE);
        send_call(c, "io.memstrack.test.Echo", a, 0);
        send_call(c, "io.memstrack.test.Echo", b, 0);
        for (int i = 0; i < 4; i++)
                expect_stream_reply(&f, c, i, i < 3);
        ASSERT_EQ(pump_reply(&f, c, &p, &error), 0);
        ASSERT_STREQ(json_string_value(json_object_get(p, "text")), "first after stream");
        json_decref(p);
        ASSERT_EQ(pump_reply(&f, c, &p, &error), 0);
        ASSERT_STREQ(json_string_value(json_object_get(p, "text")), "second after stream");
        json_decref(p);

        /* Without "more" a streaming method answers once, without "continues". */
        send_call(c, "io.memstrack.test.Stream", one, 0);
        expect_stream_reply(&f, c, 0, false);

        c = varlink_client_free(c);
        fixture_stop(&f);
}

static void test_split_and_batched(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        static const char call[] = "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":{\"text\":\"bytes\"}}";
        _cleanup_free_ char *batch = NULL;
        size_t n = 0;
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);

        /* One byte per loop iteration: the server sees the call in 60-odd reads. */
        for (size_t i = 0; i < sizeof(call); i++) {
                ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), call + i, 1));
                pump_once(&f);
        }
        {
                json_auto_t *p = NULL;
                char *error = NULL;

                ASSERT_EQ(pump_reply(&f, c, &p, &error), 0);
                ASSERT_STREQ(json_string_value(json_object_get(p, "text")), "bytes");
        }

        /* 100 calls in one write: 100 replies, in order (beyond the per-iteration budget too). */
        batch = malloc(100 * 80);
        ASSERT_NOT_NULL(batch);
        for (int i = 0; i < 100; i++) {
                int k = sprintf(batch + n, "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":{\"text\":\"%d\"}}", i);
                n += (size_t) k + 1; /* sprintf's NUL is the delimiter */
        }
        ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), batch, n));
        for (int i = 0; i < 100; i++) {
                json_auto_t *p = NULL;
                char *error = NULL, want[16];

                ASSERT_EQ(pump_reply(&f, c, &p, &error), 0);
                (void) snprintf(want, sizeof(want), "%d", i);
                ASSERT_STREQ(json_string_value(json_object_get(p, "text")), want);
        }

        c = varlink_client_free(c);
        fixture_stop(&f);
}

static json_int_t stats_get(Fixture *f, const char *key) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = connect_client(f);
        json_auto_t *stats = call_expect(f, c, "io.memstrack.test.Stats", NULL, NULL);

        return json_integer_value(json_object_get(stats, key));
}

static void test_client_vanishes_mid_stream(void) {
        VarlinkClient *c = NULL;
        json_auto_t *s = json_pack("{s:i, s:i}", "count", 1000000, "intervalUsec", 1000);
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);
        send_call(c, "io.memstrack.test.Stream", s, VARLINK_CALL_MORE);
        expect_stream_reply(&f, c, 0, true);
        expect_stream_reply(&f, c, 1, true);
        c = varlink_client_free(c);

        /* The owner of the stream learns about it through the disconnect handler, once. */
        pump_until_connections(&f, 0);
        ASSERT_EQ(f.service.streams_aborted, 1);
        ASSERT_NULL(f.service.streams);
        ASSERT_EQ(stats_get(&f, "streamsCompleted"), 0);
        fixture_stop(&f);
}

static void test_output_limit(void) {
        VarlinkServerConfig cfg = { .max_output_bytes = 64 * 1024 };
        _cleanup_(varlink_client_freep) VarlinkClient *reader = NULL;
        VarlinkClient *c = NULL;
        json_auto_t *s = json_pack("{s:i, s:i}", "count", 10000000, "burst", 1000);
        Fixture f;

        fixture_start(&f, &cfg);
        reader = connect_client(&f);
        c = connect_client(&f);

        /* A client that starts a fast stream and never reads: dropped at the limit, not buffered. */
        send_call(c, "io.memstrack.test.Stream", s, VARLINK_CALL_MORE);
        for (unsigned i = 0; i < PUMP_MAX && f.service.streams_aborted == 0; i++)
                pump_once(&f);
        ASSERT_EQ(f.service.streams_aborted, 1);
        pump_until_connections(&f, 1);
        expect_echo(&f, reader, "reader still served");

        /* The client sees its connection closed after whatever got through. */
        for (unsigned i = 0; i < PUMP_MAX; i++) {
                json_t *p = NULL;
                char *error = NULL;
                int r = varlink_client_read_reply(c, 0, &p, &error);

                json_decref(p);
                free(error);
                if (r == -ECONNRESET)
                        break;
                ASSERT_TRUE(r == 1 || r == -EAGAIN);
        }
        c = varlink_client_free(c);

        /* The same for pipelined big replies. */
        c = connect_client(&f);
        expect_echo(&f, c, "accepted"); /* so the count below includes it */
        ASSERT_EQ(varlink_server_n_connections(f.server), 2);
        for (int i = 0; i < 40; i++) {
                json_auto_t *b = json_pack("{s:i}", "bytes", 32 * 1024);
                send_call(c, "io.memstrack.test.Big", b, 0);
        }
        pump_until_connections(&f, 1);
        c = varlink_client_free(c);

        reader = varlink_client_free(reader);
        fixture_stop(&f);
}

static void test_message_limit(void) {
        VarlinkServerConfig cfg = { .max_message_bytes = 4096, .max_request_bytes = 4096 };
        _cleanup_(varlink_client_freep) VarlinkClient *other = NULL;
        _cleanup_free_ char *big = malloc(8192);
        json_auto_t *b = json_pack("{s:i}", "bytes", 8192), *e = NULL;
        Fixture f;

        ASSERT_NOT_NULL(big);
        fixture_start(&f, &cfg);
        other = connect_client(&f);

        /* A reply over the limit becomes LimitExceeded; the connection goes on. */
        e = call_expect(&f, other, "io.memstrack.test.Big", b, MEMSTRACK_ERROR_LIMIT_EXCEEDED);
        ASSERT_STREQ(json_string_value(json_object_get(e, "limit")), "messageSize");
        ASSERT_EQ(json_integer_value(json_object_get(e, "value")), 4096);
        expect_echo(&f, other, "after big reply");

        /* An incoming message over the limit, without NUL or with one, ends that connection. */
        memset(big, ' ', 8192);
        for (int with_nul = 0; with_nul <= 1; with_nul++) {
                _cleanup_(varlink_client_freep) VarlinkClient *c = connect_client(&f);
                int r;

                big[0] = '{';
                big[8191] = with_nul ? '\0' : '}';
                r = send_raw(&f, varlink_client_get_fd(c), big, 8192);
                ASSERT_TRUE(r == 0 || r == -EPIPE || r == -ECONNRESET);
                expect_closed(&f, c);
        }

        expect_echo(&f, other, "other client unaffected");
        other = varlink_client_free(other);
        fixture_stop(&f);
}

static void test_connection_limit(void) {
        VarlinkServerConfig cfg = { .max_connections = 4 };
        VarlinkClient *c[4] = {};
        _cleanup_(varlink_client_freep) VarlinkClient *extra = NULL, *later = NULL;
        Fixture f;

        fixture_start(&f, &cfg);
        for (int i = 0; i < 4; i++) {
                c[i] = connect_client(&f);
                expect_echo(&f, c[i], "in");
        }
        ASSERT_EQ(varlink_server_n_connections(f.server), 4);

        /* The fifth is told why and closed: every slot holds an active client, none is evicted. */
        extra = connect_client(&f);
        expect_turned_away(&f, extra);
        ASSERT_EQ(varlink_server_n_connections(f.server), 4);

        /* A freed slot can be used again. */
        c[0] = varlink_client_free(c[0]);
        pump_until_connections(&f, 3);
        later = connect_client(&f);
        expect_echo(&f, later, "slot reused");

        for (int i = 1; i < 4; i++)
                c[i] = varlink_client_free(c[i]);
        later = varlink_client_free(later);
        fixture_stop(&f);
}

static void test_idle_timeout_and_half_close(void) {
        VarlinkServerConfig cfg = { .idle_timeout_usec = 50 * 1000 };
        _cleanup_(varlink_client_freep) VarlinkClient *idle = NULL, *half = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "half");
        json_t *r = NULL;
        char *error = NULL;
        Fixture f;

        fixture_start(&f, &cfg);
        idle = connect_client(&f);
        expect_echo(&f, idle, "then silence");
        /* Nothing more from this client: the server closes it by itself. */
        expect_closed(&f, idle);

        /* A client that shuts down its sending side still gets the replies to what it sent. */
        half = connect_client(&f);
        send_call(half, "io.memstrack.test.Echo", p, 0);
        ASSERT_OK(shutdown(varlink_client_get_fd(half), SHUT_WR));
        ASSERT_EQ(pump_reply(&f, half, &r, &error), 0);
        ASSERT_STREQ(json_string_value(json_object_get(r, "text")), "half");
        json_decref(r);
        expect_closed(&f, half);
        pump_until_connections(&f, 0);

        fixture_stop(&f);
}

static void test_socket_setup(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        VarlinkServerConfig cfg = { .group = "", .socket_mode = 0660 };
        VarlinkServer *second = NULL;
        struct stat st;
        Fixture f;
        int fd;

        fixture_start(&f, NULL);
        test_service_fill_config(&f.service, &cfg);
        ASSERT_OK(stat(f.path, &st));
        ASSERT_TRUE(S_ISSOCK(st.st_mode));
        ASSERT_EQ(st.st_mode & 0777, 0666);
        ASSERT_STREQ(varlink_server_get_socket_path(f.server), f.path);

        /* A second server on a live socket refuses to steal it. */
        cfg.socket_path = f.path;
        ASSERT_EQ(varlink_server_new(f.event, &cfg, &second), -EADDRINUSE);
        f.server = varlink_server_free(f.server);
        ASSERT_EQ(stat(f.path, &st), -1);

        /* A stale socket (its server died without removing it) is replaced. */
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ASSERT_OK(fd);
        memcpy(sa.sun_path, f.path, strlen(f.path) + 1);
        ASSERT_OK(bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
        ASSERT_OK(close(fd));
        ASSERT_OK(varlink_server_new(f.event, &cfg, &second));
        ASSERT_OK(stat(f.path, &st));
        ASSERT_EQ(st.st_mode & 0777, 0660);
        second = varlink_server_free(second);

        /* Something that is not a socket is never removed. */
        fd = open(f.path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ASSERT_OK(fd);
        ASSERT_OK(close(fd));
        ASSERT_EQ(varlink_server_new(f.event, &cfg, &second), -EEXIST);
        ASSERT_OK(unlink(f.path));

        /* Invalid configuration. */
        cfg.socket_path = "relative/path";
        ASSERT_EQ(varlink_server_new(f.event, &cfg, &second), -EINVAL);
        /* The server has no socket of its own to fall back on, nor error names of its own. */
        cfg.socket_path = NULL;
        ASSERT_EQ(varlink_server_new(f.event, &cfg, &second), -EINVAL);
        cfg.socket_path = f.path;
        cfg.errors.internal = NULL;
        ASSERT_EQ(varlink_server_new(f.event, &cfg, &second), -EINVAL);
        cfg.errors.internal = "not an error name";
        ASSERT_EQ(varlink_server_new(f.event, &cfg, &second), -EINVAL);
        ASSERT_EQ(stat(f.path, &st), -1);

        fixture_stop(&f);
}

static void test_free_with_open_stream(void) {
        VarlinkClient *c = NULL;
        json_auto_t *s = json_pack("{s:i, s:i}", "count", 1000000, "intervalUsec", 1000);
        Fixture f;

        fixture_start(&f, NULL);
        c = connect_client(&f);
        send_call(c, "io.memstrack.test.Stream", s, VARLINK_CALL_MORE);
        expect_stream_reply(&f, c, 0, true);

        /* Shutting the server down tells the stream's owner; nothing leaks (ASan checks). */
        fixture_stop(&f);
        ASSERT_EQ(f.service.streams_aborted, 1);
        ASSERT_NULL(f.service.streams);
        c = varlink_client_free(c);
}


/* ---- Hostile clients ------------------------------------------------------------------------------- */

static void test_first_message_deadline(void) {
        VarlinkServerConfig cfg = { .first_message_timeout_usec = 100 * 1000 };
        _cleanup_(varlink_client_freep) VarlinkClient *silent = NULL, *talker = NULL;
        Fixture f;

        fixture_start(&f, &cfg);
        /* Connects and sends nothing: closed by the server, not kept for 5 minutes. */
        silent = connect_client(&f);
        talker = connect_client(&f);
        expect_echo(&f, talker, "on time");
        expect_closed(&f, silent);

        /* A client that sent its first message is past this deadline for good. */
        pump_for(&f, 200 * 1000);
        expect_echo(&f, talker, "still here");
        ASSERT_EQ(varlink_server_n_connections(f.server), 1);
        talker = varlink_client_free(talker);
        silent = varlink_client_free(silent);
        fixture_stop(&f);
}

static void test_trickle(void) {
        VarlinkServerConfig cfg = { .request_timeout_usec = 100 * 1000 };
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL, *other = NULL;
        const char *call = "{\"method\":\"io.memstrack.test.Echo\",\"parameters\":{\"text\":\"";
        int r = 0;
        Fixture f;

        fixture_start(&f, &cfg);
        other = connect_client(&f);
        c = connect_client(&f);
        expect_echo(&f, c, "first call complete");

        /* Then a call a byte at a time, forever: every byte used to restart the idle timer. */
        ASSERT_OK(send_raw(&f, varlink_client_get_fd(c), call, strlen(call)));
        for (unsigned i = 0; i < PUMP_MAX && r == 0 && varlink_server_n_connections(f.server) == 2; i++) {
                r = send_raw(&f, varlink_client_get_fd(c), "x", 1);
                pump_for(&f, 5 * 1000);
        }
        ASSERT_TRUE(r == 0 || r == -EPIPE || r == -ECONNRESET);
        expect_closed(&f, c);
        pump_until_connections(&f, 1);
        expect_echo(&f, other, "others unaffected");
        other = varlink_client_free(other);
        fixture_stop(&f);
}

static void test_unread_output_deadline(void) {
        VarlinkServerConfig cfg = { .output_timeout_usec = 200 * 1000 };
        _cleanup_(varlink_client_freep) VarlinkClient *reader = NULL, *c = NULL;
        json_auto_t *s = json_pack("{s:i, s:i}", "count", 1000000, "intervalUsec", 1000);
        Fixture f;

        fixture_start(&f, &cfg);
        reader = connect_client(&f);
        c = connect_client(&f);

        /* A slow stream nobody reads: far from the 32 MiB output limit, and a call is open, so neither
         * that limit nor the idle timeout ever ended it; queued output that never drains does. */
        send_call(c, "io.memstrack.test.Stream", s, VARLINK_CALL_MORE);
        for (unsigned i = 0; i < PUMP_MAX && f.service.streams_aborted == 0; i++)
                pump_once(&f);
        ASSERT_EQ(f.service.streams_aborted, 1);
        pump_until_connections(&f, 1);
        expect_echo(&f, reader, "reader still served");
        fixture_stop(&f);
}

static void test_eviction_when_full(void) {
        VarlinkServerConfig cfg = { .max_connections = 4 };
        VarlinkClient *silent[3] = {};
        _cleanup_(varlink_client_freep) VarlinkClient *active = NULL, *late = NULL, *later = NULL;
        Fixture f;

        fixture_start(&f, &cfg);
        active = connect_client(&f);
        expect_echo(&f, active, "active");
        for (int i = 0; i < 3; i++) {
                silent[i] = connect_client(&f);
                pump_until_connections(&f, (unsigned) i + 2);
        }

        /* Full: the newcomer takes the slot of the oldest silent connection, which is told why. */
        late = connect_client(&f);
        expect_echo(&f, late, "got a slot");
        expect_turned_away(&f, silent[0]);
        ASSERT_EQ(varlink_server_n_connections(f.server), 4);

        /* Once nobody is silent, the next one is refused instead, and nobody else is disturbed. */
        expect_echo(&f, silent[1], "now active");
        expect_echo(&f, silent[2], "now active");
        later = connect_client(&f);
        expect_turned_away(&f, later);
        expect_echo(&f, active, "untouched");
        expect_echo(&f, late, "untouched");

        for (int i = 0; i < 3; i++)
                silent[i] = varlink_client_free(silent[i]);
        active = varlink_client_free(active);
        late = varlink_client_free(late);
        fixture_stop(&f);
}

static void test_refused_client_reads_the_reason(void) {
        VarlinkServerConfig cfg = { .max_connections = 1 };
        _cleanup_(varlink_client_freep) VarlinkClient *active = NULL, *refused = NULL;
        struct pollfd p = {};
        json_t *reply = NULL;
        char *error = NULL;
        Fixture f;

        fixture_start(&f, &cfg);
        active = connect_client(&f);
        expect_echo(&f, active, "active");

        /* The refusal is there before the client sends anything, and the connection is closed. */
        refused = connect_client(&f);
        p = (struct pollfd) { .fd = varlink_client_get_fd(refused), .events = POLLIN };
        for (unsigned i = 0; i < PUMP_MAX && poll(&p, 1, 0) == 0; i++)
                pump_once(&f);
        ASSERT_TRUE(p.revents & POLLIN);

        /* A client calling now cannot send (EPIPE) but still gets the reason, not "connection closed". */
        ASSERT_EQ(varlink_client_call(refused, "io.memstrack.test.Echo", NULL, 1000000, &reply, &error), 0);
        ASSERT_STREQ(error, MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS);
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(reply, "reason")), "connections open"));
        json_decref(reply);
        free(error);
        expect_echo(&f, active, "untouched");
        active = varlink_client_free(active);
        fixture_stop(&f);
}

static void test_request_size_cap(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL, *big = NULL;
        _cleanup_free_ char *text = malloc(100 * 1024);
        json_auto_t *ok = NULL;
        Fixture f;
        int r;

        ASSERT_NOT_NULL(text);
        fixture_start(&f, NULL);

        /* Near the 64 KiB limit: served. */
        memset(text, 'a', 60 * 1024);
        text[60 * 1024] = '\0';
        c = connect_client(&f);
        expect_echo(&f, c, text);

        /* Over it (where 16 MiB used to be accepted): the connection ends, without buffering it. */
        memset(text, 'b', 100 * 1024 - 1);
        text[100 * 1024 - 1] = '\0';
        ok = json_pack("{s:s}", "text", text);
        big = connect_client(&f);
        {
                _cleanup_free_ char *msg = NULL;
                size_t size;

                ASSERT_OK(varlink_call_build("io.memstrack.test.Echo", ok, 0, &msg, &size));
                r = send_raw(&f, varlink_client_get_fd(big), msg, size);
                ASSERT_TRUE(r == 0 || r == -EPIPE || r == -ECONNRESET);
        }
        expect_closed(&f, big);
        expect_echo(&f, c, "others unaffected");
        c = varlink_client_free(c);
        fixture_stop(&f);
}

static int urgent_handler(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        unsigned *runs = userdata;

        /* Never drained, like a ring that keeps filling: pending on every iteration until disabled. */
        if (++*runs >= 50)
                (void) sd_event_source_set_enabled(source, SD_EVENT_OFF);
        return 0;
}

static void test_priority(void) {
        VarlinkServerConfig cfg = { .priority = SD_EVENT_PRIORITY_NORMAL + 10 };
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(sd_event_source_unrefp) sd_event_source *urgent = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "after the urgent work");
        json_t *reply = NULL;
        char *error = NULL;
        unsigned runs = 0;
        int pipefd[2];
        Fixture f;

        fixture_start(&f, &cfg);
        c = connect_client(&f);
        expect_echo(&f, c, "warm");

        /* Owner work at a more urgent priority (draining the kernel's rings) is ready on every
         * iteration for a while: the client, ready at the same time, is answered only after it. */
        ASSERT_OK(pipe2(pipefd, O_CLOEXEC | O_NONBLOCK));
        ASSERT_EQ(write(pipefd[1], "x", 1), 1);
        send_call(c, "io.memstrack.test.Echo", p, 0);
        ASSERT_OK(sd_event_add_io(f.event, &urgent, pipefd[0], EPOLLIN, urgent_handler, &runs));
        ASSERT_OK(sd_event_source_set_priority(urgent, SD_EVENT_PRIORITY_NORMAL));
        ASSERT_EQ(pump_reply(&f, c, &reply, &error), 0);
        ASSERT_NULL(error);
        ASSERT_EQ(runs, 50);
        json_decref(reply);
        urgent = sd_event_source_disable_unref(urgent);
        (void) close(pipefd[0]);
        (void) close(pipefd[1]);
        c = varlink_client_free(c);
        fixture_stop(&f);
}

static void test_total_output_budget(void) {
        VarlinkServerConfig cfg = { .max_total_output_bytes = 5 * 1024 * 1024 };
        _cleanup_(varlink_client_freep) VarlinkClient *hog = NULL, *reader = NULL;
        json_auto_t *b3 = json_pack("{s:i}", "bytes", 3 * 1024 * 1024);
        json_auto_t *b1 = json_pack("{s:i}", "bytes", 1024 * 1024);
        json_auto_t *reply = NULL;
        Fixture f;

        fixture_start(&f, &cfg);
        hog = connect_client(&f);
        reader = connect_client(&f);

        /* The hog asks for 3 MiB and does not read: its queue holds most of it (4 MiB allocated). */
        send_call(hog, "io.memstrack.test.Big", b3, 0);
        for (unsigned i = 0; i < PUMP_MAX && varlink_server_output_bytes(f.server) == 0; i++)
                pump_once(&f);
        ASSERT_GT(varlink_server_output_bytes(f.server), 2 * 1024 * 1024);

        /* A reader's 1 MiB reply does not fit next to it: the client with the most unread output goes,
         * the reader gets its reply, and the total never went over the budget. */
        reply = call_expect(&f, reader, "io.memstrack.test.Big", b1, NULL);
        ASSERT_EQ(strlen(json_string_value(json_object_get(reply, "data"))), 1024 * 1024);
        ASSERT_LE(varlink_server_output_bytes(f.server), 5 * 1024 * 1024);
        pump_until_connections(&f, 1);
        {
                json_t *p = NULL;
                char *error = NULL;
                int r;

                /* The hog reads what reached its socket before it was cut, then the end. */
                do {
                        r = varlink_client_read_reply(hog, 1000000, &p, &error);
                        json_decref(p);
                        free(error);
                        p = NULL;
                        error = NULL;
                } while (r == 0);
                ASSERT_EQ(r, -ECONNRESET);
        }
        hog = varlink_client_free(hog);
        reader = varlink_client_free(reader);
        fixture_stop(&f);
}

/* ---- Access control: needs root to become other users ----------------------------------------------- */

/* Runs fn in a child with the given credentials; the parent drives the loop until the child exits and
 * returns its exit status. */
static int run_as(Fixture *f, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                int (*fn)(Fixture *f)) {
        pid_t pid;
        int status = 0;

        pid = fork();
        ASSERT_OK(pid);
        if (pid == 0) {
                if (setgroups(n_groups, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
                    setresuid(uid, uid, uid) < 0)
                        _exit(100);
                _exit(fn(f));
        }
        for (unsigned i = 0; i < PUMP_MAX; i++) {
                pid_t r = waitpid(pid, &status, WNOHANG);

                ASSERT_OK(r);
                if (r == pid) {
                        ASSERT_TRUE(WIFEXITED(status));
                        return WEXITSTATUS(status);
                }
                pump_once(f);
        }
        (void) kill(pid, SIGKILL);
        abort();
}

/* Child side: 0 if the call was refused with PermissionDenied and the connection then closed. */
static int child_expect_denied(Fixture *f) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "x");
        json_t *reply = NULL;
        char *error = NULL;

        if (varlink_client_connect(f->address, &c) < 0)
                return 1;
        if (varlink_client_call(c, "io.memstrack.test.Echo", p, 10 * 1000000ULL, &reply, &error) != 0)
                return 2;
        if (!error || !streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED))
                return 3;
        if (!json_is_string(json_object_get(reply, "reason")))
                return 4;
        json_decref(reply);
        free(error);
        if (varlink_client_read_reply(c, 10 * 1000000ULL, &reply, &error) != -ECONNRESET)
                return 5;
        return 0;
}

/* Child side: 0 if served (and not treated as root), and RootOnly refused. */
static int child_expect_served(Fixture *f) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "member");
        json_t *reply = NULL;
        char *error = NULL;

        if (varlink_client_connect(f->address, &c) < 0)
                return 1;
        if (varlink_client_call(c, "io.memstrack.test.Echo", p, 10 * 1000000ULL, &reply, &error) != 0 || error)
                return 2;
        if (!json_is_false(json_object_get(reply, "isRoot")) ||
            json_integer_value(json_object_get(reply, "uid")) != (json_int_t) getuid())
                return 3;
        json_decref(reply);
        if (varlink_client_call(c, "io.memstrack.test.RootOnly", NULL, 10 * 1000000ULL, &reply, &error) != 0)
                return 4;
        if (!error || !streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED))
                return 5;
        json_decref(reply);
        free(error);
        return 0;
}

/* Child side: 0 if the connection was turned away with TooManyConnections and then closed. */
static int child_check_turned_away(VarlinkClient *c) {
        json_t *reply = NULL;
        char *error = NULL;
        bool ok;

        if (varlink_client_read_reply(c, 10 * 1000000ULL, &reply, &error) != 0)
                return 1;
        ok = error && streq(error, MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS) &&
                json_is_string(json_object_get(reply, "reason"));
        json_decref(reply);
        free(error);
        if (!ok)
                return 2;
        if (varlink_client_read_reply(c, 10 * 1000000ULL, &reply, &error) != -ECONNRESET)
                return 3;
        return 0;
}

/* Child side, with a per-uid limit of 1: 0 if a silent connection gives its slot to a newer one of the
 * same uid, and a connection over the limit with no silent one to evict is turned away. */
static int child_expect_per_uid_limit(Fixture *f) {
        _cleanup_(varlink_client_freep) VarlinkClient *silent = NULL, *c1 = NULL, *c2 = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "one");
        json_t *reply = NULL;
        char *error = NULL;

        if (varlink_client_connect(f->address, &silent) < 0)
                return 10;
        if (varlink_client_connect(f->address, &c1) < 0)
                return 11;
        if (varlink_client_call(c1, "io.memstrack.test.Echo", p, 10 * 1000000ULL, &reply, &error) != 0 || error)
                return 12;
        json_decref(reply);
        if (child_check_turned_away(silent) != 0)
                return 13;
        if (varlink_client_connect(f->address, &c2) < 0)
                return 14;
        if (child_check_turned_away(c2) != 0)
                return 15;
        return 0;
}

/* The group the access-control cases allow, made by main_access_control() for this run only. */
static char test_group[32];

static void test_access_control(void) {
        VarlinkServerConfig cfg = { .group = test_group, .max_connections_per_uid = 1 };
        _cleanup_(varlink_client_freep) VarlinkClient *root = NULL;
        json_auto_t *reply = NULL;
        struct group *gr;
        gid_t member_gid, other_gid;
        Fixture f;

        gr = getgrnam(test_group);
        ASSERT_NOT_NULL(gr);
        member_gid = gr->gr_gid;
        /* Any gid but the allowed one: the children's groups are set explicitly, whatever /etc/group says. */
        other_gid = member_gid == 65533 ? 65532 : 65533;

        fixture_start(&f, &cfg);

        /* Root is always served, and is root. */
        root = connect_client(&f);
        reply = call_expect(&f, root, "io.memstrack.test.RootOnly", NULL, NULL);
        {
                json_auto_t *p = json_pack("{s:s}", "text", "root");
                json_auto_t *r = call_expect(&f, root, "io.memstrack.test.Echo", p, NULL);
                ASSERT_TRUE(json_is_true(json_object_get(r, "isRoot")));
        }

        /* Neither root nor in the group: PermissionDenied, then closed. */
        ASSERT_EQ(run_as(&f, 65534, other_gid, NULL, 0, child_expect_denied), 0);
        /* In the group as primary group. */
        ASSERT_EQ(run_as(&f, 65534, member_gid, NULL, 0, child_expect_served), 0);
        /* In the group as a supplementary group only (SO_PEERGROUPS). */
        ASSERT_EQ(run_as(&f, 65534, other_gid, (gid_t[]) { other_gid, member_gid }, 2, child_expect_served), 0);

        /* One connection per non-root uid here; root is not limited that way. The earlier children's
         * connections must be gone first. */
        pump_until_connections(&f, 1);
        ASSERT_EQ(run_as(&f, 65534, member_gid, NULL, 0, child_expect_per_uid_limit), 0);
        {
                _cleanup_(varlink_client_freep) VarlinkClient *root2 = connect_client(&f);
                expect_echo(&f, root2, "second root connection");
        }

        /* Root's connection was not disturbed by any of it. */
        expect_echo(&f, root, "root again");
        root = varlink_client_free(root);
        fixture_stop(&f);
}

/* Child side for the root slot: fills what a user may (one slot of two), checks that a second is turned
 * away, tells the parent (a byte on ready) and keeps its connection until the parent writes to go. */
static int child_fill_user_slots(Fixture *f, int ready, int go) {
        _cleanup_(varlink_client_freep) VarlinkClient *c1 = NULL, *c2 = NULL;
        json_auto_t *p = json_pack("{s:s}", "text", "user");
        json_t *reply = NULL;
        char *error = NULL, b = 0;

        if (varlink_client_connect(f->address, &c1) < 0)
                return 1;
        if (varlink_client_call(c1, "io.memstrack.test.Echo", p, 10 * 1000000ULL, &reply, &error) != 0 || error)
                return 2;
        json_decref(reply);
        if (varlink_client_connect(f->address, &c2) < 0)
                return 3;
        if (child_check_turned_away(c2) != 0)
                return 4;
        if (write(ready, "r", 1) != 1 || read(go, &b, 1) != 1)
                return 5;
        return 0;
}

static void test_root_slot(void) {
        VarlinkServerConfig cfg = { .group = test_group, .max_connections = 2 };
        _cleanup_(varlink_client_freep) VarlinkClient *root = NULL;
        int ready[2], go[2], status = 0;
        struct pollfd p = {};
        struct group *gr;
        pid_t pid;
        Fixture f;

        /* Runs as root, in the child of main_access_control() that made test_group. */
        gr = getgrnam(test_group);
        ASSERT_TRUE(gr);
        fixture_start(&f, &cfg);
        ASSERT_OK(pipe2(ready, O_CLOEXEC));
        ASSERT_OK(pipe2(go, O_CLOEXEC));
        pid = fork();
        ASSERT_OK(pid);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(gr->gr_gid, gr->gr_gid, gr->gr_gid) < 0 ||
                    setresuid(65534, 65534, 65534) < 0)
                        _exit(100);
                _exit(child_fill_user_slots(&f, ready[1], go[0]));
        }
        p = (struct pollfd) { .fd = ready[0], .events = POLLIN };
        for (unsigned i = 0; i < PUMP_MAX && poll(&p, 1, 0) == 0; i++)
                pump_once(&f);
        ASSERT_TRUE(p.revents & POLLIN);

        /* Users hold every slot they may: root still gets the one kept for it. */
        root = connect_client(&f);
        expect_echo(&f, root, "root gets in");

        ASSERT_EQ(write(go[1], "g", 1), 1);
        for (unsigned i = 0; i < PUMP_MAX; i++) {
                pid_t r = waitpid(pid, &status, WNOHANG);

                ASSERT_OK(r);
                if (r == pid)
                        break;
                pump_once(&f);
        }
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        for (int i = 0; i < 2; i++) {
                (void) close(ready[i]);
                (void) close(go[i]);
        }
        root = varlink_client_free(root);
        fixture_stop(&f);
}

/* Runs TOOL ARG as a command: its exit status, or -errno if it cannot be started (-ENOENT: not installed). */
static int run_tool(const char *tool, const char *arg1, const char *arg2) {
        char *argv[] = { (char *) tool, (char *) arg1, (char *) arg2, NULL };
        extern char **environ;
        pid_t pid;
        int status, r;

        r = posix_spawnp(&pid, tool, NULL, NULL, argv, environ);
        if (r != 0)
                return -r;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) {
        stop_signal = sig;
}

/* As root: makes a system group of its own, runs the access-control cases in a child (an assertion there
 * aborts the child only), and removes the group again whatever the child did; a SIGTERM or SIGINT
 * (meson's timeout) ends the child and still removes the group. */
static int main_access_control(void) {
        struct sigaction sa = { .sa_handler = on_stop_signal };
        pid_t pid;
        int status, r;

        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: access control needs root, to create a group and become other users\n");
                return EXIT_TEST_SKIP;
        }
        (void) snprintf(test_group, sizeof(test_group), "mstest-vls%d", (int) getpid());
        r = run_tool("groupadd", "--system", test_group);
        if (r == -ENOENT) {
                fprintf(stderr, "SKIP: groupadd is not installed, so no group can be made for the test\n");
                return EXIT_TEST_SKIP;
        }
        if (r != 0) {
                fprintf(stderr, "groupadd --system %s failed (%d)\n", test_group, r);
                return EXIT_FAILURE;
        }

        /* No SA_RESTART: a signal interrupts the wait below. */
        ASSERT_OK(sigaction(SIGTERM, &sa, NULL));
        ASSERT_OK(sigaction(SIGINT, &sa, NULL));
        pid = fork();
        if (pid == 0) {
                (void) signal(SIGTERM, SIG_DFL);
                (void) signal(SIGINT, SIG_DFL);
                TEST(test_access_control);
                TEST(test_root_slot);
                /* exit(), not _exit(): LeakSanitizer checks the child at exit. */
                exit(EXIT_SUCCESS);
        }
        status = -1;
        while (pid > 0 && waitpid(pid, &status, 0) < 0) {
                if (errno != EINTR || stop_signal) {
                        fprintf(stderr, "stopped by signal %d, ending the test\n", (int) stop_signal);
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, &status, 0);
                        status = -1;
                        break;
                }
        }

        r = run_tool("groupdel", test_group, NULL);
        if (r != 0) {
                fprintf(stderr, "groupdel %s failed (%d): remove the group by hand\n", test_group, r);
                return EXIT_FAILURE;
        }
        if (pid < 0) {
                fprintf(stderr, "fork: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }
        if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "the access-control cases failed (wait status %d)\n", status);
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        /* The server logs only at debug; keep the test log readable unless asked otherwise. */
        log_set_max_level(getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
        /* A test client writing to a closed connection must see EPIPE, not die. */
        (void) signal(SIGPIPE, SIG_IGN);

        if (argc == 2 && streq(argv[1], "access-control"))
                return main_access_control();
        if (argc != 1) {
                fprintf(stderr, "Usage: %s [access-control]\n", argv[0]);
                return EXIT_FAILURE;
        }

        TEST(test_info_and_describe);
        TEST(test_standard_errors);
        TEST(test_bad_call_objects);
        TEST(test_malformed_closes);
        TEST(test_oneway);
        TEST(test_numbers_out_of_range);
        TEST(test_more_stream_and_pipelining);
        TEST(test_split_and_batched);
        TEST(test_client_vanishes_mid_stream);
        TEST(test_output_limit);
        TEST(test_message_limit);
        TEST(test_connection_limit);
        TEST(test_idle_timeout_and_half_close);
        TEST(test_first_message_deadline);
        TEST(test_trickle);
        TEST(test_unread_output_deadline);
        TEST(test_eviction_when_full);
        TEST(test_refused_client_reads_the_reason);
        TEST(test_request_size_cap);
        TEST(test_total_output_budget);
        TEST(test_priority);
        TEST(test_socket_setup);
        TEST(test_free_with_open_stream);
        return EXIT_SUCCESS;
}
