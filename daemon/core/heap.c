/* SPDX-License-Identifier: MIT */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "heap.h"
#include "keyindex.h"
#include "macro.h"
#include "backshift.h"

#define BLOCKS_MIN 1024u        /* slots of the block table at first; a power of two */
/* Timeline cells one image may keep (heap-timeline.h): 40 bytes each, 2.5 MiB, and about as much in a
 * Heap reply, well inside its 16 MiB. */
#define TIMELINE_CELLS_MAX (UINT32_C(1) << 16)

const uint64_t heap_lifetime_bounds_usec[HEAP_LIFETIME_BUCKETS - 1] = { 1000, 10000, 100000, 1000000, 10000000 };

/* A live sampled block: (image, ptr) -> the leaf it is charged to, what it stands for, and its allocation's
 * time and thread (for its lifetime). */
typedef struct BlockSlot {
        uint64_t ptr;                   /* 0: empty (no allocator hands out 0) */
        uint32_t image;
        uint32_t leaf;
        uint64_t bytes;                 /* weighted */
        uint64_t blocks;                /* weighted, in 1/STACK_HEAP_BLOCK_UNIT */
        uint64_t time_nsec;             /* of its allocation; 0: not known */
        int32_t tid;
        uint32_t thread_allocs;         /* MsHeapEvent's, 0: not known */
} BlockSlot;

struct Heap {
        StackTree *stacks;              /* owned; made at the first heap */
        size_t max_nodes, max_blocks, max_images;
        size_t share_divisor;           /* an image takes at most 1/share_divisor of the blocks and nodes */
        HeapImage *images;              /* owned, n_images of them, index = serial */
        size_t n_images, n_allocated;
        BlockSlot *blocks;              /* owned; linear probing, deletion shifts back */
        size_t n_slots, n_blocks;
        KeyIndex pids;                  /* pid -> its latest image; updated in place, never removed */
        /* (image, the source's stack id) -> the leaf its frames led to: a stack interned once per heap,
         * not per block. Removed with the image's blocks at its end. */
        KeyIndex stacks_seen;
        /* node -> its HeapLifetimes in lifetimes: the nodes sampled blocks were freed at. */
        KeyIndex lifetime_of;
        HeapLifetimes *lifetimes;       /* owned */
        size_t n_lifetimes, lifetimes_allocated;
        uint64_t images_dropped, invalid_events;
};

void heap_set_max_blocks(Heap *h, size_t max_blocks) {
        h->max_blocks = MAX(max_blocks, (size_t) 1);
}

Heap *heap_new(size_t max_nodes, size_t max_blocks, size_t max_images, bool shares) {
        Heap *h = calloc(1, sizeof(Heap));
        if (!h)
                return NULL;
        h->share_divisor = shares ? 4 : 1;
        h->max_nodes = MAX(max_nodes, (size_t) 16);
        h->max_blocks = MAX(max_blocks, (size_t) 1);
        h->max_images = MIN(MAX(max_images, (size_t) 1), (size_t) UINT32_MAX - 1);
        return h;
}

static void images_done(Heap *h) {
        for (size_t i = 0; i < h->n_images; i++) {
                free(h->images[i].cmdline);
                free(h->images[i].maps);
                free(h->images[i].growth);
                heap_timeline_done(&h->images[i].timeline);
        }
        free(h->images);
        h->images = NULL;
        h->n_images = h->n_allocated = 0;
}

Heap *heap_free(Heap *h) {
        if (!h)
                return NULL;
        images_done(h);
        stacktree_free(h->stacks);
        free(h->blocks);
        key_index_done(&h->pids);
        key_index_done(&h->stacks_seen);
        key_index_done(&h->lifetime_of);
        free(h->lifetimes);
        free(h);
        return NULL;
}

void heap_clear(Heap *h) {
        images_done(h);
        h->stacks = stacktree_free(h->stacks);
        free(h->blocks);
        h->blocks = NULL;
        h->n_slots = h->n_blocks = 0;
        key_index_done(&h->pids);
        key_index_done(&h->stacks_seen);
        key_index_done(&h->lifetime_of);
        h->n_lifetimes = 0;
        h->images_dropped = h->invalid_events = 0;
}

/* ---- pid -> image ------------------------------------------------------------------------------------- */

uint32_t heap_find(const Heap *h, int32_t pid) {
        return pid > 0 ? key_index_get(&h->pids, (uint64_t) pid) : HEAP_NONE;
}

/* The open heap of the event's process, or NULL (counted). */
static HeapImage *open_image(Heap *h, int32_t pid) {
        uint32_t i = heap_find(h, pid);
        if (i == HEAP_NONE || h->images[i].ended) {
                h->invalid_events++;
                return NULL;
        }
        return &h->images[i];
}

/* ---- Blocks ------------------------------------------------------------------------------------------- */

static size_t block_home_of(size_t n_slots, uint64_t ptr, uint32_t image) {
        return key_index_mix(ptr ^ ((uint64_t) image * UINT64_C(0x9E3779B97F4A7C15))) & (n_slots - 1);
}

static size_t block_home(const void *table, size_t i) {
        const Heap *h = table;
        const BlockSlot *s = &h->blocks[i];
        return s->ptr == 0 ? BACKSHIFT_EMPTY : block_home_of(h->n_slots, s->ptr, s->image);
}

static void block_move(void *table, size_t to, size_t from) {
        Heap *h = table;
        h->blocks[to] = h->blocks[from];
}

static void block_clear(void *table, size_t i) {
        Heap *h = table;
        h->blocks[i].ptr = 0;
}

/* The slot of (image, ptr), or the empty slot where it would go. */
static size_t block_find(const Heap *h, uint32_t image, uint64_t ptr) {
        size_t i = block_home_of(h->n_slots, ptr, image);
        while (h->blocks[i].ptr != 0 && (h->blocks[i].ptr != ptr || h->blocks[i].image != image))
                i = (i + 1) & (h->n_slots - 1);
        return i;
}

static int blocks_grow(Heap *h) {
        size_t n = h->n_slots ? h->n_slots * 2 : BLOCKS_MIN;
        BlockSlot *slots = calloc(n, sizeof(BlockSlot));
        if (!slots)
                return -ENOMEM;
        BlockSlot *old = h->blocks;
        size_t old_n = h->n_slots;
        h->blocks = slots;
        h->n_slots = n;
        for (size_t i = 0; i < old_n; i++)
                if (old[i].ptr != 0)
                        h->blocks[block_find(h, old[i].image, old[i].ptr)] = old[i];
        free(old);
        return 0;
}

static void block_remove(Heap *h, size_t i) {
        backshift_delete(h, h->n_slots, i, block_home, block_move, block_clear);
        h->n_blocks--;
}

/* ---- (image, stack id) -> leaf --------------------------------------------------------------------- */

static uint64_t stack_key(uint32_t image, uint32_t id) {
        return (uint64_t) (image + 1) << 32 | id;
}

/* The leaf remembered for the key, or STACK_NODE_NONE. */
static uint32_t stack_lookup(const Heap *h, uint64_t key) {
        uint32_t leaf = key_index_get(&h->stacks_seen, key);
        return leaf == KEY_INDEX_NONE ? STACK_NODE_NONE : leaf;
}

/* Remembers a leaf; forgotten on OOM (the frames are interned again next time). */
static void stack_remember(Heap *h, uint64_t key, uint32_t leaf) {
        (void) key_index_put(&h->stacks_seen, key, leaf);
}

/* The image ended: its ids name nothing any more. */
static void stacks_forget(Heap *h, uint32_t image) {
        KeyIndex *x = &h->stacks_seen;
        for (size_t i = 0; i < x->n_slots;) {
                /* A removal shifts a later key back into slot i: look at it again. */
                if (x->keys[i] >> 32 == (uint64_t) image + 1 && key_index_remove(x, x->keys[i]))
                        continue;
                i++;
        }
}

void heap_block_weight(uint64_t bytes, uint64_t sample_interval, uint64_t *ret_bytes, uint64_t *ret_blocks) {
        if (sample_interval <= 1) {
                *ret_bytes = bytes;
                *ret_blocks = STACK_HEAP_BLOCK_UNIT;
                return;
        }
        /* The library counts a block of 0 bytes as 1 towards the next sample. */
        double s = (double) MAX(bytes, (uint64_t) 1);
        double p = -expm1(-s / (double) sample_interval);
        *ret_bytes = (uint64_t) llround((double) bytes / p);
        *ret_blocks = (uint64_t) llround(STACK_HEAP_BLOCK_UNIT / p);
}

/* What one image may take of a bound shared by all: with shares a quarter (all of it could go to one
 * process only at the others' cost). */
static size_t image_share(const Heap *h, size_t bound) {
        return MAX(bound / h->share_divisor, (size_t) 1);
}

/* ---- Events ------------------------------------------------------------------------------------------- */

static void mark_peak(HeapImage *img) {
        img->gen++;
}

/* Nanoseconds since the image began; its first records may be older than its START. */
static uint64_t image_time(const HeapImage *img, const MsEvent *e) {
        uint64_t t = e->heap.time_nsec ?: e->timestamp_nsec;
        return t > img->start_nsec ? t - img->start_nsec : 0;
}

/* The lifetimes of a node of image's, made on first use; NULL without memory (that free is not timed). */
static HeapLifetimes *lifetimes_of(Heap *h, uint32_t image, uint32_t node) {
        uint32_t i = key_index_get(&h->lifetime_of, node);

        if (i != KEY_INDEX_NONE)
                return &h->lifetimes[i];
        if (greedy_realloc(&h->lifetimes, &h->lifetimes_allocated, h->n_lifetimes + 1, sizeof(HeapLifetimes), 64) < 0 ||
            key_index_put(&h->lifetime_of, node, (uint32_t) h->n_lifetimes) < 0)
                return NULL;
        h->lifetimes[h->n_lifetimes] = (HeapLifetimes) { .node = node, .image = image };
        return &h->lifetimes[h->n_lifetimes++];
}

/* A sampled block's free at e (a FREE event): how long it lived, and whether it was temporary. Frees not
 * stamped (another source, or the block's free was lost) have no lifetime. */
static void count_lifetime(Heap *h, const BlockSlot *b, const MsEvent *e) {
        uint64_t freed = e->heap.time_nsec;

        if (b->time_nsec == 0 || freed < b->time_nsec)
                return;
        HeapLifetimes *l = lifetimes_of(h, b->image, b->leaf);
        if (!l)
                return;
        uint64_t usec = (freed - b->time_nsec) / 1000;
        unsigned i = 0;
        while (i < HEAP_LIFETIME_BUCKETS - 1 && usec >= heap_lifetime_bounds_usec[i])
                i++;
        l->freed[i] = count_add(l->freed[i], b->blocks);
        if (b->thread_allocs != 0 && b->thread_allocs == e->heap.thread_allocs && b->tid == e->tid &&
            freed - b->time_nsec < HEAP_TEMPORARY_NSEC)
                l->temporary = count_add(l->temporary, b->blocks);
}

/* A live block goes: freed at e (its lifetime counted when known), or at e without a free (lost). */
static void release_block(Heap *h, HeapImage *img, size_t slot, const MsEvent *e, bool freed) {
        BlockSlot *b = &h->blocks[slot];
        stacktree_heap_apply(h->stacks, b->leaf, -(int64_t) b->bytes, -(int64_t) b->blocks, img->gen);
        heap_timeline_add(&img->timeline, image_time(img, e), b->leaf, -(int64_t) b->bytes, -(int64_t) b->blocks);
        if (freed)
                count_lifetime(h, b, e);
        img->sampled_blocks--;
        block_remove(h, slot);
}

static void handle_start(Heap *h, const MsEvent *e) {
        const MsHeapEvent *x = &e->heap;
        uint32_t prev = heap_find(h, e->pid);

        /* A heap of the same pid still open: the process exec'd (its old heap is gone with the old image). */
        if (prev != HEAP_NONE && !h->images[prev].ended) {
                h->images[prev].ended = true;
                h->images[prev].end = MS_HEAP_END_EXEC;
                h->images[prev].end_nsec = e->timestamp_nsec;
                stacks_forget(h, prev);
        }
        if (e->pid <= 0 || h->n_images >= h->max_images) {
                h->images_dropped++;
                return;
        }
        if (!h->stacks) {
                h->stacks = stacktree_new(h->max_nodes, false, NULL, NULL);
                if (!h->stacks || stacktree_enable_heap(h->stacks) < 0) {
                        h->stacks = stacktree_free(h->stacks);
                        h->images_dropped++;
                        return;
                }
        }
        if (ARRAY_GROW_ONE(h->images, h->n_allocated, h->n_images, 16) < 0) {
                h->images_dropped++;
                return;
        }
        uint32_t serial = (uint32_t) h->n_images;
        if (key_index_put(&h->pids, (uint64_t) e->pid, serial) < 0) {
                h->images_dropped++;
                return;
        }
        HeapImage *img = &h->images[serial];
        *img = (HeapImage) {
                .pid = e->pid,
                .serial = serial,
                .sample_interval = MIN(MAX(x->sample_interval, (uint64_t) 1), HEAP_EVENT_SAMPLE_INTERVAL_MAX),
                /* When the source took the heap: the library waits for it before the program goes on, so
                 * every record is younger. */
                .start_nsec = e->timestamp_nsec,
                .cmdline = x->cmdline ? strdup(x->cmdline) : NULL,
                .maps = x->maps ? strdup(x->maps) : NULL,
        };
        if (x->comm)
                (void) snprintf(img->comm, sizeof(img->comm), "%s", x->comm);
        heap_timeline_init(&img->timeline, image_share(h, TIMELINE_CELLS_MAX));
        h->n_images++;
}

static void handle_alloc(Heap *h, const MsEvent *e) {
        const MsHeapEvent *x = &e->heap;
        HeapImage *img = open_image(h, e->pid);

        if (!img)
                return;
        if (x->ptr == 0 || (x->stack.n_frames > 0 && !x->stack.frames) || x->bytes > HEAP_BLOCK_BYTES_MAX) {
                h->invalid_events++;
                return;
        }
        if (x->peak == MS_HEAP_PEAK_BEFORE)
                mark_peak(img);
        img->sampled_allocs++;

        /* An image holds at most a share of the blocks, so that one process's heap (a hostile or broken
         * one) cannot crowd out the others'; what it cannot keep is its own loss (dropped). */
        if (h->n_blocks >= h->max_blocks || img->sampled_blocks >= image_share(h, h->max_blocks) ||
            ((h->n_slots == 0 || (h->n_blocks + 1) * 2 > h->n_slots) && blocks_grow(h) < 0)) {
                img->dropped++;
                goto out;
        }
        size_t slot = block_find(h, img->serial, x->ptr);
        if (h->blocks[slot].ptr != 0) {
                /* Still live: the free of the block that had this address was lost. */
                img->replaced++;
                release_block(h, img, slot, e, false);
                slot = block_find(h, img->serial, x->ptr);
        }

        uint64_t key = x->stack_id != 0 ? stack_key(img->serial, x->stack_id) : 0;
        uint32_t leaf = key != 0 ? stack_lookup(h, key) : STACK_NODE_NONE;
        if (leaf == STACK_NODE_NONE) {
                uint64_t none = MS_FRAME_HEAP_NO_STACK;
                const uint64_t *frames = x->stack.n_frames > 0 ? x->stack.frames : &none;
                size_t n = x->stack.n_frames > 0 ? x->stack.n_frames : 1;
                /* Likewise a share of the stack tree's nodes: past it, the image's new stacks go to one
                 * node of their own ("stack table full"), the others' keep theirs. */
                size_t before = stacktree_size(h->stacks);
                if (img->nodes >= image_share(h, h->max_nodes)) {
                        uint64_t full = MS_FRAME_HEAP_STACK_FULL;
                        leaf = stacktree_intern(h->stacks, &full, 1, 0, img->serial);
                } else
                        leaf = stacktree_intern(h->stacks, frames, n, 0, img->serial);
                img->nodes += stacktree_size(h->stacks) - before;
                if (key != 0)
                        stack_remember(h, key, leaf);
        }
        uint64_t bytes, blocks;
        heap_block_weight(x->bytes, img->sample_interval, &bytes, &blocks);

        h->blocks[slot] = (BlockSlot) { .ptr = x->ptr, .image = img->serial, .leaf = leaf, .bytes = bytes,
                                        .blocks = blocks, .time_nsec = x->time_nsec, .tid = e->tid,
                                        .thread_allocs = x->thread_allocs };
        h->n_blocks++;
        img->sampled_blocks++;
        stacktree_heap_apply(h->stacks, leaf, (int64_t) bytes, (int64_t) blocks, img->gen);
        heap_timeline_add(&img->timeline, image_time(img, e), leaf, (int64_t) bytes, (int64_t) blocks);
out:
        if (x->peak == MS_HEAP_PEAK_AFTER)
                mark_peak(img);
}

static void handle_free(Heap *h, const MsEvent *e) {
        const MsHeapEvent *x = &e->heap;
        HeapImage *img = open_image(h, e->pid);

        if (!img)
                return;
        if (x->peak == MS_HEAP_PEAK_BEFORE)
                mark_peak(img);
        img->sampled_frees++;
        size_t slot = h->n_slots > 0 ? block_find(h, img->serial, x->ptr) : 0;
        if (h->n_slots > 0 && h->blocks[slot].ptr != 0)
                release_block(h, img, slot, e, true);
        else
                img->unmatched_frees++;
        if (x->peak == MS_HEAP_PEAK_AFTER)
                mark_peak(img);
}

/* A point of the heap's growth at time nsec, when a step passed since the last one (the last point always
 * moves to the latest count, so that the series ends where the heap is). */
static void add_growth(HeapImage *img, uint64_t nsec) {
        uint64_t since = nsec > img->start_nsec ? (nsec - img->start_nsec) / 1000 : 0;
        HeapPoint p = { .msec = (uint32_t) MIN(since / 1000, (uint64_t) UINT32_MAX),
                        .live_bytes = img->counters.live_bytes };

        if (!img->growth) {
                img->growth = calloc(HEAP_GROWTH_POINTS, sizeof(HeapPoint));
                if (!img->growth)
                        return;         /* no growth series, counts as ever */
                img->growth_step_usec = HEAP_GROWTH_STEP_USEC;
        }
        if (img->n_growth > 1 &&
            since < (uint64_t) img->growth[img->n_growth - 2].msec * 1000 + img->growth_step_usec) {
                img->growth[img->n_growth - 1] = p;
                return;
        }
        if (img->n_growth == HEAP_GROWTH_POINTS) {
                /* Half as many points, twice as far apart: every other one goes, the last stays. */
                uint32_t n = 0;
                for (uint32_t i = 0; i < HEAP_GROWTH_POINTS; i += 2)
                        img->growth[n++] = img->growth[i];
                img->growth[n - 1] = img->growth[HEAP_GROWTH_POINTS - 1];
                img->n_growth = n;
                img->growth_step_usec *= 2;
        }
        img->growth[img->n_growth++] = p;
}

static void handle_state(Heap *h, const MsEvent *e) {
        HeapImage *img = open_image(h, e->pid);

        if (!img)
                return;
        if (!e->heap.counters) {
                h->invalid_events++;
                return;
        }
        img->counters = *e->heap.counters;
        add_growth(img, e->timestamp_nsec);
        if (e->heap.peak != MS_HEAP_PEAK_NONE)
                mark_peak(img);
}

static void handle_maps(Heap *h, const MsEvent *e) {
        HeapImage *img = open_image(h, e->pid);
        char *maps;

        if (!img || !e->heap.maps)
                return;
        maps = strdup(e->heap.maps);
        if (!maps)
                return;         /* the older maps still name what they named */
        free(img->maps);
        img->maps = maps;
}

/* The heap is over: its blocks can be freed no more, so they leave the table; the tree keeps what they
 * held (what was never freed). */
static void handle_end(Heap *h, const MsEvent *e) {
        HeapImage *img = open_image(h, e->pid);

        if (!img)
                return;
        img->ended = true;
        img->end = e->heap.end;
        img->end_nsec = e->timestamp_nsec;
        stacks_forget(h, img->serial);
        if (img->sampled_blocks == 0)
                return;
        for (size_t i = 0; i < h->n_slots;) {
                if (h->blocks[i].ptr != 0 && h->blocks[i].image == img->serial) {
                        /* The slot is refilled by the shift: look at it again. */
                        backshift_delete(h, h->n_slots, i, block_home, block_move, block_clear);
                        h->n_blocks--;
                        continue;
                }
                i++;
        }
}

void heap_handle_event(Heap *h, const MsEvent *e) {
        switch (e->type) {
        case MS_EVENT_HEAP_START:
                handle_start(h, e);
                break;
        case MS_EVENT_HEAP_ALLOC:
                handle_alloc(h, e);
                break;
        case MS_EVENT_HEAP_FREE:
                handle_free(h, e);
                break;
        case MS_EVENT_HEAP_STATE:
                handle_state(h, e);
                break;
        case MS_EVENT_HEAP_MAPS:
                handle_maps(h, e);
                break;
        case MS_EVENT_HEAP_END:
                handle_end(h, e);
                break;
        default:
                break;
        }
}

/* ---- Readers ------------------------------------------------------------------------------------------ */

size_t heap_image_count(const Heap *h) {
        return h->n_images;
}

const HeapImage *heap_image(const Heap *h, uint32_t serial) {
        return serial < h->n_images ? &h->images[serial] : NULL;
}

const StackTree *heap_stacktree(const Heap *h) {
        return h->stacks;
}

uint32_t heap_scope_node(const Heap *h, uint32_t serial) {
        if (!h->stacks || serial >= h->n_images)
                return STACK_NODE_NONE;
        return stacktree_find_child(h->stacks, STACK_NODE_ROOT, STACK_FRAME_PROCESS, serial);
}

size_t heap_lifetimes_count(const Heap *h) {
        return h->n_lifetimes;
}

const HeapLifetimes *heap_lifetimes(const Heap *h, size_t i) {
        return i < h->n_lifetimes ? &h->lifetimes[i] : NULL;
}

static double ratio(uint64_t exact, uint64_t estimate) {
        return estimate > 0 && exact > 0 ? (double) exact / (double) estimate : 1.0;
}

HeapScale heap_scale(const Heap *h, uint32_t serial) {
        const HeapImage *img = heap_image(h, serial);
        uint32_t scope = heap_scope_node(h, serial);
        HeapScale s = { 1.0, 1.0, 1.0, 1.0 };
        uint64_t blocks, max_bytes, max_blocks;

        if (!img || scope == STACK_NODE_NONE)
                return s;
        stacktree_heap_values(h->stacks, scope, img->gen, &blocks, &max_bytes, &max_blocks);
        uint64_t live_blocks = img->counters.allocs - MIN(img->counters.frees, img->counters.allocs);
        s.now_bytes = ratio(img->counters.live_bytes, stacktree_pages(h->stacks, scope).current);
        s.now_blocks = ratio(live_blocks * STACK_HEAP_BLOCK_UNIT, blocks);
        s.max_bytes = ratio(img->counters.peak_bytes, max_bytes);
        /* The number of blocks at the maximum is not counted exactly: the bytes' factor stands for it, held
         * to what can have been live then (never more blocks than were allocated). */
        s.max_blocks = s.max_bytes;
        double most = (double) img->counters.allocs * STACK_HEAP_BLOCK_UNIT;
        if (img->counters.allocs > 0 && max_blocks > 0 && (double) max_blocks * s.max_blocks > most)
                s.max_blocks = most / (double) max_blocks;
        return s;
}

void heap_get_stats(const Heap *h, HeapStats *ret) {
        *ret = (HeapStats) {
                .n_images = h->n_images,
                .images_dropped = h->images_dropped,
                .live_blocks = h->n_blocks,
                .invalid_events = h->invalid_events,
        };
}

size_t heap_memory_bytes(const Heap *h) {
        size_t b = sizeof(Heap) + h->n_allocated * sizeof(HeapImage) + h->n_slots * sizeof(BlockSlot) +
                   key_index_memory_bytes(&h->pids) + key_index_memory_bytes(&h->stacks_seen) +
                   key_index_memory_bytes(&h->lifetime_of) + h->lifetimes_allocated * sizeof(HeapLifetimes) +
                   (h->stacks ? stacktree_memory_bytes(h->stacks) : 0);
        for (size_t i = 0; i < h->n_images; i++)
                b += (h->images[i].maps ? strlen(h->images[i].maps) + 1 : 0) +
                     (h->images[i].growth ? HEAP_GROWTH_POINTS * sizeof(HeapPoint) : 0) +
                     heap_timeline_memory_bytes(&h->images[i].timeline);
        return b;
}
