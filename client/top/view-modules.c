/* SPDX-License-Identifier: MIT */

/* The modules view: Top's modules (vmlinux and each kernel module), a list. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "reply.h"
#include "view-class.h"

/* Its sort keys, in the order 's' cycles them. */
typedef enum TopModuleColumn {
        TOP_MODULE_NAME,
        TOP_MODULE_CURRENT,
        TOP_MODULE_PEAK,
        _TOP_MODULE_COLUMN_MAX,
} TopModuleColumn;

typedef struct TopModule {
        char *name;             /* owned */
        uint64_t current_pages, peak_pages;
        bool loaded;
        TopTrend trend;
} TopModule;

/* The view's rows (m->rows[TOP_VIEW_MODULES]): Top's modules; an item, and a row's value, is an index
 * into them. */
typedef struct Modules {
        TopModule *modules;     /* owned, n */
        size_t n;
} Modules;

static const char *const sort_names[_TOP_MODULE_COLUMN_MAX] = {
        [TOP_MODULE_NAME] = "name",
        [TOP_MODULE_CURRENT] = "current",
        [TOP_MODULE_PEAK] = "peak",
};

enum { COL_NAME, COL_CURRENT, COL_CURRENT_PAGES, COL_PEAK, COL_PEAK_PAGES, COL_STATE, _COL_MAX };

static const TopColumn columns[_COL_MAX] = {
        [COL_NAME] = { "MODULE", 24, TOP_MODULE_NAME, TOP_COLUMN_LEFT },
        [COL_CURRENT] = { "CURRENT", 10, TOP_MODULE_CURRENT, TOP_COLUMN_TREND },
        [COL_CURRENT_PAGES] = { "PAGES", 10, -1, 0 },
        [COL_PEAK] = { "PEAK", 10, TOP_MODULE_PEAK, 0 },
        [COL_PEAK_PAGES] = { "PAGES", 10, -1, 0 },
        [COL_STATE] = { "STATE", 0, -1, TOP_COLUMN_LEFT },
};

static Modules *modules_of(const TopModel *m) {
        return m->rows[TOP_VIEW_MODULES];
}

/* The module of a value, NULL out of range. */
static const TopModule *module_of(const TopModel *m, size_t value) {
        const Modules *modules = modules_of(m);
        return value < modules->n ? &modules->modules[value] : NULL;
}

/* Empties them: before a read, and at the end. */
static void modules_clear(void *rows) {
        Modules *modules = rows;

        for (size_t i = 0; i < modules->n; i++)
                free(modules->modules[i].name);
        modules->modules = mfree_ptr(modules->modules);
        modules->n = 0;
}

static int modules_read(TopModel *m, json_t *reply) {
        json_t *array = reply_array(reply, "modules"), *e;
        Modules *modules = modules_of(m);
        size_t i;

        modules_clear(modules);
        modules->modules = calloc(MAX(json_array_size(array), (size_t) 1), sizeof(TopModule));
        if (!modules->modules)
                return -ENOMEM;
        json_array_foreach(array, i, e) {
                TopModule *mod = &modules->modules[modules->n++];
                *mod = (TopModule) {
                        .current_pages = reply_count(e, "currentPages"),
                        .peak_pages = reply_count(e, "peakPages"),
                        .loaded = reply_bool(e, "loaded", true),
                };
                int r = top_strdup_or_null(reply_string(e, "name") ?: "?", &mod->name);
                if (r < 0)
                        return r;
        }
        return 0;
}

static size_t modules_n_items(const TopModel *m) {
        return modules_of(m)->n;
}

static char *modules_key(const TopModel *m, size_t value) {
        return strdup(module_of(m, value)->name);
}

static int modules_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const TopModule *x = module_of(m, a), *y = module_of(m, b);
        int c;

        switch (sort) {
        case TOP_MODULE_NAME:
                c = strcmp(x->name, y->name);
                break;
        case TOP_MODULE_PEAK:
                c = top_compare_u64_desc(x->peak_pages, y->peak_pages);
                break;
        default:
                c = top_compare_u64_desc(x->current_pages, y->current_pages);
        }
        return c ?: strcmp(x->name, y->name);
}

static bool modules_matches(const TopModel *m, size_t item, const char *filter) {
        return top_text_matches(module_of(m, item)->name, filter);
}

static uint64_t modules_current(const TopModel *m, size_t item) {
        return module_of(m, item)->current_pages;
}

static void modules_set_trend(TopModel *m, size_t item, TopTrend trend) {
        modules_of(m)->modules[item].trend = trend;
}

static int modules_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const TopModule *mod = module_of(m, value);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        int r;

        if ((r = top_field(&fields[COL_NAME], "%s", mod->name)) < 0 ||
            (r = top_field(&fields[COL_CURRENT], "%s", format_pages(cur, sizeof(cur), mod->current_pages, m->page_size))) < 0 ||
            (r = top_field(&fields[COL_CURRENT_PAGES], "%" PRIu64, mod->current_pages)) < 0 ||
            (r = top_field(&fields[COL_PEAK], "%s", format_pages(peak, sizeof(peak), mod->peak_pages, m->page_size))) < 0 ||
            (r = top_field(&fields[COL_PEAK_PAGES], "%" PRIu64, mod->peak_pages)) < 0)
                return r;
        return top_field(&fields[COL_STATE], "%s", mod->loaded ? "loaded" : "unloaded");
}

static TopRowLook modules_look(const TopModel *m, size_t value) {
        const TopModule *mod = module_of(m, value);
        return (TopRowLook) { .state = mod->loaded ? TOP_ROW_PLAIN : TOP_ROW_GONE,
                              .high = top_model_is_high(m, mod->current_pages), .trend = mod->trend };
}

static bool modules_owner(const TopModel *m, size_t value, TopOwner *ret) {
        const TopModule *mod = module_of(m, value);

        if (!mod)
                return false;
        *ret = (TopOwner) { .pid = -1, .module = mod->name };
        return true;
}

const TopViewClass top_view_modules = {
        .name = "modules",
        .title = "Modules",
        .sort_names = sort_names,
        .n_sorts = _TOP_MODULE_COLUMN_MAX,
        .default_sort = TOP_MODULE_CURRENT,
        .columns = columns,
        .n_columns = _COL_MAX,
        .tree = TOP_TREE_NONE,
        .rows_size = sizeof(Modules),
        .rows_done = modules_clear,
        .required = "modules",
        .read = modules_read,
        .n_items = modules_n_items,
        .key = modules_key,
        .compare = modules_compare,
        .matches = modules_matches,
        .current = modules_current,
        .set_trend = modules_set_trend,
        .write = modules_write,
        .look = modules_look,
        .owner = modules_owner,
        .enter = top_model_open_owner,
};
