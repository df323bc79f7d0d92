/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file-util.h"
#include "format-util.h"
#include "frame-text.h"
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
        bool synthetic;         /* made by ksym_load_text(): its addresses are no kernel's */
        /* Where the kernel image's text sections end (_etext, _einittext): what lies past one, up to the
         * next symbol, is not the image's (BPF programs, trampolines, modules not in this table). */
        uint64_t text_ends[2];
        size_t n_text_ends;

        /* The name index: positions in entries, sorted by (name, module, address); owned. Built on the
         * first lookup by name (most daemons never look names up), so a reload, which makes a new Ksym,
         * rebuilds it. */
        uint32_t *by_name;
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
        free(k->by_name);
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

        if (greedy_realloc(&k->entries, &k->n_allocated, k->n_entries + 1, sizeof(KsymEntry), 4096) < 0)
                return -ENOMEM;
        KsymEntry *e = &k->entries[k->n_entries];
        r = append_string(k, name, name_len, &e->name);
        if (r < 0)
                return r;
        e->address = address;
        e->module = module;
        k->n_entries++;
        if (module == NO_MODULE && k->n_text_ends < ELEMENTSOF(k->text_ends) &&
            ((name_len == strlen("_etext") && strncmp(name, "_etext", name_len) == 0) ||
             (name_len == strlen("_einittext") && strncmp(name, "_einittext", name_len) == 0)))
                k->text_ends[k->n_text_ends++] = address;
        return 0;
}

static bool is_text_end(const Ksym *k, const KsymEntry *e) {
        if (e->module != NO_MODULE)
                return false;
        for (size_t i = 0; i < k->n_text_ends; i++)
                if (e->address == k->text_ends[i])
                        return true;
        return false;
}

/* Reads a table in kallsyms format from f. */
static int ksym_load_file(FILE *f, Ksym **ret) {
        _cleanup_(ksym_freep) Ksym *k = NULL;
        _cleanup_free_ char *line = NULL;
        char last_module_name[256] = "";
        uint32_t last_module = NO_MODULE;
        size_t line_size = 0, n_lines = 0, n_nonzero = 0;
        int r;

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

int ksym_load(const char *path, Ksym **ret) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        /* /proc/kallsyms is a regular file (of size 0); a FIFO or a device given instead is refused. */
        r = fopen_regular(path ?: "/proc/kallsyms", 0, &f);
        if (r < 0)
                return r;
        return ksym_load_file(f, ret);
}

int ksym_load_text(const char *text, Ksym **ret) {
        _cleanup_fclose_ FILE *f = NULL;
        Ksym *k = NULL;
        int r;

        assert(text);

        if (text[0] == '\0') {
                /* A source whose events name no function: a table without symbols (fmemopen() refuses an
                 * empty buffer anyway). */
                k = calloc(1, sizeof(Ksym));
                if (!k)
                        return -ENOMEM;
        } else {
                f = fmemopen((void *) text, strlen(text), "r");
                if (!f)
                        return negative_errno();
                r = ksym_load_file(f, &k);
                if (r < 0)
                        return r;
        }
        k->synthetic = true;
        *ret = k;
        return 0;
}

bool ksym_addresses_synthetic(const Ksym *k) {
        return k->synthetic;
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
        if (is_text_end(k, e))
                return false;
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
        return sizeof(Ksym) + k->n_allocated * sizeof(KsymEntry) + k->strings_allocated +
                (k->by_name ? k->n_entries * sizeof(uint32_t) : 0);
}

uint64_t ksym_address_of(const Ksym *k, const char *name) {
        for (size_t i = 0; i < k->n_entries; i++)
                if (streq(k->strings + k->entries[i].name, name))
                        return k->entries[i].address;
        return 0;
}

char *ksym_format(const Ksym *k, uint64_t addr) {
        KsymResult r;

        if (k && ksym_lookup(k, addr, &r))
                return r.module ? strdup_printf("%s+0x%" PRIx64 " [%s]", r.name, r.offset, r.module) :
                                  strdup_printf("%s+0x%" PRIx64, r.name, r.offset);
        return strdup_printf("0x%" PRIx64, addr);
}

/* Module name of an entry for ordering and matching: "" for the kernel image, which no module is named. */
static const char *entry_module(const Ksym *k, const KsymEntry *e) {
        return e->module == NO_MODULE ? "" : k->strings + e->module;
}

static int compare_by_name(const void *a, const void *b, void *userdata) {
        const Ksym *k = userdata;
        const KsymEntry *x = &k->entries[*(const uint32_t *) a], *y = &k->entries[*(const uint32_t *) b];
        int c;

        c = strcmp(k->strings + x->name, k->strings + y->name);
        if (c != 0)
                return c;
        c = strcmp(entry_module(k, x), entry_module(k, y));
        if (c != 0)
                return c;
        return x->address < y->address ? -1 : x->address > y->address;
}

static int build_name_index(Ksym *k) {
        if (k->by_name || k->n_entries == 0)
                return 0;
        if (k->n_entries > UINT32_MAX)
                return -E2BIG;

        uint32_t *index = malloc(k->n_entries * sizeof(uint32_t));
        if (!index)
                return -ENOMEM;
        for (size_t i = 0; i < k->n_entries; i++)
                index[i] = (uint32_t) i;
        qsort_r(index, k->n_entries, sizeof(uint32_t), compare_by_name, k);
        k->by_name = index;
        return 0;
}

/* Orders the entry at index position i against (name, module). */
static int compare_key(const Ksym *k, size_t i, const char *name, const char *module) {
        const KsymEntry *e = &k->entries[k->by_name[i]];
        int c;

        c = strcmp(k->strings + e->name, name);
        if (c != 0)
                return c;
        return strcmp(entry_module(k, e), module);
}

/* The bytes from entry pos to the next higher symbol start: how far an offset into it can reach before the
 * address belongs to another symbol. UINT64_MAX for the last symbol. */
static uint64_t entry_extent(const Ksym *k, size_t pos) {
        uint64_t start = k->entries[pos].address;

        for (size_t i = pos + 1; i < k->n_entries; i++)
                if (k->entries[i].address > start)
                        return k->entries[i].address - start;
        return UINT64_MAX;
}

/* Finds the symbols named name in module ("" for the kernel image): index range [*ret_first, *ret_end). */
static void name_range(const Ksym *k, const char *name, const char *module,
                size_t *ret_first, size_t *ret_end) {
        size_t lo = 0, hi = k->n_entries;

        /* First position not ordered before the key. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (compare_key(k, mid, name, module) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_first = lo;
        while (lo < k->n_entries && compare_key(k, lo, name, module) == 0)
                lo++;
        *ret_end = lo;
}

/* The one symbol called name in module whose extent is size (any extent when size is 0). */
static int lookup_name_sized(Ksym *k, const char *name, const char *module, uint64_t size, size_t *ret_pos) {
        size_t first, end, found = SIZE_MAX;
        int r;

        assert(k);
        assert(name);

        if (k->hidden)
                return -EADDRNOTAVAIL;
        r = build_name_index(k);
        if (r < 0)
                return r;

        name_range(k, name, module ?: "", &first, &end);
        if (first == end)
                return -ENOENT;

        for (size_t i = first; i < end; i++) {
                size_t pos = k->by_name[i];

                /* An alias at the address of the previous match is the same function, not a second one. */
                if (found != SIZE_MAX && k->entries[pos].address == k->entries[found].address)
                        continue;
                if (size != 0 && entry_extent(k, pos) != size)
                        continue;
                if (found != SIZE_MAX)
                        return -ENOTUNIQ;
                found = pos;
        }
        if (found == SIZE_MAX)
                return -ENOTUNIQ; /* none has the stated size: the caller may retry without it */

        *ret_pos = found;
        return 0;
}

int ksym_lookup_name(Ksym *k, const char *name, const char *module, uint64_t *ret_address) {
        size_t pos;
        int r;

        r = lookup_name_sized(k, name, module, 0, &pos);
        if (r < 0)
                return r;
        if (ret_address)
                *ret_address = k->entries[pos].address;
        return 0;
}

int ksym_parse_frame(Ksym *k, const char *text, uint64_t *ret_address) {
        _cleanup_free_ char *name = NULL, *module = NULL;
        FrameText f;
        size_t pos;
        int r;

        assert(k);
        assert(text);

        r = frame_text_parse(text, &f);
        if (r < 0)
                return r;
        /* The kernel prints a raw address for what it could not resolve: take it as it is. */
        if (f.raw) {
                if (ret_address)
                        *ret_address = f.address;
                return 0;
        }
        name = strndup(f.name, f.name_len);
        if (!name)
                return -ENOMEM;
        if (f.module) {
                module = strndup(f.module, f.module_len);
                if (!module)
                        return -ENOMEM;
        }

        /* Static functions share names; the stated size tells them apart when only one has it. */
        r = lookup_name_sized(k, name, module, f.size, &pos);
        if (r == -ENOTUNIQ && f.size != 0)
                r = lookup_name_sized(k, name, module, 0, &pos);
        if (r < 0)
                return r;

        /* An offset that would land in the next symbol means this table is not the one the text came from. */
        if (f.offset >= entry_extent(k, pos))
                return -ERANGE;

        if (ret_address)
                *ret_address = k->entries[pos].address + f.offset;
        return 0;
}
