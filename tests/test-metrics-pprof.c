/* SPDX-License-Identifier: MIT */

/*
 * memstrack-metrics' /debug/pprof without HTTP: the query string read strictly (metrics/pprof-request.c),
 * and profiles rendered from fixed Profile and Heap replies (metrics/pprof-render.c), gunzipped and decoded
 * again with protobuf-c: Go's sample types and order, labels, stacks, mappings with build IDs, deltas.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#include "macro.h"
#include "pprof-render.h"
#include "pprof-request.h"
#include "profile.pb-c.h"
#include "tests.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;

/* --- The query string ------------------------------------------------------------------------------- */

static void test_endpoints(void) {
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/heap"), PPROF_HEAP);
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/allocs"), PPROF_ALLOCS);
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/slab"), PPROF_SLAB);
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/userheap"), PPROF_USERHEAP);
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/"), _PPROF_ENDPOINT_INVALID);
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/heap/"), _PPROF_ENDPOINT_INVALID);
        ASSERT_EQ(pprof_endpoint_from_path("/debug/pprof/profile"), _PPROF_ENDPOINT_INVALID);
        ASSERT_EQ(pprof_endpoint_from_path("/heap"), _PPROF_ENDPOINT_INVALID);
        ASSERT_EQ(pprof_endpoint_from_path(NULL), _PPROF_ENDPOINT_INVALID);
        ASSERT_STREQ(pprof_endpoint_to_string(PPROF_USERHEAP), "userheap");
        ASSERT_NULL(pprof_endpoint_to_string(_PPROF_ENDPOINT_MAX));
}

static void parse_ok(PprofEndpoint e, const char *query, PprofRequest *ret) {
        _cleanup_free_ char *reason = NULL;
        int r = pprof_request_parse(e, query, ret, &reason);
        if (r != 0) {
                fprintf(stderr, "query \"%s\": %d %s\n", query, r, reason ?: "");
                abort();
        }
        ASSERT_NULL(reason);
}

/* Refused with a reason containing needle, and a single line. */
static void parse_refused(PprofEndpoint e, const char *query, const char *needle) {
        _cleanup_free_ char *reason = NULL;
        PprofRequest r = { .seconds = 99 };

        ASSERT_EQ(pprof_request_parse(e, query, &r, &reason), -EINVAL);
        ASSERT_NOT_NULL(reason);
        if (!strstr(reason, needle)) {
                fprintf(stderr, "query \"%s\": reason \"%s\" says nothing of \"%s\"\n", query, reason, needle);
                abort();
        }
        ASSERT_NULL(strchr(reason, '\n'));
        ASSERT_EQ(r.seconds, 99u);
}

static void test_query(void) {
        PprofRequest r;

        parse_ok(PPROF_HEAP, NULL, &r);
        ASSERT_EQ(r.seconds, 0u);
        ASSERT_EQ(r.pid, 0);
        ASSERT_NULL(r.unit);
        pprof_request_done(&r);
        parse_ok(PPROF_HEAP, "", &r);
        pprof_request_done(&r);
        parse_ok(PPROF_ALLOCS, "seconds=5&unit=web%2Eservice&debug=0&gc=1", &r);
        ASSERT_EQ(r.endpoint, PPROF_ALLOCS);
        ASSERT_EQ(r.seconds, 5u);
        ASSERT_STREQ(r.unit, "web.service");
        pprof_request_done(&r);
        parse_ok(PPROF_HEAP, "seconds=60", &r);
        ASSERT_EQ(r.seconds, PPROF_SECONDS_MAX);
        pprof_request_done(&r);
        /* '+' and %20 are spaces, as in a form: a unit of a cgroup path with one. */
        parse_ok(PPROF_HEAP, "unit=a+b%20c", &r);
        ASSERT_STREQ(r.unit, "a b c");
        pprof_request_done(&r);
        parse_ok(PPROF_SLAB, "module=ext4", &r);
        ASSERT_STREQ(r.module, "ext4");
        pprof_request_done(&r);
        parse_ok(PPROF_USERHEAP, "pid=2147483647", &r);
        ASSERT_EQ(r.pid, INT32_MAX);
        pprof_request_done(&r);

        /* Malformed query strings. */
        parse_refused(PPROF_HEAP, "seconds", "not name=value");
        parse_refused(PPROF_HEAP, "=5", "not name=value");
        parse_refused(PPROF_HEAP, "&seconds=5", "empty parameter");
        parse_refused(PPROF_HEAP, "seconds=5&", "empty parameter");
        parse_refused(PPROF_HEAP, "seconds=5&&pid=1", "empty parameter");
        parse_refused(PPROF_HEAP, "unit=%zz", "%-escape");
        parse_refused(PPROF_HEAP, "unit=abc%4", "%-escape");
        parse_refused(PPROF_HEAP, "unit=a%00b", "%-escape");
        parse_refused(PPROF_HEAP, "%73econds=1&seconds=2", "twice");
        /* Unknown and repeated parameters, values out of range. */
        parse_refused(PPROF_HEAP, "sec=5", "unknown parameter \"sec\"");
        parse_refused(PPROF_HEAP, "seconds=5&seconds=6", "twice");
        parse_refused(PPROF_HEAP, "seconds=0", "positive integer");
        parse_refused(PPROF_HEAP, "seconds=-5", "positive integer");
        parse_refused(PPROF_HEAP, "seconds=05", "positive integer");
        parse_refused(PPROF_HEAP, "seconds=1.5", "positive integer");
        parse_refused(PPROF_HEAP, "seconds=61", "at most 60");
        parse_refused(PPROF_HEAP, "seconds=99999999999999999999999", "positive integer");
        parse_refused(PPROF_HEAP, "seconds=18446744073709551615", "at most 60");
        parse_refused(PPROF_HEAP, "pid=0", "process id");
        parse_refused(PPROF_HEAP, "pid=2147483648", "process id");
        parse_refused(PPROF_HEAP, "pid=abc", "process id");
        parse_refused(PPROF_HEAP, "unit=", "printable");
        parse_refused(PPROF_HEAP, "unit=a%0Ab", "printable");
        parse_refused(PPROF_HEAP, "pid=1&module=ext4", "exclude each other");
        parse_refused(PPROF_HEAP, "unit=a&module=b", "exclude each other");
        parse_refused(PPROF_USERHEAP, "unit=web.service", "does not apply to userheap");
        parse_refused(PPROF_HEAP, "debug=1", "binary only");
        parse_refused(PPROF_HEAP, "gc=-1", "gc");
        _cleanup_free_ char *longq = malloc(5000);
        ASSERT_NOT_NULL(longq);
        memset(longq, 'a', 4999);
        longq[4999] = '\0';
        memcpy(longq, "unit=", 5);
        parse_refused(PPROF_HEAP, longq, "longer than");
}

/* --- Profiles --------------------------------------------------------------------------------------- */

/* Two stacks: alloc_pages <- do_anonymous_page <- entry (kernel image), and ext4_writepages (ext4) below
 * entry; loadgen holds 16384 pages through the first, ext4 allocations of everyone through the second. */
static const char profile_reply[] =
        "{\"of\": \"pages\", \"pageSize\": 4096, \"stackSampleInterval\": 128, \"objects\": 16400,"
        " \"bytes\": 67174400, \"allocObjects\": 20100, \"allocBytes\": 82329600, \"trackedPages\": 16400,"
        " \"frames\": ["
        "  {\"frame\": \"entry_SYSCALL_64+0x10\", \"module\": null, \"address\": null, \"user\": false, \"caller\": -1},"
        "  {\"frame\": \"do_anonymous_page+0x20\", \"module\": null, \"address\": null, \"user\": false, \"caller\": 0},"
        "  {\"frame\": \"__alloc_pages+0x10\", \"module\": null, \"address\": null, \"user\": false, \"caller\": 1},"
        "  {\"frame\": \"ext4_writepages+0x10\", \"module\": \"ext4\", \"address\": null, \"user\": false, \"caller\": 0}],"
        " \"tasks\": [{\"pid\": null, \"comm\": \"[other]\"}, {\"pid\": null, \"comm\": \"[all]\"},"
        "            {\"pid\": 4242, \"comm\": \"loadgen\"}],"
        " \"units\": [\"[other]\", \"[all]\", \"loadgen.service\"],"
        " \"modules\": [{\"name\": \"ext4\", \"buildId\": \"0011\"}, {\"name\": \"vmlinux\", \"buildId\": \"abcdef\"}],"
        " \"samples\": ["
        "  {\"frame\": 2, \"task\": 2, \"unit\": 2, \"module\": 1, \"objects\": 16384, \"bytes\": 67108864,"
        "   \"allocObjects\": 0, \"allocBytes\": 0},"
        "  {\"frame\": 2, \"task\": 1, \"unit\": 1, \"module\": 1, \"objects\": 0, \"bytes\": 0,"
        "   \"allocObjects\": 20000, \"allocBytes\": 81920000},"
        "  {\"frame\": 3, \"task\": 0, \"unit\": 0, \"module\": 0, \"objects\": 16, \"bytes\": 65536,"
        "   \"allocObjects\": 100, \"allocBytes\": 409600},"
        "  {\"frame\": -1, \"task\": 0, \"unit\": 0, \"module\": 1, \"objects\": 0, \"bytes\": 0,"
        "   \"allocObjects\": 0, \"allocBytes\": 0}],"
        " \"stacksCut\": 0, \"samplesFolded\": 0}";

static json_t *parse(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        if (!j) {
                fprintf(stderr, "fixture: %s at %d\n", e.text, e.position);
                abort();
        }
        return j;
}

static Profile *gunzip_unpack(const uint8_t *gz, size_t size) {
        size_t cap = 1 << 20;
        _cleanup_free_ uint8_t *out = malloc(cap);
        z_stream z = {};

        ASSERT_NOT_NULL(out);
        ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
        z.next_in = (Bytef *) gz;
        z.avail_in = (uInt) size;
        z.next_out = out;
        z.avail_out = (uInt) cap;
        ASSERT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
        size_t n = z.total_out;
        ASSERT_EQ(inflateEnd(&z), Z_OK);
        Profile *p = perftools__profiles__profile__unpack(NULL, n, out);
        ASSERT_NOT_NULL(p);
        return p;
}

static Profile *render(PprofEndpoint e, const json_t *older, const json_t *newer, int64_t duration) {
        _cleanup_(pprof_render_freep) PprofRender *r = NULL;
        _cleanup_free_ uint8_t *gz = NULL;
        size_t size;

        ASSERT_OK(pprof_render_new(e, "test", &r));
        if (older)
                ASSERT_OK(pprof_render_add(r, older, -1));
        ASSERT_OK(pprof_render_add(r, newer, 1));
        ASSERT_OK(pprof_render_finish(r, 1795000000000000000, duration, &gz, &size));
        /* gzip's magic. */
        ASSERT_GT(size, 2u);
        ASSERT_EQ(gz[0], 0x1f);
        ASSERT_EQ(gz[1], 0x8b);
        return gunzip_unpack(gz, size);
}

static const char *str(const Profile *p, int64_t i) {
        ASSERT_GE(i, 0);
        ASSERT_LT((size_t) i, p->n_string_table);
        return p->string_table[i];
}

static const char *type_name(const Profile *p, size_t i) {
        ASSERT_LT(i, p->n_sample_type);
        return str(p, p->sample_type[i]->type);
}

static const char *function_of(const Profile *p, uint64_t location) {
        ASSERT_GE(location, 1u);
        ASSERT_LE(location, p->n_location);
        const Perftools__Profiles__Location *l = p->location[location - 1];
        ASSERT_EQ(l->n_line, 1u);
        ASSERT_LE(l->line[0]->function_id, p->n_function);
        return str(p, p->function[l->line[0]->function_id - 1]->name);
}

static const char *label_of(const Profile *p, const Sample *s, const char *key) {
        for (size_t i = 0; i < s->n_label; i++)
                if (streq(str(p, s->label[i]->key), key))
                        return str(p, s->label[i]->str);
        return NULL;
}

/* The sample whose leaf is function and whose task label is task; NULL if none. */
static const Sample *sample_of(const Profile *p, const char *function, const char *task) {
        for (size_t i = 0; i < p->n_sample; i++) {
                const Sample *s = p->sample[i];
                if (s->n_location_id > 0 && streq(function_of(p, s->location_id[0]), function) &&
                    streq(label_of(p, s, "task") ?: "", task))
                        return s;
        }
        return NULL;
}

/* Whether a comment contains text. */
static bool has_comment(const Profile *p, const char *text) {
        for (size_t i = 0; i < p->n_comment; i++)
                if (strstr(str(p, p->comment[i]), text))
                        return true;
        return false;
}

static int64_t total(const Profile *p, size_t value) {
        int64_t sum = 0;
        for (size_t i = 0; i < p->n_sample; i++)
                sum += p->sample[i]->value[value];
        return sum;
}

static void test_render_heap(void) {
        json_auto_t *reply = parse(profile_reply);
        Profile *p = render(PPROF_HEAP, NULL, reply, 0);

        /* Go's heap profile: four types, allocations first, no default type (readers take inuse_space). */
        ASSERT_EQ(p->n_sample_type, 4u);
        ASSERT_STREQ(type_name(p, 0), "alloc_objects");
        ASSERT_STREQ(type_name(p, 1), "alloc_space");
        ASSERT_STREQ(type_name(p, 2), "inuse_objects");
        ASSERT_STREQ(type_name(p, 3), "inuse_space");
        ASSERT_STREQ(str(p, p->sample_type[3]->unit), "bytes");
        ASSERT_STREQ(str(p, p->sample_type[0]->unit), "count");
        ASSERT_EQ(p->default_sample_type, 0);
        ASSERT_STREQ(str(p, p->period_type->type), "space");
        ASSERT_EQ(p->period, 128 * 4096);
        ASSERT_EQ(p->time_nanos, 1795000000000000000);
        ASSERT_EQ(p->duration_nanos, 0);

        /* The all-zero sample is gone; the totals are the reply's. */
        ASSERT_EQ(p->n_sample, 3u);
        ASSERT_EQ(total(p, 2), 16400);
        ASSERT_EQ(total(p, 3), 67174400);
        ASSERT_EQ(total(p, 0), 20100);
        ASSERT_EQ(total(p, 1), 82329600);

        /* Stacks, leaf first, named by function; labels. */
        const Sample *s = sample_of(p, "__alloc_pages", "loadgen (4242)");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->n_location_id, 3u);
        ASSERT_STREQ(function_of(p, s->location_id[1]), "do_anonymous_page");
        ASSERT_STREQ(function_of(p, s->location_id[2]), "entry_SYSCALL_64");
        ASSERT_EQ(s->value[3], 67108864);
        ASSERT_EQ(s->value[0], 0);
        ASSERT_STREQ(label_of(p, s, "unit"), "loadgen.service");
        ASSERT_STREQ(label_of(p, s, "module"), "vmlinux");
        s = sample_of(p, "__alloc_pages", "[all]");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->value[0], 20000);
        ASSERT_STREQ(label_of(p, s, "unit"), "[all]");
        s = sample_of(p, "ext4_writepages", "[other]");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->n_location_id, 2u);
        ASSERT_STREQ(label_of(p, s, "module"), "ext4");

        /* The kernel image is the main binary, with its build ID; ext4's frame maps to ext4's. */
        ASSERT_GE(p->n_mapping, 2u);
        ASSERT_STREQ(str(p, p->mapping[0]->filename), "vmlinux");
        ASSERT_STREQ(str(p, p->mapping[0]->build_id), "abcdef");
        ASSERT_TRUE(p->mapping[0]->has_functions);
        const Perftools__Profiles__Location *ext4 = p->location[s->location_id[0] - 1];
        ASSERT_STREQ(str(p, p->mapping[ext4->mapping_id - 1]->filename), "ext4");
        ASSERT_STREQ(str(p, p->mapping[ext4->mapping_id - 1]->build_id), "0011");
        ASSERT_TRUE(has_comment(p, "(test)"));
        /* memstrackd's own total at the moment, for readers to hold the samples against. */
        ASSERT_TRUE(has_comment(p, "memstrackd tracked 16400 pages (67174400 bytes)"));
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* allocs: the same, alloc_space the default. */
        p = render(PPROF_ALLOCS, NULL, reply, 0);
        ASSERT_STREQ(type_name(p, 0), "alloc_objects");
        ASSERT_STREQ(str(p, p->default_sample_type), "alloc_space");
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* slab: the held types only. */
        p = render(PPROF_SLAB, NULL, reply, 0);
        ASSERT_EQ(p->n_sample_type, 2u);
        ASSERT_STREQ(type_name(p, 0), "inuse_objects");
        ASSERT_STREQ(type_name(p, 1), "inuse_space");
        ASSERT_EQ(total(p, 1), 67174400);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

/* A delta: the newer reply less the older, samples that did not change left out. */
static void test_render_delta(void) {
        json_auto_t *older = parse(profile_reply), *newer = parse(profile_reply);
        json_t *samples = json_object_get(newer, "samples");
        json_t *held = json_array_get(samples, 0), *allocated = json_array_get(samples, 1);

        /* loadgen took 8192 pages more (32 MiB), which the stack allocated. */
        ASSERT_OK(json_object_set_new(newer, "objects", json_integer(16400 + 8192)));
        ASSERT_OK(json_object_set_new(held, "objects", json_integer(16384 + 8192)));
        ASSERT_OK(json_object_set_new(held, "bytes", json_integer((16384 + 8192) * 4096LL)));
        ASSERT_OK(json_object_set_new(allocated, "allocObjects", json_integer(20000 + 8192)));
        ASSERT_OK(json_object_set_new(allocated, "allocBytes", json_integer((20000 + 8192) * 4096LL)));
        Profile *p = render(PPROF_HEAP, older, newer, 5000000000);
        ASSERT_EQ(p->duration_nanos, 5000000000);
        ASSERT_EQ(p->n_sample, 2u);
        ASSERT_EQ(total(p, 3), 8192 * 4096);
        ASSERT_EQ(total(p, 1), 8192 * 4096);
        ASSERT_EQ(sample_of(p, "__alloc_pages", "loadgen (4242)")->value[3], 8192 * 4096);
        ASSERT_NULL(sample_of(p, "ext4_writepages", "[other]"));
        ASSERT_TRUE(has_comment(p, "the samples held 16400 pages at its start and 24592 at its end"));
        ASSERT_TRUE(!has_comment(p, "memstrackd tracked"));
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* Pages freed: a negative change. */
        p = render(PPROF_HEAP, newer, older, 5000000000);
        ASSERT_EQ(total(p, 3), -8192 * 4096);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static const char heap_reply[] =
        "{\"heaps\": [{\"pid\": 77, \"comm\": \"heap-target\", \"sampleInterval\": 1,"
        "  \"objects\": [{\"path\": \"/usr/bin/heap-target\", \"buildId\": \"feed\", \"start\": 4194304,"
        "                 \"limit\": 4259840, \"offset\": 0},"
        "               {\"path\": \"/lib/libc.so.6\", \"buildId\": null, \"start\": null, \"limit\": null,"
        "                \"offset\": null}],"
        "  \"root\": {\"frame\": \"[heap pid 77 heap-target]\", \"module\": null, \"currentBytes\": 1500,"
        "    \"currentBlocks\": 3, \"children\": ["
        "      {\"frame\": \"main+0x10\", \"module\": \"heap-target\", \"currentBytes\": 1500, \"currentBlocks\": 3,"
        "       \"children\": [{\"frame\": \"malloc+0x4\", \"module\": \"libc.so.6\", \"currentBytes\": 1000,"
        "                       \"currentBlocks\": 1, \"children\": []}]}]}}],"
        " \"heapsDropped\": 0, \"invalidEvents\": 0}";

static void test_render_userheap(void) {
        json_auto_t *reply = parse(heap_reply);
        Profile *p = render(PPROF_USERHEAP, NULL, reply, 0);

        ASSERT_EQ(p->n_sample_type, 2u);
        ASSERT_TRUE(!has_comment(p, "tracked"));
        ASSERT_EQ(total(p, 1), 1500);
        ASSERT_EQ(total(p, 0), 3);
        const Sample *s = sample_of(p, "malloc", "heap-target (77)");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->value[1], 1000);
        ASSERT_EQ(s->n_location_id, 2u);
        ASSERT_STREQ(function_of(p, s->location_id[1]), "main");
        s = sample_of(p, "main", "heap-target (77)");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(s->value[1], 500);
        ASSERT_EQ(s->value[0], 2);
        /* The program's mapping is the main binary: its path, build ID and addresses. */
        ASSERT_STREQ(str(p, p->mapping[0]->filename), "/usr/bin/heap-target");
        ASSERT_STREQ(str(p, p->mapping[0]->build_id), "feed");
        ASSERT_EQ(p->mapping[0]->memory_start, 4194304u);
        ASSERT_EQ(p->mapping[0]->memory_limit, 4259840u);
        s = sample_of(p, "malloc", "heap-target (77)");
        const Perftools__Profiles__Location *libc = p->location[s->location_id[0] - 1];
        ASSERT_GE(libc->mapping_id, 1u);
        ASSERT_STREQ(str(p, p->mapping[libc->mapping_id - 1]->filename), "/lib/libc.so.6");
        ASSERT_EQ(p->mapping[libc->mapping_id - 1]->build_id, 0);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static void add_refused(PprofEndpoint e, const char *text) {
        _cleanup_(pprof_render_freep) PprofRender *r = NULL;
        json_auto_t *reply = parse(text);

        ASSERT_OK(pprof_render_new(e, NULL, &r));
        ASSERT_EQ(pprof_render_add(r, reply, 1), -EBADMSG);
}

/* Replies that are not what the endpoint reads: refused, never followed off their arrays. */
static void test_render_malformed(void) {
        add_refused(PPROF_HEAP, "{}");
        add_refused(PPROF_HEAP, "{\"pageSize\": 4096, \"frames\": [], \"tasks\": [], \"units\": [], \"modules\": []}");
        /* A frame that is its own caller. */
        add_refused(PPROF_HEAP, "{\"pageSize\": 4096, \"frames\": [{\"frame\": \"f\", \"caller\": 0}], "
                    "\"tasks\": [{\"pid\": 1, \"comm\": \"x\"}], \"units\": [\"u\"], \"modules\": [{\"name\": \"m\"}], "
                    "\"samples\": [{\"frame\": 0, \"task\": 0, \"unit\": 0, \"module\": 0, \"objects\": 1, \"bytes\": 1}]}");
        /* Indices past their tables. */
        add_refused(PPROF_HEAP, "{\"pageSize\": 4096, \"frames\": [], \"tasks\": [], \"units\": [], \"modules\": [], "
                    "\"samples\": [{\"frame\": 5, \"task\": 0, \"unit\": 0, \"module\": 0}]}");
        add_refused(PPROF_HEAP, "{\"pageSize\": 4096, \"frames\": [{\"frame\": \"f\", \"caller\": 7}], "
                    "\"tasks\": [{\"pid\": 1, \"comm\": \"x\"}], \"units\": [\"u\"], \"modules\": [{\"name\": \"m\"}], "
                    "\"samples\": [{\"frame\": 0, \"task\": 0, \"unit\": 0, \"module\": 0}]}");
        add_refused(PPROF_USERHEAP, "{\"heaps\": [{\"pid\": 1, \"comm\": \"x\"}]}");
        add_refused(PPROF_USERHEAP, "{\"heaps\": 1}");
}

int main(void) {
        TEST(test_endpoints);
        TEST(test_query);
        TEST(test_render_heap);
        TEST(test_render_delta);
        TEST(test_render_userheap);
        TEST(test_render_malformed);
        return 0;
}
