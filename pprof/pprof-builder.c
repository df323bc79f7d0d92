/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#include "frame-text.h"
#include "macro.h"
#include "pprof-builder.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__ValueType ValueType;

/*
 * Everything hanging from p is malloc'd, as protobuf-c's unpacker would have allocated it, so
 * perftools__profiles__profile__free_unpacked() frees a half-built profile too: the n_* counts only ever
 * cover initialized entries, the *_alloc capacities are ours. The maps from keys to indices are json
 * objects used as string hash tables: their values are integers, owned by the objects.
 */
struct PprofBuilder {
        Profile *p;
        size_t n_types;
        size_t strings_alloc, samples_alloc, locations_alloc, functions_alloc, mappings_alloc, comments_alloc;
        json_t *string_ids;     /* string -> index into p->string_table */
        json_t *mapping_ids;    /* 'k' or 'u' and name -> Mapping.id */
        json_t *function_ids;   /* mapping id, '\n', function name -> Function.id */
        json_t *location_ids;   /* mapping id, '\n', frame -> Location.id */
        json_t *sample_ids;     /* location ids and label strings -> index into p->sample */
};

PprofBuilder *pprof_builder_free(PprofBuilder *b) {
        if (!b)
                return NULL;
        if (b->p)
                perftools__profiles__profile__free_unpacked(b->p, NULL);
        json_decref(b->string_ids);
        json_decref(b->mapping_ids);
        json_decref(b->function_ids);
        json_decref(b->location_ids);
        json_decref(b->sample_ids);
        free(b);
        return NULL;
}

/* The index of s in the string table, adding it if new; -ENOMEM. */
static int64_t intern(PprofBuilder *b, const char *s) {
        Profile *p = b->p;
        json_t *id = json_object_get(b->string_ids, s);
        char *copy;

        if (id)
                return json_integer_value(id);
        if (greedy_realloc(&p->string_table, &b->strings_alloc, p->n_string_table + 1, sizeof(char *), 16) < 0)
                return -ENOMEM;
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        /* In the table first, so that it is freed with the table if the index cannot be added. */
        p->string_table[p->n_string_table++] = copy;
        if (json_object_set_new_nocheck(b->string_ids, s, json_integer((json_int_t) p->n_string_table - 1)) < 0)
                return -ENOMEM;
        return (int64_t) p->n_string_table - 1;
}

/* A new ValueType {type, unit}, or NULL. */
static ValueType *value_type_new(PprofBuilder *b, const char *type, const char *unit) {
        int64_t t = intern(b, type), u = intern(b, unit);
        ValueType *v;

        if (t < 0 || u < 0)
                return NULL;
        v = malloc(sizeof(*v));
        if (!v)
                return NULL;
        perftools__profiles__value_type__init(v);
        v->type = t;
        v->unit = u;
        return v;
}

int pprof_builder_new(const PprofValueType *types, size_t n_types, const char *default_type, PprofBuilder **ret) {
        _cleanup_(pprof_builder_freep) PprofBuilder *b = NULL;
        Profile *p;

        assert(ret);
        if (n_types == 0 || n_types > PPROF_VALUES_MAX)
                return -EINVAL;
        b = calloc(1, sizeof(PprofBuilder));
        if (!b)
                return -ENOMEM;
        b->n_types = n_types;
        b->p = p = malloc(sizeof(*p));
        b->string_ids = json_object();
        b->mapping_ids = json_object();
        b->function_ids = json_object();
        b->location_ids = json_object();
        b->sample_ids = json_object();
        if (!p || !b->string_ids || !b->mapping_ids || !b->function_ids || !b->location_ids || !b->sample_ids)
                return -ENOMEM;
        perftools__profiles__profile__init(p);

        /* string_table[0] must be "". */
        if (intern(b, "") != 0)
                return -ENOMEM;
        p->sample_type = calloc(n_types, sizeof(ValueType *));
        if (!p->sample_type)
                return -ENOMEM;
        for (size_t i = 0; i < n_types; i++)
                if (!(p->sample_type[p->n_sample_type++] = value_type_new(b, types[i].type, types[i].unit)))
                        return -ENOMEM;
        if (default_type) {
                p->default_sample_type = intern(b, default_type);
                if (p->default_sample_type < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

int pprof_builder_set_period(PprofBuilder *b, const char *type, const char *unit, int64_t period) {
        ValueType *v = value_type_new(b, type, unit);

        if (!v)
                return -ENOMEM;
        free(b->p->period_type);
        b->p->period_type = v;
        b->p->period = period;
        return 0;
}

void pprof_builder_set_time(PprofBuilder *b, int64_t time_nanos, int64_t duration_nanos) {
        b->p->time_nanos = time_nanos;
        b->p->duration_nanos = duration_nanos;
}

int pprof_builder_comment(PprofBuilder *b, const char *format, ...) {
        _cleanup_free_ char *text = NULL;
        Profile *p = b->p;
        va_list ap;
        int64_t s;
        int r;

        va_start(ap, format);
        r = vasprintf(&text, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        s = intern(b, text);
        if (s < 0)
                return (int) s;
        if (greedy_realloc(&p->comment, &b->comments_alloc, p->n_comment + 1, sizeof(int64_t), 16) < 0)
                return -ENOMEM;
        p->comment[p->n_comment++] = s;
        return 0;
}

int pprof_builder_mapping(PprofBuilder *b, bool user, const char *name, const PprofMapping *m, uint64_t *ret_id) {
        _cleanup_free_ char *key = NULL;
        Profile *p = b->p;
        Mapping *map;
        json_t *id;

        if (asprintf(&key, "%c%s", user ? 'u' : 'k', name) < 0)
                return -ENOMEM;
        id = json_object_get(b->mapping_ids, key);
        if (id) {
                *ret_id = (uint64_t) json_integer_value(id);
                return 0;
        }
        int64_t file = intern(b, m && m->file ? m->file : name);
        int64_t build_id = m && m->build_id ? intern(b, m->build_id) : 0;
        if (file < 0 || build_id < 0)
                return -ENOMEM;
        if (greedy_realloc(&p->mapping, &b->mappings_alloc, p->n_mapping + 1, sizeof(Mapping *), 16) < 0)
                return -ENOMEM;
        map = malloc(sizeof(*map));
        if (!map)
                return -ENOMEM;
        perftools__profiles__mapping__init(map);
        p->mapping[p->n_mapping++] = map;
        map->id = p->n_mapping;
        map->filename = file;
        map->build_id = build_id;
        if (m) {
                map->memory_start = m->start;
                map->memory_limit = m->limit;
                map->file_offset = m->offset;
        }
        /* Frames arrive named: readers must not look the addresses up in these files again. */
        map->has_functions = true;
        if (json_object_set_new_nocheck(b->mapping_ids, key, json_integer((json_int_t) map->id)) < 0)
                return -ENOMEM;
        *ret_id = map->id;
        return 0;
}

/* The id of frame's function (its name without the offset) in mapping. */
static int function_id(PprofBuilder *b, uint64_t mapping, const char *frame, uint64_t *ret) {
        _cleanup_free_ char *name = frame_text_function_name(frame), *key = NULL;
        Profile *p = b->p;
        Function *fn;
        json_t *id;

        if (!name || asprintf(&key, "%" PRIu64 "\n%s", mapping, name) < 0)
                return -ENOMEM;
        id = json_object_get(b->function_ids, key);
        if (id) {
                *ret = (uint64_t) json_integer_value(id);
                return 0;
        }
        int64_t s = intern(b, name);
        if (s < 0)
                return -ENOMEM;
        if (greedy_realloc(&p->function, &b->functions_alloc, p->n_function + 1, sizeof(Function *), 16) < 0)
                return -ENOMEM;
        fn = malloc(sizeof(*fn));
        if (!fn)
                return -ENOMEM;
        perftools__profiles__function__init(fn);
        p->function[p->n_function++] = fn;
        fn->id = p->n_function;
        fn->name = s;
        fn->system_name = s;
        if (json_object_set_new_nocheck(b->function_ids, key, json_integer((json_int_t) fn->id)) < 0)
                return -ENOMEM;
        *ret = fn->id;
        return 0;
}

int pprof_builder_location(PprofBuilder *b, uint64_t mapping, const char *frame, uint64_t address, uint64_t *ret_id) {
        _cleanup_free_ char *key = NULL;
        Profile *p = b->p;
        uint64_t fid;
        Location *loc;
        Line *line;
        json_t *id;
        int r;

        if (asprintf(&key, "%" PRIu64 "\n%s", mapping, frame) < 0)
                return -ENOMEM;
        id = json_object_get(b->location_ids, key);
        if (id) {
                *ret_id = (uint64_t) json_integer_value(id);
                return 0;
        }
        r = function_id(b, mapping, frame, &fid);
        if (r < 0)
                return r;
        if (greedy_realloc(&p->location, &b->locations_alloc, p->n_location + 1, sizeof(Location *), 16) < 0)
                return -ENOMEM;
        loc = malloc(sizeof(*loc));
        if (!loc)
                return -ENOMEM;
        perftools__profiles__location__init(loc);
        p->location[p->n_location++] = loc;
        loc->id = p->n_location;
        loc->mapping_id = mapping;
        loc->address = address;
        loc->line = calloc(1, sizeof(Line *));
        if (!loc->line)
                return -ENOMEM;
        line = malloc(sizeof(*line));
        if (!line)
                return -ENOMEM;
        perftools__profiles__line__init(line);
        loc->line[0] = line;
        loc->n_line = 1;
        line->function_id = fid;
        if (json_object_set_new_nocheck(b->location_ids, key, json_integer((json_int_t) loc->id)) < 0)
                return -ENOMEM;
        *ret_id = loc->id;
        return 0;
}

/* The address a frame stands for: the hex text the daemon sent, else the one in "[user] 0x7f3a12345678",
 * else 0 (unknown). */
static uint64_t frame_address(const char *address, const char *frame) {
        const char *a = address;
        char *end = NULL;
        unsigned long long v;

        if (!a && strncmp(frame, "[user] 0x", 9) == 0)
                a = frame + 7;
        if (!a || strncmp(a, "0x", 2) != 0)
                return 0;
        errno = 0;
        v = strtoull(a + 2, &end, 16);
        if (errno != 0 || end == a + 2 || *end)
                return 0;
        return (uint64_t) v;
}

int pprof_builder_frame(PprofBuilder *b, const char *frame, const char *module, bool user, const char *address,
                uint64_t *ret_id) {
        uint64_t mapping = 0;
        int r;

        /* "[user] 0x...", "[all]", "[pid N comm]", "[not sampled]", "[truncated]": no file holds them. */
        if (frame[0] != '[') {
                r = pprof_builder_mapping(b, user && module, module ?: PPROF_KERNEL_MAPPING, NULL, &mapping);
                if (r < 0)
                        return r;
        }
        return pprof_builder_location(b, mapping, frame, frame_address(address, frame), ret_id);
}

/* a + b, held at INT64_MAX or INT64_MIN instead of wrapping. */
static int64_t add_saturating(int64_t a, int64_t b) {
        int64_t sum;

        if (__builtin_add_overflow(a, b, &sum))
                return b > 0 ? INT64_MAX : INT64_MIN;
        return sum;
}

/* A new sample of the stack and labels (string indices, key and value in turn), its values 0. */
static Sample *sample_new(PprofBuilder *b, const uint64_t *locations, size_t n, const int64_t *label_strings,
                size_t n_labels) {
        Profile *p = b->p;
        Sample *s;

        if (greedy_realloc(&p->sample, &b->samples_alloc, p->n_sample + 1, sizeof(Sample *), 64) < 0)
                return NULL;
        s = malloc(sizeof(*s));
        if (!s)
                return NULL;
        perftools__profiles__sample__init(s);
        p->sample[p->n_sample++] = s;
        s->location_id = malloc(MAX(n, (size_t) 1) * sizeof(uint64_t));
        s->value = calloc(b->n_types, sizeof(int64_t));
        s->label = n_labels > 0 ? calloc(n_labels, sizeof(Label *)) : NULL;
        if (!s->location_id || !s->value || (n_labels > 0 && !s->label))
                return NULL;
        memcpy(s->location_id, locations, n * sizeof(uint64_t));
        s->n_location_id = n;
        s->n_value = b->n_types;
        for (size_t i = 0; i < n_labels; i++) {
                Label *l = malloc(sizeof(*l));
                if (!l)
                        return NULL;
                perftools__profiles__label__init(l);
                s->label[s->n_label++] = l;
                l->key = label_strings[2 * i];
                l->str = label_strings[2 * i + 1];
        }
        return s;
}

/* What identifies a sample: its location ids and its label strings, as text. New string or NULL. */
static char *sample_key(const uint64_t *locations, size_t n, const int64_t *label_strings, size_t n_labels) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%" PRIx64 ",", locations[i]);
        fputc('|', f);
        for (size_t i = 0; i < 2 * n_labels; i++)
                fprintf(f, "%" PRIx64 ",", (uint64_t) label_strings[i]);
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(text);
}

int pprof_builder_add(PprofBuilder *b, const uint64_t *locations, size_t n, const int64_t *values,
                const PprofLabel *labels, size_t n_labels, int scale) {
        _cleanup_free_ int64_t *label_strings = NULL;
        _cleanup_free_ char *key = NULL;
        Sample *s;
        json_t *id;

        assert(scale == 1 || scale == -1);
        if (n_labels > 0) {
                label_strings = malloc(2 * n_labels * sizeof(int64_t));
                if (!label_strings)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n_labels; i++) {
                label_strings[2 * i] = intern(b, labels[i].key);
                label_strings[2 * i + 1] = intern(b, labels[i].value);
                if (label_strings[2 * i] < 0 || label_strings[2 * i + 1] < 0)
                        return -ENOMEM;
        }
        key = sample_key(locations, n, label_strings, n_labels);
        if (!key)
                return -ENOMEM;
        id = json_object_get(b->sample_ids, key);
        if (id)
                s = b->p->sample[json_integer_value(id)];
        else {
                s = sample_new(b, locations, n, label_strings, n_labels);
                if (!s)
                        return -ENOMEM;
                if (json_object_set_new_nocheck(b->sample_ids, key, json_integer((json_int_t) b->p->n_sample - 1)) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < b->n_types; i++)
                /* -INT64_MIN does not exist: it is held at -INT64_MAX. */
                s->value[i] = add_saturating(s->value[i], scale > 0 ? values[i] : values[i] == INT64_MIN ?
                                                          INT64_MAX : -values[i]);
        return 0;
}

static bool sample_is_zero(const Sample *s) {
        for (size_t i = 0; i < s->n_value; i++)
                if (s->value[i] != 0)
                        return false;
        return true;
}

int pprof_builder_encode(PprofBuilder *b, uint8_t **ret, size_t *ret_size, PprofBuilderStats *ret_stats) {
        _cleanup_free_ uint8_t *buf = NULL;
        Profile *p = b->p;
        size_t size, kept = 0;

        assert(ret && ret_size);
        /* The sample index is of no use any more: the samples move. */
        json_object_clear(b->sample_ids);
        for (size_t i = 0; i < p->n_sample; i++) {
                if (sample_is_zero(p->sample[i])) {
                        perftools__profiles__sample__free_unpacked(p->sample[i], NULL);
                        continue;
                }
                p->sample[kept++] = p->sample[i];
        }
        p->n_sample = kept;

        size = perftools__profiles__profile__get_packed_size(p);
        buf = malloc(MAX(size, (size_t) 1));
        if (!buf)
                return -ENOMEM;
        if (perftools__profiles__profile__pack(p, buf) != size)
                return -EIO;
        if (ret_stats)
                *ret_stats = (PprofBuilderStats) {
                        .n_samples = p->n_sample,
                        .n_locations = p->n_location,
                        .n_functions = p->n_function,
                        .n_mappings = p->n_mapping,
                        .n_strings = p->n_string_table,
                };
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

int pprof_gzip(const uint8_t *data, size_t size, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *out = NULL;
        z_stream z = {};
        uLong bound;
        int zr;

        if (size > UINT32_MAX)          /* z_stream counts in uInt */
                return -EFBIG;
        /* 15 window bits, +16: a gzip header and trailer instead of zlib's. */
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        bound = deflateBound(&z, (uLong) size);
        out = malloc(bound);
        if (!out) {
                (void) deflateEnd(&z);
                return -ENOMEM;
        }
        z.next_in = (Bytef *) data;
        z.avail_in = (uInt) size;
        z.next_out = out;
        z.avail_out = (uInt) bound;
        zr = deflate(&z, Z_FINISH);
        *ret_size = z.total_out;
        (void) deflateEnd(&z);
        if (zr != Z_STREAM_END)
                return -EIO;
        *ret = TAKE_PTR(out);
        return 0;
}
