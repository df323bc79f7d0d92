/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "seqorder.h"

/* A run that waits: a copy, and where its next entry is. */
typedef struct SeqRun {
        uint64_t seq;                   /* the next entry's number */
        size_t offset, length;          /* the next entry */
        size_t size;
        uint8_t data[];
} SeqRun;

struct SeqOrder {
        const SeqOrderOps *ops;
        void *userdata;
        uint64_t next;
        SeqRun **heap;                  /* owned, a binary min-heap by seq */
        size_t n_heap, heap_size;
        SeqOrderStats stats;
};

SeqOrder *seq_order_new(const SeqOrderOps *ops, void *userdata) {
        SeqOrder *o;

        assert(ops && ops->entry && ops->deliver);
        o = calloc(1, sizeof(*o));
        if (!o)
                return NULL;
        o->ops = ops;
        o->userdata = userdata;
        return o;
}

SeqOrder *seq_order_free(SeqOrder *o) {
        if (!o)
                return NULL;
        for (size_t i = 0; i < o->n_heap; i++)
                free(o->heap[i]);
        free(o->heap);
        free(o);
        return NULL;
}

uint64_t seq_order_next(const SeqOrder *o) {
        return o->next;
}

bool seq_order_first_waiting(const SeqOrder *o, uint64_t *ret) {
        if (o->n_heap == 0)
                return false;
        *ret = o->heap[0]->seq;
        return true;
}

void seq_order_get_stats(const SeqOrder *o, SeqOrderStats *ret) {
        *ret = o->stats;
}

static void heap_swap(SeqOrder *o, size_t a, size_t b) {
        SeqRun *t = o->heap[a];

        o->heap[a] = o->heap[b];
        o->heap[b] = t;
}

static void heap_down(SeqOrder *o, size_t i) {
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, min = i;

                if (l < o->n_heap && o->heap[l]->seq < o->heap[min]->seq)
                        min = l;
                if (r < o->n_heap && o->heap[r]->seq < o->heap[min]->seq)
                        min = r;
                if (min == i)
                        return;
                heap_swap(o, i, min);
                i = min;
        }
}

static void heap_up(SeqOrder *o, size_t i) {
        while (i > 0 && o->heap[(i - 1) / 2]->seq > o->heap[i]->seq) {
                heap_swap(o, i, (i - 1) / 2);
                i = (i - 1) / 2;
        }
}

static void heap_pop(SeqOrder *o) {
        free(o->heap[0]);
        o->heap[0] = o->heap[--o->n_heap];
        heap_down(o, 0);
}

/* Counts the entries of a run from offset on, to keep waiting_entries; stops at a malformed one. */
static uint64_t run_entries(SeqOrder *o, const uint8_t *data, size_t size, size_t offset) {
        uint64_t n = 0, seq;
        size_t length;

        while (offset < size && o->ops->entry(o->userdata, data, size, offset, &seq, &length)) {
                n++;
                offset += length;
        }
        return n;
}

/* The entry at offset: true and its number and length, or false at the run's end or a malformed entry
 * (counted). */
static bool run_entry(SeqOrder *o, const uint8_t *data, size_t size, size_t offset, uint64_t *ret_seq,
                size_t *ret_length) {
        if (offset >= size)
                return false;
        if (!o->ops->entry(o->userdata, data, size, offset, ret_seq, ret_length) || *ret_length == 0 ||
            *ret_length > size - offset) {
                o->stats.malformed++;
                return false;
        }
        return true;
}

static void deliver(SeqOrder *o, const uint8_t *data, size_t size, size_t offset, size_t length, uint64_t seq) {
        if (seq < o->next)
                o->stats.late++;
        else
                o->next = seq + 1;
        o->ops->deliver(o->userdata, data, size, offset, length);
}

/* Delivers the heap's top entry and moves its run on. */
static void deliver_top(SeqOrder *o) {
        SeqRun *r = o->heap[0];

        deliver(o, r->data, r->size, r->offset, r->length, r->seq);
        o->stats.waiting_entries--;
        r->offset += r->length;
        if (!run_entry(o, r->data, r->size, r->offset, &r->seq, &r->length)) {
                o->stats.waiting_bytes -= r->size;
                o->stats.waiting_entries -= run_entries(o, r->data, r->size, r->offset);
                heap_pop(o);
                return;
        }
        heap_down(o, 0);
}

/* Delivers from the heap while its top is next (or late). */
static void deliver_ready(SeqOrder *o) {
        while (o->n_heap > 0 && o->heap[0]->seq <= o->next)
                deliver_top(o);
}

static int keep(SeqOrder *o, const uint8_t *data, size_t size, size_t offset, uint64_t seq, size_t length) {
        SeqRun *r;

        if (ARRAY_GROW_ONE(o->heap, o->heap_size, o->n_heap, 64) < 0)
                return -ENOMEM;
        r = malloc(sizeof(*r) + size);
        if (!r)
                return -ENOMEM;
        memcpy(r->data, data, size);
        r->size = size;
        r->offset = offset;
        r->seq = seq;
        r->length = length;
        o->heap[o->n_heap++] = r;
        heap_up(o, o->n_heap - 1);
        o->stats.waiting_bytes += size;
        o->stats.waiting_entries += run_entries(o, data, size, offset);
        return 0;
}

int seq_order_add(SeqOrder *o, const void *run, size_t size, size_t offset) {
        const uint8_t *data = run;
        uint64_t seq;
        size_t length;

        assert(o);
        /* Between calls, whatever waits is after next (deliver_ready()). */
        while (run_entry(o, data, size, offset, &seq, &length)) {
                if (seq > o->next)
                        return keep(o, data, size, offset, seq, length);
                deliver(o, data, size, offset, length, seq);
                offset += length;
                deliver_ready(o);
        }
        return 0;
}

uint64_t seq_order_skip(SeqOrder *o, uint64_t upto) {
        uint64_t skipped = 0;

        assert(o);
        deliver_ready(o);
        while (o->next < upto) {
                uint64_t to = o->n_heap > 0 ? MIN(o->heap[0]->seq, upto) : upto;

                skipped += to - o->next;
                o->next = to;
                deliver_ready(o);
        }
        o->stats.skipped += skipped;
        return skipped;
}
