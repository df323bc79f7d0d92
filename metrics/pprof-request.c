/* SPDX-License-Identifier: MIT */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "pprof-request.h"

/* Longer query strings are no request of ours. */
#define QUERY_MAX 4096u
/* A unit or module name, decoded. */
#define NAME_MAX_BYTES 512u

static const char *const endpoint_names[_PPROF_ENDPOINT_MAX] = {
        [PPROF_HEAP] = "heap",
        [PPROF_ALLOCS] = "allocs",
        [PPROF_SLAB] = "slab",
        [PPROF_USERHEAP] = "userheap",
};

const char *pprof_endpoint_to_string(PprofEndpoint e) {
        return e >= 0 && e < _PPROF_ENDPOINT_MAX ? endpoint_names[e] : NULL;
}

PprofEndpoint pprof_endpoint_from_path(const char *path) {
        if (!path || strncmp(path, PPROF_PATH_PREFIX, strlen(PPROF_PATH_PREFIX)) != 0)
                return _PPROF_ENDPOINT_INVALID;
        for (PprofEndpoint e = 0; e < _PPROF_ENDPOINT_MAX; e++)
                if (streq(path + strlen(PPROF_PATH_PREFIX), endpoint_names[e]))
                        return e;
        return _PPROF_ENDPOINT_INVALID;
}

void pprof_request_done(PprofRequest *r) {
        free(r->unit);
        free(r->module);
        *r = (PprofRequest) {};
}

static int fail(char **reterr_reason, const char *format, ...) _printf_(2, 3);
static int fail(char **reterr_reason, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(reterr_reason, format, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : -EINVAL;
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The n bytes at s, form-decoded ('+' is a space, %XX a byte) into a new string; NULL for a malformed
 * escape or an encoded NUL (*ret_oom false), or on OOM (*ret_oom true). */
static char *decode(const char *s, size_t n, bool *ret_oom) {
        _cleanup_free_ char *out = malloc(n + 1);
        size_t k = 0;

        *ret_oom = !out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '+')
                        out[k++] = ' ';
                else if (s[i] == '%') {
                        int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1, lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                                return NULL;
                        out[k++] = (char) (hi << 4 | lo);
                        i += 2;
                } else
                        out[k++] = s[i];
        }
        out[k] = '\0';
        return TAKE_PTR(out);
}

/* A positive decimal integer in 1 .. max, nothing else (no sign, blanks or leading zeros). */
static bool parse_count(const char *v, uint64_t max, uint64_t *ret) {
        if (!v[0] || v[0] == '0' || strspn(v, "0123456789") != strlen(v))
                return false;
        return parse_uint64(v, 1, max, ret) >= 0;
}

/* A name (unit, module): printable text of at most NAME_MAX_BYTES. */
static bool name_valid(const char *v) {
        if (!v[0] || strlen(v) > NAME_MAX_BYTES)
                return false;
        for (const unsigned char *p = (const unsigned char *) v; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

/* Sets one parameter. seen: the parameters named so far, to refuse repeats. */
static int set_parameter(PprofRequest *r, const char *key, const char *value, unsigned *seen, char **reterr_reason) {
        static const char *const known[] = { "seconds", "pid", "unit", "module", "debug", "gc" };
        size_t which = ELEMENTSOF(known);
        uint64_t n;

        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                if (streq(key, known[i]))
                        which = i;
        if (which == ELEMENTSOF(known))
                return fail(reterr_reason, "unknown parameter \"%s\": %s takes seconds, pid, unit, module, debug "
                            "and gc", key, pprof_endpoint_to_string(r->endpoint));
        if (*seen & (1u << which))
                return fail(reterr_reason, "parameter \"%s\" given twice", key);
        *seen |= 1u << which;

        switch (which) {
        case 0:
                if (!parse_count(value, UINT64_MAX, &n))
                        return fail(reterr_reason, "invalid value for \"seconds\": must be a positive integer");
                if (n > PPROF_SECONDS_MAX)
                        return fail(reterr_reason, "\"seconds\" is %s: a delta takes at most %u seconds", value,
                                    PPROF_SECONDS_MAX);
                r->seconds = (unsigned) n;
                return 0;
        case 1:
                if (!parse_count(value, INT32_MAX, &n))
                        return fail(reterr_reason, "invalid value for \"pid\": must be a process id (1 to %d)",
                                    INT32_MAX);
                r->pid = (int32_t) n;
                return 0;
        case 2:
        case 3:
                if (r->endpoint == PPROF_USERHEAP)
                        return fail(reterr_reason, "\"%s\" does not apply to userheap: heaps are by process (pid)",
                                    key);
                if (!name_valid(value))
                        return fail(reterr_reason, "invalid value for \"%s\": a name of 1 to %u printable bytes", key,
                                    NAME_MAX_BYTES);
                char **name = which == 2 ? &r->unit : &r->module;
                *name = strdup(value);
                return *name ? 0 : -ENOMEM;
        case 4:
                /* Go's text output (debug=1, 2) is no format of ours. */
                if (!streq(value, "0"))
                        return fail(reterr_reason, "debug=%s is not served: the profile is binary only (debug=0)",
                                    value);
                return 0;
        default:
                /* Go's heap collects garbage first when gc > 0: nothing to collect here. */
                if (!streq(value, "0") && !parse_count(value, INT64_MAX, &n))
                        return fail(reterr_reason, "invalid value for \"gc\": must be an integer");
                return 0;
        }
}

int pprof_request_parse(PprofEndpoint endpoint, const char *query, PprofRequest *ret, char **reterr_reason) {
        _cleanup_(pprof_request_done) PprofRequest r = { .endpoint = endpoint };
        unsigned seen = 0;
        int k;

        if (endpoint < 0 || endpoint >= _PPROF_ENDPOINT_MAX)
                return -EINVAL;
        if (query && strlen(query) > QUERY_MAX)
                return fail(reterr_reason, "the query string is longer than %u bytes", QUERY_MAX);
        for (const char *p = query ?: ""; *p;) {
                size_t len = strcspn(p, "&"), key_len = strcspn(p, "=&");
                _cleanup_free_ char *key = NULL, *value = NULL;
                bool oom;

                if (len == 0)
                        return fail(reterr_reason, "malformed query string: an empty parameter");
                if (key_len == len || key_len == 0)
                        return fail(reterr_reason, "malformed query string: \"%.*s\" is not name=value",
                                    (int) MIN(len, (size_t) 64), p);
                key = decode(p, key_len, &oom);
                if (key)
                        value = decode(p + key_len + 1, len - key_len - 1, &oom);
                if (!key || !value)
                        return oom ? -ENOMEM : fail(reterr_reason, "malformed query string: a bad %%-escape in "
                                                    "\"%.*s\"", (int) MIN(len, (size_t) 64), p);
                k = set_parameter(&r, key, value, &seen, reterr_reason);
                if (k < 0)
                        return k;
                p += len;
                if (*p == '&' && !*++p)
                        return fail(reterr_reason, "malformed query string: an empty parameter");
        }
        if ((r.pid > 0) + !!r.unit + !!r.module > 1)
                return fail(reterr_reason, "pid, unit and module exclude each other: name one");
        *ret = r;
        r = (PprofRequest) {};
        return 0;
}
