/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksym.h"
#include "macro.h"
#include "tests.h"

static Ksym *load(const char *path) {
        Ksym *k = NULL;
        ASSERT_OK(ksym_load(path, &k));
        ASSERT_NOT_NULL(k);
        return k;
}

static void test_lookup_kernel(void) {
        Ksym *k = load("data/kallsyms-modules");
        KsymResult r;

        ASSERT_TRUE(!ksym_addresses_hidden(k));
        /* 16 text symbols of the kernel image (the D symbol is not text), 7 module symbols. */
        ASSERT_EQ(ksym_count(k), 23);

        ASSERT_TRUE(ksym_lookup(k, 0xffffffff81005123, &r));
        ASSERT_STREQ(r.name, "do_anonymous_page");
        ASSERT_EQ(r.offset, 0x123);
        ASSERT_NULL(r.module);
        ASSERT_TRUE(!r.real_module);

        /* The data symbol is skipped: its address belongs to the text symbol before it. */
        ASSERT_TRUE(ksym_lookup(k, 0xffffffff81009010, &r));
        ASSERT_STREQ(r.name, "asm_exc_page_fault");
        ASSERT_EQ(r.offset, 0x1010);

        /* Exactly at a symbol start. */
        ASSERT_TRUE(ksym_lookup(k, 0xffffffff8100f000, &r));
        ASSERT_STREQ(r.name, "weak_helper");
        ASSERT_EQ(r.offset, 0);

        /* Below the first symbol: nothing. */
        ASSERT_TRUE(!ksym_lookup(k, 0xffffffff80000000, &r));
        ASSERT_EQ(ksym_address_of(k, "load_module"), 0xffffffff8100b000);
        ASSERT_EQ(ksym_address_of(k, "no_such_symbol"), 0);
        ksym_free(k);
}

static void test_lookup_modules(void) {
        Ksym *k = load("data/kallsyms-modules");
        KsymResult r;
        char buf[128];

        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0002040, &r));
        ASSERT_STREQ(r.name, "ext4_alloc_da_blocks");
        ASSERT_EQ(r.offset, 0x40);
        ASSERT_STREQ(r.module, "ext4");
        ASSERT_TRUE(r.real_module);

        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0101008, &r));
        ASSERT_STREQ(r.module, "xfs");
        ASSERT_STREQ(ksym_format(k, 0xffffffffc0101008, buf, sizeof(buf)), "xfs_init+0x8 [xfs]");
        ASSERT_STREQ(ksym_format(k, 0xffffffff81006010, buf, sizeof(buf)), "handle_mm_fault+0x10");
        ASSERT_STREQ(ksym_format(NULL, 0xffffffff81006010, buf, sizeof(buf)), "0xffffffff81006010");

        /* bpf and ftrace trampolines are shown with their tag but are not modules to charge. */
        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0200010, &r));
        ASSERT_STREQ(r.module, "bpf");
        ASSERT_TRUE(!r.real_module);
        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0201000, &r));
        ASSERT_STREQ(r.module, "__builtin__ftrace");
        ASSERT_TRUE(!r.real_module);
        ksym_free(k);
}

static void test_hidden_addresses(void) {
        Ksym *k = load("data/kallsyms-hidden");
        KsymResult r;
        char buf[64];

        ASSERT_TRUE(ksym_addresses_hidden(k));
        ASSERT_EQ(ksym_count(k), 0);
        ASSERT_TRUE(!ksym_lookup(k, 0xffffffff81005123, &r));
        /* Raw addresses are kept. */
        ASSERT_STREQ(ksym_format(k, 0xffffffff81005123, buf, sizeof(buf)), "0xffffffff81005123");
        ksym_free(k);
}

static void test_errors(void) {
        Ksym *k = NULL;
        char path[] = "/tmp/test-ksym-XXXXXX";

        ASSERT_EQ(ksym_load("data/does-not-exist", &k), -ENOENT);
        ASSERT_NULL(k);

        int fd = mkstemp(path);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(write(fd, "garbage\nmore garbage\n", 21), 21);
        close(fd);
        ASSERT_EQ(ksym_load(path, &k), -EBADMSG);
        ASSERT_NULL(k);
        unlink(path);
}

/* Whether the running kernel shows this process addresses in /proc/kallsyms: any non-zero one. */
static bool kallsyms_shows_addresses(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
        unsigned long long a;
        char line[512];

        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%llx", &a) == 1 && a != 0)
                        return true;
        return false;
}

/* The running kernel's table loads, says whether the kernel hides addresses from us as the kernel
 * itself does, and when it shows them, finds the page allocator. Returns false if the kernel has no
 * /proc/kallsyms to read. */
static bool test_live_kallsyms(void) {
        Ksym *k = NULL;
        KsymResult r;
        int e;

        e = ksym_load(NULL, &k);
        if (e < 0) {
                fprintf(stderr, "SKIP: the live case: /proc/kallsyms cannot be loaded: %s\n", strerror(-e));
                return false;
        }
        ASSERT_EQ(ksym_addresses_hidden(k), !kallsyms_shows_addresses());
        if (!ksym_addresses_hidden(k)) {
                uint64_t a = ksym_address_of(k, "__alloc_pages_noprof") ?: ksym_address_of(k, "__alloc_pages");
                ASSERT_NE(a, 0);
                ASSERT_TRUE(ksym_lookup(k, a + 1, &r));
                ASSERT_EQ(r.offset, 1);
        } else
                ASSERT_EQ(ksym_count(k), 0);
        ksym_free(k);
        return true;
}

int main(void) {
        bool live;

        TEST(test_lookup_kernel);
        TEST(test_lookup_modules);
        TEST(test_hidden_addresses);
        TEST(test_errors);
        /* Last: the other cases pass or fail whatever the kernel; a kernel without kallsyms makes a skip. */
        fprintf(stderr, "== test_live_kallsyms\n");
        live = test_live_kallsyms();
        return live ? EXIT_SUCCESS : EXIT_TEST_SKIP;
}
