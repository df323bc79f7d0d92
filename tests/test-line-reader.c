/* SPDX-License-Identifier: MIT */

/* LineReader (daemon/util/line-reader.h): lines of a pipe, with bounds, a copy, and SIGTERM. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "line-reader.h"
#include "stop-signal.h"
#include "tests.h"

/* A pipe holding text, its write end closed: the reader sees the end after it. */
static int pipe_of(const char *text, size_t n) {
        int p[2];

        ASSERT_OK(pipe(p));
        ASSERT_EQ(write(p[1], text, n), (ssize_t) n);
        ASSERT_OK(close(p[1]));
        return p[0];
}

static void expect_line(LineReader *r, const char *want, size_t want_len, unsigned want_flags) {
        unsigned flags;
        size_t len;
        char *line;

        ASSERT_EQ(line_reader_next(r, &line, &len, &flags), 1);
        ASSERT_EQ(len, want_len);
        ASSERT_TRUE(memcmp(line, want, len) == 0);
        ASSERT_EQ(line[len], '\0');
        ASSERT_EQ(flags, want_flags);
}

static void expect_end(LineReader *r) {
        unsigned flags;
        size_t len;
        char *line;

        ASSERT_EQ(line_reader_next(r, &line, &len, &flags), 0);
        ASSERT_EQ(line_reader_next(r, &line, &len, &flags), 0);
}

/* Lines with their NUL bytes, an empty one, a line longer than max_line in two pieces, and the last one
 * without its newline; all copied as read. */
static void test_lines_and_copy(void) {
        static const char text[] = "one\n\nt\0o\n0123456789abcdef\nlast";
        char copied[sizeof(text)] = "";
        FILE *copy = tmpfile();
        int fd = pipe_of(text, sizeof(text) - 1);
        LineReader *r;

        ASSERT_TRUE(copy);
        r = line_reader_new(fd, 1000, 8, fileno(copy), -EBADF);
        ASSERT_TRUE(r);
        expect_line(r, "one", 3, 0);
        expect_line(r, "", 0, 0);
        expect_line(r, "t\0o", 3, 0);
        expect_line(r, "01234567", 8, LINE_CUT);
        expect_line(r, "89abcdef", 8, LINE_CONTINUED);
        expect_line(r, "last", 4, LINE_UNTERMINATED);
        expect_end(r);
        ASSERT_EQ(line_reader_bytes(r), sizeof(text) - 1);
        line_reader_free(r);

        ASSERT_EQ(pread(fileno(copy), copied, sizeof(copied), 0), (ssize_t) sizeof(text) - 1);
        ASSERT_TRUE(memcmp(copied, text, sizeof(text) - 1) == 0);
        fclose(copy);
        close(fd);
}

/* Lines longer than the buffer, across many reads: in pieces of max_line bytes, each but the first
 * continuing the line before, every byte kept; the end of the input in the middle of a piece. */
static void test_long_lines(void) {
        size_t n = 300 * 1024;
        char *text = malloc(n);
        LineReader *r;
        int p[2];

        ASSERT_TRUE(text);
        for (size_t i = 0; i < n; i++)
                text[i] = (char) ('a' + i % 26);
        text[100 * 1024] = '\n';        /* a line of 100 KiB, a line of 200 KiB - 2 bytes, "y" unterminated */
        text[n - 2] = '\n';
        text[n - 1] = 'y';
        ASSERT_OK(pipe(p));
        if (fork() == 0) {
                close(p[0]);
                _exit(write(p[1], text, n) == (ssize_t) n ? 0 : 1);
        }
        close(p[1]);
        r = line_reader_new(p[0], n, 70000, -EBADF, -EBADF);
        ASSERT_TRUE(r);
        expect_line(r, text, 70000, LINE_CUT);
        expect_line(r, text + 70000, 100 * 1024 - 70000, LINE_CONTINUED);
        size_t at = 100 * 1024 + 1;
        expect_line(r, text + at, 70000, LINE_CUT);
        expect_line(r, text + at + 70000, 70000, LINE_CUT | LINE_CONTINUED);
        expect_line(r, text + at + 140000, n - 2 - at - 140000, LINE_CONTINUED);
        expect_line(r, "y", 1, LINE_UNTERMINATED);
        expect_end(r);
        line_reader_free(r);
        close(p[0]);
        ASSERT_OK(wait(NULL));
        free(text);
}

/* Input beyond the bound is refused, whatever its lines. */
static void test_bound(void) {
        int fd = pipe_of("a\nb\nc\n", 6);
        LineReader *r = line_reader_new(fd, 5, 100, -EBADF, -EBADF);
        unsigned flags;
        size_t len;
        char *line;

        ASSERT_TRUE(r);
        ASSERT_EQ(line_reader_next(r, &line, &len, &flags), -EFBIG);
        line_reader_free(r);
        close(fd);
}

/* A pending SIGTERM (blocked, as memstrackd blocks it) ends a wait for input that does not come, and
 * stays pending. */
static void test_stop_signal(void) {
        sigset_t mask;
        int p[2], stop_fd, sig;
        LineReader *r;
        unsigned flags;
        size_t len;
        char *line;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        ASSERT_OK(sigprocmask(SIG_BLOCK, &mask, NULL));
        ASSERT_OK(pipe(p));
        ASSERT_EQ(write(p[1], "first\n", 6), 6);
        stop_fd = stop_signal_fd();
        ASSERT_OK(stop_fd);
        r = line_reader_new(p[0], 1000, 100, -EBADF, stop_fd);
        ASSERT_TRUE(r);
        expect_line(r, "first", 5, 0);
        ASSERT_EQ(stop_signal_pending(), 0);
        ASSERT_OK(raise(SIGTERM));
        ASSERT_EQ(stop_signal_pending(), SIGTERM);
        ASSERT_EQ(line_reader_next(r, &line, &len, &flags), -ECANCELED);
        ASSERT_EQ(stop_signal_pending(), SIGTERM);
        ASSERT_OK(sigwait(&mask, &sig));
        ASSERT_EQ(sig, SIGTERM);
        line_reader_free(r);
        close(stop_fd);
        close(p[0]);
        close(p[1]);
}

int main(void) {
        TEST(test_lines_and_copy);
        TEST(test_long_lines);
        TEST(test_bound);
        TEST(test_stop_signal);
        return 0;
}
