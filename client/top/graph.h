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
        uint64_t *timestamp_usec;       /* owned, n: each bucket's start (CLOCK_REALTIME) */
        size_t n;
        uint64_t resolution_usec;       /* the bucket length */
        uint64_t span_usec;             /* how far back it was asked for */
        bool unsupported;               /* memstrackd has no History: never ask again */
} TopGraph;

/* The chart: per plot column, the current and the peak as heights in eighths of a row (0 to 8 * height),
 * or TOP_CHART_EMPTY where no bucket falls in the column (the daemon did not sample then). */
#define TOP_CHART_EMPTY UINT32_MAX
typedef struct TopChart {
        size_t width, height;           /* plot columns and rows, axes not included */
        uint32_t *current, *peak;       /* owned, width each */
        uint64_t top_pages;             /* the value at the top of the plot: a round size (1, 2 or 5 times a
                                         * power of ten KiB, MiB, ...) at or above the peak */
        uint64_t span_usec;             /* time across the plot, ending at the newest bucket */
        size_t peak_column;             /* the column of the highest peak, SIZE_MAX if none */
} TopChart;

void top_graph_done(TopGraph *g);

/* The History parameters for the selection of m over the chart's span, or TOP_GRAPH_SECONDS without a
 * chart (new reference), and its key (new string) in *ret_key; NULL on OOM. */
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

/* The chart of g for a plot of width x height cells: the buckets of the last span_usec binned into the
 * columns (a column shows its newest current and its highest peak), scaled to a round top value.
 * -ENOMEM, -EINVAL for an empty plot. */
int top_graph_chart(const TopGraph *g, uint64_t page_size, size_t width, size_t height, TopChart *ret);
void top_chart_done(TopChart *c);
