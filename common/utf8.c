/* SPDX-License-Identifier: MIT */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "utf8.h"

/* Longest piece one step of the encoder emits: a 4-byte character, or "\xc2\xNN" for a C1 control. */
#define PIECE_MAX 8

/*
 * Length (1..4) of the valid UTF-8 sequence s starts with, 0 if it starts none. The second byte's range
 * depends on the first (RFC 3629 table): E0 needs A0..BF (no overlong 3-byte forms), ED 80..9F (no
 * surrogates), F0 90..BF (no overlong 4-byte forms), F4 80..8F (nothing above U+10FFFF); C0, C1 and F5..FF
 * start nothing. The NUL terminator fails every range, so this never reads past the end.
 */
static size_t sequence_length(const unsigned char *s) {
        unsigned char lo = 0x80, hi = 0xbf;
        size_t n;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                n = 3;
                if (s[0] == 0xe0)
                        lo = 0xa0;
                else if (s[0] == 0xed)
                        hi = 0x9f;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                n = 4;
                if (s[0] == 0xf0)
                        lo = 0x90;
                else if (s[0] == 0xf4)
                        hi = 0x8f;
        } else
                return 0;

        if (s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        return n;
}

static bool is_control(const unsigned char *s, size_t len) {
        if (len == 1)
                return s[0] < 0x20 || s[0] == 0x7f;
        return len == 2 && s[0] == 0xc2 && s[1] <= 0x9f;
}

static size_t put_bytes_escaped(char *piece, const unsigned char *s, size_t len) {
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < len; i++) {
                piece[4 * i] = '\\';
                piece[4 * i + 1] = 'x';
                piece[4 * i + 2] = hex[s[i] >> 4];
                piece[4 * i + 3] = hex[s[i] & 0xf];
        }
        return 4 * len;
}

/* One step over the non-empty string s: writes what it becomes into piece (not NUL-terminated), stores the
 * piece's length in *ret_piece_len and returns the number of input bytes it stands for. */
static size_t next_piece(const char *s, Utf8EscapeFlags flags, char piece[static PIECE_MAX],
                size_t *ret_piece_len) {
        const unsigned char *u = (const unsigned char *) s;
        size_t len = sequence_length(u);

        if (len == 0) {
                /* Only this byte: whatever follows gets its own chance to be a valid sequence. */
                *ret_piece_len = put_bytes_escaped(piece, u, 1);
                return 1;
        }
        if ((flags & UTF8_ESCAPE_CONTROL) && is_control(u, len))
                *ret_piece_len = put_bytes_escaped(piece, u, len);
        else {
                memcpy(piece, s, len);
                *ret_piece_len = len;
        }
        return len;
}

bool utf8_is_valid(const char *s) {
        for (size_t n; *s; s += n) {
                n = sequence_length((const unsigned char *) s);
                if (n == 0)
                        return false;
        }
        return true;
}

char *utf8_escape(const char *s, Utf8EscapeFlags flags) {
        char piece[PIECE_MAX];
        size_t size = 1, piece_len;
        char *out, *p;

        s = s ?: "";
        /* Two passes: measure, then write. */
        for (const char *i = s; *i;) {
                i += next_piece(i, flags, piece, &piece_len);
                size += piece_len;
        }
        out = malloc(size);
        if (!out)
                return NULL;
        p = out;
        for (const char *i = s; *i;) {
                i += next_piece(i, flags, piece, &piece_len);
                memcpy(p, piece, piece_len);
                p += piece_len;
        }
        *p = '\0';
        return out;
}

json_t *utf8_json_string(const char *s) {
        _cleanup_free_ char *escaped = NULL;

        if (!s)
                return NULL;
        escaped = utf8_escape(s, 0);
        if (!escaped)
                return NULL;
        /* Valid by construction (tests/test-utf8.c checks that jansson agrees), so no second check. */
        return json_string_nocheck(escaped);
}

bool utf8_escaped_streq(const char *raw, const char *escaped) {
        char piece[PIECE_MAX];
        size_t piece_len;

        if (!raw || !escaped)
                return false;
        while (*raw) {
                raw += next_piece(raw, 0, piece, &piece_len);
                if (strncmp(escaped, piece, piece_len) != 0)
                        return false;
                escaped += piece_len;
        }
        return *escaped == '\0';
}
