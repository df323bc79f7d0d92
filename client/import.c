/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl import page-owner [FILE|-]: a page_owner log into memstrack's reports or a snapshot file,
 * without a daemon to set up. The import itself is memstrackd's page-owner source (memstrackd(8)), which
 * charges the log's records to tasks, modules and stacks exactly as live tracing does; this verb runs a
 * private memstrackd on it (a socket in a directory of its own), asks it as `report` (or, with --file,
 * as `snapshot --file`) would, and stops it. memstrackd is $MEMSTRACKD if set, else the installed one.
 */

#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "macro.h"
#include "private-daemon.h"

/* How long the private memstrackd may take to read the log before it answers: a log of a large
 * machine holds millions of records. Polled every 50 ms; the daemon exiting ends the wait at once. */
#define IMPORT_START_TIMEOUT_MSEC (10u * 60u * 1000u)

int verb_import(int argc, char *argv[]) {
        _cleanup_free_ char *source_input = NULL;
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
        if (asprintf(&source_input, "--source-input=%s", input) < 0)
                return -ENOMEM;

        char *const args[] = { (char *) "--source=page-owner", source_input, NULL };
        r = private_daemon_prepare(&d);
        if (r == 0)
                r = private_daemon_run(&d, streq(input, "-") ? "standard input" : input, args,
                                       IMPORT_START_TIMEOUT_MSEC);
        if (r == 0) {
                /* The records it skipped, before the report. */
                private_daemon_print_warnings(&d);
                arg_address = d.address;
                if (arg_file)
                        r = verb_snapshot(1, (char *[]) { (char *) "snapshot", NULL });
                else
                        r = verb_report(1, (char *[]) { (char *) "report", NULL });
                arg_address = NULL;
        }
        private_daemon_stop(&d);
        return r;
}
