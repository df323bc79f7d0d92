/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "leaks.h"
#include "macro.h"
#include "query.h"
#include "slabquery.h"
#include "utf8.h"

#define ROW_NONE UINT32_MAX

/* Interval k (0 = the newest) holds ages [k * interval, (k + 1) * interval): its growth slot, oldest
 * first, or -1 when older than every interval. */
static ssize_t growth_slot(const LeaksQuery *q, uint64_t age) {
        uint64_t k = age / q->interval_nsec;
        return k < q->intervals ? (ssize_t) (q->intervals - 1 - k) : -1;
}

static json_t *growth_json(const LeaksQuery *q, const uint64_t *growth) {
        json_auto_t *a = json_array();

        for (unsigned k = 0; a && k < q->intervals; k++)
                if (json_array_append_new(a, json_integer((json_int_t) growth[k])) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* Live objects of one call site that are old enough, and when their kind was allocated. */
typedef struct ObjectRow {
        uint32_t site;
        uint64_t objects, bytes, oldest_nsec;
        uint64_t *growth;               /* LeaksQuery.intervals counts, oldest first */
} ObjectRow;

typedef struct ObjectLeaks {
        const LeaksQuery *q;
        Usage *usage;
        ObjectRow *rows;                /* by site index */
        size_t n_sites;
} ObjectLeaks;

static void leak_object(void *userdata, uint64_t ptr, const SlabObject *o) {
        ObjectLeaks *l = userdata;
        const LeaksQuery *q = l->q;

        (void) ptr;
        if (o->site >= l->n_sites || o->time_nsec > q->now_nsec)
                return;
        if (q->pid > 0 && usage_task(l->usage, usage_task_process(l->usage, o->task))->pid != q->pid)
                return;
        uint64_t age = q->now_nsec - o->time_nsec;
        ObjectRow *row = &l->rows[o->site];
        if (age >= q->min_age_nsec) {
                row->objects++;
                row->bytes += o->allocated;
                row->oldest_nsec = MAX(row->oldest_nsec, age);
        }
        ssize_t k = growth_slot(q, age);
        if (k >= 0)
                row->growth[k]++;
}

static int compare_object_rows(const void *x, const void *y) {
        const ObjectRow *a = x, *b = y;
        if (a->bytes != b->bytes)
                return a->bytes < b->bytes ? 1 : -1;
        return a->site < b->site ? -1 : a->site > b->site;
}

/* [LeakRow]: old live slab objects by call site, most bytes first. */
static int object_leaks_json(Accounting *a, const LeaksQuery *q, json_t **ret) {
        Slab *slab = accounting_slab(a);
        ObjectLeaks l = { .q = q, .usage = accounting_usage(a), .n_sites = slab_site_count(slab) };
        _cleanup_free_ uint64_t *growth = calloc(MAX(l.n_sites, (size_t) 1) * q->intervals, sizeof(uint64_t));
        json_auto_t *rows = json_array();

        l.rows = calloc(MAX(l.n_sites, (size_t) 1), sizeof(ObjectRow));
        if (!rows || !l.rows || !growth) {
                free(l.rows);
                return -ENOMEM;
        }
        for (size_t i = 0; i < l.n_sites; i++)
                l.rows[i] = (ObjectRow) { .site = (uint32_t) i, .growth = growth + i * q->intervals };
        slab_foreach(slab, leak_object, &l);
        qsort(l.rows, l.n_sites, sizeof(ObjectRow), compare_object_rows);
        for (size_t i = 0; i < MIN(l.n_sites, q->limit) && l.rows[i].objects > 0; i++) {
                const ObjectRow *row = &l.rows[i];
                json_t *name, *address;

                slab_call_site_json(a, slab_site(slab, row->site)->address, q->show_addresses, &name, &address);
                json_t *o = json_pack("{s:o, s:o, s:I, s:I, s:I, s:o}",
                                      "name", name ?: json_null(),
                                      "address", address ?: json_null(),
                                      "objects", (json_int_t) row->objects,
                                      "bytes", (json_int_t) row->bytes,
                                      "oldestAgeUsec", (json_int_t) (row->oldest_nsec / 1000),
                                      "growth", growth_json(q, row->growth) ?: json_null());
                if (!o || !json_is_array(json_object_get(o, "growth")) || json_array_append_new(rows, o) < 0) {
                        free(l.rows);
                        return -ENOMEM;
                }
        }
        free(l.rows);
        *ret = TAKE_PTR(rows);
        return 0;
}

/*
 * Pages: the page table keeps each block's charge cell and allocation time, so one walk counts the old
 * pages per cell; cells of the same process and stack (they differ by module or cgroup) make one row; a
 * second walk counts the growth of the rows shown only, so memory stays one word or two per cell.
 */
typedef struct CellAge {
        uint64_t pages, oldest_nsec;    /* its pages at least min_age old, and the oldest's age */
} CellAge;

typedef struct PageRow {
        uint32_t process, leaf;         /* leaf: the global stack node */
        uint32_t cell;                  /* before the merge: the cell it was made from */
        uint64_t pages, oldest_nsec;
        uint32_t rank;                  /* place among the rows shown, ROW_NONE if not shown */
} PageRow;

typedef struct PageLeaks {
        const LeaksQuery *q;
        Accounting *a;
        CellAge *cells;
        size_t n_cells;
        uint32_t *row_of;               /* by cell: its PageRow, or ROW_NONE */
        PageRow *rows;
        uint64_t *growth;               /* per shown row, intervals counts */
} PageLeaks;

static bool page_wanted(const PageLeaks *l, uint32_t cell) {
        const ChargeIndex *ci = accounting_chargeindex(l->a);
        if (cell >= l->n_cells)
                return false;
        return l->q->pid <= 0 || usage_task(accounting_usage(l->a), chargeindex_process(ci, cell))->pid == l->q->pid;
}

static void age_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        PageLeaks *l = userdata;

        (void) pfn;
        if (!page_wanted(l, o->node))
                return;
        uint64_t age = pagemap_stamp_age_nsec(o->stamp, l->q->now_nsec);
        if (age < l->q->min_age_nsec)
                return;
        l->cells[o->node].pages += UINT64_C(1) << order;
        l->cells[o->node].oldest_nsec = MAX(l->cells[o->node].oldest_nsec, age);
}

static void grow_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        PageLeaks *l = userdata;

        (void) pfn;
        if (o->node >= l->n_cells || l->row_of[o->node] == ROW_NONE)
                return;
        uint32_t rank = l->rows[l->row_of[o->node]].rank;
        ssize_t k = growth_slot(l->q, pagemap_stamp_age_nsec(o->stamp, l->q->now_nsec));
        if (rank != ROW_NONE && k >= 0)
                l->growth[(size_t) rank * l->q->intervals + (size_t) k] += UINT64_C(1) << order;
}

static int compare_row_keys(const void *x, const void *y) {
        const PageRow *a = x, *b = y;
        if (a->process != b->process)
                return a->process < b->process ? -1 : 1;
        return a->leaf < b->leaf ? -1 : a->leaf > b->leaf;
}

/* Orders row numbers by their rows' pages. */
static int compare_row_pages(const void *x, const void *y, void *userdata) {
        const PageRow *rows = userdata;
        const PageRow *a = &rows[*(const uint32_t *) x], *b = &rows[*(const uint32_t *) y];
        if (a->pages != b->pages)
                return a->pages < b->pages ? 1 : -1;
        return compare_row_keys(a, b);
}

static uint32_t global_leaf(Accounting *a, uint32_t leaf) {
        /* A process-tree leaf stands for its twin in the global tree, as in stack views. */
        const StackNode *n = stacktree_node(accounting_stacktree(a), leaf);
        return n && n->twin != STACK_NODE_NONE ? n->twin : leaf;
}

static json_t *page_row_json(Accounting *a, const LeaksQuery *q, const PageRow *row, const uint64_t *growth) {
        const Task *t = usage_task(accounting_usage(a), row->process);
        json_t *frames = query_stack_frames_json(a, row->leaf, q->show_addresses, q->usym);
        json_t *g = growth_json(q, growth);

        if (!frames || !g) {
                json_decref(frames);
                json_decref(g);
                return NULL;
        }
        return json_pack("{s:i, s:o, s:o, s:I, s:I, s:o}",
                         "pid", (int) t->pid,
                         "comm", utf8_json_string(t->comm) ?: json_null(),
                         "frames", frames,
                         "pages", (json_int_t) row->pages,
                         "oldestAgeUsec", (json_int_t) (row->oldest_nsec / 1000),
                         "growth", g);
}

/* [PageLeak]: old live pages by process and stack, most pages first. */
static int page_leaks_json(Accounting *a, const LeaksQuery *q, json_t **ret) {
        const ChargeIndex *ci = accounting_chargeindex(a);
        PageLeaks l = { .q = q, .a = a, .n_cells = chargeindex_cell_bound(ci) };
        _cleanup_free_ uint32_t *order = NULL;
        json_auto_t *rows = json_array();
        size_t n_rows = 0, n_shown;
        int r = -ENOMEM;

        l.cells = calloc(MAX(l.n_cells, (size_t) 1), sizeof(CellAge));
        l.row_of = malloc(MAX(l.n_cells, (size_t) 1) * sizeof(uint32_t));
        if (!rows || !l.cells || !l.row_of)
                goto finish;
        pagemap_foreach(accounting_pagemap(a), age_block, &l);

        /* Rows: the cells holding old pages, merged by (process, global leaf). */
        for (size_t c = 0; c < l.n_cells; c++)
                n_rows += l.cells[c].pages > 0;
        l.rows = calloc(MAX(n_rows, (size_t) 1), sizeof(PageRow));
        order = calloc(MAX(n_rows, (size_t) 1), sizeof(uint32_t));
        if (!l.rows || !order)
                goto finish;
        n_rows = 0;
        for (size_t c = 0; c < l.n_cells; c++)
                if (l.cells[c].pages > 0)
                        l.rows[n_rows++] = (PageRow) {
                                .process = chargeindex_process(ci, (uint32_t) c),
                                .leaf = global_leaf(a, chargeindex_node(ci, (uint32_t) c)),
                                .cell = (uint32_t) c,
                        };
        qsort(l.rows, n_rows, sizeof(PageRow), compare_row_keys);
        for (size_t c = 0; c < l.n_cells; c++)
                l.row_of[c] = ROW_NONE;
        size_t merged = 0;
        for (size_t i = 0; i < n_rows; i++) {
                uint32_t c = l.rows[i].cell;
                if (merged == 0 || compare_row_keys(&l.rows[merged - 1], &l.rows[i]) != 0) {
                        l.rows[merged] = (PageRow) { .process = l.rows[i].process, .leaf = l.rows[i].leaf,
                                                     .rank = ROW_NONE };
                        merged++;
                }
                PageRow *row = &l.rows[merged - 1];
                row->pages += l.cells[c].pages;
                row->oldest_nsec = MAX(row->oldest_nsec, l.cells[c].oldest_nsec);
                l.row_of[c] = (uint32_t) (merged - 1);
        }
        n_rows = merged;

        /* The rows shown: most pages first. A cell that holds only young pages has no row, so its
         * growth is left out: the rows are what may be leaking. */
        for (size_t i = 0; i < n_rows; i++)
                order[i] = (uint32_t) i;
        qsort_r(order, n_rows, sizeof(uint32_t), compare_row_pages, l.rows);
        n_shown = MIN(n_rows, q->limit);
        for (size_t i = 0; i < n_shown; i++)
                l.rows[order[i]].rank = (uint32_t) i;
        l.growth = calloc(MAX(n_shown, (size_t) 1) * q->intervals, sizeof(uint64_t));
        if (!l.growth)
                goto finish;
        pagemap_foreach(accounting_pagemap(a), grow_block, &l);

        for (size_t i = 0; i < n_shown; i++) {
                json_t *o = page_row_json(a, q, &l.rows[order[i]], l.growth + i * q->intervals);
                if (!o || json_array_append_new(rows, o) < 0)
                        goto finish;
        }
        *ret = TAKE_PTR(rows);
        r = 0;
finish:
        free(l.cells);
        free(l.row_of);
        free(l.rows);
        free(l.growth);
        return r;
}

int leaks_query_json(Accounting *a, const LeaksQuery *q, json_t **ret) {
        json_auto_t *objects = NULL, *pages = NULL;
        int r;

        assert(q && q->interval_nsec > 0 && q->intervals > 0);
        assert(ret);

        /* Ages in the page table are modular: hold them below the wrap before reading them. */
        pagemap_clamp_ages(accounting_pagemap(a), q->now_nsec);
        r = object_leaks_json(a, q, &objects);
        if (r < 0)
                return r;
        r = page_leaks_json(a, q, &pages);
        if (r < 0)
                return r;
        json_t *reply = json_pack("{s:b, s:I, s:I, s:i, s:O, s:O, s:I}",
                                  "tracing", accounting_traces_slab(a),
                                  "minAgeUsec", (json_int_t) (q->min_age_nsec / 1000),
                                  "intervalUsec", (json_int_t) (q->interval_nsec / 1000),
                                  "intervals", (int) q->intervals,
                                  "rows", objects,
                                  "pages", pages,
                                  "pageAgeGrainUsec", (json_int_t) ((UINT64_C(1) << PAGEMAP_STAMP_SHIFT) / 1000));
        if (!reply)
                return -ENOMEM;
        *ret = reply;
        return 0;
}
