/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coldquery.h"
#include "keyindex.h"
#include "macro.h"
#include "utf8.h"
#include "varlink.h"

json_t *cold_pages_json(const ColdSum *s) {
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
                         "currentPages", varlink_count(s->current),
                         "hotPages", varlink_count(s->pages[VIEW_COLD_HOT]),
                         "warmPages", varlink_count(s->pages[VIEW_COLD_WARM]),
                         "coldPages", varlink_count(s->pages[VIEW_COLD_COLD]),
                         "unknownPages", varlink_count(s->pages[VIEW_COLD_UNKNOWN]),
                         "newerPages", varlink_count(s->pages[VIEW_COLD_NEWER]));
}

static void sum_add(ColdSum *s, const Coldness *c, const ViewCell *cell) {
        s->current += cell->pages;
        if (view_cold_cell(c, cell, s->pages))
                s->known = true;
}

typedef struct ScopeSum {
        const Coldness *c;
        ColdSum sum;
} ScopeSum;

static void scope_cell(void *userdata, const ViewCell *cell) {
        ScopeSum *s = userdata;
        sum_add(&s->sum, s->c, cell);
}

ColdSum cold_scope_sum(Accounting *a, const Coldness *c, ViewScope scope) {
        ScopeSum s = { .c = c };

        if (c)
                view_foreach_cell(a, scope, scope_cell, &s);
        return s.sum;
}

typedef struct UnitSums {
        const Coldness *c;
        ColdSum *sums;
        size_t n;
} UnitSums;

static void unit_cell(void *userdata, const ViewCell *cell) {
        UnitSums *u = userdata;
        if (cell->unit < u->n)
                sum_add(&u->sums[cell->unit], u->c, cell);
}

int cold_unit_sums(Accounting *a, const Coldness *c, ColdSum **ret) {
        UnitSums u = { .c = c, .n = view_unit_count(a) };

        u.sums = calloc(MAX(u.n, (size_t) 1), sizeof(ColdSum));
        if (!u.sums)
                return -ENOMEM;
        if (c)
                view_foreach_cell(a, VIEW_SCOPE_EVERY, unit_cell, &u);
        *ret = u.sums;
        return 0;
}

/* One walk of every cell, summed per process, unit, module and stack leaf. */
typedef struct ColdWalk {
        Accounting *a;
        const Coldness *c;
        ColdSum *processes, *units, *modules;
        size_t n_processes, n_units, n_modules;
        KeyIndex leaf_rows;             /* global leaf -> index in leaves */
        ColdSum *leaves;
        uint32_t *leaf_ids;
        size_t n_leaves, allocated_leaves;
        ColdSum total;
        int error;
} ColdWalk;

static void walk_cell(void *userdata, const ViewCell *cell) {
        ColdWalk *w = userdata;
        uint32_t owner = view_task_owner(w->a, cell->process);

        sum_add(&w->total, w->c, cell);
        if (owner < w->n_processes)
                sum_add(&w->processes[owner], w->c, cell);
        if (cell->unit < w->n_units)
                sum_add(&w->units[cell->unit], w->c, cell);
        if (cell->module < w->n_modules)
                sum_add(&w->modules[cell->module], w->c, cell);
        uint32_t row = key_index_get(&w->leaf_rows, cell->leaf);
        if (row == KEY_INDEX_NONE) {
                if (w->n_leaves == w->allocated_leaves) {
                        size_t n = w->allocated_leaves ? w->allocated_leaves * 2 : 256;
                        ColdSum *l = reallocarray(w->leaves, n, sizeof(ColdSum));
                        if (l)
                                w->leaves = l;
                        uint32_t *ids = reallocarray(w->leaf_ids, n, sizeof(uint32_t));
                        if (ids)
                                w->leaf_ids = ids;
                        if (!l || !ids) {
                                w->error = -ENOMEM;
                                return;
                        }
                        w->allocated_leaves = n;
                }
                row = (uint32_t) w->n_leaves;
                if (key_index_put(&w->leaf_rows, cell->leaf, row) < 0) {
                        w->error = -ENOMEM;
                        return;
                }
                w->leaves[row] = (ColdSum) {};
                w->leaf_ids[row] = cell->leaf;
                w->n_leaves++;
        }
        sum_add(&w->leaves[row], w->c, cell);
}

typedef struct Rank {
        uint64_t cold, warm, current;
        uint32_t idx;
} Rank;

static int compare_ranks(const void *x, const void *y) {
        const Rank *a = x, *b = y;
        if (a->cold != b->cold)
                return a->cold < b->cold ? 1 : -1;
        if (a->warm != b->warm)
                return a->warm < b->warm ? 1 : -1;
        if (a->current != b->current)
                return a->current < b->current ? 1 : -1;
        return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The rows of sums with pages, most cold first: at most limit into *ret (a new array), how many. */
static ssize_t rank(const ColdSum *sums, size_t n, size_t first, size_t limit, Rank **ret) {
        Rank *r = calloc(MAX(n, (size_t) 1), sizeof(Rank));
        size_t k = 0;

        if (!r)
                return -ENOMEM;
        for (size_t i = first; i < n; i++)
                if (sums[i].current > 0 && sums[i].known)
                        r[k++] = (Rank) { sums[i].pages[VIEW_COLD_COLD], sums[i].pages[VIEW_COLD_WARM],
                                          sums[i].current, (uint32_t) i };
        qsort(r, k, sizeof(Rank), compare_ranks);
        *ret = r;
        return (ssize_t) MIN(k, limit);
}

static int owner_rows(const ColdSum *sums, size_t n, size_t first, size_t limit, json_t *list,
                json_t *(*row)(Accounting *a, uint32_t idx, const ColdSum *s), Accounting *a) {
        _cleanup_free_ Rank *ranks = NULL;
        ssize_t k = rank(sums, n, first, limit, &ranks);

        if (k < 0)
                return (int) k;
        for (ssize_t i = 0; i < k; i++) {
                json_t *o = row(a, ranks[i].idx, &sums[ranks[i].idx]);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static json_t *task_row(Accounting *a, uint32_t idx, const ColdSum *s) {
        ViewTask t;

        if (!view_task(a, idx, &t))
                t = (ViewTask) { .comm = VIEW_EVICTED_COMM, .exited = true };
        return json_pack("{s:i, s:o, s:b, s:o}",
                         "pid", t.pid,
                         "comm", utf8_json_string(t.comm) ?: json_null(),
                         "exited", t.exited,
                         "pages", cold_pages_json(s));
}

static json_t *unit_row(Accounting *a, uint32_t idx, const ColdSum *s) {
        ViewUnit u;
        const char *name = view_unit(a, idx, &u) && u.name ? u.name : VIEW_UNKNOWN_UNIT;

        return json_pack("{s:o, s:o}", "name", utf8_json_string(name) ?: json_null(), "pages", cold_pages_json(s));
}

static json_t *module_row(Accounting *a, uint32_t idx, const ColdSum *s) {
        ViewModule m;
        const char *name = view_module(a, (uint16_t) idx, &m) ? m.name : VIEW_KERNEL_MODULE;

        return json_pack("{s:o, s:o}", "name", utf8_json_string(name) ?: json_null(), "pages", cold_pages_json(s));
}

static json_t *counters_json(const ColdStats *st) {
        const ColdSourceStats *src = &st->source;

        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                         "rounds", varlink_count(st->rounds),
                         "rejectedSamples", varlink_count(st->rejected_samples),
                         "regions", varlink_count(st->regions),
                         "blocks", varlink_count(st->blocks),
                         "splitBlocks", varlink_count(st->split_blocks),
                         "sharedRegions", varlink_count(st->shared_regions),
                         "sharedRegionPages", varlink_count(st->shared_region_pages),
                         "clampedPages", varlink_count(st->clamped_pages),
                         "aggregations", varlink_count(src->aggregations),
                         "incompleteSets", varlink_count(src->incomplete),
                         "lostRecords", varlink_count(src->lost_records),
                         "rejectedRecords", varlink_count(src->rejected_records),
                         "otherRecords", varlink_count(src->other_records),
                         "kdamondStops", varlink_count(src->kdamond_stops),
                         "targetChanges", varlink_count(src->target_changes),
                         "staleRounds", varlink_count(src->stale_rounds),
                         "sampledPages", varlink_count(src->sampled_pages),
                         "sampleBudget", varlink_count(src->sample_budget));
}

static json_t *time_json(uint64_t nsec) {
        return nsec ? json_integer(varlink_count(nsec / 1000)) : json_null();
}

int cold_query_json(Accounting *a, const Coldness *c, const ColdQuery *q, json_t **ret) {
        ColdWalk w = {
                .a = a, .c = c,
                .n_processes = view_task_slots(a),
                .n_units = view_unit_count(a),
                .n_modules = view_module_count(a) + 1,
        };
        json_auto_t *reply = NULL, *tasks = json_array(), *units = json_array(), *modules = json_array(),
                    *stacks = json_array();
        const char *source, *detail, *reason;
        Rank *ranks = NULL;
        ColdStats st;
        int r = -ENOMEM;

        view_cold_stats(c, &st, &source, &detail, &reason);
        w.processes = calloc(MAX(w.n_processes, (size_t) 1), sizeof(ColdSum));
        w.units = calloc(MAX(w.n_units, (size_t) 1), sizeof(ColdSum));
        w.modules = calloc(w.n_modules, sizeof(ColdSum));
        if (!tasks || !units || !modules || !stacks || !w.processes || !w.units || !w.modules)
                goto finish;
        if (c)
                view_foreach_cell(a, VIEW_SCOPE_EVERY, walk_cell, &w);
        if (w.error < 0) {
                r = w.error;
                goto finish;
        }
        size_t limit = MIN(q->limit ?: COLD_QUERY_LIMIT_DEFAULT, (size_t) QUERY_LIMIT_MAX);
        r = owner_rows(w.processes, w.n_processes, 0, limit, tasks, task_row, a);
        if (r >= 0)
                r = owner_rows(w.units, w.n_units, 0, limit, units, unit_row, a);
        if (r >= 0)
                r = owner_rows(w.modules, w.n_modules, 1, limit, modules, module_row, a);
        if (r < 0)
                goto finish;
        ssize_t k = rank(w.leaves, w.n_leaves, 0, MIN(q->stacks, (unsigned) COLD_QUERY_STACKS_MAX), &ranks);
        if (k < 0) {
                r = (int) k;
                goto finish;
        }
        QueryStackTree view = { .show_addresses = q->show_addresses, .user_addresses = q->user_addresses,
                                .caller_uid = q->caller_uid, .usym = q->usym };
        for (ssize_t i = 0; i < k; i++) {
                json_t *o = json_pack("{s:o, s:o}",
                                      "frames", query_stack_frames_json(a, w.leaf_ids[ranks[i].idx], &view) ?: json_null(),
                                      "pages", cold_pages_json(&w.leaves[ranks[i].idx]));
                if (!o || !json_is_array(json_object_get(o, "frames")) || json_array_append_new(stacks, o) < 0) {
                        json_decref(o);
                        r = -ENOMEM;
                        goto finish;
                }
        }
        reply = json_pack("{s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:o, s:b, s:I, s:I, s:o, s:o, s:I, s:I, s:o, "
                          "s:O, s:O, s:O, s:O, s:o}",
                          "source", source ? utf8_json_string(source) : json_null(),
                          "detail", detail ? utf8_json_string(detail) : json_null(),
                          "reason", reason ? utf8_json_string(reason) : json_null(),
                          "warmAfterUsec", varlink_count(st.source.warm_usec),
                          "coldAfterUsec", varlink_count(st.source.cold_usec),
                          "intervalUsec", varlink_count(st.source.interval_usec),
                          "sampleIntervalUsec", varlink_count(st.source.sample_usec),
                          "kdamondPid", st.source.kdamond_pid > 0 ? json_integer(st.source.kdamond_pid) : json_null(),
                          "ownKdamond", st.source.own_kdamond,
                          "kdamondCpuUsec", varlink_count(st.source.kdamond_cpu_usec),
                          "kdamondSeconds", varlink_count(st.source.kdamond_seconds),
                          "roundTimestampUsec", time_json(st.round_nsec),
                          "regionsTimestampUsec", time_json(st.sample_nsec),
                          "roundDurationUsec", varlink_count(st.duration_nsec / 1000),
                          "pageSize", (json_int_t) q->page_size,
                          "total", cold_pages_json(&w.total),
                          "tasks", tasks, "units", units, "modules", modules, "stacks", stacks,
                          "counters", counters_json(&st));
        if (!reply) {
                r = -ENOMEM;
                goto finish;
        }
        *ret = TAKE_PTR(reply);
        r = 0;
finish:
        free(ranks);
        free(w.processes);
        free(w.units);
        free(w.modules);
        free(w.leaves);
        free(w.leaf_ids);
        key_index_done(&w.leaf_rows);
        return r;
}
