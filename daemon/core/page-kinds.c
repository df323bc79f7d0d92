/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "page-kinds.h"

int page_kinds_init(PageKinds *k) {
        *k = (PageKinds) {};
        k->kinds = calloc(64, sizeof(PageKind));
        if (!k->kinds)
                return -ENOMEM;
        k->n_allocated = 64;
        k->n_kinds = 1;         /* [0]: unknown */
        return 0;
}

void page_kinds_done(PageKinds *k) {
        free(k->kinds);
        free(k->zones);
        gfp_names_free(k->gfp_names, k->n_gfp_names);
        key_index_done(&k->index);
        *k = (PageKinds) {};
}

static uint16_t zone_of(PageKinds *k, uint64_t pfn) {
        if (k->n_zones == 0)
                return PAGE_ZONE_UNKNOWN;
        const ZoneRange *z = &k->zones[k->last_zone];
        if (_likely_(pfn >= z->start_pfn && pfn < z->end_pfn))
                return (uint16_t) k->last_zone;
        /* The last zone starting at or below pfn. */
        size_t lo = SORTED_COUNT_AT_MOST(k->zones, k->n_zones, start_pfn, pfn);
        if (lo == 0 || pfn >= k->zones[lo - 1].end_pfn)
                return PAGE_ZONE_UNKNOWN;
        k->last_zone = lo - 1;
        return (uint16_t) (lo - 1);
}

uint32_t page_kinds_intern(PageKinds *k, uint64_t pfn, uint32_t order, uint64_t gfp_flags, int32_t migrate_type) {
        uint16_t zone = zone_of(k, pfn);

        if (_unlikely_(gfp_flags >> PAGE_KIND_GFP_BITS || order > 31 || migrate_type < -1 || migrate_type > 14)) {
                k->dropped++;
                return PAGE_KIND_UNKNOWN;
        }
        /* One 64-bit key: flags, order, migrate type + 1 and zone side by side. */
        uint64_t key = gfp_flags << 23 | (uint64_t) order << 18 |
                       (uint64_t) (migrate_type + 1) << 14 | (zone & 0x3fff);
        uint32_t id = key_index_get(&k->index, key);
        if (_likely_(id != KEY_INDEX_NONE))
                return id;

        if (k->n_kinds >= PAGE_KINDS_MAX ||
            greedy_realloc(&k->kinds, &k->n_allocated, k->n_kinds + 1, sizeof(PageKind), 64) < 0 ||
            key_index_put(&k->index, key, (uint32_t) k->n_kinds) < 0) {
                k->dropped++;
                return PAGE_KIND_UNKNOWN;
        }
        k->kinds[k->n_kinds] = (PageKind) {
                .gfp_flags = gfp_flags,
                .order = (uint8_t) order,
                .migrate_type = (int8_t) migrate_type,
                .zone = zone,
                .known = true,
        };
        return (uint32_t) k->n_kinds++;
}

const PageKind *page_kinds_get(const PageKinds *k, uint32_t id) {
        return id < k->n_kinds ? &k->kinds[id] : NULL;
}

size_t page_kinds_count(const PageKinds *k) {
        return k->n_kinds;
}

static int zone_compare(const void *a, const void *b) {
        const ZoneRange *x = a, *y = b;
        return x->start_pfn < y->start_pfn ? -1 : x->start_pfn > y->start_pfn;
}

int page_kinds_read_zones(PageKinds *k, const char *zoneinfo, bool pfns) {
        _cleanup_free_ ZoneRange *zones = NULL;
        size_t n = 0;

        int r = zoneinfo_page_zones(zoneinfo, pfns, &zones, &n);
        if (r < 0)
                return r;
        return page_kinds_set_zones(k, zones, n);
}

int page_kinds_set_zones(PageKinds *k, const ZoneRange *zones, size_t n) {
        ZoneRange *copy = NULL;

        n = MIN(n, (size_t) PAGE_ZONES_MAX);
        if (n > 0) {
                copy = malloc(n * sizeof(ZoneRange));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, zones, n * sizeof(ZoneRange));
                qsort(copy, n, sizeof(ZoneRange), zone_compare);
        }
        free(k->zones);
        k->zones = copy;
        k->n_zones = n;
        k->last_zone = 0;
        return 0;
}

const ZoneRange *page_kinds_zone(const PageKinds *k, uint16_t zone) {
        return zone < k->n_zones ? &k->zones[zone] : NULL;
}

void page_kinds_set_gfp_names(PageKinds *k, GfpName *names, size_t n) {
        gfp_names_free(k->gfp_names, k->n_gfp_names);
        k->gfp_names = names;
        k->n_gfp_names = names ? n : 0;
}

char *page_kinds_gfp_text(const PageKinds *k, uint64_t flags, char *buf, size_t size) {
        return gfp_names_format(k->gfp_names, k->n_gfp_names, flags, buf, size);
}

const char *page_kinds_migrate_type_name(int32_t migrate_type) {
        static const char *const names[] = { "Unmovable", "Movable", "Reclaimable", "HighAtomic", "CMA/Isolate",
                                             "Isolate" };
        return migrate_type >= 0 && (size_t) migrate_type < ELEMENTSOF(names) ? names[migrate_type] : NULL;
}

size_t page_kinds_memory_bytes(const PageKinds *k) {
        return k->n_allocated * sizeof(PageKind) + k->n_zones * sizeof(ZoneRange) + key_index_memory_bytes(&k->index);
}
