/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksym.h"
#include "macro.h"
#include "slabquery.h"
#include "utf8.h"
#include "varlink.h"

static const char *const slab_by_table[_SLAB_BY_MAX] = {
        [SLAB_BY_CALLSITE] = "callsite",
        [SLAB_BY_CACHE] = "cache",
        [SLAB_BY_TASK] = "task",
        [SLAB_BY_UNIT] = "unit",
};

const char *slab_by_to_string(SlabBy by) {
        return by >= 0 && by < _SLAB_BY_MAX ? slab_by_table[by] : NULL;
}

SlabBy slab_by_from_string(const char *s) {
        for (SlabBy by = 0; s && by < _SLAB_BY_MAX; by++)
                if (streq(s, slab_by_table[by]))
                        return by;
        return _SLAB_BY_INVALID;
}

/* One row before it is rendered: call sites and caches have their group, tasks and units are summed
 * from the live objects. */
typedef struct Row {
        uint32_t owner;                 /* site, cache, process (view_task_owner()) or unit */
        uint64_t objects, requested, allocated;
        bool has_group;                 /* call sites and caches */
        ViewSlabGroup group;
} Row;

typedef struct Rows {
        Row *rows;
        size_t n, allocated;
        uint32_t *slot_of;              /* owner index -> rows index + 1, 0: none yet */
        size_t n_slots;
        Accounting *a;
        SlabBy by;
        int error;
} Rows;

static Row *row_of(Rows *r, uint32_t owner) {
        if (owner >= r->n_slots) {
                size_t n = MAX((size_t) owner + 1, r->n_slots * 2);
                uint32_t *s = realloc(r->slot_of, n * sizeof(uint32_t));
                if (!s)
                        return NULL;
                memset(s + r->n_slots, 0, (n - r->n_slots) * sizeof(uint32_t));
                r->slot_of = s;
                r->n_slots = n;
        }
        if (r->slot_of[owner] == 0) {
                if (greedy_realloc(&r->rows, &r->allocated, r->n + 1, sizeof(Row), 64) < 0)
                        return NULL;
                r->rows[r->n] = (Row) { .owner = owner };
                r->slot_of[owner] = (uint32_t) ++r->n;
        }
        return &r->rows[r->slot_of[owner] - 1];
}

static void sum_object(void *userdata, const ViewSlabObject *o) {
        Rows *r = userdata;

        /* Objects of no known unit make the "[unknown]" row, unit 0. */
        uint32_t owner = r->by == SLAB_BY_TASK ? view_task_owner(r->a, o->task) : o->unit;
        Row *row = row_of(r, owner);
        if (!row) {
                r->error = -ENOMEM;
                return;
        }
        row->objects++;
        row->requested += o->requested;
        row->allocated += o->allocated;
}

static int compare_rows(const void *x, const void *y) {
        const Row *a = x, *b = y;
        if (a->allocated != b->allocated)
                return a->allocated < b->allocated ? 1 : -1;
        return a->owner < b->owner ? -1 : a->owner > b->owner;
}

static double waste_percent(uint64_t requested, uint64_t allocated) {
        return allocated > 0 ? 100.0 * (double) (allocated - MIN(requested, allocated)) / (double) allocated : 0.0;
}

void slab_call_site_json(Accounting *a, uint64_t address, bool show_addresses, json_t **ret_name,
                           json_t **ret_address) {
        const Ksym *k = view_ksym(a);
        char hex[2 + 16 + 1];

        *ret_address = json_null();
        if (address == 0) {
                *ret_name = json_string("[unknown]");
                return;
        }
        (void) snprintf(hex, sizeof(hex), "0x%" PRIx64, address);
        /* As long as the symbol is (KSYM_NAME_LEN is 512 bytes); the address itself on OOM. */
        _cleanup_free_ char *name = ksym_format(k, address);
        *ret_name = utf8_json_string(name ?: hex);
        if (show_addresses)
                *ret_address = json_string(hex);
}

/* A cache's kernel figures (SlabKernel), or null when the last reconciliation had none for it. */
static json_t *kernel_json(const ViewSlabGroup *g) {
        const ViewSlabKernel *k = &g->kernel;

        if (!k->known)
                return json_null();
        json_t *drift = json_null();
        if (!g->size_class) {
                /* What memstrack holds against what the kernel gained since tracing began. */
                int64_t growth = (int64_t) k->active_objects - (int64_t) k->start_active_objects;
                drift = json_integer((json_int_t) ((int64_t) MIN(g->live_objects, (uint64_t) INT64_MAX / 2) - growth));
        }
        return json_pack("{s:I, s:I, s:I, s:I, s:o, s:b, s:I, s:I}",
                         "activeObjects", varlink_count(k->active_objects),
                         "activeObjectsAtStart", varlink_count(k->start_active_objects),
                         "boundObjects", varlink_count(k->bound),
                         "slackObjects", varlink_count(k->slack),
                         "driftObjects", drift ?: json_null(),
                         "drifting", g->drifting,
                         "liveObjects", varlink_count(k->live_objects),
                         "allocs", varlink_count(k->allocs));
}

/* What call-site and cache rows add: their counts, whether their frees are visible, and for call sites
 * their cache, for caches the kernel's figures. -ENOMEM. */
static int group_fields(Accounting *a, SlabBy by, const Row *row, json_t *o) {
        const ViewSlabGroup *g = &row->group;
        ViewSlabGroup cache;
        bool has_cache = by == SLAB_BY_CALLSITE && view_slab_cache(a, g->cache, &cache);

        if (json_object_set_new(o, "allocs", json_integer(varlink_count(g->allocs))) < 0 ||
            json_object_set_new(o, "frees", json_integer(varlink_count(g->frees))) < 0 ||
            json_object_set_new(o, "remoteFrees", json_integer(varlink_count(g->remote_frees))) < 0 ||
            json_object_set_new(o, "lostFrees", json_integer(varlink_count(g->lost_frees))) < 0 ||
            json_object_set_new(o, "freesVisible", json_boolean(g->frees_visible)) < 0)
                return -ENOMEM;
        if (by == SLAB_BY_CALLSITE)
                return json_object_set_new(o, "cache", has_cache ? utf8_json_string(cache.name) : json_null()) < 0 ?
                        -ENOMEM : 0;
        if (json_object_set_new(o, "trimmedObjects", json_integer(varlink_count(g->trimmed))) < 0 ||
            json_object_set_new(o, "kernel", kernel_json(g)) < 0)
                return -ENOMEM;
        return 0;
}

static json_t *row_json(Accounting *a, SlabBy by, const Row *row, bool show_addresses) {
        json_t *name = NULL, *address = json_null(), *pid = json_null(), *peak = json_null();
        ViewTask t;
        ViewUnit u;

        switch (by) {
        case SLAB_BY_CALLSITE:
                slab_call_site_json(a, row->group.address, show_addresses, &name, &address);
                peak = json_integer(varlink_count(row->group.live_allocated.peak));
                break;
        case SLAB_BY_CACHE:
                name = utf8_json_string(row->group.name);
                peak = json_integer(varlink_count(row->group.live_allocated.peak));
                break;
        case SLAB_BY_TASK:
                if (!view_task(a, row->owner, &t))
                        return NULL;
                name = utf8_json_string(t.comm);
                pid = json_integer(t.pid);
                peak = json_integer(varlink_count(t.slab_bytes.peak));
                break;
        case SLAB_BY_UNIT: {
                bool known = view_unit(a, row->owner, &u);
                name = utf8_json_string(known && u.name ? u.name : VIEW_UNKNOWN_UNIT);
                if (known)
                        peak = json_integer(varlink_count(u.slab_bytes.peak));
                break;
        }
        default:
                return NULL;
        }
        json_t *o = json_pack("{s:o, s:o, s:o, s:I, s:I, s:I, s:f, s:o}",
                              "name", name ?: json_null(),
                              "address", address ?: json_null(),
                              "pid", pid ?: json_null(),
                              "liveObjects", varlink_count(row->objects),
                              "liveBytesRequested", varlink_count(row->requested),
                              "liveBytesAllocated", varlink_count(row->allocated),
                              "wastePercent", waste_percent(row->requested, row->allocated),
                              "peakLiveBytes", peak ?: json_null());
        if (o && row->has_group && group_fields(a, by, row, o) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

void slab_visibility_totals(Accounting *a, SlabVisibility *ret) {
        SlabVisibility v = {};
        ViewSlabGroup g;
        SlabStats st;

        for (uint32_t i = 0; i < view_slab_site_count(a); i++) {
                if (!view_slab_site(a, i, &g))
                        continue;
                if (g.frees_visible) {
                        v.visible_allocs += g.allocs;
                        v.visible_lost_frees += g.lost_frees;
                } else
                        v.invisible_sites++;
        }
        for (uint32_t i = 0; i < view_slab_cache_count(a); i++)
                v.invisible_caches += view_slab_cache(a, i, &g) && !g.frees_visible;
        view_slab_stats(a, &st);
        uint64_t span = st.last_nsec > st.first_nsec ? st.last_nsec - st.first_nsec : 0;
        /* Over a second at least, so that the first lost free does not read as thousands an hour. */
        v.lost_frees_per_hour = (double) st.replaced * 3600e9 / (double) MAX(span, (uint64_t) 1000000000);
        v.visible_lost_frees_percent = v.visible_allocs > 0 ?
                100.0 * (double) v.visible_lost_frees / (double) v.visible_allocs : 0.0;
        *ret = v;
}

/* The Slab reply's counts beside the totals: lost frees by visibility, and what reconciliation dropped. */
static int add_visibility(Accounting *a, json_t *reply) {
        SlabReconcileStats rs;
        SlabVisibility v;

        slab_visibility_totals(a, &v);
        view_slab_reconcile_stats(a, &rs);
        if (json_object_set_new(reply, "lostFreesPerHour", json_real(v.lost_frees_per_hour)) < 0 ||
            json_object_set_new(reply, "visibleAllocs", json_integer(varlink_count(v.visible_allocs))) < 0 ||
            json_object_set_new(reply, "visibleLostFrees", json_integer(varlink_count(v.visible_lost_frees))) < 0 ||
            json_object_set_new(reply, "visibleLostFreesPercent", json_real(v.visible_lost_frees_percent)) < 0 ||
            json_object_set_new(reply, "invisibleFreeCaches", json_integer(varlink_count(v.invisible_caches))) < 0 ||
            json_object_set_new(reply, "invisibleFreeCallSites", json_integer(varlink_count(v.invisible_sites))) < 0 ||
            json_object_set_new(reply, "trimmedObjects", json_integer(varlink_count(rs.trimmed))) < 0)
                return -ENOMEM;
        return 0;
}

int slab_query_json(Accounting *a, SlabBy by, size_t limit, bool show_addresses, json_t **ret) {
        Rows r = { .a = a, .by = by };
        SlabStats st;
        json_auto_t *rows = json_array(), *reply = NULL;
        int err = 0;

        assert(ret);

        if (!rows)
                return -ENOMEM;
        view_slab_stats(a, &st);
        if (by == SLAB_BY_CALLSITE || by == SLAB_BY_CACHE) {
                size_t n = by == SLAB_BY_CALLSITE ? view_slab_site_count(a) : view_slab_cache_count(a);
                for (uint32_t i = 0; i < n; i++) {
                        ViewSlabGroup g;
                        if (!(by == SLAB_BY_CALLSITE ? view_slab_site(a, i, &g) : view_slab_cache(a, i, &g)) ||
                            g.live_objects == 0)
                                continue;
                        Row *row = row_of(&r, i);
                        if (!row) {
                                err = -ENOMEM;
                                goto finish;
                        }
                        *row = (Row) { .owner = i, .objects = g.live_objects, .requested = g.live_requested,
                                       .allocated = g.live_allocated.current, .has_group = true, .group = g };
                }
        } else {
                view_foreach_slab_object(a, sum_object, &r);
                if (r.error < 0) {
                        err = r.error;
                        goto finish;
                }
        }
        if (r.n > 0)
                qsort(r.rows, r.n, sizeof(Row), compare_rows);
        for (size_t i = 0; i < MIN(r.n, limit); i++) {
                json_t *row = row_json(a, by, &r.rows[i], show_addresses);
                if (!row || json_array_append_new(rows, row) < 0) {
                        err = -ENOMEM;
                        goto finish;
                }
        }
        reply = json_pack("{s:b, s:s, s:O, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
                          "tracing", view_traces_slab(a),
                          "by", slab_by_to_string(by),
                          "rows", rows,
                          "liveObjects", varlink_count(st.live_objects),
                          "liveBytesRequested", varlink_count(st.live_requested),
                          "liveBytesAllocated", varlink_count(st.live_allocated.current),
                          "peakLiveBytes", varlink_count(st.live_allocated.peak),
                          "allocs", varlink_count(st.allocs),
                          "frees", varlink_count(st.frees),
                          "unknownFrees", varlink_count(st.unknown_frees),
                          "lostFrees", varlink_count(st.replaced),
                          "droppedObjects", varlink_count(st.dropped),
                          "wastePercent", waste_percent(st.live_requested, st.live_allocated.current));
        if (!reply || add_visibility(a, reply) < 0)
                err = -ENOMEM;
        else
                *ret = TAKE_PTR(reply);
finish:
        free(r.rows);
        free(r.slot_of);
        return err;
}

int slab_top_json(Accounting *a, size_t limit, json_t **ret) {
        json_t *reply = NULL;
        int r = slab_query_json(a, SLAB_BY_CALLSITE, limit, false, &reply);
        if (r < 0)
                return r;
        /* TopSlab is the Slab reply by call site without what a stream knows already. */
        (void) json_object_del(reply, "tracing");
        (void) json_object_del(reply, "by");
        *ret = reply;
        return 0;
}

json_t *slab_status_json(Accounting *a) {
        if (!view_traces_slab(a))
                return json_null();
        SlabReconcileStats rs;
        SlabVisibility v;
        SlabStats st;

        view_slab_reconcile_stats(a, &rs);
        view_slab_stats(a, &st);
        slab_visibility_totals(a, &v);
        return json_pack("{s:b, s:o, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
                         "reconciling", rs.runs > 0 && rs.error == 0,
                         "error", rs.error < 0 ? json_string(strerror(-rs.error)) : json_null(),
                         "intervalUsec", varlink_count(VIEW_SLAB_RECONCILE_INTERVAL_NSEC / 1000),
                         "runs", varlink_count(rs.runs),
                         "lastUsec", rs.last_nsec > 0 ? json_integer(varlink_count(rs.last_nsec / 1000)) : json_null(),
                         "caches", varlink_count(rs.caches),
                         "driftingCaches", varlink_count(rs.drifting),
                         "invisibleFreeCaches", varlink_count(v.invisible_caches),
                         "invisibleFreeCallSites", varlink_count(v.invisible_sites),
                         "trimmedObjects", varlink_count(rs.trimmed),
                         "destroyedObjects", varlink_count(rs.destroyed),
                         "lostFrees", varlink_count(st.replaced),
                         "lostFreesPerHour", v.lost_frees_per_hour,
                         "visibleLostFreesPercent", v.visible_lost_frees_percent);
}
