/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "explain-text.h"
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

static void free_tasks(TopTask *tasks, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(tasks[i].comm);
                free(tasks[i].cmdline);
        }
        free(tasks);
}

static void free_modules(TopModule *modules, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(modules[i].name);
        free(modules);
}

static void free_units(TopUnit *units, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(units[i].name);
                free(units[i].cgroup);
        }
        free(units);
}

static void clear_slices(TopModel *m) {
        for (size_t i = 0; i < m->n_slices; i++)
                free(m->slices[i].path);
        m->slices = mfree_ptr(m->slices);
        m->n_slices = 0;
}

static void clear_tree_lines(TopModel *m, TopView v) {
        if (m->tree_lines[v])
                for (size_t i = 0; i < top_model_rows(m, v); i++)
                        free(m->tree_lines[v][i].guides);
        m->tree_lines[v] = mfree_ptr(m->tree_lines[v]);
}

static void clear_data(TopModel *m) {
        free_tasks(m->tasks, m->n_tasks);
        m->tasks = NULL;
        m->n_tasks = 0;
        free_modules(m->modules, m->n_modules);
        m->modules = NULL;
        m->n_modules = 0;
        free_units(m->units, m->n_units);
        m->units = NULL;
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
        m->high_percent = 10;
        *ret = m;
        return 0;
}

static void clear_explain_lines(TopModel *m) {
        for (size_t i = 0; i < m->n_explain_lines; i++)
                free(m->explain_lines[i]);
        m->explain_lines = mfree_ptr(m->explain_lines);
        m->n_explain_lines = 0;
}

TopModel *top_model_free(TopModel *m) {
        if (!m)
                return NULL;
        clear_explain_lines(m);
        free(m->explain_unit);
        clear_stack_rows(m);
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                clear_tree_lines(m, (TopView) v);
        clear_slices(m);
        free(m->slab_rows);
        free(m->unit_rows);
        free(m->module_rows);
        free(m->task_rows);
        for (size_t i = 0; i < m->n_collapsed; i++)
                free(m->collapsed[i]);
        free(m->collapsed);
        free(m->selected_slice);
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
                        .lost_frees = reply_count(e, "lostFrees"),
                        .waste_percent = reply_double(e, "wastePercent", 0),
                        .frees_invisible = json_is_false(json_object_get(e, "freesVisible")),
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

/* The lists of the previous update, for the trends. */
typedef struct Previous {
        TopTask *tasks;
        size_t n_tasks;
        TopModule *modules;
        size_t n_modules;
        TopUnit *units;
        size_t n_units;
        bool had_data;
} Previous;

static void previous_done(Previous *p) {
        free_tasks(p->tasks, p->n_tasks);
        free_modules(p->modules, p->n_modules);
        free_units(p->units, p->n_units);
}

static TopTrend trend(bool found, uint64_t before, uint64_t now) {
        if (!found)
                return TOP_TREND_NEW;
        return now > before ? TOP_TREND_UP : now < before ? TOP_TREND_DOWN : TOP_TREND_SAME;
}

static int compare_pid_index(const void *a, const void *b, void *userdata) {
        const TopTask *tasks = userdata;
        int64_t x = tasks[*(const size_t *) a].pid, y = tasks[*(const size_t *) b].pid;
        return x < y ? -1 : x > y;
}

/* Each row against the same task, module or unit of the previous update. Tasks by pid through a sorted
 * index (a long --limit makes hundreds); modules and units are few. */
static void set_trends(TopModel *m, const Previous *p) {
        _cleanup_free_ size_t *by_pid = calloc(MAX(p->n_tasks, (size_t) 1), sizeof(size_t));

        for (size_t i = 0; by_pid && i < p->n_tasks; i++)
                by_pid[i] = i;
        if (by_pid)
                qsort_r(by_pid, p->n_tasks, sizeof(size_t), compare_pid_index, p->tasks);
        for (size_t i = 0; i < m->n_tasks; i++) {
                TopTask *t = &m->tasks[i];
                const TopTask *old = NULL;
                for (size_t lo = 0, hi = by_pid ? p->n_tasks : 0; lo < hi;) {
                        size_t mid = lo + (hi - lo) / 2;
                        const TopTask *c = &p->tasks[by_pid[mid]];
                        if (c->pid == t->pid) {
                                old = c;
                                break;
                        }
                        if (c->pid < t->pid)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                /* The first update has nothing to compare with: no row is "new" then. */
                t->trend = !p->had_data ? TOP_TREND_SAME : trend(old, old ? old->current_pages : 0, t->current_pages);
        }
        for (size_t i = 0; i < m->n_modules; i++) {
                TopModule *mod = &m->modules[i];
                const TopModule *old = NULL;
                for (size_t j = 0; j < p->n_modules && !old; j++)
                        if (streq(p->modules[j].name, mod->name))
                                old = &p->modules[j];
                mod->trend = !p->had_data ? TOP_TREND_SAME : trend(old, old ? old->current_pages : 0, mod->current_pages);
        }
        for (size_t i = 0; i < m->n_units; i++) {
                TopUnit *u = &m->units[i];
                const TopUnit *old = NULL;
                for (size_t j = 0; j < p->n_units && !old; j++)
                        if (streq(p->units[j].name, u->name))
                                old = &p->units[j];
                u->trend = !p->had_data ? TOP_TREND_SAME : trend(old, old ? old->current_pages : 0, u->current_pages);
        }
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

        /* The previous lists stay until the new ones are read: each row's trend compares with them. */
        _cleanup_(previous_done) Previous prev = {
                .tasks = TAKE_PTR(m->tasks), .n_tasks = m->n_tasks,
                .modules = TAKE_PTR(m->modules), .n_modules = m->n_modules,
                .units = TAKE_PTR(m->units), .n_units = m->n_units,
                .had_data = m->have_data,
        };
        m->n_tasks = m->n_modules = m->n_units = 0;
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
                        .parent_pid = reply_int(e, "parentPid", -1),
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
                if ((r = dup_or_null(reply_string(e, "name") ?: "?", &u->name)) < 0 ||
                    (r = dup_or_null(reply_string(e, "cgroup"), &u->cgroup)) < 0)
                        return r;
        }
        m->have_units = units != NULL;
        set_trends(m, &prev);
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

/* A StackNode, or with bytes a HeapNode (StackTree heap: bytes, its peak the most it ever held). */
static int parse_stack_node(const json_t *j, TopStackNode *n, unsigned depth, bool bytes) {
        json_t *children = reply_array(j, "children"), *c;
        size_t i;
        int r;

        *n = (TopStackNode) {
                .bytes = bytes,
                .current_pages = reply_count(j, bytes ? "currentBytes" : "currentPages"),
                .peak_pages = bytes ? (int64_t) reply_count(j, "peakBytes") : reply_node_peak(j),
                .truncated = reply_count(j, "truncatedChildren"),
        };
        n->label = depth == 1 && bytes ? strdup("[heap] (user space)") : reply_frame_label(j);
        if (!n->label)
                return -ENOMEM;
        /* The daemon sends at most 255 levels; anything deeper is cut, not recursed into. */
        if (depth >= 256 || json_array_size(children) == 0)
                return 0;
        n->children = calloc(json_array_size(children), sizeof(TopStackNode));
        if (!n->children)
                return -ENOMEM;
        json_array_foreach(children, i, c) {
                r = parse_stack_node(c, &n->children[n->n_children++], depth + 1, bytes);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The process's heap (StackTree heap) as the root's last child. */
static int add_heap_node(TopStackNode *root, const json_t *heap) {
        TopStackNode *children = realloc(root->children, (root->n_children + 1) * sizeof(TopStackNode));

        if (!children)
                return -ENOMEM;
        root->children = children;
        return parse_stack_node(heap, &root->children[root->n_children++], 1, true);
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
        r = parse_stack_node(reply_object(reply, "root"), root, 0, false);
        if (r >= 0 && reply_object(reply, "heap"))
                r = add_heap_node(root, reply_object(reply, "heap"));
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
        return row < m->n_unit_rows && m->unit_rows[row] < m->n_units ? &m->units[m->unit_rows[row]] : NULL;
}

const TopSlice *top_model_slice_row(const TopModel *m, size_t row) {
        if (row >= m->n_unit_rows || m->unit_rows[row] < m->n_units)
                return NULL;
        size_t k = m->unit_rows[row] - m->n_units;
        return k < m->n_slices ? &m->slices[k] : NULL;
}

const TopTreeLine *top_model_tree_line(const TopModel *m, TopView v, size_t row) {
        if (v < 0 || v >= _TOP_VIEW_MAX || !m->tree_lines[v] || row >= top_model_rows(m, v))
                return NULL;
        return &m->tree_lines[v][row];
}

bool top_model_is_high(const TopModel *m, uint64_t pages) {
        if (m->high_percent <= 0 || m->meminfo.total == 0)
                return false;
        return (double) pages * (double) m->page_size * 100.0 >= m->high_percent * (double) m->meminfo.total;
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

/* ---- Tree views: tasks by parent, units by slice ------------------------------------------------------ */

static bool is_collapsed(const TopModel *m, const char *key) {
        for (size_t i = 0; key && i < m->n_collapsed; i++)
                if (streq(m->collapsed[i], key))
                        return true;
        return false;
}

static int set_collapsed(TopModel *m, const char *key, bool collapse) {
        for (size_t i = 0; i < m->n_collapsed; i++)
                if (streq(m->collapsed[i], key)) {
                        if (!collapse) {
                                free(m->collapsed[i]);
                                m->collapsed[i] = m->collapsed[--m->n_collapsed];
                        }
                        return 0;
                }
        if (!collapse)
                return 0;
        char **c = reallocarray(m->collapsed, m->n_collapsed + 1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        m->collapsed = c;
        m->collapsed[m->n_collapsed] = strdup(key);
        if (!m->collapsed[m->n_collapsed])
                return -ENOMEM;
        m->n_collapsed++;
        return 0;
}

/* The key a tree row is collapsed by (new string, NULL on OOM): "pid N", "slice PATH" or "unit NAME". */
static char *tree_key(const TopModel *m, TopView v, size_t value) {
        char *key = NULL;

        if (v == TOP_VIEW_TASKS) {
                if (asprintf(&key, "pid %" PRIi64, m->tasks[value].pid) < 0)
                        return NULL;
        } else if (value >= m->n_units) {
                if (asprintf(&key, "slice %s", m->slices[value - m->n_units].path) < 0)
                        return NULL;
        } else if (asprintf(&key, "unit %s", m->units[value].name) < 0)
                return NULL;
        return key;
}

/* A forest to lay out as rows: values (what the view's rows hold) with the index of each one's parent
 * in values, SIZE_MAX for a root. */
typedef struct TreeBuild {
        TopModel *model;
        TopView view;
        size_t n;
        const size_t *values;
        const size_t *parent;
        int (*compare)(const void *a, const void *b, void *model);     /* on two values */
        size_t *first, *next;           /* first child, next sibling (SIZE_MAX: none), in sorted order */
        bool *done;                     /* laid out already: a parent cycle (pid reuse) cannot loop */
        size_t *rows;
        TopTreeLine *lines;
        size_t n_rows;
} TreeBuild;

static int compare_tree_values(const void *a, const void *b, void *userdata) {
        const TreeBuild *t = userdata;
        return t->compare(&t->values[*(const size_t *) a], &t->values[*(const size_t *) b], t->model);
}

/* A collapsed node's subtree: not shown, and not taken for a cycle either. */
static void mark_done(TreeBuild *t, size_t node) {
        t->done[node] = true;
        for (size_t c = t->first[node]; c != SIZE_MAX; c = t->next[c])
                if (!t->done[c])
                        mark_done(t, c);
}

static int lay_out(TreeBuild *t, size_t node, unsigned depth, const char *guides, bool last) {
        _cleanup_free_ char *key = NULL, *mine = NULL, *below = NULL;
        int r;

        t->done[node] = true;
        mine = malloc(depth + 1);
        below = malloc(depth + 2);
        key = tree_key(t->model, t->view, t->values[node]);
        if (!mine || !below || !key)
                return -ENOMEM;
        /* Ancestors' lines, then this row's own corner; its children see a line here if it has later
         * siblings. */
        memcpy(mine, guides, depth);
        if (depth > 0)
                mine[depth - 1] = last ? 'l' : 't';
        mine[depth] = '\0';
        memcpy(below, guides, depth);
        if (depth > 0)
                below[depth - 1] = last ? ' ' : '|';
        below[depth] = ' ';
        below[depth + 1] = '\0';

        bool has_children = t->first[node] != SIZE_MAX;
        bool collapsed = has_children && is_collapsed(t->model, key);
        t->rows[t->n_rows] = t->values[node];
        t->lines[t->n_rows++] = (TopTreeLine) {
                .depth = depth, .guides = TAKE_PTR(mine), .has_children = has_children, .collapsed = collapsed,
        };
        if (collapsed) {
                mark_done(t, node);
                return 0;
        }
        for (size_t c = t->first[node]; c != SIZE_MAX; c = t->next[c]) {
                if (t->done[c])
                        continue;
                r = lay_out(t, c, depth + 1, below, t->next[c] == SIZE_MAX);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Lays the forest out depth first, siblings in the view's sort order, into *rows and *lines. */
static int build_tree_rows(TreeBuild *t, size_t **rows, size_t *n_rows, TopTreeLine **lines) {
        _cleanup_free_ size_t *order = NULL, *first = NULL, *next = NULL;
        _cleanup_free_ bool *done = NULL;
        size_t n = MAX(t->n, (size_t) 1);
        int r = 0;

        order = calloc(n, sizeof(size_t));
        first = calloc(n, sizeof(size_t));
        next = calloc(n, sizeof(size_t));
        done = calloc(n, sizeof(bool));
        t->rows = calloc(n, sizeof(size_t));
        t->lines = calloc(n, sizeof(TopTreeLine));
        if (!order || !first || !next || !done || !t->rows || !t->lines) {
                free(t->rows);
                free(t->lines);
                return -ENOMEM;
        }
        for (size_t i = 0; i < t->n; i++) {
                order[i] = i;
                first[i] = next[i] = SIZE_MAX;
        }
        qsort_r(order, t->n, sizeof(size_t), compare_tree_values, t);
        /* Children lists in sorted order: walk the sorted nodes backwards, pushing each on its parent's. */
        size_t roots = SIZE_MAX;
        for (size_t k = t->n; k-- > 0;) {
                size_t i = order[k], p = t->parent[i];
                size_t *head = p == SIZE_MAX ? &roots : &first[p];
                next[i] = *head;
                *head = i;
        }
        t->first = first;
        t->next = next;
        t->done = done;
        t->n_rows = 0;
        for (size_t i = roots; i != SIZE_MAX && r >= 0; i = next[i])
                r = lay_out(t, i, 0, "", next[i] == SIZE_MAX);
        /* Nodes in a parent cycle have no root above them: each cycle shows from its first node. */
        for (size_t k = 0; k < t->n && r >= 0; k++)
                if (!done[order[k]])
                        r = lay_out(t, order[k], 0, "", true);
        *rows = t->rows;
        *n_rows = t->n_rows;
        *lines = t->lines;
        return r;
}

/* The tasks tree: each task under the task of its parentPid among the rows shown (the filtered ones); a
 * task whose parent is not shown is a root, as htop's tree shows a process whose parent it hides. */
static int build_task_tree(TopModel *m, size_t **rows, size_t *n_rows) {
        _cleanup_free_ size_t *values = TAKE_PTR(*rows), *parent = NULL, *by_pid = NULL;
        size_t n = *n_rows;

        parent = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        by_pid = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        if (!parent || !by_pid)
                return -ENOMEM;
        memcpy(by_pid, values, n * sizeof(size_t));
        qsort_r(by_pid, n, sizeof(size_t), compare_pid_index, m->tasks);
        for (size_t i = 0; i < n; i++) {
                const TopTask *t = &m->tasks[values[i]];
                parent[i] = SIZE_MAX;
                if (t->parent_pid < 0 || t->parent_pid == t->pid)
                        continue;
                size_t lo = 0, hi = n;
                while (lo < hi) {
                        size_t mid = lo + (hi - lo) / 2;
                        int64_t pid = m->tasks[by_pid[mid]].pid;
                        if (pid == t->parent_pid) {
                                lo = mid;
                                break;
                        }
                        if (pid < t->parent_pid)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                if (lo < n && m->tasks[by_pid[lo]].pid == t->parent_pid)
                        /* The node of that task: its position in values. */
                        for (size_t j = 0; j < n; j++)
                                if (values[j] == by_pid[lo]) {
                                        parent[i] = j;
                                        break;
                                }
        }
        TreeBuild t = { .model = m, .view = TOP_VIEW_TASKS, .n = n, .values = values, .parent = parent,
                        .compare = compare_task_rows };
        return build_tree_rows(&t, rows, n_rows, &m->tree_lines[TOP_VIEW_TASKS]);
}

static bool has_suffix(const char *s, size_t len, const char *suffix) {
        size_t k = strlen(suffix);
        return len >= k && strncmp(s + len - k, suffix, k) == 0;
}

/* The slice of this path prefix, created if new; SIZE_MAX on OOM. */
static size_t slice_intern(TopModel *m, const char *path, size_t len) {
        for (size_t i = 0; i < m->n_slices; i++)
                if (strlen(m->slices[i].path) == len && strncmp(m->slices[i].path, path, len) == 0)
                        return i;
        TopSlice *s = reallocarray(m->slices, m->n_slices + 1, sizeof(TopSlice));
        if (!s)
                return SIZE_MAX;
        m->slices = s;
        char *copy = strndup(path, len);
        if (!copy)
                return SIZE_MAX;
        const char *slash = strrchr(copy, '/');
        m->slices[m->n_slices] = (TopSlice) { .path = copy, .name = slash ? slash + 1 : copy, .unit = SIZE_MAX };
        return m->n_slices++;
}

static int compare_unit_tree_values(const void *a, const void *b, void *userdata) {
        const TopModel *m = userdata;
        size_t x = *(const size_t *) a, y = *(const size_t *) b;

        if (x < m->n_units && y < m->n_units)
                return compare_unit_rows(a, b, userdata);
        /* A slice sorts by its sum of current pages (or its name), before a unit of the same size. */
        const char *xn = x < m->n_units ? m->units[x].name : m->slices[x - m->n_units].name;
        const char *yn = y < m->n_units ? m->units[y].name : m->slices[y - m->n_units].name;
        uint64_t xc = x < m->n_units ? m->units[x].current_pages : m->slices[x - m->n_units].current_pages;
        uint64_t yc = y < m->n_units ? m->units[y].current_pages : m->slices[y - m->n_units].current_pages;
        int c = m->sort[TOP_VIEW_UNITS] == TOP_UNIT_NAME ? strcmp(xn, yn) : compare_u64_desc(xc, yc);
        if (c == 0)
                c = (x < m->n_units) - (y < m->n_units);
        return c ?: strcmp(xn, yn);
}

/* The units tree (systemd-cgls): each unit under the slices of its cgroup path, the slices under theirs.
 * A unit that is a slice itself (pages of the slice's own cgroup) is that slice's row. Units without a
 * cgroup, or without a slice in it ("/init.scope", "[removed]"), are roots. */
static int build_unit_tree(TopModel *m, size_t **rows, size_t *n_rows) {
        _cleanup_free_ size_t *units = TAKE_PTR(*rows), *unit_slice = NULL, *values = NULL, *parent = NULL;
        size_t n_units = *n_rows;

        clear_slices(m);
        unit_slice = calloc(MAX(n_units, (size_t) 1), sizeof(size_t));
        if (!unit_slice)
                return -ENOMEM;
        /* Slices and each shown unit's innermost slice; slice parents come from their own paths below. */
        for (size_t i = 0; i < n_units; i++) {
                const TopUnit *u = &m->units[units[i]];
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
                                size_t k = slice_intern(m, path, len);
                                if (k == SIZE_MAX)
                                        return -ENOMEM;
                                m->slices[k].current_pages += u->current_pages;
                                m->slices[k].tasks += u->tasks;
                                if (is_unit) {
                                        /* This unit is the slice: its row is the slice's. */
                                        m->slices[k].unit = units[i];
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
        values = calloc(MAX(n_units + m->n_slices, (size_t) 1), sizeof(size_t));
        parent = calloc(MAX(n_units + m->n_slices, (size_t) 1), sizeof(size_t));
        if (!values || !parent)
                return -ENOMEM;
        /* Nodes: the slices first (node k is slice k), then the units that are not slices. */
        for (size_t k = 0; k < m->n_slices; k++) {
                const char *slash = strrchr(m->slices[k].path, '/');
                size_t up = SIZE_MAX;
                for (size_t j = 0; slash && slash != m->slices[k].path && j < m->n_slices; j++)
                        if (strlen(m->slices[j].path) == (size_t) (slash - m->slices[k].path) &&
                            strncmp(m->slices[j].path, m->slices[k].path, slash - m->slices[k].path) == 0)
                                up = j;
                values[n] = m->n_units + k;
                parent[n++] = up;
        }
        for (size_t i = 0; i < n_units; i++) {
                if (unit_slice[i] == SIZE_MAX - 1)
                        continue;
                values[n] = units[i];
                parent[n++] = unit_slice[i];
        }
        TreeBuild t = { .model = m, .view = TOP_VIEW_UNITS, .n = n, .values = values, .parent = parent,
                        .compare = compare_unit_tree_values };
        return build_tree_rows(&t, rows, n_rows, &m->tree_lines[TOP_VIEW_UNITS]);
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
        const TopSlice *slice = top_model_slice_row(m, m->selected[TOP_VIEW_UNITS]);
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
                m->selected_slice = mfree_ptr(m->selected_slice);
        } else if (slice) {
                char *path = strdup(slice->path);
                if (!path)
                        return -ENOMEM;
                free(m->selected_slice);
                m->selected_slice = path;
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
        if (m->tree[f->view]) {
                int r = f->view == TOP_VIEW_TASKS ? build_task_tree(m, rows, n_rows) : build_unit_tree(m, rows, n_rows);
                if (r < 0)
                        return r;
        }
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
        if (i >= m->n_units)
                return m->selected_slice && streq(m->slices[i - m->n_units].path, m->selected_slice);
        return !m->selected_slice && m->selected_unit && streq(m->units[i].name, m->selected_unit);
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

        /* The lines belong to the rows about to be rebuilt. */
        clear_tree_lines(m, TOP_VIEW_TASKS);
        clear_tree_lines(m, TOP_VIEW_UNITS);
        if (!m->tree[TOP_VIEW_UNITS])
                clear_slices(m);
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

void top_model_select(TopModel *m, size_t row) {
        size_t n = top_model_rows(m, m->view);

        if (n == 0)
                return;
        m->selected[m->view] = MIN(row, n - 1);
        (void) remember_selection(m);
}

void top_model_set_sort(TopModel *m, unsigned column) {
        if (column >= n_sort_columns(m->view))
                return;
        m->sort[m->view] = column;
        (void) top_model_rebuild(m);
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

static size_t row_value(const TopModel *m, TopView v, size_t row) {
        return v == TOP_VIEW_TASKS ? m->task_rows[row] : m->unit_rows[row];
}

/* Tree views: open or close the selected node; closing a closed node or a leaf goes to its parent. */
static int tree_set(TopModel *m, bool expand) {
        TopView v = m->view;
        size_t sel = m->selected[v];
        const TopTreeLine *line = top_model_tree_line(m, v, sel);
        _cleanup_free_ char *key = NULL;
        int r;

        if (!line)
                return 0;
        if (line->has_children && line->collapsed == expand) {
                key = tree_key(m, v, row_value(m, v, sel));
                if (!key)
                        return -ENOMEM;
                r = set_collapsed(m, key, !expand);
                if (r < 0)
                        return r;
                return top_model_rebuild(m);
        }
        if (expand)
                return 0;
        for (size_t i = sel; i-- > 0;)
                if (m->tree_lines[v][i].depth + 1 == line->depth) {
                        m->selected[v] = i;
                        return remember_selection(m);
                }
        return 0;
}

int top_model_toggle_tree(TopModel *m) {
        if (m->view != TOP_VIEW_TASKS && m->view != TOP_VIEW_UNITS)
                return -EOPNOTSUPP;
        m->tree[m->view] = !m->tree[m->view];
        return top_model_rebuild(m);
}

int top_model_expand(TopModel *m) {
        const TopStackRow *row = top_model_stack_row(m, m->selected[TOP_VIEW_STACKS]);
        _cleanup_free_ char *path = NULL;
        int r;

        if (m->tree[m->view] && m->view != TOP_VIEW_STACKS)
                return tree_set(m, true);
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

        if (m->tree[m->view] && m->view != TOP_VIEW_STACKS)
                return tree_set(m, false);
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

int top_model_open_explain(TopModel *m) {
        if (m->view != TOP_VIEW_UNITS)
                return -ENOENT;
        const TopUnit *u = top_model_unit_row(m, m->selected[TOP_VIEW_UNITS]);
        if (!u || !u->name)
                return -ENOENT;
        char *name = strdup(u->name);
        if (!name)
                return -ENOMEM;
        free(m->explain_unit);
        m->explain_unit = name;
        clear_explain_lines(m);
        m->explain_scroll = 0;
        m->mode = TOP_MODE_EXPLAIN;
        return 0;
}

void top_model_close_explain(TopModel *m) {
        if (m->mode == TOP_MODE_EXPLAIN)
                m->mode = TOP_MODE_NORMAL;
}

json_t *top_model_explain_parameters(const TopModel *m) {
        return m->explain_unit ? json_pack("{s:s}", "name", m->explain_unit) : NULL;
}

int top_model_update_explain(TopModel *m, json_t *reply) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0, n = 0;
        char **lines = NULL;
        int r;

        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        r = explain_render_text(reply, f);
        if (fclose(f) != 0 || !text)
                return -ENOMEM;
        if (r < 0)
                return r;
        for (char *p = text, *end; *p; p = end + (*end == '\n')) {
                end = p + strcspn(p, "\n");
                char **l = realloc(lines, (n + 1) * sizeof(char *));
                char *line = l ? strndup(p, (size_t) (end - p)) : NULL;
                if (l)
                        lines = l;
                if (!line) {
                        while (n > 0)
                                free(lines[--n]);
                        free(lines);
                        return -ENOMEM;
                }
                lines[n++] = line;
        }
        clear_explain_lines(m);
        m->explain_lines = lines;
        m->n_explain_lines = n;
        m->explain_scroll = MIN(m->explain_scroll, n > 0 ? n - 1 : 0);
        return 0;
}

void top_model_scroll_explain(TopModel *m, int64_t delta, size_t page_lines) {
        size_t last = m->n_explain_lines > page_lines ? m->n_explain_lines - page_lines : 0;

        if (delta == INT64_MIN)
                m->explain_scroll = 0;
        else if (delta == INT64_MAX)
                m->explain_scroll = last;
        else if (delta < 0)
                m->explain_scroll -= MIN(m->explain_scroll, (size_t) -delta);
        else
                m->explain_scroll = MIN(m->explain_scroll + (size_t) delta, last);
}
