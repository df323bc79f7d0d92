/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * CgroupNaming: names the core's new cgroups (units.h) after systemd units, and notices removed ones.
 *
 * A cgroup met for the first time is named from the task of the event while that task lives (its
 * /proc/PID/cgroup, checked against the id), else by a walk of the cgroup2 tree a moment after the last
 * new cgroup of a burst (one walk for all of them). Process exits make the tree be walked again a while
 * after the last exit of a burst, so a unit whose cgroups are gone shows as not live. Queries name what
 * is still pending at once (cgroup_naming_resolve()).
 */

#include <systemd/sd-event.h>

#include "accounting.h"
#include "macro.h"
#include "observer.h"

typedef struct CgroupNaming CgroupNaming;

/* root: the cgroup2 mount (NULL: found, cgroupnames.h). Without a cgroup2 tree, cgroups stay nameless
 * (logged once). accounting is borrowed. Returns the observer to register with the Manager, which frees
 * it; its flush hook is cgroup_naming_resolve(). -errno, logged. */
int cgroup_naming_new(sd_event *event, const char *root, Accounting *accounting, EventObserver **ret);
CgroupNaming *cgroup_naming_free(CgroupNaming *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(CgroupNaming *, cgroup_naming_free);

/* The namer behind the observer cgroup_naming_new() returned. */
CgroupNaming *cgroup_naming_of(EventObserver *o);

/* Names the core's pending cgroups now, walking the tree once if one is not in the last walk. */
void cgroup_naming_resolve(CgroupNaming *n);
