/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model.h"
#include "reply.h"

/* StackTree limits for the live view: deep enough for kernel stacks, wide enough to browse. */
#define TOP_STACK_DEPTH 64
#define TOP_STACK_CHILDREN 32

static const char *const task_column_names[_TOP_TASK_COLUMN_MAX] = {
        "pid", "comm", "current", "peak", "allocs", "frees", "state",
};
static const char *const module_column_names[_TOP_MODULE_COLUMN_MAX] = { "name", "current", "peak" };
static const char *const stack_column_names[_TOP_STACK_COLUMN_MAX] = { "current", "peak" };
static const char *const unit_column_names[_TOP_UNIT_COLUMN_MAX] = { "name", "current", "peak", "tasks" };
static const char *const slab_column_names[_TOP_SLAB_COLUMN_MAX] = {
        "site", "bytes", "objects", "waste", "peak", "allocs",
};

static void stack_node_done(TopStackNode *n) {
        for (size_t i = 0; i < n->n_children; i++)
                stack_node_done(&n->children[i]);
        free(n->children);
        free(n->label);
}

static void stack_node_free(TopStackNode *n) {
        if (!n)
                return;
        stack_node_done(n);
        free(n);
}

static void clear_data(TopModel *m) {
        for (size_t i = 0; i < m->n_tasks; i++) {
                free(m->tasks[i].comm);
                free(m->tasks[i].cmdline);
        }
        m->tasks = mfree_ptr(m->tasks);
        m->n_tasks = 0;
        for (size_t i = 0; i < m->n_modules; i++)
                free(m->modules[i].name);
        m->modules = mfree_ptr(m->modules);
        m->n_modules = 0;
        for (size_t i = 0; i < m->n_units; i++)
                free(m->units[i].name);
        m->units = mfree_ptr(m->units);
        m->n_units = 0;
        m->have_units = false;
        for (size_t i = 0; i < m->n_slab_sites; i++)
                free(m->slab_sites[i].name);
        m->slab_sites = mfree_ptr(m->slab_sites);
        m->n_slab_sites = 0;
        m->have_slab = false;
}

static void clear_stack_rows(TopModel *m) {
        for (size_t i = 0; i < m->n_stack_rows; i++)
                free(m->stack_rows[i].path);
        m->stack_rows = mfree_ptr(m->stack_rows);
        m->n_stack_rows = 0;
}

int top_model_new(uint64_t page_size, TopModel **ret) {
        TopModel *m = calloc(1, sizeof(TopModel));

        if (!m)
                return -ENOMEM;
        m->page_size = page_size ?: 4096;
        m->scope_pid = -1;
        m->selected_pid = -1;
        m->sort[TOP_VIEW_TASKS] = TOP_TASK_CURRENT;
        m->sort[TOP_VIEW_MODULES] = TOP_MODULE_CURRENT;
        m->sort[TOP_VIEW_STACKS] = TOP_STACK_CURRENT;
        m->sort[TOP_VIEW_UNITS] = TOP_UNIT_CURRENT;
        m->sort[TOP_VIEW_SLAB] = TOP_SLAB_BYTES;
        *ret = m;
        return 0;
}

TopModel *top_model_free(TopModel *m) {
        if (!m)
                return NULL;
        clear_stack_rows(m);
        free(m->slab_rows);
        free(m->unit_rows);
        free(m->module_rows);
        free(m->task_rows);
        for (size_t i = 0; i < m->n_expanded; i++)
                free(m->expanded[i]);
        free(m->expanded);
        free(m->selected_path);
        free(m->selected_unit);
        free(m->selected_slab_site);
        free(m->selected_module);
        free(m->filter_edit);
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                free(m->filter[v]);
        free(m->scope_unit);
        free(m->scope_module);
        stack_node_free(m->stack_root);
        clear_data(m);
        free(m);
        return NULL;
}

static int dup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* Top's slab field: absent or null when memstrackd does not trace slab objects. */
static int update_slab(TopModel *m, json_t *slab) {
        json_t *rows = reply_array(slab, "rows"), *e;
        size_t i;

        if (!slab)
                return 0;
        m->slab_sites = calloc(MAX(json_array_size(rows), (size_t) 1), sizeof(TopSlabSite));
        if (!m->slab_sites)
                return -ENOMEM;
        json_array_foreach(rows, i, e) {
                TopSlabSite *site = &m->slab_sites[m->n_slab_sites++];
                *site = (TopSlabSite) {
                        .objects = reply_count(e, "liveObjects"),
                        .bytes = reply_count(e, "liveBytesAllocated"),
                        .requested = reply_count(e, "liveBytesRequested"),
                        .peak_bytes = reply_count(e, "peakLiveBytes"),
                        .allocs = reply_count(e, "allocs"),
                        .frees = reply_count(e, "frees"),
                        .waste_percent = reply_double(e, "wastePercent", 0),
                };
                int r = dup_or_null(reply_string(e, "name") ?: "?", &site->name);
                if (r < 0)
                        return r;
        }
        m->have_slab = true;
        m->slab_objects = reply_count(slab, "liveObjects");
        m->slab_bytes = reply_count(slab, "liveBytesAllocated");
        m->slab_peak_bytes = reply_count(slab, "peakLiveBytes");
        m->slab_waste_percent = reply_double(slab, "wastePercent", 0);
        return 0;
}

int top_model_update(TopModel *m, json_t *reply) {
        json_t *tasks = reply_array(reply, "tasks"), *modules = reply_array(reply, "modules"), *e;
        /* Optional: a memstrackd from before units sends none, and the units view says so. */
        json_t *units = reply_array(reply, "units");
        size_t i;
        int r;

        assert(m);

        if (m->paused)
                return 0;
        if (!tasks || !modules)
                return -EBADMSG;

        clear_data(m);
        m->tasks = calloc(MAX(json_array_size(tasks), (size_t) 1), sizeof(TopTask));
        m->modules = calloc(MAX(json_array_size(modules), (size_t) 1), sizeof(TopModule));
        m->units = calloc(MAX(json_array_size(units), (size_t) 1), sizeof(TopUnit));
        if (!m->tasks || !m->modules || !m->units)
                return -ENOMEM;
        json_array_foreach(tasks, i, e) {
                TopTask *t = &m->tasks[m->n_tasks++];
                *t = (TopTask) {
                        .pid = reply_int(e, "pid", -1),
                        .current_pages = reply_count(e, "currentPages"),
                        .peak_pages = reply_count(e, "peakPages"),
                        .allocs = reply_count(e, "allocs"),
                        .frees = reply_count(e, "frees"),
                        .exited = reply_bool(e, "exited", false),
                };
                if ((r = dup_or_null(reply_string(e, "comm") ?: "?", &t->comm)) < 0 ||
                    (r = dup_or_null(reply_string(e, "cmdline"), &t->cmdline)) < 0)
                        return r;
        }
        json_array_foreach(modules, i, e) {
                TopModule *mod = &m->modules[m->n_modules++];
                *mod = (TopModule) {
                        .current_pages = reply_count(e, "currentPages"),
                        .peak_pages = reply_count(e, "peakPages"),
                        .loaded = reply_bool(e, "loaded", true),
                };
                r = dup_or_null(reply_string(e, "name") ?: "?", &mod->name);
                if (r < 0)
                        return r;
        }
        json_array_foreach(units, i, e) {
                TopUnit *u = &m->units[m->n_units++];
                *u = (TopUnit) {
                        .current_pages = reply_count(e, "currentPages"),
                        .peak_pages = reply_count(e, "peakPages"),
                        .tasks = reply_count(e, "tasks"),
                        .live = reply_bool(e, "live", true),
                };
                r = dup_or_null(reply_string(e, "name") ?: "?", &u->name);
                if (r < 0)
                        return r;
        }
        m->have_units = units != NULL;
        r = update_slab(m, reply_object(reply, "slab"));
        if (r < 0)
                return r;
        m->tracked_pages = reply_count(reply, "trackedPages");
        m->peak_tracked_pages = reply_count(reply, "peakTrackedPages");
        m->lost_events = reply_count(reply, "lostEvents");
        m->stacks_truncated = reply_count(reply, "stacksTruncated");
        m->uptime_usec = reply_count(reply, "uptimeUsec");
        m->events_per_second = reply_double(reply, "eventsPerSecond", 0);
        m->have_data = true;
        return top_model_rebuild(m);
}

static int parse_stack_node(const json_t *j, TopStackNode *n, unsigned depth) {
        json_t *children = reply_array(j, "children"), *c;
        size_t i;
        int r;

        *n = (TopStackNode) {
                .current_pages = reply_count(j, "currentPages"),
                .peak_pages = reply_node_peak(j),
                .truncated = reply_count(j, "truncatedChildren"),
        };
        n->label = reply_frame_label(j);
        if (!n->label)
                return -ENOMEM;
        /* The daemon sends at most 255 levels; anything deeper is cut, not recursed into. */
        if (depth >= 256 || json_array_size(children) == 0)
                return 0;
        n->children = calloc(json_array_size(children), sizeof(TopStackNode));
        if (!n->children)
                return -ENOMEM;
        json_array_foreach(children, i, c) {
                r = parse_stack_node(c, &n->children[n->n_children++], depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

int top_model_update_stacks(TopModel *m, json_t *reply) {
        TopStackNode *root;
        int r;

        assert(m);

        if (m->paused)
                return 0;
        root = calloc(1, sizeof(TopStackNode));
        if (!root)
                return -ENOMEM;
        r = parse_stack_node(reply_object(reply, "root"), root, 0);
        if (r < 0) {
                stack_node_free(root);
                return r;
        }
        stack_node_free(m->stack_root);
        m->stack_root = root;
        m->stack_sample_interval = reply_count(reply, "stackSampleInterval");
        return top_model_rebuild(m);
}

json_t *top_model_stacks_parameters(const TopModel *m) {
        json_t *p = json_pack("{s:i, s:i, s:s}", "maxDepth", TOP_STACK_DEPTH, "maxChildren", TOP_STACK_CHILDREN,
                              "sortBy", m->sort[TOP_VIEW_STACKS] == TOP_STACK_PEAK ? "peak" : "current");

        if (!p)
                return NULL;
        if (m->scope_pid >= 0 && json_object_set_new(p, "pid", json_integer((json_int_t) m->scope_pid)) < 0)
                return json_decref(p), NULL;
        if (m->scope_module && json_object_set_new(p, "module", json_string(m->scope_module)) < 0)
                return json_decref(p), NULL;
        if (m->scope_unit && json_object_set_new(p, "unit", json_string(m->scope_unit)) < 0)
                return json_decref(p), NULL;
        return p;
}

const char *top_model_scope_label(const TopModel *m, char *buf, size_t size) {
        if (m->scope_pid >= 0) {
                const char *comm = NULL;
                for (size_t i = 0; i < m->n_tasks; i++)
                        if (m->tasks[i].pid == m->scope_pid)
                                comm = m->tasks[i].comm;
                (void) snprintf(buf, size, "[pid %" PRIi64 "%s%s]", m->scope_pid, comm ? " " : "", comm ?: "");
        } else if (m->scope_module)
                (void) snprintf(buf, size, "[module %s]", m->scope_module);
        else if (m->scope_unit)
                (void) snprintf(buf, size, "[unit %s]", m->scope_unit);
        else
                (void) snprintf(buf, size, "[all]");
        return buf;
}

size_t top_model_rows(const TopModel *m, TopView v) {
        switch (v) {
        case TOP_VIEW_TASKS:
                return m->n_task_rows;
        case TOP_VIEW_MODULES:
                return m->n_module_rows;
        case TOP_VIEW_STACKS:
                return m->n_stack_rows;
        case TOP_VIEW_UNITS:
                return m->n_unit_rows;
        case TOP_VIEW_SLAB:
                return m->n_slab_rows;
        default:
                return 0;
        }
}

size_t top_model_selected(const TopModel *m, TopView v) {
        return v >= 0 && v < _TOP_VIEW_MAX ? m->selected[v] : 0;
}

const TopTask *top_model_task_row(const TopModel *m, size_t row) {
        return row < m->n_task_rows ? &m->tasks[m->task_rows[row]] : NULL;
}

const TopModule *top_model_module_row(const TopModel *m, size_t row) {
        return row < m->n_module_rows ? &m->modules[m->module_rows[row]] : NULL;
}

const TopUnit *top_model_unit_row(const TopModel *m, size_t row) {
        return row < m->n_unit_rows ? &m->units[m->unit_rows[row]] : NULL;
}

const TopSlabSite *top_model_slab_row(const TopModel *m, size_t row) {
        return row < m->n_slab_rows ? &m->slab_sites[m->slab_rows[row]] : NULL;
}

const TopStackRow *top_model_stack_row(const TopModel *m, size_t row) {
        return row < m->n_stack_rows ? &m->stack_rows[row] : NULL;
}

/* ---- Filtering and sorting -------------------------------------------------------------------------- */

static bool filter_active(const TopModel *m, TopView v) {
        return m->filter[v] && m->filter[v][0];
}

static bool matches(const TopModel *m, TopView v, const char *s) {
        return !filter_active(m, v) || (s && strcasestr(s, m->filter[v]));
}

static int compare_u64_desc(uint64_t a, uint64_t b) {
        return a > b ? -1 : a < b;
}

static int compare_task_rows(const void *a, const void *b, void *userdata) {
        const TopModel *sorting = userdata;
        const TopTask *x = &sorting->tasks[*(const size_t *) a], *y = &sorting->tasks[*(const size_t *) b];
        int c = 0;

        switch (sorting->sort[TOP_VIEW_TASKS]) {
        case TOP_TASK_PID:
                c = x->pid < y->pid ? -1 : x->pid > y->pid;
                break;
        case TOP_TASK_COMM:
                c = strcasecmp(x->comm, y->comm);
                break;
        case TOP_TASK_PEAK:
                c = compare_u64_desc(x->peak_pages, y->peak_pages);
                break;
        case TOP_TASK_ALLOCS:
                c = compare_u64_desc(x->allocs, y->allocs);
                break;
        case TOP_TASK_FREES:
                c = compare_u64_desc(x->frees, y->frees);
                break;
        case TOP_TASK_STATE:
                c = (int) x->exited - (int) y->exited;
                break;
        default:
                c = compare_u64_desc(x->current_pages, y->current_pages);
        }
        if (c == 0)
                c = compare_u64_desc(x->current_pages, y->current_pages);
        if (c == 0)
                c = x->pid < y->pid ? -1 : x->pid > y->pid;
        return c;
}

static int compare_module_rows(const void *a, const void *b, void *userdata) {
        const TopModel *sorting = userdata;
        const TopModule *x = &sorting->modules[*(const size_t *) a], *y = &sorting->modules[*(const size_t *) b];
        int c;

        switch (sorting->sort[TOP_VIEW_MODULES]) {
        case TOP_MODULE_NAME:
                c = strcmp(x->name, y->name);
                break;
        case TOP_MODULE_PEAK:
                c = compare_u64_desc(x->peak_pages, y->peak_pages);
                break;
        default:
                c = compare_u64_desc(x->current_pages, y->current_pages);
        }
        return c ?: strcmp(x->name, y->name);
}

static int compare_unit_rows(const void *a, const void *b, void *userdata) {
        const TopModel *sorting = userdata;
        const TopUnit *x = &sorting->units[*(const size_t *) a], *y = &sorting->units[*(const size_t *) b];
        int c;

        switch (sorting->sort[TOP_VIEW_UNITS]) {
        case TOP_UNIT_NAME:
                c = strcmp(x->name, y->name);
                break;
        case TOP_UNIT_PEAK:
                c = compare_u64_desc(x->peak_pages, y->peak_pages);
                break;
        case TOP_UNIT_TASKS:
                c = compare_u64_desc(x->tasks, y->tasks);
                break;
        default:
                c = compare_u64_desc(x->current_pages, y->current_pages);
        }
        if (c == 0)
                c = compare_u64_desc(x->current_pages, y->current_pages);
        return c ?: strcmp(x->name, y->name);
}

static int compare_slab_rows(const void *a, const void *b, void *userdata) {
        const TopModel *sorting = userdata;
        const TopSlabSite *x = &sorting->slab_sites[*(const size_t *) a], *y = &sorting->slab_sites[*(const size_t *) b];
        int c;

        switch (sorting->sort[TOP_VIEW_SLAB]) {
        case TOP_SLAB_SITE:
                c = strcmp(x->name, y->name);
                break;
        case TOP_SLAB_OBJECTS:
                c = compare_u64_desc(x->objects, y->objects);
                break;
        case TOP_SLAB_WASTE:
                c = x->waste_percent > y->waste_percent ? -1 : x->waste_percent < y->waste_percent;
                break;
        case TOP_SLAB_PEAK:
                c = compare_u64_desc(x->peak_bytes, y->peak_bytes);
                break;
        case TOP_SLAB_ALLOCS:
                c = compare_u64_desc(x->allocs, y->allocs);
                break;
        default:
                c = compare_u64_desc(x->bytes, y->bytes);
        }
        if (c == 0)
                c = compare_u64_desc(x->bytes, y->bytes);
        return c ?: strcmp(x->name, y->name);
}

static int compare_stack_nodes(const void *a, const void *b, void *userdata) {
        const TopModel *sorting = userdata;
        const TopStackNode *x = *(const TopStackNode *const *) a, *y = *(const TopStackNode *const *) b;
        int c = 0;

        if (sorting->sort[TOP_VIEW_STACKS] == TOP_STACK_PEAK)
                c = compare_u64_desc((uint64_t) MAX(x->peak_pages, (int64_t) 0),
                                     (uint64_t) MAX(y->peak_pages, (int64_t) 0));
        if (c == 0)
                c = compare_u64_desc(x->current_pages, y->current_pages);
        /* Equal counts keep the daemon's order: compare positions in the parent's array. */
        return c ?: (x < y ? -1 : x > y);
}

static bool path_expanded(const TopModel *m, const char *path) {
        for (size_t i = 0; i < m->n_expanded; i++)
                if (streq(m->expanded[i], path))
                        return true;
        return false;
}

static bool subtree_matches(const TopModel *m, const TopStackNode *n) {
        if (matches(m, TOP_VIEW_STACKS, n->label))
                return true;
        for (size_t i = 0; i < n->n_children; i++)
                if (subtree_matches(m, &n->children[i]))
                        return true;
        return false;
}

typedef struct RowBuilder {
        TopStackRow *rows;
        size_t n, allocated;
} RowBuilder;

static int add_stack_rows(TopModel *m, RowBuilder *b, const TopStackNode *n, const char *parent_path,
                unsigned depth, bool ancestor_matched) {
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ const TopStackNode **order = NULL;
        bool self_matched = ancestor_matched || matches(m, TOP_VIEW_STACKS, n->label);
        int r;

        /* With a filter: rows on the way to a match, and everything below a match. */
        if (filter_active(m, TOP_VIEW_STACKS) && !self_matched && !subtree_matches(m, n))
                return 0;

        if (parent_path ? asprintf(&path, "%s\x1f%s", parent_path, n->label) < 0 : !(path = strdup(n->label)))
                return -ENOMEM;
        /* The root is always open; with a filter, so is the way down to the matches. */
        bool expanded = depth == 0 || path_expanded(m, path) ||
                        (filter_active(m, TOP_VIEW_STACKS) && !self_matched && n->n_children > 0);

        if (greedy_realloc(&b->rows, &b->allocated, b->n + 1, sizeof(TopStackRow), 64) < 0)
                return -ENOMEM;
        char *row_path = strdup(path);
        if (!row_path)
                return -ENOMEM;
        b->rows[b->n++] = (TopStackRow) { .node = n, .path = row_path, .depth = depth,
                                          .expanded = expanded && n->n_children > 0 };
        if (!expanded || n->n_children == 0)
                return 0;

        order = calloc(n->n_children, sizeof(TopStackNode *));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < n->n_children; i++)
                order[i] = &n->children[i];
        qsort_r(order, n->n_children, sizeof(TopStackNode *), compare_stack_nodes, m);
        for (size_t i = 0; i < n->n_children; i++) {
                r = add_stack_rows(m, b, order[i], path, depth + 1, self_matched && filter_active(m, TOP_VIEW_STACKS));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Index of the row matching the remembered selection, or the old index clamped to the new rows. */
static size_t find_selection(size_t n_rows, size_t old, ssize_t found) {
        if (found >= 0)
                return (size_t) found;
        if (n_rows == 0)
                return 0;
        return MIN(old, n_rows - 1);
}

static int remember_selection(TopModel *m) {
        const TopTask *t = top_model_task_row(m, m->selected[TOP_VIEW_TASKS]);
        const TopModule *mod = top_model_module_row(m, m->selected[TOP_VIEW_MODULES]);
        const TopUnit *u = top_model_unit_row(m, m->selected[TOP_VIEW_UNITS]);
        const TopSlabSite *site = top_model_slab_row(m, m->selected[TOP_VIEW_SLAB]);
        const TopStackRow *s = top_model_stack_row(m, m->selected[TOP_VIEW_STACKS]);

        if (t)
                m->selected_pid = t->pid;
        if (u) {
                char *name = strdup(u->name);
                if (!name)
                        return -ENOMEM;
                free(m->selected_unit);
                m->selected_unit = name;
        }
        if (site) {
                char *name = strdup(site->name);
                if (!name)
                        return -ENOMEM;
                free(m->selected_slab_site);
                m->selected_slab_site = name;
        }
        if (mod) {
                char *name = strdup(mod->name);
                if (!name)
                        return -ENOMEM;
                free(m->selected_module);
                m->selected_module = name;
        }
        if (s) {
                char *path = strdup(s->path);
                if (!path)
                        return -ENOMEM;
                free(m->selected_path);
                m->selected_path = path;
        }
        return 0;
}

/* A flat view (tasks, modules, units, slab call sites): what its filter matches and what stays selected. */
typedef struct FlatView {
        TopView view;
        size_t n_items;
        const char *(*name)(const TopModel *m, size_t item);    /* the text the view's filter matches */
        bool (*is_selected)(const TopModel *m, size_t item);    /* the remembered selection */
        int (*compare)(const void *a, const void *b, void *model);
} FlatView;

/* A flat view's visible rows: the items its filter matches, sorted, the selection kept on its item (or
 * clamped to where it was). */
static int build_flat_rows(TopModel *m, const FlatView *f, size_t **rows, size_t *n_rows) {
        ssize_t found = -1;

        free(*rows);
        *n_rows = 0;
        *rows = calloc(MAX(f->n_items, (size_t) 1), sizeof(size_t));
        if (!*rows)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_items; i++)
                if (matches(m, f->view, f->name(m, i)))
                        (*rows)[(*n_rows)++] = i;
        qsort_r(*rows, *n_rows, sizeof(size_t), f->compare, m);
        for (size_t i = 0; i < *n_rows; i++)
                if (f->is_selected(m, (*rows)[i]))
                        found = (ssize_t) i;
        m->selected[f->view] = find_selection(*n_rows, m->selected[f->view], found);
        return 0;
}

static const char *task_name(const TopModel *m, size_t i) {
        return m->tasks[i].comm;
}

static bool task_selected(const TopModel *m, size_t i) {
        return m->selected_pid >= 0 && m->tasks[i].pid == m->selected_pid;
}

static const char *module_name(const TopModel *m, size_t i) {
        return m->modules[i].name;
}

static bool module_selected(const TopModel *m, size_t i) {
        return m->selected_module && streq(m->modules[i].name, m->selected_module);
}

static const char *unit_name(const TopModel *m, size_t i) {
        return m->units[i].name;
}

static bool unit_selected(const TopModel *m, size_t i) {
        return m->selected_unit && streq(m->units[i].name, m->selected_unit);
}

static const char *slab_site_name(const TopModel *m, size_t i) {
        return m->slab_sites[i].name;
}

static bool slab_site_selected(const TopModel *m, size_t i) {
        return m->selected_slab_site && streq(m->slab_sites[i].name, m->selected_slab_site);
}

int top_model_rebuild(TopModel *m) {
        ssize_t found;
        int r;

        assert(m);

        r = build_flat_rows(m, &(FlatView) { TOP_VIEW_TASKS, m->n_tasks, task_name, task_selected, compare_task_rows },
                            &m->task_rows, &m->n_task_rows);
        if (r >= 0)
                r = build_flat_rows(m, &(FlatView) { TOP_VIEW_MODULES, m->n_modules, module_name, module_selected,
                                                     compare_module_rows },
                                    &m->module_rows, &m->n_module_rows);
        if (r >= 0)
                r = build_flat_rows(m, &(FlatView) { TOP_VIEW_UNITS, m->n_units, unit_name, unit_selected,
                                                     compare_unit_rows },
                                    &m->unit_rows, &m->n_unit_rows);
        if (r >= 0)
                r = build_flat_rows(m, &(FlatView) { TOP_VIEW_SLAB, m->n_slab_sites, slab_site_name,
                                                     slab_site_selected, compare_slab_rows },
                                    &m->slab_rows, &m->n_slab_rows);
        if (r < 0)
                return r;

        /* Stack rows. */
        clear_stack_rows(m);
        if (m->stack_root) {
                RowBuilder b = {};
                r = add_stack_rows(m, &b, m->stack_root, NULL, 0, false);
                m->stack_rows = b.rows;
                m->n_stack_rows = b.n;
                if (r < 0)
                        return r;
        }
        found = -1;
        for (size_t i = 0; i < m->n_stack_rows && m->selected_path; i++)
                if (streq(m->stack_rows[i].path, m->selected_path))
                        found = (ssize_t) i;
        m->selected[TOP_VIEW_STACKS] = find_selection(m->n_stack_rows, m->selected[TOP_VIEW_STACKS], found);

        return remember_selection(m);
}

/* ---- The user's choices ----------------------------------------------------------------------------- */

void top_model_set_view(TopModel *m, TopView v) {
        if (v >= 0 && v < _TOP_VIEW_MAX)
                m->view = v;
}

void top_model_move(TopModel *m, int64_t delta) {
        size_t n = top_model_rows(m, m->view), *sel = &m->selected[m->view];

        if (n == 0)
                return;
        if (delta == INT64_MIN)
                *sel = 0;
        else if (delta == INT64_MAX)
                *sel = n - 1;
        else if (delta < 0)
                *sel = (uint64_t) -delta > *sel ? 0 : *sel - (size_t) -delta;
        else
                *sel = MIN(*sel + (size_t) delta, n - 1);
        (void) remember_selection(m);
}

static unsigned n_sort_columns(TopView v) {
        return v == TOP_VIEW_TASKS ? _TOP_TASK_COLUMN_MAX :
               v == TOP_VIEW_MODULES ? _TOP_MODULE_COLUMN_MAX :
               v == TOP_VIEW_UNITS ? _TOP_UNIT_COLUMN_MAX :
               v == TOP_VIEW_SLAB ? _TOP_SLAB_COLUMN_MAX : _TOP_STACK_COLUMN_MAX;
}

void top_model_sort_next(TopModel *m, int direction) {
        unsigned n = n_sort_columns(m->view);

        m->sort[m->view] = (m->sort[m->view] + n + (direction < 0 ? n - 1 : 1)) % n;
        (void) top_model_rebuild(m);
}

const char *top_model_sort_name(const TopModel *m, TopView v) {
        switch (v) {
        case TOP_VIEW_TASKS:
                return task_column_names[m->sort[v] % _TOP_TASK_COLUMN_MAX];
        case TOP_VIEW_MODULES:
                return module_column_names[m->sort[v] % _TOP_MODULE_COLUMN_MAX];
        case TOP_VIEW_UNITS:
                return unit_column_names[m->sort[v] % _TOP_UNIT_COLUMN_MAX];
        case TOP_VIEW_SLAB:
                return slab_column_names[m->sort[v] % _TOP_SLAB_COLUMN_MAX];
        default:
                return stack_column_names[m->sort[TOP_VIEW_STACKS] % _TOP_STACK_COLUMN_MAX];
        }
}

int top_model_set_filter(TopModel *m, const char *filter) {
        char *copy = NULL;

        if (filter && filter[0]) {
                copy = strdup(filter);
                if (!copy)
                        return -ENOMEM;
        }
        free(m->filter[m->view]);
        m->filter[m->view] = copy;
        return top_model_rebuild(m);
}

const char *top_model_filter(const TopModel *m) {
        return m->filter[m->view];
}

void top_model_toggle_pause(TopModel *m) {
        m->paused = !m->paused;
}

static int set_expanded(TopModel *m, const char *path, bool expand) {
        for (size_t i = 0; i < m->n_expanded; i++)
                if (streq(m->expanded[i], path)) {
                        if (!expand) {
                                free(m->expanded[i]);
                                m->expanded[i] = m->expanded[--m->n_expanded];
                        }
                        return 0;
                }
        if (!expand)
                return 0;
        char **e = reallocarray(m->expanded, m->n_expanded + 1, sizeof(char *));
        if (!e)
                return -ENOMEM;
        m->expanded = e;
        m->expanded[m->n_expanded] = strdup(path);
        if (!m->expanded[m->n_expanded])
                return -ENOMEM;
        m->n_expanded++;
        return 0;
}

int top_model_expand(TopModel *m) {
        const TopStackRow *row = top_model_stack_row(m, m->selected[TOP_VIEW_STACKS]);
        _cleanup_free_ char *path = NULL;
        int r;

        if (m->view != TOP_VIEW_STACKS || !row || row->node->n_children == 0)
                return 0;
        path = strdup(row->path);
        if (!path)
                return -ENOMEM;
        /* Open the chain of single children below too: kernel stacks are long runs of them. */
        for (const TopStackNode *n = row->node;;) {
                r = set_expanded(m, path, true);
                if (r < 0)
                        return r;
                if (n->n_children != 1)
                        break;
                n = &n->children[0];
                char *next;
                if (asprintf(&next, "%s\x1f%s", path, n->label) < 0)
                        return -ENOMEM;
                free(path);
                path = next;
        }
        return top_model_rebuild(m);
}

int top_model_collapse(TopModel *m) {
        const TopStackRow *row = top_model_stack_row(m, m->selected[TOP_VIEW_STACKS]);
        int r;

        if (m->view != TOP_VIEW_STACKS || !row)
                return 0;
        if (row->expanded && row->depth > 0) {
                r = set_expanded(m, row->path, false);
                if (r < 0)
                        return r;
                return top_model_rebuild(m);
        }
        /* Already closed: go to the parent, the nearest row above that is one level up. */
        for (size_t i = m->selected[TOP_VIEW_STACKS]; i-- > 0;)
                if (m->stack_rows[i].depth + 1 == row->depth) {
                        m->selected[TOP_VIEW_STACKS] = i;
                        return remember_selection(m);
                }
        return 0;
}

int top_model_toggle(TopModel *m) {
        const TopStackRow *row = top_model_stack_row(m, m->selected[TOP_VIEW_STACKS]);

        if (!row)
                return 0;
        return row->expanded ? top_model_collapse(m) : top_model_expand(m);
}

static bool same_name(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

/* At most one of pid (>= 0), module and unit is set; none: all stacks. */
static int set_scope(TopModel *m, int64_t pid, const char *module, const char *unit) {
        _cleanup_free_ char *module_copy = NULL, *unit_copy = NULL;

        if (pid == m->scope_pid && same_name(module, m->scope_module) && same_name(unit, m->scope_unit))
                return 0;
        if ((module && !(module_copy = strdup(module))) || (unit && !(unit_copy = strdup(unit))))
                return -ENOMEM;
        free(m->scope_module);
        m->scope_module = TAKE_PTR(module_copy);
        free(m->scope_unit);
        m->scope_unit = TAKE_PTR(unit_copy);
        m->scope_pid = pid;
        /* Another tree: the old one must not show under the new title. */
        stack_node_free(m->stack_root);
        m->stack_root = NULL;
        m->selected[TOP_VIEW_STACKS] = 0;
        m->selected_path = mfree_ptr(m->selected_path);
        int r = top_model_rebuild(m);
        return r < 0 ? r : 1;
}

int top_model_open_stacks(TopModel *m) {
        int r = 0;

        if (m->view == TOP_VIEW_TASKS) {
                const TopTask *t = top_model_task_row(m, m->selected[TOP_VIEW_TASKS]);
                if (t && t->pid >= 0)
                        r = set_scope(m, t->pid, NULL, NULL);
        } else if (m->view == TOP_VIEW_MODULES) {
                const TopModule *mod = top_model_module_row(m, m->selected[TOP_VIEW_MODULES]);
                if (mod)
                        r = set_scope(m, -1, mod->name, NULL);
        } else if (m->view == TOP_VIEW_UNITS) {
                const TopUnit *u = top_model_unit_row(m, m->selected[TOP_VIEW_UNITS]);
                if (u)
                        r = set_scope(m, -1, NULL, u->name);
        } else if (m->view == TOP_VIEW_SLAB)
                return 0;       /* slab objects' call sites have no page stacks */
        else
                return top_model_toggle(m);
        if (r >= 0)
                m->view = TOP_VIEW_STACKS;
        return r;
}

int top_model_scope_all(TopModel *m) {
        return set_scope(m, -1, NULL, NULL);
}
