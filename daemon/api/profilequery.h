/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Profile view: memory by call stack, task, unit and module as the flat tables a pprof profile is
 * made of (memstrack-metrics serves it at /debug/pprof/heap, /allocs and /slab; docs/protocol.md,
 * io.memstrack.Profile). Kernel pages held now come from the charge cells, each with its process, unit
 * and module; pages allocated since tracing began from the stack tree's counters, which are per stack:
 * their task and unit are known only where the stack is one process's (its user frames). Slab objects
 * come from the live objects.
 *
 * Bounded whatever the core holds: at most PROFILE_FRAMES_MAX frames (a stack that does not fit is cut
 * at its deepest frame that does, and counted) and PROFILE_SAMPLES_MAX samples (the smallest beyond are
 * one sample without a stack, labeled "[other]"), so the totals stay exact.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "query.h"
#include "view.h"

typedef enum ProfileOf {
        PROFILE_OF_PAGES,
        PROFILE_OF_SLAB,
        _PROFILE_OF_MAX,
        _PROFILE_OF_INVALID = -EINVAL,
} ProfileOf;

/* Labels name this many tasks and units at most; the rest are "[other]". */
#define PROFILE_TOP_DEFAULT 20u
#define PROFILE_TOP_MAX 1000u
#define PROFILE_FRAMES_MAX 20000u
#define PROFILE_SAMPLES_MAX 20000u

/* "[other]": a task or unit beyond the top (or of samples beyond the bound); "[all]": a stack's
 * allocations that no one process made. */
#define PROFILE_LABEL_OTHER "[other]"
#define PROFILE_LABEL_ALL "[all]"

typedef struct ProfileQuery {
        ProfileOf of;
        int32_t pid;                    /* < 0: every task */
        const char *unit;               /* NULL: every unit */
        const char *module;             /* NULL: every module */
        size_t top;                     /* 1 .. PROFILE_TOP_MAX */
        uint64_t page_size;
        QueryStackTree names;           /* how frames are named: show_addresses, user_addresses, caller_uid, usym */
} ProfileQuery;

/* "pages", "slab"; NULL for an invalid value. */
const char *profile_of_to_string(ProfileOf of);
ProfileOf profile_of_from_string(const char *s);

/* The Profile reply without pageSize and stackSampleInterval, which the Service adds. -ESRCH no such task,
 * -ENXIO no such unit, -ENOENT no such module, -ENOMEM. */
int profile_query_json(Accounting *a, const ProfileQuery *q, json_t **ret);
