/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The channel between the preloaded heap library (heap/channel.c) and memstrackd's heap source
 * (daemon/sources/heap.c): one shared memory region per process image, a sealed memfd that the library
 * creates and hands over a Unix socket (SCM_RIGHTS) once, at its start. After that neither side makes a
 * system call for the other: the process writes, the daemon polls. What the process wrote stays readable
 * after it died, even by SIGKILL.
 *
 * Layout (offsets from the start of the region, each in the header):
 *   HeapAbiHeader     what the region holds, and the exact counters (atomics)
 *   ring              ring_records HeapAbiRecord, a power of two: sampled allocations and their frees
 *   stack slots       n_stack_slots HeapAbiStackSlot: open addressing from a stack's hash to its frames
 *   frames            n_frames uint64_t: every stack's return addresses, innermost first, appended
 *   threads           n_thread_slots HeapAbiThread: per-thread counts (allocations, frees), claimed by a
 *                     thread at its first call; the last one is shared by threads beyond them
 *   objects           n_objects_max HeapAbiObject: the loaded ELF files' segments, as /proc/PID/maps would
 *                     show them, republished when a stack has a frame in none of them (dlopen)
 *
 * The daemon trusts nothing in the region: the layout it copies once from the header and checks against
 * the region's size; every record, index and count it reads is bounded again. A process can corrupt only
 * its own records.
 *
 * The ring: a producer reserves the next sequence number with a compare-and-swap on ring_head while it is
 * less than ring_tail + ring_records (else the ring is full), writes the record in slot seq % records and
 * publishes it by storing commit = seq + 1 last (release). The daemon reads slots from ring_tail on while
 * their commit matches, then stores the new ring_tail (release). A free's record is reserved before the
 * block goes back to the allocator, an allocation's after the allocator returned it: a block handed from
 * one thread to another always has its allocation earlier in the ring than its free.
 */

#include <stdint.h>

#define HEAP_ABI_MAGIC UINT64_C(0x3170616568736d00)    /* "\0msheap1", little-endian */
#define HEAP_ABI_VERSION 3u                     /* 3: each record's time and its thread's allocations */

/* What the library puts in the environment of the process it records. */
#define HEAP_ENV_SOCKET "MEMSTRACK_HEAP_SOCKET"                 /* the heap source's socket */
#define HEAP_ENV_SAMPLE_INTERVAL "MEMSTRACK_HEAP_SAMPLE_INTERVAL" /* bytes per sampled stack, 1: every call */
#define HEAP_ENV_SEED "MEMSTRACK_HEAP_SEED"                     /* sampling's random seed, for tests */
#define HEAP_ENV_ALLOWANCE "MEMSTRACK_HEAP_ALLOWANCE"   /* live bytes a thread may keep to itself, 0: none */

/* Far enough below the peak that a thread's allocations stay its own for a while (heap/live.c). */
#define HEAP_ALLOWANCE_DEFAULT (UINT64_C(256) * 1024)

/* One stack per this many bytes allocated on average, as tcmalloc and jemalloc sample. */
#define HEAP_SAMPLE_INTERVAL_DEFAULT (UINT64_C(512) * 1024)
#define HEAP_SAMPLE_INTERVAL_MAX (UINT64_C(1) << 40)

/* Return addresses kept per stack. */
#define HEAP_FRAMES_MAX 64u

/* Stack ids: slot index + HEAP_STACK_FIRST; these two name no slot. */
#define HEAP_STACK_NONE 0u              /* no stack was taken: a call made inside another (a signal handler) */
#define HEAP_STACK_FULL 1u              /* the stack table was full */
#define HEAP_STACK_FIRST 2u

/* The region's largest size the daemon maps, and the layout the library makes. */
#define HEAP_REGION_MAX (UINT64_C(256) << 20)
#define HEAP_RING_RECORDS (UINT32_C(1) << 16)
#define HEAP_RING_RECORDS_EVERY_CALL (UINT32_C(1) << 20)        /* every call's record: 64 MiB */
#define HEAP_STACK_SLOTS (UINT32_C(1) << 17)
#define HEAP_FRAMES (UINT32_C(1) << 22)
#define HEAP_OBJECTS 1024u
#define HEAP_THREAD_SLOTS 4096u
#define HEAP_OBJECT_PATH_MAX 224u

/* HeapAbiHeader.flags */
#define HEAP_ABI_FLAG_CLOSED 1u         /* the daemon stopped reading this region (HeapStop): stop recording */

typedef enum HeapAbiRecordType {
        HEAP_RECORD_ALLOC = 1,          /* a sampled block: ptr, bytes, stack */
        HEAP_RECORD_FREE = 2,           /* a sampled block went back: ptr, bytes */
} HeapAbiRecordType;

/* One cache line. */
typedef struct HeapAbiRecord {
        uint64_t commit;                /* seq + 1 once the record is complete */
        uint64_t ptr;
        uint64_t bytes;                 /* malloc_usable_size() of the block */
        uint64_t live_after;            /* the process's live bytes right after this call's own change */
        uint64_t peak;                  /* the process's peak live bytes as this call saw it */
        uint32_t stack;                 /* ALLOC: stack id */
        uint32_t tid;
        uint32_t type;                  /* HeapAbiRecordType */
        /* The low 32 bits of the allocations the thread had made (its own, not nested ones) when the call
         * ended, 0 when not known (a nested call, a thread sharing the last slot): a free whose count is its
         * block's allocation's, on the same thread, came before that thread allocated again. */
        uint32_t thread_allocs;
        uint64_t time_nsec;             /* CLOCK_MONOTONIC when the call made its change */
} HeapAbiRecord;

_Static_assert(sizeof(HeapAbiRecord) == 64, "a record is one cache line");

/* A published slot has hash != 0; offset and n_frames are written before it. */
typedef struct HeapAbiStackSlot {
        uint64_t hash;
        uint32_t offset;                /* index of its first frame in the frames array */
        uint32_t n_frames;
} HeapAbiStackSlot;

/* A thread's counts, summed by the reader. One cache line, so threads do not share one. The thread's own
 * calls change the first three with plain stores; calls made inside another on the thread (a signal
 * handler), which may land in the middle of such a store, count in the nested ones, atomically. The
 * reader adds both. live_delta: live bytes this thread's calls changed that are not yet in the header's
 * live_bytes (its allowance while the process is far below its peak, heap/live.c); live_busy: set while
 * one of its calls reads or changes them. */
typedef struct HeapAbiThread {
        uint64_t allocs, frees, alloc_bytes;
        uint64_t nested_allocs, nested_frees, nested_alloc_bytes;
        int64_t live_delta;
        uint64_t live_busy;
} HeapAbiThread;

/* One loadable segment of a loaded ELF file. */
typedef struct HeapAbiObject {
        uint64_t start, end;            /* page-aligned addresses */
        uint64_t offset;                /* in the file, page-aligned */
        uint32_t flags;                 /* PF_R, PF_W, PF_X */
        uint32_t reserved;
        char path[HEAP_OBJECT_PATH_MAX];        /* NUL-terminated; the main program's is /proc/self/exe's */
} HeapAbiObject;

typedef struct HeapAbiHeader {
        uint64_t magic;
        uint32_t version;
        uint32_t header_bytes;          /* sizeof(HeapAbiHeader) */
        uint64_t region_bytes;
        uint64_t ring_offset;
        uint64_t ring_records;
        uint64_t stack_slots_offset;
        uint64_t n_stack_slots;
        uint64_t frames_offset;
        uint64_t n_frames;
        uint64_t objects_offset;
        uint64_t n_objects_max;
        uint64_t threads_offset;
        uint64_t n_thread_slots;
        uint64_t sample_interval;       /* bytes per sampled stack on average; 1: every call */
        int32_t pid;
        uint32_t flags;                 /* HEAP_ABI_FLAG_*: the daemon's word to the library */

        /* The exact counters, all changed with atomic operations, on one cache line. The process's live
         * bytes are live_bytes + nested_pending + every thread's live_delta. */
        _Alignas(64) int64_t live_bytes;        /* usable bytes of the blocks recorded and not freed */
        uint64_t peak_bytes;            /* the most the process's live bytes ever were */
        uint64_t threads_used;          /* thread slots claimed (may pass n_thread_slots) */
        int64_t nested_pending;         /* calls inside another, while live_bytes was not exact on its own */

        _Alignas(64) uint64_t ring_head;        /* next sequence number to reserve (producers) */
        _Alignas(64) uint64_t ring_tail;        /* next sequence number to read (the daemon) */
        uint64_t consumer_polls;        /* the daemon's polls so far: a producer waits on a full ring only while
                                         * this moves */

        /* Losses and oddities, each counted, never silent. */
        _Alignas(64) uint64_t lost_ring_full;   /* sampled records dropped: the ring stayed full */
        uint64_t lost_nested;           /* sampled records dropped inside another call (a lock was held) */
        uint64_t lost_table;            /* sampled blocks not tracked: the library's table could not grow */
        uint64_t stacks_full;           /* stacks not kept: the stack table or frames were full */
        uint64_t unknown_frees;         /* every-call mode: frees of pointers not live (double free, never
                                         * allocated here, or allocated before the library started) */
        uint64_t invalid_frees;         /* frees of pointers no allocator hands out (misaligned): not measured */
        uint64_t nested_calls;          /* calls made while another was running on the thread (signal handlers) */
        uint64_t frames_used;           /* of n_frames (the stack table's writer, under its lock) */

        /* The objects, as a sequence lock: odd while they are being rewritten. */
        _Alignas(64) uint64_t objects_generation;
        uint64_t n_objects;
} HeapAbiHeader;
