/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "query.h"
#include "utf8.h"

QuerySort query_sort_from_string(const char *s) {
        if (!s || streq(s, "current"))
                return QUERY_SORT_CURRENT;
        if (streq(s, "peak"))
                return QUERY_SORT_PEAK;
        if (streq(s, "allocs"))
                return QUERY_SORT_ALLOCS;
        return _QUERY_SORT_INVALID;
}

static uint64_t counter_key(const PageCounter *c, QuerySort sort) {
        switch (sort) {
        case QUERY_SORT_PEAK:
                return c->peak_pages;
        case QUERY_SORT_ALLOCS:
                return c->allocs;
        default:
                return c->current_pages;
}
}

/* Adds a key to an object, stealing the value; -ENOMEM if either is missing. */
static int set_new(json_t *o, const char *key, json_t *value) {
        if (!value || json_object_set_new(o, key, value) < 0)
                return -ENOMEM;
        return 0;
}

json_t *query_task_json(const Task *t) {
        /* comm and cmdline are the process's bytes: utf8.h encodes them for JSON. */
        return json_pack("{s:i, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:b, s:n}",
                         "pid", (int) t->pid,
                         "comm", utf8_json_string(t->comm),
                         "cmdline", t->cmdline ? utf8_json_string(t->cmdline) : json_null(),
                         "currentPages", (json_int_t) t->pages.current_pages,
                         "peakPages", (json_int_t) t->pages.peak_pages,
                         "allocs", (json_int_t) t->pages.allocs,
                         "frees", (json_int_t) t->pages.frees,
                         "baselinePages", (json_int_t) t->baseline_pages,
                         "exited", t->exited,
                         "threads");
}

typedef struct SortItem {
        uint64_t key;
        uint64_t tiebreak;      /* smaller first among equal keys, so output is deterministic */
        uint32_t idx;
} SortItem;

static int compare_items(const void *a, const void *b) {
        const SortItem *x = a, *y = b;
        if (x->key != y->key)
                return x->key > y->key ? -1 : 1;
        if (x->tiebreak != y->tiebreak)
                return x->tiebreak < y->tiebreak ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool task_matches(const Task *t, const QueryTasks *q) {
        if (t->is_thread)
                return false;
        /* A task asked for by pid is shown whatever it holds. */
        if (q->hide_zero && q->pid < 0 && counter_key(&t->pages, q->sort) == 0)
                return false;
        if (q->pid >= 0 && t->pid != q->pid)
                return false;
        /* Clients know a comm by the encoded name they were shown. */
        if (q->comm && !utf8_escaped_streq(t->comm, q->comm))
                return false;
        /* A pid asked for by name is shown even if it exited. */
        if (t->exited && !q->include_exited && q->pid < 0)
                return false;
        return true;
}

static json_t *threads_json(Usage *u, uint32_t process, QuerySort sort) {
        json_auto_t *a = json_array();
        _cleanup_free_ SortItem *items = NULL;
        size_t n = 0, n_slots = usage_task_slots(u);

        if (!a)
                return NULL;
        items = malloc(MAX(n_slots, (size_t) 1) * sizeof(SortItem));
        if (!items)
                return NULL;
        for (uint32_t i = 0; i < n_slots; i++) {
                const Task *t = usage_task(u, i);
                if (t && t->is_thread && t->process == process)
                        items[n++] = (SortItem) { counter_key(&t->pages, sort), (uint64_t) t->pid, i };
        }
        qsort(items, n, sizeof(SortItem), compare_items);
        for (size_t i = 0; i < n && i < QUERY_LIMIT_MAX; i++)
                if (json_array_append_new(a, query_task_json(usage_task(u, items[i].idx))) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

int query_tasks(Accounting *a, const QueryTasks *q, json_t **ret) {
        Usage *u = accounting_usage(a);
        size_t n = 0, n_slots = usage_task_slots(u), limit = MIN(q->limit ?: 50, (size_t) QUERY_LIMIT_MAX);
        _cleanup_free_ SortItem *items = malloc(MAX(n_slots, (size_t) 1) * sizeof(SortItem));
        json_auto_t *list = json_array();

        if (!items || !list)
                return -ENOMEM;

        for (uint32_t i = 0; i < n_slots; i++) {
                const Task *t = usage_task(u, i);
                /* The "[evicted]" record is no task: it is reported apart, as "evicted". */
                if (!t || i == USAGE_TASK_EVICTED || !task_matches(t, q))
                        continue;
                items[n++] = (SortItem) { counter_key(&t->pages, q->sort), (uint64_t) (uint32_t) t->pid, i };
        }
        if (q->pid >= 0 && n == 0)
                return -ESRCH;

        qsort(items, n, sizeof(SortItem), compare_items);
        for (size_t i = 0; i < n && i < limit; i++) {
                json_t *task = query_task_json(usage_task(u, items[i].idx));
                if (!task || json_array_append_new(list, task) < 0)
                        return -ENOMEM;
                if (q->threads && usage_tracks_threads(u) && set_new(task, "threads", threads_json(u, items[i].idx, q->sort)) < 0)
                        return -ENOMEM;
        }

        *ret = json_pack("{s:O, s:o}", "tasks", list, "evicted", query_evicted_json(u));
        return *ret ? 0 : -ENOMEM;
}

json_t *query_evicted_json(Usage *u) {
        const Task *e = usage_task(u, USAGE_TASK_EVICTED);
        UsageStats s;

        usage_get_stats(u, &s);
        return json_pack("{s:I, s:I, s:I}",
                         "tasks", (json_int_t) s.tasks_evicted,
                         "currentPages", (json_int_t) (e ? e->pages.current_pages : 0),
                         "peakPages", (json_int_t) (e ? e->pages.peak_pages : 0));
}

int query_modules(Accounting *a, QuerySort sort, size_t limit, json_t **ret) {
        Usage *u = accounting_usage(a);
        size_t n_modules = usage_module_count(u), n = 0;
        _cleanup_free_ SortItem *items = malloc(MAX(n_modules, (size_t) 1) * sizeof(SortItem));
        json_auto_t *list = json_array();

        if (!items || !list)
                return -ENOMEM;
        limit = MIN(limit ?: 50, (size_t) QUERY_LIMIT_MAX);

        for (uint16_t id = 1; id <= n_modules; id++) {
                const ModuleUsage *m = usage_module(u, id);
                if (m->pages.peak_pages == 0 && !m->loaded)
                        continue;
                items[n++] = (SortItem) { counter_key(&m->pages, sort), 0, id };
        }
        qsort(items, n, sizeof(SortItem), compare_items);
        for (size_t i = 0; i < n && i < limit; i++) {
                const ModuleUsage *m = usage_module(u, (uint16_t) items[i].idx);
                json_t *o = json_pack("{s:o, s:I, s:I, s:b}",
                                      "name", utf8_json_string(m->name),
                                      "currentPages", (json_int_t) m->pages.current_pages,
                                      "peakPages", (json_int_t) m->pages.peak_pages,
                                      "loaded", m->loaded || streq(m->name, ACCOUNTING_KERNEL_MODULE));
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

/* What a stack view shows: the real tree, or current pages of a subset (filtered from the page table). */
typedef struct StackView {
        Accounting *a;
        StackTree *tree;
        const Ksym *ksym;
        const QueryStackTree *q;
        uint64_t *filtered;     /* owned, per node; NULL for the real tree (true peaks) */
        size_t budget;          /* nodes left to render */
        UsymProcess *user_process;      /* symbols of the live process whose user frames are rendered */
} StackView;

static uint64_t view_current(const StackView *v, uint32_t i) {
        return v->filtered ? v->filtered[i] : stacktree_pages(v->tree, i).current_pages;
}

static uint64_t view_key(const StackView *v, uint32_t i) {
        if (v->q->sort == QUERY_SORT_PEAK && !v->filtered)
                return stacktree_pages(v->tree, i).peak_pages;
        return view_current(v, i);
}

static json_t *frame_json(const StackView *v, uint32_t i, const char *root_name) {
        const StackNode *n = stacktree_node(v->tree, i);
        const char *module = NULL;
        char name[512];
        KsymResult sym;
        UsymResult usym;

        switch (n->kind) {
        case STACK_FRAME_KERNEL:
                if (v->ksym && ksym_lookup(v->ksym, n->ip, &sym)) {
                        (void) snprintf(name, sizeof(name), "%s+0x%" PRIx64, sym.name, sym.offset);
                        module = sym.module;
                } else
                        (void) snprintf(name, sizeof(name), v->q->show_addresses ? "0x%" PRIx64 : "[unknown]", n->ip);
                break;
        case STACK_FRAME_USER:
                /* The ELF file's name takes the place of the kernel module's. */
                if (v->user_process && usym_process_lookup(v->user_process, n->ip, &usym)) {
                        (void) snprintf(name, sizeof(name), "%s+0x%" PRIx64, usym.name, usym.offset);
                        module = usym.object;
                } else
                        (void) snprintf(name, sizeof(name), "[user] 0x%" PRIx64, n->ip);
                break;
        case STACK_FRAME_TRUNCATED:
                (void) snprintf(name, sizeof(name), "[truncated]");
                break;
        case STACK_FRAME_PROCESS: {
                const Task *t = usage_task(accounting_usage(v->a), (uint32_t) n->ip);
                if (t)
                        (void) snprintf(name, sizeof(name), "[pid %d %s]", (int) t->pid, t->comm);
                else
                        (void) snprintf(name, sizeof(name), "[process]");
                break;
        }
        default:
                (void) snprintf(name, sizeof(name), "%s", root_name ?: "[all]");
        }

        /* Hex text: a kernel address does not fit varlink's signed 64-bit int. */
        char address[2 + 16 + 1];
        bool has_address = v->q->show_addresses && (n->kind == STACK_FRAME_KERNEL || n->kind == STACK_FRAME_USER);
        (void) snprintf(address, sizeof(address), "0x%016" PRIx64, n->ip);
        /* Symbol, module and file names and comm come from the kernel or ELF files, and the snprintf()s
         * above may have cut a character: utf8.h encodes what is not UTF-8. */
        return json_pack("{s:o, s:o, s:o, s:I, s:o, s:[], s:i}",
                         "frame", utf8_json_string(name),
                         "module", module ? utf8_json_string(module) : json_null(),
                         "address", has_address ? json_string(address) : json_null(),
                         "currentPages", (json_int_t) view_current(v, i),
                         "peakPages", v->filtered ? json_null() : json_integer((json_int_t) stacktree_pages(v->tree, i).peak_pages),
                         "children",
                         "truncatedChildren", 0);
}

/* User frames hang below their process's node, whose ip is the process's task index. Only a live
 * process's files say what its addresses were: an exited one's pid may belong to another by now. */
static UsymProcess *user_process_of(const StackView *v, const StackNode *node) {
        const Task *t = usage_task(accounting_usage(v->a), (uint32_t) node->ip);
        return v->q->usym && t && !t->exited && t->pid > 0 ? usym_process(v->q->usym, t->pid) : NULL;
}

static int render(StackView *v, uint32_t i, unsigned depth, const char *root_name, json_t **ret) {
        json_auto_t *o = frame_json(v, i, root_name);
        _cleanup_free_ SortItem *items = NULL;
        size_t n = 0, n_children = 0;
        int r;

        if (!o)
                return -ENOMEM;
        v->budget--;

        const StackNode *node = stacktree_node(v->tree, i);
        for (uint32_t c = node->first_child; c != STACK_NODE_NONE; c = stacktree_node(v->tree, c)->next_sibling)
                n_children++;
        if (n_children == 0)
                goto done;

        items = malloc(n_children * sizeof(SortItem));
        if (!items)
                return -ENOMEM;
        size_t shown = 0;
        for (uint32_t c = node->first_child; c != STACK_NODE_NONE; c = stacktree_node(v->tree, c)->next_sibling) {
                /* Subtrees with nothing now (or ever, when sorting by peak) are noise, not truncation. */
                if (view_key(v, c) == 0 && view_current(v, c) == 0)
                        continue;
                shown++;
                if (view_current(v, c) < v->q->min_pages && view_key(v, c) < v->q->min_pages)
                        continue;
                items[n++] = (SortItem) { view_key(v, c), stacktree_node(v->tree, c)->ip, c };
        }
        qsort(items, n, sizeof(SortItem), compare_items);

        size_t keep = depth >= v->q->max_depth ? 0 : MIN(n, (size_t) v->q->max_children);
        json_t *children = json_object_get(o, "children");
        size_t k;
        /* Process nodes do not nest: one session per process subtree, checked once per query. */
        if (node->kind == STACK_FRAME_PROCESS && keep > 0)
                v->user_process = user_process_of(v, node);
        for (k = 0; k < keep && v->budget > 0; k++) {
                json_t *child = NULL;
                r = render(v, items[k].idx, depth + 1, NULL, &child);
                if (r < 0)
                        return r;
                if (json_array_append_new(children, child) < 0)
                        return -ENOMEM;
        }
        if (node->kind == STACK_FRAME_PROCESS)
                v->user_process = NULL;
        if (set_new(o, "truncatedChildren", json_integer((json_int_t) (shown - k))) < 0)
                return -ENOMEM;
done:
        *ret = TAKE_PTR(o);
        return 0;
}

typedef struct FilterPages {
        StackView *view;
        Usage *usage;
        uint32_t process;       /* USAGE_TASK_NONE: any */
        uint16_t module;        /* USAGE_MODULE_NONE: any */
} FilterPages;

static void add_filtered_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        FilterPages *f = userdata;

        if (f->module != USAGE_MODULE_NONE && o->module != f->module)
                return;
        if (f->process != USAGE_TASK_NONE) {
                const Task *t = usage_task(f->usage, o->task);
                if (!t || t->process != f->process)
                        return;
        }
        f->view->filtered[o->node] += UINT64_C(1) << order;
}

int query_stacktree(Accounting *a, const QueryStackTree *q, json_t **ret) {
        StackTree *tree = accounting_stacktree(a);
        Usage *u = accounting_usage(a);
        StackView v = { .a = a, .tree = tree, .ksym = accounting_ksym(a), .q = q, .budget = QUERY_STACK_NODES_MAX };
        FilterPages f = { .view = &v, .usage = u, .process = USAGE_TASK_NONE, .module = USAGE_MODULE_NONE };
        uint32_t start = STACK_NODE_ROOT;
        char root_name[256] = "[all]";
        int r;

        if (q->sort != QUERY_SORT_CURRENT && q->sort != QUERY_SORT_PEAK)
                return -EINVAL;

        if (q->pid >= 0) {
                f.process = usage_find_process(u, q->pid);
                if (f.process == USAGE_TASK_NONE)
                        return -ESRCH;
                (void) snprintf(root_name, sizeof(root_name), "[pid %d %s]", (int) q->pid, usage_task(u, f.process)->comm);
                /* With per-process trees the process has its own tree, with true peaks. */
                uint32_t scope = stacktree_process_scope(tree, f.process);
                if (scope != STACK_NODE_NONE)
                        start = scope;
        }
        if (q->module) {
                for (uint16_t id = 1; id <= usage_module_count(u); id++)
                        if (utf8_escaped_streq(usage_module(u, id)->name, q->module))
                                f.module = id;
                if (f.module == USAGE_MODULE_NONE)
                        return -ENOENT;
                (void) snprintf(root_name, sizeof(root_name), "[module %s]", q->module);
        }

        /* A subset without a tree of its own: sum its blocks into their leaves, then up to the root.
         * A parent's index is always below its children's, so one backwards pass suffices. */
        if (start == STACK_NODE_ROOT && (f.process != USAGE_TASK_NONE || f.module != USAGE_MODULE_NONE)) {
                size_t n = stacktree_size(tree);
                v.filtered = calloc(n, sizeof(uint64_t));
                if (!v.filtered)
                        return -ENOMEM;
                pagemap_foreach(accounting_pagemap(a), add_filtered_block, &f);
                for (size_t i = n; i-- > 2;) {
                        uint32_t p = stacktree_node(tree, (uint32_t) i)->parent;
                        uint32_t twin = stacktree_node(tree, (uint32_t) i)->twin;
                        /* Process-tree leaves hold pages too: move them onto their global twins. */
                        if (twin != STACK_NODE_NONE) {
                                v.filtered[twin] += v.filtered[i];
                                v.filtered[i] = 0;
                        } else
                                v.filtered[p] += v.filtered[i];
                }
        }

        json_t *root = NULL;
        r = render(&v, start, 0, root_name, &root);
        uint64_t total = view_current(&v, start);
        free(v.filtered);
        if (r < 0)
                return r;
        *ret = json_pack("{s:o, s:I}", "root", root, "totalPages", (json_int_t) total);
        return *ret ? 0 : -ENOMEM;
}
