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

typedef enum ReportFormat {
        REPORT_TASK_SUMMARY,
        REPORT_TASK_TOP,
        REPORT_MODULE_SUMMARY,
        REPORT_MODULE_TOP,
        REPORT_UNIT_SUMMARY,
        REPORT_UNIT_TOP,
        REPORT_STACK_TREE,
        REPORT_FOLDED,
        REPORT_FLAMEGRAPH,
        _REPORT_FORMAT_MAX,
        _REPORT_FORMAT_INVALID = -EINVAL,
} ReportFormat;

typedef enum ReportSort {
        REPORT_SORT_CURRENT,
        REPORT_SORT_PEAK,
        _REPORT_SORT_MAX,
        _REPORT_SORT_INVALID = -EINVAL,
} ReportSort;

typedef struct ReportOptions {
        ReportFormat formats[_REPORT_FORMAT_MAX];       /* in the order asked for, no repeats */
        size_t n_formats;
        unsigned throttle;      /* percent 1..100: only the biggest entries making up this share */
        ReportSort sort;        /* order of lists and children; peaks fall back to current if unknown */
        int64_t pid;            /* focus on one task (-1: all) */
        const char *module;     /* focus on one module (NULL: all) */
        int64_t max_depth;      /* tree levels below the root to show (-1: all there are) */
        bool offsets;           /* flamegraph: keep frames apart by offset instead of merging by function */
} ReportOptions;

#define REPORT_OPTIONS_DEFAULT \
        ((ReportOptions) { .throttle = 100, .sort = REPORT_SORT_CURRENT, .pid = -1, .max_depth = -1 })

ReportFormat report_format_from_string(const char *s);
const char *report_format_to_string(ReportFormat f);
ReportSort report_sort_from_string(const char *s);

/* Parses "task_summary,module_top,...". -EINVAL with *reterr_bad pointing at the first bad name (a new
 * string the caller frees), -ENOMEM. */
int report_parse_formats(const char *list, ReportOptions *o, char **reterr_bad);

/*
 * Renders every format of o from doc (borrowed) to f. With more than one format each is framed by
 * "======== Report format NAME: ========" and "... END ========" lines, as memstrack does; a single
 * format is printed alone so that folded and flamegraph output can be used as it is.
 * Returns 0, -ESRCH when o->pid is not in doc, -ENOENT when o->module is not, -ENOMEM, -EIO.
 */
int report_render(json_t *doc, const ReportOptions *o, FILE *f);

/* The same reports as one JSON object, keyed by format name (new reference in *ret). Same errors. */
int report_render_json(json_t *doc, const ReportOptions *o, json_t **ret);

/* A copy of a StackNode tree with children sorted by o->sort, cut at o->throttle percent of each node's
 * pages and at o->max_depth levels; each node gets "selfPages", its current pages not held by any child
 * the daemon sent. New reference, NULL on OOM. */
json_t *report_prune_tree(const json_t *node, const ReportOptions *o);
