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
        MS_BPF_OBJECT_ALLOC,    /* MsBpfObject, frames when flags has MS_BPF_STACK */
        MS_BPF_OBJECT_FREE,     /* MsBpfObjectFree */
};

/* The slab allocation tracepoints, each a program of its own (the *_node ones before Linux 6.1): the
 * index of their slab_layout entry and scratch slot (MS_BPF_SLAB_SCRATCH + it). */
enum {
        MS_BPF_SLAB_KMALLOC,
        MS_BPF_SLAB_KMALLOC_NODE,
        MS_BPF_SLAB_CACHE_ALLOC,
        MS_BPF_SLAB_CACHE_ALLOC_NODE,
        MS_BPF_SLAB_ALLOCS,
};
#define MS_BPF_SLAB_SCRATCH 2

/*
 * Where a slab allocation tracepoint's prototype has its sizes (ebpf.c reads it from the kernel's BTF):
 * arguments after call_site and ptr, which every version has first.
 */
enum {
        MS_BPF_SLAB_SIZES,              /* (call_site, ptr, bytes_req, bytes_alloc, gfp[, node]): to 5.19;
                                         * kmalloc and kmalloc_node since 6.1 */
        MS_BPF_SLAB_CACHE_SIZES,        /* (call_site, ptr, struct kmem_cache *, bytes_req, bytes_alloc, gfp
                                         * [, node]): 6.0 */
        MS_BPF_SLAB_CACHE,              /* (call_site, ptr, struct kmem_cache *, gfp, node): kmem_cache_alloc
                                         * since 6.1, the sizes are the cache's object_size and size */
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
/* Bytes of a cache name kept, with its NUL; longer names are cut. */
#define MS_BPF_CACHE_NAME_MAX 32
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

/* A slab object allocation. flags, n_kernel, n_user and frames as MsBpfPage's. */
typedef struct MsBpfObject {
        MsBpfHead head;
        __u64 ptr;
        __u64 call_site;
        __u64 bytes_requested;
        __u64 bytes_allocated;
        char cache[MS_BPF_CACHE_NAME_MAX];      /* the kmem_cache's name, "" for kmalloc or unknown */
        __u8 flags;
        __u8 n_kernel;
        __u8 n_user;
        __u8 pad[5];
        __u64 frames[];
} MsBpfObject;

/* A slab object free: the pointer, who freed it and where (the core counts frees from another CPU). */
typedef struct MsBpfObjectFree {
        __u16 type;             /* MS_BPF_OBJECT_FREE, where MsBpfHead has it */
        __u16 cpu;
        __u32 pad;
        __u64 timestamp_nsec;   /* as MsBpfHead's */
        __u64 ptr;
        __u64 call_site;
} MsBpfObjectFree;

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
