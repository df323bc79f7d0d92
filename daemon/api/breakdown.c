/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breakdown.h"
#include "macro.h"
#include "utf8.h"
#include "view.h"

static const char *const by_table[_BREAKDOWN_BY_MAX] = {
        [BREAKDOWN_BY_ORDER] = "order",
        [BREAKDOWN_BY_GFP] = "gfp",
        [BREAKDOWN_BY_MIGRATETYPE] = "migratetype",
        [BREAKDOWN_BY_NODE] = "node",
};

const char *breakdown_by_to_string(BreakdownBy by) {
        return by >= 0 && by < _BREAKDOWN_BY_MAX ? by_table[by] : NULL;
}

BreakdownBy breakdown_by_from_string(const char *s) {
        for (BreakdownBy by = 0; s && by < _BREAKDOWN_BY_MAX; by++)
                if (streq(s, by_table[by]))
                        return by;
        return _BREAKDOWN_BY_INVALID;
}

/* Pages per kind id over the cells asked about. */
typedef struct KindPages {
        uint64_t *pages;                /* per kind id */
        size_t n_kinds;
        uint64_t total;
} KindPages;

static void add_cell(void *userdata, const ViewCell *cell) {
        KindPages *k = userdata;

        k->pages[cell->kind < k->n_kinds ? cell->kind : VIEW_PAGE_KIND_UNKNOWN] += cell->pages;
        k->total += cell->pages;
}

/* One row: the kinds that share its key summed. */
typedef struct Row {
        bool known;                     /* false: the kind is unknown */
        ViewPageKind kind;              /* the first kind of the row */
        uint64_t pages;
} Row;

/* Whether a kind belongs to a row of the breakdown. */
static bool same_key(BreakdownBy by, const Row *row, bool known, const ViewPageKind *b) {
        const ViewPageKind *a = &row->kind;

        if (!row->known || !known)
                return row->known == known;
        switch (by) {
        case BREAKDOWN_BY_ORDER:
                return a->order == b->order;
        case BREAKDOWN_BY_GFP:
                return a->gfp_flags == b->gfp_flags;
        case BREAKDOWN_BY_MIGRATETYPE:
                return a->migrate_type == b->migrate_type;
        default:
                return a->zone == b->zone;
        }
}

static int compare_rows(const void *x, const void *y, void *userdata) {
        const Row *a = x, *b = y;
        BreakdownBy by = *(const BreakdownBy *) userdata;

        /* Unknown last; orders in order; the rest biggest first. */
        if (!a->known || !b->known)
                return !a->known - !b->known;
        if (by == BREAKDOWN_BY_ORDER)
                return a->kind.order - b->kind.order;
        if (a->pages != b->pages)
                return a->pages > b->pages ? -1 : 1;
        if (by == BREAKDOWN_BY_GFP)
                return a->kind.gfp_flags < b->kind.gfp_flags ? -1 : a->kind.gfp_flags > b->kind.gfp_flags;
        if (by == BREAKDOWN_BY_MIGRATETYPE)
                return a->kind.migrate_type - b->kind.migrate_type;
        return a->kind.zone - b->kind.zone;
}

static json_t *row_json(Accounting *a, BreakdownBy by, const Row *row) {
        const ViewPageKind *k = row->known ? &row->kind : NULL;
        json_t *order = json_null(), *gfp = json_null(), *mt = json_null(), *node = json_null(), *zone = json_null();
        char key[512] = "[unknown]", hex[24];

        if (k)
                switch (by) {
                case BREAKDOWN_BY_ORDER:
                        (void) snprintf(key, sizeof(key), "%u", (unsigned) k->order);
                        order = json_integer(k->order);
                        break;
                case BREAKDOWN_BY_GFP:
                        (void) view_gfp_text(a, k->gfp_flags, key, sizeof(key));
                        (void) snprintf(hex, sizeof(hex), "0x%" PRIx64, k->gfp_flags);
                        gfp = json_string(hex);
                        break;
                case BREAKDOWN_BY_MIGRATETYPE:
                        if (k->migrate_type >= 0) {
                                const char *name = view_migrate_type_name(k->migrate_type);
                                if (name)
                                        (void) snprintf(key, sizeof(key), "%s", name);
                                else
                                        (void) snprintf(key, sizeof(key), "type %d", (int) k->migrate_type);
                                mt = json_integer(k->migrate_type);
                        }
                        break;
                default: {
                        int32_t numa_node;
                        const char *zone_name;
                        if (view_zone(a, k->zone, &numa_node, &zone_name)) {
                                (void) snprintf(key, sizeof(key), *zone_name ? "node %d %s" : "node %d", (int) numa_node,
                                                zone_name);
                                node = json_integer(numa_node);
                                zone = *zone_name ? utf8_json_string(zone_name) : json_null();
                        }
                        break;
                }
                }
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:I}",
                         "key", utf8_json_string(key),
                         "order", order ?: json_null(),
                         "gfpFlags", gfp ?: json_null(),
                         "migrateType", mt ?: json_null(),
                         "node", node ?: json_null(),
                         "zone", zone ?: json_null(),
                         "pages", (json_int_t) row->pages);
}

/* The rows of the kinds' pages, at most limit (0: all) into a new array; *ret_other the pages of the rest. */
static int rows_json(Accounting *a, BreakdownBy by, const KindPages *k, size_t limit, json_t **ret,
                uint64_t *ret_other) {
        _cleanup_free_ Row *rows = calloc(MAX(k->n_kinds, (size_t) 1), sizeof(Row));
        json_auto_t *list = json_array();
        size_t n = 0;

        if (!rows || !list)
                return -ENOMEM;
        for (uint32_t id = 0; id < k->n_kinds; id++) {
                if (k->pages[id] == 0)
                        continue;
                ViewPageKind kind = {};
                bool known = view_page_kind(a, id, &kind) && kind.known;
                /* Few kinds (a few hundred at most): a scan for the row is cheaper than a hash. */
                size_t r = 0;
                while (r < n && !same_key(by, &rows[r], known, &kind))
                        r++;
                if (r == n)
                        rows[n++] = (Row) { .known = known, .kind = kind };
                rows[r].pages += k->pages[id];
        }
        qsort_r(rows, n, sizeof(Row), compare_rows, &by);
        uint64_t other = 0;
        for (size_t i = 0; i < n; i++) {
                if (limit > 0 && i >= limit) {
                        other += rows[i].pages;
                        continue;
                }
                json_t *o = row_json(a, by, &rows[i]);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        if (ret_other)
                *ret_other = other;
        return 0;
}

static int kind_pages_init(Accounting *a, KindPages *k) {
        *k = (KindPages) {
                .n_kinds = view_page_kind_count(a),
        };
        k->pages = calloc(MAX(k->n_kinds, (size_t) 1), sizeof(uint64_t));
        return k->pages ? 0 : -ENOMEM;
}

int breakdown_query_json(Accounting *a, const BreakdownQuery *q, json_t **ret) {
        json_auto_t *rows = NULL;
        char scope[256] = "[all]";
        uint64_t other = 0;
        ViewScope of = VIEW_SCOPE_EVERY;
        KindPages k;
        int r;

        assert(a && q && ret);

        if (q->by < 0 || q->by >= _BREAKDOWN_BY_MAX)
                return -EINVAL;
        r = kind_pages_init(a, &k);
        if (r < 0)
                return r;
        if (q->pid >= 0) {
                uint32_t process = view_find_process(a, q->pid);
                ViewTask t;
                if (process == VIEW_TASK_NONE || !view_task(a, process, &t)) {
                        r = -ESRCH;
                        goto finish;
                }
                (void) snprintf(scope, sizeof(scope), "[pid %d %s]", (int) q->pid, t.comm);
                of = (ViewScope) { VIEW_SCOPE_PROCESS, process };
        } else if (q->unit) {
                of = (ViewScope) { VIEW_SCOPE_UNIT, view_find_unit_shown(a, q->unit) };
                if (of.id == VIEW_UNIT_NONE) {
                        r = -ENXIO;
                        goto finish;
                }
                (void) snprintf(scope, sizeof(scope), "[unit %s]", q->unit);
        } else if (q->module) {
                uint16_t module = view_find_module_shown(a, q->module);
                if (module == VIEW_MODULE_NONE) {
                        r = -ENOENT;
                        goto finish;
                }
                (void) snprintf(scope, sizeof(scope), "[module %s]", q->module);
                of = (ViewScope) { VIEW_SCOPE_MODULE, module };
        }
        view_foreach_cell(a, of, add_cell, &k);

        r = rows_json(a, q->by, &k, q->limit, &rows, &other);
        if (r < 0)
                goto finish;
        *ret = json_pack("{s:s, s:o, s:I, s:O, s:I, s:b, s:b}",
                         "by", breakdown_by_to_string(q->by),
                         "scope", utf8_json_string(scope),
                         "totalPages", (json_int_t) k.total,
                         "rows", rows,
                         "otherPages", (json_int_t) other,
                         "gfpNamesKnown", view_gfp_names_known(a),
                         "zonesKnown", view_zones_known(a));
        r = *ret ? 0 : -ENOMEM;
finish:
        free(k.pages);
        return r;
}
