/* SPDX-License-Identifier: MIT */

/*
 * The cold-memory fixture: two anonymous buffers of --mib MiB (default 128) from two call sites,
 * hot_site() and cold_site(); it keeps touching every page of the first and never touches the second.
 *
 * An access source that measures ranges of physical memory (DAMON's regions) measures the pages of a
 * range together, so pages of the two buffers interleaved closer than a region would be seen as one.
 * Each site therefore faults in a pool of --pool times its size in transparent huge pages (2 MiB,
 * physically contiguous), reads where each landed (/proc/self/pagemap: root only) and keeps the chunks
 * in the longest runs of physically adjacent ones (a region inside such a run measures this buffer
 * alone), of equal runs hot_site() the lowest and cold_site() the highest, each within --pfn-range
 * FIRST-LAST where given (what the kdamond monitors); the rest is freed before any measurement. Without
 * root (pfns read 0) the first chunks are kept.
 *
 * Prints one JSON line once both buffers are in place: its pid, each buffer's chunks, huge pages and pfn
 * span; then touches the hot buffer every --touch-ms ms (default 50) until killed.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (UINT64_C(2) << 20)
#define PAGE 4096u

typedef struct Chunk {
        char *addr;
        uint64_t pfn;
        int huge;
} Chunk;

typedef struct Buffer {
        Chunk *chunks;
        size_t n;
        uint64_t min_pfn, max_pfn;
        unsigned huge;
} Buffer;

static uint64_t arg_mib = 128, arg_pool = 4, arg_touch_ms = 50, arg_first_pfn = 0, arg_last_pfn = UINT64_MAX;

static uint64_t pfn_of(int fd, const void *addr) {
        uint64_t e = 0;

        if (pread(fd, &e, sizeof(e), (off_t) ((uintptr_t) addr / PAGE * sizeof(e))) != sizeof(e))
                return 0;
        return e & ((UINT64_C(1) << 55) - 1);
}

/* KPF_THP of /proc/kpageflags, where it can be read. */
static int is_huge(int kpageflags, uint64_t pfn) {
        uint64_t f = 0;

        if (kpageflags < 0 || pread(kpageflags, &f, sizeof(f), (off_t) (pfn * sizeof(f))) != sizeof(f))
                return 0;
        return (f >> 22) & 1;
}

static int by_pfn(const void *x, const void *y) {
        const Chunk *a = x, *b = y;
        return a->pfn < b->pfn ? -1 : a->pfn > b->pfn;
}

/* Faults a pool in at the caller's call site (inlined into it) and keeps the chunks of its half. */
static inline __attribute__((always_inline)) int fault_pool(Buffer *b, int highest) {
        size_t n_pool = (size_t) (arg_mib * arg_pool * (1u << 20) / CHUNK), want = (size_t) (arg_mib * (1u << 20) / CHUNK);
        char *raw = mmap(NULL, n_pool * CHUNK + CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        int kpageflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
        Chunk *pool = calloc(n_pool, sizeof(Chunk));

        if (raw == MAP_FAILED || pagemap < 0 || !pool)
                return -errno;
        char *base = (char *) (((uintptr_t) raw + CHUNK - 1) & ~(uintptr_t) (CHUNK - 1));
        (void) madvise(base, n_pool * CHUNK, MADV_HUGEPAGE);
        for (size_t i = 0; i < n_pool; i++) {
                char *c = base + i * CHUNK;
                for (uint64_t off = 0; off < CHUNK; off += PAGE)
                        c[off] = 1;
                pool[i] = (Chunk) { .addr = c, .pfn = pfn_of(pagemap, c) };
                pool[i].huge = is_huge(kpageflags, pool[i].pfn);
        }
        qsort(pool, n_pool, sizeof(Chunk), by_pfn);
        /* The chunks within the range, in runs of physically adjacent ones: the longest runs first (a
         * region inside one measures this buffer alone), of equal runs the lowest (hot_site) or highest
         * (cold_site) first, so the two buffers also lie in halves of their own; the others after them. */
        Chunk *ordered = calloc(n_pool, sizeof(Chunk));
        size_t *run_start = calloc(n_pool, sizeof(size_t)), *run_len = calloc(n_pool, sizeof(size_t));
        bool *taken = calloc(n_pool, sizeof(bool));
        if (!ordered || !run_start || !run_len || !taken)
                return -ENOMEM;
        for (size_t i = 0; i < n_pool; i++) {
                bool in = pool[i].pfn >= arg_first_pfn && pool[i].pfn + CHUNK / PAGE - 1 <= arg_last_pfn;
                bool joins = in && i > 0 && pool[i - 1].pfn + CHUNK / PAGE == pool[i].pfn && run_len[i - 1] > 0;
                run_start[i] = joins ? run_start[i - 1] : i;
                run_len[i] = in ? 1 : 0;
                if (joins)
                        for (size_t k = run_start[i]; k <= i; k++)
                                run_len[k] = i - run_start[i] + 1;
        }
        size_t k = 0;
        while (k < n_pool) {
                size_t best = SIZE_MAX;
                for (size_t c = 0; c < n_pool; c++) {
                        size_t i = highest ? n_pool - 1 - c : c;
                        if (!taken[i] && run_len[i] > 0 && (best == SIZE_MAX || run_len[i] > run_len[best]))
                                best = i;
                }
                if (best == SIZE_MAX)
                        break;
                for (size_t i = run_start[best]; i < n_pool && run_start[i] == run_start[best]; i++)
                        if (!taken[i]) {
                                taken[i] = true;
                                ordered[k++] = pool[i];
                        }
        }
        for (size_t i = 0; i < n_pool; i++)
                if (!taken[i])
                        ordered[k++] = pool[i];
        free(run_start);
        free(run_len);
        free(taken);
        b->chunks = calloc(want, sizeof(Chunk));
        if (!b->chunks)
                return -ENOMEM;
        for (size_t c = 0; c < n_pool; c++) {
                Chunk *ch = &ordered[c];
                if (b->n < want) {
                        b->chunks[b->n++] = *ch;
                        b->min_pfn = b->n == 1 ? ch->pfn : (ch->pfn < b->min_pfn ? ch->pfn : b->min_pfn);
                        b->max_pfn = ch->pfn > b->max_pfn ? ch->pfn : b->max_pfn;
                        b->huge += (unsigned) ch->huge;
                } else if (madvise(ch->addr, CHUNK, MADV_DONTNEED) < 0)
                        return -errno;
        }
        free(ordered);
        free(pool);
        close(pagemap);
        if (kpageflags >= 0)
                close(kpageflags);
        return 0;
}

static __attribute__((noinline)) int hot_site(Buffer *b) {
        return fault_pool(b, 0);
}

static __attribute__((noinline)) int cold_site(Buffer *b) {
        return fault_pool(b, 1);
}

static __attribute__((noinline)) void touch(const Buffer *b) {
        for (size_t i = 0; i < b->n; i++)
                for (uint64_t off = 0; off < CHUNK; off += PAGE)
                        ((volatile char *) b->chunks[i].addr)[off]++;
}

static void print_buffer(const char *name, const Buffer *b) {
        printf("\"%s\": {\"chunks\": %zu, \"hugePages\": %u, \"minPfn\": %" PRIu64 ", \"maxPfn\": %" PRIu64
               ", \"pfns\": [", name, b->n, b->huge, b->min_pfn, b->max_pfn + CHUNK / PAGE - 1);
        for (size_t i = 0; i < b->n; i++)
                printf("%s%" PRIu64, i ? ", " : "", b->chunks[i].pfn);
        printf("]}");
}

static int parse(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (errno || end == s || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int main(int argc, char **argv) {
        Buffer hot = {}, cold = {};
        int r;

        for (int i = 1; i + 1 < argc; i += 2) {
                uint64_t *v = !strcmp(argv[i], "--mib") ? &arg_mib : !strcmp(argv[i], "--pool") ? &arg_pool :
                              !strcmp(argv[i], "--touch-ms") ? &arg_touch_ms : NULL;
                if (!strcmp(argv[i], "--pfn-range")) {
                        if (sscanf(argv[i + 1], "%" SCNu64 "-%" SCNu64, &arg_first_pfn, &arg_last_pfn) != 2)
                                return 2;
                        continue;
                }
                if (!v || parse(argv[i + 1], v) < 0 || *v == 0) {
                        fprintf(stderr, "usage: %s [--mib N] [--pool N] [--touch-ms N] [--pfn-range FIRST-LAST]\n",
                                argv[0]);
                        return 2;
                }
        }
        r = hot_site(&hot);
        if (r >= 0)
                r = cold_site(&cold);
        if (r < 0) {
                fprintf(stderr, "cold-fixture: %s\n", strerror(-r));
                return 1;
        }
        printf("{\"pid\": %d, ", (int) getpid());
        print_buffer("hot", &hot);
        printf(", ");
        print_buffer("cold", &cold);
        printf("}\n");
        fflush(stdout);
        for (;;) {
                touch(&hot);
                (void) nanosleep(&(struct timespec) { .tv_nsec = (long) (arg_touch_ms % 1000) * 1000000,
                                                      .tv_sec = (time_t) (arg_touch_ms / 1000) }, NULL);
        }
}
