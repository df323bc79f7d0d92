/* SPDX-License-Identifier: MIT */

/*
 * The page table's chunk pool (chunkpool.h): blocks of each class kept apart and aligned, chunks empty for
 * a whole trim unmapped (but one per class), and the pages no block touched for a whole trim given back.
 */

#include <stdint.h>
#include <string.h>

#include "chunkpool.h"
#include "macro.h"
#include "tests.h"

static const size_t sizes[] = { 16, 24, 2048, 3072 };

static void test_blocks(void) {
        ChunkPool p;
        enum { N = 10000 };
        static uint8_t *blocks[N];

        chunkpool_init(&p, sizes, ELEMENTSOF(sizes));
        /* Rounded to 16 bytes: a class of 24 holds blocks of 32. */
        ASSERT_EQ(p.classes[1].block_bytes, 32);
        for (unsigned i = 0; i < N; i++) {
                unsigned c = i % ELEMENTSOF(sizes);
                blocks[i] = chunkpool_alloc(&p, c);
                ASSERT_NOT_NULL(blocks[i]);
                ASSERT_EQ((uintptr_t) blocks[i] % 16, 0);
                /* Each block is its own: filled with its index, checked below. */
                memset(blocks[i], (int) (i & 0xff), sizes[c]);
        }
        for (unsigned i = 0; i < N; i++)
                for (size_t b = 0; b < sizes[i % ELEMENTSOF(sizes)]; b++)
                        ASSERT_EQ(blocks[i][b], i & 0xff);
        ASSERT_EQ(p.used_bytes, (size_t) N / 4 * (16 + 32 + 2048 + 3072));
        size_t chunks = p.n_chunks;
        ASSERT_GT(chunks, 4);

        /* Every block freed: the first trim only notes what is unused, the second unmaps the empty chunks
         * but one per class (its room) and gives the unused pages of those back. */
        for (unsigned i = 0; i < N; i++)
                chunkpool_free(&p, blocks[i]);
        ASSERT_EQ(p.used_bytes, 0);
        ASSERT_EQ(p.n_chunks, chunks);
        ASSERT_GT(p.idle_pages, 0);
        ASSERT_EQ(chunkpool_trim(&p), 0);
        ASSERT_EQ(p.n_chunks, chunks);
        ASSERT_GT(chunkpool_trim(&p), 0);
        ASSERT_EQ(p.n_chunks, ELEMENTSOF(sizes));
        ASSERT_EQ(p.idle_pages, 0);
        ASSERT_EQ(chunkpool_trim(&p), 0);

        /* A block used between two trims keeps its page. */
        uint8_t *kept = chunkpool_alloc(&p, 3);
        chunkpool_free(&p, kept);
        ASSERT_EQ(chunkpool_trim(&p), 0);
        kept = chunkpool_alloc(&p, 3);
        ASSERT_EQ(chunkpool_trim(&p), 0);
        chunkpool_free(&p, kept);

        /* Pages given back come again, zeroed or not: a block on one is usable. */
        uint8_t *b = chunkpool_alloc(&p, 2);
        memset(b, 7, sizes[2]);
        ASSERT_EQ(b[sizes[2] - 1], 7);
        chunkpool_free(&p, b);
        chunkpool_done(&p);
        ASSERT_EQ(p.n_chunks, 0);
}

/* Half the blocks freed, every other one: pages that still hold a block stay; the trim gives back only
 * what no block touches. */
static void test_partial_trim(void) {
        ChunkPool p;
        enum { N = 1024 };
        static uint8_t *blocks[N];

        chunkpool_init(&p, &sizes[2], 1);
        for (unsigned i = 0; i < N; i++) {
                ASSERT_NOT_NULL(blocks[i] = chunkpool_alloc(&p, 0));
                memset(blocks[i], 0x5a, sizes[2]);
        }
        /* 2 KiB blocks behind a header: each touches two pages, so freeing every other one empties none,
         * and the blocks left keep what they held. */
        for (unsigned i = 0; i < N; i += 2)
                chunkpool_free(&p, blocks[i]);
        ASSERT_EQ(chunkpool_trim(&p), 0);
        ASSERT_EQ(chunkpool_trim(&p), 0);
        for (unsigned i = 1; i < N; i += 2)
                ASSERT_EQ(blocks[i][0] + blocks[i][sizes[2] - 1], 2 * 0x5a);
        for (unsigned i = 1; i < N; i += 2)
                chunkpool_free(&p, blocks[i]);
        ASSERT_EQ(chunkpool_trim(&p), 0);
        ASSERT_GT(chunkpool_trim(&p), 0);
        chunkpool_done(&p);
}

int main(void) {
        TEST(test_blocks);
        TEST(test_partial_trim);
        return 0;
}
