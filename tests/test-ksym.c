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

static void expect_format(const Ksym *k, uint64_t address, const char *expected) {
        _cleanup_free_ char *text = ksym_format(k, address);
        ASSERT_STREQ(text, expected);
}

static void test_lookup_kernel(void) {
        Ksym *k = load("data/kallsyms-modules");
        KsymResult r;

        ASSERT_TRUE(!ksym_addresses_hidden(k));
        /* 20 text symbols of the kernel image (the D symbol is not text), 8 module symbols. */
        ASSERT_EQ(ksym_count(k), 28);

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

        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0002040, &r));
        ASSERT_STREQ(r.name, "ext4_alloc_da_blocks");
        ASSERT_EQ(r.offset, 0x40);
        ASSERT_STREQ(r.module, "ext4");
        ASSERT_TRUE(r.real_module);

        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0101008, &r));
        ASSERT_STREQ(r.module, "xfs");
        expect_format(k, 0xffffffffc0101008, "xfs_init+0x8 [xfs]");
        expect_format(k, 0xffffffff81006010, "handle_mm_fault+0x10");
        expect_format(NULL, 0xffffffff81006010, "0xffffffff81006010");

        /* bpf and ftrace trampolines are shown with their tag but are not modules to charge. */
        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0200010, &r));
        ASSERT_STREQ(r.module, "bpf");
        ASSERT_TRUE(!r.real_module);
        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0201000, &r));
        ASSERT_STREQ(r.module, "__builtin__ftrace");
        ASSERT_TRUE(!r.real_module);
        ksym_free(k);
}

/* A table an event source made (the page-owner source's synthetic symbols), read from memory. */
static void test_load_text(void) {
        Ksym *k = NULL;
        KsymResult r;

        ASSERT_OK(ksym_load_text("ffff000000000000 t post_alloc_hook\n"
                                 "ffff000001000000 t xfs_file_buffered_read\t[xfs]\n"
                                 "ffff000002000000 t kvm_arch_vcpu_ioctl_run\t[kvm]\n", &k));
        ASSERT_EQ(ksym_count(k), 3);
        ASSERT_TRUE(ksym_lookup(k, 0xffff00000100008c, &r));
        ASSERT_STREQ(r.name, "xfs_file_buffered_read");
        ASSERT_EQ(r.offset, 0x8c);
        ASSERT_STREQ(r.module, "xfs");
        ASSERT_TRUE(r.real_module);
        ASSERT_TRUE(ksym_lookup(k, 0xffff0000000001c1, &r));
        ASSERT_NULL(r.module);
        ksym_free(k);

        /* A source whose events name no function has an empty table of its own. */
        ASSERT_OK(ksym_load_text("", &k));
        ASSERT_EQ(ksym_count(k), 0);
        ASSERT_TRUE(ksym_addresses_synthetic(k));
        ASSERT_TRUE(!ksym_lookup(k, 0xffff0000000001c1, &r));
        ksym_free(k);
        k = NULL;
        ASSERT_EQ(ksym_load_text("not a symbol table\n", &k), -EBADMSG);

        /* Past the end of the image's text (a BPF program, here) is no function of the image's, however
         * near _einittext it lies: not found, rather than "_einittext+0x3c82d674". */
        ASSERT_OK(ksym_load_text("ffffffff81000000 T _stext\n"
                                 "ffffffff81001000 T vfs_read\n"
                                 "ffffffff8220bb08 T _etext\n"
                                 "ffffffff83783000 T early_init\n"
                                 "ffffffff837f8910 T _einittext\n"
                                 "ffffffffc0200000 t bpf_prog_6deef7357e7b4530\t[bpf]\n", &k));
        ASSERT_TRUE(ksym_lookup(k, 0xffffffff81001010, &r));
        ASSERT_STREQ(r.name, "vfs_read");
        ASSERT_TRUE(!ksym_lookup(k, 0xffffffff8220bb10, &r));
        ASSERT_TRUE(ksym_lookup(k, 0xffffffff83783010, &r));
        ASSERT_STREQ(r.name, "early_init");
        ASSERT_TRUE(!ksym_lookup(k, 0xffffffffc0000000, &r));
        ASSERT_TRUE(ksym_lookup(k, 0xffffffffc0200010, &r));
        ASSERT_STREQ(r.module, "bpf");
        ksym_free(k);
}

static void test_hidden_addresses(void) {
        Ksym *k = load("data/kallsyms-hidden");
        KsymResult r;

        ASSERT_TRUE(ksym_addresses_hidden(k));
        ASSERT_EQ(ksym_count(k), 0);
        ASSERT_TRUE(!ksym_lookup(k, 0xffffffff81005123, &r));
        /* Raw addresses are kept. */
        expect_format(k, 0xffffffff81005123, "0xffffffff81005123");
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

/* Names back to addresses (tests/data/kallsyms-names): the same name in the image and two modules, two
 * static functions with one name, aliases at one address, a data symbol that is not text. */
static void test_lookup_name(void) {
        Ksym *k = load("data/kallsyms-names");
        uint64_t a = 0;

        ASSERT_OK(ksym_lookup_name(k, "__alloc_pages", NULL, &a));
        ASSERT_EQ(a, 0xffffffff81001100);
        ASSERT_OK(ksym_lookup_name(k, "__alloc_pages", "", &a));
        ASSERT_EQ(a, 0xffffffff81001100);
        ASSERT_OK(ksym_lookup_name(k, "__alloc_pages", NULL, NULL));

        /* One name in the image and in two modules: the module picks. */
        ASSERT_OK(ksym_lookup_name(k, "module_helper", NULL, &a));
        ASSERT_EQ(a, 0xffffffff81002600);
        ASSERT_OK(ksym_lookup_name(k, "module_helper", "ext4", &a));
        ASSERT_EQ(a, 0xffffffffc0001000);
        ASSERT_OK(ksym_lookup_name(k, "module_helper", "xfs", &a));
        ASSERT_EQ(a, 0xffffffffc0002000);
        ASSERT_EQ(ksym_lookup_name(k, "module_helper", "btrfs", &a), -ENOENT);

        /* A module's symbol is not the image's, and the reverse. */
        ASSERT_EQ(ksym_lookup_name(k, "xfs_fs_fill_super", NULL, &a), -ENOENT);
        ASSERT_EQ(ksym_lookup_name(k, "__alloc_pages", "xfs", &a), -ENOENT);

        /* Two static functions with one name: no name alone says which. */
        a = 42;
        ASSERT_EQ(ksym_lookup_name(k, "init_once", NULL, &a), -ENOTUNIQ);
        ASSERT_EQ(a, 42);

        /* One function listed twice at one address is one symbol. */
        ASSERT_OK(ksym_lookup_name(k, "alias_a", NULL, &a));
        ASSERT_EQ(a, 0xffffffff81002500);
        ASSERT_OK(ksym_lookup_name(k, "alias_b", NULL, &a));
        ASSERT_EQ(a, 0xffffffff81002500);

        /* Unknown names, and a data symbol, which stacks never point into. */
        ASSERT_EQ(ksym_lookup_name(k, "no_such_function", NULL, &a), -ENOENT);
        ASSERT_EQ(ksym_lookup_name(k, "init_once_data", NULL, &a), -ENOENT);
        ASSERT_EQ(ksym_lookup_name(k, "", NULL, &a), -ENOENT);
        ASSERT_EQ(ksym_lookup_name(k, "zzz_after_every_name", NULL, &a), -ENOENT);
        ASSERT_EQ(ksym_lookup_name(k, "_", NULL, &a), -ENOENT);
        ASSERT_EQ(a, 0xffffffff81002500);
        ksym_free(k);
}

static void test_index_memory(void) {
        Ksym *k = load("data/kallsyms-names");
        size_t before = ksym_memory_bytes(k);

        /* Built on the first lookup by name, not at load: 4 bytes per symbol. */
        ASSERT_OK(ksym_lookup_name(k, "end_of_text", NULL, NULL));
        ASSERT_EQ(ksym_memory_bytes(k), before + ksym_count(k) * sizeof(uint32_t));
        ksym_free(k);
}

static void test_parse_frame(void) {
        Ksym *k = load("data/kallsyms-names");
        uint64_t a = 0;

        ASSERT_OK(ksym_parse_frame(k, "__alloc_pages+0x1a4/0xf00", &a));
        ASSERT_EQ(a, 0xffffffff810012a4);
        /* As ftrace and page_owner print it: leading blanks, a newline. */
        ASSERT_OK(ksym_parse_frame(k, "  __alloc_pages+0x1a4/0xf00\n", &a));
        ASSERT_EQ(a, 0xffffffff810012a4);
        /* As ksym_format() prints it: no size. And a bare name. */
        ASSERT_OK(ksym_parse_frame(k, "__alloc_pages+0x10", &a));
        ASSERT_EQ(a, 0xffffffff81001110);
        ASSERT_OK(ksym_parse_frame(k, "__alloc_pages", &a));
        ASSERT_EQ(a, 0xffffffff81001100);

        /* Modules, with and without a build id. */
        ASSERT_OK(ksym_parse_frame(k, "xfs_fs_fill_super+0x10/0x7c0 [xfs]", &a));
        ASSERT_EQ(a, 0xffffffffc0002050);
        ASSERT_OK(ksym_parse_frame(k, "module_helper+0x8/0x80 [ext4]", &a));
        ASSERT_EQ(a, 0xffffffffc0001008);
        ASSERT_OK(ksym_parse_frame(k, "module_helper+0x8/0x80 [ext4 0123456789abcdef]", &a));
        ASSERT_EQ(a, 0xffffffffc0001008);
        ASSERT_OK(ksym_parse_frame(k, "module_helper+0x8/0x100", &a));
        ASSERT_EQ(a, 0xffffffff81002608);
        ASSERT_EQ(ksym_parse_frame(k, "module_helper+0x8/0x80 [btrfs]", &a), -ENOENT);

        /* Same-named static functions: the stated size picks the one whose extent it is; the second one's
         * extent runs past the data symbol to the next text symbol. No size, or a size neither has: which? */
        ASSERT_OK(ksym_parse_frame(k, "init_once+0x10/0x100", &a));
        ASSERT_EQ(a, 0xffffffff81001010);
        ASSERT_OK(ksym_parse_frame(k, "init_once+0x10/0x300", &a));
        ASSERT_EQ(a, 0xffffffff81002010);
        ASSERT_EQ(ksym_parse_frame(k, "init_once+0x10", &a), -ENOTUNIQ);
        ASSERT_EQ(ksym_parse_frame(k, "init_once+0x10/0xf0", &a), -ENOTUNIQ);
        /* Same name and same size: nothing tells them apart. */
        ASSERT_EQ(ksym_parse_frame(k, "same_size+0x10/0x100", &a), -ENOTUNIQ);

        /* Offsets at or past the stated size, and past the symbol in this table (another kernel's text). */
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0xf00/0xf00", &a), -ERANGE);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x2000/0x1000", &a), -ERANGE);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0xf00/0x1000", &a), -ERANGE);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0xf00", &a), -ERANGE);
        ASSERT_OK(ksym_parse_frame(k, "__alloc_pages+0xeff/0x1000", &a));
        ASSERT_EQ(a, 0xffffffff81001fff);

        /* What the kernel could not name, it prints as an address. */
        ASSERT_OK(ksym_parse_frame(k, "0xffffffffc0badbad", &a));
        ASSERT_EQ(a, 0xffffffffc0badbad);

        /* Unknown names. */
        ASSERT_EQ(ksym_parse_frame(k, "no_such_function+0x10/0x20", &a), -ENOENT);

        /* Not frames: nothing is written. */
        a = 42;
        ASSERT_EQ(ksym_parse_frame(k, "", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "   ", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "+0x10/0x20", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+10/0x20", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x/0x20", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x10/", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x10/0x20 [xfs", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x10/0x20 []", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x10/0x20 trailing", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x10/0x20 [xfs] trailing", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "0xffffffff81001100 trailing", &a), -EINVAL);
        ASSERT_EQ(ksym_parse_frame(k, "__alloc_pages+0x100000000000000000/0x20", &a), -ERANGE);
        ASSERT_EQ(a, 42);
        ksym_free(k);
}

static void test_lookup_name_hidden(void) {
        Ksym *k = load("data/kallsyms-hidden");
        uint64_t a = 42;

        ASSERT_EQ(ksym_lookup_name(k, "do_anonymous_page", NULL, &a), -EADDRNOTAVAIL);
        ASSERT_EQ(ksym_parse_frame(k, "do_anonymous_page+0x10/0x100", &a), -EADDRNOTAVAIL);
        ASSERT_EQ(a, 42);
        ksym_free(k);
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

/* Every text symbol of a copy of the running kernel's table is found by its name, unless another symbol in
 * its module has that name too, and its printed frame parses back to the address; the kernel's own frames of
 * this process, as it prints them, parse (when it lets us read them). */
static void test_live_names(void) {
        /* KSYM_NAME_LEN is 512: room for a line with the longest name and module. */
        char path[] = "/tmp/test-ksym-live-XXXXXX", buf[1200];
        size_t n_back = 0, n_ambiguous = 0;
        _cleanup_fclose_ FILE *in = NULL, *out = NULL;
        Ksym *k = NULL;
        int fd;

        /* A copy, so modules and bpf programs coming and going do not change the table under the check. */
        fd = mkstemp(path);
        ASSERT_GE(fd, 0);
        out = fdopen(fd, "w");
        ASSERT_NOT_NULL(out);
        in = fopen("/proc/kallsyms", "re");
        ASSERT_NOT_NULL(in);
        while (fgets(buf, sizeof(buf), in))
                ASSERT_GE(fputs(buf, out), 0);
        ASSERT_EQ(fclose(TAKE_PTR(out)), 0);
        ASSERT_OK(ksym_load(path, &k));
        (void) fclose(TAKE_PTR(in));
        in = fopen(path, "re");
        ASSERT_NOT_NULL(in);

        while (fgets(buf, sizeof(buf), in)) {
                char type, name[513], module[513] = "";
                unsigned long long a;
                uint64_t b = 0;
                int e;

                if (sscanf(buf, "%llx %c %512s [%512[^]]]", &a, &type, name, module) < 3 ||
                    !strchr("tTwW", type))
                        continue;
                e = ksym_lookup_name(k, name, module, &b);
                if (e == -ENOTUNIQ) {
                        n_ambiguous++;
                        continue;
                }
                ASSERT_OK(e);
                ASSERT_EQ(b, a);
                /* Printed back with the name ksym_lookup() picks, which may be another alias at a. */
                _cleanup_free_ char *text = ksym_format(k, a + 1);
                ASSERT_NOT_NULL(text);
                e = ksym_parse_frame(k, text, &b);
                if (e == -ENOTUNIQ)
                        continue;
                ASSERT_OK(e);
                ASSERT_EQ(b, a + 1);
                n_back++;
        }
        fprintf(stderr, "%zu of %zu symbols back from their names, %zu share their name\n", n_back,
                ksym_count(k), n_ambiguous);
        ASSERT_GT(n_back, 0);
        unlink(path);

        (void) fclose(TAKE_PTR(in));
        in = fopen("/proc/self/stack", "re");
        if (!in)
                fprintf(stderr, "SKIP: the kernel's frames: /proc/self/stack: %m\n");
        else {
                size_t n_frames = 0;

                while (fgets(buf, sizeof(buf), in)) {
                        /* "[<0>] do_syscall_64+0x82/0x190": the address hidden, the symbol as %pS
                         * prints it. */
                        char *frame = strstr(buf, "] ");
                        uint64_t b;
                        int e;

                        ASSERT_NOT_NULL(frame);
                        e = ksym_parse_frame(k, frame + 2, &b);
                        if (e != -ENOTUNIQ)
                                ASSERT_OK(e);
                        n_frames++;
                }
                fprintf(stderr, "%zu frames of /proc/self/stack parsed\n", n_frames);
        }
        ksym_free(k);
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
                /* The page allocator by its name in 6.10 and later, 5.13 to 6.9, and before. */
                uint64_t a = ksym_address_of(k, "__alloc_pages_noprof") ?: ksym_address_of(k, "__alloc_pages") ?:
                        ksym_address_of(k, "__alloc_pages_nodemask");
                ASSERT_NE(a, 0);
                ASSERT_TRUE(ksym_lookup(k, a + 1, &r));
                ASSERT_EQ(r.offset, 1);
        } else
                ASSERT_EQ(ksym_count(k), 0);
        ksym_free(k);
        return true;
}

/* The running kernel's table: its own suite, so a kernel that hides it skips these alone. */
static int main_live(void) {
        fprintf(stderr, "== test_live_kallsyms\n");
        if (!test_live_kallsyms())
                return EXIT_TEST_SKIP;
        if (!kallsyms_shows_addresses()) {
                fprintf(stderr, "SKIP: the live names: /proc/kallsyms hides addresses\n");
                return EXIT_TEST_SKIP;
        }
        TEST(test_live_names);
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        if (argc == 2 && strcmp(argv[1], "live") == 0)
                return main_live();
        if (argc != 1) {
                fprintf(stderr, "Usage: %s [live]\n", argv[0]);
                return EXIT_FAILURE;
        }
        TEST(test_lookup_kernel);
        TEST(test_lookup_modules);
        TEST(test_load_text);
        TEST(test_hidden_addresses);
        TEST(test_errors);
        TEST(test_lookup_name);
        TEST(test_index_memory);
        TEST(test_parse_frame);
        TEST(test_lookup_name_hidden);
        return EXIT_SUCCESS;
}
