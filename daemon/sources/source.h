/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * An event source: something that turns kernel page events into MsEvents (perf today; ftrace,
 * page_owner import and eBPF later). The manager only sees this vtable, so backends are swappable.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "event.h" /* MsEvent, MsEventSink, EventSourceStats */

#define SOURCE_MAX_CPUS 4096

typedef struct EventSource EventSource;

typedef struct EventSourceOps {
        const char *name;                                       /* "perf", "ftrace", ... */
        /* Attach to the loop and begin emitting events into the sink. */
        int (*start)(EventSource *s, sd_event *event, const MsEventSink *sink);
        /* Drain whatever is buffered now, synchronously (used before a final summary). */
        int (*flush)(EventSource *s);
        void (*get_stats)(EventSource *s, EventSourceStats *ret);
        void (*free)(EventSource *s);
} EventSourceOps;

struct EventSource {
        const EventSourceOps *ops;
};

static inline EventSource *event_source_free(EventSource *s) {
        if (s)
                s->ops->free(s);
        return NULL;
}
