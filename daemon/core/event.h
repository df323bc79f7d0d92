/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The plain event record every event source emits and the accounting core consumes. It carries no
 * perf, tracefs or libtraceevent types, so an ftrace, page_owner or eBPF backend can produce the same
 * records. Pointers inside an event are borrowed: valid only for the duration of the sink call.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"

typedef enum MsEventType {
        MS_EVENT_PAGE_ALLOC,    /* page: pfn, order, gfp_flags, migrate_type, stack */
        MS_EVENT_PAGE_FREE,     /* page: pfn, order */
        MS_EVENT_OBJECT_ALLOC,  /* object: ptr, bytes_requested, bytes_allocated, cache, call_site, stack */
        MS_EVENT_OBJECT_FREE,   /* object: ptr, call_site */
        MS_EVENT_TASK_NEW,      /* task: a task seen before tracing began: name = comm, baseline_pages */
        MS_EVENT_TASK_FORK,     /* task: tid/pid is the child, parent_pid the parent (inherits its comm) */
        MS_EVENT_TASK_COMM,     /* task: tid/pid renamed itself (exec, prctl): name = new comm */
        MS_EVENT_TASK_EXIT,     /* tid/pid exited; a process exits when its thread-group leader does */
        MS_EVENT_MODULE_LOAD,   /* module: name; tid/pid = the loading task */
        MS_EVENT_MODULE_FREE,   /* module: name */
        MS_EVENT_LOST,          /* lost: the source dropped n_lost records on cpu: counts may be off */
        MS_EVENT_SAMPLE,        /* sample: task pid/tid, stack: delta units, peak; aggregated by the source */
        MS_EVENT_HEAP_START,    /* heap: process pid began recording its user-space heap: sample_interval,
                                 * maps, comm, cmdline; a heap of pid still open ends (the process exec'd) */
        MS_EVENT_HEAP_ALLOC,    /* heap: a sampled block: ptr, bytes, stack (user frames), peak */
        MS_EVENT_HEAP_FREE,     /* heap: a sampled block went back: ptr, peak */
        MS_EVENT_HEAP_STATE,    /* heap: the exact counters now, peak */
        MS_EVENT_HEAP_MAPS,     /* heap: the process's mappings now (a library was loaded): maps */
        MS_EVENT_HEAP_END,      /* heap: the heap of pid ended: end */
        _MS_EVENT_TYPE_MAX,
        _MS_EVENT_TYPE_INVALID = -EINVAL,
} MsEventType;

/*
 * The largest order a page event may carry. The buddy allocator hands out blocks below MAX_PAGE_ORDER
 * (10 by default, at most 15 or so where ARCH_FORCE_MAX_ORDER raises it); gigantic huge pages freed as
 * one block reach order 18 (1 GiB of 4 KiB pages, 16 GiB of 64 KiB pages). Anything above this is a
 * corrupt record: the core counts it (AccountingStats.invalid_events) and does not apply it, so one bad
 * free cannot make it scan 2^31 pfns.
 */
#define MS_EVENT_ORDER_MAX 20u

/*
 * Call chain, innermost frame first. frames[0 .. n_kernel_frames) are kernel addresses,
 * frames[n_kernel_frames .. n_frames) user addresses of process pid (what followed perf's user-context
 * marker).
 */
/*
 * A kernel frame no kernel has: the whole stack of allocations a source counted without taking their
 * stack, before it had sampled any stack of the allocating thread (see ebpf.c). Shown as "[not sampled]".
 */
#define MS_FRAME_NOT_SAMPLED UINT64_C(1)

typedef struct MsStack {
        const uint64_t *frames;
        uint32_t n_frames;
        uint32_t n_kernel_frames;
} MsStack;

/*
 * A source's own tracing machinery at the top of its kernel stacks: the functions that run a tracepoint's
 * probes (name prefixes), and, for a source whose stacks are taken from inside a BPF program, that
 * program's frame first (module "bpf", or no symbol yet). The core drops that innermost run from every
 * chain: it is the tracer, not the allocation. What the run looks like is the source's knowledge.
 */
typedef struct MsTracerFrames {
        const char *const *prefixes;    /* NULL-terminated */
        bool program_first;
} MsTracerFrames;

/* Page events' pfns are below 2^MS_PAGE_KEY_BITS (the page table's limit): physical frame numbers of 52-bit
 * physical addresses with 4 KiB pages, the most x86-64 and arm64 define, or a source's surrogate keys cut
 * to this width. A block must end below it too: the core counts one that does not as invalid
 * (AccountingStats.invalid_events) and does not apply it. */
#define MS_PAGE_KEY_BITS 40
#define MS_PAGE_KEY_MAX ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1)

/* The most pages any machine has: a 64-bit physical address space in 4 KiB pages. A count of pages above
 * it is corrupt input: a sample that says so is invalid, and sources that read files refuse it. */
#define MS_PAGES_MAX (UINT64_C(1) << 52)

typedef struct MsPageEvent {
        uint64_t pfn;
        uint32_t order;                 /* the block is 2^order pages starting at pfn */
        int32_t migrate_type;           /* ALLOC: -1 when the source does not know */
        uint64_t gfp_flags;             /* ALLOC */
        MsStack stack;                  /* ALLOC */
} MsPageEvent;

/* A slab (kmalloc, kmem_cache) object: keyed by pointer, measured in bytes. */
typedef struct MsObjectEvent {
        uint64_t ptr;
        uint64_t bytes_requested;       /* ALLOC: what the caller asked for */
        uint64_t bytes_allocated;       /* ALLOC: what the allocator handed out (>= requested) */
        const char *cache;              /* ALLOC: the kmem_cache name, or NULL when unknown */
        uint64_t call_site;             /* the caller's kernel address, 0 when unknown */
        MsStack stack;                  /* ALLOC */
} MsObjectEvent;

typedef struct MsTaskEvent {
        const char *name;               /* NEW, COMM: NUL-terminated */
        const char *cmdline;            /* NEW, COMM: arguments joined by spaces, or NULL */
        int32_t parent_pid;             /* FORK: the parent's tgid; NEW: its parent (/proc), 0 unknown */
        uint64_t baseline_pages;        /* NEW: resident pages before tracing (e.g. /proc/PID/statm) */
} MsTaskEvent;

typedef struct MsModuleEvent {
        const char *name;               /* NUL-terminated */
} MsModuleEvent;

typedef struct MsLostEvent {
        uint64_t n_lost;
} MsLostEvent;

/*
 * The most a sample may change its unit by or rise: the pages any machine has (MS_PAGES_MAX), and bytes of
 * the pages of every pfn there can be (MS_PAGE_KEY_BITS) at the largest page size (64 KiB). More is a
 * corrupt record: the core counts it (AccountingStats.invalid_events) and does not apply it. Within them,
 * the core's totals saturate (ACCOUNTING_PAGES_MAX), so no count wraps or loses bits (a charge cell keeps
 * 53 bits of pages).
 */
#define MS_EVENT_SAMPLE_PAGES_MAX MS_PAGES_MAX
#define MS_EVENT_SAMPLE_BYTES_MAX (UINT64_C(1) << (MS_PAGE_KEY_BITS + 16))

/*
 * What a source that aggregates in the kernel delivers instead of one record per allocation: "task
 * pid/tid, stack S: delta units since its last sample of (task, S), peak". peak is how far the value of
 * (task, S) rose above its value at the start of the interval this sample covers, at its highest
 * (peak >= delta, peak >= 0; a smaller peak is read as max(delta, 0)). It is relative, not the kernel's
 * absolute maximum, so a source that resets its in-kernel map every interval reports it the same way.
 * accounting.h says how the core turns it into peaks of tasks, modules and stack nodes.
 */
typedef struct MsSampleEvent {
        MsStack stack;
        LedgerUnit unit;
        int64_t delta;
        uint64_t peak;
} MsSampleEvent;

/* Where a new maximum of a heap's live bytes lies relative to the event that reports it. */
typedef enum MsHeapPeak {
        MS_HEAP_PEAK_NONE,              /* no new maximum */
        MS_HEAP_PEAK_BEFORE,            /* reached before this event changed anything */
        MS_HEAP_PEAK_AFTER,             /* reached by this event (or, for STATE, now) */
        _MS_HEAP_PEAK_MAX,
        _MS_HEAP_PEAK_INVALID = -EINVAL,
} MsHeapPeak;

typedef enum MsHeapEnd {
        MS_HEAP_END_EXIT,               /* the process exited (or was killed) */
        MS_HEAP_END_EXEC,               /* it ran another program */
        MS_HEAP_END_CLOSED,             /* the source stopped reading it (daemon stopping, bad region) */
        _MS_HEAP_END_MAX,
        _MS_HEAP_END_INVALID = -EINVAL,
} MsHeapEnd;

/* A heap's exact counts, as its process keeps them (every call counted, whether sampled or not). */
typedef struct MsHeapCounters {
        uint64_t live_bytes;            /* usable bytes allocated and not freed */
        uint64_t peak_bytes;            /* the most live_bytes ever was */
        uint64_t allocs, frees;
        uint64_t alloc_bytes;           /* usable bytes of all allocations */
        uint64_t unknown_frees;         /* frees of pointers not live (known in every-call mode only) */
        uint64_t invalid_frees;         /* frees of pointers no allocator hands out */
        uint64_t lost_records;          /* sampled records dropped (full channel, nested calls, full tables) */
        uint64_t stacks_full;           /* sampled allocations whose stack was not kept */
        uint64_t nested_calls;          /* calls made inside another on the same thread (signal handlers) */
} MsHeapCounters;

/* The user-space heap of a process, fed by the heap library it preloads (heap/). */
typedef struct MsHeapEvent {
        uint64_t ptr;                   /* ALLOC, FREE */
        uint64_t bytes;                 /* ALLOC, FREE: usable bytes of the block */
        MsStack stack;                  /* ALLOC: user frames only (n_kernel_frames 0), innermost first */
        uint32_t stack_id;              /* ALLOC: the source's name for these frames in this heap, 0: none; one
                                         * id always names the same frames, so the core may remember where
                                         * they led */
        MsHeapPeak peak;                /* ALLOC, FREE, STATE */
        /* ALLOC, FREE: CLOCK_MONOTONIC when the call made its change; 0: not known (the event's timestamp
         * then). */
        uint64_t time_nsec;
        /* ALLOC, FREE: the low 32 bits of the allocations the calling thread had made when the call ended,
         * 0 when not known: a free with its allocation's count, on the same thread, came before that thread
         * allocated again (a temporary allocation). */
        uint32_t thread_allocs;
        uint64_t sample_interval;       /* START: bytes per sampled stack on average, 1: every allocation */
        const char *maps;               /* START, MAPS: the text of /proc/PID/maps, or NULL */
        const char *comm;               /* START */
        const char *cmdline;            /* START, or NULL */
        const MsHeapCounters *counters; /* STATE */
        MsHeapEnd end;                  /* END */
} MsHeapEvent;

/* A user frame no program has: the allocation's stack was not taken (see heap-abi.h HEAP_STACK_NONE, _FULL). */
#define MS_FRAME_HEAP_NO_STACK UINT64_C(2)
#define MS_FRAME_HEAP_STACK_FULL UINT64_C(3)

/*
 * The header every event has, then the body its type names (the comment at each MsEventType says
 * which). Only the body of the event's type is meaningful.
 */
typedef struct MsEvent {
        MsEventType type;
        uint32_t cpu;
        int32_t pid;                    /* thread group id: the process */
        int32_t tid;                    /* thread id */
        uint64_t timestamp_nsec;        /* CLOCK_MONOTONIC */
        uint64_t cgroup_id;             /* the task's cgroup (inode number of its cgroupfs directory), 0 when
                                         * the source does not know it */
        union {
                MsPageEvent page;
                MsObjectEvent object;
                MsTaskEvent task;
                MsModuleEvent module;
                MsLostEvent lost;
                MsSampleEvent sample;
                MsHeapEvent heap;
        };
} MsEvent;

/* Where a source delivers its events. Called synchronously from the source's dispatch. */
typedef struct MsEventSink {
        void (*event)(void *userdata, const MsEvent *event);
        void *userdata;
        /* Optional (NULL: none): a hint that a page event for pfn comes soon. A source holding a batch of
         * page events calls it a few events ahead, so the sink's lookups overlap their memory latency.
         * Last, so that a sink written as { event, userdata } stays what it was. */
        void (*prefetch_page)(void *userdata, uint64_t pfn);
} MsEventSink;

/* One way a source loses data, and how often it did (Status lostByReason). */
typedef struct EventSourceLoss {
        const char *reason;             /* "ringFull", "recursionMiss", "stackFailed", "perfLost": static */
        uint64_t count;
} EventSourceLoss;

/* A kernel function a source hooks beyond its tracepoints for what no tracepoint shows (Status
 * kernelHooks): whether the hook runs on this kernel, and if not why. */
typedef struct EventSourceHook {
        const char *function;           /* static: "kmem_cache_free_bulk" */
        const char *covers;             /* static: what the hook makes visible */
        bool attached;
        char reason[192];               /* why not attached; "" when attached */
} EventSourceHook;

/* What a source counts about its own delivery: in the summary and Status replies, beside the core's counts. */
typedef struct EventSourceStats {
        uint64_t records;               /* records decoded into events */
        uint64_t lost_records;          /* records the kernel dropped (PERF_RECORD_LOST and friends) */
        uint64_t wakeups;               /* times the source was woken up to drain */
        size_t n_cpus;
        uint64_t *lost_per_cpu;         /* n_cpus entries, owned by the source, valid until it is freed */
        /* Every reason the source lost data for, with its count (0 included, so readers see what is
         * watched): n_losses entries, owned by the source, valid until it is freed. lost_records are
         * among them; stack failures are not records lost (the counts stay exact). */
        const EventSourceLoss *losses;
        size_t n_losses;
        /* Pages per allocation stack taken: 1 every allocation's stack, N about one in N pages (the
         * stacks the others are charged to are estimated), 0 no stacks. */
        unsigned stack_sample_interval;
        /* Page events' keys are the kernel's pfns (perf and ftrace on kernels whose tracepoint records
         * one), so they tell the page's zone and node; false: keys of the source's own. */
        bool pfns;
        /* n_hooks entries, owned by the source, valid until it is freed. */
        const EventSourceHook *hooks;
        size_t n_hooks;
} EventSourceStats;
