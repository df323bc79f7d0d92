/* SPDX-License-Identifier: MIT */

/* The call sites of a recorded heap (heap-sites.h). */

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heap-sites.h"
#include "macro.h"
#include "reply.h"
#include "report-select.h"

/* The figures of a view: at the maximum, or now. */
typedef struct SiteKeys {
        const char *bytes, *blocks;
} SiteKeys;

static const SiteKeys keys_maximum = { "maxBytes", "maxBlocks" };
static const SiteKeys keys_now = { "currentBytes", "currentBlocks" };

/* The sites as the walk finds them, one per frame holding bytes of its own: merged afterwards. */
typedef struct SiteList {
        HeapSite *items;
        size_t n, allocated;
} SiteList;

static int site_list_add(SiteList *l, const json_t *node, uint64_t bytes, uint64_t blocks) {
        if (l->n == l->allocated) {
                size_t n = l->allocated ? l->allocated * 2 : 64;
                HeapSite *items = reallocarray(l->items, n, sizeof(HeapSite));
                if (!items)
                        return -ENOMEM;
                l->items = items;
                l->allocated = n;
        }
        l->items[l->n] = (HeapSite) { .node = node, .bytes = bytes, .blocks = blocks, .order = l->n };
        l->n++;
        return 0;
}

/* What each node holds itself (not through its children) goes to its call site: the innermost frame of its
 * path with a source line, else its own frame. */
static int walk(const json_t *node, const json_t *site, const SiteKeys *k, SiteList *l, unsigned depth) {
        uint64_t bytes = reply_count(node, k->bytes), blocks = reply_count(node, k->blocks);
        uint64_t child_bytes = 0, child_blocks = 0;
        json_t *child;
        size_t i;
        int r;

        if (depth > 0 && reply_string(node, "file"))
                site = node;
        json_array_foreach(reply_array(node, "children"), i, child) {
                child_bytes += reply_count(child, k->bytes);
                child_blocks += reply_count(child, k->blocks);
                if (depth < REPORT_DEPTH_MAX) {
                        r = walk(child, site, k, l, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        if (bytes > child_bytes)
                return site_list_add(l, site && depth > 0 ? site : node, bytes - child_bytes,
                                     blocks > child_blocks ? blocks - child_blocks : 0);
        return 0;
}

/* What tells sites apart: function (the frame's text without one), file and line. */
static int compare_place(const void *a, const void *b) {
        const HeapSite *x = a, *y = b;
        int c;

        c = strcmp(reply_string(x->node, "function") ?: reply_string(x->node, "frame") ?: "",
                   reply_string(y->node, "function") ?: reply_string(y->node, "frame") ?: "");
        if (c == 0)
                c = strcmp(reply_string(x->node, "file") ?: "", reply_string(y->node, "file") ?: "");
        if (c == 0) {
                int64_t lx = reply_int(x->node, "line", 0), ly = reply_int(y->node, "line", 0);
                c = lx < ly ? -1 : lx > ly;
        }
        return c != 0 ? c : x->order < y->order ? -1 : x->order > y->order;
}

static bool same_place(const HeapSite *a, const HeapSite *b) {
        HeapSite x = *a, y = *b;

        x.order = y.order = 0;
        return compare_place(&x, &y) == 0;
}

static int compare_size(const void *a, const void *b) {
        const HeapSite *x = a, *y = b;

        if (x->bytes != y->bytes)
                return x->bytes > y->bytes ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

int heap_sites_collect(const json_t *h, bool leaks, const ReportOptions *o, HeapSites *ret) {
        SiteList l = {};
        size_t n = 0;
        int r;

        assert(h);
        assert(o);
        assert(ret);

        r = walk(reply_object(h, "root"), NULL, leaks ? &keys_now : &keys_maximum, &l, 0);
        if (r < 0) {
                free(l.items);
                return r;
        }
        /* Equal sites next to each other, in the order found; each keeps the first one's frame and order. */
        if (l.n > 1)
                qsort(l.items, l.n, sizeof(HeapSite), compare_place);
        for (size_t i = 0; i < l.n; i++) {
                if (n > 0 && same_place(&l.items[n - 1], &l.items[i])) {
                        l.items[n - 1].bytes += l.items[i].bytes;
                        l.items[n - 1].blocks += l.items[i].blocks;
                } else
                        l.items[n++] = l.items[i];
        }
        if (n > 1)
                qsort(l.items, n, sizeof(HeapSite), compare_size);
        *ret = (HeapSites) { .sites = l.items, .n = n };
        return 0;
}

void heap_sites_done(HeapSites *s) {
        if (!s)
                return;
        free(s->sites);
        *s = (HeapSites) {};
}

char *heap_site_label(const HeapSite *s) {
        return report_heap_frame_label(s->node);
}

json_t *heap_site_json(const HeapSite *s, uint64_t interval) {
        return json_pack("{s:O?, s:O?, s:O?, s:O?, s:I, s:I, s:I}",
                         "frame", json_object_get(s->node, "frame"),
                         "function", json_object_get(s->node, "function"),
                         "file", json_object_get(s->node, "file"),
                         "line", json_object_get(s->node, "line"),
                         "bytes", (json_int_t) s->bytes,
                         "blocks", (json_int_t) s->blocks,
                         "errorBytes", (json_int_t) heap_site_error(s->bytes, interval));
}

uint64_t heap_site_error(uint64_t bytes, uint64_t interval) {
        return interval > 1 ? (uint64_t) (3.0 * sqrt((double) bytes * (double) interval)) : 0;
}
