/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame-text.h"
#include "macro.h"
#include "parse-util.h"
#include "tests.h"

static void test_parse_uint64(void) {
        uint64_t v = 7;

        ASSERT_EQ(parse_uint64("42", 0, 100, &v), 0);
        ASSERT_EQ(v, 42);
        ASSERT_EQ(parse_uint64("0", 0, 100, &v), 0);
        ASSERT_EQ(v, 0);
        ASSERT_EQ(parse_uint64("18446744073709551615", 0, UINT64_MAX, &v), 0);
        ASSERT_TRUE(v == UINT64_MAX);

        /* Failures leave the output alone. */
        v = 7;
        ASSERT_EQ(parse_uint64("101", 0, 100, &v), -ERANGE);
        ASSERT_EQ(parse_uint64("4", 5, 100, &v), -ERANGE);
        ASSERT_EQ(parse_uint64("-1", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("+1", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64(" 1", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("1x", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("1 ", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("0x10", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("", 0, 100, &v), -EINVAL);
        ASSERT_EQ(parse_uint64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
        ASSERT_EQ(v, 7);
}

static void test_parse_size(void) {
        uint64_t v = 7;

        ASSERT_EQ(parse_size("4096", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 4096);
        ASSERT_EQ(parse_size("0", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 0);
        ASSERT_EQ(parse_size("12B", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 12);
        ASSERT_EQ(parse_size("512K", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 512 * 1024);
        ASSERT_EQ(parse_size("3k", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 3072);
        ASSERT_EQ(parse_size("10M", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 10 << 20);
        ASSERT_EQ(parse_size("10MiB", UINT64_MAX, &v), 0);
        ASSERT_EQ(v, 10 << 20);
        ASSERT_EQ(parse_size("2GiB", UINT64_MAX, &v), 0);
        ASSERT_TRUE(v == UINT64_C(2) << 30);
        ASSERT_EQ(parse_size("1T", UINT64_MAX, &v), 0);
        ASSERT_TRUE(v == UINT64_C(1) << 40);

        /* Failures leave the output alone. */
        v = 7;
        ASSERT_EQ(parse_size("", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("M", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("10MB", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("10 M", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("-1", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("1.5M", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("10m", UINT64_MAX, &v), -EINVAL);
        ASSERT_EQ(parse_size("2K", 2047, &v), -ERANGE);
        ASSERT_EQ(parse_size("16777216T", UINT64_MAX, &v), -ERANGE);
        ASSERT_EQ(parse_size("99999999999999999999999", UINT64_MAX, &v), -ERANGE);
        ASSERT_EQ(v, 7);
        ASSERT_EQ(parse_size("2047", 2047, &v), 0);
        ASSERT_EQ(v, 2047);
}

static void test_frame_text(void) {
        FrameText f;

        ASSERT_OK(frame_text_parse(" __alloc_pages+0x1a4/0xf00\n", &f));
        ASSERT_TRUE(!f.raw);
        ASSERT_EQ(f.name_len, strlen("__alloc_pages"));
        ASSERT_TRUE(strncmp(f.name, "__alloc_pages", f.name_len) == 0);
        ASSERT_EQ(f.offset, 0x1a4);
        ASSERT_EQ(f.size, 0xf00);
        ASSERT_NULL(f.module);

        ASSERT_OK(frame_text_parse("do_syscall_64", &f));
        ASSERT_EQ(f.offset, 0);
        ASSERT_EQ(f.size, 0);
        ASSERT_OK(frame_text_parse("ext4_readdir+0x10 [ext4 0123456789abcdef]", &f));
        ASSERT_EQ(f.module_len, strlen("ext4"));
        ASSERT_TRUE(strncmp(f.module, "ext4", f.module_len) == 0);
        ASSERT_EQ(f.offset, 0x10);
        ASSERT_EQ(f.size, 0);

        ASSERT_OK(frame_text_parse("0xffffffffc0badbad", &f));
        ASSERT_TRUE(f.raw);
        ASSERT_EQ(f.address, 0xffffffffc0badbad);
        ASSERT_EQ(f.name_len, strlen("0xffffffffc0badbad"));

        /* Not one frame. */
        static const char *const bad[] = {
                "", "   ", "+0x10/0x20", "f+10/0x20", "f+0x/0x20", "f+0x10/", "f+0x10/0x20 [xfs", "f+0x10 []",
                "f+0x10 trailing", "f [xfs] trailing", "0xffff trailing", "0x", "bad\x01name", "a]b+0x1",
                "a/b", "f [x\x01]",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_EQ(frame_text_parse(bad[i], &f), -EINVAL);
        /* Self-contradicting or overflowing numbers. */
        ASSERT_EQ(frame_text_parse("f+0xf00/0xf00", &f), -ERANGE);
        ASSERT_EQ(frame_text_parse("f+0x100000000000000000/0x20", &f), -ERANGE);
}

int main(void) {
        TEST(test_parse_uint64);
        TEST(test_parse_size);
        TEST(test_frame_text);
        return 0;
}
