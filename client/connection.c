/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "connection.h"
#include "errors.h"
#include "reply.h"
#include "ctl.h"

const char *ctl_address(void) {
        const char *e;

        if (arg_address)
                return arg_address;
        e = getenv("MEMSTRACK_ADDRESS");
        return e && e[0] ? e : MEMSTRACK_SOCKET_DEFAULT;
}

/* Where the address came from, for messages: the environment is easy to forget. */
static const char *address_origin(void) {
        const char *e = getenv("MEMSTRACK_ADDRESS");

        return !arg_address && e && e[0] ? " (from $MEMSTRACK_ADDRESS)" : "";
}

int ctl_connect(VarlinkClient **ret) {
        VarlinkClient *c = NULL;
        int r;

        assert(ret);

        r = varlink_client_connect(ctl_address(), &c);
        switch (r) {
        case 0:
                *ret = c;
                return 0;
        case -ENOENT:
        case -ENOTDIR:
                fprintf(stderr, "memstrackd is not running (no socket at %s%s).\n", ctl_address(), address_origin());
                return CTL_EXIT_NOT_RUNNING;
        case -ECONNREFUSED:
                fprintf(stderr, "memstrackd is not running (nobody listens on %s%s).\n", ctl_address(),
                        address_origin());
                return CTL_EXIT_NOT_RUNNING;
        case -EACCES:
        case -EPERM:
                fprintf(stderr, "Permission denied: cannot connect to %s (root or group %s required).\n",
                        ctl_address(), MEMSTRACK_GROUP_DEFAULT);
                return CTL_EXIT_PERMISSION;
        case -EINVAL:
        case -ENAMETOOLONG:
                fprintf(stderr, "Invalid address '%s'%s: expected unix:/path or a socket path.\n", ctl_address(),
                        address_origin());
                return CTL_EXIT_USAGE;
        case -ENOMEM:
                return r;
        default:
                fprintf(stderr, "Failed to connect to %s: %s\n", ctl_address(), strerror(-r));
                return CTL_EXIT_NOT_RUNNING;
        }
}

int ctl_report_transport_error(int error) {
        switch (error) {
        case -ECONNRESET:
        case -EPIPE:
                fprintf(stderr, "memstrackd closed the connection before answering (%s).\n", ctl_address());
                return CTL_EXIT_PROTOCOL;
        case -ETIMEDOUT:
                fprintf(stderr, "memstrackd did not answer within %llus.\n",
                        (unsigned long long) (CTL_CALL_TIMEOUT_USEC / 1000000));
                return CTL_EXIT_PROTOCOL;
        case -EBADMSG:
                fprintf(stderr, "Protocol error: malformed reply from %s.\n", ctl_address());
                return CTL_EXIT_PROTOCOL;
        case -EMSGSIZE:
                fprintf(stderr, "Protocol error: reply from %s is too large.\n", ctl_address());
                return CTL_EXIT_PROTOCOL;
        default:
                fprintf(stderr, "Failed to talk to memstrackd at %s: %s\n", ctl_address(), strerror(-error));
                return CTL_EXIT_PROTOCOL;
        }
}

int ctl_report_error_reply(const char *error, json_t *parameters) {
        _cleanup_free_ char *m = ctl_error_message(error, parameters);

        if (!m)
                return -ENOMEM;
        fprintf(stderr, "%s\n", m);
        return ctl_error_exit_status(error);
}

int ctl_reply_result(int r, const char *error, json_t *parameters) {
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ctl_report_transport_error(r);
        if (error)
                return ctl_report_error_reply(error, parameters);
        return 0;
}

/* Waits of a paced method that are worth sitting out, and how many. */
#define CTL_PACE_WAIT_MAX_USEC (10U * 1000000U)
#define CTL_PACE_TRIES 4

int ctl_client_call(VarlinkClient *c, const char *method, json_t *parameters, json_t **ret_reply,
                    char **ret_error) {
        int r;

        for (unsigned i = 0;; i++) {
                r = varlink_client_call(c, method, parameters, CTL_CALL_TIMEOUT_USEC, ret_reply, ret_error);
                if (r < 0 || !*ret_error || !streq(*ret_error, "io.memstrack.LimitExceeded") ||
                    !streq(reply_string(*ret_reply, "limit") ?: "", "leaksPace") || i + 1 >= CTL_PACE_TRIES)
                        return r;
                uint64_t wait = reply_count(*ret_reply, "value");
                if (wait > CTL_PACE_WAIT_MAX_USEC)
                        return r;
                json_decref(*ret_reply);
                *ret_reply = NULL;
                free(*ret_error);
                *ret_error = NULL;
                (void) usleep((useconds_t) wait + 1000);
        }
}

int ctl_call_result(const char *method, int r, const char *error, json_t *reply) {
        int q = ctl_reply_result(r, error, reply);
        if (q != 0)
                return q;
        if (r > 0) {
                /* We never ask for more here; a streaming reply means we talk to something else. */
                fprintf(stderr, "Protocol error: unexpected streaming reply to %s.\n", method);
                return CTL_EXIT_PROTOCOL;
        }
        if (!json_is_object(reply)) {
                fprintf(stderr, "Protocol error: reply to %s has no parameters.\n", method);
                return CTL_EXIT_PROTOCOL;
        }
        return 0;
}

int ctl_call(VarlinkClient *c, const char *method, json_t *parameters, json_t **ret_reply) {
        _cleanup_free_ char *error = NULL;
        json_auto_t *reply = NULL;
        int r;

        assert(c);
        assert(method);
        assert(ret_reply);

        r = ctl_client_call(c, method, parameters, &reply, &error);
        r = ctl_call_result(method, r, error, reply);
        if (r != 0)
                return r;
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

int ctl_call_once(const char *method, json_t *parameters, json_t **ret_reply) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        int r;

        r = ctl_connect(&c);
        if (r != 0)
                return r;
        return ctl_call(c, method, parameters, ret_reply);
}

int ctl_print_json(json_t *j) {
        CtlJsonMode mode = arg_json;
        size_t flags;

        if (mode == CTL_JSON_AUTO || mode == CTL_JSON_OFF)
                mode = isatty(STDOUT_FILENO) ? CTL_JSON_PRETTY : CTL_JSON_SHORT;
        flags = mode == CTL_JSON_PRETTY ? JSON_INDENT(2) : JSON_COMPACT;
        /* JSON_ENCODE_ANY: a reply is always an object, but a report part may be an array. */
        if (json_dumpf(j, stdout, flags | JSON_ENCODE_ANY) < 0)
                return -ENOMEM;
        if (fputc('\n', stdout) == EOF || fflush(stdout) != 0)
                return -EIO;
        return 0;
}

int ctl_page_size(VarlinkClient *c, uint64_t *ret) {
        json_auto_t *status = NULL;
        int r;

        r = ctl_call(c, "io.memstrack.Status", NULL, &status);
        if (r != 0)
                return r;
        *ret = reply_count(status, "pageSize") ?: 4096;
        return 0;
}

int ctl_query(const char *method, json_t *parameters, json_t **ret_reply, uint64_t *ret_page_size) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *reply = NULL;
        int r;

        *ret_reply = NULL;
        r = ctl_connect(&c);
        if (r != 0)
                return r;
        r = ctl_call(c, method, parameters, &reply);
        if (r != 0)
                return r;
        if (arg_json != CTL_JSON_OFF)
                return ctl_print_json(reply);
        r = ctl_page_size(c, ret_page_size);
        if (r != 0)
                return r;
        *ret_reply = TAKE_PTR(reply);
        return 0;
}
