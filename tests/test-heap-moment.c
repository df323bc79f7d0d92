/* SPDX-License-Identifier: MIT */

/*
 * A recorded heap at a moment and over a window (report/heap-moment.c) on a small HeapImage: a root with
 * a frame of its own, a chain of two frames and a sibling, and a timeline whose buckets allocate and free
 * at each. Each frame's figures are its own cells' and its children's, moments round up to their bucket's
 * end, frees count in a window apart, and an image without a timeline or with a malformed one is refused.
 */

#include <errno.h>

#include <jansson.h>

#include "heap-moment.h"
#include "macro.h"
#include "reply.h"
#include "tests.h"

/* [heap] (id 1) -> a (2) -> b (3); [heap] -> c (4); and "[not sampled]", which has no id. */
static json_t *image(const char *cells) {
        char text[2048];
        (void) snprintf(text, sizeof(text),
                "{\"pid\": 7, \"liveBytes\": 1, \"liveBlocks\": 1, \"timeline\": {\"bucketUsec\": 10000, "
                "\"cells\": %s, \"dropped\": 0}, \"root\": {\"frame\": \"[heap]\", \"id\": 1, \"currentBytes\": 9, "
                "\"children\": [{\"frame\": \"a\", \"id\": 2, \"children\": [{\"frame\": \"b\", \"id\": 3, "
                "\"children\": []}]}, {\"frame\": \"c\", \"id\": 4, \"children\": []}, "
                "{\"frame\": \"[not sampled]\", \"currentBytes\": 77, \"children\": []}]}}", cells);
        json_t *o = json_loads(text, 0, NULL);
        ASSERT_TRUE(o);
        return o;
}

static const char cells[] = "[[0, 3, 1000, 10, 0, 0], [5, 3, 0, 0, 400, 4], [5, 4, 500, 5, 0, 0], [9, 1, 7, 1, 0, 0]]";

static const json_t *frame(const json_t *img, const char *path) {
        const json_t *n = reply_object(img, "root");
        for (const char *p = path; *p; p++)
                n = json_array_get(reply_array(n, "children"), (size_t) (*p - '0'));
        ASSERT_TRUE(n);
        return n;
}

static int64_t bytes(const json_t *img, const char *path) {
        return json_integer_value(json_object_get(frame(img, path), "currentBytes"));
}

static void test_at(void) {
        json_auto_t *a = image(cells), *b = image(cells), *c = image(cells);

        /* Within bucket 0: b's 1000 bytes, up a and the root; the moment is the bucket's end. */
        ASSERT_EQ(heap_moment_at(a, 0), 0);
        ASSERT_EQ(bytes(a, ""), 1000);
        ASSERT_EQ(bytes(a, "0"), 1000);
        ASSERT_EQ(bytes(a, "00"), 1000);
        ASSERT_EQ(bytes(a, "1"), 0);
        ASSERT_EQ(bytes(a, "2"), 0);
        ASSERT_EQ(json_integer_value(json_object_get(frame(a, "00"), "currentBlocks")), 10);
        ASSERT_EQ(reply_count(reply_object(a, "moment"), "usec"), 10000);
        ASSERT_EQ(reply_count(a, "liveBytes"), 1000);

        /* Bucket 5 began before 55 ms: 400 of b's bytes freed, c's 500 allocated. */
        ASSERT_EQ(heap_moment_at(b, 55000), 0);
        ASSERT_EQ(bytes(b, "00"), 600);
        ASSERT_EQ(json_integer_value(json_object_get(frame(b, "00"), "currentBlocks")), 6);
        ASSERT_EQ(bytes(b, "1"), 500);
        ASSERT_EQ(bytes(b, ""), 1100);
        ASSERT_EQ(reply_count(reply_object(b, "moment"), "usec"), 60000);

        /* After the last bucket: the root's own 7 bytes too. */
        ASSERT_EQ(heap_moment_at(c, 1000000), 0);
        ASSERT_EQ(bytes(c, ""), 1107);
        ASSERT_EQ(reply_count(c, "liveBytes"), 1107);
}

static void test_between(void) {
        json_auto_t *w = image(cells);

        /* [50 ms, 60 ms): bucket 5 alone; b allocated nothing there and freed 400 bytes. */
        ASSERT_EQ(heap_moment_between(w, 50000, 60000), 0);
        ASSERT_EQ(bytes(w, "00"), 0);
        ASSERT_EQ(json_integer_value(json_object_get(frame(w, "00"), "windowFreedBytes")), 400);
        ASSERT_EQ(json_integer_value(json_object_get(frame(w, "00"), "windowFreedBlocks")), 4);
        ASSERT_EQ(bytes(w, "1"), 500);
        ASSERT_EQ(bytes(w, ""), 500);
        ASSERT_EQ(json_integer_value(json_object_get(frame(w, ""), "windowFreedBytes")), 400);
        ASSERT_EQ(reply_count(reply_object(w, "window"), "fromUsec"), 50000);
        ASSERT_EQ(reply_count(reply_object(w, "window"), "toUsec"), 60000);
        ASSERT_EQ(heap_moment_between(w, 60000, 50000), -EINVAL);
}

static void test_refused(void) {
        json_auto_t *none = json_loads("{\"root\": {\"frame\": \"x\", \"children\": []}}", 0, NULL);
        json_auto_t *short_cell = image("[[0, 3, 1000]]"), *negative = image("[[0, 3, -1, 0, 0, 0]]");

        ASSERT_EQ(heap_moment_at(none, 0), -ENODATA);
        ASSERT_EQ(heap_moment_at(short_cell, 0), -EINVAL);
        ASSERT_EQ(heap_moment_between(negative, 0, 10), -EINVAL);
}

int main(void) {
        test_at();
        test_between();
        test_refused();
        return 0;
}
