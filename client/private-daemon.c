/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "macro.h"
#include "private-daemon.h"
#include "varlink.h"

#define ARGS_MAX 16

void private_daemon_print_warnings(const PrivateDaemon *d) {
        _cleanup_fclose_ FILE *f = d->log_path ? fopen(d->log_path, "re") : NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        if (!f)
                return;
        while (getline(&line, &size, f) > 0)
                if (line[0] == '<' && line[1] >= '0' && line[1] <= '4' && line[2] == '>')
                        fputs(line + 3, stderr);
}

char *private_daemon_path(const PrivateDaemon *d, const char *name) {
        char *p;
        return asprintf(&p, "%s/%s", d->dir, name) < 0 ? NULL : p;
}

static int spawn(PrivateDaemon *d, char *const args[]) {
        _cleanup_free_ char *socket_arg = NULL, *group_arg = NULL;
        const char *daemon = getenv("MEMSTRACKD");
        struct group *g = getgrgid(getgid());
        char *argv[ARGS_MAX + 8];
        size_t n = 0;
        pid_t pid;

        if (!daemon || !*daemon)
                daemon = MEMSTRACKD_PATH;
        /* The directory is ours alone; the group lets a caller who is not root connect. */
        if (asprintf(&socket_arg, "--socket=%s", d->socket_path) < 0 ||
            asprintf(&group_arg, "--group=%s", g ? g->gr_name : "") < 0)
                return -ENOMEM;
        argv[n++] = (char *) "memstrackd";
        argv[n++] = (char *) "--foreground";
        argv[n++] = (char *) "--log-level=warning";
        argv[n++] = socket_arg;
        argv[n++] = group_arg;
        for (size_t i = 0; args[i] && i < ARGS_MAX; i++)
                argv[n++] = args[i];
        argv[n] = NULL;

        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                FILE *log = freopen(d->log_path, "w", stderr);     /* not "e": the daemon keeps it */

                /* Its own process group: a Ctrl-C meant for a recorded program does not stop it. */
                (void) setpgid(0, 0);
                /* Debug files come from this machine only, never from a debuginfod server. */
                (void) unsetenv("DEBUGINFOD_URLS");
                if (log) {
                        (void) dup2(fileno(log), STDOUT_FILENO);
                        execv(daemon, argv);
                        fprintf(stderr, "<3>Failed to run %s: %s\n", daemon, strerror(errno));
                        fflush(stderr);
                }
                _exit(127);
        }
        d->pid = pid;
        return 0;
}

int private_daemon_prepare(PrivateDaemon *d) {
        const char *tmp = getenv("TMPDIR");
        int r;

        *d = (PrivateDaemon) {};
        if (asprintf(&d->dir, "%s/memstrackctl.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0) {
                d->dir = NULL;
                return -ENOMEM;
        }
        if (!mkdtemp(d->dir)) {
                r = negative_errno();
                free(d->dir);
                d->dir = NULL;
                return r;
        }
        d->socket_path = private_daemon_path(d, "io.memstrack");
        d->log_path = private_daemon_path(d, "log");
        if (!d->socket_path || !d->log_path || asprintf(&d->address, "unix:%s", d->socket_path) < 0) {
                d->address = NULL;
                return -ENOMEM;
        }
        return 0;
}

int private_daemon_run(PrivateDaemon *d, const char *what, char *const args[], unsigned timeout_msec) {
        int r = spawn(d, args);
        if (r < 0)
                return r;

        for (unsigned waited = 0; waited < timeout_msec; waited += 10) {
                VarlinkClient *c = NULL;
                int status;

                if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
                        d->pid = 0;
                        private_daemon_print_warnings(d);
                        fprintf(stderr, "memstrackctl: memstrackd could not start on %s (%s %d).\n", what,
                                WIFEXITED(status) ? "exit status" : "signal",
                                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                        return CTL_EXIT_FAILURE;
                }
                if (varlink_client_connect(d->address, &c) == 0) {
                        varlink_client_free(c);
                        return 0;
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        fprintf(stderr, "memstrackctl: memstrackd did not finish reading %s in %u s.\n", what, timeout_msec / 1000);
        return CTL_EXIT_FAILURE;
}

void private_daemon_stop(PrivateDaemon *d) {
        if (d->pid > 0) {
                (void) kill(d->pid, SIGTERM);
                (void) waitpid(d->pid, NULL, 0);
                d->pid = 0;
        }
        if (d->dir) {
                /* The daemon's own files, then the directory (a source's socket is removed by the daemon). */
                if (d->socket_path)
                        (void) unlink(d->socket_path);
                if (d->log_path)
                        (void) unlink(d->log_path);
                (void) rmdir(d->dir);
        }
        free(d->dir);
        free(d->socket_path);
        free(d->log_path);
        free(d->address);
        *d = (PrivateDaemon) {};
}
