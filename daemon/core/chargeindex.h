/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ChargeIndex: current pages per (process, module, stack leaf, cgroup, kind), kept on every charge and release,
 * and listed per process, per module or per cgroup. The cgroup is part of the key so that the pages a
 * task allocated before it moved to another cgroup stay charged to the old one: a page owner names its
 * cell, so it costs no byte per page. A stack view filtered by task or module is built from its cells, so
 * it costs what the answer holds instead of a walk of the page table.
 *
 * Pages of aggregated samples (no page-table entry names them) are kept in cells of their own, "sampled",
 * beside the cells of blocks with the same key: a negative sample takes back sampled pages only, never
 * pages a block still names (whose free would find them gone).
 *
 * One cell per key holding pages: a cell whose pages go to zero is removed. Cells of one process and
 * of one module are chained in two doubly linked lists. Lookups hash the triple (open addressing, backward
 * shift deletion); processes are task indices (usage.h), modules module ids (< 2048), nodes the stack
 * leaves pages are charged to (stacktree.h), cgroups indices of units.h, kinds ids of page-kinds.h (order, GFP
 * flags, migrate type, zone: a chain nearly always allocates with the same, so they barely add cells, and a
 * breakdown by any of them is a walk of cells). Page owners name their cell, so a release costs no lookup
 * and an allocation one probe.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ChargeIndex ChargeIndex;

ChargeIndex *chargeindex_new(void);
ChargeIndex *chargeindex_free(ChargeIndex *ci);

#define CHARGE_CELL_NONE UINT32_MAX
/* The most pages a cell holds (52 bits: all but one of the pages a 64-bit machine can have, and far more
 * than the 2^40 pfns there are): the caller keeps every cell below it (the accounting core holds its whole
 * total there). */
#define CHARGE_CELL_PAGES_BITS 52
#define CHARGE_CELL_PAGES_MAX ((UINT64_C(1) << CHARGE_CELL_PAGES_BITS) - 1)

/*
 * Adds pages to the cell of (process, module, node, cgroup, sampled, kind), creating it, and returns its id:
 * stable while it holds pages, so a page owner can name it and its release needs no lookup. hint is a
 * cell id that may be it (any value, e.g. the caller's last result or CHARGE_CELL_NONE): checked, then
 * used without a hash probe. CHARGE_CELL_NONE on OOM, or if the cell would pass CHARGE_CELL_PAGES_MAX.
 */
uint32_t chargeindex_add(ChargeIndex *ci, uint32_t hint, uint32_t process, uint16_t module, uint32_t node,
                uint32_t cgroup, bool sampled, uint32_t kind, uint64_t pages);
/* The cell of (process, module, node, cgroup, sampled, kind), or CHARGE_CELL_NONE if it holds no pages. */
uint32_t chargeindex_lookup(const ChargeIndex *ci, uint32_t process, uint16_t module, uint32_t node,
                uint32_t cgroup, bool sampled, uint32_t kind);
/* Takes pages off a cell (clamped at what it holds), removing it at zero. */
void chargeindex_sub(ChargeIndex *ci, uint32_t cell, uint64_t pages);
/* What a cell is for. */
uint32_t chargeindex_node(const ChargeIndex *ci, uint32_t cell);
uint32_t chargeindex_process(const ChargeIndex *ci, uint32_t cell);
uint32_t chargeindex_cgroup(const ChargeIndex *ci, uint32_t cell);
bool chargeindex_sampled(const ChargeIndex *ci, uint32_t cell);
uint32_t chargeindex_kind(const ChargeIndex *ci, uint32_t cell);
uint64_t chargeindex_pages(const ChargeIndex *ci, uint32_t cell);
/* The module a cell's pages are charged to: page owners follow their cell when it is relabeled. */
uint16_t chargeindex_module(const ChargeIndex *ci, uint32_t cell);
/* Moves a cell, with every block naming it, to another module. -EEXIST if that module already has a cell
 * for the same process, node, cgroup and kind (nothing changes then). */
int chargeindex_relabel(ChargeIndex *ci, uint32_t cell, uint16_t module);

typedef void (*ChargeIndexCellFn)(void *userdata, uint32_t cell);
/* Calls fn with each cell id of the process; fn may relabel it. */
void chargeindex_foreach_cell_of_process(const ChargeIndex *ci, uint32_t process, ChargeIndexCellFn fn,
                void *userdata);

/* Cells of a module, and every cell: for queries (breakdowns, a unit's holders), never the event path. */
void chargeindex_foreach_cell_of_module(const ChargeIndex *ci, uint16_t module, ChargeIndexCellFn fn, void *userdata);
void chargeindex_foreach_cell(const ChargeIndex *ci, ChargeIndexCellFn fn, void *userdata);

typedef void (*ChargeIndexFn)(void *userdata, uint32_t node, uint64_t pages);
/* Calls fn with the node and pages of each cell of the process (or module): O(its cells). */
void chargeindex_foreach_process(const ChargeIndex *ci, uint32_t process, ChargeIndexFn fn, void *userdata);
void chargeindex_foreach_module(const ChargeIndex *ci, uint16_t module, ChargeIndexFn fn, void *userdata);


void chargeindex_clear(ChargeIndex *ci);
/* Every cell id is below it: for arrays indexed by cell. */
size_t chargeindex_cell_bound(const ChargeIndex *ci);
size_t chargeindex_memory_bytes(const ChargeIndex *ci);
