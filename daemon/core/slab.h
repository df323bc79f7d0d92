/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Slab objects (kmalloc, kmem_cache_alloc): every live object by pointer, and per call site and per cache
 * what is live (objects, bytes asked for and bytes handed out), what came and went, and the true peak of
 * live bytes. Owners (task, cgroup) and the allocation's stack are the caller's indexes, kept per object so
 * that a free releases what its allocation charged whoever frees it, and so that what is live can be told by
 * owner and stack. Bounded: past max_objects an allocation is dropped and
 * counted, never grown into.
 *
 * Objects of a cache the tracepoint does not name (kmalloc's; every cache's before Linux 6.0) are grouped
 * by their size as "[size-N]", N the bytes the allocator handed out, which is the size of the cache they
 * came from.
 *
 * Not every free fires a tracepoint: the kernel frees kfree_rcu() batches, RCU sheaves and bulk frees
 * without one. Such an object stays live here until its pointer is allocated again, which ends it as a
 * lost free. A call site or cache whose objects come back that way is taken to have frees that are not
 * visible (slab_site_frees_visible()), so that views say its counts are an upper bound and leak verdicts
 * leave it out. slab_reconcile() holds every cache against the kernel's own count of its active objects
 * (/proc/slabinfo).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "stats.h"
#include "slabinfo.h"

#define SLAB_NONE UINT32_MAX

typedef struct Slab Slab;

typedef struct SlabObject {
        uint32_t site, cache;           /* slab_site(), slab_cache() indexes; cache SLAB_NONE: unnamed */
        uint32_t task, cgroup;          /* the caller's, as given to slab_alloc() */
        uint32_t stack;                 /* the caller's allocation stack (a leaf of its own stack tree) */
        uint32_t requested, allocated;  /* bytes */
        uint32_t cpu;
        uint64_t time_nsec;             /* of the allocation */
} SlabObject;

/*
 * A lost free is an allocation that found its pointer live. A kernel that frees through the tracepoints
 * loses none; one that frees a cache behind them loses most, or some (a few paths of many). A group's frees
 * count as visible only while fewer than SLAB_INVISIBLE_BASIS_POINTS in 10,000 of its frees known to have
 * happened (seen, and lost) were lost, or fewer than SLAB_INVISIBLE_MIN_LOST in all. Records the source
 * lost (slab_note_lost()) lose frees too, anywhere: the share allowed grows by twice the share of events
 * lost, so that a loss does not read as a kernel's hidden frees (Status counts it).
 */
#define SLAB_INVISIBLE_MIN_LOST 4
#define SLAB_INVISIBLE_BASIS_POINTS 1

typedef enum SlabGroupFlags {
        SLAB_DRIFTING        = 1 << 0,  /* a cache that held more live objects than the kernel counts
                                         * active at the last reconciliation */
        SLAB_SIZE_CLASS      = 1 << 1,  /* "[size-N]": objects of unnamed caches of N bytes */
} SlabGroupFlags;

/* A cache's figures from /proc/slabinfo (slab_reconcile()). */
typedef struct SlabKernelFigures {
        bool known;                     /* the last reconciliation had a figure for it */
        bool seen;                      /* some reconciliation did: start_active_objects is set */
        uint64_t active_objects;        /* at the last reconciliation: for a size class, of every cache of
                                         * that size */
        uint64_t start_active_objects;  /* at the first reconciliation after tracing began; 0 for a cache
                                         * the kernel created since */
        uint64_t bound;                 /* the most live objects memstrack may count for it: active_objects,
                                         * less what named caches of that size hold for a size class */
        uint64_t slack;                 /* objects allowed above the bound: one slab, for what changed
                                         * between the last events and the read */
        uint64_t object_size;           /* bytes per object, the kernel's */
        uint64_t live_objects, allocs;  /* memstrack's own, right after the reconciliation */
} SlabKernelFigures;

/* One call site or one cache. */
typedef struct SlabGroup {
        uint64_t address;               /* a call site's kernel address; 0 for a cache */
        char *name;                     /* a cache's name; NULL for a call site */
        uint32_t cache;                 /* a call site: the cache of its last allocation, SLAB_NONE: none */
        unsigned flags;                 /* SlabGroupFlags */
        uint64_t live_objects, live_requested;
        Ledger live_allocated;          /* bytes handed out and not freed yet, and their true peak */
        uint64_t allocs, frees;
        uint64_t remote_frees;          /* freed on another CPU than the allocation's */
        uint64_t lost_frees;            /* allocations that found one of its objects live */
        uint64_t trimmed;               /* objects dropped to stay within the kernel's figures (caches) */
        SlabKernelFigures kernel;       /* caches */
} SlabGroup;

/* How often memstrackd reconciles (observers/slab-reconciler.c). */
#define SLAB_RECONCILE_INTERVAL_NSEC UINT64_C(2000000000)

/* The bytes an object is charged: what the allocator handed out (never less than asked for). */
static inline uint32_t slab_object_bytes(uint64_t requested, uint64_t allocated) {
        uint64_t n = allocated > requested ? allocated : requested;
        return n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

Slab *slab_new(size_t max_objects);
Slab *slab_free(Slab *s);
/* Changes the bound on live objects (the memory budget, budget.h); objects already live stay. */
void slab_set_max_objects(Slab *s, size_t max_objects);

/* Records a live object. Returns 0, or -ENOSPC/-ENOMEM when it is dropped (counted). When the pointer was
 * live already (its free was lost) its old record ends and is copied to *ret_replaced, for the caller to
 * release what it charged; *ret_replaced's site is SLAB_NONE otherwise. */
int slab_alloc(Slab *s, uint64_t ptr, uint64_t call_site, const char *cache, uint32_t task, uint32_t cgroup,
               uint32_t stack, uint64_t requested, uint64_t allocated, uint32_t cpu, uint64_t now_nsec, SlabObject *ret_replaced);
/* Ends a live object: true with its record in *ret, false for a pointer not live here (counted). */
bool slab_release(Slab *s, uint64_t ptr, uint32_t cpu, SlabObject *ret);

/* Whether a call site's or cache's frees are visible (above), and for a call site its cache's too, unless
 * that cache is a size class and the call site never lost a free itself. */
bool slab_site_frees_visible(const Slab *s, uint32_t site);
bool slab_cache_frees_visible(const Slab *s, uint32_t cache);
/* The source lost n records (of any kind). */
void slab_note_lost(Slab *s, uint64_t n);

/* Called for each object slab_reconcile() drops, with its record, so that the caller releases what its
 * allocation charged. */
typedef void (*SlabDropFn)(void *userdata, const SlabObject *o);

/*
 * Holds every cache against the kernel's figures, read at now_nsec (after the events up to then were
 * applied): a cache (or size class) with more live objects than its bound plus slack is marked
 * SLAB_DRIFTING and its oldest live objects above that are dropped, since at least that many of them were
 * freed unseen; a cache seen before and gone from info was destroyed, and its live objects are dropped.
 * Caches named in info and not known yet are added (with no objects), so that their count at the first
 * reconciliation is their start. 0 or -ENOMEM (counts partly updated, nothing lost).
 */
int slab_reconcile(Slab *s, const SlabInfo *info, uint64_t now_nsec, SlabDropFn drop, void *userdata);
/* A reconciliation could not read the kernel's figures: error (-errno) is kept for Status. */
void slab_reconcile_failed(Slab *s, int error, uint64_t now_nsec);
const SlabReconcileStats *slab_reconcile_stats(const Slab *s);

/* Peaks become current values (Reset). */
void slab_reset_peaks(Slab *s);
/* Forgets every live object and every count (Reset of all): call sites and caches keep their indexes and
 * names. Allocates nothing, so it cannot fail. */
void slab_clear(Slab *s);

const SlabStats *slab_stats(const Slab *s);
size_t slab_site_count(const Slab *s);
const SlabGroup *slab_site(const Slab *s, uint32_t site);
size_t slab_cache_count(const Slab *s);
const SlabGroup *slab_cache(const Slab *s, uint32_t cache);
/* The cache group of this name ("[size-N]" for a size class), or SLAB_NONE. */
uint32_t slab_cache_find(const Slab *s, const char *name);

/* Calls fn for every live object (in no order). */
void slab_foreach(const Slab *s, void (*fn)(void *userdata, uint64_t ptr, const SlabObject *o), void *userdata);

size_t slab_memory_bytes(const Slab *s);
