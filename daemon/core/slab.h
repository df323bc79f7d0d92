/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Slab objects (kmalloc, kmem_cache_alloc): every live object by pointer, and per call site and per cache
 * what is live (objects, bytes asked for and bytes handed out), what came and went, and the true peak of
 * live bytes. Owners (task, cgroup) and the allocation's stack are the caller's indexes, kept per object so
 * that a free releases what its allocation charged whoever frees it, and so that what is live can be told by
 * owner and stack. Bounded: past max_objects an allocation is dropped and
 * counted, never grown into.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"

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

/* One call site or one cache. */
typedef struct SlabGroup {
        uint64_t address;               /* a call site's kernel address; 0 for a cache */
        char *name;                     /* a cache's name; NULL for a call site */
        uint64_t live_objects, live_requested;
        Ledger live_allocated;          /* bytes handed out and not freed yet, and their true peak */
        uint64_t allocs, frees;
        uint64_t remote_frees;          /* freed on another CPU than the allocation's */
} SlabGroup;

typedef struct SlabStats {
        uint64_t live_objects, live_requested;
        Ledger live_allocated;
        uint64_t allocs, frees;
        uint64_t unknown_frees;         /* of pointers not live here: allocated before tracing, or dropped */
        uint64_t replaced;              /* an allocation found its pointer live: that free was lost */
        uint64_t dropped;               /* allocations not kept: the table was full, or out of memory */
} SlabStats;

/* The bytes an object is charged: what the allocator handed out (never less than asked for). */
static inline uint32_t slab_object_bytes(uint64_t requested, uint64_t allocated) {
        uint64_t n = allocated > requested ? allocated : requested;
        return n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

Slab *slab_new(size_t max_objects);
Slab *slab_free(Slab *s);

/* Records a live object. Returns 0, or -ENOSPC/-ENOMEM when it is dropped (counted). When the pointer was
 * live already (its free was lost) its old record ends and is copied to *ret_replaced, for the caller to
 * release what it charged; *ret_replaced's site is SLAB_NONE otherwise. */
int slab_alloc(Slab *s, uint64_t ptr, uint64_t call_site, const char *cache, uint32_t task, uint32_t cgroup,
               uint32_t stack, uint64_t requested, uint64_t allocated, uint32_t cpu, uint64_t now_nsec, SlabObject *ret_replaced);
/* Ends a live object: true with its record in *ret, false for a pointer not live here (counted). */
bool slab_release(Slab *s, uint64_t ptr, uint32_t cpu, SlabObject *ret);

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

/* Calls fn for every live object (in no order). */
void slab_foreach(const Slab *s, void (*fn)(void *userdata, uint64_t ptr, const SlabObject *o), void *userdata);

size_t slab_memory_bytes(const Slab *s);
