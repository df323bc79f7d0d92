/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The live view's history graph: the History of the selected row (task, module or unit; in the stacks
 * view the scope, else the total) as one line, a sparkline of current pages with the bucket of the
 * highest peak marked. Model only: top.c asks for the History, view.c draws the line.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model.h"

#define TOP_GRAPH_SECONDS 120           /* how far back the graph goes (1 s buckets) */

typedef struct TopGraph {
        char *key;                      /* owned: what the points are of ("pid 42", "unit x", ...); NULL: none */
        uint64_t *current, *peak;       /* owned, n each, oldest first */
        size_t n;
        bool unsupported;               /* memstrackd has no History: never ask again */
} TopGraph;

void top_graph_done(TopGraph *g);

/* The History parameters for the selection of m (new reference) and its key (new string) in *ret_key;
 * NULL on OOM. */
json_t *top_graph_parameters(const TopModel *m, char **ret_key);
/* Whether the graph shows what key names (the selection may have moved since the call). */
bool top_graph_is_for(const TopGraph *g, const char *key);
/* Takes a History reply (borrowed) for key. -ENOMEM, -EBADMSG. */
int top_graph_update(TopGraph *g, const char *key, json_t *reply);
/* Forgets the points (the owner is gone). */
void top_graph_clear(TopGraph *g);

/*
 * The graph line for width columns: "KEY ▁▂▅█▇▂ peak SIZE now SIZE" (without utf8, a terminal that
 * cannot show the blocks: "KEY _.-#*. peak ..."), the sparkline with one column per
 * bucket (the newest width/2 at most), each current scaled to the highest peak shown. *ret_peak_col is
 * the screen column of the bucket holding the highest peak (for the view to mark), or -1. New string
 * (UTF-8) in *ret, NULL when there is nothing to show. -ENOMEM.
 */
int top_graph_line(const TopGraph *g, uint64_t page_size, size_t width, bool utf8, char **ret, int *ret_peak_col);
