/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The user-symbol sessions' observer: a cached session (usym.h) names the frames of one process image, so
 * it is dropped when its process exits or execs (a TASK_COMM of the leader), never used past them.
 */

#include "heap.h"
#include "observer.h"
#include "usym.h"

/* An observer for usym (borrowed; it must outlive the observer), freed by its free hook. NULL on OOM.
 * warm_heap (borrowed, or NULL): names the frames of each of its images' first allocations as they come,
 * so that the files they pass through have their DWARF read while the program runs. */
EventObserver *user_symbols_observer_new(UserSymbols *usym, const Heap *warm_heap);
