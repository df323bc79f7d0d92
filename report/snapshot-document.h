/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Snapshot documents: everything a report needs, in one JSON object, whether memstrackctl fetched it
 * from the daemon now, read it from a file `memstrackctl snapshot --file` wrote, or memstrackd built it
 * from its own state when it stopped (--report):
 *
 *   { "memstrackSnapshot": 1, "generator": "memstrackctl VERSION" (or "memstrackd VERSION"),
 *     "host": HOSTNAME or null, "realtimeUsec": CLOCK_REALTIME when it was taken (both optional:
 *     files from earlier versions lack them),
 *     "status": <Status reply>, "tasks": <Tasks reply>, "modules": <Modules reply>,
 *     "stackTree": <StackTree reply>,
 *     "taskStacks": [ { "pid": N, "stackTree": <StackTree reply for pid N> }, ... ],
 *     "moduleStacks": [ { "name": NAME, "stackTree": <StackTree reply for module NAME> }, ... ],
 *     "units": <Units reply, with each unit's SNAPSHOT_UNIT_STACKS biggest stacks> (optional: left out
 *     when memstrackd does not know Units, and in files from earlier versions),
 *     "slab": { "callsites": <Slab reply by callsite>, "caches": <Slab reply by cache> } (optional: left out
 *     when memstrackd does not know Slab, and in files from earlier versions),
 *     "leaks": <Leaks reply with its default ages, SNAPSHOT_LEAKS_LIMIT rows per list> (optional, as slab),
 *     "history": <History reply of the total, its default: the finest buckets> (optional, as slab),
 *     "oomKills": <OomKills reply> (optional, as slab) }
 *
 * Tasks are all of them (exited ones too); per-task trees are kept for the biggest tasks only.
 */

#define SNAPSHOT_FORMAT_VERSION 1
/* Entries asked for in the Tasks, Modules and Units lists: all there are (the daemon's QUERY_LIMIT_MAX). */
#define SNAPSHOT_LIST_LIMIT 10000
/* Per-task stack trees kept: the biggest tasks by current pages. */
#define SNAPSHOT_TASK_STACKS_MAX 32
/* Per-module stack trees kept. */
#define SNAPSHOT_MODULE_STACKS_MAX 64
/* Stacks kept per unit (Units' stacks parameter): a unit's top stacks, not a tree. */
#define SNAPSHOT_UNIT_STACKS 8
/* Rows per list of the Leaks reply kept (its ages are the method's defaults). */
#define SNAPSHOT_LEAKS_LIMIT 100
#define SNAPSHOT_STACK_DEPTH_DEFAULT 64
#define SNAPSHOT_STACK_CHILDREN 64
