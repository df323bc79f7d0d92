/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * MemoryTrim: gives the memory the daemon's tables let go of back to the system, once a second. The
 * page table's region arrays live in chunks of their own (pagemap.h): accounting_trim() returns the pages
 * no array uses any more, as a bulk free (a process exits holding gigabytes) leaves them. The rest of
 * the tables are in malloc's heap, where freed blocks stay until something trims it: when the heap's
 * free bytes (glibc's mallinfo2()) grew by 1 MiB since the last trim, malloc_trim() returns its free
 * pages, so that a heap whose free space only churns is not trimmed again. Elsewhere than glibc only the
 * first is done.
 */

#include "accounting.h"
#include "observer.h"

typedef struct MemoryTrim MemoryTrim;

/* accounting is borrowed. NULL on OOM. */
MemoryTrim *memory_trim_new(Accounting *accounting);
MemoryTrim *memory_trim_free(MemoryTrim *t);

/* The observer to register with the Manager (its tick trims); it frees t. */
EventObserver *memory_trim_observer(MemoryTrim *t);
