/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * PageMap: which allocation owns each tracked block of physical pages.
 *
 * Maps the first pfn of an allocated block (2^order pages) to its owner: the task that allocated it, the
 * node of its call chain (for the accounting core a charge cell, which names the module and cgroup too)
 * and when. Open addressing with linear probing and backward-shift deletion (no tombstones); the table
 * grows by 1.5x at 75 % load.
 *
 * Memory: 16 bytes per slot, so 21.3 to 32 bytes per tracked block (load between 50 % and 75 % once
 * grown); a block of order > 0 shares one slot among its pages, so bytes per tracked page are at most 32.
 * No allocation per event except when the table grows (amortized, steady state allocates nothing).
 *
 * Limits: pfn < 2^40 (52-bit physical addresses with 4 KiB pages, the most x86-64 and arm64 define),
 * order < 31.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAGEMAP_PFN_MAX ((UINT64_C(1) << 40) - 1)       /* MS_PAGE_KEY_BITS of event.h */
#define PAGEMAP_ORDER_MAX 30
#define PAGEMAP_MODULE_MAX 2047

typedef struct PageOwner {
        uint32_t task;          /* index of the owning task (see usage.h) */
        uint32_t node;          /* the allocating call chain: for the accounting core, a charge cell
                                 * (chargeindex.h) that names the stack-tree leaf and the module */
        uint32_t stamp;         /* when it was allocated: pagemap_stamp(), kept to its low 19 bits */
} PageOwner;

/*
 * Allocation times ride in the slot's key, in 19 bits of 2^28 ns (268 ms) each: ages are their difference
 * modulo 2^19 (39 hours). So that no age wraps, pagemap_clamp_ages() holds every age at most
 * PAGEMAP_STAMP_AGE_MAX (19.5 hours), and must run at least every PAGEMAP_STAMP_AGE_MAX / 2 (the
 * accounting core runs it when pagemap_stamp_epoch() changes): an older block reads as 19.5 hours old.
 */
#define PAGEMAP_STAMP_SHIFT 28
#define PAGEMAP_STAMP_MASK ((UINT32_C(1) << 19) - 1)
#define PAGEMAP_STAMP_AGE_MAX (UINT32_C(1) << 18)

static inline uint32_t pagemap_stamp(uint64_t nsec) {
        return (uint32_t) (nsec >> PAGEMAP_STAMP_SHIFT) & PAGEMAP_STAMP_MASK;
}

/* Changes every PAGEMAP_STAMP_AGE_MAX / 2: when it does, ages must be clamped. */
static inline uint64_t pagemap_stamp_epoch(uint64_t nsec) {
        return nsec >> (PAGEMAP_STAMP_SHIFT + 17);
}

/* The age of a block allocated at stamp, at now_nsec, in ns (to 268 ms). */
static inline uint64_t pagemap_stamp_age_nsec(uint32_t stamp, uint64_t now_nsec) {
        return (uint64_t) ((pagemap_stamp(now_nsec) - stamp) & PAGEMAP_STAMP_MASK) << PAGEMAP_STAMP_SHIFT;
}

typedef struct PageMap PageMap;

/* Called for each piece of a release: n_pages pages are taken off owner. */
typedef void (*PageReleaseFn)(void *userdata, const PageOwner *owner, uint64_t n_pages);

/* Capacity is a hint in blocks (0 for a small default). Returns NULL on OOM. */
PageMap *pagemap_new(size_t capacity);
PageMap *pagemap_free(PageMap *m);

/*
 * A hint that pfn is inserted or released soon: starts loading the table's line for it, so that a caller
 * that knows its next events (a batch read from the kernel) overlaps the memory latency of several
 * lookups instead of waiting on each in turn. Changes nothing.
 */
void pagemap_prefetch(const PageMap *m, uint64_t pfn);

/*
 * Records that [pfn, pfn + 2^order) belongs to owner. If a block already starts at pfn (its free was
 * lost), the old block is released through release first and 1 is returned; 0 otherwise.
 * -ENOMEM if the table could not grow (nothing changed), -ERANGE for pfn or order out of range.
 */
int pagemap_insert(PageMap *m, uint64_t pfn, unsigned order, const PageOwner *owner,
                PageReleaseFn release, void *userdata);

/*
 * Releases the pages [pfn, pfn + 2^order) that are tracked, whatever their blocks: an exact block, part
 * of a larger block (which is split buddy-style so the rest stays owned), or several smaller blocks.
 * Calls release once per owner piece. Returns the number of pages released; the rest were untracked.
 * If a split cannot grow the table, the buddy it could not keep is released too (and counted in the
 * return value, which can then exceed 2^order): counts stay balanced either way.
 */
uint64_t pagemap_release(PageMap *m, uint64_t pfn, unsigned order, PageReleaseFn release, void *userdata);

/* Looks up the block that starts exactly at pfn. */
bool pagemap_lookup(const PageMap *m, uint64_t pfn, PageOwner *ret_owner, unsigned *ret_order);

/* Calls fn for every tracked block; fn may change the owner's task and node in place (not its stamp). */
void pagemap_foreach(PageMap *m, void (*fn)(void *userdata, uint64_t pfn, unsigned order, PageOwner *owner),
                void *userdata);

/* Holds every block's age at most PAGEMAP_STAMP_AGE_MAX: see PAGEMAP_STAMP_SHIFT. */
void pagemap_clamp_ages(PageMap *m, uint64_t now_nsec);

void pagemap_clear(PageMap *m);

size_t pagemap_blocks(const PageMap *m);
uint64_t pagemap_pages(const PageMap *m);
size_t pagemap_capacity(const PageMap *m);
size_t pagemap_memory_bytes(const PageMap *m);
