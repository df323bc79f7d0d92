/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A History reply (current and peak pages over time, docs/protocol.md) as an SVG chart: the current
 * pages a filled area, the peak a line over it, a value axis at round sizes and a time axis in local
 * time. Self-contained (no script, no external reference), so it shows as a file, in an <img> and inline
 * in memstrackctl's HTML report, which scales it to the page's width (viewBox).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define HISTORY_CHART_WIDTH_PX 800
#define HISTORY_CHART_HEIGHT_PX 300

/* history: the History reply's parameters (borrowed); title: a heading (a kernel string: escaped), NULL
 * for one from the reply ("History of the task loadgen"); standalone: a file of its own (an XML
 * declaration first), else an element to put inside HTML. -ENOMEM, -EIO. */
int history_chart_write(const json_t *history, uint64_t page_size, const char *title, bool standalone, FILE *f);
