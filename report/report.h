/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Reports from a snapshot document (snapshot.h), fetched from the daemon or read from a file: the same
 * code renders both, so golden tests on a fixture file test what users see from a live daemon.
 * Nothing here talks to the daemon or prints to the terminal on its own.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/*
 * A report format: its name and how it renders, text and JSON. The formats are one table
 * (report-formats.c), each defined in the file of its family (report-format.h says how to add one).
 */
typedef struct ReportFormat ReportFormat;

/* Room for every format of the table in one ReportOptions (report-formats.c checks it at build time). */
#define REPORT_FORMATS_MAX 32

typedef enum ReportSort {
        REPORT_SORT_CURRENT,
        REPORT_SORT_PEAK,
        _REPORT_SORT_MAX,
        _REPORT_SORT_INVALID = -EINVAL,
} ReportSort;

/* top=N takes 1 to this. */
#define REPORT_TOP_MAX 1000000

/*
 * One format as asked for, with memstrack's sub-arguments ("module_top:top=5:sort_by_peak"). Those not
 * given are 0 / _REPORT_SORT_INVALID and take the value of the report's options (ReportOptions), as
 * memstrack's take its --throttle.
 */
typedef struct ReportFormatSpec {
        const ReportFormat *format;     /* an entry of the table */
        unsigned top;           /* top=N */
        unsigned throttle;      /* throttle=PERCENT */
        ReportSort sort;        /* sort_by_alloc (current pages: memstrack's pages_alloc), sort_by_peak */
} ReportFormatSpec;

typedef struct ReportOptions {
        ReportFormatSpec formats[REPORT_FORMATS_MAX];   /* in the order asked for, no format twice */
        size_t n_formats;
        unsigned throttle;      /* percent 1..100: only the biggest entries making up this share */
        unsigned top;           /* at most this many entries per list and children per stack node (0: all) */
        ReportSort sort;        /* order of lists and children; peaks fall back to current if unknown */
        int64_t pid;            /* focus on one task (-1: all) */
        const char *module;     /* focus on one module (NULL: all) */
        int64_t max_depth;      /* tree levels below the root to show (-1: all there are) */
        bool offsets;           /* flamegraph: keep frames apart by offset instead of merging by function */
        /* proc_slab_static reads this when it renders; NULL: $MEMSTRACK_SLABINFO, else /proc/slabinfo. */
        const char *slabinfo_path;

        /* Recorded heaps (memstrackctl record's documents): which processes get a full report in the heap
         * formats (heap-select.h) besides the table of them all. */
        bool heap_all;                          /* every process's */
        const char *const *heap_processes;      /* PIDs and COMMs, each maybe a comma list (borrowed) */
        size_t n_heap_processes;                /* 0: the command's, and those at heap_min_share or above */
        unsigned heap_min_share;                /* percent of the total maximum, 1..100 */
        /* Call sites (heap-sites.h): the known allocator wrappers are passed over unless keep_frames; the
         * functions of fold_frames are, always. */
        bool keep_frames;
        const char *const *fold_frames;         /* names, '*' matching any run of characters (borrowed) */
        size_t n_fold_frames;
} ReportOptions;

/* A process holding this share of the total maximum of a recording gets its full report by default. */
#define REPORT_HEAP_MIN_SHARE_DEFAULT 10

#define REPORT_OPTIONS_DEFAULT                                                                          \
        ((ReportOptions) { .throttle = 100, .sort = REPORT_SORT_CURRENT, .pid = -1, .max_depth = -1,    \
                           .heap_min_share = REPORT_HEAP_MIN_SHARE_DEFAULT })

/* The format named name, or NULL. */
const ReportFormat *report_format_find(const char *name);
/* The i-th format of the table, in the order help and messages list them; NULL past the last. */
const ReportFormat *report_format_get(size_t i);
const char *report_format_name(const ReportFormat *f);
ReportSort report_sort_from_string(const char *s);

/*
 * Parses memstrack's report list, "FORMAT[:SUBARG]...[,FORMAT[:SUBARG]...]...", into o->formats, with
 * the sub-arguments top=N, throttle=PERCENT, sort_by_alloc and sort_by_peak. A format named twice counts
 * once if its sub-arguments are the same. -EINVAL with *reterr_message saying what is wrong in a
 * sentence for the user (a new string the caller frees; NULL if that failed), -ENOMEM.
 */
int report_parse_formats(const char *list, ReportOptions *o, char **reterr_message);

/* Whether o asks for the format named name, and whether any of its formats sorts by peak. */
bool report_has_format(const ReportOptions *o, const char *name);
bool report_wants_peak(const ReportOptions *o);

/* The options format i of o renders with: its sub-arguments over o's. */
ReportOptions report_options_for(const ReportOptions *o, size_t i);

/*
 * Renders every format of o from doc (borrowed) to f. With more than one format each is framed by
 * "======== Report format NAME: ========" and "... END ========" lines, as memstrack does; a single
 * format is printed alone so that folded, flamegraph and task_top_json output can be used as it is.
 * proc_slab_static says in its section when the slabinfo file cannot be read.
 * Returns 0, -ESRCH when o->pid is not in doc, -ENOENT when o->module is not, -ENOMEM, -EIO.
 */
int report_render(json_t *doc, const ReportOptions *o, FILE *f);

/* The same reports as one JSON object, keyed by format name (new reference in *ret). Same errors. */
int report_render_json(json_t *doc, const ReportOptions *o, json_t **ret);

/* A copy of a StackNode tree with children sorted by o->sort, cut at o->throttle percent of each node's
 * pages, at o->top children per node and at o->max_depth levels; each node gets "selfPages", its current pages not held by any child
 * the daemon sent. New reference, NULL on OOM. */
json_t *report_prune_tree(const json_t *node, const ReportOptions *o);
