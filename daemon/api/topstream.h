/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * TopStreams: the open Top(more) calls and the one timer behind them all. A stream gets a frame of its
 * sort every interval; frames are built by the owner (TopStreamsConfig.frame), once per wakeup and sort
 * for every stream due then, so N streams cost one flush and at most one query per sort order.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "query.h"
#include "varlink-server.h"

#define TOP_INTERVAL_MIN_USEC 100000
#define TOP_STREAMS_MAX 16

typedef struct TopStreamsConfig {
        sd_event *event;                /* borrowed */
        int64_t priority;               /* of the timer: below the event rings, as every client's work */
        void *userdata;
        /* Brings the core up to date before frames are built. */
        void (*flush)(void *userdata);
        /* A Top reply of sort and limit, without the rows holding nothing if hide_zero. -errno. */
        int (*frame)(void *userdata, QuerySort sort, int64_t limit, bool hide_zero, json_t **ret);
} TopStreamsConfig;

typedef struct TopStreams TopStreams;

/* NULL on OOM. */
TopStreams *top_streams_new(const TopStreamsConfig *config);
/* Ends every stream and the timer. Free the varlink server first: its calls' disconnect handlers free
 * their streams. Takes NULL, returns NULL. */
TopStreams *top_streams_free(TopStreams *s);
size_t top_streams_count(const TopStreams *s);

/* A stream on call, whose first frame was sent: the next comes interval_usec from now. The call's
 * connection owns it from here (its disconnect handler frees it). -errno if the timer cannot be set (the
 * stream stays open). */
int top_streams_open(TopStreams *s, VarlinkCall *call, uint64_t interval_usec, int64_t limit, QuerySort sort,
                bool hide_zero);

/* When the timer fires next and how late sd-event may fire it (CLOCK_MONOTONIC usec; both 0 when no stream
 * is open). For tests. -errno from sd-event. */
int top_streams_timer(TopStreams *s, uint64_t *ret_usec, uint64_t *ret_accuracy_usec);
