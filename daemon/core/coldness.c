/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coldness.h"
#include "macro.h"
#include "time-util.h"
#include "view.h"

#define REGION_CELL_NONE UINT32_MAX
#define REGION_CELL_SHARED (UINT32_MAX - 1)

/* A cell's pages by class at the round, and whose cell it was then. */
typedef struct ColdCell {
        uint32_t process, node;         /* VIEW_NODE_NONE: no figures */
        uint64_t pages[_COLD_CLASS_MAX];
} ColdCell;

struct Coldness {
        uint64_t warm_usec, cold_usec;
        ColdCell *cells;                /* owned, n_cells: the last round's, by cell id */
        size_t n_cells;
        ColdStats stats;
        char *name, *detail, *reason;   /* owned: the source's */
};

static const char *const class_names[_COLD_CLASS_MAX] = {
        [COLD_CLASS_HOT] = "hot",
        [COLD_CLASS_WARM] = "warm",
        [COLD_CLASS_COLD] = "cold",
        [COLD_CLASS_UNKNOWN] = "unknown",
        [COLD_CLASS_NEWER] = "newer",
};

static_assert(ELEMENTSOF(((ColdStats *) NULL)->pages) == _COLD_CLASS_MAX + 1, "a page count per class and all");

const char *cold_class_to_string(ColdClass c) {
        return c >= 0 && c < _COLD_CLASS_MAX ? class_names[c] : NULL;
}

Coldness *coldness_new(uint64_t warm_usec, uint64_t cold_usec) {
        Coldness *c = calloc(1, sizeof(Coldness));

        if (!c)
                return NULL;
        if (coldness_set_thresholds(c, warm_usec, cold_usec) < 0)
                return coldness_free(c);
        return c;
}

Coldness *coldness_free(Coldness *c) {
        if (!c)
                return NULL;
        free(c->cells);
        free(c->name);
        free(c->detail);
        free(c->reason);
        free(c);
        return NULL;
}

int coldness_set_thresholds(Coldness *c, uint64_t warm_usec, uint64_t cold_usec) {
        if (warm_usec == 0 || warm_usec > cold_usec)
                return -EINVAL;
        c->warm_usec = warm_usec;
        c->cold_usec = cold_usec;
        c->stats.source.warm_usec = warm_usec;
        c->stats.source.cold_usec = cold_usec;
        return 0;
}

ColdClass coldness_classify(const Coldness *c, uint64_t idle_usec) {
        if (idle_usec >= c->cold_usec)
                return COLD_CLASS_COLD;
        return idle_usec >= c->warm_usec ? COLD_CLASS_WARM : COLD_CLASS_HOT;
}

/* One round's walk. */
typedef struct RoundWalk {
        const Coldness *c;
        Accounting *a;
        const AccessSample *sample;
        uint64_t now_nsec;
        ColdCell *cells;
        size_t n_cells;
        uint32_t *region_cell;          /* per region: its first cell, REGION_CELL_SHARED once a second came */
        uint64_t *region_pages;         /* per region: tracked pages in it */
        ColdStats stats;
} RoundWalk;

/* The first region that ends after pfn (the one holding it, or the next), n if none. */
static size_t region_after(const AccessSample *s, uint64_t pfn) {
        size_t lo = 0, hi = s->n_regions;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->regions[mid].end_pfn <= pfn)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static ColdCell *walk_cell(RoundWalk *w, uint32_t cell) {
        if (cell >= w->n_cells)
                return NULL;
        ColdCell *cc = &w->cells[cell];
        if (cc->node == VIEW_NODE_NONE) {
                ViewCell v;
                if (!view_cell(w->a, cell, &v))
                        return NULL;
                cc->process = v.process;
                cc->node = v.node;
        }
        return cc;
}

static void count(RoundWalk *w, ColdCell *cc, ColdClass class, uint64_t pages) {
        if (cc)
                cc->pages[class] += pages;
        w->stats.pages[class] += pages;
}

static void note_region(RoundWalk *w, size_t i, uint32_t cell, uint64_t pages) {
        w->region_pages[i] += pages;
        if (w->region_cell[i] == REGION_CELL_NONE)
                w->region_cell[i] = cell;
        else if (w->region_cell[i] != cell)
                w->region_cell[i] = REGION_CELL_SHARED;
}

static void classify_block(void *userdata, const ViewBlock *b) {
        RoundWalk *w = userdata;
        const AccessSample *s = w->sample;
        uint64_t n_pages = UINT64_C(1) << b->order, end = b->pfn + n_pages, covered = 0;
        ColdCell *cc = walk_cell(w, b->cell);
        unsigned pieces = 0;

        w->stats.blocks++;
        w->stats.pages[_COLD_CLASS_MAX] += n_pages;
        /* Allocated after the regions were taken: what they say is of the page's last owner. */
        uint64_t allocated_nsec = w->now_nsec > b->age_nsec ? w->now_nsec - b->age_nsec : 0;
        if (allocated_nsec > s->time_nsec) {
                count(w, cc, COLD_CLASS_NEWER, n_pages);
                return;
        }
        uint64_t age_usec = (s->time_nsec - allocated_nsec) / NSEC_PER_USEC;
        for (size_t i = region_after(s, b->pfn); i < s->n_regions && s->regions[i].start_pfn < end; i++) {
                const AccessRegion *r = &s->regions[i];
                uint64_t pages = MIN(end, r->end_pfn) - MAX(b->pfn, r->start_pfn);
                uint64_t idle = r->idle_usec;

                /* Idle since before this block was allocated: the block was not touched in its life. */
                if (idle > age_usec) {
                        idle = age_usec;
                        w->stats.clamped_pages += pages;
                }
                count(w, cc, coldness_classify(w->c, idle), pages);
                note_region(w, i, b->cell, pages);
                covered += pages;
                pieces++;
        }
        if (covered < n_pages) {
                count(w, cc, COLD_CLASS_UNKNOWN, n_pages - covered);
                pieces++;
        }
        if (pieces > 1)
                w->stats.split_blocks++;
}

static bool sample_valid(const AccessSample *s) {
        if (s->n_regions > 0 && !s->regions)
                return false;
        for (size_t i = 0; i < s->n_regions; i++) {
                if (s->regions[i].start_pfn >= s->regions[i].end_pfn)
                        return false;
                if (i > 0 && s->regions[i].start_pfn < s->regions[i - 1].end_pfn)
                        return false;
        }
        return true;
}

int coldness_round(Coldness *c, Accounting *a, const AccessSample *sample, uint64_t at_nsec) {
        RoundWalk w = { .c = c, .a = a, .sample = sample, .now_nsec = at_nsec };
        uint64_t start_nsec = now_nsec(CLOCK_MONOTONIC);
        int r = -ENOMEM;

        assert(c && a && sample);

        if (!sample_valid(sample)) {
                c->stats.rejected_samples++;
                return -EINVAL;
        }
        w.n_cells = view_cell_bound(a);
        w.cells = malloc(MAX(w.n_cells, (size_t) 1) * sizeof(ColdCell));
        w.region_cell = malloc(MAX(sample->n_regions, (size_t) 1) * sizeof(uint32_t));
        w.region_pages = calloc(MAX(sample->n_regions, (size_t) 1), sizeof(uint64_t));
        if (!w.cells || !w.region_cell || !w.region_pages)
                goto finish;
        for (size_t i = 0; i < w.n_cells; i++)
                w.cells[i] = (ColdCell) { .node = VIEW_NODE_NONE };
        for (size_t i = 0; i < sample->n_regions; i++)
                w.region_cell[i] = REGION_CELL_NONE;

        view_foreach_block(a, at_nsec, classify_block, &w);

        for (size_t i = 0; i < sample->n_regions; i++)
                if (w.region_cell[i] == REGION_CELL_SHARED) {
                        w.stats.shared_regions++;
                        w.stats.shared_region_pages += w.region_pages[i];
                }
        free(c->cells);
        c->cells = TAKE_PTR(w.cells);
        c->n_cells = w.n_cells;
        w.stats.rounds = c->stats.rounds + 1;
        w.stats.rejected_samples = c->stats.rejected_samples;
        w.stats.round_nsec = at_nsec;
        w.stats.sample_nsec = sample->time_nsec;
        w.stats.regions = sample->n_regions;
        w.stats.warm_usec = c->warm_usec;
        w.stats.cold_usec = c->cold_usec;
        w.stats.source = c->stats.source;
        w.stats.duration_nsec = now_nsec(CLOCK_MONOTONIC) - start_nsec;
        c->stats = w.stats;
        r = 0;
finish:
        free(w.cells);
        free(w.region_cell);
        free(w.region_pages);
        return r;
}

void coldness_forget(Coldness *c) {
        free(c->cells);
        c->cells = NULL;
        c->n_cells = 0;
}

bool coldness_cell(const Coldness *c, uint32_t cell, uint32_t process, uint32_t node,
                uint64_t ret_pages[static _COLD_CLASS_MAX]) {
        if (cell >= c->n_cells)
                return false;
        const ColdCell *cc = &c->cells[cell];
        if (cc->node == VIEW_NODE_NONE || cc->process != process || cc->node != node)
                return false;
        memcpy(ret_pages, cc->pages, sizeof(cc->pages));
        return true;
}

/* Out of memory: the string is left out (NULL), never a stale one kept. */
static void set_string(char **s, const char *value) {
        free(*s);
        *s = value ? strdup(value) : NULL;
}

void coldness_set_source(Coldness *c, const char *name, const char *detail, const char *reason) {
        set_string(&c->name, name);
        set_string(&c->detail, detail);
        set_string(&c->reason, reason);
}

void coldness_set_source_stats(Coldness *c, const ColdSourceStats *s) {
        c->stats.source = *s;
        c->stats.source.warm_usec = c->warm_usec;
        c->stats.source.cold_usec = c->cold_usec;
}

void coldness_get_stats(const Coldness *c, ColdStats *ret, const char **ret_name, const char **ret_detail,
                const char **ret_reason) {
        *ret = c->stats;
        if (ret_name)
                *ret_name = c->name;
        if (ret_detail)
                *ret_detail = c->detail;
        if (ret_reason)
                *ret_reason = c->reason;
}

size_t coldness_memory_bytes(const Coldness *c) {
        return sizeof(Coldness) + c->n_cells * sizeof(ColdCell);
}
