/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file-util.h"
#include "macro.h"
#include "read-file.h"

/* Reads from fd until EOF or size bytes; returns the count or -errno. */
static ssize_t read_loop(int fd, char *buf, size_t size) {
        size_t n = 0;

        while (n < size) {
                ssize_t k = read(fd, buf + n, size - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        return (ssize_t) n;
}

ssize_t read_file_small(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        assert(path);
        assert(buf);
        assert(size > 0);

        /* Bounded by size whatever path is; O_NONBLOCK so that a FIFO is not waited on. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        n = read_loop(fd, buf, size - 1);
        if (n < 0)
                return n;
        buf[n] = '\0';
        return n;
}

int read_file_full(const char *path, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        assert(path);
        assert(ret);
        assert(ret_size);
        assert(max_size < SIZE_MAX / 2);

        fd = open_regular(path, 0);
        if (fd < 0)
                return fd;

        for (;;) {
                /* Room for max_size bytes, one more to tell a bigger file, and the NUL. */
                size_t want = MIN(MAX(allocated * 2, (size_t) 8192), max_size + 2);
                ssize_t n;
                char *p;

                p = realloc(buf, want);
                if (!p)
                        return -ENOMEM;
                buf = p;
                allocated = want;

                n = read_loop(fd, buf + size, allocated - 1 - size);
                if (n < 0)
                        return (int) n;
                size += (size_t) n;
                if (size > max_size)
                        return -EFBIG;
                if (size < allocated - 1)
                        break;          /* read_loop stops short only at EOF */
        }
        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

int read_file_long(const char *path, long *ret) {
        char buf[32];
        char *end;
        ssize_t n;
        long v;

        assert(ret);

        n = read_file_small(path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        errno = 0;
        v = strtol(buf, &end, 10);
        if (errno != 0 || end == buf || (*end != '\0' && *end != '\n'))
                return -EINVAL;
        *ret = v;
        return 0;
}

int read_proc_owner(pid_t pid, uid_t *ret_uid) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;
        unsigned long real, effective, saved;
        char path[32], buf[4096];
        struct stat st;
        ssize_t n;

        assert(ret_uid);

        /* One directory for both reads: if pid is reused meanwhile, the second read fails (ESRCH) instead
         * of answering for another process. */
        (void) snprintf(path, sizeof(path), "/proc/%d", (int) pid);
        dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return negative_errno();
        if (fstat(dir, &st) < 0)
                return negative_errno();
        fd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        /* "Uid:" is the ninth line, well inside the first 4 KiB. */
        n = read_loop(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return (int) n;
        buf[n] = '\0';
        const char *uid = strstr(buf, "\nUid:");
        if (!uid || sscanf(uid + strlen("\nUid:"), "%lu %lu %lu", &real, &effective, &saved) != 3)
                return -EBADMSG;
        if (real != effective || effective != saved || effective != (unsigned long) st.st_uid)
                return -EPERM;
        *ret_uid = st.st_uid;
        return 0;
}
