/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>

#include "macro.h"
#include "stop-signal.h"

static void stop_signals(sigset_t *ret) {
        sigemptyset(ret);
        sigaddset(ret, SIGTERM);
        sigaddset(ret, SIGINT);
}

int stop_signal_fd(void) {
        sigset_t mask;
        int fd;

        stop_signals(&mask);
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? negative_errno() : fd;
}

int stop_signal_pending(void) {
        sigset_t pending;

        if (sigpending(&pending) < 0)
                return 0;
        if (sigismember(&pending, SIGTERM) == 1)
                return SIGTERM;
        if (sigismember(&pending, SIGINT) == 1)
                return SIGINT;
        return 0;
}

int stop_signal_wait(int fd, short events, int stop_fd) {
        struct pollfd p[2] = {
                { .fd = fd, .events = events },
                { .fd = stop_fd, .events = POLLIN },
        };

        for (;;) {
                int n = poll(p, stop_fd >= 0 ? 2 : 1, -1);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                /* A stop wins over data: the input may never end. */
                if (stop_fd >= 0 && (p[1].revents & POLLIN))
                        return -ECANCELED;
                if (p[0].revents & POLLNVAL)
                        return -EBADF;
                if (p[0].revents != 0)
                        return 0;
        }
}
