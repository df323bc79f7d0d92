/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The call sites of a recorded heap (a HeapImage of the Heap reply), as heap_maximum, heap_leaks, the HTML
 * page and memstrackctl's heap diff and limits count them: what each frame of the heap's tree holds itself
 * (not through its children) goes to the call site of its stack, and equal sites (function, file and line)
 * of different stacks add up. Stack trees keep every frame; only call sites are chosen.
 *
 * A stack's call site is found from the allocation outward, each function of a frame in turn (a frame's
 * own function first, then those its code was inlined into), passing over:
 *   - allocator wrappers (heap_sites_is_wrapper(): malloc's own family, C++ operator new, glib's g_malloc
 *     family, CPython's object allocator, xmalloc and kin, and the names of ReportOptions.fold_frames),
 *     which allocate for their caller; with ReportOptions.keep_frames the built-in ones are call sites
 *     again, line or not;
 *   - frames without a name ("[user] 0x...": no symbol covers the address), which name nothing;
 *   - the C runtime's entry frames (_start, __libc_start_call_main, start_thread, clone...), through
 *     which every stack passes.
 * Of the functions left, the innermost with a source line is the call site (a library without debug
 * information allocating for its caller gives way to the caller's line); without one, the innermost
 * function left; without any, the innermost entry frame, else the frame itself.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "report.h"

/* HeapNode.freedBlocks' buckets: the last one holds the lives beyond the Heap reply's last bound. */
#define HEAP_SITE_LIFETIMES 6

typedef struct HeapSite {
        const json_t *node;     /* the frame that names the site, borrowed from the heap */
        size_t level;           /* which of its functions: 0 its own, k the k-th it was inlined into */
        uint64_t bytes, blocks;
        /* A heap shown over a window (heap-moment.h): what the site allocated there was freed there too. */
        uint64_t freed_bytes, freed_blocks;
        /* Blocks freed at the site by how long they lived, and of them the temporary ones (HeapNode's). */
        uint64_t lifetimes[HEAP_SITE_LIFETIMES], temporary;
        size_t order;           /* in the order the tree is walked: keeps equal sites in a fixed order */
} HeapSite;

typedef struct HeapSites {
        HeapSite *sites;        /* biggest first */
        size_t n;
} HeapSites;

/* The call sites of heap h as it stood at its maximum, or with leaks what was never freed (live now, for a
 * heap still running; a moment or what a window allocated and freed, for a heap rewritten by heap-moment.h),
 * biggest first; sites holding nothing are left out. 0 or -ENOMEM (*ret untouched). */
int heap_sites_collect(const json_t *h, bool leaks, const ReportOptions *o, HeapSites *ret);
/* The call sites blocks were freed at, with their lifetimes: most temporary blocks first, then most freed;
 * bytes and blocks are what each holds now (never freed, for an ended heap). */
int heap_sites_collect_lifetimes(const json_t *h, const ReportOptions *o, HeapSites *ret);
/* The blocks freed at a site, whatever their lives. */
uint64_t heap_site_freed(const HeapSite *s);
/* The call site of each frame of h that has an id (a recording's timeline names frames by it), for a
 * page that adds the timeline's cells up by call site: into *ret_sites {"ID": index} and *ret_labels
 * [label...], each label (heap_site_label()) once. New references. 0 or -ENOMEM. */
int heap_sites_of_frames(const json_t *h, const ReportOptions *o, json_t **ret_sites, json_t **ret_labels);
void heap_sites_done(HeapSites *s);

/* The built-in list of wrappers, one name at a time ('*' matches any run of characters); NULL past it.
 * A function matches by its name as the Heap reply gives it (DWARF's, or without it the frame's symbol),
 * glibc's internal aliases (__GI_name) and compiler clones (name.constprop.0, name.localalias) as name. */
const char *heap_sites_wrapper(size_t i);

/* The site's function, file and line (NULL, NULL, 0 when it has none). */
const char *heap_site_function(const HeapSite *s);
const char *heap_site_file(const HeapSite *s);
int64_t heap_site_line(const HeapSite *s);
/* The site as every heap view names a frame: "function  file:line", the functions it was inlined into
 * after it (report_heap_frame_label_at()). New string, NULL on OOM. */
char *heap_site_label(const HeapSite *s);
/* The site as JSON: frame, function, file, line, bytes, blocks and errorBytes (heap_site_error() of a heap
 * sampled once per interval bytes). New reference, NULL on OOM. */
json_t *heap_site_json(const HeapSite *s, uint64_t interval);

/* The error the reports state for bytes estimated from one stack per interval bytes: three standard
 * deviations of the Poisson estimate, 3 sqrt(bytes * interval); 0 when every stack is taken. */
uint64_t heap_site_error(uint64_t bytes, uint64_t interval);
