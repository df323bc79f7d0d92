/* SPDX-License-Identifier: MIT */

/*
 * The slab module (daemon/core/slab.c) on synthetic objects: frees that are not visible found by pointer
 * reuse, per cache and per call site; size classes for unnamed objects; and the reconciliation with
 * /proc/slabinfo files recorded on Linux 6.18 (tests/data/slabinfo-6.18-*.txt: "start" at rest, "churn"
 * two seconds into mmap/munmap, pipe and eventfd churn, "later" the churn file without eventpoll_epi, as
 * if destroyed, and with a cache created since, memstrack_new). Expected figures are read from the files.
 */

#include <errno.h>
#include <stdlib.h>

#include "slab.h"
#include "slabinfo.h"
#include "tests.h"

#define SITE_MAPLE UINT64_C(0xffffffff821ceaf0)
#define SITE_FILP UINT64_C(0xffffffff81400000)
#define SITE_RCU_USER UINT64_C(0xffffffff81500000)
#define SITE_KMALLOC UINT64_C(0xffffffff81600000)

static uint64_t clock_nsec;

static void alloc(Slab *s, uint64_t ptr, uint64_t site, const char *cache, uint64_t bytes) {
        SlabObject old;

        ASSERT_OK(slab_alloc(s, ptr, site, cache, 1, SLAB_NONE, 0, bytes, bytes, 0, ++clock_nsec, &old));
}

static const SlabGroup *cache_named(const Slab *s, const char *name) {
        uint32_t c = slab_cache_find(s, name);
        ASSERT_NE(c, SLAB_NONE);
        return slab_cache(s, c);
}

static uint32_t site_at(const Slab *s, uint64_t address) {
        for (uint32_t i = 0; i < slab_site_count(s); i++)
                if (slab_site(s, i)->address == address)
                        return i;
        abort();
}

static SlabInfo *read_info(const char *name) {
        char path[256];
        SlabInfo *info = NULL;

        (void) snprintf(path, sizeof(path), "data/slabinfo-6.18-%s.txt", name);
        ASSERT_OK(slabinfo_read(path, &info));
        ASSERT_EQ(info->n_bad_lines, 0);
        return info;
}

static const SlabCache *info_cache(const SlabInfo *info, const char *name) {
        for (size_t i = 0; i < info->n_caches; i++)
                if (streq(info->caches[i].name, name))
                        return &info->caches[i];
        return NULL;
}

/* A cache whose frees never come (maple_node on 6.18: RCU sheaves) has invisible frees once its pointers
 * come back SLAB_INVISIBLE_MIN_LOST times, and its call site with it; a cache freeing through the
 * tracepoints does not, even beside it; one whose lost frees are fewer than SLAB_INVISIBLE_BASIS_POINTS in
 * 10,000 of its frees does not either, and does once they reach that, unless the source lost enough
 * records to explain them. A call site of a size class whose own objects never come back freed (kfree_rcu
 * of kmalloc objects) has them alone. */
static void test_invisible_frees(void) {
        Slab *s = slab_new(1 << 20);
        SlabObject o;

        ASSERT_NOT_NULL(s);
        for (uint64_t i = 1; i <= 100; i++)
                alloc(s, 0x10000 + i * 256, SITE_MAPLE, "maple_node", 256);
        for (uint64_t i = 1; i <= 100; i++) {
                alloc(s, 0x20000 + i * 192, SITE_FILP, "filp", 192);
                ASSERT_TRUE(slab_release(s, 0x20000 + i * 192, 0, &o));
        }
        const SlabGroup *maple = cache_named(s, "maple_node"), *filp = cache_named(s, "filp");
        uint32_t maple_cache = slab_cache_find(s, "maple_node"), filp_cache = slab_cache_find(s, "filp");
        uint32_t maple_site = site_at(s, SITE_MAPLE), filp_site = site_at(s, SITE_FILP);
        ASSERT_EQ(slab_site(s, maple_site)->cache, maple_cache);

        /* Pointers come back: each is a lost free, of the object's own site and cache. */
        for (uint64_t i = 1; i < SLAB_INVISIBLE_MIN_LOST; i++)
                alloc(s, 0x10000 + i * 256, SITE_MAPLE, "maple_node", 256);
        ASSERT_EQ(maple->lost_frees, SLAB_INVISIBLE_MIN_LOST - 1);
        ASSERT_EQ(maple->frees, 0);
        ASSERT_TRUE(slab_cache_frees_visible(s, maple_cache));
        alloc(s, 0x10000 + SLAB_INVISIBLE_MIN_LOST * 256, SITE_MAPLE, "maple_node", 256);
        ASSERT_TRUE(!slab_cache_frees_visible(s, maple_cache));
        ASSERT_TRUE(!slab_site_frees_visible(s, maple_site));
        ASSERT_EQ(maple->live_objects, 100);
        ASSERT_EQ(maple->allocs, 100 + SLAB_INVISIBLE_MIN_LOST);
        ASSERT_EQ(slab_stats(s)->replaced, SLAB_INVISIBLE_MIN_LOST);
        ASSERT_TRUE(slab_site_frees_visible(s, filp_site));
        ASSERT_EQ(filp->frees, 100);
        ASSERT_EQ(filp->lost_frees, 0);

        /* filp: 50,000 frees seen; lost frees fewer than one in 10,000 of all its frees leave it visible,
         * one in 10,000 does not. */
        for (uint64_t i = 101; i <= 50000; i++) {
                alloc(s, 0x200000 + (i % 1000) * 192, SITE_FILP, "filp", 192);
                ASSERT_TRUE(slab_release(s, 0x200000 + (i % 1000) * 192, 0, &o));
        }
        ASSERT_EQ(filp->frees, 50000);
        for (uint64_t k = 0; k < 2; k++)
                for (uint64_t i = 1; i <= SLAB_INVISIBLE_MIN_LOST; i++)
                        alloc(s, 0x900000 + i * 192, SITE_FILP, "filp", 192);
        ASSERT_EQ(filp->lost_frees, SLAB_INVISIBLE_MIN_LOST);
        ASSERT_LT(filp->lost_frees * 10000, (filp->frees + filp->lost_frees) * SLAB_INVISIBLE_BASIS_POINTS);
        ASSERT_TRUE(slab_cache_frees_visible(s, filp_cache));
        while (filp->lost_frees * 10000 < (filp->frees + filp->lost_frees) * SLAB_INVISIBLE_BASIS_POINTS)
                alloc(s, 0x900000 + 192, SITE_FILP, "filp", 192);
        ASSERT_TRUE(!slab_cache_frees_visible(s, filp_cache));
        /* The source lost 1 % of the events: filp's few lost frees may be those; maple_node's may not. */
        slab_note_lost(s, (slab_stats(s)->allocs + slab_stats(s)->frees) / 100);
        ASSERT_TRUE(slab_cache_frees_visible(s, filp_cache));
        ASSERT_TRUE(!slab_cache_frees_visible(s, maple_cache));

        /* kmalloc objects (no cache name): a call site whose objects come back, in the size class of a call
         * site whose frees are seen. The class is marked with it; the other call site only once it lost
         * a free itself. */
        for (uint64_t i = 1; i <= 1000; i++) {
                alloc(s, 0x400000 + i * 64, SITE_KMALLOC, NULL, 64);
                ASSERT_TRUE(slab_release(s, 0x400000 + i * 64, 0, &o));
        }
        for (uint64_t i = 1; i <= 10; i++)
                alloc(s, 0x500000 + i * 64, SITE_RCU_USER, NULL, 64);
        uint32_t size64 = slab_cache_find(s, "[size-64]");
        ASSERT_NE(size64, SLAB_NONE);
        ASSERT_TRUE(slab_cache(s, size64)->flags & SLAB_SIZE_CLASS);
        ASSERT_EQ(slab_cache(s, size64)->kernel.object_size, 64);
        ASSERT_TRUE(slab_cache_frees_visible(s, size64));
        for (uint64_t i = 1; i <= 10 * SLAB_INVISIBLE_MIN_LOST; i++)
                alloc(s, 0x500000 + (i % 10 + 1) * 64, SITE_RCU_USER, NULL, 64);
        ASSERT_TRUE(!slab_site_frees_visible(s, site_at(s, SITE_RCU_USER)));
        ASSERT_TRUE(!slab_cache_frees_visible(s, size64));
        ASSERT_TRUE(slab_site_frees_visible(s, site_at(s, SITE_KMALLOC)));
        alloc(s, 0x400000 + 64, SITE_KMALLOC, NULL, 64);
        alloc(s, 0x400000 + 64, SITE_RCU_USER, NULL, 64);
        ASSERT_TRUE(!slab_site_frees_visible(s, site_at(s, SITE_KMALLOC)));
        /* No size known: no size class. */
        alloc(s, 0x600000, SITE_KMALLOC, NULL, 0);
        ASSERT_EQ(slab_cache_find(s, "[size-0]"), SLAB_NONE);
        slab_free(s);
}

typedef struct Dropped {
        uint64_t n, bytes, newest_nsec;
} Dropped;

static void on_drop(void *userdata, const SlabObject *o) {
        Dropped *d = userdata;

        d->n++;
        d->bytes += o->allocated;
        d->newest_nsec = d->newest_nsec > o->time_nsec ? d->newest_nsec : o->time_nsec;
}

/* The first reconciliation sets every cache's start; later ones hold the live objects of each against
 * the kernel's active objects: maple_node, whose frees are unseen, ends above them and drops its oldest
 * objects down to the bound and a slab; filp stays within and drifts by what the kernel freed of its
 * older objects; unnamed objects of 64 bytes are held against every 64-byte cache less what the named
 * ones hold; a destroyed cache loses its objects; a cache created since starts from 0. */
static void test_reconcile(void) {
        SlabInfo *start = read_info("start"), *churn = read_info("churn"), *later = read_info("later");
        Slab *s = slab_new(1 << 20);
        Dropped d = {};
        SlabObject o;

        ASSERT_NOT_NULL(s);
        const SlabCache *k_maple = info_cache(churn, "maple_node"), *k_filp = info_cache(churn, "filp");
        const SlabCache *k_epi = info_cache(start, "eventpoll_epi");
        ASSERT_NOT_NULL(k_maple);
        ASSERT_NOT_NULL(k_filp);
        ASSERT_NOT_NULL(k_epi);

        ASSERT_OK(slab_reconcile(s, start, 1000, on_drop, &d));
        ASSERT_EQ(slab_reconcile_stats(s)->runs, 1);
        ASSERT_EQ(slab_reconcile_stats(s)->caches, start->n_caches);
        ASSERT_EQ(slab_reconcile_stats(s)->drifting, 0);
        const SlabGroup *maple = cache_named(s, "maple_node");
        ASSERT_TRUE(maple->kernel.known);
        ASSERT_EQ(maple->kernel.start_active_objects, info_cache(start, "maple_node")->active_objects);
        ASSERT_EQ(d.n, 0);

        /* Twice the kernel's maple nodes, none freed; 100 file objects, 40 freed; eventpoll items. */
        uint64_t n_maple = 2 * k_maple->active_objects;
        for (uint64_t i = 1; i <= n_maple; i++)
                alloc(s, 0x1000000 + i * 256, SITE_MAPLE, "maple_node", 256);
        for (uint64_t i = 1; i <= 100; i++)
                alloc(s, 0x2000000 + i * 192, SITE_FILP, "filp", 192);
        for (uint64_t i = 1; i <= 40; i++)
                ASSERT_TRUE(slab_release(s, 0x2000000 + i * 192, 0, &o));
        for (uint64_t i = 1; i <= 30; i++)
                alloc(s, 0x3000000 + i * 128, SITE_RCU_USER, "eventpoll_epi", 128);
        maple = cache_named(s, "maple_node");
        const SlabGroup *filp = cache_named(s, "filp"), *epi = cache_named(s, "eventpoll_epi");

        /* Unnamed 64-byte objects: more than every 64-byte cache holds and two slabs. */
        uint64_t active64 = 0, slack64 = 0;
        for (size_t i = 0; i < churn->n_caches; i++)
                if (churn->caches[i].object_size == 64) {
                        active64 += churn->caches[i].active_objects;
                        slack64 = slack64 > churn->caches[i].objects_per_slab ? slack64 :
                                churn->caches[i].objects_per_slab;
                }
        for (uint64_t i = 1; i <= 50; i++)
                alloc(s, 0x4000000 + i * 64, SITE_FILP, "anon_vma_chain", 64);
        for (uint64_t i = 1; i <= active64 + 2 * slack64; i++)
                alloc(s, 0x5000000 + i * 64, SITE_KMALLOC, NULL, 64);
        /* Unnamed 16 KiB objects: large kmalloc, no slab cache of that size. */
        alloc(s, 0x6000000, SITE_KMALLOC, NULL, 16384);

        uint64_t oldest_kept = clock_nsec;
        ASSERT_OK(slab_reconcile(s, churn, 2000, on_drop, &d));
        const SlabReconcileStats *rs = slab_reconcile_stats(s);
        ASSERT_EQ(rs->runs, 2);
        ASSERT_EQ(rs->last_nsec, 2000);

        /* maple_node: cut to the kernel's active objects and one slab, its oldest gone. */
        ASSERT_TRUE(maple->flags & SLAB_DRIFTING);
        ASSERT_EQ(maple->kernel.active_objects, k_maple->active_objects);
        ASSERT_EQ(maple->kernel.bound, k_maple->active_objects);
        ASSERT_EQ(maple->kernel.slack, k_maple->objects_per_slab);
        ASSERT_EQ(maple->live_objects, k_maple->active_objects + k_maple->objects_per_slab);
        ASSERT_EQ(maple->kernel.live_objects, maple->live_objects);
        ASSERT_EQ(maple->kernel.allocs, n_maple);
        ASSERT_EQ(maple->trimmed, n_maple - maple->live_objects);
        ASSERT_EQ(slab_site(s, site_at(s, SITE_MAPLE))->live_objects, maple->live_objects);
        ASSERT_EQ(maple->frees, 0);
        ASSERT_EQ(maple->lost_frees, 0);
        ASSERT_TRUE(slab_release(s, 0x1000000 + n_maple * 256, 0, &o));      /* the newest stays */
        ASSERT_TRUE(!slab_release(s, 0x1000000 + 256, 0, &o));                /* the oldest went */

        /* filp: within; the kernel has fewer than at the start, memstrack 60 of its own. */
        ASSERT_TRUE(!(filp->flags & SLAB_DRIFTING));
        ASSERT_EQ(filp->trimmed, 0);
        ASSERT_EQ(filp->live_objects, 60);
        ASSERT_EQ(filp->kernel.start_active_objects, info_cache(start, "filp")->active_objects);
        ASSERT_EQ(filp->kernel.active_objects, k_filp->active_objects);

        /* [size-64]: the bound is the 64-byte caches' active objects less anon_vma_chain's 50. */
        const SlabGroup *size64 = cache_named(s, "[size-64]");
        ASSERT_TRUE(size64->kernel.known);
        ASSERT_EQ(size64->kernel.active_objects, active64);
        ASSERT_EQ(size64->kernel.bound, active64 - 50);
        ASSERT_EQ(size64->kernel.slack, slack64);
        ASSERT_TRUE(size64->flags & SLAB_DRIFTING);
        ASSERT_EQ(size64->live_objects, active64 - 50 + slack64);
        ASSERT_EQ(cache_named(s, "anon_vma_chain")->live_objects, 50);
        const SlabGroup *large = cache_named(s, "[size-16384]");
        ASSERT_TRUE(!large->kernel.known);
        ASSERT_EQ(large->live_objects, 1);

        ASSERT_EQ(rs->drifting, 2);
        ASSERT_EQ(rs->trimmed, maple->trimmed + size64->trimmed);
        ASSERT_EQ(d.n, rs->trimmed);
        ASSERT_EQ(d.bytes, maple->trimmed * 256 + size64->trimmed * 64);
        ASSERT_LT(d.newest_nsec, oldest_kept);
        ASSERT_EQ(rs->destroyed, 0);
        ASSERT_EQ(slab_stats(s)->live_objects, 1 + maple->live_objects + 60 + 30 + 50 + size64->live_objects);

        /* eventpoll_epi destroyed: its 30 objects go; memstrack_new, created since, starts from 0. */
        uint64_t trimmed_before = rs->trimmed;
        ASSERT_OK(slab_reconcile(s, later, 3000, on_drop, &d));
        ASSERT_EQ(epi->live_objects, 0);
        ASSERT_TRUE(!epi->kernel.known);
        ASSERT_EQ(epi->trimmed, 30);
        ASSERT_EQ(rs->destroyed, 30);
        ASSERT_EQ(rs->trimmed, trimmed_before + 30);
        ASSERT_EQ(slab_site(s, site_at(s, SITE_RCU_USER))->live_objects, 0);
        const SlabGroup *fresh = cache_named(s, "memstrack_new");
        ASSERT_TRUE(fresh->kernel.known);
        ASSERT_EQ(fresh->kernel.start_active_objects, 0);
        ASSERT_EQ(fresh->kernel.active_objects, 40);
        /* Within bounds now: nothing drifts, nothing more goes. */
        ASSERT_EQ(rs->drifting, 0);
        ASSERT_TRUE(!(maple->flags & SLAB_DRIFTING));

        slab_reconcile_failed(s, -EACCES, 4000);
        ASSERT_EQ(rs->error, -EACCES);
        ASSERT_EQ(rs->last_nsec, 4000);
        ASSERT_EQ(rs->runs, 3);
        slab_free(s);
        slabinfo_free(start);
        slabinfo_free(churn);
        slabinfo_free(later);
}

/* A slabinfo line without a name (no kernel writes one, a damaged file may) is left out: the other caches
 * are reconciled, nothing is taken for a failed allocation. */
static void test_reconcile_unnamed(void) {
        SlabCache caches[] = {
                { .name = (char *) "", .active_objects = 5, .objects = 8, .object_size = 64 },
                { .name = (char *) "filp", .active_objects = 1, .objects = 16, .object_size = 192 },
                { .name = NULL, .active_objects = 5, .objects = 8, .object_size = 64 },
        };
        SlabInfo info = { .caches = caches, .n_caches = ELEMENTSOF(caches) };
        Slab *s = slab_new(1 << 20);
        Dropped d = {};

        ASSERT_NOT_NULL(s);
        alloc(s, 0x2000000, SITE_FILP, "filp", 192);
        ASSERT_OK(slab_reconcile(s, &info, 1000, on_drop, &d));
        ASSERT_EQ(slab_reconcile_stats(s)->caches, 1);
        ASSERT_TRUE(cache_named(s, "filp")->kernel.known);
        ASSERT_EQ(d.n, 0);
        slab_free(s);
}

int main(void) {
        TEST(test_invisible_frees);
        TEST(test_reconcile);
        TEST(test_reconcile_unnamed);
        return 0;
}
