/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Memcg: what the kernel's memory controller says a cgroup holds, read from cgroupfs, in one shape for
 * both hierarchies.
 *
 * On cgroup2 the figures are memory.current, memory.peak, memory.max, memory.high, the keys of
 * memory.stat and the counters of memory.events. On cgroup v1 (hybrid hosts bind the controller there,
 * with the cgroup2 tree beside it for naming and pressure) each figure comes from the v1 file that counts
 * the same thing: memory.usage_in_bytes for current, memory.stat's hierarchical total_rss for anon,
 * memory.kmem.usage_in_bytes for kernel, and so on (memcg_figure_source() says which); what v1 does not
 * count at all (kernel stacks, page tables, slab, percpu, vmalloc, memory.high) is not known, never
 * guessed. Every figure is in bytes and hierarchical (a cgroup's own and its descendants'), as the kernel
 * keeps them.
 *
 * Paths are relative to the hierarchy's mount ("/system.slice/sshd.service"), as cgroupnames.h gives
 * them: on hybrid hosts systemd makes the same path in the v1 memory hierarchy for every unit with memory
 * accounting. Reading does file I/O (a few small files): for queries and timers, never per event.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef enum MemcgHierarchy {
        MEMCG_HIERARCHY_V2,
        MEMCG_HIERARCHY_V1,
        _MEMCG_HIERARCHY_MAX,
        _MEMCG_HIERARCHY_INVALID = -EINVAL,
} MemcgHierarchy;

/* The figures, named as cgroup2 names them (memcg_figure_to_string()). */
typedef enum MemcgFigure {
        MEMCG_CURRENT,
        MEMCG_PEAK,
        MEMCG_MAX,                      /* limits: MEMCG_UNLIMITED when there is none */
        MEMCG_HIGH,
        MEMCG_ANON,                     /* memory.stat from here on */
        MEMCG_FILE,
        MEMCG_KERNEL,
        MEMCG_KERNEL_STACK,
        MEMCG_PAGETABLES,
        MEMCG_PERCPU,
        MEMCG_SOCK,
        MEMCG_VMALLOC,
        MEMCG_SHMEM,
        MEMCG_FILE_MAPPED,
        MEMCG_FILE_DIRTY,
        MEMCG_FILE_WRITEBACK,
        MEMCG_ANON_THP,
        MEMCG_SLAB_RECLAIMABLE,
        MEMCG_SLAB_UNRECLAIMABLE,
        MEMCG_SLAB,
        MEMCG_SWAPCACHED,
        MEMCG_ZSWAP,
        MEMCG_INACTIVE_ANON,            /* the LRU lists: reclaim's order, not measured idleness */
        MEMCG_ACTIVE_ANON,
        MEMCG_INACTIVE_FILE,
        MEMCG_ACTIVE_FILE,
        _MEMCG_FIGURE_MAX,
        _MEMCG_FIGURE_INVALID = -EINVAL,
} MemcgFigure;

#define MEMCG_STAT_FIRST MEMCG_ANON
#define MEMCG_UNLIMITED UINT64_MAX

/* memory.events' counters (cgroup2); v1 has max (memory.failcnt) and oom_kill (memory.oom_control). */
typedef enum MemcgEvent {
        MEMCG_EVENT_LOW,
        MEMCG_EVENT_HIGH,
        MEMCG_EVENT_MAX,
        MEMCG_EVENT_OOM,
        MEMCG_EVENT_OOM_KILL,
        _MEMCG_EVENT_MAX,
        _MEMCG_EVENT_INVALID = -EINVAL,
} MemcgEvent;

typedef struct MemcgFigures {
        MemcgHierarchy hierarchy;
        uint64_t value[_MEMCG_FIGURE_MAX];      /* bytes, where known */
        uint32_t known;                         /* 1 << MemcgFigure for each figure read */
        uint64_t events[_MEMCG_EVENT_MAX];
        uint32_t events_known;                  /* 1 << MemcgEvent */
} MemcgFigures;

_Static_assert(_MEMCG_FIGURE_MAX <= 32, "a bit per figure");

static inline bool memcg_figure_known(const MemcgFigures *f, MemcgFigure x) {
        return f->known & (UINT32_C(1) << x);
}

typedef struct Memcg Memcg;

/*
 * Where the memory controller is. memory_root given: that mount, cgroup2 when its cgroup.controllers lists
 * "memory", else the v1 memory hierarchy. Else cgroup2_root (NULL: /sys/fs/cgroup when it is cgroup2, else
 * /sys/fs/cgroup/unified) when its cgroup.controllers lists "memory"; else the v1 memory hierarchy where
 * /proc/self/mountinfo has it. -ENOMEDIUM when neither has the controller, -ENOMEM. Reads no cgroup yet.
 */
int memcg_new(const char *cgroup2_root, const char *memory_root, Memcg **ret);
Memcg *memcg_free(Memcg *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Memcg *, memcg_free);

MemcgHierarchy memcg_hierarchy(const Memcg *m);
/* The mount memory figures are read below. */
const char *memcg_root(const Memcg *m);
/* The cgroup2 mount, where memory.pressure is on both hierarchies (PSI is cgroup2's); NULL if none. */
const char *memcg_cgroup2_root(const Memcg *m);

/*
 * The figures of the cgroup at path (relative to the mount, "/" for the root). -ENOENT when it has no
 * directory in the memory hierarchy (removed, or on v1 a unit without memory accounting), -EINVAL for a
 * path with "..", -ENOMEM; a file missing or unreadable leaves its figures unknown.
 */
int memcg_read(const Memcg *m, const char *path, MemcgFigures *ret);

/*
 * The figures a watcher reads every second, from three small files: current, max and high
 * (MEMCG_UNLIMITED where there is no limit or the hierarchy has none: high on v1). -ENOENT when the cgroup
 * has no directory, -EINVAL for a path with "..", -errno when current cannot be read.
 */
int memcg_read_limits(const Memcg *m, const char *path, uint64_t *ret_current, uint64_t *ret_max,
                uint64_t *ret_high);

/* The mount point of the v1 hierarchy with the memory controller, from a mountinfo file (/proc/self/mountinfo).
 * -ENOMEDIUM if it has none, -errno if it cannot be read. */
int memcg_find_v1_mount(const char *mountinfo, char **ret);

/* "v2", "v1". */
const char *memcg_hierarchy_to_string(MemcgHierarchy h);
/* cgroup2's name of the figure ("current", "slab_reclaimable", ...). */
const char *memcg_figure_to_string(MemcgFigure x);
/* "low", "high", "max", "oom", "oom_kill". */
const char *memcg_event_to_string(MemcgEvent e);
/* Where the hierarchy keeps the figure ("memory.current", "memory.stat total_rss", ...); NULL where it does
 * not count it at all. */
const char *memcg_figure_source(MemcgHierarchy h, MemcgFigure x);
