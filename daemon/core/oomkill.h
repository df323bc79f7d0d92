/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the kernel says about a task its OOM killer picked (tracepoint oom:mark_victim): plain C, filled
 * by the watcher in sources/ and read by the OOM log in api/. Older kernels record the pid only; newer
 * ones (Linux 6.x) add comm, memory sizes, uid and oom_score_adj. OOM_KILL_HAS_* says which arrived.
 */

#include <stdint.h>

typedef enum OomKillField {
        OOM_KILL_HAS_COMM          = 1 << 0,
        OOM_KILL_HAS_TOTAL_VM      = 1 << 1,
        OOM_KILL_HAS_ANON_RSS      = 1 << 2,
        OOM_KILL_HAS_FILE_RSS      = 1 << 3,
        OOM_KILL_HAS_SHMEM_RSS     = 1 << 4,
        OOM_KILL_HAS_UID           = 1 << 5,
        OOM_KILL_HAS_PGTABLES      = 1 << 6,
        OOM_KILL_HAS_OOM_SCORE_ADJ = 1 << 7,
} OomKillField;

typedef struct OomKill {
        uint64_t timestamp_nsec;        /* CLOCK_MONOTONIC, as MsEvent's */
        int32_t pid;                    /* the victim's tgid; 0: it has no pid memstrackd can tell */
        int32_t current_pid;            /* the kernel's pid of the task that ran the OOM killer; -1: unknown */
        unsigned fields;                /* OOM_KILL_HAS_* */
        char comm[17];                  /* "" without OOM_KILL_HAS_COMM */
        /* In KiB, as the kernel records them. */
        uint64_t total_vm_kib, anon_rss_kib, file_rss_kib, shmem_rss_kib, pgtables_kib;
        uint32_t uid;
        int32_t oom_score_adj;
} OomKill;
