/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "stacktree.h"

/*
 * (parent, kind, ip) -> child index, open addressing; parent and kind share one 32-bit word. Besides
 * frames, the map holds links (scope node, LINK_KIND, global leaf) -> process-tree leaf.
 */
typedef struct ChildSlot {
        uint64_t ip;
        uint32_t parent_kind;   /* parent << 3 | kind; CHILD_EMPTY when free */
        uint32_t child;
} ChildSlot;

#define CHILD_EMPTY UINT32_MAX
#define LINK_KIND 7u
#define MAX_NODES_LIMIT (UINT32_C(1) << 29)

/*
 * One remembered chain, identified by a 128-bit fingerprint (two independent 64-bit hashes over frames,
 * shape and scope) instead of a copy of its frames: a wrong leaf would take a 2^-128 collision, far less
 * likely than a memory bit flip, and the cache stays at 32 bytes a slot with no per-chain allocation. Of
 * the 64-bit scope only the low half is kept besides the fingerprint, which covers all of it.
 */
typedef struct CacheSlot {
        uint64_t hash;
        uint64_t hash2;
        uint32_t leaf;
        uint32_t scope;         /* the scope's low 32 bits */
        uint32_t last_used;     /* tick of the last hit: the least recently used way is replaced */
        uint16_t n_frames;
        uint16_t n_kernel;
} CacheSlot;

/* 4-way set associative: 10k hot chains fit without the conflict misses a direct-mapped cache has. */
#define CACHE_WAYS 4u
#define CACHE_SETS (1u << 14)
#define CACHE_SLOTS (CACHE_WAYS * CACHE_SETS)

/* A counted node's counters, side by side so that a charge writes one cache line per step. */
typedef struct NodeCounts {
        Ledger pages;                   /* pages charged through it now, and their true peak */
        uint64_t allocated;             /* pages ever charged through it, never taken off: allocations since
                                         * the start or stacktree_clear() */
} NodeCounts;

struct StackTree {
        StackNode *nodes;               /* owned; nodes[0] is the root */
        NodeCounts *counts;             /* owned, parallel to nodes; meaningful for counted nodes only */
        uint32_t *up;                   /* owned, parallel to nodes: nearest counted ancestor of a counted node */
        StackHeapCounters *heap;        /* owned, parallel to nodes in a heap tree; NULL otherwise */
        size_t n_nodes, n_allocated, max_nodes;
        size_t max_frame_nodes;         /* frames stop here; the rest of max_nodes is for "[truncated]" */
        size_t n_process_nodes, max_process_nodes;     /* process trees get at most half the budget */

        ChildSlot *children;            /* owned; index of every non-root node by (parent, kind, ip) */
        size_t children_capacity;       /* power of two, kept at most half full */
        size_t n_children;              /* entries: nodes and links */
        bool per_process;

        CacheSlot *cache;               /* owned, CACHE_SLOTS entries, each owning its frames copy */

        StackModuleFn module_fn;
        void *userdata;

        uint64_t stacks_truncated, process_paths_truncated, cache_hits, cache_misses, underflows;
        uint32_t cache_tick;
};

static inline uint64_t mix64(uint64_t h) {
        h ^= h >> 33;
        h *= UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 33;
        return h;
}

static size_t child_home(const StackTree *t, uint32_t parent_kind, uint64_t ip) {
        return (size_t) mix64(ip * UINT64_C(0x9E3779B97F4A7C15) ^ parent_kind) & (t->children_capacity - 1);
}

static void init_roots(StackTree *t) {
        for (uint32_t i = STACK_NODE_ROOT; i <= STACK_NODE_PROCESSES; i++) {
                t->nodes[i] = (StackNode) {
                        .ip = i,
                        .parent = STACK_NODE_NONE,
                        .first_child = STACK_NODE_NONE,
                        .next_sibling = STACK_NODE_NONE,
                        .twin = STACK_NODE_NONE,
                        .kind = STACK_FRAME_ROOT,
                        .counted = true,
                };
                t->counts[i] = (NodeCounts) {};
                t->up[i] = STACK_NODE_NONE;
                if (t->heap)
                        t->heap[i] = (StackHeapCounters) {};
        }
        t->n_nodes = 2;
        t->n_children = 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(StackTree *, stacktree_free);

void stacktree_set_max_nodes(StackTree *t, size_t max_nodes) {
        t->max_nodes = MIN(MAX(max_nodes, (size_t) 2), (size_t) MAX_NODES_LIMIT);
        t->max_process_nodes = t->max_nodes / 2;
        /* The last 1/64 of the budget (one node at least) is kept for "[truncated]" nodes, so the place a
         * chain was cut is visible even after frames have used up their part. */
        t->max_frame_nodes = t->max_nodes - MAX(t->max_nodes / 64, (size_t) 1);
}

StackTree *stacktree_new(size_t max_nodes, bool per_process, StackModuleFn module_fn, void *userdata) {
        _cleanup_(stacktree_freep) StackTree *t = calloc(1, sizeof(StackTree));
        if (!t)
                return NULL;

        stacktree_set_max_nodes(t, max_nodes);
        t->per_process = per_process;
        t->module_fn = module_fn;
        t->userdata = userdata;

        t->n_allocated = MIN((size_t) 1024, t->max_nodes);
        t->nodes = malloc(t->n_allocated * sizeof(StackNode));
        t->counts = malloc(t->n_allocated * sizeof(NodeCounts));
        t->up = malloc(t->n_allocated * sizeof(uint32_t));
        t->children_capacity = 2048;
        t->children = malloc(t->children_capacity * sizeof(ChildSlot));
        t->cache = calloc(CACHE_SLOTS, sizeof(CacheSlot));
        if (!t->nodes || !t->counts || !t->up || !t->children || !t->cache)
                return NULL;
        memset(t->children, 0xff, t->children_capacity * sizeof(ChildSlot));
        init_roots(t);
        return TAKE_PTR(t);
}

StackTree *stacktree_free(StackTree *t) {
        if (!t)
                return NULL;
        free(t->cache);
        free(t->children);
        free(t->nodes);
        free(t->counts);
        free(t->up);
        free(t->heap);
        free(t);
        return NULL;
}

int stacktree_enable_heap(StackTree *t) {
        if (t->heap)
                return 0;
        t->heap = calloc(t->n_allocated, sizeof(StackHeapCounters));
        return t->heap ? 0 : -ENOMEM;
}

static int children_grow(StackTree *t) {
        size_t capacity = t->children_capacity * 2;
        ChildSlot *s = malloc(capacity * sizeof(ChildSlot));
        if (!s)
                return -ENOMEM;
        memset(s, 0xff, capacity * sizeof(ChildSlot));

        ChildSlot *old = t->children;
        size_t old_capacity = t->children_capacity;
        t->children = s;
        t->children_capacity = capacity;
        for (size_t i = 0; i < old_capacity; i++) {
                if (old[i].parent_kind == CHILD_EMPTY)
                        continue;
                size_t j = child_home(t, old[i].parent_kind, old[i].ip);
                while (s[j].parent_kind != CHILD_EMPTY)
                        j = (j + 1) & (capacity - 1);
                s[j] = old[i];
        }
        free(old);
        return 0;
}

/* The slot holding (pk, ip), or the empty slot where it would go. */
static size_t child_slot(const StackTree *t, uint32_t pk, uint64_t ip) {
        size_t i = child_home(t, pk, ip);

        for (;; i = (i + 1) & (t->children_capacity - 1)) {
                const ChildSlot *s = &t->children[i];
                if (s->parent_kind == CHILD_EMPTY || (s->parent_kind == pk && s->ip == ip))
                        return i;
        }
}

/* Adds (pk, ip) -> value at its empty slot i, growing first if needed. */
static int child_add(StackTree *t, size_t i, uint32_t pk, uint64_t ip, uint32_t value) {
        if ((t->n_children + 1) * 2 > t->children_capacity) {
                int r = children_grow(t);
                if (r < 0)
                        return r;
                i = child_slot(t, pk, ip); /* the slot found before belongs to the old table */
        }
        t->children[i] = (ChildSlot) { .ip = ip, .parent_kind = pk, .child = value };
        t->n_children++;
        return 0;
}

uint32_t stacktree_find_child(const StackTree *t, uint32_t parent, StackFrameKind kind, uint64_t ip) {
        uint32_t pk = parent << 3 | (uint32_t) kind;
        const ChildSlot *s = &t->children[child_slot(t, pk, ip)];
        return s->parent_kind == CHILD_EMPTY ? STACK_NODE_NONE : s->child;
}

uint32_t stacktree_process_scope(const StackTree *t, uint64_t scope) {
        return stacktree_find_child(t, STACK_NODE_PROCESSES, STACK_FRAME_PROCESS, scope);
}

static int grow_nodes(StackTree *t) {
        size_t n = MIN(t->n_allocated * 2, t->max_nodes);

        /* Each array is replaced only once it is valid at the new size, so a failure loses nothing. */
        StackNode *nodes = realloc(t->nodes, n * sizeof(StackNode));
        if (!nodes)
                return -ENOMEM;
        t->nodes = nodes;
        NodeCounts *counts = realloc(t->counts, n * sizeof(NodeCounts));
        if (!counts)
                return -ENOMEM;
        t->counts = counts;
        uint32_t *up = realloc(t->up, n * sizeof(uint32_t));
        if (!up)
                return -ENOMEM;
        t->up = up;
        if (t->heap) {
                StackHeapCounters *heap = realloc(t->heap, n * sizeof(StackHeapCounters));
                if (!heap)
                        return -ENOMEM;
                t->heap = heap;
        }
        t->n_allocated = n;
        return 0;
}

/*
 * Gives node x counters of its own. Until now it was unary and nothing ended at it, so it held exactly
 * what the first counted node below it holds; that node now reports to x instead of to x's ancestor.
 */
static void materialize(StackTree *t, uint32_t x) {
        StackNode *n = &t->nodes[x];
        uint32_t above = n->parent, below = n->first_child;

        if (n->counted)
                return;
        while (!t->nodes[above].counted)
                above = t->nodes[above].parent;
        while (below != STACK_NODE_NONE && !t->nodes[below].counted)
                below = t->nodes[below].first_child;

        if (below != STACK_NODE_NONE) {
                t->counts[x] = t->counts[below];
                if (t->heap)
                        t->heap[x] = t->heap[below];
                t->up[below] = x;
        } else {
                t->counts[x] = (NodeCounts) {};
                if (t->heap)
                        t->heap[x] = (StackHeapCounters) {};
        }
        t->up[x] = above;
        n->counted = true;
}

/*
 * Returns the child of parent for (kind, ip), creating it; STACK_NODE_NONE past the budget or on OOM.
 * Frames get max_frame_nodes (and a node in a process tree the process trees' half); a "[truncated]"
 * node may take the whole budget.
 */
static uint32_t child_get(StackTree *t, uint32_t parent, StackFrameKind kind, uint64_t ip, bool process_tree) {
        uint32_t pk = parent << 3 | (uint32_t) kind;
        size_t i = child_slot(t, pk, ip);

        if (t->children[i].parent_kind != CHILD_EMPTY)
                return t->children[i].child;

        if (kind == STACK_FRAME_TRUNCATED ? t->n_nodes >= t->max_nodes :
            t->n_nodes >= t->max_frame_nodes || (process_tree && t->n_process_nodes >= t->max_process_nodes))
                return STACK_NODE_NONE;
        if (t->n_nodes == t->n_allocated && grow_nodes(t) < 0)
                return STACK_NODE_NONE;

        uint32_t idx = (uint32_t) t->n_nodes;
        if (child_add(t, i, pk, ip, idx) < 0)
                return STACK_NODE_NONE;
        t->n_nodes++;
        t->n_process_nodes += process_tree;

        /* A second child makes the parent a branch point: it needs counters of its own from now on. */
        if (t->nodes[parent].first_child != STACK_NODE_NONE)
                materialize(t, parent);

        StackNode *p = &t->nodes[parent];
        uint16_t module = 0;
        unsigned flags = 0;
        if (kind == STACK_FRAME_KERNEL && t->module_fn)
                module = t->module_fn(t->userdata, ip, &flags);
        t->nodes[idx] = (StackNode) {
                .ip = ip,
                .parent = parent,
                .first_child = STACK_NODE_NONE,
                .next_sibling = p->first_child,
                .twin = STACK_NODE_NONE,
                .module = module ?: p->module,
                .kind = (uint8_t) kind,
                .flags = (uint8_t) ((flags | p->flags) & 0xf),
                .depth = p->depth == UINT8_MAX ? UINT8_MAX : p->depth + 1,
        };
        p->first_child = idx;
        return idx;
}

/* Two hashes with unrelated constants and mixing, computed in one pass over the frames. */
static void hash_chain(const uint64_t *frames, size_t n, size_t n_kernel, uint64_t scope, uint64_t *ret_h1,
                uint64_t *ret_h2) {
        uint64_t h1 = UINT64_C(0x243F6A8885A308D3) ^ (n_kernel << 32 | (uint32_t) scope) ^ mix64(scope >> 32);
        uint64_t h2 = UINT64_C(0x13198A2E03707344) + (n << 32) + (uint32_t) scope +
                      (scope >> 32) * UINT64_C(0x9E3779B97F4A7C15);

        for (size_t i = 0; i < n; i++) {
                h1 = (h1 ^ frames[i]) * UINT64_C(0x100000001b3) + (h1 >> 29);
                h2 = (h2 + frames[i]) * UINT64_C(0xc2b2ae3d27d4eb4f);
                h2 ^= h2 >> 31;
        }
        *ret_h1 = mix64(h1 ^ n);
        *ret_h2 = mix64(h2 ^ n_kernel);
}

/*
 * Walks (creating) the chain below start; returns the leaf or, past the budget, with *truncated set, the
 * "[truncated]" child of the deepest prefix (the prefix itself once even the reserve is used up). In a
 * process tree that child is keyed by the chain's global leaf (marker_ip), as it is twinned with it.
 */
static uint32_t walk(StackTree *t, uint32_t start, const uint64_t *frames, size_t n, size_t n_kernel,
                uint64_t scope, uint64_t marker_ip, bool *truncated) {
        bool process_tree = start != STACK_NODE_ROOT;
        uint32_t node = start, next;

        if (n > n_kernel && !process_tree) {
                next = child_get(t, node, STACK_FRAME_PROCESS, scope, false);
                if (next == STACK_NODE_NONE)
                        goto truncated;
                node = next;
        }
        /* Outermost first: user frames (from the end), then kernel frames. */
        for (size_t i = n; i > 0; i--) {
                StackFrameKind kind = i - 1 >= n_kernel ? STACK_FRAME_USER : STACK_FRAME_KERNEL;
                next = child_get(t, node, kind, frames[i - 1], process_tree);
                if (next == STACK_NODE_NONE)
                        goto truncated;
                node = next;
        }
        return node;

truncated:
        *truncated = true;
        next = child_get(t, node, STACK_FRAME_TRUNCATED, marker_ip, process_tree);
        return next != STACK_NODE_NONE ? next : node;
}

/*
 * The process-tree leaf twinned with global leaf g. When the process trees are out of budget the link
 * points at g itself (charged to the global tree only), so the next event of that chain is one lookup.
 */
static uint32_t process_leaf(StackTree *t, uint32_t g, const uint64_t *frames, size_t n, size_t n_kernel,
                uint64_t scope) {
        bool truncated = false;

        uint32_t scope_node = child_get(t, STACK_NODE_PROCESSES, STACK_FRAME_PROCESS, scope, true);
        if (scope_node == STACK_NODE_NONE) {
                t->process_paths_truncated++;
                return g;
        }

        uint32_t pk = scope_node << 3 | LINK_KIND;
        size_t i = child_slot(t, pk, g);
        if (t->children[i].parent_kind != CHILD_EMPTY)
                return t->children[i].child;

        uint32_t leaf = walk(t, scope_node, frames, n, n_kernel, scope, g, &truncated);
        if (truncated)
                t->process_paths_truncated++;
        /* Cut short without even a "[truncated]" node: the chain is charged to the global tree only. */
        if (truncated && t->nodes[leaf].kind != STACK_FRAME_TRUNCATED)
                leaf = g;
        else {
                /* An empty chain (g is the root) has the scope node itself as leaf. Chains end at the
                 * leaf, so it keeps its own counters. */
                t->nodes[leaf].twin = g;
                materialize(t, leaf);
        }
        (void) child_add(t, child_slot(t, pk, g), pk, g, leaf);
        return leaf;
}

uint32_t stacktree_intern(StackTree *t, const uint64_t *frames, size_t n_frames, size_t n_kernel,
                uint64_t scope) {
        uint64_t process = scope;

        n_kernel = MIN(n_kernel, n_frames);
        /* Kernel-only chains are the same code whoever runs them: one global path for all. */
        if (n_frames == n_kernel)
                scope = 0;

        uint64_t h, h2;
        hash_chain(frames, n_frames, n_kernel, scope, &h, &h2);
        CacheSlot *set = &t->cache[(h & (CACHE_SETS - 1)) * CACHE_WAYS], *c = set;
        t->cache_tick++;
        for (unsigned w = 0; w < CACHE_WAYS; w++) {
                CacheSlot *x = &set[w];
                if (x->hash == h && x->hash2 == h2 && x->n_frames == n_frames && x->n_kernel == n_kernel &&
                    x->scope == (uint32_t) scope && x->last_used != 0) {
                        t->cache_hits++;
                        x->last_used = t->cache_tick;
                        return t->per_process ? process_leaf(t, x->leaf, frames, n_frames, n_kernel, process)
                                              : x->leaf;
                }
                /* Wrapping ticks only make the choice of victim less exact, never wrong. */
                if (x->last_used < c->last_used)
                        c = x;
        }

        t->cache_misses++;
        bool truncated = false;
        uint32_t leaf = walk(t, STACK_NODE_ROOT, frames, n_frames, n_kernel, scope, 0, &truncated);
        if (truncated)
                t->stacks_truncated++;
        /* Chains end here: it is charged directly, so it keeps its own counters. */
        materialize(t, leaf);

        /* Chains longer than a slot can describe are not cached: a walk each time, still exact. */
        if (n_frames <= UINT16_MAX)
                *c = (CacheSlot) {
                        .hash = h,
                        .hash2 = h2,
                        .leaf = leaf,
                        .scope = (uint32_t) scope,
                        .last_used = t->cache_tick ?: 1,
                        .n_frames = (uint16_t) n_frames,
                        .n_kernel = (uint16_t) n_kernel,
                };
        return t->per_process ? process_leaf(t, leaf, frames, n_frames, n_kernel, process) : leaf;
}

/* node is counted: every node returned by stacktree_intern() is. */
static void charge_path(StackTree *t, uint32_t node, uint64_t pages) {
        for (uint32_t i = node; i != STACK_NODE_NONE; i = t->up[i]) {
                ledger_add(&t->counts[i].pages, pages);
                t->counts[i].allocated += pages;
        }
}

static void uncharge_path(StackTree *t, uint32_t node, uint64_t pages) {
        for (uint32_t i = node; i != STACK_NODE_NONE; i = t->up[i])
                if (_unlikely_(!ledger_sub(&t->counts[i].pages, pages)))
                        t->underflows++;
}

/* A sample's pages that came (delta > 0) count as allocated; its rise alone does not say how many came
 * and went between two samples. */
static void apply_path(StackTree *t, uint32_t node, uint64_t rise, int64_t delta) {
        for (uint32_t i = node; i != STACK_NODE_NONE; i = t->up[i]) {
                if (_unlikely_(!ledger_apply(&t->counts[i].pages, rise, delta)))
                        t->underflows++;
                if (delta > 0)
                        t->counts[i].allocated += (uint64_t) delta;
        }
}

void stacktree_charge(StackTree *t, uint32_t node, uint64_t pages) {
        charge_path(t, node, pages);
        if (t->nodes[node].twin != STACK_NODE_NONE)
                charge_path(t, t->nodes[node].twin, pages);
}

void stacktree_uncharge(StackTree *t, uint32_t node, uint64_t pages) {
        uncharge_path(t, node, pages);
        if (t->nodes[node].twin != STACK_NODE_NONE)
                uncharge_path(t, t->nodes[node].twin, pages);
}

void stacktree_apply(StackTree *t, uint32_t node, uint64_t rise, int64_t delta) {
        apply_path(t, node, rise, delta);
        if (t->nodes[node].twin != STACK_NODE_NONE)
                apply_path(t, t->nodes[node].twin, rise, delta);
}

/* Before a node changes, it keeps what it held at the process's last maximum (see stacktree.h). */
static void heap_stamp(StackTree *t, uint32_t i, uint32_t gen) {
        StackHeapCounters *c = &t->heap[i];

        if (c->max_gen != gen) {
                c->max_bytes = t->counts[i].pages.current;
                c->max_blocks = c->blocks;
                c->max_gen = gen;
        }
}

void stacktree_heap_apply(StackTree *t, uint32_t node, int64_t bytes, int64_t blocks, uint32_t gen) {
        if (!t->heap || node >= t->n_nodes)
                return;
        for (uint32_t i = node; i != STACK_NODE_NONE; i = t->up[i]) {
                StackHeapCounters *c = &t->heap[i];

                heap_stamp(t, i, gen);
                if (bytes >= 0)
                        ledger_add(&t->counts[i].pages, (uint64_t) bytes);
                else if (_unlikely_(!ledger_sub(&t->counts[i].pages, (uint64_t) -bytes)))
                        t->underflows++;
                if (blocks >= 0)
                        c->blocks += (uint64_t) blocks;
                else
                        c->blocks -= MIN(c->blocks, (uint64_t) -blocks);
        }
}

void stacktree_heap_values(const StackTree *t, uint32_t idx, uint32_t gen, uint64_t *ret_blocks,
                uint64_t *ret_max_bytes, uint64_t *ret_max_blocks) {
        while (idx < t->n_nodes && !t->nodes[idx].counted)
                idx = t->nodes[idx].first_child;
        if (!t->heap || idx >= t->n_nodes) {
                *ret_blocks = *ret_max_bytes = *ret_max_blocks = 0;
                return;
        }
        const StackHeapCounters *c = &t->heap[idx];
        *ret_blocks = c->blocks;
        *ret_max_bytes = c->max_gen == gen ? c->max_bytes : t->counts[idx].pages.current;
        *ret_max_blocks = c->max_gen == gen ? c->max_blocks : c->blocks;
}

size_t stacktree_reclassify(StackTree *t, uint32_t from, bool *changed) {
        size_t n = 0;

        if (!t->module_fn)
                return 0;
        /* A parent's index is below its children's: parents are final before their children inherit. */
        for (size_t i = MAX(from, (uint32_t) STACK_NODE_PROCESSES + 1); i < t->n_nodes; i++) {
                StackNode *x = &t->nodes[i];
                const StackNode *p = &t->nodes[x->parent];
                uint16_t module = 0;
                unsigned flags = 0;

                if (x->kind == STACK_FRAME_KERNEL)
                        module = t->module_fn(t->userdata, x->ip, &flags);
                module = module ?: p->module;
                flags = (flags | p->flags) & 0xf;
                bool differs = module != x->module || flags != x->flags;
                if (differs) {
                        x->module = module;
                        x->flags = (uint8_t) flags;
                        n++;
                }
                if (changed)
                        changed[i - from] = differs;
        }
        return n;
}

const StackNode *stacktree_node(const StackTree *t, uint32_t idx) {
        return idx < t->n_nodes ? &t->nodes[idx] : NULL;
}

Ledger stacktree_pages(const StackTree *t, uint32_t idx) {
        /* An uncounted node holds what the first counted node down its single-child run holds. */
        while (idx < t->n_nodes && !t->nodes[idx].counted)
                idx = t->nodes[idx].first_child;
        return idx < t->n_nodes ? t->counts[idx].pages : (Ledger) {};
}

uint64_t stacktree_allocated(const StackTree *t, uint32_t idx) {
        while (idx < t->n_nodes && !t->nodes[idx].counted)
                idx = t->nodes[idx].first_child;
        return idx < t->n_nodes ? t->counts[idx].allocated : 0;
}

int stacktree_foreach_own_allocated(const StackTree *t, StackAllocatedFn fn, void *userdata) {
        _cleanup_free_ uint64_t *own = malloc(t->n_nodes * sizeof(uint64_t));
        _cleanup_free_ bool *global = malloc(t->n_nodes * sizeof(bool));

        if (!own || !global)
                return -ENOMEM;
        /* A parent's index is below its children's: one pass says which nodes hang below the global root. */
        for (size_t i = 0; i < t->n_nodes; i++) {
                const StackNode *n = &t->nodes[i];
                global[i] = i == STACK_NODE_ROOT || (n->parent != STACK_NODE_NONE && global[n->parent]);
                own[i] = n->counted ? t->counts[i].allocated : 0;
        }
        /* A counted node's allocations are its own chains' and those of the first counted node down each
         * child's path, which report to it. */
        for (size_t i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].counted && t->up[i] != STACK_NODE_NONE)
                        own[t->up[i]] -= t->counts[i].allocated;
        for (size_t i = 0; i < t->n_nodes; i++)
                if (global[i] && own[i] > 0)
                        fn(userdata, (uint32_t) i, own[i]);
        return 0;
}

size_t stacktree_size(const StackTree *t) {
        return t->n_nodes;
}

void stacktree_reset_peaks(StackTree *t) {
        for (size_t i = 0; i < t->n_nodes; i++)
                ledger_reset_peak(&t->counts[i].pages);
}

void stacktree_clear(StackTree *t) {
        memset(t->children, 0xff, t->children_capacity * sizeof(ChildSlot));
        memset(t->cache, 0, CACHE_SLOTS * sizeof(CacheSlot));
        init_roots(t);
        t->n_process_nodes = 0;
        t->stacks_truncated = t->process_paths_truncated = t->underflows = 0;
}

uint64_t stacktree_truncated_pages(const StackTree *t) {
        uint64_t pages = 0;

        /* Process trees' "[truncated]" nodes are twinned with a global leaf, which holds their pages too. */
        for (size_t i = STACK_NODE_PROCESSES + 1; i < t->n_nodes; i++)
                if (t->nodes[i].kind == STACK_FRAME_TRUNCATED && t->nodes[i].twin == STACK_NODE_NONE)
                        pages += t->counts[i].pages.current;
        return pages;
}

void stacktree_get_stats(const StackTree *t, StackTreeStats *ret) {
        *ret = (StackTreeStats) {
                .n_nodes = t->n_nodes,
                .max_nodes = t->max_nodes,
                .n_process_nodes = t->n_process_nodes,
                .stacks_truncated = t->stacks_truncated,
                .process_paths_truncated = t->process_paths_truncated,
                .cache_hits = t->cache_hits,
                .cache_misses = t->cache_misses,
                .underflows = t->underflows,
        };
}

size_t stacktree_memory_bytes(const StackTree *t) {
        size_t b = sizeof(StackTree) + t->n_allocated * (sizeof(StackNode) + sizeof(NodeCounts) + sizeof(uint32_t) +
                                                         (t->heap ? sizeof(StackHeapCounters) : 0)) +
                   t->children_capacity * sizeof(ChildSlot) + CACHE_SLOTS * sizeof(CacheSlot);
        return b;
}
