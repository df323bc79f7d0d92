/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Marks: named snapshots of per-task and per-module page counts, held in the daemon for the Snapshot,
 * Diff and ListSnapshots methods (whose wire names stay). A mark copies what it needs (no pointers into
 * the core), so it survives evictions and resets. Bounded: MARKS_MAX names; saving under an existing
 * name replaces it. (client/snapshot.c is something else: a report's saved JSON.)
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "accounting.h"

#define MARKS_MAX 16
#define MARK_NAME_MAX 64

typedef struct Marks Marks;

Marks *marks_new(void);
Marks *marks_free(Marks *s);

/* -ENOSPC when MARKS_MAX others exist, -EINVAL for an empty or too long name, -ENOMEM. */
int marks_save(Marks *s, const char *name, Accounting *a, uint64_t now_usec);
/* {name, snapshotTimestampUsec, timestampUsec, resetSince, beforePages, afterPages, tasks: [TaskDiff],
 * modules: [ModuleDiff]}; resetSince: a Reset(all) ran after the snapshot was taken;
 * biggest absolute change first, at most limit per list. -ENOENT if no such snapshot. O(n log n) in the
 * tasks of both sides: snapshots are kept sorted and matched by a merge. */
int marks_diff(Marks *s, const char *name, Accounting *a, uint64_t now_usec, size_t limit, json_t **ret);
size_t marks_count(const Marks *s);
/* {"snapshots": [SnapshotInfo]}, oldest first. -ENOMEM. */
int marks_list(const Marks *s, Accounting *a, json_t **ret);
/* Key comparisons the last marks_diff() made (sorting and matching): O(n log n) in the tasks, for tests. */
uint64_t marks_diff_steps(const Marks *s);
