/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * GFP flags by name, as the kernel's trace output prints them: the names and masks come from the running
 * kernel (the print format of kmem/mm_page_alloc, read by sources/tracepoint.c), since the bits change
 * between kernel versions.
 */

#include <stddef.h>
#include <stdint.h>

/* A name the kernel gives GFP flags in trace output, and the mask it stands for. */
typedef struct GfpName {
        uint64_t mask;
        char *name;                     /* owned */
} GfpName;

void gfp_names_free(GfpName *names, size_t n);

/*
 * flags as the kernel's trace_print_flags_seq() prints them with names (n of them, composite masks first):
 * each name whose whole mask is set, in order, takes its bits, "|" between them; what is left in hex
 * ("GFP_KERNEL|0x1000000"); "none" for 0; all hex without names. perf kmem shows the same names before it
 * abbreviates them. Returns buf, cut to size.
 */
char *gfp_names_format(const GfpName *names, size_t n, uint64_t flags, char *buf, size_t size);
