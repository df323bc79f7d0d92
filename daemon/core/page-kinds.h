/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * PageKinds: the distinct kinds of page allocation seen, each (order, GFP flags, migrate type, zone) once,
 * by a small id the charge cell keeps (chargeindex.h). A breakdown of pages by order, GFP flags, migrate
 * type or NUMA node is then a walk of the cells of what is asked about (the system, a task, a unit, a
 * module), summing exact counts, at no byte per page: a call chain nearly always allocates with the same
 * flags and order, so cells barely multiply.
 *
 * Zones are pfn ranges (the daemon reads them from /proc/zoneinfo and sets them when its source's page
 * keys are pfns); without them, or for a pfn in none, the zone is PAGE_ZONE_UNKNOWN. Bounded: past
 * PAGE_KINDS_MAX kinds a new one is PAGE_KIND_UNKNOWN, and counted.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gfpnames.h"
#include "keyindex.h"
#include "zoneinfo.h"

#define PAGE_KIND_UNKNOWN 0u            /* aggregated samples, and kinds past the bound: nothing known */
#define PAGE_KINDS_MAX 4096u
#define PAGE_ZONE_UNKNOWN 0xffffu
#define PAGE_ZONES_MAX 1024u
/* GFP flags kept: the kernel uses 26 bits today; a kind with a bit above this is PAGE_KIND_UNKNOWN. */
#define PAGE_KIND_GFP_BITS 40

typedef struct PageKind {
        uint64_t gfp_flags;
        uint8_t order;
        int8_t migrate_type;            /* -1: the source does not know */
        uint16_t zone;                  /* index into the zones, PAGE_ZONE_UNKNOWN */
        bool known;                     /* false for PAGE_KIND_UNKNOWN */
} PageKind;


typedef struct PageKinds {
        PageKind *kinds;                /* owned; [0] is PAGE_KIND_UNKNOWN */
        size_t n_kinds, n_allocated;
        KeyIndex index;                 /* packed kind -> id */
        ZoneRange *zones;               /* owned, sorted by start_pfn */
        size_t n_zones;
        size_t last_zone;               /* the zone the last lookup found: allocations cluster */
        uint64_t dropped;               /* allocations whose kind did not fit (bound or memory) */
        GfpName *gfp_names;             /* owned, in the order the kernel tries them; NULL: not known */
        size_t n_gfp_names;
} PageKinds;

int page_kinds_init(PageKinds *k);
void page_kinds_done(PageKinds *k);

/* The id of an allocation's kind, made on first sight; PAGE_KIND_UNKNOWN when it cannot be kept. */
uint32_t page_kinds_intern(PageKinds *k, uint64_t pfn, uint32_t order, uint64_t gfp_flags, int32_t migrate_type);
/* NULL for an id out of range. */
const PageKind *page_kinds_get(const PageKinds *k, uint32_t id);
size_t page_kinds_count(const PageKinds *k);

/* Takes the zones from the kernel's zoneinfo (path NULL: /proc/zoneinfo), for page keys that are pfns
 * (zoneinfo.h). -errno (the old ones stay). */
int page_kinds_read_zones(PageKinds *k, const char *zoneinfo, bool pfns);
/* Replaces the zones with a copy of n ranges (any order, not overlapping). -ENOMEM (the old ones stay). */
int page_kinds_set_zones(PageKinds *k, const ZoneRange *zones, size_t n);
/* NULL for PAGE_ZONE_UNKNOWN or out of range. */
const ZoneRange *page_kinds_zone(const PageKinds *k, uint16_t zone);

/* Takes names (n of them, composite masks first, as the kernel's __print_flags() tries them), freeing the
 * ones it had. */
void page_kinds_set_gfp_names(PageKinds *k, GfpName *names, size_t n);
/* gfp_names_format() with the names set. */
char *page_kinds_gfp_text(const PageKinds *k, uint64_t flags, char *buf, size_t size);
/* The kernel's name of a migrate type ("Unmovable", "Movable", "Reclaimable", "HighAtomic", as
 * /proc/pagetypeinfo has them; the enum has kept this order since Linux 4.4), "CMA/Isolate" for 4 (which
 * one depends on CONFIG_CMA), "Isolate" for 5, NULL for -1 and others. */
const char *page_kinds_migrate_type_name(int32_t migrate_type);
size_t page_kinds_memory_bytes(const PageKinds *k);
