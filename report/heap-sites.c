/* SPDX-License-Identifier: MIT */

/* The call sites of a recorded heap (heap-sites.h). */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "heap-sites.h"
#include "macro.h"
#include "reply.h"
#include "report-select.h"

/*
 * Allocator wrappers: functions that allocate for their caller, whose frames are never a call site (but
 * with --keep-frames). Names as the Heap reply gives a frame's function (DWARF) or, without debug
 * information, its symbol; '*' matches any run of characters. docs/client.md lists them for users.
 */
static const char *const wrappers[] = {
        /* The C library's allocator (reached inside other libraries, or inlined as ld.so's calloc). */
        "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc",
        "pvalloc", "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_reallocarray", "__libc_memalign",
        "__libc_valloc", "__libc_pvalloc", "__posix_memalign",
        /* The C library's functions that hand their caller a new block. */
        "strdup", "__strdup", "strndup", "__strndup", "wcsdup", "__wcsdup", "asprintf", "__asprintf",
        "___asprintf", "__asprintf_chk", "vasprintf", "__vasprintf", "__vasprintf_internal", "__vasprintf_chk",
        "open_memstream", "open_wmemstream", "getline", "getdelim", "__getdelim",
        /* C++ operator new and new[], plain, nothrow and aligned: demangled, and mangled for 64 and 32 bits. */
        "operator new*", "_Znwm*", "_Znam*", "_Znwj*", "_Znaj*",
        /* glib (g_new() and kin expand to g_malloc_n(), g_new0() to g_malloc0_n()). */
        "g_malloc", "g_malloc0", "g_realloc", "g_try_malloc", "g_try_malloc0", "g_try_realloc", "g_malloc_n",
        "g_malloc0_n", "g_realloc_n", "g_try_malloc_n", "g_try_malloc0_n", "g_try_realloc_n", "g_aligned_alloc",
        "g_aligned_alloc0", "g_slice_alloc", "g_slice_alloc0", "g_slice_copy", "g_memdup", "g_memdup2",
        "g_strdup", "g_strndup", "g_strdup_printf", "g_strdup_vprintf", "g_strconcat", "g_strjoin",
        "g_strjoinv", "g_strnfill",
        /* CPython's allocators (PyObject_New() and PyObject_GC_New() are macros around the _Py ones). */
        "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc", "_PyObject_Calloc",
        "_PyObject_Realloc", "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_RawMalloc", "PyMem_RawCalloc",
        "PyMem_RawRealloc", "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc", "_PyMem_RawStrdup",
        "_PyMem_RawWcsdup", "_PyMem_Strdup", "_PyMem_Debug*", "pymalloc_alloc", "pymalloc_realloc",
        "_PyObject_GC_New", "_PyObject_GC_NewVar", "_PyObject_GC_Resize", "_PyObject_GC_Malloc",
        "_PyObject_GC_Calloc", "gc_alloc", "_PyObject_New", "_PyObject_NewVar", "PyType_GenericAlloc",
        "_PyType_AllocNoTrack",
        /* xmalloc and kin: gnulib, libiberty, git. */
        "xmalloc", "xzalloc", "xcalloc", "xrealloc", "xreallocarray", "xnmalloc", "xnrealloc", "x2realloc",
        "x2nrealloc", "xcharalloc", "xstrdup", "xstrndup", "xmemdup", "xpalloc", "ximalloc", "xizalloc",
        "xicalloc", "xirealloc", "xireallocarray", "ximemdup", "ximemdup0", "xasprintf", "xvasprintf", "xmallocz",
        "xmallocz_gently", "do_xmalloc",
};

/* The C runtime's frames every stack passes through: never a call site while a function of the program is
 * left (they have source lines when the C library's debug information is installed). */
static const char *const entry_frames[] = {
        "_start", "__libc_start_main*", "__libc_start_call_main", "call_init", "_dl_start*", "_dl_init",
        "start_thread", "clone", "clone3", "__clone*",
};

const char *heap_sites_wrapper(size_t i) {
        return i < ELEMENTSOF(wrappers) ? wrappers[i] : NULL;
}

/* Whether name[0..len) matches pattern, whose '*' matches any run of characters. */
static bool pattern_matches(const char *pattern, const char *name, size_t len) {
        size_t p = 0, n = 0, star_p = SIZE_MAX, star_n = 0;

        while (n < len) {
                if (pattern[p] == '*') {
                        star_p = ++p;
                        star_n = n;
                } else if (pattern[p] != '\0' && pattern[p] == name[n]) {
                        p++;
                        n++;
                } else if (star_p != SIZE_MAX) {
                        /* Let the last '*' take one more character, and try again from there. */
                        p = star_p;
                        n = ++star_n;
                } else
                        return false;
        }
        while (pattern[p] == '*')
                p++;
        return pattern[p] == '\0';
}

/* The name a function is known by: without glibc's internal prefix (__GI___strdup is __strdup) and without
 * a compiler clone's suffix (.constprop.0, .isra.0, .part.0, .cold, .localalias), which a C or mangled
 * name, having no space or parenthesis, cannot otherwise contain. */
static const char *base_name(const char *name, size_t len, size_t *ret_len) {
        const char *dot;

        if (len > 5 && strncmp(name, "__GI_", 5) == 0) {
                name += 5;
                len -= 5;
        }
        if (!memchr(name, ' ', len) && !memchr(name, '(', len) && (dot = memchr(name, '.', len)) && dot > name)
                len = (size_t) (dot - name);
        *ret_len = len;
        return name;
}

static bool in_list(const char *const *list, size_t n, const char *name, size_t len) {
        size_t base_len;
        const char *base = base_name(name, len, &base_len);

        for (size_t i = 0; i < n; i++)
                if (pattern_matches(list[i], base, base_len) || pattern_matches(list[i], name, len))
                        return true;
        return false;
}

static bool is_folded(const char *name, size_t len, const ReportOptions *o) {
        return in_list(o->fold_frames, o->n_fold_frames, name, len);
}

static bool is_listed(const char *name, size_t len) {
        return in_list(wrappers, ELEMENTSOF(wrappers), name, len);
}

/* ---- Choosing a stack's call site ---------------------------------------------------------------------- */

/* A function of a frame: the frame (a HeapNode) and which of its functions. */
typedef struct Place {
        const json_t *node;     /* NULL: none */
        size_t level;
} Place;

/* The innermost function of each kind on the path from the root down to a frame (the walk's state). */
typedef struct Candidates {
        Place line;             /* fit to be a call site, with a source line (or a wrapper kept) */
        Place bare;             /* fit to be a call site, without a source line */
        Place entry;            /* a C runtime entry frame */
} Candidates;

typedef enum Kind {
        KIND_PASSED,            /* a wrapper folded into its caller, or a frame without a name */
        KIND_LINE,
        KIND_BARE,
        KIND_ENTRY,
} Kind;

/* The function at level of node (0: the frame's own, k: the k-th it was inlined into): what names it. */
static const json_t *at_level(const json_t *node, size_t level) {
        return level == 0 ? node : json_array_get(reply_array(node, "inlinedInto"), level - 1);
}

static bool kind_of_name(const char *name, size_t len, const ReportOptions *o, Kind *ret) {
        if (is_folded(name, len, o)) {
                *ret = KIND_PASSED;
                return true;
        }
        if (is_listed(name, len)) {
                *ret = o->keep_frames ? KIND_LINE : KIND_PASSED;
                return true;
        }
        if (in_list(entry_frames, ELEMENTSOF(entry_frames), name, len)) {
                *ret = KIND_ENTRY;
                return true;
        }
        return false;
}

static Kind kind_of(const json_t *node, size_t level, size_t n_levels, const ReportOptions *o) {
        const json_t *at = at_level(node, level);
        const char *function = reply_string(at, "function");
        Kind k;

        if (function && kind_of_name(function, strlen(function), o, &k))
                return k;
        /* The symbol table names the frame's outermost function, whatever DWARF calls it: "name+0xoff". */
        const char *frame = reply_string(node, "frame");
        if (level + 1 == n_levels && frame && frame[0] != '[') {
                const char *plus = NULL;
                for (const char *q = strstr(frame, "+0x"); q; q = strstr(q + 1, "+0x"))
                        plus = q;
                size_t len = plus ? (size_t) (plus - frame) : strlen(frame);
                if (len > 0 && kind_of_name(frame, len, o, &k))
                        return k;
        }
        if (!function && (level > 0 || !frame || frame[0] == '['))
                return KIND_PASSED;     /* nameless: "[user] 0x...", "[not sampled]" */
        return reply_string(at, "file") ? KIND_LINE : KIND_BARE;
}

/* c with node's functions added, outermost first, so that the innermost of each kind is kept. */
static Candidates add_frame(Candidates c, const json_t *node, const ReportOptions *o) {
        size_t n_levels = 1 + json_array_size(reply_array(node, "inlinedInto"));

        for (size_t level = n_levels; level-- > 0;) {
                Place p = { node, level };
                switch (kind_of(node, level, n_levels, o)) {
                case KIND_LINE:
                        c.line = p;
                        break;
                case KIND_BARE:
                        c.bare = p;
                        break;
                case KIND_ENTRY:
                        c.entry = p;
                        break;
                case KIND_PASSED:
                        break;
                }
        }
        return c;
}

static Place site_of(const Candidates *c, const json_t *node) {
        if (c->line.node)
                return c->line;
        if (c->bare.node)
                return c->bare;
        if (c->entry.node)
                return c->entry;
        return (Place) { node, 0 };
}

/* ---- Collecting -------------------------------------------------------------------------------------- */

/* The figures of a view: at the maximum, or now; lifetimes: the sites blocks were freed at. */
typedef struct SiteKeys {
        const char *bytes, *blocks;
        bool lifetimes;
} SiteKeys;

static const SiteKeys keys_maximum = { "maxBytes", "maxBlocks", false };
static const SiteKeys keys_now = { "currentBytes", "currentBlocks", false };
static const SiteKeys keys_lifetimes = { "currentBytes", "currentBlocks", true };

/* What a frame holds itself, not through its children: every figure a site adds up. */
typedef struct Own {
        uint64_t bytes, blocks, freed_bytes, freed_blocks, lifetimes[HEAP_SITE_LIFETIMES], temporary;
} Own;

static uint64_t minus(uint64_t a, uint64_t b) {
        return a > b ? a - b : 0;
}

/* Bucket i of a frame's freedBlocks; 0 when it has none. */
static uint64_t lifetime(const json_t *node, size_t i) {
        return (uint64_t) MAX(json_integer_value(json_array_get(json_object_get(node, "freedBlocks"), i)),
                              (json_int_t) 0);
}

/* The frame's figures less its children's. */
static Own own_figures(const json_t *node, const SiteKeys *k) {
        Own own = {
                .bytes = reply_count(node, k->bytes),
                .blocks = reply_count(node, k->blocks),
                .freed_bytes = reply_count(node, "windowFreedBytes"),
                .freed_blocks = reply_count(node, "windowFreedBlocks"),
                .temporary = reply_count(node, "temporaryBlocks"),
        };
        json_t *child;
        size_t i;

        for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                own.lifetimes[b] = lifetime(node, b);
        json_array_foreach(reply_array(node, "children"), i, child) {
                own.bytes = minus(own.bytes, reply_count(child, k->bytes));
                own.blocks = minus(own.blocks, reply_count(child, k->blocks));
                own.freed_bytes = minus(own.freed_bytes, reply_count(child, "windowFreedBytes"));
                own.freed_blocks = minus(own.freed_blocks, reply_count(child, "windowFreedBlocks"));
                own.temporary = minus(own.temporary, reply_count(child, "temporaryBlocks"));
                for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                        own.lifetimes[b] = minus(own.lifetimes[b], lifetime(child, b));
        }
        return own;
}

/* The sites as the walk finds them, one per frame holding bytes of its own: merged afterwards. */
typedef struct SiteList {
        HeapSite *items;
        size_t n, allocated;
} SiteList;

static int site_list_add(SiteList *l, Place p, const Own *own) {
        if (ARRAY_GROW_ONE(l->items, l->allocated, l->n, 64) < 0)
                return -ENOMEM;
        HeapSite *s = &l->items[l->n];
        *s = (HeapSite) { .node = p.node, .level = p.level, .bytes = own->bytes, .blocks = own->blocks,
                          .freed_bytes = own->freed_bytes, .freed_blocks = own->freed_blocks,
                          .temporary = own->temporary, .order = l->n };
        memcpy(s->lifetimes, own->lifetimes, sizeof(s->lifetimes));
        l->n++;
        return 0;
}

uint64_t heap_site_freed(const HeapSite *s) {
        uint64_t n = 0;
        for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                n += s->lifetimes[b];
        return n;
}

/* What each node holds itself (not through its children) goes to its stack's call site. */
static int walk(const json_t *node, Candidates c, const SiteKeys *k, const ReportOptions *o, SiteList *l,
                unsigned depth) {
        json_t *child;
        size_t i;
        int r;

        if (depth > 0)
                c = add_frame(c, node, o);
        if (depth < REPORT_DEPTH_MAX)
                json_array_foreach(reply_array(node, "children"), i, child) {
                        r = walk(child, c, k, o, l, depth + 1);
                        if (r < 0)
                                return r;
                }
        Own own = own_figures(node, k);
        uint64_t freed = 0;
        for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                freed += own.lifetimes[b];
        if (k->lifetimes ? freed > 0 : own.bytes > 0 || own.freed_bytes > 0)
                return site_list_add(l, site_of(&c, node), &own);
        return 0;
}

const char *heap_site_function(const HeapSite *s) {
        return reply_string(at_level(s->node, s->level), "function");
}

const char *heap_site_file(const HeapSite *s) {
        return reply_string(at_level(s->node, s->level), "file");
}

int64_t heap_site_line(const HeapSite *s) {
        return reply_int(at_level(s->node, s->level), "line", 0);
}

/* What tells sites apart: function (the frame's text without one), file and line. */
static int compare_place(const HeapSite *x, const HeapSite *y) {
        int c;

        c = strcmp(heap_site_function(x) ?: (x->level == 0 ? reply_string(x->node, "frame") : NULL) ?: "",
                   heap_site_function(y) ?: (y->level == 0 ? reply_string(y->node, "frame") : NULL) ?: "");
        if (c == 0)
                c = strcmp(heap_site_file(x) ?: "", heap_site_file(y) ?: "");
        if (c == 0) {
                int64_t lx = heap_site_line(x), ly = heap_site_line(y);
                c = lx < ly ? -1 : lx > ly;
        }
        return c;
}

static int compare_place_order(const void *a, const void *b) {
        const HeapSite *x = a, *y = b;
        int c = compare_place(x, y);

        return c != 0 ? c : x->order < y->order ? -1 : x->order > y->order;
}

static int compare_size(const void *a, const void *b) {
        const HeapSite *x = a, *y = b;

        /* Over a window, what changed most first: allocated and freed. */
        if (x->bytes + x->freed_bytes != y->bytes + y->freed_bytes)
                return x->bytes + x->freed_bytes > y->bytes + y->freed_bytes ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

static int compare_lifetimes(const void *a, const void *b) {
        const HeapSite *x = a, *y = b;

        if (x->temporary != y->temporary)
                return x->temporary > y->temporary ? -1 : 1;
        if (heap_site_freed(x) != heap_site_freed(y))
                return heap_site_freed(x) > heap_site_freed(y) ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

static int collect(const json_t *h, const SiteKeys *k, const ReportOptions *o, HeapSites *ret) {
        SiteList l = {};
        size_t n = 0;
        int r;

        assert(h);
        assert(o);
        assert(ret);

        r = walk(reply_object(h, "root"), (Candidates) {}, k, o, &l, 0);
        if (r < 0) {
                free(l.items);
                return r;
        }
        /* Equal sites next to each other, in the order found; each keeps the first one's frame and order. */
        if (l.n > 1)
                qsort(l.items, l.n, sizeof(HeapSite), compare_place_order);
        for (size_t i = 0; i < l.n; i++) {
                if (n > 0 && compare_place(&l.items[n - 1], &l.items[i]) == 0) {
                        HeapSite *d = &l.items[n - 1];
                        const HeapSite *s = &l.items[i];
                        d->bytes += s->bytes;
                        d->blocks += s->blocks;
                        d->freed_bytes += s->freed_bytes;
                        d->freed_blocks += s->freed_blocks;
                        d->temporary += s->temporary;
                        for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                                d->lifetimes[b] += s->lifetimes[b];
                } else
                        l.items[n++] = l.items[i];
        }
        if (n > 1)
                qsort(l.items, n, sizeof(HeapSite), k->lifetimes ? compare_lifetimes : compare_size);
        *ret = (HeapSites) { .sites = l.items, .n = n };
        return 0;
}

int heap_sites_collect(const json_t *h, bool leaks, const ReportOptions *o, HeapSites *ret) {
        return collect(h, leaks ? &keys_now : &keys_maximum, o, ret);
}

int heap_sites_collect_lifetimes(const json_t *h, const ReportOptions *o, HeapSites *ret) {
        return collect(h, &keys_lifetimes, o, ret);
}

typedef struct FrameSites {
        json_t *sites, *labels, *index;         /* index: label -> its place in labels */
        const ReportOptions *o;
} FrameSites;

static int frame_sites(const json_t *node, Candidates c, FrameSites *x, unsigned depth) {
        json_t *child, *id = json_object_get(node, "id");
        size_t i;
        int r;

        if (depth > 0)
                c = add_frame(c, node, x->o);
        if (json_is_integer(id)) {
                Place p = site_of(&c, node);
                _cleanup_free_ char *label = report_heap_frame_label_at(p.node, p.level), *key = NULL;
                if (!label || asprintf(&key, "%" PRIi64, (int64_t) json_integer_value(id)) < 0)
                        return -ENOMEM;
                json_t *at = json_object_get(x->index, label);
                if (!at) {
                        at = json_integer((json_int_t) json_array_size(x->labels));
                        if (!at || json_object_set_new(x->index, label, at) < 0 ||
                            json_array_append_new(x->labels, json_string(label)) < 0)
                                return -ENOMEM;
                }
                if (json_object_set(x->sites, key, at) < 0)
                        return -ENOMEM;
        }
        if (depth < REPORT_DEPTH_MAX)
                json_array_foreach(reply_array(node, "children"), i, child) {
                        r = frame_sites(child, c, x, depth + 1);
                        if (r < 0)
                                return r;
                }
        return 0;
}

int heap_sites_of_frames(const json_t *h, const ReportOptions *o, json_t **ret_sites, json_t **ret_labels) {
        json_auto_t *index = json_object();
        FrameSites x = { .sites = json_object(), .labels = json_array(), .index = index, .o = o };
        int r = x.sites && x.labels && index ? frame_sites(reply_object(h, "root"), (Candidates) {}, &x, 0) : -ENOMEM;

        if (r < 0) {
                json_decref(x.sites);
                json_decref(x.labels);
                return r;
        }
        *ret_sites = x.sites;
        *ret_labels = x.labels;
        return 0;
}

void heap_sites_done(HeapSites *s) {
        if (!s)
                return;
        free(s->sites);
        *s = (HeapSites) {};
}

char *heap_site_label(const HeapSite *s) {
        return report_heap_frame_label_at(s->node, s->level);
}

json_t *heap_site_json(const HeapSite *s, uint64_t interval) {
        const json_t *at = at_level(s->node, s->level);

        return json_pack("{s:O?, s:O?, s:O?, s:O?, s:I, s:I, s:I}",
                         "frame", json_object_get(s->node, "frame"),
                         "function", json_object_get(at, "function"),
                         "file", json_object_get(at, "file"),
                         "line", json_object_get(at, "line"),
                         "bytes", (json_int_t) s->bytes,
                         "blocks", (json_int_t) s->blocks,
                         "errorBytes", (json_int_t) heap_site_error(s->bytes, interval));
}

uint64_t heap_site_error(uint64_t bytes, uint64_t interval) {
        return interval > 1 ? (uint64_t) (3.0 * sqrt((double) bytes * (double) interval)) : 0;
}
