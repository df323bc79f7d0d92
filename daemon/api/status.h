/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Status view (io.memstrack.varlink Status): the daemon's health, totals and losses, from the core's
 * counters and what the core's owner knows at the moment of a call. Used by the Status method and by the
 * snapshot document memstrackd writes its reports from (document.h).
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "view.h"
#include "memcg.h"
#include "system-memory.h"

/* What the owner knows at the moment of a call. */
typedef struct ServiceState {
        const char *backend;            /* the event source's name; "none" without a source */
        const char *backend_reason;     /* why it runs (source_new()); NULL: unknown */
        EventSourceStats source;        /* zeros without a source */
        uint64_t uptime_usec;
        double events_per_second;
        /* The OOM room's (daemon/oom, which sits above this folder and fills these): whether it watches
         * kills and why not, and its OomKills reply, a new reference (NULL on OOM). oom_kills NULL: no
         * room (Status says "not started", OomKills NotTracing). */
        bool oom_watching;
        const char *oom_reason;
        json_t *(*oom_kills)(const void *room);
        const void *oom_room;
        const Memcg *memcg;             /* the memory controller's figures (Explain); NULL: none */
        const char *memcg_reason;       /* why there are none; NULL: unknown */
        const char *heap_socket;        /* where processes hand over their heap beside the source; NULL: none */
        const SystemMemory *memory;     /* the machine's memory when tracing began; NULL: not started */
} ServiceState;

/* Whether raw kernel addresses go to a caller: root only, and never the made-up ones of a source that
 * names its own frames (an imported page_owner log). */
bool status_addresses_shown(Accounting *a, bool peer_is_root);

/* The Status reply for accounting a and what its owner knows now; kernel addresses count as hidden
 * unless peer_is_root. New reference, NULL on OOM. */
json_t *status_reply_json(Accounting *a, const ServiceState *state, long page_size, bool peer_is_root);
