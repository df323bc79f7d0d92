/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * View: the core as its readers (the query layer) see it. A reader asks for the charge cells of a scope
 * (every cell, a process's, a module's, a unit's) and gets each cell's figures at once, with the cell's
 * stack leaf in the global tree and its unit already looked up, instead of walking the charge index,
 * the units and the stack tree itself. Read only: nothing here changes a count.
 */

#include <stdbool.h>
#include <stdint.h>

#include "accounting.h"

typedef enum ViewScopeKind {
        VIEW_SCOPE_ALL,
        VIEW_SCOPE_PROCESS,             /* id: a process record (usage.h) */
        VIEW_SCOPE_MODULE,              /* id: a module id */
        VIEW_SCOPE_UNIT,                /* id: a unit record (units.h) */
} ViewScopeKind;

typedef struct ViewScope {
        ViewScopeKind kind;
        uint32_t id;
} ViewScope;

#define VIEW_SCOPE_EVERY ((ViewScope) { .kind = VIEW_SCOPE_ALL })

/* What one charge cell holds: pages of one (process, module, chain, cgroup, kind), blocks or samples. */
typedef struct ViewCell {
        uint32_t id;                    /* the cell (below chargeindex_cell_bound()) */
        uint32_t process;               /* the process record (maybe evicted since) */
        uint32_t node;                  /* the stack node charged: a process-tree leaf with per-process trees */
        uint32_t leaf;                  /* that leaf in the global tree */
        uint32_t cgroup;
        uint32_t unit;                  /* the cgroup's unit now */
        uint32_t kind;                  /* page-kinds.h id */
        uint16_t module;
        bool sampled;                   /* pages of aggregated samples, not blocks */
        uint64_t pages;
} ViewCell;

typedef void (*ViewCellFn)(void *userdata, const ViewCell *cell);

/* Calls fn with each cell of the scope: O(its cells) for a process or a module, a walk of every cell
 * for a unit or all. fn must not change the core. */
void view_foreach_cell(Accounting *a, ViewScope scope, ViewCellFn fn, void *userdata);
