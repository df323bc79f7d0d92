/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DamonWatch: damon:damon_aggregated of chosen kdamonds through perf_event_open, beside whatever event
 * source runs, read only. One per-task event per kdamond thread (the kernel writes its records from
 * that thread), so its records come in the order it wrote them, whatever CPU it ran on: each ring of
 * DAMON_WATCH_RING_PAGES wakes the loop when half full, and is drained before every round. Records go
 * to a DamonRegions (damon-regions.h); records the kernel dropped are counted there.
 */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "damon-regions.h"
#include "macro.h"

/* 1 MiB: a set of 8192 regions (DAMON's most by sysfs default is 1000; the reference machine's kdamond
 * keeps up to 8192) of ~64 bytes each fits twice. */
#define DAMON_WATCH_RING_PAGES 256

typedef struct DamonWatch DamonWatch;

/* Loads the tracepoint's format from tracefs (NULL: found or mounted). regions is borrowed. On failure
 * *reterr_reason (if not NULL) is a static sentence: -ENOENT no such tracepoint (a kernel without DAMON). */
int damon_watch_new(sd_event *event, const char *tracefs, DamonRegions *regions, DamonWatch **ret,
                const char **reterr_reason);
DamonWatch *damon_watch_free(DamonWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(DamonWatch *, damon_watch_free);

/* Reads kdamond pid's records from now on (nothing if it already does). -errno of perf_event_open. */
int damon_watch_follow(DamonWatch *w, int32_t pid);
/* Stops reading kdamond pid's records. */
void damon_watch_unfollow(DamonWatch *w, int32_t pid);
bool damon_watch_follows(const DamonWatch *w, int32_t pid);
/* Hands every record in the rings to the regions now. */
void damon_watch_drain(DamonWatch *w);
