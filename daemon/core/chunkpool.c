/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chunkpool.h"
#include "macro.h"

#define CHUNK_BYTES ((size_t) 256 << 10)
#define PAGES_MAX (CHUNK_BYTES / 4096)  /* pages of a chunk at the smallest page size */
#define BLOCK_ALIGN 16u

struct PoolChunk {
        PoolChunk *next, *prev;         /* its class's chunks with a free block, when it has one */
        PoolChunk *all_next, *all_prev; /* every chunk of the pool */
        uint32_t size_class;
        uint32_t n_used;
        uint32_t hint;                  /* the free_map word to look in first */
        bool partial;                   /* on its class's list of chunks with a free block */
        bool idle;                      /* empty at the last trim, and since */
        uint64_t released;              /* bit per page: not resident (never touched, or given back) */
        uint64_t idle_pages;            /* bit per page: touched by no block at the last trim, nor since */
        uint16_t page_used[PAGES_MAX];  /* live blocks touching each page; 1 for the header's own */
        uint64_t free_map[];            /* bit per block: free */
};

_Static_assert(PAGES_MAX <= 64, "a chunk's released pages fit one word");

static size_t page_bytes(void) {
        static size_t size = 0;
        if (size == 0) {
                long s = sysconf(_SC_PAGESIZE);
                size = s >= 4096 && (size_t) s <= CHUNK_BYTES ? (size_t) s : 4096;
        }
        return size;
}

static size_t header_bytes(uint32_t blocks) {
        return offsetof(PoolChunk, free_map) + (blocks + 63) / 64 * sizeof(uint64_t);
}

void chunkpool_init(ChunkPool *p, const size_t *block_bytes, unsigned n_classes) {
        assert(n_classes <= CHUNKPOOL_CLASSES_MAX);
        *p = (ChunkPool) { .n_classes = n_classes };
        for (unsigned c = 0; c < n_classes; c++) {
                PoolClass *k = &p->classes[c];
                size_t size = (MAX(block_bytes[c], (size_t) 1) + BLOCK_ALIGN - 1) & ~(size_t) (BLOCK_ALIGN - 1);
                uint32_t n = (uint32_t) (CHUNK_BYTES / size);

                assert(size <= CHUNK_BYTES / 4);
                /* As many blocks as fit behind a header with a bit for each. */
                while (((header_bytes(n) + BLOCK_ALIGN - 1) & ~(size_t) (BLOCK_ALIGN - 1)) + n * size > CHUNK_BYTES)
                        n--;
                k->block_bytes = size;
                k->blocks_per_chunk = n;
                k->first_block = (uint32_t) ((header_bytes(n) + BLOCK_ALIGN - 1) & ~(size_t) (BLOCK_ALIGN - 1));
        }
}

static void partial_push(PoolClass *k, PoolChunk *ch) {
        ch->prev = NULL;
        ch->next = k->partial;
        if (k->partial)
                k->partial->prev = ch;
        k->partial = ch;
        ch->partial = true;
}

static void partial_remove(PoolClass *k, PoolChunk *ch) {
        if (ch->prev)
                ch->prev->next = ch->next;
        else
                k->partial = ch->next;
        if (ch->next)
                ch->next->prev = ch->prev;
        ch->partial = false;
}

/* The pages of a chunk, at the system's page size. */
static unsigned chunk_pages(void) {
        return (unsigned) (CHUNK_BYTES / page_bytes());
}

static PoolChunk *chunk_new(ChunkPool *p, unsigned c) {
        const PoolClass *k = &p->classes[c];
        size_t len = 2 * CHUNK_BYTES;

        /* Aligned to its size, so a block's chunk is its address rounded down. */
        uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                return NULL;
        uintptr_t a = ((uintptr_t) m + CHUNK_BYTES - 1) & ~(uintptr_t) (CHUNK_BYTES - 1);
        size_t head = a - (uintptr_t) m;
        if (head > 0)
                (void) munmap(m, head);
        if (len - head - CHUNK_BYTES > 0)
                (void) munmap((uint8_t *) a + CHUNK_BYTES, len - head - CHUNK_BYTES);

        PoolChunk *ch = (PoolChunk *) a;
        unsigned header_pages = (unsigned) ((k->first_block + page_bytes() - 1) / page_bytes());
        /* Fresh anonymous memory reads as zeros: only what is not zero is set. */
        ch->size_class = c;
        ch->released = (chunk_pages() == 64 ? UINT64_MAX : (UINT64_C(1) << chunk_pages()) - 1) &
                       ~((UINT64_C(1) << header_pages) - 1);
        for (unsigned i = 0; i < header_pages; i++)
                ch->page_used[i] = 1;
        for (uint32_t b = 0; b < k->blocks_per_chunk; b += 64)
                ch->free_map[b / 64] = k->blocks_per_chunk - b >= 64 ? UINT64_MAX :
                                       (UINT64_C(1) << (k->blocks_per_chunk - b)) - 1;
        ch->all_next = p->chunks;
        if (p->chunks)
                p->chunks->all_prev = ch;
        p->chunks = ch;
        p->n_chunks++;
        partial_push(&p->classes[c], ch);
        return ch;
}

/* The pages a block at offset off of size bytes touches: [*first, *last]. */
static void block_pages(size_t off, size_t size, unsigned *first, unsigned *last) {
        *first = (unsigned) (off / page_bytes());
        *last = (unsigned) ((off + size - 1) / page_bytes());
}

void *chunkpool_alloc(ChunkPool *p, unsigned c) {
        PoolClass *k = &p->classes[c];
        PoolChunk *ch = k->partial ?: chunk_new(p, c);
        if (!ch)
                return NULL;

        uint32_t words = (k->blocks_per_chunk + 63) / 64, w = ch->hint;
        while (ch->free_map[w] == 0)
                w = w + 1 == words ? 0 : w + 1;
        unsigned bit = (unsigned) __builtin_ctzll(ch->free_map[w]);
        ch->free_map[w] &= ~(UINT64_C(1) << bit);
        ch->hint = w;
        ch->idle = false;
        if (++ch->n_used == k->blocks_per_chunk)
                partial_remove(k, ch);
        p->used_bytes += k->block_bytes;

        size_t off = k->first_block + ((size_t) w * 64 + bit) * k->block_bytes;
        unsigned first, last;
        block_pages(off, k->block_bytes, &first, &last);
        for (unsigned i = first; i <= last; i++)
                if (ch->page_used[i]++ == 0) {
                        ch->idle_pages &= ~(UINT64_C(1) << i);
                        /* A page given back faults in again, zeroed: its blocks hold nothing yet. */
                        if (ch->released & (UINT64_C(1) << i))
                                ch->released &= ~(UINT64_C(1) << i);
                        else
                                p->idle_pages--;
                }
        return (uint8_t *) ch + off;
}

/* Pages of a chunk no block touches that are still resident. */
static unsigned chunk_idle_pages(const PoolChunk *ch) {
        unsigned n = 0;
        for (unsigned i = 0; i < chunk_pages(); i++)
                n += ch->page_used[i] == 0 && !(ch->released & (UINT64_C(1) << i));
        return n;
}

static void chunk_unmap(ChunkPool *p, PoolChunk *ch) {
        if (ch->partial)
                partial_remove(&p->classes[ch->size_class], ch);
        if (ch->all_prev)
                ch->all_prev->all_next = ch->all_next;
        else
                p->chunks = ch->all_next;
        if (ch->all_next)
                ch->all_next->all_prev = ch->all_prev;
        p->idle_pages -= chunk_idle_pages(ch);
        p->n_chunks--;
        (void) munmap(ch, CHUNK_BYTES);
}

void chunkpool_free(ChunkPool *p, void *block) {
        if (!block)
                return;
        PoolChunk *ch = (PoolChunk *) ((uintptr_t) block & ~(uintptr_t) (CHUNK_BYTES - 1));
        PoolClass *k = &p->classes[ch->size_class];
        size_t off = (size_t) ((uint8_t *) block - (uint8_t *) ch);
        size_t i = (off - k->first_block) / k->block_bytes;

        assert(!(ch->free_map[i / 64] & (UINT64_C(1) << (i % 64))));
        ch->free_map[i / 64] |= UINT64_C(1) << (i % 64);
        p->used_bytes -= k->block_bytes;
        unsigned first, last;
        block_pages(off, k->block_bytes, &first, &last);
        for (unsigned j = first; j <= last; j++)
                if (--ch->page_used[j] == 0)
                        p->idle_pages++;
        if (!ch->partial)
                partial_push(k, ch);
        ch->n_used--;
}

/* An empty chunk goes unless it is all the room its class has left, so that a class whose last block
 * comes and goes does not map and unmap a chunk each time. */
static bool chunk_spare(const ChunkPool *p, const PoolChunk *ch) {
        const PoolClass *k = &p->classes[ch->size_class];
        return k->partial == ch && !ch->next;
}

size_t chunkpool_trim(ChunkPool *p) {
        size_t n = 0;

        for (PoolChunk *ch = p->chunks, *next; ch; ch = next) {
                next = ch->all_next;
                /* What was empty or unused at the last trim and still is goes now; what became so since
                 * waits for the next: blocks that come and go with every burst keep their pages. */
                if (ch->n_used == 0 && !chunk_spare(p, ch)) {
                        if (ch->idle) {
                                n += chunk_pages() - (unsigned) __builtin_popcountll(ch->released);
                                chunk_unmap(p, ch);
                                continue;
                        }
                        ch->idle = true;
                }
                if (p->idle_pages == 0)
                        continue;
                for (unsigned i = 0; i < chunk_pages();) {
                        unsigned j = i;
                        while (j < chunk_pages() && ch->page_used[j] == 0 && !(ch->released & (UINT64_C(1) << j)) &&
                               (ch->idle_pages & (UINT64_C(1) << j)))
                                j++;
                        if (j == i) {
                                if (ch->page_used[i] == 0 && !(ch->released & (UINT64_C(1) << i)))
                                        ch->idle_pages |= UINT64_C(1) << i;
                                i++;
                                continue;
                        }
                        /* Without it the pages only stay resident: nothing to undo. */
                        if (madvise((uint8_t *) ch + i * page_bytes(), (j - i) * page_bytes(), MADV_DONTNEED) == 0) {
                                for (unsigned b = i; b < j; b++)
                                        ch->released |= UINT64_C(1) << b;
                                p->idle_pages -= j - i;
                                n += j - i;
                        }
                        i = j;
                }
        }
        return n;
}

void chunkpool_done(ChunkPool *p) {
        while (p->chunks) {
                PoolChunk *ch = p->chunks;
                p->chunks = ch->all_next;
                (void) munmap(ch, CHUNK_BYTES);
        }
        for (unsigned c = 0; c < p->n_classes; c++)
                p->classes[c].partial = NULL;
        p->n_chunks = 0;
        p->used_bytes = 0;
        p->idle_pages = 0;
}

size_t chunkpool_mapped_bytes(const ChunkPool *p) {
        return p->n_chunks * CHUNK_BYTES;
}
