/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A memstrackd of memstrackctl's own, for verbs that need a daemon with a source of their own (import
 * page-owner, record), in a new directory under $TMPDIR: its log (its stderr) and its sockets. The sockets
 * are memstrackctl's: it binds them and passes them to memstrackd (socket activation: LISTEN_FDS and
 * LISTEN_FDNAMES), so they take connections from the start and are answered once memstrackd is up, and
 * memstrackd says when it is (sd_notify's READY=1 on a socket of the directory): nobody polls or sleeps.
 * memstrackd is found by program_path() ($MEMSTRACKD, this build tree's, the installed one). It dies with memstrackctl (PR_SET_PDEATHSIG)
 * and ignores the terminal's Ctrl-C (a process group of its own): memstrackctl stops it.
 */

#include <stdbool.h>
#include <sys/types.h>

#define PRIVATE_DAEMON_SOCKETS_MAX 4

typedef struct PrivateDaemon {
        char *dir;
        char *socket_path;      /* its varlink socket */
        char *log_path;
        char *notify_path;
        char *address;          /* unix:SOCKET, for arg_address */
        int notify_fd;          /* READY=1 comes here */
        int pidfd;              /* readable once it exited; -1 where pidfds do not exist */
        pid_t pid;              /* 0: not running */
        bool terminating;       /* SIGTERM sent (private_daemon_terminate()), its exit not yet waited for */
        /* The sockets it is passed, [0] the varlink one; closed here once it has them. */
        int listen_fds[PRIVATE_DAEMON_SOCKETS_MAX];
        const char *listen_names[PRIVATE_DAEMON_SOCKETS_MAX];
        char *listen_paths[PRIVATE_DAEMON_SOCKETS_MAX];
        size_t n_listen;
} PrivateDaemon;

/* Makes the directory, binds the varlink socket and the notification socket. d starts zeroed and is
 * stopped (private_daemon_stop()) whatever this returns. -errno. */
int private_daemon_prepare(PrivateDaemon *d);
/* Binds another socket in the directory, of type (SOCK_SEQPACKET, ...), passed to memstrackd under
 * name; its path in *ret_path (borrowed: valid until private_daemon_stop()). Before private_daemon_start().
 * -errno. */
int private_daemon_listen(PrivateDaemon *d, const char *name, int type, const char **ret_path);
/* Starts memstrackd with args (NULL-terminated, after its own --foreground, --log-level and --group) and
 * returns at once: its sockets take connections already. -errno. */
int private_daemon_start(PrivateDaemon *d, char *const args[]);
/* Waits until memstrackd is ready (at most timeout_msec): 0; or it exited or the time ran out: says so,
 * naming what it was to do ("import standard input") and returns CTL_EXIT_FAILURE; -EINTR when a signal
 * handler ran meanwhile (the caller decides: private_daemon_stop_signal()), other -errno. */
int private_daemon_wait_ready(PrivateDaemon *d, const char *action, unsigned timeout_msec);

/* SIGINT and SIGTERM, for a verb that stops cleanly at them: caught (unless ignored, as a shell ignores
 * SIGINT for a command it runs in the background) and blocked; they come in only during the waits here
 * (ppoll()), so none lands between a verb's look at private_daemon_stop_signal() and a wait. Restoring the
 * mask lets a pending one in. */
void private_daemon_catch_stop_signals(void);
void private_daemon_release_stop_signals(void);
/* The stop signal that came, 0 if none. */
int private_daemon_stop_signal(void);
/* Waits until fd is readable (1), timeout_usec passed (0; UINT64_MAX: no timeout) or a stop signal came
 * (-EINTR). */
int private_daemon_wait_fd(int fd, uint64_t timeout_usec);

/* Prints what the daemon said at warning level or above, without the level. */
void private_daemon_print_warnings(const PrivateDaemon *d);

/* Stops it (SIGTERM, then waits) and removes the directory. */
void private_daemon_stop(PrivateDaemon *d);
/* Tells it to stop (SIGTERM) once nothing more is asked of it, so that it exits while the caller goes
 * on; private_daemon_stop() then waits for it. */
void private_daemon_terminate(PrivateDaemon *d);
