/* SPDX-License-Identifier: MIT */

/* client/errors.c: one sentence per error reply, names made safe, exit statuses. */

#include <stdlib.h>

#include <jansson.h>

#include "config.h"
#include "ctl.h"
#include "errors.h"
#include "tests.h"
#include "varlink.h"

static void check(const char *error, const char *parameters, const char *expected) {
        json_auto_t *p = parameters ? json_loads(parameters, 0, NULL) : NULL;
        _cleanup_free_ char *m = NULL;

        if (parameters)
                ASSERT_NOT_NULL(p);
        m = ctl_error_message(error, p);
        ASSERT_NOT_NULL(m);
        ASSERT_STREQ(m, expected);
}

static void test_messages(void) {
        check(MEMSTRACK_ERROR_NO_SUCH_TASK, "{\"pid\": 999999}",
              "No task with pid 999999 is known to memstrackd (memstrackctl tasks --all lists them).");
        check(MEMSTRACK_ERROR_NO_SUCH_TASK, NULL,
              "No such task is known to memstrackd (memstrackctl tasks --all lists them).");
        check(MEMSTRACK_ERROR_NO_SUCH_MODULE, "{\"name\": \"ext4\"}",
              "No module 'ext4' is known to memstrackd (memstrackctl modules lists them).");
        /* A name from the kernel or the command line cannot steer the terminal. */
        check(MEMSTRACK_ERROR_NO_SUCH_MODULE, "{\"name\": \"x\\u001b[2J\"}",
              "No module 'x\\x1b[2J' is known to memstrackd (memstrackctl modules lists them).");
        check(MEMSTRACK_ERROR_NO_SUCH_UNIT, "{\"name\": \"web\\u001b.service\"}",
              "No unit 'web\\x1b.service' is known to memstrackd (memstrackctl units --all lists them).");
        check(MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT, "{\"name\": \"before\"}",
              "No snapshot 'before' is saved in memstrackd (save one with: memstrackctl snapshot before).");
        check(MEMSTRACK_ERROR_PERMISSION_DENIED, "{\"reason\": \"Reset is for root only\"}",
              "Permission denied by memstrackd: Reset is for root only (root or group " MEMSTRACK_GROUP_DEFAULT
              " required).");
        check(MEMSTRACK_ERROR_PERMISSION_DENIED, "{}",
              "Permission denied by memstrackd: no reason given (root or group " MEMSTRACK_GROUP_DEFAULT
              " required).");
        check(MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS, "{\"reason\": \"all 64 connections are in use\"}",
              "memstrackd is busy and turned the connection away: all 64 connections are in use. Try again later.");
        check(MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS, NULL,
              "memstrackd is busy and turned the connection away: too many connections. Try again later.");
        check(MEMSTRACK_ERROR_NOT_TRACING, "{\"reason\": \"perf_event_open failed\"}",
              "memstrackd is not tracing: perf_event_open failed.");
        check(MEMSTRACK_ERROR_LIMIT_EXCEEDED, "{\"limit\": \"messageSize\", \"value\": 16777216}",
              "The answer is larger than memstrackd sends (16777216 bytes); ask for less with --limit or --depth.");
        check(MEMSTRACK_ERROR_LIMIT_EXCEEDED, "{\"limit\": \"snapshots\", \"value\": 8}",
              "memstrackd keeps at most 8 snapshots per user; reuse a name, or delete one "
              "(memstrackctl delete-snapshot NAME).");
        check(MEMSTRACK_ERROR_LIMIT_EXCEEDED, "{\"limit\": \"snapshotsAllUsers\", \"value\": 24}",
              "memstrackd keeps at most 24 snapshots for all users but root together, and has them; root can "
              "delete others' (memstrackctl snapshots --all, delete-snapshot --uid).");
        check(MEMSTRACK_ERROR_LIMIT_EXCEEDED, "{\"limit\": \"connections\", \"value\": 8}",
              "memstrackd refused: over its limit 'connections' (8).");
        check(MEMSTRACK_ERROR_INTERNAL, "{\"errno\": 12, \"message\": \"out of memory\"}",
              "memstrackd failed to answer: out of memory.");
        check(VARLINK_ERROR_METHOD_NOT_FOUND, "{\"method\": \"io.memstrack.Frob\"}",
              "memstrackd does not know io.memstrack.Frob: it is another version than memstrackctl "
              PACKAGE_VERSION ".");
        check(VARLINK_ERROR_INTERFACE_NOT_FOUND, "{\"interface\": \"io.memstrack\"}",
              "memstrackd does not know io.memstrack: it is another version than memstrackctl "
              PACKAGE_VERSION ".");
        check(VARLINK_ERROR_INVALID_PARAMETER, "{\"parameter\": \"name\"}",
              "memstrackd rejected the parameter 'name' (a bad value, or another version than memstrackctl "
              PACKAGE_VERSION ").");
        check("com.example.Odd", "{\"a\": 1}", "memstrackd replied with error com.example.Odd {\"a\":1}.");
        check("com.example.Odd", NULL, "memstrackd replied with error com.example.Odd {}.");
        /* Parameters of the wrong type read as missing, not as a crash. */
        check(MEMSTRACK_ERROR_NO_SUCH_TASK, "{\"pid\": \"12\"}",
              "No such task is known to memstrackd (memstrackctl tasks --all lists them).");
        check(MEMSTRACK_ERROR_NO_SUCH_MODULE, "{\"name\": 3}",
              "No module '?' is known to memstrackd (memstrackctl modules lists them).");
}

static void test_exit_status(void) {
        ASSERT_EQ(ctl_error_exit_status(MEMSTRACK_ERROR_PERMISSION_DENIED), CTL_EXIT_PERMISSION);
        ASSERT_EQ(ctl_error_exit_status(MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS), CTL_EXIT_BUSY);
        ASSERT_EQ(ctl_error_exit_status(MEMSTRACK_ERROR_NO_SUCH_TASK), CTL_EXIT_FAILURE);
        ASSERT_EQ(ctl_error_exit_status(MEMSTRACK_ERROR_NOT_TRACING), CTL_EXIT_FAILURE);
        ASSERT_EQ(ctl_error_exit_status(VARLINK_ERROR_METHOD_NOT_FOUND), CTL_EXIT_PROTOCOL);
        ASSERT_EQ(ctl_error_exit_status(VARLINK_ERROR_INVALID_PARAMETER), CTL_EXIT_PROTOCOL);
        ASSERT_EQ(ctl_error_exit_status("com.example.Odd"), CTL_EXIT_FAILURE);
}

int main(void) {
        test_messages();
        test_exit_status();
        return 0;
}
