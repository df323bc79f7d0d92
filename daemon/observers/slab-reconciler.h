/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * SlabReconciler: under --slab, every SLAB_RECONCILE_INTERVAL_NSEC (from the first tick on) reads the
 * kernel's slab figures (/proc/slabinfo) and holds the core's slab objects against them
 * (accounting_slab_reconcile()): each cache's drift is then in the Slab reply and Status, a cache above
 * the kernel's count is flagged and brought back within it. The tick runs after the Manager flushed the
 * source, so the core has every event up to the read.
 */

#include "accounting.h"
#include "observer.h"

typedef struct SlabReconciler SlabReconciler;

/* path: the file to read ("/proc/slabinfo"), borrowed; accounting is borrowed. NULL on OOM. */
SlabReconciler *slab_reconciler_new(Accounting *accounting, const char *path);
SlabReconciler *slab_reconciler_free(SlabReconciler *r);

/* Reconciles now if accounting traces slab objects and the interval passed since the last (the tick's
 * work, for tests). */
void slab_reconciler_tick(SlabReconciler *r, uint64_t now_nsec);

/* The observer to register with the Manager (its tick reconciles); it frees r. */
EventObserver *slab_reconciler_observer(SlabReconciler *r);
