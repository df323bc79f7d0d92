/* SPDX-License-Identifier: MIT */

/*
 * The stacks view: the StackTree of a scope (a task, a module, a unit or everything), callers first,
 * browsed as a tree that opens node by node. Its rows are the tree's nodes, walked into nodes each parent
 * before its children; a node is kept selected and open by its path of labels from the root. The tree
 * comes from a call of its own (fetch), not from the Top stream.
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

/* Its sort keys, in the order 's' cycles them; StackTree sorts by the same. */
typedef enum TopStackColumn {
        TOP_STACK_CURRENT,
        TOP_STACK_PEAK,
        _TOP_STACK_COLUMN_MAX,
} TopStackColumn;

typedef struct TopStackNode {
        char *label;            /* owned: "frame [module]" */
        bool bytes;             /* a node of the process's user-space heap: current_pages counts bytes */
        uint64_t current_pages;
        int64_t peak_pages;     /* -1: unknown (filtered views) */
        uint64_t truncated;     /* children the daemon left out */
        struct TopStackNode *children;  /* owned array of n_children */
        size_t n_children;
} TopStackNode;

/* A node of the stack tree as a row of the stacks view (whether it shows depends on what is open). */
typedef struct TopStackRow {
        const TopStackNode *node;       /* borrowed from the tree */
        size_t parent;                  /* the parent's index in nodes, SIZE_MAX for the root */
        unsigned depth;
} TopStackRow;

/* The view's rows (m->rows[TOP_VIEW_STACKS]): the latest StackTree reply, for the scope below; an item,
 * and a row's value, is an index into nodes. */
typedef struct Stacks {
        TopStackNode *root;             /* owned, NULL until fetched */
        TopStackRow *nodes;             /* owned, n: every node of root, each before its children */
        size_t n;
        uint64_t sample_interval;       /* the reply's stackSampleInterval: above 1 the tree is scaled from
                                         * 1 in N pages' stacks; 0 from a memstrackd that does not say */
        int64_t scope_pid;              /* -1: not a task */
        char *scope_module;             /* owned, NULL: not a module */
        char *scope_unit;               /* owned, NULL: not a unit; none of the three: all stacks */
} Stacks;

static const char *const sort_names[_TOP_STACK_COLUMN_MAX] = {
        [TOP_STACK_CURRENT] = "current",
        [TOP_STACK_PEAK] = "peak",
};

enum { COL_CURRENT, COL_PEAK, COL_STACK, _COL_MAX };

static const TopColumn columns[_COL_MAX] = {
        [COL_CURRENT] = { "CURRENT", 10, TOP_STACK_CURRENT, 0 },
        [COL_PEAK] = { "PEAK", 10, TOP_STACK_PEAK, 0 },
        [COL_STACK] = { "STACK", 0, -1, TOP_COLUMN_LEFT },
};

static Stacks *stacks_of(const TopModel *m) {
        return m->rows[TOP_VIEW_STACKS];
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

/* Drops the tree; the scope stays. */
static void stacks_clear(Stacks *stacks) {
        stacks->nodes = mfree_ptr(stacks->nodes);
        stacks->n = 0;
        stack_node_free(stacks->root);
        stacks->root = NULL;
}

/* No tree yet, and the scope everything. */
static void stacks_init(void *rows) {
        Stacks *stacks = rows;

        stacks->scope_pid = -1;
}

static void stacks_done(void *rows) {
        Stacks *stacks = rows;

        stacks_clear(stacks);
        free(stacks->scope_module);
        free(stacks->scope_unit);
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
static void walk_nodes(Stacks *stacks, const TopStackNode *n, size_t parent, unsigned depth) {
        size_t i = stacks->n++;

        stacks->nodes[i] = (TopStackRow) { .node = n, .parent = parent, .depth = depth };
        for (size_t c = 0; c < n->n_children; c++)
                walk_nodes(stacks, &n->children[c], i, depth + 1);
}

/* A StackTree reply for the current scope. */
static int stacks_read(TopModel *m, json_t *reply) {
        Stacks *stacks = stacks_of(m);
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
        stacks_clear(stacks);
        stacks->root = root;
        stacks->nodes = nodes;
        walk_nodes(stacks, root, SIZE_MAX, 0);
        stacks->sample_interval = reply_count(reply, "stackSampleInterval");
        return 0;
}

/* StackTree of the scope, in the order of the view's sort. */
static json_t *stacks_parameters(const TopModel *m) {
        const Stacks *stacks = stacks_of(m);
        json_t *p = json_pack("{s:i, s:i, s:s}", "maxDepth", TOP_STACK_DEPTH, "maxChildren", TOP_STACK_CHILDREN,
                              "sortBy", m->sort[TOP_VIEW_STACKS] == TOP_STACK_PEAK ? "peak" : "current");

        if (!p)
                return NULL;
        if (stacks->scope_pid >= 0 &&
            json_object_set_new(p, "pid", json_integer((json_int_t) stacks->scope_pid)) < 0)
                return json_decref(p), NULL;
        if (stacks->scope_module && json_object_set_new(p, "module", json_string(stacks->scope_module)) < 0)
                return json_decref(p), NULL;
        if (stacks->scope_unit && json_object_set_new(p, "unit", json_string(stacks->scope_unit)) < 0)
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
        const Stacks *stacks = stacks_of(m);
        char *s;
        int r;

        if (stacks->scope_pid >= 0) {
                /* The task's name as the tasks view has it, while it lists the task. */
                const char *comm = top_task_comm(m, stacks->scope_pid);
                r = asprintf(&s, "[pid %" PRIi64 "%s%s]", stacks->scope_pid, comm ? " " : "", comm ?: "");
        } else if (stacks->scope_module)
                r = asprintf(&s, "[module %s]", stacks->scope_module);
        else if (stacks->scope_unit)
                r = asprintf(&s, "[unit %s]", stacks->scope_unit);
        else
                r = asprintf(&s, "[all]");
        return r < 0 ? NULL : s;
}

static bool same_name(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

/* At most one of pid (>= 0), module and unit is set; none: all stacks. */
static int set_scope(TopModel *m, int64_t pid, const char *module, const char *unit) {
        _cleanup_free_ char *module_copy = NULL, *unit_copy = NULL;
        Stacks *stacks = stacks_of(m);
        TopTable *t = &m->tables[TOP_VIEW_STACKS];

        if (pid == stacks->scope_pid && same_name(module, stacks->scope_module) &&
            same_name(unit, stacks->scope_unit))
                return 0;
        if ((module && !(module_copy = strdup(module))) || (unit && !(unit_copy = strdup(unit))))
                return -ENOMEM;
        free(stacks->scope_module);
        stacks->scope_module = TAKE_PTR(module_copy);
        free(stacks->scope_unit);
        stacks->scope_unit = TAKE_PTR(unit_copy);
        stacks->scope_pid = pid;
        /* Another tree: the old one must not show under the new title. */
        stacks_clear(stacks);
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
        return stacks_of(m)->n;
}

/* The labels from the root down to the node, separated by '\x1f'. */
static char *stacks_key(const TopModel *m, size_t value) {
        const TopStackRow *nodes = stacks_of(m)->nodes;
        size_t len = 0, at;
        char *path;

        assert(value < stacks_of(m)->n);
        /* Each label and what follows it: a separator, or for the node's own the end. */
        for (size_t i = value; i != SIZE_MAX; i = nodes[i].parent)
                len += strlen(nodes[i].node->label) + 1;
        path = malloc(len);
        if (!path)
                return NULL;
        /* Filled from the end, the node's own label last; each label but the root's has a separator before. */
        at = len - 1;
        path[at] = '\0';
        for (size_t i = value; i != SIZE_MAX; i = nodes[i].parent) {
                const char *label = nodes[i].node->label;
                size_t k = strlen(label);
                at -= k;
                memcpy(path + at, label, k);
                if (at > 0)
                        path[--at] = '\x1f';
        }
        return path;
}

static int stacks_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const TopStackRow *nodes = stacks_of(m)->nodes;
        const TopStackNode *x = nodes[a].node, *y = nodes[b].node;
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
        return top_text_matches(stacks_of(m)->nodes[item].node->label, filter);
}

static int stacks_forest(TopModel *m, const size_t *items, size_t n, TopForest *ret) {
        const TopStackRow *nodes = stacks_of(m)->nodes;
        _cleanup_free_ size_t *values = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        _cleanup_free_ size_t *parent = calloc(MAX(n, (size_t) 1), sizeof(size_t));

        if (!values || !parent)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                /* A browse tree gets every node in order: a node's index is its position. */
                assert(items[i] == i);
                values[i] = i;
                parent[i] = nodes[i].parent;
        }
        *ret = (TopForest) { .values = TAKE_PTR(values), .parent = TAKE_PTR(parent), .n = n };
        return 0;
}

/* Kernel stacks are long runs of single children: opening a node opens the run below it. */
static size_t stacks_only_child(const TopModel *m, size_t value) {
        return stacks_of(m)->nodes[value].node->n_children == 1 ? value + 1 : SIZE_MAX;
}

static int stacks_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const TopStackRow *row = &stacks_of(m)->nodes[value];
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
        uint64_t interval = stacks_of(m)->sample_interval;
        char sampling[FORMAT_STACK_SAMPLING_MAX + 16] = "";
        char *s;

        if (interval > 1) {
                char buf[FORMAT_STACK_SAMPLING_MAX];
                (void) snprintf(sampling, sizeof(sampling), " sampled %s;",
                                format_stack_sampling(buf, sizeof(buf), interval));
        }
        if (asprintf(&s, "STACK%s %s", sampling, sampling[0] ? "callers first; Enter/Right open, Left close" :
                                                            "(callers first; Enter/Right open, Left close)") < 0)
                return NULL;
        return s;
}

static const char *stacks_empty_note(const TopModel *m) {
        return stacks_of(m)->root ? NULL : "loading the stack tree...";
}

/* Every row counts the scope's pages. */
static bool stacks_owner(const TopModel *m, size_t value, TopOwner *ret) {
        const Stacks *stacks = stacks_of(m);

        *ret = (TopOwner) { .pid = stacks->scope_pid, .module = stacks->scope_module,
                            .unit = stacks->scope_unit };
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
        .rows_size = sizeof(Stacks),
        .rows_init = stacks_init,
        .rows_done = stacks_done,
        .fetch = &stacks_fetch,
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
