/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pagemap.h"
#include "backshift.h"

/*
 * A slot is 16 bytes: key packs pfn (40 bits), stamp (19 bits) and order (5 bits); an empty slot has
 * key SLOT_EMPTY, all ones, which no valid order (< 31) can produce.
 */
typedef struct PageSlot {
        uint64_t key;
        uint32_t task;
        uint32_t node;
} PageSlot;

#define SLOT_EMPTY UINT64_MAX
#define KEY_PFN(k) ((k) >> 24)
#define KEY_STAMP(k) ((uint32_t) (((k) >> 5) & PAGEMAP_STAMP_MASK))
#define KEY_ORDER(k) ((unsigned) ((k) & 0x1f))
#define MIN_CAPACITY 1024

struct PageMap {
        PageSlot *slots;
        size_t capacity;
        size_t n_blocks;
        uint64_t n_pages;
        size_t grow_at;         /* n_blocks that triggers growth: 75 % of capacity */
        unsigned max_order;     /* largest order ever inserted: bounds the search for containing blocks */
};

static inline uint64_t make_key(uint64_t pfn, unsigned order, uint32_t stamp) {
        return pfn << 24 | (uint64_t) (stamp & PAGEMAP_STAMP_MASK) << 5 | order;
}

static PageOwner owner_of(const PageSlot *s) {
        return (PageOwner) { .task = s->task, .node = s->node, .stamp = KEY_STAMP(s->key) };
}

/* Multiplicative hash, then a multiply-shift range reduction so any capacity works (growth is 1.5x). */
static inline size_t home_slot(const PageMap *m, uint64_t pfn) {
        uint64_t h = pfn * UINT64_C(0x9E3779B97F4A7C15);
        h ^= h >> 29;
        return (size_t) (((unsigned __int128) h * m->capacity) >> 64);
}

static inline size_t next_slot(const PageMap *m, size_t i) {
        return ++i == m->capacity ? 0 : i;
}

static PageSlot *alloc_slots(size_t capacity) {
        PageSlot *s = malloc(capacity * sizeof(PageSlot));
        if (!s)
                return NULL;
        /* SLOT_EMPTY is all ones, so a byte fill makes every key empty. */
        memset(s, 0xff, capacity * sizeof(PageSlot));
        return s;
}

PageMap *pagemap_new(size_t capacity) {
        _cleanup_free_ PageMap *m = calloc(1, sizeof(PageMap));
        if (!m)
                return NULL;

        m->capacity = MAX(capacity + capacity / 3, (size_t) MIN_CAPACITY);
        m->slots = alloc_slots(m->capacity);
        if (!m->slots)
                return NULL;
        m->grow_at = m->capacity / 4 * 3;
        return TAKE_PTR(m);
}

PageMap *pagemap_free(PageMap *m) {
        if (!m)
                return NULL;
        free(m->slots);
        free(m);
        return NULL;
}

void pagemap_prefetch(const PageMap *m, uint64_t pfn) {
        /* For writing: an insert or release stores into the line it reads. */
        __builtin_prefetch(&m->slots[home_slot(m, pfn)], 1);
}

/* Finds the slot holding pfn, or SIZE_MAX. */
static size_t find_slot(const PageMap *m, uint64_t pfn) {
        for (size_t i = home_slot(m, pfn);; i = next_slot(m, i)) {
                uint64_t k = m->slots[i].key;
                if (k == SLOT_EMPTY)
                        return SIZE_MAX;
                if (KEY_PFN(k) == pfn)
                        return i;
        }
}

/* Stores a key known to be absent; the table has room. */
static void place(PageMap *m, uint64_t key, uint32_t task, uint32_t node) {
        size_t i = home_slot(m, KEY_PFN(key));
        while (m->slots[i].key != SLOT_EMPTY)
                i = next_slot(m, i);
        m->slots[i] = (PageSlot) { .key = key, .task = task, .node = node };
}

static int grow(PageMap *m) {
        size_t new_capacity = m->capacity + m->capacity / 2;
        PageSlot *old = m->slots;
        size_t old_capacity = m->capacity;

        PageSlot *s = alloc_slots(new_capacity);
        if (!s)
                return -ENOMEM;

        m->slots = s;
        m->capacity = new_capacity;
        m->grow_at = new_capacity / 4 * 3;
        for (size_t i = 0; i < old_capacity; i++)
                if (old[i].key != SLOT_EMPTY)
                        place(m, old[i].key, old[i].task, old[i].node);
        free(old);
        return 0;
}

static size_t slot_home(const void *table, size_t i) {
        const PageMap *m = table;
        uint64_t k = m->slots[i].key;
        return k == SLOT_EMPTY ? BACKSHIFT_EMPTY : home_slot(m, KEY_PFN(k));
}

static void slot_move(void *table, size_t to, size_t from) {
        PageMap *m = table;
        m->slots[to] = m->slots[from];
}

static void slot_clear(void *table, size_t i) {
        PageMap *m = table;
        m->slots[i].key = SLOT_EMPTY;
}

/* Backward-shift deletion (backshift.h): lookups stay exact without tombstones. */
static void remove_slot(PageMap *m, size_t hole) {
        backshift_delete(m, m->capacity, hole, slot_home, slot_move, slot_clear);
}

static int insert_block(PageMap *m, uint64_t pfn, unsigned order, const PageOwner *owner) {
        if (m->n_blocks + 1 > m->grow_at) {
                int r = grow(m);
                if (r < 0)
                        return r;
        }
        place(m, make_key(pfn, order, owner->stamp), owner->task, owner->node);
        m->n_blocks++;
        m->n_pages += UINT64_C(1) << order;
        m->max_order = MAX(m->max_order, order);
        return 0;
}

static void take_slot(PageMap *m, size_t i, PageOwner *ret_owner, unsigned *ret_order) {
        const PageSlot *s = &m->slots[i];

        *ret_owner = owner_of(s);
        *ret_order = KEY_ORDER(s->key);
        m->n_blocks--;
        m->n_pages -= UINT64_C(1) << *ret_order;
        remove_slot(m, i);
}

int pagemap_insert(PageMap *m, uint64_t pfn, unsigned order, const PageOwner *owner,
                PageReleaseFn release, void *userdata) {
        int stale = 0;

        if (pfn > PAGEMAP_PFN_MAX || order > PAGEMAP_ORDER_MAX)
                return -ERANGE;

        size_t i = find_slot(m, pfn);
        if (i != SIZE_MAX) {
                PageOwner old;
                unsigned old_order;

                take_slot(m, i, &old, &old_order);
                release(userdata, &old, UINT64_C(1) << old_order);
                stale = 1;
        }

        int r = insert_block(m, pfn, order, owner);
        if (r < 0)
                return r;
        return stale;
}

/*
 * The block (base, order) holds [pfn, pfn + 2^want): keep the buddies that are not being freed, halving
 * down to the freed piece, and release only that piece. If the table cannot grow to keep a buddy, that
 * buddy is released as well so the owner's counts stay balanced. Returns the pages released.
 */
static uint64_t split_release(PageMap *m, uint64_t base, unsigned order, const PageOwner *owner, uint64_t pfn,
                unsigned want, PageReleaseFn release, void *userdata) {
        uint64_t released = UINT64_C(1) << want;

        while (order > want) {
                order--;
                uint64_t half = UINT64_C(1) << order;
                bool upper = pfn >= base + half;
                uint64_t keep = upper ? base : base + half;

                if (insert_block(m, keep, order, owner) < 0)
                        released += half;
                if (upper)
                        base += half;
        }
        release(userdata, owner, released);
        return released;
}

uint64_t pagemap_release(PageMap *m, uint64_t pfn, unsigned order, PageReleaseFn release, void *userdata) {
        uint64_t end = pfn + (UINT64_C(1) << order), scan_from = pfn + 1, n = 0;
        PageOwner owner;
        unsigned o;
        size_t i;

        if (pfn > PAGEMAP_PFN_MAX || order > PAGEMAP_ORDER_MAX)
                return 0;

        /* The common case: the block freed is the block allocated. */
        i = find_slot(m, pfn);
        if (i != SIZE_MAX) {
                take_slot(m, i, &owner, &o);
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
                        i = find_slot(m, base);
                        if (i == SIZE_MAX)
                                continue;
                        /* Blocks never overlap: if the block at base ends before pfn, nothing holds pfn. */
                        if (base + (UINT64_C(1) << KEY_ORDER(m->slots[i].key)) <= pfn)
                                break;
                        take_slot(m, i, &owner, &o);
                        return split_release(m, base, o, &owner, pfn, order, release, userdata);
                }

        /* Smaller blocks inside the freed range (after lost events, or a block freed with a larger order
         * than it was allocated with). Aligned blocks that start inside the range end inside it too; an
         * unaligned one is split so only the part inside is released. */
        if (order == 0 || m->n_blocks == 0)
                return n;
        for (uint64_t p = scan_from; p < end;) {
                i = find_slot(m, p);
                if (i == SIZE_MAX) {
                        p++;
                        continue;
                }
                take_slot(m, i, &owner, &o);
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
        if (pfn > PAGEMAP_PFN_MAX)
                return false;
        size_t i = find_slot(m, pfn);
        if (i == SIZE_MAX)
                return false;
        const PageSlot *s = &m->slots[i];
        if (ret_owner)
                *ret_owner = owner_of(s);
        if (ret_order)
                *ret_order = KEY_ORDER(s->key);
        return true;
}

void pagemap_foreach(PageMap *m, void (*fn)(void *userdata, uint64_t pfn, unsigned order, PageOwner *owner),
                void *userdata) {
        for (size_t i = 0; i < m->capacity; i++) {
                PageSlot *s = &m->slots[i];
                if (s->key == SLOT_EMPTY)
                        continue;
                PageOwner o = owner_of(s);
                fn(userdata, KEY_PFN(s->key), KEY_ORDER(s->key), &o);
                s->task = o.task;
                s->node = o.node;
        }
}

void pagemap_clamp_ages(PageMap *m, uint64_t now_nsec) {
        uint32_t now = pagemap_stamp(now_nsec);

        for (size_t i = 0; i < m->capacity; i++) {
                PageSlot *s = &m->slots[i];
                if (s->key != SLOT_EMPTY && ((now - KEY_STAMP(s->key)) & PAGEMAP_STAMP_MASK) > PAGEMAP_STAMP_AGE_MAX)
                        s->key = make_key(KEY_PFN(s->key), KEY_ORDER(s->key), now - PAGEMAP_STAMP_AGE_MAX);
        }
}

void pagemap_clear(PageMap *m) {
        memset(m->slots, 0xff, m->capacity * sizeof(PageSlot));
        m->n_blocks = 0;
        m->n_pages = 0;
        m->max_order = 0;
}

size_t pagemap_blocks(const PageMap *m) {
        return m->n_blocks;
}

uint64_t pagemap_pages(const PageMap *m) {
        return m->n_pages;
}

size_t pagemap_capacity(const PageMap *m) {
        return m->capacity;
}

size_t pagemap_memory_bytes(const PageMap *m) {
        return sizeof(PageMap) + m->capacity * sizeof(PageSlot);
}
