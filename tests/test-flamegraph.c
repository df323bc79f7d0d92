/* SPDX-License-Identifier: MIT */

/* report/flamegraph.c: function names without offsets (common/frame-text.c), frames merged by function. */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "flamegraph.h"
#include "frame-text.h"
#include "macro.h"
#include "reply.h"
#include "tests.h"

static void check_name(const char *frame, const char *expected) {
        _cleanup_free_ char *name = frame_text_function_name(frame);

        ASSERT_NOT_NULL(name);
        ASSERT_STREQ(name, expected);
}

static void test_function_name(void) {
        check_name("do_syscall_64+0x71", "do_syscall_64");
        check_name("do_syscall_64+0x23b", "do_syscall_64");
        check_name("memcpy+0xABCdef", "memcpy");
        check_name("[all]", "[all]");
        check_name("[user] 0x7f1234", "[user] 0x7f1234");
        check_name("[unknown]", "[unknown]");
        /* Only a trailing offset is one. */
        check_name("f+0x12; [\"odd\"]", "f+0x12; [\"odd\"]");
        check_name("operator+", "operator+");
        check_name("f+0x", "f+0x");
        check_name("+0x10", "+0x10");
        check_name("a+b+0x10", "a+b");
        check_name("", "");
        check_name(NULL, "");
}

static json_t *node(const char *frame, const char *module, int pages, int peak, json_t *children) {
        json_t *n = json_pack("{s:s, s:s?, s:n, s:i, s:i, s:o, s:i}", "frame", frame, "module", module, "address",
                              "currentPages", pages, "peakPages", peak, "children", children ?: json_array(),
                              "truncatedChildren", 1);
        ASSERT_NOT_NULL(n);
        if (peak < 0)
                ASSERT_EQ(json_object_set_new(n, "peakPages", json_null()), 0);
        return n;
}

static json_t *child_named(const json_t *n, const char *frame, const char *module) {
        json_t *c;
        size_t i;

        json_array_foreach(reply_array(n, "children"), i, c)
                if (streq(reply_string(c, "frame"), frame) &&
                    (module ? reply_string(c, "module") && streq(reply_string(c, "module"), module) :
                              !reply_string(c, "module")))
                        return c;
        return NULL;
}

static void test_merge(void) {
        json_auto_t *root = node("[all]", NULL, 100, 100, json_pack("[o, o, o, o]",
                node("do_syscall_64+0x71", NULL, 40, 50,
                     json_pack("[o]", node("ksys_write+0x66", NULL, 40, 45, NULL))),
                node("do_syscall_64+0x23b", NULL, 30, 35, json_pack("[o, o]",
                        node("ksys_write+0x66", NULL, 20, -1, NULL), node("ksys_read+0x10", NULL, 10, 10, NULL))),
                node("do_syscall_64+0x80", "kvm", 20, 20, NULL),
                node("kthread+0xef", NULL, 10, 12, NULL)));
        json_auto_t *merged = flamegraph_merge_functions(root);
        json_t *sc, *w;

        ASSERT_NOT_NULL(merged);
        ASSERT_STREQ(reply_string(merged, "frame"), "[all]");
        ASSERT_EQ(reply_count(merged, "currentPages"), 100);
        /* Same function in another module stays apart. */
        ASSERT_EQ(json_array_size(reply_array(merged, "children")), 3);
        sc = child_named(merged, "do_syscall_64", NULL);
        ASSERT_NOT_NULL(sc);
        ASSERT_EQ(reply_count(sc, "currentPages"), 70);
        ASSERT_EQ(reply_node_peak(sc), 85);
        ASSERT_EQ(reply_count(sc, "mergedFrames"), 2);
        ASSERT_EQ(reply_count(sc, "truncatedChildren"), 2);
        ASSERT_EQ(json_array_size(reply_array(sc, "children")), 2);
        /* Children of merged frames merge too; an unknown peak makes the sum unknown. */
        w = child_named(sc, "ksys_write", NULL);
        ASSERT_NOT_NULL(w);
        ASSERT_EQ(reply_count(w, "currentPages"), 60);
        ASSERT_EQ(reply_node_peak(w), -1);
        ASSERT_EQ(reply_count(w, "mergedFrames"), 2);
        ASSERT_NOT_NULL(child_named(sc, "ksys_read", NULL));
        ASSERT_NOT_NULL(child_named(merged, "do_syscall_64", "kvm"));
        ASSERT_EQ(reply_count(child_named(merged, "kthread", NULL), "mergedFrames"), 1);
        /* The input is left alone. */
        ASSERT_STREQ(reply_string(json_array_get(reply_array(root, "children"), 0), "frame"),
                     "do_syscall_64+0x71");
}

int main(void) {
        test_function_name();
        test_merge();
        return 0;
}
