/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Units: pages per cgroup, and per the unit (a systemd unit name) each cgroup resolves to.
 *
 * Events carry the kernel's cgroup id of the allocating task (MsEvent.cgroup_id). The core interns each id
 * into a cgroup record on first sight and charges its pages there: the charge cell of a page (chargeindex.h)
 * names the record, so a page leaves the cgroup that allocated it even if the task moved since, at no cost
 * per page. Which name a cgroup has is not the core's business (it does no file I/O): a new record is
 * pending, charged to a unit of its own without a name, until the daemon resolves it with
 * units_cgroup_resolve(). Cgroups resolving to the same name (a service restarted in a new cgroup) then
 * share one unit and one Ledger, so its peak is a true peak of their sum from then on.
 *
 * Record 0 of each table is reserved, so a zeroed index (a fresh Task) means "none". Records are never
 * freed while the Units lives: a daemon sees as many cgroups as the host creates (a few per login or
 * transient unit); units_clear() zeroes the counts and keeps the names.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"

#define UNITS_NONE 0u                   /* no cgroup / no unit */
/* Events without a cgroup id (a source that cannot tell) and cgroups the daemon could not name. */
#define UNITS_UNKNOWN_NAME "[unknown]"
#define UNITS_REMOVED_NAME "[removed]"

typedef struct UnitUsage {
        char *name;                     /* owned; NULL while none of its cgroups is resolved */
        char *cgroup;                   /* owned: path of the cgroup resolved into it last; NULL if none */
        Ledger ledger;                  /* pages */
        uint64_t interval_peak;         /* ledger_mark(), for history.h */
        uint64_t allocs, frees;         /* charges and releases of pages */
        Ledger slab_bytes;              /* live slab objects' bytes (slab.h), and their true peak */
        uint32_t n_cgroups;             /* cgroup records charged to it; 0: the slot is unused */
        uint32_t n_live;                /* of them, those not known to be removed */
} UnitUsage;

typedef struct CgroupUsage {
        uint64_t id;                    /* the kernel's cgroup id; 0 for events without one */
        uint32_t unit;                  /* the unit it is charged to */
        bool pending:1;                 /* not resolved yet (see units_cgroup_resolve()) */
        bool removed:1;                 /* the cgroup is gone (units_cgroup_set_removed()) */
        uint64_t current_pages;         /* what it holds now, moved along when it joins another unit */
        uint64_t current_slab_bytes;    /* the same for slab objects' bytes */
} CgroupUsage;

typedef struct Units Units;

/* NULL on OOM. */
Units *units_new(void);
Units *units_free(Units *u);

/*
 * The cgroup record of a kernel cgroup id, created (pending) on first sight; UNITS_NONE on OOM. Id 0 gets
 * a record too, resolved at once to UNITS_UNKNOWN_NAME. One hash probe; callers cache the result per task.
 */
uint32_t units_cgroup_intern(Units *u, uint64_t id);

/* Charge and release pages of a cgroup record, and so of its unit. */
void units_charge(Units *u, uint32_t cgroup, uint64_t pages);
void units_uncharge(Units *u, uint32_t cgroup, uint64_t pages);
/* Charge and release bytes of slab objects of a cgroup record, and so of its unit. */
void units_charge_slab(Units *u, uint32_t cgroup, uint64_t bytes);
void units_uncharge_slab(Units *u, uint32_t cgroup, uint64_t bytes);
/* An aggregated change (ledger_raise()): the unit's peak rises to at least current + rise, then delta. */
void units_apply(Units *u, uint32_t cgroup, uint64_t rise, int64_t delta);

/*
 * Names a cgroup record: path is its cgroup path ("/system.slice/sshd.service"), name its unit. Both
 * NULL: it could not be found (removed before it was seen), and it joins UNITS_REMOVED_NAME. A record
 * joining a unit that already has a name merges into it: the unit's current rises by what the cgroup
 * holds (pages and slab bytes), its peak to at least that; if the unit was new, the cgroup's unit simply takes the name and
 * keeps its exact peak. May be called again for a resolved record (a re-walk found it renamed): it then
 * moves to the unit of its new name. -ENOMEM (nothing changed), -EINVAL for a bad record or a name
 * without a path.
 */
int units_cgroup_resolve(Units *u, uint32_t cgroup, const char *name, const char *path);
/* The cgroup is gone (or back): a unit whose cgroups are all gone is not live. */
void units_cgroup_set_removed(Units *u, uint32_t cgroup, bool removed);

/* Records 1 .. count - 1; NULL for an index out of range or unused. */
size_t units_cgroup_count(const Units *u);
const CgroupUsage *units_cgroup(const Units *u, uint32_t cgroup);
size_t units_pending(const Units *u);

size_t units_unit_count(const Units *u);
const UnitUsage *units_unit(const Units *u, uint32_t unit);
/* The unit of a name as clients were shown it (UTF-8-escaped, as the replies carry it); UNITS_NONE if
 * none, or only a pending unit (which has no name yet). */
uint32_t units_find_shown(const Units *u, const char *name);
/* ledger_interval_take() of a unit's pages; 0 for an index out of range or unused. */
uint64_t units_interval_take(Units *u, uint32_t unit);
/* The unit of this name, or UNITS_NONE. Walks the units: for queries and resolution, not per event. */
uint32_t units_find(const Units *u, const char *name);
/* The unit a cgroup record is charged to; UNITS_NONE out of range. */
uint32_t units_unit_of(const Units *u, uint32_t cgroup);

void units_reset_peaks(Units *u);
/* Zeroes every count; cgroup records and unit names stay. */
void units_clear(Units *u);
size_t units_memory_bytes(const Units *u);
