/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file-util.h"
#include "history.h"
#include "units.h"
#include "usage.h"

const HistoryLevel history_levels[HISTORY_LEVELS] = {
        { .resolution_usec = UINT64_C(1000000), .n_buckets = 600 },        /* 1 s for 10 minutes */
        { .resolution_usec = UINT64_C(60000000), .n_buckets = 1440 },      /* 1 min for 24 hours */
};

/* Series by kind, in one allocation: [0] the total, then HISTORY_SERIES_MAX per other kind. */
struct History {
        HistorySeries *series;          /* owned: HISTORY_SERIES_TOTAL of them */
};

static const char *const kind_names[_HISTORY_KIND_MAX] = {
        [HISTORY_TOTAL] = "total",
        [HISTORY_TASK] = "task",
        [HISTORY_UNIT] = "unit",
        [HISTORY_MODULE] = "module",
};

const char *history_kind_to_string(HistoryKind k) {
        if (k < 0 || k >= _HISTORY_KIND_MAX)
                return NULL;
        return kind_names[k];
}

/* The slice of h->series holding kind. */
static HistorySeries *kind_first(const History *h, HistoryKind kind, size_t *ret_n) {
        if (kind == HISTORY_TOTAL) {
                *ret_n = 1;
                return h->series;
        }
        *ret_n = HISTORY_SERIES_MAX;
        return h->series + 1 + (size_t) (kind - 1) * HISTORY_SERIES_MAX;
}

static void series_init(HistorySeries *s, HistoryKind kind, int32_t pid, const char *name) {
        size_t off = 0;

        s->kind = kind;
        s->used = true;
        s->in_top = false;
        s->pid = pid;
        s->last_current = 0;
        snprintf(s->name, sizeof(s->name), "%s", name ?: "");
        for (unsigned l = 0; l < HISTORY_LEVELS; l++) {
                s->ring[l] = (HistoryRing) { .points = s->storage + off };
                off += history_levels[l].n_buckets;
        }
        for (size_t i = 0; i < HISTORY_BUCKETS_ALL; i++)
                s->storage[i] = (HistoryPoint) { .current_pages = HISTORY_NO_DATA };
}

History *history_new(void) {
        History *h = calloc(1, sizeof(History));
        if (!h)
                return NULL;
        /* One allocation: the memory bound holds from the start, and nothing grows at run time. */
        static_assert(600 + 1440 == HISTORY_BUCKETS_ALL, "levels and storage disagree");
        h->series = calloc(HISTORY_SERIES_TOTAL, sizeof(HistorySeries));
        if (!h->series)
                return history_free(h);
        series_init(h->series, HISTORY_TOTAL, 0, NULL);
        return h;
}

History *history_free(History *h) {
        if (!h)
                return NULL;
        free(h->series);
        free(h);
        return NULL;
}

static void ring_put(HistoryRing *r, size_t n, uint64_t bucket, uint64_t current, uint64_t peak) {
        if (!r->used) {
                r->newest = bucket;
                r->used = true;
        } else if (bucket > r->newest) {
                /* Buckets skipped over (no sample: the series was not tracked, the daemon not running)
                 * are empty, and so are the ones they overwrite. */
                uint64_t gap = bucket - r->newest;
                for (uint64_t i = 1; i < gap && i <= n; i++)
                        r->points[(r->newest + i) % n] = (HistoryPoint) { .current_pages = HISTORY_NO_DATA };
                r->points[bucket % n] = (HistoryPoint) { .current_pages = HISTORY_NO_DATA };
                r->newest = bucket;
        } else
                /* The same bucket, or the clock stepped back: fold into the newest one, never rewrite
                 * the past. */
                bucket = r->newest;

        HistoryPoint *p = &r->points[bucket % n];
        if (p->current_pages == HISTORY_NO_DATA)
                *p = (HistoryPoint) { .current_pages = current, .peak_pages = MAX(peak, current) };
        else {
                p->current_pages = current;
                p->peak_pages = MAX(p->peak_pages, MAX(peak, current));
        }
}

void history_series_put(HistorySeries *s, uint64_t now_usec, uint64_t current_pages, uint64_t peak_pages) {
        /* HISTORY_NO_DATA marks an empty bucket: a real count never reaches it. */
        current_pages = MIN(current_pages, HISTORY_NO_DATA - 1);
        for (unsigned l = 0; l < HISTORY_LEVELS; l++)
                ring_put(&s->ring[l], history_levels[l].n_buckets, now_usec / history_levels[l].resolution_usec,
                         current_pages, peak_pages);
        s->last_current = current_pages;
}

static bool series_is(const HistorySeries *s, HistoryKind kind, int32_t pid, const char *name) {
        if (!s->used || s->kind != kind)
                return false;
        switch (kind) {
        case HISTORY_TOTAL:
                return true;
        case HISTORY_TASK:
                return s->pid == pid;
        default:
                return name && streq(s->name, name);
        }
}

HistorySeries *history_find(History *h, HistoryKind kind, int32_t pid, const char *name) {
        size_t n;
        HistorySeries *first;

        if (kind < 0 || kind >= _HISTORY_KIND_MAX)
                return NULL;
        first = kind_first(h, kind, &n);
        for (size_t i = 0; i < n; i++)
                if (series_is(&first[i], kind, pid, name))
                        return &first[i];
        return NULL;
}

HistorySeries *history_track(History *h, HistoryKind kind, int32_t pid, const char *name) {
        HistorySeries *s, *first, *victim = NULL;
        size_t n;

        s = history_find(h, kind, pid, name);
        if (s)
                return s;
        if (kind <= HISTORY_TOTAL || kind >= _HISTORY_KIND_MAX)
                return NULL;
        if (kind != HISTORY_TASK && (!name || strlen(name) >= HISTORY_NAME_MAX))
                return NULL;
        if (kind == HISTORY_TASK && name && strlen(name) >= HISTORY_NAME_MAX)
                return NULL;
        first = kind_first(h, kind, &n);
        for (size_t i = 0; i < n; i++) {
                if (!first[i].used) {
                        victim = &first[i];
                        break;
                }
                if (!first[i].in_top && (!victim || first[i].last_current < victim->last_current))
                        victim = &first[i];
        }
        if (!victim)
                return NULL;
        series_init(victim, kind, pid, name);
        return victim;
}

size_t history_count(const History *h, HistoryKind kind) {
        size_t n, k = 0;
        const HistorySeries *first;

        if (kind < 0 || kind >= _HISTORY_KIND_MAX)
                return 0;
        first = kind_first(h, kind, &n);
        for (size_t i = 0; i < n; i++)
                k += first[i].used;
        return k;
}

/* The top N owners of one kind at this tick, biggest first. */
typedef struct Candidate {
        int32_t pid;
        const char *name;               /* borrowed from the core for the tick */
        uint64_t current, peak;
        HistorySeries *series;          /* tracked already */
} Candidate;

typedef struct TickState {
        History *h;
        HistoryKind kind;
        uint64_t now_usec;
        Candidate top[HISTORY_TOP_N];
        size_t n_top;
} TickState;

static void tick_begin(TickState *t, History *h, HistoryKind kind, uint64_t now_usec) {
        size_t n;
        HistorySeries *first = kind_first(h, kind, &n);

        *t = (TickState) { .h = h, .kind = kind, .now_usec = now_usec };
        for (size_t i = 0; i < n; i++)
                first[i].in_top = false;
}

static void tick_consider(TickState *t, int32_t pid, const char *name, uint64_t current, uint64_t peak) {
        HistorySeries *s = history_find(t->h, t->kind, pid, name);
        if (s) {
                history_series_put(s, t->now_usec, current, peak);
                /* A task's name is its comm when last seen. */
                if (t->kind == HISTORY_TASK)
                        snprintf(s->name, sizeof(s->name), "%s", name);
        }
        if (current == 0)
                return;
        if (t->n_top == HISTORY_TOP_N && current <= t->top[HISTORY_TOP_N - 1].current)
                return;
        size_t i = t->n_top < HISTORY_TOP_N ? t->n_top++ : HISTORY_TOP_N - 1;
        for (; i > 0 && t->top[i - 1].current < current; i--)
                t->top[i] = t->top[i - 1];
        t->top[i] = (Candidate) { .pid = pid, .name = name, .current = current, .peak = peak, .series = s };
}

static void tick_end(TickState *t) {
        for (size_t i = 0; i < t->n_top; i++)
                if (t->top[i].series)
                        t->top[i].series->in_top = true;
        for (size_t i = 0; i < t->n_top; i++) {
                Candidate *c = &t->top[i];
                if (c->series)
                        continue;
                HistorySeries *s = history_track(t->h, t->kind, c->pid, c->name);
                if (!s)
                        continue;
                s->in_top = true;
                history_series_put(s, t->now_usec, c->current, c->peak);
        }
}

void history_tick(History *h, Accounting *a, uint64_t now_usec) {
        Usage *u = accounting_usage(a);
        Units *units = accounting_units(a);
        TickState t;
        uint64_t current;

        assert(h && a);

        uint64_t peak = accounting_interval_take(a, &current);
        history_series_put(h->series, now_usec, current, peak);

        tick_begin(&t, h, HISTORY_TASK, now_usec);
        for (size_t i = 1; i < usage_task_slots(u); i++) {
                Task *task = usage_task(u, (uint32_t) i);
                if (!task || task->is_thread || task->evicted)
                        continue;
                Ledger *l = &task->ledger[LEDGER_PAGES];
                peak = ledger_interval_take(l, &task->interval_peak[LEDGER_PAGES]);
                /* A pid of an exited record and of its live successor: the one a query by pid finds. */
                if (task->exited && usage_find_process(u, task->pid) != i)
                        continue;
                tick_consider(&t, task->pid, task->comm, l->current, peak);
        }
        tick_end(&t);

        tick_begin(&t, h, HISTORY_UNIT, now_usec);
        for (size_t i = 1; i < units_unit_count(units); i++) {
                const UnitUsage *unit = units_unit(units, (uint32_t) i);
                if (!unit)
                        continue;
                peak = units_interval_take(units, (uint32_t) i);
                if (!unit->name || strlen(unit->name) >= HISTORY_NAME_MAX)
                        continue;
                tick_consider(&t, 0, unit->name, unit->ledger.current, peak);
        }
        tick_end(&t);

        tick_begin(&t, h, HISTORY_MODULE, now_usec);
        for (size_t id = 1; id <= usage_module_count(u); id++) {
                ModuleUsage *m = usage_module(u, (uint16_t) id);
                if (!m)
                        continue;
                Ledger *l = &m->ledger[LEDGER_PAGES];
                peak = ledger_interval_take(l, &m->interval_peak[LEDGER_PAGES]);
                if (!m->name || strlen(m->name) >= HISTORY_NAME_MAX)
                        continue;
                tick_consider(&t, 0, m->name, l->current, peak);
        }
        tick_end(&t);
}

size_t history_series_read(const HistorySeries *s, unsigned level, uint64_t since_usec, HistorySample *buf) {
        const HistoryRing *r;
        size_t n, k = 0;

        assert(level < HISTORY_LEVELS);
        r = &s->ring[level];
        n = history_levels[level].n_buckets;
        if (!r->used)
                return 0;
        uint64_t res = history_levels[level].resolution_usec;
        uint64_t oldest = r->newest >= n - 1 ? r->newest - (n - 1) : 0;
        for (uint64_t b = oldest; b <= r->newest; b++) {
                const HistoryPoint *p = &r->points[b % n];
                /* A bucket that ends after since holds samples from since on. */
                if (p->current_pages == HISTORY_NO_DATA || (b + 1) * res <= since_usec)
                        continue;
                buf[k++] = (HistorySample) { .time_usec = b * res, .current_pages = p->current_pages,
                                             .peak_pages = p->peak_pages };
        }
        return k;
}

unsigned history_level_for(uint64_t seconds) {
        for (unsigned l = 0; l < HISTORY_LEVELS; l++)
                if (seconds * UINT64_C(1000000) <= history_levels[l].resolution_usec * history_levels[l].n_buckets)
                        return l;
        return HISTORY_LEVELS - 1;
}

/*
 * The file, all integers little-endian... as the machine writes them (the file never leaves it; a file
 * from another byte order fails the checksum or the header and is ignored):
 *   "MSTKHIST" u32 version u32 levels, per level u64 resolution_usec u64 n_buckets, u32 n_series,
 *   per series: u32 kind, i32 pid, u32 name length, the name, u64 last_current,
 *               per level: u8 used, u64 newest, n_buckets x (u64 current, u64 peak),
 *   u64 FNV-1a of everything before it.
 */
#define HISTORY_MAGIC "MSTKHIST"
#define HISTORY_VERSION 1u

typedef struct Buf {
        uint8_t *data;
        size_t size, allocated;
        bool failed;
} Buf;

static void buf_put(Buf *b, const void *p, size_t n) {
        if (b->failed)
                return;
        if (b->size + n > b->allocated) {
                size_t a = MAX(b->allocated * 2, b->size + n);
                uint8_t *d = realloc(b->data, a);
                if (!d) {
                        b->failed = true;
                        return;
                }
                b->data = d;
                b->allocated = a;
        }
        memcpy(b->data + b->size, p, n);
        b->size += n;
}

#define BUF_PUT(b, v) buf_put((b), &(v), sizeof(v))

static uint64_t fnv1a(const uint8_t *p, size_t n) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static void serialize(const History *h, Buf *b) {
        uint32_t version = HISTORY_VERSION, levels = HISTORY_LEVELS, n_series = 0;

        buf_put(b, HISTORY_MAGIC, 8);
        BUF_PUT(b, version);
        BUF_PUT(b, levels);
        for (unsigned l = 0; l < HISTORY_LEVELS; l++) {
                uint64_t res = history_levels[l].resolution_usec, n = history_levels[l].n_buckets;
                BUF_PUT(b, res);
                BUF_PUT(b, n);
        }
        for (size_t i = 0; i < HISTORY_SERIES_TOTAL; i++)
                n_series += h->series[i].used;
        BUF_PUT(b, n_series);
        for (size_t i = 0; i < HISTORY_SERIES_TOTAL; i++) {
                const HistorySeries *s = &h->series[i];
                if (!s->used)
                        continue;
                uint32_t kind = (uint32_t) s->kind, name_len = (uint32_t) strlen(s->name);
                BUF_PUT(b, kind);
                BUF_PUT(b, s->pid);
                BUF_PUT(b, name_len);
                buf_put(b, s->name, name_len);
                BUF_PUT(b, s->last_current);
                for (unsigned l = 0; l < HISTORY_LEVELS; l++) {
                        uint8_t used = s->ring[l].used;
                        BUF_PUT(b, used);
                        BUF_PUT(b, s->ring[l].newest);
                        buf_put(b, s->ring[l].points, history_levels[l].n_buckets * sizeof(HistoryPoint));
                }
        }
        uint64_t sum = b->failed ? 0 : fnv1a(b->data, b->size);
        BUF_PUT(b, sum);
}

int history_save(const History *h, const char *path) {
        _cleanup_free_ char *tmp = NULL;
        Buf b = {};
        int r = 0;

        assert(h && path);

        serialize(h, &b);
        if (b.failed) {
                free(b.data);
                return -ENOMEM;
        }
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
                free(b.data);
                return -ENOMEM;
        }
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                free(b.data);
                return r;
        }
        for (size_t done = 0; done < b.size;) {
                ssize_t k = write(fd, b.data + done, b.size - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                done += (size_t) k;
        }
        free(b.data);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

typedef struct Reader {
        const uint8_t *p;
        size_t left;
} Reader;

static bool get(Reader *rd, void *out, size_t n) {
        if (rd->left < n)
                return false;
        memcpy(out, rd->p, n);
        rd->p += n;
        rd->left -= n;
        return true;
}

#define GET(rd, v) get((rd), &(v), sizeof(v))

static int parse(const uint8_t *data, size_t size, HistorySeries *series) {
        Reader rd = { .p = data, .left = size };
        char magic[8];
        uint32_t version, levels, n_series;
        uint64_t sum;
        size_t per_kind[_HISTORY_KIND_MAX] = {};

        if (size < sizeof(sum))
                return -EBADMSG;
        memcpy(&sum, data + size - sizeof(sum), sizeof(sum));
        if (sum != fnv1a(data, size - sizeof(sum)))
                return -EBADMSG;
        rd.left -= sizeof(sum);

        if (!GET(&rd, magic) || memcmp(magic, HISTORY_MAGIC, 8) != 0 || !GET(&rd, version) ||
            version != HISTORY_VERSION || !GET(&rd, levels) || levels != HISTORY_LEVELS)
                return -EBADMSG;
        for (unsigned l = 0; l < HISTORY_LEVELS; l++) {
                uint64_t res, n;
                if (!GET(&rd, res) || !GET(&rd, n) || res != history_levels[l].resolution_usec ||
                    n != history_levels[l].n_buckets)
                        return -EBADMSG;
        }
        if (!GET(&rd, n_series) || n_series > HISTORY_SERIES_TOTAL)
                return -EBADMSG;
        for (uint32_t i = 0; i < n_series; i++) {
                uint32_t kind, name_len;
                int32_t pid;
                char name[HISTORY_NAME_MAX];
                uint64_t last;

                if (!GET(&rd, kind) || kind >= _HISTORY_KIND_MAX || !GET(&rd, pid) || !GET(&rd, name_len) ||
                    name_len >= HISTORY_NAME_MAX || !get(&rd, name, name_len) || !GET(&rd, last))
                        return -EBADMSG;
                name[name_len] = 0;
                if (memchr(name, 0, name_len))
                        return -EBADMSG;
                size_t max = kind == HISTORY_TOTAL ? 1 : HISTORY_SERIES_MAX;
                if (per_kind[kind] >= max)
                        return -EBADMSG;
                HistorySeries *s = kind == HISTORY_TOTAL ? series :
                                   series + 1 + (kind - 1) * HISTORY_SERIES_MAX + per_kind[kind];
                per_kind[kind]++;
                series_init(s, (HistoryKind) kind, pid, name);
                s->last_current = last;
                for (unsigned l = 0; l < HISTORY_LEVELS; l++) {
                        uint8_t used;
                        size_t n = history_levels[l].n_buckets;
                        if (!GET(&rd, used) || used > 1 || !GET(&rd, s->ring[l].newest) ||
                            !get(&rd, s->ring[l].points, n * sizeof(HistoryPoint)))
                                return -EBADMSG;
                        s->ring[l].used = used;
                        for (size_t j = 0; j < n; j++)
                                if (s->ring[l].points[j].current_pages != HISTORY_NO_DATA &&
                                    s->ring[l].points[j].peak_pages < s->ring[l].points[j].current_pages)
                                        return -EBADMSG;
                }
        }
        if (rd.left != 0)
                return -EBADMSG;
        if (per_kind[HISTORY_TOTAL] == 0)
                series_init(series, HISTORY_TOTAL, 0, NULL);
        return 0;
}

int history_load(History *h, const char *path) {
        _cleanup_free_ uint8_t *data = NULL;
        _cleanup_free_ HistorySeries *series = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t max = HISTORY_MEMORY_MAX + 4096, size = 0;
        int r;

        assert(h && path);

        /* Our own file, which we replace by a rename: never a symlink, a FIFO or a device. */
        r = fopen_regular(path, O_NOFOLLOW, &f);
        if (r < 0)
                return r;
        data = malloc(max + 1);
        if (!data)
                return -ENOMEM;
        size = fread(data, 1, max + 1, f);
        if (ferror(f))
                return -EIO;
        if (size > max)
                return -EBADMSG;
        series = calloc(HISTORY_SERIES_TOTAL, sizeof(HistorySeries));
        if (!series)
                return -ENOMEM;
        r = parse(data, size, series);
        if (r < 0)
                return r;
        /* Rings point into their own series' storage: the parsed ones into the new array. */
        free(h->series);
        h->series = TAKE_PTR(series);
        return 0;
}
