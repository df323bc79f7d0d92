/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The plain event record every event source emits and the accounting core consumes. It carries no
 * perf, tracefs or libtraceevent types, so an ftrace, page_owner or eBPF backend can produce the same
 * records. Pointers inside an event are borrowed: valid only for the duration of the sink call.
 */

#include <errno.h>
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

/* Page events' pfns are below 2^MS_PAGE_KEY_BITS (the page table's limit): physical frame numbers of 52-bit
 * physical addresses with 4 KiB pages, the most x86-64 and arm64 define, or a source's surrogate keys cut
 * to this width. */
#define MS_PAGE_KEY_BITS 40

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
        int32_t parent_pid;             /* FORK: the parent's tgid */
        uint64_t baseline_pages;        /* NEW: resident pages before tracing (e.g. /proc/PID/statm) */
} MsTaskEvent;

typedef struct MsModuleEvent {
        const char *name;               /* NUL-terminated */
} MsModuleEvent;

typedef struct MsLostEvent {
        uint64_t n_lost;
} MsLostEvent;

/*
 * The most a sample may change its unit by or rise: the pages of every pfn there can be (MS_PAGE_KEY_BITS),
 * and their bytes at the largest page size (64 KiB). More is a corrupt record: the core counts it
 * (AccountingStats.invalid_events) and does not apply it, so that no count wraps or loses bits (a charge
 * cell keeps 53 bits of pages).
 */
#define MS_EVENT_SAMPLE_PAGES_MAX (UINT64_C(1) << MS_PAGE_KEY_BITS)
#define MS_EVENT_SAMPLE_BYTES_MAX (MS_EVENT_SAMPLE_PAGES_MAX << 16)

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
        };
} MsEvent;

/* Where a source delivers its events. Called synchronously from the source's dispatch. */
typedef struct MsEventSink {
        void (*event)(void *userdata, const MsEvent *event);
        void *userdata;
} MsEventSink;

/* One way a source loses data, and how often it did (Status lostByReason). */
typedef struct EventSourceLoss {
        const char *reason;             /* "ringFull", "recursionMiss", "stackFailed", "perfLost": static */
        uint64_t count;
} EventSourceLoss;

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
} EventSourceStats;
