/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Zones: which NUMA node and memory zone each physical frame number is in, from /proc/zoneinfo ("Node 0,
 * zone DMA32" sections with "spanned" and "start_pfn"), and how many nodes the machine has
 * (/sys/devices/system/node). For breakdowns of pages by node and zone; read once at start (memory
 * hot-plug moves zone boundaries, which a restart picks up).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZONE_NAME_MAX 16

typedef struct ZoneRange {
        uint64_t start_pfn, end_pfn;    /* [start, end) */
        int32_t node;
        char name[ZONE_NAME_MAX];       /* "DMA32", "Normal", ...; "" for a zone not known */
} ZoneRange;

/* The zones that span pages in a zoneinfo text, in its order, into a new array (*ret_n of them; NULL and
 * 0 for none). -ENOMEM; sections it cannot read are skipped. */
int zoneinfo_parse(const char *text, ZoneRange **ret, size_t *ret_n);
/* zoneinfo_parse() of a file (NULL: /proc/zoneinfo). -errno if it cannot be read. */
int zoneinfo_read(const char *path, ZoneRange **ret, size_t *ret_n);
/*
 * The zones pages can be told by: those of zoneinfo_read(path) when page keys are pfns; else, on a machine of
 * one node, one range of every key on node 0 with no zone name (any key is on the one node); else none.
 * New array (NULL and 0 for none). -ENOMEM; a file that cannot be read gives none.
 */
int zoneinfo_page_zones(const char *path, bool pfns, ZoneRange **ret, size_t *ret_n);

/* The NUMA nodes below a sysfs node directory (NULL: /sys/devices/system/node): its nodeN entries.
 * -errno if it cannot be read. */
int zoneinfo_node_count(const char *dir, unsigned *ret);
