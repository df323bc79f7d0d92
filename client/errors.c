/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "ctl.h"
#include "errors.h"
#include "format.h"
#include "reply.h"
#include "varlink.h"

/* A string parameter made safe to print; def when it is missing. NULL on OOM. */
static char *param_string(const json_t *parameters, const char *key, const char *def) {
        return format_sanitize(reply_string(parameters, key) ?: def);
}

static bool version_mismatch(const char *error) {
        return streq(error, VARLINK_ERROR_METHOD_NOT_FOUND) || streq(error, VARLINK_ERROR_INTERFACE_NOT_FOUND) ||
               streq(error, VARLINK_ERROR_METHOD_NOT_IMPLEMENTED);
}

char *ctl_error_message(const char *error, const json_t *parameters) {
        char *m = NULL;
        int r;

        assert(error);

        if (streq(error, MEMSTRACK_ERROR_NO_SUCH_TASK)) {
                json_t *pid = json_object_get(parameters, "pid");
                if (json_is_integer(pid))
                        r = asprintf(&m, "No task with pid %" JSON_INTEGER_FORMAT " is known to memstrackd "
                                     "(memstrackctl tasks --all lists them).", json_integer_value(pid));
                else
                        r = asprintf(&m, "No such task is known to memstrackd "
                                     "(memstrackctl tasks --all lists them).");
        } else if (streq(error, MEMSTRACK_ERROR_NO_SUCH_MODULE)) {
                _cleanup_free_ char *name = param_string(parameters, "name", "?");
                if (!name)
                        return NULL;
                r = asprintf(&m, "No module '%s' is known to memstrackd (memstrackctl modules lists them).", name);
        } else if (streq(error, MEMSTRACK_ERROR_NO_SUCH_UNIT)) {
                _cleanup_free_ char *name = param_string(parameters, "name", "?");
                if (!name)
                        return NULL;
                r = asprintf(&m, "No unit '%s' is known to memstrackd (memstrackctl units --all lists them).", name);
        } else if (streq(error, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT)) {
                _cleanup_free_ char *name = param_string(parameters, "name", "?");
                if (!name)
                        return NULL;
                r = asprintf(&m, "No snapshot '%s' is saved in memstrackd "
                             "(save one with: memstrackctl snapshot %s).", name, name);
        } else if (streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED)) {
                _cleanup_free_ char *reason = param_string(parameters, "reason", "no reason given");
                if (!reason)
                        return NULL;
                r = asprintf(&m, "Permission denied by memstrackd: %s (root or group %s required).", reason,
                             MEMSTRACK_GROUP_DEFAULT);
        } else if (streq(error, MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS)) {
                _cleanup_free_ char *reason = param_string(parameters, "reason", "too many connections");
                if (!reason)
                        return NULL;
                r = asprintf(&m, "memstrackd is busy and turned the connection away: %s. Try again later.", reason);
        } else if (streq(error, MEMSTRACK_ERROR_NOT_TRACING)) {
                _cleanup_free_ char *reason = param_string(parameters, "reason", "no reason given");
                if (!reason)
                        return NULL;
                r = asprintf(&m, "memstrackd is not tracing: %s.", reason);
        } else if (streq(error, MEMSTRACK_ERROR_LIMIT_EXCEEDED)) {
                _cleanup_free_ char *limit = param_string(parameters, "limit", "?");
                int64_t value = reply_int(parameters, "value", -1);
                if (!limit)
                        return NULL;
                if (streq(limit, "messageSize"))
                        r = asprintf(&m, "The answer is larger than memstrackd sends (%" PRIi64 " bytes); "
                                     "ask for less with --limit or --depth.", value);
                else if (streq(limit, "snapshots"))
                        r = asprintf(&m, "memstrackd keeps at most %" PRIi64 " snapshots per user; reuse a name, "
                                     "or delete one (memstrackctl delete-snapshot NAME).", value);
                else if (streq(limit, "snapshotsAllUsers"))
                        r = asprintf(&m, "memstrackd keeps at most %" PRIi64 " snapshots for all users but root "
                                     "together, and has them; root can delete others' (memstrackctl snapshots "
                                     "--all, delete-snapshot --uid).", value);
                else
                        r = asprintf(&m, "memstrackd refused: over its limit '%s' (%" PRIi64 ").", limit, value);
        } else if (streq(error, MEMSTRACK_ERROR_INTERNAL)) {
                _cleanup_free_ char *message = param_string(parameters, "message", "no message");
                if (!message)
                        return NULL;
                r = asprintf(&m, "memstrackd failed to answer: %s.", message);
        } else if (version_mismatch(error)) {
                const char *what = reply_string(parameters, "method") ?: reply_string(parameters, "interface");
                _cleanup_free_ char *name = format_sanitize(what ?: "?");
                if (!name)
                        return NULL;
                r = asprintf(&m, "memstrackd does not know %s: it is another version than memstrackctl %s.", name,
                             PACKAGE_VERSION);
        } else if (streq(error, VARLINK_ERROR_INVALID_PARAMETER)) {
                _cleanup_free_ char *name = param_string(parameters, "parameter", "?");
                if (!name)
                        return NULL;
                r = asprintf(&m, "memstrackd rejected the parameter '%s' (a bad value, or another version than "
                             "memstrackctl %s).", name, PACKAGE_VERSION);
        } else {
                _cleanup_free_ char *p = parameters ? json_dumps(parameters, JSON_COMPACT) : NULL;
                _cleanup_free_ char *name = format_sanitize(error), *clean = format_sanitize(p ?: "{}");
                if (!name || !clean)
                        return NULL;
                r = asprintf(&m, "memstrackd replied with error %s %s.", name, clean);
        }
        return r < 0 ? NULL : m;
}

int ctl_error_exit_status(const char *error) {
        if (streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED))
                return CTL_EXIT_PERMISSION;
        if (streq(error, MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS))
                return CTL_EXIT_BUSY;
        /* The daemon did not understand us: a version mismatch, which is a protocol problem. */
        if (version_mismatch(error) || streq(error, VARLINK_ERROR_INVALID_PARAMETER))
                return CTL_EXIT_PROTOCOL;
        return CTL_EXIT_FAILURE;
}
