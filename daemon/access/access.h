/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * AccessWatch: the access room's observer. It reads how recently physical memory was touched from one
 * access source, chosen at start, and every round (--access-interval, and never more often than the
 * source has news) joins it with the core's page table in a Coldness round (coldness.h): pages hot, warm
 * and cold per charge cell, which the Cold method, the Tasks and Units replies and Explain show.
 *
 * The sources, by --access:
 *   damon-read  damon:damon_aggregated of a kdamond already monitoring physical memory (paddr), whoever
 *               runs it: read only, its settings never touched.
 *   damon       as damon-read where such a kdamond runs, else a kdamond of memstrackd's own (kdamond.h)
 *               where nobody configured one and the kernel has DAMON's sysfs interface with paddr;
 *               stopped and removed at exit.
 *   kpageflags  the LRU's flags of a budget of tracked pages per round (kpageflags.h).
 *   auto        damon, else kpageflags.
 *   off         none (the default): nothing is read, replies say so.
 * A kdamond that stops, vanishes or changes its operations or intervals is counted; its regions are
 * dropped, and so are the round's figures once no fresh set came for three aggregation intervals.
 */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "accounting.h"
#include "coldness.h"
#include "kdamond.h"
#include "macro.h"
#include "observer.h"

typedef enum AccessMode {
        ACCESS_OFF,
        ACCESS_DAMON_READ,
        ACCESS_DAMON,
        ACCESS_KPAGEFLAGS,
        ACCESS_AUTO,
        _ACCESS_MODE_MAX,
        _ACCESS_MODE_INVALID = -EINVAL,
} AccessMode;

const char *access_mode_to_string(AccessMode m);
AccessMode access_mode_from_string(const char *s);

#define ACCESS_WARM_USEC_DEFAULT (UINT64_C(60) * 1000000)
#define ACCESS_COLD_USEC_DEFAULT (UINT64_C(600) * 1000000)
#define ACCESS_INTERVAL_USEC_DEFAULT (UINT64_C(10) * 1000000)

typedef struct AccessConfig {
        AccessMode mode;
        uint64_t warm_usec, cold_usec;  /* thresholds of idle time (coldness.h) */
        uint64_t interval_usec;         /* between rounds, at least the source's own interval */
        KdamondSettings kdamond;        /* a kdamond of memstrackd's own */
        size_t kpageflags_budget;       /* blocks per round */
        const char *damon_sysfs;        /* NULL: KDAMOND_SYSFS_DEFAULT */
        const char *tracefs;            /* NULL: found */
        const char *kpageflags;         /* NULL: /proc/kpageflags */
} AccessConfig;

#define ACCESS_CONFIG_DEFAULT                                                                           \
        ((AccessConfig) {                                                                              \
                .mode = ACCESS_OFF, .warm_usec = ACCESS_WARM_USEC_DEFAULT,                              \
                .cold_usec = ACCESS_COLD_USEC_DEFAULT, .interval_usec = ACCESS_INTERVAL_USEC_DEFAULT,    \
                .kdamond = KDAMOND_SETTINGS_DEFAULT, .kpageflags_budget = 65536,                        \
        })

typedef struct AccessWatch AccessWatch;

/* config's strings are borrowed; accounting is borrowed. Nothing is read until access_watch_start().
 * -ENOMEM, -EINVAL (thresholds). */
int access_watch_new(sd_event *event, const AccessConfig *config, Accounting *accounting, AccessWatch **ret);
AccessWatch *access_watch_free(AccessWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(AccessWatch *, access_watch_free);

/* Chooses and opens the source (the reason when none can run is kept for replies and logged once), once
 * the event source runs: source names it; keys_are_pfns false (the eBPF source's struct page indexes)
 * has the keys calibrated against pfns first (key-calibration.h). A source that cannot run is no
 * failure of the daemon: 0, or -ENOMEM. */
int access_watch_start(AccessWatch *w, const char *source, bool keys_are_pfns);
/* A round now, whatever the interval (tests, and the first round after start). */
void access_watch_round(AccessWatch *w, uint64_t now_nsec);

/* The rounds' figures, for queries. NULL with --access=off. */
const Coldness *access_watch_coldness(const AccessWatch *w);

/* The observer to register with the Manager (its tick runs the rounds, its free stops memstrackd's own
 * kdamond); it frees w. */
EventObserver *access_watch_observer(AccessWatch *w);
