/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-file.h"
#include "file-util.h"
#include "log.h"
#include "tests.h"

#define MAX_PAIRS 16

/* What the handler saw, in order. */
typedef struct Seen {
        char *keys[MAX_PAIRS];
        char *values[MAX_PAIRS];
        unsigned lines[MAX_PAIRS];
        size_t n;
        int fail_at;            /* return -EBADMSG on this pair (1-based), 0: never */
} Seen;

static int record(const char *path, unsigned line, const char *key, const char *value, void *userdata) {
        Seen *s = userdata;

        ASSERT_STREQ(path, "test.conf");
        ASSERT_LT(s->n, MAX_PAIRS);
        s->keys[s->n] = strdup(key);
        s->values[s->n] = strdup(value);
        ASSERT_NOT_NULL(s->keys[s->n]);
        ASSERT_NOT_NULL(s->values[s->n]);
        s->lines[s->n] = line;
        s->n++;
        if (s->fail_at > 0 && (size_t) s->fail_at == s->n)
                return -EBADMSG;
        return 0;
}

static void seen_done(Seen *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->keys[i]);
                free(s->values[i]);
        }
        *s = (Seen) {};
}

static int parse_string(const char *text, size_t len, Seen *s) {
        FILE *f = fmemopen((void *) text, len, "r");
        ASSERT_NOT_NULL(f);
        int r = config_file_parse(f, "test.conf", record, s);
        fclose(f);
        return r;
}

static void test_pairs_comments_and_spaces(void) {
        static const char text[] =
                "# memstrackd.conf\n"
                "\n"
                "callchain-depth=32\n"
                "   buffer-pages =  512  \n"
                "\t# indented comment\n"
                "log-level\t=\tdebug\r\n"
                "group=\n"
                "socket=/run/x=y # not a comment\n"
                "last=no-newline";
        Seen s = {};

        ASSERT_EQ(parse_string(text, sizeof(text) - 1, &s), 0);
        ASSERT_EQ(s.n, 6);
        ASSERT_STREQ(s.keys[0], "callchain-depth");
        ASSERT_STREQ(s.values[0], "32");
        ASSERT_EQ(s.lines[0], 3);
        ASSERT_STREQ(s.keys[1], "buffer-pages");
        ASSERT_STREQ(s.values[1], "512");
        ASSERT_EQ(s.lines[1], 4);
        /* Tabs and a DOS line end are white space too. */
        ASSERT_STREQ(s.keys[2], "log-level");
        ASSERT_STREQ(s.values[2], "debug");
        ASSERT_EQ(s.lines[2], 6);
        /* An empty value is passed on: the handler decides what it means ("" group: root only). */
        ASSERT_STREQ(s.keys[3], "group");
        ASSERT_STREQ(s.values[3], "");
        /* Only the first '=' splits, and '#' only starts a comment at the start of a line. */
        ASSERT_STREQ(s.keys[4], "socket");
        ASSERT_STREQ(s.values[4], "/run/x=y # not a comment");
        ASSERT_STREQ(s.keys[5], "last");
        ASSERT_STREQ(s.values[5], "no-newline");
        ASSERT_EQ(s.lines[5], 9);
        seen_done(&s);
}

static void test_malformed_lines_skipped(void) {
        static const char text[] =
                "no equals sign\n"
                "=value without key\n"
                "  = \n"
                "a\0b=c\n"
                "good=1\n";
        Seen s = {};

        /* Each bad line is warned about and skipped; the good one after them still counts. */
        ASSERT_EQ(parse_string(text, sizeof(text) - 1, &s), 0);
        ASSERT_EQ(s.n, 1);
        ASSERT_STREQ(s.keys[0], "good");
        ASSERT_STREQ(s.values[0], "1");
        ASSERT_EQ(s.lines[0], 5);
        seen_done(&s);
}

static void test_handler_error_stops(void) {
        static const char text[] = "a=1\nb=2\nc=3\n";
        Seen s = { .fail_at = 2 };

        ASSERT_EQ(parse_string(text, sizeof(text) - 1, &s), -EBADMSG);
        ASSERT_EQ(s.n, 2);
        ASSERT_STREQ(s.keys[1], "b");
        seen_done(&s);
}

static void test_empty_and_long_lines(void) {
        Seen s = {};

        ASSERT_EQ(parse_string("", 0, &s), 0);
        ASSERT_EQ(s.n, 0);

        /* No fixed line buffer: a 64 KiB value arrives whole. */
        size_t n = 65536;
        char *text = malloc(n + 16);
        ASSERT_NOT_NULL(text);
        memcpy(text, "kallsyms=", 9);
        memset(text + 9, 'x', n);
        memcpy(text + 9 + n, "\n", 2);
        ASSERT_EQ(parse_string(text, strlen(text), &s), 0);
        ASSERT_EQ(s.n, 1);
        ASSERT_EQ(strlen(s.values[0]), n);
        seen_done(&s);
        free(text);
}

static int record_any_path(const char *path, unsigned line, const char *key, const char *value,
                void *userdata) {
        Seen *s = userdata;
        s->n++;
        ASSERT_STREQ(key, "log-level");
        ASSERT_STREQ(value, "notice");
        return 0;
}

static void test_read_file(void) {
        char path[] = "/tmp/test-config-file.XXXXXX";
        Seen s = {};
        int fd;

        ASSERT_EQ(config_file_read("/nonexistent/memstrackd.conf", record_any_path, &s), -ENOENT);
        ASSERT_EQ(s.n, 0);

        fd = mkstemp(path);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(write(fd, "log-level=notice\n", 17), 17);
        close(fd);
        ASSERT_EQ(config_file_read(path, record_any_path, &s), 0);
        ASSERT_EQ(s.n, 1);
        unlink(path);

        /* A directory opens but cannot be read. */
        ASSERT_LT(config_file_read("/", record_any_path, &s), 0);
}

/* What is not a regular file is refused at once: a FIFO (whose open would wait for a writer), a device
 * (/dev/zero: read without end), a directory. */
static void test_not_regular(void) {
        char dir[] = "/tmp/test-config-file.XXXXXX", fifo[64];
        Seen seen = {};

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        ASSERT_OK(mkfifo(fifo, 0600));
        ASSERT_EQ(config_file_read(fifo, record, &seen), -EBADFD);
        ASSERT_EQ(config_file_read("/dev/zero", record, &seen), -EBADFD);
        ASSERT_EQ(config_file_read(dir, record, &seen), -EBADFD);
        ASSERT_EQ(seen.n, 0);
        ASSERT_STREQ(file_error_string(-EBADFD), "not a regular file");
        ASSERT_OK(unlink(fifo));
        ASSERT_OK(rmdir(dir));
}

int main(void) {
        /* The warnings for the malformed lines go to stderr, where meson keeps them. */
        log_set_target_journal(false);

        TEST(test_pairs_comments_and_spaces);
        TEST(test_malformed_lines_skipped);
        TEST(test_handler_error_stops);
        TEST(test_empty_and_long_lines);
        TEST(test_read_file);
        TEST(test_not_regular);
        return 0;
}
