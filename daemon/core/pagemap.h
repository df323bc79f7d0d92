/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * PageMap: which allocation owns each tracked block of physical pages.
 *
 * Maps the first pfn of an allocated block (2^order pages) to its owner: the task that allocated it, the
 * node of its call chain (for the accounting core a charge cell, which names the module and cgroup too)
 * and when. Indexed by pfn in regions of 256 pfns (1 MiB of RAM), each held in the form its number of
 * blocks makes cheapest (pagemap.c): one block inline in the region's directory slot, a few in a sorted
 * array of 8-byte entries, many in 256 entries indexed by pfn.
 *
 * Memory, per tracked block: 8 bytes in a region of more than one block (a dense region costs 2 KiB
 * whatever it holds, so 8 bytes per page once full; a sparse one 8 bytes per block plus at most 15 of
 * slack), 21 to 32 bytes for a block alone in its region (its 16-byte directory slot, the directory kept
 * between 50 % and 75 % full as it grows; down to 25 % after frees, when it shrinks). A map that keeps
 * tasks (pagemap_new() without a PageTaskFn) adds 4 bytes per block of a region array. Growth never
 * copies the whole map: a region changes form alone, and the directory is 64 tables that each grow by
 * 1.5x on their own. Regions that empty are freed at once; their arrays live in chunks mapped apart
 * from the heap (chunkpool.h), whose pages pagemap_trim() gives back.
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
 * Allocation times ride in the entry, in 19 bits of 2^28 ns (268 ms) each: ages are their difference
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

/*
 * The task that owns the blocks of a node, for a map that does not keep tasks: when every block's task
 * follows from its node (the accounting core's charge cell names its process, which is the owning task
 * unless threads have records of their own), the map stores none and asks this instead.
 */
typedef uint32_t (*PageTaskFn)(void *userdata, uint32_t node);

/*
 * Capacity is a hint in blocks (0 for a small default). task_of NULL: the map keeps each block's task
 * (4 more bytes a block); else it keeps none, owners read back have task_of(userdata, node) as their
 * task, and pagemap_foreach() cannot change a task. Returns NULL on OOM.
 */
PageMap *pagemap_new(size_t capacity, PageTaskFn task_of, void *userdata);
PageMap *pagemap_free(PageMap *m);

/*
 * A hint that pfn is inserted or released soon: starts loading the table's lines for it, so that a caller
 * that knows its next events (a batch read from the kernel) overlaps the memory latency of several
 * lookups instead of waiting on each in turn. A lookup reads a directory slot and then an entry: the
 * slot is loaded at once, the entry at the fourth hint after, so hints pay most when given at least
 * eight events ahead. Changes no block.
 */
void pagemap_prefetch(PageMap *m, uint64_t pfn);

/*
 * Records that [pfn, pfn + 2^order) belongs to owner. If a block already starts at pfn (its free was
 * lost), the old block is released through release first and 1 is returned; 0 otherwise.
 * -ENOMEM if the table could not grow (nothing changed but that release), -ERANGE for pfn or order out
 * of range.
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

/* Calls fn for every tracked block; fn may change the owner's node in place, and its task if the map keeps
 * tasks (not its stamp). */
void pagemap_foreach(PageMap *m, void (*fn)(void *userdata, uint64_t pfn, unsigned order, PageOwner *owner),
                void *userdata);

/* Holds every block's age at most PAGEMAP_STAMP_AGE_MAX: see PAGEMAP_STAMP_SHIFT. */
void pagemap_clamp_ages(PageMap *m, uint64_t now_nsec);

/* Forgets every block, and gives back the memory they took. */
void pagemap_clear(PageMap *m);
/* Gives the pages of freed region arrays back to the system (a system call per run of them: not for the
 * event path). Returns the pages given back. */
size_t pagemap_trim(PageMap *m);

size_t pagemap_blocks(const PageMap *m);
uint64_t pagemap_pages(const PageMap *m);
/* The blocks the map has room for without allocating: directory slots and region entries. */
size_t pagemap_capacity(const PageMap *m);
size_t pagemap_memory_bytes(const PageMap *m);

/* How its blocks are held, for measurements: regions by form, and blocks in each. */
typedef struct PageMapShape {
        size_t inline_regions;          /* = their blocks */
        size_t sparse_regions, sparse_blocks;
        size_t dense_regions, dense_blocks;
} PageMapShape;
void pagemap_shape(const PageMap *m, PageMapShape *ret);
