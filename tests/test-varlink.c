/* SPDX-License-Identifier: MIT */

/*
 * Unit tests of protocol/varlink.[ch]: framing (split, batched, oversized), strict call parsing and
 * every kind of bad input, reply round trips, parameter validation, and the client over a socketpair.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "macro.h"
#include "tests.h"
#include "varlink.h"

/* Feeds text (with its NUL terminators) and expects exactly the messages listed, in order. */
static void expect_messages(VarlinkFramer *f, const char *const *expected, size_t n) {
        const char *msg;
        size_t size;

        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(varlink_framer_next(f, &msg, &size), 1);
                ASSERT_EQ(size, strlen(expected[i]));
                ASSERT_TRUE(memcmp(msg, expected[i], size) == 0);
                ASSERT_EQ(msg[size], '\0');
        }
        ASSERT_EQ(varlink_framer_next(f, &msg, &size), 0);
}

static void test_framer_whole_and_batched(void) {
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        static const char batch[] = "{\"a\":1}\0{\"b\":2}\0{}\0";
        const char *const expected[] = { "{\"a\":1}", "{\"b\":2}", "{}" };

        ASSERT_OK(varlink_framer_new(0, &f));
        ASSERT_EQ(varlink_framer_pending(f), 0);

        /* Many messages in one read. */
        ASSERT_OK(varlink_framer_feed(f, batch, sizeof(batch) - 1));
        expect_messages(f, expected, ELEMENTSOF(expected));
        ASSERT_EQ(varlink_framer_pending(f), 0);

        /* A partial message stays buffered until its NUL arrives. */
        ASSERT_OK(varlink_framer_feed(f, "{\"x\"", 4));
        expect_messages(f, NULL, 0);
        ASSERT_EQ(varlink_framer_pending(f), 4);
        ASSERT_OK(varlink_framer_feed(f, ":true}\0{", 8));
        expect_messages(f, (const char *const[]) { "{\"x\":true}" }, 1);
        ASSERT_EQ(varlink_framer_pending(f), 1);
}

static void test_framer_byte_by_byte(void) {
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        static const char stream[] = "{\"method\":\"a.b.C\"}\0{\"method\":\"a.b.D\",\"more\":true}\0";
        const char *msg;
        size_t size;
        unsigned got = 0;

        ASSERT_OK(varlink_framer_new(0, &f));
        for (size_t i = 0; i < sizeof(stream) - 1; i++) {
                ASSERT_OK(varlink_framer_feed(f, stream + i, 1));
                while (varlink_framer_next(f, &msg, &size) > 0) {
                        VarlinkCallMessage m = {};

                        ASSERT_OK(varlink_call_parse(msg, size, &m, NULL, NULL));
                        ASSERT_STREQ(m.method, got == 0 ? "a.b.C" : "a.b.D");
                        ASSERT_EQ(!!(m.flags & VARLINK_CALL_MORE), got == 1);
                        varlink_call_message_done(&m);
                        got++;
                }
        }
        ASSERT_EQ(got, 2);
}

/* The recv() path: get_space/commit with arbitrary chunk sizes gives the same messages. */
static void test_framer_get_space(void) {
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        char text[3000];
        unsigned got = 0;
        size_t off = 0, total;

        /* 100 messages "{"i":N}" back to back. */
        total = 0;
        for (unsigned i = 0; i < 100; i++) {
                int n = snprintf(text + total, sizeof(text) - total, "{\"i\":%u}", i);
                total += (size_t) n + 1; /* keep snprintf's NUL as the terminator */
        }

        ASSERT_OK(varlink_framer_new(0, &f));
        for (size_t chunk = 1; off < total; chunk = chunk * 3 % 97 + 1) {
                const char *msg;
                size_t room, size, n;
                void *buf;

                ASSERT_OK(varlink_framer_get_space(f, &buf, &room));
                ASSERT_GE(room, 1);
                n = MIN(chunk, room);
                n = MIN(n, total - off);
                memcpy(buf, text + off, n);
                varlink_framer_commit(f, n);
                off += n;
                while (varlink_framer_next(f, &msg, &size) > 0) {
                        char want[32];

                        (void) snprintf(want, sizeof(want), "{\"i\":%u}", got);
                        ASSERT_STREQ(msg, want);
                        got++;
                }
        }
        ASSERT_EQ(got, 100);
}

static void test_framer_limits(void) {
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL, *g = NULL, *h = NULL;
        char big[64];
        const char *msg;
        size_t size, room;
        void *buf;

        memset(big, 'x', sizeof(big));

        /* Exactly at the limit is fine, one more byte without a NUL is not. */
        ASSERT_OK(varlink_framer_new(16, &f));
        ASSERT_OK(varlink_framer_feed(f, big, 16));
        ASSERT_EQ(varlink_framer_next(f, &msg, &size), 0);
        ASSERT_OK(varlink_framer_feed(f, "\0", 1));
        ASSERT_EQ(varlink_framer_next(f, &msg, &size), 1);
        ASSERT_EQ(size, 16);
        ASSERT_EQ(varlink_framer_feed(f, big, 17), -EMSGSIZE);
        ASSERT_EQ(varlink_framer_next(f, &msg, &size), -EMSGSIZE);

        /* A long message arriving in a batch with its NUL is refused as well. */
        ASSERT_OK(varlink_framer_new(16, &g));
        ASSERT_OK(varlink_framer_feed(g, "{}\0", 3));
        ASSERT_EQ(varlink_framer_feed(g, big, 40), -EMSGSIZE);
        ASSERT_EQ(varlink_framer_next(g, &msg, &size), 1); /* the good one before it still comes out */
        ASSERT_EQ(varlink_framer_next(g, &msg, &size), -EMSGSIZE);

        /* get_space never offers more than the limit allows: memory stays bounded. */
        ASSERT_OK(varlink_framer_new(16, &h));
        ASSERT_OK(varlink_framer_get_space(h, &buf, &room));
        ASSERT_EQ(room, 17);
        memset(buf, 'y', room);
        varlink_framer_commit(h, room);
        ASSERT_EQ(varlink_framer_get_space(h, &buf, &room), -EMSGSIZE);
        ASSERT_EQ(varlink_framer_next(h, &msg, &size), -EMSGSIZE);
}

/* After a message bigger than the kept buffer, the framer starts afresh and still works. */
static void test_framer_after_big_message(void) {
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        _cleanup_free_ char *big = malloc(1024 * 1024);
        const char *msg;
        size_t size;

        ASSERT_NOT_NULL(big);
        memset(big, 'b', 1024 * 1024);
        big[1024 * 1024 - 1] = '\0';
        ASSERT_OK(varlink_framer_new(0, &f));
        ASSERT_OK(varlink_framer_feed(f, big, 1024 * 1024));
        ASSERT_EQ(varlink_framer_next(f, &msg, &size), 1);
        ASSERT_EQ(size, 1024 * 1024 - 1);
        ASSERT_OK(varlink_framer_feed(f, "{}\0{", 4));
        expect_messages(f, (const char *const[]) { "{}" }, 1);
        ASSERT_OK(varlink_framer_feed(f, "\"a\":1}\0", 7));
        expect_messages(f, (const char *const[]) { "{\"a\":1}" }, 1);
}

static void test_method_names(void) {
        static const char *const good[] = {
                "io.memstrack.Tasks", "org.varlink.service.GetInfo", "a.b.C", "io.mem-strack.X9",
                "io.memstrack.test.Echo", "A.b.C",
        };
        static const char *const bad[] = {
                "", "Tasks", "io.Tasks.", "io.memstrack.tasks", "io..memstrack.Tasks", ".io.memstrack.Tasks",
                "io.memstrack-.Tasks", "io.-memstrack.Tasks", "io.memstrack.Ta-sks", "1o.memstrack.Tasks",
                "io.memstrack.Tasks ", "io.memstrack .Tasks", "io.memstrack.Täsks", "io.C",
        };
        char *iface = NULL;
        const char *member = NULL;

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                ASSERT_TRUE(varlink_method_name_is_valid(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (varlink_method_name_is_valid(bad[i]))
                        fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
                ASSERT_TRUE(!varlink_method_name_is_valid(bad[i]));
        }
        ASSERT_TRUE(!varlink_method_name_is_valid(NULL));
        ASSERT_TRUE(varlink_interface_name_is_valid("io.memstrack"));
        ASSERT_TRUE(!varlink_interface_name_is_valid("memstrack"));

        ASSERT_OK(varlink_method_name_split("io.memstrack.test.Echo", &iface, &member));
        ASSERT_STREQ(iface, "io.memstrack.test");
        ASSERT_STREQ(member, "Echo");
        free(iface);
        ASSERT_EQ(varlink_method_name_split("nope", &iface, &member), -EINVAL);
}

static int parse_str(const char *text, VarlinkCallMessage *m, char **bad, VarlinkCallFlags *flags) {
        return varlink_call_parse(text, strlen(text), m, bad, flags);
}

static void test_call_parse_good(void) {
        VarlinkCallMessage m = {};

        ASSERT_OK(parse_str("{\"method\":\"io.memstrack.Status\"}", &m, NULL, NULL));
        ASSERT_STREQ(m.method, "io.memstrack.Status");
        ASSERT_TRUE(json_is_object(m.parameters));
        ASSERT_EQ(json_object_size(m.parameters), 0);
        ASSERT_EQ(m.flags, 0);
        varlink_call_message_done(&m);

        /* Go's binding sends "parameters": null for none. */
        ASSERT_OK(parse_str("{\"method\":\"a.b.C\",\"parameters\":null,\"more\":false}", &m, NULL, NULL));
        ASSERT_TRUE(json_is_object(m.parameters));
        varlink_call_message_done(&m);

        ASSERT_OK(parse_str(" {\"parameters\":{\"pid\":7},\"oneway\":true,\"more\":false,\"upgrade\":false,"
                            "\"method\":\"a.b.C\"} ", &m, NULL, NULL));
        ASSERT_EQ(m.flags, VARLINK_CALL_ONEWAY);
        ASSERT_EQ(json_integer_value(json_object_get(m.parameters, "pid")), 7);
        varlink_call_message_done(&m);
}

static void expect_badmsg(const char *text, size_t size) {
        VarlinkCallMessage m = {};

        ASSERT_EQ(varlink_call_parse(text, size, &m, NULL, NULL), -EBADMSG);
        ASSERT_NULL(m.method);
}

static void test_call_parse_malformed(void) {
        static const char *const texts[] = {
                "", "{", "}", "[]", "\"x\"", "42", "null", "{\"method\":\"a.b.C\"} x",
                "{\"method\":\"a.b.C\",}", "{'method':'a.b.C'}", "{\"method\":\"a.b.C\"}{}",
                /* duplicate key: which one wins would be up to the parser */
                "{\"method\":\"a.b.C\",\"method\":\"a.b.D\"}",
                /* escaped NUL inside a string */
                "{\"method\":\"a.b.C\",\"parameters\":{\"s\":\"a\\u0000b\"}}",
                /* lone surrogate */
                "{\"method\":\"a.b.C\",\"parameters\":{\"s\":\"\\ud800\"}}",
        };
        static const char invalid_utf8[] = "{\"method\":\"a.b.C\",\"parameters\":{\"s\":\"\xff\xfe\"}}";
        static const char overlong[] = "{\"method\":\"a.b.C\",\"parameters\":{\"s\":\"\xc0\xaf\"}}";
        static const char with_nul[] = "{\"method\":\"a.b.C\"}\0{}";
        _cleanup_free_ char *deep = NULL;
        size_t depth = 5000, n;

        for (size_t i = 0; i < ELEMENTSOF(texts); i++)
                expect_badmsg(texts[i], strlen(texts[i]));
        expect_badmsg(invalid_utf8, sizeof(invalid_utf8) - 1);
        expect_badmsg(overlong, sizeof(overlong) - 1);
        expect_badmsg(with_nul, sizeof(with_nul) - 1);

        /* Nesting deeper than jansson's limit fails cleanly instead of exhausting the stack. */
        deep = malloc(depth * 2 + 64);
        ASSERT_NOT_NULL(deep);
        strcpy(deep, "{\"method\":\"a.b.C\",\"parameters\":{\"x\":");
        n = strlen(deep);
        memset(deep + n, '[', depth);
        memset(deep + n + depth, ']', depth);
        strcpy(deep + n + 2 * depth, "}}");
        expect_badmsg(deep, strlen(deep));
}

static void expect_invalid(const char *text, const char *key, VarlinkCallFlags flags) {
        VarlinkCallMessage m = {};
        VarlinkCallFlags got_flags = 0;
        char *bad = NULL;

        ASSERT_EQ(parse_str(text, &m, &bad, &got_flags), -EINVAL);
        ASSERT_STREQ(bad, key);
        ASSERT_EQ(got_flags, flags);
        ASSERT_NULL(m.method);
        free(bad);
}

static void test_call_parse_invalid(void) {
        expect_invalid("{}", "method", 0);
        expect_invalid("{\"method\":7}", "method", 0);
        expect_invalid("{\"method\":null}", "method", 0);
        expect_invalid("{\"method\":\"Status\"}", "method", 0);
        expect_invalid("{\"method\":\"io.memstrack.status\"}", "method", 0);
        expect_invalid("{\"method\":\"a.b.C\",\"parameters\":[]}", "parameters", 0);
        expect_invalid("{\"method\":\"a.b.C\",\"parameters\":\"x\"}", "parameters", 0);
        expect_invalid("{\"method\":\"a.b.C\",\"more\":1}", "more", 0);
        expect_invalid("{\"method\":\"a.b.C\",\"oneway\":\"true\"}", "oneway", 0);
        expect_invalid("{\"method\":\"a.b.C\",\"upgrade\":null}", "upgrade", 0);
        expect_invalid("{\"method\":\"a.b.C\",\"bogus\":1}", "bogus", 0);
        /* A valid oneway flag is still reported so the error reply can be suppressed. */
        expect_invalid("{\"method\":\"a.b.C\",\"oneway\":true,\"bogus\":1}", "bogus", VARLINK_CALL_ONEWAY);
        /* No reply and several replies at once: refused, and as oneway, silently. */
        expect_invalid("{\"method\":\"a.b.C\",\"oneway\":true,\"more\":true}", "more",
                       VARLINK_CALL_ONEWAY | VARLINK_CALL_MORE);
        expect_invalid("{\"more\":true,\"method\":\"a.b.C\",\"oneway\":true}", "more",
                       VARLINK_CALL_ONEWAY | VARLINK_CALL_MORE);
}

/* Numbers jansson cannot hold make the call invalid, not the stream: InvalidParameter names the parameter
 * that holds one (at whatever depth below it), or the call member; flags are still read. */
static void test_call_parse_overflow(void) {
        static const struct {
                const char *text, *key;
                VarlinkCallFlags flags;
        } cases[] = {
                { "{\"method\":\"a.b.C\",\"parameters\":{\"limit\":99999999999999999999999}}", "limit", 0 },
                { "{\"method\":\"a.b.C\",\"parameters\":{\"limit\":-99999999999999999999999}}", "limit", 0 },
                /* Just past int64_t either way; reals beyond double. */
                { "{\"method\":\"a.b.C\",\"parameters\":{\"pid\":9223372036854775808}}", "pid", 0 },
                { "{\"method\":\"a.b.C\",\"parameters\":{\"pid\":-9223372036854775809}}", "pid", 0 },
                { "{\"method\":\"a.b.C\",\"parameters\":{\"ratio\":1e400}}", "ratio", 0 },
                { "{\"method\":\"a.b.C\",\"parameters\":{\"ratio\":-1.5E+999}}", "ratio", 0 },
                /* Nested: the top-level parameter is named; numbers and braces in strings are text. */
                { "{\"method\":\"a.b.C\",\"parameters\":{\"s\":\"1e999 {\\\"x\\\": [\",\"o\":{\"a\":[1,{\"b\":"
                  "[99999999999999999999999]}]},\"n\":1}}", "o", 0 },
                /* The first in the text is named; a key spelt with escapes is named decoded. */
                { "{\"parameters\":{\"\\u006cimit\":1e999,\"pid\":1e999},\"method\":\"a.b.C\"}", "limit", 0 },
                /* Outside the parameters: the call member. */
                { "{\"method\":\"a.b.C\",\"more\":99999999999999999999999}", "more", 0 },
                { "{\"method\":\"a.b.C\",\"parameters\":[99999999999999999999999]}", "parameters", 0 },
                /* oneway is still seen, so no reply is sent. */
                { "{\"method\":\"a.b.C\",\"oneway\":true,\"parameters\":{\"x\":1e999}}", "x", VARLINK_CALL_ONEWAY },
        };
        /* A number out of range does not make broken JSON acceptable. */
        static const char *const broken[] = {
                "{\"method\":\"a.b.C\",\"parameters\":{\"limit\":99999999999999999999999,}}",
                "{\"method\":\"a.b.C\",\"parameters\":{\"limit\":99999999999999999999999}",
                "99999999999999999999999",
                "[99999999999999999999999]",
                "{\"method\":\"a.b.C\",\"parameters\":{\"limit\":99999999999999999999999,\"limit\":1}}",
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                expect_invalid(cases[i].text, cases[i].key, cases[i].flags);
        for (size_t i = 0; i < ELEMENTSOF(broken); i++)
                expect_badmsg(broken[i], strlen(broken[i]));
        /* In range, the extremes are integers as usual. */
        {
                VarlinkCallMessage m = {};
                ASSERT_OK(parse_str("{\"method\":\"a.b.C\",\"parameters\":{\"a\":9223372036854775807,"
                                    "\"b\":-9223372036854775808,\"c\":1e300}}", &m, NULL, NULL));
                ASSERT_EQ(json_integer_value(json_object_get(m.parameters, "a")), INT64_MAX);
                ASSERT_EQ(json_integer_value(json_object_get(m.parameters, "b")), INT64_MIN);
                ASSERT_TRUE(json_is_real(json_object_get(m.parameters, "c")));
                varlink_call_message_done(&m);
        }
}

static void test_call_build_round_trip(void) {
        json_auto_t *p = json_pack("{s:i, s:s, s:[i,i], s:n}", "pid", 42, "comm", "bash \"x\" ü", "l", 1, 2,
                        "n");
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        _cleanup_free_ char *text = NULL;
        VarlinkCallMessage m = {};
        const char *msg;
        size_t size, n;

        ASSERT_OK(varlink_call_build("io.memstrack.Tasks", p, VARLINK_CALL_MORE, &text, &size));
        ASSERT_EQ(text[size - 1], '\0');
        ASSERT_EQ(strlen(text), size - 1);

        ASSERT_OK(varlink_framer_new(0, &f));
        ASSERT_OK(varlink_framer_feed(f, text, size));
        ASSERT_EQ(varlink_framer_next(f, &msg, &n), 1);
        ASSERT_OK(varlink_call_parse(msg, n, &m, NULL, NULL));
        ASSERT_STREQ(m.method, "io.memstrack.Tasks");
        ASSERT_EQ(m.flags, VARLINK_CALL_MORE);
        ASSERT_TRUE(json_equal(m.parameters, p));
        varlink_call_message_done(&m);

        ASSERT_EQ(varlink_call_build("nope", NULL, 0, &text, &size), -EINVAL);
        ASSERT_EQ(varlink_call_build("a.b.C", NULL, VARLINK_CALL_ONEWAY | VARLINK_CALL_MORE, &text, &size), -EINVAL);
        {
                json_auto_t *a = json_array();
                ASSERT_EQ(varlink_call_build("a.b.C", a, 0, &text, &size), -EINVAL);
        }
}

static void reply_round_trip(json_t *message, const char *error, bool continues, json_t *params) {
        _cleanup_free_ char *text = NULL;
        VarlinkReply r = {};
        size_t size;

        ASSERT_NOT_NULL(message);
        ASSERT_OK(varlink_message_serialize(message, &text, &size));
        ASSERT_OK(varlink_reply_parse(text, size - 1, &r));
        if (error)
                ASSERT_STREQ(r.error, error);
        else
                ASSERT_NULL(r.error);
        ASSERT_EQ(r.continues, continues);
        ASSERT_TRUE(json_equal(r.parameters, params));
        varlink_reply_done(&r);
        json_decref(message);
}

static void test_replies(void) {
        json_auto_t *p = json_pack("{s:i}", "x", 1), *empty = json_object();
        json_auto_t *e = varlink_error_parameters_invalid_parameter("pid");
        json_auto_t *expect_e = json_pack("{s:s}", "parameter", "pid");
        VarlinkReply r = {};

        reply_round_trip(varlink_reply_new(p, false), NULL, false, p);
        reply_round_trip(varlink_reply_new(NULL, false), NULL, false, empty);
        reply_round_trip(varlink_reply_new(p, true), NULL, true, p);
        reply_round_trip(varlink_reply_new_error(VARLINK_ERROR_INVALID_PARAMETER, e),
                        VARLINK_ERROR_INVALID_PARAMETER, false, expect_e);
        reply_round_trip(varlink_reply_new_error(MEMSTRACK_ERROR_NOT_TRACING, NULL), MEMSTRACK_ERROR_NOT_TRACING,
                        false, empty);

        /* A reply always carries a "parameters" object, "continues" only when true. */
        {
                json_auto_t *m = varlink_reply_new(NULL, false);
                ASSERT_TRUE(json_is_object(json_object_get(m, "parameters")));
                ASSERT_NULL(json_object_get(m, "continues"));
        }

        /* Reply parsing: wrong types are errors, unknown members are ignored. */
        ASSERT_EQ(varlink_reply_parse("{\"parameters\":[]}", 17, &r), -EBADMSG);
        ASSERT_EQ(varlink_reply_parse("{\"continues\":1}", 15, &r), -EBADMSG);
        ASSERT_EQ(varlink_reply_parse("{\"error\":{}}", 12, &r), -EBADMSG);
        ASSERT_EQ(varlink_reply_parse("[1]", 3, &r), -EBADMSG);
        ASSERT_OK(varlink_reply_parse("{\"future\":1}", 12, &r));
        ASSERT_TRUE(json_is_object(r.parameters));
        varlink_reply_done(&r);
        {
                json_auto_t *a = json_array();
                char *t = NULL;
                size_t n = 0;
                ASSERT_EQ(varlink_message_serialize(a, &t, &n), -EINVAL);
                ASSERT_NULL(t);
        }
}

/* The types varlink-embed.py writes for
 *   type Range (low: int, high: ?int)
 *   method M(pid: int, sortBy: ?(current, peak, allocs), comm: ?string, includeExited: ?bool, ratio: ?float,
 *            o: ?object, a: ?[]int, m: ?[string]?string, range: ?Range, ranges: ?[]Range) */
static const VarlinkType type_int = { .kind = VARLINK_TYPE_INT };
static const VarlinkType type_int_nullable = { .kind = VARLINK_TYPE_INT, .nullable = true };
static const char *const sort_choices[] = { "current", "peak", "allocs", NULL };
static const VarlinkType type_sort = { .kind = VARLINK_TYPE_ENUM, .nullable = true, .choices = sort_choices };
static const VarlinkType type_string = { .kind = VARLINK_TYPE_STRING, .nullable = true };
static const VarlinkType type_bool = { .kind = VARLINK_TYPE_BOOL, .nullable = true };
static const VarlinkType type_float = { .kind = VARLINK_TYPE_FLOAT, .nullable = true };
static const VarlinkType type_object = { .kind = VARLINK_TYPE_OBJECT, .nullable = true };
static const VarlinkType type_ints = { .kind = VARLINK_TYPE_ARRAY, .nullable = true, .element = &type_int };
static const VarlinkType type_map = { .kind = VARLINK_TYPE_MAP, .nullable = true, .element = &type_string };
static const VarlinkTypeField range_fields[] = { { "low", &type_int }, { "high", &type_int_nullable } };
static const VarlinkType type_range = { .kind = VARLINK_TYPE_STRUCT, .fields = range_fields, .n_fields = 2 };
static const VarlinkType type_range_nullable = { .kind = VARLINK_TYPE_REF, .nullable = true, .element = &type_range };
static const VarlinkType type_ranges = { .kind = VARLINK_TYPE_ARRAY, .nullable = true, .element = &type_range };
static const VarlinkTypeField m_fields[] = {
        { "pid", &type_int }, { "sortBy", &type_sort }, { "comm", &type_string }, { "includeExited", &type_bool },
        { "ratio", &type_float }, { "o", &type_object }, { "a", &type_ints }, { "m", &type_map },
        { "range", &type_range_nullable }, { "ranges", &type_ranges },
};
static const VarlinkType m_parameters = { .kind = VARLINK_TYPE_STRUCT, .fields = m_fields, .n_fields = ELEMENTSOF(m_fields) };
static const VarlinkMethodSignature m_signatures[] = { { "a.b.M", &m_parameters } };
static const VarlinkSignature m_signature = { .methods = m_signatures, .n_methods = 1 };

static void test_parameters_check(void) {
        const VarlinkMethodSignature *m = varlink_signature_find(&m_signature, "a.b.M");
        const char *bad = NULL;

        ASSERT_NOT_NULL(m);
        ASSERT_NULL(varlink_signature_find(&m_signature, "a.b.N"));
        ASSERT_TRUE(varlink_method_parameter_type(m, "ratio") == &type_float);
        ASSERT_NULL(varlink_method_parameter_type(m, "Ratio"));

#define EXPECT_GOOD(...)                                                                        \
        do {                                                                                    \
                json_auto_t *_p = json_pack(__VA_ARGS__);                                       \
                ASSERT_NOT_NULL(_p);                                                            \
                ASSERT_OK(varlink_parameters_check(_p, m, &bad));                               \
        } while (0)
#define EXPECT_BAD(name, ...)                                                                   \
        do {                                                                                    \
                json_auto_t *_p = json_pack(__VA_ARGS__);                                       \
                bad = NULL;                                                                     \
                ASSERT_NOT_NULL(_p);                                                            \
                ASSERT_EQ(varlink_parameters_check(_p, m, &bad), -EINVAL);                      \
                ASSERT_STREQ(bad, name);                                                        \
        } while (0)

        EXPECT_GOOD("{s:i}", "pid", 3);
        /* Every optional one given, null, or of its type; an integer is a valid float. */
        EXPECT_GOOD("{s:i, s:s, s:n, s:b, s:i, s:{}, s:[i, i], s:{s:s, s:n}, s:{s:i}, s:[{s:i, s:i}]}",
                    "pid", 3, "sortBy", "peak", "comm", "includeExited", 1, "ratio", 2, "o", "a", 1, 2,
                    "m", "k", "v", "null", "range", "low", 1, "ranges", "low", 1, "high", 2);
        EXPECT_GOOD("{s:i, s:f, s:[], s:{}, s:n}", "pid", 3, "ratio", 0.5, "a", "m", "range");

        EXPECT_BAD("pid", "{}");
        EXPECT_BAD("pid", "{s:n}", "pid");
        EXPECT_BAD("pid", "{s:s}", "pid", "3");
        EXPECT_BAD("pid", "{s:f}", "pid", 3.5);
        EXPECT_BAD("pid", "{s:b}", "pid", 1);
        EXPECT_BAD("sortBy", "{s:i, s:s}", "pid", 1, "sortBy", "name");
        EXPECT_BAD("sortBy", "{s:i, s:i}", "pid", 1, "sortBy", 0);
        EXPECT_BAD("includeExited", "{s:i, s:i}", "pid", 1, "includeExited", 1);
        EXPECT_BAD("ratio", "{s:i, s:s}", "pid", 1, "ratio", "x");
        EXPECT_BAD("o", "{s:i, s:[]}", "pid", 1, "o");
        EXPECT_BAD("a", "{s:i, s:{}}", "pid", 1, "a");
        EXPECT_BAD("a", "{s:i, s:[i, s]}", "pid", 1, "a", 1, "2");
        EXPECT_BAD("a", "{s:i, s:[n]}", "pid", 1, "a");        /* []int: no null items */
        EXPECT_BAD("m", "{s:i, s:{s:i}}", "pid", 1, "m", "k", 1);
        EXPECT_BAD("range", "{s:i, s:{}}", "pid", 1, "range");  /* low is not optional */
        EXPECT_BAD("range", "{s:i, s:{s:i, s:i}}", "pid", 1, "range", "low", 1, "width", 2);
        EXPECT_BAD("range", "{s:i, s:{s:i, s:s}}", "pid", 1, "range", "low", 1, "high", "2");
        EXPECT_BAD("ranges", "{s:i, s:[{s:i}, {s:b}]}", "pid", 1, "ranges", "low", 1, "low", 0);
        EXPECT_BAD("typo", "{s:i, s:i}", "pid", 1, "typo", 1);
        EXPECT_BAD("typo", "{s:i, s:n}", "pid", 1, "typo");    /* unknown even when null */
#undef EXPECT_GOOD
#undef EXPECT_BAD

        ASSERT_EQ(varlink_parameters_check(NULL, m, &bad), -EINVAL);
        ASSERT_STREQ(bad, "parameters");
        json_auto_t *array = json_array();
        ASSERT_EQ(varlink_parameters_check(array, m, &bad), -EINVAL);
        ASSERT_STREQ(bad, "parameters");
}

/* A document nested deeper than the checker follows is refused, not walked: a stack is not a client's. */
static const VarlinkType type_any_list = { .kind = VARLINK_TYPE_ARRAY, .nullable = true, .element = &type_any_list };

static void test_parameters_check_deep(void) {
        static const VarlinkTypeField fields[] = { { "l", &type_any_list } };
        static const VarlinkType parameters = { .kind = VARLINK_TYPE_STRUCT, .fields = fields, .n_fields = 1 };
        static const VarlinkMethodSignature m = { "a.b.Deep", &parameters };
        json_auto_t *shallow = json_pack("{s:[[[]]]}", "l"), *deep = json_array();
        const char *bad = NULL;

        ASSERT_OK(varlink_parameters_check(shallow, &m, &bad));
        json_t *inner = deep;
        for (int i = 0; i < 100; i++) {
                json_t *a = json_array();
                ASSERT_OK(json_array_append_new(inner, a));
                inner = a;
        }
        json_auto_t *p = json_pack("{s:O}", "l", deep);
        ASSERT_EQ(varlink_parameters_check(p, &m, &bad), -EINVAL);
        ASSERT_STREQ(bad, "l");
}

static void test_addresses(void) {
        static const struct {
                const char *address, *path;
        } cases[] = {
                { "unix:/run/memstrack/io.memstrack", "/run/memstrack/io.memstrack" },
                { "unix:/run/x;mode=0666", "/run/x" },
                { "unix:@abstract", "@abstract" },
                { "/run/x", "/run/x" },
                { "./sock", "./sock" },
                { "unix:", NULL },
                { "unix:relative", NULL },
                { "tcp:127.0.0.1:1", NULL },
                { "relative", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *p = NULL;
                int r = varlink_address_to_path(cases[i].address, &p);

                if (cases[i].path) {
                        ASSERT_OK(r);
                        ASSERT_STREQ(p, cases[i].path);
                } else
                        ASSERT_EQ(r, -EINVAL);
                free(p);
        }
}

static void write_all(int fd, const char *data, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, data, n);

                ASSERT_GT(k, 0);
                data += k;
                n -= (size_t) k;
        }
}

static void test_client_socketpair(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        static const char replies[] = "{\"parameters\":{\"i\":0},\"continues\":true}\0"
                                      "{\"parameters\":{\"i\":1}}\0"
                                      "{\"error\":\"io.memstrack.NoSuchTask\",\"parameters\":{\"pid\":9}}\0";
        json_t *params = NULL;
        char *error = NULL, buf[256];
        VarlinkCallMessage m = {};
        const char *msg;
        int sv[2];
        ssize_t n;
        size_t size;

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
        ASSERT_OK(varlink_client_new_from_fd(sv[0], &c));
        ASSERT_EQ(varlink_client_get_fd(c), sv[0]);

        /* Nothing there yet: a zero timeout does not block. */
        ASSERT_EQ(varlink_client_read_reply(c, 0, &params, &error), -EAGAIN);
        ASSERT_EQ(varlink_client_read_reply(c, 1000, &params, &error), -ETIMEDOUT);

        /* The call arrives as one NUL-terminated message the parser accepts. */
        ASSERT_OK(varlink_client_send(c, "io.memstrack.Top", NULL, VARLINK_CALL_MORE, UINT64_MAX));
        n = read(sv[1], buf, sizeof(buf));
        ASSERT_GT(n, 0);
        ASSERT_OK(varlink_framer_new(0, &f));
        ASSERT_OK(varlink_framer_feed(f, buf, (size_t) n));
        ASSERT_EQ(varlink_framer_next(f, &msg, &size), 1);
        ASSERT_OK(varlink_call_parse(msg, size, &m, NULL, NULL));
        ASSERT_STREQ(m.method, "io.memstrack.Top");
        ASSERT_EQ(m.flags, VARLINK_CALL_MORE);
        varlink_call_message_done(&m);

        /* Replies split across writes: the first one in two halves. */
        write_all(sv[1], replies, 10);
        ASSERT_EQ(varlink_client_read_reply(c, 0, &params, &error), -EAGAIN);
        write_all(sv[1], replies + 10, sizeof(replies) - 1 - 10);

        ASSERT_EQ(varlink_client_read_reply(c, UINT64_MAX, &params, &error), 1);
        ASSERT_NULL(error);
        ASSERT_EQ(json_integer_value(json_object_get(params, "i")), 0);
        json_decref(params);

        ASSERT_EQ(varlink_client_read_reply(c, UINT64_MAX, &params, &error), 0);
        ASSERT_NULL(error);
        ASSERT_EQ(json_integer_value(json_object_get(params, "i")), 1);
        json_decref(params);

        ASSERT_EQ(varlink_client_read_reply(c, UINT64_MAX, &params, &error), 0);
        ASSERT_STREQ(error, MEMSTRACK_ERROR_NO_SUCH_TASK);
        ASSERT_EQ(json_integer_value(json_object_get(params, "pid")), 9);
        json_decref(params);
        free(error);

        /* A malformed reply is reported, then the server going away. */
        write_all(sv[1], "nope\0", 5);
        ASSERT_EQ(varlink_client_read_reply(c, UINT64_MAX, &params, &error), -EBADMSG);
        ASSERT_OK(close(sv[1]));
        ASSERT_EQ(varlink_client_read_reply(c, UINT64_MAX, &params, &error), -ECONNRESET);
        ASSERT_EQ(varlink_client_send(c, "a.b.C", NULL, 0, UINT64_MAX), -ECONNRESET);
}

static void test_embedded_interfaces(void) {
        /* The build embeds the checked-in IDL: the interface line is there, verbatim. */
        ASSERT_NOT_NULL(strstr(varlink_interface_io_memstrack, "\ninterface io.memstrack\n"));
        ASSERT_NOT_NULL(strstr(varlink_interface_io_memstrack, "method Top("));
        ASSERT_NOT_NULL(strstr(varlink_interface_org_varlink_service, "interface org.varlink.service\n"));
        ASSERT_NOT_NULL(strstr(varlink_interface_org_varlink_service, "error InvalidParameter (parameter: string)"));
}

int main(void) {
        TEST(test_framer_whole_and_batched);
        TEST(test_framer_byte_by_byte);
        TEST(test_framer_get_space);
        TEST(test_framer_limits);
        TEST(test_framer_after_big_message);
        TEST(test_method_names);
        TEST(test_call_parse_good);
        TEST(test_call_parse_malformed);
        TEST(test_call_parse_invalid);
        TEST(test_call_parse_overflow);
        TEST(test_call_build_round_trip);
        TEST(test_replies);
        TEST(test_parameters_check);
        TEST(test_parameters_check_deep);
        TEST(test_addresses);
        TEST(test_client_socketpair);
        TEST(test_embedded_interfaces);
        return 0;
}
