/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backshift.h"
#include "keyindex.h"
#include "macro.h"
#include "slab.h"

/*
 * Live objects by pointer: TABLES open-addressing tables (linear probing, backward-shift deletion), the
 * table chosen by the top bits of the pointer's hash, each grown by 1.5x at 3/4 full and halved at 1/4
 * on its own. So a table is half to three quarters full as it grows, 48 to 72 bytes of slot a live
 * object (96 at most after frees), and a resize copies a 64th of them: no step of the growth needs the
 * old and the new table of every object at once.
 */
#define TABLE_BITS 6
#define TABLES (1u << TABLE_BITS)
#define TABLE_MIN 16u                   /* slots of a table at first */

typedef struct ObjectSlot {
        uint64_t ptr;                   /* 0: empty (the kernel hands out no object at 0) */
        SlabObject o;
} ObjectSlot;

typedef struct ObjectTable {
        ObjectSlot *slots;              /* owned */
        size_t n_slots, n_used;
} ObjectTable;

struct Slab {
        ObjectTable tables[TABLES];
        size_t n_slots, n_live, max_objects;    /* n_slots: of every table */
        SlabGroup *sites, *caches;
        size_t n_sites, n_sites_allocated, n_caches, n_caches_allocated;
        KeyIndex site_index, cache_index;       /* call site address, cache name hash -> group */
        KeyIndex size_index;                    /* size class bytes -> its cache group */
        SlabStats stats;
        SlabReconcileStats reconcile;
};

/* FNV-1a. */
static uint64_t name_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

Slab *slab_new(size_t max_objects) {
        Slab *s = calloc(1, sizeof(Slab));
        if (!s)
                return NULL;
        s->max_objects = MAX(max_objects, (size_t) 1);
        return s;
}

void slab_set_max_objects(Slab *s, size_t max_objects) {
        s->max_objects = MAX(max_objects, (size_t) 1);
}

Slab *slab_free(Slab *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_caches; i++)
                free(s->caches[i].name);
        for (size_t t = 0; t < TABLES; t++)
                free(s->tables[t].slots);
        free(s->sites);
        free(s->caches);
        key_index_done(&s->site_index);
        key_index_done(&s->cache_index);
        key_index_done(&s->size_index);
        free(s);
        return NULL;
}

static ObjectTable *object_table(const Slab *s, uint64_t h) {
        return (ObjectTable *) &s->tables[h >> (64 - TABLE_BITS)];
}

/* The bits below the table's: a multiply-shift range reduction, so any size works (growth is 1.5x). */
static size_t object_home(const ObjectTable *t, uint64_t h) {
        return (size_t) (((unsigned __int128) (h << TABLE_BITS) * t->n_slots) >> 64);
}

static ObjectSlot *object_find(const Slab *s, uint64_t ptr) {
        uint64_t h = key_index_mix(ptr);
        const ObjectTable *t = object_table(s, h);

        if (t->n_slots == 0)
                return NULL;
        for (size_t i = object_home(t, h);; i = i + 1 == t->n_slots ? 0 : i + 1) {
                if (t->slots[i].ptr == ptr)
                        return &t->slots[i];
                if (t->slots[i].ptr == 0)
                        return NULL;
        }
}

/* A free slot for ptr in table t, known not to hold it. */
static ObjectSlot *object_slot(ObjectTable *t, uint64_t ptr) {
        size_t i = object_home(t, key_index_mix(ptr));
        while (t->slots[i].ptr != 0)
                i = i + 1 == t->n_slots ? 0 : i + 1;
        return &t->slots[i];
}

static int table_resize(Slab *s, ObjectTable *t, size_t n) {
        ObjectSlot *old = t->slots, *table = calloc(n, sizeof(ObjectSlot));
        size_t n_old = t->n_slots;
        if (!table)
                return -ENOMEM;
        t->slots = table;
        t->n_slots = n;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].ptr != 0)
                        *object_slot(t, old[i].ptr) = old[i];
        free(old);
        s->n_slots = s->n_slots - n_old + n;
        return 0;
}

/* Room for one more object in ptr's table, which stays at most 3/4 full. */
static int objects_reserve(Slab *s, uint64_t ptr) {
        ObjectTable *t = object_table(s, key_index_mix(ptr));

        if (t->n_slots > 0 && (t->n_used + 1) * 4 <= t->n_slots * 3)
                return 0;
        return table_resize(s, t, MAX(t->n_slots + t->n_slots / 2, (size_t) TABLE_MIN));
}

static size_t slot_home(const void *table, size_t i) {
        const ObjectTable *t = table;
        return t->slots[i].ptr == 0 ? BACKSHIFT_EMPTY : object_home(t, key_index_mix(t->slots[i].ptr));
}

static void slot_move(void *table, size_t to, size_t from) {
        ObjectTable *t = table;
        t->slots[to] = t->slots[from];
}

static void slot_clear(void *table, size_t i) {
        ObjectTable *t = table;
        t->slots[i].ptr = 0;
}

/* Removes a slot (backshift.h: lookups stay exact without tombstones); a table a quarter full halves. */
static void object_delete(Slab *s, ObjectSlot *slot) {
        ObjectTable *t = object_table(s, key_index_mix(slot->ptr));

        backshift_delete(t, t->n_slots, (size_t) (slot - t->slots), slot_home, slot_move, slot_clear);
        t->n_used--;
        if (t->n_used < t->n_slots / 4 && t->n_slots / 2 >= TABLE_MIN)
                (void) table_resize(s, t, t->n_slots / 2);
}

static uint32_t site_intern(Slab *s, uint64_t address) {
        /* Address 0 (a source that does not know the call site) is a site of its own. */
        uint64_t key = address;
        uint32_t site = key_index_get(&s->site_index, key);
        if (site != KEY_INDEX_NONE)
                return site;
        if (greedy_realloc(&s->sites, &s->n_sites_allocated, s->n_sites + 1, sizeof(SlabGroup), 64) < 0 ||
            key_index_put(&s->site_index, key, (uint32_t) s->n_sites) < 0)
                return SLAB_NONE;
        s->sites[s->n_sites] = (SlabGroup) { .address = address, .cache = SLAB_NONE };
        return (uint32_t) s->n_sites++;
}

/* The cache group of this name, or SLAB_NONE with *ret_key the key a new one would take. */
static uint32_t cache_probe(const Slab *s, const char *name, uint64_t *ret_key) {
        /* A collision of two names' hashes goes on probing: the index keeps hashes, the groups names. */
        uint64_t key = name_hash(name);
        for (;;) {
                uint32_t cache = key_index_get(&s->cache_index, key);
                if (cache == KEY_INDEX_NONE)
                        break;
                if (streq(s->caches[cache].name, name))
                        return cache;
                key = key_index_mix(key) ?: 1;  /* the mix keeps 0 at 0: never a fixed point */
        }
        *ret_key = key;
        return SLAB_NONE;
}

uint32_t slab_cache_find(const Slab *s, const char *name) {
        uint64_t key;

        return name && *name ? cache_probe(s, name, &key) : SLAB_NONE;
}

/* The cache group of this name, or SLAB_NONE; with create, a new one if there is none (flags its
 * SlabGroupFlags), SLAB_NONE only for lack of memory. */
static uint32_t cache_lookup(Slab *s, const char *name, bool create, unsigned flags) {
        uint64_t key;

        if (!name || !*name)
                return SLAB_NONE;
        uint32_t found = cache_probe(s, name, &key);
        if (found != SLAB_NONE || !create ||
            greedy_realloc(&s->caches, &s->n_caches_allocated, s->n_caches + 1, sizeof(SlabGroup), 64) < 0)
                return found;
        char *copy = strdup(name);
        if (!copy || key_index_put(&s->cache_index, key, (uint32_t) s->n_caches) < 0) {
                free(copy);
                return SLAB_NONE;
        }
        s->caches[s->n_caches] = (SlabGroup) { .name = copy, .cache = SLAB_NONE, .flags = flags };
        return (uint32_t) s->n_caches++;
}

/* "[size-N]": brackets, which no kernel cache name has, keep it apart from the named caches. */
static void size_class_name(uint64_t bytes, char *buf, size_t size) {
        (void) snprintf(buf, size, "[size-%" PRIu64 "]", bytes);
}

/* An object's cache group: its named cache, else the size class of the bytes it was handed (none when the
 * source does not know them). */
static uint32_t object_cache(Slab *s, const char *cache, uint64_t allocated) {
        char name[32];

        if (cache && *cache)
                return cache_lookup(s, cache, true, 0);
        if (allocated == 0 || allocated == UINT64_MAX)
                return SLAB_NONE;
        /* Every kmalloc comes here: by size, not by a name to print and hash. */
        uint32_t group = key_index_get(&s->size_index, allocated);
        if (group != KEY_INDEX_NONE)
                return group;
        size_class_name(allocated, name, sizeof(name));
        group = cache_lookup(s, name, true, SLAB_SIZE_CLASS);
        if (group == SLAB_NONE || key_index_put(&s->size_index, allocated, group) < 0)
                return SLAB_NONE;
        s->caches[group].kernel.object_size = allocated;
        return group;
}

static void group_add(SlabGroup *g, const SlabObject *o) {
        g->live_objects++;
        g->live_requested += o->requested;
        ledger_add(&g->live_allocated, o->allocated);
        g->allocs++;
}

static void group_sub(SlabGroup *g, const SlabObject *o) {
        g->live_objects--;
        g->live_requested -= o->requested;
        (void) ledger_sub(&g->live_allocated, o->allocated);
}

static void group_freed(SlabGroup *g, bool remote) {
        g->frees++;
        g->remote_frees += remote;
}

/* One of g's objects came back live at an allocation: its free was not seen. */
static void group_lost_free(SlabGroup *g) {
        g->lost_frees++;
}

void slab_note_lost(Slab *s, uint64_t n) {
        s->stats.lost_events = count_add(s->stats.lost_events, n);
}

/* Whether g lost too many frees to count its frees as visible (slab.h). */
static bool group_frees_invisible(const Slab *s, const SlabGroup *g) {
        if (g->lost_frees < SLAB_INVISIBLE_MIN_LOST)
                return false;
        /* The share lost, against the share allowed: SLAB_INVISIBLE_BASIS_POINTS and twice the share of
         * the events the source lost, in the slab events and those. */
        double known = (double) g->frees + (double) g->lost_frees;
        double events = (double) s->stats.allocs + (double) s->stats.frees + (double) s->stats.unknown_frees +
                (double) s->stats.lost_events;
        double allowed = SLAB_INVISIBLE_BASIS_POINTS / 10000.0 +
                (events > 0 ? 2.0 * (double) s->stats.lost_events / events : 0.0);
        return (double) g->lost_frees >= known * allowed;
}

/* Takes o's bytes off every total it was counted in. */
static void uncount(Slab *s, const SlabObject *o) {
        group_sub(&s->sites[o->site], o);
        if (o->cache != SLAB_NONE)
                group_sub(&s->caches[o->cache], o);
        s->stats.live_objects--;
        s->stats.live_requested -= o->requested;
        (void) ledger_sub(&s->stats.live_allocated, o->allocated);
}

int slab_alloc(Slab *s, uint64_t ptr, uint64_t call_site, const char *cache, uint32_t task, uint32_t cgroup,
               uint32_t stack, uint64_t requested, uint64_t allocated, uint32_t cpu, uint64_t now_nsec, SlabObject *ret_replaced) {
        assert(s);

        if (ret_replaced)
                ret_replaced->site = SLAB_NONE;
        s->stats.allocs++;
        /* A failed allocation is traced with a NULL pointer, which every empty slot has too. */
        ObjectSlot *slot = ptr != 0 ? object_find(s, ptr) : NULL;
        if (slot) {
                /* Its free was lost: the old record ends here, unseen by any CPU. */
                if (ret_replaced)
                        *ret_replaced = slot->o;
                uncount(s, &slot->o);
                group_lost_free(&s->sites[slot->o.site]);
                if (slot->o.cache != SLAB_NONE)
                        group_lost_free(&s->caches[slot->o.cache]);
                object_delete(s, slot);
                s->n_live--;
                s->stats.replaced++;
        }
        if (s->stats.allocs == 1)
                s->stats.first_nsec = now_nsec;
        s->stats.last_nsec = MAX(s->stats.last_nsec, now_nsec);
        if (ptr == 0 || s->n_live >= s->max_objects) {
                s->stats.dropped++;
                return -ENOSPC;
        }
        SlabObject o = {
                .site = site_intern(s, call_site),
                .cache = object_cache(s, cache, allocated),
                .task = task,
                .cgroup = cgroup,
                .stack = stack,
                .requested = (uint32_t) MIN(requested, (uint64_t) UINT32_MAX),
                .allocated = slab_object_bytes(requested, allocated),
                .cpu = cpu,
                .time_nsec = now_nsec,
        };
        /* A named cache that could not be interned loses its name, not the object. */
        if (o.site == SLAB_NONE || objects_reserve(s, ptr) < 0) {
                s->stats.dropped++;
                return -ENOMEM;
        }
        ObjectTable *t = object_table(s, key_index_mix(ptr));
        *object_slot(t, ptr) = (ObjectSlot) { .ptr = ptr, .o = o };
        t->n_used++;
        s->n_live++;
        group_add(&s->sites[o.site], &o);
        s->sites[o.site].cache = o.cache;
        if (o.cache != SLAB_NONE)
                group_add(&s->caches[o.cache], &o);
        s->stats.live_objects++;
        s->stats.live_requested += o.requested;
        ledger_add(&s->stats.live_allocated, o.allocated);
        return 0;
}

bool slab_release(Slab *s, uint64_t ptr, uint32_t cpu, SlabObject *ret) {
        assert(s);

        ObjectSlot *slot = ptr != 0 ? object_find(s, ptr) : NULL;
        if (!slot) {
                s->stats.unknown_frees++;
                return false;
        }
        if (ret)
                *ret = slot->o;
        uncount(s, &slot->o);
        group_freed(&s->sites[slot->o.site], cpu != slot->o.cpu);
        if (slot->o.cache != SLAB_NONE)
                group_freed(&s->caches[slot->o.cache], cpu != slot->o.cpu);
        object_delete(s, slot);
        s->n_live--;
        s->stats.frees++;
        return true;
}

bool slab_cache_frees_visible(const Slab *s, uint32_t cache) {
        return cache >= s->n_caches || !group_frees_invisible(s, &s->caches[cache]);
}

bool slab_site_frees_visible(const Slab *s, uint32_t site) {
        if (site >= s->n_sites)
                return true;
        const SlabGroup *g = &s->sites[site];
        if (group_frees_invisible(s, g))
                return false;
        if (slab_cache_frees_visible(s, g->cache))
                return true;
        /* A named cache is one kind of object (or a few that SLUB merged): its call sites share its frees.
         * A size class is every kmalloc of that size: only its call sites that lost a free themselves. */
        return (s->caches[g->cache].flags & SLAB_SIZE_CLASS) && g->lost_frees == 0;
}

/* Ends a live object that the kernel freed unseen (slab_reconcile()): no free, no lost free, a trim. */
static void object_drop(Slab *s, uint64_t ptr, SlabDropFn drop, void *userdata) {
        ObjectSlot *slot = object_find(s, ptr);

        if (!slot)
                return;
        SlabObject o = slot->o;
        uncount(s, &o);
        object_delete(s, slot);
        s->n_live--;
        if (o.cache != SLAB_NONE)
                s->caches[o.cache].trimmed++;
        s->reconcile.trimmed++;
        if (drop)
                drop(userdata, &o);
}

/* A live object of a cache that has objects to drop, and when it was allocated. */
typedef struct Candidate {
        uint64_t time_nsec, ptr;
        uint32_t cache;
} Candidate;

static int compare_candidates(const void *x, const void *y) {
        const Candidate *a = x, *b = y;
        if (a->cache != b->cache)
                return a->cache < b->cache ? -1 : 1;
        if (a->time_nsec != b->time_nsec)
                return a->time_nsec < b->time_nsec ? -1 : 1;
        return a->ptr < b->ptr ? -1 : a->ptr > b->ptr;
}

/* Drops the oldest want[c] live objects of every cache c. -ENOMEM (nothing dropped). */
static int drop_oldest(Slab *s, const uint64_t *want, SlabDropFn drop, void *userdata) {
        _cleanup_free_ Candidate *c = NULL;
        size_t n = 0, total = 0;

        for (size_t i = 0; i < s->n_caches; i++)
                if (want[i] > 0)
                        total += s->caches[i].live_objects;
        if (total == 0)
                return 0;
        c = calloc(total, sizeof(Candidate));
        if (!c)
                return -ENOMEM;
        /* Candidates first, drops after: deleting shifts the slots a walk would visit. */
        for (size_t t = 0; t < TABLES; t++)
                for (size_t i = 0; i < s->tables[t].n_slots && n < total; i++) {
                        const ObjectSlot *slot = &s->tables[t].slots[i];
                        if (slot->ptr != 0 && slot->o.cache != SLAB_NONE && want[slot->o.cache] > 0)
                                c[n++] = (Candidate) { .time_nsec = slot->o.time_nsec, .ptr = slot->ptr,
                                                       .cache = slot->o.cache };
                }
        qsort(c, n, sizeof(Candidate), compare_candidates);
        for (size_t i = 0, taken = 0; i < n; i++) {
                taken = i > 0 && c[i].cache == c[i - 1].cache ? taken + 1 : 0;
                if (taken < want[c[i].cache])
                        object_drop(s, c[i].ptr, drop, userdata);
        }
        return 0;
}

/* A line of slabinfo without a name (no kernel writes one) names no group: left out, never taken for a
 * failed allocation. */
static bool cache_unnamed(const SlabCache *c) {
        return !c->name || !*c->name;
}

/* The kernel's figures of the caches of one object size, summed. */
typedef struct SizeSum {
        uint64_t active, start, slack;
        uint64_t named_live;            /* what the named groups of this size hold, up to their own bounds */
} SizeSum;

int slab_reconcile(Slab *s, const SlabInfo *info, uint64_t now_nsec, SlabDropFn drop, void *userdata) {
        _cleanup_free_ uint64_t *want = NULL;
        _cleanup_free_ SizeSum *sums = NULL;
        _cleanup_free_ bool *listed = NULL;
        KeyIndex by_size = {};
        size_t n_sums = 0;
        bool first = s->reconcile.runs == 0;
        int r = -ENOMEM;

        assert(s);
        assert(info);

        s->reconcile.last_nsec = now_nsec;
        s->reconcile.error = 0;
        s->reconcile.runs++;

        /* Every cache the kernel lists gets a group, so that its count now is its start if memstrack
         * meets its objects only later. */
        for (size_t i = 0; i < info->n_caches; i++)
                if (!cache_unnamed(&info->caches[i]) && cache_lookup(s, info->caches[i].name, true, 0) == SLAB_NONE)
                        return -ENOMEM;
        listed = calloc(MAX(s->n_caches, (size_t) 1), sizeof(bool));
        want = calloc(MAX(s->n_caches, (size_t) 1), sizeof(uint64_t));
        sums = calloc(MAX(info->n_caches, (size_t) 1), sizeof(SizeSum));
        if (!listed || !want || !sums)
                goto finish;

        /* Named caches: their own figures, and their sizes' sums. */
        for (size_t i = 0; i < info->n_caches; i++) {
                const SlabCache *k = &info->caches[i];
                if (cache_unnamed(k))
                        continue;
                uint32_t cache = cache_lookup(s, k->name, false, 0);
                SlabGroup *g = &s->caches[cache];

                if (g->flags & SLAB_SIZE_CLASS)
                        continue;       /* not a kernel name: brackets */
                listed[cache] = true;
                if (!g->kernel.seen)
                        g->kernel = (SlabKernelFigures) {
                                .seen = true,
                                .start_active_objects = first ? k->active_objects : 0,
                        };
                g->kernel.known = true;
                g->kernel.active_objects = g->kernel.bound = k->active_objects;
                g->kernel.slack = k->objects_per_slab;
                g->kernel.object_size = k->object_size;

                uint32_t at = key_index_get(&by_size, k->object_size);
                if (at == KEY_INDEX_NONE) {
                        if (key_index_put(&by_size, k->object_size, (uint32_t) n_sums) < 0)
                                goto finish;
                        at = (uint32_t) n_sums++;
                }
                sums[at].active += k->active_objects;
                sums[at].start += g->kernel.start_active_objects;
                sums[at].slack = MAX(sums[at].slack, k->objects_per_slab);
                sums[at].named_live += MIN(g->live_objects, k->active_objects);
        }

        s->reconcile.caches = s->reconcile.drifting = 0;
        for (size_t i = 0; i < s->n_caches; i++) {
                SlabGroup *g = &s->caches[i];

                if (g->flags & SLAB_SIZE_CLASS) {
                        /* Unnamed objects of N bytes are in some cache of that size, beside what the named
                         * ones of that size hold. */
                        uint64_t bytes = g->kernel.object_size;
                        uint32_t at = key_index_get(&by_size, bytes);
                        if (at == KEY_INDEX_NONE) {
                                g->kernel.known = false;        /* no slab cache of that size: large kmalloc */
                                g->flags &= ~SLAB_DRIFTING;
                                continue;
                        }
                        g->kernel = (SlabKernelFigures) {
                                .known = true,
                                .seen = true,
                                .active_objects = sums[at].active,
                                .start_active_objects = sums[at].start,
                                .bound = sums[at].active - MIN(sums[at].named_live, sums[at].active),
                                .slack = sums[at].slack,
                                .object_size = bytes,
                        };
                } else if (!listed[i]) {
                        /* Gone from the kernel's list: destroyed, and every object with it. */
                        if (g->kernel.known) {
                                want[i] = g->live_objects;
                                s->reconcile.destroyed += g->live_objects;
                        }
                        g->kernel.known = false;
                        g->flags &= ~SLAB_DRIFTING;
                        continue;
                }
                s->reconcile.caches++;
                if (g->live_objects > g->kernel.bound + g->kernel.slack) {
                        g->flags |= SLAB_DRIFTING;
                        s->reconcile.drifting++;
                        want[i] = g->live_objects - (g->kernel.bound + g->kernel.slack);
                } else
                        g->flags &= ~SLAB_DRIFTING;
        }
        r = drop_oldest(s, want, drop, userdata);
        if (r < 0)
                goto finish;
        for (size_t i = 0; i < s->n_caches; i++) {
                s->caches[i].kernel.live_objects = s->caches[i].live_objects;
                s->caches[i].kernel.allocs = s->caches[i].allocs;
        }
finish:
        key_index_done(&by_size);
        return r;
}

void slab_reconcile_failed(Slab *s, int error, uint64_t now_nsec) {
        s->reconcile.last_nsec = now_nsec;
        s->reconcile.error = error;
}

const SlabReconcileStats *slab_reconcile_stats(const Slab *s) {
        return &s->reconcile;
}

void slab_reset_peaks(Slab *s) {
        for (size_t i = 0; i < s->n_sites; i++)
                s->sites[i].live_allocated.peak = s->sites[i].live_allocated.current;
        for (size_t i = 0; i < s->n_caches; i++)
                s->caches[i].live_allocated.peak = s->caches[i].live_allocated.current;
        s->stats.live_allocated.peak = s->stats.live_allocated.current;
}

static void group_clear(SlabGroup *g) {
        *g = (SlabGroup) { .address = g->address, .name = g->name };
}

void slab_clear(Slab *s) {
        for (size_t i = 0; i < s->n_sites; i++)
                group_clear(&s->sites[i]);
        for (size_t i = 0; i < s->n_caches; i++)
                group_clear(&s->caches[i]);
        /* The tables start again at their smallest with the next object. */
        for (size_t t = 0; t < TABLES; t++) {
                free(s->tables[t].slots);
                s->tables[t] = (ObjectTable) {};
        }
        s->n_slots = s->n_live = 0;
        s->stats = (SlabStats) {};
}

const SlabStats *slab_stats(const Slab *s) {
        return &s->stats;
}

size_t slab_site_count(const Slab *s) {
        return s->n_sites;
}

const SlabGroup *slab_site(const Slab *s, uint32_t site) {
        return site < s->n_sites ? &s->sites[site] : NULL;
}

size_t slab_cache_count(const Slab *s) {
        return s->n_caches;
}

const SlabGroup *slab_cache(const Slab *s, uint32_t cache) {
        return cache < s->n_caches ? &s->caches[cache] : NULL;
}

void slab_foreach(const Slab *s, void (*fn)(void *userdata, uint64_t ptr, const SlabObject *o), void *userdata) {
        for (size_t t = 0; t < TABLES; t++)
                for (size_t i = 0; i < s->tables[t].n_slots; i++)
                        if (s->tables[t].slots[i].ptr != 0)
                                fn(userdata, s->tables[t].slots[i].ptr, &s->tables[t].slots[i].o);
}

size_t slab_memory_bytes(const Slab *s) {
        return sizeof(Slab) + s->n_slots * sizeof(ObjectSlot) +
                (s->n_sites_allocated + s->n_caches_allocated) * sizeof(SlabGroup) +
                key_index_memory_bytes(&s->site_index) + key_index_memory_bytes(&s->cache_index) +
                key_index_memory_bytes(&s->size_index);
}
