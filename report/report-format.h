/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One report format, as the table in report-formats.c lists it. Each family of formats has a file of its
 * own (render-FAMILY.c) holding its renderers and, for each of its formats, the entry
 *
 *         const ReportFormat report_format_NAME = {
 *                 .name = "NAME", .family = "FAMILY", .text = ..., .json = ...,
 *         };
 *
 * that the table's X(NAME) line refers to. Adding a format is that entry with its renderers in its family's
 * file and its X(NAME) line in the table; parsing (--format, --report), report_render() and
 * report_render_json(), memstrackctl's --help and shell completions take it from there, and
 * tests/check-report-formats.py fails until memstrackctl(1) describes it.
 */

#include <stdio.h>

#include <jansson.h>

#include "report.h"

/*
 * Every format takes the same sub-arguments (report_parse_formats()); what top=N counts (children per
 * stack node, entries per list, stacks per unit) is up to its renderers.
 *
 * Both renderers take the document (borrowed) and the options of this one format (report_options_for():
 * its sub-arguments over the report's). They return 0, -ESRCH when o->pid is not in the document,
 * -ENOENT when o->module is not, -ENOMEM; what a document lacks (no units, no slab objects) they say in
 * their output instead of failing, so that the other formats of a report are still written.
 */
typedef int (*ReportTextRenderer)(json_t *doc, const ReportOptions *o, FILE *f);
/* *ret: a new reference, the format's value in report_render_json()'s object. */
typedef int (*ReportJsonRenderer)(json_t *doc, const ReportOptions *o, json_t **ret);

struct ReportFormat {
        const char *name;               /* as --format and --report take it, and the key of its JSON value */
        const char *family;             /* its file: render-FAMILY.c */
        ReportTextRenderer text;
        ReportJsonRenderer json;        /* NULL if the format has no JSON form: its --json value is null */
};
