/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Named snapshots of per-task and per-module page counts, for Snapshot/Diff. A snapshot copies what it
 * needs (no pointers into the core), so it survives evictions and resets. Bounded: SNAPSHOT_MAX names;
 * saving under an existing name replaces it.
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "accounting.h"

#define SNAPSHOT_MAX 16
#define SNAPSHOT_NAME_MAX 64

typedef struct Snapshots Snapshots;

Snapshots *snapshots_new(void);
Snapshots *snapshots_free(Snapshots *s);

/* -ENOSPC when SNAPSHOT_MAX others exist, -EINVAL for an empty or too long name, -ENOMEM. */
int snapshots_save(Snapshots *s, const char *name, Accounting *a, uint64_t now_usec);
/* {name, snapshotTimestampUsec, timestampUsec, resetSince, beforePages, afterPages, tasks: [TaskDiff],
 * modules: [ModuleDiff]}; resetSince: a Reset(all) ran after the snapshot was taken;
 * biggest absolute change first, at most limit per list. -ENOENT if no such snapshot. O(n log n) in the
 * tasks of both sides: snapshots are kept sorted and matched by a merge. */
int snapshots_diff(Snapshots *s, const char *name, Accounting *a, uint64_t now_usec, size_t limit, json_t **ret);
size_t snapshots_count(const Snapshots *s);
/* {"snapshots": [SnapshotInfo]}, oldest first. -ENOMEM. */
int snapshots_list(const Snapshots *s, Accounting *a, json_t **ret);
/* Key comparisons the last snapshots_diff() made (sorting and matching): O(n log n) in the tasks, for tests. */
uint64_t snapshots_diff_steps(const Snapshots *s);
