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
 *     "oomKills": <OomKills reply> (optional, as slab),
 *     "explain": [ <Explain reply of each of the SNAPSHOT_EXPLAIN_UNITS biggest units>, ... ] (optional, as
 *     slab),
 *     "cold": <Cold reply, SNAPSHOT_COLD_LIMIT rows per list and SNAPSHOT_COLD_STACKS stacks> (optional, as
 *     slab) }
 *
 * Tasks are all of them (exited ones too); per-task trees are kept for the biggest tasks only.
 *
 * snapshot_document_build() is the one place that assembles it, from io.memstrack replies it asks for
 * through a SnapshotFetch: memstrackctl's makes varlink calls on its connection (client/snapshot.c),
 * memstrackd's calls its query layer directly (daemon/api/document.c). A new section is one more fetch
 * here, which both get; of a method memstrackd's fetcher does not serve yet, it needs one entry in the
 * fetcher's method table.
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define SNAPSHOT_FORMAT_VERSION 1
/* Entries asked for in the Tasks, Modules and Units lists: all there are (the daemon's QUERY_LIMIT_MAX). */
#define SNAPSHOT_LIST_LIMIT 10000
/* Per-task stack trees kept: the biggest tasks by current pages. */
#define SNAPSHOT_TASK_STACKS_MAX 32
/* Per-module stack trees kept. */
#define SNAPSHOT_MODULE_STACKS_MAX 64
/* Stacks kept per unit (Units' stacks parameter): a unit's top stacks, not a tree. */
#define SNAPSHOT_UNIT_STACKS 8
/* Units explained (Explain), the biggest by current pages, and the rows and stacks per list of each. */
#define SNAPSHOT_EXPLAIN_UNITS 8
#define SNAPSHOT_EXPLAIN_LIMIT 10
#define SNAPSHOT_EXPLAIN_STACKS 3
/* Rows per list of the Leaks reply kept (its ages are the method's defaults). */
#define SNAPSHOT_LEAKS_LIMIT 100
/* Rows per list and stacks of the Cold reply kept: the stacks make the cold flame graph. */
#define SNAPSHOT_COLD_LIMIT 100
#define SNAPSHOT_COLD_STACKS 100
#define SNAPSHOT_STACK_DEPTH_DEFAULT 64
#define SNAPSHOT_STACK_CHILDREN 64

typedef enum SnapshotFetchFlags {
        /* The method may be one the other side does not know (a memstrackd from before it). */
        SNAPSHOT_FETCH_OPTIONAL = 1 << 0,
        /* The task (pid), module or unit the parameters name may be gone since it was listed (a unit not
         * named yet, listed as "[unknown]", is not found by that name either). */
        SNAPSHOT_FETCH_MAY_VANISH = 1 << 1,
} SnapshotFetchFlags;

/*
 * Asks for the reply of method (an io.memstrack method name) to params (borrowed; NULL: none). Returns 0
 * with the reply's parameters, an object, in *ret_reply (new reference). Where flags allow it, and then
 * without telling anyone: -EOPNOTSUPP for a method the other side does not know (OPTIONAL), -ESRCH for
 * NoSuchTask, -ENOENT for NoSuchModule and -ENXIO for NoSuchUnit (MAY_VANISH); the document goes without
 * that part. Any other non-zero value is the fetcher's own failure, which snapshot_document_build()
 * returns as it is (memstrackctl's: a positive exit status once it has told the user; -ENOMEM).
 */
typedef int (*SnapshotFetch)(const char *method, json_t *params, SnapshotFetchFlags flags, json_t **ret_reply,
                             void *userdata);

/* How a document's stack trees are cut, and whose it holds besides the biggest tasks' and modules'. */
typedef struct SnapshotRequest {
        bool sort_by_peak;      /* stack trees keep their biggest children by peak, not current pages */
        unsigned max_depth;     /* levels of each stack tree; 0: SNAPSHOT_STACK_DEPTH_DEFAULT */
        int64_t pid;            /* this task's tree too, biggest or not (-1: none); fails if unknown */
        const char *module;     /* this module's tree too (NULL: none); fails if unknown */
        bool heaps_only;        /* the daemon traces user-space heaps alone (record's own): the kernel's
                                 * units, slab, leaks, history and OOM kills are not asked for */
} SnapshotRequest;

#define SNAPSHOT_REQUEST_DEFAULT ((SnapshotRequest) { .pid = -1 })

/*
 * Builds the document by asking fetch (with userdata) for Status, Tasks, Modules, Units, Slab, Leaks,
 * History, OomKills, Explain and the StackTrees, in that order; Units, Slab, Leaks, History, OomKills and
 * Explain are optional (and not asked for with heaps_only), and the biggest tasks' and modules'
 * trees are left out for those that went away meanwhile. program ("memstrackctl", "memstrackd") names the
 * generator. 0 with a new reference in *ret, -ENOMEM, or what fetch failed with.
 */
int snapshot_document_build(const char *program, const SnapshotRequest *req, SnapshotFetch fetch,
                void *userdata, json_t **ret);
