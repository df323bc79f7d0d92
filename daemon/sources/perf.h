/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The perf event source: the only module that knows the perf ABI. It turns the kernel's page
 * tracepoints into MsEvents through the generic EventSource vtable (source.h).
 *
 * Per online CPU: one tracepoint event each for kmem:mm_page_alloc (with call chains), kmem:mm_page_free
 * and, when tracefs has them, module:module_load and module:module_free. The allocation event owns the
 * CPU's only ring buffer; the others write into it (PERF_EVENT_IOC_SET_OUTPUT), so allocations and
 * frees of a CPU arrive in the order they happened, and it alone carries the COMM/FORK/EXIT side-band
 * records. No file descriptors beyond the events themselves.
 *
 * Any ring's wakeup (a large watermark: few wakeups) drains all rings, merged by timestamp up to a cut
 * taken when the round starts, because a page freed on one CPU may be reused on another. At most
 * drain_budget records per dispatch; the rest follows from a deferred source after other sources ran.
 * Below the watermark records wait in the rings: flush() delivers everything up to now.
 *
 * kmem:mm_page_free_batched is not attached: the kernel emits mm_page_free for every page it frees,
 * batched or not, and mm_page_free_batched in addition for the batched ones (on 6.18, munmap of 100000
 * touched pages: 100124 mm_page_free and 100010 mm_page_free_batched), so attaching it would report
 * those pages freed twice at the cost of one more record each.
 *
 * The daemon's own allocations are dropped (tgid == getpid()). Its frees are kept: a page it frees may
 * belong to another process (the last reference to a shared page, a pipe buffer).
 *
 * Steady state allocates nothing and logs nothing per record: one MsEvent and one frames array are
 * reused, and a record that wraps around the end of a ring is copied into a preallocated bounce buffer.
 * Exec side-band records read /proc/PID/cmdline (once per exec, not per page event).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "source.h"

/* Frames per allocation call chain and data pages per CPU ring: the generic defaults (source.h). */
#define PERF_DEPTH_DEFAULT SOURCE_DEPTH_DEFAULT
#define PERF_DEPTH_MAX SOURCE_DEPTH_MAX
#define PERF_BUFFER_PAGES_DEFAULT SOURCE_BUFFER_PAGES_DEFAULT
#define PERF_BUFFER_PAGES_MAX SOURCE_BUFFER_PAGES_MAX
/* Records decoded per dispatch before other event sources get their turn. */
#define PERF_DRAIN_BUDGET_DEFAULT 4096u
/* Arguments of an exec'd task, joined by spaces, at most this many bytes with the NUL. */
#define PERF_CMDLINE_MAX 4096u

typedef struct PerfConfig {
        const char *tracefs;            /* tracefs mount point; NULL: find it, mounting it if needed */
        unsigned depth;                 /* frames per allocation call chain, 0 (none) ..PERF_DEPTH_MAX */
        bool user_stacks;               /* also record user frames (frame-pointer unwinding) */
        unsigned buffer_pages;          /* data pages per CPU ring, a power of two */
        size_t wakeup_bytes;            /* buffered bytes that wake the daemon; 0: a quarter of the ring */
        unsigned drain_budget;          /* records per dispatch, > 0 */
        pid_t self;                     /* whose allocations are dropped; 0: getpid() */
} PerfConfig;

/* Fills in the defaults above. */
void perf_config_init(PerfConfig *ret);

/*
 * Opens the events on every online CPU (disabled) and maps their rings; start() enables them, seeds the
 * tasks alive at that point from /proc (MS_EVENT_TASK_NEW with comm, cmdline and resident pages as
 * baseline) and attaches the rings to the loop. The config is copied.
 *
 * Logs the reason once at error level and returns: -EINVAL for a bad config, -ENOENT when tracefs or a
 * required tracepoint is missing (named in the log), -EACCES/-EPERM without the privilege to trace (the
 * log gives kernel.perf_event_paranoid), -EOVERFLOW when depth exceeds kernel.perf_event_max_stack,
 * -ENOMEM, or the errno of another failing call. On success *ret is freed with event_source_free().
 */
int perf_source_new(const PerfConfig *config, EventSource **ret);

/* The registry's entry (source.c): "perf", automatic, probing that the kernel has perf events at all. */
extern const SourceType perf_source_type;
