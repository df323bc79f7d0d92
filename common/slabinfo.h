/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * /proc/slabinfo (version 2.x, with or without the statistics columns of SLAB_DEBUG kernels): the slab
 * caches, their objects and the pages their slabs take. memstrack's proc_slab_static report prints it when
 * the report renders (the machine's state then, not a traced count); memstrackd reads it periodically to
 * hold its own slab counts against the kernel's (slab-reconciler).
 */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef struct SlabCache {
        char *name;             /* owned; the kernel's bytes */
        uint64_t active_objects, objects, object_size, objects_per_slab, pages_per_slab;
        uint64_t active_slabs, slabs;
        size_t index;           /* line order in the file, for stable sorting */
} SlabCache;

typedef struct SlabInfo {
        SlabCache *caches;      /* owned, in file order */
        size_t n_caches;
        size_t n_bad_lines;     /* cache lines not understood (skipped) */
        unsigned first_bad_line; /* line number of the first of them, 0 if none */
} SlabInfo;

/* Reads path. 0 with a new SlabInfo in *ret; -errno from opening or reading, -EBADMSG when the first line
 * is not "slabinfo - version: 2.x", -ENOMEM. */
int slabinfo_read(const char *path, SlabInfo **ret);
SlabInfo *slabinfo_free(SlabInfo *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlabInfo *, slabinfo_free);

/* Pages held by a cache's slabs: slabs * pages per slab. */
uint64_t slab_cache_pages(const SlabCache *c);
