/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * memstrack-metrics' /debug/pprof profiles from memstrackd's replies (Profile for heap, allocs and slab,
 * Heap for userheap), as the gzipped pprof Go's net/http/pprof serves: Go's sample types and their order,
 * labels naming each sample's task, unit and module, mappings with the build IDs the daemon sent. A delta
 * (?seconds=N) is the older reply added with scale -1 and the newer with 1. No I/O and no HTTP here, so
 * the unit test renders fixtures. docs/metrics.md describes what a profile holds.
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "macro.h"
#include "pprof-request.h"

typedef struct PprofRender PprofRender;

/* A profile for the endpoint; scope is what the request narrowed it to, for a comment ("unit
 * web.service"; NULL: everything). -ENOMEM. */
int pprof_render_new(PprofEndpoint endpoint, const char *scope, PprofRender **ret);
PprofRender *pprof_render_free(PprofRender *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(PprofRender *, pprof_render_free);

/* Adds a reply (borrowed): scale 1, or -1 for the older reply of a delta. -EBADMSG when it is not the
 * reply the endpoint takes (a field missing or of another type), -ENOMEM. */
int pprof_render_add(PprofRender *r, const json_t *reply, int scale);

/*
 * The profile, taken at time_nanos (ns since the epoch) over duration_nanos (a delta's; 0 for none), as
 * gzip in *ret (malloc'd, the caller frees). Call once. -ENOMEM, -EIO.
 */
int pprof_render_finish(PprofRender *r, int64_t time_nanos, int64_t duration_nanos, uint8_t **ret, size_t *ret_size);
