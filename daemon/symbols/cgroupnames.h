/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * CgroupNames: cgroup id -> cgroup path -> systemd unit name, from a walk of the cgroup2 hierarchy.
 *
 * The kernel names a cgroup in events by its id, which on cgroup2 is the inode number of its directory
 * (what bpf_get_current_cgroup_id() and perf's PERF_SAMPLE_CGROUP report). A walk stats every directory
 * below the mount and keeps (id, path) sorted by id: lookups are a binary search and do no I/O. A cgroup
 * created after the walk is not found until the next cgroupnames_walk(); the caller decides when (the
 * daemon re-walks a moment after a miss, debounced: observers/cgroup-naming.c).
 *
 * The unit name of a path (cgroupnames_unit_name()): the innermost path component that is a systemd
 * unit able to own a cgroup, i.e. ends in ".service", ".scope", ".slice", ".socket", ".mount" or
 * ".swap" (and has a name before the suffix); the whole path when no component is one (a cgroup made
 * outside systemd's naming, or "/" for the root). A delegated subtree (a container's own cgroups below
 * "docker-1234.scope") thus counts for the unit that was delegated it.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct CgroupNames CgroupNames;

/* The system's cgroup2 mount: /sys/fs/cgroup when it is a cgroup2 mount ("unified" hosts), else
 * /sys/fs/cgroup/unified (hybrid hosts: cgroup v1 controllers with the cgroup2 tree beside them); NULL if
 * neither is cgroup2. */
const char *cgroupnames_system_root(void);

/*
 * root: the cgroup2 mount to walk. NULL: cgroupnames_system_root(), -ENOMEDIUM if there is none. A root
 * given explicitly is taken as it is (tests use a plain directory). Does not walk yet.
 */
int cgroupnames_new(const char *root, CgroupNames **ret);
CgroupNames *cgroupnames_free(CgroupNames *c);

/* The directory walked. */
const char *cgroupnames_root(const CgroupNames *c);

/*
 * Walks the tree again; afterwards the cache holds exactly the cgroups that existed during the walk.
 * Directories that vanish or cannot be read during the walk are skipped. -errno if the root cannot be
 * opened or on OOM (the old cache stays).
 */
int cgroupnames_walk(CgroupNames *c);
/* Walks so far. */
uint64_t cgroupnames_walks(const CgroupNames *c);

/* The path of a cgroup id relative to the root ("/system.slice/sshd.service", "/" for the root itself),
 * borrowed until the next walk; NULL if the last walk did not see it. */
const char *cgroupnames_path(const CgroupNames *c, uint64_t id);
size_t cgroupnames_count(const CgroupNames *c);

/* The path of cgroup id read from the task's own record (PROC/PID/cgroup, proc NULL: /proc) rather than
 * from a walk: a cgroup is named while a task of it lives, even if it is gone by the next walk. -ESTALE if
 * the task is in another cgroup now, -ENOENT without a cgroup2 line, -errno if it cannot be read. */
int cgroupnames_task_path(const CgroupNames *c, const char *proc, int32_t pid, uint64_t id, char **ret_path);

/* The unit name in a cgroup path (see above): a pointer into path, *ret_len bytes long. */
const char *cgroupnames_unit_name(const char *path, size_t *ret_len);
