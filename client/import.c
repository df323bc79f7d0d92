/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl import page-owner [FILE|-]: a page_owner log into memstrack's reports or a snapshot file,
 * without a daemon to set up. The import itself is memstrackd's page-owner source (memstrackd(8)), which
 * charges the log's records to tasks, modules and stacks exactly as live tracing does; this verb runs a
 * private memstrackd on it (private-daemon.h), asks it as `report` (or, with --file, as `snapshot --file`)
 * would, and stops it.
 *
 * SIGTERM or SIGINT (Ctrl-C) stop the import: the private memstrackd is stopped, waited for and its
 * directory removed, and memstrackctl then dies of the signal, as a shell expects. Should memstrackctl
 * die without that (SIGKILL), the kernel sends memstrackd SIGTERM (PR_SET_PDEATHSIG), which stops it
 * even while it reads endless input.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "macro.h"
#include "private-daemon.h"

/* How long the private memstrackd may take to read the log before it answers: a log of a large
 * machine holds millions of records. The daemon exiting ends the wait at once. */
#define IMPORT_START_TIMEOUT_MSEC (10u * 60u * 1000u)

int verb_import(int argc, char *argv[]) {
        _cleanup_free_ char *source_input = NULL, *action = NULL;
        const char *input = argc > 2 ? argv[2] : "-";
        PrivateDaemon d = {};
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
        if (asprintf(&source_input, "--source-input=%s", input) < 0 ||
            asprintf(&action, "import %s", streq(input, "-") ? "standard input" : input) < 0)
                return -ENOMEM;

        private_daemon_catch_stop_signals();
        r = private_daemon_prepare(&d);
        if (r < 0)
                goto finish;
        char *const args[] = { (char *) "--source=page-owner", source_input, NULL };
        r = private_daemon_start(&d, args);
        if (r < 0)
                goto finish;
        r = private_daemon_wait_ready(&d, action, IMPORT_START_TIMEOUT_MSEC);
        private_daemon_release_stop_signals();
        if (private_daemon_stop_signal())
                goto finish;    /* stopped below */
        if (r != 0)
                goto finish;

        /* The records it skipped, before the report. */
        private_daemon_print_warnings(&d);
        arg_address = d.address;
        if (arg_file)
                r = verb_snapshot(1, (char *[]) { (char *) "snapshot", NULL });
        else
                r = verb_report(1, (char *[]) { (char *) "report", NULL });
        arg_address = NULL;

finish:
        private_daemon_release_stop_signals();
        private_daemon_stop(&d);
        if (private_daemon_stop_signal()) {
                int sig = private_daemon_stop_signal();

                fprintf(stderr, "memstrackctl: import of %s stopped by SIG%s.\n",
                        streq(input, "-") ? "standard input" : input, sigabbrev_np(sig));
                fflush(stdout);
                (void) signal(sig, SIG_DFL);
                (void) raise(sig);
                return CTL_EXIT_FAILURE;
        }
        return r;
}
