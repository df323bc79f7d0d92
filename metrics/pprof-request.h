/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What a /debug/pprof request asks for: the profile by its path, and its query string read strictly (no
 * I/O here, so the unit test feeds it every kind of malformed input). Parameters are those of Go's
 * net/http/pprof that apply (seconds, debug=0, gc) and memstrack's filters (pid, unit, module). Anything
 * else is refused with a one-line reason, never ignored: a scraper that asks for a filter it misspelt
 * must not get everything. docs/metrics.md describes each.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum PprofEndpoint {
        PPROF_HEAP,             /* kernel pages held, Go's heap profile types */
        PPROF_ALLOCS,           /* the same, alloc_space shown first, as Go's allocs */
        PPROF_SLAB,             /* live slab objects (memstrackd --slab) */
        PPROF_USERHEAP,         /* the user-space heaps memstrackd records */
        _PPROF_ENDPOINT_MAX,
        _PPROF_ENDPOINT_INVALID = -EINVAL,
} PprofEndpoint;

#define PPROF_PATH_PREFIX "/debug/pprof/"

/* A delta over more seconds than this is refused: a scraper's timeout is shorter, and the delta holds the
 * delta slot as long. Go bounds it only by its server's write timeout. */
#define PPROF_SECONDS_MAX 60u

typedef struct PprofRequest {
        PprofEndpoint endpoint;
        unsigned seconds;               /* a delta over this many seconds; 0: the profile now */
        int32_t pid;                    /* only this process's; 0: none named */
        char *unit;                     /* only this unit's (owned); NULL: none named */
        char *module;                   /* only stacks through this module (owned); NULL: none named */
} PprofRequest;

/* "heap", "allocs", "slab", "userheap": the last part of the path, and Content-Disposition's filename. */
const char *pprof_endpoint_to_string(PprofEndpoint e);
/* The endpoint of a path ("/debug/pprof/heap"); _PPROF_ENDPOINT_INVALID for any other. */
PprofEndpoint pprof_endpoint_from_path(const char *path);

/*
 * Reads the query string of a request for endpoint (the raw text after '?', percent-encoded; NULL or ""
 * for none) into *ret. On -EINVAL, *reterr_reason is a one-line reason for a 400 answer (a new string,
 * without a newline); -ENOMEM. *ret is left empty on failure.
 */
int pprof_request_parse(PprofEndpoint endpoint, const char *query, PprofRequest *ret, char **reterr_reason);
void pprof_request_done(PprofRequest *r);
