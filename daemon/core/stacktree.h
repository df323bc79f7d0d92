/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * StackTree: call chains merged into a trie of frames. The root is a virtual node; its children are the
 * outermost frames, and a chain's innermost frame is its leaf. Identical chains share one path. Every node
 * holds the pages currently charged to chains through it (its subtree) and the true maximum that value
 * ever reached, kept eagerly on every charge so it is never a sum of children's peaks.
 *
 * Nodes live in one array and are referred to by 32-bit index (stable until stacktree_clear()). The node
 * count is bounded: frames may take all but the last 1/64 of the budget (STACK_TRUNCATED_RESERVE); past
 * that a chain is charged to a STACK_FRAME_TRUNCATED child ("[truncated]") of its deepest existing prefix,
 * made from the reserve, and counted in stacks_truncated; only when the reserve is used up too does it
 * fall back to the prefix itself. A set-associative cache of whole chains makes a repeated chain one hash.
 *
 * User frames are only meaningful inside one process, so a chain with user frames hangs below a synthetic
 * STACK_FRAME_PROCESS node whose ip is the caller's process scope: a key the caller never gives another
 * process (the process's task index and the generation of its slot, usage_task_scope()), so that a
 * process never inherits the nodes, peaks or per-process tree of one that had its task slot before.
 *
 * With per-process trees on, every chain is also interned below the process's own scope node under a
 * second root, STACK_NODE_PROCESSES: the process's tree, with peaks of its own. stacktree_intern() then
 * returns the process-tree leaf, whose twin is the global leaf; charging one charges both paths, so the
 * global tree and each process tree hold true current and peak values. Roots: STACK_NODE_ROOT (all
 * chains) and STACK_NODE_PROCESSES (its children are the per-process scope nodes).
 *
 * Cost: a node with one child that no chain ends at always holds exactly what its child holds, so only
 * branching and terminal nodes ("counted" nodes) keep counters, and a charge walks from counted node to
 * counted node. Real and synthetic stack tries are mostly such unary runs: a 20-frame chain typically
 * updates 3 to 6 counters instead of 21. Counters live apart from the rest of the node, so the walk
 * touches 32 bytes per step.
 *
 * Besides its ledger, each counted node counts the pages ever charged through it (stacktree_allocated()):
 * allocations since the start, which releases never take back; what pprof calls alloc_objects.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "stats.h"

#define STACK_NODE_ROOT 0u
#define STACK_NODE_PROCESSES 1u
#define STACK_NODE_NONE UINT32_MAX

typedef enum StackFrameKind {
        STACK_FRAME_ROOT,
        STACK_FRAME_KERNEL,
        STACK_FRAME_USER,
        STACK_FRAME_PROCESS,
        STACK_FRAME_TRUNCATED,          /* "[truncated]": chains cut short here by the node budget */
        _STACK_FRAME_KIND_MAX,
} StackFrameKind;

typedef struct StackNode {
        uint64_t ip;
        uint32_t parent;        /* STACK_NODE_NONE for the root */
        uint32_t first_child;   /* STACK_NODE_NONE if a leaf */
        uint32_t next_sibling;  /* STACK_NODE_NONE if the last child */
        uint32_t twin;          /* process-tree node: the global node of the same chain, when a leaf */
        uint16_t module;        /* module charged for chains ending here: the innermost module frame */
        uint8_t kind:3;         /* StackFrameKind */
        uint8_t counted:1;      /* keeps its own counters (branching or terminal); see above */
        uint8_t flags:4;        /* StackNodeFlags, inherited from the parent */
        uint8_t depth;          /* distance from the root, saturating at 255 */
} StackNode;

typedef enum StackNodeFlags {
        STACK_NODE_MODULE_LOADER = 1 << 0,      /* the chain passes through the kernel's module loader */
        STACK_NODE_MODULE_INIT = 1 << 1,        /* ... through do_init_module(): after the module_load event */
} StackNodeFlags;

/*
 * Classifies a new kernel frame: returns the module id its address belongs to (0 for none) and may set
 * StackNodeFlags in *flags. Called once per node, when it is created.
 */
typedef uint16_t (*StackModuleFn)(void *userdata, uint64_t ip, unsigned *flags);

typedef struct StackTree StackTree;

/* max_nodes: the node budget (>= 2), half of which process trees may use. module_fn may be NULL.
 * Returns NULL on OOM. */
StackTree *stacktree_new(size_t max_nodes, bool per_process, StackModuleFn module_fn, void *userdata);
StackTree *stacktree_free(StackTree *t);

/*
 * Returns the leaf node to charge for the chain (frames innermost first; the first n_kernel are kernel
 * addresses, the rest user addresses) allocated by process scope, creating nodes as needed: the global
 * leaf, or with per-process trees the process-tree leaf (twin of the global one). An empty chain is the
 * root. Never fails: on OOM or past the budget, the deepest existing prefix is returned (and counted).
 */
uint32_t stacktree_intern(StackTree *t, const uint64_t *frames, size_t n_frames, size_t n_kernel,
                uint64_t scope);

/* Adds pages to the node and all its ancestors, raising their peaks. */
void stacktree_charge(StackTree *t, uint32_t node, uint64_t pages);
/* Takes pages off the node and all its ancestors. */
void stacktree_uncharge(StackTree *t, uint32_t node, uint64_t pages);
/* An aggregated change (ledger_raise()) on the node and all its ancestors: each peak rises to at least its
 * current value + rise, then delta pages are charged (> 0) or uncharged (< 0). */
void stacktree_apply(StackTree *t, uint32_t node, uint64_t rise, int64_t delta);

/* The existing child of parent for (kind, ip), or STACK_NODE_NONE. */
uint32_t stacktree_find_child(const StackTree *t, uint32_t parent, StackFrameKind kind, uint64_t ip);
/* The scope node of a process's tree, or STACK_NODE_NONE. */
uint32_t stacktree_process_scope(const StackTree *t, uint64_t scope);

/*
 * Classifies the kernel frames of nodes [from, size) again (after the symbol table behind module_fn
 * changed) and lets their descendants inherit: module and flags of nodes created while the symbols were
 * stale. If changed is not NULL it has room for size - from flags and says which nodes changed. Returns
 * the number of nodes changed.
 */
size_t stacktree_reclassify(StackTree *t, uint32_t from, bool *changed);

/* NULL if idx is out of range. */
const StackNode *stacktree_node(const StackTree *t, uint32_t idx);
/* The node's pages ledger: pages charged to chains through it, now and the most ever at once (zero for
 * an index out of range). Stack nodes count pages only; bytes per chain are for the slab source to add. */
Ledger stacktree_pages(const StackTree *t, uint32_t idx);
size_t stacktree_size(const StackTree *t);
/* Changes the node budget (memory budget, budget.h): below the nodes in use, no chain gets a node more and
 * cut ones go to the deepest part of them already there. Nodes in use stay. */
void stacktree_set_max_nodes(StackTree *t, size_t max_nodes);

/* Pages charged through the node since the start or stacktree_clear(): blocks, and the pages samples
 * added (delta > 0); releases never take them off. 0 for an index out of range. */
uint64_t stacktree_allocated(const StackTree *t, uint32_t idx);
/* Calls fn with each node below STACK_NODE_ROOT (the process trees left out) that chains ending there
 * allocated pages through, and how many: the node's allocations less those of its children, so the
 * values add up to the root's. One pass over the node array and two arrays of its size; -ENOMEM. */
typedef void (*StackAllocatedFn)(void *userdata, uint32_t node, uint64_t pages);
int stacktree_foreach_own_allocated(const StackTree *t, StackAllocatedFn fn, void *userdata);

/*
 * Heap trees (stacktree_enable_heap()): the ledger of a node counts bytes, and besides it each counted node
 * keeps the blocks live through it and, for the heap's maximum, the bytes and blocks it held when its
 * process's live bytes were highest. That snapshot is kept lazily: a process counts its maxima (gen, one
 * more at each new maximum); a node changed since the last one keeps what it held then, stamped with gen,
 * and a node not changed since holds now what it held then. A new maximum costs one increment, not a walk.
 */
typedef struct StackHeapCounters {
        uint64_t blocks;                /* live blocks, in 1/STACK_HEAP_BLOCK_UNIT */
        uint64_t max_bytes, max_blocks; /* at the process's maximum, when max_gen is its gen */
        uint32_t max_gen;
} StackHeapCounters;

/* Blocks are counted in fractions: a sampled block stands for 1/p blocks, seldom a whole number. */
#define STACK_HEAP_BLOCK_UNIT 256u

/* Gives every node heap counters (before any chain is interned). -ENOMEM. */
int stacktree_enable_heap(StackTree *t);
/* Adds (or with negative values takes) bytes and blocks on the node and its ancestors, for the process
 * whose maximum count is gen. */
void stacktree_heap_apply(StackTree *t, uint32_t node, int64_t bytes, int64_t blocks, uint32_t gen);
/* The node's live blocks, and its bytes and blocks at the maximum numbered gen; zeros for an index out of
 * range or a tree without heap counters. */
void stacktree_heap_values(const StackTree *t, uint32_t idx, uint32_t gen, uint64_t *ret_blocks,
                uint64_t *ret_max_bytes, uint64_t *ret_max_blocks);

/* Every peak becomes the current value. */
void stacktree_reset_peaks(StackTree *t);
/* Drops every node but the roots, whose counts become 0. Node indices are invalid afterwards. */
void stacktree_clear(StackTree *t);

void stacktree_get_stats(const StackTree *t, StackTreeStats *ret);
/* Current pages charged to the global tree's "[truncated]" nodes: pages whose stacks the budget cut short.
 * Scans the node array (for Status, not the event path). */
uint64_t stacktree_truncated_pages(const StackTree *t);
size_t stacktree_memory_bytes(const StackTree *t);
