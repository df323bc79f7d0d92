/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A memstrackd of memstrackctl's own, for verbs that need a daemon with a source of their own (import
 * page-owner, record): on a socket in a new directory under $TMPDIR, its stderr in a log file there. The
 * daemon is $MEMSTRACKD if set, else the installed one.
 */

#include <stdbool.h>
#include <sys/types.h>

typedef struct PrivateDaemon {
        char *dir;
        char *socket_path;
        char *log_path;
        char *address;          /* unix:SOCKET, for arg_address */
        pid_t pid;              /* 0: not running */
} PrivateDaemon;

/* Makes the directory (d starts zeroed). -errno. */
int private_daemon_prepare(PrivateDaemon *d);
/* Starts memstrackd with args (NULL-terminated, after its own --socket, --group and --foreground) and waits
 * until it answers (at most timeout_msec; its exit ends the wait at once). what names the input in
 * messages ("standard input", a file). 0, a CtlExit after saying why, or -errno. */
int private_daemon_run(PrivateDaemon *d, const char *what, char *const args[], unsigned timeout_msec);

/* A path in the daemon's directory (new string), or NULL on OOM. */
char *private_daemon_path(const PrivateDaemon *d, const char *name);

/* Prints what the daemon said at warning level or above, without the level. */
void private_daemon_print_warnings(const PrivateDaemon *d);

/* Stops it (SIGTERM, then waits) and removes the directory. */
void private_daemon_stop(PrivateDaemon *d);
