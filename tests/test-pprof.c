/* SPDX-License-Identifier: MIT */

/*
 * client/pprof.c: the fixture's stack trees (tests/data/pprof-snapshot.json) encoded and decoded again
 * with protobuf-c, every total, the string table, locations, functions and mappings checked; odd trees;
 * and the gzip file read back with zlib.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "macro.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "tests.h"

#define FIXTURE "data/pprof-snapshot.json"
#define PAGE 4096

typedef Perftools__Profiles__Profile Profile;

static Profile *encode(const json_t *tree, int64_t interval, PprofStats *ret_stats) {
        PprofSource s = {
                .tree = tree,
                .page_size = PAGE,
                .sample_interval = interval,
                .time_nanos = 1795000000123456000,
                .generator = "test-pprof",
        };
        _cleanup_free_ uint8_t *data = NULL;
        size_t size;
        Profile *p;

        ASSERT_EQ(pprof_encode(&s, &data, &size, ret_stats), 0);
        p = perftools__profiles__profile__unpack(NULL, size, data);
        ASSERT_NOT_NULL(p);
        return p;
}

static const char *str(const Profile *p, int64_t i) {
        ASSERT_GE(i, 0);
        ASSERT_LT((size_t) i, p->n_string_table);
        return p->string_table[i];
}

static const Perftools__Profiles__Location *location(const Profile *p, uint64_t id) {
        ASSERT_GE(id, 1u);
        ASSERT_LE(id, p->n_location);
        ASSERT_EQ(p->location[id - 1]->id, id);
        return p->location[id - 1];
}

static const Perftools__Profiles__Function *function(const Profile *p, uint64_t id) {
        ASSERT_GE(id, 1u);
        ASSERT_LE(id, p->n_function);
        ASSERT_EQ(p->function[id - 1]->id, id);
        return p->function[id - 1];
}

static const char *location_name(const Profile *p, uint64_t id) {
        const Perftools__Profiles__Location *l = location(p, id);

        ASSERT_EQ(l->n_line, 1u);
        return str(p, function(p, l->line[0]->function_id)->name);
}

/* The mapping's file name, or "" for none. */
static const char *location_mapping(const Profile *p, uint64_t id) {
        const Perftools__Profiles__Location *l = location(p, id);

        if (l->mapping_id == 0)
                return "";
        ASSERT_LE(l->mapping_id, p->n_mapping);
        ASSERT_EQ(p->mapping[l->mapping_id - 1]->id, l->mapping_id);
        return str(p, p->mapping[l->mapping_id - 1]->filename);
}

/* The profile is well-formed: string 0 empty and no string twice, ids dense from 1, every reference
 * resolves, values consistent (bytes = pages x page size). Returns the pages summed over the samples. */
static uint64_t check_profile(const Profile *p) {
        uint64_t pages = 0;

        ASSERT_GE(p->n_string_table, 1u);
        ASSERT_STREQ(p->string_table[0], "");
        for (size_t i = 0; i < p->n_string_table; i++)
                for (size_t j = i + 1; j < p->n_string_table; j++)
                        ASSERT_TRUE(!streq(p->string_table[i], p->string_table[j]));

        ASSERT_EQ(p->n_sample_type, 2u);
        ASSERT_STREQ(str(p, p->sample_type[0]->type), "inuse_objects");
        ASSERT_STREQ(str(p, p->sample_type[0]->unit), "count");
        ASSERT_STREQ(str(p, p->sample_type[1]->type), "inuse_space");
        ASSERT_STREQ(str(p, p->sample_type[1]->unit), "bytes");
        ASSERT_STREQ(str(p, p->default_sample_type), "inuse_space");
        ASSERT_NOT_NULL(p->period_type);
        ASSERT_STREQ(str(p, p->period_type->type), "space");
        ASSERT_STREQ(str(p, p->period_type->unit), "bytes");
        ASSERT_EQ(p->time_nanos, 1795000000123456000);

        ASSERT_GE(p->n_mapping, 1u);
        ASSERT_STREQ(str(p, p->mapping[0]->filename), "vmlinux");
        for (size_t i = 0; i < p->n_mapping; i++) {
                ASSERT_EQ(p->mapping[i]->id, i + 1);
                ASSERT_TRUE(p->mapping[i]->has_functions);
        }
        for (size_t i = 0; i < p->n_function; i++) {
                ASSERT_EQ(p->function[i]->id, i + 1);
                ASSERT_TRUE(p->function[i]->name > 0);
                (void) str(p, p->function[i]->name);
        }
        for (size_t i = 0; i < p->n_location; i++) {
                (void) location_name(p, i + 1);
                (void) location_mapping(p, i + 1);
        }
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *s = p->sample[i];
                ASSERT_EQ(s->n_value, 2u);
                ASSERT_GT(s->value[0], 0);
                ASSERT_EQ(s->value[1], s->value[0] * PAGE);
                ASSERT_GE(s->n_location_id, 1u);
                for (size_t j = 0; j < s->n_location_id; j++)
                        (void) location(p, s->location_id[j]);
                pages += (uint64_t) s->value[0];
        }
        for (size_t i = 0; i < p->n_comment; i++)
                (void) str(p, p->comment[i]);
        return pages;
}

/* Pages of the samples whose leaf is function name. */
static uint64_t leaf_pages(const Profile *p, const char *name) {
        uint64_t pages = 0;

        for (size_t i = 0; i < p->n_sample; i++)
                if (streq(location_name(p, p->sample[i]->location_id[0]), name))
                        pages += (uint64_t) p->sample[i]->value[0];
        return pages;
}

/* The sample of pages whose stack, leaf first, is names (NULL-terminated); fails if there is none. */
static void assert_stack(const Profile *p, int64_t pages, const char *const *names) {
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *s = p->sample[i];
                size_t n = 0;

                if (s->value[0] != pages)
                        continue;
                while (names[n])
                        n++;
                ASSERT_EQ(s->n_location_id, n);
                for (size_t j = 0; j < n; j++)
                        ASSERT_STREQ(location_name(p, s->location_id[j]), names[j]);
                return;
        }
        fprintf(stderr, "no sample of %lld pages\n", (long long) pages);
        abort();
}

static const Perftools__Profiles__Location *location_named(const Profile *p, const char *name, const char *mapping) {
        const Perftools__Profiles__Location *found = NULL;

        for (size_t i = 0; i < p->n_location; i++)
                if (streq(location_name(p, i + 1), name) && streq(location_mapping(p, i + 1), mapping)) {
                        ASSERT_NULL(found);
                        found = p->location[i];
                }
        ASSERT_NOT_NULL(found);
        return found;
}

static bool has_comment(const Profile *p, const char *part) {
        for (size_t i = 0; i < p->n_comment; i++)
                if (strstr(str(p, p->comment[i]), part))
                        return true;
        return false;
}

static json_t *fixture(void) {
        json_error_t e;
        json_t *doc = json_load_file(FIXTURE, 0, &e);

        if (!doc)
                fprintf(stderr, "%s: %s (line %d)\n", FIXTURE, e.text, e.line);
        ASSERT_NOT_NULL(doc);
        return doc;
}

static void test_whole_tree(void) {
        json_auto_t *doc = fixture();
        PprofStats stats;
        Profile *p = encode(json_object_get(doc, "stackTree"), -1, &stats);

        /* Every page of the tree, once: the samples add up to totalPages. */
        ASSERT_EQ(check_profile(p), 20000u);
        ASSERT_EQ(stats.pages, 20000u);
        ASSERT_EQ(stats.n_samples, p->n_sample);
        ASSERT_EQ(stats.n_locations, p->n_location);
        ASSERT_EQ(stats.n_functions, p->n_function);
        ASSERT_EQ(stats.n_mappings, p->n_mapping);
        ASSERT_EQ(stats.n_strings, p->n_string_table);
        /* One sample per node with pages of its own: two alloc_pages_mpol leaves, __alloc_pages twice,
         * kmalloc_large, [not sampled], and the root's own 116 (a child the daemon left out). */
        ASSERT_EQ(p->n_sample, 7u);
        ASSERT_EQ(leaf_pages(p, "alloc_pages_mpol"), 16384u);
        ASSERT_EQ(leaf_pages(p, "__alloc_pages"), 2000u);
        ASSERT_EQ(leaf_pages(p, "kmalloc_large"), 1000u);
        ASSERT_EQ(leaf_pages(p, "[not sampled]"), 500u);
        ASSERT_EQ(leaf_pages(p, "[all]"), 116u);
        assert_stack(p, 16000, (const char *const[]) { "alloc_pages_mpol", "do_anonymous_page", "handle_mm_fault",
                     "exc_page_fault", "asm_exc_page_fault", "main", "__libc_start_main", "_start",
                     "[pid 4242 loadgen]", NULL });
        assert_stack(p, 384, (const char *const[]) { "alloc_pages_mpol", "filemap_read", "ext4_file_read_iter",
                     "ksys_read", "do_syscall_64", "entry_SYSCALL_64_after_hwframe", "[user] 0x7f3a12345678",
                     "__libc_start_main", "_start", "[pid 4242 loadgen]", NULL });
        /* ext4_writepages calls itself at another offset: two locations, one function. */
        assert_stack(p, 500, (const char *const[]) { "__alloc_pages", "ext4_writepages", "ext4_writepages",
                     "process_one_work", "worker_thread", "kthread", "ret_from_fork_asm", NULL });
        assert_stack(p, 116, (const char *const[]) { "[all]", NULL });

        /* One location per frame: the same frame under two stacks is one location. */
        const Perftools__Profiles__Location *mpol = location_named(p, "alloc_pages_mpol", "vmlinux");
        size_t uses = 0;
        for (size_t i = 0; i < p->n_sample; i++)
                uses += p->sample[i]->location_id[0] == mpol->id;
        ASSERT_EQ(uses, 2u);
        /* 26 distinct frames (ext4_writepages twice), 25 functions. */
        ASSERT_EQ(p->n_location, 26u);
        ASSERT_EQ(p->n_function, 25u);

        /* Mappings: the kernel image first, then modules and user files as met. */
        ASSERT_EQ(p->n_mapping, 5u);
        (void) location_named(p, "main", "loadgen");
        (void) location_named(p, "_start", "loadgen");
        (void) location_named(p, "__libc_start_main", "libc.so.6");
        (void) location_named(p, "ext4_file_read_iter", "ext4");
        (void) location_named(p, "gc_worker", "nf_conntrack");
        (void) location_named(p, "[pid 4242 loadgen]", "");
        (void) location_named(p, "[not sampled]", "");
        /* Addresses where the frame has one: the root caller's raw address, a raw user address. */
        ASSERT_EQ(location_named(p, "ret_from_fork_asm", "vmlinux")->address, 0xffffffff810c5a2aULL);
        ASSERT_EQ(location_named(p, "[user] 0x7f3a12345678", "")->address, 0x7f3a12345678ULL);
        ASSERT_EQ(location_named(p, "worker_thread", "vmlinux")->address, 0u);

        /* The sampling interval, in the period and a comment. */
        ASSERT_EQ(p->period, 64 * PAGE);
        ASSERT_TRUE(has_comment(p, "1 in 64 pages"));
        ASSERT_TRUE(has_comment(p, "scaled"));
        ASSERT_TRUE(has_comment(p, "branches too small for the daemon to send: 1"));
        ASSERT_TRUE(has_comment(p, "generated by test-pprof"));
        ASSERT_TRUE(has_comment(p, "(all)"));
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_task_and_module(void) {
        json_auto_t *doc = fixture();
        json_t *task = json_object_get(json_array_get(json_object_get(doc, "taskStacks"), 0), "stackTree");
        json_t *module = json_object_get(json_array_get(json_object_get(doc, "moduleStacks"), 0), "stackTree");
        Profile *p;

        p = encode(task, -1, NULL);
        ASSERT_EQ(check_profile(p), 16384u);
        ASSERT_EQ(leaf_pages(p, "alloc_pages_mpol"), 16384u);
        (void) location_named(p, "main", "loadgen");
        perftools__profiles__profile__free_unpacked(p, NULL);

        p = encode(module, -1, NULL);
        ASSERT_EQ(check_profile(p), 2384u);
        ASSERT_EQ(leaf_pages(p, "__alloc_pages"), 2000u);
        ASSERT_EQ(leaf_pages(p, "alloc_pages_mpol"), 384u);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static json_t *node(const char *frame, const char *module, json_int_t pages, json_t *children) {
        json_t *n = json_pack("{s:s, s:s?, s:I, s:o}", "frame", frame, "module", module, "currentPages", pages,
                              "children", children ?: json_array());
        ASSERT_NOT_NULL(n);
        return n;
}

/* A module name on the user side (an ELF file) and the same name on the kernel side are two mappings. */
static void test_user_and_kernel_side(void) {
        json_auto_t *tree = json_pack("{s:o, s:i}", "root",
                node("[all]", NULL, 10, json_pack("[o]",
                 node("[pid 1 x]", NULL, 10, json_pack("[o]",
                  node("f+0x1", "same", 10, json_pack("[o]",
                   node("entry+0x0", NULL, 10, json_pack("[o]",
                    node("g+0x2", "same", 10, NULL))))))))),
                "stackSampleInterval", 1);
        Profile *p = encode(tree, -1, NULL);

        ASSERT_EQ(check_profile(p), 10u);
        ASSERT_EQ(p->n_mapping, 3u);    /* vmlinux, user "same", kernel "same" */
        ASSERT_NE(location_named(p, "f", "same")->mapping_id, location_named(p, "g", "same")->mapping_id);
        ASSERT_TRUE(has_comment(p, "every allocation"));
        ASSERT_EQ(p->period, PAGE);
        perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Trees a damaged snapshot file may hold: still a valid profile, never negative values. */
static void test_odd_trees(void) {
        PprofSource s = { .page_size = PAGE, .sample_interval = -1 };
        uint8_t *data = NULL;
        size_t size;
        Profile *p;

        /* No root. */
        json_auto_t *empty = json_object();
        s.tree = empty;
        ASSERT_EQ(pprof_encode(&s, &data, &size, NULL), -EINVAL);
        ASSERT_NULL(data);

        /* Nothing held: a profile without samples. */
        json_auto_t *zero = json_pack("{s:o}", "root", node("[all]", NULL, 0, NULL));
        p = encode(zero, 0, NULL);
        ASSERT_EQ(check_profile(p), 0u);
        ASSERT_EQ(p->n_sample, 0u);
        ASSERT_TRUE(has_comment(p, "no stacks taken"));
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* Children holding more than their parent: the parent has no pages of its own, not fewer than 0;
         * a child without a frame is "[unknown]". */
        json_auto_t *over = json_pack("{s:o}", "root", node("[all]", NULL, 5, json_pack("[o, {s:i}]",
                                      node("a+0x1", NULL, 7, NULL), "currentPages", 2)));
        p = encode(over, -1, NULL);
        ASSERT_EQ(check_profile(p), 9u);
        ASSERT_EQ(leaf_pages(p, "a"), 7u);
        ASSERT_EQ(leaf_pages(p, "[unknown]"), 2u);
        ASSERT_EQ(leaf_pages(p, "[all]"), 0u);
        perftools__profiles__profile__free_unpacked(p, NULL);

        /* Bytes saturate instead of wrapping. */
        json_auto_t *huge = json_pack("{s:o}", "root", node("[all]", NULL, INT64_MAX, json_pack("[o]",
                                      node("b+0x1", NULL, INT64_MAX, NULL))));
        s.tree = huge;
        ASSERT_EQ(pprof_encode(&s, &data, &size, NULL), 0);
        p = perftools__profiles__profile__unpack(NULL, size, data);
        ASSERT_NOT_NULL(p);
        ASSERT_EQ(p->n_sample, 1u);
        ASSERT_EQ(p->sample[0]->value[0], INT64_MAX);
        ASSERT_EQ(p->sample[0]->value[1], INT64_MAX);
        perftools__profiles__profile__free_unpacked(p, NULL);
        free(data);
        data = NULL;

        /* So does the period, for a sample interval no daemon sends. */
        s.sample_interval = INT64_MAX / 2;
        ASSERT_EQ(pprof_encode(&s, &data, &size, NULL), 0);
        p = perftools__profiles__profile__unpack(NULL, size, data);
        ASSERT_NOT_NULL(p);
        ASSERT_EQ(p->period, INT64_MAX);
        perftools__profiles__profile__free_unpacked(p, NULL);
        free(data);
}

/* The file is gzip: zlib's reader gives back the bytes. Errors come back as -errno. */
static void test_gzip_file(void) {
        static const uint8_t bytes[] = "profile bytes \x00\x01\x02 and more";
        char path[] = "/tmp/test-pprof.XXXXXX";
        uint8_t back[sizeof(bytes) + 16];
        gzFile gz;
        int fd, n;

        fd = mkstemp(path);
        ASSERT_GE(fd, 0);
        (void) close(fd);
        ASSERT_EQ(pprof_write_gzip(bytes, sizeof(bytes), path), 0);
        gz = gzopen(path, "rb");
        ASSERT_NOT_NULL(gz);
        ASSERT_EQ(gzdirect(gz), 0);     /* compressed, not passed through */
        n = gzread(gz, back, sizeof(back));
        ASSERT_EQ(n, (int) sizeof(bytes));
        ASSERT_EQ(memcmp(back, bytes, sizeof(bytes)), 0);
        (void) gzclose(gz);
        (void) unlink(path);

        ASSERT_EQ(pprof_write_gzip(bytes, sizeof(bytes), "/nonexistent-dir/x.pb.gz"), -ENOENT);
}

int main(void) {
        TEST(test_whole_tree);
        TEST(test_task_and_module);
        TEST(test_user_and_kernel_side);
        TEST(test_odd_trees);
        TEST(test_gzip_file);
        return 0;
}
