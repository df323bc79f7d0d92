/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chargeindex.h"
#include "macro.h"
#include "backshift.h"

#define NONE CHARGE_CELL_NONE
#define MODULES 2048u           /* module ids fit 11 bits (USAGE_MODULE_ID_MAX) */

/* Every cell is on two doubly linked lists, one code for both: the cells of its process, of its module. */
typedef enum CellList {
        CELL_LIST_PROCESS,
        CELL_LIST_MODULE,
        _CELL_LIST_MAX,
} CellList;

typedef struct CellLink {
        uint32_t prev, next;            /* cell indexes, NONE at either end */
} CellLink;

/* 40 bytes: pages, the sampled bit and module share a word (2^52 pages of 4 KiB are 16 EiB); the kind
 * takes what was the padding after the cgroup. */
typedef struct Cell {
        uint32_t process, leaf;         /* leaf: the stack node charged */
        uint64_t pages:CHARGE_CELL_PAGES_BITS;
        uint64_t sampled:1;             /* pages of aggregated samples, which no block names */
        uint64_t module:63 - CHARGE_CELL_PAGES_BITS;
        CellLink link[_CELL_LIST_MAX];  /* per CellList */
        uint32_t cgroup;                /* the cgroup the pages are charged to (units.h) */
        uint32_t kind;                  /* what kind of allocation (page-kinds.h) */
} Cell;

_Static_assert(sizeof(Cell) == 40, "a cell is five words");

struct ChargeIndex {
        Cell *cells;                    /* owned; free cells chain through link[CELL_LIST_PROCESS].next */
        size_t n_cells, n_allocated;
        uint32_t free_cell;

        uint32_t *slots;                /* owned: cell index per hash slot, NONE when empty */
        size_t capacity;                /* power of two, at most half full */

        uint32_t *process_head;         /* owned, per process index; grown on demand */
        size_t n_process_heads;
        uint32_t module_head[MODULES];

        size_t n_used;
};

static size_t home(const ChargeIndex *ci, uint32_t process, uint16_t module, uint32_t leaf, uint32_t cgroup,
                bool sampled, uint32_t kind) {
        uint64_t h = ((uint64_t) process << 32 | leaf) * UINT64_C(0x9E3779B97F4A7C15);
        h ^= ((uint64_t) cgroup << 12 | (uint64_t) sampled << 11 | module) * UINT64_C(0xC2B2AE3D27D4EB4F);
        h ^= (uint64_t) kind * UINT64_C(0x165667B19E3779F9);
        h ^= h >> 31;
        return (size_t) h & (ci->capacity - 1);
}

static uint32_t *alloc_slots(size_t capacity) {
        uint32_t *s = malloc(capacity * sizeof(uint32_t));
        if (s)
                memset(s, 0xff, capacity * sizeof(uint32_t));
        return s;
}

ChargeIndex *chargeindex_new(void) {
        _cleanup_free_ ChargeIndex *ci = calloc(1, sizeof(ChargeIndex));
        if (!ci)
                return NULL;
        ci->capacity = 1024;
        ci->slots = alloc_slots(ci->capacity);
        if (!ci->slots)
                return NULL;
        ci->free_cell = NONE;
        memset(ci->module_head, 0xff, sizeof(ci->module_head));
        return TAKE_PTR(ci);
}

ChargeIndex *chargeindex_free(ChargeIndex *ci) {
        if (!ci)
                return NULL;
        free(ci->cells);
        free(ci->slots);
        free(ci->process_head);
        free(ci);
        return NULL;
}

static bool cell_is(const Cell *x, uint32_t process, uint16_t module, uint32_t leaf, uint32_t cgroup,
                bool sampled, uint32_t kind) {
        return x->process == process && x->leaf == leaf && x->module == module && x->cgroup == cgroup &&
               x->sampled == sampled && x->kind == kind;
}

static size_t find(const ChargeIndex *ci, uint32_t process, uint16_t module, uint32_t leaf, uint32_t cgroup,
                bool sampled, uint32_t kind) {
        for (size_t i = home(ci, process, module, leaf, cgroup, sampled, kind);; i = (i + 1) & (ci->capacity - 1)) {
                uint32_t c = ci->slots[i];
                if (c == NONE || cell_is(&ci->cells[c], process, module, leaf, cgroup, sampled, kind))
                        return i;
        }
}

/* The slot of a cell in use. */
static size_t find_cell(const ChargeIndex *ci, const Cell *x) {
        return find(ci, x->process, x->module, x->leaf, x->cgroup, x->sampled, x->kind);
}

static int grow_slots(ChargeIndex *ci) {
        size_t capacity = ci->capacity * 2;
        uint32_t *s = alloc_slots(capacity), *old = ci->slots;
        if (!s)
                return -ENOMEM;

        size_t old_capacity = ci->capacity;
        ci->slots = s;
        ci->capacity = capacity;
        for (size_t i = 0; i < old_capacity; i++)
                if (old[i] != NONE) {
                        s[find_cell(ci, &ci->cells[old[i]])] = old[i];
                }
        free(old);
        return 0;
}

/* The head of x's list l: its process's or its module's. */
static uint32_t *list_head(ChargeIndex *ci, CellList l, const Cell *x) {
        return l == CELL_LIST_PROCESS ? &ci->process_head[x->process] : &ci->module_head[x->module];
}

/* Puts cell c first on its list l (the head for its process or module as they are now). */
static void list_push(ChargeIndex *ci, CellList l, uint32_t c) {
        Cell *x = &ci->cells[c];
        uint32_t *head = list_head(ci, l, x);

        x->link[l] = (CellLink) { .prev = NONE, .next = *head };
        if (*head != NONE)
                ci->cells[*head].link[l].prev = c;
        *head = c;
}

/* Takes cell c off its list l; call before changing what list_head() reads (module, process). */
static void list_unlink(ChargeIndex *ci, CellList l, uint32_t c) {
        const Cell *x = &ci->cells[c];

        if (x->link[l].prev != NONE)
                ci->cells[x->link[l].prev].link[l].next = x->link[l].next;
        else
                *list_head(ci, l, x) = x->link[l].next;
        if (x->link[l].next != NONE)
                ci->cells[x->link[l].next].link[l].prev = x->link[l].prev;
}

static int ensure_process_head(ChargeIndex *ci, uint32_t process) {
        if (process < ci->n_process_heads)
                return 0;
        size_t n = MAX((size_t) process + 1, ci->n_process_heads * 2);
        n = MAX(n, (size_t) 256);
        uint32_t *h = realloc(ci->process_head, n * sizeof(uint32_t));
        if (!h)
                return -ENOMEM;
        memset(h + ci->n_process_heads, 0xff, (n - ci->n_process_heads) * sizeof(uint32_t));
        ci->process_head = h;
        ci->n_process_heads = n;
        return 0;
}

static uint32_t new_cell(ChargeIndex *ci) {
        if (ci->free_cell != NONE) {
                uint32_t c = ci->free_cell;
                ci->free_cell = ci->cells[c].link[CELL_LIST_PROCESS].next;
                return c;
        }
        if (ci->n_cells == ci->n_allocated) {
                size_t n = MAX(ci->n_allocated * 2, (size_t) 1024);
                if (n >= NONE)
                        return NONE;
                Cell *c = realloc(ci->cells, n * sizeof(Cell));
                if (!c)
                        return NONE;
                ci->cells = c;
                ci->n_allocated = n;
        }
        return (uint32_t) ci->n_cells++;
}

uint32_t chargeindex_lookup(const ChargeIndex *ci, uint32_t process, uint16_t module, uint32_t node,
                uint32_t cgroup, bool sampled, uint32_t kind) {
        return ci->slots[find(ci, process, MIN(module, (uint16_t) (MODULES - 1)), node, cgroup, sampled, kind)];
}

/* Adds pages to a cell in use, unless it would hold more than a cell can. */
static uint32_t cell_add(ChargeIndex *ci, uint32_t c, uint64_t pages) {
        Cell *x = &ci->cells[c];

        if (pages > CHARGE_CELL_PAGES_MAX - x->pages)
                return NONE;
        x->pages += pages;
        return c;
}

uint32_t chargeindex_add(ChargeIndex *ci, uint32_t hint, uint32_t process, uint16_t module, uint32_t node,
                uint32_t cgroup, bool sampled, uint32_t kind, uint64_t pages) {
        module = MIN(module, (uint16_t) (MODULES - 1));
        if (pages > CHARGE_CELL_PAGES_MAX)
                return NONE;
        /* The hint is the caller's last cell: a task allocating through the same chain again skips the
         * hash probe. */
        if (hint < ci->n_cells && cell_is(&ci->cells[hint], process, module, node, cgroup, sampled, kind))
                return cell_add(ci, hint, pages);

        size_t i = find(ci, process, module, node, cgroup, sampled, kind);

        if (_likely_(ci->slots[i] != NONE))
                return cell_add(ci, ci->slots[i], pages);

        if ((ci->n_used + 1) * 2 > ci->capacity) {
                if (grow_slots(ci) < 0)
                        return NONE;
                i = find(ci, process, module, node, cgroup, sampled, kind);
        }
        if (ensure_process_head(ci, process) < 0)
                return NONE;
        uint32_t c = new_cell(ci);
        if (c == NONE)
                return NONE;

        ci->cells[c] = (Cell) {
                .process = process,
                .leaf = node,
                .module = module,
                .cgroup = cgroup,
                .sampled = sampled,
                .kind = kind,
                .pages = pages,
        };
        for (CellList l = 0; l < _CELL_LIST_MAX; l++)
                list_push(ci, l, c);
        ci->slots[i] = c;
        ci->n_used++;
        return c;
}

static void unlink_cell(ChargeIndex *ci, uint32_t c) {
        Cell *x = &ci->cells[c];

        for (CellList l = 0; l < _CELL_LIST_MAX; l++)
                list_unlink(ci, l, c);

        x->link[CELL_LIST_PROCESS].next = ci->free_cell;
        x->leaf = NONE; /* no key matches a free cell: a stale hint misses */
        ci->free_cell = c;
}

static size_t slot_home(const void *table, size_t i) {
        const ChargeIndex *ci = table;
        if (ci->slots[i] == NONE)
                return BACKSHIFT_EMPTY;
        const Cell *x = &ci->cells[ci->slots[i]];
        return home(ci, x->process, x->module, x->leaf, x->cgroup, x->sampled, x->kind);
}

static void slot_move(void *table, size_t to, size_t from) {
        ChargeIndex *ci = table;
        ci->slots[to] = ci->slots[from];
}

static void slot_clear(void *table, size_t i) {
        ChargeIndex *ci = table;
        ci->slots[i] = NONE;
}

/* Backward-shift deletion (backshift.h): lookups stay exact without tombstones. */
static void remove_slot(ChargeIndex *ci, size_t hole) {
        backshift_delete(ci, ci->capacity, hole, slot_home, slot_move, slot_clear);
}

void chargeindex_sub(ChargeIndex *ci, uint32_t cell, uint64_t pages) {
        Cell *x = &ci->cells[cell];

        if (x->pages > pages) {
                x->pages -= pages;
                return;
        }
        remove_slot(ci, find_cell(ci, x));
        unlink_cell(ci, cell);
        ci->n_used--;
}

uint64_t chargeindex_pages(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].pages;
}

uint16_t chargeindex_module(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].module;
}

int chargeindex_relabel(ChargeIndex *ci, uint32_t cell, uint16_t module) {
        Cell *x = &ci->cells[cell];

        module = MIN(module, (uint16_t) (MODULES - 1));
        if (module == x->module)
                return 0;
        if (ci->slots[find(ci, x->process, module, x->leaf, x->cgroup, x->sampled, x->kind)] != NONE)
                return -EEXIST;

        /* Out of the old key's slot and module list, into the new ones; the process list stays. */
        remove_slot(ci, find_cell(ci, x));
        list_unlink(ci, CELL_LIST_MODULE, cell);
        x->module = module;
        list_push(ci, CELL_LIST_MODULE, cell);
        ci->slots[find_cell(ci, x)] = cell;
        return 0;
}

void chargeindex_foreach_cell_of_process(const ChargeIndex *ci, uint32_t process, ChargeIndexCellFn fn,
                void *userdata) {
        if (process >= ci->n_process_heads)
                return;
        /* fn may relabel the cell (the process list does not change), not add or remove cells. */
        for (uint32_t c = ci->process_head[process]; c != NONE; c = ci->cells[c].link[CELL_LIST_PROCESS].next)
                fn(userdata, c);
}

uint32_t chargeindex_node(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].leaf;
}

uint32_t chargeindex_process(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].process;
}

uint32_t chargeindex_cgroup(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].cgroup;
}

bool chargeindex_sampled(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].sampled;
}

uint32_t chargeindex_kind(const ChargeIndex *ci, uint32_t cell) {
        return ci->cells[cell].kind;
}

void chargeindex_foreach_cell_of_module(const ChargeIndex *ci, uint16_t module, ChargeIndexCellFn fn, void *userdata) {
        if (module >= MODULES)
                return;
        for (uint32_t c = ci->module_head[module]; c != NONE; c = ci->cells[c].link[CELL_LIST_MODULE].next)
                fn(userdata, c);
}

void chargeindex_foreach_cell(const ChargeIndex *ci, ChargeIndexCellFn fn, void *userdata) {
        for (size_t c = 0; c < ci->n_cells; c++)
                if (ci->cells[c].leaf != NONE)
                        fn(userdata, (uint32_t) c);
}

void chargeindex_foreach_process(const ChargeIndex *ci, uint32_t process, ChargeIndexFn fn, void *userdata) {
        if (process >= ci->n_process_heads)
                return;
        for (uint32_t c = ci->process_head[process]; c != NONE; c = ci->cells[c].link[CELL_LIST_PROCESS].next)
                fn(userdata, ci->cells[c].leaf, ci->cells[c].pages);
}

void chargeindex_foreach_module(const ChargeIndex *ci, uint16_t module, ChargeIndexFn fn, void *userdata) {
        if (module >= MODULES)
                return;
        for (uint32_t c = ci->module_head[module]; c != NONE; c = ci->cells[c].link[CELL_LIST_MODULE].next)
                fn(userdata, ci->cells[c].leaf, ci->cells[c].pages);
}

void chargeindex_clear(ChargeIndex *ci) {
        memset(ci->slots, 0xff, ci->capacity * sizeof(uint32_t));
        if (ci->process_head)
                memset(ci->process_head, 0xff, ci->n_process_heads * sizeof(uint32_t));
        memset(ci->module_head, 0xff, sizeof(ci->module_head));
        ci->n_cells = 0;
        ci->n_used = 0;
        ci->free_cell = NONE;
}

size_t chargeindex_cell_bound(const ChargeIndex *ci) {
        return ci->n_cells;
}

size_t chargeindex_memory_bytes(const ChargeIndex *ci) {
        return sizeof(ChargeIndex) + ci->n_allocated * sizeof(Cell) + ci->capacity * sizeof(uint32_t) +
               ci->n_process_heads * sizeof(uint32_t);
}
