/* SPDX-License-Identifier: MIT */

/*
 * libmemstrack-heap.so: preloaded into a process (memstrackctl record), it sees every call of the malloc
 * family, keeps the exact counters in a region it shares with memstrackd's heap source (heap-abi.h) and
 * writes a record with a call stack for a sample of the bytes allocated (one per sample_interval bytes on
 * average, a Poisson process over the bytes as tcmalloc and jemalloc sample; every call with interval 1),
 * and for the free of each sampled block. It records and sends; the accounting is the daemon's.
 *
 * What it must never do, and how it does not:
 *   - allocate with malloc: its tables are mmap()ed, dlsym()'s own allocations come from a static
 *     bootstrap buffer before the real functions are known;
 *   - recurse or deadlock: a per-thread guard (initial-exec TLS, no allocation on first use) marks a call
 *     running on the thread. A call that finds it set (a signal handler that allocates, or an allocation
 *     made by what the library calls itself) still counts exactly, takes no stack and only try-locks; a
 *     record it cannot write is counted as lost;
 *   - be seen by a child that forks without exec: the child stops recording (pthread_atfork) and unmaps
 *     the region, so it cannot write the parent's records. A program it runs is recorded as its own process
 *     (LD_PRELOAD is inherited);
 *   - block for good: a full ring is waited on only while the daemon keeps polling, else the record is
 *     dropped and counted;
 *   - hold a file descriptor: the socket and the memfd are closed once the daemon has the region, so a
 *     program that closes every descriptor or lowers RLIMIT_NOFILE changes nothing.
 */

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "channel.h"
#include "heap-abi.h"
#include "library.h"
#include "live.h"
#include "spin-lock.h"
#include "unwind.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- The real functions ------------------------------------------------------------------------------- */

typedef void *(*MallocFn)(size_t);
typedef void *(*CallocFn)(size_t, size_t);
typedef void *(*ReallocFn)(void *, size_t);
typedef void (*FreeFn)(void *);
typedef void *(*MemalignFn)(size_t, size_t);
typedef int (*PosixMemalignFn)(void **, size_t, size_t);
typedef void *(*VallocFn)(size_t);

static struct {
        MallocFn malloc;
        CallocFn calloc;
        ReallocFn realloc;
        FreeFn free;
        MemalignFn memalign;
        MemalignFn aligned_alloc;
        PosixMemalignFn posix_memalign;
        VallocFn valloc;
        VallocFn pvalloc;
} real;

/* dlsym() allocates (its error buffer) before it can tell where malloc is: such blocks come from here,
 * with their size in front, and are never given to the real allocator. */
#define BOOTSTRAP_BYTES (64u * 1024u)
static _Alignas(16) char bootstrap[BOOTSTRAP_BYTES];
static size_t bootstrap_used;

static bool is_bootstrap(const void *p) {
        return (const char *) p >= bootstrap && (const char *) p < bootstrap + BOOTSTRAP_BYTES;
}

static void *bootstrap_alloc(size_t n) {
        size_t need = 16 + ((n + 15) & ~(size_t) 15);
        size_t at = __atomic_fetch_add(&bootstrap_used, need, __ATOMIC_RELAXED);

        if (n > BOOTSTRAP_BYTES || at + need > BOOTSTRAP_BYTES)
                return NULL;
        memcpy(bootstrap + at, &n, sizeof(n));
        return bootstrap + at + 16;     /* static storage is zero: calloc's too */
}

static size_t bootstrap_size(const void *p) {
        size_t n;
        memcpy(&n, (const char *) p - 16, sizeof(n));
        return n;
}

/* ---- State -------------------------------------------------------------------------------------------- */

typedef enum State {
        STATE_UNINITIALIZED,
        STATE_INITIALIZING,
        STATE_RECORDING,
        STATE_OFF,              /* not asked to, refused or stopped by the daemon, or a forked child */
} State;

static int state = STATE_UNINITIALIZED;
static int objects_lock;
static uint64_t sample_interval = HEAP_SAMPLE_INTERVAL_DEFAULT, seed;
static uintptr_t own_text_start, own_text_end;  /* our code: frames inside it are left out of stacks */
static int stack_lock;

static TLS unsigned in_call;            /* calls running on this thread (more than one: nested) */
static TLS int64_t bytes_until_sample;
static TLS uint64_t rng;
static TLS HeapAbiThread *my_counts;
static TLS bool my_counts_shared;       /* the last slot, shared by the threads beyond the slots */

/* This thread's counts: a slot of its own, claimed at its first call, or the shared last one. */
static inline HeapAbiThread *counts(void) {
        if (unlikely(!my_counts)) {
                HeapAbiHeader *h = channel.header;
                uint64_t i = __atomic_fetch_add(&h->threads_used, 1, __ATOMIC_RELAXED);
                my_counts_shared = i >= h->n_thread_slots - 1;
                my_counts = &channel.thread_slots[my_counts_shared ? h->n_thread_slots - 1 : i];
        }
        return my_counts;
}

/* Adds to a count of this thread's own: a plain store, as no one else writes it (the daemon reads). */
static inline void count_own(uint64_t *c, uint64_t n) {
        __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* One call's counts; nested: made inside another call on this thread, which may be amid count_own(). */
static inline void count_call(bool nested, bool alloc, uint64_t bytes) {
        HeapAbiThread *t = counts();

        if (likely(!nested && !my_counts_shared)) {
                if (alloc) {
                        count_own(&t->allocs, 1);
                        count_own(&t->alloc_bytes, bytes);
                } else
                        count_own(&t->frees, 1);
                return;
        }
        if (alloc) {
                __atomic_fetch_add(&t->nested_allocs, 1, __ATOMIC_RELAXED);
                __atomic_fetch_add(&t->nested_alloc_bytes, bytes, __ATOMIC_RELAXED);
        } else
                __atomic_fetch_add(&t->nested_frees, 1, __ATOMIC_RELAXED);
}

static uint64_t threads_seeded;

static uint64_t next_random(void) {
        /* Each thread its own stream: the seed and the thread's order of first use (reproducible with a
         * fixed seed, as far as the threads' order is). */
        if (unlikely(rng == 0))
                rng = mix64(seed + __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED) *
                                           UINT64_C(0x9E3779B97F4A7C15)) | 1;
        /* xorshift64* */
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * UINT64_C(2685821657736338717);
}

/* -ln(u) for u uniform in (0, 1], without libm: log2 from the exponent and an odd series in
 * t = (m - 1) / (m + 1) for the mantissa m (error below 1e-5, far inside the sampling noise). */
static double exponential_draw(void) {
        double u = (double) ((next_random() >> 11) + 1) * 0x1.0p-53;
        uint64_t bits;

        memcpy(&bits, &u, sizeof(bits));
        int exponent = (int) ((bits >> 52) & 0x7ff) - 1023;
        bits = (bits & ~(UINT64_C(0x7ff) << 52)) | (UINT64_C(1023) << 52);
        double m;
        memcpy(&m, &bits, sizeof(m));
        double t = (m - 1.0) / (m + 1.0), t2 = t * t;
        double ln_m = 2.0 * t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 / 9))));
        return -(exponent * 0.6931471805599453 + ln_m);
}

static int64_t next_sample_distance(void) {
        double d = exponential_draw() * (double) sample_interval;
        return d < 1.0 ? 1 : d > (double) INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t) d;
}

/* ---- Sampled blocks ----------------------------------------------------------------------------------- */

/*
 * The blocks that have a record, so that their frees get one too: a set of pointers in shards, each an
 * open-addressing table under its own lock. The first tables are small and side by side (32 KiB in all),
 * so that a sampled block's insert and removal find their slot in the cache: a table spread over pages
 * of its own missed it on almost every sampled call. A shard that fills moves to mmap()ed memory, twice
 * the size each time. In sampled mode most frees are of blocks without a record: a filter of one bit per
 * hash bucket (2 KiB, small enough to stay in the first-level cache beside a busy program) answers them
 * without a lock. A bucket's members are all in one shard, which keeps their count under its lock and
 * clears the bit when the last one goes. In every-call mode every live block is in the set, and a free of
 * a pointer not in it is a double free or a pointer never handed out here.
 */
#define SHARDS 64u
#define SHARD_FIRST_SLOTS 64u
#define FILTER_BITS 14u

typedef struct Shard {
        int lock;
        uint64_t *slots;                /* 0: empty */
        size_t capacity, used;
} Shard;

static Shard shards[SHARDS];
static _Alignas(64) uint64_t first_slots[SHARDS][SHARD_FIRST_SLOTS];
static _Alignas(64) uint64_t filter[(1u << FILTER_BITS) / 64];
static uint16_t filter_members[1u << FILTER_BITS];     /* under the bucket's shard's lock; stops at the top */

/* Where a pointer's filter bit and shard are: one multiply (Fibonacci hashing), as every free asks. */
static uint64_t bucket_hash(uint64_t ptr) {
        return (ptr >> 4) * UINT64_C(0x9E3779B97F4A7C15);
}

static size_t bucket_of(uint64_t h) {
        return (size_t) (h >> (64 - FILTER_BITS));
}

/* A bucket's shard: its low bits, so that the bucket's members share a lock. */
static Shard *shard_of(uint64_t h) {
        return &shards[bucket_of(h) & (SHARDS - 1)];
}

static bool filter_maybe(uint64_t h) {
        size_t b = bucket_of(h);
        return (__atomic_load_n(&filter[b / 64], __ATOMIC_RELAXED) >> (b % 64)) & 1;
}

/* Under the bucket's shard's lock; other bits of the word belong to other shards. */
static void filter_add(uint64_t h) {
        size_t b = bucket_of(h);
        if (filter_members[b] == UINT16_MAX)
                return;
        if (filter_members[b]++ == 0)
                __atomic_fetch_or(&filter[b / 64], UINT64_C(1) << (b % 64), __ATOMIC_RELAXED);
}

static void filter_sub(uint64_t h) {
        size_t b = bucket_of(h);
        if (filter_members[b] == UINT16_MAX)
                return;         /* "maybe" for good, never a wrong "no" */
        if (--filter_members[b] == 0)
                __atomic_fetch_and(&filter[b / 64], ~(UINT64_C(1) << (b % 64)), __ATOMIC_RELAXED);
}

static size_t slot_home(const Shard *s, uint64_t ptr) {
        return (mix64(ptr) >> 6) & (s->capacity - 1);
}

static bool shard_grow(Shard *s) {
        uint64_t *first = first_slots[s - shards];

        if (s->capacity == 0) {
                s->slots = first;
                s->capacity = SHARD_FIRST_SLOTS;
                return true;
        }
        size_t capacity = s->capacity * 2;
        uint64_t *slots = mmap(NULL, capacity * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (slots == MAP_FAILED)
                return false;
        uint64_t *old = s->slots;
        size_t old_capacity = s->capacity;
        s->slots = slots;
        s->capacity = capacity;
        for (size_t i = 0; i < old_capacity; i++) {
                if (old[i] == 0)
                        continue;
                size_t j = slot_home(s, old[i]);
                while (slots[j] != 0)
                        j = (j + 1) & (capacity - 1);
                slots[j] = old[i];
        }
        if (old != first)
                (void) munmap(old, old_capacity * sizeof(uint64_t));
        return true;
}

/* false: not kept (counted by the caller). */
static bool set_insert(uint64_t ptr, bool nested) {
        uint64_t h = bucket_hash(ptr);
        Shard *s = shard_of(h);
        bool ok = false;

        if (!lock_take(&s->lock, nested))
                return false;
        if ((s->used + 1) * 2 > s->capacity && !shard_grow(s))
                goto out;
        size_t i = slot_home(s, ptr);
        while (s->slots[i] != 0 && s->slots[i] != ptr)
                i = (i + 1) & (s->capacity - 1);
        if (s->slots[i] == 0) {
                s->slots[i] = ptr;
                s->used++;
                if (sample_interval > 1)
                        filter_add(h);
        }
        ok = true;
out:
        lock_release(&s->lock);
        return ok;
}

/* 1: was in the set (now removed), 0: was not, -1: could not look (nested, lock held). */
static int set_remove(uint64_t ptr, bool nested) {
        uint64_t h = bucket_hash(ptr);
        Shard *s = shard_of(h);

        if (sample_interval > 1 && !filter_maybe(h))
                return 0;
        if (!lock_take(&s->lock, nested))
                return -1;
        if (s->capacity == 0) {
                lock_release(&s->lock);
                return 0;
        }
        size_t i = slot_home(s, ptr);
        while (s->slots[i] != 0 && s->slots[i] != ptr)
                i = (i + 1) & (s->capacity - 1);
        if (s->slots[i] == 0) {
                lock_release(&s->lock);
                return 0;
        }
        /* Backward-shift deletion: later members of the run that would become unreachable move back. */
        size_t hole = i;
        for (size_t j = (hole + 1) & (s->capacity - 1); s->slots[j] != 0; j = (j + 1) & (s->capacity - 1)) {
                size_t home = slot_home(s, s->slots[j]);
                bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (stays)
                        continue;
                s->slots[hole] = s->slots[j];
                hole = j;
        }
        s->slots[hole] = 0;
        s->used--;
        if (sample_interval > 1)
                filter_sub(h);
        lock_release(&s->lock);
        return 1;
}

/* ---- Stacks ------------------------------------------------------------------------------------------- */

static uint64_t stack_hash(const uint64_t *f, size_t n) {
        uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ n;
        for (size_t i = 0; i < n; i++)
                h = mix64(h ^ f[i]);
        return h ?: 1;
}

static bool stack_equal(const HeapAbiStackSlot *s, const uint64_t *f, size_t n) {
        if (s->n_frames != n || (uint64_t) s->offset + n > channel.header->n_frames)
                return false;
        return memcmp(channel.frames + s->offset, f, n * sizeof(uint64_t)) == 0;
}

/* The id of this stack in the shared table, adding it. Published slots are never changed: a lookup
 * reads them without the lock. */
static uint32_t stack_id(const uint64_t *f, size_t n, bool nested, bool *ret_new) {
        uint64_t h = stack_hash(f, n), mask = channel.header->n_stack_slots - 1;
        bool locked = false;
        uint32_t id = HEAP_STACK_FULL;

        for (size_t i = h & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
                HeapAbiStackSlot *s = &channel.stack_slots[i];
                uint64_t sh = __atomic_load_n(&s->hash, __ATOMIC_ACQUIRE);

                if (sh == h && stack_equal(s, f, n)) {
                        id = (uint32_t) i + HEAP_STACK_FIRST;
                        break;
                }
                if (sh != 0)
                        continue;
                /* Empty: take the lock and look at this slot again, another thread may be filling it. */
                if (!locked) {
                        if (!lock_take(&stack_lock, nested))
                                break;
                        locked = true;
                        i = (i - 1) & mask;     /* the same slot once more, now under the lock */
                        probes--;
                        continue;
                }
                uint64_t used = channel.header->frames_used;
                if (used + n > channel.header->n_frames)
                        break;
                memcpy(channel.frames + used, f, n * sizeof(uint64_t));
                channel.header->frames_used = used + n;
                s->offset = (uint32_t) used;
                s->n_frames = (uint32_t) n;
                __atomic_store_n(&s->hash, h, __ATOMIC_RELEASE);
                id = (uint32_t) i + HEAP_STACK_FIRST;
                *ret_new = true;
                break;
        }
        if (id == HEAP_STACK_FULL)
                __atomic_fetch_add(&channel.header->stacks_full, 1, __ATOMIC_RELAXED);
        if (locked)
                lock_release(&stack_lock);
        return id;
}

/* ---- Loaded objects ------------------------------------------------------------------------------------- */

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
        uint64_t *n = data;
        const char *path = info->dlpi_name;
        char exe[HEAP_OBJECT_PATH_MAX];

        if (!path || !*path) {
                /* The main program: its name is what /proc/self/exe says. */
                ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                if (k <= 0)
                        return 0;
                exe[k] = '\0';
                path = exe;
        }
        char resolved[PATH_MAX];
        /* dlopen("dir/lib.so") keeps the name relative: as the loader found it, from here. */
        if (path[0] != '/' && strchr(path, '/') && realpath(path, resolved))
                path = resolved;
        if (path[0] != '/' || strlen(path) >= HEAP_OBJECT_PATH_MAX)
                return 0;       /* the vDSO ("linux-vdso.so.1"), or a path too long to keep */
        for (int i = 0; i < info->dlpi_phnum && *n < channel.header->n_objects_max; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type != PT_LOAD)
                        continue;
                uint64_t start = info->dlpi_addr + ph->p_vaddr, page = 4096;
                HeapAbiObject *o = &channel.objects[(*n)++];
                o->start = start & ~(page - 1);
                o->end = (start + ph->p_memsz + page - 1) & ~(page - 1);
                o->offset = ph->p_offset & ~(page - 1);
                o->flags = ph->p_flags;
                memcpy(o->path, path, strlen(path) + 1);
        }
        return 0;
}

/* Rewrites the objects from the loader's list. Skipped when another thread does it. */
static void publish_objects(void) {
        HeapAbiHeader *h = channel.header;
        uint64_t n = 0;

        if (!lock_take(&objects_lock, true))
                return;
        __atomic_fetch_add(&h->objects_generation, 1, __ATOMIC_ACQ_REL);   /* odd: being written */
        (void) dl_iterate_phdr(add_object, &n);
        __atomic_store_n(&h->n_objects, n, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->objects_generation, 1, __ATOMIC_RELEASE);   /* even: done */
        lock_release(&objects_lock);
}

static bool frame_in_objects(uint64_t ip) {
        uint64_t n = __atomic_load_n(&channel.header->n_objects, __ATOMIC_RELAXED);
        for (uint64_t i = 0; i < n && i < channel.header->n_objects_max; i++) {
                const HeapAbiObject *o = &channel.objects[i];
                if ((o->flags & PF_X) && ip >= o->start && ip < o->end)
                        return true;
        }
        return false;
}

static bool in_own_text(uint64_t ip) {
        return ip >= own_text_start && ip < own_text_end;
}

/* glibc's backtrace(), for the stacks the unwinder cannot follow to their end. */
static size_t backtrace_stack(uint64_t f[static HEAP_FRAMES_MAX]) {
        void *raw[HEAP_FRAMES_MAX + 8];
        int n = backtrace(raw, (int) (sizeof(raw) / sizeof(raw[0])));
        size_t k = 0;
        int i = 0;

        /* Our own frames (this function, the hook) come first. */
        while (i < n && in_own_text((uint64_t) (uintptr_t) raw[i]))
                i++;
        for (; i < n && k < HEAP_FRAMES_MAX; i++)
                f[k++] = (uint64_t) (uintptr_t) raw[i];
        return k;
}

/* The stack of the hook's caller. Our code keeps frame pointers: their chain leads to the hook's frame,
 * the first whose return address is outside our code, and the unwinder goes on from there. */
static size_t caller_stack(uint64_t f[static HEAP_FRAMES_MAX]) {
        uint64_t *fp = __builtin_frame_address(0);

        for (unsigned i = 0; i < 32; i++) {
                if (!in_own_text(fp[1])) {
                        UnwindEnd end;
                        size_t n = unwind_stack(fp, f, HEAP_FRAMES_MAX, &end);
                        if (end == UNWIND_COMPLETE)
                                return n;
                        break;
                }
                uint64_t *caller = (uint64_t *) (uintptr_t) fp[0];
                if (caller <= fp)
                        break;
                fp = caller;
        }
        return backtrace_stack(f);
}

static uint32_t take_stack(void) {
        uint64_t f[HEAP_FRAMES_MAX];
        size_t k = caller_stack(f);
        bool new_stack = false;
        uint32_t id = stack_id(f, k, false, &new_stack);
        /* A new stack with a frame in no object known: a library was loaded since (dlopen). */
        if (new_stack)
                for (size_t j = 0; j < k; j++)
                        if (!frame_in_objects(f[j])) {
                                publish_objects();
                                break;
                        }
        return id;
}

/* The executable segment holding an address, and its object's path ("" for the main program). */
typedef struct TextOf {
        uintptr_t address;
        uintptr_t start, end;
        const char *name;
} TextOf;

static int find_text(struct dl_phdr_info *info, size_t size, void *data) {
        TextOf *t = data;

        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
                if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || t->address < start || t->address >= end)
                        continue;
                t->start = start;
                t->end = end;
                t->name = info->dlpi_name ?: "";
                return 1;
        }
        return 0;
}

static TextOf text_of(const void *address) {
        TextOf t = { .address = (uintptr_t) address };
        (void) dl_iterate_phdr(find_text, &t);
        return t;
}

/* ---- Block sizes ------------------------------------------------------------------------------------ */

/* Every allocator aligns blocks to at least 2 * sizeof(void *): a pointer that is not is none of theirs
 * (and glibc's malloc_usable_size() would read outside the heap for it). */
static inline bool block_aligned(uint64_t ptr) {
        return ptr % (2 * sizeof(void *)) == 0;
}

/* Whether the allocator is glibc's, with chunks as usable_size() reads them: checked at the start. */
static bool glibc_chunks;

/* What malloc_usable_size() says of a block in use, without the call: glibc keeps a chunk's size in the
 * word before the block, its low three bits flags (0x2: mmap()ed, whose header takes a word more). Only
 * that word is read: whether the chunk is in use is in the next chunk's header, often another cache line,
 * and a block freed twice that glibc does not stop (a fastbin's, under its top) has that bit set anyway. */
static inline uint64_t usable_size(void *p) {
        if (likely(glibc_chunks)) {
                size_t head;
                memcpy(&head, (const char *) p - sizeof(size_t), sizeof(head));
                return (head & ~(size_t) 7) - (head & 2 ? 2 : 1) * sizeof(size_t);
        }
        return malloc_usable_size(p);
}

/* Reads chunks directly only where the real malloc is glibc's and agrees with it on blocks of every kind
 * (small, large, mmap()ed, aligned); another allocator, or a glibc that changed, gets the call. */
static void check_glibc_chunks(void) {
        /* One of each kind. The mmap()ed one is beyond glibc's largest dynamic mmap threshold (32 MiB): a
         * smaller one's free would raise the program's threshold, and its blocks would come from elsewhere
         * than they do without the library. */
        static const size_t sizes[] = { 1, 24, 100, 1000, 5000, 70000, (size_t) 40 << 20 };
        TextOf libc = text_of((const void *) real.malloc);

        if (!libc.name || !strstr(libc.name, "/libc.so"))
                return;
        glibc_chunks = true;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) * 2 && glibc_chunks; i++) {
                size_t n = sizes[i / 2];
                void *p = i % 2 == 0 || !real.memalign ? real.malloc(n) : real.memalign(256, n);
                if (!p)
                        continue;
                glibc_chunks = usable_size(p) == malloc_usable_size(p);
                real.free(p);
        }
}

/* A block the allocator handed out: every case. */
__attribute__((noinline)) static void record_alloc_any(void *p) {
        bool nested = in_call > 0;
        uint64_t bytes = usable_size(p);

        in_call++;
        count_call(nested, true, bytes);
        if (nested)
                __atomic_fetch_add(&channel.header->nested_calls, 1, __ATOMIC_RELAXED);

        bool sampled = sample_interval <= 1;
        if (!sampled) {
                if (bytes_until_sample == 0)
                        bytes_until_sample = next_sample_distance();
                bytes_until_sample -= (int64_t) (bytes ?: 1);
                if (bytes_until_sample <= 0) {
                        sampled = true;
                        bytes_until_sample = next_sample_distance();
                }
        }
        if (sampled && !set_insert((uint64_t) (uintptr_t) p, nested)) {
                __atomic_fetch_add(nested ? &channel.header->lost_nested : &channel.header->lost_table, 1,
                                   __ATOMIC_RELAXED);
                sampled = false;
        }
        /* The stack before the change: near the peak its record's slot is reserved under a lock. */
        uint32_t stack = sampled && !nested ? take_stack() : HEAP_STACK_NONE;
        LiveRecord slot;
        int64_t live = live_change(my_counts_shared ? NULL : my_counts, (int64_t) bytes, nested,
                                   sampled ? &slot : NULL);
        if (sampled)
                channel_emit(&slot, HEAP_RECORD_ALLOC, (uint64_t) (uintptr_t) p, bytes, live, stack);
        live_done(nested);
        in_call--;
}

/* A block about to go back to the allocator, called before it does: every case. A pointer no allocator
 * hands out (misaligned) is counted, not measured. */
__attribute__((noinline)) static void record_free_any(void *p) {
        bool nested = in_call > 0;
        uint64_t ptr = (uint64_t) (uintptr_t) p;

        in_call++;
        if (nested)
                __atomic_fetch_add(&channel.header->nested_calls, 1, __ATOMIC_RELAXED);
        if (!block_aligned(ptr)) {
                __atomic_fetch_add(&channel.header->invalid_frees, 1, __ATOMIC_RELAXED);
                goto out;
        }
        int was = set_remove(ptr, nested);
        if (was == 0 && sample_interval <= 1) {
                /* Every live block is in the set: this one was freed before, or never allocated here. */
                __atomic_fetch_add(&channel.header->unknown_frees, 1, __ATOMIC_RELAXED);
                goto out;
        }
        if (was < 0)
                __atomic_fetch_add(&channel.header->lost_nested, 1, __ATOMIC_RELAXED);
        uint64_t bytes = usable_size(p);
        count_call(nested, false, 0);
        LiveRecord slot;
        int64_t live = live_change(my_counts_shared ? NULL : my_counts, -(int64_t) bytes, nested,
                                   was > 0 ? &slot : NULL);
        if (was > 0)
                channel_emit(&slot, HEAP_RECORD_FREE, ptr, bytes, live, HEAP_STACK_NONE);
        live_done(nested);
out:
        in_call--;
}

/* The common calls, inline: an ordinary call (not nested) of a thread counting in a slot of its own,
 * without a record, whose live bytes live_change_quick() takes. in_call is set around the change, so
 * that a signal handler's call made meanwhile is a nested one; the fences keep the compiler from moving
 * it past the change. */
static inline bool quick_call_begin(HeapAbiThread *own) {
        if (unlikely(in_call != 0 || !own || my_counts_shared))
                return false;
        in_call = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        return true;
}

/* What live_change_quick() left for later runs inside the call too (a switch takes locks a handler's
 * call must know to be held). */
static inline void quick_call_end(bool done) {
        if (done)
                live_done(false);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        in_call = 0;
}

__attribute__((always_inline)) static inline void record_alloc(void *p) {
        HeapAbiThread *own = my_counts;
        uint64_t bytes = usable_size(p);
        int64_t until = bytes_until_sample - (int64_t) (bytes ?: 1);

        if (likely(until > 0 && sample_interval > 1) && quick_call_begin(own)) {
                bool done = live_change_quick(own, (int64_t) bytes);
                if (likely(done)) {
                        bytes_until_sample = until;
                        count_own(&own->allocs, 1);
                        count_own(&own->alloc_bytes, bytes);
                }
                quick_call_end(done);
                if (likely(done))
                        return;
        }
        record_alloc_any(p);
}

__attribute__((always_inline)) static inline void record_free(void *p) {
        HeapAbiThread *own = my_counts;
        uint64_t ptr = (uint64_t) (uintptr_t) p;

        if (likely(sample_interval > 1 && block_aligned(ptr) && !filter_maybe(bucket_hash(ptr))) &&
            quick_call_begin(own)) {
                bool done = live_change_quick(own, -(int64_t) usable_size(p));
                if (likely(done))
                        count_own(&own->frees, 1);
                quick_call_end(done);
                if (likely(done))
                        return;
        }
        record_free_any(p);
}

/* ---- Starting --------------------------------------------------------------------------------------- */

/* The daemon stopped reading the region (HeapStop): the process goes on unrecorded. */
static void stop_recording(void) {
        __atomic_store_n(&state, STATE_OFF, __ATOMIC_RELEASE);
}

/* Only this thread runs in the child; the region is the parent's. */
static void child_after_fork(void) {
        stop_recording();
        live_reset();
        my_counts = NULL;
        channel_forget();
}

static uint64_t env_uint(const char *name, uint64_t fallback) {
        const char *s = getenv(name);
        char *end;

        if (!s || !*s)
                return fallback;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0' || v == 0 || v > HEAP_SAMPLE_INTERVAL_MAX)
                return fallback;
        return v;
}

/* Makes the region and gives it to the daemon, with the loaded objects in it already. */
static bool connect_daemon(const char *path) {
        if (!channel_create(sample_interval, stop_recording))
                return false;
        publish_objects();
        return channel_hand_over(path);
}

static void initialize(void) {
        int expected = STATE_UNINITIALIZED;

        if (!__atomic_compare_exchange_n(&state, &expected, STATE_INITIALIZING, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
                /* Another thread initializes: wait for it (this thread holds nothing it needs). */
                while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_INITIALIZING)
                        sched_yield();
                return;
        }

        in_call++;
        /* dlsym() may allocate: it gets the bootstrap buffer while real.malloc is still unknown. */
        real.malloc = (MallocFn) dlsym(RTLD_NEXT, "malloc");
        real.calloc = (CallocFn) dlsym(RTLD_NEXT, "calloc");
        real.realloc = (ReallocFn) dlsym(RTLD_NEXT, "realloc");
        real.free = (FreeFn) dlsym(RTLD_NEXT, "free");
        real.memalign = (MemalignFn) dlsym(RTLD_NEXT, "memalign");
        real.aligned_alloc = (MemalignFn) dlsym(RTLD_NEXT, "aligned_alloc");
        real.posix_memalign = (PosixMemalignFn) dlsym(RTLD_NEXT, "posix_memalign");
        real.valloc = (VallocFn) dlsym(RTLD_NEXT, "valloc");
        real.pvalloc = (VallocFn) dlsym(RTLD_NEXT, "pvalloc");

        const char *path = getenv(HEAP_ENV_SOCKET);
        State next = STATE_OFF;
        if (real.malloc && real.calloc && real.realloc && real.free && path && *path) {
                sample_interval = env_uint(HEAP_ENV_SAMPLE_INTERVAL, HEAP_SAMPLE_INTERVAL_DEFAULT);
                seed = env_uint(HEAP_ENV_SEED, 0) ?: mix64((uint64_t) getpid() ^ (uint64_t) now_msec() << 20);
                TextOf own = text_of((const void *) &find_text);
                own_text_start = own.start;
                own_text_end = own.end;
                if (connect_daemon(path)) {
                        live_init(channel.header, env_uint(HEAP_ENV_ALLOWANCE, HEAP_ALLOWANCE_DEFAULT),
                                  channel_reserve);
                        /* Without its cache every stack comes from backtrace(), as complete and slower. */
                        (void) unwind_init();
                        check_glibc_chunks();
                        /* backtrace() loads libgcc's unwinder at its first call, which allocates: that is the
                         * library's own doing, done now and not recorded (nor is pthread_atfork()'s). */
                        void *warm[4];
                        (void) backtrace(warm, 4);
                        (void) pthread_atfork(NULL, NULL, child_after_fork);
                        next = STATE_RECORDING;
                }
        }
        __atomic_store_n(&state, next, __ATOMIC_RELEASE);
        in_call--;
}

/* Whether this call is recorded; initializes on the first. */
static inline bool recording(void) {
        int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

        if (likely(s == STATE_RECORDING))
                return true;
        if (s == STATE_UNINITIALIZED) {
                initialize();
                return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_RECORDING;
        }
        return false;
}

/* Inside initialize() on this thread, before the real functions are known: the bootstrap buffer. */
static inline bool bootstrapping(void) {
        return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == STATE_INITIALIZING && in_call > 0 &&
               !channel.header;
}

__attribute__((constructor)) static void heap_constructor(void) {
        (void) recording();
}

/* ---- The hooks ---------------------------------------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
        if (unlikely(bootstrapping()))
                return bootstrap_alloc(n);
        bool on = recording();
        void *p = real.malloc(n);
        if (on && p)
                record_alloc(p);
        return p;
}

EXPORT void *calloc(size_t n, size_t size) {
        if (unlikely(bootstrapping())) {
                if (size != 0 && n > SIZE_MAX / size)
                        return NULL;
                return bootstrap_alloc(n * size);
        }
        bool on = recording();
        void *p = real.calloc(n, size);
        if (on && p)
                record_alloc(p);
        return p;
}

EXPORT void free(void *p) {
        if (!p || is_bootstrap(p))
                return;
        if (recording())
                record_free(p);
        real.free(p);
}

EXPORT void *realloc(void *p, size_t n) {
        if (unlikely(bootstrapping() || (p && is_bootstrap(p)))) {
                void *q = bootstrapping() ? bootstrap_alloc(n) : malloc(n);
                if (q && p)
                        memcpy(q, p, bootstrap_size(p) < n ? bootstrap_size(p) : n);
                return q;
        }
        bool on = recording();
        if (!p) {
                void *q = real.realloc(NULL, n);
                if (on && q)
                        record_alloc(q);
                return q;
        }
        /* The old block is released first: once the allocator moved it, another thread may get its address. */
        if (on)
                record_free(p);
        void *q = real.realloc(p, n);
        if (on) {
                if (q)
                        record_alloc(q);
                else if (n != 0)
                        record_alloc(p);        /* failed: the old block is still there */
        }
        return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size) {
        if (size != 0 && n > SIZE_MAX / size) {
                errno = ENOMEM;
                return NULL;
        }
        return realloc(p, n * size);
}

EXPORT int posix_memalign(void **ret, size_t alignment, size_t n) {
        bool on = recording();
        if (!real.posix_memalign)
                return ENOMEM;
        int r = real.posix_memalign(ret, alignment, n);
        if (on && r == 0 && *ret)
                record_alloc(*ret);
        return r;
}

static void *aligned_call(MemalignFn fn, size_t alignment, size_t n) {
        bool on = recording();
        if (!fn) {
                errno = ENOMEM;
                return NULL;
        }
        void *p = fn(alignment, n);
        if (on && p)
                record_alloc(p);
        return p;
}

EXPORT void *aligned_alloc(size_t alignment, size_t n) {
        (void) recording();
        return aligned_call(real.aligned_alloc, alignment, n);
}

EXPORT void *memalign(size_t alignment, size_t n) {
        (void) recording();
        return aligned_call(real.memalign, alignment, n);
}

static void *page_call(VallocFn fn, size_t n) {
        bool on = recording();
        if (!fn) {
                errno = ENOMEM;
                return NULL;
        }
        void *p = fn(n);
        if (on && p)
                record_alloc(p);
        return p;
}

EXPORT void *valloc(size_t n) {
        (void) recording();
        return page_call(real.valloc, n);
}

EXPORT void *pvalloc(size_t n) {
        (void) recording();
        return page_call(real.pvalloc, n);
}

/* Unloading code: the unwinder forgets its rules, before (rules worked out while it is being unmapped) and
 * after (its addresses may hold another library's code next). */
EXPORT int dlclose(void *handle) {
        static int (*real_dlclose)(void *);
        int (*fn)(void *) = __atomic_load_n(&real_dlclose, __ATOMIC_RELAXED);

        if (!fn) {
                fn = (int (*)(void *)) dlsym(RTLD_NEXT, "dlclose");
                __atomic_store_n(&real_dlclose, fn, __ATOMIC_RELAXED);
        }
        unwind_flush();
        int r = fn ? fn(handle) : -1;
        unwind_flush();
        return r;
}
