/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * memstrack-metrics' /debug/pprof endpoints: a request read (pprof-request.h), memstrackd asked over
 * varlink (Profile, or Heap for userheap), the profile rendered (pprof-render.h) and answered as Go's
 * net/http/pprof answers, or refused with a status and a one-line reason.
 *
 * Cost is bounded whatever the scrapers do: one profile is fetched and built at a time, up to
 * PPROF_WAITERS_MAX requests wait for it (at most PPROF_WAIT_USEC), the others get 429 at once; one
 * delta (?seconds=N) runs at a time, holding no slot while it waits, and others get 429 with the seconds
 * it has left in Retry-After. Requests run on libmicrohttpd's threads, one per connection.
 */

#include <stddef.h>

#include <microhttpd.h>

#include "macro.h"

#define PPROF_WAITERS_MAX 4u
#define PPROF_WAIT_USEC (10ULL * 1000000ULL)

typedef struct PprofServer PprofServer;

/* address: memstrackd's socket (borrowed, must outlive the server); top: tasks and units named in labels.
 * -ENOMEM, -errno of the thread primitives. */
int pprof_server_new(const char *address, size_t top, PprofServer **ret);
PprofServer *pprof_server_free(PprofServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(PprofServer *, pprof_server_free);

/* Ends every wait (a delta's, the queue's) with 503, so that the HTTP threads finish: before
 * MHD_stop_daemon(). */
void pprof_server_stop(PprofServer *s);

/* Answers a request for a path below /debug/pprof (query: the raw text after '?', NULL for none). */
enum MHD_Result pprof_server_handle(PprofServer *s, struct MHD_Connection *conn, const char *method, const char *path,
                const char *query);
