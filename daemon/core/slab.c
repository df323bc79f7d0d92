/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyindex.h"
#include "macro.h"
#include "slab.h"

#define TABLE_MIN 1024u                 /* slots of the object table at first; a power of two */

typedef struct ObjectSlot {
        uint64_t ptr;                   /* 0: empty (the kernel hands out no object at 0) */
        SlabObject o;
} ObjectSlot;

struct Slab {
        ObjectSlot *objects;            /* linear probing, no tombstones: deletion shifts back */
        size_t n_slots, n_live, max_objects;
        SlabGroup *sites, *caches;
        size_t n_sites, n_sites_allocated, n_caches, n_caches_allocated;
        KeyIndex site_index, cache_index;       /* call site address, cache name hash -> group */
        SlabStats stats;
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

Slab *slab_free(Slab *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_caches; i++)
                free(s->caches[i].name);
        free(s->objects);
        free(s->sites);
        free(s->caches);
        key_index_done(&s->site_index);
        key_index_done(&s->cache_index);
        free(s);
        return NULL;
}

static size_t object_home(const Slab *s, uint64_t ptr) {
        return key_index_mix(ptr) & (s->n_slots - 1);
}

static ObjectSlot *object_find(const Slab *s, uint64_t ptr) {
        if (s->n_slots == 0)
                return NULL;
        for (size_t i = object_home(s, ptr);; i = (i + 1) & (s->n_slots - 1)) {
                if (s->objects[i].ptr == ptr)
                        return &s->objects[i];
                if (s->objects[i].ptr == 0)
                        return NULL;
        }
}

/* A free slot for ptr, known not to be in the table. */
static ObjectSlot *object_slot(Slab *s, uint64_t ptr) {
        size_t i = object_home(s, ptr);
        while (s->objects[i].ptr != 0)
                i = (i + 1) & (s->n_slots - 1);
        return &s->objects[i];
}

/* Keeps the table at most 3/4 full, up to the bound on live objects. */
static int objects_reserve(Slab *s) {
        if (s->n_slots > 0 && (s->n_live + 1) * 4 <= s->n_slots * 3)
                return 0;
        size_t n = s->n_slots ? s->n_slots * 2 : TABLE_MIN;
        ObjectSlot *old = s->objects, *table = calloc(n, sizeof(ObjectSlot));
        size_t n_old = s->n_slots;
        if (!table)
                return -ENOMEM;
        s->objects = table;
        s->n_slots = n;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].ptr != 0)
                        *object_slot(s, old[i].ptr) = old[i];
        free(old);
        return 0;
}

/* Removes a slot, moving later slots of its probe run back so that lookups need no tombstones. */
static void object_delete(Slab *s, ObjectSlot *slot) {
        size_t mask = s->n_slots - 1, hole = (size_t) (slot - s->objects);

        for (size_t i = (hole + 1) & mask; s->objects[i].ptr != 0; i = (i + 1) & mask) {
                size_t home = object_home(s, s->objects[i].ptr);
                /* Movable into the hole when its home is not in (hole, i]. */
                if (((i - home) & mask) >= ((i - hole) & mask)) {
                        s->objects[hole] = s->objects[i];
                        hole = i;
                }
        }
        s->objects[hole].ptr = 0;
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
        s->sites[s->n_sites] = (SlabGroup) { .address = address };
        return (uint32_t) s->n_sites++;
}

static uint32_t cache_intern(Slab *s, const char *name) {
        if (!name || !*name)
                return SLAB_NONE;
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
        if (greedy_realloc(&s->caches, &s->n_caches_allocated, s->n_caches + 1, sizeof(SlabGroup), 64) < 0)
                return SLAB_NONE;
        char *copy = strdup(name);
        if (!copy || key_index_put(&s->cache_index, key, (uint32_t) s->n_caches) < 0) {
                free(copy);
                return SLAB_NONE;
        }
        s->caches[s->n_caches] = (SlabGroup) { .name = copy };
        return (uint32_t) s->n_caches++;
}

static void group_add(SlabGroup *g, const SlabObject *o) {
        g->live_objects++;
        g->live_requested += o->requested;
        ledger_add(&g->live_allocated, o->allocated);
        g->allocs++;
}

static void group_sub(SlabGroup *g, const SlabObject *o, bool remote) {
        g->live_objects--;
        g->live_requested -= o->requested;
        (void) ledger_sub(&g->live_allocated, o->allocated);
        g->frees++;
        g->remote_frees += remote;
}

/* Takes o's bytes off every total it was counted in. */
static void uncount(Slab *s, const SlabObject *o, uint32_t cpu) {
        bool remote = cpu != o->cpu;

        group_sub(&s->sites[o->site], o, remote);
        if (o->cache != SLAB_NONE)
                group_sub(&s->caches[o->cache], o, remote);
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
                uncount(s, &slot->o, slot->o.cpu);
                object_delete(s, slot);
                s->n_live--;
                s->stats.replaced++;
        }
        if (ptr == 0 || s->n_live >= s->max_objects) {
                s->stats.dropped++;
                return -ENOSPC;
        }
        SlabObject o = {
                .site = site_intern(s, call_site),
                .cache = cache_intern(s, cache),
                .task = task,
                .cgroup = cgroup,
                .stack = stack,
                .requested = (uint32_t) MIN(requested, (uint64_t) UINT32_MAX),
                .allocated = slab_object_bytes(requested, allocated),
                .cpu = cpu,
                .time_nsec = now_nsec,
        };
        /* A named cache that could not be interned loses its name, not the object. */
        if (o.site == SLAB_NONE || objects_reserve(s) < 0) {
                s->stats.dropped++;
                return -ENOMEM;
        }
        ObjectSlot *free_slot = object_slot(s, ptr);
        *free_slot = (ObjectSlot) { .ptr = ptr, .o = o };
        s->n_live++;
        group_add(&s->sites[o.site], &o);
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
        uncount(s, &slot->o, cpu);
        object_delete(s, slot);
        s->n_live--;
        s->stats.frees++;
        return true;
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
        /* The table starts again at its smallest with the next object. */
        free(s->objects);
        s->objects = NULL;
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
        for (size_t i = 0; i < s->n_slots; i++)
                if (s->objects[i].ptr != 0)
                        fn(userdata, s->objects[i].ptr, &s->objects[i].o);
}

size_t slab_memory_bytes(const Slab *s) {
        return sizeof(Slab) + s->n_slots * sizeof(ObjectSlot) +
                (s->n_sites_allocated + s->n_caches_allocated) * sizeof(SlabGroup) +
                key_index_memory_bytes(&s->site_index) + key_index_memory_bytes(&s->cache_index);
}
