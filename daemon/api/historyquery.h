/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The History view (io.memstrack.varlink History): current and peak pages over time of the total, a task,
 * a unit or a module, from the History the daemon keeps (history.h). A task, unit or module not tracked
 * yet is tracked from now on. Used by the History method and by the snapshot document.
 */

#include <stdint.h>

#include <jansson.h>

#include "view.h"

typedef struct HistoryQuery {
        int32_t pid;                    /* a process; -1: none */
        const char *unit, *module;      /* as replies name them; NULL: none. At most one of pid, unit, module */
        int64_t seconds;                /* only the last seconds; -1: all the level holds */
        int64_t resolution;             /* seconds per bucket, one of the levels'; -1: the finest for seconds */
        uint64_t now_realtime_usec;     /* what "the last seconds" count back from */
} HistoryQuery;

/*
 * The History reply into *ret (a new reference). -EINVAL with the parameter at fault in *ret_bad (two owners
 * asked for, a resolution no level has), -EOPNOTSUPP without a history (h NULL), -ESRCH no such task,
 * -ENXIO no such unit, -ENOENT no such module, -ENOMEM.
 */
int history_query_json(History *h, Accounting *a, const HistoryQuery *q, const char **ret_bad, json_t **ret);
