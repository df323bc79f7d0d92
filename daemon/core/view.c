/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "coldness.h"
#include "history.h"
#include "macro.h"
#include "view.h"

/* The values readers compare against are the core's own. */
static_assert(VIEW_TASK_NONE == USAGE_TASK_NONE && VIEW_TASK_EVICTED == USAGE_TASK_EVICTED, "task ids");
static_assert(VIEW_COMM_MAX == USAGE_COMM_MAX, "comm length");
static_assert(VIEW_MODULE_NONE == USAGE_MODULE_NONE && VIEW_UNIT_NONE == UNITS_NONE, "module and unit ids");
static_assert(VIEW_NODE_ROOT == STACK_NODE_ROOT && VIEW_NODE_NONE == STACK_NODE_NONE, "node ids");
static_assert(VIEW_SLAB_NONE == SLAB_NONE && VIEW_HEAP_NONE == HEAP_NONE, "slab and heap ids");
static_assert(VIEW_HEAP_BLOCK_UNIT == STACK_HEAP_BLOCK_UNIT, "heap block unit");
static_assert(VIEW_HEAP_LIFETIME_BUCKETS == HEAP_LIFETIME_BUCKETS, "heap lifetime buckets");
static_assert(VIEW_PAGE_KIND_UNKNOWN == PAGE_KIND_UNKNOWN, "page kinds");
static_assert(VIEW_PAGE_AGE_GRAIN_NSEC == UINT64_C(1) << PAGEMAP_STAMP_SHIFT, "page age grain");
static_assert(VIEW_SLAB_RECONCILE_INTERVAL_NSEC == SLAB_RECONCILE_INTERVAL_NSEC, "reconcile interval");
static_assert(VIEW_COLD_CLASSES == _COLD_CLASS_MAX && VIEW_COLD_HOT == COLD_CLASS_HOT &&
              VIEW_COLD_WARM == COLD_CLASS_WARM && VIEW_COLD_COLD == COLD_CLASS_COLD &&
              VIEW_COLD_UNKNOWN == COLD_CLASS_UNKNOWN && VIEW_COLD_NEWER == COLD_CLASS_NEWER, "cold classes");
static_assert(VIEW_HISTORY_LEVELS == HISTORY_LEVELS, "history levels");
static_assert((int) VIEW_HISTORY_TOTAL == HISTORY_TOTAL && (int) VIEW_HISTORY_TASK == HISTORY_TASK &&
              (int) VIEW_HISTORY_UNIT == HISTORY_UNIT && (int) VIEW_HISTORY_MODULE == HISTORY_MODULE, "history kinds");

void view_reset(Accounting *a, bool all) {
        accounting_reset(a, all ? ACCOUNTING_RESET_ALL : ACCOUNTING_RESET_PEAKS);
}

void view_accounting_stats(Accounting *a, AccountingStats *ret) {
        accounting_get_stats(a, ret);
}

void view_usage_stats(Accounting *a, UsageStats *ret) {
        usage_get_stats(accounting_usage(a), ret);
}

void view_stack_stats(Accounting *a, StackTreeStats *ret) {
        stacktree_get_stats(accounting_stacktree(a), ret);
}

void view_budget_stats(Accounting *a, BudgetStats *ret) {
        accounting_get_budget_stats(a, ret);
}

const char *view_budget_step_name(unsigned step) {
        return budget_step_to_string((BudgetStep) step);
}

uint64_t view_truncated_pages(Accounting *a) {
        return stacktree_truncated_pages(accounting_stacktree(a));
}

uint64_t view_baseline_pages(Accounting *a, size_t *ret_tasks) {
        return usage_baseline_pages(accounting_usage(a), ret_tasks);
}

const Ksym *view_ksym(Accounting *a) {
        return accounting_ksym(a);
}

bool view_traces_slab(Accounting *a) {
        return accounting_traces_slab(a);
}

/* --- Tasks --- */

size_t view_task_slots(Accounting *a) {
        return usage_task_slots(accounting_usage(a));
}

static void task_view(Accounting *a, uint32_t id, const Task *t, ViewTask *ret) {
        *ret = (ViewTask) {
                .id = id,
                .process = t->process,
                .pid = t->pid,
                .parent_pid = t->parent_pid,
                .comm = t->comm,
                .cmdline = t->cmdline,
                .pages = t->ledger[LEDGER_PAGES],
                .slab_bytes = t->ledger[LEDGER_BYTES],
                .allocs = t->allocs,
                .frees = t->frees,
                .baseline_pages = t->baseline_pages,
                .first_seen_nsec = t->first_seen_nsec,
                .unit = t->cgroup != UNITS_NONE ? units_unit_of(accounting_units(a), t->cgroup) : UNITS_NONE,
                .is_thread = t->is_thread,
                .exited = t->exited,
        };
}

bool view_task(Accounting *a, uint32_t id, ViewTask *ret) {
        const Task *t = usage_task(accounting_usage(a), id);

        if (!t)
                return false;
        task_view(a, id, t, ret);
        return true;
}

uint32_t view_find_process(Accounting *a, int32_t pid) {
        return usage_find_process(accounting_usage(a), pid);
}

bool view_task_of_scope(Accounting *a, uint64_t scope, ViewTask *ret) {
        const Task *t = usage_task_of_scope(accounting_usage(a), scope);

        if (!t)
                return false;
        /* The scope keeps the slot's index in its low half (usage_task_scope()). */
        task_view(a, (uint32_t) scope, t, ret);
        return true;
}

uint32_t view_task_owner(Accounting *a, uint32_t id) {
        return usage_task_owner(accounting_usage(a), id);
}

uint32_t view_task_process(Accounting *a, uint32_t id) {
        return usage_task_process(accounting_usage(a), id);
}

bool view_tracks_threads(Accounting *a) {
        return usage_tracks_threads(accounting_usage(a));
}

/* --- Modules --- */

size_t view_module_count(Accounting *a) {
        return usage_module_count(accounting_usage(a));
}

bool view_module(Accounting *a, uint16_t id, ViewModule *ret) {
        const ModuleUsage *m = id != USAGE_MODULE_NONE ? usage_module(accounting_usage(a), id) : NULL;

        if (!m)
                return false;
        *ret = (ViewModule) {
                .id = id,
                .name = m->name,
                .pages = m->ledger[LEDGER_PAGES],
                .allocs = m->allocs,
                .frees = m->frees,
                .loaded = m->loaded,
                .kernel = strcmp(m->name, ACCOUNTING_KERNEL_MODULE) == 0,
        };
        return true;
}

uint16_t view_find_module_shown(Accounting *a, const char *name) {
        return usage_find_module_shown(accounting_usage(a), name);
}

/* --- Units --- */

size_t view_unit_count(Accounting *a) {
        return units_unit_count(accounting_units(a));
}

bool view_unit(Accounting *a, uint32_t id, ViewUnit *ret) {
        const UnitUsage *u = units_unit(accounting_units(a), id);

        if (!u)
                return false;
        *ret = (ViewUnit) {
                .id = id,
                .name = u->name,
                .cgroup = u->cgroup,
                .pages = u->ledger,
                .slab_bytes = u->slab_bytes,
                .allocs = u->allocs,
                .frees = u->frees,
                .live = u->n_live > 0,
        };
        return true;
}

uint32_t view_find_unit_shown(Accounting *a, const char *name) {
        return units_find_shown(accounting_units(a), name);
}

/* --- Charge cells --- */

/* A process-tree leaf stands for its twin in the global tree, as every view of stacks shows it. */
static uint32_t global_leaf(const StackTree *tree, uint32_t node) {
        const StackNode *n = stacktree_node(tree, node);
        return n && n->twin != STACK_NODE_NONE ? n->twin : node;
}

static void cell_view(Accounting *a, uint32_t cell, ViewCell *ret) {
        const ChargeIndex *ci = accounting_chargeindex(a);
        uint32_t node = chargeindex_node(ci, cell);

        *ret = (ViewCell) {
                .id = cell,
                .process = chargeindex_process(ci, cell),
                .node = node,
                .leaf = global_leaf(accounting_stacktree(a), node),
                .unit = units_unit_of(accounting_units(a), chargeindex_cgroup(ci, cell)),
                .kind = chargeindex_kind(ci, cell),
                .module = chargeindex_module(ci, cell),
                .sampled = chargeindex_sampled(ci, cell),
                .pages = chargeindex_pages(ci, cell),
        };
}

typedef struct CellWalk {
        Accounting *a;
        ViewScope scope;
        ViewCellFn fn;
        void *userdata;
} CellWalk;

static void walk_cell(void *userdata, uint32_t cell) {
        CellWalk *w = userdata;
        ViewCell c;

        cell_view(w->a, cell, &c);
        if (w->scope.kind == VIEW_SCOPE_UNIT && c.unit != w->scope.id)
                return;
        w->fn(w->userdata, &c);
}

void view_foreach_cell(Accounting *a, ViewScope scope, ViewCellFn fn, void *userdata) {
        const ChargeIndex *ci = accounting_chargeindex(a);
        CellWalk w = { .a = a, .scope = scope, .fn = fn, .userdata = userdata };

        switch (scope.kind) {
        case VIEW_SCOPE_PROCESS:
                chargeindex_foreach_cell_of_process(ci, scope.id, walk_cell, &w);
                break;
        case VIEW_SCOPE_MODULE:
                chargeindex_foreach_cell_of_module(ci, (uint16_t) scope.id, walk_cell, &w);
                break;
        default:
                chargeindex_foreach_cell(ci, walk_cell, &w);
        }
}

size_t view_cell_bound(Accounting *a) {
        return chargeindex_cell_bound(accounting_chargeindex(a));
}

bool view_cell(Accounting *a, uint32_t id, ViewCell *ret) {
        if (id >= view_cell_bound(a) || chargeindex_node(accounting_chargeindex(a), id) == STACK_NODE_NONE)
                return false;
        cell_view(a, id, ret);
        return true;
}

/* --- Tracked pages --- */

typedef struct BlockWalk {
        uint64_t now_nsec;
        ViewBlockFn fn;
        void *userdata;
} BlockWalk;

static void walk_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        BlockWalk *w = userdata;
        ViewBlock b = {
                .pfn = pfn,
                .order = order,
                .cell = o->node,
                .age_nsec = pagemap_stamp_age_nsec(o->stamp, w->now_nsec),
        };

        w->fn(w->userdata, &b);
}

void view_foreach_block(Accounting *a, uint64_t now_nsec, ViewBlockFn fn, void *userdata) {
        BlockWalk w = { .now_nsec = now_nsec, .fn = fn, .userdata = userdata };

        /* Ages in the page table are modular: held below the wrap before they are read. */
        accounting_clamp_page_ages(a, now_nsec);
        pagemap_foreach(accounting_pagemap(a), walk_block, &w);
}

/* --- How long pages went untouched --- */

const char *view_cold_class_name(unsigned class) {
        return cold_class_to_string((ColdClass) class);
}

bool view_cold_cell(const Coldness *c, const ViewCell *cell, uint64_t sum[static VIEW_COLD_CLASSES]) {
        uint64_t pages[_COLD_CLASS_MAX];

        if (!c || !coldness_cell(c, cell->id, cell->process, cell->node, pages))
                return false;
        for (unsigned i = 0; i < _COLD_CLASS_MAX; i++)
                sum[i] += pages[i];
        return true;
}

void view_cold_stats(const Coldness *c, ColdStats *ret, const char **ret_source, const char **ret_detail,
                const char **ret_reason) {
        if (c) {
                coldness_get_stats(c, ret, ret_source, ret_detail, ret_reason);
                return;
        }
        *ret = (ColdStats) {};
        *ret_source = *ret_detail = *ret_reason = NULL;
}

/* --- Kinds of page allocation --- */

size_t view_page_kind_count(Accounting *a) {
        return page_kinds_count(accounting_page_kinds(a));
}

bool view_page_kind(Accounting *a, uint32_t id, ViewPageKind *ret) {
        const PageKind *k = page_kinds_get(accounting_page_kinds(a), id);

        if (!k)
                return false;
        *ret = (ViewPageKind) {
                .known = k->known,
                .order = k->order,
                .migrate_type = k->migrate_type,
                .zone = k->zone,
                .gfp_flags = k->gfp_flags,
        };
        return true;
}

char *view_gfp_text(Accounting *a, uint64_t flags, char *buf, size_t size) {
        return page_kinds_gfp_text(accounting_page_kinds(a), flags, buf, size);
}

bool view_gfp_names_known(Accounting *a) {
        return accounting_page_kinds(a)->n_gfp_names > 0;
}

const char *view_migrate_type_name(int32_t migrate_type) {
        return page_kinds_migrate_type_name(migrate_type);
}

bool view_zone(Accounting *a, uint16_t zone, int32_t *ret_node, const char **ret_name) {
        const ZoneRange *z = page_kinds_zone(accounting_page_kinds(a), zone);

        if (!z)
                return false;
        *ret_node = z->node;
        *ret_name = z->name;
        return true;
}

bool view_zones_known(Accounting *a) {
        return accounting_page_kinds(a)->n_zones > 0;
}

/* --- Call stacks --- */

static const StackTree *tree_of(Accounting *a, ViewTree tree) {
        switch (tree) {
        case VIEW_TREE_PAGES:
                return accounting_stacktree(a);
        case VIEW_TREE_SLAB:
                return accounting_slab_stacktree(a);
        case VIEW_TREE_HEAP:
                return accounting_heap(a) ? heap_stacktree(accounting_heap(a)) : NULL;
        default:
                return NULL;
        }
}

size_t view_tree_size(Accounting *a, ViewTree tree) {
        const StackTree *t = tree_of(a, tree);
        return t ? stacktree_size(t) : 0;
}

bool view_node(Accounting *a, ViewTree tree, uint32_t id, ViewNode *ret) {
        const StackTree *t = tree_of(a, tree);
        const StackNode *n = t ? stacktree_node(t, id) : NULL;

        if (!n)
                return false;
        static const ViewFrameKind kinds[_STACK_FRAME_KIND_MAX] = {
                [STACK_FRAME_ROOT] = VIEW_FRAME_ROOT,
                [STACK_FRAME_KERNEL] = VIEW_FRAME_KERNEL,
                [STACK_FRAME_USER] = VIEW_FRAME_USER,
                [STACK_FRAME_PROCESS] = VIEW_FRAME_PROCESS,
                [STACK_FRAME_TRUNCATED] = VIEW_FRAME_TRUNCATED,
        };
        *ret = (ViewNode) {
                .id = id,
                .parent = n->parent,
                .first_child = n->first_child,
                .next_sibling = n->next_sibling,
                .ip = n->ip,
                .kind = kinds[n->kind],
                .module = n->module,
        };
        return true;
}

Ledger view_node_pages(Accounting *a, ViewTree tree, uint32_t id) {
        const StackTree *t = tree_of(a, tree);
        return t ? stacktree_pages(t, id) : (Ledger) {};
}

uint32_t view_process_tree(Accounting *a, uint32_t process) {
        return stacktree_process_scope(accounting_stacktree(a), usage_task_scope(accounting_usage(a), process));
}

uint64_t view_node_allocated(Accounting *a, uint32_t id) {
        return stacktree_allocated(accounting_stacktree(a), id);
}

int view_foreach_own_allocated(Accounting *a, ViewNodeAllocatedFn fn, void *userdata) {
        return stacktree_foreach_own_allocated(accounting_stacktree(a), fn, userdata);
}

/* --- Slab objects --- */

typedef struct ObjectWalk {
        const Units *units;
        ViewSlabObjectFn fn;
        void *userdata;
} ObjectWalk;

static void walk_object(void *userdata, uint64_t ptr, const SlabObject *o) {
        ObjectWalk *w = userdata;
        ViewSlabObject v = {
                .site = o->site,
                .cache = o->cache,
                .task = o->task,
                .unit = o->cgroup != SLAB_NONE ? units_unit_of(w->units, o->cgroup) : UNITS_NONE,
                .stack = o->stack,
                .requested = o->requested,
                .allocated = o->allocated,
                .time_nsec = o->time_nsec,
        };

        (void) ptr;
        w->fn(w->userdata, &v);
}

void view_foreach_slab_object(Accounting *a, ViewSlabObjectFn fn, void *userdata) {
        ObjectWalk w = { .units = accounting_units(a), .fn = fn, .userdata = userdata };

        slab_foreach(accounting_slab(a), walk_object, &w);
}

static void group_view(const SlabGroup *g, bool frees_visible, ViewSlabGroup *ret) {
        const SlabKernelFigures *k = &g->kernel;

        *ret = (ViewSlabGroup) {
                .address = g->address,
                .name = g->name,
                .cache = g->cache,
                .size_class = (g->flags & SLAB_SIZE_CLASS) != 0,
                .drifting = (g->flags & SLAB_DRIFTING) != 0,
                .frees_visible = frees_visible,
                .live_objects = g->live_objects,
                .live_requested = g->live_requested,
                .live_allocated = g->live_allocated,
                .allocs = g->allocs,
                .frees = g->frees,
                .remote_frees = g->remote_frees,
                .lost_frees = g->lost_frees,
                .trimmed = g->trimmed,
                .kernel = {
                        .known = k->known,
                        .active_objects = k->active_objects,
                        .start_active_objects = k->start_active_objects,
                        .bound = k->bound,
                        .slack = k->slack,
                        .live_objects = k->live_objects,
                        .allocs = k->allocs,
                },
        };
}

size_t view_slab_site_count(Accounting *a) {
        return slab_site_count(accounting_slab(a));
}

bool view_slab_site(Accounting *a, uint32_t site, ViewSlabGroup *ret) {
        const Slab *s = accounting_slab(a);
        const SlabGroup *g = slab_site(s, site);

        if (!g)
                return false;
        group_view(g, slab_site_frees_visible(s, site), ret);
        return true;
}

size_t view_slab_cache_count(Accounting *a) {
        return slab_cache_count(accounting_slab(a));
}

bool view_slab_cache(Accounting *a, uint32_t cache, ViewSlabGroup *ret) {
        const Slab *s = accounting_slab(a);
        const SlabGroup *g = cache != SLAB_NONE ? slab_cache(s, cache) : NULL;

        if (!g)
                return false;
        group_view(g, slab_cache_frees_visible(s, cache), ret);
        return true;
}

void view_slab_stats(Accounting *a, SlabStats *ret) {
        *ret = *slab_stats(accounting_slab(a));
}

void view_slab_reconcile_stats(Accounting *a, SlabReconcileStats *ret) {
        *ret = *slab_reconcile_stats(accounting_slab(a));
}

/* --- Recorded user-space heaps --- */

static const HeapImage *image_of(Accounting *a, uint32_t serial) {
        const Heap *h = accounting_heap(a);
        return h ? heap_image(h, serial) : NULL;
}

size_t view_heap_count(Accounting *a) {
        const Heap *h = accounting_heap(a);
        return h ? heap_image_count(h) : 0;
}

bool view_heap(Accounting *a, uint32_t serial, ViewHeap *ret) {
        const HeapImage *img = image_of(a, serial);

        if (!img)
                return false;
        *ret = (ViewHeap) {
                .serial = serial,
                .pid = img->pid,
                .comm = img->comm,
                .cmdline = img->cmdline,
                .maps = img->maps,
                .sample_interval = img->sample_interval,
                .counters = img->counters,
                .sampled_blocks = img->sampled_blocks,
                .unmatched_frees = img->unmatched_frees,
                .dropped = img->dropped,
                .start_nsec = img->start_nsec,
                .end_nsec = img->end_nsec,
                .end = img->end,
                .ended = img->ended,
                .n_growth = img->n_growth,
                .timeline_dropped = img->timeline.dropped,
        };
        return true;
}

uint32_t view_find_heap(Accounting *a, int32_t pid) {
        const Heap *h = accounting_heap(a);
        return h ? heap_find(h, pid) : HEAP_NONE;
}

bool view_heap_point(Accounting *a, uint32_t serial, uint32_t i, uint32_t *ret_msec, uint64_t *ret_live_bytes) {
        const HeapImage *img = image_of(a, serial);

        if (!img || i >= img->n_growth)
                return false;
        *ret_msec = img->growth[i].msec;
        *ret_live_bytes = img->growth[i].live_bytes;
        return true;
}

uint32_t view_heap_scope_node(Accounting *a, uint32_t serial) {
        return image_of(a, serial) ? heap_scope_node(accounting_heap(a), serial) : STACK_NODE_NONE;
}

ViewHeapScale view_heap_scale(Accounting *a, uint32_t serial) {
        if (!image_of(a, serial))
                return (ViewHeapScale) { 1, 1, 1, 1 };
        HeapScale s = heap_scale(accounting_heap(a), serial);
        return (ViewHeapScale) { s.now_bytes, s.now_blocks, s.max_bytes, s.max_blocks };
}

void view_heap_node(Accounting *a, uint32_t serial, uint32_t node, ViewHeapNode *ret) {
        const HeapImage *img = image_of(a, serial);
        const StackTree *t = tree_of(a, VIEW_TREE_HEAP);

        *ret = (ViewHeapNode) {};
        if (!img || !t)
                return;
        ret->bytes = stacktree_pages(t, node);
        stacktree_heap_values(t, node, img->gen, &ret->blocks, &ret->max_bytes, &ret->max_blocks);
}

uint64_t view_heap_lifetime_bound_usec(unsigned i) {
        return i < HEAP_LIFETIME_BUCKETS - 1 ? heap_lifetime_bounds_usec[i] : UINT64_MAX;
}

void view_heap_foreach_lifetimes(Accounting *a, uint32_t serial, ViewHeapLifetimesFn fn, void *userdata) {
        const Heap *h = accounting_heap(a);

        for (size_t i = 0; h && i < heap_lifetimes_count(h); i++) {
                const HeapLifetimes *l = heap_lifetimes(h, i);
                if (l->image != serial)
                        continue;
                ViewHeapLifetimes v = { .temporary = l->temporary };
                memcpy(v.freed, l->freed, sizeof(v.freed));
                fn(userdata, l->node, &v);
        }
}

uint64_t view_heap_timeline_bucket_nsec(Accounting *a, uint32_t serial) {
        const HeapImage *img = image_of(a, serial);
        return img ? img->timeline.bucket_nsec : 0;
}

size_t view_heap_timeline_count(Accounting *a, uint32_t serial) {
        const HeapImage *img = image_of(a, serial);
        return img ? img->timeline.n_cells : 0;
}

bool view_heap_timeline_cell(Accounting *a, uint32_t serial, size_t i, ViewHeapTimelineCell *ret) {
        const HeapImage *img = image_of(a, serial);

        if (!img || i >= img->timeline.n_cells)
                return false;
        const HeapTimelineCell *c = &img->timeline.cells[i];
        *ret = (ViewHeapTimelineCell) {
                .bucket = c->bucket,
                .node = c->leaf,
                .alloc_bytes = c->alloc_bytes,
                .alloc_blocks = c->alloc_blocks,
                .free_bytes = c->free_bytes,
                .free_blocks = c->free_blocks,
        };
        return true;
}

void view_heap_stats(Accounting *a, HeapStats *ret) {
        const Heap *h = accounting_heap(a);

        if (h)
                heap_get_stats(h, ret);
        else
                *ret = (HeapStats) {};
}

/* --- History --- */

const char *view_history_kind_to_string(ViewHistoryKind kind) {
        return history_kind_to_string((HistoryKind) kind);
}

uint64_t view_history_resolution_usec(unsigned level) {
        return level < HISTORY_LEVELS ? history_levels[level].resolution_usec : 0;
}

size_t view_history_buckets(unsigned level) {
        return level < HISTORY_LEVELS ? history_levels[level].n_buckets : 0;
}

unsigned view_history_level_for(uint64_t seconds) {
        return history_level_for(seconds);
}

/* The raw name (as the core keeps it) of a unit or module named as replies name it; NULL if unknown. */
static const char *owner_name(Accounting *a, ViewHistoryKind kind, const char *shown) {
        if (kind == VIEW_HISTORY_UNIT) {
                const UnitUsage *u = units_unit(accounting_units(a), units_find_shown(accounting_units(a), shown));
                return u ? u->name : NULL;
        }
        uint16_t module = usage_find_module_shown(accounting_usage(a), shown);
        return module != USAGE_MODULE_NONE ? usage_module(accounting_usage(a), module)->name : NULL;
}

int view_history_series(History *h, Accounting *a, ViewHistoryKind kind, int32_t pid, const char *name,
                const HistorySeries **ret, const char **ret_name) {
        HistorySeries *s;

        switch (kind) {
        case VIEW_HISTORY_TASK: {
                s = history_find(h, HISTORY_TASK, pid, NULL);
                if (!s) {
                        uint32_t process = usage_find_process(accounting_usage(a), pid);
                        if (process == USAGE_TASK_NONE)
                                return -ESRCH;
                        const Task *t = usage_task(accounting_usage(a), process);
                        s = history_track(h, HISTORY_TASK, pid, t ? t->comm : NULL);
                }
                break;
        }
        case VIEW_HISTORY_UNIT:
        case VIEW_HISTORY_MODULE: {
                const char *raw = owner_name(a, kind, name);
                s = history_find(h, (HistoryKind) kind, 0, raw ?: name);
                if (!s) {
                        if (!raw)
                                return kind == VIEW_HISTORY_UNIT ? -ENXIO : -ENOENT;
                        s = history_track(h, (HistoryKind) kind, 0, raw);
                }
                break;
        }
        default:
                s = history_find(h, HISTORY_TOTAL, 0, NULL);
        }
        /* Every series of the kind among the biggest: cannot be with HISTORY_TOP_N < HISTORY_SERIES_MAX. */
        if (!s)
                return -ENOSPC;
        *ret = s;
        *ret_name = kind == VIEW_HISTORY_TOTAL ? NULL : s->name;
        return 0;
}

ssize_t view_history_read(const HistorySeries *series, unsigned level, uint64_t since_usec, ViewHistorySample *buf) {
        HistorySample *samples = calloc(MAX(view_history_buckets(level), (size_t) 1), sizeof(HistorySample));

        if (!samples)
                return -ENOMEM;
        size_t n = history_series_read(series, level, since_usec, samples);
        for (size_t i = 0; i < n; i++)
                buf[i] = (ViewHistorySample) { samples[i].time_usec, samples[i].current_pages, samples[i].peak_pages };
        free(samples);
        return (ssize_t) n;
}
