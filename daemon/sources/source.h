/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * An event source: something that turns kernel page events into MsEvents (perf today; ftrace,
 * page_owner import and eBPF later). The manager only sees this vtable, so backends are swappable.
 *
 * The registry (source.c) maps names to SourceTypes; the manager asks it for a source by name, or for
 * "auto": the first source in registry order that is meant for automatic use and whose probe says it can
 * run here. Every source gets the same generic SourceOptions and takes what applies to it. Adding a
 * source: one file defining `const SourceType NAME_source_type`, one line in the registry.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "event.h" /* MsEvent, MsEventSink, EventSourceStats */

#define SOURCE_MAX_CPUS 4096

/* Frames per allocation call chain (kernel and user together): page allocations are 10 to 40 kernel
 * frames deep in practice, 64 leaves room for user frames while bounding a sample to ~600 bytes. */
#define SOURCE_DEPTH_DEFAULT 64u
#define SOURCE_DEPTH_MAX 1024u
/* Data pages per CPU buffer (4 MiB with 4 KiB pages). For perf the default wakeup watermark is a quarter
 * of it: about 30 wakeups/s at full speed, and three quarters of the ring left to absorb the daemon's
 * scheduling delay. With both CPUs of the reference machine saturated by the load, half-ring watermarks
 * lost records up to 512 pages, quarter-ring ones none from 256 pages up; 1024 keeps a margin
 * (docs/performance.md). Memory cost: this times the number of CPUs, locked. */
#define SOURCE_BUFFER_PAGES_DEFAULT 1024u
/* With slab objects (--slab) records come several times as fast (a file created is a dentry, two inodes and
 * their frees), in bursts: with both CPUs of the reference machine saturated beside a burst of 100 000
 * files, the default ring dropped 190 000 records and four times it none. */
#define SOURCE_BUFFER_PAGES_SLAB_DEFAULT 4096u
#define SOURCE_BUFFER_PAGES_MAX (1u << 20)
/* Pages per allocation stack taken, for sources that sample stacks (eBPF): 1 takes every allocation's
 * stack ("full mode"). 128 pages are 512 KiB, what tcmalloc and Go sample heaps by; a stack costs ~3 us,
 * and 1 in 128 measured 0.03 to 0.07 us per page cheaper than 1 in 64 (docs/performance.md). The counts
 * stay exact whatever it is. */
#define SOURCE_STACK_SAMPLE_INTERVAL_DEFAULT 128u
#define SOURCE_STACK_SAMPLE_INTERVAL_MAX (1u << 24)
/* Kernel BTF, which the eBPF source needs to relocate its program to the running kernel. */
#define SOURCE_BTF_DEFAULT "/sys/kernel/btf/vmlinux"

/* What the daemon tells any source; each takes what applies to it and ignores the rest. Strings are
 * borrowed: a source copies what it keeps. */
typedef struct SourceOptions {
        const char *tracefs;            /* tracefs mount point; NULL: find it, mounting it if needed */
        const char *input;              /* a file of events, for sources that read one; NULL: none */
        unsigned depth;                 /* frames per allocation call chain, 0 (none) ..SOURCE_DEPTH_MAX */
        bool user_stacks;               /* also record user frames */
        bool slab;                      /* also slab objects (MS_EVENT_OBJECT_*): opt-in, they come at many
                                         * times the page rate */
        unsigned buffer_pages;          /* data pages per CPU buffer, a power of two */
        size_t wakeup_bytes;            /* buffered bytes that wake the daemon; 0: the source's choice */
        pid_t self;                     /* whose allocations are dropped (the daemon's); 0: getpid() */
        unsigned stack_sample_interval; /* pages per stack taken, 1..SOURCE_STACK_SAMPLE_INTERVAL_MAX */
        bool nested_allocations_always; /* eBPF: the allocation twin from the start, not the first miss */
        const char *btf;                /* kernel BTF for the eBPF source; NULL: SOURCE_BTF_DEFAULT */
        uint64_t heap_sample_interval;  /* heap-uprobe: bytes per sampled stack on average, 1: every call;
                                         * 0: HEAP_SAMPLE_INTERVAL_DEFAULT */
        bool heap_beside;               /* the heap source runs beside a kernel source (--heap-socket): that
                                         * one knows the tasks, so it sends no task events, and every user's
                                         * processes may hand over their own heap */
} SourceOptions;

/* Fills in the defaults above. */
void source_options_init(SourceOptions *ret);

/* A drain that spent its budget goes on in a later loop iteration, after the loop's other pending
 * sources had their turn: a defer source, off until source_drain_later() arms it once. */
int source_add_drain_later(sd_event *event, sd_event_source **ret, sd_event_handler_t handler, void *userdata,
                const char *description);
void source_drain_later(sd_event_source *s);

typedef struct EventSource EventSource;

typedef struct EventSourceOps {
        const char *name;                                       /* "perf", "ftrace", ... */
        /* Attach to the loop and begin emitting events into the sink. */
        int (*start)(EventSource *s, sd_event *event, const MsEventSink *sink);
        /* Drain whatever is buffered now, synchronously (used before a final summary). */
        int (*flush)(EventSource *s);
        void (*get_stats)(EventSource *s, EventSourceStats *ret);
        void (*free)(EventSource *s);
        /* Optional: the symbol table, in /proc/kallsyms format, that names the kernel frames of this
         * source's events, for a source whose frames are not the running kernel's addresses (a page_owner
         * log from another machine). Borrowed; valid until the source is freed. NULL (op or result): the
         * running kernel's. */
        const char *(*symbols)(EventSource *s);
        /* Optional, for sources of user-space heaps: stop recording pid's heap now (its records so far are
         * read, then its heap ends as closed; the process runs on). 0, also when it had ended already;
         * -ESRCH if the source never recorded it. */
        int (*heap_stop)(EventSource *s, int32_t pid);
        /* Optional: the source's own tracing frames at the top of its kernel stacks (event.h), which the
         * core drops; NULL: its stacks start at the allocation. */
        const MsTracerFrames *tracer_frames;
} EventSourceOps;

struct EventSource {
        const EventSourceOps *ops;
};

static inline EventSource *event_source_free(EventSource *s) {
        if (s)
                s->ops->free(s);
        return NULL;
}

typedef struct SourceType {
        const char *name;               /* what --source= takes */
        const char *description;        /* one line for --help */
        bool automatic;                 /* "auto" may pick it (false for test-only sources) */
        bool user_space_only;           /* its events are user-space heaps: no kernel memory to account */
        /* Whether it can run here: 0, or -errno with the reason in *ret_reason (a static string). Cheap and
         * silent: opening the source says the rest. NULL: it can always run. */
        int (*probe)(const SourceOptions *options, const char **ret_reason);
        /* Builds the source (not started); logs the reason once on failure. */
        int (*new)(const SourceOptions *options, EventSource **ret);
} SourceType;

/* --heap-socket: the heap source beside the source main (SourceOptions.heap_beside), started on event and
 * sink; *ret NULL when there is no socket or main is the heap source itself. -errno, logged. */
int source_start_heap_beside(const SourceOptions *options, const char *socket, EventSource *main, sd_event *event,
                const MsEventSink *sink, EventSource **ret);
/* HeapStop: asks each of the n sources (NULL ones skipped) that records heaps to stop pid's. 0, or -ESRCH
 * when none records it. */
int source_heap_stop(EventSource *const sources[], size_t n, int32_t pid);

/* The registered source called name, or NULL. */
const SourceType *source_type_find(const char *name);
/* The i-th registered source, in registry order; NULL past the end. */
const SourceType *source_type_get(size_t i);
/* Every registered name joined by sep, into buf (size bytes, cut if too small); returns buf. */
const char *source_type_names(const char *sep, char *buf, size_t size);

/*
 * Builds the source called name; NULL or "auto" picks the first automatic source whose probe passes.
 * When auto passes over a source, one notice line says which and why. Returns -ENOENT (logged) for an
 * unknown name, -EOPNOTSUPP (logged, with each probe's reason) when no source can run here, or what the
 * source's constructor returned. On success *ret_type (if not NULL) is the type chosen and *ret_reason
 * (if not NULL) a new string saying why (Status backendReason): "asked for", "auto", or "auto: NAME:
 * REASON; ..." naming the sources auto passed over; the caller frees it.
 */
int source_new(const char *name, const SourceOptions *options, EventSource **ret,
                const SourceType **ret_type, char **ret_reason);
