/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
#pragma once

/*
 * What the heap's uprobes (heap-uprobe.bpf.c) and their loader (heap-uprobe.c) share: the records of the
 * ring buffer, the exact counters, the sampling tables. Both halves are built from the same tree, so there
 * is no versioning; fixed-size kernel types, 8-byte aligned records.
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum {
        HEAP_BPF_ALLOC = 1,     /* a sampled block: ptr, bytes, live_after, peak; n_frames frames follow */
        HEAP_BPF_FREE = 2,      /* a sampled block went back: ptr, bytes, live_after, peak */
};

/* Return addresses kept per stack (as the heap library keeps). */
#define HEAP_BPF_FRAMES_MAX 64

/* -log2 of a random number (the sampling's exponential draw): its top bit's position, and the log2 of the
 * bits after it from a table of log2(1 + (i + 0.5) / HEAP_BPF_LOG2_STEPS) in 1/2^HEAP_BPF_LOG2_SHIFT units. */
#define HEAP_BPF_LOG2_STEPS 1024
#define HEAP_BPF_LOG2_SHIFT 16

typedef struct HeapBpfRecord {
        __u32 type;
        __u32 tid;
        __u64 ptr;
        __u64 bytes;            /* usable bytes of the block, as malloc_usable_size() says */
        __u64 live_after;       /* the process's live bytes right after this call's own change */
        __u64 peak;             /* the peak as this call saw it */
        __u32 n_frames;         /* ALLOC: frames that follow; 0 if the stack could not be read */
        __u32 reserved;
        __u64 frames[];         /* ALLOC: innermost first, the first the return address into the caller */
} HeapBpfRecord;

/* The exact counts, in one array entry, changed with atomic operations. */
typedef struct HeapBpfCounters {
        __s64 live_bytes;       /* of the blocks allocated since the uprobes were attached, not freed */
        __u64 peak_bytes;
        __u64 allocs, frees, alloc_bytes;
        __u64 unknown_frees;    /* frees of blocks allocated before the attach (or never): not measured */
        __u64 lost_table;       /* blocks not tracked: the block table was full */
        __u64 lost_ring;        /* sampled records dropped: the ring buffer was full */
        __u64 replaced;         /* allocations of an address still tracked: its free was not seen */
} HeapBpfCounters;

/* A tracked block: its usable bytes, whether it has a record (its free gets one too). */
typedef struct HeapBpfBlock {
        __u64 bytes;
        __u64 sampled;
} HeapBpfBlock;

/* Between a call's entry and its return, per thread: realloc's old block and size, posix_memalign's
 * pointer to the result. */
typedef struct HeapBpfPending {
        __u64 arg0, arg1;
} HeapBpfPending;
