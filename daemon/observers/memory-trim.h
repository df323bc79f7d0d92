/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * MemoryTrim: gives the memory the core's tables let go of back to the system. Freed blocks stay in the
 * allocator's heap until something trims it, and a bulk free (a process exits holding gigabytes, so the
 * page table's regions go) frees them all over the heap, where no top-of-heap trim reaches: once a second
 * it compares the core's bytes with the most they were since the last trim, and after a drop of an eighth
 * (4 MiB at least) has malloc_trim() return the free pages.
 */

#include "accounting.h"
#include "observer.h"

typedef struct MemoryTrim MemoryTrim;

/* accounting is borrowed. NULL on OOM. */
MemoryTrim *memory_trim_new(Accounting *accounting);
MemoryTrim *memory_trim_free(MemoryTrim *t);

/* The observer to register with the Manager (its tick trims); it frees t. */
EventObserver *memory_trim_observer(MemoryTrim *t);
