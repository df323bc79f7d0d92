/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "debounce.h"
#include "macro.h"

struct Debounce {
        sd_event_source *timer;         /* owned; off while nothing is pending */
        uint64_t delay_usec, max_delay_usec;
        uint64_t first_usec;            /* first pending request; 0: none pending */
        uint64_t due_usec;
        uint64_t runs;
        DebounceFn fn;
        void *userdata;
};

static void run(Debounce *d) {
        d->first_usec = d->due_usec = 0;
        (void) sd_event_source_set_enabled(d->timer, SD_EVENT_OFF);
        d->runs++;
        d->fn(d->userdata);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        run(userdata);
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Debounce *, debounce_free);

int debounce_new(sd_event *e, const char *description, uint64_t delay_usec, uint64_t max_delay_usec,
                DebounceFn fn, void *userdata, Debounce **ret) {
        _cleanup_(debounce_freep) Debounce *d = calloc(1, sizeof(Debounce));
        int r;

        if (!d)
                return -ENOMEM;
        *d = (Debounce) { .delay_usec = delay_usec, .max_delay_usec = MAX(max_delay_usec, delay_usec), .fn = fn,
                          .userdata = userdata };
        r = sd_event_add_time(e, &d->timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timer, d);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(d->timer, description);
        r = sd_event_source_set_enabled(d->timer, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

Debounce *debounce_free(Debounce *d) {
        if (!d)
                return NULL;
        sd_event_source_disable_unref(d->timer);
        free(d);
        return NULL;
}

int debounce_request(Debounce *d) {
        uint64_t now;
        int r;

        r = sd_event_now(sd_event_source_get_event(d->timer), CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        if (d->first_usec == 0)
                d->first_usec = now;
        d->due_usec = MIN(now + d->delay_usec, d->first_usec + d->max_delay_usec);
        r = sd_event_source_set_time(d->timer, d->due_usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

bool debounce_pending(const Debounce *d) {
        return d->first_usec != 0;
}

uint64_t debounce_due_usec(const Debounce *d) {
        return d->due_usec;
}

void debounce_flush(Debounce *d) {
        if (debounce_pending(d))
                run(d);
}

uint64_t debounce_runs(const Debounce *d) {
        return d->runs;
}
