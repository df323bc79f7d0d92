/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
#pragma once

/*
 * The records the BPF program (memstrack.bpf.c) writes into its ring buffer and ebpf.c reads: an ABI
 * between the two halves of the eBPF source, so fixed-size kernel types (__u64) and explicit padding.
 * Both halves are built from the same tree, so there is no versioning.
 *
 * Page events come in batches (MsBpfBatch): each CPU collects its page events in a buffer of its own and
 * sends the buffer when it is nearly full or when the daemon asks (the batch_flush program), so the ring
 * sees one record per few hundred events. Batches of different CPUs are not in event order; every event
 * carries a sequence number from one counter for all CPUs, which the daemon orders them by (seqorder.c).
 * Every other record starts with MsBpfHead (or, for slab frees, MsBpfObjectFree), which carries its
 * sequence number; its type says which body follows. Every record starts with the type (a __u16).
 * Records are 8-byte aligned (the ring's own header is 8 bytes and every record's size is a multiple of 8).
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum {
        MS_BPF_PAGE_ALLOC = 1,  /* MsBpfPage: a sampled allocation, frames when flags has MS_BPF_STACK */
        MS_BPF_PAGE_BATCH,      /* MsBpfBatch: unsampled page allocations and page frees */
        MS_BPF_TASK_FORK,       /* MsBpfHead: pid/tid the child, aux the parent's tgid */
        MS_BPF_TASK_COMM,       /* MsBpfTask: the task renamed itself (prctl) */
        MS_BPF_TASK_EXEC,       /* MsBpfTask: the task exec'd; aux the thread id before the exec, 0 unknown */
        MS_BPF_TASK_EXIT,       /* MsBpfHead: pid/tid exited */
        MS_BPF_MODULE_LOAD,     /* MsBpfModule */
        MS_BPF_MODULE_FREE,     /* MsBpfModule */
        MS_BPF_OBJECT_ALLOC,    /* MsBpfObject, frames when flags has MS_BPF_STACK */
        MS_BPF_OBJECT_FREE,     /* MsBpfObjectFree */
        MS_BPF_OBJECT_ALLOC_BULK, /* MsBpfObjectBulk: objects one kmem_cache_alloc_bulk() call allocated */
        MS_BPF_OBJECT_FREE_BULK,  /* MsBpfObjectBulk: objects one kmem_cache_free_bulk() call freed */
};

/* The slab allocation tracepoints, each a program of its own (the *_node ones before Linux 6.1): the
 * index of their slab_layout entry and scratch slot (MS_BPF_SLAB_SCRATCH + it; their nested twins'
 * MS_BPF_SLAB_SCRATCH + MS_BPF_SLAB_ALLOCS + it). */
enum {
        MS_BPF_SLAB_KMALLOC,
        MS_BPF_SLAB_KMALLOC_NODE,
        MS_BPF_SLAB_CACHE_ALLOC,
        MS_BPF_SLAB_CACHE_ALLOC_NODE,
        MS_BPF_SLAB_ALLOCS,
};
#define MS_BPF_SLAB_SCRATCH 2

/* The notes the slab programs leave for their nested twins, one per tracepoint: the allocations' by
 * MS_BPF_SLAB_*, then the frees'. */
enum {
        MS_BPF_SLAB_NEST_KFREE = MS_BPF_SLAB_ALLOCS,
        MS_BPF_SLAB_NEST_CACHE_FREE,
        MS_BPF_SLAB_NESTS,
};

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
/* Slab records take the time every (MS_BPF_TIME_MASK + 1)th record per CPU. */
#define MS_BPF_TIME_MASK 63

/*
 * A batch's entries, each a run of 64-bit words whose first (the entry's head) is
 * seq << MS_BPF_ENTRY_SEQ_SHIFT | order << 2 | kind:
 * - MS_BPF_ENTRY_FREE: head, the struct page's address;
 * - MS_BPF_ENTRY_ALLOC: head, the struct page's address, tgid << 32 | tid, cgroup id,
 *   gfp flags << 32 | migrate type (as a __u32).
 * The sequence number has 56 bits: 2000 years of events at a million a second.
 */
enum {
        MS_BPF_ENTRY_FREE = 1,
        MS_BPF_ENTRY_ALLOC = 2,
};
#define MS_BPF_ENTRY_KIND_MASK 3
#define MS_BPF_ENTRY_ORDER_SHIFT 2
#define MS_BPF_ENTRY_ORDER_MASK 63
#define MS_BPF_ENTRY_SEQ_SHIFT 8
#define MS_BPF_ENTRY_FREE_WORDS 2
#define MS_BPF_ENTRY_ALLOC_WORDS 5
#define MS_BPF_ENTRY_WORDS_MAX MS_BPF_ENTRY_ALLOC_WORDS
/* A CPU's buffer: a power of two (the program masks indices with it), sent once it holds
 * MS_BPF_BATCH_FLUSH words; the rest is room for entries that arrive while a send failed (ring full). */
#define MS_BPF_BATCH_WORDS 1024
#define MS_BPF_BATCH_FLUSH (MS_BPF_BATCH_WORDS - 8 * MS_BPF_ENTRY_WORDS_MAX)
/* batch_flush's return values (the daemon runs it on each CPU) */
enum {
        MS_BPF_FLUSH_DONE = 0,          /* sent, or nothing to send */
        MS_BPF_FLUSH_BUSY = 1,          /* a page program was writing on that CPU: ask again */
        MS_BPF_FLUSH_RING_FULL = 2,     /* kept for the next send */
};
/* The geometric gap to the next sampled page takes log2 of a 32-bit draw: its integer part, and the
 * fraction from a table of log2(1 + (i + 0.5) / MS_BPF_LOG2_STEPS) in 1/2^MS_BPF_LOG2_SHIFT units. */
#define MS_BPF_LOG2_STEPS 1024
#define MS_BPF_LOG2_SHIFT 16

/* Bytes of a cache name kept, with its NUL; longer names are cut. */
#define MS_BPF_CACHE_NAME_MAX 32
/* The longest module name (the kernel's MODULE_NAME_LEN on 64-bit). */
#define MS_BPF_MODULE_NAME_MAX 56
#define MS_BPF_COMM_MAX 16

typedef struct MsBpfHead {
        __u16 type;             /* first in every record */
        __u16 cpu;
        __u32 aux;              /* by type, see above */
        __u64 seq;              /* the event's place among all (see above) */
        __u64 timestamp_nsec;   /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
        __u64 cgroup_id;        /* bpf_get_current_cgroup_id() */
        __u32 pid;              /* thread group id */
        __u32 tid;
} MsBpfHead;

/* A CPU's page events (see the entries above). */
typedef struct MsBpfBatch {
        __u16 type;             /* MS_BPF_PAGE_BATCH, where MsBpfHead has it */
        __u16 cpu;
        __u32 n_words;          /* in words[] */
        __u64 timestamp_nsec;   /* when its first entry was written */
        __u64 words[];
} MsBpfBatch;

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
        __u64 seq;              /* as MsBpfHead's */
        __u64 timestamp_nsec;   /* as MsBpfHead's */
        __u64 ptr;
        __u64 call_site;
} MsBpfObjectFree;

/*
 * Objects of one bulk call, which fires no slab tracepoint: the fexit program on kmem_cache_alloc_bulk()
 * and the fentry program on kmem_cache_free_bulk() (kfree_bulk(), kfree_rcu()'s batches, the maple tree's
 * nodes) send them. words[] holds, for allocations, the call's kernel stack in the first bulk_frames words
 * (n_kernel of them; the program cannot name its caller, so the call site is the stack's first frame past
 * the hook's, see ebpf.c), then head.aux object pointers; for frees the pointers alone. A call of more than
 * MS_BPF_BULK_CHUNK objects sends a record per chunk, each with its number.
 */
typedef struct MsBpfObjectBulk {
        MsBpfHead head;                         /* aux: the pointers in words[] */
        __u64 bytes_requested;                  /* each object's: the cache's object_size */
        __u64 bytes_allocated;                  /* the cache's size */
        char cache[MS_BPF_CACHE_NAME_MAX];      /* "" for frees */
        __u8 flags;                             /* MS_BPF_STACK or MS_BPF_STACK_FAILED, allocations only */
        __u8 n_kernel;
        __u8 pad[2];
        __u32 frames_at;                        /* words[] before the pointers: bulk_frames, or 0 for frees */
        __u64 words[];
} MsBpfObjectBulk;

/* Pointers per bulk record, and records per bulk call at most (objects past them are counted, bulk_cut). */
#define MS_BPF_BULK_CHUNK 512
#define MS_BPF_BULK_CHUNKS 4

typedef struct MsBpfTask {
        MsBpfHead head;
        char comm[MS_BPF_COMM_MAX];
} MsBpfTask;

typedef struct MsBpfModule {
        MsBpfHead head;
        char name[MS_BPF_MODULE_NAME_MAX];
} MsBpfModule;

/* A CPU's batch as the daemon sees it (the "batch_state" map): what it holds, to ask only CPUs that hold
 * numbers it waits for. The program's own fields follow. */
typedef struct MsBpfBatchState {
        __u32 depth;            /* a page program is writing the batch (see the program) */
        __u32 pad;
        __u64 used;             /* words in the batch, 0: empty */
        __u64 first_seq;        /* the first entry's number, when used > 0 */
} MsBpfBatchState;

/* Per-CPU counters of what the program could not deliver (the "stats" map, one entry). */
typedef struct MsBpfStats {
        __u64 ring_full;        /* records dropped because the ring buffer was full */
        __u64 stack_failed;     /* sampled allocations whose bpf_get_stack() failed */
        __u64 sampled;          /* allocations whose stack was taken */
        __u64 self_dropped;     /* the daemon's own allocations, not recorded */
        __u64 nested;           /* page events the *_nested programs recorded for their busy main program */
        __u64 slab_nested;      /* slab events the slab_*_nested programs recorded for theirs */
        __u64 records;          /* slab records written on this CPU (see slab_wakeup_flag()) */
        __u64 numbered_lost;    /* records lost to a full ring after they took their number */
        __u64 bulk_cut;         /* objects of bulk calls past MS_BPF_BULK_CHUNKS records, not sent */
} MsBpfStats;
