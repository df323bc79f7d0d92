/* SPDX-License-Identifier: MIT */

/*
 * libmemstrack-heap.so: preloaded into a process (memstrackctl record), it sees every call of the malloc
 * family, keeps the exact counters in a region it shares with memstrackd's heap source (heap-abi.h) and
 * writes a record with a call stack for a sample of the bytes allocated, and for the free of each sampled
 * block. It records and sends; the accounting is the daemon's.
 *
 * As heaptrack keeps its interposers apart from its recording, this file holds only the library's entry
 * points, the exported functions of the malloc family, and its start: they find the real functions, call
 * them, and hand each block to the recording (record.h: the common call inline, the rest in record.c;
 * block-set.c, stacks.c, live.c and unwind.c under it), which writes to the daemon through channel.c.
 * C++'s operators and the other allocators' own APIs are allocators.c's; rebind.c binds the objects'
 * calls to the library when an allocator preloaded before it comes first in the lookup order.
 *
 * What it must never do, and how it does not:
 *   - allocate with malloc: its tables are mmap()ed, dlsym()'s own allocations come from a static
 *     bootstrap buffer before the real functions are known;
 *   - recurse or deadlock: a per-thread guard (record_in_call, initial-exec TLS, no allocation on first
 *     use) marks a call running on the thread. A call that finds it set (a signal handler that allocates,
 *     or an allocation made by what the library calls itself) still counts exactly, takes no stack and only
 *     try-locks; a record it cannot write is counted as lost;
 *   - be seen by a child that forks without exec: the child stops recording (pthread_atfork) and unmaps
 *     the region, so it cannot write the parent's records. A program it runs is recorded as its own process
 *     (LD_PRELOAD is inherited);
 *   - block for good: a full ring is waited on only while the daemon keeps polling, else the record is
 *     dropped and counted;
 *   - hold a file descriptor: the socket and the memfd are closed once the daemon has the region, so a
 *     program that closes every descriptor or lowers RLIMIT_NOFILE changes nothing.
 */

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "heap-abi.h"
#include "interpose.h"
#include "library.h"
#include "live.h"
#include "rebind.h"
#include "record.h"
#include "stacks.h"
#include "unwind.h"

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

/* Another allocator than glibc's may call its own exported functions through its PLT, and so the library's
 * entry points (mimalloc's posix_memalign() calls mi_malloc_aligned(), tcmalloc's valloc() tc_memalign()):
 * under one, the real functions are these, which mark the call as the allocator's own (allocator_enter()),
 * so that it is recorded once. glibc's call none of the library's names: it gets no guard and no cost. */
static typeof(real) unguarded;

static void *guarded_malloc(size_t n) {
        allocator_enter();
        void *p = unguarded.malloc(n);
        allocator_leave();
        return p;
}

static void *guarded_calloc(size_t n, size_t size) {
        allocator_enter();
        void *p = unguarded.calloc(n, size);
        allocator_leave();
        return p;
}

static void *guarded_realloc(void *p, size_t n) {
        allocator_enter();
        void *q = unguarded.realloc(p, n);
        allocator_leave();
        return q;
}

static void guarded_free(void *p) {
        allocator_enter();
        unguarded.free(p);
        allocator_leave();
}

static void *guarded_memalign(size_t alignment, size_t n) {
        allocator_enter();
        void *p = unguarded.memalign(alignment, n);
        allocator_leave();
        return p;
}

static void *guarded_aligned_alloc(size_t alignment, size_t n) {
        allocator_enter();
        void *p = unguarded.aligned_alloc(alignment, n);
        allocator_leave();
        return p;
}

static int guarded_posix_memalign(void **ret, size_t alignment, size_t n) {
        allocator_enter();
        int r = unguarded.posix_memalign(ret, alignment, n);
        allocator_leave();
        return r;
}

static void *guarded_valloc(size_t n) {
        allocator_enter();
        void *p = unguarded.valloc(n);
        allocator_leave();
        return p;
}

static void *guarded_pvalloc(size_t n) {
        allocator_enter();
        void *p = unguarded.pvalloc(n);
        allocator_leave();
        return p;
}

/* The real functions, guarded; each one the allocator lacks stays NULL. */
static void guard_real_functions(void) {
        unguarded = real;
        real.malloc = guarded_malloc;
        real.calloc = guarded_calloc;
        real.realloc = guarded_realloc;
        real.free = guarded_free;
        real.memalign = unguarded.memalign ? guarded_memalign : NULL;
        real.aligned_alloc = unguarded.aligned_alloc ? guarded_aligned_alloc : NULL;
        real.posix_memalign = unguarded.posix_memalign ? guarded_posix_memalign : NULL;
        real.valloc = unguarded.valloc ? guarded_valloc : NULL;
        real.pvalloc = unguarded.pvalloc ? guarded_pvalloc : NULL;
}

const void *interpose_allocator_code(void) {
        return (const void *) (unguarded.malloc ?: real.malloc);
}

void interpose_real_free(void *p) {
        real.free(p);
}

/* dlsym() allocates (its error buffer) before it can tell where malloc is: such blocks come from here,
 * with their size in front, and are never given to the real allocator. */
#define BOOTSTRAP_BYTES (64u * 1024u)
static _Alignas(16) char bootstrap[BOOTSTRAP_BYTES];
static size_t bootstrap_used;

bool interpose_is_bootstrap(const void *p) {
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

/* ---- Starting ----------------------------------------------------------------------------------------- */

int interpose_state = INTERPOSE_UNINITIALIZED;
static TLS bool initializing_here;      /* this thread runs initialize() */

/* The daemon stopped reading the region (HeapStop): the process goes on unrecorded. */
static void stop_recording(void) {
        __atomic_store_n(&interpose_state, INTERPOSE_OFF, __ATOMIC_RELEASE);
}

/* Only this thread runs in the child; the region is the parent's. */
static void child_after_fork(void) {
        stop_recording();
        live_reset();
        record_forget_thread();
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

/* Sets up the recording and hands the region to the daemon at path, the real functions known; false:
 * this process is not recorded. */
static bool start_recording(const char *path) {
        uint64_t interval = env_uint(HEAP_ENV_SAMPLE_INTERVAL, HEAP_SAMPLE_INTERVAL_DEFAULT);

        record_init(interval, env_uint(HEAP_ENV_SEED, 0));
        stacks_init();
        if (!channel_create(interval, stop_recording))
                return false;
        /* The daemon reads the objects once it has the region: they are there before. */
        stacks_publish_objects();
        if (!channel_hand_over(path))
                return false;
        live_init(channel.header, env_uint(HEAP_ENV_ALLOWANCE, HEAP_ALLOWANCE_DEFAULT), channel_reserve);
        /* Without its cache every stack comes from backtrace(), as complete and slower. */
        (void) unwind_init();
        if (!record_check_chunks(real.malloc, real.memalign, real.free))
                guard_real_functions();
        /* backtrace() loads libgcc's unwinder at its first call, which allocates: that is the library's own
         * doing, done now and not recorded (nor is pthread_atfork()'s). */
        void *warm[4];
        (void) backtrace(warm, 4);
        (void) pthread_atfork(NULL, NULL, child_after_fork);
        return true;
}

/* Whose malloc the program calls: the library's, or one found before it in the lookup order: an allocator
 * preloaded before the library, whose calls rebind_objects() binds to the library, or the program's own
 * (an allocator linked into it), which the program calls directly: that process is not recorded, and
 * says so on standard error. */
typedef enum Shadow {
        SHADOW_NONE,
        SHADOW_LIBRARY,
        SHADOW_PROGRAM,
} Shadow;

static Shadow shadow;

/* Whether address is a definition: a program that takes malloc's address gets a canonical PLT entry,
 * which dlsym() returns although the program only calls through it (its symbol is undefined there). */
static bool defines(void *address) {
        const ElfW(Sym) *sym = NULL;
        Dl_info info;

        return !dladdr1(address, &info, (void **) &sym, RTLD_DL_SYMENT) || !sym || sym->st_shndx != SHN_UNDEF;
}

static Shadow find_shadow(void) {
        void *first = dlsym(RTLD_DEFAULT, "malloc");
        const char *own = stacks_code_path((const void *) &find_shadow), *other = stacks_code_path(first);

        if (first && !defines(first))
                return SHADOW_NONE;
        static const char *const text[] = {
                "libmemstrack-heap.so: not recording this process: its malloc is the one of ",
                NULL,
                ", which it calls without the library (an allocator linked into the program); memstrackctl "
                "record --pid records such a process\n",
        };

        if (!first || !own || other == own)
                return SHADOW_NONE;
        if (*other && rebind_possible())
                return SHADOW_LIBRARY;
        for (size_t i = 0; i < 3; i++) {
                const char *t = text[i] ?: (*other ? other : "the program");
                (void) !write(STDERR_FILENO, t, strlen(t));
        }
        return SHADOW_PROGRAM;
}

void *interpose_next(const char *name) {
        if (shadow == SHADOW_LIBRARY) {
                void *first = dlsym(RTLD_DEFAULT, name);
                if (first && stacks_code_path(first) != stacks_code_path((const void *) &find_shadow))
                        return first;
        }
        return dlsym(RTLD_NEXT, name);
}

void interpose_initialize(void) {
        int expected = INTERPOSE_UNINITIALIZED;

        if (!__atomic_compare_exchange_n(&interpose_state, &expected, INTERPOSE_INITIALIZING, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
                /* Another thread initializes: wait for it (this thread holds nothing it needs). */
                while (__atomic_load_n(&interpose_state, __ATOMIC_ACQUIRE) == INTERPOSE_INITIALIZING)
                        sched_yield();
                return;
        }

        initializing_here = true;
        /* dlsym() may allocate: it gets the bootstrap buffer while real.malloc is still unknown. */
        const char *path = getenv(HEAP_ENV_SOCKET);
        if (path && *path)
                shadow = find_shadow();
        real.malloc = (MallocFn) interpose_next("malloc");
        real.calloc = (CallocFn) interpose_next("calloc");
        real.realloc = (ReallocFn) interpose_next("realloc");
        real.free = (FreeFn) interpose_next("free");
        real.memalign = (MemalignFn) interpose_next("memalign");
        real.aligned_alloc = (MemalignFn) interpose_next("aligned_alloc");
        real.posix_memalign = (PosixMemalignFn) interpose_next("posix_memalign");
        real.valloc = (VallocFn) interpose_next("valloc");
        real.pvalloc = (VallocFn) interpose_next("pvalloc");

        bool on = real.malloc && real.calloc && real.realloc && real.free && path && *path &&
                  shadow != SHADOW_PROGRAM && start_recording(path);
        /* The objects' calls come to the library from now on (the real functions are known first). */
        if (on && shadow == SHADOW_LIBRARY)
                on = rebind_objects((const void *) &find_shadow);
        __atomic_store_n(&interpose_state, on ? INTERPOSE_RECORDING : INTERPOSE_OFF, __ATOMIC_RELEASE);
        initializing_here = false;
}

/* Inside initialize() on this thread, before the real functions are known: the bootstrap buffer. */
static inline bool bootstrapping(void) {
        return __atomic_load_n(&interpose_state, __ATOMIC_ACQUIRE) == INTERPOSE_INITIALIZING && initializing_here &&
               !channel.header;
}

__attribute__((constructor)) static void heap_constructor(void) {
        (void) interpose_recording();
}


/* ---- The hooks ---------------------------------------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
        if (unlikely(bootstrapping()))
                return bootstrap_alloc(n);
        bool on = interpose_recording();
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
        bool on = interpose_recording();
        void *p = real.calloc(n, size);
        if (on && p)
                record_alloc(p);
        return p;
}

EXPORT void free(void *p) {
        if (!p || interpose_is_bootstrap(p))
                return;
        if (interpose_recording())
                record_free(p);
        real.free(p);
}

EXPORT void *realloc(void *p, size_t n) {
        if (unlikely(bootstrapping() || (p && interpose_is_bootstrap(p)))) {
                void *q = bootstrapping() ? bootstrap_alloc(n) : malloc(n);
                if (q && p)
                        memcpy(q, p, bootstrap_size(p) < n ? bootstrap_size(p) : n);
                return q;
        }
        bool on = interpose_recording();
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
        bool on = interpose_recording();
        if (!real.posix_memalign)
                return ENOMEM;
        int r = real.posix_memalign(ret, alignment, n);
        if (on && r == 0 && *ret)
                record_alloc(*ret);
        return r;
}

static void *aligned_call(MemalignFn fn, size_t alignment, size_t n) {
        bool on = interpose_recording();
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
        (void) interpose_recording();
        return aligned_call(real.aligned_alloc, alignment, n);
}

EXPORT void *memalign(size_t alignment, size_t n) {
        (void) interpose_recording();
        return aligned_call(real.memalign, alignment, n);
}

static void *page_call(VallocFn fn, size_t n) {
        bool on = interpose_recording();
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
        (void) interpose_recording();
        return page_call(real.valloc, n);
}

EXPORT void *pvalloc(size_t n) {
        (void) interpose_recording();
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
