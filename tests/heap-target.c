/* SPDX-License-Identifier: MIT */

/*
 * A program with known heap allocations, for memstrackctl record (tests/test-heap-record.py). It works out
 * what it expects memstrack to report from malloc_usable_size() itself, and writes that as JSON to the
 * file $HEAP_TARGET_EXPECT: for each of its call sites (function, line) the bytes and blocks live at its
 * maximum and at exit. It uses no stdio, so that the only allocations are its own and the C library's
 * few (thread descriptors), which the test tells apart by call site.
 *
 * heap-target-cxx.cc adds C++ call sites (new[] and delete[], sized and aligned). Built once per allocator
 * (tests/meson.build: linked with jemalloc, tcmalloc or mimalloc, HEAP_TARGET_JEMALLOC and its kin
 * defined), known also calls that allocator's own API, as programs linked against it do.
 *
 * heap-target MODE: known (the default), churn, churn-turns, placement, double-free, bad-free, signal, fork, exec, dlopen PLUGIN,
 * closefds, sigkill, storm N, hold SECONDS, wait-leak and wait-known (for record --pid).
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(HEAP_TARGET_JEMALLOC)
#include <jemalloc/jemalloc.h>
#elif defined(HEAP_TARGET_TCMALLOC)
#include <gperftools/tcmalloc.h>
#elif defined(HEAP_TARGET_MIMALLOC)
#include <mimalloc.h>
#endif

#define SITES_MAX 48
#define THREADS 4
#define THREAD_BLOCKS 50

typedef struct Site {
        const char *function;
        int line;
        uint64_t max_bytes, max_blocks, leak_bytes, leak_blocks;
        uint64_t live_bytes, live_blocks;       /* now */
} Site;

static Site sites[SITES_MAX];
static int n_sites;
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

static Site *site(const char *function, int line) {
        for (int i = 0; i < n_sites; i++)
                if (sites[i].line == line && strcmp(sites[i].function, function) == 0)
                        return &sites[i];
        sites[n_sites] = (Site) { .function = function, .line = line };
        return &sites[n_sites++];
}

/* Counts p as allocated at (function, line). */
static void *took(void *p, const char *function, int line) {
        if (!p)
                abort();
        pthread_mutex_lock(&sites_lock);
        Site *s = site(function, line);
        s->live_bytes += malloc_usable_size(p);
        s->live_blocks++;
        pthread_mutex_unlock(&sites_lock);
        return p;
}

/* Counts p as gone from its allocation's site (it is about to be freed or reallocated). */
static void uncount(void *p, const char *function, int line) {
        pthread_mutex_lock(&sites_lock);
        Site *s = site(function, line);
        s->live_bytes -= malloc_usable_size(p);
        s->live_blocks--;
        pthread_mutex_unlock(&sites_lock);
}

static void gave(void *p, const char *function, int line) {
        uncount(p, function, line);
        free(p);
}

/* The live values now are the values at the maximum. */
static void at_maximum(void) {
        for (int i = 0; i < n_sites; i++) {
                sites[i].max_bytes = sites[i].live_bytes;
                sites[i].max_blocks = sites[i].live_blocks;
        }
}

static void write_expectations(void) {
        const char *path = getenv("HEAP_TARGET_EXPECT");
        static char buf[16384];
        size_t n = 0;

        if (!path)
                return;
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "{\"sites\": [");
        for (int i = 0; i < n_sites; i++)
                n += (size_t) snprintf(buf + n, sizeof(buf) - n,
                                       "%s{\"function\": \"%s\", \"line\": %d, \"maxBytes\": %llu, \"maxBlocks\": %llu, "
                                       "\"leakBytes\": %llu, \"leakBlocks\": %llu}",
                                       i ? ", " : "", sites[i].function, sites[i].line,
                                       (unsigned long long) sites[i].max_bytes, (unsigned long long) sites[i].max_blocks,
                                       (unsigned long long) sites[i].live_bytes, (unsigned long long) sites[i].live_blocks);
        /* Whose malloc served the program: the object of malloc_usable_size(), which the heap library leaves
         * to the allocator (its malloc's address would be the library's). */
        Dl_info info;
        const char *served = dladdr((void *) malloc_usable_size, &info) && info.dli_fname ? info.dli_fname : "";
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "], \"malloc\": \"%s\"}\n", served);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, n) != (ssize_t) n)
                abort();
        close(fd);
}

/* ---- known ------------------------------------------------------------------------------------------- */

/* Each allocation is on a line of its own: the line is what memstrack must name. */
#define AT(expr) took((expr), __func__, __LINE__)

static void *leak_blocks[10];

static void leak_site(void) {
        for (int i = 0; i < 10; i++)
                leak_blocks[i] = AT(malloc(1000));
}

static void *calloc_site(int *ret_line) {
        void *p = AT(calloc(100, 1000));
        *ret_line = __LINE__ - 1;
        return p;
}

/* A chain of reallocations: the block belongs to the site of the last one. */
static void *realloc_chain(int *ret_line) {
        void *p = AT(realloc(NULL, 100));
        int line = __LINE__ - 1;
        uncount(p, __func__, line);
        p = AT(realloc(p, 5000));
        line = __LINE__ - 1;
        uncount(p, __func__, line);
        /* Moves: beyond the mmap threshold. */
        p = AT(realloc(p, 200000));
        *ret_line = __LINE__ - 1;
        return p;
}

typedef struct Aligned {
        void *p[4];
        int line[4];
} Aligned;

static void aligned_site(Aligned *a) {
        void *q;
        if (posix_memalign(&q, 64, 3000) != 0)
                abort();
        a->p[0] = took(q, __func__, __LINE__ - 2);
        a->line[0] = __LINE__ - 3;
        a->p[1] = AT(aligned_alloc(4096, 8192));
        a->line[1] = __LINE__ - 1;
        a->p[2] = AT(memalign(256, 1000));
        a->line[2] = __LINE__ - 1;
        a->p[3] = AT(valloc(5000));
        a->line[3] = __LINE__ - 1;
}

static void *thread_main(void *arg) {
        void **blocks = arg;
        for (int i = 0; i < THREAD_BLOCKS; i++)
                blocks[i] = AT(malloc(2000));
        int line = __LINE__ - 1;
        for (int i = 0; i < THREAD_BLOCKS; i += 2)
                gave(blocks[i], __func__, line);
        return NULL;
}

/* C++ new and delete (heap-target-cxx.cc). */
void *heap_target_new(size_t n, int *ret_line);
void heap_target_delete(void *p);
void *heap_target_new_object(size_t n, int *ret_line);
void heap_target_delete_sized(void *p, size_t n);
void *heap_target_new_aligned(size_t n, size_t alignment, int *ret_line);
void heap_target_delete_aligned(void *p, size_t alignment);

/* Frees and reallocations that go around free(): C++'s sized and aligned deletes, a reallocation that
 * shrinks a block in place (tcmalloc and mimalloc keep it), and the allocator's own API. What stays is
 * kept to the end, a leak of its own site. */
static void around_free_site(void) {
        int line;

        void *o = heap_target_new_object(5000, &line);
        (void) took(o, "heap_target_new_object", line);
        uncount(o, "heap_target_new_object", line);
        heap_target_delete_sized(o, 5000);
        void *kept = heap_target_new_aligned(3000, 256, &line);
        (void) took(kept, "heap_target_new_aligned", line);
        void *a = heap_target_new_aligned(1000, 4096, &line);
        (void) took(a, "heap_target_new_aligned", line);
        uncount(a, "heap_target_new_aligned", line);
        heap_target_delete_aligned(a, 4096);

        /* The smallest blocks: in jemalloc's, tcmalloc's and mimalloc's 8-byte class every other one is only
         * 8-byte aligned, and its free counts too. */
        void *tiny[4];
        for (int i = 0; i < 4; i++)
                tiny[i] = AT(malloc(8));
        line = __LINE__ - 1;
        for (int i = 0; i < 4; i++)
                gave(tiny[i], __func__, line);

        void *r = AT(malloc(4000));
        line = __LINE__ - 1;
        uncount(r, __func__, line);
        r = AT(realloc(r, 3000));
        line = __LINE__ - 1;
        (void) r;       /* kept */

#if defined(HEAP_TARGET_JEMALLOC)
        void *x = AT(mallocx(3000, MALLOCX_ALIGN(128)));
        line = __LINE__ - 1;
        uncount(x, __func__, line);
        x = AT(rallocx(x, 9000, 0));
        line = __LINE__ - 1;
        uncount(x, __func__, line);
        /* In place, or not at all: either way the block is what malloc_usable_size() says then. */
        size_t usable = xallocx(x, 12000, 0, 0);
        (void) took(x, __func__, line);
        void *y = AT(mallocx(700, 0));
        int y_line = __LINE__ - 1;
        uncount(x, __func__, line);
        sdallocx(x, usable, 0);
        uncount(y, __func__, y_line);
        dallocx(y, 0);
        (void) AT(mallocx(100, MALLOCX_ZERO));
#elif defined(HEAP_TARGET_TCMALLOC)
        void *x = AT(tc_malloc(3000));
        line = __LINE__ - 1;
        uncount(x, __func__, line);
        x = AT(tc_realloc(x, 9000));
        line = __LINE__ - 1;
        uncount(x, __func__, line);
        tc_free_sized(x, 9000);
        void *y = AT(tc_memalign(512, 700));
        line = __LINE__ - 1;
        uncount(y, __func__, line);
        tc_free(y);
        (void) AT(tc_calloc(10, 100));
        void *d;
        if (tc_posix_memalign(&d, 64, 2500) != 0)
                abort();
        line = __LINE__ - 2;
        (void) took(d, __func__, line);
        uncount(d, __func__, line);
        tc_free_sized(d, 2500);
#elif defined(HEAP_TARGET_MIMALLOC)
        void *x = AT(mi_malloc(3000));
        line = __LINE__ - 1;
        uncount(x, __func__, line);
        x = AT(mi_realloc(x, 9000));
        line = __LINE__ - 1;
        uncount(x, __func__, line);
        mi_free_size(x, 9000);
        void *y = AT(mi_malloc_aligned(700, 512));
        line = __LINE__ - 1;
        uncount(y, __func__, line);
        mi_free_aligned(y, 512);
        (void) AT(mi_zalloc(1000));
        char *s = mi_strdup("heap-target");
        (void) took(s, __func__, __LINE__ - 1);
        void *z = AT(mi_calloc_aligned(10, 100, 64));
        line = __LINE__ - 1;
        uncount(z, __func__, line);
        mi_free(z);
#endif
}

static void *peak_site(int *ret_line) {
        void *p = AT(malloc(8u << 20));
        *ret_line = __LINE__ - 1;
        return p;
}

/* known's allocations; at its end, what it wrote is the expectation of them. */
static void known(void) {
        static void *thread_blocks[THREADS][THREAD_BLOCKS];
        pthread_t t[THREADS];
        Aligned a;
        int realloc_line, calloc_line, peak_line;

        leak_site();
        void *c = calloc_site(&calloc_line);
        void *r = realloc_chain(&realloc_line);
        aligned_site(&a);
        around_free_site();
        for (int i = 0; i < THREADS; i++)
                if (pthread_create(&t[i], NULL, thread_main, thread_blocks[i]) != 0)
                        abort();
        for (int i = 0; i < THREADS; i++)
                pthread_join(t[i], NULL);
        int new_line;
        void *kept = heap_target_new(3000, &new_line), *dropped = heap_target_new(700, &new_line);
        took(kept, "heap_target_new", new_line);
        took(dropped, "heap_target_new", new_line);

        /* The maximum: everything above, and 8 MiB more for a moment. */
        void *big = peak_site(&peak_line);
        at_maximum();
        gave(big, "peak_site", peak_line);

        /* What goes back; the rest leaks: leak_site's, aligned_alloc's, half of each thread's. */
        gave(c, "calloc_site", calloc_line);
        gave(r, "realloc_chain", realloc_line);
        gave(a.p[0], "aligned_site", a.line[0]);
        gave(a.p[2], "aligned_site", a.line[2]);
        gave(a.p[3], "aligned_site", a.line[3]);
        uncount(dropped, "heap_target_new", new_line);
        heap_target_delete(dropped);
}

static int mode_known(void) {
        known();
        write_expectations();
        return 0;
}

/* ---- churn ------------------------------------------------------------------------------------------- */

/*
 * Threads that allocate and free random sizes all the time, far below the peak and near it, so that the
 * library's live bytes go in and out of each thread's allowance (MEMSTRACK_HEAP_ALLOWANCE) and between
 * its modes many times. The peak is where the churn cannot reach: every thread holds one 2 MiB block at
 * once, between barriers, with all its churn freed; before and after, a thread's churn stays below
 * CHURN_BLOCKS * 8 KiB. What a thread's last churn leaves is its leak. churn-turns: the threads churn
 * one at a time (each while the others wait), so that the counter of live bytes passes from thread to
 * thread, each owning it for a while.
 */
#define CHURN_BLOCKS 48
#define CHURN_ROUNDS 20000

static pthread_barrier_t churn_barrier;
static bool churn_in_turns;
static pthread_mutex_t churn_turn = PTHREAD_MUTEX_INITIALIZER;

static void *churn_site(size_t n, int *ret_line) {
        void *p = AT(malloc(n));
        *ret_line = __LINE__ - 1;
        return p;
}

static void *churn_peak_site(int *ret_line) {
        void *p = AT(malloc(2u << 20));
        *ret_line = __LINE__ - 1;
        return p;
}

static void churn(uint64_t *x, void **blocks, bool free_all) {
        int line = 0;
        if (churn_in_turns && pthread_mutex_lock(&churn_turn) != 0)
                abort();
        for (int i = 0; i < CHURN_ROUNDS; i++) {
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                int k = (int) (*x % CHURN_BLOCKS);
                if (blocks[k]) {
                        gave(blocks[k], "churn_site", line);
                        blocks[k] = NULL;
                } else
                        blocks[k] = churn_site(16 + (size_t) ((*x >> 20) % 8192), &line);
        }
        for (int k = 0; free_all && k < CHURN_BLOCKS; k++)
                if (blocks[k]) {
                        gave(blocks[k], "churn_site", line);
                        blocks[k] = NULL;
                }
        if (churn_in_turns && pthread_mutex_unlock(&churn_turn) != 0)
                abort();
}

static void *churn_main(void *arg) {
        void *blocks[CHURN_BLOCKS] = { 0 };
        uint64_t x = (uint64_t) (uintptr_t) arg * UINT64_C(0x9E3779B97F4A7C15) + 1;
        int line;

        churn(&x, blocks, true);
        pthread_barrier_wait(&churn_barrier);
        void *peak = churn_peak_site(&line);
        pthread_barrier_wait(&churn_barrier);   /* the maximum */
        pthread_barrier_wait(&churn_barrier);
        gave(peak, "churn_peak_site", line);
        churn(&x, blocks, false);
        return NULL;
}

static int mode_churn(bool in_turns) {
        pthread_t t[THREADS];

        churn_in_turns = in_turns;
        if (pthread_barrier_init(&churn_barrier, NULL, THREADS + 1) != 0)
                abort();
        for (int i = 0; i < THREADS; i++)
                if (pthread_create(&t[i], NULL, churn_main, (void *) (uintptr_t) (i + 1)) != 0)
                        abort();
        pthread_barrier_wait(&churn_barrier);
        pthread_barrier_wait(&churn_barrier);
        at_maximum();
        pthread_barrier_wait(&churn_barrier);
        for (int i = 0; i < THREADS; i++)
                pthread_join(t[i], NULL);
        write_expectations();
        return 0;
}

/* ---- Edge cases --------------------------------------------------------------------------------------- */

/* A double free glibc does not catch (run with GLIBC_TUNABLES=glibc.malloc.tcache_count=0: fastbins
 * check only their top). Every-call mode counts it; nothing crashes. */
#pragma GCC diagnostic push
/* gcc's names for what this does on purpose; clang knows neither. */
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
static int mode_double_free(void) {
        void *a = malloc(32), *b = malloc(32);
        free(a);
        free(b);
        free(a);
        /* Take both copies of a back out of the fastbin, so the program ends with a sane heap. */
        void *x = malloc(32), *y = malloc(32), *z = malloc(32);
        (void) x, (void) y, (void) z;
        return 0;
}

/* A pointer never allocated: glibc aborts ("free(): invalid pointer"); the record says so. */
static _Alignas(64) char not_from_malloc[256];

static int mode_bad_free(void) {
        free(not_from_malloc + 16);
        return 0;
}
#pragma GCC diagnostic pop

static volatile sig_atomic_t handled;

static void on_alarm(int sig) {
        free(malloc(64));
        handled++;
}

/* Allocations from a signal handler that often lands inside malloc and free. */
static int mode_signal(void) {
        struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
        struct itimerval it = { .it_interval = { .tv_usec = 100 }, .it_value = { .tv_usec = 100 } };
        sigaction(SIGALRM, &sa, NULL);
        setitimer(ITIMER_REAL, &it, NULL);
        while (handled < 2000)
                for (int i = 0; i < 1000; i++)
                        free(malloc((size_t) (i % 100) * 16 + 16));
        it = (struct itimerval) {};
        setitimer(ITIMER_REAL, &it, NULL);
        leak_site();
        write_expectations();
        return 0;
}

/* A child that forks without exec allocates and frees; the parent's heap stays as it is. */
static int mode_fork(void) {
        leak_site();
        pid_t pid = fork();
        if (pid == 0) {
                for (int i = 0; i < 1000; i++)
                        free(malloc(4096));
                void *keep = malloc(12345);
                (void) keep;
                _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        write_expectations();
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* Allocates, then runs itself again ("known"): two heaps of one pid. */
static int mode_exec(const char *self) {
        leak_site();
        execl(self, self, "known", (char *) NULL);
        return 127;
}

static int mode_dlopen(const char *plugin) {
        void *h = dlopen(plugin, RTLD_NOW);
        if (!h)
                return 2;
        void *(*alloc)(size_t) = (void *(*)(size_t)) dlsym(h, "heap_plugin_alloc");
        if (!alloc)
                return 2;
        for (int i = 0; i < 3; i++)
                (void) alloc(7000);
        return 0;
}

/* A program that closes every descriptor it did not open and lowers its limits. */
/* Where glibc puts blocks of a few sizes, freed one by one as they come: from the heap, or mmap()ed on
 * their own (malloc_usable_size() tells: an mmap()ed block's is a page multiple less 16 bytes), which
 * glibc's dynamic threshold moves as mmap()ed blocks are freed. Printed one size a line. */
static int mode_placement(void) {
        static const size_t sizes[] = { 100000, 200000, 1u << 20, 2u << 20, 8u << 20 };
        char line[64];

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                void *p = malloc(sizes[i]);
                if (!p)
                        abort();
                int n = snprintf(line, sizeof(line), "%zu %zu\n", sizes[i], malloc_usable_size(p));
                if (write(STDOUT_FILENO, line, (size_t) n) != n)
                        abort();
                free(p);
        }
        return 0;
}

static int mode_closefds(void) {
        for (int fd = 3; fd < 1024; fd++)
                (void) close(fd);
        struct rlimit rl, low;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 2;
        low = (struct rlimit) { .rlim_cur = 3, .rlim_max = rl.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &low) < 0)
                return 2;
        leak_site();
        /* Back up, to write what it expects. */
        (void) setrlimit(RLIMIT_NOFILE, &rl);
        write_expectations();
        return 0;
}

static int mode_sigkill(void) {
        leak_site();
        write_expectations();
        raise(SIGKILL);
        return 1;
}

static void *storm_thread(void *arg) {
        long n = (long) (intptr_t) arg;
        for (long i = 0; i < n; i++)
                free(malloc((size_t) (i % 64) * 8 + 8));
        return NULL;
}

/* Many small calls from 4 threads at once: more records than the channel holds. */
static int mode_storm(long n) {
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
                pthread_create(&t[i], NULL, storm_thread, (void *) (intptr_t) n);
        for (int i = 0; i < THREADS; i++)
                pthread_join(t[i], NULL);
        leak_site();
        write_expectations();
        return 0;
}

/* More sampled blocks live at once than the library's first tables hold, from two sites: one's blocks
 * all freed, each by a thread other than its own, the other's kept. A free the library failed to match
 * with its sampled allocation would leave the first site holding bytes. */
#define MANY_THREADS 2
#define MANY_BLOCKS 6000

static void *many_blocks[MANY_THREADS][MANY_BLOCKS];
static int many_line;

static void *many_alloc(void *arg) {
        void **blocks = arg;
        for (int i = 0; i < MANY_BLOCKS; i++)
                blocks[i] = AT(malloc(1000));
        __atomic_store_n(&many_line, __LINE__ - 1, __ATOMIC_RELAXED);       /* the same line from each */
        return NULL;
}

static void *many_free(void *arg) {
        void **blocks = arg;
        for (int i = 0; i < MANY_BLOCKS; i++)
                gave(blocks[i], "many_alloc", __atomic_load_n(&many_line, __ATOMIC_RELAXED));
        return NULL;
}

static int mode_many(void) {
        pthread_t t[MANY_THREADS];
        void *kept[MANY_BLOCKS / 4];

        for (int i = 0; i < MANY_BLOCKS / 4; i++)
                kept[i] = AT(malloc(1000));
        for (int i = 0; i < MANY_THREADS; i++)
                if (pthread_create(&t[i], NULL, many_alloc, many_blocks[i]) != 0)
                        abort();
        for (int i = 0; i < MANY_THREADS; i++)
                pthread_join(t[i], NULL);
        at_maximum();
        for (int i = 0; i < MANY_THREADS; i++)
                if (pthread_create(&t[i], NULL, many_free, many_blocks[(i + 1) % MANY_THREADS]) != 0)
                        abort();
        for (int i = 0; i < MANY_THREADS; i++)
                pthread_join(t[i], NULL);
        (void) kept;
        write_expectations();
        return 0;
}

/* Leaks a known amount every 10 ms for SECONDS, then exits (record --pid). */
static int mode_hold(long seconds) {
        static char ready[] = "ready\n";
        if (write(STDOUT_FILENO, ready, sizeof(ready) - 1) < 0)
                return 1;
        for (long i = 0; i < seconds * 100; i++) {
                (void) AT(malloc(10000));
                free(malloc(50000));
                (void) nanosleep(&(struct timespec) { .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        write_expectations();
        return 0;
}

/* ---- wait-leak (record --pid) ------------------------------------------------------------------------ */

static volatile sig_atomic_t leak_now;

static void on_leak_signal(int sig) {
        leak_now = 1;
}

/* 4000 blocks of 3000 bytes kept, as many of 20000 allocated and freed. */
static void leak_phase(void) {
        for (int i = 0; i < 4000; i++) {
                (void) AT(malloc(3000));
                void *p = AT(malloc(20000));
                int line = __LINE__ - 1;
                gave(p, __func__, line);
        }
}

static void say(const char *line) {
        if (write(STDOUT_FILENO, line, strlen(line)) < 0)
                abort();
}

/* Says "ready", waits for SIGUSR1, leaks (leak_phase, or known's allocations), writes its expectations,
 * says "leaked" and waits for the signal that ends it. */
static int mode_wait_leak(bool all_known) {
        struct sigaction sa = { .sa_handler = on_leak_signal };
        sigset_t usr1, before;

        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        if (sigprocmask(SIG_BLOCK, &usr1, &before) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
                return 1;
        say("ready\n");
        while (!leak_now)
                sigsuspend(&before);
        if (all_known)
                known();
        else
                leak_phase();
        write_expectations();
        say("leaked\n");
        for (;;)
                pause();
}

int main(int argc, char *argv[]) {
        const char *mode = argc > 1 ? argv[1] : "known";

        if (strcmp(mode, "known") == 0)
                return mode_known();
        if (strcmp(mode, "churn") == 0 || strcmp(mode, "churn-turns") == 0)
                return mode_churn(strcmp(mode, "churn-turns") == 0);
        if (strcmp(mode, "placement") == 0)
                return mode_placement();
        if (strcmp(mode, "double-free") == 0)
                return mode_double_free();
        if (strcmp(mode, "bad-free") == 0)
                return mode_bad_free();
        if (strcmp(mode, "signal") == 0)
                return mode_signal();
        if (strcmp(mode, "fork") == 0)
                return mode_fork();
        if (strcmp(mode, "exec") == 0)
                return mode_exec(argv[0]);
        if (strcmp(mode, "dlopen") == 0 && argc > 2)
                return mode_dlopen(argv[2]);
        if (strcmp(mode, "closefds") == 0)
                return mode_closefds();
        if (strcmp(mode, "sigkill") == 0)
                return mode_sigkill();
        if (strcmp(mode, "many") == 0)
                return mode_many();
        if (strcmp(mode, "storm") == 0 && argc > 2)
                return mode_storm(strtol(argv[2], NULL, 10));
        if (strcmp(mode, "hold") == 0 && argc > 2)
                return mode_hold(strtol(argv[2], NULL, 10));
        if (strcmp(mode, "wait-leak") == 0 || strcmp(mode, "wait-known") == 0)
                return mode_wait_leak(strcmp(mode, "wait-known") == 0);
        return 2;
}
