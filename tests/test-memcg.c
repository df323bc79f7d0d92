/* SPDX-License-Identifier: MIT */

/*
 * The memory controller's figures (daemon/symbols/memcg.c) from recorded cgroup directories:
 * tests/data/memcg/v1 was read from a cgroup v1 memory cgroup of this project's reference VM (a 64 MiB
 * holder under a 256 MiB limit); tests/data/memcg/v2 follows a 6.x kernel's cgroup2 files key for key
 * (cgroup-v2.rst), with the numbers of a 64 MiB holder. Last, the live host's own hierarchy, whichever it is.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "macro.h"
#include "memcg.h"
#include "tests.h"

#define HOLDER "/system.slice/holder.service"

static void check(const MemcgFigures *f, MemcgFigure x, uint64_t expected) {
        if (!memcg_figure_known(f, x)) {
                fprintf(stderr, "figure %s unknown\n", memcg_figure_to_string(x));
                abort();
        }
        ASSERT_EQ(f->value[x], expected);
}

static void test_v2(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        MemcgFigures f;

        ASSERT_OK(memcg_new("data/memcg/v2", NULL, &m));
        ASSERT_EQ(memcg_hierarchy(m), MEMCG_HIERARCHY_V2);
        ASSERT_STREQ(memcg_root(m), "data/memcg/v2");
        ASSERT_STREQ(memcg_cgroup2_root(m), "data/memcg/v2");
        ASSERT_OK(memcg_read(m, HOLDER, &f));
        ASSERT_EQ(f.hierarchy, MEMCG_HIERARCHY_V2);
        check(&f, MEMCG_CURRENT, 70275072);
        check(&f, MEMCG_PEAK, 70385664);
        check(&f, MEMCG_MAX, MEMCG_UNLIMITED);          /* "max" */
        check(&f, MEMCG_HIGH, 134217728);
        check(&f, MEMCG_ANON, 67522560);
        check(&f, MEMCG_FILE, 1232896);
        check(&f, MEMCG_KERNEL, 1519616);
        check(&f, MEMCG_KERNEL_STACK, 32768);
        check(&f, MEMCG_PAGETABLES, 184320);
        check(&f, MEMCG_PERCPU, 2304);
        check(&f, MEMCG_SOCK, 0);
        check(&f, MEMCG_VMALLOC, 8192);
        check(&f, MEMCG_SLAB_RECLAIMABLE, 235480);
        check(&f, MEMCG_SLAB_UNRECLAIMABLE, 1006536);
        check(&f, MEMCG_SLAB, 1242016);
        check(&f, MEMCG_FILE_MAPPED, 1122304);
        /* Every figure has a cgroup2 file, and this recording has them all. */
        for (MemcgFigure x = 0; x < _MEMCG_FIGURE_MAX; x++) {
                ASSERT_NOT_NULL(memcg_figure_source(MEMCG_HIERARCHY_V2, x));
                ASSERT_TRUE(memcg_figure_known(&f, x));
        }
        /* A key that only starts like another is not it: "file" is not "file_mapped". */
        ASSERT_STREQ(memcg_figure_source(MEMCG_HIERARCHY_V2, MEMCG_FILE), "memory.stat file");
        ASSERT_EQ(f.events_known, (1u << _MEMCG_EVENT_MAX) - 1);
        ASSERT_EQ(f.events[MEMCG_EVENT_HIGH], 3);
        ASSERT_EQ(f.events[MEMCG_EVENT_OOM_KILL], 0);

        /* The root reads its own directory (whose files this recording does not have: all unknown). */
        ASSERT_OK(memcg_read(m, "/", &f));
        ASSERT_EQ(f.known, 0u);
        ASSERT_EQ(memcg_read(m, "/system.slice/gone.service", &f), -ENOENT);
        ASSERT_EQ(memcg_read(m, "/system.slice/../../etc", &f), -EINVAL);
        ASSERT_EQ(memcg_read(m, "/..", &f), -EINVAL);
        ASSERT_EQ(memcg_read(m, "system.slice", &f), -EINVAL);
}

static void test_limits(void) {
        _cleanup_(memcg_freep) Memcg *v2 = NULL, *v1 = NULL;
        uint64_t current, max, high;

        ASSERT_OK(memcg_new("data/memcg/v2", NULL, &v2));
        ASSERT_OK(memcg_read_limits(v2, HOLDER, &current, &max, &high));
        ASSERT_EQ(current, 70275072);
        ASSERT_EQ(max, MEMCG_UNLIMITED);
        ASSERT_EQ(high, 134217728);
        ASSERT_EQ(memcg_read_limits(v2, "/system.slice/gone.service", &current, &max, &high), -ENOENT);
        ASSERT_EQ(memcg_read_limits(v2, "/..", &current, &max, &high), -EINVAL);
        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v1", &v1));
        ASSERT_OK(memcg_read_limits(v1, HOLDER, &current, &max, &high));
        ASSERT_EQ(current, 74964992);
        ASSERT_EQ(max, 268435456);
        ASSERT_EQ(high, MEMCG_UNLIMITED);       /* v1 has none */
}

static void test_v1(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        MemcgFigures f;

        ASSERT_OK(memcg_new("data/memcg/unified", "data/memcg/v1", &m));
        ASSERT_EQ(memcg_hierarchy(m), MEMCG_HIERARCHY_V1);
        ASSERT_STREQ(memcg_root(m), "data/memcg/v1");
        ASSERT_STREQ(memcg_cgroup2_root(m), "data/memcg/unified");
        ASSERT_OK(memcg_read(m, HOLDER, &f));
        ASSERT_EQ(f.hierarchy, MEMCG_HIERARCHY_V1);
        check(&f, MEMCG_CURRENT, 74964992);             /* memory.usage_in_bytes */
        check(&f, MEMCG_PEAK, 74964992);                /* memory.max_usage_in_bytes */
        check(&f, MEMCG_MAX, 268435456);                /* memory.limit_in_bytes */
        check(&f, MEMCG_ANON, 74276864);                /* total_rss */
        check(&f, MEMCG_FILE, 0);                       /* total_cache */
        check(&f, MEMCG_KERNEL, 241664);                /* memory.kmem.usage_in_bytes */
        check(&f, MEMCG_SOCK, 0);                       /* memory.kmem.tcp.usage_in_bytes */
        check(&f, MEMCG_SHMEM, 0);
        check(&f, MEMCG_ANON_THP, 0);
        /* What v1 does not count is unknown and has no source, never a zero. */
        const MemcgFigure lacking[] = { MEMCG_HIGH, MEMCG_KERNEL_STACK, MEMCG_PAGETABLES, MEMCG_PERCPU, MEMCG_VMALLOC,
                                        MEMCG_SLAB_RECLAIMABLE, MEMCG_SLAB_UNRECLAIMABLE, MEMCG_SLAB, MEMCG_ZSWAP };
        for (size_t i = 0; i < ELEMENTSOF(lacking); i++) {
                ASSERT_TRUE(!memcg_figure_known(&f, lacking[i]));
                ASSERT_NULL(memcg_figure_source(MEMCG_HIERARCHY_V1, lacking[i]));
        }
        ASSERT_STREQ(memcg_figure_source(MEMCG_HIERARCHY_V1, MEMCG_ANON), "memory.stat total_rss");
        ASSERT_STREQ(memcg_figure_source(MEMCG_HIERARCHY_V1, MEMCG_CURRENT), "memory.usage_in_bytes");
        /* memory.failcnt and memory.oom_control's oom_kill; v1 has no other event counter. */
        ASSERT_EQ(f.events_known, (1u << MEMCG_EVENT_MAX) | (1u << MEMCG_EVENT_OOM_KILL));
        ASSERT_EQ(f.events[MEMCG_EVENT_MAX], 0);
}

/* A v1 limit of "none" is LONG_MAX rounded down to a page; a cgroup2 root without the memory controller
 * is not v2. */
static void test_v1_unlimited(void) {
        char dir[] = "/tmp/test-memcg-XXXXXX";
        _cleanup_(memcg_freep) Memcg *m = NULL;
        _cleanup_free_ char *file = NULL;
        MemcgFigures f;

        ASSERT_NOT_NULL(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&file, "%s/memory.limit_in_bytes", dir) > 0);
        FILE *out = fopen(file, "we");
        ASSERT_NOT_NULL(out);
        fputs("9223372036854771712\n", out);
        ASSERT_EQ(fclose(out), 0);
        ASSERT_OK(memcg_new("data/memcg/unified", dir, &m));
        ASSERT_OK(memcg_read(m, "/", &f));
        check(&f, MEMCG_MAX, MEMCG_UNLIMITED);
        ASSERT_TRUE(!memcg_figure_known(&f, MEMCG_CURRENT));
        ASSERT_EQ(unlink(file), 0);
        ASSERT_EQ(rmdir(dir), 0);
}

static void test_mountinfo(void) {
        _cleanup_free_ char *mount = NULL;

        /* Optional fields before the separator, and the kernel's octal escape for a space. */
        ASSERT_OK(memcg_find_v1_mount("data/memcg/mountinfo-hybrid", &mount));
        ASSERT_STREQ(mount, "/sys/fs/cgroup/memory v1");
        ASSERT_EQ(memcg_find_v1_mount("data/memcg/mountinfo-unified", &mount), -ENOMEDIUM);
        ASSERT_EQ(memcg_find_v1_mount("data/memcg/no-such-file", &mount), -ENOENT);
}

/* The running host: whichever hierarchy has the controller, its root cgroup reads. */
static void test_live(void) {
        _cleanup_(memcg_freep) Memcg *m = NULL;
        MemcgFigures f;

        int r = memcg_new(NULL, NULL, &m);
        if (r == -ENOMEDIUM) {
                fprintf(stderr, "no memory controller on this host, live case skipped\n");
                return;
        }
        ASSERT_OK(r);
        fprintf(stderr, "memory controller: cgroup %s at %s\n", memcg_hierarchy_to_string(memcg_hierarchy(m)),
                memcg_root(m));
        ASSERT_OK(memcg_read(m, "/", &f));
        /* The root of v1 counts usage; cgroup2's root has no memory.current, but its memory.stat. */
        ASSERT_TRUE(memcg_figure_known(&f, MEMCG_ANON) || memcg_figure_known(&f, MEMCG_CURRENT));
}

int main(void) {
        TEST(test_v2);
        TEST(test_v1);
        TEST(test_limits);
        TEST(test_v1_unlimited);
        TEST(test_mountinfo);
        TEST(test_live);
        return 0;
}
