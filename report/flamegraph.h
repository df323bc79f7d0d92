/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A self-contained SVG flame graph of a StackNode tree (as report_prune_tree() returns it): the root at
 * the bottom, callees stacked above their callers, every frame a box as wide as its current pages, colored
 * by module, with a <title> tooltip "frame [module]: N pages (X%), peak M". A small inline script (no
 * external references) lets a browser zoom into a frame by clicking it and search frames by name; without
 * scripts (an <img>, a viewer) the graph is the same, static.
 *
 * Each frame is a <g class="frame" data-pages="N" data-name="LABEL"> holding its <title>, <rect>, <text>
 * and its children's <g> elements, so the nesting of the XML is the nesting of the stacks. The root <svg>
 * carries data-total-pages, data-px-per-page and data-min-box-px: a box is data-pages * data-px-per-page
 * wide, the root box spans FLAMEGRAPH_WIDTH_PX - 2 * FLAMEGRAPH_MARGIN_PX, children never extend past their
 * parent, and no box but the root is narrower than FLAMEGRAPH_MIN_BOX_PX: siblings that would be are drawn
 * as one box "[N smaller frames]" if together they are wide enough, else left out.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define FLAMEGRAPH_WIDTH_PX 1200
#define FLAMEGRAPH_MARGIN_PX 10
#define FLAMEGRAPH_FRAME_PX 16
#define FLAMEGRAPH_MIN_BOX_PX 1.0

typedef struct FlamegraphInfo {
        uint64_t page_size;             /* 0: 4096 */
        const char *host;               /* where the data comes from; NULL: not known */
        uint64_t realtime_usec;         /* CLOCK_REALTIME when it was taken; 0: not known */
        bool bytes;                     /* the tree counts a user-space heap's bytes at its maximum, not pages */
} FlamegraphInfo;

/*
 * A copy of the StackNode tree node (borrowed) in which, at every level, siblings of the same function
 * and module (differing only in their +0x offsets) are one node: pages, truncated children and peaks
 * (null if any is unknown; the sum is then an upper bound) added up, children merged the same way,
 * "address" kept only if all agree, and "mergedFrames" counting the nodes merged. New reference, NULL
 * on OOM.
 */
json_t *flamegraph_merge_functions(const json_t *node);

/* root: a StackNode (borrowed). -ENOMEM, -EIO. */
int flamegraph_write(const json_t *root, const FlamegraphInfo *info, FILE *f);
