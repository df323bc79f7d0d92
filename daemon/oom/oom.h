/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The OOM room: the kills the kernel's OOM killer makes (oom-watch.h), the moments their snapshots are
 * taken (oom-moments.h), memory pressure near units' limits (pressure-watch.h) and the log of all of them
 * (oomlog.h), behind one object the Manager wires in.
 *
 * It never re-enters delivery: its observer (the moments) only takes snapshots from the core as it is.
 * What must be delivered first is delivered from the room's own event handlers (a kill, a pressure
 * trigger) or by the Manager right before oom_tick(), never from an observer hook; new cgroups are named
 * through the cgroup namer alone (name_units), not through the observers.
 */

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "accounting.h"
#include "macro.h"
#include "memcg.h"
#include "observer.h"
#include "pressure-watch.h"
#include "status.h"
#include "usym.h"

typedef struct OomConfig {
        sd_event *event;                /* borrowed */
        Accounting *accounting;         /* borrowed */
        UserSymbols *usym;              /* borrowed */
        const Memcg *memcg;             /* borrowed; NULL: no limits to watch */
        long page_size;
        bool journal;                   /* log kills and records to the journal, else to stderr */
        const char *unit;               /* ours, for the journal entries; may be NULL */
        PressureSettings pressure;
        /* Delivers every record the event source holds now (the Manager's flush): called from the room's
         * own event handlers only. */
        void (*flush_source)(void *userdata);
        /* Names the core's new cgroups now (the cgroup namer), so a record names the victim's unit. */
        void (*name_units)(void *userdata);
        void *userdata;
} OomConfig;

typedef struct Oom Oom;

/* The log and the moments; kills are watched from oom_start(). NULL on OOM, or for a pressure trigger
 * pressure_trigger_parse() refuses (checked beforehand). */
Oom *oom_new(const OomConfig *config);
Oom *oom_free(Oom *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Oom *, oom_free);

/* The observer the Manager registers (the moments). The room keeps owning it: free the observers first. */
EventObserver *oom_observer(Oom *o);

/* Opens oom:mark_victim (tracefs: NULL finds it), or says why not: watch false with its reason (a
 * daemon of user-space heaps alone watches none). -ENOMEM, logged; a kernel without the tracepoint is
 * no error. */
int oom_start(Oom *o, bool watch, const char *reason, const char *tracefs);

/* Once a second, after the Manager delivered what the source held: the pressure checks. */
void oom_tick(Oom *o);

/* What Status, OomKills and the document show of the room. */
void oom_service_view(const Oom *o, ServiceState *state);
