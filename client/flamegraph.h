/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A self-contained SVG flame graph of a StackNode tree (as report_prune_tree() returns it): the root at
 * the bottom, callees stacked above their callers, every frame a box as wide as its current pages, colored
 * by module, with a <title> tooltip "frame (module): N pages (X%), peak M".
 *
 * Each frame is a <g class="frame" data-pages="N"> holding its <title>, <rect>, <text> and its children's
 * <g> elements, so the nesting of the XML is the nesting of the stacks. The root <svg> carries
 * data-total-pages and data-px-per-page: a box is data-pages * data-px-per-page wide, the root box spans
 * FLAMEGRAPH_WIDTH_PX - 2 * FLAMEGRAPH_MARGIN_PX, and children never extend past their parent. Boxes
 * narrower than FLAMEGRAPH_MIN_BOX_PX are left out (with their subtrees).
 */

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define FLAMEGRAPH_WIDTH_PX 1200
#define FLAMEGRAPH_MARGIN_PX 10
#define FLAMEGRAPH_FRAME_PX 16
#define FLAMEGRAPH_MIN_BOX_PX 0.1

/* root: a StackNode (borrowed). -ENOMEM, -EIO. */
int flamegraph_write(const json_t *root, uint64_t page_size, FILE *f);
