/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The OOM watcher: oom:mark_victim on every CPU through perf_event_open, beside whatever event source
 * runs, so memstrackd hears of every task the kernel's OOM killer picks the moment it is picked. Each
 * CPU has a ring of one page (a kill record is ~70 bytes, and kills are rare) that wakes the loop at
 * every record, at a priority above the event sources', so the handler runs before the page records
 * that follow the kill are drained.
 */

#include <stdint.h>

#include <systemd/sd-event.h>

#include "macro.h"
#include "oomkill.h"

typedef struct OomWatch OomWatch;

/* Called once per kill, kill->timestamp_nsec set; kill is borrowed for the call. */
typedef void (*OomWatchHandler)(void *userdata, const OomKill *kill);

/*
 * Opens the tracepoint in tracefs (NULL: found or mounted, tracefs.h) on every online CPU. On failure
 * *reterr_reason (if not NULL) is a static sentence saying why, for Status: -ENOENT no tracepoint,
 * -EACCES/-EPERM no permission, -errno otherwise. Logs at debug level only.
 */
int oom_watch_new(sd_event *event, const char *tracefs, OomWatchHandler handler, void *userdata, OomWatch **ret,
                const char **reterr_reason);
OomWatch *oom_watch_free(OomWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(OomWatch *, oom_watch_free);

/* Kill records the kernel dropped because a ring was full. */
uint64_t oom_watch_lost(const OomWatch *w);
