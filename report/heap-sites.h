/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The call sites of a recorded heap (a HeapImage of the Heap reply), as heap_maximum, heap_leaks, the HTML
 * page and memstrackctl's heap diff and limits count them: what each frame of the heap's tree holds itself
 * (not through its children) goes to the call site of its stack, the innermost frame of it that has a
 * source line (the line that called malloc, new or an allocating function without line information),
 * else the frame itself. Equal sites (function, file and line) of different stacks add up.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "report.h"

typedef struct HeapSite {
        const json_t *node;     /* the frame that names the site, borrowed from the heap */
        uint64_t bytes, blocks;
        size_t order;           /* in the order the tree is walked: keeps equal sites in a fixed order */
} HeapSite;

typedef struct HeapSites {
        HeapSite *sites;        /* biggest first */
        size_t n;
} HeapSites;

/* The call sites of heap h as it stood at its maximum, or with leaks what was never freed (live now, for a
 * heap still running), biggest first; sites holding nothing are left out. 0 or -ENOMEM (*ret untouched). */
int heap_sites_collect(const json_t *h, bool leaks, const ReportOptions *o, HeapSites *ret);
void heap_sites_done(HeapSites *s);

/* The site as every heap view names a frame: "function  file:line" (report_heap_frame_label()). New string,
 * NULL on OOM. */
char *heap_site_label(const HeapSite *s);
/* The site as JSON: frame, function, file, line, bytes, blocks and errorBytes (heap_site_error() of a heap
 * sampled once per interval bytes). New reference, NULL on OOM. */
json_t *heap_site_json(const HeapSite *s, uint64_t interval);

/* The error the reports state for bytes estimated from one stack per interval bytes: three standard
 * deviations of the Poisson estimate, 3 sqrt(bytes * interval); 0 when every stack is taken. */
uint64_t heap_site_error(uint64_t bytes, uint64_t interval);
