/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Manager: the one owner of memstrackd's state. It wires an event source into the accounting core,
 * serves io.memstrack over varlink, keeps systemd informed (READY, STATUS, watchdog) and writes the
 * summary on SIGUSR1 and at exit, and the reports asked for with --report at exit. All work happens on
 * one sd-event loop.
 */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "accounting.h"
#include "cgroupnames.h"
#include "debounce.h"
#include "history.h"
#include "ksym.h"
#include "oom-watch.h"
#include "oomlog.h"
#include "report.h"
#include "service.h"
#include "source.h"
#include "usym.h"

/* sd-event priority of everything clients cause (the varlink server, Top streams): below the event
 * source's ring buffers (SD_EVENT_PRIORITY_NORMAL), so draining the kernel's records always runs first
 * and no client load makes the daemon lose them. */
#define MANAGER_PRIORITY_CLIENTS (SD_EVENT_PRIORITY_NORMAL + 10)

typedef struct ManagerConfig {
        const char *source;             /* a registered source's name; NULL or "auto": the first that can run */
        SourceOptions source_options;
        AccountingConfig accounting;
        const char *kallsyms;           /* NULL: /proc/kallsyms */
        const char *cgroup_root;        /* the cgroup2 tree that names cgroups; NULL: found (cgroupnames.h) */
        const char *state_directory;    /* keeps the history; NULL: $STATE_DIRECTORY's first; "": none */
        const char *socket_path;        /* NULL: the default */
        const char *boot_snapshot;      /* the initramfs's snapshot document; NULL: the default, "": none */
        const char *group;              /* NULL: the default; "" root only */
        bool serve;                     /* listen on the varlink socket */
        /* Client deadlines (ServiceConfig); 0: the server's defaults. */
        uint64_t first_message_timeout_usec, request_timeout_usec, idle_timeout_usec, output_timeout_usec;
        int (*reload_config)(void);     /* SIGHUP: re-reads the configuration file; may be NULL */
        const ReportOptions *report;    /* memstrack's reports to write when stopping (--report); NULL: none */
        const char *report_output;      /* their file (--output); NULL: standard output */
} ManagerConfig;

#define EVENT_RATE_SAMPLES 6            /* one per second: rates average over the last 5 s */

typedef struct Manager {
        sd_event *event;
        ManagerConfig config;           /* strings borrowed from the caller (arg_* globals) */

        Ksym *ksym;                     /* owned; replaced a moment after module loads */
        bool source_symbols;            /* ksym is the source's own table (EventSourceOps.symbols): kept */
        Debounce *ksym_reload;          /* owned: one kallsyms reload per burst of module loads */
        Accounting *accounting;         /* owned */
        EventSource *source;            /* owned */
        char *source_reason;            /* owned: why this source runs (Status backendReason) */
        Service *service;               /* owned: io.memstrack on the varlink socket, if serving */
        UserSymbols *usym;              /* owned: names user frames in StackTree replies */
        CgroupNames *cgroups;           /* owned: names the core's cgroups; NULL without a cgroup2 mount */
        Debounce *cgroup_resolve;       /* owned: names new cgroups a moment after they appear */
        uint32_t cgroup_named_last;     /* the last cgroup name_cgroup_from_task() tried */
        Debounce *cgroup_recheck;       /* owned: notices removed cgroups a while after processes exit */
        History *history;               /* owned: sampled by the status timer */
        char *history_path;             /* owned: where the history is kept; NULL: not kept */
        uint64_t history_saved_usec;    /* CLOCK_MONOTONIC of the last save */

        OomWatch *oom_watch;            /* owned: oom:mark_victim; NULL when it could not be opened */
        OomLog *oom;                    /* owned: the last kills and peak snapshots (OomKills) */
        /* A kill heard of whose snapshot waits for the page records up to its time (manager.c). */
        bool oom_pending;
        OomKill oom_pending_kill;
        uint64_t peak_threshold_pages;  /* oomlog_peak_threshold(), cached for the per-event check */

        sd_event_source *status_timer;  /* owned: once a second, rate samples and sd_notify STATUS */
        sd_event_source *sigusr1, *sighup;

        uint64_t start_usec;            /* CLOCK_MONOTONIC */
        uint64_t rate_events[EVENT_RATE_SAMPLES], rate_usec[EVENT_RATE_SAMPLES];
        unsigned rate_next;
        char *unit;                     /* our systemd unit, if started by systemd */
        long page_size;
        bool journal;                   /* log and summarize to the journal */
} Manager;

int manager_new(const ManagerConfig *config, Manager **ret);
/* Takes a half-built Manager too (every member may be NULL). */
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Opens the event source and the socket and attaches everything to the loop. -ECANCELED (logged) when
 * SIGTERM or SIGINT came while the source read its input: a stop, not a failure. */
int manager_start(Manager *m);
/* Delivers what the source buffers below its wakeup watermark, so an answer reflects everything the
 * kernel reported up to now. Cheap when little is buffered; every query calls it first. */
void manager_flush(Manager *m);
/* Delivers what the source still buffers, writes the final summary and the reports of config.report.
 * 0, or -errno when the reports could not be written (logged). */
int manager_finish(Manager *m);

void manager_log_summary(Manager *m, const char *reason);
/* Writes the history to the state directory, if it is kept there; logs a failure. */
void manager_save_history(Manager *m);
double manager_events_per_second(const Manager *m);
uint64_t manager_uptime_usec(const Manager *m);
/* Names the core's pending cgroups (units.h) from the cgroup2 tree, walking it again once if one is
 * not in the last walk (a walk also marks which known cgroups are gone). */
void manager_resolve_cgroups(Manager *m);
/* Re-reads kallsyms (SIGHUP; after module loads via ksym_reload). */
int manager_reload_ksym(Manager *m);

/* A module load schedules the kallsyms reload this long after the last load of a burst, and at most
 * KSYM_RELOAD_MAX_DELAY_USEC after the first. Reading kallsyms takes tens of milliseconds: per load, a
 * burst of loads would stall the drain for seconds. */
#define KSYM_RELOAD_DELAY_USEC 200000
#define KSYM_RELOAD_MAX_DELAY_USEC 2000000
/* New cgroups are named this long after the last new one of a burst (a walk of the cgroup tree costs a
 * few milliseconds per thousand cgroups), at most CGROUP_RESOLVE_MAX_DELAY_USEC after the first: soon
 * enough to find a short-lived unit's cgroup before it is removed. Queries name them at once. */
/* The history is written this often and at exit, if it is kept. */
#define HISTORY_SAVE_INTERVAL_USEC (UINT64_C(5) * 60 * 1000000)
#define CGROUP_RESOLVE_DELAY_USEC 50000
#define CGROUP_RESOLVE_MAX_DELAY_USEC 500000
/* Process exits make the cgroup tree be walked again this long after the last exit of a burst, at most
 * CGROUP_RECHECK_MAX_DELAY_USEC after the first: a unit whose cgroups are gone shows as not live within
 * seconds, and a machine whose processes exit all the time walks the tree every ten seconds at most. */
#define CGROUP_RECHECK_DELAY_USEC 2000000
#define CGROUP_RECHECK_MAX_DELAY_USEC 10000000
