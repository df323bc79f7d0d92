/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "format-util.h"
#include "status-line.h"
#include "time-util.h"

#define RATE_SAMPLES 6                  /* one per tick: rates average over the last 5 s */

struct StatusLine {
        Accounting *accounting;         /* borrowed */
        long page_size;
        uint64_t events[RATE_SAMPLES], usec[RATE_SAMPLES];
        unsigned next;
        EventObserver observer;
};

double status_line_events_per_second(const StatusLine *s) {
        /* The oldest and newest of the samples. */
        unsigned newest = (s->next + RATE_SAMPLES - 1) % RATE_SAMPLES;
        unsigned oldest = s->next % RATE_SAMPLES;
        if (s->usec[oldest] == 0)
                oldest = 0;
        if (s->usec[newest] <= s->usec[oldest])
                return 0;
        return (double) (s->events[newest] - s->events[oldest]) * 1e6 / (double) (s->usec[newest] - s->usec[oldest]);
}

static void on_tick(void *userdata) {
        StatusLine *s = userdata;
        AccountingStats st;
        UsageStats us;
        char size[32];

        accounting_get_stats(s->accounting, &st);
        s->events[s->next] = st.events;
        s->usec[s->next] = now_usec(CLOCK_MONOTONIC);
        s->next = (s->next + 1) % RATE_SAMPLES;

        usage_get_stats(accounting_usage(s->accounting), &us);
        format_pages(size, sizeof(size), st.current_pages, (uint64_t) s->page_size);
        (void) sd_notifyf(false, "STATUS=Tracking %s in %zu tasks, %.0f events/s, %llu lost", size,
                          us.n_tasks - us.n_exited, status_line_events_per_second(s),
                          (unsigned long long) st.lost_events);
}

static void observer_free(void *userdata) {
        status_line_free(userdata);
}

StatusLine *status_line_new(Accounting *accounting, long page_size) {
        StatusLine *s = calloc(1, sizeof(StatusLine));

        if (!s)
                return NULL;
        s->accounting = accounting;
        s->page_size = page_size;
        s->observer = (EventObserver) {
                .name = "status-line",
                .userdata = s,
                .tick = on_tick,
                .free = observer_free,
        };
        return s;
}

StatusLine *status_line_free(StatusLine *s) {
        free(s);
        return NULL;
}

EventObserver *status_line_observer(StatusLine *s) {
        return &s->observer;
}
