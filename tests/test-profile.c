/* SPDX-License-Identifier: MIT */

/*
 * daemon/api/profilequery.c: the Profile view over a synthetic core. Pages held add up to the tracked
 * pages and allocations to the pages ever allocated, whatever the scope; each sample's stack, read back
 * through the frames' callers, is the chain it was allocated through; labels name the top tasks and
 * units and "[other]" the rest; a stack's allocations name a task only when the stack is one process's;
 * the bounds on frames and samples keep the totals; slab objects. The kernel's build ID reader on
 * made-up note sections.
 */

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "accounting.h"
#include "build-id.h"
#include "macro.h"
#include "profilequery.h"
#include "synthetic-events.h"
#include "tests.h"

#define PAGE 4096u

static Accounting *core_new(bool slab, Ksym **ret_ksym) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(ksym_load("data/kallsyms-modules", ret_ksym));
        c.slab = slab;
        ASSERT_OK(accounting_new(&c, *ret_ksym, &a));
        return a;
}

static json_t *profile(Accounting *a, ProfileQuery q) {
        json_t *reply = NULL;

        q.page_size = PAGE;
        if (q.top == 0)
                q.top = PROFILE_TOP_DEFAULT;
        ASSERT_OK(profile_query_json(a, &q, &reply));
        ASSERT_NOT_NULL(reply);
        return reply;
}

static const ProfileQuery every = { .pid = -1 };

static uint64_t count(const json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        ASSERT_TRUE(json_is_integer(v));
        ASSERT_GE(json_integer_value(v), 0);
        return (uint64_t) json_integer_value(v);
}

/* A sample's label of kind ("tasks": comm, "units": name, "modules": name). */
static const char *label(const json_t *reply, const json_t *sample, const char *kind) {
        const char *index = streq(kind, "tasks") ? "task" : streq(kind, "units") ? "unit" : "module";
        json_t *l = json_array_get(json_object_get(reply, kind), count(sample, index));

        ASSERT_NOT_NULL(l);
        if (json_is_string(l))
                return json_string_value(l);
        return json_string_value(json_object_get(l, streq(kind, "tasks") ? "comm" : "name"));
}

/* The sum of key over the samples whose label of kind is name (NULL: all of them). */
static uint64_t sum(const json_t *reply, const char *key, const char *kind, const char *name) {
        uint64_t total = 0;
        json_t *s;
        size_t i;

        json_array_foreach(json_object_get(reply, "samples"), i, s)
                if (!name || streq(label(reply, s, kind), name))
                        total += json_is_null(json_object_get(s, key)) ? 0 : count(s, key);
        return total;
}

/* A sample's stack as "innermost;...;outermost" frames, the offsets left on. */
static char *stack_text(const json_t *reply, const json_t *sample) {
        const json_t *frames = json_object_get(reply, "frames");
        json_int_t at = json_integer_value(json_object_get(sample, "frame"));
        char *text = NULL;
        size_t size = 0, depth = 0;
        FILE *f = open_memstream(&text, &size);

        ASSERT_NOT_NULL(f);
        for (; at >= 0; depth++) {
                ASSERT_LT((size_t) at, json_array_size(frames));
                ASSERT_LT(depth, 1000u);
                const json_t *frame = json_array_get(frames, (size_t) at);
                fprintf(f, "%s%s", depth ? ";" : "", json_string_value(json_object_get(frame, "frame")));
                json_int_t caller = json_integer_value(json_object_get(frame, "caller"));
                ASSERT_LT(caller, (json_int_t) json_array_size(frames));
                at = caller;
        }
        ASSERT_EQ(fclose(f), 0);
        return text;
}

/* The first sample with this stack and task; NULL if none. */
static const json_t *find_sample(const json_t *reply, const char *stack, const char *task) {
        json_t *s;
        size_t i;

        json_array_foreach(json_object_get(reply, "samples"), i, s) {
                _cleanup_free_ char *text = stack_text(reply, s);
                if (streq(text, stack) && streq(label(reply, s, "tasks"), task))
                        return s;
        }
        return NULL;
}

#define KERNEL_STACK "__alloc_pages+0x10;do_anonymous_page+0x20;entry_SYSCALL_64+0x10"
#define EXT4_STACK "__alloc_pages+0x10;ext4_alloc_da_blocks+0x10;ext4_writepages+0x10;vfs_write+0x10;entry_SYSCALL_64+0x10"

static void test_pages(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(false, &k);
        AccountingStats st;

        synthetic_scene(a);
        /* 500 eps: a stack into user space, its own; allocated twice, held once. */
        synthetic_task(a, 500, "eps");
        synthetic_alloc_user(a, 500, 0x8000);
        synthetic_alloc_user(a, 500, 0x8001);
        synthetic_free(a, 500, 0x8001, 0);
        accounting_get_stats(a, &st);

        json_auto_t *all = profile(a, every);
        ASSERT_STREQ(json_string_value(json_object_get(all, "of")), "pages");
        /* Held: the tracked pages, exactly; allocated: every page ever allocated. */
        ASSERT_EQ(count(all, "objects"), st.current_pages);
        ASSERT_EQ(count(all, "trackedPages"), st.current_pages);
        ASSERT_EQ(count(all, "objects"), 16u);
        ASSERT_EQ(count(all, "bytes"), 16u * PAGE);
        ASSERT_EQ(sum(all, "objects", "tasks", NULL), st.current_pages);
        ASSERT_EQ(count(all, "allocObjects"), st.alloc_pages);
        ASSERT_EQ(count(all, "allocObjects"), 8u + 4 + 2 + 16 + 1 + 2);
        ASSERT_EQ(sum(all, "allocObjects", "tasks", NULL), st.alloc_pages);
        ASSERT_EQ(sum(all, "allocBytes", "tasks", NULL), st.alloc_pages * PAGE);
        ASSERT_EQ(count(all, "stacksCut"), 0u);
        ASSERT_EQ(count(all, "samplesFolded"), 0u);

        /* Held per task, unit and module, as Tasks, Units and Modules count them. */
        ASSERT_EQ(sum(all, "objects", "tasks", "alpha"), 8u);
        ASSERT_EQ(sum(all, "objects", "tasks", "beta"), 6u);
        ASSERT_EQ(sum(all, "objects", "units", "web.service"), 6u);
        ASSERT_EQ(sum(all, "objects", "units", "alpha.service"), 8u);
        ASSERT_EQ(sum(all, "objects", "modules", "ext4"), 4u);
        ASSERT_EQ(sum(all, "objects", "modules", "xfs"), 2u);

        /* Each sample's stack is its chain, innermost first, read back through the callers. */
        const json_t *s = find_sample(all, KERNEL_STACK, "alpha");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(count(s, "objects"), 8u);
        ASSERT_STREQ(label(all, s, "units"), "alpha.service");
        ASSERT_STREQ(label(all, s, "modules"), "vmlinux");
        s = find_sample(all, EXT4_STACK, "beta");
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(count(s, "objects"), 4u);
        ASSERT_STREQ(label(all, s, "modules"), "ext4");
        /* Allocations of a kernel stack are its own, whoever made them: 8 + 16 + 1 through it. */
        s = find_sample(all, KERNEL_STACK, PROFILE_LABEL_ALL);
        ASSERT_NOT_NULL(s);
        ASSERT_EQ(count(s, "allocObjects"), 25u);
        ASSERT_EQ(count(s, "objects"), 0u);
        ASSERT_STREQ(label(all, s, "units"), PROFILE_LABEL_ALL);
        /* A stack into user space is its process's: its task holds one page and allocated two. */
        ASSERT_EQ(sum(all, "allocObjects", "tasks", "eps"), 2u);
        ASSERT_EQ(sum(all, "objects", "tasks", "eps"), 1u);
        json_t *f;
        size_t i, user = 0;
        json_array_foreach(json_object_get(all, "frames"), i, f)
                user += json_is_true(json_object_get(f, "user"));
        ASSERT_EQ(user, 2u);

        /* top 1: alpha and its unit are named, the rest are "[other]"; the sums stay. */
        json_auto_t *top1 = profile(a, (ProfileQuery) { .pid = -1, .top = 1 });
        ASSERT_EQ(json_array_size(json_object_get(top1, "tasks")), 3u);
        ASSERT_EQ(json_array_size(json_object_get(top1, "units")), 3u);
        ASSERT_EQ(sum(top1, "objects", "tasks", "alpha"), 8u);
        ASSERT_EQ(sum(top1, "objects", "tasks", PROFILE_LABEL_OTHER), 8u);
        ASSERT_EQ(sum(top1, "objects", "units", PROFILE_LABEL_OTHER), 8u);
        ASSERT_EQ(sum(top1, "objects", "tasks", NULL), st.current_pages);
        ASSERT_EQ(sum(top1, "allocObjects", "tasks", PROFILE_LABEL_OTHER), 2u);

        /* A task's profile: its pages; of allocations only those of its own stacks. */
        json_auto_t *beta = profile(a, (ProfileQuery) { .pid = 200 });
        ASSERT_EQ(count(beta, "objects"), 6u);
        ASSERT_EQ(sum(beta, "objects", "tasks", "beta"), 6u);
        ASSERT_EQ(count(beta, "allocObjects"), 0u);
        json_auto_t *eps = profile(a, (ProfileQuery) { .pid = 500 });
        ASSERT_EQ(count(eps, "objects"), 1u);
        ASSERT_EQ(count(eps, "allocObjects"), 2u);

        /* A unit's and a module's. */
        json_auto_t *web = profile(a, (ProfileQuery) { .pid = -1, .unit = "web.service" });
        ASSERT_EQ(count(web, "objects"), 6u);
        ASSERT_EQ(sum(web, "objects", "units", "web.service"), 6u);
        json_auto_t *ext4 = profile(a, (ProfileQuery) { .pid = -1, .module = "ext4" });
        ASSERT_EQ(count(ext4, "objects"), 4u);
        ASSERT_EQ(count(ext4, "allocObjects"), 4u);
        ASSERT_EQ(sum(ext4, "objects", "modules", "ext4"), 4u);

        /* Unknown names. */
        json_t *none = NULL;
        ASSERT_EQ(profile_query_json(a, &(ProfileQuery) { .pid = 999, .top = 1, .page_size = PAGE }, &none), -ESRCH);
        ASSERT_EQ(profile_query_json(a, &(ProfileQuery) { .pid = -1, .unit = "no.service", .top = 1, .page_size = PAGE },
                                     &none), -ENXIO);
        ASSERT_EQ(profile_query_json(a, &(ProfileQuery) { .pid = -1, .module = "nope", .top = 1, .page_size = PAGE },
                                     &none), -ENOENT);
        ASSERT_EQ(profile_query_json(a, &(ProfileQuery) { .pid = -1, .top = 0, .page_size = PAGE }, &none), -EINVAL);
        ASSERT_NULL(none);

        /* Reset(all): nothing held, nothing allocated. */
        view_reset(a, true);
        json_auto_t *reset = profile(a, every);
        ASSERT_EQ(count(reset, "objects"), 0u);
        ASSERT_EQ(count(reset, "allocObjects"), 0u);
        ASSERT_EQ(json_array_size(json_object_get(reset, "samples")), 0u);
        accounting_free(a);
        ksym_free(k);
}

/* More stacks than a reply takes: 15000 chains of three frames of their own, each held and allocated:
 * 30000 samples, and the frames of the biggest 20000 are 30000. */
static void test_bounds(void) {
        enum { N = 15000, DEPTH = 3 };
        _cleanup_free_ uint64_t *ips = malloc(N * DEPTH * sizeof(uint64_t));
        Ksym *k = NULL;
        Accounting *a = core_new(false, &k);

        ASSERT_NOT_NULL(ips);
        synthetic_task(a, 100, "many");
        for (uint32_t i = 0; i < N * DEPTH; i++)
                ips[i] = UINT64_C(0xffffffff81100000) + (uint64_t) i * 16;
        for (uint32_t i = 0; i < N; i++)
                synthetic_feed(a, synthetic_page_event(MS_EVENT_PAGE_ALLOC, 100, 0x100000 + i, 0,
                                                       synthetic_stack(&ips[i * DEPTH], DEPTH, DEPTH)));
        json_auto_t *all = profile(a, every);
        ASSERT_EQ(count(all, "objects"), (uint64_t) N);
        ASSERT_EQ(count(all, "allocObjects"), (uint64_t) N);
        ASSERT_EQ(sum(all, "objects", "tasks", NULL), (uint64_t) N);
        ASSERT_EQ(sum(all, "allocObjects", "tasks", NULL), (uint64_t) N);
        /* 2 N rows (held by the task, allocated by the stack) in PROFILE_SAMPLES_MAX. */
        ASSERT_EQ(json_array_size(json_object_get(all, "samples")), PROFILE_SAMPLES_MAX);
        ASSERT_EQ(count(all, "samplesFolded"), 2u * N - (PROFILE_SAMPLES_MAX - 1));
        ASSERT_LE(json_array_size(json_object_get(all, "frames")), PROFILE_FRAMES_MAX);
        ASSERT_GT(count(all, "stacksCut"), 0u);
        json_t *last = json_array_get(json_object_get(all, "samples"), PROFILE_SAMPLES_MAX - 1);
        ASSERT_EQ(json_integer_value(json_object_get(last, "frame")), -1);
        ASSERT_STREQ(label(all, last, "modules"), PROFILE_LABEL_OTHER);
        ASSERT_STREQ(label(all, last, "tasks"), PROFILE_LABEL_OTHER);
        /* Every stack reads back whole, but those cut short: chains share no frame, so a cut one has none
         * left (-1), as the folded sample. */
        json_t *s;
        size_t i, whole = 0, none = 0;
        json_array_foreach(json_object_get(all, "samples"), i, s) {
                _cleanup_free_ char *text = stack_text(all, s);
                size_t depth = text[0] ? 1 : 0;
                for (const char *c = text; *c; c++)
                        depth += *c == ';';
                ASSERT_TRUE(depth == DEPTH || depth == 0);
                whole += depth == DEPTH;
                none += depth == 0;
        }
        ASSERT_EQ(none, count(all, "stacksCut") + 1);
        ASSERT_EQ(whole + none, (size_t) PROFILE_SAMPLES_MAX);
        accounting_free(a);
        ksym_free(k);
}

static void test_slab(void) {
        Ksym *k = NULL;
        Accounting *a = core_new(true, &k);

        synthetic_scene(a);
        synthetic_object(a, 100, 0xa000, 64);
        synthetic_object(a, 100, 0xa040, 64);
        synthetic_object(a, 200, 0xb000, 512);
        synthetic_object(a, 200, 0xb200, 512);
        synthetic_object(a, 200, 0xb200, 0);

        json_auto_t *slab = profile(a, (ProfileQuery) { .of = PROFILE_OF_SLAB, .pid = -1 });
        ASSERT_STREQ(json_string_value(json_object_get(slab, "of")), "slab");
        ASSERT_EQ(count(slab, "objects"), 3u);
        ASSERT_EQ(count(slab, "bytes"), 640u);
        ASSERT_TRUE(json_is_null(json_object_get(slab, "allocObjects")));
        ASSERT_EQ(sum(slab, "bytes", "tasks", "alpha"), 128u);
        ASSERT_EQ(sum(slab, "bytes", "units", "web.service"), 512u);
        json_auto_t *beta = profile(a, (ProfileQuery) { .of = PROFILE_OF_SLAB, .pid = 200 });
        ASSERT_EQ(count(beta, "objects"), 1u);
        ASSERT_EQ(count(beta, "bytes"), 512u);
        accounting_free(a);
        ksym_free(k);
}

/* A note section with a name note first, then the build ID; then malformed ones. */
static void test_build_id_notes(void) {
        uint8_t notes[256] = {}, id[BUILD_ID_SIZE_MAX];
        size_t at = 0;

        Elf64_Nhdr h = { .n_namesz = 6, .n_descsz = 4, .n_type = 1 };
        memcpy(notes + at, &h, sizeof(h));
        memcpy(notes + at + sizeof(h), "Linux", 6);
        at += sizeof(h) + 8 + 4;
        h = (Elf64_Nhdr) { .n_namesz = 4, .n_descsz = 20, .n_type = NT_GNU_BUILD_ID };
        memcpy(notes + at, &h, sizeof(h));
        memcpy(notes + at + sizeof(h), "GNU", 4);
        for (int i = 0; i < 20; i++)
                notes[at + sizeof(h) + 4 + i] = (uint8_t) (0xa0 + i);
        size_t size = at + sizeof(h) + 4 + 20;

        ASSERT_EQ(build_id_from_notes(notes, size, id), 20);
        ASSERT_EQ(id[0], 0xa0);
        ASSERT_EQ(id[19], 0xb3);
        /* Only the first note: no build ID. Cut inside the descriptor: malformed. */
        ASSERT_EQ(build_id_from_notes(notes, at, id), -ENOENT);
        ASSERT_EQ(build_id_from_notes(notes, size - 1, id), -EBADMSG);
        ASSERT_EQ(build_id_from_notes(notes, 0, id), -ENOENT);

        char *hex = NULL;
        ASSERT_EQ(kernel_build_id("../etc", &hex), -EINVAL);
        ASSERT_EQ(kernel_build_id("no_such_module_here", &hex), -ENOENT);
        ASSERT_NULL(hex);
}

int main(void) {
        TEST(test_pages);
        TEST(test_bounds);
        TEST(test_slab);
        TEST(test_build_id_notes);
        return 0;
}
