/* SPDX-License-Identifier: MIT */

/*
 * The Explain view (daemon/api/explain.c) over a synthetic core and the recorded cgroup directories of
 * tests/data/memcg: the kernel's figures on cgroup2 and on v1, memstrack's split between live processes and
 * none, by task, stack, cache and call site, the units below, the comparisons and the reasons.
 */

#include <errno.h>
#include <string.h>

#include "breakdown.h"
#include "coldness.h"
#include "explain.h"
#include "macro.h"
#include "synthetic-events.h"
#include "tests.h"

#define HOLDER_ID 7001
#define INNER_ID 7002
#define GONE_ID 7003
#define GFP_USER_MOVABLE 0x140cca       /* GFP_HIGHUSER_MOVABLE | __GFP_COMP */
#define GFP_KERNEL_ 0xcc0

static void alloc_kind(Accounting *a, int32_t pid, uint64_t cgroup, uint64_t pfn, uint32_t order, uint64_t gfp) {
        MsEvent e = synthetic_page_kind_event(pid, pfn, order, synthetic_stack(synthetic_chain_kernel, 3, 3), gfp, 1);
        e.cgroup_id = cgroup;
        synthetic_feed(a, e);
}

static void object(Accounting *a, int32_t pid, uint64_t cgroup, uint64_t ptr, uint64_t bytes, const char *cache,
                uint64_t call_site, SyntheticChain chain) {
        MsEvent e = synthetic_object_event(MS_EVENT_OBJECT_ALLOC, pid, ptr, bytes, bytes, cache, call_site,
                                           synthetic_chain_stack(chain));
        e.cgroup_id = cgroup;
        synthetic_feed(a, e);
}

static void name_cgroups(Accounting *a) {
        Units *u = accounting_units(a);

        for (uint32_t c = 1; c < units_cgroup_count(u); c++) {
                const CgroupUsage *x = units_cgroup(u, c);
                if (!x->pending)
                        continue;
                if (x->id == HOLDER_ID)
                        ASSERT_OK(units_cgroup_resolve(u, c, "holder.service", "/system.slice/holder.service"));
                else if (x->id == INNER_ID)
                        ASSERT_OK(units_cgroup_resolve(u, c, "inner.scope", "/system.slice/holder.service/inner.scope"));
                else if (x->id == GONE_ID) {
                        ASSERT_OK(units_cgroup_resolve(u, c, "gone.service", "/system.slice/gone.service"));
                        units_cgroup_set_removed(u, c, true);
                }
        }
}

/*
 * holder.service: pid 10 (live) holds 64 movable pages and an order-2 kernel block, and 3 inode objects;
 * pid 11 and pid 12, both "touch", exited and left 2 dentries, 1 inode and one kernel page; inner.scope
 * below it holds 4 pages; gone.service's cgroup is removed.
 */
static Ksym *ksym;

static Accounting *scene(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        c.slab = true;
        ASSERT_OK(accounting_new(&c, ksym, &a));
        synthetic_task(a, 10, "holder");
        synthetic_task(a, 11, "touch");
        synthetic_task(a, 12, "touch");
        synthetic_task(a, 13, "inner");
        synthetic_task(a, 14, "gone");
        for (uint64_t i = 0; i < 64; i++)
                alloc_kind(a, 10, HOLDER_ID, 0x10000 + i, 0, GFP_USER_MOVABLE);
        alloc_kind(a, 10, HOLDER_ID, 0x20000, 2, GFP_KERNEL_);
        for (uint64_t i = 0; i < 3; i++)
                object(a, 10, HOLDER_ID, 0xa000 + i * 0x100, 600, "inode_cache", 0xffffffff8100a010, SYNTHETIC_EXT4);
        object(a, 11, HOLDER_ID, 0xb000, 192, "dentry", 0xffffffff81005020, SYNTHETIC_KERNEL);
        object(a, 12, HOLDER_ID, 0xb100, 192, "dentry", 0xffffffff81005020, SYNTHETIC_KERNEL);
        object(a, 12, HOLDER_ID, 0xb200, 600, "inode_cache", 0xffffffff8100a010, SYNTHETIC_EXT4);
        object(a, 12, HOLDER_ID, 0xb300, 64, NULL, 0xffffffff81005020, SYNTHETIC_KERNEL);
        /* freed again: */
        synthetic_feed(a, synthetic_object_event(MS_EVENT_OBJECT_FREE, 12, 0xb300, 0, 0, NULL, 0, (MsStack) {}));
        alloc_kind(a, 12, HOLDER_ID, 0x30000, 0, GFP_KERNEL_);
        for (uint64_t i = 0; i < 4; i++)
                alloc_kind(a, 13, INNER_ID, 0x40000 + i, 0, GFP_USER_MOVABLE);
        alloc_kind(a, 14, GONE_ID, 0x50000, 0, GFP_USER_MOVABLE);
        synthetic_exit(a, 11);
        synthetic_exit(a, 12);
        name_cgroups(a);
        return a;
}

static json_t *explain(Accounting *a, const Memcg *m, const char *name) {
        json_t *reply = NULL;
        ExplainQuery q = { .name = name, .stacks = 2, .memcg = m, .memcg_reason = "none here", .page_size = 4096,
                           .uptime_usec = 42000000 };
        ASSERT_OK(explain_query_json(a, &q, &reply));
        return reply;
}

static json_int_t int_at(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        ASSERT_TRUE(json_is_integer(v));
        return json_integer_value(v);
}

static const json_t *row_named(const json_t *rows, const char *key, const char *value) {
        const json_t *x;
        size_t i;

        json_array_foreach(rows, i, x)
                if (json_is_string(json_object_get(x, key)) && streq(json_string_value(json_object_get(x, key)), value))
                        return x;
        return NULL;
}

static bool has_reason(const json_t *reply, const char *reason) {
        return row_named(json_object_get(reply, "reasons"), "reason", reason) != NULL;
}

static void test_holders(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        Accounting *a = scene();
        json_auto_t *reply = NULL;

        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v2", &m));
        reply = explain(a, m, "holder.service");
        ASSERT_STREQ(json_string_value(json_object_get(reply, "cgroup")), "/system.slice/holder.service");
        ASSERT_TRUE(json_is_true(json_object_get(reply, "live")));
        ASSERT_EQ(int_at(reply, "tasks"), 1);
        ASSERT_EQ(int_at(reply, "currentPages"), 64 + 4 + 1);
        ASSERT_EQ(int_at(reply, "slabBytes"), 3 * 600 + 2 * 192 + 600);
        ASSERT_EQ(int_at(reply, "descendantPages"), 4);

        const json_t *alive = json_object_get(reply, "alive"), *orphaned = json_object_get(reply, "orphaned");
        ASSERT_EQ(int_at(alive, "pages"), 68);
        ASSERT_EQ(int_at(alive, "slabBytes"), 1800);
        ASSERT_EQ(int_at(alive, "slabObjects"), 3);
        ASSERT_EQ(int_at(orphaned, "pages"), 1);
        ASSERT_EQ(int_at(orphaned, "slabBytes"), 2 * 192 + 600);
        ASSERT_EQ(int_at(orphaned, "slabObjects"), 3);

        /* The live process by pid; the two exited "touch" processes as one row of two. */
        const json_t *holder = json_array_get(json_object_get(alive, "tasks"), 0);
        ASSERT_EQ(int_at(holder, "pid"), 10);
        ASSERT_EQ(int_at(holder, "pages"), 68);
        ASSERT_EQ(json_array_size(json_object_get(orphaned, "tasks")), 1);
        const json_t *touch = json_array_get(json_object_get(orphaned, "tasks"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(touch, "comm")), "touch");
        ASSERT_TRUE(json_is_null(json_object_get(touch, "pid")));
        ASSERT_EQ(int_at(touch, "processes"), 2);
        ASSERT_EQ(int_at(touch, "pages"), 1);
        ASSERT_EQ(int_at(touch, "slabBytes"), 984);

        /* What no live process owns, by cache and by call site; a freed object is not in it. */
        const json_t *caches = json_object_get(orphaned, "slabCaches");
        ASSERT_EQ(json_array_size(caches), 2);
        ASSERT_EQ(int_at(row_named(caches, "name", "dentry"), "bytes"), 384);
        ASSERT_EQ(int_at(row_named(caches, "name", "dentry"), "objects"), 2);
        ASSERT_EQ(int_at(row_named(caches, "name", "inode_cache"), "bytes"), 600);
        const json_t *sites = json_object_get(orphaned, "slabCallSites");
        ASSERT_EQ(json_array_size(sites), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(sites, 0), "name")), "vfs_write+0x10");
        ASSERT_TRUE(json_is_null(json_object_get(json_array_get(sites, 0), "address")));
        /* Slab stacks, biggest first: inode through ext4, then dentries through the kernel chain. */
        const json_t *slab_stacks = json_object_get(orphaned, "slabStacks");
        ASSERT_EQ(json_array_size(slab_stacks), 2);
        ASSERT_EQ(int_at(json_array_get(slab_stacks, 0), "bytes"), 600);
        ASSERT_EQ(int_at(json_array_get(slab_stacks, 1), "objects"), 2);
        ASSERT_EQ(json_array_size(json_object_get(json_array_get(slab_stacks, 0), "frames")), 5);
        /* Page stacks: all the holder's pages went through the one kernel chain. */
        const json_t *stacks = json_object_get(alive, "stacks");
        ASSERT_EQ(json_array_size(stacks), 1);
        ASSERT_EQ(int_at(json_array_get(stacks, 0), "currentPages"), 68);

        /* Pages by kind: the movable ones are user memory. */
        const json_t *kinds = json_object_get(reply, "pageKinds");
        ASSERT_EQ(int_at(kinds, "movable"), 64);
        ASSERT_EQ(int_at(kinds, "unmovable"), 5);
        ASSERT_EQ(int_at(kinds, "unknown"), 0);

        accounting_free(a);
}

/* The kernel's side on cgroup2: figures with their sources, the difference, what it compares. */
static void test_kernel_v2(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        Accounting *a = scene();
        json_auto_t *reply = NULL;

        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v2", &m));
        reply = explain(a, m, "holder.service");
        const json_t *k = json_object_get(reply, "kernel");
        ASSERT_STREQ(json_string_value(json_object_get(k, "hierarchy")), "v2");
        ASSERT_STREQ(json_string_value(json_object_get(k, "path")), "data/memcg/v2/system.slice/holder.service");
        ASSERT_EQ(int_at(k, "currentBytes"), 70275072);
        ASSERT_TRUE(json_is_null(json_object_get(k, "maxBytes")));     /* "max": no limit */
        ASSERT_EQ(int_at(k, "highBytes"), 134217728);
        ASSERT_EQ(json_array_size(json_object_get(k, "missing")), 0);
        const json_t *slab = row_named(json_object_get(k, "stat"), "name", "slab");
        ASSERT_EQ(int_at(slab, "bytes"), 1242016);
        ASSERT_STREQ(json_string_value(json_object_get(slab, "source")), "memory.stat slab");
        ASSERT_EQ(int_at(row_named(json_object_get(k, "events"), "name", "high"), "count"), 3);
        ASSERT_TRUE(json_is_null(json_object_get(reply, "kernelReason")));

        /* The total compared takes the units below in: 69 + 4 pages. */
        ASSERT_EQ(int_at(reply, "differenceBytes"), 70275072 - 73 * 4096);
        ASSERT_TRUE(json_is_true(json_object_get(reply, "kernelCountsMore")));
        const json_t *cmp = json_object_get(reply, "comparisons");
        ASSERT_EQ(int_at(row_named(cmp, "what", "total"), "memstrackBytes"), 73 * 4096);
        ASSERT_EQ(int_at(row_named(cmp, "what", "user"), "kernelBytes"), 67522560 + 1232896);
        ASSERT_EQ(int_at(row_named(cmp, "what", "anon"), "memstrackBytes"), 64 * 4096);
        ASSERT_EQ(int_at(row_named(cmp, "what", "slab"), "memstrackBytes"), 1800 + 984);
        ASSERT_TRUE(has_reason(reply, "hierarchical"));
        ASSERT_TRUE(has_reason(reply, "before-tracing"));
        ASSERT_TRUE(has_reason(reply, "slab-accounting"));
        ASSERT_TRUE(!has_reason(reply, "remote-charges"));      /* sock is 0 */
        ASSERT_TRUE(!has_reason(reply, "reparented"));
        accounting_free(a);
}

/* On v1: what the hierarchy lacks is named, never zero; slab has no kernel figure. */
static void test_kernel_v1(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        Accounting *a = scene();
        json_auto_t *reply = NULL;

        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v1", &m));
        reply = explain(a, m, "holder.service");
        const json_t *k = json_object_get(reply, "kernel");
        ASSERT_STREQ(json_string_value(json_object_get(k, "hierarchy")), "v1");
        ASSERT_EQ(int_at(k, "maxBytes"), 268435456);
        ASSERT_TRUE(json_is_null(json_object_get(k, "highBytes")));
        bool slab_missing = false, high_missing = false;
        const json_t *x;
        size_t i;
        json_array_foreach(json_object_get(k, "missing"), i, x) {
                slab_missing |= streq(json_string_value(x), "slab");
                high_missing |= streq(json_string_value(x), "high");
        }
        ASSERT_TRUE(slab_missing && high_missing);
        ASSERT_NULL(row_named(json_object_get(k, "stat"), "name", "slab"));
        ASSERT_STREQ(json_string_value(json_object_get(row_named(json_object_get(k, "stat"), "name", "anon"), "source")),
                     "memory.stat total_rss");
        const json_t *cmp = json_object_get(reply, "comparisons");
        ASSERT_TRUE(json_is_null(json_object_get(row_named(cmp, "what", "slab"), "kernelBytes")));
        ASSERT_EQ(int_at(row_named(cmp, "what", "kernel"), "kernelBytes"), 241664);
        accounting_free(a);
}

/* No kernel figures: a unit whose cgroup is gone, a cgroup the hierarchy has no directory for, no memory
 * controller at all; an unknown unit. */
static void test_without_kernel(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        Accounting *a = scene();
        json_t *reply = NULL;

        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v1", &m));
        reply = explain(a, m, "gone.service");
        ASSERT_TRUE(json_is_null(json_object_get(reply, "kernel")));
        ASSERT_STREQ(json_string_value(json_object_get(reply, "kernelReason")), "the unit's cgroups are gone");
        ASSERT_TRUE(json_is_false(json_object_get(reply, "live")));
        ASSERT_TRUE(has_reason(reply, "reparented"));
        ASSERT_TRUE(has_reason(reply, "no-kernel-figures"));
        ASSERT_TRUE(json_is_null(json_object_get(reply, "differenceBytes")));
        json_decref(reply);

        reply = explain(a, m, "inner.scope");
        ASSERT_TRUE(json_is_null(json_object_get(reply, "kernel")));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(reply, "kernelReason")), "memory accounting"));
        json_decref(reply);

        reply = explain(a, NULL, "holder.service");
        ASSERT_STREQ(json_string_value(json_object_get(reply, "kernelReason")), "none here");
        ASSERT_EQ(int_at(json_object_get(reply, "alive"), "pages"), 68);
        json_decref(reply);

        ExplainQuery q = { .name = "nonesuch.service", .page_size = 4096 };
        ASSERT_EQ(explain_query_json(a, &q, &reply), -ENXIO);
        accounting_free(a);
}

/* Explain in short for several units from one walk: the same split as Explain's, the kernel's figures
 * where they can be read, unknown names left out. */
static void test_explain_units(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        Accounting *a = scene();
        json_auto_t *names = json_pack("[s, s, s]", "holder.service", "nonesuch.service", "inner.scope");
        json_auto_t *reply = NULL;

        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v2", &m));
        ASSERT_OK(explain_units_json(a, names, m, 4096, &reply));
        const json_t *units = json_object_get(reply, "units");
        ASSERT_EQ(json_array_size(units), 2);
        const json_t *holder = json_array_get(units, 0), *inner = json_array_get(units, 1);
        ASSERT_STREQ(json_string_value(json_object_get(holder, "name")), "holder.service");
        ASSERT_EQ(int_at(holder, "aliveBytes"), 68 * 4096);
        ASSERT_EQ(int_at(holder, "orphanedBytes"), 1 * 4096);
        ASSERT_EQ(int_at(holder, "aliveSlabBytes"), 1800);
        ASSERT_EQ(int_at(holder, "orphanedSlabBytes"), 984);
        ASSERT_EQ(int_at(json_object_get(holder, "kernel"), "currentBytes"), 70275072);
        ASSERT_STREQ(json_string_value(json_object_get(inner, "name")), "inner.scope");
        ASSERT_EQ(int_at(inner, "aliveBytes"), 4 * 4096);
        ASSERT_TRUE(json_is_null(json_object_get(inner, "kernel")));  /* no directory in the recording */
        accounting_free(a);
}

static json_int_t pages_of(const json_t *reply, const char *key) {
        const json_t *row = row_named(json_object_get(reply, "rows"), "key", key);
        return row ? int_at(row, "pages") : -1;
}

/* Pages by kind: exact per unit, task and module, the scopes' errors, zones and flag names when known. */
static void test_breakdown(void) {
        Accounting *a = scene();
        json_t *reply = NULL;

        ASSERT_OK(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_ORDER, .pid = -1,
                                                              .unit = "holder.service" }, &reply));
        ASSERT_STREQ(json_string_value(json_object_get(reply, "scope")), "[unit holder.service]");
        ASSERT_EQ(int_at(reply, "totalPages"), 69);
        ASSERT_EQ(pages_of(reply, "0"), 65);
        ASSERT_EQ(pages_of(reply, "2"), 4);
        ASSERT_EQ(int_at(json_array_get(json_object_get(reply, "rows"), 0), "order"), 0);
        json_decref(reply);

        /* Without names, flags in hex; the holder's own pages only with its pid. */
        ASSERT_OK(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_GFP, .pid = 10 }, &reply));
        ASSERT_EQ(pages_of(reply, "0x140cca"), 64);
        ASSERT_EQ(pages_of(reply, "0xcc0"), 4);
        ASSERT_TRUE(json_is_false(json_object_get(reply, "gfpNamesKnown")));
        json_decref(reply);

        GfpName *names = calloc(2, sizeof(GfpName));
        ASSERT_NOT_NULL(names);
        names[0] = (GfpName) { 0x100cca, strdup("GFP_HIGHUSER_MOVABLE") };
        names[1] = (GfpName) { 0x40000, strdup("__GFP_COMP") };
        page_kinds_set_gfp_names(accounting_page_kinds(a), names, 2);
        ASSERT_OK(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_GFP, .pid = -1, .limit = 1 },
                                       &reply));
        ASSERT_EQ(json_array_size(json_object_get(reply, "rows")), 1);
        ASSERT_EQ(pages_of(reply, "GFP_HIGHUSER_MOVABLE|__GFP_COMP"), 64 + 4 + 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(json_object_get(reply, "rows"), 0), "gfpFlags")),
                     "0x140cca");
        ASSERT_EQ(int_at(reply, "otherPages"), 4 + 1);
        json_decref(reply);

        ASSERT_OK(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_MIGRATETYPE, .pid = -1 }, &reply));
        ASSERT_EQ(pages_of(reply, "Movable"), 74);
        json_decref(reply);

        /* No zones: every page's node is unknown; with them, the pfn says. */
        ASSERT_OK(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_NODE, .pid = -1 }, &reply));
        ASSERT_EQ(pages_of(reply, "[unknown]"), 74);
        ASSERT_TRUE(json_is_false(json_object_get(reply, "zonesKnown")));
        json_decref(reply);

        ASSERT_OK(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_ORDER, .pid = -1,
                                                              .module = "vmlinux" }, &reply));
        ASSERT_EQ(int_at(reply, "totalPages"), 74);
        json_decref(reply);
        ASSERT_EQ(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_ORDER, .pid = 999 }, &reply), -ESRCH);
        ASSERT_EQ(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_ORDER, .pid = -1, .unit = "x" }, &reply),
                  -ENXIO);
        ASSERT_EQ(breakdown_query_json(a, &(BreakdownQuery) { .by = BREAKDOWN_BY_ORDER, .pid = -1, .module = "x" },
                                       &reply), -ENOENT);
        accounting_free(a);
}

/* The LRU's inactive lists beside the access source's last round: holder.service's 64 movable pages cold,
 * its kernel block hot, the page pid 12 left in no region (unknown); without a source, no figure of ours. */
static void test_idle(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        Accounting *a = scene();
        json_auto_t *without = NULL, *with = NULL;
        Coldness *c = coldness_new(10000000, 60000000);

        ASSERT_NOT_NULL(c);
        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v2", &m));
        without = explain(a, m, "holder.service");
        const json_t *row = row_named(json_object_get(without, "comparisons"), "what", "inactive");
        ASSERT_EQ(int_at(row, "kernelBytes"), 67518464 + 1232896);
        ASSERT_TRUE(json_is_null(json_object_get(row, "memstrackBytes")));
        ASSERT_TRUE(!has_reason(without, "lru-order"));

        const AccessRegion regions[] = { { 0x10000, 0x10040, 120000000 }, { 0x20000, 0x20004, 0 } };
        AccessSample sample = { regions, ELEMENTSOF(regions), 200 * UINT64_C(1000000000) };
        ASSERT_OK(coldness_round(c, a, &sample, 201 * UINT64_C(1000000000)));
        coldness_set_source(c, "damon-read", "test", NULL);
        ExplainQuery q = { .name = "holder.service", .memcg = m, .page_size = 4096, .coldness = c };
        ASSERT_OK(explain_query_json(a, &q, &with));
        row = row_named(json_object_get(with, "comparisons"), "what", "inactive");
        ASSERT_EQ(int_at(row, "memstrackBytes"), 64 * 4096);
        const json_t *reason = row_named(json_object_get(with, "reasons"), "reason", "lru-order");
        ASSERT_NOT_NULL(reason);
        ASSERT_EQ(int_at(reason, "bytes"), 4096);
        ASSERT_TRUE(strstr(json_string_value(json_object_get(reason, "text")), "damon-read") != NULL);
        coldness_free(c);
        accounting_free(a);
}

int main(void) {
        ASSERT_OK(ksym_load("data/kallsyms-modules", &ksym));
        TEST(test_idle);
        TEST(test_holders);
        TEST(test_kernel_v2);
        TEST(test_kernel_v1);
        TEST(test_without_kernel);
        TEST(test_breakdown);
        TEST(test_explain_units);
        ksym_free(ksym);
        return 0;
}
