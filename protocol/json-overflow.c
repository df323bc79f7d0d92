/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json-overflow.h"
#include "macro.h"

/* jansson's JSON_PARSER_MAX_DEPTH: deeper text fails there anyway. */
#define JSON_DEPTH_MAX 2048

typedef struct Span {
        const char *start;      /* a string token, quotes included; NULL: none */
        size_t size;
} Span;

static bool number_char(char c) {
        return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Whether the number token [p, p + n) is out of what jansson stores: int64_t for an integer literal,
 * double for one with a fraction or an exponent (as jansson's lexer decides). */
static int number_out_of_range(const char *p, size_t n, bool *ret) {
        _cleanup_free_ char *s = strndup(p, n);
        char *end = NULL;

        if (!s)
                return -ENOMEM;
        errno = 0;
        if (strcspn(s, ".eE") == n) {
                (void) strtoll(s, &end, 10);
                *ret = errno == ERANGE;
        } else {
                double d = strtod(s, &end);
                *ret = errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL);
        }
        return 0;
}

/* The key a string token spells, escapes decoded, in *ret (malloc'ed; NULL if it is no valid string). */
static int span_decode(Span k, char **ret) {
        json_error_t error;
        json_auto_t *j = json_loadb(k.start, k.size, JSON_DECODE_ANY, &error);

        *ret = NULL;
        if (!json_is_string(j))
                return 0;
        *ret = strdup(json_string_value(j));
        return *ret ? 0 : -ENOMEM;
}

static int span_is(Span k, const char *key, bool *ret) {
        _cleanup_free_ char *decoded = NULL;
        size_t n = strlen(key);

        /* Keys without an escape are compared as they are; the rare one with escapes is decoded. */
        if (!memchr(k.start, '\\', k.size)) {
                *ret = k.size == n + 2 && memcmp(k.start + 1, key, n) == 0;
                return 0;
        }
        int r = span_decode(k, &decoded);
        if (r < 0)
                return r;
        *ret = decoded && streq(decoded, key);
        return 0;
}

int json_overflow_scan(const char *text, size_t size, char **ret_copy, char **ret_name) {
        _cleanup_free_ char *copy = NULL, *name = NULL;
        bool is_object[JSON_DEPTH_MAX + 1] = {};
        bool expect_key = false, found = false, in_parameters = false;
        Span member = {}, parameter = {};       /* the current key of the call object and of "parameters" */
        size_t depth = 0, out = 0;
        int r;

        /* Replacing a number by "0" never lengthens the text. */
        copy = malloc(size + 1);
        if (!copy)
                return -ENOMEM;

        for (size_t i = 0; i < size; i++) {
                char c = text[i];

                if (c == '"') {
                        size_t j = i + 1;

                        while (j < size && text[j] != '"')
                                j += text[j] == '\\' ? 2 : 1;
                        j = MIN(j, size - 1);
                        Span s = { text + i, j - i + 1 };
                        if (expect_key && depth == 1) {
                                member = s;
                                r = span_is(s, "parameters", &in_parameters);
                                if (r < 0)
                                        return r;
                        } else if (expect_key && depth == 2)
                                parameter = s;
                        expect_key = false;
                        memcpy(copy + out, s.start, s.size);
                        out += s.size;
                        i = j;
                        continue;
                }
                if ((c >= '0' && c <= '9') || c == '-') {
                        size_t j = i;
                        bool overflow;

                        while (j < size && number_char(text[j]))
                                j++;
                        r = number_out_of_range(text + i, j - i, &overflow);
                        if (r < 0)
                                return r;
                        if (!overflow) {
                                memcpy(copy + out, text + i, j - i);
                                out += j - i;
                        } else {
                                copy[out++] = '0';
                                if (!found) {
                                        Span holder = depth >= 2 && in_parameters && is_object[2] ? parameter :
                                                      depth >= 1 ? member : (Span) {};
                                        found = true;
                                        if (holder.start) {
                                                r = span_decode(holder, &name);
                                                if (r < 0)
                                                        return r;
                                        }
                                }
                        }
                        i = j - 1;
                        continue;
                }

                switch (c) {
                case '{':
                case '[':
                        if (depth == JSON_DEPTH_MAX)
                                return -EBADMSG;
                        is_object[++depth] = c == '{';
                        expect_key = c == '{';
                        if (depth == 2)
                                parameter = (Span) {};
                        break;
                case '}':
                case ']':
                        depth -= depth > 0;
                        expect_key = false;
                        break;
                case ',':
                        expect_key = depth > 0 && is_object[depth];
                        break;
                case ':':
                        expect_key = false;
                        break;
                }
                copy[out++] = c;
        }

        if (!found)
                return 0;
        copy[out] = '\0';
        *ret_copy = TAKE_PTR(copy);
        *ret_name = TAKE_PTR(name);
        return 1;
}
