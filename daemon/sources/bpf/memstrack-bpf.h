/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
#pragma once

/*
 * The records the BPF program (memstrack.bpf.c) writes into its ring buffer and ebpf.c reads: an ABI
 * between the two halves of the eBPF source, so fixed-size kernel types (__u64) and explicit padding.
 * Both halves are built from the same tree, so there is no versioning.
 *
 * Every record but MsBpfFree starts with MsBpfHead; its type says which body follows. Every record starts
 * with the type (a __u16). Records are 8-byte aligned (the ring's own header is 8 bytes and every
 * record's size is a multiple of 8).
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum {
        MS_BPF_PAGE_ALLOC = 1,  /* MsBpfPage, frames when flags has MS_BPF_STACK */
        MS_BPF_PAGE_FREE,       /* MsBpfFree */
        MS_BPF_TASK_FORK,       /* MsBpfHead: pid/tid the child, aux the parent's tgid */
        MS_BPF_TASK_COMM,       /* MsBpfTask: the task renamed itself (prctl) */
        MS_BPF_TASK_EXEC,       /* MsBpfTask: the task exec'd; aux the thread id before the exec, 0 unknown */
        MS_BPF_TASK_EXIT,       /* MsBpfHead: pid/tid exited */
        MS_BPF_MODULE_LOAD,     /* MsBpfModule */
        MS_BPF_MODULE_FREE,     /* MsBpfModule */
};

/* MsBpfPage.flags */
enum {
        MS_BPF_STACK = 1 << 0,          /* this allocation was sampled: n_kernel + n_user frames follow */
        MS_BPF_STACK_FAILED = 1 << 1,   /* sampled, but bpf_get_stack() failed: no frames */
};

/* Frames one bpf_get_stack() call may return: the kernel's default kernel.perf_event_max_stack is 127. */
#define MS_BPF_FRAMES_MAX 128
/* Orders with their own sampling threshold; larger blocks use the last. */
#define MS_BPF_ORDERS 16
/* Page records take the time every (MS_BPF_TIME_MASK + 1)th record per CPU. */
#define MS_BPF_TIME_MASK 63
/* The longest module name (the kernel's MODULE_NAME_LEN on 64-bit). */
#define MS_BPF_MODULE_NAME_MAX 56
#define MS_BPF_COMM_MAX 16

typedef struct MsBpfHead {
        __u16 type;             /* first in every record, MsBpfFree too */
        __u16 cpu;
        __u32 aux;              /* by type, see above */
        __u64 timestamp_nsec;   /* bpf_ktime_get_ns(): CLOCK_MONOTONIC; page records: 0 but every
                                 * (MS_BPF_TIME_MASK + 1)th per CPU (see page_time()) */
        __u64 cgroup_id;        /* bpf_get_current_cgroup_id() */
        __u32 pid;              /* thread group id */
        __u32 tid;
} MsBpfHead;

/* A page free: only what the owner's account needs (the page goes back to its owner whoever frees it),
 * 32 bytes in the ring with its header against 64 for an MsBpfPage, which saves ~13 ns per free
 * (docs/performance.md): two frees share a cache line of the ring instead of one each. */
typedef struct MsBpfFree {
        __u16 type;             /* MS_BPF_PAGE_FREE, where MsBpfHead has it */
        __u8 order;
        __u8 pad[5];
        __u64 timestamp_nsec;   /* as MsBpfHead's */
        __u64 pfn;              /* the struct page's address, as MsBpfPage's */
} MsBpfFree;

typedef struct MsBpfPage {
        MsBpfHead head;
        __u64 pfn;
        __u64 gfp_flags;
        __s32 migrate_type;
        __u8 order;
        __u8 flags;
        __u8 n_kernel;          /* kernel frames, innermost first, at frames[0] */
        __u8 n_user;            /* user frames, innermost first, at frames[user_at] (see ebpf.c) */
        /* ALLOC with MS_BPF_STACK only. Without user stacks user_at = n_kernel (none follow); with them,
         * the kernel frames take a fixed area of the configured depth and the user frames follow it. */
        __u64 frames[];
} MsBpfPage;

typedef struct MsBpfTask {
        MsBpfHead head;
        char comm[MS_BPF_COMM_MAX];
} MsBpfTask;

typedef struct MsBpfModule {
        MsBpfHead head;
        char name[MS_BPF_MODULE_NAME_MAX];
} MsBpfModule;

/* Per-CPU counters of what the program could not deliver (the "stats" map, one entry). */
typedef struct MsBpfStats {
        __u64 ring_full;        /* records dropped because the ring buffer was full */
        __u64 stack_failed;     /* sampled allocations whose bpf_get_stack() failed */
        __u64 sampled;          /* allocations whose stack was taken */
        __u64 self_dropped;     /* the daemon's own allocations, not recorded */
        __u64 nested;           /* events the *_nested programs recorded for their busy main program */
        __u64 records;          /* page records written on this CPU (see page_wakeup_flag()) */
} MsBpfStats;
