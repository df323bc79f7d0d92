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

/* Whose blocks the probes measure: how a block's usable bytes are known (heap-uprobe.bpf.c,
 * block_bytes()). */
enum {
        HEAP_BPF_GLIBC = 0,     /* read from the chunk header before the block */
        HEAP_BPF_JEMALLOC = 1,  /* its size classes, from the size and alignment asked for */
        HEAP_BPF_TCMALLOC = 2,  /* its size classes (tc_classes), and how its realloc keeps or grows a block */
        HEAP_BPF_MIMALLOC = 3,  /* read from the block's page in its segment (mimalloc 2.0's layout) */
};

/* What a probed function is, its link's BPF cookie: the kind of call, which arguments (1-based, 0: none)
 * hold the size, a count to multiply it by and the alignment, and flags. */
enum {
        HEAP_BPF_CALL_ALLOC = 1,                /* returns the new block */
        HEAP_BPF_CALL_FREE = 2,                 /* frees its first argument */
        HEAP_BPF_CALL_REALLOC = 3,              /* resizes its first argument, returns the block, NULL: failed */
        HEAP_BPF_CALL_POSIX_MEMALIGN = 4,       /* stores the block at its first argument when it returns 0 */
        HEAP_BPF_CALL_IN_PLACE = 5,             /* resizes its first argument in place, returns its usable size */
};
#define HEAP_BPF_COOKIE(kind, size, count, align) \
        ((__u64) (kind) | (__u64) (size) << 8 | (__u64) (count) << 12 | (__u64) (align) << 16)
#define HEAP_BPF_ALIGN_FLAGS ((__u64) 1 << 20)        /* the alignment argument is jemalloc's flags */
#define HEAP_BPF_ALIGN_PAGE ((__u64) 1 << 21)         /* aligned to the page (valloc) */
#define HEAP_BPF_SIZE_PAGES ((__u64) 1 << 22)         /* the size rounded up to pages (pvalloc) */
#define HEAP_BPF_FREES_ON_FAILURE ((__u64) 1 << 23)   /* a failed resize frees the block (reallocf) */
#define HEAP_BPF_HAS_ENTRY ((__u64) 1 << 24)          /* probed at its entry too: a HeapBpfCall for its return */
#define HEAP_BPF_PAGE_BYTES 4096u

/* tcmalloc's size classes by its class index of a size (tcmalloc's SizeMap::ClassIndex()): the size
 * of the class a block of at most HEAP_BPF_TC_SMALL_MAX bytes gets. */
#define HEAP_BPF_TC_SMALL_MAX (256u * 1024u)
#define HEAP_BPF_TC_CLASS_INDEXES (((HEAP_BPF_TC_SMALL_MAX + 127 + (120 << 7)) >> 7) + 1)
#define HEAP_BPF_TC_PAGE_BYTES 8192u

/* A probed call under way on a thread, from its entry to its return. A call of a probed function made
 * inside it (an allocator's operator new calling its aligned_alloc, glibc's realloc(NULL) its malloc,
 * libstdc++'s operator new malloc) only counts in depth: the outer call records the block, once. */
typedef struct HeapBpfCall {
        __u64 sp;               /* the stack pointer at the outer call's entry */
        __u64 args[3];
        __u64 old_bytes;        /* a resize: the old block's bytes, if old_tracked */
        __u32 old_tracked;
        __u32 depth;
} HeapBpfCall;
