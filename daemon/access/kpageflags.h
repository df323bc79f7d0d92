/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * KpageflagsSampler: the LRU's flags of tracked pages from /proc/kpageflags (8 bytes per pfn), for kernels
 * without DAMON. Each round takes at most a budget of tracked blocks, the same ones round after round
 * while they live (chosen by a hash of their pfn), reads the flags of each block's first page (a huge
 * page's are its folio's) in 4 KiB reads of neighbouring pfns, and makes a region of the block:
 *
 *   - on an LRU list, referenced or active: used since the LRU last aged it, idle 0;
 *   - on an LRU list, neither: idle since it was last seen referenced or active, or since its allocation;
 *   - not on an LRU list (kernel memory: slab, page tables; a page being moved), or free again (its free
 *     was lost): no region, its pages unknown.
 *
 * What the flags can tell is the kernel's: an anonymous page is marked referenced or active only when
 * reclaim scans it (its accesses set the page table's accessed bit, not the page's flags), so without
 * memory pressure, or without swap to reclaim it to, a used anonymous page reads idle like an unused one.
 * File pages are marked on every read and write through the page cache. Where the kernel has idle page
 * tracking (/sys/kernel/mm/page_idle) it would tell more; it is not used (see docs/protocol.md, Cold).
 *
 * Memory: 16 bytes per sampled block (the last time each was seen used), at most the budget.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coldness.h"
#include "macro.h"
#include "stats.h"
#include "view.h"

#define KPAGEFLAGS_BUDGET_DEFAULT 65536

typedef struct KpageflagsSampler KpageflagsSampler;

/* path NULL: /proc/kpageflags, opened now. -errno with *reterr_reason (if not NULL) a static sentence. */
int kpageflags_sampler_new(const char *path, size_t budget, KpageflagsSampler **ret, const char **reterr_reason);
KpageflagsSampler *kpageflags_sampler_free(KpageflagsSampler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(KpageflagsSampler *, kpageflags_sampler_free);

/* One round's regions of a's tracked blocks at now_nsec (CLOCK_MONOTONIC), in the source's page keys
 * (pfn + key_offset, modulo 2^MS_PAGE_KEY_BITS), sorted, into *regions (grown as needed). Returns how
 * many; -ENOMEM, -errno of a read. Counts into stats (sampled_pages, sample_budget, rejected_records:
 * blocks found free). */
ssize_t kpageflags_sample(KpageflagsSampler *s, Accounting *a, uint64_t now_nsec, uint64_t key_offset,
                AccessRegion **regions, size_t *allocated, ColdSourceStats *stats);
