/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Snapshot documents: everything a report needs, in one JSON object, whether fetched from the daemon
 * now or read from a file that `memstrackctl snapshot --file` wrote earlier:
 *
 *   { "memstrackSnapshot": 1, "generator": "memstrackctl VERSION",
 *     "host": HOSTNAME or null, "realtimeUsec": CLOCK_REALTIME when it was taken (both optional:
 *     files from earlier versions lack them),
 *     "status": <Status reply>, "tasks": <Tasks reply>, "modules": <Modules reply>,
 *     "stackTree": <StackTree reply>,
 *     "taskStacks": [ { "pid": N, "stackTree": <StackTree reply for pid N> }, ... ],
 *     "moduleStacks": [ { "name": NAME, "stackTree": <StackTree reply for module NAME> }, ... ],
 *     "units": <Units reply, with each unit's SNAPSHOT_UNIT_STACKS biggest stacks> (optional: left out
 *     when memstrackd does not know Units, and in files from earlier versions) }
 *
 * Tasks are all of them (exited ones too); per-task trees are kept for the biggest tasks only.
 */

#include <stdint.h>

#include <jansson.h>

#include "varlink.h"

#define SNAPSHOT_FORMAT_VERSION 1
/* Per-task stack trees kept: the biggest tasks by current pages. */
#define SNAPSHOT_TASK_STACKS_MAX 32
/* Per-module stack trees kept. */
#define SNAPSHOT_MODULE_STACKS_MAX 64
/* Stacks kept per unit (Units' stacks parameter): a unit's top stacks, not a tree. */
#define SNAPSHOT_UNIT_STACKS 8
#define SNAPSHOT_STACK_DEPTH_DEFAULT 64
#define SNAPSHOT_STACK_CHILDREN 64

typedef struct SnapshotFetch {
        const char *sort;       /* StackTree sortBy: "current" (NULL) or "peak" */
        unsigned max_depth;     /* 0: SNAPSHOT_STACK_DEPTH_DEFAULT */
        int64_t pid;            /* also fetch this task's tree (-1: none) */
        const char *module;     /* also fetch this module's tree (NULL: none) */
} SnapshotFetch;

/* Builds a snapshot document from the daemon. 0, a positive CtlExit (reported), or -ENOMEM. */
int snapshot_fetch(VarlinkClient *c, const SnapshotFetch *f, json_t **ret);

/* Reads and checks a snapshot file. 0, or CTL_EXIT_FAILURE after saying what is wrong with it. */
int snapshot_load(const char *path, json_t **ret);

/* Writes doc to path atomically (a temporary file renamed over it). -errno. */
int snapshot_save(json_t *doc, const char *path);
