/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "line-reader.h"
#include "macro.h"
#include "stop-signal.h"

/* What one read asks for. */
#define LINE_READER_CHUNK (64u * 1024u)

struct LineReader {
        int fd, copy_fd, stop_fd;       /* borrowed */
        uint64_t max_bytes, bytes;
        size_t max_line;
        char *buf;                      /* owned: max_line + LINE_READER_CHUNK + 1 (for a NUL) */
        size_t size, start, end;        /* the unread bytes are [start, end) */
        bool eof;
        bool continued;                 /* the last piece returned was cut: the next continues its line */
        char cut_byte;                  /* the byte the NUL after a cut piece replaced, for its next piece */
};

LineReader *line_reader_new(int fd, uint64_t max_bytes, size_t max_line, int copy_fd, int stop_fd) {
        LineReader *r;

        assert(fd >= 0);
        assert(max_line > 0 && max_line < SIZE_MAX / 2);

        r = calloc(1, sizeof(LineReader));
        if (!r)
                return NULL;
        *r = (LineReader) {
                .fd = fd,
                .copy_fd = copy_fd,
                .stop_fd = stop_fd,
                .max_bytes = max_bytes,
                .max_line = max_line,
                .size = max_line + LINE_READER_CHUNK + 1,
        };
        r->buf = malloc(r->size);
        if (!r->buf) {
                free(r);
                return NULL;
        }
        return r;
}

LineReader *line_reader_free(LineReader *r) {
        if (!r)
                return NULL;
        free(r->buf);
        free(r);
        return NULL;
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Reads what comes next after end, at the end of the input sets eof. */
static int fill(LineReader *r) {
        size_t want = MIN(r->size - 1 - r->end, (size_t) LINE_READER_CHUNK);
        ssize_t n;
        int k;

        assert(want > 0);
        for (;;) {
                /* Also for a file, which polls ready at once: a long read stops at a signal too. */
                k = stop_signal_wait(r->fd, POLLIN, r->stop_fd);
                if (k < 0)
                        return k;
                n = read(r->fd, r->buf + r->end, want);
                if (n >= 0)
                        break;
                if (errno != EAGAIN && errno != EINTR)
                        return negative_errno();
        }
        if (n == 0) {
                r->eof = true;
                return 0;
        }
        r->bytes += (uint64_t) n;
        if (r->bytes > r->max_bytes)
                return -EFBIG;
        if (r->copy_fd >= 0) {
                k = write_all(r->copy_fd, r->buf + r->end, (size_t) n);
                if (k < 0)
                        return k;
        }
        r->end += (size_t) n;
        return 0;
}

int line_reader_next(LineReader *r, char **ret_line, size_t *ret_len, unsigned *ret_flags) {
        int k;

        assert(r);
        assert(ret_line && ret_len && ret_flags);

        /* A cut piece's NUL stood on the first byte of the rest. */
        if (r->continued)
                r->buf[r->start] = r->cut_byte;
        for (;;) {
                char *line = r->buf + r->start;
                size_t unread = r->end - r->start;
                char *nl = memchr(line, '\n', MIN(unread, r->max_line + 1));

                if (nl || unread > r->max_line || (r->eof && unread > 0)) {
                        unsigned flags = r->continued ? LINE_CONTINUED : 0;
                        size_t len;

                        if (nl) {
                                len = (size_t) (nl - line);
                                r->start += len + 1;
                                r->continued = false;
                        } else if (unread > r->max_line) {
                                len = r->max_line;
                                flags |= LINE_CUT;
                                r->start += len;
                                r->cut_byte = line[len];
                                r->continued = true;
                        } else {
                                len = unread;
                                flags |= LINE_UNTERMINATED;
                                r->start = r->end;
                                r->continued = false;
                        }
                        /* On its newline, the rest of a cut line (restored by the next call), or the spare byte
                         * after the end. */
                        line[len] = '\0';
                        *ret_line = line;
                        *ret_len = len;
                        *ret_flags = flags;
                        return 1;
                }
                if (r->eof)
                        return 0;

                /* Room to read into: what is unread moves to the front. */
                if (r->start > 0) {
                        memmove(r->buf, line, unread);
                        r->end = unread;
                        r->start = 0;
                }
                k = fill(r);
                if (k < 0)
                        return k;
        }
}

uint64_t line_reader_bytes(const LineReader *r) {
        return r->bytes;
}
