/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ChunkPool: blocks of a few fixed sizes, carved from 256 KiB chunks mapped apart from the heap, for the
 * page table's region arrays: millions of them come and go together when a process holding gigabytes
 * exits, and from malloc's heap they would leave it fragmented around whatever else was allocated
 * meanwhile, resident for good (measured: 8 MiB of a 3 M-page holder's 24 stayed after its free).
 *
 * Each chunk serves one size class; a bitmap in its header says which blocks are free (the blocks
 * themselves hold nothing of the pool's, so their pages may be dropped), and a count per 4 KiB page says
 * how many live blocks touch it. chunkpool_trim() unmaps the chunks that were empty at its last call and
 * still are (but one per class, so that a class whose last block comes and goes does not map and unmap),
 * and gives back, in runs, the pages no block touched at its last call nor since: memory freed in bulk
 * goes back within two calls, and blocks that come and go with every burst of a steady load keep their
 * pages; the event path makes no system call. Blocks are 16-byte aligned. Not thread-safe.
 */

#include <stddef.h>
#include <stdint.h>

#define CHUNKPOOL_CLASSES_MAX 32u

typedef struct PoolChunk PoolChunk;

typedef struct PoolClass {
        size_t block_bytes;
        uint32_t blocks_per_chunk;
        uint32_t first_block;           /* offset of the first block in a chunk, past the header */
        PoolChunk *partial;             /* chunks with a free block */
} PoolClass;

typedef struct ChunkPool {
        PoolClass classes[CHUNKPOOL_CLASSES_MAX];
        unsigned n_classes;
        size_t n_chunks;
        size_t used_bytes;              /* of the blocks handed out */
        size_t idle_pages;              /* pages no block touches that are not given back yet */
        PoolChunk *chunks;              /* every chunk, for chunkpool_trim() and chunkpool_done() */
} ChunkPool;

/* A pool of classes of the given sizes in bytes (at most CHUNKPOOL_CLASSES_MAX, each at most 64 KiB). */
void chunkpool_init(ChunkPool *p, const size_t *block_bytes, unsigned n_classes);
/* Unmaps every chunk: every block is gone. */
void chunkpool_done(ChunkPool *p);

/* A block of class c, its content undefined. NULL when no chunk can be mapped. */
void *chunkpool_alloc(ChunkPool *p, unsigned c);
/* Frees a block of this pool (NULL: nothing). */
void chunkpool_free(ChunkPool *p, void *block);

/* Unmaps the chunks empty since the last call and gives back the pages unused since (madvise(
 * MADV_DONTNEED)); returns how many pages. */
size_t chunkpool_trim(ChunkPool *p);

/* Bytes mapped for the chunks, of which at most this many are resident. */
size_t chunkpool_mapped_bytes(const ChunkPool *p);
