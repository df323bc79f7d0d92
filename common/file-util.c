/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file-util.h"
#include "macro.h"

int open_regular(const char *path, int flags) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return TAKE_FD(fd);
}

int fopen_regular(const char *path, int flags, FILE **ret) {
        _cleanup_close_ int fd = open_regular(path, flags);
        FILE *f;

        if (fd < 0)
                return fd;
        f = fdopen(fd, "r");
        if (!f)
                return negative_errno();
        TAKE_FD(fd);
        *ret = f;
        return 0;
}

const char *file_error_string(int error) {
        return error == -EBADFD ? "not a regular file" : strerror(abs(error));
}
