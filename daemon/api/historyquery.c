/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "historyquery.h"
#include "macro.h"
#include "time-util.h"
#include "utf8.h"
#include "varlink.h"

int history_query_json(History *h, Accounting *a, const HistoryQuery *q, const char **ret_bad, json_t **ret) {
        _cleanup_free_ ViewHistorySample *samples = NULL;
        json_auto_t *points = NULL, *resolutions = NULL;
        const HistorySeries *series;
        const char *name;
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
                while (level < VIEW_HISTORY_LEVELS &&
                       view_history_resolution_usec(level) != (uint64_t) q->resolution * USEC_PER_SEC)
                        level++;
                if (level == VIEW_HISTORY_LEVELS) {
                        *ret_bad = "resolution";
                        return -EINVAL;
                }
        } else if (q->seconds >= 0)
                level = view_history_level_for((uint64_t) q->seconds);

        if (!h)
                return -EOPNOTSUPP;
        ViewHistoryKind kind = q->pid >= 0 ? VIEW_HISTORY_TASK : q->unit ? VIEW_HISTORY_UNIT :
                               q->module ? VIEW_HISTORY_MODULE : VIEW_HISTORY_TOTAL;
        r = view_history_series(h, a, kind, q->pid, q->unit ?: q->module, &series, &name);
        if (r < 0)
                return r;

        samples = calloc(view_history_buckets(level), sizeof(ViewHistorySample));
        if (!samples)
                return -ENOMEM;
        uint64_t since = 0;
        if (q->seconds >= 0) {
                uint64_t back = (uint64_t) q->seconds * USEC_PER_SEC;
                since = q->now_realtime_usec > back ? q->now_realtime_usec - back : 0;
        }
        ssize_t n = view_history_read(series, level, since, samples);
        if (n < 0)
                return (int) n;
        points = json_array();
        resolutions = json_array();
        if (!points || !resolutions)
                return -ENOMEM;
        for (ssize_t i = 0; i < n; i++)
                if (json_array_append_new(points, json_pack("{s:I, s:I, s:I}",
                                                            "timestampUsec", varlink_count(samples[i].time_usec),
                                                            "current", varlink_count(samples[i].current_pages),
                                                            "peak", varlink_count(samples[i].peak_pages))) < 0)
                        return -ENOMEM;
        for (unsigned l = 0; l < VIEW_HISTORY_LEVELS; l++)
                if (json_array_append_new(resolutions,
                                          json_integer(varlink_count(view_history_resolution_usec(l) / USEC_PER_SEC))) < 0)
                        return -ENOMEM;
        *ret = json_pack("{s:s, s:o, s:I, s:O, s:O}",
                         "what", view_history_kind_to_string(kind),
                         "name", name ? utf8_json_string(name) : json_string(""),
                         "resolution", varlink_count(view_history_resolution_usec(level) / USEC_PER_SEC),
                         "resolutions", resolutions,
                         "points", points);
        return *ret ? 0 : -ENOMEM;
}
