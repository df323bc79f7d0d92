/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Service: io.memstrack on the generic varlink server. It owns the server, the named snapshots and the
 * open Top streams with their shared timer; what it answers about (the accounting core, user symbols, the
 * event source's figures) belongs to its owner and reaches it through ServiceConfig, so the API knows
 * neither the Manager nor any particular source.
 */

#include <stdint.h>
#include <time.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "view.h"
#include "macro.h"
#include "status.h"
#include "usym.h"

typedef struct Service Service;

#define SERVICE_LEAKS_PACE 9

typedef struct ServiceConfig {
        sd_event *event;                /* borrowed */
        Accounting *accounting;         /* borrowed; its Ksym tells whether kernel addresses are hidden */
        UserSymbols *usym;              /* borrowed: names user frames in StackTree replies */
        History *history;               /* borrowed: answers History */
        const Coldness *coldness;       /* borrowed: the access rounds (Cold); NULL: none */
        long page_size;
        const char *socket_path;        /* NULL: MEMSTRACK_SOCKET_DEFAULT (copied) */
        const char *group;              /* NULL: MEMSTRACK_GROUP_DEFAULT; "" root only (copied) */
        /* Client deadlines (VarlinkServerConfig); 0: the server's defaults. */
        uint64_t first_message_timeout_usec, request_timeout_usec, idle_timeout_usec, output_timeout_usec;
        int64_t priority;               /* sd-event priority of all client work (server, Top tick) */
        unsigned max_connections_per_uid; /* 0: the server's default (VarlinkServerConfig) */
        const char *boot_phase_path;    /* the initramfs's snapshot document (bootphase.h); NULL: none */
        /* Leaks walks every tracked page: after a call that took T, the next waits pace * T (0: the default,
         * SERVICE_LEAKS_PACE, which keeps Leaks under a tenth of the daemon's time whoever calls it). */
        unsigned leaks_pace;

        void *userdata;                 /* passed to the callbacks */
        /* Brings the core up to date with what the kernel reported so far; every call runs it first. */
        void (*flush)(void *userdata);
        void (*get_state)(void *userdata, ServiceState *ret);
        /* Optional (HeapStop): stops recording pid's heap, which then ends as closed: 0, also when it had
         * ended already; -ESRCH when the source never recorded it or records no heaps. */
        int (*heap_stop)(void *userdata, int32_t pid);
        /* The time now on clock (CLOCK_MONOTONIC, the events' clock, or CLOCK_REALTIME) in nsec, as calls
         * read it: ages, timestamps, History's window and Leaks' pace. NULL: the system's clocks. For tests
         * and fuzzers that feed events of a clock of their own and want the same answer every run. */
        uint64_t (*now_nsec)(void *userdata, clockid_t clock);
} ServiceConfig;


/* Listens (or takes the socket-activated fd) and serves until freed. Logs its failures. */
int service_new(const ServiceConfig *config, Service **ret);
/* Closes every connection, which ends the open Top streams. Takes NULL, returns NULL. */
Service *service_free(Service *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Service *, service_free);

/* The Top streams' timer: when it fires next and how late sd-event may fire it (CLOCK_MONOTONIC usec; both
 * 0 when no stream is open). For tests. -errno from sd-event. */
int service_top_timer(Service *sv, uint64_t *ret_usec, uint64_t *ret_accuracy_usec);
