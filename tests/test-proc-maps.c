/* SPDX-License-Identifier: MIT */

/*
 * daemon/util/proc-maps: lines of /proc/PID/maps as the kernel writes them (files, anonymous and named
 * mappings, deleted files, a path with blanks), the text's end with and without a newline, and lines that
 * are not mappings, each skipped on its own.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "proc-maps.h"
#include "tests.h"

static const char MAPS[] =
        "55d0c8a00000-55d0c8a02000 r--p 00000000 08:01 1835023                    /usr/bin/true\n"
        "55d0c8a02000-55d0c8a06000 r-xp 00002000 08:01 1835023                    /usr/bin/true\n"
        "55d0c9f1b000-55d0c9f3c000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f2b1c000000-7f2b1c022000 rw-p 00000000 00:00 0 \n"
        "7f2b1c026000-7f2b1c17c000 r-xp 00026000 08:01 1837 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f2b1d000000-7f2b1d001000 r-xp 00000000 00:01 77 /memfd:jit (deleted)\n"
        "7f2b1e000000-7f2b1e001000 r--p 0000a000 08:01 99 /opt/My Programs/lib x.so\n"
        "not a mapping at all\n"
        "7f2b1f000000-7f2b1e000000 r--p 00000000 08:01 99 /backwards\n"
        "7ffd5e1f0000-7ffd5e211000 rw-p 00000000 00:00 0                          [stack]";

static void expect_path(const MapsLine *m, const char *path) {
        ASSERT_TRUE(m->path != NULL);
        ASSERT_EQ(m->path_len, strlen(path));
        ASSERT_TRUE(memcmp(m->path, path, m->path_len) == 0);
}

static void test_lines(void) {
        const char *cursor = MAPS;
        MapsLine m;

        ASSERT_EQ(maps_next(&cursor, &m), 1);
        ASSERT_EQ(m.start, UINT64_C(0x55d0c8a00000));
        ASSERT_EQ(m.end, UINT64_C(0x55d0c8a02000));
        ASSERT_EQ(m.offset, 0u);
        ASSERT_TRUE(memcmp(m.perms, "r--p", 4) == 0);
        expect_path(&m, "/usr/bin/true");
        ASSERT_TRUE(maps_line_is_file(&m));

        ASSERT_EQ(maps_next(&cursor, &m), 1);
        ASSERT_EQ(m.offset, UINT64_C(0x2000));
        ASSERT_EQ(m.perms[2], 'x');

        ASSERT_EQ(maps_next(&cursor, &m), 1);
        expect_path(&m, "[heap]");
        ASSERT_TRUE(!maps_line_is_file(&m));

        /* Anonymous: no path, even with the blank the kernel leaves after the inode. */
        ASSERT_EQ(maps_next(&cursor, &m), 1);
        ASSERT_TRUE(m.path == NULL);
        ASSERT_TRUE(!maps_line_is_file(&m));

        ASSERT_EQ(maps_next(&cursor, &m), 1);
        expect_path(&m, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        ASSERT_EQ(m.offset, UINT64_C(0x26000));

        ASSERT_EQ(maps_next(&cursor, &m), 1);
        expect_path(&m, "/memfd:jit");
        ASSERT_TRUE(m.deleted);
        ASSERT_TRUE(!maps_line_is_file(&m));

        ASSERT_EQ(maps_next(&cursor, &m), 1);
        expect_path(&m, "/opt/My Programs/lib x.so");

        ASSERT_EQ(maps_next(&cursor, &m), -EINVAL);
        ASSERT_EQ(maps_next(&cursor, &m), -EINVAL);     /* end before start */

        /* The last line has no newline. */
        ASSERT_EQ(maps_next(&cursor, &m), 1);
        expect_path(&m, "[stack]");
        ASSERT_EQ(maps_next(&cursor, &m), 0);
        ASSERT_EQ(maps_next(&cursor, &m), 0);
}

static void test_malformed(void) {
        static const char *const bad[] = {
                "", "-", "1-2", "1-2 r-xp", "1-2 r-xp 0", "1-2 r-x 0 08:01 1 /x", "g-2 r-xp 0 08:01 1 /x",
                "1-2 r-xp zz 08:01 1 /x", "11111111111111111-2 r-xp 0 08:01 1 /x", "1-2 r-xp 0 08:01",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                const char *cursor = bad[i];
                MapsLine m;
                int r = maps_next(&cursor, &m);
                if (bad[i][0] == '\0')
                        ASSERT_EQ(r, 0);
                else
                        ASSERT_EQ(r, -EINVAL);
                ASSERT_TRUE(*cursor == '\0');
        }
        /* A line that ends at the inode is an anonymous mapping, not a bad line. */
        const char *cursor = "1-2 r-xp 0 08:01 5";
        MapsLine m;
        ASSERT_EQ(maps_next(&cursor, &m), 1);
        ASSERT_TRUE(m.path == NULL);
}

int main(void) {
        test_lines();
        test_malformed();
        printf("ok\n");
        return 0;
}
