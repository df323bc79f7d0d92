/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyindex.h"
#include "leaks.h"
#include "macro.h"
#include "query.h"
#include "slabquery.h"
#include "utf8.h"
#include "varlink.h"

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
                if (json_array_append_new(a, json_integer(varlink_count(growth[k]))) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* Live objects of one call site that are old enough, and when their kind was allocated. A call site whose
 * frees are not visible counts its live objects of any age instead: they are listed apart. */
typedef struct ObjectRow {
        uint32_t site;
        bool visible;                   /* the call site's frees are visible (ViewSlabGroup) */
        uint64_t objects, bytes, oldest_nsec;
        uint64_t *growth;               /* LeaksQuery.intervals counts, oldest first */
} ObjectRow;

typedef struct ObjectLeaks {
        const LeaksQuery *q;
        Accounting *a;
        ObjectRow *rows;                /* by site index */
        size_t n_sites;
} ObjectLeaks;

static void leak_object(void *userdata, const ViewSlabObject *o) {
        ObjectLeaks *l = userdata;
        const LeaksQuery *q = l->q;

        if (o->site >= l->n_sites || o->time_nsec > q->now_nsec)
                return;
        if (q->pid > 0) {
                /* An evicted process's objects are "[evicted]"'s, which has no pid asked for. */
                ViewTask p;
                if (!view_task(l->a, view_task_owner(l->a, o->task), &p) || p.pid != q->pid)
                        return;
        }
        uint64_t age = q->now_nsec - o->time_nsec;
        ObjectRow *row = &l->rows[o->site];
        if (!row->visible) {
                /* Freed unseen, maybe: no age says anything about these. */
                row->objects++;
                row->bytes += o->allocated;
                return;
        }
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
        /* The visible call sites first: those are the leak rows, the others follow. */
        if (a->visible != b->visible)
                return a->visible ? -1 : 1;
        if (a->bytes != b->bytes)
                return a->bytes < b->bytes ? 1 : -1;
        return a->site < b->site ? -1 : a->site > b->site;
}

/* An InvisibleFreeSite: a call site left out of the leak rows, its frees not being visible. */
static json_t *invisible_site_json(Accounting *a, const LeaksQuery *q, const ObjectRow *row) {
        ViewSlabGroup g = {}, cache;
        json_t *name, *address;

        (void) view_slab_site(a, row->site, &g);
        bool has_cache = view_slab_cache(a, g.cache, &cache);
        slab_call_site_json(a, g.address, q->show_addresses, &name, &address);
        return json_pack("{s:o, s:o, s:o, s:I, s:I, s:I}",
                         "name", name ?: json_null(),
                         "address", address ?: json_null(),
                         "cache", has_cache ? utf8_json_string(cache.name) ?: json_null() : json_null(),
                         "objects", varlink_count(row->objects),
                         "bytes", varlink_count(row->bytes),
                         "lostFrees", varlink_count(g.lost_frees));
}

/* [LeakRow]: old live slab objects by call site, most bytes first, and in *ret_invisible
 * [InvisibleFreeSite] the call sites left out because their frees are not visible. */
static int object_leaks_json(Accounting *a, const LeaksQuery *q, json_t **ret, json_t **ret_invisible) {
        ObjectLeaks l = { .q = q, .a = a, .n_sites = view_slab_site_count(a) };
        ViewSlabGroup g;
        _cleanup_free_ uint64_t *growth = calloc(MAX(l.n_sites, (size_t) 1) * q->intervals, sizeof(uint64_t));
        json_auto_t *rows = json_array(), *invisible = json_array();
        size_t n_rows = 0, n_invisible = 0;
        int r = -ENOMEM;

        l.rows = calloc(MAX(l.n_sites, (size_t) 1), sizeof(ObjectRow));
        if (!rows || !invisible || !l.rows || !growth)
                goto finish;
        for (size_t i = 0; i < l.n_sites; i++)
                l.rows[i] = (ObjectRow) { .site = (uint32_t) i,
                                          .visible = view_slab_site(a, (uint32_t) i, &g) && g.frees_visible,
                                          .growth = growth + i * q->intervals };
        view_foreach_slab_object(a, leak_object, &l);
        qsort(l.rows, l.n_sites, sizeof(ObjectRow), compare_object_rows);
        for (size_t i = 0; i < l.n_sites; i++) {
                const ObjectRow *row = &l.rows[i];
                json_t *o;

                if (row->objects == 0)
                        continue;
                if (!row->visible) {
                        if (n_invisible++ >= q->limit)
                                continue;
                        o = invisible_site_json(a, q, row);
                        if (!o || json_array_append_new(invisible, o) < 0)
                                goto finish;
                        continue;
                }
                if (n_rows++ >= q->limit)
                        continue;
                json_t *name, *address;
                (void) view_slab_site(a, row->site, &g);
                slab_call_site_json(a, g.address, q->show_addresses, &name, &address);
                o = json_pack("{s:o, s:o, s:I, s:I, s:I, s:o}",
                              "name", name ?: json_null(),
                              "address", address ?: json_null(),
                              "objects", varlink_count(row->objects),
                              "bytes", varlink_count(row->bytes),
                              "oldestAgeUsec", varlink_count(row->oldest_nsec / 1000),
                              "growth", growth_json(q, row->growth) ?: json_null());
                if (!o || !json_is_array(json_object_get(o, "growth")) || json_array_append_new(rows, o) < 0)
                        goto finish;
        }
        *ret = TAKE_PTR(rows);
        *ret_invisible = TAKE_PTR(invisible);
        r = 0;
finish:
        free(l.rows);
        return r;
}

/*
 * Pages: the page table keeps each block's charge cell and allocation time, so one walk counts the old
 * pages per cell; cells of the same process and stack (they differ by module, cgroup or kind) make one row,
 * merged through a KeyIndex; a second walk counts the growth of the rows shown only. Memory: a few words
 * per cell, whatever the number of pages.
 */
typedef struct CellAge {
        uint64_t pages, oldest_nsec;    /* its pages at least min_age old, and the oldest's age */
        uint32_t row;                   /* its PageRow once merged, ROW_NONE before or without old pages */
} CellAge;

typedef struct PageRow {
        uint32_t process, leaf;         /* process: view_task_owner(), so evicted ones make one; leaf: the
                                         * global stack node */
        uint64_t pages, oldest_nsec;
        uint32_t rank;                  /* place among the rows shown, ROW_NONE if not shown */
} PageRow;

typedef struct PageLeaks {
        const LeaksQuery *q;
        Accounting *a;
        CellAge *cells;
        size_t n_cells;
        uint64_t *wanted;               /* with a pid: a bit per cell, set for the process's cells */
        uint64_t *shown;                /* a bit per cell, set for the cells of the rows shown */
        PageRow *rows;
        uint64_t *growth;               /* per shown row, intervals counts */
} PageLeaks;

/* Whether a block of this cell is asked for: a bit test with a pid (the bitmap stays in cache, the cells
 * would not). */
static bool bit_test(const uint64_t *bits, uint32_t i) {
        return bits[i / 64] >> (i % 64) & 1;
}

static void bit_set(uint64_t *bits, uint32_t i) {
        bits[i / 64] |= UINT64_C(1) << (i % 64);
}

static bool cell_wanted(const PageLeaks *l, uint32_t cell) {
        return cell < l->n_cells && (!l->wanted || bit_test(l->wanted, cell));
}

static void want_cell(void *userdata, const ViewCell *cell) {
        PageLeaks *l = userdata;

        if (cell->id < l->n_cells)
                bit_set(l->wanted, cell->id);
}

static void age_block(void *userdata, const ViewBlock *b) {
        PageLeaks *l = userdata;

        if (!cell_wanted(l, b->cell) || b->age_nsec < l->q->min_age_nsec)
                return;
        l->cells[b->cell].pages += UINT64_C(1) << b->order;
        l->cells[b->cell].oldest_nsec = MAX(l->cells[b->cell].oldest_nsec, b->age_nsec);
}

static void grow_block(void *userdata, const ViewBlock *b) {
        PageLeaks *l = userdata;

        if (b->cell >= l->n_cells || !bit_test(l->shown, b->cell))
                return;
        uint32_t rank = l->rows[l->cells[b->cell].row].rank;
        ssize_t k = growth_slot(l->q, b->age_nsec);
        if (rank != ROW_NONE && k >= 0)
                l->growth[(size_t) rank * l->q->intervals + (size_t) k] += UINT64_C(1) << b->order;
}

/* Orders row numbers by their rows' pages, then by process and stack. */
static int compare_row_pages(const void *x, const void *y, void *userdata) {
        const PageRow *rows = userdata;
        const PageRow *a = &rows[*(const uint32_t *) x], *b = &rows[*(const uint32_t *) y];
        if (a->pages != b->pages)
                return a->pages < b->pages ? 1 : -1;
        if (a->process != b->process)
                return a->process < b->process ? -1 : 1;
        return a->leaf < b->leaf ? -1 : a->leaf > b->leaf;
}

static json_t *page_row_json(Accounting *a, const LeaksQuery *q, const PageRow *row, const uint64_t *growth) {
        ViewTask task;
        const ViewTask *t = view_task(a, row->process, &task) ? &task : NULL;
        json_t *frames = query_stack_frames_json(a, row->leaf,
                                                 &(QueryStackTree) { .show_addresses = q->show_addresses,
                                                                     .user_addresses = q->user_addresses,
                                                                     .caller_uid = q->caller_uid,
                                                                     .usym = q->usym });
        json_t *g = growth_json(q, growth);

        if (!t || !frames || !g) {
                json_decref(frames);
                json_decref(g);
                return NULL;
        }
        return json_pack("{s:i, s:o, s:o, s:I, s:I, s:o}",
                         "pid", (int) t->pid,
                         "comm", utf8_json_string(t->comm) ?: json_null(),
                         "frames", frames,
                         "pages", varlink_count(row->pages),
                         "oldestAgeUsec", varlink_count(row->oldest_nsec / 1000),
                         "growth", g);
}

/* A cell's row: its owner (view_task_owner(): evicted processes are one) and global leaf. */
static void cell_row(const PageLeaks *l, const ViewCell *cell, uint32_t *ret_process, uint64_t *ret_key) {
        *ret_process = view_task_owner(l->a, cell->process);
        *ret_key = (uint64_t) *ret_process << 32 | cell->leaf;
}

/* Merges the cells holding old pages into rows by (process, global leaf), mapped in *by_key. -ENOMEM. */
static int merge_cells(PageLeaks *l, KeyIndex *by_key, size_t *ret_n_rows) {
        size_t n_rows = 0, allocated = 0;
        int r = 0;

        for (size_t c = 0; c < l->n_cells; c++) {
                CellAge *cell = &l->cells[c];
                ViewCell v;
                uint32_t process;
                uint64_t key;

                cell->row = ROW_NONE;
                if (cell->pages == 0 || !view_cell(l->a, (uint32_t) c, &v))
                        continue;
                cell_row(l, &v, &process, &key);
                uint32_t row = key_index_get(by_key, key);
                if (row == KEY_INDEX_NONE) {
                        if (greedy_realloc(&l->rows, &allocated, n_rows + 1, sizeof(PageRow), 64) < 0 ||
                            key_index_put(by_key, key, (uint32_t) n_rows) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        row = (uint32_t) n_rows++;
                        l->rows[row] = (PageRow) { .process = process, .leaf = v.leaf, .rank = ROW_NONE };
                }
                l->rows[row].pages += cell->pages;
                l->rows[row].oldest_nsec = MAX(l->rows[row].oldest_nsec, cell->oldest_nsec);
                cell->row = row;
        }
        *ret_n_rows = n_rows;
        return r;
}

/* Cells holding young pages only, of the process and stack of a row: its growth too (they differ from the
 * row's cells by module, cgroup or kind of allocation). */
static void join_young_cells(PageLeaks *l, const KeyIndex *by_key) {
        for (size_t c = 0; c < l->n_cells; c++) {
                ViewCell v;
                uint32_t process;
                uint64_t key;

                if (l->cells[c].row != ROW_NONE || !cell_wanted(l, (uint32_t) c) || !view_cell(l->a, (uint32_t) c, &v))
                        continue;
                cell_row(l, &v, &process, &key);
                uint32_t row = key_index_get(by_key, key);
                if (row != KEY_INDEX_NONE)
                        l->cells[c].row = row;
        }
}

/* Row numbers of the k rows that compare_row_pages() puts first, in that order, into top (room for k): a
 * bounded heap with the last of them on top, so the rows are read once in order and only k are sorted. */
static size_t first_rows(const PageRow *rows, size_t n_rows, size_t k, uint32_t *top) {
        size_t n = 0;

        for (uint32_t r = 0; r < n_rows && k > 0; r++) {
                size_t i;
                if (n < k) {
                        /* Sift up: parents come after their children in the order. */
                        for (i = n++; i > 0 && compare_row_pages(&r, &top[(i - 1) / 2], (void *) rows) > 0;
                             i = (i - 1) / 2)
                                top[i] = top[(i - 1) / 2];
                        top[i] = r;
                        continue;
                }
                if (compare_row_pages(&r, &top[0], (void *) rows) >= 0)
                        continue;       /* not before the last of the k */
                /* Replace the top and sift down. */
                for (i = 0;;) {
                        size_t c = 2 * i + 1;
                        if (c >= n)
                                break;
                        if (c + 1 < n && compare_row_pages(&top[c + 1], &top[c], (void *) rows) > 0)
                                c++;
                        if (compare_row_pages(&top[c], &r, (void *) rows) <= 0)
                                break;
                        top[i] = top[c];
                        i = c;
                }
                top[i] = r;
        }
        qsort_r(top, n, sizeof(uint32_t), compare_row_pages, (void *) rows);
        return n;
}

/* [PageLeak]: old live pages by process and stack, most pages first. */
static int page_leaks_json(Accounting *a, const LeaksQuery *q, json_t **ret) {
        PageLeaks l = { .q = q, .a = a, .n_cells = view_cell_bound(a) };
        _cleanup_free_ uint32_t *order = NULL;
        json_auto_t *rows = json_array();
        size_t n_rows = 0, n_shown;
        KeyIndex by_key = {};
        int r = -ENOMEM;

        l.cells = calloc(MAX(l.n_cells, (size_t) 1), sizeof(CellAge));
        if (!rows || !l.cells)
                goto finish;
        if (q->pid > 0) {
                /* The process's cells, from the charge index's list of them. */
                uint32_t process = view_find_process(a, q->pid);
                l.wanted = calloc(l.n_cells / 64 + 1, sizeof(uint64_t));
                if (!l.wanted)
                        goto finish;
                if (process != VIEW_TASK_NONE)
                        view_foreach_cell(a, (ViewScope) { VIEW_SCOPE_PROCESS, process }, want_cell, &l);
        }
        view_foreach_block(a, q->now_nsec, age_block, &l);
        r = merge_cells(&l, &by_key, &n_rows);
        if (r < 0)
                goto finish;
        join_young_cells(&l, &by_key);

        /* The rows shown: most pages first. A cell that holds only young pages has no row, so its
         * growth is left out: the rows are what may be leaking. */
        r = -ENOMEM;
        order = calloc(MAX(MIN(n_rows, q->limit), (size_t) 1), sizeof(uint32_t));
        if (!order)
                goto finish;
        n_shown = first_rows(l.rows, n_rows, q->limit, order);
        for (size_t i = 0; i < n_shown; i++)
                l.rows[order[i]].rank = (uint32_t) i;
        l.growth = calloc(MAX(n_shown, (size_t) 1) * q->intervals, sizeof(uint64_t));
        l.shown = calloc(l.n_cells / 64 + 1, sizeof(uint64_t));
        if (!l.growth || !l.shown)
                goto finish;
        for (size_t c = 0; c < l.n_cells; c++)
                if (l.cells[c].row != ROW_NONE && l.rows[l.cells[c].row].rank != ROW_NONE)
                        bit_set(l.shown, (uint32_t) c);
        if (n_shown > 0)
                view_foreach_block(a, q->now_nsec, grow_block, &l);

        for (size_t i = 0; i < n_shown; i++) {
                json_t *o = page_row_json(a, q, &l.rows[order[i]], l.growth + i * q->intervals);
                if (!o || json_array_append_new(rows, o) < 0)
                        goto finish;
        }
        *ret = TAKE_PTR(rows);
        r = 0;
finish:
        key_index_done(&by_key);
        free(l.cells);
        free(l.wanted);
        free(l.shown);
        free(l.rows);
        free(l.growth);
        return r;
}

int leaks_query_json(Accounting *a, const LeaksQuery *q, json_t **ret) {
        json_auto_t *objects = NULL, *invisible = NULL, *pages = NULL;
        int r;

        assert(q && q->interval_nsec > 0 && q->intervals > 0);
        assert(ret);

        r = object_leaks_json(a, q, &objects, &invisible);
        if (r < 0)
                return r;
        r = page_leaks_json(a, q, &pages);
        if (r < 0)
                return r;
        json_t *reply = json_pack("{s:b, s:I, s:I, s:i, s:O, s:O, s:O, s:I}",
                                  "tracing", view_traces_slab(a),
                                  "minAgeUsec", varlink_count(q->min_age_nsec / 1000),
                                  "intervalUsec", varlink_count(q->interval_nsec / 1000),
                                  "intervals", (int) q->intervals,
                                  "rows", objects,
                                  "freesNotVisible", invisible,
                                  "pages", pages,
                                  "pageAgeGrainUsec",
                                  varlink_count(VIEW_PAGE_AGE_GRAIN_NSEC / 1000));
        if (!reply)
                return -ENOMEM;
        *ret = reply;
        return 0;
}
