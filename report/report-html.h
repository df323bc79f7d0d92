/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The html format: one self-contained page of a snapshot document, to open offline or send as one
 * file. Everything is inline (styles, the table-sorting script, the history chart and the flame graph
 * as SVG with its zoom script), and a Content-Security-Policy of default-src 'none' keeps the page from
 * loading anything. Sections: summary, history, tasks, units, modules (tables sortable by a click on a
 * column), the flame graph, slab call sites and caches, leaks, OOM kills; a section the document has no
 * data for says so. Print and narrow screens get their own layout (@media rules).
 */

#include <stdio.h>

#include <jansson.h>

#include "report.h"

/* Rows per table unless o->top says otherwise; the heading says how many more there are. */
#define REPORT_HTML_ROWS 100

/* doc and o as report_render(); errors as report_render(). */
int report_html_write(json_t *doc, const ReportOptions *o, FILE *f);
