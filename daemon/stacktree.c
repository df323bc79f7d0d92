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

/* One remembered chain: its hash, shape, leaf and a private copy of its frames to rule out collisions. */
typedef struct CacheSlot {
        uint64_t hash;
        uint64_t *frames;
        uint32_t n_frames;
        uint32_t n_kernel;
        uint32_t scope;
        uint32_t leaf;
        uint32_t allocated;
        uint32_t last_used;     /* tick of the last hit: the least recently used way is replaced */
} CacheSlot;

/* 4-way set associative: 10k hot chains fit without the conflict misses a direct-mapped cache has. */
#define CACHE_WAYS 4u
#define CACHE_SETS (1u << 14)
#define CACHE_SLOTS (CACHE_WAYS * CACHE_SETS)

struct StackTree {
        StackNode *nodes;               /* owned; nodes[0] is the root */
        size_t n_nodes, n_allocated, max_nodes;
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
        for (uint32_t i = STACK_NODE_ROOT; i <= STACK_NODE_PROCESSES; i++)
                t->nodes[i] = (StackNode) {
                        .ip = i,
                        .parent = STACK_NODE_NONE,
                        .first_child = STACK_NODE_NONE,
                        .next_sibling = STACK_NODE_NONE,
                        .twin = STACK_NODE_NONE,
                        .kind = STACK_FRAME_ROOT,
                };
        t->n_nodes = 2;
        t->n_children = 0;
}

StackTree *stacktree_new(size_t max_nodes, bool per_process, StackModuleFn module_fn, void *userdata) {
        _cleanup_(freep) StackTree *t = calloc(1, sizeof(StackTree));
        if (!t)
                return NULL;

        t->max_nodes = MIN(MAX(max_nodes, (size_t) 2), (size_t) MAX_NODES_LIMIT);
        t->max_process_nodes = t->max_nodes / 2;
        t->per_process = per_process;
        t->module_fn = module_fn;
        t->userdata = userdata;

        t->n_allocated = MIN((size_t) 1024, t->max_nodes);
        t->nodes = malloc(t->n_allocated * sizeof(StackNode));
        t->children_capacity = 2048;
        t->children = malloc(t->children_capacity * sizeof(ChildSlot));
        t->cache = calloc(CACHE_SLOTS, sizeof(CacheSlot));
        if (!t->nodes || !t->children || !t->cache) {
                free(t->nodes);
                free(t->children);
                free(t->cache);
                return NULL;
        }
        memset(t->children, 0xff, t->children_capacity * sizeof(ChildSlot));
        init_roots(t);
        return TAKE_PTR(t);
}

static void cache_drop(StackTree *t) {
        for (size_t i = 0; i < CACHE_SLOTS; i++) {
                free(t->cache[i].frames);
                t->cache[i] = (CacheSlot) {};
        }
}

StackTree *stacktree_free(StackTree *t) {
        if (!t)
                return NULL;
        cache_drop(t);
        free(t->cache);
        free(t->children);
        free(t->nodes);
        free(t);
        return NULL;
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

uint32_t stacktree_process_scope(const StackTree *t, uint32_t scope) {
        return stacktree_find_child(t, STACK_NODE_PROCESSES, STACK_FRAME_PROCESS, scope);
}

/*
 * Returns the child of parent for (kind, ip), creating it; STACK_NODE_NONE past the budget (the whole
 * one, or the process trees' half for a node in a process tree) or on OOM.
 */
static uint32_t child_get(StackTree *t, uint32_t parent, StackFrameKind kind, uint64_t ip, bool process_tree) {
        uint32_t pk = parent << 3 | (uint32_t) kind;
        size_t i = child_slot(t, pk, ip);

        if (t->children[i].parent_kind != CHILD_EMPTY)
                return t->children[i].child;

        if (t->n_nodes >= t->max_nodes || (process_tree && t->n_process_nodes >= t->max_process_nodes))
                return STACK_NODE_NONE;
        if (t->n_nodes == t->n_allocated) {
                size_t n = MIN(t->n_allocated * 2, t->max_nodes);
                StackNode *nodes = realloc(t->nodes, n * sizeof(StackNode));
                if (!nodes)
                        return STACK_NODE_NONE;
                t->nodes = nodes;
                t->n_allocated = n;
        }

        uint32_t idx = (uint32_t) t->n_nodes;
        if (child_add(t, i, pk, ip, idx) < 0)
                return STACK_NODE_NONE;
        t->n_nodes++;
        t->n_process_nodes += process_tree;

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

static uint64_t hash_chain(const uint64_t *frames, size_t n, size_t n_kernel, uint32_t scope) {
        uint64_t h = UINT64_C(0x243F6A8885A308D3) ^ (n_kernel << 32 | scope);
        for (size_t i = 0; i < n; i++)
                h = (h ^ frames[i]) * UINT64_C(0x100000001b3) + (h >> 29);
        return mix64(h ^ n);
}

/* Walks (creating) the chain below start; returns the leaf, or the deepest prefix with *truncated set. */
static uint32_t walk(StackTree *t, uint32_t start, const uint64_t *frames, size_t n, size_t n_kernel,
                uint32_t scope, bool *truncated) {
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
        return node;
}

/*
 * The process-tree leaf twinned with global leaf g. When the process trees are out of budget the link
 * points at g itself (charged to the global tree only), so the next event of that chain is one lookup.
 */
static uint32_t process_leaf(StackTree *t, uint32_t g, const uint64_t *frames, size_t n, size_t n_kernel,
                uint32_t scope) {
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

        uint32_t leaf = walk(t, scope_node, frames, n, n_kernel, scope, &truncated);
        if (truncated) {
                t->process_paths_truncated++;
                leaf = g;
        } else
                /* An empty chain (g is the root) has the scope node itself as leaf. */
                t->nodes[leaf].twin = g;
        (void) child_add(t, child_slot(t, pk, g), pk, g, leaf);
        return leaf;
}

uint32_t stacktree_intern(StackTree *t, const uint64_t *frames, size_t n_frames, size_t n_kernel,
                uint32_t scope) {
        uint32_t process = scope;

        n_kernel = MIN(n_kernel, n_frames);
        /* Kernel-only chains are the same code whoever runs them: one global path for all. */
        if (n_frames == n_kernel)
                scope = 0;

        uint64_t h = hash_chain(frames, n_frames, n_kernel, scope);
        CacheSlot *set = &t->cache[(h & (CACHE_SETS - 1)) * CACHE_WAYS], *c = set;
        t->cache_tick++;
        for (unsigned w = 0; w < CACHE_WAYS; w++) {
                CacheSlot *x = &set[w];
                if (x->hash == h && x->n_frames == n_frames && x->n_kernel == n_kernel && x->scope == scope &&
                    x->frames && (n_frames == 0 || memcmp(x->frames, frames, n_frames * sizeof(uint64_t)) == 0)) {
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
        uint32_t leaf = walk(t, STACK_NODE_ROOT, frames, n_frames, n_kernel, scope, &truncated);
        if (truncated)
                t->stacks_truncated++;

        /* Remember it; a failed allocation only costs the next lookup a walk. */
        if (c->allocated < n_frames || !c->frames) {
                uint64_t *f = realloc(c->frames, MAX(n_frames, (size_t) 1) * sizeof(uint64_t));
                if (!f) {
                        c->hash = 0;
                        c->n_frames = UINT32_MAX;
                        goto done;
                }
                c->frames = f;
                c->allocated = (uint32_t) MAX(n_frames, (size_t) 1);
        }
        if (n_frames > 0)
                memcpy(c->frames, frames, n_frames * sizeof(uint64_t));
        c->hash = h;
        c->n_frames = (uint32_t) n_frames;
        c->n_kernel = (uint32_t) n_kernel;
        c->scope = scope;
        c->leaf = leaf;
        c->last_used = t->cache_tick;
done:
        return t->per_process ? process_leaf(t, leaf, frames, n_frames, n_kernel, process) : leaf;
}

static void charge_path(StackTree *t, uint32_t node, uint64_t pages) {
        for (uint32_t i = node; i != STACK_NODE_NONE;) {
                StackNode *n = &t->nodes[i];
                n->current_pages += pages;
                if (n->current_pages > n->peak_pages)
                        n->peak_pages = n->current_pages;
                i = n->parent;
        }
}

static void uncharge_path(StackTree *t, uint32_t node, uint64_t pages) {
        for (uint32_t i = node; i != STACK_NODE_NONE;) {
                StackNode *n = &t->nodes[i];
                if (_unlikely_(n->current_pages < pages)) {
                        t->underflows++;
                        n->current_pages = 0;
                } else
                        n->current_pages -= pages;
                i = n->parent;
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

const StackNode *stacktree_node(const StackTree *t, uint32_t idx) {
        return idx < t->n_nodes ? &t->nodes[idx] : NULL;
}

size_t stacktree_size(const StackTree *t) {
        return t->n_nodes;
}

void stacktree_reset_peaks(StackTree *t) {
        for (size_t i = 0; i < t->n_nodes; i++)
                t->nodes[i].peak_pages = t->nodes[i].current_pages;
}

void stacktree_clear(StackTree *t) {
        memset(t->children, 0xff, t->children_capacity * sizeof(ChildSlot));
        for (size_t i = 0; i < CACHE_SLOTS; i++) {
                t->cache[i].hash = 0;
                t->cache[i].n_frames = UINT32_MAX;
        }
        init_roots(t);
        t->n_process_nodes = 0;
        t->stacks_truncated = t->process_paths_truncated = t->underflows = 0;
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
        size_t b = sizeof(StackTree) + t->n_allocated * sizeof(StackNode) +
                   t->children_capacity * sizeof(ChildSlot) + CACHE_SLOTS * sizeof(CacheSlot);
        for (size_t i = 0; i < CACHE_SLOTS; i++)
                b += t->cache[i].allocated * sizeof(uint64_t);
        return b;
}
