/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "historyquery.h"
#include "macro.h"
#include "time-util.h"
#include "units.h"
#include "utf8.h"
#include "varlink.h"

/* The raw name (as the core keeps it) of a unit or module named as in replies; NULL if unknown. */
static const char *history_owner_name(Accounting *a, HistoryKind kind, const char *name) {
        if (kind == HISTORY_UNIT) {
                Units *un = accounting_units(a);
                uint32_t unit = units_find_shown(un, name);
                return unit != UNITS_NONE ? units_unit(un, unit)->name : NULL;
        }
        Usage *u = accounting_usage(a);
        uint16_t module = usage_find_module_shown(u, name);
        return module != USAGE_MODULE_NONE ? usage_module(u, module)->name : NULL;
}

/* The series asked for, tracked from now on if it was not: NULL with -errno in *ret_r when there is
 * nothing by that name. */
static HistorySeries *series_of(History *h, Accounting *a, const HistoryQuery *q, HistoryKind *ret_kind, int *ret_r) {
        HistorySeries *series;

        *ret_r = 0;
        if (q->pid >= 0) {
                Usage *u = accounting_usage(a);
                *ret_kind = HISTORY_TASK;
                series = history_find(h, HISTORY_TASK, q->pid, NULL);
                if (series)
                        return series;
                uint32_t process = usage_find_process(u, q->pid);
                if (process == USAGE_TASK_NONE) {
                        *ret_r = -ESRCH;
                        return NULL;
                }
                const Task *t = usage_task(u, process);
                return history_track(h, HISTORY_TASK, q->pid, t ? t->comm : NULL);
        }
        if (q->unit || q->module) {
                HistoryKind kind = q->unit ? HISTORY_UNIT : HISTORY_MODULE;
                const char *asked = q->unit ?: q->module;
                const char *raw = history_owner_name(a, kind, asked);

                *ret_kind = kind;
                series = history_find(h, kind, 0, raw ?: asked);
                if (series)
                        return series;
                if (!raw) {
                        *ret_r = q->unit ? -ENXIO : -ENOENT;
                        return NULL;
                }
                return history_track(h, kind, 0, raw);
        }
        *ret_kind = HISTORY_TOTAL;
        return history_find(h, HISTORY_TOTAL, 0, NULL);
}

int history_query_json(History *h, Accounting *a, const HistoryQuery *q, const char **ret_bad, json_t **ret) {
        _cleanup_free_ HistorySample *samples = NULL;
        json_auto_t *points = NULL, *resolutions = NULL;
        HistoryKind kind;
        unsigned level = 0;
        int r;

        if (q->pid >= 0 && q->unit) {
                *ret_bad = "unit";
                return -EINVAL;
        }
        if ((q->pid >= 0 || q->unit) && q->module) {
                *ret_bad = "module";
                return -EINVAL;
        }
        if (q->resolution > 0) {
                while (level < HISTORY_LEVELS &&
                       history_levels[level].resolution_usec != (uint64_t) q->resolution * USEC_PER_SEC)
                        level++;
                if (level == HISTORY_LEVELS) {
                        *ret_bad = "resolution";
                        return -EINVAL;
                }
        } else if (q->seconds >= 0)
                level = history_level_for((uint64_t) q->seconds);

        if (!h)
                return -EOPNOTSUPP;
        HistorySeries *series = series_of(h, a, q, &kind, &r);
        if (r < 0)
                return r;
        if (!series)
                return -ENOSPC; /* every series of the kind is among the biggest: cannot be (history.h) */

        samples = calloc(history_levels[level].n_buckets, sizeof(HistorySample));
        if (!samples)
                return -ENOMEM;
        uint64_t since = 0;
        if (q->seconds >= 0) {
                uint64_t back = (uint64_t) q->seconds * USEC_PER_SEC;
                since = q->now_realtime_usec > back ? q->now_realtime_usec - back : 0;
        }
        size_t n = history_series_read(series, level, since, samples);
        points = json_array();
        resolutions = json_array();
        if (!points || !resolutions)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(points, json_pack("{s:I, s:I, s:I}",
                                                            "timestampUsec", varlink_count(samples[i].time_usec),
                                                            "current", varlink_count(samples[i].current_pages),
                                                            "peak", varlink_count(samples[i].peak_pages))) < 0)
                        return -ENOMEM;
        for (unsigned l = 0; l < HISTORY_LEVELS; l++)
                if (json_array_append_new(resolutions,
                                          json_integer(varlink_count(history_levels[l].resolution_usec /
                                                                     USEC_PER_SEC))) < 0)
                        return -ENOMEM;
        *ret = json_pack("{s:s, s:o, s:I, s:O, s:O}",
                         "what", history_kind_to_string(kind),
                         "name", kind == HISTORY_TOTAL ? json_string("") : utf8_json_string(series->name),
                         "resolution", varlink_count(history_levels[level].resolution_usec / USEC_PER_SEC),
                         "resolutions", resolutions,
                         "points", points);
        return *ret ? 0 : -ENOMEM;
}
