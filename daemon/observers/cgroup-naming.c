/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-naming.h"
#include "cgroupnames.h"
#include "debounce.h"
#include "log.h"
#include "units.h"

/* New cgroups are named this long after the last new one of a burst (a walk of the cgroup tree costs a
 * few milliseconds per thousand cgroups), at most CGROUP_RESOLVE_MAX_DELAY_USEC after the first: soon
 * enough to find a short-lived unit's cgroup before it is removed. Queries name them at once. */
#define CGROUP_RESOLVE_DELAY_USEC 50000
#define CGROUP_RESOLVE_MAX_DELAY_USEC 500000
/* Process exits make the cgroup tree be walked again this long after the last exit of a burst, at most
 * CGROUP_RECHECK_MAX_DELAY_USEC after the first: a unit whose cgroups are gone shows as not live within
 * seconds, and a machine whose processes exit all the time walks the tree every ten seconds at most. */
#define CGROUP_RECHECK_DELAY_USEC 2000000
#define CGROUP_RECHECK_MAX_DELAY_USEC 10000000

struct CgroupNaming {
        Accounting *accounting;         /* borrowed */
        CgroupNames *cgroups;           /* owned; NULL without a cgroup2 mount */
        Debounce *resolve;              /* owned: names new cgroups a moment after they appear */
        Debounce *recheck;              /* owned: notices removed cgroups a while after processes exit */
        uint32_t named_last;            /* the last cgroup name_from_task() tried */
        EventObserver observer;
};

/* Walks the cgroup tree again and marks which named cgroups are gone, or back. */
static int walk(CgroupNaming *n) {
        Units *u = accounting_units(n->accounting);
        int r;

        r = cgroupnames_walk(n->cgroups);
        if (r < 0)
                return log_warning_errno(r, "Failed to walk the cgroup tree at %s, ignoring: %m",
                                         cgroupnames_root(n->cgroups));
        for (uint32_t i = 1; i < units_cgroup_count(u); i++) {
                const CgroupUsage *c = units_cgroup(u, i);
                if (c->id != 0 && !c->pending)
                        units_cgroup_set_removed(u, i, !cgroupnames_path(n->cgroups, c->id));
        }
        return 0;
}

/* The unit name and path of a cgroup id, if the last walk saw it. */
static bool lookup(CgroupNaming *n, uint64_t id, char **ret_name, const char **ret_path) {
        const char *path = cgroupnames_path(n->cgroups, id);
        size_t len;

        if (!path)
                return false;
        const char *name = cgroupnames_unit_name(path, &len);
        *ret_name = strndup(name, len);
        *ret_path = path;
        return true;
}

void cgroup_naming_resolve(CgroupNaming *n) {
        Units *u = accounting_units(n->accounting);
        bool walked = false;
        int r;

        if (units_pending(u) == 0)
                return;
        for (uint32_t i = 1; i < units_cgroup_count(u) && units_pending(u) > 0; i++) {
                const CgroupUsage *c = units_cgroup(u, i);
                _cleanup_free_ char *name = NULL;
                const char *path = NULL;

                if (!c->pending)
                        continue;
                if (!n->cgroups) {
                        /* No cgroup2 tree to look in: nameless, as if removed. */
                        r = units_cgroup_resolve(u, i, NULL, NULL);
                        if (r < 0)
                                return (void) log_debug_errno(r, "Failed to name cgroup %" PRIu64 ": %m", c->id);
                        continue;
                }
                bool found = lookup(n, c->id, &name, &path);
                if (!found && !walked) {
                        /* Made since the last walk: one walk for all the cgroups missing now. */
                        walked = true;
                        (void) walk(n);
                        found = lookup(n, c->id, &name, &path);
                }
                if (found && !name)
                        return (void) log_debug_errno(ENOMEM, "Failed to name cgroup %" PRIu64 ": %m", c->id);
                r = units_cgroup_resolve(u, i, name, found ? path : NULL);
                if (r < 0)
                        return (void) log_debug_errno(r, "Failed to name cgroup %" PRIu64 ": %m", c->id);
                /* Gone before it could be named. */
                if (!found)
                        units_cgroup_set_removed(u, i, true);
        }
}

/*
 * A cgroup seen for the first time is named from the task of the event while it lives: a unit that lives
 * less than the debounced walk takes, or that the walk's timer, starved while the daemon drains a burst,
 * reaches only after its cgroup is gone, still has its name (an OOM-killed service is such a unit). Misses
 * fall back on the walk.
 */
static void name_from_task(CgroupNaming *n, const MsEvent *e) {
        Units *u = accounting_units(n->accounting);
        _cleanup_free_ char *path = NULL, *name = NULL;
        size_t len;

        if (!n->cgroups || e->pid <= 0 || e->cgroup_id == 0)
                return;
        uint32_t cgroup = units_cgroup_intern(u, e->cgroup_id);
        /* One try per cgroup: a miss (the task moved, or is gone) is the walk's to name. */
        if (cgroup == UNITS_NONE || !units_cgroup(u, cgroup)->pending || cgroup == n->named_last)
                return;
        n->named_last = cgroup;
        if (cgroupnames_task_path(n->cgroups, NULL, e->pid, e->cgroup_id, &path) < 0)
                return;
        const char *unit = cgroupnames_unit_name(path, &len);
        name = strndup(unit, len);
        if (!name || units_cgroup_resolve(u, cgroup, name, path) < 0)
                log_debug("Failed to name cgroup %" PRIu64 " from pid %d, naming it with the next walk.",
                          e->cgroup_id, (int) e->pid);
}

static void on_event(void *userdata, const MsEvent *e, bool applied) {
        CgroupNaming *n = userdata;
        Units *u = accounting_units(n->accounting);

        (void) applied;
        /* A cgroup seen for the first time: named from its task now, or a moment later, a burst of new
         * ones with one walk. */
        if (_unlikely_(units_pending(u) > 0)) {
                name_from_task(n, e);
                if (units_pending(u) > 0 && !debounce_pending(n->resolve)) {
                        int r = debounce_request(n->resolve);
                        if (r < 0)
                                log_debug_errno(r, "Failed to schedule naming new cgroups, naming them at the next query: %m");
                }
        }
        /* A process exited: its cgroup may be removed next (a unit stopped). Seen by a walk a few seconds
         * after the last exit of a burst. */
        if (e->type == MS_EVENT_TASK_EXIT && e->tid == e->pid && n->cgroups)
                (void) debounce_request(n->recheck);
}

static void resolve_deferred(void *userdata) {
        cgroup_naming_resolve(userdata);
}

static void recheck_deferred(void *userdata) {
        CgroupNaming *n = userdata;

        (void) walk(n);
        cgroup_naming_resolve(n);
}

static void observer_free(void *userdata) {
        cgroup_naming_free(userdata);
}

CgroupNaming *cgroup_naming_free(CgroupNaming *n) {
        if (!n)
                return NULL;
        debounce_free(n->resolve);
        debounce_free(n->recheck);
        cgroupnames_free(n->cgroups);
        free(n);
        return NULL;
}

int cgroup_naming_new(sd_event *event, const char *root, Accounting *accounting, EventObserver **ret) {
        _cleanup_(cgroup_naming_freep) CgroupNaming *n = calloc(1, sizeof(CgroupNaming));
        int r;

        if (!n)
                return log_oom();
        n->accounting = accounting;
        /* Every event that can make a cgroup known, and process exits. */
        n->observer = (EventObserver) {
                .name = "cgroup-naming",
                .after_types = MS_EVENT_BIT(MS_EVENT_PAGE_ALLOC) | MS_EVENT_BIT(MS_EVENT_OBJECT_ALLOC) |
                               MS_EVENT_BIT(MS_EVENT_SAMPLE) | MS_EVENT_BIT(MS_EVENT_TASK_EXIT),
                .userdata = n,
                .event = on_event,
                .flush = resolve_deferred,
                .free = observer_free,
        };
        r = debounce_new(event, "cgroup-resolve", CGROUP_RESOLVE_DELAY_USEC, CGROUP_RESOLVE_MAX_DELAY_USEC,
                         resolve_deferred, n, &n->resolve);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the cgroup naming timer: %m");
        r = debounce_new(event, "cgroup-recheck", CGROUP_RECHECK_DELAY_USEC, CGROUP_RECHECK_MAX_DELAY_USEC,
                         recheck_deferred, n, &n->recheck);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the cgroup recheck timer: %m");
        r = cgroupnames_new(root, &n->cgroups);
        if (r == -ENOMEDIUM)
                log_notice("No cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified: pages per unit "
                           "are counted by cgroup id, without names.");
        else if (r < 0)
                return log_error_errno(r, "Failed to set up cgroup naming: %m");
        else
                /* The first walk is any later one: no cgroup is known yet to be marked gone. */
                (void) walk(n);
        *ret = &TAKE_PTR(n)->observer;
        return 0;
}

CgroupNaming *cgroup_naming_of(EventObserver *o) {
        return o->userdata;
}
