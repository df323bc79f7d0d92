/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "heapquery.h"
#include "keyindex.h"
#include "macro.h"
#include "utf8.h"
#include "varlink.h"

/* Standard deviations in a node's stated sampling error: 3 (99.7 % of estimates fall within it). */
#define HEAP_ERROR_SIGMAS 3.0
/* A frame whose blocks were all freed is in the tree for its lifetimes when it freed at least this share
 * (per million) of its heap's freed blocks, or the query's minPartsPerMillion when larger: a compiler's
 * heap frees through tens of thousands of stacks, most of them a few blocks, which would otherwise swell
 * the tree past what a reply holds. What is left out counts at the frame above it. */
#define HEAP_LIFETIME_MIN_PPM 1000u

/* The lifetimes of a heap's frames, each the sum over its subtree (as bytes are), for the frames that have
 * any: a frame's own blocks are those of the stacks that end there. */
typedef struct LifetimeSums {
        Accounting *a;
        uint32_t scope;                 /* the heap's root frame */
        KeyIndex of;                    /* node -> sums[] */
        ViewHeapLifetimes *sums;
        size_t n, allocated;
        int error;
} LifetimeSums;

typedef struct HeapView {
        Accounting *a;
        ViewHeap img;
        ViewHeapScale scale;
        UsymImage *symbols;             /* may be NULL */
        const HeapQuery *q;
        uint64_t min_now, min_max;      /* a frame below both (scaled bytes now, at the maximum) is left out */
        LifetimeSums lifetimes;
        uint64_t min_freed;             /* a frame of lifetimes alone needs this many freed blocks (units) */
        KeyIndex shown;                 /* with timeline: the frames in the reply (their ids are their nodes) */
} HeapView;

static json_int_t reply_int_or(const json_t *o, const char *key) {
        return json_integer_value(json_object_get(o, key));
}

static const char *end_to_string(MsHeapEnd e) {
        switch (e) {
        case MS_HEAP_END_EXIT:
                return "exit";
        case MS_HEAP_END_EXEC:
                return "exec";
        case MS_HEAP_END_CLOSED:
                return "closed";
        default:
                return NULL;
        }
}

static json_int_t scaled(uint64_t v, double factor) {
        double x = round((double) v * factor);
        return x >= (double) INT64_MAX ? INT64_MAX : (json_int_t) x;
}

/*
 * The stated error of an estimate of bytes from one sample per T bytes: samples fall on the bytes as a
 * Poisson process, so an estimate of B bytes rests on about B / T samples and has a standard deviation of
 * about sqrt(B * T) bytes (at most that: large blocks are sampled surely). 0 when every block is recorded.
 */
static json_int_t error_bytes(uint64_t estimate, uint64_t interval, double factor) {
        if (interval <= 1 || estimate == 0)
                return 0;
        return scaled((uint64_t) (HEAP_ERROR_SIGMAS * sqrt((double) estimate * (double) interval)), factor);
}

/* A JSON string of kernel- or file-given bytes, as every name is sent. */
static json_t *name_json(const char *s) {
        if (!s)
                return json_null();
        return utf8_json_string(s);
}

/* frame, module, address, function, file, line, inlinedInto of one node. */
static int frame_json(const HeapView *v, const ViewNode *n, json_t *o) {
        char label[256];
        UsymSource src = {};
        bool named = false;

        switch (n->kind) {
        case VIEW_FRAME_PROCESS:
                (void) snprintf(label, sizeof(label), "[heap pid %" PRIi32 " %s]", v->img.pid, v->img.comm);
                break;
        case VIEW_FRAME_TRUNCATED:
                (void) snprintf(label, sizeof(label), "[truncated]");
                break;
        default:
                if (n->ip == MS_FRAME_HEAP_NO_STACK)
                        (void) snprintf(label, sizeof(label), "[no stack]");
                else if (n->ip == MS_FRAME_HEAP_STACK_FULL)
                        (void) snprintf(label, sizeof(label), "[stack table full]");
                else if (v->symbols && usym_image_lookup(v->symbols, n->ip, true, &src) && src.has_symbol) {
                        (void) snprintf(label, sizeof(label), "%s+0x%" PRIx64, src.symbol.name, src.symbol.offset);
                        named = true;
                } else
                        (void) snprintf(label, sizeof(label), "[user] 0x%" PRIx64, n->ip);
        }

        json_auto_t *inlined = json_array();
        if (!inlined)
                return -ENOMEM;
        for (size_t i = 1; i < src.n_frames; i++)
                if (json_array_append_new(inlined, json_pack("{s:o, s:o, s:o}",
                                "function", name_json(src.frames[i].function),
                                "file", name_json(src.frames[i].file),
                                "line", src.frames[i].line ? json_integer(src.frames[i].line) : json_null())) < 0)
                        return -ENOMEM;

        char address[32];
        bool real_frame = n->kind == VIEW_FRAME_USER && n->ip > MS_FRAME_HEAP_STACK_FULL;
        (void) snprintf(address, sizeof(address), "0x%" PRIx64, n->ip);
        const UsymSourceFrame *f = src.n_frames > 0 ? &src.frames[0] : NULL;
        if (json_object_set_new(o, "frame", name_json(label)) < 0 ||
            json_object_set_new(o, "module", named ? name_json(src.symbol.object) : json_null()) < 0 ||
            json_object_set_new(o, "address", real_frame && v->q->show_addresses ? json_string(address)
                                                                                  : json_null()) < 0 ||
            json_object_set_new(o, "function", name_json(f ? f->function : NULL)) < 0 ||
            json_object_set_new(o, "file", name_json(f ? f->file : NULL)) < 0 ||
            json_object_set_new(o, "line", f && f->line ? json_integer(f->line) : json_null()) < 0 ||
            json_object_set(o, "inlinedInto", inlined) < 0)
                return -ENOMEM;
        return 0;
}

typedef struct HeapChild {
        uint32_t idx;
        uint64_t key;
} HeapChild;

static int compare_children(const void *a, const void *b) {
        const HeapChild *x = a, *y = b;
        if (x->key != y->key)
                return x->key > y->key ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The next sibling of a heap tree's node; VIEW_NODE_NONE after the last. */
static uint32_t next_sibling(const HeapView *v, uint32_t c) {
        ViewNode n;
        return view_node(v->a, VIEW_TREE_HEAP, c, &n) ? n.next_sibling : VIEW_NODE_NONE;
}

static uint32_t parent_of(Accounting *a, uint32_t node) {
        ViewNode n;
        return view_node(a, VIEW_TREE_HEAP, node, &n) ? n.parent : VIEW_NODE_NONE;
}

/* ViewHeapLifetimesFn: a frame's own lifetimes go into it and each frame above it, up to the heap's root. */
static void add_lifetimes(void *userdata, uint32_t node, const ViewHeapLifetimes *l) {
        LifetimeSums *s = userdata;

        if (s->error < 0)
                return;
        for (uint32_t i = node; i != VIEW_NODE_NONE; i = parent_of(s->a, i)) {
                uint32_t k = key_index_get(&s->of, i);
                if (k == KEY_INDEX_NONE) {
                        if (greedy_realloc(&s->sums, &s->allocated, s->n + 1, sizeof(ViewHeapLifetimes), 64) < 0 ||
                            key_index_put(&s->of, i, (uint32_t) s->n) < 0) {
                                s->error = -ENOMEM;
                                return;
                        }
                        k = (uint32_t) s->n++;
                        s->sums[k] = (ViewHeapLifetimes) {};
                }
                for (unsigned b = 0; b < VIEW_HEAP_LIFETIME_BUCKETS; b++)
                        s->sums[k].freed[b] = count_add(s->sums[k].freed[b], l->freed[b]);
                s->sums[k].temporary = count_add(s->sums[k].temporary, l->temporary);
                if (i == s->scope)
                        break;
        }
}

static const ViewHeapLifetimes *lifetimes_of(const HeapView *v, uint32_t node) {
        uint32_t k = key_index_get(&v->lifetimes.of, node);
        return k != KEY_INDEX_NONE ? &v->lifetimes.sums[k] : NULL;
}

static uint64_t freed_of(const ViewHeapLifetimes *l) {
        uint64_t n = 0;
        for (unsigned b = 0; l && b < VIEW_HEAP_LIFETIME_BUCKETS; b++)
                n = count_add(n, l->freed[b]);
        return n;
}

/* Blocks counted in 1/VIEW_HEAP_BLOCK_UNIT, to the nearest whole one. */
static json_int_t whole_blocks(uint64_t units) {
        return (json_int_t) ((units + VIEW_HEAP_BLOCK_UNIT / 2) / VIEW_HEAP_BLOCK_UNIT);
}

/* freedBlocks, temporaryBlocks and, with timeline, id of a frame. -ENOMEM. */
static int lifetimes_json(HeapView *v, uint32_t node, json_t *o) {
        const ViewHeapLifetimes *l = lifetimes_of(v, node);
        json_auto_t *freed = json_array();

        for (unsigned b = 0; freed && b < VIEW_HEAP_LIFETIME_BUCKETS; b++)
                if (json_array_append_new(freed, json_integer(l ? whole_blocks(l->freed[b]) : 0)) < 0)
                        return -ENOMEM;
        if (!freed || json_object_set(o, "freedBlocks", freed) < 0 ||
            json_object_set_new(o, "temporaryBlocks", json_integer(l ? whole_blocks(l->temporary) : 0)) < 0)
                return -ENOMEM;
        if (v->q->timeline && (json_object_set_new(o, "id", json_integer((json_int_t) node)) < 0 ||
                               key_index_put(&v->shown, node, 0) < 0))
                return -ENOMEM;
        return 0;
}

static json_t *node_json(HeapView *v, uint32_t idx, unsigned depth) {
        uint64_t interval = v->img.sample_interval;
        ViewHeapNode x;
        ViewNode n;

        if (!view_node(v->a, VIEW_TREE_HEAP, idx, &n))
                return NULL;
        view_heap_node(v->a, v->img.serial, idx, &x);
        json_auto_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                        "currentBytes", scaled(x.bytes.current, v->scale.now_bytes),
                        "currentBlocks", scaled(x.blocks, v->scale.now_blocks / VIEW_HEAP_BLOCK_UNIT),
                        "peakBytes", scaled(x.bytes.peak, v->scale.max_bytes),
                        "maxBytes", scaled(x.max_bytes, v->scale.max_bytes),
                        "maxBlocks", scaled(x.max_blocks, v->scale.max_blocks / VIEW_HEAP_BLOCK_UNIT),
                        "errorBytes", error_bytes(x.bytes.current, interval, v->scale.now_bytes),
                        "maxErrorBytes", error_bytes(x.max_bytes, interval, v->scale.max_bytes));
        json_auto_t *children = json_array();
        if (!o || !children || frame_json(v, &n, o) < 0 || lifetimes_json(v, idx, o) < 0)
                return NULL;

        /* Children with something now or at the maximum, biggest first by the larger of the two; those
         * whose blocks were all freed stay when they have lifetimes to show (a temporary allocation's
         * stack), after the others, whatever the share asked for. */
        size_t n_children = 0, truncated = 0;
        for (uint32_t c = n.first_child; c != VIEW_NODE_NONE; c = next_sibling(v, c))
                n_children++;
        _cleanup_free_ HeapChild *list = calloc(MAX(n_children, (size_t) 1), sizeof(HeapChild));
        if (!list)
                return NULL;
        size_t k = 0;
        for (uint32_t c = n.first_child; c != VIEW_NODE_NONE; c = next_sibling(v, c)) {
                ViewHeapNode y;
                view_heap_node(v->a, v->img.serial, c, &y);
                if (y.bytes.current == 0 && y.max_bytes == 0) {
                        const ViewHeapLifetimes *l = lifetimes_of(v, c);
                        if (l && freed_of(l) >= v->min_freed)
                                list[k++] = (HeapChild) { c, 0 };
                        continue;
                }
                if ((uint64_t) scaled(y.bytes.current, v->scale.now_bytes) < v->min_now &&
                    (uint64_t) scaled(y.max_bytes, v->scale.max_bytes) < v->min_max) {
                        truncated++;
                        continue;
                }
                list[k++] = (HeapChild) { c, MAX(y.bytes.current, y.max_bytes) };
        }
        qsort(list, k, sizeof(HeapChild), compare_children);
        for (size_t i = 0; i < k; i++) {
                if (depth >= v->q->max_depth || i >= v->q->max_children) {
                        truncated++;
                        continue;
                }
                json_t *child = node_json(v, list[i].idx, depth + 1);
                if (!child || json_array_append_new(children, child) < 0)
                        return NULL;
        }
        if (json_object_set(o, "children", children) < 0 ||
            json_object_set_new(o, "truncatedChildren", json_integer((json_int_t) truncated)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/*
 * With sampled stacks a heap can hold bytes while none of its live blocks was sampled (a heap smaller than
 * a few intervals): nothing to scale. Those bytes go to a "[not sampled]" child of the root, so that the
 * tree's totals are still the exact counts.
 */
static int add_unsampled(json_t *root, uint64_t now_bytes, uint64_t now_blocks, uint64_t max_bytes) {
        bool now = reply_int_or(root, "currentBytes") == 0 && now_bytes > 0;
        bool max = reply_int_or(root, "maxBytes") == 0 && max_bytes > 0;

        if (!now && !max)
                return 0;
        json_t *child = json_pack("{s:s, s:n, s:n, s:n, s:n, s:n, s:[], s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:[], s:I}",
                                  "frame", "[not sampled]", "module", "address", "function", "file", "line",
                                  "inlinedInto",
                                  "currentBytes", (json_int_t) (now ? now_bytes : 0),
                                  "currentBlocks", (json_int_t) (now ? now_blocks : 0),
                                  "peakBytes", (json_int_t) max_bytes,
                                  "maxBytes", (json_int_t) (max ? max_bytes : 0),
                                  "maxBlocks", (json_int_t) 0,
                                  "errorBytes", (json_int_t) (now ? now_bytes : 0),
                                  "maxErrorBytes", (json_int_t) (max ? max_bytes : 0),
                                  "children", "truncatedChildren", (json_int_t) 0);
        if (!child || json_array_append_new(json_object_get(root, "children"), child) < 0)
                return -ENOMEM;
        if (now && (json_object_set_new(root, "currentBytes", json_integer((json_int_t) now_bytes)) < 0 ||
                    json_object_set_new(root, "currentBlocks", json_integer((json_int_t) now_blocks)) < 0))
                return -ENOMEM;
        if (max && json_object_set_new(root, "maxBytes", json_integer((json_int_t) max_bytes)) < 0)
                return -ENOMEM;
        return 0;
}

/* A heap's view for a query: its figures, symbols and frames' lifetimes. -ESRCH (no such heap), -ENOMEM. */
static int heap_view_init(HeapView *v, Accounting *a, UserSymbols *usym, const HeapQuery *q, uint32_t serial) {
        *v = (HeapView) { .a = a, .q = q };
        if (!view_heap(a, serial, &v->img))
                return -ESRCH;
        const MsHeapCounters *c = &v->img.counters;
        v->scale = view_heap_scale(a, serial);
        v->symbols = usym && v->img.maps ? usym_image(usym, serial, v->img.maps) : NULL;
        /* Rounded up: with min_ppm > 0 a frame of 0 bytes in one view never counts as above it. */
        v->min_now = (c->live_bytes * q->min_ppm + 999999) / 1000000;
        v->min_max = (c->peak_bytes * q->min_ppm + 999999) / 1000000;
        v->lifetimes = (LifetimeSums) { .a = a, .scope = view_heap_scope_node(a, serial) };
        if (v->lifetimes.scope != VIEW_NODE_NONE)
                view_heap_foreach_lifetimes(a, serial, add_lifetimes, &v->lifetimes);
        /* Rounded up, and at least a block's worth: a frame that freed nothing never counts. */
        uint64_t freed = freed_of(lifetimes_of(v, v->lifetimes.scope));
        uint32_t ppm = MAX(q->min_ppm, HEAP_LIFETIME_MIN_PPM);
        v->min_freed = MAX((freed / 1000000 * ppm) + ((freed % 1000000) * ppm + 999999) / 1000000, (uint64_t) 1);
        return v->lifetimes.error;
}

static void heap_view_done(HeapView *v) {
        key_index_done(&v->lifetimes.of);
        free(v->lifetimes.sums);
        key_index_done(&v->shown);
}

static json_t *root_json(HeapView *v) {
        const ViewHeap *img = &v->img;
        const MsHeapCounters *c = &img->counters;
        uint32_t scope = v->lifetimes.scope;
        json_t *root = NULL;

        if (scope != VIEW_NODE_NONE) {
                root = node_json(v, scope, 0);
                if (!root)
                        return NULL;
        } else {
                char label[64];
                (void) snprintf(label, sizeof(label), "[heap pid %" PRIi32 " %s]", img->pid, img->comm);
                root = json_pack("{s:o, s:n, s:n, s:n, s:n, s:n, s:[], s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:[], s:I}",
                                 "frame", name_json(label), "module", "address", "function", "file", "line",
                                 "inlinedInto", "currentBytes", (json_int_t) 0, "currentBlocks",
                                 (json_int_t) 0, "peakBytes", (json_int_t) c->peak_bytes, "maxBytes",
                                 (json_int_t) 0, "maxBlocks",
                                 (json_int_t) 0, "errorBytes", (json_int_t) 0, "maxErrorBytes", (json_int_t) 0,
                                 "children", "truncatedChildren", (json_int_t) 0);
                if (!root)
                        return NULL;
        }
        uint64_t live_blocks = c->allocs - MIN(c->frees, c->allocs);
        if (add_unsampled(root, c->live_bytes, live_blocks, c->peak_bytes) < 0) {
                json_decref(root);
                return NULL;
        }
        return root;
}

json_t *heap_query_root_json(Accounting *a, UserSymbols *usym, const HeapQuery *q, uint32_t serial) {
        HeapView v;
        json_t *root = heap_view_init(&v, a, usym, q, serial) >= 0 ? root_json(&v) : NULL;

        heap_view_done(&v);
        return root;
}

/* The frame a timeline cell's stack counts at in the reply: its own, or the nearest shown above it. */
static uint32_t shown_frame(const HeapView *v, uint32_t node) {
        for (uint32_t i = node; i != VIEW_NODE_NONE; i = parent_of(v->a, i))
                if (key_index_get(&v->shown, i) != KEY_INDEX_NONE)
                        return i;
        return v->lifetimes.scope;
}

/* HeapTimeline, after the tree was rendered (its frames' ids are known). */
static json_t *timeline_json(const HeapView *v) {
        json_auto_t *cells = json_array();
        ViewHeapTimelineCell c;

        if (!cells)
                return NULL;
        for (size_t i = 0; view_heap_timeline_cell(v->a, v->img.serial, i, &c); i++)
                if (json_array_append_new(cells, json_pack("[I, I, I, I, I, I]", (json_int_t) c.bucket,
                                                           (json_int_t) shown_frame(v, c.node),
                                                           (json_int_t) c.alloc_bytes, whole_blocks(c.alloc_blocks),
                                                           (json_int_t) c.free_bytes, whole_blocks(c.free_blocks))) < 0)
                        return NULL;
        return json_pack("{s:I, s:O, s:I}",
                         "bucketUsec", (json_int_t) (view_heap_timeline_bucket_nsec(v->a, v->img.serial) / 1000),
                         "cells", cells,
                         "dropped", (json_int_t) v->img.timeline_dropped);
}

static json_t *growth_json(Accounting *a, const ViewHeap *img) {
        json_auto_t *list = json_array();
        uint64_t live_bytes;
        uint32_t msec;

        if (!list)
                return NULL;
        for (uint32_t i = 0; view_heap_point(a, img->serial, i, &msec, &live_bytes); i++)
                if (json_array_append_new(list, json_pack("{s:I, s:I}", "msec", (json_int_t) msec,
                                                          "liveBytes", (json_int_t) live_bytes)) < 0)
                        return NULL;
        return TAKE_PTR(list);
}

typedef struct ObjectList {
        json_t *list;
        bool show_addresses;
        int error;
} ObjectList;

static json_t *address_json(const ObjectList *l, uint64_t a) {
        return l->show_addresses ? json_integer(varlink_count(a)) : json_null();
}

static void object_json(void *userdata, const UsymImageObject *o) {
        ObjectList *l = userdata;
        char hex[2 * 64 + 1] = "";

        if (l->error < 0)
                return;
        for (size_t i = 0; o->build_id && i < o->build_id_size && i < 64; i++)
                (void) snprintf(hex + 2 * i, 3, "%02x", o->build_id[i]);
        json_t *x = json_pack("{s:o, s:o, s:o, s:o, s:o}", "path", name_json(o->path),
                              "buildId", o->build_id ? json_string(hex) : json_null(),
                              "start", address_json(l, o->start), "limit", address_json(l, o->limit),
                              "offset", address_json(l, o->offset));
        if (json_array_append_new(l->list, x) < 0)
                l->error = -ENOMEM;
}

/* The files the image's frames were looked up in (HeapObject), after its tree was named; null without
 * symbols. */
static json_t *objects_json(UserSymbols *usym, const HeapQuery *q, const ViewHeap *img) {
        UsymImage *im = usym && img->maps ? usym_image(usym, img->serial, img->maps) : NULL;
        ObjectList l = { .list = json_array(), .show_addresses = q->show_addresses };

        if (!l.list)
                return NULL;
        if (!im) {
                json_decref(l.list);
                return json_null();
        }
        usym_image_foreach_object(im, object_json, &l);
        if (l.error < 0) {
                json_decref(l.list);
                return NULL;
        }
        return l.list;
}

static json_t *image_json(Accounting *a, UserSymbols *usym, const HeapQuery *q, const ViewHeap *img) {
        const MsHeapCounters *c = &img->counters;
        json_t *root = NULL, *growth = NULL, *timeline = NULL, *objects = NULL;
        HeapView v;

        if (heap_view_init(&v, a, usym, q, img->serial) >= 0 && (root = root_json(&v)))
                timeline = q->timeline ? timeline_json(&v) : json_null();
        heap_view_done(&v);
        growth = growth_json(a, img);
        objects = root ? objects_json(usym, q, img) : NULL;
        if (!root || !growth || !timeline || !objects) {
                json_decref(root);
                json_decref(growth);
                json_decref(timeline);
                json_decref(objects);
                return NULL;
        }
        return json_pack("{s:i, s:o, s:o, s:I, s:b, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
                         "s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o}",
                         "pid", (int) img->pid,
                         "comm", name_json(img->comm),
                         "cmdline", name_json(img->cmdline),
                         "serial", (json_int_t) img->serial,
                         "ended", img->ended,
                         "end", img->ended ? json_string(end_to_string(img->end)) : json_null(),
                         "sampleInterval", (json_int_t) img->sample_interval,
                         "liveBytes", (json_int_t) c->live_bytes,
                         "peakBytes", (json_int_t) c->peak_bytes,
                         "liveBlocks", (json_int_t) (c->allocs - MIN(c->frees, c->allocs)),
                         "allocs", (json_int_t) c->allocs,
                         "frees", (json_int_t) c->frees,
                         "allocBytes", (json_int_t) c->alloc_bytes,
                         "unknownFrees", (json_int_t) c->unknown_frees,
                         "invalidFrees", (json_int_t) c->invalid_frees,
                         "lostRecords", (json_int_t) (c->lost_records + img->dropped),
                         "stacksFull", (json_int_t) c->stacks_full,
                         "nestedCalls", (json_int_t) c->nested_calls,
                         "sampledBlocks", (json_int_t) img->sampled_blocks,
                         "unmatchedFrees", (json_int_t) img->unmatched_frees,
                         "startUsec", (json_int_t) (img->start_nsec / 1000),
                         "endUsec", (json_int_t) (img->end_nsec / 1000),
                         "growth", growth,
                         "timeline", timeline,
                         "root", root,
                         "objects", objects);
}

int heap_query_json(Accounting *a, UserSymbols *usym, const HeapQuery *q, json_t **ret) {
        json_auto_t *list = json_array();
        HeapStats stats;
        bool found = false;
        ViewHeap h;

        if (!list)
                return -ENOMEM;
        for (uint32_t i = 0; i < view_heap_count(a); i++) {
                if (!view_heap(a, i, &h) || (q->pid > 0 && h.pid != q->pid))
                        continue;
                found = true;
                json_t *img = image_json(a, usym, q, &h);
                if (!img || json_array_append_new(list, img) < 0)
                        return -ENOMEM;
        }
        if (q->pid > 0 && !found)
                return -ESRCH;
        view_heap_stats(a, &stats);
        json_auto_t *bounds = json_array();
        for (unsigned i = 0; bounds && i + 1 < VIEW_HEAP_LIFETIME_BUCKETS; i++)
                if (json_array_append_new(bounds, json_integer((json_int_t) view_heap_lifetime_bound_usec(i))) < 0)
                        return -ENOMEM;
        if (!bounds)
                return -ENOMEM;
        *ret = json_pack("{s:O, s:O, s:I, s:I}", "heaps", list, "lifetimeBoundsUsec", bounds,
                         "heapsDropped", (json_int_t) stats.images_dropped,
                         "invalidEvents", (json_int_t) stats.invalid_events);
        return *ret ? 0 : -ENOMEM;
}
