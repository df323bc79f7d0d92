/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * PressureWatch: when to take the evidence before an OOM kill (oomlog.h pressure records).
 *
 * Limits: once a second (the Manager's tick, oom_tick()) every live unit with a memory limit of its own
 * (memory.max or memory.high; memory.limit_in_bytes on cgroup v1) has its usage read, and one within
 * margin_percent of the limit gets a record; units are looked at for limits every PRESSURE_LIMITS_EVERY
 * ticks, those with a limit every tick. Pressure: the kernel's PSI triggers ("some 150000 1000000": 150 ms of
 * stall in 1 s) on the system's memory.pressure (the cgroup2 root's, else /proc/pressure/memory) and on each
 * unit with a limit, as sd-event sources the kernel wakes with POLLPRI. Where a trigger cannot be written
 * (the service's sandbox mounts cgroupfs read-only, and unprivileged triggers need windows of whole 2 s) the
 * watcher reads the same files' avg10 each tick and compares it with the trigger's share of stall instead.
 *
 * Each unit (and the system) gets at most one record per interval_usec. A record brings the core up to
 * date first (flush_source), names new cgroups, and holds the holders and the unit's Explain view.
 * OomMoments (oom-moments.h) owns one and runs its checks at each oom_moments_tick().
 */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "accounting.h"
#include "macro.h"
#include "memcg.h"
#include "oomlog.h"
#include "usym.h"

#define PRESSURE_MARGIN_PERCENT_DEFAULT 10
/* 15 % of stall, as "some 150000 1000000", in a window of 2 s: the kernel takes only whole 2 s windows from
 * a writer without CAP_SYS_RESOURCE. */
#define PRESSURE_TRIGGER_DEFAULT "some 300000 2000000"
#define PRESSURE_INTERVAL_USEC_DEFAULT (60 * UINT64_C(1000000))
#define PRESSURE_LIMITS_EVERY 10

/* What memstrackd's options say of pressure records. */
typedef struct PressureSettings {
        unsigned margin_percent;        /* records within this margin of a limit; 0: limits not watched */
        const char *trigger;            /* PSI trigger, "some|full STALL_USEC WINDOW_USEC"; NULL or "": none */
        uint64_t interval_usec;         /* at most one record per unit (and for the system) per interval;
                                         * 0: the default */
} PressureSettings;

typedef struct PressureWatchConfig {
        sd_event *event;                /* borrowed */
        OomLog *log;                    /* borrowed: where the records go */
        Accounting *accounting;         /* borrowed */
        UserSymbols *usym;              /* borrowed */
        const Memcg *memcg;             /* borrowed; NULL: no memory controller, no limits to watch */
        long page_size;
        bool journal;                   /* log records to the journal, else to stderr */
        const char *unit;               /* ours, for the journal entry; may be NULL */
        unsigned margin_percent;        /* 0: limits not watched */
        const char *trigger;            /* PSI trigger, "some|full STALL_USEC WINDOW_USEC"; NULL or "": none */
        const char *system_pressure;    /* the system's pressure file; NULL: the cgroup2 root's, else
                                         * /proc/pressure/memory */
        uint64_t interval_usec;         /* per unit and for the system; 0: the default */
        /* Delivers every record the event source holds now. */
        void (*flush_source)(void *userdata);
        /* Names the core's new cgroups now. */
        void (*name_units)(void *userdata);
        void *userdata;
} PressureWatchConfig;

typedef struct PressureWatch PressureWatch;

/* Parses a PSI trigger: "some" or "full", the stall and the window in usec (stall <= window). -EINVAL. */
int pressure_trigger_parse(const char *s, bool *ret_full, uint64_t *ret_stall_usec, uint64_t *ret_window_usec);
/* Which limit current is within margin_percent of: "high" before "max" (it is the lower one in use), or
 * NULL. Limits of MEMCG_UNLIMITED are none. */
const char *pressure_limit_crossed(uint64_t current, uint64_t max, uint64_t high, unsigned margin_percent,
                uint64_t *ret_limit);
/* avg10 of the "some" or "full" line of a pressure file's text, in percent. -EINVAL if it has none. */
int pressure_avg10(const char *text, bool full, double *ret);

/* -EINVAL for a bad trigger, -ENOMEM. Opens what it can; says in the OOM log (PressureWatch) how it watches. */
int pressure_watch_new(const PressureWatchConfig *config, PressureWatch **ret);
PressureWatch *pressure_watch_free(PressureWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(PressureWatch *, pressure_watch_free);

/* One round of checks: the tick of its owner runs it. */
void pressure_watch_check(PressureWatch *w);
