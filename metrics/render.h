/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * memstrack-metrics' exposition: memstrackd's replies (Status, Top, Modules) written as OpenMetrics 1.0.0
 * or as the Prometheus text format 0.0.4. No I/O and no HTTP here, so the unit test renders fixtures.
 * Every metric, its labels and bounds: docs/metrics.md.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef enum MetricsFormat {
        METRICS_FORMAT_PROMETHEUS,      /* text/plain; version=0.0.4: no # UNIT, no # EOF */
        METRICS_FORMAT_OPENMETRICS,     /* application/openmetrics-text; version=1.0.0 */
        _METRICS_FORMAT_MAX,
        _METRICS_FORMAT_INVALID = -EINVAL,
} MetricsFormat;

/* Tasks and units listed by name at most (--top); the rest of their bytes goes to one "[other]" series. */
#define METRICS_TOP_DEFAULT 20
#define METRICS_TOP_MAX 1000
/* Modules listed at most: all of them in practice (a kernel has a few hundred). */
#define METRICS_MODULES_MAX 10000
/* Lost-event reasons listed at most: the daemon has a fixed handful. */
#define METRICS_LOST_REASONS_MAX 64

/* What one scrape learned from memstrackd; every reply borrowed. status NULL: memstrackd did not answer,
 * only memstrack_up 0 is written. top or modules NULL: their families are left out. */
typedef enum MetricsBreakdown {
        METRICS_BY_ORDER,
        METRICS_BY_MIGRATETYPE,
        METRICS_BY_NODE,
        METRICS_BY_GFP,
        _METRICS_BY_MAX,
} MetricsBreakdown;

typedef struct MetricsInput {
        json_t *status;
        json_t *top;
        json_t *modules;
        /* ExplainUnits of the units listed in top (the kernel's figures and who holds what); NULL: left out
         * (a memstrackd without it). */
        json_t *explain_units;
        /* PageBreakdown of all pages, by MetricsBreakdown (gfp with at most top rows); NULL: left out. */
        json_t *breakdown[_METRICS_BY_MAX];
} MetricsInput;

/* PageBreakdown's parameter "by" of each MetricsBreakdown. */
const char *metrics_breakdown_by(MetricsBreakdown b);

/* The format an HTTP Accept header asks for: OpenMetrics when it accepts application/openmetrics-text
 * (version 1.0.0 or none) at least as much as anything else, else the Prometheus text format (also
 * for NULL, an empty or a malformed header). */
MetricsFormat metrics_format_from_accept(const char *accept);

/* The Content-Type of a format's body. */
const char *metrics_content_type(MetricsFormat f);

/*
 * Writes the exposition of in, listing at most top tasks and units (1 .. METRICS_TOP_MAX), into a new
 * NUL-terminated buffer (*ret, the caller frees; *ret_size its length). -ENOMEM, -EINVAL for a bad top.
 * Malformed or missing fields in the replies are left out, never fatal.
 */
int metrics_render(const MetricsInput *in, MetricsFormat f, size_t top, char **ret, size_t *ret_size);
