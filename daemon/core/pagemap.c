/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backshift.h"
#include "chunkpool.h"
#include "macro.h"
#include "pagemap.h"

/*
 * Regions of REGION_PAGES aligned pfns. A block belongs to the region of the pfn it starts at (it may
 * reach into the next ones: a block of order 8 or more covers whole regions, and the map takes unaligned
 * blocks too), and each region with blocks holds them in one of three forms:
 *
 *   inline  one block, in the region's directory slot itself: key = pfn << 24 | order << 19 | stamp,
 *           value = task << 32 | node;
 *   sparse  2 to DENSE_ABOVE blocks in a sorted array of entries (below), in the order of their pfns,
 *           sized in steps of a quarter (array_capacities[]) and shrunk when half empty;
 *   dense   more: REGION_PAGES entries indexed by the pfn's offset in the region, ENTRY_EMPTY where no
 *           block starts; back to sparse below SPARSE_BELOW blocks (the gap keeps a region that hovers
 *           around one bound from changing form on every event).
 *
 * An entry is 8 bytes: offset in the region (8 bits) << 56 | order (5) << 51 | stamp (19) << 32 | node.
 * Sorting entries as numbers sorts them by offset. A map that keeps tasks puts an array of as many
 * 32-bit tasks right after a region's entries.
 *
 * The directory finds a region's slot from its number (pfn >> REGION_BITS): DIR_TABLES open-addressing
 * tables of 16-byte slots (linear probing, backward-shift deletion), the table chosen by the top bits of
 * the region's hash, each grown by 1.5x at 75 % and halved at 25 % on its own, so that a resize copies a
 * 64th of the directory. A slot that points to an array has the order ORDER_ARRAY, which no block has,
 * and keeps the array's block count, capacity and form in the bits of the stamp: key = region << 32 |
 * ORDER_ARRAY << 19 | dense << 18 | capacity << 9 | blocks; value = the array. An empty slot is all ones
 * (an array slot has offset 0).
 */

#define REGION_BITS 8
#define REGION_PAGES (1u << REGION_BITS)
#define REGION_MASK (REGION_PAGES - 1)
#define DENSE_ABOVE 224u                /* sparse holds up to 224 blocks: 1,792 of a dense region's 2,048 bytes */
#define SPARSE_BELOW 192u               /* a dense region goes sparse again below 192 */

/* Hints of pagemap_prefetch() between loading a region's slot and loading its entry. */
#define PREFETCH_DELAY 4u

#define DIR_BITS 6
#define DIR_TABLES (1u << DIR_BITS)
#define DIR_MIN_CAPACITY 8u

#define ENTRY_EMPTY UINT64_MAX          /* order 31: no block has it */
#define KEY_EMPTY UINT64_MAX
#define ORDER_ARRAY 31u

#define INFO_BLOCKS(k) ((unsigned) ((k) & 0x1ff))
#define INFO_CAPACITY(k) ((unsigned) (((k) >> 9) & 0x1ff))
#define INFO_DENSE(k) ((bool) (((k) >> 18) & 1))

typedef struct DirSlot {
        uint64_t key;
        uint64_t value;
} DirSlot;

typedef struct DirTable {
        DirSlot *slots;                 /* owned */
        size_t capacity, n_used, grow_at;
} DirTable;

struct PageMap {
        DirTable dir[DIR_TABLES];
        size_t min_capacity;            /* slots of each table at first */
        size_t n_blocks;
        uint64_t n_pages;
        size_t dir_slots;               /* of every table */
        size_t array_bytes, array_room; /* the region arrays: bytes, entries they have room for */
        size_t n_sparse, n_dense;       /* regions of each form with an array */
        unsigned max_order;             /* largest order ever inserted: bounds the search for containing blocks */
        ChunkPool pool;                 /* the region arrays, a class per capacity (array_class()) */
        uint64_t prefetch_pending[PREFETCH_DELAY];      /* pfns hinted, whose entries are loaded later */
        unsigned prefetch_next;
        PageTaskFn task_of;             /* NULL: tasks are kept */
        void *task_userdata;
};

/* Where a block is, or would go: its region's slot and the place in the region. */
typedef struct Spot {
        DirTable *t;
        size_t slot;                    /* the region's slot, or the empty slot ending its probe run */
        bool region;                    /* the region has a slot */
        bool found;                     /* a block starts at the pfn */
        size_t i;                       /* array regions: the block's index, or where it would go */
} Spot;

static inline bool keeps_tasks(const PageMap *m) {
        return !m->task_of;
}

static inline uint64_t entry_make(unsigned offset, unsigned order, uint32_t stamp, uint32_t node) {
        return (uint64_t) offset << 56 | (uint64_t) order << 51 | (uint64_t) (stamp & PAGEMAP_STAMP_MASK) << 32 |
               node;
}

static inline unsigned entry_offset(uint64_t e) {
        return (unsigned) (e >> 56);
}

static inline unsigned entry_order(uint64_t e) {
        return (unsigned) (e >> 51) & 0x1f;
}

static inline uint32_t entry_stamp(uint64_t e) {
        return (uint32_t) (e >> 32) & PAGEMAP_STAMP_MASK;
}

static inline uint64_t slot_region(uint64_t key) {
        return key >> 32;
}

static inline bool slot_is_array(uint64_t key) {
        return ((key >> 19) & 0x1f) == ORDER_ARRAY;
}

/* The entry an inline slot holds, as a region array would. */
static inline uint64_t slot_entry(const DirSlot *s) {
        return entry_make((unsigned) (s->key >> 24) & REGION_MASK, (unsigned) (s->key >> 19) & 0x1f,
                          (uint32_t) s->key, (uint32_t) s->value);
}

static inline uint64_t array_key(uint64_t region, unsigned blocks, unsigned capacity, bool dense) {
        return region << 32 | (uint64_t) ORDER_ARRAY << 19 | (uint64_t) dense << 18 | (uint64_t) capacity << 9 |
               blocks;
}

static inline uint64_t *slot_array(const DirSlot *s) {
        return (uint64_t *) (uintptr_t) s->value;
}

static inline uint32_t *array_tasks(uint64_t *entries, unsigned capacity) {
        return (uint32_t *) (entries + capacity);
}

static size_t array_size(const PageMap *m, unsigned capacity) {
        return (size_t) capacity * (sizeof(uint64_t) + (keeps_tasks(m) ? sizeof(uint32_t) : 0));
}

/*
 * The capacities of arrays, each a class of the pool: sparse ones in steps of at most a quarter (a region
 * that fills copies each block about four times on the way, and holds at most a quarter of room to
 * spare), the last DENSE_ABOVE; then the dense one.
 */
static const uint16_t array_capacities[] = { 2, 4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192,
                                             DENSE_ABOVE, REGION_PAGES };
#define ARRAY_CLASSES ELEMENTSOF(array_capacities)

/* The smallest sparse capacity that holds blocks (at most DENSE_ABOVE). */
static unsigned sparse_capacity(unsigned blocks) {
        unsigned c = 0;
        while (array_capacities[c] < blocks)
                c++;
        return array_capacities[c];
}

static unsigned array_class(unsigned capacity) {
        unsigned c = 0;
        while (array_capacities[c] != capacity)
                c++;
        return c;
}

static uint64_t *array_alloc(PageMap *m, unsigned capacity) {
        return chunkpool_alloc(&m->pool, array_class(capacity));
}

static void array_free(PageMap *m, uint64_t *entries) {
        chunkpool_free(&m->pool, entries);
}

static inline uint64_t region_hash(uint64_t region) {
        uint64_t h = region * UINT64_C(0x9E3779B97F4A7C15);
        return h ^ (h >> 29);
}

static inline DirTable *dir_table(const PageMap *m, uint64_t h) {
        return (DirTable *) &m->dir[h >> (64 - DIR_BITS)];
}

/* The bits below the table's: a multiply-shift range reduction, so any capacity works (growth is 1.5x). */
static inline size_t dir_home(const DirTable *t, uint64_t h) {
        return (size_t) (((unsigned __int128) (h << DIR_BITS) * t->capacity) >> 64);
}

static inline size_t dir_next(const DirTable *t, size_t i) {
        return ++i == t->capacity ? 0 : i;
}

static DirSlot *alloc_slots(size_t capacity) {
        DirSlot *s = malloc(capacity * sizeof(DirSlot));
        if (!s)
                return NULL;
        /* KEY_EMPTY is all ones, so a byte fill empties every slot. */
        memset(s, 0xff, capacity * sizeof(DirSlot));
        return s;
}

static void table_set_capacity(DirTable *t, DirSlot *slots, size_t capacity) {
        t->slots = slots;
        t->capacity = capacity;
        t->grow_at = capacity / 4 * 3;
}

PageMap *pagemap_new(size_t capacity, PageTaskFn task_of, void *userdata) {
        PageMap *m = calloc(1, sizeof(PageMap));
        if (!m)
                return NULL;

        /* The hint is in blocks; most live in regions of many, so a table slot per 64 blocks. */
        m->min_capacity = MAX(capacity / 64 / DIR_TABLES, (size_t) DIR_MIN_CAPACITY);
        m->task_of = task_of;
        m->task_userdata = userdata;
        memset(m->prefetch_pending, 0xff, sizeof(m->prefetch_pending));
        size_t sizes[ARRAY_CLASSES];
        for (unsigned c = 0; c < ARRAY_CLASSES; c++)
                sizes[c] = array_size(m, array_capacities[c]);
        chunkpool_init(&m->pool, sizes, ARRAY_CLASSES);
        for (size_t i = 0; i < DIR_TABLES; i++) {
                DirSlot *s = alloc_slots(m->min_capacity);
                if (!s)
                        return pagemap_free(m);
                table_set_capacity(&m->dir[i], s, m->min_capacity);
                m->dir_slots += m->min_capacity;
        }
        return m;
}

PageMap *pagemap_free(PageMap *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < DIR_TABLES; i++)
                free(m->dir[i].slots);
        chunkpool_done(&m->pool);
        free(m);
        return NULL;
}

/* The slot of region in table t, or the empty slot where its probe run ends; whether it is there. */
static inline bool table_find(const DirTable *t, uint64_t region, uint64_t h, size_t *ret_slot) {
        for (size_t i = dir_home(t, h);; i = dir_next(t, i)) {
                uint64_t k = t->slots[i].key;
                if (k == KEY_EMPTY || slot_region(k) == region) {
                        *ret_slot = i;
                        return k != KEY_EMPTY;
                }
        }
}

/*
 * The first index of a sorted array of n (at least 2) entries whose offset is at least offset. An
 * interpolation between the first and last offsets the array holds (a region filled from one end, or in
 * runs, is as even between them as anywhere), then steps from there; a binary search if a few steps do
 * not find it.
 */
static inline size_t sparse_lower_bound(const uint64_t *entries, size_t n, unsigned offset) {
        unsigned first = entry_offset(entries[0]), last = entry_offset(entries[n - 1]);
        size_t i, lo, hi;

        if (offset <= first)
                return 0;
        if (offset > last)
                return n;
        i = (size_t) (offset - first) * (n - 1) / (last - first);
        if (entry_offset(entries[i]) < offset) {
                for (unsigned k = 0; k < 4; k++)
                        if (entry_offset(entries[++i]) >= offset)
                                return i;
                lo = i + 1;
                hi = n - 1;
        } else {
                for (unsigned k = 0; k < 4; k++, i--)
                        if (entry_offset(entries[i - 1]) < offset)
                                return i;
                lo = 1;
                hi = i;
        }
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (entry_offset(entries[mid]) < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static void locate(const PageMap *m, uint64_t pfn, Spot *ret) {
        uint64_t region = pfn >> REGION_BITS, h = region_hash(region);
        unsigned offset = (unsigned) pfn & REGION_MASK;
        DirTable *t = dir_table(m, h);

        ret->t = t;
        ret->i = 0;
        ret->found = false;
        ret->region = table_find(t, region, h, &ret->slot);
        if (!ret->region)
                return;

        uint64_t key = t->slots[ret->slot].key;
        if (!slot_is_array(key)) {
                ret->found = (key >> 24) == pfn;
                return;
        }
        const uint64_t *entries = slot_array(&t->slots[ret->slot]);
        if (INFO_DENSE(key)) {
                ret->i = offset;
                ret->found = entries[offset] != ENTRY_EMPTY;
                return;
        }
        size_t i = sparse_lower_bound(entries, INFO_BLOCKS(key), offset);
        ret->i = i;
        ret->found = i < INFO_BLOCKS(key) && entry_offset(entries[i]) == offset;
}

void pagemap_prefetch(PageMap *m, uint64_t pfn) {
        uint64_t region = pfn >> REGION_BITS, h = region_hash(region);
        const DirTable *t = dir_table(m, h);

        /* A lookup reads two lines, the region's slot and then its entry: the slot's is loaded now, and the
         * entry's for the pfn hinted PREFETCH_DELAY calls ago, whose slot should be in the cache by now
         * (reading it earlier would wait for it). For writing: inserts and releases store where they
         * read. */
        __builtin_prefetch(&t->slots[dir_home(t, h)], 1);

        uint64_t earlier = m->prefetch_pending[m->prefetch_next];
        m->prefetch_pending[m->prefetch_next] = pfn;
        m->prefetch_next = (m->prefetch_next + 1) % PREFETCH_DELAY;
        if (earlier == UINT64_MAX)
                return;
        region = earlier >> REGION_BITS;
        h = region_hash(region);
        t = dir_table(m, h);
        const DirSlot *s = &t->slots[dir_home(t, h)];
        /* A region not in its home slot goes without: its probe run is read at the lookup. */
        if (s->key != KEY_EMPTY && slot_region(s->key) == region && slot_is_array(s->key)) {
                size_t i = INFO_DENSE(s->key) ? (earlier & REGION_MASK) : INFO_BLOCKS(s->key) / 2;
                __builtin_prefetch(slot_array(s) + i, 1);
        }
}

/* The owner of the block at a found spot, and its order. */
static void spot_read(const PageMap *m, const Spot *sp, PageOwner *ret_owner, unsigned *ret_order) {
        const DirSlot *s = &sp->t->slots[sp->slot];
        uint64_t e;
        uint32_t task = 0;

        if (!slot_is_array(s->key)) {
                e = slot_entry(s);
                task = (uint32_t) (s->value >> 32);
        } else {
                e = slot_array(s)[sp->i];
                if (keeps_tasks(m))
                        task = array_tasks(slot_array(s), INFO_CAPACITY(s->key))[sp->i];
        }
        if (ret_order)
                *ret_order = entry_order(e);
        if (ret_owner) {
                *ret_owner = (PageOwner) { .task = task, .node = (uint32_t) e, .stamp = entry_stamp(e) };
                if (!keeps_tasks(m))
                        ret_owner->task = m->task_of(m->task_userdata, ret_owner->node);
        }
}

/* Rehashes a table into capacity slots (more, or fewer than it has in use over 3/4 never). */
static int table_resize(PageMap *m, DirTable *t, size_t capacity) {
        DirSlot *old = t->slots;
        size_t old_capacity = t->capacity;

        DirSlot *s = alloc_slots(capacity);
        if (!s)
                return -ENOMEM;
        table_set_capacity(t, s, capacity);
        for (size_t i = 0; i < old_capacity; i++) {
                if (old[i].key == KEY_EMPTY)
                        continue;
                uint64_t region = slot_region(old[i].key);
                size_t j;
                (void) table_find(t, region, region_hash(region), &j);
                t->slots[j] = old[i];
        }
        free(old);
        m->dir_slots = m->dir_slots - old_capacity + capacity;
        return 0;
}

static size_t slot_home(const void *table, size_t i) {
        const DirTable *t = table;
        uint64_t k = t->slots[i].key;
        return k == KEY_EMPTY ? BACKSHIFT_EMPTY : dir_home(t, region_hash(slot_region(k)));
}

static void slot_move(void *table, size_t to, size_t from) {
        DirTable *t = table;
        t->slots[to] = t->slots[from];
}

static void slot_clear(void *table, size_t i) {
        DirTable *t = table;
        t->slots[i] = (DirSlot) { .key = KEY_EMPTY, .value = UINT64_MAX };
}

/* Backward-shift deletion (backshift.h): lookups stay exact without tombstones. A table a quarter full
 * shrinks by half (to half full), so that regions freed in bulk give their slots back too. */
static void table_remove(PageMap *m, DirTable *t, size_t hole) {
        backshift_delete(t, t->capacity, hole, slot_home, slot_move, slot_clear);
        t->n_used--;
        if (t->n_used < t->capacity / 4 && t->capacity / 2 >= m->min_capacity)
                (void) table_resize(m, t, t->capacity / 2);
}

/* Accounts for an array of capacity entries of the given form coming (+1) or going (-1). */
static void array_count(PageMap *m, unsigned capacity, bool dense, int sign) {
        size_t bytes = array_size(m, capacity);

        if (sign > 0) {
                m->array_bytes += bytes;
                m->array_room += capacity;
        } else {
                m->array_bytes -= bytes;
                m->array_room -= capacity;
        }
        if (dense)
                m->n_dense += (size_t) sign;
        else
                m->n_sparse += (size_t) sign;
}

/*
 * Copies the n blocks of an array region (entries, tasks of capacity) into a new array of the other form
 * or size: dense, or sparse of capacity to_capacity. The old array stays. NULL on OOM.
 */
static uint64_t *array_copy(PageMap *m, const uint64_t *entries, unsigned capacity, bool dense,
                unsigned n, bool to_dense, unsigned to_capacity) {
        uint64_t *a = array_alloc(m, to_capacity);
        if (!a)
                return NULL;
        if (to_dense)
                memset(a, 0xff, to_capacity * sizeof(uint64_t));

        const uint32_t *tasks = array_tasks((uint64_t *) entries, capacity);
        uint32_t *to_tasks = array_tasks(a, to_capacity);
        for (unsigned i = 0, j = 0; i < (dense ? REGION_PAGES : n); i++) {
                if (entries[i] == ENTRY_EMPTY)
                        continue;
                unsigned k = to_dense ? entry_offset(entries[i]) : j++;
                a[k] = entries[i];
                if (keeps_tasks(m))
                        to_tasks[k] = tasks[i];
        }
        return a;
}

/* A sparse array of n blocks moved to one of another capacity; the old one freed. NULL on OOM (the old one
 * kept). */
static uint64_t *sparse_resize(PageMap *m, uint64_t *entries, unsigned capacity, unsigned n, unsigned to_capacity) {
        uint64_t *a = array_alloc(m, to_capacity);
        if (!a)
                return NULL;
        memcpy(a, entries, n * sizeof(uint64_t));
        if (keeps_tasks(m))
                memcpy(array_tasks(a, to_capacity), array_tasks(entries, capacity), n * sizeof(uint32_t));
        array_free(m, entries);
        return a;
}

/* Puts a block where sp says (no block starts at pfn). -ENOMEM if memory for it is missing. */
static int block_put(PageMap *m, Spot *sp, uint64_t pfn, unsigned order, const PageOwner *owner) {
        uint64_t region = pfn >> REGION_BITS;
        unsigned offset = (unsigned) pfn & REGION_MASK;
        uint64_t e = entry_make(offset, order, owner->stamp, owner->node);
        uint32_t task = keeps_tasks(m) ? owner->task : 0;
        DirTable *t = sp->t;

        if (!sp->region) {
                if (t->n_used + 1 > t->grow_at) {
                        int r = table_resize(m, t, t->capacity + t->capacity / 2);
                        if (r < 0)
                                return r;
                        (void) table_find(t, region, region_hash(region), &sp->slot);
                }
                t->slots[sp->slot] = (DirSlot) {
                        .key = pfn << 24 | (uint64_t) order << 19 | (owner->stamp & PAGEMAP_STAMP_MASK),
                        .value = (uint64_t) task << 32 | owner->node,
                };
                t->n_used++;
                return 0;
        }

        DirSlot *s = &t->slots[sp->slot];
        if (!slot_is_array(s->key)) {
                /* A second block: the region becomes a sparse array of two, in pfn order. */
                uint64_t *a = array_alloc(m, 2);
                if (!a)
                        return -ENOMEM;
                uint64_t other = slot_entry(s);
                bool first = entry_offset(other) > offset;
                a[first ? 0 : 1] = e;
                a[first ? 1 : 0] = other;
                if (keeps_tasks(m)) {
                        array_tasks(a, 2)[first ? 0 : 1] = task;
                        array_tasks(a, 2)[first ? 1 : 0] = (uint32_t) (s->value >> 32);
                }
                *s = (DirSlot) { .key = array_key(region, 2, 2, false), .value = (uint64_t) (uintptr_t) a };
                array_count(m, 2, false, +1);
                return 0;
        }

        uint64_t *a = slot_array(s);
        unsigned n = INFO_BLOCKS(s->key), capacity = INFO_CAPACITY(s->key);
        bool dense = INFO_DENSE(s->key);

        if (!dense && n + 1 > DENSE_ABOVE) {
                uint64_t *d = array_copy(m, a, capacity, false, n, true, REGION_PAGES);
                if (!d)
                        return -ENOMEM;
                array_free(m, a);
                array_count(m, capacity, false, -1);
                array_count(m, REGION_PAGES, true, +1);
                a = d;
                capacity = REGION_PAGES;
                dense = true;
                sp->i = offset;
        } else if (!dense && n + 1 > capacity) {
                unsigned to = sparse_capacity(n + 1);
                uint64_t *g = sparse_resize(m, a, capacity, n, to);
                if (!g)
                        return -ENOMEM;
                array_count(m, capacity, false, -1);
                array_count(m, to, false, +1);
                a = g;
                capacity = to;
        }

        if (dense) {
                a[offset] = e;
                if (keeps_tasks(m))
                        array_tasks(a, capacity)[offset] = task;
        } else {
                memmove(a + sp->i + 1, a + sp->i, (n - sp->i) * sizeof(uint64_t));
                a[sp->i] = e;
                if (keeps_tasks(m)) {
                        uint32_t *tasks = array_tasks(a, capacity);
                        memmove(tasks + sp->i + 1, tasks + sp->i, (n - sp->i) * sizeof(uint32_t));
                        tasks[sp->i] = task;
                }
        }
        *s = (DirSlot) { .key = array_key(region, n + 1, capacity, dense), .value = (uint64_t) (uintptr_t) a };
        return 0;
}

/* A region array left with one block: the block goes into the slot, the array away. */
static void array_to_inline(PageMap *m, DirSlot *s) {
        uint64_t *a = slot_array(s);
        unsigned capacity = INFO_CAPACITY(s->key);
        bool dense = INFO_DENSE(s->key);
        size_t i = 0;

        while (a[i] == ENTRY_EMPTY)
                i++;
        uint64_t e = a[i];
        uint32_t task = keeps_tasks(m) ? array_tasks(a, capacity)[i] : 0;
        uint64_t pfn = slot_region(s->key) << REGION_BITS | entry_offset(e);

        *s = (DirSlot) {
                .key = pfn << 24 | (uint64_t) entry_order(e) << 19 | entry_stamp(e),
                .value = (uint64_t) task << 32 | (uint32_t) e,
        };
        array_free(m, a);
        array_count(m, capacity, dense, -1);
}

/* Takes the block at a found spot out of the map; its owner and order into the return values. */
static void block_take(PageMap *m, const Spot *sp, PageOwner *ret_owner, unsigned *ret_order) {
        DirSlot *s = &sp->t->slots[sp->slot];

        spot_read(m, sp, ret_owner, ret_order);
        m->n_blocks--;
        m->n_pages -= UINT64_C(1) << *ret_order;

        if (!slot_is_array(s->key)) {
                table_remove(m, sp->t, sp->slot);
                return;
        }

        uint64_t *a = slot_array(s), region = slot_region(s->key);
        unsigned n = INFO_BLOCKS(s->key) - 1, capacity = INFO_CAPACITY(s->key);
        bool dense = INFO_DENSE(s->key);

        if (dense)
                a[sp->i] = ENTRY_EMPTY;
        else {
                memmove(a + sp->i, a + sp->i + 1, (n - sp->i) * sizeof(uint64_t));
                if (keeps_tasks(m)) {
                        uint32_t *tasks = array_tasks(a, capacity);
                        memmove(tasks + sp->i, tasks + sp->i + 1, (n - sp->i) * sizeof(uint32_t));
                }
        }
        *s = (DirSlot) { .key = array_key(region, n, capacity, dense), .value = (uint64_t) (uintptr_t) a };

        if (n == 1) {
                array_to_inline(m, s);
                return;
        }
        /* Smaller forms, when memory for them is there; the region stays as it is otherwise. */
        if (dense && n < SPARSE_BELOW) {
                unsigned to = sparse_capacity(n);
                uint64_t *sparse = array_copy(m, a, capacity, true, n, false, to);
                if (!sparse)
                        return;
                array_free(m, a);
                array_count(m, capacity, true, -1);
                array_count(m, to, false, +1);
                *s = (DirSlot) { .key = array_key(region, n, to, false), .value = (uint64_t) (uintptr_t) sparse };
        } else if (!dense && n <= capacity / 2 && capacity > 4) {
                /* Half empty: to the size that holds it, a quarter to spare at most, so that it grows
                 * again only after as many blocks came back as it lost. */
                unsigned to = sparse_capacity(n);
                uint64_t *smaller = sparse_resize(m, a, capacity, n, to);
                if (!smaller)
                        return;
                array_count(m, capacity, false, -1);
                array_count(m, to, false, +1);
                *s = (DirSlot) { .key = array_key(region, n, to, false), .value = (uint64_t) (uintptr_t) smaller };
        }
}

static int insert_block(PageMap *m, Spot *sp, uint64_t pfn, unsigned order, const PageOwner *owner) {
        int r = block_put(m, sp, pfn, order, owner);
        if (r < 0)
                return r;
        m->n_blocks++;
        m->n_pages += UINT64_C(1) << order;
        m->max_order = MAX(m->max_order, order);
        return 0;
}

/* Inserts a split's buddy: -EEXIST where a block starts already (blocks that overlap, after lost frees or
 * from a source that sends unaligned ones), -ENOMEM. */
static int insert_buddy(PageMap *m, uint64_t pfn, unsigned order, const PageOwner *owner) {
        Spot sp;

        locate(m, pfn, &sp);
        if (sp.found)
                return -EEXIST;
        return insert_block(m, &sp, pfn, order, owner);
}

int pagemap_insert(PageMap *m, uint64_t pfn, unsigned order, const PageOwner *owner,
                PageReleaseFn release, void *userdata) {
        int stale = 0;
        Spot sp;

        if (pfn > PAGEMAP_PFN_MAX || order > PAGEMAP_ORDER_MAX)
                return -ERANGE;

        locate(m, pfn, &sp);
        if (sp.found) {
                PageOwner old;
                unsigned old_order;

                block_take(m, &sp, &old, &old_order);
                release(userdata, &old, UINT64_C(1) << old_order);
                stale = 1;
                /* Taking it may have changed the region's form and moved slots. */
                locate(m, pfn, &sp);
        }

        int r = insert_block(m, &sp, pfn, order, owner);
        if (r < 0)
                return r;
        return stale;
}

/*
 * The block (base, order) holds [pfn, pfn + 2^want): keep the buddies that are not being freed, halving
 * down to the freed piece, and release only that piece. A buddy the map cannot keep (no memory to grow,
 * or another block starts where it would) is released as well, so the owner's counts stay balanced; so
 * is the whole block when it is smaller than the piece (an unaligned free). Returns the pages released.
 */
static uint64_t split_release(PageMap *m, uint64_t base, unsigned order, const PageOwner *owner, uint64_t pfn,
                unsigned want, PageReleaseFn release, void *userdata) {
        uint64_t released = UINT64_C(1) << MIN(want, order);

        while (order > want) {
                order--;
                uint64_t half = UINT64_C(1) << order;
                bool upper = pfn >= base + half;
                uint64_t keep = upper ? base : base + half;

                if (insert_buddy(m, keep, order, owner) < 0)
                        released += half;
                if (upper)
                        base += half;
        }
        release(userdata, owner, released);
        return released;
}

/* The first pfn in [from, end) at which a block starts, into *ret; false if none. A walk of the regions
 * in between, each looked up once. */
static bool next_block(const PageMap *m, uint64_t from, uint64_t end, uint64_t *ret) {
        for (uint64_t region = from >> REGION_BITS; region <= (end - 1) >> REGION_BITS; region++) {
                uint64_t h = region_hash(region), base = region << REGION_BITS;
                unsigned lo = from > base ? (unsigned) (from - base) : 0;
                const DirTable *t = dir_table(m, h);
                size_t slot;

                if (!table_find(t, region, h, &slot))
                        continue;
                const DirSlot *s = &t->slots[slot];
                uint64_t pfn = UINT64_MAX;
                if (!slot_is_array(s->key)) {
                        if (((s->key >> 24) & REGION_MASK) >= lo)
                                pfn = s->key >> 24;
                } else if (INFO_DENSE(s->key)) {
                        const uint64_t *a = slot_array(s);
                        for (unsigned i = lo; i < REGION_PAGES; i++)
                                if (a[i] != ENTRY_EMPTY) {
                                        pfn = base + i;
                                        break;
                                }
                } else {
                        const uint64_t *a = slot_array(s);
                        size_t i = sparse_lower_bound(a, INFO_BLOCKS(s->key), lo);
                        if (i < INFO_BLOCKS(s->key))
                                pfn = base + entry_offset(a[i]);
                }
                if (pfn < end) {
                        *ret = pfn;
                        return true;
                }
                if (pfn != UINT64_MAX)
                        return false;   /* the first block at or after from is past end */
        }
        return false;
}

uint64_t pagemap_release(PageMap *m, uint64_t pfn, unsigned order, PageReleaseFn release, void *userdata) {
        uint64_t end = pfn + (UINT64_C(1) << order), scan_from = pfn + 1, n = 0;
        PageOwner owner;
        unsigned o;
        Spot sp;

        if (pfn > PAGEMAP_PFN_MAX || order > PAGEMAP_ORDER_MAX)
                return 0;

        /* The common case: the block freed is the block allocated. */
        locate(m, pfn, &sp);
        if (sp.found) {
                block_take(m, &sp, &owner, &o);
                if (o >= order)
                        return split_release(m, pfn, o, &owner, pfn, order, release, userdata);
                /* A smaller block at the start: release it, then look for the rest of the range below. */
                release(userdata, &owner, UINT64_C(1) << o);
                n = UINT64_C(1) << o;
                scan_from = pfn + n;
        } else
                /* Part of a larger block, e.g. split_page() pages freed one by one. Buddy blocks are
                 * naturally aligned, so only the aligned bases below pfn can hold it. */
                for (unsigned j = order + 1; j <= m->max_order; j++) {
                        uint64_t base = pfn & ~((UINT64_C(1) << j) - 1);
                        if (base == pfn)
                                continue;
                        locate(m, base, &sp);
                        if (!sp.found)
                                continue;
                        /* Blocks never overlap: if the block at base ends before pfn, nothing holds pfn. */
                        spot_read(m, &sp, NULL, &o);
                        if (base + (UINT64_C(1) << o) <= pfn)
                                break;
                        block_take(m, &sp, &owner, &o);
                        return split_release(m, base, o, &owner, pfn, order, release, userdata);
                }

        /* Smaller blocks inside the freed range (after lost events, or a block freed with a larger order
         * than it was allocated with). Aligned blocks that start inside the range end inside it too; an
         * unaligned one is split so only the part inside is released. */
        if (order == 0 || m->n_blocks == 0)
                return n;
        for (uint64_t p = scan_from; p < end;) {
                if (!next_block(m, p, end, &p))
                        break;
                locate(m, p, &sp);
                block_take(m, &sp, &owner, &o);
                if (p + (UINT64_C(1) << o) > end) {
                        n += split_release(m, p, o, &owner, p, 0, release, userdata);
                        p++;
                        continue;
                }
                release(userdata, &owner, UINT64_C(1) << o);
                n += UINT64_C(1) << o;
                p += UINT64_C(1) << o;
        }
        return n;
}

bool pagemap_lookup(const PageMap *m, uint64_t pfn, PageOwner *ret_owner, unsigned *ret_order) {
        Spot sp;

        if (pfn > PAGEMAP_PFN_MAX)
                return false;
        locate(m, pfn, &sp);
        if (!sp.found)
                return false;
        spot_read(m, &sp, ret_owner, ret_order);
        return true;
}

typedef void (*EntryFn)(PageMap *m, uint64_t pfn, uint64_t *entry, uint32_t *task, void *userdata);

/* Calls fn with every block as an entry (an inline one copied out and written back) and its task, NULL
 * if the map keeps none. */
static void foreach_entry(PageMap *m, EntryFn fn, void *userdata) {
        for (size_t d = 0; d < DIR_TABLES; d++) {
                DirTable *t = &m->dir[d];

                for (size_t i = 0; i < t->capacity; i++) {
                        DirSlot *s = &t->slots[i];
                        uint64_t base = slot_region(s->key) << REGION_BITS;

                        if (s->key == KEY_EMPTY)
                                continue;
                        if (!slot_is_array(s->key)) {
                                uint64_t e = slot_entry(s);
                                uint32_t task = (uint32_t) (s->value >> 32);

                                fn(m, s->key >> 24, &e, keeps_tasks(m) ? &task : NULL, userdata);
                                s->key = (s->key >> 24) << 24 | (uint64_t) entry_order(e) << 19 | entry_stamp(e);
                                s->value = (uint64_t) task << 32 | (uint32_t) e;
                                continue;
                        }
                        uint64_t *a = slot_array(s);
                        unsigned capacity = INFO_CAPACITY(s->key);
                        unsigned n = INFO_DENSE(s->key) ? REGION_PAGES : INFO_BLOCKS(s->key);
                        for (unsigned j = 0; j < n; j++)
                                if (a[j] != ENTRY_EMPTY)
                                        fn(m, base + entry_offset(a[j]), &a[j],
                                           keeps_tasks(m) ? &array_tasks(a, capacity)[j] : NULL, userdata);
                }
        }
}

typedef struct ForeachBlock {
        void (*fn)(void *userdata, uint64_t pfn, unsigned order, PageOwner *owner);
        void *userdata;
} ForeachBlock;

static void foreach_block(PageMap *m, uint64_t pfn, uint64_t *entry, uint32_t *task, void *userdata) {
        ForeachBlock *f = userdata;
        uint64_t e = *entry;
        PageOwner o = { .node = (uint32_t) e, .stamp = entry_stamp(e) };

        o.task = task ? *task : m->task_of(m->task_userdata, o.node);
        f->fn(f->userdata, pfn, entry_order(e), &o);
        *entry = (e & ~(uint64_t) UINT32_MAX) | o.node;
        if (task)
                *task = o.task;
}

void pagemap_foreach(PageMap *m, void (*fn)(void *userdata, uint64_t pfn, unsigned order, PageOwner *owner),
                void *userdata) {
        ForeachBlock f = { .fn = fn, .userdata = userdata };

        foreach_entry(m, foreach_block, &f);
}

static void clamp_entry(PageMap *m, uint64_t pfn, uint64_t *entry, uint32_t *task, void *userdata) {
        uint32_t now = *(const uint32_t *) userdata;
        uint64_t e = *entry;

        if (((now - entry_stamp(e)) & PAGEMAP_STAMP_MASK) > PAGEMAP_STAMP_AGE_MAX)
                *entry = entry_make(entry_offset(e), entry_order(e), now - PAGEMAP_STAMP_AGE_MAX, (uint32_t) e);
}

void pagemap_clamp_ages(PageMap *m, uint64_t now_nsec) {
        uint32_t now = pagemap_stamp(now_nsec);

        foreach_entry(m, clamp_entry, &now);
}

void pagemap_clear(PageMap *m) {
        for (size_t d = 0; d < DIR_TABLES; d++) {
                DirTable *t = &m->dir[d];
                DirSlot *s = t->capacity > m->min_capacity ? alloc_slots(m->min_capacity) : NULL;

                if (s) {
                        free(t->slots);
                        m->dir_slots -= t->capacity - m->min_capacity;
                        table_set_capacity(t, s, m->min_capacity);
                } else
                        memset(t->slots, 0xff, t->capacity * sizeof(DirSlot));
                t->n_used = 0;
        }
        chunkpool_done(&m->pool);
        m->n_blocks = 0;
        m->n_pages = 0;
        m->max_order = 0;
        m->array_bytes = m->array_room = 0;
        m->n_sparse = m->n_dense = 0;
}

size_t pagemap_trim(PageMap *m) {
        return chunkpool_trim(&m->pool);
}

size_t pagemap_blocks(const PageMap *m) {
        return m->n_blocks;
}

uint64_t pagemap_pages(const PageMap *m) {
        return m->n_pages;
}

size_t pagemap_capacity(const PageMap *m) {
        return m->dir_slots + m->array_room;
}

size_t pagemap_memory_bytes(const PageMap *m) {
        return sizeof(PageMap) + m->dir_slots * sizeof(DirSlot) + m->array_bytes;
}

void pagemap_shape(const PageMap *m, PageMapShape *ret) {
        PageMapShape shape = {};

        /* A walk of the directory: the event path counts no more than it needs. */
        for (size_t d = 0; d < DIR_TABLES; d++)
                for (size_t i = 0; i < m->dir[d].capacity; i++) {
                        uint64_t k = m->dir[d].slots[i].key;
                        if (k == KEY_EMPTY)
                                continue;
                        if (!slot_is_array(k))
                                shape.inline_regions++;
                        else if (INFO_DENSE(k)) {
                                shape.dense_regions++;
                                shape.dense_blocks += INFO_BLOCKS(k);
                        } else {
                                shape.sparse_regions++;
                                shape.sparse_blocks += INFO_BLOCKS(k);
                        }
                }
        *ret = shape;
}
