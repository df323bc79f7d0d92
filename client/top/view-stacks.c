/* SPDX-License-Identifier: MIT */

/*
 * The stacks view: the StackTree of a scope (a task, a module, a unit or everything), callers first,
 * browsed as a tree that opens node by node. Its rows are the tree's nodes, walked into stack_nodes each
 * parent before its children; a node is kept selected and open by its path of labels from the root.
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "reply.h"
#include "view-class.h"

/* StackTree limits for the live view: deep enough for kernel stacks, wide enough to browse. */
#define TOP_STACK_DEPTH 64
#define TOP_STACK_CHILDREN 32

static const char *const sort_names[_TOP_STACK_COLUMN_MAX] = {
        [TOP_STACK_CURRENT] = "current",
        [TOP_STACK_PEAK] = "peak",
};

enum { COL_CURRENT, COL_PEAK, COL_STACK, _COL_MAX };

static const TopColumn columns[_COL_MAX] = {
        [COL_CURRENT] = { "CURRENT", 10, TOP_STACK_CURRENT },
        [COL_PEAK] = { "PEAK", 10, TOP_STACK_PEAK },
        [COL_STACK] = { "STACK", 0, -1, TOP_COLUMN_LEFT },
};

const TopStackRow *top_model_stack_row(const TopModel *m, size_t row) {
        size_t value = top_model_row_value(m, TOP_VIEW_STACKS, row);
        return value < m->n_stack_nodes ? &m->stack_nodes[value] : NULL;
}

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

static void stacks_clear(TopModel *m) {
        m->stack_nodes = mfree_ptr(m->stack_nodes);
        m->n_stack_nodes = 0;
        stack_node_free(m->stack_root);
        m->stack_root = NULL;
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

static size_t count_nodes(const TopStackNode *n) {
        size_t k = 1;

        for (size_t i = 0; i < n->n_children; i++)
                k += count_nodes(&n->children[i]);
        return k;
}

/* Depth first, so a node's first child follows it and its subtree is the run of nodes after it. */
static void walk_nodes(TopModel *m, const TopStackNode *n, size_t parent, unsigned depth) {
        size_t i = m->n_stack_nodes++;

        m->stack_nodes[i] = (TopStackRow) { .node = n, .parent = parent, .depth = depth };
        for (size_t c = 0; c < n->n_children; c++)
                walk_nodes(m, &n->children[c], i, depth + 1);
}

/* A StackTree reply for the current scope. */
static int stacks_read(TopModel *m, json_t *reply) {
        TopStackNode *root;
        TopStackRow *nodes;
        int r;

        root = calloc(1, sizeof(TopStackNode));
        if (!root)
                return -ENOMEM;
        r = parse_stack_node(reply_object(reply, "root"), root, 0, false);
        if (r >= 0 && reply_object(reply, "heap"))
                r = add_heap_node(root, reply_object(reply, "heap"));
        nodes = r >= 0 ? calloc(count_nodes(root), sizeof(TopStackRow)) : NULL;
        if (!nodes) {
                stack_node_free(root);
                return r < 0 ? r : -ENOMEM;
        }
        stacks_clear(m);
        m->stack_root = root;
        m->stack_nodes = nodes;
        walk_nodes(m, root, SIZE_MAX, 0);
        m->stack_sample_interval = reply_count(reply, "stackSampleInterval");
        return 0;
}

/* StackTree of the scope, in the order of the view's sort. */
static json_t *stacks_parameters(const TopModel *m) {
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

static const TopViewFetch stacks_fetch = {
        .method = "io.memstrack.StackTree",
        .what = "the stack tree",
        .parameters = stacks_parameters,
        .read = stacks_read,
};

/* "[all]", "[pid 42 comm]", "[module ext4]" or "[unit sshd.service]": new string, NULL on OOM. */
static char *stacks_caption(const TopModel *m) {
        char *s;
        int r;

        if (m->scope_pid >= 0) {
                const char *comm = NULL;
                for (size_t i = 0; i < m->n_tasks; i++)
                        if (m->tasks[i].pid == m->scope_pid)
                                comm = m->tasks[i].comm;
                r = asprintf(&s, "[pid %" PRIi64 "%s%s]", m->scope_pid, comm ? " " : "", comm ?: "");
        } else if (m->scope_module)
                r = asprintf(&s, "[module %s]", m->scope_module);
        else if (m->scope_unit)
                r = asprintf(&s, "[unit %s]", m->scope_unit);
        else
                r = asprintf(&s, "[all]");
        return r < 0 ? NULL : s;
}

const char *top_model_scope_label(const TopModel *m, char *buf, size_t size) {
        _cleanup_free_ char *label = stacks_caption(m);

        (void) snprintf(buf, size, "%s", label ?: "");
        return buf;
}

static bool same_name(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

/* At most one of pid (>= 0), module and unit is set; none: all stacks. */
static int set_scope(TopModel *m, int64_t pid, const char *module, const char *unit) {
        _cleanup_free_ char *module_copy = NULL, *unit_copy = NULL;
        TopTable *t = &m->tables[TOP_VIEW_STACKS];

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
        stacks_clear(m);
        t->selected = 0;
        t->selected_key = mfree_ptr(t->selected_key);
        int r = top_model_rebuild(m);
        return r < 0 ? r : 1;
}

int top_model_open_owner(TopModel *m) {
        TopOwner o;
        int r = 0;

        if (top_model_owner(m, m->view, top_model_selected(m, m->view), &o))
                r = set_scope(m, o.pid, o.module, o.unit);
        if (r >= 0)
                m->view = TOP_VIEW_STACKS;
        return r;
}

int top_model_scope_all(TopModel *m) {
        int r = set_scope(m, -1, NULL, NULL);

        if (r >= 0)
                m->view = TOP_VIEW_STACKS;
        return r;
}

static size_t stacks_n_items(const TopModel *m) {
        return m->n_stack_nodes;
}

/* The labels from the root down to the node, separated by '\x1f'. */
static char *stacks_key(const TopModel *m, size_t value) {
        size_t len = 0, at;
        char *path;

        assert(value < m->n_stack_nodes);
        /* Each label and what follows it: a separator, or for the node's own the end. */
        for (size_t i = value; i != SIZE_MAX; i = m->stack_nodes[i].parent)
                len += strlen(m->stack_nodes[i].node->label) + 1;
        path = malloc(len);
        if (!path)
                return NULL;
        /* Filled from the end, the node's own label last; each label but the root's has a separator before. */
        at = len - 1;
        path[at] = '\0';
        for (size_t i = value; i != SIZE_MAX; i = m->stack_nodes[i].parent) {
                const char *label = m->stack_nodes[i].node->label;
                size_t k = strlen(label);
                at -= k;
                memcpy(path + at, label, k);
                if (at > 0)
                        path[--at] = '\x1f';
        }
        return path;
}

static int stacks_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const TopStackNode *x = m->stack_nodes[a].node, *y = m->stack_nodes[b].node;
        int c = 0;

        if (sort == TOP_STACK_PEAK)
                c = top_compare_u64_desc((uint64_t) MAX(x->peak_pages, (int64_t) 0),
                                         (uint64_t) MAX(y->peak_pages, (int64_t) 0));
        if (c == 0)
                c = top_compare_u64_desc(x->current_pages, y->current_pages);
        /* Equal counts keep the daemon's order, which the walk kept. */
        return c ?: (a < b ? -1 : a > b);
}

static bool stacks_matches(const TopModel *m, size_t item, const char *filter) {
        return top_text_matches(m->stack_nodes[item].node->label, filter);
}

static int stacks_forest(TopModel *m, const size_t *items, size_t n, TopForest *ret) {
        _cleanup_free_ size_t *values = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        _cleanup_free_ size_t *parent = calloc(MAX(n, (size_t) 1), sizeof(size_t));

        if (!values || !parent)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                /* A browse tree gets every node in order: a node's index is its position. */
                assert(items[i] == i);
                values[i] = i;
                parent[i] = m->stack_nodes[i].parent;
        }
        *ret = (TopForest) { .values = TAKE_PTR(values), .parent = TAKE_PTR(parent), .n = n };
        return 0;
}

/* Kernel stacks are long runs of single children: opening a node opens the run below it. */
static size_t stacks_only_child(const TopModel *m, size_t value) {
        return m->stack_nodes[value].node->n_children == 1 ? value + 1 : SIZE_MAX;
}

static int stacks_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const TopStackRow *row = &m->stack_nodes[value];
        const TopStackNode *n = row->node;
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], more[48] = "";

        /* A user-space heap's node counts bytes. */
        if (n->peak_pages >= 0 && n->bytes)
                (void) format_bytes(peak, sizeof(peak), (uint64_t) n->peak_pages);
        else if (n->peak_pages >= 0)
                (void) format_pages(peak, sizeof(peak), (uint64_t) n->peak_pages, m->page_size);
        else
                (void) snprintf(peak, sizeof(peak), "-");
        if (n->truncated > 0)
                (void) snprintf(more, sizeof(more), "  (+%" PRIu64 " smaller)", n->truncated);
        if (n->bytes)
                (void) format_bytes(cur, sizeof(cur), n->current_pages);
        else
                (void) format_pages(cur, sizeof(cur), n->current_pages, m->page_size);
        if (!(fields[COL_CURRENT] = strdup(cur)) || !(fields[COL_PEAK] = strdup(peak)))
                return -ENOMEM;
        return top_field(&fields[COL_STACK], "%*s%s %s%s", (int) MIN(row->depth, 40u) * 2, "",
                         n->n_children == 0 ? "   " : line && !line->collapsed ? "[-]" : "[+]", n->label, more);
}

/* Sampled stacks are an estimate, said first after STACK so that 80 columns still show it. */
static char *stacks_last_title(const TopModel *m) {
        char sampling[FORMAT_STACK_SAMPLING_MAX + 16] = "";
        char *s;

        if (m->stack_sample_interval > 1) {
                char buf[FORMAT_STACK_SAMPLING_MAX];
                (void) snprintf(sampling, sizeof(sampling), " sampled %s;",
                                format_stack_sampling(buf, sizeof(buf), m->stack_sample_interval));
        }
        if (asprintf(&s, "STACK%s %s", sampling, sampling[0] ? "callers first; Enter/Right open, Left close" :
                                                            "(callers first; Enter/Right open, Left close)") < 0)
                return NULL;
        return s;
}

static const char *stacks_empty_note(const TopModel *m) {
        return m->stack_root ? NULL : "loading the stack tree...";
}

/* Every row counts the scope's pages. */
static bool stacks_owner(const TopModel *m, size_t value, TopOwner *ret) {
        *ret = (TopOwner) { .pid = m->scope_pid, .module = m->scope_module, .unit = m->scope_unit };
        return true;
}

const TopViewClass top_view_stacks = {
        .name = "stacks",
        .title = "Stacks",
        .sort_names = sort_names,
        .n_sorts = _TOP_STACK_COLUMN_MAX,
        .default_sort = TOP_STACK_CURRENT,
        .columns = columns,
        .n_columns = _COL_MAX,
        .tree = TOP_TREE_BROWSE,
        .fetch = &stacks_fetch,
        .clear = stacks_clear,
        .n_items = stacks_n_items,
        .key = stacks_key,
        .compare = stacks_compare,
        .matches = stacks_matches,
        .forest = stacks_forest,
        .only_child = stacks_only_child,
        .write = stacks_write,
        .last_title = stacks_last_title,
        .empty_note = stacks_empty_note,
        .caption = stacks_caption,
        .owner = stacks_owner,
        .enter = top_model_toggle,
};
