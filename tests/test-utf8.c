/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "macro.h"
#include "tests.h"
#include "utf8.h"

static void check(const char *in, const char *expected) {
        _cleanup_free_ char *out = utf8_escape(in, 0);
        json_auto_t *j = utf8_json_string(in);

        ASSERT_STREQ(out, expected);
        ASSERT_NOT_NULL(j);
        ASSERT_STREQ(json_string_value(j), expected);
        ASSERT_TRUE(utf8_escaped_streq(in, expected));
}

static void check_control(const char *in, const char *expected) {
        _cleanup_free_ char *out = utf8_escape(in, UTF8_ESCAPE_CONTROL);

        ASSERT_STREQ(out, expected);
}

/* The expected strings are what Python 3 gives for bytes.decode("utf-8", "backslashreplace"). */
static void test_escape(void) {
        /* Valid text passes unchanged, also a backslash and the largest code point. */
        check("", "");
        check("kworker/0:1", "kworker/0:1");
        check("C:\\x41", "C:\\x41");
        /* ü, €, a penguin: two, three and four bytes. */
        check("\xc3\xbc\xe2\x82\xac\xf0\x9f\x90\xa7", "\xc3\xbc\xe2\x82\xac\xf0\x9f\x90\xa7");
        check("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");                                          /* U+10FFFF */
        check("\xef\xbf\xbe", "\xef\xbf\xbe");                  /* U+FFFE: a noncharacter, but valid */
        check("\x1b[2J\x7f", "\x1b[2J\x7f");                    /* controls are valid UTF-8 */

        /* Not UTF-8 at all. */
        check("bad\xff\xfe", "bad\\xff\\xfe");
        check("\x80", "\\x80");                                 /* lone continuation bytes */
        check("a\xbf\x80z", "a\\xbf\\x80z");

        /* Overlong forms. */
        check("\xc0\xaf", "\\xc0\\xaf");
        check("\xc1\xbf", "\\xc1\\xbf");
        check("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
        check("\xe0\x9f\xbf", "\\xe0\\x9f\\xbf");
        check("\xf0\x8f\xbf\xbf", "\\xf0\\x8f\\xbf\\xbf");

        /* Surrogates U+D800 and U+DFFF; the last code point before them is valid. */
        check("\xed\xa0\x80", "\\xed\\xa0\\x80");
        check("\xed\xbf\xbf", "\\xed\\xbf\\xbf");
        check("\xed\x9f\xbf", "\xed\x9f\xbf");

        /* Above U+10FFFF, and lead bytes that can only start one. */
        check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
        check("\xf5\x80\x80\x80", "\\xf5\\x80\\x80\\x80");
        check("\xf8\x88\x80\x80\x80", "\\xf8\\x88\\x80\\x80\\x80");

        /* Truncated: at the end (the kernel cut comm at 15 bytes), and before another character. */
        check("abcdefghijkl\xe2\x82", "abcdefghijkl\\xe2\\x82");
        check("\xf0\x9f\x90", "\\xf0\\x9f\\x90");
        check("\xc3", "\\xc3");
        check("\xe2\x82z\xc3\xbc", "\\xe2\\x82z\xc3\xbc");
        check("\xe2\xc3\xbc", "\\xe2\xc3\xbc");                 /* a new lead byte ends the broken one */
}

static void test_control(void) {
        check_control("", "");
        check_control("plain \xc3\xbc", "plain \xc3\xbc");
        check_control("a\tb\nc\033[2J\r\b\x7f", "a\\x09b\\x0ac\\x1b[2J\\x0d\\x08\\x7f");
        /* C1 controls (U+0080..U+009F) as their two bytes; U+00A0 is printable. */
        check_control("\xc2\x9b" "31m\xc2\x85\xc2\xa0", "\\xc2\\x9b" "31m\\xc2\\x85\xc2\xa0");
        /* Invalid bytes as without the flag. */
        check_control("bad\xff\xfe\x1b", "bad\\xff\\xfe\\x1b");
        /* Idempotent: escaping the escaped form changes nothing. */
        _cleanup_free_ char *once = utf8_escape("x\xff\x1b\xc2\x9b", UTF8_ESCAPE_CONTROL);
        ASSERT_NOT_NULL(once);
        check_control(once, once);
}

static void test_streq(void) {
        ASSERT_TRUE(utf8_escaped_streq("bad\xff\xfe", "bad\\xff\\xfe"));
        ASSERT_TRUE(utf8_escaped_streq("", ""));
        ASSERT_TRUE(!utf8_escaped_streq("bad\xff\xfe", "bad\\xff"));
        ASSERT_TRUE(!utf8_escaped_streq("bad\xff", "bad\\xff\\xfe"));
        ASSERT_TRUE(!utf8_escaped_streq("bad\xff", "bad\\xf"));
        ASSERT_TRUE(!utf8_escaped_streq("bad\xff", "bad\xff"));
        ASSERT_TRUE(!utf8_escaped_streq(NULL, ""));
        ASSERT_TRUE(!utf8_escaped_streq("", NULL));
}

/*
 * jansson as the oracle, over every string of one and two bytes, every three-byte string starting with a
 * lead byte of a longer sequence, and four-byte strings around each F0..F4 range: jansson accepts the
 * string exactly when the encoder leaves it unchanged, and always accepts what the encoder returns.
 */
static void check_against_jansson(const unsigned char *bytes, size_t n) {
        char in[8];
        memcpy(in, bytes, n);
        in[n] = '\0';
        _cleanup_free_ char *out = utf8_escape(in, 0);
        ASSERT_NOT_NULL(out);
        json_auto_t *raw = json_stringn(in, n);
        json_auto_t *escaped = json_string(out);
        /* utf8_is_valid() says what jansson takes. */
        ASSERT_EQ(utf8_is_valid(in), raw != NULL);
        if ((raw != NULL) != streq(in, out)) {
                fprintf(stderr, "jansson %s %02x %02x %02x %02x (n=%zu), encoder gave \"%s\"\n",
                        raw ? "accepts" : "rejects", bytes[0], bytes[1], bytes[2], bytes[3], n, out);
                abort();
        }
        ASSERT_NOT_NULL(escaped);
}

static void test_jansson_agrees(void) {
        unsigned char b[4] = {};

        for (unsigned x = 1; x < 256; x++) {
                b[0] = (unsigned char) x;
                check_against_jansson(b, 1);
                for (unsigned y = 1; y < 256; y++) {
                        b[1] = (unsigned char) y;
                        check_against_jansson(b, 2);
                        if (x < 0xe0)
                                continue;
                        for (unsigned z = 1; z < 256; z++) {
                                b[2] = (unsigned char) z;
                                check_against_jansson(b, 3);
                        }
                }
        }
        static const unsigned char fourth[] = { 0x01, 0x7f, 0x80, 0xbf, 0xc0, 0xff };
        for (unsigned x = 0xf0; x <= 0xf5; x++)
                for (unsigned y = 0x80; y <= 0xc0; y++)
                        for (size_t k = 0; k < ELEMENTSOF(fourth); k++) {
                                b[0] = (unsigned char) x;
                                b[1] = (unsigned char) y;
                                b[2] = 0x80;
                                b[3] = fourth[k];
                                check_against_jansson(b, 4);
                        }
}

int main(void) {
        TEST(test_escape);
        TEST(test_control);
        TEST(test_streq);
        TEST(test_jansson_agrees);
        return 0;
}
