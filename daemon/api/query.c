/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-util.h"
#include "keyindex.h"
#include "ksym.h"
#include "macro.h"
#include "coldquery.h"
#include "query.h"
#include "read-file.h"
#include "utf8.h"
#include "varlink.h"
#include "view.h"

QuerySort query_sort_from_string(const char *s) {
        if (!s || streq(s, "current"))
                return QUERY_SORT_CURRENT;
        if (streq(s, "peak"))
                return QUERY_SORT_PEAK;
        if (streq(s, "allocs"))
                return QUERY_SORT_ALLOCS;
        return _QUERY_SORT_INVALID;
}

static uint64_t counter_key(Ledger pages, uint64_t allocs, QuerySort sort) {
        switch (sort) {
        case QUERY_SORT_PEAK:
                return pages.peak;
        case QUERY_SORT_ALLOCS:
                return allocs;
        default:
                return pages.current;
        }
}

/* Adds a key to an object, stealing the value; -ENOMEM if either is missing. */
static int set_new(json_t *o, const char *key, json_t *value) {
        if (!value || json_object_set_new(o, key, value) < 0)
                return -ENOMEM;
        return 0;
}

json_t *query_task_json(const ViewTask *t) {
        /* comm and cmdline are the process's bytes: utf8.h encodes them for JSON. */
        /* parentPid: processes only (a thread's parent is its process); null when unknown. */
        return json_pack("{s:i, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:b, s:n, s:o}",
                         "pid", (int) t->pid,
                         "comm", utf8_json_string(t->comm),
                         "cmdline", t->cmdline ? utf8_json_string(t->cmdline) : json_null(),
                         "currentPages", varlink_count(t->pages.current),
                         "peakPages", varlink_count(t->pages.peak),
                         "allocs", varlink_count(t->allocs),
                         "frees", varlink_count(t->frees),
                         "baselinePages", varlink_count(t->baseline_pages),
                         "exited", t->exited,
                         "threads",
                         "parentPid", !t->is_thread && t->parent_pid > 0 ? json_integer(t->parent_pid) : json_null());
}

uint32_t query_task_heap_serial(Accounting *a, const ViewTask *t) {
        uint32_t serial = !t->is_thread ? view_find_heap(a, t->pid) : VIEW_HEAP_NONE;
        ViewHeap h;

        if (serial == VIEW_HEAP_NONE || !view_heap(a, serial, &h) ||
            (h.ended && !(t->exited && h.end == MS_HEAP_END_EXIT)))
                return VIEW_HEAP_NONE;
        return serial;
}

int query_task_heap(Accounting *a, const ViewTask *t, json_t *task) {
        ViewHeap h;
        bool has = view_heap(a, query_task_heap_serial(a, t), &h);

        if (set_new(task, "heapBytes", has ? json_integer(varlink_count(h.counters.live_bytes)) : json_null()) < 0 ||
            set_new(task, "heapPeakBytes", has ? json_integer(varlink_count(h.counters.peak_bytes)) : json_null()) < 0)
                return -ENOMEM;
        return 0;
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

static bool task_matches(const ViewTask *t, const QueryTasks *q) {
        if (t->is_thread)
                return false;
        /* A task asked for by pid is shown whatever it holds. */
        if (q->hide_zero && q->pid < 0 && counter_key(t->pages, t->allocs, q->sort) == 0)
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

static json_t *threads_json(Accounting *a, uint32_t process, QuerySort sort) {
        json_auto_t *list = json_array();
        _cleanup_free_ SortItem *items = NULL;
        size_t n = 0, n_slots = view_task_slots(a);
        ViewTask t;

        if (!list)
                return NULL;
        items = malloc(MAX(n_slots, (size_t) 1) * sizeof(SortItem));
        if (!items)
                return NULL;
        for (uint32_t i = 0; i < n_slots; i++)
                if (view_task(a, i, &t) && t.is_thread && t.process == process)
                        items[n++] = (SortItem) { counter_key(t.pages, t.allocs, sort), (uint64_t) t.pid, i };
        qsort(items, n, sizeof(SortItem), compare_items);
        for (size_t i = 0; i < n && i < QUERY_LIMIT_MAX; i++)
                if (!view_task(a, items[i].idx, &t) || json_array_append_new(list, query_task_json(&t)) < 0)
                        return NULL;
        return TAKE_PTR(list);
}

int query_tasks(Accounting *a, const QueryTasks *q, json_t **ret) {
        size_t n = 0, n_slots = view_task_slots(a), limit = MIN(q->limit ?: 50, (size_t) QUERY_LIMIT_MAX);
        _cleanup_free_ SortItem *items = malloc(MAX(n_slots, (size_t) 1) * sizeof(SortItem));
        json_auto_t *list = json_array();
        ViewTask t;

        if (!items || !list)
                return -ENOMEM;

        for (uint32_t i = 0; i < n_slots; i++) {
                /* The "[evicted]" record is no task: it is reported apart, as "evicted". */
                if (i == VIEW_TASK_EVICTED || !view_task(a, i, &t) || !task_matches(&t, q))
                        continue;
                items[n++] = (SortItem) { counter_key(t.pages, t.allocs, q->sort), (uint64_t) (uint32_t) t.pid, i };
        }
        if (q->pid >= 0 && n == 0)
                return -ESRCH;

        qsort(items, n, sizeof(SortItem), compare_items);
        for (size_t i = 0; i < n && i < limit; i++) {
                if (!view_task(a, items[i].idx, &t))
                        return -ENOMEM;
                json_t *task = query_task_json(&t);
                if (!task || json_array_append_new(list, task) < 0)
                        return -ENOMEM;
                if (query_task_heap(a, &t, task) < 0)
                        return -ENOMEM;
                if (q->coldness && !t.is_thread) {
                        ColdSum sum = cold_scope_sum(a, q->coldness, (ViewScope) { VIEW_SCOPE_PROCESS, items[i].idx });
                        if (set_new(task, "cold", sum.known ? cold_pages_json(&sum) : json_null()) < 0)
                                return -ENOMEM;
                }
                if (q->threads && view_tracks_threads(a) &&
                    set_new(task, "threads", threads_json(a, items[i].idx, q->sort)) < 0)
                        return -ENOMEM;
        }

        *ret = json_pack("{s:O, s:o}", "tasks", list, "evicted", query_evicted_json(a));
        return *ret ? 0 : -ENOMEM;
}

json_t *query_evicted_json(Accounting *a) {
        ViewTask e = {};
        UsageStats s;

        (void) view_task(a, VIEW_TASK_EVICTED, &e);
        view_usage_stats(a, &s);
        return json_pack("{s:I, s:I, s:I}",
                         "tasks", varlink_count(s.tasks_evicted),
                         "currentPages", varlink_count(e.pages.current),
                         "peakPages", varlink_count(e.pages.peak));
}

int query_modules(Accounting *a, QuerySort sort, size_t limit, json_t **ret) {
        size_t n_modules = view_module_count(a), n = 0;
        _cleanup_free_ SortItem *items = malloc(MAX(n_modules, (size_t) 1) * sizeof(SortItem));
        json_auto_t *list = json_array();

        if (!items || !list)
                return -ENOMEM;
        limit = MIN(limit ?: 50, (size_t) QUERY_LIMIT_MAX);

        ViewModule m;
        for (uint16_t id = 1; id <= n_modules; id++) {
                if (!view_module(a, id, &m) || (m.pages.peak == 0 && !m.loaded))
                        continue;
                items[n++] = (SortItem) { counter_key(m.pages, m.allocs, sort), 0, id };
        }
        qsort(items, n, sizeof(SortItem), compare_items);
        for (size_t i = 0; i < n && i < limit; i++) {
                if (!view_module(a, (uint16_t) items[i].idx, &m))
                        return -ENOMEM;
                json_t *o = json_pack("{s:o, s:I, s:I, s:b}",
                                      "name", utf8_json_string(m.name),
                                      "currentPages", varlink_count(m.pages.current),
                                      "peakPages", varlink_count(m.pages.peak),
                                      "loaded", m.loaded || m.kernel);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

/*
 * A subset (one task or one module) without a tree of its own: the nodes on the paths from its leaves
 * to the root, each with the subset's current pages, and child lists of only those nodes. Built from the
 * charge index, so its size and cost are those of the subset, not of the page table or the whole tree.
 */
#define SUBSET_NONE UINT32_MAX

typedef struct SubsetNode {
        uint32_t node;                  /* stack tree node */
        uint32_t first_child;           /* entries; SUBSET_NONE ends a list */
        uint32_t next_sibling;
        uint64_t pages;
} SubsetNode;

typedef struct Subset {
        Accounting *a;
        SubsetNode *entries;            /* owned */
        size_t n, n_allocated;
        KeyIndex by_node;               /* owned: stack node -> entry */
        int error;                      /* first failure while building */
} Subset;

static uint32_t subset_find(const Subset *s, uint32_t node) {
        uint32_t e = key_index_get(&s->by_node, node);
        return e == KEY_INDEX_NONE ? SUBSET_NONE : e;
}

/* The entry of node, created (unlinked, empty) if new; SUBSET_NONE on OOM. */
static uint32_t subset_get(Subset *s, uint32_t node, bool *ret_created) {
        uint32_t e = subset_find(s, node);

        *ret_created = false;
        if (e != SUBSET_NONE)
                return e;
        if (greedy_realloc(&s->entries, &s->n_allocated, s->n + 1, sizeof(SubsetNode), 256) < 0 ||
            key_index_put(&s->by_node, node, (uint32_t) s->n) < 0)
                return SUBSET_NONE;
        e = (uint32_t) s->n++;
        s->entries[e] = (SubsetNode) { .node = node, .first_child = SUBSET_NONE, .next_sibling = SUBSET_NONE };
        *ret_created = true;
        return e;
}

/* A node of a tree, with links to none when the id is out of range. */
static ViewNode node_at(Accounting *a, ViewTree tree, uint32_t i) {
        ViewNode n = { .id = i, .parent = VIEW_NODE_NONE, .first_child = VIEW_NODE_NONE,
                       .next_sibling = VIEW_NODE_NONE };

        (void) view_node(a, tree, i, &n);
        return n;
}

/*
 * ViewCellFn: the cell's pages go to its global leaf's entry; missing ancestors are created and linked up
 * to the first one that exists, so building costs one step per cell plus one per node of the subset (the
 * sums up the tree come after, in subset_sum()).
 */
static void subset_add_cell(void *userdata, const ViewCell *cell) {
        Subset *s = userdata;
        uint32_t child = SUBSET_NONE, leaf = cell->leaf;
        uint64_t pages = cell->pages;

        if (s->error < 0)
                return;
        for (uint32_t i = leaf; i != VIEW_NODE_NONE; i = node_at(s->a, VIEW_TREE_PAGES, i).parent) {
                bool created;
                uint32_t e = subset_get(s, i, &created);
                if (e == SUBSET_NONE) {
                        s->error = -ENOMEM;
                        return;
                }
                if (i == leaf)
                        s->entries[e].pages += pages;
                if (child != SUBSET_NONE) {
                        s->entries[child].next_sibling = s->entries[e].first_child;
                        s->entries[e].first_child = child;
                }
                if (!created)
                        return;
                child = e;
        }
}

/* Adds every entry's pages into its parent's, children first: one pass over the subset. */
static int subset_sum(Subset *s) {
        uint32_t root = subset_find(s, VIEW_NODE_ROOT);
        if (root == SUBSET_NONE)
                return 0;

        /* Entries in depth-first order, parents before children; summed backwards. */
        _cleanup_free_ uint32_t *order = malloc(s->n * sizeof(uint32_t)), *parent = malloc(s->n * sizeof(uint32_t));
        size_t n = 0;
        if (!order || !parent)
                return -ENOMEM;
        order[n++] = root;
        parent[root] = SUBSET_NONE;
        for (size_t k = 0; k < n; k++)
                for (uint32_t c = s->entries[order[k]].first_child; c != SUBSET_NONE; c = s->entries[c].next_sibling) {
                        parent[c] = order[k];
                        order[n++] = c;
                }
        for (size_t k = n; k-- > 1;)
                s->entries[parent[order[k]]].pages += s->entries[order[k]].pages;
        return 0;
}

static void subset_done(Subset *s) {
        free(s->entries);
        key_index_done(&s->by_node);
}

/* What a stack view shows: the real tree, or current pages of a subset. */
typedef struct StackView {
        Accounting *a;
        ViewTree tree;
        const Ksym *ksym;
        const QueryStackTree *q;
        Subset *subset;         /* NULL for the real tree (true peaks) */
        size_t budget;          /* nodes left to render */
        UsymProcess *user_process;      /* symbols of the live process whose user frames are rendered */
        bool user_addresses;    /* that process's raw user-space addresses may be shown */
} StackView;

static uint64_t view_current(const StackView *v, uint32_t i) {
        if (!v->subset)
                return view_node_pages(v->a, v->tree, i).current;
        uint32_t e = subset_find(v->subset, i);
        return e == SUBSET_NONE ? 0 : v->subset->entries[e].pages;
}

/* The children of node i in the view (for a subset, only those holding its pages) into a new array. */
static int view_children(const StackView *v, uint32_t i, uint32_t **ret, size_t *ret_n) {
        _cleanup_free_ uint32_t *c = NULL;
        size_t n = 0, k = 0;

        if (v->subset) {
                const Subset *s = v->subset;
                uint32_t e = subset_find(s, i);
                uint32_t first = e == SUBSET_NONE ? SUBSET_NONE : s->entries[e].first_child;
                for (uint32_t x = first; x != SUBSET_NONE; x = s->entries[x].next_sibling)
                        n++;
                if (n > 0 && !(c = malloc(n * sizeof(uint32_t))))
                        return -ENOMEM;
                for (uint32_t x = first; x != SUBSET_NONE; x = s->entries[x].next_sibling)
                        c[k++] = s->entries[x].node;
        } else {
                uint32_t first = node_at(v->a, v->tree, i).first_child;
                for (uint32_t x = first; x != VIEW_NODE_NONE; x = node_at(v->a, v->tree, x).next_sibling)
                        n++;
                if (n > 0 && !(c = malloc(n * sizeof(uint32_t))))
                        return -ENOMEM;
                for (uint32_t x = first; x != VIEW_NODE_NONE; x = node_at(v->a, v->tree, x).next_sibling)
                        c[k++] = x;
        }
        *ret = TAKE_PTR(c);
        *ret_n = n;
        return 0;
}

static uint64_t view_key(const StackView *v, uint32_t i) {
        if (v->q->sort == QUERY_SORT_PEAK && !v->subset)
                return view_node_pages(v->a, v->tree, i).peak;
        return view_current(v, i);
}

static json_t *frame_json(const StackView *v, uint32_t i, const char *root_name) {
        ViewNode node = node_at(v->a, v->tree, i);
        const ViewNode *n = &node;
        const char *module = NULL;
        _cleanup_free_ char *name = NULL;
        KsymResult sym;
        UsymResult usym;

        switch (n->kind) {
        case VIEW_FRAME_KERNEL:
                if (n->ip == MS_FRAME_NOT_SAMPLED)
                        name = strdup_printf("[not sampled]");
                else if (v->ksym && ksym_lookup(v->ksym, n->ip, &sym)) {
                        name = strdup_printf("%s+0x%" PRIx64, sym.name, sym.offset);
                        module = sym.module;
                } else
                        name = strdup_printf(v->q->show_addresses ? "0x%" PRIx64 : "[unknown]", n->ip);
                break;
        case VIEW_FRAME_USER:
                /* The ELF file's name takes the place of the kernel module's. */
                if (v->user_process && usym_process_lookup(v->user_process, n->ip, &usym)) {
                        name = strdup_printf("%s+0x%" PRIx64, usym.name, usym.offset);
                        module = usym.object;
                } else if (v->user_addresses)
                        name = strdup_printf("[user] 0x%" PRIx64, n->ip);
                else
                        name = strdup_printf("[user] [unknown]");
                break;
        case VIEW_FRAME_TRUNCATED:
                name = strdup_printf("[truncated]");
                break;
        case VIEW_FRAME_PROCESS: {
                /* A process forgotten to bound memory is no task any more, as in Tasks: what it still
                 * holds is "[evicted]"'s. */
                ViewTask t;
                if (view_task_of_scope(v->a, n->ip, &t))
                        name = strdup_printf("[pid %d %s]", (int) t.pid, t.comm);
                else
                        name = strdup_printf("%s", VIEW_EVICTED_COMM);
                break;
        }
        default:
                name = strdup_printf("%s", root_name ?: "[all]");
        }

        /* Hex text: a kernel address does not fit varlink's signed 64-bit int. */
        char address[2 + 16 + 1];
        bool has_address = n->kind == VIEW_FRAME_KERNEL ? v->q->show_addresses :
                           n->kind == VIEW_FRAME_USER && v->q->show_addresses && v->user_addresses;
        (void) snprintf(address, sizeof(address), "0x%016" PRIx64, n->ip);
        /* Names are formatted to their length: a C++ or Rust symbol runs to hundreds of bytes. */
        if (!name)
                return NULL;
        /* Symbol, module and file names and comm come from the kernel or ELF files: utf8.h encodes what
         * is not UTF-8. */
        return json_pack("{s:o, s:o, s:o, s:I, s:o, s:[], s:i}",
                         "frame", utf8_json_string(name),
                         "module", module ? utf8_json_string(module) : json_null(),
                         "address", has_address ? json_string(address) : json_null(),
                         "currentPages", varlink_count(view_current(v, i)),
                         "peakPages",
                         v->subset ? json_null() : json_integer(varlink_count(view_node_pages(v->a, v->tree, i).peak)),
                         "children",
                         "truncatedChildren", 0);
}

/* User frames hang below their process's node, whose ip is its scope (view_task_of_scope()). Only a live
 * process's files say what its addresses were: an exited one's pid may belong to another by now. */
static UsymProcess *user_process_of(const StackView *v, const ViewNode *node) {
        ViewTask t;
        return v->q->usym && view_task_of_scope(v->a, node->ip, &t) && !t.exited && t.pid > 0 ?
                usym_process(v->q->usym, t.pid) : NULL;
}

/* Whether the caller may see the raw user-space addresses of node's process: root always; another caller
 * only for a running process that is wholly its own (so that it could read the process's maps itself),
 * never for an exited one, whose owner can no longer be asked. */
static bool user_addresses_of(const StackView *v, const ViewNode *node) {
        ViewTask t;
        uid_t owner;

        switch (v->q->user_addresses) {
        case QUERY_USER_ADDRESSES_ALL:
                return true;
        case QUERY_USER_ADDRESSES_OWN:
                return view_task_of_scope(v->a, node->ip, &t) && !t.exited && t.pid > 0 &&
                       read_proc_owner(t.pid, &owner) >= 0 && owner == v->q->caller_uid;
        default:
                return false;
        }
}

/* Enters the process of node (a VIEW_FRAME_PROCESS node) for the user frames below it. */
static void view_enter_process(StackView *v, const ViewNode *node) {
        v->user_process = user_process_of(v, node);
        v->user_addresses = user_addresses_of(v, node);
}

static void view_leave_process(StackView *v) {
        v->user_process = NULL;
        v->user_addresses = false;
}

static int render(StackView *v, uint32_t i, unsigned depth, const char *root_name, json_t **ret) {
        json_auto_t *o = frame_json(v, i, root_name);
        _cleanup_free_ SortItem *items = NULL;
        _cleanup_free_ uint32_t *children_of = NULL;
        size_t n = 0, n_children = 0;
        int r;

        if (!o)
                return -ENOMEM;
        v->budget--;

        ViewNode node = node_at(v->a, v->tree, i);
        r = view_children(v, i, &children_of, &n_children);
        if (r < 0)
                return r;
        if (n_children == 0)
                goto done;

        items = malloc(n_children * sizeof(SortItem));
        if (!items)
                return -ENOMEM;
        size_t shown = 0;
        for (size_t ci = 0; ci < n_children; ci++) {
                uint32_t c = children_of[ci];
                /* Subtrees with nothing now (or ever, when sorting by peak) are noise, not truncation. */
                if (view_key(v, c) == 0 && view_current(v, c) == 0)
                        continue;
                shown++;
                if (view_current(v, c) < v->q->min_pages && view_key(v, c) < v->q->min_pages)
                        continue;
                items[n++] = (SortItem) { view_key(v, c), node_at(v->a, v->tree, c).ip, c };
        }
        qsort(items, n, sizeof(SortItem), compare_items);

        size_t keep = depth >= v->q->max_depth ? 0 : MIN(n, (size_t) v->q->max_children);
        json_t *children = json_object_get(o, "children");
        size_t k;
        /* Process nodes do not nest: one session per process subtree, checked once per query. */
        if (node.kind == VIEW_FRAME_PROCESS && keep > 0)
                view_enter_process(v, &node);
        for (k = 0; k < keep && v->budget > 0; k++) {
                json_t *child = NULL;
                r = render(v, items[k].idx, depth + 1, NULL, &child);
                if (r < 0)
                        return r;
                if (json_array_append_new(children, child) < 0)
                        return -ENOMEM;
        }
        if (node.kind == VIEW_FRAME_PROCESS)
                view_leave_process(v);
        if (set_new(o, "truncatedChildren", json_integer(varlink_count(shown - k))) < 0)
                return -ENOMEM;
done:
        *ret = TAKE_PTR(o);
        return 0;
}

int query_stacktree(Accounting *a, const QueryStackTree *q, json_t **ret) {
        StackView v = { .a = a, .tree = VIEW_TREE_PAGES, .ksym = view_ksym(a), .q = q,
                        .budget = QUERY_STACK_NODES_MAX };
        uint32_t process = VIEW_TASK_NONE, start = VIEW_NODE_ROOT;
        uint16_t module = VIEW_MODULE_NONE;
        ViewTask t;
        char root_name[256] = "[all]";
        int r;

        if (q->sort != QUERY_SORT_CURRENT && q->sort != QUERY_SORT_PEAK)
                return -EINVAL;

        if (q->pid >= 0) {
                process = view_find_process(a, q->pid);
                if (process == VIEW_TASK_NONE || !view_task(a, process, &t))
                        return -ESRCH;
                (void) snprintf(root_name, sizeof(root_name), "[pid %d %s]", (int) q->pid, t.comm);
                /* With per-process trees the process has its own tree, with true peaks. */
                uint32_t own = view_process_tree(a, process);
                if (own != VIEW_NODE_NONE)
                        start = own;
        }
        uint32_t unit = VIEW_UNIT_NONE;
        if (q->unit) {
                unit = view_find_unit_shown(a, q->unit);
                if (unit == VIEW_UNIT_NONE)
                        return -ENXIO;
                (void) snprintf(root_name, sizeof(root_name), "[unit %s]", q->unit);
        }
        if (q->module) {
                module = view_find_module_shown(a, q->module);
                if (module == VIEW_MODULE_NONE)
                        return -ENOENT;
                (void) snprintf(root_name, sizeof(root_name), "[module %s]", q->module);
        }

        /* A subset without a tree of its own: its cells of the charge index, summed up to the root. */
        Subset subset = { .a = a };
        if (start == VIEW_NODE_ROOT &&
            (process != VIEW_TASK_NONE || module != VIEW_MODULE_NONE || unit != VIEW_UNIT_NONE)) {
                ViewScope of = process != VIEW_TASK_NONE ? (ViewScope) { VIEW_SCOPE_PROCESS, process } :
                               unit != VIEW_UNIT_NONE ? (ViewScope) { VIEW_SCOPE_UNIT, unit } :
                               (ViewScope) { VIEW_SCOPE_MODULE, module };
                view_foreach_cell(a, of, subset_add_cell, &subset);
                if (subset.error >= 0)
                        subset.error = subset_sum(&subset);
                if (subset.error < 0) {
                        subset_done(&subset);
                        return subset.error;
                }
                v.subset = &subset;
        }

        json_t *root = NULL;
        r = render(&v, start, 0, root_name, &root);
        uint64_t total = view_current(&v, start);
        subset_done(&subset);
        if (r < 0)
                return r;
        *ret = json_pack("{s:o, s:I}", "root", root, "totalPages", varlink_count(total));
        return *ret ? 0 : -ENOMEM;
}

/* Current pages per (listed unit, global stack leaf): what Unit.topStacks is chosen from. */
typedef struct LeafPages {
        uint32_t rank;                  /* the unit's place in the reply */
        uint32_t leaf;
        uint64_t pages;
} LeafPages;

typedef struct LeafList {
        const uint32_t *rank_of;        /* per unit index: its place in the reply, UINT32_MAX if not listed */
        size_t n_units;
        LeafPages *items;               /* owned */
        size_t n, n_allocated;
        int error;
} LeafList;

static void leaf_list_add(void *userdata, const ViewCell *cell) {
        LeafList *l = userdata;
        uint32_t rank = cell->unit < l->n_units ? l->rank_of[cell->unit] : UINT32_MAX;

        if (l->error < 0 || rank == UINT32_MAX)
                return;
        if (greedy_realloc(&l->items, &l->n_allocated, l->n + 1, sizeof(LeafPages), 64) < 0) {
                l->error = -ENOMEM;
                return;
        }
        l->items[l->n++] = (LeafPages) { rank, cell->leaf, cell->pages };
}

static int compare_rank_leaf(const void *a, const void *b) {
        const LeafPages *x = a, *y = b;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        return x->leaf < y->leaf ? -1 : x->leaf > y->leaf;
}

/* Per unit, biggest first; ties by leaf, so replies are deterministic. */
static int compare_rank_pages(const void *a, const void *b) {
        const LeafPages *x = a, *y = b;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        if (x->pages != y->pages)
                return x->pages > y->pages ? -1 : 1;
        return x->leaf < y->leaf ? -1 : x->leaf > y->leaf;
}

/*
 * The (unit, leaf) pairs of the listed units, one per pair, sorted by unit and then pages: one walk of
 * the charge cells for all of them, so a reply with stacks costs one walk whatever its limit. Returns the
 * number of pairs in *ret (owned by the caller).
 */
static int listed_unit_leaves(Accounting *a, const uint32_t *rank_of, size_t n_units, LeafPages **ret,
                size_t *ret_n) {
        LeafList l = { .rank_of = rank_of, .n_units = n_units };
        size_t n = 0;

        view_foreach_cell(a, VIEW_SCOPE_EVERY, leaf_list_add, &l);
        if (l.error < 0) {
                free(l.items);
                return l.error;
        }
        /* Cells of several processes, modules and cgroups of a unit share leaves. */
        if (l.n > 0) {
                qsort(l.items, l.n, sizeof(LeafPages), compare_rank_leaf);
                for (size_t i = 0; i < l.n; i++)
                        if (n > 0 && l.items[n - 1].rank == l.items[i].rank && l.items[n - 1].leaf == l.items[i].leaf)
                                l.items[n - 1].pages += l.items[i].pages;
                        else
                                l.items[n++] = l.items[i];
                qsort(l.items, n, sizeof(LeafPages), compare_rank_pages);
        }
        *ret = l.items;
        *ret_n = n;
        return 0;
}

/* A leaf's frames from the leaf up, as StackNode.frame, without roots and the [pid N comm] node, which
 * are not frames of the stack. */
static json_t *leaf_frames_json(StackView *v, uint32_t leaf) {
        json_auto_t *frames = json_array();
        size_t depth = 0;

        if (!frames)
                return NULL;
        /* User frames need the session of their process, whose node is above them. */
        for (uint32_t i = leaf; i != VIEW_NODE_NONE; i = node_at(v->a, v->tree, i).parent) {
                ViewNode n = node_at(v->a, v->tree, i);
                if (n.kind == VIEW_FRAME_PROCESS) {
                        view_enter_process(v, &n);
                        break;
                }
        }
        for (uint32_t i = leaf; i != VIEW_NODE_NONE && depth < 512; i = node_at(v->a, v->tree, i).parent, depth++) {
                ViewFrameKind kind = node_at(v->a, v->tree, i).kind;
                if (kind == VIEW_FRAME_ROOT || kind == VIEW_FRAME_PROCESS)
                        continue;
                json_auto_t *f = frame_json(v, i, NULL);
                if (!f || json_array_append(frames, json_object_get(f, "frame")) < 0) {
                        view_leave_process(v);
                        return NULL;
                }
        }
        view_leave_process(v);
        return TAKE_PTR(frames);
}

struct QueryFramer {
        QueryStackTree q;               /* the addresses and symbols allowed, a copy */
        StackView v;
};

QueryFramer *query_framer_new(Accounting *a, ViewTree tree, const QueryStackTree *view) {
        QueryFramer *f = calloc(1, sizeof(QueryFramer));

        if (!f)
                return NULL;
        f->q = (QueryStackTree) { .show_addresses = view->show_addresses, .user_addresses = view->user_addresses,
                                  .caller_uid = view->caller_uid, .usym = view->usym };
        f->v = (StackView) { .a = a, .tree = tree, .ksym = view_ksym(a), .q = &f->q };
        return f;
}

QueryFramer *query_framer_free(QueryFramer *f) {
        free(f);
        return NULL;
}

json_t *query_framer_frame(QueryFramer *f, uint32_t node) {
        ViewNode n = node_at(f->v.a, f->v.tree, node);
        json_auto_t *full = NULL;

        if (n.kind == VIEW_FRAME_PROCESS)
                view_enter_process(&f->v, &n);
        full = frame_json(&f->v, node, NULL);
        if (!full)
                return NULL;
        return json_pack("{s:O, s:O, s:O}", "frame", json_object_get(full, "frame"), "module",
                         json_object_get(full, "module"), "address", json_object_get(full, "address"));
}

/* StackPages of one leaf. */
static json_t *stack_pages_json(StackView *v, uint32_t leaf, uint64_t pages) {
        json_t *frames = leaf_frames_json(v, leaf);
        return frames ? json_pack("{s:o, s:I}", "frames", frames, "currentPages", varlink_count(pages)) : NULL;
}

json_t *query_tree_frames_json(Accounting *a, ViewTree tree, uint32_t leaf, const QueryStackTree *view) {
        QueryStackTree sq = { .show_addresses = view->show_addresses, .user_addresses = view->user_addresses,
                              .caller_uid = view->caller_uid, .usym = view->usym };
        StackView v = { .a = a, .tree = tree, .ksym = view_ksym(a), .q = &sq };
        return leaf_frames_json(&v, leaf);
}

json_t *query_stack_frames_json(Accounting *a, uint32_t leaf, const QueryStackTree *view) {
        return query_tree_frames_json(a, VIEW_TREE_PAGES, leaf, view);
}

int query_units(Accounting *a, const QueryUnits *q, json_t **ret) {
        size_t n_units = view_unit_count(a), n = 0, limit = MIN(q->limit ?: 50, (size_t) QUERY_LIMIT_MAX);
        _cleanup_free_ SortItem *items = malloc(n_units * sizeof(SortItem));
        _cleanup_free_ uint32_t *tasks = calloc(n_units, sizeof(uint32_t));
        _cleanup_free_ LeafPages *leaves = NULL;
        size_t n_leaves = 0, next_leaf = 0;
        json_auto_t *list = json_array();
        uint32_t only = VIEW_UNIT_NONE;
        ViewUnit x;
        ViewTask t;
        int r;

        if (q->sort != QUERY_SORT_CURRENT && q->sort != QUERY_SORT_PEAK)
                return -EINVAL;
        if (!items || !tasks || !list)
                return -ENOMEM;
        if (q->name) {
                only = view_find_unit_shown(a, q->name);
                if (only == VIEW_UNIT_NONE)
                        return -ENXIO;
        }

        /* Live processes by the unit of the cgroup they last allocated in. */
        for (uint32_t i = 0; i < view_task_slots(a); i++)
                if (view_task(a, i, &t) && !t.is_thread && !t.exited && t.unit != VIEW_UNIT_NONE && t.unit < n_units)
                        tasks[t.unit]++;

        for (uint32_t i = 1; i < n_units; i++) {
                if (!view_unit(a, i, &x) || (only != VIEW_UNIT_NONE && i != only))
                        continue;
                uint64_t key = counter_key(x.pages, x.allocs, q->sort);
                if (only == VIEW_UNIT_NONE && (x.pages.peak == 0 || (q->hide_zero && key == 0)))
                        continue;
                items[n++] = (SortItem) { key, 0, i };
        }
        qsort(items, n, sizeof(SortItem), compare_items);
        n = MIN(n, limit);

        if (q->stacks > 0 && n > 0) {
                _cleanup_free_ uint32_t *rank_of = malloc(n_units * sizeof(uint32_t));
                if (!rank_of)
                        return -ENOMEM;
                memset(rank_of, 0xff, n_units * sizeof(uint32_t));
                for (size_t i = 0; i < n; i++)
                        rank_of[items[i].idx] = (uint32_t) i;
                r = listed_unit_leaves(a, rank_of, n_units, &leaves, &n_leaves);
                if (r < 0)
                        return r;
        }

        _cleanup_free_ ColdSum *cold = NULL;
        if (q->coldness && n > 0) {
                r = cold_unit_sums(a, q->coldness, &cold);
                if (r < 0)
                        return r;
        }
        QueryStackTree sq = { .show_addresses = q->show_addresses, .user_addresses = q->user_addresses,
                              .caller_uid = q->caller_uid, .usym = q->usym };
        StackView v = { .a = a, .tree = VIEW_TREE_PAGES, .ksym = view_ksym(a), .q = &sq };
        for (size_t i = 0; i < n; i++) {
                if (!view_unit(a, items[i].idx, &x))
                        return -ENOMEM;
                json_auto_t *stacks = q->stacks > 0 ? json_array() : json_null();
                if (!stacks)
                        return -ENOMEM;
                /* This unit's leaves are next in the list, biggest first. */
                for (unsigned k = 0; next_leaf < n_leaves && leaves[next_leaf].rank == i; next_leaf++, k++) {
                        if (k >= q->stacks)
                                continue;
                        json_t *o = stack_pages_json(&v, leaves[next_leaf].leaf, leaves[next_leaf].pages);
                        if (!o || json_array_append_new(stacks, o) < 0)
                                return -ENOMEM;
                }
                /* Cgroup and unit names are the kernel's bytes, as module names are. */
                json_t *o = json_pack("{s:o, s:o, s:I, s:I, s:I, s:b, s:O}",
                                      "name", utf8_json_string(x.name ?: VIEW_UNKNOWN_UNIT),
                                      "cgroup", x.cgroup ? utf8_json_string(x.cgroup) : json_null(),
                                      "currentPages", varlink_count(x.pages.current),
                                      "peakPages", varlink_count(x.pages.peak),
                                      "tasks", varlink_count(tasks[items[i].idx]),
                                      "live", x.live,
                                      "topStacks", stacks);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
                if (cold && set_new(o, "cold", cold[items[i].idx].known ? cold_pages_json(&cold[items[i].idx]) :
                                                json_null()) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

int query_top_stacks(Accounting *a, size_t limit, bool show_addresses, UserSymbols *usym, json_t **ret) {
        size_t n_units = view_unit_count(a), n_leaves = 0;
        _cleanup_free_ uint32_t *rank_of = calloc(MAX(n_units, (size_t) 1), sizeof(uint32_t));
        _cleanup_free_ LeafPages *leaves = NULL;
        json_auto_t *list = json_array();
        int r;

        if (!rank_of || !list)
                return -ENOMEM;
        /* Every unit (and no unit) at rank 0: the leaves of all cells, summed over cgroups. */
        r = listed_unit_leaves(a, rank_of, MAX(n_units, (size_t) 1), &leaves, &n_leaves);
        if (r < 0)
                return r;
        QueryStackTree sq = { .show_addresses = show_addresses, .usym = usym };
        StackView v = { .a = a, .tree = VIEW_TREE_PAGES, .ksym = view_ksym(a), .q = &sq };
        for (size_t i = 0; i < n_leaves && i < MIN(limit, (size_t) QUERY_LIMIT_MAX); i++) {
                if (leaves[i].pages == 0)
                        break;
                json_t *o = stack_pages_json(&v, leaves[i].leaf, leaves[i].pages);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(list);
        return 0;
}
