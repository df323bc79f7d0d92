/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl import page-owner [FILE|-]: a page_owner log into memstrack's reports or a snapshot file,
 * without a daemon to set up. The import itself is memstrackd's page-owner source (memstrackd(8)), which
 * charges the log's records to tasks, modules and stacks exactly as live tracing does; this verb runs a
 * private memstrackd on it (a socket in a directory of its own), asks it as `report` (or, with --file,
 * as `snapshot --file`) would, and stops it. memstrackd is $MEMSTRACKD if set, else the installed one.
 *
 * SIGTERM or SIGINT (Ctrl-C) stop the import: the private memstrackd is stopped, waited for and its
 * directory removed, and memstrackctl then dies of the signal, as a shell expects. Should memstrackctl
 * die without that (SIGKILL), the kernel sends memstrackd SIGTERM (PR_SET_PDEATHSIG), which stops it
 * even while it reads endless input.
 */

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "macro.h"
#include "varlink.h"

/* How long the private memstrackd may take to read the log before it answers: a log of a large
 * machine holds millions of records. Polled every 50 ms; the daemon exiting ends the wait at once. */
#define IMPORT_START_TIMEOUT_MSEC (10u * 60u * 1000u)

/* The stop signal that came during the import, 0 if none: set by on_stop(). */
static volatile sig_atomic_t import_stop_signal = 0;

static void on_stop(int sig) {
        import_stop_signal = sig;
}

/* SIGTERM and SIGINT end the wait below instead of memstrackctl (unless they were ignored, as a shell
 * ignores SIGINT for a command it runs in the background). No SA_RESTART: a sleep or a read ends. */
static void catch_stop_signals(void) {
        struct sigaction sa = { .sa_handler = on_stop }, old;

        sigemptyset(&sa.sa_mask);
        for (int sig = SIGINT; sig; sig = sig == SIGINT ? SIGTERM : 0)
                if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                        (void) sigaction(sig, &sa, NULL);
}

/* Prints what the daemon said at warning level or above (lines "<0>" to "<4>"), without the level:
 * the records it skipped, or why it could not start. Its info lines and exit summary stay out. */
static void print_warnings(const char *log_path) {
        _cleanup_fclose_ FILE *f = fopen(log_path, "re");
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        if (!f)
                return;
        while (getline(&line, &size, f) > 0)
                if (line[0] == '<' && line[1] >= '0' && line[1] <= '4' && line[2] == '>')
                        fputs(line + 3, stderr);
}

/* Starts memstrackd on input, serving socket; its stderr goes to log_path. */
static int spawn_daemon(const char *input, const char *socket_path, const char *log_path, pid_t *ret) {
        _cleanup_free_ char *source_input = NULL, *socket_arg = NULL, *group_arg = NULL;
        const char *daemon = getenv("MEMSTRACKD");
        struct group *g = getgrgid(getgid());
        pid_t pid;

        if (!daemon || !*daemon)
                daemon = MEMSTRACKD_PATH;
        /* The directory is ours alone; the group lets a caller who is not root connect. */
        if (asprintf(&source_input, "--source-input=%s", input) < 0 ||
            asprintf(&socket_arg, "--socket=%s", socket_path) < 0 ||
            asprintf(&group_arg, "--group=%s", g ? g->gr_name : "") < 0)
                return -ENOMEM;
        char *const argv[] = {
                (char *) "memstrackd", (char *) "--foreground", (char *) "--log-level=warning",
                (char *) "--source=page-owner", source_input, socket_arg, group_arg, NULL,
        };

        fflush(stdout);
        fflush(stderr);
        pid_t parent = getpid();
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                /* Stopped with us, however we end; if we already did, now. Our handlers do not survive
                 * the exec; a signal ignored here would, and memstrackd takes both anyway. */
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                        _exit(127);
                FILE *log = freopen(log_path, "w", stderr);     /* not "e": the daemon keeps it */

                if (log) {
                        (void) dup2(fileno(log), STDOUT_FILENO);
                        execv(daemon, argv);
                        fprintf(stderr, "<3>Failed to run %s: %s\n", daemon, strerror(errno));
                        fflush(stderr);
                }
                _exit(127);
        }
        *ret = pid;
        return 0;
}

/* Waits until memstrackd answers on socket_path: 0, or a CtlExit after saying why not. */
static int wait_daemon(pid_t pid, const char *address, const char *input, const char *log_path) {
        for (unsigned waited = 0; waited < IMPORT_START_TIMEOUT_MSEC; waited += 50) {
                VarlinkClient *c = NULL;
                int status;

                if (waitpid(pid, &status, WNOHANG) == pid) {
                        print_warnings(log_path);
                        fprintf(stderr, "memstrackctl: memstrackd could not import %s (%s %d).\n",
                                streq(input, "-") ? "standard input" : input,
                                WIFEXITED(status) ? "exit status" : "signal",
                                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                        return CTL_EXIT_FAILURE;
                }
                if (import_stop_signal)
                        return 0;       /* the caller stops it */
                if (varlink_client_connect(address, &c) == 0) {
                        varlink_client_free(c);
                        return 0;
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
        }
        fprintf(stderr, "memstrackctl: memstrackd did not finish reading %s in %u s.\n", input,
                IMPORT_START_TIMEOUT_MSEC / 1000);
        return CTL_EXIT_FAILURE;
}

int verb_import(int argc, char *argv[]) {
        _cleanup_free_ char *dir = NULL, *socket_path = NULL, *log_path = NULL, *address = NULL;
        const char *input = argc > 2 ? argv[2] : "-";
        const char *tmp = getenv("TMPDIR");
        pid_t pid = 0;
        int r;

        if (!streq(argv[1], "page-owner")) {
                fprintf(stderr, "memstrackctl: import knows one kind of log, page-owner, not '%s'.\n"
                        "Try 'memstrackctl --help'.\n", argv[1]);
                return CTL_EXIT_USAGE;
        }
        if (arg_address) {
                fprintf(stderr, "memstrackctl: import runs a memstrackd of its own and takes no --address.\n"
                        "Try 'memstrackctl --help'.\n");
                return CTL_EXIT_USAGE;
        }

        if (asprintf(&dir, "%s/memstrackctl-import.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
                return -ENOMEM;
        if (!mkdtemp(dir))
                return negative_errno();
        if (asprintf(&socket_path, "%s/io.memstrack", dir) < 0 || asprintf(&log_path, "%s/log", dir) < 0 ||
            asprintf(&address, "unix:%s", socket_path) < 0) {
                r = -ENOMEM;
                goto finish;
        }

        catch_stop_signals();
        r = spawn_daemon(input, socket_path, log_path, &pid);
        if (r < 0)
                goto finish;
        r = wait_daemon(pid, address, input, log_path);
        if (r != 0) {
                pid = 0;        /* reaped */
                goto finish;
        }
        if (import_stop_signal)
                goto finish;

        /* The records it skipped, before the report. */
        print_warnings(log_path);
        arg_address = address;
        if (arg_file)
                r = verb_snapshot(1, (char *[]) { (char *) "snapshot", NULL });
        else
                r = verb_report(1, (char *[]) { (char *) "report", NULL });
        arg_address = NULL;

finish:
        if (pid > 0) {
                (void) kill(pid, SIGTERM);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        if (socket_path)
                (void) unlink(socket_path);
        if (log_path)
                (void) unlink(log_path);
        (void) rmdir(dir);
        if (import_stop_signal) {
                int sig = import_stop_signal;

                fprintf(stderr, "memstrackctl: import of %s stopped by SIG%s.\n",
                        streq(input, "-") ? "standard input" : input, sigabbrev_np(sig));
                fflush(stdout);
                (void) signal(sig, SIG_DFL);
                (void) raise(sig);
                return CTL_EXIT_FAILURE;
        }
        return r;
}
