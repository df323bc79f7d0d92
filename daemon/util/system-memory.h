/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The machine's memory when tracing began, as the kernel reports it: what the tracked pages add to. In a
 * capture kernel (kdump) these are what a crashkernel= reservation must hold besides the pages tracing
 * sees (memstrackctl report --format crashkernel).
 */

#include <stdbool.h>
#include <stdint.h>

typedef struct SystemMemory {
        bool known;                     /* /proc/meminfo was read */
        uint64_t total_bytes;           /* MemTotal: RAM less what the kernel kept at boot */
        uint64_t free_bytes;            /* MemFree */
        uint64_t available_bytes;       /* MemAvailable (MemFree where the kernel has none) */
        /* The sum of /proc/iomem's "System RAM" ranges: the RAM this kernel was given (in a capture kernel,
         * about the crashkernel= reservation). 0 when unknown: /proc/iomem shows zeros without
         * CAP_SYS_ADMIN. */
        uint64_t system_ram_bytes;
        bool capture_kernel;            /* /proc/vmcore exists: this kernel boots to save a crashed one */
} SystemMemory;

/* Parses /proc/meminfo's text into ret's total, free and available bytes. -EINVAL without MemTotal and
 * MemFree. */
int system_memory_parse_meminfo(const char *text, SystemMemory *ret);

/* The bytes of the top-level "System RAM" ranges in /proc/iomem's text; 0 when there are none, or when
 * every range reads 00000000-00000000 (addresses hidden from this reader). */
uint64_t system_memory_parse_iomem(const char *text);

/* Reads proc_root's (NULL: "/proc") meminfo, iomem and vmcore. ret->known is false when meminfo could not
 * be read; the rest is what could. Never fails: the figures are an aid, not a condition of tracing. */
void system_memory_read(const char *proc_root, SystemMemory *ret);
