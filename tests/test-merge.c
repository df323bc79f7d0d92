/* SPDX-License-Identifier: MIT */

/*
 * The time-ordered merge of per-CPU streams (daemon/sources/merge.c) on streams of timestamps in
 * memory: order across streams, ties, streams that are empty or run dry, the cut and the budget.
 */

#include <stdlib.h>

#include "macro.h"
#include "merge.h"
#include "tests.h"

#define MAX_OUT 64

typedef struct Stream {
        unsigned id;
        const uint64_t *nsec;
        size_t n, pos;
        size_t peeks_after_dry;         /* peek() calls once the stream had nothing: must stay bounded */
} Stream;

typedef struct Delivered {
        unsigned id;
        uint64_t nsec;
} Delivered;

static Delivered out[MAX_OUT];
static size_t n_out;

static bool stream_peek(void *userdata, uint64_t *ret_nsec) {
        Stream *s = userdata;

        if (s->pos >= s->n) {
                s->peeks_after_dry++;
                return false;
        }
        *ret_nsec = s->nsec[s->pos];
        return true;
}

static void stream_consume(void *userdata) {
        Stream *s = userdata;

        ASSERT_LT(s->pos, s->n);
        ASSERT_LT(n_out, MAX_OUT);
        out[n_out++] = (Delivered) { .id = s->id, .nsec = s->nsec[s->pos] };
        s->pos++;
}

static const MergeOps ops = { .peek = stream_peek, .consume = stream_consume };

/* One round over streams: begin, add each, run. */
static bool round_run(Merge *m, Stream *streams, size_t n, uint64_t cut, uint64_t budget) {
        merge_begin(m);
        for (size_t i = 0; i < n; i++)
                merge_add(m, &streams[i]);
        return merge_run(m, cut, budget);
}

static void test_order_across_streams(void) {
        static const uint64_t a[] = { 1, 4, 7, 10 }, b[] = { 2, 3, 8 }, c[] = { 5, 6, 9, 11, 12 };
        Stream s[] = {
                { .id = 0, .nsec = a, .n = ELEMENTSOF(a) },
                { .id = 1, .nsec = b, .n = ELEMENTSOF(b) },
                { .id = 2, .nsec = c, .n = ELEMENTSOF(c) },
        };
        static const unsigned want_id[] = { 0, 1, 1, 0, 2, 2, 0, 1, 2, 0, 2, 2 };
        Merge m;

        n_out = 0;
        ASSERT_OK(merge_init(&m, ELEMENTSOF(s), &ops));
        ASSERT_TRUE(!round_run(&m, s, ELEMENTSOF(s), UINT64_MAX, UINT64_MAX));
        ASSERT_EQ(n_out, ELEMENTSOF(want_id));
        for (size_t i = 0; i < n_out; i++) {
                ASSERT_EQ(out[i].nsec, (uint64_t) i + 1);
                ASSERT_EQ(out[i].id, want_id[i]);
        }
        merge_done(&m);
}

/* Equal timestamps: in the order the streams were added, each stream's own records in its order. */
static void test_ties(void) {
        static const uint64_t a[] = { 5, 5, 5, 9 }, b[] = { 5, 5, 9 }, c[] = { 3, 5 };
        Stream s[] = {
                { .id = 0, .nsec = a, .n = ELEMENTSOF(a) },
                { .id = 1, .nsec = b, .n = ELEMENTSOF(b) },
                { .id = 2, .nsec = c, .n = ELEMENTSOF(c) },
        };
        static const Delivered want[] = {
                { 2, 3 }, { 0, 5 }, { 0, 5 }, { 0, 5 }, { 1, 5 }, { 1, 5 }, { 2, 5 }, { 0, 9 }, { 1, 9 },
        };
        Merge m;

        n_out = 0;
        ASSERT_OK(merge_init(&m, ELEMENTSOF(s), &ops));
        ASSERT_TRUE(!round_run(&m, s, ELEMENTSOF(s), UINT64_MAX, UINT64_MAX));
        ASSERT_EQ(n_out, ELEMENTSOF(want));
        for (size_t i = 0; i < n_out; i++) {
                ASSERT_EQ(out[i].id, want[i].id);
                ASSERT_EQ(out[i].nsec, want[i].nsec);
        }
        merge_done(&m);
}

/* An empty stream is never consumed; one that runs dry mid-round leaves the heap and the others go on. */
static void test_stream_runs_dry(void) {
        static const uint64_t a[] = { 1, 2 }, c[] = { 3, 4, 5, 6 };
        Stream s[] = {
                { .id = 0, .nsec = a, .n = ELEMENTSOF(a) },
                { .id = 1, .nsec = NULL, .n = 0 },
                { .id = 2, .nsec = c, .n = ELEMENTSOF(c) },
        };
        Merge m;

        n_out = 0;
        ASSERT_OK(merge_init(&m, ELEMENTSOF(s), &ops));
        ASSERT_TRUE(!round_run(&m, s, ELEMENTSOF(s), UINT64_MAX, UINT64_MAX));
        ASSERT_EQ(n_out, 6);
        for (size_t i = 0; i < n_out; i++)
                ASSERT_EQ(out[i].nsec, (uint64_t) i + 1);
        ASSERT_EQ(s[0].pos, 2);
        ASSERT_EQ(s[2].pos, 4);
        /* Once dry, a stream is asked once and then left alone. */
        ASSERT_EQ(s[0].peeks_after_dry, 1);
        ASSERT_EQ(s[1].peeks_after_dry, 1);
        ASSERT_EQ(s[2].peeks_after_dry, 1);

        /* A next round with every stream dry delivers nothing. */
        ASSERT_TRUE(!round_run(&m, s, ELEMENTSOF(s), UINT64_MAX, UINT64_MAX));
        ASSERT_EQ(n_out, 6);
        merge_done(&m);
}

/* Records at or after the cut wait for a later round; the budget stops a round that goes on after. */
static void test_cut_and_budget(void) {
        static const uint64_t a[] = { 1, 3, 5, 7 }, b[] = { 2, 4, 6, 8 };
        Stream s[] = {
                { .id = 0, .nsec = a, .n = ELEMENTSOF(a) },
                { .id = 1, .nsec = b, .n = ELEMENTSOF(b) },
        };
        Merge m;

        n_out = 0;
        ASSERT_OK(merge_init(&m, ELEMENTSOF(s), &ops));
        /* Cut 5: records 1..4 are deliverable; a budget of 3 leaves one of them. */
        ASSERT_TRUE(round_run(&m, s, ELEMENTSOF(s), 5, 3));
        ASSERT_EQ(n_out, 3);
        ASSERT_EQ(out[2].nsec, 3);
        /* The same round goes on with the heap as it was. */
        ASSERT_TRUE(!merge_run(&m, 5, 3));
        ASSERT_EQ(n_out, 4);
        ASSERT_EQ(out[3].nsec, 4);
        ASSERT_EQ(s[0].pos, 2);                 /* 5 is not before the cut */
        /* A later round with a later cut takes the rest, in order. */
        ASSERT_TRUE(!round_run(&m, s, ELEMENTSOF(s), 100, UINT64_MAX));
        ASSERT_EQ(n_out, 8);
        for (size_t i = 0; i < n_out; i++)
                ASSERT_EQ(out[i].nsec, (uint64_t) i + 1);
        /* A budget of 0 delivers nothing and says whether anything was deliverable. */
        ASSERT_TRUE(!round_run(&m, s, ELEMENTSOF(s), 100, 0));
        merge_done(&m);
}

/* Many streams, pseudo-random sorted timestamps: the output is sorted and complete. */
static void test_many_streams(void) {
        enum { N_STREAMS = 7, PER_STREAM = 9 };
        static uint64_t ts[N_STREAMS][PER_STREAM];
        Stream s[N_STREAMS];
        uint64_t x = 12345;
        Merge m;

        for (unsigned i = 0; i < N_STREAMS; i++) {
                uint64_t t = 0;

                for (unsigned k = 0; k < PER_STREAM; k++) {
                        x = x * 6364136223846793005u + 1442695040888963407u;
                        t += (x >> 60) % 4;     /* steps of 0..3: many ties */
                        ts[i][k] = t;
                }
                s[i] = (Stream) { .id = i, .nsec = ts[i], .n = PER_STREAM };
        }
        n_out = 0;
        ASSERT_OK(merge_init(&m, N_STREAMS, &ops));
        ASSERT_TRUE(!round_run(&m, s, N_STREAMS, UINT64_MAX, UINT64_MAX));
        ASSERT_EQ(n_out, N_STREAMS * PER_STREAM);
        for (size_t i = 1; i < n_out; i++) {
                ASSERT_LE(out[i - 1].nsec, out[i].nsec);
                if (out[i - 1].nsec == out[i].nsec)
                        ASSERT_LE(out[i - 1].id, out[i].id);
        }
        merge_done(&m);
}

int main(void) {
        TEST(test_order_across_streams);
        TEST(test_ties);
        TEST(test_stream_runs_dry);
        TEST(test_cut_and_budget);
        TEST(test_many_streams);
        return 0;
}
