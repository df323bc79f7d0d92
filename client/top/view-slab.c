/* SPDX-License-Identifier: MIT */

/* The slab view: Top's slab objects by call site, when memstrackd traces them (--slab); a list. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "reply.h"
#include "view-class.h"

/* Call sites are function+offset: 28 columns hold most, the rest is cut with an ellipsis. */
#define TOP_SLAB_SITE_WIDTH 28
/* A call site whose frees this kernel makes without a tracepoint: its counts are an upper bound. */
#define TOP_SLAB_INVISIBLE_NOTE "frees not visible"
/* The view without slab objects in the replies. */
#define TOP_SLAB_OFF_HINT "memstrackd does not trace slab objects: start it with --slab (Slab= in its configuration)"

/* Its sort keys, in the order 's' cycles them. */
typedef enum TopSlabColumn {
        TOP_SLAB_SITE,
        TOP_SLAB_BYTES,         /* live bytes allocated */
        TOP_SLAB_OBJECTS,
        TOP_SLAB_WASTE,
        TOP_SLAB_PEAK,
        TOP_SLAB_ALLOCS,
        _TOP_SLAB_COLUMN_MAX,
} TopSlabColumn;

typedef struct TopSlabSite {
        char *name;             /* owned: function+offset */
        uint64_t objects, bytes, requested, peak_bytes, allocs, frees, lost_frees;
        double waste_percent;
        bool frees_invisible;   /* its frees are not visible on this kernel (SlabRow freesVisible false) */
} TopSlabSite;

/* The view's rows (m->rows[TOP_VIEW_SLAB]): Top's slab call sites; an item, and a row's value, is an index
 * into them. */
typedef struct Slab {
        TopSlabSite *sites;     /* owned, n */
        size_t n;
        bool traced;            /* the reply had slab objects: memstrackd traces them (--slab) */
        TopSlabTotals totals;
} Slab;

static const char *const sort_names[_TOP_SLAB_COLUMN_MAX] = {
        [TOP_SLAB_SITE] = "site",
        [TOP_SLAB_BYTES] = "bytes",
        [TOP_SLAB_OBJECTS] = "objects",
        [TOP_SLAB_WASTE] = "waste",
        [TOP_SLAB_PEAK] = "peak",
        [TOP_SLAB_ALLOCS] = "allocs",
};

enum { COL_SITE, COL_OBJECTS, COL_BYTES, COL_REQUESTED, COL_WASTE, COL_PEAK, COL_ALLOCS, COL_FREES, COL_LOST,
       COL_NOTE, _COL_MAX };

static const TopColumn columns[_COL_MAX] = {
        [COL_SITE] = { "CALL SITE", TOP_SLAB_SITE_WIDTH, TOP_SLAB_SITE, TOP_COLUMN_LEFT },
        [COL_OBJECTS] = { "OBJECTS", 8, TOP_SLAB_OBJECTS, 0 },
        [COL_BYTES] = { "BYTES", 9, TOP_SLAB_BYTES, 0 },
        [COL_REQUESTED] = { "REQUESTED", 9, -1, 0 },
        [COL_WASTE] = { "WASTE", 6, TOP_SLAB_WASTE, 0 },
        [COL_PEAK] = { "PEAK", 9, TOP_SLAB_PEAK, 0 },
        [COL_ALLOCS] = { "ALLOCS", 9, TOP_SLAB_ALLOCS, 0 },
        [COL_FREES] = { "FREES", 9, -1, 0 },
        [COL_LOST] = { "LOST", 8, -1, 0 },
        [COL_NOTE] = { "NOTE", 0, -1, TOP_COLUMN_LEFT },
};

static Slab *slab_of(const TopModel *m) {
        return m->rows[TOP_VIEW_SLAB];
}

static const TopSlabSite *site_of(const TopModel *m, size_t value) {
        const Slab *slab = slab_of(m);
        return value < slab->n ? &slab->sites[value] : NULL;
}

/* Empties them: before a read, and at the end. */
static void slab_clear(void *rows) {
        Slab *slab = rows;

        for (size_t i = 0; i < slab->n; i++)
                free(slab->sites[i].name);
        slab->sites = mfree_ptr(slab->sites);
        slab->n = 0;
        slab->traced = false;
}

/* Top's slab field: absent or null when memstrackd does not trace slab objects. */
static int slab_read(TopModel *m, json_t *reply) {
        json_t *field = reply_object(reply, "slab"), *rows = reply_array(field, "rows"), *e;
        Slab *slab = slab_of(m);
        size_t i;

        slab_clear(slab);
        if (!field)
                return 0;
        slab->sites = calloc(MAX(json_array_size(rows), (size_t) 1), sizeof(TopSlabSite));
        if (!slab->sites)
                return -ENOMEM;
        json_array_foreach(rows, i, e) {
                TopSlabSite *site = &slab->sites[slab->n++];
                *site = (TopSlabSite) {
                        .objects = reply_count(e, "liveObjects"),
                        .bytes = reply_count(e, "liveBytesAllocated"),
                        .requested = reply_count(e, "liveBytesRequested"),
                        .peak_bytes = reply_count(e, "peakLiveBytes"),
                        .allocs = reply_count(e, "allocs"),
                        .frees = reply_count(e, "frees"),
                        .lost_frees = reply_count(e, "lostFrees"),
                        .waste_percent = reply_double(e, "wastePercent", 0),
                        .frees_invisible = json_is_false(json_object_get(e, "freesVisible")),
                };
                int r = top_strdup_or_null(reply_string(e, "name") ?: "?", &site->name);
                if (r < 0)
                        return r;
        }
        slab->traced = true;
        slab->totals = (TopSlabTotals) {
                .objects = reply_count(field, "liveObjects"),
                .bytes = reply_count(field, "liveBytesAllocated"),
                .peak_bytes = reply_count(field, "peakLiveBytes"),
                .waste_percent = reply_double(field, "wastePercent", 0),
        };
        return 0;
}

bool top_slab_totals(const TopModel *m, TopSlabTotals *ret) {
        const Slab *slab = slab_of(m);

        if (!slab->traced)
                return false;
        *ret = slab->totals;
        return true;
}

/* "[all: 12.0 MiB in 34567 objects, peak 20.0 MiB, waste 8.1 %]": the totals of every call site, the ones
 * not listed too. New string, NULL on OOM or without slab objects. */
static char *slab_caption(const TopModel *m) {
        char bytes[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        TopSlabTotals t;
        char *s;

        if (!top_slab_totals(m, &t))
                return NULL;
        if (asprintf(&s, "[all: %s in %" PRIu64 " objects, peak %s, waste %.1f %%]",
                     format_bytes(bytes, sizeof(bytes), t.bytes), t.objects,
                     format_bytes(peak, sizeof(peak), t.peak_bytes), t.waste_percent) < 0)
                return NULL;
        return s;
}

static size_t slab_n_items(const TopModel *m) {
        return slab_of(m)->n;
}

static char *slab_key(const TopModel *m, size_t value) {
        return strdup(site_of(m, value)->name);
}

static int slab_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const TopSlabSite *x = site_of(m, a), *y = site_of(m, b);
        int c;

        switch (sort) {
        case TOP_SLAB_SITE:
                c = strcmp(x->name, y->name);
                break;
        case TOP_SLAB_OBJECTS:
                c = top_compare_u64_desc(x->objects, y->objects);
                break;
        case TOP_SLAB_WASTE:
                c = x->waste_percent > y->waste_percent ? -1 : x->waste_percent < y->waste_percent;
                break;
        case TOP_SLAB_PEAK:
                c = top_compare_u64_desc(x->peak_bytes, y->peak_bytes);
                break;
        case TOP_SLAB_ALLOCS:
                c = top_compare_u64_desc(x->allocs, y->allocs);
                break;
        default:
                c = top_compare_u64_desc(x->bytes, y->bytes);
        }
        if (c == 0)
                c = top_compare_u64_desc(x->bytes, y->bytes);
        return c ?: strcmp(x->name, y->name);
}

static bool slab_matches(const TopModel *m, size_t item, const char *filter) {
        return top_text_matches(site_of(m, item)->name, filter);
}

static int slab_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const TopSlabSite *site = site_of(m, value);
        char bytes[FORMAT_BUFFER_MAX], requested[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = format_sanitize(site->name);
        int r;

        fields[COL_SITE] = clean ? format_ellipsize(clean, TOP_SLAB_SITE_WIDTH) : NULL;
        if (!fields[COL_SITE])
                return -ENOMEM;
        if ((r = top_field(&fields[COL_OBJECTS], "%" PRIu64, site->objects)) < 0 ||
            (r = top_field(&fields[COL_BYTES], "%s", format_bytes(bytes, sizeof(bytes), site->bytes))) < 0 ||
            (r = top_field(&fields[COL_REQUESTED], "%s", format_bytes(requested, sizeof(requested), site->requested))) < 0 ||
            (r = top_field(&fields[COL_WASTE], "%.1f%%", site->waste_percent)) < 0 ||
            (r = top_field(&fields[COL_PEAK], "%s", format_bytes(peak, sizeof(peak), site->peak_bytes))) < 0 ||
            (r = top_field(&fields[COL_ALLOCS], "%" PRIu64, site->allocs)) < 0 ||
            (r = top_field(&fields[COL_FREES], "%" PRIu64, site->frees)) < 0 ||
            (r = top_field(&fields[COL_LOST], "%" PRIu64, site->lost_frees)) < 0)
                return r;
        return top_field(&fields[COL_NOTE], "%s", site->frees_invisible ? TOP_SLAB_INVISIBLE_NOTE : "");
}

static const char *slab_empty_note(const TopModel *m) {
        return m->have_data && !slab_of(m)->traced ? TOP_SLAB_OFF_HINT : NULL;
}

/* Call sites own no pages (no stacks, no page history): Enter does nothing here. */
const TopViewClass top_view_slab = {
        .name = "slab",
        .title = "Slab",
        .sort_names = sort_names,
        .n_sorts = _TOP_SLAB_COLUMN_MAX,
        .default_sort = TOP_SLAB_BYTES,
        .columns = columns,
        .n_columns = _COL_MAX,
        .tree = TOP_TREE_NONE,
        .rows_size = sizeof(Slab),
        .rows_done = slab_clear,
        .read = slab_read,
        .n_items = slab_n_items,
        .key = slab_key,
        .compare = slab_compare,
        .matches = slab_matches,
        .write = slab_write,
        .empty_note = slab_empty_note,
        .caption = slab_caption,
};
