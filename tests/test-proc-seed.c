/* SPDX-License-Identifier: MIT */

/*
 * Seeding tasks from /proc (daemon/sources/proc-seed.c) against a fake /proc tree in a temporary
 * directory: which entries become TASK_NEW events, with what names, command lines and baselines.
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "proc-seed.h"
#include "test-sink.h"
#include "tests.h"

static char root[] = "/tmp/test-proc-seed.XXXXXX";

static const Seen *seen_pid(int32_t pid) {
        for (size_t i = 0; i < n_seen; i++)
                if (seen[i].ev.pid == pid)
                        return &seen[i];
        return NULL;
}

static void put(const char *dir, const char *file, const char *data, size_t len) {
        char path[512];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", root, dir);
        (void) mkdir(path, 0755);
        if (!file)
                return;
        (void) snprintf(path, sizeof(path), "%s/%s/%s", root, dir, file);
        f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        ASSERT_EQ(fwrite(data, 1, len, f), len);
        ASSERT_EQ(fclose(f), 0);
}

#define PUT(dir, file, literal) put(dir, file, literal, sizeof(literal) - 1)

static void build_tree(void) {
        ASSERT_NOT_NULL(mkdtemp(root));
        PUT("100", "comm", "alpha\n");
        PUT("100", "statm", "2500 321 100 10 0 200 0\n");
        PUT("100", "cmdline", "alpha\0--x\0y z\0");
        /* A kernel thread: no command line, no statm. */
        PUT("200", "comm", "kworker/0:1\n");
        PUT("200", "cmdline", "");
        /* The daemon itself: left out. */
        PUT("300", "comm", "memstrackd\n");
        /* Gone while being read: no comm. */
        PUT("400", NULL, NULL);
        /* A comm without the newline, a statm that is not numbers. */
        PUT("500", "comm", "beta");
        PUT("500", "statm", "garbage\n");
        PUT("500", "cmdline", "beta");
        /* Not processes. */
        PUT("self", "comm", "nope\n");
        PUT("12abc", "comm", "nope\n");
        PUT("0", "comm", "nope\n");
        PUT("-7", "comm", "nope\n");
        PUT("99999999999", "comm", "nope\n");
        PUT("sys", NULL, NULL);
        /* A zombie: exited before tracing began, only waiting for its parent; no memory. Left out. */
        PUT("600", "comm", "sleep\n");
        PUT("600", "stat", "600 (sleep) Z 599 600 599 0 -1 4227084 105 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n");
        PUT("600", "statm", "0 0 0 0 0 0 0\n");
        PUT("600", "cmdline", "");
        /* A zombie leader whose threads still run (and whose comm has a ") Z " in it): its memory is
         * there, so it is alive. */
        PUT("700", "comm", "a) Z b\n");
        PUT("700", "stat", "700 (a) Z b) Z 1 700 700 0 -1 4227084 105 0 0 0 0 0 0 0 20 0 3 0 42 0 0\n");
        PUT("700", "statm", "5000 400 100 10 0 200 0\n");
        /* Running, with a state field the check must not misread. */
        PUT("800", "comm", "(Z)\n");
        PUT("800", "stat", "800 ((Z)) R 1 800 800 0 -1 4227084 105 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n");
}

static void test_seed(void) {
        const Seen *s;

        test_sink_reset();
        ASSERT_EQ(proc_seed_tasks(root, 300, &test_sink), 5);
        ASSERT_EQ(n_seen, 5);
        for (size_t i = 0; i < n_seen; i++)
                ASSERT_EQ(seen[i].ev.type, MS_EVENT_TASK_NEW);

        s = seen_pid(100);
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->ev.type, MS_EVENT_TASK_NEW);
        ASSERT_EQ(s->ev.tid, 100);
        ASSERT_EQ(s->ev.cpu, 0);
        ASSERT_GT(s->ev.timestamp_nsec, 0);
        ASSERT_STREQ(s->name, "alpha");
        ASSERT_TRUE(s->has_cmdline);
        ASSERT_STREQ(s->cmdline, "alpha --x y z");
        ASSERT_EQ(s->ev.task.baseline_pages, 321);
        ASSERT_EQ(s->ev.task.parent_pid, 0);    /* no stat file: the parent is unknown */

        s = seen_pid(200);
        ASSERT_NOT_NULL(s);
        ASSERT_STREQ(s->name, "kworker/0:1");
        ASSERT_TRUE(!s->has_cmdline);
        ASSERT_EQ(s->ev.task.baseline_pages, 0);

        s = seen_pid(500);
        ASSERT_NOT_NULL(s);
        ASSERT_STREQ(s->name, "beta");
        ASSERT_STREQ(s->cmdline, "beta");
        ASSERT_EQ(s->ev.task.baseline_pages, 0);

        ASSERT_NULL(seen_pid(300));
        ASSERT_NULL(seen_pid(400));
        ASSERT_NULL(seen_pid(600));
        s = seen_pid(700);
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->ev.task.baseline_pages, 400);
        ASSERT_EQ(s->ev.task.parent_pid, 1);    /* read after the last ')' of the comm */
        s = seen_pid(800);
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->ev.task.parent_pid, 1);
}

static void test_seed_missing_root(void) {
        char missing[sizeof(root) + 16];

        (void) snprintf(missing, sizeof(missing), "%s/none", root);
        test_sink_reset();
        ASSERT_EQ(proc_seed_tasks(missing, 0, &test_sink), 0);
        ASSERT_EQ(n_seen, 0);
}

static void test_read_cmdline(void) {
        char buf[PROC_CMDLINE_MAX], small[9];

        ASSERT_STREQ(proc_read_cmdline(root, 100, buf, sizeof(buf)), "alpha --x y z");
        /* Cut to the buffer: "alpha\0--" joined. */
        ASSERT_STREQ(proc_read_cmdline(root, 100, small, sizeof(small)), "alpha --");
        ASSERT_NULL(proc_read_cmdline(root, 200, buf, sizeof(buf)));   /* empty */
        ASSERT_NULL(proc_read_cmdline(root, 400, buf, sizeof(buf)));   /* missing */
        ASSERT_NULL(proc_read_cmdline(root, 12345, buf, sizeof(buf))); /* no such task */
}

int main(void) {
        int r;

        build_tree();
        TEST(test_seed);
        TEST(test_seed_missing_root);
        TEST(test_read_cmdline);

        {
                char cmd[sizeof(root) + 16];

                (void) snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
                r = system(cmd);
                ASSERT_EQ(r, 0);
        }
        return 0;
}
