/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "macro.h"
#include "stacktree.h"
#include "tests.h"

#define CHAIN(...) ((const uint64_t[]) { __VA_ARGS__ }), ELEMENTSOF(((const uint64_t[]) { __VA_ARGS__ }))

static const StackNode *node(StackTree *t, uint32_t i) {
        const StackNode *n = stacktree_node(t, i);
        ASSERT_NOT_NULL(n);
        return n;
}

static void test_sharing(void) {
        StackTree *t = stacktree_new(1000, false, NULL, NULL);

        /* Innermost first: 0x3 is the leaf, 0x1 the outermost frame (a child of the root). */
        /* Two roots to begin with: all chains, and the per-process trees. */
        ASSERT_EQ(stacktree_size(t), 2);
        uint32_t a = stacktree_intern(t, CHAIN(0x3, 0x2, 0x1), 3, 0);
        ASSERT_EQ(stacktree_size(t), 5);
        uint32_t again = stacktree_intern(t, CHAIN(0x3, 0x2, 0x1), 3, 0);
        ASSERT_EQ(a, again);
        ASSERT_EQ(stacktree_size(t), 5);

        /* Shares the path 0x1 -> 0x2, adds one leaf. */
        uint32_t b = stacktree_intern(t, CHAIN(0x4, 0x2, 0x1), 3, 0);
        ASSERT_NE(a, b);
        ASSERT_EQ(stacktree_size(t), 6);
        ASSERT_EQ(node(t, a)->parent, node(t, b)->parent);
        ASSERT_EQ(node(t, a)->ip, 0x3);
        ASSERT_EQ(node(t, a)->depth, 3);
        const StackNode *mid = node(t, node(t, a)->parent);
        ASSERT_EQ(mid->ip, 0x2);
        ASSERT_EQ(node(t, mid->parent)->ip, 0x1);
        ASSERT_EQ(node(t, mid->parent)->parent, STACK_NODE_ROOT);

        /* The same frames in another position are other nodes. */
        uint32_t c = stacktree_intern(t, CHAIN(0x1, 0x2, 0x3), 3, 0);
        ASSERT_NE(c, a);
        ASSERT_EQ(stacktree_size(t), 9);

        /* Children are enumerable from the parent. */
        unsigned n_children = 0;
        for (uint32_t i = mid->first_child; i != STACK_NODE_NONE; i = node(t, i)->next_sibling)
                n_children++;
        ASSERT_EQ(n_children, 2);

        /* An empty chain is the root itself. */
        ASSERT_EQ(stacktree_intern(t, NULL, 0, 0, 0), STACK_NODE_ROOT);
        stacktree_free(t);
}

static void test_peaks(void) {
        StackTree *t = stacktree_new(1000, false, NULL, NULL);
        uint32_t a = stacktree_intern(t, CHAIN(0xa, 0x1), 2, 0);
        uint32_t b = stacktree_intern(t, CHAIN(0xb, 0x1), 2, 0);
        uint32_t top = node(t, a)->parent;

        stacktree_charge(t, a, 10);
        stacktree_charge(t, b, 5);
        ASSERT_EQ(stacktree_pages(t, top).current, 15);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).current, 15);
        stacktree_uncharge(t, a, 10);
        stacktree_charge(t, b, 3);

        /* Each node's peak is its own maximum over time: a 10, b 8, their parent 15 (not 10 + 8). */
        ASSERT_EQ(stacktree_pages(t, a).current, 0);
        ASSERT_EQ(stacktree_pages(t, a).peak, 10);
        ASSERT_EQ(stacktree_pages(t, b).current, 8);
        ASSERT_EQ(stacktree_pages(t, b).peak, 8);
        ASSERT_EQ(stacktree_pages(t, top).current, 8);
        ASSERT_EQ(stacktree_pages(t, top).peak, 15);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).peak, 15);

        stacktree_reset_peaks(t);
        ASSERT_EQ(stacktree_pages(t, a).peak, 0);
        ASSERT_EQ(stacktree_pages(t, top).peak, 8);

        /* More taken off than held is clamped and counted, never wrapped around. */
        stacktree_uncharge(t, b, 9);
        StackTreeStats s;
        stacktree_get_stats(t, &s);
        ASSERT_EQ(s.underflows, 3); /* b, its parent, the root */
        ASSERT_EQ(stacktree_pages(t, b).current, 0);

        stacktree_clear(t);
        ASSERT_EQ(stacktree_size(t), 2);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).current, 0);
        /* After a clear, a chain is built anew (the cache must not return stale leaves). */
        uint32_t a2 = stacktree_intern(t, CHAIN(0xa, 0x1), 2, 0);
        ASSERT_EQ(stacktree_size(t), 4);
        ASSERT_EQ(node(t, a2)->ip, 0xa);
        stacktree_free(t);
}

/* Nodes on single-child runs keep no counters of their own; when one becomes a branch point or a
 * chain's end later, it must start from the history it shared with the node below. */
static void test_counters_appear_later(void) {
        StackTree *t = stacktree_new(1000, false, NULL, NULL);

        uint32_t c = stacktree_intern(t, CHAIN(0xc, 0xb, 0xa), 3, 0);
        uint32_t b = node(t, c)->parent;
        uint32_t a = node(t, b)->parent;
        ASSERT_TRUE(!node(t, b)->counted);
        ASSERT_TRUE(!node(t, a)->counted);
        stacktree_charge(t, c, 10);
        stacktree_uncharge(t, c, 7);
        ASSERT_EQ(stacktree_pages(t, b).current, 3);
        ASSERT_EQ(stacktree_pages(t, a).peak, 10);

        /* b branches: its peak is the 10 it already had. */
        uint32_t d = stacktree_intern(t, CHAIN(0xd, 0xb, 0xa), 3, 0);
        ASSERT_TRUE(node(t, b)->counted);
        ASSERT_EQ(stacktree_pages(t, b).peak, 10);
        stacktree_charge(t, d, 5);
        ASSERT_EQ(stacktree_pages(t, b).current, 8);
        ASSERT_EQ(stacktree_pages(t, b).peak, 10);
        stacktree_charge(t, d, 5);
        ASSERT_EQ(stacktree_pages(t, b).peak, 13);
        ASSERT_EQ(stacktree_pages(t, a).peak, 13);
        ASSERT_EQ(stacktree_pages(t, c).peak, 10);

        /* a becomes a chain's end: it holds everything below it, and its own pages on top. */
        uint32_t a2 = stacktree_intern(t, CHAIN(0xa), 1, 0);
        ASSERT_EQ(a2, a);
        ASSERT_TRUE(node(t, a)->counted);
        ASSERT_EQ(stacktree_pages(t, a).current, 13);
        stacktree_charge(t, a, 1);
        ASSERT_EQ(stacktree_pages(t, a).current, 14);
        ASSERT_EQ(stacktree_pages(t, a).peak, 14);
        ASSERT_EQ(stacktree_pages(t, b).current, 13);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).current, 14);
        stacktree_free(t);
}

static void test_budget(void) {
        StackTree *t = stacktree_new(6, false, NULL, NULL);
        StackTreeStats s;

        /* 2 roots + 3 frames fit, the last node is kept for "[truncated]": a 6-frame chain is cut after
         * its 3rd frame from the outside and charged to a "[truncated]" node there. */
        uint32_t leaf = stacktree_intern(t, CHAIN(6, 5, 4, 3, 2, 1), 6, 0);
        ASSERT_EQ(stacktree_size(t), 6);
        ASSERT_EQ(node(t, leaf)->kind, STACK_FRAME_TRUNCATED);
        ASSERT_EQ(node(t, node(t, leaf)->parent)->ip, 3);
        stacktree_get_stats(t, &s);
        ASSERT_EQ(s.stacks_truncated, 1);
        ASSERT_EQ(s.max_nodes, 6);
        stacktree_charge(t, leaf, 5);
        ASSERT_EQ(stacktree_truncated_pages(t), 5);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).current, 5);

        /* Known chains within the budget still work exactly. */
        ASSERT_EQ(node(t, stacktree_intern(t, CHAIN(3, 2, 1), 3, 0))->ip, 3);
        /* The reserve is used up: another cut falls back to its prefix. */
        ASSERT_EQ(node(t, stacktree_intern(t, CHAIN(9, 2, 1), 3, 0))->ip, 2);
        stacktree_get_stats(t, &s);
        ASSERT_EQ(s.stacks_truncated, 2);
        stacktree_free(t);

        /* A new process's user stack when even its scope node does not fit: "[truncated]" below the
         * root, not the root itself. */
        t = stacktree_new(4, false, NULL, NULL);
        ASSERT_EQ(node(t, stacktree_intern(t, CHAIN(0x10), 1, 0))->ip, 0x10);
        leaf = stacktree_intern(t, CHAIN(0x11, 0x400), 1, 7);
        ASSERT_EQ(node(t, leaf)->kind, STACK_FRAME_TRUNCATED);
        ASSERT_EQ(node(t, leaf)->parent, STACK_NODE_ROOT);
        stacktree_free(t);
}

static void test_user_frames(void) {
        StackTree *t = stacktree_new(1000, false, NULL, NULL);

        /* kernel 0x10, 0x11 (innermost first), then user 0x400, 0x500 of process 42. */
        uint32_t a = stacktree_intern(t, CHAIN(0x10, 0x11, 0x400, 0x500), 2, 42);
        const StackNode *n = node(t, a);
        ASSERT_EQ(n->kind, STACK_FRAME_KERNEL);
        ASSERT_EQ(n->depth, 5);
        /* Walk up to the process node. */
        while (n->kind != STACK_FRAME_PROCESS)
                n = node(t, n->parent);
        ASSERT_EQ(n->ip, 42);
        ASSERT_EQ(n->parent, STACK_NODE_ROOT);

        /* The same user addresses in another process are different code: a different path. */
        uint32_t b = stacktree_intern(t, CHAIN(0x10, 0x11, 0x400, 0x500), 2, 43);
        ASSERT_NE(a, b);
        /* Kernel-only chains ignore the scope. */
        ASSERT_EQ(stacktree_intern(t, CHAIN(0x10, 0x11), 2, 42), stacktree_intern(t, CHAIN(0x10, 0x11), 2, 43));
        stacktree_free(t);
}

static uint16_t classify(void *userdata, uint64_t ip, unsigned *flags) {
        unsigned *calls = userdata;
        (*calls)++;
        if (ip >= 0xc000 && ip < 0xd000)
                return 7; /* a module */
        if (ip == 0x77)
                *flags |= STACK_NODE_MODULE_LOADER;
        return 0;
}

static void test_module_classification(void) {
        unsigned calls = 0;
        StackTree *t = stacktree_new(1000, false, classify, &calls);

        /* The innermost module frame decides; frames inside it inherit. */
        uint32_t a = stacktree_intern(t, CHAIN(0x1, 0xc010, 0x2), 3, 0);
        ASSERT_EQ(node(t, a)->module, 7);
        ASSERT_EQ(node(t, node(t, a)->parent)->module, 7);
        ASSERT_EQ(node(t, node(t, node(t, a)->parent)->parent)->module, 0);
        ASSERT_EQ(calls, 3);
        /* Classified once per node, not per intern. */
        (void) stacktree_intern(t, CHAIN(0x1, 0xc010, 0x2), 3, 0);
        ASSERT_EQ(calls, 3);

        uint32_t l = stacktree_intern(t, CHAIN(0x5, 0x77, 0x2), 3, 0);
        ASSERT_TRUE(node(t, l)->flags & STACK_NODE_MODULE_LOADER);
        ASSERT_EQ(node(t, l)->module, 0);
        ASSERT_TRUE(!(node(t, a)->flags & STACK_NODE_MODULE_LOADER));
        stacktree_free(t);
}

/* Thousands of distinct chains through the cache: every repeat returns its first leaf. */
static void test_many_chains(void) {
        enum { N = 20000, DEPTH = 20 };
        StackTree *t = stacktree_new(1u << 20, false, NULL, NULL);
        static uint32_t leaves[N];
        uint64_t frames[DEPTH];

        for (unsigned round = 0; round < 3; round++)
                for (unsigned i = 0; i < N; i++) {
                        for (unsigned d = 0; d < DEPTH; d++)
                                frames[d] = 0x1000 + (d < 10 ? d : (uint64_t) (i % (d * 37 + 1)) * 64 + d);
                        uint32_t leaf = stacktree_intern(t, frames, DEPTH, DEPTH, 0);
                        if (round == 0)
                                leaves[i] = leaf;
                        else
                                ASSERT_EQ(leaf, leaves[i]);
                        ASSERT_EQ(node(t, leaf)->depth, DEPTH);
                }
        StackTreeStats s;
        stacktree_get_stats(t, &s);
        ASSERT_GT(s.cache_hits, 0);
        ASSERT_EQ(s.stacks_truncated, 0);
        stacktree_free(t);
}

static void test_per_process_trees(void) {
        StackTree *t = stacktree_new(1000, true, NULL, NULL);

        /* Processes 1 and 2 allocate through the same chain; each gets its own leaf, twinned with one global leaf. */
        uint32_t p1 = stacktree_intern(t, CHAIN(0xa, 0x1), 2, 1);
        uint32_t p2 = stacktree_intern(t, CHAIN(0xa, 0x1), 2, 2);
        uint32_t q1 = stacktree_intern(t, CHAIN(0xb, 0x1), 2, 1);
        ASSERT_NE(p1, p2);
        ASSERT_EQ(node(t, p1)->twin, node(t, p2)->twin);
        ASSERT_EQ(stacktree_intern(t, CHAIN(0xa, 0x1), 2, 1), p1);
        uint32_t g = node(t, p1)->twin;
        ASSERT_EQ(node(t, g)->ip, 0xa);
        uint32_t scope1 = stacktree_process_scope(t, 1);
        ASSERT_NE(scope1, STACK_NODE_NONE);
        ASSERT_EQ(node(t, scope1)->parent, STACK_NODE_PROCESSES);
        ASSERT_EQ(stacktree_process_scope(t, 3), STACK_NODE_NONE);
        ASSERT_EQ(stacktree_find_child(t, scope1, STACK_FRAME_KERNEL, 0x1), node(t, p1)->parent);

        /* Process 1: 10 pages via a, freed, then 4 via b. Process 2: 6 via a. */
        stacktree_charge(t, p1, 10);
        stacktree_charge(t, p2, 6);
        stacktree_uncharge(t, p1, 10);
        stacktree_charge(t, q1, 4);

        /* Global: a held 16 at most; process 1's tree has its own peaks (10 at the top, not 14). */
        ASSERT_EQ(stacktree_pages(t, g).current, 6);
        ASSERT_EQ(stacktree_pages(t, g).peak, 16);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).current, 10);
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_ROOT).peak, 16);
        ASSERT_EQ(stacktree_pages(t, scope1).current, 4);
        ASSERT_EQ(stacktree_pages(t, scope1).peak, 10);
        ASSERT_EQ(stacktree_pages(t, p1).peak, 10);
        ASSERT_EQ(stacktree_pages(t, stacktree_process_scope(t, 2)).peak, 6);
        /* Both trees hold every page. */
        ASSERT_EQ(stacktree_pages(t, STACK_NODE_PROCESSES).current, stacktree_pages(t, STACK_NODE_ROOT).current);

        /* Out of budget (the global path takes 5 of 8 nodes, the process path gets the scope node and
         * 0x1, the last node is the reserve): the process tree charges "[truncated]" below 0x1, twinned
         * with the global leaf, so both trees still hold every page. Counted once. */
        StackTree *small = stacktree_new(8, true, NULL, NULL);
        uint32_t l = stacktree_intern(small, CHAIN(0x3, 0x2, 0x1), 3, 9);
        StackTreeStats s;
        stacktree_get_stats(small, &s);
        ASSERT_EQ(s.process_paths_truncated, 1);
        ASSERT_EQ(s.n_process_nodes, 3);
        ASSERT_EQ(node(small, l)->kind, STACK_FRAME_TRUNCATED);
        ASSERT_EQ(node(small, node(small, l)->parent)->ip, 0x1);
        ASSERT_EQ(node(small, node(small, l)->twin)->ip, 0x3);
        ASSERT_EQ(stacktree_intern(small, CHAIN(0x3, 0x2, 0x1), 3, 9), l);
        stacktree_get_stats(small, &s);
        ASSERT_EQ(s.process_paths_truncated, 1);
        stacktree_charge(small, l, 2);
        ASSERT_EQ(stacktree_pages(small, STACK_NODE_ROOT).current, 2);
        ASSERT_EQ(stacktree_pages(small, STACK_NODE_PROCESSES).current, 2);
        ASSERT_EQ(stacktree_pages(small, node(small, l)->twin).current, 2);
        /* Process-tree "[truncated]" pages are the global leaf's: not counted twice. */
        ASSERT_EQ(stacktree_truncated_pages(small), 0);
        /* Past the reserve too: charged to the global tree only. */
        uint32_t l2 = stacktree_intern(small, CHAIN(0x4, 0x2, 0x1), 3, 9);
        ASSERT_EQ(node(small, l2)->twin, STACK_NODE_NONE);
        stacktree_free(small);
        stacktree_free(t);
}

typedef struct OwnAllocated {
        uint64_t by_node[64];
        uint64_t sum;
        unsigned calls;
} OwnAllocated;

static void collect_own(void *userdata, uint32_t node, uint64_t pages) {
        OwnAllocated *o = userdata;

        ASSERT_LT(node, ELEMENTSOF(o->by_node));
        ASSERT_EQ(o->by_node[node], 0);
        ASSERT_GT(pages, 0);
        o->by_node[node] = pages;
        o->sum += pages;
        o->calls++;
}

/* Allocations per node: what came through it, never taken off by a release; a node that gets counters
 * late starts from the history of the node below; each node's own allocations add up to the root's, the
 * process trees left out. */
static void test_allocated(void) {
        StackTree *t = stacktree_new(1000, true, NULL, NULL);

        uint32_t c = stacktree_intern(t, CHAIN(0xc, 0xb, 0xa), 3, 0);
        uint32_t gc = node(t, c)->twin;
        uint32_t b = node(t, gc)->parent, a = node(t, b)->parent;
        stacktree_charge(t, c, 10);
        stacktree_uncharge(t, c, 7);
        ASSERT_EQ(stacktree_allocated(t, gc), 10);
        ASSERT_EQ(stacktree_allocated(t, b), 10);
        ASSERT_EQ(stacktree_allocated(t, STACK_NODE_ROOT), 10);
        /* The process tree counts them too, through the twin. */
        ASSERT_EQ(stacktree_allocated(t, stacktree_process_scope(t, 0)), 10);

        /* b branches late: it keeps the 10, then counts d's. */
        uint32_t d = stacktree_intern(t, CHAIN(0xd, 0xb, 0xa), 3, 0);
        uint32_t gd = node(t, d)->twin;
        ASSERT_TRUE(node(t, b)->counted);
        stacktree_charge(t, d, 5);
        stacktree_uncharge(t, d, 5);
        ASSERT_EQ(stacktree_allocated(t, b), 15);
        ASSERT_EQ(stacktree_allocated(t, gd), 5);
        ASSERT_EQ(stacktree_allocated(t, gc), 10);

        /* A sample: +4 counts, -3 does not; its rise alone is no allocation. */
        stacktree_apply(t, d, 9, 4);
        stacktree_apply(t, d, 0, -3);
        stacktree_apply(t, d, 6, 0);
        ASSERT_EQ(stacktree_allocated(t, gd), 9);
        ASSERT_EQ(stacktree_allocated(t, a), 19);

        /* a becomes a chain's end: its own allocations are apart from its children's. */
        uint32_t e = stacktree_intern(t, CHAIN(0xa), 1, 0);
        stacktree_charge(t, e, 2);
        ASSERT_EQ(stacktree_allocated(t, a), 21);

        OwnAllocated own = {};
        ASSERT_EQ(stacktree_foreach_own_allocated(t, collect_own, &own), 0);
        ASSERT_EQ(own.calls, 3);
        ASSERT_EQ(own.by_node[gc], 10);
        ASSERT_EQ(own.by_node[gd], 9);
        ASSERT_EQ(own.by_node[a], 2);
        ASSERT_EQ(own.sum, stacktree_allocated(t, STACK_NODE_ROOT));

        /* Peaks reset keeps them; a clear forgets them. */
        stacktree_reset_peaks(t);
        ASSERT_EQ(stacktree_allocated(t, STACK_NODE_ROOT), 21);
        stacktree_clear(t);
        ASSERT_EQ(stacktree_allocated(t, STACK_NODE_ROOT), 0);
        ASSERT_EQ(stacktree_allocated(t, 12345), 0);
        own = (OwnAllocated) {};
        ASSERT_EQ(stacktree_foreach_own_allocated(t, collect_own, &own), 0);
        ASSERT_EQ(own.calls, 0);
        stacktree_free(t);
}

int main(void) {
        TEST(test_sharing);
        TEST(test_peaks);
        TEST(test_counters_appear_later);
        TEST(test_budget);
        TEST(test_user_frames);
        TEST(test_module_classification);
        TEST(test_many_chains);
        TEST(test_per_process_trees);
        TEST(test_allocated);
        return 0;
}
