/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyindex.h"
#include "macro.h"
#include "units.h"
#include "utf8.h"

struct Units {
        CgroupUsage *cgroups;           /* owned; [0] reserved */
        size_t n_cgroups, n_cgroups_allocated;
        UnitUsage *units;               /* owned, names owned by each; [0] reserved */
        size_t n_units, n_units_allocated;

        KeyIndex by_id;                 /* owned: cgroup id -> record index */
        size_t n_pending;
};

Units *units_new(void) {
        _cleanup_free_ Units *u = calloc(1, sizeof(Units));
        if (!u)
                return NULL;
        u->cgroups = calloc(16, sizeof(CgroupUsage));
        u->units = calloc(16, sizeof(UnitUsage));
        if (!u->cgroups || !u->units) {
                free(u->cgroups);
                free(u->units);
                return NULL;
        }
        u->n_cgroups_allocated = u->n_units_allocated = 16;
        u->n_cgroups = u->n_units = 1;
        return TAKE_PTR(u);
}

Units *units_free(Units *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n_units; i++) {
                free(u->units[i].name);
                free(u->units[i].cgroup);
        }
        free(u->units);
        free(u->cgroups);
        key_index_done(&u->by_id);
        free(u);
        return NULL;
}

static int grow(void **array, size_t *allocated, size_t used, size_t size) {
        if (used < *allocated)
                return 0;
        size_t n = *allocated * 2;
        if (n >= UINT32_MAX)
                return -ENOMEM;
        void *p = realloc(*array, n * size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = n;
        return 0;
}


/* An unused unit slot (a unit all of whose cgroups joined others), emptied, else a new one. */
static uint32_t unit_new(Units *u) {
        for (size_t i = 1; i < u->n_units; i++)
                if (u->units[i].n_cgroups == 0) {
                        /* A slot left unused by a failed resolve may still hold its strings. */
                        free(u->units[i].name);
                        free(u->units[i].cgroup);
                        u->units[i] = (UnitUsage) {};
                        return (uint32_t) i;
                }
        if (grow((void **) &u->units, &u->n_units_allocated, u->n_units, sizeof(UnitUsage)) < 0)
                return UNITS_NONE;
        u->units[u->n_units] = (UnitUsage) {};
        return (uint32_t) u->n_units++;
}

uint32_t units_cgroup_intern(Units *u, uint64_t id) {
        uint32_t known = key_index_get(&u->by_id, id);
        if (_likely_(known != KEY_INDEX_NONE))
                return known;

        if (grow((void **) &u->cgroups, &u->n_cgroups_allocated, u->n_cgroups, sizeof(CgroupUsage)) < 0)
                return UNITS_NONE;
        /* A unit record that ends up unused (the index failed) stays free for the next new cgroup. */
        uint32_t unit = unit_new(u);
        if (unit == UNITS_NONE || key_index_put(&u->by_id, id, (uint32_t) u->n_cgroups) < 0)
                return UNITS_NONE;

        uint32_t c = (uint32_t) u->n_cgroups++;
        u->cgroups[c] = (CgroupUsage) { .id = id, .unit = unit, .pending = true };
        u->units[unit] = (UnitUsage) { .n_cgroups = 1, .n_live = 1 };
        u->n_pending++;
        /* No id is no name to look for: such events all go to one unit, named right away. On OOM it stays
         * pending, and the daemon's resolver names it as any id it cannot find. */
        if (id == 0)
                (void) units_cgroup_resolve(u, c, UNITS_UNKNOWN_NAME, NULL);
        return c;
}

void units_charge(Units *u, uint32_t cgroup, uint64_t pages) {
        CgroupUsage *c = &u->cgroups[cgroup];
        UnitUsage *unit = &u->units[c->unit];

        c->current_pages += pages;
        ledger_add(&unit->ledger, pages);
        ledger_mark(&unit->ledger, &unit->interval_peak);
        unit->allocs++;
}

void units_uncharge(Units *u, uint32_t cgroup, uint64_t pages) {
        CgroupUsage *c = &u->cgroups[cgroup];
        UnitUsage *unit = &u->units[c->unit];

        c->current_pages -= MIN(pages, c->current_pages);
        (void) ledger_sub(&unit->ledger, pages);
        unit->frees++;
}

void units_charge_slab(Units *u, uint32_t cgroup, uint64_t bytes) {
        CgroupUsage *c = &u->cgroups[cgroup];

        c->current_slab_bytes += bytes;
        ledger_add(&u->units[c->unit].slab_bytes, bytes);
}

void units_uncharge_slab(Units *u, uint32_t cgroup, uint64_t bytes) {
        CgroupUsage *c = &u->cgroups[cgroup];

        c->current_slab_bytes -= MIN(bytes, c->current_slab_bytes);
        (void) ledger_sub(&u->units[c->unit].slab_bytes, bytes);
}

void units_apply(Units *u, uint32_t cgroup, uint64_t rise, int64_t delta) {
        CgroupUsage *c = &u->cgroups[cgroup];
        UnitUsage *unit = &u->units[c->unit];

        if (delta >= 0)
                c->current_pages += (uint64_t) delta;
        else
                c->current_pages -= MIN((uint64_t) -(delta + 1) + 1, c->current_pages);
        ledger_mark_rise(&unit->ledger, rise, &unit->interval_peak);
        (void) ledger_apply(&unit->ledger, rise, delta);
        if (delta > 0)
                unit->allocs++;
        else if (delta < 0)
                unit->frees++;
}

uint64_t units_interval_take(Units *u, uint32_t unit) {
        if (unit == UNITS_NONE || unit >= u->n_units || u->units[unit].n_cgroups == 0)
                return 0;
        return ledger_interval_take(&u->units[unit].ledger, &u->units[unit].interval_peak);
}

uint32_t units_find(const Units *u, const char *name) {
        for (size_t i = 1; i < u->n_units; i++)
                if (u->units[i].n_cgroups > 0 && u->units[i].name && streq(u->units[i].name, name))
                        return (uint32_t) i;
        return UNITS_NONE;
}

static int replace_string(char **s, const char *value) {
        char *copy = NULL;

        if (value) {
                copy = strdup(value);
                if (!copy)
                        return -ENOMEM;
        }
        free(*s);
        *s = copy;
        return 0;
}

int units_cgroup_resolve(Units *u, uint32_t cgroup, const char *name, const char *path) {
        if (cgroup == UNITS_NONE || cgroup >= u->n_cgroups || (name && name[0] == '\0'))
                return -EINVAL;
        if (!name) {
                name = UNITS_REMOVED_NAME;
                path = NULL;
        }

        CgroupUsage *c = &u->cgroups[cgroup];
        uint32_t from = c->unit, to = units_find(u, name);
        int r;

        if (to == UNITS_NONE && u->units[from].n_cgroups == 1) {
                /* The usual case: a unit seen for the first time takes the name, with its exact peak. */
                _cleanup_free_ char *copy = strdup(name);
                if (!copy)
                        return -ENOMEM;
                r = replace_string(&u->units[from].cgroup, path);
                if (r < 0)
                        return r;
                free(u->units[from].name);
                u->units[from].name = TAKE_PTR(copy);
                to = from;
        } else if (to == from) {
                r = replace_string(&u->units[from].cgroup, path);
                if (r < 0)
                        return r;
        } else {
                if (to == UNITS_NONE) {
                        to = unit_new(u);
                        if (to == UNITS_NONE)
                                return -ENOMEM;
                        u->units[to].name = strdup(name);
                        if (!u->units[to].name)
                                return -ENOMEM; /* the slot stays unused: n_cgroups is 0 */
                }
                r = replace_string(&u->units[to].cgroup, path);
                if (r < 0)
                        return r;

                /* The cgroup's pages and bytes move over; the sum's peak can only be known from here on. */
                UnitUsage *f = &u->units[from], *t = &u->units[to];
                (void) ledger_sub(&f->ledger, c->current_pages);
                ledger_add(&t->ledger, c->current_pages);
                ledger_mark(&t->ledger, &t->interval_peak);
                (void) ledger_sub(&f->slab_bytes, c->current_slab_bytes);
                ledger_add(&t->slab_bytes, c->current_slab_bytes);
                f->n_cgroups--;
                t->n_cgroups++;
                if (!c->removed) {
                        f->n_live--;
                        t->n_live++;
                }
                if (f->n_cgroups == 0) {
                        free(f->name);
                        free(f->cgroup);
                        *f = (UnitUsage) {};
                }
                c->unit = to;
        }

        if (c->pending) {
                c->pending = false;
                u->n_pending--;
        }
        return 0;
}

void units_cgroup_set_removed(Units *u, uint32_t cgroup, bool removed) {
        if (cgroup == UNITS_NONE || cgroup >= u->n_cgroups)
                return;
        CgroupUsage *c = &u->cgroups[cgroup];
        if (c->removed == removed)
                return;
        c->removed = removed;
        if (removed)
                u->units[c->unit].n_live--;
        else
                u->units[c->unit].n_live++;
}

size_t units_cgroup_count(const Units *u) {
        return u->n_cgroups;
}

const CgroupUsage *units_cgroup(const Units *u, uint32_t cgroup) {
        if (cgroup == UNITS_NONE || cgroup >= u->n_cgroups)
                return NULL;
        return &u->cgroups[cgroup];
}

size_t units_pending(const Units *u) {
        return u->n_pending;
}

size_t units_unit_count(const Units *u) {
        return u->n_units;
}

const UnitUsage *units_unit(const Units *u, uint32_t unit) {
        if (unit == UNITS_NONE || unit >= u->n_units || u->units[unit].n_cgroups == 0)
                return NULL;
        return &u->units[unit];
}

uint32_t units_unit_of(const Units *u, uint32_t cgroup) {
        if (cgroup == UNITS_NONE || cgroup >= u->n_cgroups)
                return UNITS_NONE;
        return u->cgroups[cgroup].unit;
}

void units_reset_peaks(Units *u) {
        for (size_t i = 1; i < u->n_units; i++) {
                ledger_reset_peak(&u->units[i].ledger);
                ledger_reset_peak(&u->units[i].slab_bytes);
        }
}

void units_clear(Units *u) {
        for (size_t i = 1; i < u->n_cgroups; i++)
                u->cgroups[i].current_pages = u->cgroups[i].current_slab_bytes = 0;
        for (size_t i = 1; i < u->n_units; i++) {
                u->units[i].ledger = u->units[i].slab_bytes = (Ledger) {};
                u->units[i].interval_peak = 0;
                u->units[i].allocs = u->units[i].frees = 0;
        }
}

size_t units_memory_bytes(const Units *u) {
        size_t n = sizeof(Units) + u->n_cgroups_allocated * sizeof(CgroupUsage) +
                   u->n_units_allocated * sizeof(UnitUsage) + key_index_memory_bytes(&u->by_id);
        for (size_t i = 1; i < u->n_units; i++)
                n += (u->units[i].name ? strlen(u->units[i].name) + 1 : 0) +
                     (u->units[i].cgroup ? strlen(u->units[i].cgroup) + 1 : 0);
        return n;
}

uint32_t units_find_shown(const Units *u, const char *name) {
        for (uint32_t i = 1; i < units_unit_count(u); i++) {
                const UnitUsage *x = units_unit(u, i);
                if (x && x->name && utf8_escaped_streq(x->name, name))
                        return i;
        }
        return UNITS_NONE;
}
