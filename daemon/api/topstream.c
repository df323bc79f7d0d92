/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "list.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"
#include "topstream.h"

/* A stream due within interval / TOP_BATCH_DIVISOR of a wakeup is served in it. */
#define TOP_BATCH_DIVISOR 8
/* How late sd-event may fire the timer, as a fraction of the shortest interval open: its default (250 ms)
 * turned 100 ms streams into 250 ms ones, 1/50 lets it merge wakeups without anyone noticing. */
#define TOP_ACCURACY_DIVISOR 50

typedef struct TopStream TopStream;

/*
 * Top streams share one timer, set for the stream due next: the daemon wakes when a stream wants a frame,
 * not at a fixed tick. When it fires, every stream due by then or within TOP_BATCH_DIVISOR-th of its
 * interval gets the frame of its sort, built once per wakeup at the largest limit any of them asked for
 * (smaller limits get a prefix of its lists). A stream served early keeps its beat (its next update is
 * one interval after the one it was due for), so streams that once shared a frame go on sharing one,
 * and N streams cost one flush and at most one query per sort order, not N; only the serialization is
 * per stream, and TOP_STREAMS_MAX bounds that.
 */
struct TopStream {
        TopStreams *owner;
        VarlinkCall *call;              /* the open Top call; its connection owns it */
        uint64_t interval_usec;
        uint64_t next_usec;             /* CLOCK_MONOTONIC time of the next update */
        int64_t limit;
        QuerySort sort;
        bool hide_zero;
        TopStream *prev, *next;
};


struct TopStreams {
        TopStreamsConfig config;
        TopStream *streams;             /* owned list of open Top(more) calls */
        size_t n_streams;
        sd_event_source *timer;         /* owned: the one timer behind every stream, set for the next stream
                                         * due; off without streams */
};

/* The first limit entries of an array, sharing its elements. */
static json_t *array_prefix(json_t *a, size_t limit) {
        json_auto_t *p = json_array();

        if (!p)
                return NULL;
        for (size_t i = 0; i < json_array_size(a) && i < limit; i++)
                if (json_array_append(p, json_array_get(a, i)) < 0)
                        return NULL;
        return TAKE_PTR(p);
}

/* frame as a stream with a smaller limit sees it. A new reference. */
static json_t *top_frame_cut(json_t *frame, int64_t limit) {
        json_auto_t *cut = json_copy(frame); /* shallow: the values are shared */

        if (!cut ||
            json_object_set_new(cut, "tasks", array_prefix(json_object_get(frame, "tasks"), (size_t) limit)) < 0 ||
            json_object_set_new(cut, "modules", array_prefix(json_object_get(frame, "modules"), (size_t) limit)) < 0 ||
            json_object_set_new(cut, "units", array_prefix(json_object_get(frame, "units"), (size_t) limit)) < 0)
                return NULL;
        json_t *slab = json_object_get(frame, "slab");
        if (json_is_object(slab)) {
                json_auto_t *slab_cut = json_copy(slab);
                if (!slab_cut ||
                    json_object_set_new(slab_cut, "rows", array_prefix(json_object_get(slab, "rows"), (size_t) limit)) < 0 ||
                    json_object_set(cut, "slab", slab_cut) < 0)
                        return NULL;
        }
        return TAKE_PTR(cut);
}

/* Sets the timer for the stream due next, or turns it off when none is open. */
static int top_timer_arm(TopStreams *sv) {
        uint64_t next = UINT64_MAX, shortest = UINT64_MAX;
        int r;

        for (TopStream *t = sv->streams; t; t = t->next) {
                next = MIN(next, t->next_usec);
                shortest = MIN(shortest, t->interval_usec);
        }
        if (next == UINT64_MAX)
                return sv->timer ? sd_event_source_set_enabled(sv->timer, SD_EVENT_OFF) : 0;
        r = sd_event_source_set_time(sv->timer, next);
        if (r < 0)
                return r;
        r = sd_event_source_set_time_accuracy(sv->timer, MAX(shortest / TOP_ACCURACY_DIVISOR, (uint64_t) 1));
        if (r < 0)
                return r;
        /* Time sources are one-shot by default; every wakeup arms it again. */
        return sd_event_source_set_enabled(sv->timer, SD_EVENT_ON);
}

static TopStream *top_stream_free(TopStream *t) {
        if (!t)
                return NULL;
        TopStreams *sv = t->owner;
        LIST_REMOVE(sv->streams, t);
        sv->n_streams--;
        free(t);
        /* No wakeup for a stream that is gone. */
        if (sv->timer)
                (void) top_timer_arm(sv);
        return NULL;
}

static void top_disconnected(VarlinkCall *call, void *userdata) {
        top_stream_free(userdata);
}

static bool top_stream_due(const TopStream *t, uint64_t now) {
        /* A little early is on time: streams due close together share a frame. */
        return t->next_usec <= now + t->interval_usec / TOP_BATCH_DIVISOR;
}

/* Whether t takes part in this wakeup: due, and its last update read. A client that does not read costs
 * neither memory nor work (the server drops it when its output stays unread). */
static bool top_stream_wants_frame(const TopStream *t, uint64_t now) {
        return top_stream_due(t, now) && varlink_call_output_pending(t->call) == 0;
}

static int top_timer_fired(sd_event_source *s, uint64_t usec, void *userdata) {
        /* One frame per sort key and zero-row filter, shared by every stream that asks for it. */
        json_t *frames[_QUERY_SORT_MAX][2] = {};
        int64_t limits[_QUERY_SORT_MAX][2] = {};
        TopStreams *sv = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool any = false;
        int r;

        for (TopStream *t = sv->streams; t; t = t->next)
                if (top_stream_wants_frame(t, now)) {
                        limits[t->sort][t->hide_zero] = MAX(limits[t->sort][t->hide_zero], t->limit);
                        any = true;
                }
        if (any) {
                sv->config.flush(sv->config.userdata);
                for (QuerySort q = 0; q < _QUERY_SORT_MAX; q++)
                        for (int z = 0; z < 2; z++)
                                if (limits[q][z] > 0) {
                                        r = sv->config.frame(sv->config.userdata, q, limits[q][z], z,
                                                             &frames[q][z]);
                                        if (r < 0)
                                                log_debug_errno(r, "Top frame failed, skipping a beat: %m");
                                }
        }

        for (TopStream *t = sv->streams, *next; t; t = next) {
                next = t->next; /* a failed send never frees t here, but do not rely on it */
                if (!top_stream_due(t, now))
                        continue;
                bool wants = top_stream_wants_frame(t, now);
                /* On the beat; a stream that fell a whole interval behind (a busy loop, an unread frame)
                 * skips what it missed instead of getting frames back to back. */
                t->next_usec += t->interval_usec;
                if (t->next_usec <= now)
                        t->next_usec = now + t->interval_usec;
                json_t *frame = frames[t->sort][t->hide_zero];
                if (!wants || !frame)
                        continue;
                int64_t frame_limit = limits[t->sort][t->hide_zero];
                json_auto_t *reply = t->limit == frame_limit ? json_incref(frame) : top_frame_cut(frame, t->limit);
                r = reply ? varlink_call_reply_more(t->call, reply) : -ENOMEM;
                /* The connection is going (its disconnect handler frees the stream) or memory is short. */
                if (r < 0)
                        log_debug_errno(r, "Top stream update failed, ignoring: %m");
        }
        for (QuerySort q = 0; q < _QUERY_SORT_MAX; q++)
                for (int z = 0; z < 2; z++)
                        json_decref(frames[q][z]);

        return top_timer_arm(sv);
}

/* Adds t to the open streams (it is theirs even on failure) and sets the timer for whichever is due first. */
static int top_stream_start(TopStreams *sv, TopStream *t) {
        int r;

        LIST_PREPEND(sv->streams, t);
        sv->n_streams++;
        if (!sv->timer) {
                r = sd_event_add_time(sv->config.event, &sv->timer, CLOCK_MONOTONIC, t->next_usec,
                                      MAX(t->interval_usec / TOP_ACCURACY_DIVISOR, (uint64_t) 1), top_timer_fired, sv);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(sv->timer, "top-timer");
                /* Below the event rings, as every client's work. */
                r = sd_event_source_set_priority(sv->timer, sv->config.priority);
                if (r < 0)
                        return r;
        }
        return top_timer_arm(sv);
}

int top_streams_timer(TopStreams *sv, uint64_t *ret_usec, uint64_t *ret_accuracy_usec) {
        int enabled = SD_EVENT_OFF, r;

        assert(sv);
        assert(ret_usec);
        assert(ret_accuracy_usec);

        if (sv->timer) {
                r = sd_event_source_get_enabled(sv->timer, &enabled);
                if (r < 0)
                        return r;
        }
        if (enabled == SD_EVENT_OFF) {
                *ret_usec = *ret_accuracy_usec = 0;
                return 0;
        }
        r = sd_event_source_get_time(sv->timer, ret_usec);
        if (r < 0)
                return r;
        return sd_event_source_get_time_accuracy(sv->timer, ret_accuracy_usec);
}


TopStreams *top_streams_new(const TopStreamsConfig *config) {
        TopStreams *s = calloc(1, sizeof(TopStreams));

        if (!s)
                return NULL;
        s->config = *config;
        return s;
}

TopStreams *top_streams_free(TopStreams *s) {
        if (!s)
                return NULL;
        while (s->streams)
                top_stream_free(s->streams);
        sd_event_source_disable_unref(s->timer);
        free(s);
        return NULL;
}

size_t top_streams_count(const TopStreams *s) {
        return s->n_streams;
}

int top_streams_open(TopStreams *s, VarlinkCall *call, uint64_t interval_usec, int64_t limit, QuerySort sort,
                bool hide_zero) {
        TopStream *t = calloc(1, sizeof(TopStream));

        if (!t)
                return -ENOMEM;
        *t = (TopStream) { .owner = s, .call = call, .interval_usec = interval_usec, .limit = limit, .sort = sort,
                           .hide_zero = hide_zero, .next_usec = now_usec(CLOCK_MONOTONIC) + interval_usec };
        /* From here the stream is the connection's: its disconnect handler frees it. */
        varlink_call_set_disconnect_handler(call, top_disconnected, t);
        return top_stream_start(s, t);
}
