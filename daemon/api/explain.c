/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coldquery.h"
#include "explain.h"
#include "view.h"
#include "macro.h"
#include "slabquery.h"
#include "varlink.h"
#include "utf8.h"

/* Who holds a unit's memory: its live processes, or no live process (allocated by tasks that exited). */
typedef enum Holder {
        HOLDER_ALIVE,
        HOLDER_ORPHANED,
        _HOLDER_MAX,
} Holder;

/* Bytes (or pages) and objects per key: a stack leaf, a cache, a call site, a process. */
typedef struct Tally {
        uint32_t key;
        uint64_t amount, objects;
} Tally;

typedef struct TallyList {
        Tally *items;
        size_t n, allocated;
} TallyList;

typedef struct Side {
        uint64_t pages, slab_objects, slab_bytes;
        uint64_t *leaf_pages;           /* per node of the page stack tree */
        uint64_t *slab_leaf_bytes, *slab_leaf_objects;  /* per node of the slab stack tree */
        TallyList page_stacks;          /* the leaves holding pages, biggest first (from leaf_pages) */
        TallyList slab_stacks;          /* the same of slab objects */
        uint64_t *cache_bytes, *cache_objects;  /* per cache index, with one slot for "no name" at the end */
        uint64_t *site_bytes, *site_objects;    /* per call site index */
} Side;

typedef struct Explain {
        Accounting *a;
        uint32_t unit;
        size_t n_caches, n_sites, n_slots, n_nodes, n_slab_nodes;
        Side side[_HOLDER_MAX];
        uint64_t *process_pages, *process_slab; /* per task slot (process records) */
        uint64_t movable_pages;         /* of the unit's pages, allocated movable (user memory: anon, file) */
        uint64_t kernel_pages;          /* ... allocated otherwise (kernel memory) */
        uint64_t unknown_kind_pages;    /* ... of no known kind (aggregated samples) */
        int error;
} Explain;

/* __GFP_MOVABLE: bit 3 in every kernel; user memory (anonymous and page cache) is allocated movable,
 * kernel memory (slab, page tables, stacks, socket buffers) is not. */
#define GFP_MOVABLE_BIT UINT64_C(0x08)

static int tally_add(TallyList *l, uint32_t key, uint64_t amount, uint64_t objects) {
        if (greedy_realloc(&l->items, &l->allocated, l->n + 1, sizeof(Tally), 64) < 0)
                return -ENOMEM;
        l->items[l->n++] = (Tally) { key, amount, objects };
        return 0;
}

/* Biggest first; ties by key, so replies are deterministic. */
static int compare_amount(const void *x, const void *y) {
        const Tally *a = x, *b = y;
        if (a->amount != b->amount)
                return a->amount > b->amount ? -1 : 1;
        return a->key < b->key ? -1 : a->key > b->key;
}

/* No live process holds what a process that exited or was evicted allocated. */
static bool process_orphaned(Accounting *a, uint32_t process) {
        ViewTask t;
        return !view_task(a, process, &t) || t.exited;
}

static Holder holder_of(Explain *e, uint32_t process) {
        return process_orphaned(e->a, process) ? HOLDER_ORPHANED : HOLDER_ALIVE;
}

static void count_cell(void *userdata, const ViewCell *cell) {
        Explain *e = userdata;

        if (e->error < 0)
                return;
        uint32_t process = cell->process;
        uint64_t pages = cell->pages;
        Side *s = &e->side[holder_of(e, process)];

        s->pages += pages;
        if (process < e->n_slots)
                e->process_pages[process] += pages;
        ViewPageKind k;
        if (!view_page_kind(e->a, cell->kind, &k) || !k.known)
                e->unknown_kind_pages += pages;
        else if (k.gfp_flags & GFP_MOVABLE_BIT)
                e->movable_pages += pages;
        else
                e->kernel_pages += pages;
        if (cell->leaf < e->n_nodes)
                s->leaf_pages[cell->leaf] += pages;
}

static void count_object(void *userdata, const ViewSlabObject *o) {
        Explain *e = userdata;

        if (e->error < 0 || o->unit != e->unit)
                return;
        uint32_t process = view_task_process(e->a, o->task);
        Side *s = &e->side[holder_of(e, process)];
        size_t cache = o->cache == VIEW_SLAB_NONE ? e->n_caches : o->cache;

        s->slab_objects++;
        s->slab_bytes += o->allocated;
        if (process < e->n_slots)
                e->process_slab[process] += o->allocated;
        if (cache <= e->n_caches) {
                s->cache_bytes[cache] += o->allocated;
                s->cache_objects[cache]++;
        }
        if (o->site < e->n_sites) {
                s->site_bytes[o->site] += o->allocated;
                s->site_objects[o->site]++;
        }
        if (o->stack < e->n_slab_nodes) {
                s->slab_leaf_bytes[o->stack] += o->allocated;
                s->slab_leaf_objects[o->stack]++;
        }
}

static int explain_init(Explain *e, Accounting *a, uint32_t unit) {
        *e = (Explain) {
                .a = a,
                .unit = unit,
                .n_caches = view_slab_cache_count(a),
                .n_sites = view_slab_site_count(a),
                .n_slots = view_task_slots(a),
                .n_nodes = view_tree_size(a, VIEW_TREE_PAGES),
                .n_slab_nodes = view_tree_size(a, VIEW_TREE_SLAB),
        };
        e->process_pages = calloc(e->n_slots + 1, sizeof(uint64_t));
        e->process_slab = calloc(e->n_slots + 1, sizeof(uint64_t));
        if (!e->process_pages || !e->process_slab)
                return -ENOMEM;
        for (Holder h = 0; h < _HOLDER_MAX; h++) {
                Side *s = &e->side[h];
                s->cache_bytes = calloc(e->n_caches + 1, sizeof(uint64_t));
                s->cache_objects = calloc(e->n_caches + 1, sizeof(uint64_t));
                s->site_bytes = calloc(e->n_sites + 1, sizeof(uint64_t));
                s->site_objects = calloc(e->n_sites + 1, sizeof(uint64_t));
                s->leaf_pages = calloc(e->n_nodes + 1, sizeof(uint64_t));
                s->slab_leaf_bytes = calloc(e->n_slab_nodes + 1, sizeof(uint64_t));
                s->slab_leaf_objects = calloc(e->n_slab_nodes + 1, sizeof(uint64_t));
                if (!s->cache_bytes || !s->cache_objects || !s->site_bytes || !s->site_objects || !s->leaf_pages ||
                    !s->slab_leaf_bytes || !s->slab_leaf_objects)
                        return -ENOMEM;
        }
        return 0;
}

static void explain_done(Explain *e) {
        for (Holder h = 0; h < _HOLDER_MAX; h++) {
                Side *s = &e->side[h];
                free(s->page_stacks.items);
                free(s->slab_stacks.items);
                free(s->cache_bytes);
                free(s->cache_objects);
                free(s->site_bytes);
                free(s->site_objects);
                free(s->leaf_pages);
                free(s->slab_leaf_bytes);
                free(s->slab_leaf_objects);
        }
        free(e->process_pages);
        free(e->process_slab);
}

/* Orders rows (indexes into amounts) by amount, biggest first, at most limit; returns how many. */
static size_t top_indexes(const uint64_t *amounts, size_t n, size_t limit, uint32_t **ret) {
        _cleanup_free_ Tally *t = malloc(MAX(n, (size_t) 1) * sizeof(Tally));
        size_t k = 0;

        *ret = NULL;
        if (!t)
                return SIZE_MAX;
        for (size_t i = 0; i < n; i++)
                if (amounts[i] > 0)
                        t[k++] = (Tally) { (uint32_t) i, amounts[i], 0 };
        qsort(t, k, sizeof(Tally), compare_amount);
        k = MIN(k, limit);
        uint32_t *idx = malloc(MAX(k, (size_t) 1) * sizeof(uint32_t));
        if (!idx)
                return SIZE_MAX;
        for (size_t i = 0; i < k; i++)
                idx[i] = t[i].key;
        *ret = idx;
        return k;
}

/* [ExplainSlabRow] of one holder by cache or by call site. */
static json_t *slab_rows_json(Explain *e, const Side *s, bool by_cache, const ExplainQuery *q) {
        const uint64_t *bytes = by_cache ? s->cache_bytes : s->site_bytes;
        const uint64_t *objects = by_cache ? s->cache_objects : s->site_objects;
        size_t n = by_cache ? e->n_caches + 1 : e->n_sites;
        _cleanup_free_ uint32_t *idx = NULL;
        json_auto_t *rows = json_array();

        size_t k = top_indexes(bytes, n, q->limit, &idx);
        if (!rows || k == SIZE_MAX)
                return NULL;
        for (size_t i = 0; i < k; i++) {
                json_t *name = NULL, *address = json_null();
                ViewSlabGroup g = {};
                if (!by_cache) {
                        (void) view_slab_site(e->a, idx[i], &g);
                        slab_call_site_json(e->a, g.address, q->show_addresses, &name, &address);
                } else if (idx[i] == e->n_caches || !view_slab_cache(e->a, idx[i], &g))
                        name = json_string("[unnamed]");
                else
                        name = utf8_json_string(g.name);
                json_t *o = json_pack("{s:o, s:o, s:I, s:I}",
                                      "name", name ?: json_null(),
                                      "address", address ?: json_null(),
                                      "objects", (json_int_t) objects[idx[i]],
                                      "bytes", (json_int_t) bytes[idx[i]]);
                if (!o || json_array_append_new(rows, o) < 0)
                        return NULL;
        }
        return TAKE_PTR(rows);
}

static QueryStackTree frames_view(const ExplainQuery *q) {
        return (QueryStackTree) { .show_addresses = q->show_addresses, .user_addresses = q->user_addresses,
                                  .caller_uid = q->caller_uid, .usym = q->usym };
}

/* [StackPages] or [SlabStack] of one holder, the q->stacks biggest. */
static json_t *stacks_json(Explain *e, const TallyList *l, bool slab, const ExplainQuery *q) {
        ViewTree tree = slab ? VIEW_TREE_SLAB : VIEW_TREE_PAGES;
        QueryStackTree view = frames_view(q);
        json_auto_t *list = json_array();

        if (!list)
                return NULL;
        for (size_t i = 0; view_tree_size(e->a, tree) > 0 && i < l->n && i < q->stacks; i++) {
                json_t *frames = query_tree_frames_json(e->a, tree, l->items[i].key, &view);
                json_t *o = !frames ? NULL : slab ?
                        json_pack("{s:o, s:I, s:I}", "frames", frames, "bytes", (json_int_t) l->items[i].amount,
                                  "objects", (json_int_t) l->items[i].objects) :
                        json_pack("{s:o, s:I}", "frames", frames, "currentPages", (json_int_t) l->items[i].amount);
                if (!o || json_array_append_new(list, o) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

static const char *comm_of(Accounting *a, uint32_t process) {
        ViewTask t;
        return view_task(a, process, &t) ? t.comm : VIEW_EVICTED_COMM;
}

static int compare_comm(const void *x, const void *y, void *userdata) {
        return strcmp(comm_of(userdata, ((const Tally *) x)->key), comm_of(userdata, ((const Tally *) y)->key));
}

/* Processes of one holder: live ones each with its pid; exited ones by name, as many as shared it. */
static json_t *tasks_json(Explain *e, Holder h, const ExplainQuery *q) {
        json_auto_t *list = json_array();
        _cleanup_free_ Tally *rows = malloc(MAX(e->n_slots, (size_t) 1) * sizeof(Tally));
        size_t n = 0;

        if (!list || !rows)
                return NULL;
        for (uint32_t p = 0; p < e->n_slots; p++)
                if ((e->process_pages[p] > 0 || e->process_slab[p] > 0) && holder_of(e, p) == h)
                        rows[n++] = (Tally) { p, count_add(count_mul(e->process_pages[p], (uint64_t) q->page_size), e->process_slab[p]), 1 };
        if (h == HOLDER_ORPHANED && n > 0) {
                /* Exited processes of one name make one row (its first process's counters hold the sums):
                 * which of them exited is rarely the question. */
                qsort_r(rows, n, sizeof(Tally), compare_comm, e->a);
                size_t k = 0;
                for (size_t i = 0; i < n; i++)
                        if (k > 0 && compare_comm(&rows[k - 1], &rows[i], e->a) == 0) {
                                rows[k - 1].objects++;
                                rows[k - 1].amount += rows[i].amount;
                                e->process_pages[rows[k - 1].key] += e->process_pages[rows[i].key];
                                e->process_slab[rows[k - 1].key] += e->process_slab[rows[i].key];
                        } else
                                rows[k++] = rows[i];
                n = k;
        }
        qsort(rows, n, sizeof(Tally), compare_amount);
        for (size_t i = 0; i < n && i < q->limit; i++) {
                ViewTask t;
                bool known = view_task(e->a, rows[i].key, &t);
                json_t *o = json_pack("{s:o, s:o, s:I, s:I, s:I}",
                                      "pid", h == HOLDER_ALIVE && known ? json_integer(t.pid) : json_null(),
                                      "comm", utf8_json_string(comm_of(e->a, rows[i].key)),
                                      "processes", (json_int_t) rows[i].objects,
                                      "pages", (json_int_t) e->process_pages[rows[i].key],
                                      "slabBytes", (json_int_t) e->process_slab[rows[i].key]);
                if (!o || json_array_append_new(list, o) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

/* The leaves holding something, biggest first: no more entries than the tree has nodes. */
static int leaves_sorted(TallyList *l, const uint64_t *amounts, const uint64_t *objects, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (amounts[i] > 0 && tally_add(l, (uint32_t) i, amounts[i], objects ? objects[i] : 0) < 0)
                        return -ENOMEM;
        if (l->n > 0)
                qsort(l->items, l->n, sizeof(Tally), compare_amount);
        return 0;
}

static json_t *holders_json(Explain *e, Holder h, const ExplainQuery *q) {
        Side *s = &e->side[h];

        if (leaves_sorted(&s->page_stacks, s->leaf_pages, NULL, e->n_nodes) < 0 ||
            leaves_sorted(&s->slab_stacks, s->slab_leaf_bytes, s->slab_leaf_objects, e->n_slab_nodes) < 0)
                return NULL;
        return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o}",
                         "pages", (json_int_t) s->pages,
                         "slabObjects", (json_int_t) s->slab_objects,
                         "slabBytes", (json_int_t) s->slab_bytes,
                         "tasks", tasks_json(e, h, q),
                         "stacks", stacks_json(e, &s->page_stacks, false, q),
                         "slabCaches", slab_rows_json(e, s, true, q),
                         "slabCallSites", slab_rows_json(e, s, false, q),
                         "slabStacks", stacks_json(e, &s->slab_stacks, true, q));
}

json_t *explain_kernel_json(const Memcg *m, const char *cgroup, const MemcgFigures *f) {
        json_auto_t *stat = json_array(), *missing = json_array(), *events = json_array(), *o = NULL;
        _cleanup_free_ char *path = NULL;

        if (!stat || !missing || !events || asprintf(&path, "%s%s", memcg_root(m), streq(cgroup, "/") ? "" : cgroup) < 0)
                return NULL;
        for (MemcgFigure x = 0; x < _MEMCG_FIGURE_MAX; x++) {
                const char *source = memcg_figure_source(f->hierarchy, x);
                if (!source) {
                        if (json_array_append_new(missing, json_string(memcg_figure_to_string(x))) < 0)
                                return NULL;
                        continue;
                }
                if (x < MEMCG_STAT_FIRST || !memcg_figure_known(f, x))
                        continue;
                if (json_array_append_new(stat, json_pack("{s:s, s:I, s:s}", "name", memcg_figure_to_string(x),
                                                          "bytes", varlink_count(f->value[x]), "source", source)) < 0)
                        return NULL;
        }
        for (MemcgEvent x = 0; x < _MEMCG_EVENT_MAX; x++)
                if ((f->events_known & (UINT32_C(1) << x)) &&
                    json_array_append_new(events, json_pack("{s:s, s:I}", "name", memcg_event_to_string(x),
                                                            "count", varlink_count(f->events[x]))) < 0)
                        return NULL;
        /* A limit of "max" is none: null, as is a figure not read. */
        json_t *figures[MEMCG_STAT_FIRST];
        for (MemcgFigure x = 0; x < MEMCG_STAT_FIRST; x++)
                figures[x] = memcg_figure_known(f, x) && f->value[x] != MEMCG_UNLIMITED ?
                             json_integer(varlink_count(f->value[x])) : json_null();
        o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:O, s:O, s:O}",
                      "hierarchy", memcg_hierarchy_to_string(f->hierarchy),
                      "path", utf8_json_string(path),
                      "currentBytes", figures[MEMCG_CURRENT],
                      "peakBytes", figures[MEMCG_PEAK],
                      "maxBytes", figures[MEMCG_MAX],
                      "highBytes", figures[MEMCG_HIGH],
                      "stat", stat,
                      "missing", missing,
                      "events", events);
        return TAKE_PTR(o);
}

/* Appends one ExplainReason. */
static int reason_add(json_t *reasons, const char *reason, bool has_bytes, uint64_t bytes, const char *format, ...)
                _printf_(5, 6);

static int reason_add(json_t *reasons, const char *reason, bool has_bytes, uint64_t bytes, const char *format, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;

        va_start(ap, format);
        int r = vasprintf(&text, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        json_t *o = json_pack("{s:s, s:o, s:o}", "reason", reason,
                              "bytes", has_bytes ? json_integer(varlink_count(bytes)) : json_null(),
                              "text", utf8_json_string(text));
        return o && json_array_append_new(reasons, o) >= 0 ? 0 : -ENOMEM;
}

/* One ExplainComparison: a figure of the kernel's and memstrack's nearest count of the same thing. */
static int compare_add(json_t *list, const char *what, const MemcgFigures *f, MemcgFigure a, MemcgFigure b,
                bool has_memstrack, uint64_t memstrack_bytes, const char *note) {
        bool known = f && memcg_figure_known(f, a) && (b == _MEMCG_FIGURE_INVALID || memcg_figure_known(f, b));
        uint64_t kernel = known ? count_add(f->value[a], b == _MEMCG_FIGURE_INVALID ? 0 : f->value[b]) : 0;
        json_t *o = json_pack("{s:s, s:o, s:o, s:s}", "what", what,
                              "kernelBytes", known ? json_integer(varlink_count(kernel)) : json_null(),
                              "memstrackBytes", has_memstrack ? json_integer(varlink_count(memstrack_bytes)) : json_null(),
                              "note", note);
        return o && json_array_append_new(list, o) >= 0 ? 0 : -ENOMEM;
}

/*
 * The LRU's inactive lists beside what the access source measured: memstrack's warm and cold pages of the
 * unit at its last round against inactive_anon + inactive_file, and why the two are not the same thing.
 */
static int compare_idle(Accounting *a, const ExplainQuery *q, uint32_t unit, const MemcgFigures *f,
                json_t *comparisons, json_t *reasons) {
        ColdSum s = cold_scope_sum(a, q->coldness, (ViewScope) { VIEW_SCOPE_UNIT, unit });
        uint64_t ps = (uint64_t) q->page_size;
        const char *source = NULL, *detail = NULL, *why = NULL;
        ColdStats st;
        int r;

        view_cold_stats(q->coldness, &st, &source, &detail, &why);
        r = compare_add(comparisons, "inactive", f, MEMCG_INACTIVE_ANON, MEMCG_INACTIVE_FILE, s.known,
                        count_mul(count_add(s.pages[VIEW_COLD_WARM], s.pages[VIEW_COLD_COLD]), ps),
                        "inactive_anon + inactive_file (the LRU's inactive lists) against the unit's pages idle at "
                        "least --warm-after at the access source's last round (Cold)");
        if (r < 0)
                return r;
        if (!s.known)
                return source ? reason_add(reasons, "lru-order", false, 0, "memstrack measures no idle time for "
                                           "this unit yet: %s's last round has no figures of it", source) : 0;
        return reason_add(reasons, "lru-order", true,
                          count_mul(count_add(s.pages[VIEW_COLD_UNKNOWN], s.pages[VIEW_COLD_NEWER]), ps),
                          "the kernel's inactive lists are reclaim's order of eviction, not a measured idle time: "
                          "pages move to them when reclaim scans past them, which happens under memory pressure "
                          "(to anonymous pages only where there is swap), and new anonymous pages start there; "
                          "memstrack's idle pages are those %s found untouched for at least %" PRIu64 " s (cold "
                          "from %" PRIu64 " s) at its last round, which could not tell this much of the unit (outside "
                          "what it monitors, or newer than its regions)", source,
                          st.source.warm_usec / 1000000, st.source.cold_usec / 1000000);
}

/* Pages and slab bytes of the units whose cgroups lie below this unit's: the kernel's figures include
 * them, memstrack's unit does not. */
static void descendants(Explain *e, const ViewUnit *x, uint64_t *ret_pages, uint64_t *ret_slab, size_t *ret_n) {
        size_t len = x->cgroup ? strlen(x->cgroup) : 0;
        ViewUnit y;

        *ret_pages = *ret_slab = 0;
        *ret_n = 0;
        if (!x->cgroup)
                return;
        for (uint32_t i = 1; i < view_unit_count(e->a); i++) {
                if (!view_unit(e->a, i, &y) || i == e->unit || !y.cgroup)
                        continue;
                bool below = streq(x->cgroup, "/") ? !streq(y.cgroup, "/") :
                             strncmp(y.cgroup, x->cgroup, len) == 0 && y.cgroup[len] == '/';
                if (!below)
                        continue;
                *ret_pages = count_add(*ret_pages, y.pages.current);
                *ret_slab = count_add(*ret_slab, y.slab_bytes.current);
                (*ret_n)++;
        }
}

/* The reasons memstrack's count and the kernel's differ, each with what it accounts for where known. */
static int reasons_json(Explain *e, const ExplainQuery *q, const ViewUnit *x, const MemcgFigures *f,
                const char *kernel_reason, uint64_t desc_pages, uint64_t desc_slab, size_t n_desc, json_t **ret) {
        json_auto_t *list = json_array();
        uint64_t ps = (uint64_t) q->page_size;
        int r = 0;

        if (!list)
                return -ENOMEM;
        if (!f)
                r = reason_add(list, "no-kernel-figures", false, 0, "The kernel's figures cannot be read: %s.",
                               kernel_reason ?: "unknown reason");
        if (r >= 0 && !x->live)
                r = reason_add(list, "reparented", true, count_add(count_mul(x->pages.current, ps), x->slab_bytes.current),
                               "The unit's cgroups are gone: the kernel moved what they still held (page cache, "
                               "slab objects) to the parent cgroup, where it is charged now; memstrack keeps it "
                               "here, with the tasks that allocated it.");
        if (r >= 0 && n_desc > 0)
                r = reason_add(list, "hierarchical", true, count_add(count_mul(desc_pages, ps), desc_slab),
                               "The kernel's figures include the %zu units below this cgroup; memstrack counts them "
                               "apart (%" PRIu64 " pages, %" PRIu64 " slab bytes), and adds them in the total "
                               "compared.", n_desc, desc_pages, desc_slab);
        if (r >= 0 && f && memcg_figure_known(f, MEMCG_SOCK) && f->value[MEMCG_SOCK] > 0)
                r = reason_add(list, "remote-charges", true, f->value[MEMCG_SOCK],
                               "Socket buffers are charged to the cgroup of their socket; many are allocated in "
                               "interrupt context (packets received), which memstrack charges to whatever task "
                               "was running then.");
        if (r >= 0 && q->uptime_usec > 0)
                r = reason_add(list, "before-tracing", false, 0,
                               "memstrack counts what the unit's tasks allocated in the %" PRIu64 " s it has traced; "
                               "what the cgroup was charged before (page cache read earlier, slab objects of "
                               "earlier processes) is in the kernel's figures only.", q->uptime_usec / 1000000);
        else if (r >= 0)
                r = reason_add(list, "before-tracing", false, 0,
                               "memstrack counts what the unit's tasks allocated since it began tracing; what the "
                               "cgroup was charged before (page cache read earlier, slab objects of earlier "
                               "processes) is in the kernel's figures only.");
        if (r >= 0 && f && ((memcg_figure_known(f, MEMCG_FILE) && f->value[MEMCG_FILE] > 0) ||
                            (memcg_figure_known(f, MEMCG_SHMEM) && f->value[MEMCG_SHMEM] > 0)))
                r = reason_add(list, "first-touch", false, 0,
                               "Page cache and shared memory are charged to the cgroup that first brought a page "
                               "in; memstrack charges the task that allocated it, which is the same task, but "
                               "pages another unit brought in are that unit's in both counts.");
        if (r >= 0 && !view_traces_slab(e->a))
                r = reason_add(list, "slab-not-traced", false, 0,
                               "Slab objects are not traced (memstrackd --slab): memstrack's count has the slab "
                               "pages the unit's tasks caused, not its objects.");
        else if (r >= 0)
                r = reason_add(list, "slab-accounting", false, 0,
                               "memstrack counts every live slab object the unit's tasks allocated, at the size "
                               "the allocator handed out; the kernel charges only objects of accounted caches and "
                               "__GFP_ACCOUNT allocations, each with a pointer's worth more, and counts the "
                               "objects in its slab figures rather than the slab pages, which hold objects of "
                               "many cgroups (memstrack's pages include the slab pages the unit's tasks caused).");
        if (r >= 0 && q->lost_events > 0)
                r = reason_add(list, "lost-events", false, 0,
                               "The event source lost %" PRIu64 " records: memstrack's counts are lower bounds.",
                               q->lost_events);
        if (r >= 0 && q->stack_sample_interval > 1)
                r = reason_add(list, "estimated-stacks", false, 0,
                               "Stacks are sampled (one per %u pages): each stack's share is an estimate, the "
                               "totals are exact.", q->stack_sample_interval);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(list);
        return 0;
}

int explain_query_json(Accounting *a, const ExplainQuery *q_in, json_t **ret) {
        ExplainQuery q = *q_in;
        Explain e;
        MemcgFigures figures;
        const MemcgFigures *f = NULL;
        const char *kernel_reason = q.memcg_reason;
        char reason_buf[256];
        json_auto_t *kernel = json_null(), *alive = NULL, *orphaned = NULL, *reasons = NULL, *comparisons = NULL;
        int r;

        assert(a && q_in && ret);

        q.limit = MIN(q.limit ?: EXPLAIN_LIMIT_DEFAULT, (size_t) QUERY_LIMIT_MAX);
        q.stacks = MIN(q.stacks, (unsigned) EXPLAIN_STACKS_MAX);
        q.page_size = q.page_size > 0 ? q.page_size : 4096;
        uint32_t unit = view_find_unit_shown(a, q.name);
        ViewUnit unit_view;
        if (unit == VIEW_UNIT_NONE || !view_unit(a, unit, &unit_view))
                return -ENXIO;
        const ViewUnit *x = &unit_view;

        /* The kernel's side first: a cgroup that is gone is said so, never read at another's path. */
        if (q.memcg && x->cgroup && x->live) {
                r = memcg_read(q.memcg, x->cgroup, &figures);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0)
                        f = &figures;
                else if (r == -ENOENT && memcg_hierarchy(q.memcg) == MEMCG_HIERARCHY_V1) {
                        (void) snprintf(reason_buf, sizeof(reason_buf), "%s has no directory in the cgroup v1 "
                                        "memory hierarchy (systemd makes one only for units with memory accounting)",
                                        x->cgroup);
                        kernel_reason = reason_buf;
                } else
                        kernel_reason = r == -ENOENT ? "the cgroup is gone" : "the cgroup could not be read";
        } else if (q.memcg)
                kernel_reason = !x->live ? "the unit's cgroups are gone" : "the unit's cgroup is not known";
        if (f) {
                json_decref(kernel);
                kernel = explain_kernel_json(q.memcg, x->cgroup, f);
                if (!kernel)
                        return -ENOMEM;
        }

        r = explain_init(&e, a, unit);
        if (r >= 0) {
                view_foreach_cell(a, (ViewScope) { VIEW_SCOPE_UNIT, unit }, count_cell, &e);
                view_foreach_slab_object(a, count_object, &e);
                r = e.error;
        }
        if (r >= 0) {
                alive = holders_json(&e, HOLDER_ALIVE, &q);
                orphaned = holders_json(&e, HOLDER_ORPHANED, &q);
                r = alive && orphaned ? 0 : -ENOMEM;
        }
        uint64_t desc_pages = 0, desc_slab = 0;
        size_t n_desc = 0, tasks = 0;
        if (r >= 0) {
                descendants(&e, x, &desc_pages, &desc_slab, &n_desc);
                r = reasons_json(&e, &q, x, f, kernel_reason, desc_pages, desc_slab, n_desc, &reasons);
        }
        uint64_t ps = (uint64_t) q.page_size, total = count_mul(count_add(x->pages.current, desc_pages), ps);
        bool slab = view_traces_slab(a);
        comparisons = json_array();
        if (r >= 0 && (!comparisons ||
            compare_add(comparisons, "total", f, MEMCG_CURRENT, _MEMCG_FIGURE_INVALID, true, total,
                        "memory.current (usage_in_bytes on v1) against the pages the unit's tasks (and those of "
                        "the units below it) allocated and still hold") < 0 ||
            compare_add(comparisons, "user", f, MEMCG_ANON, MEMCG_FILE, true, count_mul(e.movable_pages, ps),
                        "anon + file against the unit's pages allocated movable (user memory)") < 0 ||
            compare_add(comparisons, "anon", f, MEMCG_ANON, _MEMCG_FIGURE_INVALID, true, count_mul(e.movable_pages, ps),
                        "anon against the unit's pages allocated movable, which include its page cache") < 0 ||
            compare_add(comparisons, "kernel", f, MEMCG_KERNEL, _MEMCG_FIGURE_INVALID, true, count_mul(e.kernel_pages, ps),
                        "kernel memory (memory.kmem.usage_in_bytes on v1) against the unit's pages allocated "
                        "unmovable or reclaimable: slab pages, page tables, stacks, buffers") < 0 ||
            compare_add(comparisons, "slab", f, MEMCG_SLAB, _MEMCG_FIGURE_INVALID, slab,
                        count_add(e.side[HOLDER_ALIVE].slab_bytes, e.side[HOLDER_ORPHANED].slab_bytes),
                        "slab objects charged against the unit's live slab objects (v1 has no slab figure: "
                        "its objects are in kernel)") < 0))
                r = -ENOMEM;

        if (r >= 0)
                r = compare_idle(a, &q, unit, f, comparisons, reasons);

        bool has_current = f && memcg_figure_known(f, MEMCG_CURRENT);
        uint64_t current = has_current ? f->value[MEMCG_CURRENT] : 0;
        bool kernel_more = current >= total;

        /* Live processes by the unit of the cgroup they last allocated in, as Units counts them. */
        for (uint32_t i = 0; r >= 0 && i < e.n_slots; i++) {
                ViewTask t;
                if (view_task(a, i, &t) && !t.is_thread && !t.exited && t.unit == unit)
                        tasks++;
        }
        if (r >= 0) {
                json_t *o = json_pack("{s:o, s:o, s:b, s:I, s:i, s:O, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:b, "
                                      "s:O, s:O, s:o, s:o, s:O, s:O, s:{s:I, s:I, s:I}}",
                                      "name", utf8_json_string(x->name ?: VIEW_UNKNOWN_UNIT),
                                      "cgroup", x->cgroup ? utf8_json_string(x->cgroup) : json_null(),
                                      "live", x->live,
                                      "tasks", (json_int_t) tasks,
                                      "pageSize", (int) q.page_size,
                                      "kernel", kernel,
                                      "kernelReason", f || !kernel_reason ? json_null() : json_string(kernel_reason),
                                      "currentPages", (json_int_t) x->pages.current,
                                      "peakPages", (json_int_t) x->pages.peak,
                                      "slabBytes", (json_int_t) x->slab_bytes.current,
                                      "peakSlabBytes", (json_int_t) x->slab_bytes.peak,
                                      "descendantPages", (json_int_t) desc_pages,
                                      "descendantSlabBytes", (json_int_t) desc_slab,
                                      "tracingSlab", slab,
                                      "alive", alive,
                                      "orphaned", orphaned,
                                      "differenceBytes", has_current ?
                                              json_integer(varlink_count(kernel_more ? current - total : total - current)) :
                                              json_null(),
                                      "kernelCountsMore", has_current ? json_boolean(kernel_more) : json_null(),
                                      "comparisons", comparisons,
                                      "reasons", reasons,
                                      "pageKinds", "movable", (json_int_t) e.movable_pages,
                                      "unmovable", (json_int_t) e.kernel_pages,
                                      "unknown", (json_int_t) e.unknown_kind_pages);
                if (!o)
                        r = -ENOMEM;
                else
                        *ret = o;
        }
        explain_done(&e);
        return r;
}

/* Per unit index: what its live processes and no live process hold. */
typedef struct UnitHeld {
        Accounting *a;
        uint64_t (*held)[4];            /* [unit][alive pages, orphaned pages, alive slab, orphaned slab] */
        size_t n_units;
} UnitHeld;

static void held_cell(void *userdata, const ViewCell *cell) {
        UnitHeld *h = userdata;

        if (cell->unit < h->n_units) {
                uint64_t *x = &h->held[cell->unit][process_orphaned(h->a, cell->process)];
                *x = count_add(*x, cell->pages);
        }
}

static void held_object(void *userdata, const ViewSlabObject *o) {
        UnitHeld *h = userdata;

        if (o->unit < h->n_units)
                h->held[o->unit][2 + process_orphaned(h->a, view_task_process(h->a, o->task))] += o->allocated;
}

int explain_units_json(Accounting *a, json_t *names, const Memcg *memcg, long page_size, json_t **ret) {
        UnitHeld h = {
                .a = a,
                .n_units = view_unit_count(a),
        };
        json_auto_t *list = json_array();
        json_t *name;
        size_t i;

        assert(a && ret);

        if (!list)
                return -ENOMEM;
        h.held = calloc(MAX(h.n_units, (size_t) 1), sizeof(*h.held));
        if (!h.held)
                return -ENOMEM;
        /* One walk of the cells and one of the objects for every unit asked about. */
        view_foreach_cell(a, VIEW_SCOPE_EVERY, held_cell, &h);
        view_foreach_slab_object(a, held_object, &h);

        uint64_t ps = (uint64_t) (page_size > 0 ? page_size : 4096);
        json_array_foreach(names, i, name) {
                uint32_t unit = json_is_string(name) ? view_find_unit_shown(a, json_string_value(name)) : VIEW_UNIT_NONE;
                json_t *kernel = json_null();
                MemcgFigures f;
                ViewUnit x;

                if (unit == VIEW_UNIT_NONE || !view_unit(a, unit, &x))
                        continue;       /* never known, or merged into another name since it was listed */
                if (memcg && x.cgroup && x.live && memcg_read(memcg, x.cgroup, &f) >= 0) {
                        kernel = explain_kernel_json(memcg, x.cgroup, &f);
                        if (!kernel) {
                                free(h.held);
                                return -ENOMEM;
                        }
                }
                json_t *o = json_pack("{s:o, s:o, s:b, s:I, s:I, s:I, s:I, s:o}",
                                      "name", utf8_json_string(x.name ?: VIEW_UNKNOWN_UNIT),
                                      "cgroup", x.cgroup ? utf8_json_string(x.cgroup) : json_null(),
                                      "live", x.live,
                                      "aliveBytes", varlink_count(count_mul(h.held[unit][0], ps)),
                                      "orphanedBytes", varlink_count(count_mul(h.held[unit][1], ps)),
                                      "aliveSlabBytes", varlink_count(h.held[unit][2]),
                                      "orphanedSlabBytes", varlink_count(h.held[unit][3]),
                                      "kernel", kernel);
                if (!o || json_array_append_new(list, o) < 0) {
                        free(h.held);
                        return -ENOMEM;
                }
        }
        free(h.held);
        *ret = json_pack("{s:O}", "units", list);
        return *ret ? 0 : -ENOMEM;
}
