/* SPDX-License-Identifier: MIT */

/* Zones and nodes (daemon/symbols/zoneinfo.c): the reference VM's /proc/zoneinfo, recorded, and a two-node
 * text; empty zones are left out. */

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "tests.h"
#include "zoneinfo.h"

static void test_recorded(void) {
        _cleanup_free_ ZoneRange *z = NULL;
        size_t n = 0;

        ASSERT_OK(zoneinfo_read("data/zoneinfo/one-node", &z, &n));
        ASSERT_EQ(n, 3);               /* DMA, DMA32, Normal; Movable and Device span nothing */
        ASSERT_STREQ(z[0].name, "DMA");
        ASSERT_EQ(z[0].start_pfn, 1);
        ASSERT_EQ(z[0].end_pfn, 4096);
        ASSERT_STREQ(z[1].name, "DMA32");
        ASSERT_EQ(z[1].start_pfn, 4096);
        ASSERT_EQ(z[1].end_pfn, 4096 + 1044480);
        ASSERT_STREQ(z[2].name, "Normal");
        ASSERT_EQ(z[2].start_pfn, 1048576);
        ASSERT_EQ(z[2].end_pfn, 1048576 + 5505024);
        for (size_t i = 0; i < n; i++)
                ASSERT_EQ(z[i].node, 0);
        ASSERT_EQ(zoneinfo_read("data/zoneinfo/no-such-file", &z, &n), -ENOENT);
}

static void test_two_nodes(void) {
        static const char text[] =
                "Node 0, zone      DMA\n  pages free     3840\n        spanned  4095\n  start_pfn:           1\n"
                "Node 0, zone   Normal\n        spanned  1000\n  start_pfn:           4096\n"
                "Node 1, per-node stats\n      nr_inactive_anon 3\n"
                "Node 1, zone   Normal\n        spanned  2048\n        present  2048\n  start_pfn:           8192";
        _cleanup_free_ ZoneRange *z = NULL;
        size_t n = 0;

        ASSERT_OK(zoneinfo_parse(text, &z, &n));
        ASSERT_EQ(n, 3);
        ASSERT_EQ(z[2].node, 1);
        ASSERT_STREQ(z[2].name, "Normal");
        ASSERT_EQ(z[2].start_pfn, 8192);        /* the last section, with no newline after it */
        ASSERT_EQ(z[2].end_pfn, 8192 + 2048);
        free(TAKE_PTR(z));
        ASSERT_OK(zoneinfo_parse("", &z, &n));
        ASSERT_EQ(n, 0);
        ASSERT_NULL(z);
}

static void test_nodes(void) {
        char dir[] = "/tmp/test-zoneinfo-XXXXXX", path[128];
        unsigned n = 0;

        ASSERT_NOT_NULL(mkdtemp(dir));
        const char *entries[] = { "node0", "node1", "nodex", "node", "online" };
        for (size_t i = 0; i < ELEMENTSOF(entries); i++) {
                (void) snprintf(path, sizeof(path), "%s/%s", dir, entries[i]);
                ASSERT_EQ(mkdir(path, 0755), 0);
        }
        ASSERT_OK(zoneinfo_node_count(dir, &n));
        ASSERT_EQ(n, 2);
        for (size_t i = 0; i < ELEMENTSOF(entries); i++) {
                (void) snprintf(path, sizeof(path), "%s/%s", dir, entries[i]);
                ASSERT_EQ(rmdir(path), 0);
        }
        ASSERT_EQ(rmdir(dir), 0);
        /* The host's, where it has the directory. */
        int r = zoneinfo_node_count(NULL, &n);
        if (r != -ENOENT) {
                ASSERT_OK(r);
                ASSERT_GE(n, 1);
        }
}

/* The zones breakdowns use: zoneinfo's with pfns; without them, node 0 for every key on a one-node host. */
static void test_page_zones(void) {
        _cleanup_free_ ZoneRange *z = NULL;
        size_t n = 0;
        unsigned nodes = 0;

        ASSERT_OK(zoneinfo_page_zones("data/zoneinfo/one-node", true, &z, &n));
        ASSERT_EQ(n, 3);
        free(TAKE_PTR(z));
        if (zoneinfo_node_count(NULL, &nodes) < 0 || nodes != 1) {
                fprintf(stderr, "not a one-node host, the rest skipped\n");
                return;
        }
        ASSERT_OK(zoneinfo_page_zones("data/zoneinfo/one-node", false, &z, &n));
        ASSERT_EQ(n, 1);
        ASSERT_EQ(z[0].node, 0);
        ASSERT_STREQ(z[0].name, "");
        ASSERT_EQ(z[0].end_pfn, UINT64_C(1) << 40);
        free(TAKE_PTR(z));
        /* A zoneinfo that cannot be read: the one node still. */
        ASSERT_OK(zoneinfo_page_zones("data/zoneinfo/no-such-file", true, &z, &n));
        ASSERT_EQ(n, 1);
}

int main(void) {
        TEST(test_recorded);
        TEST(test_two_nodes);
        TEST(test_nodes);
        TEST(test_page_zones);
        return 0;
}
