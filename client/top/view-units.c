/* SPDX-License-Identifier: MIT */

/*
 * The units view: Top's systemd units (memstrackd's cgroups named after units), a list or a tree by
 * slice as systemd-cgls draws it. In the tree a row's value is a unit (below the number of units) or a
 * slice (that number + k: slice k), which sums the units below it.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "reply.h"
#include "view-class.h"

/* Unit names are kernel strings (cgroup paths for cgroups outside systemd's naming): escaped, and cut to
 * their column so the figures after them stay aligned; 28 columns keep a whole row within 80. */
#define TOP_UNIT_NAME_WIDTH 28

/* Its sort keys, in the order 's' cycles them. */
typedef enum TopUnitColumn {
        TOP_UNIT_NAME,
        TOP_UNIT_CURRENT,
        TOP_UNIT_PEAK,
        TOP_UNIT_TASKS,
        _TOP_UNIT_COLUMN_MAX,
} TopUnitColumn;

typedef struct TopUnit {
        char *name;             /* owned */
        char *cgroup;           /* owned, NULL if unknown: the path the units tree hangs it by */
        uint64_t current_pages, peak_pages, tasks;
        bool live;
        TopTrend trend;
} TopUnit;

/* A slice in the units tree: a cgroup path component ending in ".slice" above some unit (systemd-cgls's
 * tree). Its figures are its units' sums; it is a unit of its own too when the daemon listed one of the
 * same path (pages charged to the slice's own cgroup), whose row it then is. */
typedef struct TopSlice {
        char *path;             /* owned: "/user.slice/user-1000.slice" */
        const char *name;       /* the last component, in path */
        uint64_t current_pages, tasks;
} TopSlice;

/* The view's rows (m->rows[TOP_VIEW_UNITS]): Top's units, an item is an index into them; and the slices
 * the tree found above the units shown. */
typedef struct Units {
        TopUnit *units;         /* owned, n */
        size_t n;
        bool listed;            /* the reply had units: false from a memstrackd without them */
        TopSlice *slices;       /* owned, n_slices: made by the tree's layout, dropped with the units */
        size_t n_slices;
} Units;

static const char *const sort_names[_TOP_UNIT_COLUMN_MAX] = {
        [TOP_UNIT_NAME] = "name",
        [TOP_UNIT_CURRENT] = "current",
        [TOP_UNIT_PEAK] = "peak",
        [TOP_UNIT_TASKS] = "tasks",
};

enum { COL_NAME, COL_CURRENT, COL_CURRENT_PAGES, COL_PEAK, COL_TASKS, COL_STATE, _COL_MAX };

static const TopColumn columns[_COL_MAX] = {
        /* In the tree the name follows its lines to the slice above. */
        [COL_NAME] = { "UNIT", TOP_UNIT_NAME_WIDTH, TOP_UNIT_NAME, TOP_COLUMN_LEFT | TOP_COLUMN_TREE },
        [COL_CURRENT] = { "CURRENT", 10, TOP_UNIT_CURRENT, TOP_COLUMN_TREND },
        [COL_CURRENT_PAGES] = { "PAGES", 10, -1, 0 },
        [COL_PEAK] = { "PEAK", 10, TOP_UNIT_PEAK, 0 },
        [COL_TASKS] = { "TASKS", 7, TOP_UNIT_TASKS, 0 },
        [COL_STATE] = { "STATE", 0, -1, TOP_COLUMN_LEFT },
};

static Units *units_of(const TopModel *m) {
        return m->rows[TOP_VIEW_UNITS];
}

/* The unit of a value, NULL for a slice or out of range. */
static const TopUnit *unit_of(const TopModel *m, size_t value) {
        const Units *units = units_of(m);
        return value < units->n ? &units->units[value] : NULL;
}

/* The slice of a value, NULL for a unit or out of range. */
static const TopSlice *slice_of(const TopModel *m, size_t value) {
        const Units *units = units_of(m);

        if (value < units->n || value == SIZE_MAX)
                return NULL;
        return value - units->n < units->n_slices ? &units->slices[value - units->n] : NULL;
}

static void clear_slices(Units *units) {
        for (size_t i = 0; i < units->n_slices; i++)
                free(units->slices[i].path);
        units->slices = mfree_ptr(units->slices);
        units->n_slices = 0;
}

/* Empties them: before a read, and at the end. The slices go with the units they were made of. */
static void units_clear(void *rows) {
        Units *units = rows;

        clear_slices(units);
        for (size_t i = 0; i < units->n; i++) {
                free(units->units[i].name);
                free(units->units[i].cgroup);
        }
        units->units = mfree_ptr(units->units);
        units->n = 0;
        units->listed = false;
}

/* Optional: a memstrackd from before units sends none, and the units view says so. */
static int units_read(TopModel *m, json_t *reply) {
        json_t *array = reply_array(reply, "units"), *e;
        Units *units = units_of(m);
        size_t i;
        int r;

        units_clear(units);
        units->units = calloc(MAX(json_array_size(array), (size_t) 1), sizeof(TopUnit));
        if (!units->units)
                return -ENOMEM;
        json_array_foreach(array, i, e) {
                TopUnit *u = &units->units[units->n++];
                *u = (TopUnit) {
                        .current_pages = reply_count(e, "currentPages"),
                        .peak_pages = reply_count(e, "peakPages"),
                        .tasks = reply_count(e, "tasks"),
                        .live = reply_bool(e, "live", true),
                };
                if ((r = top_strdup_or_null(reply_string(e, "name") ?: "?", &u->name)) < 0 ||
                    (r = top_strdup_or_null(reply_string(e, "cgroup"), &u->cgroup)) < 0)
                        return r;
        }
        units->listed = array != NULL;
        return 0;
}

static size_t units_n_items(const TopModel *m) {
        return units_of(m)->n;
}

static char *units_key(const TopModel *m, size_t value) {
        const TopSlice *slice = slice_of(m, value);
        char *key;

        if (asprintf(&key, slice ? "slice %s" : "unit %s", slice ? slice->path : unit_of(m, value)->name) < 0)
                return NULL;
        return key;
}

static int compare_units(const TopUnit *x, const TopUnit *y, unsigned sort) {
        int c;

        switch (sort) {
        case TOP_UNIT_NAME:
                c = strcmp(x->name, y->name);
                break;
        case TOP_UNIT_PEAK:
                c = top_compare_u64_desc(x->peak_pages, y->peak_pages);
                break;
        case TOP_UNIT_TASKS:
                c = top_compare_u64_desc(x->tasks, y->tasks);
                break;
        default:
                c = top_compare_u64_desc(x->current_pages, y->current_pages);
        }
        if (c == 0)
                c = top_compare_u64_desc(x->current_pages, y->current_pages);
        return c ?: strcmp(x->name, y->name);
}

static int units_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const TopUnit *xu = unit_of(m, a), *yu = unit_of(m, b);
        const TopSlice *xs = slice_of(m, a), *ys = slice_of(m, b);

        if (xu && yu)
                return compare_units(xu, yu, sort);
        /* A slice sorts by its sum of current pages (or its name), before a unit of the same size. */
        const char *xn = xu ? xu->name : xs->name, *yn = yu ? yu->name : ys->name;
        uint64_t xc = xu ? xu->current_pages : xs->current_pages, yc = yu ? yu->current_pages : ys->current_pages;
        int c = sort == TOP_UNIT_NAME ? strcmp(xn, yn) : top_compare_u64_desc(xc, yc);
        if (c == 0)
                c = (int) !!xu - (int) !!yu;
        return c ?: strcmp(xn, yn);
}

static bool units_matches(const TopModel *m, size_t item, const char *filter) {
        return top_text_matches(unit_of(m, item)->name, filter);
}

static bool has_suffix(const char *s, size_t len, const char *suffix) {
        size_t k = strlen(suffix);
        return len >= k && strncmp(s + len - k, suffix, k) == 0;
}

/* The slice of this path prefix, created if new; SIZE_MAX on OOM. */
static size_t slice_intern(Units *units, const char *path, size_t len) {
        for (size_t i = 0; i < units->n_slices; i++)
                if (strlen(units->slices[i].path) == len && strncmp(units->slices[i].path, path, len) == 0)
                        return i;
        TopSlice *s = reallocarray(units->slices, units->n_slices + 1, sizeof(TopSlice));
        if (!s)
                return SIZE_MAX;
        units->slices = s;
        char *copy = strndup(path, len);
        if (!copy)
                return SIZE_MAX;
        const char *slash = strrchr(copy, '/');
        units->slices[units->n_slices] = (TopSlice) { .path = copy, .name = slash ? slash + 1 : copy };
        return units->n_slices++;
}

/* The units tree (systemd-cgls): each unit under the slices of its cgroup path, the slices under theirs.
 * A unit that is a slice itself (pages of the slice's own cgroup) is that slice's row. Units without a
 * cgroup, or without a slice in it ("/init.scope", "[removed]"), are roots. The slices sum the units shown. */
static int units_forest(TopModel *m, const size_t *items, size_t n_items, TopForest *ret) {
        Units *units = units_of(m);
        _cleanup_free_ size_t *unit_slice = NULL, *values = NULL, *parent = NULL;

        clear_slices(units);
        unit_slice = calloc(MAX(n_items, (size_t) 1), sizeof(size_t));
        if (!unit_slice)
                return -ENOMEM;
        /* Slices and each shown unit's innermost slice; slice parents come from their own paths below. */
        for (size_t i = 0; i < n_items; i++) {
                const TopUnit *u = &units->units[items[i]];
                const char *path = u->cgroup;
                size_t deepest = SIZE_MAX;

                unit_slice[i] = SIZE_MAX;
                if (!path || path[0] != '/')
                        continue;
                for (const char *c = path + 1; *c;) {
                        const char *end = strchrnul(c, '/');
                        size_t len = (size_t) (end - path);
                        bool is_unit = (size_t) (end - c) == strlen(u->name) && strncmp(c, u->name, end - c) == 0;
                        if (has_suffix(path, len, ".slice")) {
                                size_t k = slice_intern(units, path, len);
                                if (k == SIZE_MAX)
                                        return -ENOMEM;
                                units->slices[k].current_pages += u->current_pages;
                                units->slices[k].tasks += u->tasks;
                                if (is_unit) {
                                        /* This unit is the slice: its row is the slice's. */
                                        deepest = SIZE_MAX - 1;
                                        break;
                                }
                                deepest = k;
                        }
                        /* Cgroups below the unit (a container's own) count for the unit. */
                        if (is_unit || !*end)
                                break;
                        c = end + 1;
                }
                unit_slice[i] = deepest;
        }

        size_t n = 0;
        values = calloc(MAX(n_items + units->n_slices, (size_t) 1), sizeof(size_t));
        parent = calloc(MAX(n_items + units->n_slices, (size_t) 1), sizeof(size_t));
        if (!values || !parent)
                return -ENOMEM;
        /* Nodes: the slices first (node k is slice k), then the units that are not slices. */
        for (size_t k = 0; k < units->n_slices; k++) {
                const char *path = units->slices[k].path, *slash = strrchr(path, '/');
                size_t up = SIZE_MAX;
                for (size_t j = 0; slash && slash != path && j < units->n_slices; j++)
                        if (strlen(units->slices[j].path) == (size_t) (slash - path) &&
                            strncmp(units->slices[j].path, path, slash - path) == 0)
                                up = j;
                values[n] = units->n + k;
                parent[n++] = up;
        }
        for (size_t i = 0; i < n_items; i++) {
                if (unit_slice[i] == SIZE_MAX - 1)
                        continue;
                values[n] = items[i];
                parent[n++] = unit_slice[i];
        }
        *ret = (TopForest) { .values = TAKE_PTR(values), .parent = TAKE_PTR(parent), .n = n };
        return 0;
}

static uint64_t units_current(const TopModel *m, size_t item) {
        return unit_of(m, item)->current_pages;
}

static void units_set_trend(TopModel *m, size_t item, TopTrend trend) {
        units_of(m)->units[item].trend = trend;
}

static int units_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const TopUnit *u = unit_of(m, value);
        const TopSlice *slice = slice_of(m, value);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *guides = NULL, *full = NULL;
        int r;

        if (!u && !slice)
                return -EINVAL;
        guides = top_tree_guides(line, utf8);
        clean = format_sanitize(u ? u->name : slice->name);
        if (!guides || !clean || top_field(&full, "%s%s", guides, clean) < 0)
                return -ENOMEM;
        fields[COL_NAME] = format_ellipsize(full, TOP_UNIT_NAME_WIDTH);
        if (!fields[COL_NAME])
                return -ENOMEM;
        /* A slice shows its units' sums. */
        uint64_t current = u ? u->current_pages : slice->current_pages;
        if ((r = top_field(&fields[COL_CURRENT], "%s", format_pages(cur, sizeof(cur), current, m->page_size))) < 0 ||
            (r = top_field(&fields[COL_CURRENT_PAGES], "%" PRIu64, current)) < 0 ||
            (r = top_field(&fields[COL_PEAK], "%s", u ? format_pages(peak, sizeof(peak), u->peak_pages, m->page_size) : "-")) < 0 ||
            (r = top_field(&fields[COL_TASKS], "%" PRIu64, u ? u->tasks : slice->tasks)) < 0)
                return r;
        return top_field(&fields[COL_STATE], "%s", !u ? "slice" : u->live ? "live" : "removed");
}

static TopRowLook units_look(const TopModel *m, size_t value) {
        const TopUnit *u = unit_of(m, value);

        if (!u)
                return (TopRowLook) { .state = TOP_ROW_GROUP };
        return (TopRowLook) { .state = u->live ? TOP_ROW_PLAIN : TOP_ROW_GONE,
                              .high = top_model_is_high(m, u->current_pages), .trend = u->trend };
}

static const char *units_empty_note(const TopModel *m) {
        /* An older memstrackd sends no units at all: not the same as none holding pages. */
        if (!m->have_data || units_of(m)->listed)
                return NULL;
        return "memstrackd does not report units (a version without them)";
}

/* A unit's own row; a slice's row has no owner of its own. */
static bool units_owner(const TopModel *m, size_t value, TopOwner *ret) {
        const TopUnit *u = unit_of(m, value);

        if (!u || !u->name)
                return false;
        *ret = (TopOwner) { .pid = -1, .unit = u->name };
        return true;
}

const TopViewClass top_view_units = {
        .name = "units",
        .title = "Units",
        .sort_names = sort_names,
        .n_sorts = _TOP_UNIT_COLUMN_MAX,
        .default_sort = TOP_UNIT_CURRENT,
        .columns = columns,
        .n_columns = _COL_MAX,
        .tree = TOP_TREE_OPTIONAL,
        .rows_size = sizeof(Units),
        .rows_done = units_clear,
        .read = units_read,
        .n_items = units_n_items,
        .key = units_key,
        .compare = units_compare,
        .matches = units_matches,
        .forest = units_forest,
        .current = units_current,
        .set_trend = units_set_trend,
        .write = units_write,
        .look = units_look,
        .empty_note = units_empty_note,
        .owner = units_owner,
        .enter = top_model_open_owner,
        .explains = true,
};
