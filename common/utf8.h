/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Strings from the kernel, /proc and ELF files (comm, cmdline, module, symbol and file names) are bytes, not
 * text: a process may name itself "bad\xff", and the kernel cuts comm at 15 bytes even inside a character.
 * JSON needs UTF-8, so memstrackd encodes every such string one way (docs/protocol.md, "Strings from the
 * kernel"): valid UTF-8 passes unchanged, each byte that is not part of a valid UTF-8 sequence becomes the
 * four characters \xNN (lowercase hex), as Python's errors="backslashreplace" does. A backslash itself is
 * not escaped, so names that never were bad read as before.
 *
 * Valid means RFC 3629, as jansson checks it: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
 * above U+10FFFF, no NUL. Whatever this encoder returns, json_string() accepts.
 *
 * Shared by memstrackd (replies, journal summary) and memstrackctl (terminal output).
 */

#include <stdbool.h>

#include <jansson.h>

typedef enum Utf8EscapeFlags {
        /* Also escape control characters as their bytes: C0 (U+0000..U+001F) and DEL (U+007F) as \xNN,
         * C1 (U+0080..U+009F) as \xc2\xNN. For text meant for a terminal or the journal. */
        UTF8_ESCAPE_CONTROL = 1 << 0,
} Utf8EscapeFlags;

/* The encoded form of s (NULL reads as ""), malloc'ed. NULL only on OOM. */
char *utf8_escape(const char *s, Utf8EscapeFlags flags);

/* A new JSON string of utf8_escape(s, 0), for a string from the kernel, /proc or an ELF file. NULL only on
 * OOM (or s NULL). */
json_t *utf8_json_string(const char *s);

/* Whether s is valid UTF-8 as above (what json_string() takes as it is). */
bool utf8_is_valid(const char *s);

/* Whether raw (bytes, as from the kernel) encodes to escaped (as a client sends it back), without
 * allocating: "bad\xff" matches the text bad\xff. */
bool utf8_escaped_streq(const char *raw, const char *escaped);
