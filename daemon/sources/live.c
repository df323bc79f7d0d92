/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdio.h>

#include "live.h"
#include "log.h"
#include "proc-seed.h"

void live_source_init(LiveSource *s, const EventSourceOps *ops, const LiveSourceSteps *steps, pid_t self) {
        *s = (LiveSource) { .base = { .ops = ops }, .steps = steps, .self = self };
}

static int drain_more(sd_event_source *es, void *userdata) {
        LiveSource *s = userdata;

        s->steps->drain_more(s);
        return 0;
}

int live_source_start(LiveSource *s, sd_event *event, const MsEventSink *sink, uint64_t *ret_seeded) {
        char description[64];
        int r;

        assert(s);
        assert(event);
        assert(sink && sink->event);

        if (s->event)
                return -EBUSY;
        r = s->steps->attach(s, event);
        if (r < 0)
                return r;
        (void) snprintf(description, sizeof(description), "%s-drain", s->steps->name);
        r = source_add_drain_later(event, &s->defer_source, drain_more, s, description);
        if (r < 0)
                return log_error_errno(r, "Failed to add the %s drain source: %m", s->steps->name);
        s->event = sd_event_ref(event);
        s->sink = *sink;
        r = s->steps->enable(s);
        if (r < 0)
                return r;
        *ret_seeded = proc_seed_tasks(PROC_ROOT_DEFAULT, s->self, &s->sink);
        return 0;
}

void live_source_drain_later(LiveSource *s) {
        source_drain_later(s->defer_source);
}

void live_source_done(LiveSource *s) {
        s->defer_source = sd_event_source_disable_unref(s->defer_source);
        s->event = sd_event_unref(s->event);
}
