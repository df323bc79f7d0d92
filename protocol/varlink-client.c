/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <jansson.h>

#include "macro.h"
#include "time-util.h"
#include "varlink.h"

struct VarlinkClient {
        int fd;
        VarlinkFramer *framer;
};

int varlink_address_to_path(const char *address, char **ret_path) {
        _cleanup_free_ char *p = NULL;
        const char *a;
        size_t n;

        assert(ret_path);

        if (!address)
                return -EINVAL;

        if (strncmp(address, "unix:", 5) == 0) {
                a = address + 5;
                /* "unix:/run/x;mode=0666": what follows ';' is for the listener, not for us. */
                n = strcspn(a, ";");
                if (n == 0 || (a[0] != '/' && a[0] != '@'))
                        return -EINVAL;
        } else if (address[0] == '/' || strncmp(address, "./", 2) == 0) {
                a = address;
                n = strlen(a);
        } else
                return -EINVAL;

        p = strndup(a, n);
        if (!p)
                return -ENOMEM;
        *ret_path = TAKE_PTR(p);
        return 0;
}

int varlink_client_new_from_fd(int fd, VarlinkClient **ret) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_close_ int sfd = fd;
        int flags, r;

        assert(ret);

        if (fd < 0)
                return -EBADF;

        /* Non-blocking so that every wait goes through poll() and honours its timeout. */
        flags = fcntl(sfd, F_GETFL);
        if (flags < 0 || fcntl(sfd, F_SETFL, flags | O_NONBLOCK) < 0)
                return negative_errno();

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        r = varlink_framer_new(0, &c->framer);
        if (r < 0)
                return r;
        c->fd = TAKE_FD(sfd);
        *ret = TAKE_PTR(c);
        return 0;
}

int varlink_client_connect(const char *address, VarlinkClient **ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t len;
        size_t n;
        int r;

        assert(ret);

        r = varlink_address_to_path(address, &path);
        if (r < 0)
                return r;
        n = strlen(path);
        if (n >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, n);
        if (path[0] == '@') {
                /* Abstract namespace: leading NUL, no terminating one. */
                sa.sun_path[0] = '\0';
                len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n);
        } else
                len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (const struct sockaddr *) &sa, len) < 0)
                return negative_errno();

        return varlink_client_new_from_fd(TAKE_FD(fd), ret);
}

VarlinkClient *varlink_client_free(VarlinkClient *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        varlink_framer_free(c->framer);
        free(c);
        return NULL;
}

int varlink_client_get_fd(const VarlinkClient *c) {
        assert(c);
        return c->fd;
}

/* Waits for events on the socket until deadline_usec (UINT64_MAX: forever). -ETIMEDOUT at the deadline. */
static int client_wait(VarlinkClient *c, short events, uint64_t deadline_usec) {
        for (;;) {
                struct pollfd p = { .fd = c->fd, .events = events };
                int timeout_ms = -1, r;

                if (deadline_usec != UINT64_MAX) {
                        uint64_t now = now_usec(CLOCK_MONOTONIC);

                        if (now >= deadline_usec)
                                return -ETIMEDOUT;
                        timeout_ms = (int) MIN((deadline_usec - now + 999) / 1000, (uint64_t) INT32_MAX);
                }
                r = poll(&p, 1, timeout_ms);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (r > 0)
                        return 0;
        }
}

static uint64_t deadline_from_timeout(uint64_t timeout_usec) {
        uint64_t now;

        if (timeout_usec == UINT64_MAX)
                return UINT64_MAX;
        now = now_usec(CLOCK_MONOTONIC);
        return timeout_usec > UINT64_MAX - now - 1 ? UINT64_MAX - 1 : now + timeout_usec;
}

int varlink_client_send(VarlinkClient *c, const char *method, json_t *parameters, VarlinkCallFlags flags,
                uint64_t timeout_usec) {
        _cleanup_free_ char *text = NULL;
        uint64_t deadline = deadline_from_timeout(timeout_usec);
        size_t size, done = 0;
        int r;

        assert(c);

        r = varlink_call_build(method, parameters, flags, &text, &size);
        if (r < 0)
                return r;

        while (done < size) {
                ssize_t n = send(c->fd, text + done, size - done, MSG_NOSIGNAL);

                if (n >= 0) {
                        done += (size_t) n;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return errno == EPIPE ? -ECONNRESET : negative_errno();
                r = client_wait(c, POLLOUT, deadline);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One recv() into the framer. 0 on progress, -EAGAIN if nothing was there, -ECONNRESET at EOF. */
static int client_read_some(VarlinkClient *c) {
        void *buf;
        size_t size;
        ssize_t n;
        int r;

        r = varlink_framer_get_space(c->framer, &buf, &size);
        if (r < 0)
                return r;
        n = recv(c->fd, buf, size, MSG_DONTWAIT);
        if (n < 0)
                return errno == EINTR ? 0 : negative_errno();
        if (n == 0)
                return -ECONNRESET;
        varlink_framer_commit(c->framer, (size_t) n);
        return 0;
}

int varlink_client_read_reply(VarlinkClient *c, uint64_t timeout_usec, json_t **ret_parameters,
                char **ret_error) {
        uint64_t deadline = deadline_from_timeout(timeout_usec);
        VarlinkReply reply = {};
        const char *msg;
        size_t size;
        int r;

        assert(c);
        assert(ret_parameters);
        assert(ret_error);

        for (;;) {
                r = varlink_framer_next(c->framer, &msg, &size);
                if (r < 0)
                        return r;
                if (r > 0)
                        break;

                r = client_read_some(c);
                if (r == -EAGAIN) {
                        if (timeout_usec == 0)
                                return -EAGAIN;
                        r = client_wait(c, POLLIN, deadline);
                }
                if (r < 0)
                        return r;
        }

        r = varlink_reply_parse(msg, size, &reply);
        if (r < 0)
                return r;

        *ret_parameters = TAKE_PTR(reply.parameters);
        *ret_error = TAKE_PTR(reply.error);
        return reply.continues ? 1 : 0;
}

int varlink_client_call(VarlinkClient *c, const char *method, json_t *parameters, uint64_t timeout_usec,
                json_t **ret_parameters, char **ret_error) {
        int r;

        r = varlink_client_send(c, method, parameters, 0, timeout_usec);
        if (r == -ECONNRESET) {
                /* A server that turns a connection away says why first (TooManyConnections) and closes
                 * without waiting for the call: that reply is still readable. */
                int k = varlink_client_read_reply(c, 0, ret_parameters, ret_error);
                return k >= 0 ? k : r;
        }
        if (r < 0)
                return r;
        return varlink_client_read_reply(c, timeout_usec, ret_parameters, ret_error);
}
