/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksym.h"
#include "macro.h"

typedef struct KsymEntry {
        uint64_t address;
        uint32_t name;          /* offset into Ksym.strings */
        uint32_t module;        /* offset into Ksym.strings, or NO_MODULE */
} KsymEntry;

#define NO_MODULE UINT32_MAX

struct Ksym {
        KsymEntry *entries;
        size_t n_entries, n_allocated;
        char *strings;          /* NUL-separated names; entries refer to them by offset */
        size_t strings_size, strings_allocated;
        bool hidden;
};

static int append_string(Ksym *k, const char *s, size_t len, uint32_t *ret) {
        if (k->strings_size + len + 1 > k->strings_allocated) {
                size_t n = MAX(k->strings_allocated * 2, k->strings_size + len + 1 + 4096);
                if (n > UINT32_MAX)
                        return -E2BIG;
                char *p = realloc(k->strings, n);
                if (!p)
                        return -ENOMEM;
                k->strings = p;
                k->strings_allocated = n;
        }
        memcpy(k->strings + k->strings_size, s, len);
        k->strings[k->strings_size + len] = '\0';
        *ret = (uint32_t) k->strings_size;
        k->strings_size += len + 1;
        return 0;
}

static int compare_entries(const void *a, const void *b) {
        const KsymEntry *x = a, *y = b;
        return x->address < y->address ? -1 : x->address > y->address;
}

Ksym *ksym_free(Ksym *k) {
        if (!k)
                return NULL;
        free(k->entries);
        free(k->strings);
        free(k);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Ksym *, ksym_free);

/* One line: "ffffffff81000000 T _stext" or "ffffffffc0201000 t name\t[module]". */
static int parse_line(Ksym *k, const char *line, uint32_t *last_module, char *last_module_name, size_t lmn_size,
                bool *ret_nonzero) {
        char *end;
        int r;

        errno = 0;
        uint64_t address = strtoull(line, &end, 16);
        if (errno != 0 || end == line || *end != ' ')
                return -EBADMSG;
        const char *p = end + 1;
        char type = *p;
        if (!type || p[1] != ' ')
                return -EBADMSG;
        p += 2;

        size_t name_len = strcspn(p, " \t\n");
        if (name_len == 0)
                return -EBADMSG;
        const char *name = p;
        p += name_len;

        *ret_nonzero = address != 0;

        /* Text symbols are the only ones a call chain can point into. */
        if (!strchr("tTwW", type))
                return 0;

        uint32_t module = NO_MODULE;
        p += strspn(p, " \t");
        if (*p == '[') {
                const char *m = p + 1;
                size_t mlen = strcspn(m, "]");
                if (m[mlen] != ']' || mlen == 0)
                        return -EBADMSG;
                /* Module symbols come grouped: reuse the string of the previous line's module. */
                if (*last_module != NO_MODULE && mlen < lmn_size && strncmp(last_module_name, m, mlen) == 0 &&
                    last_module_name[mlen] == '\0')
                        module = *last_module;
                else {
                        r = append_string(k, m, mlen, &module);
                        if (r < 0)
                                return r;
                        *last_module = module;
                        (void) snprintf(last_module_name, lmn_size, "%.*s", (int) mlen, m);
                }
        }

        if (k->n_entries == k->n_allocated) {
                size_t n = MAX(k->n_allocated * 2, (size_t) 4096);
                KsymEntry *e = realloc(k->entries, n * sizeof(KsymEntry));
                if (!e)
                        return -ENOMEM;
                k->entries = e;
                k->n_allocated = n;
        }
        KsymEntry *e = &k->entries[k->n_entries];
        r = append_string(k, name, name_len, &e->name);
        if (r < 0)
                return r;
        e->address = address;
        e->module = module;
        k->n_entries++;
        return 0;
}

int ksym_load(const char *path, Ksym **ret) {
        _cleanup_(ksym_freep) Ksym *k = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char last_module_name[256] = "";
        uint32_t last_module = NO_MODULE;
        size_t line_size = 0, n_lines = 0, n_nonzero = 0;
        int r;

        f = fopen(path ?: "/proc/kallsyms", "re");
        if (!f)
                return negative_errno();

        k = calloc(1, sizeof(Ksym));
        if (!k)
                return -ENOMEM;

        while (getline(&line, &line_size, f) > 0) {
                bool nonzero = false;

                r = parse_line(k, line, &last_module, last_module_name, sizeof(last_module_name), &nonzero);
                if (r == -EBADMSG)
                        continue; /* tolerate odd lines; the file as a whole must still parse */
                if (r < 0)
                        return r;
                n_lines++;
                n_nonzero += nonzero;
        }
        if (ferror(f))
                return -EIO;
        if (n_lines == 0)
                return -EBADMSG;

        /* kptr_restrict (or no CAP_SYSLOG) shows every address as 0: keep nothing to look up. */
        k->hidden = n_nonzero == 0;
        if (k->hidden)
                k->n_entries = 0;

        qsort(k->entries, k->n_entries, sizeof(KsymEntry), compare_entries);
        *ret = TAKE_PTR(k);
        return 0;
}

static bool is_pseudo_module(const char *m) {
        return streq(m, "bpf") || strncmp(m, "__builtin__", 11) == 0;
}

bool ksym_lookup(const Ksym *k, uint64_t addr, KsymResult *ret) {
        size_t lo = 0, hi = k->n_entries;

        if (k->n_entries == 0 || addr < k->entries[0].address)
                return false;

        /* Last entry with address <= addr. */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (k->entries[mid].address <= addr)
                        lo = mid;
                else
                        hi = mid;
        }

        const KsymEntry *e = &k->entries[lo];
        ret->name = k->strings + e->name;
        ret->offset = addr - e->address;
        ret->module = e->module == NO_MODULE ? NULL : k->strings + e->module;
        ret->real_module = ret->module && !is_pseudo_module(ret->module);
        return true;
}

bool ksym_addresses_hidden(const Ksym *k) {
        return k->hidden;
}

size_t ksym_count(const Ksym *k) {
        return k->n_entries;
}

size_t ksym_memory_bytes(const Ksym *k) {
        return sizeof(Ksym) + k->n_allocated * sizeof(KsymEntry) + k->strings_allocated;
}

uint64_t ksym_address_of(const Ksym *k, const char *name) {
        for (size_t i = 0; i < k->n_entries; i++)
                if (streq(k->strings + k->entries[i].name, name))
                        return k->entries[i].address;
        return 0;
}

char *ksym_format(const Ksym *k, uint64_t addr, char *buf, size_t size) {
        KsymResult r;

        if (k && ksym_lookup(k, addr, &r)) {
                if (r.module)
                        (void) snprintf(buf, size, "%s+0x%" PRIx64 " [%s]", r.name, r.offset, r.module);
                else
                        (void) snprintf(buf, size, "%s+0x%" PRIx64, r.name, r.offset);
        } else
                (void) snprintf(buf, size, "0x%" PRIx64, addr);
        return buf;
}
