/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Manager: the one owner of memstrackd's state, and wiring only. It creates the event source, the
 * accounting core, the service and the observers (the policies that react to events: naming cgroups,
 * reloading kernel symbols, OOM moments, the history), delivers every event as "account it, then tell
 * each observer that wants it", keeps systemd informed (READY, STATUS, watchdog), and writes the summary
 * on SIGUSR1 and at exit, and the reports asked for with --report at exit. All work happens on one
 * sd-event loop.
 */

#include <stdbool.h>
#include <stdint.h>

#include "accounting.h"
#include "macro.h"
#include "report.h"
#include "service.h"
#include "source.h"

typedef struct ManagerConfig {
        const char *source;             /* a registered source's name; NULL or "auto": the first that can run */
        SourceOptions source_options;
        AccountingConfig accounting;
        const char *kallsyms;           /* NULL: /proc/kallsyms */
        const char *cgroup_root;        /* the cgroup2 tree that names cgroups; NULL: found (cgroupnames.h) */
        const char *state_directory;    /* keeps the history; NULL: $STATE_DIRECTORY's first; "": none */
        const char *heap_socket;        /* beside the source, the heap source on this socket (or a passed one
                                         * named heap): user-space heaps beside the kernel's pages; NULL: none */
        bool serve;                     /* listen on the varlink socket */
        /* Where and to whom to answer (socket, group, client deadlines, the boot phase's document); the
         * Manager fills in what the service answers about. */
        ServiceConfig service;
        int (*reload_config)(void);     /* SIGHUP: re-reads the configuration file; may be NULL */
        const ReportOptions *report;    /* memstrack's reports to write when stopping (--report); NULL: none */
        const char *report_output;      /* their file (--output); NULL: standard output */
} ManagerConfig;

typedef struct Manager Manager;

/* config's strings are borrowed: they must outlive the Manager. -errno, logged. */
int manager_new(const ManagerConfig *config, Manager **ret);
/* Takes a half-built Manager too. */
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Opens the event source and the socket and attaches everything to the loop. -errno, logged: -ECANCELED
 * when SIGTERM or SIGINT came while the source read its input, a stop rather than a failure. */
int manager_start(Manager *m);
/* Runs the loop until SIGTERM or SIGINT. -errno if the loop failed. */
int manager_run(Manager *m);
/* Delivers what the source still buffers, writes the final summary and the reports of config.report.
 * 0, or -errno when the reports could not be written (logged). */
int manager_finish(Manager *m);
