/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "heap-moment.h"
#include "keyindex.h"
#include "macro.h"
#include "reply.h"

/* A timeline cell: [bucket, id, allocBytes, allocBlocks, freeBytes, freeBlocks]. */
enum { CELL_BUCKET, CELL_ID, CELL_ALLOC_BYTES, CELL_ALLOC_BLOCKS, CELL_FREE_BYTES, CELL_FREE_BLOCKS, CELL_FIELDS };

/* What the cells of the buckets asked about hold, per frame id. */
typedef struct Figures {
        int64_t bytes, blocks;          /* at: live; between: allocated */
        int64_t freed_bytes, freed_blocks;      /* between */
} Figures;

typedef struct Moment {
        KeyIndex of;                    /* id -> figures[] */
        Figures *figures;
        size_t n, allocated;
        bool window;
} Moment;

static Figures *figures_of(Moment *m, uint64_t id, bool create) {
        uint32_t i = key_index_get(&m->of, id);
        if (i != KEY_INDEX_NONE)
                return &m->figures[i];
        if (!create ||
            greedy_realloc(&m->figures, &m->allocated, m->n + 1, sizeof(Figures), 64) < 0 ||
            key_index_put(&m->of, id, (uint32_t) m->n) < 0)
                return NULL;
        m->figures[m->n] = (Figures) {};
        return &m->figures[m->n++];
}

/* Sums the cells of the buckets that begin in [from, to) by frame; -ENODATA without a timeline. */
static int sum_cells(Moment *m, const json_t *image, uint64_t from_usec, uint64_t to_usec, uint64_t *ret_bucket_usec) {
        const json_t *timeline = reply_object(image, "timeline");
        uint64_t bucket_usec = reply_count(timeline, "bucketUsec");
        json_t *cells = reply_array(timeline, "cells"), *cell;
        size_t i;

        if (!timeline || !cells)
                return -ENODATA;
        if (bucket_usec == 0)
                return -EINVAL;
        json_array_foreach(cells, i, cell) {
                int64_t v[CELL_FIELDS];
                if (json_array_size(cell) != CELL_FIELDS)
                        return -EINVAL;
                for (size_t k = 0; k < CELL_FIELDS; k++) {
                        v[k] = json_integer_value(json_array_get(cell, k));
                        if (!json_is_integer(json_array_get(cell, k)) || v[k] < 0)
                                return -EINVAL;
                }
                uint64_t start = (uint64_t) v[CELL_BUCKET] * bucket_usec;
                if (start < from_usec || start >= to_usec)
                        continue;
                Figures *f = figures_of(m, (uint64_t) v[CELL_ID], true);
                if (!f)
                        return -ENOMEM;
                f->bytes += v[CELL_ALLOC_BYTES];
                f->blocks += v[CELL_ALLOC_BLOCKS];
                if (m->window) {
                        f->freed_bytes += v[CELL_FREE_BYTES];
                        f->freed_blocks += v[CELL_FREE_BLOCKS];
                } else {
                        f->bytes -= v[CELL_FREE_BYTES];
                        f->blocks -= v[CELL_FREE_BLOCKS];
                }
        }
        *ret_bucket_usec = bucket_usec;
        return 0;
}

static int set_count(json_t *node, const char *key, int64_t v) {
        return json_object_set_new(node, key, json_integer(MAX(v, (int64_t) 0))) < 0 ? -ENOMEM : 0;
}

/* Rewrites a frame and those below it: each holds its own cells' figures and its children's. A frame
 * without an id ("[not sampled]") has no place in time: nothing. */
static int rewrite(Moment *m, json_t *node, unsigned depth, Figures *ret) {
        json_t *child;
        size_t i;
        int r;

        const Figures *own = json_is_integer(json_object_get(node, "id")) ?
                figures_of(m, (uint64_t) json_integer_value(json_object_get(node, "id")), false) : NULL;
        Figures sum = own ? *own : (Figures) {};
        if (depth < 1024)
                json_array_foreach(reply_array(node, "children"), i, child) {
                        Figures c;
                        r = rewrite(m, child, depth + 1, &c);
                        if (r < 0)
                                return r;
                        sum.bytes += c.bytes;
                        sum.blocks += c.blocks;
                        sum.freed_bytes += c.freed_bytes;
                        sum.freed_blocks += c.freed_blocks;
                }
        if (set_count(node, "currentBytes", sum.bytes) < 0 || set_count(node, "currentBlocks", sum.blocks) < 0 ||
            set_count(node, "errorBytes", 0) < 0)
                return -ENOMEM;
        if (m->window && (set_count(node, "windowFreedBytes", sum.freed_bytes) < 0 ||
                          set_count(node, "windowFreedBlocks", sum.freed_blocks) < 0))
                return -ENOMEM;
        *ret = sum;
        return 0;
}

static int moment(json_t *image, uint64_t from_usec, uint64_t to_usec, bool window) {
        Moment m = { .window = window };
        uint64_t bucket_usec = 0;
        Figures total;
        json_t *root = reply_object(image, "root"), *mark;

        int r = root ? sum_cells(&m, image, from_usec, to_usec, &bucket_usec) : -EINVAL;
        if (r >= 0)
                r = rewrite(&m, root, 0, &total);
        key_index_done(&m.of);
        free(m.figures);
        if (r < 0)
                return r;
        if (window)
                mark = json_pack("{s:I, s:I, s:I}", "fromUsec", (json_int_t) from_usec, "toUsec", (json_int_t) to_usec,
                                 "bucketUsec", (json_int_t) bucket_usec);
        else {
                /* The moment as the buckets can tell it: the end of the bucket it falls in. */
                uint64_t end = to_usec / bucket_usec * bucket_usec + (to_usec % bucket_usec ? bucket_usec : 0);
                mark = json_pack("{s:I, s:I}", "usec", (json_int_t) end, "bucketUsec", (json_int_t) bucket_usec);
        }
        if (!mark || json_object_set_new(image, window ? "window" : "moment", mark) < 0 ||
            json_object_set_new(image, "liveBytes", json_integer(MAX(total.bytes, (int64_t) 0))) < 0 ||
            json_object_set_new(image, "liveBlocks", json_integer(MAX(total.blocks, (int64_t) 0))) < 0)
                return -ENOMEM;
        return 0;
}

int heap_moment_at(json_t *image, uint64_t at_usec) {
        /* Every bucket that began before the moment: the heap at the end of the moment's bucket. */
        return moment(image, 0, at_usec == UINT64_MAX ? at_usec : at_usec + 1, false);
}

int heap_moment_between(json_t *image, uint64_t from_usec, uint64_t to_usec) {
        if (to_usec < from_usec)
                return -EINVAL;
        return moment(image, from_usec, to_usec, true);
}
