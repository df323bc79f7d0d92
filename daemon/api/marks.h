/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Marks: named snapshots of per-task and per-module page counts, held in the daemon for the Snapshot,
 * Diff, ListSnapshots and DeleteSnapshot methods (whose wire names stay). A mark copies what it needs (no
 * pointers into the core), so it survives evictions and resets. (client/snapshot.c is something else: a
 * report's saved JSON.)
 *
 * Names are per uid: each caller saves, compares with and deletes its own marks, and two users' marks of
 * one name are two marks. Bounded: MARKS_PER_UID_MAX per uid, and MARKS_OTHERS_MAX for every uid but root
 * together, so that no group member can take root's room or all of the others'. A mark costs
 * sizeof(MarkTask) (40 bytes) per process the core knows (live, and exited up to --max-exited-tasks) and
 * about 40 bytes per module: with 2000 processes and 4096 exited ones, 240 KiB; MARKS_MAX of them, 7.5 MiB.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "view.h"

#define MARKS_PER_UID_MAX 8
#define MARKS_OTHERS_MAX 24             /* every uid but root, together */
#define MARKS_MAX (MARKS_PER_UID_MAX + MARKS_OTHERS_MAX)
#define MARK_NAME_MAX 64

typedef struct Marks Marks;

Marks *marks_new(void);
Marks *marks_free(Marks *s);

/* Saves (or replaces) uid's mark of this name. -EINVAL for an empty or too long name; -EDQUOT when uid
 * has MARKS_PER_UID_MAX others; -ENOSPC when uid is not root and the uids other than root together have
 * MARKS_OTHERS_MAX; -ENOMEM. */
int marks_save(Marks *s, uid_t uid, const char *name, Accounting *a, uint64_t now_usec);
/* Forgets uid's mark of this name: -ENOENT if there is none. */
int marks_delete(Marks *s, uid_t uid, const char *name);
/* Compares uid's mark of this name with now: {name, snapshotTimestampUsec, timestampUsec, resetSince,
 * beforePages, afterPages, tasks: [TaskDiff], modules: [ModuleDiff]}; resetSince: a Reset(all) ran after
 * the snapshot was taken; biggest absolute change first, at most limit per list. -ENOENT if no such
 * snapshot. O(n log n) in the tasks of both sides: snapshots are kept sorted and matched by a merge. */
int marks_diff(Marks *s, uid_t uid, const char *name, Accounting *a, uint64_t now_usec, size_t limit,
                json_t **ret);
/* Marks kept, all uids'. */
size_t marks_count(const Marks *s);
/* {"snapshots": [SnapshotInfo]}: uid's marks, or with all_uids everyone's, oldest first. -ENOMEM. */
int marks_list(const Marks *s, Accounting *a, bool all_uids, uid_t uid, json_t **ret);
/* Key comparisons the last marks_diff() made (sorting and matching): O(n log n) in the tasks, for tests. */
uint64_t marks_diff_steps(const Marks *s);
