/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Manager: the one owner of memstrackd's state, and wiring only. It creates the event source, the
 * accounting core, the service and the observers (the policies that react to events: naming cgroups,
 * reloading kernel symbols, OOM moments, the history), delivers every event as "account it, then tell
 * each observer that wants it", keeps systemd's watchdog fed, and writes the summary when asked and at
 * exit, and the reports asked for with --report at exit. All work happens on the thread's default
 * sd-event loop, where main.c adds the signals.
 */

#include <stdbool.h>
#include <stdint.h>

#include "access.h"
#include "accounting.h"
#include "macro.h"
#include "pressure-watch.h"
#include "report.h"
#include "service.h"
#include "source.h"

typedef struct ManagerConfig {
        const char *source;             /* a registered source's name; NULL or "auto": the first that can run */
        SourceOptions source_options;
        AccountingConfig accounting;
        const char *kallsyms;           /* NULL: /proc/kallsyms */
        const char *cgroup_root;        /* the cgroup2 tree that names cgroups; NULL: found (cgroupnames.h) */
        const char *memcg_root;         /* the memory controller's hierarchy; NULL: found (memcg.h) */
        const char *zoneinfo;           /* zones for breakdowns by node; NULL: /proc/zoneinfo */
        PressureSettings pressure;      /* pressure records: margin, PSI trigger, interval */
        AccessConfig access;            /* how recently pages were touched: the source, thresholds, rounds */
        const char *state_directory;    /* keeps the history; NULL: $STATE_DIRECTORY's first; "": none */
        const char *heap_socket;        /* beside the source, the heap source on this socket (or a passed one
                                         * named heap): user-space heaps beside the kernel's pages; NULL: none */
        bool serve;                     /* listen on the varlink socket */
        /* Where and to whom to answer (socket, group, client deadlines, the boot phase's document); the
         * Manager fills in what the service answers about. */
        ServiceConfig service;
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
/* Runs the loop until it is told to exit (the caller's SIGTERM and SIGINT). -errno if the loop failed. */
int manager_run(Manager *m);
/* SIGUSR1: brings the core up to date and writes the summary, reason naming why. */
void manager_log_summary(Manager *m, const char *reason);
/* SIGHUP: what the observers read from outside is read again (the kernel's symbol table). */
void manager_reload(Manager *m);
/* Delivers what the source still buffers, writes the final summary and the reports of config.report.
 * 0, or -errno when the reports could not be written (logged). */
int manager_finish(Manager *m);
