/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "flamegraph.h"
#include "macro.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "reply.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__ValueType ValueType;

/* The mapping of the kernel image; kernel modules and user files go by their own names. */
#define PPROF_KERNEL_MAPPING "vmlinux"

/*
 * The profile under construction. Everything hanging from p is malloc'd, as protobuf-c's unpacker would
 * have allocated it, so perftools__profiles__profile__free_unpacked() frees a half-built profile too: the
 * n_* counts only ever cover initialized entries, the *_alloc capacities are ours.
 */
typedef struct Builder {
        Profile *p;
        size_t strings_alloc, samples_alloc, locations_alloc, functions_alloc, mappings_alloc, comments_alloc;
        /* Keys to indices, for deduplication; json integers, owned by the objects. */
        json_t *string_ids;     /* string -> index into p->string_table */
        json_t *mapping_ids;    /* "k" or "u" (kernel or user side) and module name -> Mapping.id */
        json_t *function_ids;   /* mapping key, '\n', function name -> Function.id */
        json_t *location_ids;   /* mapping key, '\n', frame as sent -> Location.id */
        /* Location ids from below the root down to the node being visited. */
        uint64_t *stack;
        size_t n_stack, stack_alloc;
        uint64_t page_size;
        bool heap;                      /* PprofSource.heap */
        uint64_t pages;         /* sum of the samples' pages */
        uint64_t truncated;     /* children the daemon left out, summed over the tree */
} Builder;

static void builder_done(Builder *b) {
        if (b->p)
                perftools__profiles__profile__free_unpacked(b->p, NULL);
        json_decref(b->string_ids);
        json_decref(b->mapping_ids);
        json_decref(b->function_ids);
        json_decref(b->location_ids);
        free(b->stack);
}

/* The index of s in the string table, adding it if new. -ENOMEM. */
static int64_t intern(Builder *b, const char *s) {
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

static int add_comment(Builder *b, const char *text) {
        Profile *p = b->p;
        int64_t s = intern(b, text);

        if (s < 0)
                return (int) s;
        if (greedy_realloc(&p->comment, &b->comments_alloc, p->n_comment + 1, sizeof(int64_t), 16) < 0)
                return -ENOMEM;
        p->comment[p->n_comment++] = s;
        return 0;
}

static int add_commentf(Builder *b, const char *format, ...) _printf_(2, 3);
static int add_commentf(Builder *b, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return add_comment(b, s);
}

/* A new ValueType {type, unit}, or NULL. */
static ValueType *value_type_new(Builder *b, const char *type, const char *unit) {
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

/* A key of a part and a name: "part\nname". New string or NULL. */
static char *make_key(const char *part, const char *name) {
        char *k;

        if (asprintf(&k, "%s\n%s", part, name) < 0)
                return NULL;
        return k;
}

/* The id of the mapping for module on the kernel or user side (mkey names it for the other tables). */
static int mapping_id(Builder *b, const char *module, bool user, uint64_t *ret_id, char **ret_key) {
        _cleanup_free_ char *key = NULL;
        Profile *p = b->p;
        json_t *id;
        Mapping *m;

        if (asprintf(&key, "%c%s", user ? 'u' : 'k', module) < 0)
                return -ENOMEM;
        id = json_object_get(b->mapping_ids, key);
        if (id) {
                *ret_id = (uint64_t) json_integer_value(id);
                *ret_key = TAKE_PTR(key);
                return 0;
        }
        int64_t filename = intern(b, module);
        if (filename < 0)
                return -ENOMEM;
        if (greedy_realloc(&p->mapping, &b->mappings_alloc, p->n_mapping + 1, sizeof(Mapping *), 16) < 0)
                return -ENOMEM;
        m = malloc(sizeof(*m));
        if (!m)
                return -ENOMEM;
        perftools__profiles__mapping__init(m);
        p->mapping[p->n_mapping++] = m;
        m->id = p->n_mapping;
        m->filename = filename;
        /* Frames arrive symbolized: readers must not look the (absent) addresses up in these files. */
        m->has_functions = true;
        if (json_object_set_new_nocheck(b->mapping_ids, key, json_integer((json_int_t) m->id)) < 0)
                return -ENOMEM;
        *ret_id = m->id;
        *ret_key = TAKE_PTR(key);
        return 0;
}

static int function_id(Builder *b, const char *mkey, const char *frame, uint64_t *ret) {
        _cleanup_free_ char *name = flamegraph_function_name(frame), *key = NULL;
        Profile *p = b->p;
        Function *fn;
        json_t *id;

        if (!name)
                return -ENOMEM;
        key = make_key(mkey, name);
        if (!key)
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

/* The address a frame stands for: the node's raw address when the daemon sent it (root callers only),
 * else the one in "[user] 0x7f3a12345678", else 0 (unknown). */
static uint64_t frame_address(const json_t *node, const char *frame) {
        const char *a = reply_string(node, "address"), *end = NULL;
        unsigned long long v;

        if (!a && strncmp(frame, "[user] 0x", 9) == 0)
                a = frame + 7;
        if (!a || strncmp(a, "0x", 2) != 0)
                return 0;
        errno = 0;
        v = strtoull(a + 2, (char **) &end, 16);
        if (errno != 0 || end == a + 2 || *end)
                return 0;
        return (uint64_t) v;
}

typedef enum FrameKind {
        FRAME_SYNTHETIC,        /* "[all]", "[pid N comm]", "[not sampled]", "[truncated]", ...: no mapping */
        FRAME_USER_RAW,         /* "[user] 0x...": a user address without a symbol: no mapping */
        FRAME_KERNEL_IMAGE,     /* module null: the kernel image */
        FRAME_MODULE,           /* a kernel module, or a user ELF file below a process node */
} FrameKind;

static FrameKind frame_kind(const char *frame, const char *module) {
        if (strncmp(frame, "[user] ", 7) == 0)
                return FRAME_USER_RAW;
        if (frame[0] == '[')
                return FRAME_SYNTHETIC;
        return module ? FRAME_MODULE : FRAME_KERNEL_IMAGE;
}

/* The location id of node's frame. user: the frame is on the user side of its stack (see walk()). */
static int location_id(Builder *b, const json_t *node, bool user, uint64_t *ret) {
        const char *frame = reply_string(node, "frame") ?: "[unknown]", *module = reply_string(node, "module");
        _cleanup_free_ char *mkey = NULL, *key = NULL;
        FrameKind kind = frame_kind(frame, module);
        uint64_t mid = 0, fid;
        Profile *p = b->p;
        Location *loc;
        Line *line;
        json_t *id;
        int r;

        if (kind == FRAME_KERNEL_IMAGE || kind == FRAME_MODULE) {
                r = mapping_id(b, kind == FRAME_MODULE ? module : PPROF_KERNEL_MAPPING, kind == FRAME_MODULE && user,
                               &mid, &mkey);
                if (r < 0)
                        return r;
        } else {
                mkey = strdup("");
                if (!mkey)
                        return -ENOMEM;
        }
        key = make_key(mkey, frame);
        if (!key)
                return -ENOMEM;
        id = json_object_get(b->location_ids, key);
        if (id) {
                *ret = (uint64_t) json_integer_value(id);
                return 0;
        }

        r = function_id(b, mkey, frame, &fid);
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
        loc->mapping_id = mid;
        loc->address = frame_address(node, frame);
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
        *ret = loc->id;
        return 0;
}

/* A sample of count objects, bytes bytes for the stack b->stack (outermost first), written leaf first. */
static int add_sample(Builder *b, uint64_t count, uint64_t bytes) {
        Profile *p = b->p;
        Sample *s;

        if (greedy_realloc(&p->sample, &b->samples_alloc, p->n_sample + 1, sizeof(Sample *), 16) < 0)
                return -ENOMEM;
        s = malloc(sizeof(*s));
        if (!s)
                return -ENOMEM;
        perftools__profiles__sample__init(s);
        p->sample[p->n_sample++] = s;
        s->location_id = malloc(MAX(b->n_stack, (size_t) 1) * sizeof(uint64_t));
        s->value = malloc(2 * sizeof(int64_t));
        if (!s->location_id || !s->value)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_stack; i++)
                s->location_id[i] = b->stack[b->n_stack - 1 - i];
        s->n_location_id = b->n_stack;
        s->value[0] = (int64_t) MIN(count, (uint64_t) INT64_MAX);
        s->value[1] = (int64_t) MIN(bytes, (uint64_t) INT64_MAX);
        s->n_value = 2;
        b->pages += b->heap ? bytes : count;
        return 0;
}

/* The sample of pages: their count, and their bytes (a page count from a file can be anything up to
 * INT64_MAX: bytes saturate instead of wrapping). */
static int add_pages_sample(Builder *b, uint64_t pages) {
        return add_sample(b, pages, pages > (uint64_t) INT64_MAX / b->page_size ? INT64_MAX : pages * b->page_size);
}

/*
 * Visits node's children and their subtrees, then adds node's own pages as a sample. user: the node is
 * below a process node ("[pid N comm]", where the daemon hangs stacks with user frames, outermost user
 * frame first) and above the first kernel image frame, where a stack enters the kernel: frames with a
 * module there are user ELF files, elsewhere kernel modules.
 */
static int walk(Builder *b, const json_t *node, bool user, unsigned level) {
        uint64_t held = 0, cur = reply_count(node, "currentPages");
        uint64_t held_blocks = 0, blocks = reply_count(node, "currentBlocks");
        json_t *child;
        size_t i;
        int r;

        /* jansson refuses documents nested deeper than 2048; this is only a guard against a loop. */
        if (level > 4096)
                return -ELOOP;
        b->truncated += reply_count(node, "truncatedChildren");
        json_array_foreach(reply_array(node, "children"), i, child) {
                const char *frame = reply_string(child, "frame") ?: "[unknown]";
                FrameKind kind = frame_kind(frame, reply_string(child, "module"));
                bool below = kind == FRAME_KERNEL_IMAGE ? false : user || strncmp(frame, "[pid ", 5) == 0;
                uint64_t loc;

                r = location_id(b, child, user && kind != FRAME_KERNEL_IMAGE, &loc);
                if (r < 0)
                        return r;
                r = greedy_realloc(&b->stack, &b->stack_alloc, b->n_stack + 1, sizeof(uint64_t), 16);
                if (r < 0)
                        return r;
                b->stack[b->n_stack++] = loc;
                r = walk(b, child, below, level + 1);
                b->n_stack--;
                if (r < 0)
                        return r;
                held += reply_count(child, "currentPages");
                held_blocks += reply_count(child, "currentBlocks");
        }
        if (level > 0 && cur > held)
                return b->heap ? add_sample(b, blocks > held_blocks ? blocks - held_blocks : 0, cur - held)
                               : add_pages_sample(b, cur - held);
        return 0;
}

static int build(Builder *b, const PprofSource *s) {
        const json_t *root = reply_object(s->tree, "root");
        int64_t interval = s->sample_interval >= 0 ? s->sample_interval :
                           reply_int(s->tree, "stackSampleInterval", -1);
        uint64_t root_pages, loc;
        Profile *p;
        int r;

        if (!root)
                return -EINVAL;
        b->page_size = s->page_size;
        b->heap = s->heap;
        b->p = p = malloc(sizeof(*p));
        b->string_ids = json_object();
        b->mapping_ids = json_object();
        b->function_ids = json_object();
        b->location_ids = json_object();
        if (!p || !b->string_ids || !b->mapping_ids || !b->function_ids || !b->location_ids)
                return -ENOMEM;
        perftools__profiles__profile__init(p);

        /* string_table[0] must be "". */
        if (intern(b, "") != 0)
                return -ENOMEM;
        /* Counts first, as the format's comment asks of a value that counts events. */
        p->sample_type = calloc(2, sizeof(ValueType *));
        if (!p->sample_type)
                return -ENOMEM;
        if (!(p->sample_type[p->n_sample_type++] = value_type_new(b, "inuse_objects", "count")) ||
            !(p->sample_type[p->n_sample_type++] = value_type_new(b, "inuse_space", "bytes")))
                return -ENOMEM;
        p->default_sample_type = intern(b, "inuse_space");
        if (p->default_sample_type < 0)
                return -ENOMEM;
        /* As in Go heap profiles: the sampling period in bytes. Values are scaled already: a reader
         * shows them as they are. */
        p->period_type = value_type_new(b, "space", "bytes");
        if (!p->period_type)
                return -ENOMEM;
        uint64_t every = (uint64_t) MAX(interval, (int64_t) 1);
        p->period = every > (uint64_t) INT64_MAX / s->page_size ? INT64_MAX : (int64_t) (every * s->page_size);
        p->time_nanos = s->time_nanos;

        /* The kernel image is the main binary: mapping[0], as readers take it to name the profile. */
        _cleanup_free_ char *kernel_key = NULL;
        uint64_t kernel_id;
        r = s->heap ? 0 : mapping_id(b, PPROF_KERNEL_MAPPING, false, &kernel_id, &kernel_key);
        if (r < 0)
                return r;

        /* A task's view has its root "[pid N]": frames with a module right below it may be user ones. */
        r = walk(b, root, s->heap || strncmp(reply_string(root, "frame") ?: "", "[pid ", 5) == 0, 0);
        if (r < 0)
                return r;
        /* Pages at the root itself (stacks cut at the root, children left out there): a frame of their
         * own named after the root, so the samples add up to the tree's total. */
        root_pages = reply_count(root, "currentPages");
        if (root_pages > b->pages) {
                r = location_id(b, root, false, &loc);
                if (r < 0)
                        return r;
                b->n_stack = 0;
                r = greedy_realloc(&b->stack, &b->stack_alloc, 1, sizeof(uint64_t), 16);
                if (r < 0)
                        return r;
                b->stack[b->n_stack++] = loc;
                r = b->heap ? add_sample(b, 0, root_pages - b->pages) : add_pages_sample(b, root_pages - b->pages);
                if (r < 0)
                        return r;
        }

        if (s->heap) {
                if ((r = add_commentf(b, "memstrack: user-space heap at its maximum, by allocation call stack "
                                      "(%s)", s->scope ?: "all")) < 0 ||
                    (r = add_comment(b, "inuse_objects counts blocks, inuse_space their bytes "
                                     "(malloc_usable_size())")) < 0)
                        return r;
                if (interval > 1)
                        r = add_commentf(b, "stacks sampled about 1 per %" PRIi64 " bytes: each stack's values are "
                                         "an estimate, scaled so the totals are the exact counts", interval);
                else
                        r = add_comment(b, "every allocation's stack: values are exact");
                if (r < 0)
                        return r;
                interval = 0;   /* said */
        } else if ((r = add_commentf(b, "memstrack: kernel pages held now, by allocation call stack (%s)",
                                     s->scope ?: "all")) < 0 ||
                   (r = add_commentf(b, "inuse_objects counts pages, inuse_space their bytes (%" PRIu64 " per "
                                     "page); no alloc_* values: allocations are counted per task, not per stack",
                                     s->page_size)) < 0)
                return r;
        if (interval > 1)
                r = add_commentf(b, "stacks sampled about 1 in %" PRIi64 " pages (stackSampleInterval): each "
                                 "stack's pages are an estimate, scaled so the totals are the exact counts",
                                 interval);
        else if (interval == 1)
                r = add_comment(b, "stacks taken for every allocation (stackSampleInterval 1): counts are exact");
        else if (interval == 0 && !s->heap)
                r = add_comment(b, "no stacks taken (stackSampleInterval 0): pages are at the root frame");
        if (r < 0)
                return r;
        if (b->truncated > 0 &&
            (r = add_commentf(b, "branches too small for the daemon to send: %" PRIu64 ", counted in the "
                              "frames above them", b->truncated)) < 0)
                return r;
        if (s->generator && (r = add_commentf(b, "generated by %s", s->generator)) < 0)
                return r;
        return 0;
}

int pprof_encode(const PprofSource *s, uint8_t **ret, size_t *ret_size, PprofStats *ret_stats) {
        _cleanup_(builder_done) Builder b = {};
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size;
        int r;

        assert(s && s->page_size > 0 && ret && ret_size);

        r = build(&b, s);
        if (r < 0)
                return r;
        size = perftools__profiles__profile__get_packed_size(b.p);
        buf = malloc(MAX(size, (size_t) 1));
        if (!buf)
                return -ENOMEM;
        if (perftools__profiles__profile__pack(b.p, buf) != size)
                return -EIO;
        if (ret_stats)
                *ret_stats = (PprofStats) {
                        .pages = b.pages,
                        .n_samples = b.p->n_sample,
                        .n_locations = b.p->n_location,
                        .n_functions = b.p->n_function,
                        .n_mappings = b.p->n_mapping,
                        .n_strings = b.p->n_string_table,
                };
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* data as a gzip member (zlib's deflate with the gzip wrapper) in *ret. -ENOMEM, -EIO. */
static int gzip_buffer(const uint8_t *data, size_t size, uint8_t **ret, size_t *ret_size) {
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

int pprof_write_gzip(const uint8_t *data, size_t size, const char *path) {
        _cleanup_free_ uint8_t *gz = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n, done = 0;
        int r;

        r = gzip_buffer(data, size, &gz, &n);
        if (r < 0)
                return r;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
                return negative_errno();
        while (done < n) {
                ssize_t w = write(fd, gz + done, n - done);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                done += (size_t) w;
        }
        if (close(TAKE_FD(fd)) < 0)
                return negative_errno();
        return 0;
}
