/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Heap view: user-space heaps recorded through the heap library (core/heap.h), each with its exact
 * counts and its stack tree, estimates scaled to those counts, frames named with function, source file and
 * line (inlined functions too) from the mappings saved while the process ran.
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "view.h"
#include "usym.h"

typedef struct HeapQuery {
        int32_t pid;                    /* 0: every heap */
        unsigned max_depth;             /* levels below a heap's root */
        unsigned max_children;          /* children per node, biggest first (now or at the maximum) */
        uint32_t min_ppm;               /* frames below this share (per million) of their heap's live and
                                         * peak bytes, both, are left out; 0: none */
        bool show_addresses;
        bool timeline;                  /* each heap's timeline, and its frames' ids */
} HeapQuery;

#define HEAP_QUERY_DEPTH_DEFAULT 64u
#define HEAP_QUERY_CHILDREN_DEFAULT 64u

/* The tree (HeapNode) of the heap with this serial (heap.h), as Heap replies it. New reference, NULL on OOM. */
json_t *heap_query_root_json(Accounting *a, UserSymbols *usym, const HeapQuery *q, uint32_t serial);

/* The Heap reply (docs/protocol.md). usym may be NULL (frames stay addresses). -ESRCH when pid recorded no
 * heap, -ENOMEM. */
int heap_query_json(Accounting *a, UserSymbols *usym, const HeapQuery *q, json_t **ret);
