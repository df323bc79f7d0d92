/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * LiveSource: what the live sources (perf, ftrace, eBPF) share around their own work. Each embeds one as
 * its first member and gives its steps; the skeleton holds the loop, the sink, the drain source that goes
 * on where a drain's budget ran out, and the order every live source starts in:
 *
 *   attach (watch its fds on the loop)  ->  enable (tracing on)  ->  seed the tasks alive now from /proc
 *
 * Seeding comes last: a task born in between is met twice (TASK_NEW now, FORK in the ring), which the core
 * takes as one process, rather than never. Teardown undoes the skeleton's part; the source frees its own.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "source.h"

typedef struct LiveSource LiveSource;

typedef struct LiveSourceSteps {
        const char *name;               /* "perf": logs, and the drain source is "perf-drain" */
        /* Watches the source's fds and timers on event, before tracing is on. -errno, logged. */
        int (*attach)(LiveSource *s, sd_event *event);
        /* Turns tracing on. -errno, logged. */
        int (*enable)(LiveSource *s);
        /* The drain source's turn: drains on where a budget ran out (live_source_drain_later()). */
        void (*drain_more)(LiveSource *s);
} LiveSourceSteps;

struct LiveSource {
        EventSource base;               /* first: the source's EventSource* is this */
        const LiveSourceSteps *steps;
        sd_event *event;                /* a reference once started, NULL before */
        MsEventSink sink;
        sd_event_source *defer_source;  /* owned: continues a drain that ran out of budget */
        pid_t self;                     /* the daemon: not seeded, its allocations dropped */
};

/* Before the source's own setup: its vtable, its steps and whose allocations are its own. */
void live_source_init(LiveSource *s, const EventSourceOps *ops, const LiveSourceSteps *steps, pid_t self);
/* EventSourceOps.start: attach, enable, seed. Returns the number of tasks seeded (records the source
 * delivered) in *ret_seeded. -EBUSY if started already; -errno, logged. */
int live_source_start(LiveSource *s, sd_event *event, const MsEventSink *sink, uint64_t *ret_seeded);
/* Arms the drain source once: steps->drain_more runs after the other sources of the loop had their turn. */
void live_source_drain_later(LiveSource *s);
/* Undoes live_source_start() (any part of it). */
void live_source_done(LiveSource *s);
