/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "merge.h"

int merge_init(Merge *m, size_t n_max, const MergeOps *ops) {
        assert(m);
        assert(ops && ops->peek && ops->consume);

        *m = (Merge) { .ops = ops, .n_max = n_max };
        m->heap = calloc(n_max > 0 ? n_max : 1, sizeof(*m->heap));
        if (!m->heap)
                return -ENOMEM;
        return 0;
}

void merge_done(Merge *m) {
        assert(m);
        free(m->heap);
        *m = (Merge) {};
}

static bool heap_less(const Merge *m, size_t a, size_t b) {
        const MergeEntry *x = &m->heap[a], *y = &m->heap[b];

        return x->nsec < y->nsec || (x->nsec == y->nsec && x->order < y->order);
}

static void heap_swap(Merge *m, size_t a, size_t b) {
        MergeEntry t = m->heap[a];

        m->heap[a] = m->heap[b];
        m->heap[b] = t;
}

static void heap_sift_down(Merge *m, size_t i) {
        for (;;) {
                size_t l = 2 * i + 1, k = i;

                if (l < m->n_heap && heap_less(m, l, k))
                        k = l;
                if (l + 1 < m->n_heap && heap_less(m, l + 1, k))
                        k = l + 1;
                if (k == i)
                        return;
                heap_swap(m, i, k);
                i = k;
        }
}

void merge_begin(Merge *m) {
        assert(m);
        m->n_heap = 0;
        m->n_added = 0;
}

void merge_add(Merge *m, void *stream) {
        uint64_t nsec;
        size_t i;

        assert(m);
        assert(m->n_added < m->n_max);

        i = m->n_added++;
        if (!m->ops->peek(stream, &nsec))
                return;
        m->heap[m->n_heap] = (MergeEntry) { .nsec = nsec, .order = i, .stream = stream };
        i = m->n_heap++;
        while (i > 0 && heap_less(m, i, (i - 1) / 2)) {
                heap_swap(m, i, (i - 1) / 2);
                i = (i - 1) / 2;
        }
}

bool merge_run(Merge *m, uint64_t cut_nsec, uint64_t budget) {
        uint64_t n = 0;

        assert(m);

        while (m->n_heap > 0 && n < budget && m->heap[0].nsec < cut_nsec) {
                MergeEntry *top = &m->heap[0];

                m->ops->consume(top->stream);
                n++;
                if (!m->ops->peek(top->stream, &top->nsec))
                        m->heap[0] = m->heap[--m->n_heap];
                heap_sift_down(m, 0);
        }
        return m->n_heap > 0 && m->heap[0].nsec < cut_nsec;
}
