/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "macro.h"
#include "private-daemon.h"
#include "program-paths.h"

#define ARGS_MAX 16
#define NOTIFY_MESSAGE_MAX 4096

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

/* ---- Stop signals -------------------------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal = 0;
static sigset_t mask_before;
static bool stop_signals_blocked;

static void on_stop_signal(int sig) {
        stop_signal = sig;
}

void private_daemon_catch_stop_signals(void) {
        struct sigaction sa = { .sa_handler = on_stop_signal }, old;
        sigset_t both;

        (void) sigemptyset(&both);
        (void) sigaddset(&both, SIGINT);
        (void) sigaddset(&both, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &both, &mask_before) == 0)
                stop_signals_blocked = true;
        /* No SA_RESTART: a wait ends. */
        (void) sigemptyset(&sa.sa_mask);
        for (int sig = SIGINT; sig; sig = sig == SIGINT ? SIGTERM : 0)
                if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                        (void) sigaction(sig, &sa, NULL);
}

void private_daemon_release_stop_signals(void) {
        if (stop_signals_blocked)
                (void) sigprocmask(SIG_SETMASK, &mask_before, NULL);
        stop_signals_blocked = false;
}

int private_daemon_stop_signal(void) {
        return stop_signal;
}

/* The mask during a wait: the current one without SIGINT and SIGTERM. */
static int waiting_mask(sigset_t *ret) {
        if (sigprocmask(SIG_SETMASK, NULL, ret) < 0 || sigdelset(ret, SIGINT) < 0 || sigdelset(ret, SIGTERM) < 0)
                return negative_errno();
        return 0;
}

int private_daemon_wait_fd(int fd, uint64_t timeout_usec) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        struct timespec ts = { .tv_sec = (time_t) (timeout_usec / 1000000),
                               .tv_nsec = (long) (timeout_usec % 1000000) * 1000 };
        sigset_t mask;
        int r;

        if (stop_signal)
                return -EINTR;
        r = waiting_mask(&mask);
        if (r < 0)
                return r;
        r = ppoll(&p, fd >= 0 ? 1 : 0, timeout_usec == UINT64_MAX ? NULL : &ts, &mask);
        if (r < 0)
                return negative_errno();
        return r > 0 ? 1 : 0;
}

static char *path_in(const PrivateDaemon *d, const char *name) {
        char *p;
        return asprintf(&p, "%s/%s", d->dir, name) < 0 ? NULL : p;
}

/* A socket of type bound at path; listening unless it is a datagram socket. */
static int bind_socket(const char *path, int type) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path));
        fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            (type != SOCK_DGRAM && listen(fd, SOMAXCONN) < 0))
                return negative_errno();
        return TAKE_FD(fd);
}

int private_daemon_prepare(PrivateDaemon *d) {
        const char *tmp = getenv("TMPDIR");
        int r;

        *d = (PrivateDaemon) { .notify_fd = -EBADF, .pidfd = -EBADF };
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
        d->socket_path = path_in(d, "io.memstrack");
        d->log_path = path_in(d, "log");
        d->notify_path = path_in(d, "notify");
        if (!d->socket_path || !d->log_path || !d->notify_path ||
            asprintf(&d->address, "unix:%s", d->socket_path) < 0) {
                d->address = NULL;
                return -ENOMEM;
        }
        d->notify_fd = bind_socket(d->notify_path, SOCK_DGRAM);
        if (d->notify_fd < 0)
                return d->notify_fd;
        r = bind_socket(d->socket_path, SOCK_STREAM);
        if (r < 0)
                return r;
        d->listen_fds[0] = r;
        d->listen_names[0] = "varlink";
        d->n_listen = 1;
        return 0;
}

int private_daemon_listen(PrivateDaemon *d, const char *name, int type, const char **ret_path) {
        _cleanup_free_ char *path = path_in(d, name);
        int fd;

        if (!path)
                return -ENOMEM;
        if (d->n_listen == PRIVATE_DAEMON_SOCKETS_MAX)
                return -ENOSPC;
        fd = bind_socket(path, type);
        if (fd < 0)
                return fd;
        d->listen_fds[d->n_listen] = fd;
        d->listen_names[d->n_listen] = name;
        *ret_path = d->listen_paths[d->n_listen] = TAKE_PTR(path);
        d->n_listen++;
        return 0;
}

/* In the child: the sockets at 3, 4, ... as socket activation passes them, and the variables saying so. */
static int pass_sockets(const PrivateDaemon *d) {
        int moved[PRIVATE_DAEMON_SOCKETS_MAX];
        char value[32], names[256] = "";

        /* Above the targets first, so that moving one down never closes another. */
        for (size_t i = 0; i < d->n_listen; i++) {
                moved[i] = fcntl(d->listen_fds[i], F_DUPFD, 3 + (int) d->n_listen);
                if (moved[i] < 0)
                        return -errno;
        }
        for (size_t i = 0; i < d->n_listen; i++) {
                if (dup2(moved[i], 3 + (int) i) < 0)    /* without O_CLOEXEC: memstrackd gets it */
                        return -errno;
                (void) close(moved[i]);
                if (strlen(names) + strlen(d->listen_names[i]) + 2 > sizeof(names))
                        return -E2BIG;
                if (i > 0)
                        strcat(names, ":");
                strcat(names, d->listen_names[i]);
        }
        (void) snprintf(value, sizeof(value), "%zu", d->n_listen);
        if (setenv("LISTEN_FDS", value, 1) < 0 || setenv("LISTEN_FDNAMES", names, 1) < 0)
                return -errno;
        (void) snprintf(value, sizeof(value), "%d", (int) getpid());
        if (setenv("LISTEN_PID", value, 1) < 0 || setenv("NOTIFY_SOCKET", d->notify_path, 1) < 0)
                return -errno;
        return 0;
}

int private_daemon_start(PrivateDaemon *d, char *const args[]) {
        _cleanup_free_ char *group_arg = NULL, *daemon = NULL;
        struct group *g = getgrgid(getgid());
        char *argv[ARGS_MAX + 8];
        ProgramOrigin origin;
        size_t n = 0;
        pid_t pid;

        if (program_path(PROGRAM_MEMSTRACKD, &daemon, &origin) < 0)
                return -ENOMEM;
        /* The directory is ours alone; the group lets a caller who is not root call it. */
        if (asprintf(&group_arg, "--group=%s", g ? g->gr_name : "") < 0)
                return -ENOMEM;
        argv[n++] = (char *) "memstrackd";
        argv[n++] = (char *) "--foreground";
        argv[n++] = (char *) "--log-level=warning";
        argv[n++] = group_arg;
        for (size_t i = 0; args[i] && i < ARGS_MAX; i++)
                argv[n++] = args[i];
        argv[n] = NULL;

        fflush(stdout);
        fflush(stderr);
        pid_t parent = getpid();
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                /* Stopped with us, however we end; if we already did, now. */
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                        _exit(127);
                /* Its own process group: a Ctrl-C meant for a recorded program does not stop it. */
                (void) setpgid(0, 0);
                (void) signal(SIGINT, SIG_DFL);
                (void) signal(SIGTERM, SIG_DFL);
                sigset_t none;
                (void) sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                /* Debug files come from this machine only, never from a debuginfod server. */
                (void) unsetenv("DEBUGINFOD_URLS");
                FILE *log = freopen(d->log_path, "w", stderr);     /* not "e": the daemon keeps it */
                if (log) {
                        int r = pass_sockets(d);
                        if (r < 0)
                                fprintf(stderr, "<3>Failed to pass memstrackd its sockets: %s\n", strerror(-r));
                        else {
                                (void) dup2(fileno(log), STDOUT_FILENO);
                                execv(daemon, argv);
                                fprintf(stderr, "<3>Failed to run %s: %s\n", daemon, strerror(errno));
                        }
                        fflush(stderr);
                }
                _exit(127);
        }
        d->pid = pid;
        d->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        /* It holds them now: should it die, connections to them fail rather than wait for nobody. */
        for (size_t i = 0; i < d->n_listen; i++)
                d->listen_fds[i] = safe_close(d->listen_fds[i]);
        return 0;
}

static uint64_t now_msec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* Whether a notification says READY=1 (one assignment a line). */
static bool says_ready(int fd) {
        char buf[NOTIFY_MESSAGE_MAX + 1];
        ssize_t k = recv(fd, buf, NOTIFY_MESSAGE_MAX, MSG_DONTWAIT);

        if (k <= 0)
                return false;
        buf[k] = '\0';
        for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, "READY=1", 7) == 0 && (line[7] == '\n' || line[7] == '\0'))
                        return true;
        return false;
}

int private_daemon_wait_ready(PrivateDaemon *d, const char *action, unsigned timeout_msec) {
        uint64_t deadline = now_msec() + timeout_msec;
        sigset_t mask;
        int r;

        /* SIGINT and SIGTERM, if the caller blocked them to catch them, come in while it waits. */
        r = waiting_mask(&mask);
        if (r < 0)
                return r;

        for (;;) {
                struct pollfd p[2] = { { .fd = d->notify_fd, .events = POLLIN }, { .fd = d->pidfd, .events = POLLIN } };
                uint64_t now = now_msec();
                int status;

                if (now >= deadline) {
                        fprintf(stderr, "memstrackctl: memstrackd did not get ready to %s in %u s.\n", action,
                                timeout_msec / 1000);
                        return CTL_EXIT_FAILURE;
                }
                /* Without a pidfd (before Linux 5.3) its exit is looked for every 50 ms. */
                uint64_t wait_msec = MIN(deadline - now, d->pidfd >= 0 ? UINT64_MAX : 50);
                struct timespec ts = { .tv_sec = (time_t) (wait_msec / 1000),
                                       .tv_nsec = (long) (wait_msec % 1000) * 1000000 };
                if (ppoll(p, d->pidfd >= 0 ? 2 : 1, &ts, &mask) < 0)
                        return negative_errno();        /* -EINTR: the caller's signal handler ran */
                if ((p[0].revents & POLLIN) && says_ready(d->notify_fd)) {
                        /* Nobody reads its later notifications (STATUS= each second): gone, they fail at once
                         * in memstrackd rather than fill the socket's queue and block it. */
                        d->notify_fd = safe_close(d->notify_fd);
                        (void) unlink(d->notify_path);
                        return 0;
                }
                if ((d->pidfd < 0 || p[1].revents) && waitpid(d->pid, &status, WNOHANG) == d->pid) {
                        d->pid = 0;
                        private_daemon_print_warnings(d);
                        fprintf(stderr, "memstrackctl: memstrackd could not %s (%s %d).\n", action,
                                WIFEXITED(status) ? "exit status" : "signal",
                                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                        return CTL_EXIT_FAILURE;
                }
        }
}

void private_daemon_terminate(PrivateDaemon *d) {
        if (d->pid > 0 && !d->terminating) {
                (void) kill(d->pid, SIGTERM);
                d->terminating = true;
        }
}

void private_daemon_stop(PrivateDaemon *d) {
        if (d->pid > 0) {
                private_daemon_terminate(d);
                d->terminating = false;
                while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                d->pid = 0;
        }
        for (size_t i = 0; i < d->n_listen; i++) {
                safe_close(d->listen_fds[i]);
                if (d->listen_paths[i])
                        (void) unlink(d->listen_paths[i]);
                free(d->listen_paths[i]);
        }
        if (d->dir) {
                /* Prepared: its descriptors are set (a PrivateDaemon never prepared has zeros there). */
                safe_close(d->pidfd);
                safe_close(d->notify_fd);
                /* What memstrackctl made, then the directory. */
                if (d->socket_path)
                        (void) unlink(d->socket_path);
                if (d->log_path)
                        (void) unlink(d->log_path);
                if (d->notify_path)
                        (void) unlink(d->notify_path);
                (void) rmdir(d->dir);
        }
        free(d->dir);
        free(d->socket_path);
        free(d->log_path);
        free(d->notify_path);
        free(d->address);
        *d = (PrivateDaemon) { .notify_fd = -EBADF, .pidfd = -EBADF };
}
