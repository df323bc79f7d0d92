/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "format.h"
#include "tests.h"

static void test_parse(void) {
        uint64_t v;

        ASSERT_EQ(format_parse_seconds("2", &v), 0);
        ASSERT_EQ(v, 2000000);
        ASSERT_EQ(format_parse_seconds("0.5", &v), 0);
        ASSERT_EQ(v, 500000);
        ASSERT_EQ(format_parse_seconds(".25", &v), 0);
        ASSERT_EQ(v, 250000);
        ASSERT_EQ(format_parse_seconds("1.000001", &v), 0);
        ASSERT_EQ(v, 1000001);
        ASSERT_EQ(format_parse_seconds("0", &v), -ERANGE);
        ASSERT_EQ(format_parse_seconds("1.", &v), -EINVAL);
        ASSERT_EQ(format_parse_seconds("1.5s", &v), -EINVAL);
        ASSERT_EQ(format_parse_seconds("1.0000001", &v), -EINVAL);
}

static void test_sizes(void) {
        char b[FORMAT_BUFFER_MAX];

        ASSERT_STREQ(format_bytes(b, sizeof(b), 0), "0 B");
        ASSERT_STREQ(format_bytes(b, sizeof(b), 1023), "1023 B");
        ASSERT_STREQ(format_bytes(b, sizeof(b), 1024), "1.0 KiB");
        ASSERT_STREQ(format_bytes(b, sizeof(b), 1536), "1.5 KiB");
        /* Just under 1 MiB would print as "1024.0 KiB": it switches unit instead. */
        ASSERT_STREQ(format_bytes(b, sizeof(b), 1048575), "1.0 MiB");
        ASSERT_STREQ(format_bytes(b, sizeof(b), UINT64_C(64) << 20), "64.0 MiB");
        ASSERT_STREQ(format_bytes(b, sizeof(b), UINT64_C(3) << 29), "1.5 GiB");
        ASSERT_STREQ(format_bytes(b, sizeof(b), UINT64_MAX), "16.0 EiB");

        ASSERT_STREQ(format_pages(b, sizeof(b), 16384, 4096), "64.0 MiB");
        ASSERT_STREQ(format_pages(b, sizeof(b), 1, 0), "4.0 KiB");
        ASSERT_STREQ(format_pages(b, sizeof(b), 3, 65536), "192.0 KiB");
        ASSERT_STREQ(format_pages(b, sizeof(b), UINT64_MAX, 4096), "16.0 EiB");

        ASSERT_STREQ(format_duration(b, sizeof(b), 59999999), "59s");
        ASSERT_STREQ(format_duration(b, sizeof(b), 723000000), "12min 3s");
        ASSERT_STREQ(format_duration(b, sizeof(b), UINT64_C(3720) * 1000000), "1h 02min");
        ASSERT_STREQ(format_duration(b, sizeof(b), UINT64_C(187200) * 1000000), "2d 04h");
}

static void test_text(void) {
        char *s;

        ASSERT_EQ(format_text_width("abc"), 3);
        ASSERT_EQ(format_text_width("ünï"), 3);
        ASSERT_EQ(format_text_width(NULL), 0);

        s = format_sanitize("a\tb\nc\033[2J");
        ASSERT_STREQ(s, "a\\x09b\\x0ac\\x1b[2J");
        free(s);
        /* C1 controls (a one-character CSI) and DEL, \r and \b too; bytes that are not UTF-8 as the daemon
         * would have sent them; printable text, backslashes included, unchanged. */
        s = format_sanitize("\xc2\x9b" "2J\x7f\r\b\xff-\xc3\xbc\\x41");
        ASSERT_STREQ(s, "\\xc2\\x9b" "2J\\x7f\\x0d\\x08\\xff-\xc3\xbc\\x41");
        free(s);
        ASSERT_EQ(format_text_width("\\x1b"), 4);

        s = format_ellipsize("postgres: writer", 10);
        ASSERT_STREQ(s, "postgre...");
        free(s);
        s = format_ellipsize("short", 10);
        ASSERT_STREQ(s, "short");
        free(s);
        /* Cuts between characters, never inside one. */
        s = format_ellipsize("ünïcödé-name", 6);
        ASSERT_STREQ(s, "ünï...");
        free(s);
        s = format_ellipsize("abcdef", 2);
        ASSERT_STREQ(s, "ab");
        free(s);
}

static char *print_table(Table *t, size_t width) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(table_print(t, f, width));
        fclose(f);
        return buf;
}

static void test_table(void) {
        static const TableColumn columns[] = {
                { .header = "PID", .align = TABLE_ALIGN_RIGHT },
                { .header = "COMM", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 4 },
                { .header = "PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "COMMAND", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 7 },
        };
        Table *t;
        char *out;

        ASSERT_OK(table_new(columns, ELEMENTSOF(columns), &t));
        ASSERT_OK(table_add_cellf(t, "%d", 4242));
        ASSERT_OK(table_add_cell(t, "loadgen"));
        ASSERT_OK(table_add_cell(t, "16384"));
        ASSERT_OK(table_add_cell(t, "loadgen --pages 16384 --child"));
        ASSERT_OK(table_add_cellf(t, "%d", 1));
        ASSERT_OK(table_add_cell(t, "evil\nname"));
        ASSERT_OK(table_add_cell(t, "3"));
        ASSERT_OK(table_add_cell(t, NULL));
        ASSERT_EQ(table_rows(t), 2);

        out = print_table(t, SIZE_MAX);
        ASSERT_STREQ(out, " PID COMM         PAGES COMMAND\n"
                          "4242 loadgen      16384 loadgen --pages 16384 --child\n"
                          "   1 evil\\x0aname     3 -\n");
        free(out);

        /* 33 columns: the command gives way first... */
        out = print_table(t, 33);
        ASSERT_STREQ(out, " PID COMM         PAGES COMMAND\n"
                          "4242 loadgen      16384 loadge...\n"
                          "   1 evil\\x0aname     3 -\n");
        free(out);
        /* ...down to its minimum, then the name does. */
        out = print_table(t, 24);
        ASSERT_STREQ(out, " PID COMM  PAGES COMMAND\n"
                          "4242 lo... 16384 load...\n"
                          "   1 ev...     3 -\n");
        free(out);

        /* --no-legend: the rows alone, sized to the rows, not to the headers. */
        table_set_header(t, false);
        out = print_table(t, SIZE_MAX);
        ASSERT_STREQ(out, "4242 loadgen      16384 loadgen --pages 16384 --child\n"
                          "   1 evil\\x0aname     3 -\n");
        free(out);
        table_free(t);

        /* Without a header an empty column still takes its place in every row. */
        ASSERT_OK(table_new(columns, ELEMENTSOF(columns), &t));
        table_set_header(t, false);
        ASSERT_OK(table_add_cell(t, "7"));
        ASSERT_OK(table_add_cell(t, ""));
        ASSERT_OK(table_add_cell(t, "9"));
        ASSERT_OK(table_add_cell(t, "x"));
        out = print_table(t, SIZE_MAX);
        ASSERT_STREQ(out, "7   9 x\n");
        free(out);
        /* An empty table prints nothing at all. */
        table_free(t);
        ASSERT_OK(table_new(columns, ELEMENTSOF(columns), &t));
        table_set_header(t, false);
        out = print_table(t, SIZE_MAX);
        ASSERT_STREQ(out, "");
        free(out);
        table_free(t);
}

int main(void) {
        TEST(test_parse);
        TEST(test_sizes);
        TEST(test_text);
        TEST(test_table);
        return 0;
}
