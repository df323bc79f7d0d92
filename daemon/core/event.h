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

typedef enum MsEventType {
        MS_EVENT_PAGE_ALLOC,    /* pfn, order, gfp_flags, migrate_type, frames */
        MS_EVENT_PAGE_FREE,     /* pfn, order */
        MS_EVENT_TASK_NEW,      /* a task seen before tracing began: name = comm, baseline_pages */
        MS_EVENT_TASK_FORK,     /* tid/pid is the child, parent_pid the parent (inherits its comm) */
        MS_EVENT_TASK_COMM,     /* tid/pid renamed itself (exec, prctl): name = new comm */
        MS_EVENT_TASK_EXIT,     /* tid/pid exited; a process exits when its thread-group leader does */
        MS_EVENT_MODULE_LOAD,   /* name = module; tid/pid = the loading task */
        MS_EVENT_MODULE_FREE,   /* name = module */
        MS_EVENT_LOST,          /* the source dropped n_lost records on cpu: counts may be off */
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

typedef struct MsEvent {
        MsEventType type;
        uint32_t cpu;
        int32_t pid;                    /* thread group id: the process */
        int32_t tid;                    /* thread id */
        uint64_t timestamp_nsec;        /* CLOCK_MONOTONIC */

        uint64_t pfn;
        uint32_t order;                 /* the block is 2^order pages starting at pfn */
        int32_t migrate_type;           /* -1 when the source does not know */
        uint64_t gfp_flags;

        /*
         * Call chain, innermost frame first. frames[0 .. n_kernel_frames) are kernel addresses,
         * frames[n_kernel_frames .. n_frames) user addresses of process pid (what followed perf's
         * user-context marker).
         */
        const uint64_t *frames;
        uint32_t n_frames;
        uint32_t n_kernel_frames;

        const char *name;               /* TASK_NEW, TASK_COMM, MODULE_*: NUL-terminated */
        const char *cmdline;            /* TASK_NEW, TASK_COMM: arguments joined by spaces, or NULL */
        int32_t parent_pid;             /* TASK_FORK: the parent's tgid */
        uint64_t baseline_pages;        /* TASK_NEW: resident pages before tracing (e.g. /proc/PID/statm) */
        uint64_t n_lost;                /* LOST */
} MsEvent;

/* Where a source delivers its events. Called synchronously from the source's dispatch. */
typedef struct MsEventSink {
        void (*event)(void *userdata, const MsEvent *event);
        void *userdata;
} MsEventSink;

/* What a source counts about its own delivery: in the summary and Status replies, beside the core's counts. */
typedef struct EventSourceStats {
        uint64_t records;               /* records decoded into events */
        uint64_t lost_records;          /* records the kernel dropped (PERF_RECORD_LOST and friends) */
        uint64_t wakeups;               /* times the source was woken up to drain */
        size_t n_cpus;
        uint64_t *lost_per_cpu;         /* n_cpus entries, owned by the source, valid until it is freed */
} EventSourceStats;
