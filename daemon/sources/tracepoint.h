/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Tracepoints: the page and module tracepoints memstrack listens to, described by the kernel's tracefs
 * "format" files. The only module that knows libtraceevent's event parser (ftrace.c uses its kbuffer
 * reader for the ring pages); everything it hands out is plain C.
 *
 * Formats are parsed once at load time and the field handles of every event are resolved then, so
 * decoding a raw record is a dispatch on its common_type plus a few fixed-offset reads: no name lookup
 * and no allocation per record.
 *
 * Page identity: current kernels record "pfn". Older ones record "page" (a struct page pointer) and the
 * pfn cannot be computed without the kernel's vmemmap base, which userspace does not know. For those a
 * surrogate key is used instead: (page / 2^k) mod 2^40 (MS_PAGE_KEY_BITS), with 2^k = 64 bytes for 64-bit pointers and 32
 * for 32-bit ones, the usual sizeof(struct page). It is unique per page whenever the real struct page is
 * at least that big (pointers of consecutive pages then differ by at least 2^k), keeps the pages of one
 * block adjacent when the size matches exactly, and is below 2^40 as the page map requires. It is an
 * identity for matching allocations with frees, not a physical frame number: tracepoint_pfn_is_surrogate()
 * says which one a format set provides.
 *
 * Logs at debug level only; callers log failures once.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "macro.h"
#include "oomkill.h"
#include "gfpnames.h"

typedef enum TracepointKind {
        TRACEPOINT_PAGE_ALLOC,          /* kmem/mm_page_alloc, required */
        TRACEPOINT_PAGE_FREE,           /* kmem/mm_page_free, required */
        TRACEPOINT_PAGE_FREE_BATCHED,   /* kmem/mm_page_free_batched, optional */
        TRACEPOINT_MODULE_LOAD,         /* module/module_load, optional (kernels without modules lack it) */
        TRACEPOINT_MODULE_FREE,         /* module/module_free, optional */
        /* The task and stack events the ftrace source reads (perf has side-band records instead): all
         * optional here; the ftrace source says which it needs. tracepoint_decode() does not decode them:
         * tracepoint_decode_task() and tracepoint_decode_stack() do. */
        TRACEPOINT_SCHED_FORK,          /* sched/sched_process_fork */
        TRACEPOINT_SCHED_EXEC,          /* sched/sched_process_exec */
        TRACEPOINT_SCHED_EXIT,          /* sched/sched_process_exit */
        TRACEPOINT_TASK_NEWTASK,        /* task/task_newtask: the clone flags of a new task */
        TRACEPOINT_TASK_RENAME,         /* task/task_rename: comm changes (exec, prctl) */
        TRACEPOINT_KERNEL_STACK,        /* ftrace/kernel_stack: what the "stacktrace" option records */
        /* Slab objects (--slab), all optional: a kernel lacking one, or whose format lacks ptr, call_site or
         * the sizes, has it absent. Linux 6.1 folded the *_node events into the others (a node field); 6.0
         * added accounted, later kernels the cache name on the kmem_cache ones. Only ptr, call_site, the
         * sizes and the name are read. */
        TRACEPOINT_KMALLOC,             /* kmem/kmalloc */
        TRACEPOINT_KMALLOC_NODE,        /* kmem/kmalloc_node, before 6.1 */
        TRACEPOINT_KMEM_CACHE_ALLOC,    /* kmem/kmem_cache_alloc */
        TRACEPOINT_KMEM_CACHE_ALLOC_NODE, /* kmem/kmem_cache_alloc_node, before 6.1 */
        TRACEPOINT_KFREE,               /* kmem/kfree */
        TRACEPOINT_KMEM_CACHE_FREE,     /* kmem/kmem_cache_free */
        _TRACEPOINT_KIND_MAX,
        _TRACEPOINT_KIND_INVALID = -EINVAL,
} TracepointKind;

/* Byte order of the records to decode; HOST for the running kernel, the others for recorded data. */
typedef enum TracepointByteOrder {
        TRACEPOINT_BYTE_ORDER_HOST,
        TRACEPOINT_BYTE_ORDER_LITTLE,
        TRACEPOINT_BYTE_ORDER_BIG,
        _TRACEPOINT_BYTE_ORDER_MAX,
        _TRACEPOINT_BYTE_ORDER_INVALID = -EINVAL,
} TracepointByteOrder;

typedef struct Tracepoints Tracepoints;

/* "kmem/mm_page_alloc" and so on: the path below <tracefs>/events. NULL for an invalid kind. */
const char *tracepoint_kind_to_string(TracepointKind kind);
bool tracepoint_kind_is_required(TracepointKind kind);

/*
 * Loads the formats of every kind from <tracefs>/events. A missing optional event is not an error
 * (tracepoint_id() then returns -ENOENT for it). Returns -ENOENT when the events directory or a required
 * event is missing, -EACCES/-EPERM when the events directory may not be read, and -EBADMSG when a format
 * lacks a field this module needs; in these cases *reterr_what (if not NULL) names the culprit: a kind
 * string or "events". -ENOMEM, or the errno of a failed read, otherwise.
 */
int tracepoint_load(const char *tracefs, TracepointByteOrder byte_order, Tracepoints **ret,
                const char **reterr_what);
Tracepoints *tracepoint_free(Tracepoints *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Tracepoints *, tracepoint_free);

/* The kernel's event id of kind (perf_event_attr.config for PERF_TYPE_TRACEPOINT), or -ENOENT. */
int tracepoint_id(const Tracepoints *t, TracepointKind kind);
/* Whether kind is one of the slab object events (TRACEPOINT_KMALLOC .. TRACEPOINT_KMEM_CACHE_FREE). */
bool tracepoint_kind_is_slab(TracepointKind kind);
/* Whether kind is a slab allocation (KMALLOC, KMEM_CACHE_ALLOC and their *_node twins). */
bool tracepoint_kind_is_slab_alloc(TracepointKind kind);
/* The slab events this set lacks, for the one log line a source writes under --slab: their names joined
 * by ", " into buf (size bytes; names that do not fit are left out), "" when none is missing; returns
 * buf. A kind and its *_node twin count as one, missing only when both are (6.1 removed the twins). */
const char *tracepoint_slab_missing(const Tracepoints *t, char *buf, size_t size);
/* True when pfn values are surrogate keys derived from struct page pointers (see above). */
bool tracepoint_pfn_is_surrogate(const Tracepoints *t);

/*
 * Decodes one raw tracepoint record (perf's PERF_SAMPLE_RAW payload: the trace entry, starting with
 * common_type). Sets ev->type and the fields that event carries, nothing else:
 *   PAGE_ALLOC   -> MS_EVENT_PAGE_ALLOC: pfn, order, gfp_flags, migrate_type (-1 if not recorded)
 *   PAGE_FREE    -> MS_EVENT_PAGE_FREE: pfn, order
 *   PAGE_FREE_BATCHED -> MS_EVENT_PAGE_FREE: pfn, order 0
 *   MODULE_LOAD/MODULE_FREE -> MS_EVENT_MODULE_*: name, borrowed from raw (valid as long as raw is)
 *   KMALLOC*, KMEM_CACHE_ALLOC* -> MS_EVENT_OBJECT_ALLOC: ptr, call_site, bytes_requested,
 *                  bytes_allocated, cache (borrowed from raw; NULL for kmalloc or a kernel without name)
 *   KFREE, KMEM_CACHE_FREE -> MS_EVENT_OBJECT_FREE: ptr, call_site
 * Returns the kind on success; -ENODATA for a well-formed failed allocation (no page: the allocator
 * returned NULL; no object: NULL or ZERO_SIZE_PTR, also kfree(NULL)), -ENOENT for a record of an event this set does not know, -EBADMSG when the record is
 * too short or its string is not terminated inside it.
 */
int tracepoint_decode(const Tracepoints *t, const void *raw, size_t size, MsEvent *ev);

/* The kind of a raw record and its common_pid (the thread that was running: a tid, not a tgid).
 * -ENOENT for an event this set does not know, -EBADMSG for a record too short for its kind. */
int tracepoint_kind_of(const Tracepoints *t, const void *raw, size_t size, int32_t *ret_common_pid);

/* The fields of a task event, as the kernel recorded them (pids are tids of the initial namespace). */
typedef struct TracepointTask {
        int32_t pid;                    /* FORK: the child; EXEC, EXIT, NEWTASK, RENAME: the task */
        int32_t parent_pid;             /* FORK: the parent thread */
        int32_t old_pid;                /* EXEC: the tid before exec (a thread that exec'd takes the
                                         * leader's) */
        uint64_t clone_flags;           /* NEWTASK */
        int group_dead;                 /* EXIT: 1 the last thread of its process, 0 not, -1 not recorded */
        char comm[17];                  /* FORK: child, EXIT: comm, NEWTASK: comm, RENAME: the new comm */
        const char *filename;           /* EXEC: borrowed from raw */
} TracepointTask;

/* Decodes a record of a task kind (SCHED_*, TASK_*) into *ret; returns its kind. -ENOENT for another
 * kind, -EBADMSG for a malformed record. */
int tracepoint_decode_task(const Tracepoints *t, const void *raw, size_t size, TracepointTask *ret);

/* Decodes a kernel_stack record: up to max frames, innermost first, into frames; *ret_n how many.
 * -ENOENT for another kind, -EBADMSG for a malformed record. */
int tracepoint_decode_stack(const Tracepoints *t, const void *raw, size_t size, uint64_t *frames, size_t max,
                size_t *ret_n);

/*
 * oom:mark_victim, apart from the set above: memstrackd watches it beside any event source (oom-watch.c).
 * Its fields are found by name, so a kernel that records the pid only works too (oomkill.h).
 */
typedef struct TracepointOom TracepointOom;

/* -ENOENT when the kernel has no oom:mark_victim, -EBADMSG when its format has no pid, else as
 * tracepoint_load(). */
int tracepoint_oom_load(const char *tracefs, TracepointOom **ret);
TracepointOom *tracepoint_oom_free(TracepointOom *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(TracepointOom *, tracepoint_oom_free);
int tracepoint_oom_id(const TracepointOom *t);
/* Decodes a raw mark_victim record into *ret (timestamp_nsec left 0). -ENOENT for a record of another
 * event, -EBADMSG for one too short for its fields. */
int tracepoint_oom_decode(const TracepointOom *t, const void *raw, size_t size, OomKill *ret);

/*
 * damon:damon_aggregated, apart from the set above: what a kdamond measured of one region at the end of
 * an aggregation interval, one record per region, nr_regions records of one target in address order
 * (the access room reads it beside any event source, daemon/access/). Read only: nothing here changes
 * a kdamond.
 */
typedef struct TracepointDamon TracepointDamon;

typedef struct DamonRecord {
        int32_t common_pid;             /* the kdamond's thread */
        uint64_t target_id;             /* the target's index in its context */
        uint64_t nr_regions;            /* of that target in this aggregation */
        uint64_t start, end;            /* the region, in the context's address units */
        uint64_t nr_accesses;           /* samples of the interval that found it accessed */
        uint64_t age;                   /* aggregation intervals its access frequency held */
} DamonRecord;

/* -ENOENT when the kernel has no damon:damon_aggregated, -EBADMSG when its format lacks a field, else as
 * tracepoint_load(). */
int tracepoint_damon_load(const char *tracefs, TracepointDamon **ret);
TracepointDamon *tracepoint_damon_free(TracepointDamon *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(TracepointDamon *, tracepoint_damon_free);
int tracepoint_damon_id(const TracepointDamon *t);
/* Decodes a raw damon_aggregated record. -ENOENT for a record of another event, -EBADMSG for one too
 * short for its fields. */
int tracepoint_damon_decode(const TracepointDamon *t, const void *raw, size_t size, DamonRecord *ret);

/*
 * The names the kernel's trace output gives GFP flags, with their masks, from kmem/mm_page_alloc's print
 * format (its __print_flags() of gfp_flags), in the order the kernel tries them: the bits differ between
 * kernel versions, so they come from the running kernel, never from a table of ours. tracefs NULL: found
 * (tracefs.h). New array of *ret_n (gfp_names_free()); -ENOENT if the format names none, -errno if it
 * cannot be read or parsed.
 */
int tracepoint_gfp_names(const char *tracefs, GfpName **ret, size_t *ret_n);
