/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array-util.h"
#include "keyindex.h"
#include "kpageflags.h"
#include "log.h"
#include "time-util.h"

/* Bits of /proc/kpageflags (Documentation/admin-guide/mm/pagemap.rst). */
#define KPF_REFERENCED 2
#define KPF_LRU 5
#define KPF_ACTIVE 6
#define KPF_BUDDY 10
#define KPF_NOPAGE 20

#define WINDOW_PFNS 512                 /* 4 KiB of flags per read */
#define SHARE_SCALE 1024u

typedef struct Sampled {
        uint64_t key;                   /* the block's page key */
        uint64_t pfn;
        unsigned order;
        uint64_t allocated_nsec;
        uint64_t used_nsec;             /* last seen referenced or active, 0: never */
} Sampled;

struct KpageflagsSampler {
        int fd;
        size_t budget;
        unsigned share;                 /* of SHARE_SCALE: the blocks taken */
        Sampled *cur, *prev;            /* owned, sorted by pfn: this round's and the last */
        size_t n_cur, n_prev;
};

int kpageflags_sampler_new(const char *path, size_t budget, KpageflagsSampler **ret, const char **reterr_reason) {
        _cleanup_(kpageflags_sampler_freep) KpageflagsSampler *s = calloc(1, sizeof(KpageflagsSampler));

        if (!s)
                return -ENOMEM;
        s->budget = MAX(budget, (size_t) 1);
        s->share = SHARE_SCALE;
        s->fd = open(path ?: "/proc/kpageflags", O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
                if (reterr_reason)
                        *reterr_reason = errno == ENOENT ? "the kernel has no /proc/kpageflags (CONFIG_PROC_PAGE_MONITOR)" :
                                         "/proc/kpageflags cannot be opened (needs CAP_SYS_ADMIN)";
                return -errno;
        }
        s->cur = calloc(s->budget, sizeof(Sampled));
        s->prev = calloc(s->budget, sizeof(Sampled));
        if (!s->cur || !s->prev)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

KpageflagsSampler *kpageflags_sampler_free(KpageflagsSampler *s) {
        if (!s)
                return NULL;
        if (s->fd >= 0)
                close(s->fd);
        free(s->cur);
        free(s->prev);
        free(s);
        return NULL;
}

typedef struct Pick {
        KpageflagsSampler *s;
        uint64_t now_nsec, key_offset;
        size_t seen;
} Pick;

static void pick_block(void *userdata, const ViewBlock *b) {
        Pick *p = userdata;
        KpageflagsSampler *s = p->s;

        p->seen++;
        if (s->n_cur == s->budget || key_index_mix(b->pfn) % SHARE_SCALE >= s->share)
                return;
        s->cur[s->n_cur++] = (Sampled) {
                .key = b->pfn,
                .pfn = (b->pfn - p->key_offset) & ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1),
                .order = b->order,
                .allocated_nsec = p->now_nsec > b->age_nsec ? p->now_nsec - b->age_nsec : 0,
        };
}

static int by_pfn(const void *x, const void *y) {
        const Sampled *a = x, *b = y;
        return a->pfn < b->pfn ? -1 : a->pfn > b->pfn;
}

static int by_start(const void *x, const void *y) {
        const AccessRegion *a = x, *b = y;
        return a->start_pfn < b->start_pfn ? -1 : a->start_pfn > b->start_pfn;
}

/* The last round's entry of pfn, NULL if it was not sampled then. */
static const Sampled *previous(const KpageflagsSampler *s, uint64_t pfn) {
        size_t lo = 0, hi = s->n_prev;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->prev[mid].pfn < pfn)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < s->n_prev && s->prev[lo].pfn == pfn ? &s->prev[lo] : NULL;
}

ssize_t kpageflags_sample(KpageflagsSampler *s, Accounting *a, uint64_t now_nsec, uint64_t key_offset,
                AccessRegion **regions, size_t *allocated, ColdSourceStats *stats) {
        uint64_t window[WINDOW_PFNS], window_start = UINT64_MAX;
        Pick p = { .s = s, .now_nsec = now_nsec, .key_offset = key_offset };
        size_t n = 0, n_window = 0;

        s->n_cur = 0;
        view_foreach_block(a, now_nsec, pick_block, &p);
        /* The next round takes about the budget of however many blocks there are now. */
        s->share = p.seen <= s->budget ? SHARE_SCALE :
                   (unsigned) MAX((uint64_t) 1, (uint64_t) s->budget * SHARE_SCALE / p.seen);
        qsort(s->cur, s->n_cur, sizeof(Sampled), by_pfn);
        stats->sampled_pages = 0;
        stats->sample_budget = s->budget;
        for (size_t i = 0; i < s->n_cur; i++) {
                Sampled *b = &s->cur[i];

                if (b->pfn < window_start || b->pfn >= window_start + n_window) {
                        ssize_t k = pread(s->fd, window, sizeof(window), (off_t) (b->pfn * sizeof(uint64_t)));
                        if (k < 0)
                                return log_debug_errno(errno, "Failed to read /proc/kpageflags: %m");
                        window_start = b->pfn;
                        n_window = (size_t) k / sizeof(uint64_t);
                        if (n_window == 0)
                                continue;       /* beyond the last pfn */
                }
                uint64_t flags = window[b->pfn - window_start];
                stats->sampled_pages += UINT64_C(1) << b->order;
                if (flags & ((UINT64_C(1) << KPF_NOPAGE) | (UINT64_C(1) << KPF_BUDDY))) {
                        stats->rejected_records++;
                        continue;
                }
                /* Seen used before, by the same allocation: that time carries over. */
                const Sampled *old = previous(s, b->pfn);
                if (old && (old->allocated_nsec > b->allocated_nsec ? old->allocated_nsec - b->allocated_nsec :
                            b->allocated_nsec - old->allocated_nsec) <= 2 * VIEW_PAGE_AGE_GRAIN_NSEC)
                        b->used_nsec = old->used_nsec;
                if (!(flags & (UINT64_C(1) << KPF_LRU)))
                        continue;
                if (flags & ((UINT64_C(1) << KPF_REFERENCED) | (UINT64_C(1) << KPF_ACTIVE)))
                        b->used_nsec = now_nsec;
                uint64_t since = MAX(b->used_nsec, b->allocated_nsec);
                if (ARRAY_GROW_ONE(*regions, *allocated, n, 1024) < 0)
                        return -ENOMEM;
                (*regions)[n++] = (AccessRegion) {
                        .start_pfn = b->key,
                        .end_pfn = b->key + (UINT64_C(1) << b->order),
                        .idle_usec = now_nsec > since ? (now_nsec - since) / NSEC_PER_USEC : 0,
                };
        }
        /* Keys are pfns plus a constant: in pfn order but where they wrap past the keys' end. */
        for (size_t i = 1; i < n; i++)
                if ((*regions)[i].start_pfn < (*regions)[i - 1].end_pfn) {
                        qsort(*regions, n, sizeof(AccessRegion), by_start);
                        break;
                }
        /* This round's entries are the next one's memory of when each was used. */
        Sampled *t = s->prev;
        s->prev = s->cur;
        s->n_prev = s->n_cur;
        s->cur = t;
        s->n_cur = 0;
        return (ssize_t) n;
}
