/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "pprof-builder.h"
#include "pprof-render.h"

/* Frames a stack of a reply has at most, and levels a Heap tree (maxDepth is at most 255). */
#define STACK_MAX 4096u
#define HEAP_DEPTH_MAX 300u

/* Go's heap profile: the allocation types first, the same four for heap and allocs. */
static const PprofValueType go_heap_types[] = {
        { "alloc_objects", "count" },
        { "alloc_space", "bytes" },
        { "inuse_objects", "count" },
        { "inuse_space", "bytes" },
};
static const PprofValueType inuse_types[] = {
        { "inuse_objects", "count" },
        { "inuse_space", "bytes" },
};

struct PprofRender {
        PprofEndpoint endpoint;
        char *scope;                    /* owned; NULL: everything */
        PprofBuilder *b;                /* owned */
        uint64_t *stack;                /* owned: location ids of the stack being added, innermost first */
        size_t stack_alloc;
        uint64_t *frame_locations;      /* owned: Profile.frames index -> location id, for the reply at hand */
        size_t frame_locations_alloc;

        /* Of the newest reply (scale 1). */
        int64_t page_size, sample_interval, stacks_cut, samples_folded;
        int64_t tracked_pages;          /* memstrackd's total at that moment; -1: not sent */
        size_t heaps;
        /* What the samples held, in the older and the newer reply of a delta (objects: pages or objects). */
        int64_t held_before, held_after;
};

PprofRender *pprof_render_free(PprofRender *r) {
        if (!r)
                return NULL;
        pprof_builder_free(r->b);
        free(r->scope);
        free(r->stack);
        free(r->frame_locations);
        free(r);
        return NULL;
}

int pprof_render_new(PprofEndpoint endpoint, const char *scope, PprofRender **ret) {
        _cleanup_(pprof_render_freep) PprofRender *r = NULL;
        bool go_heap = endpoint == PPROF_HEAP || endpoint == PPROF_ALLOCS;
        int k;

        if (endpoint < 0 || endpoint >= _PPROF_ENDPOINT_MAX)
                return -EINVAL;
        r = calloc(1, sizeof(PprofRender));
        if (!r)
                return -ENOMEM;
        r->endpoint = endpoint;
        r->tracked_pages = -1;
        if (scope && !(r->scope = strdup(scope)))
                return -ENOMEM;
        /* Go's heap profile sets no default type (readers take the last, inuse_space); its allocs
         * profile says alloc_space. */
        k = go_heap ? pprof_builder_new(go_heap_types, ELEMENTSOF(go_heap_types),
                                        endpoint == PPROF_ALLOCS ? "alloc_space" : NULL, &r->b) :
                      pprof_builder_new(inuse_types, ELEMENTSOF(inuse_types), "inuse_space", &r->b);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

static int64_t int_member(const json_t *o, const char *key, int64_t absent) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) ? (int64_t) json_integer_value(v) : absent;
}

static const char *string_member(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* --- Profile replies: heap, allocs, slab --------------------------------------------------------------- */

/* The mappings of the reply's modules, the kernel image first: the main binary to readers (a mapping
 * made from an earlier reply stays as it was). */
static int add_module_mappings(PprofRender *r, const json_t *modules) {
        const char *kernel_build_id = NULL;
        const json_t *m;
        uint64_t id;
        size_t i;
        int k;

        json_array_foreach(modules, i, m)
                if (streq(string_member(m, "name") ?: "", PPROF_KERNEL_MAPPING))
                        kernel_build_id = string_member(m, "buildId");
        PprofMapping kernel = { .file = PPROF_KERNEL_MAPPING, .build_id = kernel_build_id };
        k = pprof_builder_mapping(r->b, false, PPROF_KERNEL_MAPPING, &kernel, &id);
        if (k < 0)
                return k;
        json_array_foreach(modules, i, m) {
                const char *name = string_member(m, "name");
                if (!name)
                        return -EBADMSG;
                /* "[other]", "[loading]": no file. */
                if (name[0] == '[')
                        continue;
                PprofMapping map = { .file = name, .build_id = string_member(m, "buildId") };
                k = pprof_builder_mapping(r->b, false, name, &map, &id);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* The location id of each frame of the reply. */
static int add_frames(PprofRender *r, const json_t *frames) {
        const json_t *f;
        size_t i;
        int k;

        if (greedy_realloc(&r->frame_locations, &r->frame_locations_alloc, MAX(json_array_size(frames), (size_t) 1),
                           sizeof(uint64_t), 64) < 0)
                return -ENOMEM;
        json_array_foreach(frames, i, f) {
                const char *text = string_member(f, "frame");
                if (!text || !json_is_integer(json_object_get(f, "caller")))
                        return -EBADMSG;
                k = pprof_builder_frame(r->b, text, string_member(f, "module"), json_is_true(json_object_get(f, "user")),
                                        string_member(f, "address"), &r->frame_locations[i]);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* The stack of a sample whose innermost frame is frames[at] (-1: none) into r->stack; its depth. */
static int stack_of(PprofRender *r, const json_t *frames, int64_t at, size_t *ret_n) {
        size_t n = 0, n_frames = json_array_size(frames);
        int k;

        while (at >= 0) {
                if ((uint64_t) at >= n_frames || n >= MIN(n_frames, (size_t) STACK_MAX))
                        return -EBADMSG;        /* out of range, or a loop */
                if (greedy_realloc(&r->stack, &r->stack_alloc, n + 1, sizeof(uint64_t), 64) < 0)
                        return -ENOMEM;
                r->stack[n++] = r->frame_locations[at];
                at = int_member(json_array_get(frames, (size_t) at), "caller", -1);
        }
        if (n == 0) {
                /* Pages with no stack, or the samples beyond the reply's bound: a frame of their own. */
                if (greedy_realloc(&r->stack, &r->stack_alloc, 1, sizeof(uint64_t), 64) < 0)
                        return -ENOMEM;
                k = pprof_builder_location(r->b, 0, "[no stack]", 0, &r->stack[n++]);
                if (k < 0)
                        return k;
        }
        *ret_n = n;
        return 0;
}

/* "comm (pid)", or the comm alone for "[other]" and "[all]". New string or NULL. */
static char *task_text(const json_t *task) {
        const char *comm = string_member(task, "comm") ?: "[unknown]";
        json_t *pid = json_object_get(task, "pid");
        char *s;

        if (!json_is_integer(pid))
                return strdup(comm);
        if (asprintf(&s, "%s (%" JSON_INTEGER_FORMAT ")", comm, json_integer_value(pid)) < 0)
                return NULL;
        return s;
}

static int add_profile(PprofRender *r, const json_t *reply, int scale) {
        const json_t *frames = json_object_get(reply, "frames"), *samples = json_object_get(reply, "samples");
        const json_t *tasks = json_object_get(reply, "tasks"), *units = json_object_get(reply, "units");
        const json_t *modules = json_object_get(reply, "modules"), *s;
        bool go_heap = r->endpoint != PPROF_SLAB;
        size_t i, n;
        int k;

        if (!json_is_array(frames) || !json_is_array(samples) || !json_is_array(tasks) || !json_is_array(units) ||
            !json_is_array(modules) || int_member(reply, "pageSize", 0) <= 0)
                return -EBADMSG;
        k = add_module_mappings(r, modules);
        if (k < 0)
                return k;
        k = add_frames(r, frames);
        if (k < 0)
                return k;
        json_array_foreach(samples, i, s) {
                const json_t *task = json_array_get(tasks, (size_t) int_member(s, "task", -1));
                const char *unit = json_string_value(json_array_get(units, (size_t) int_member(s, "unit", -1)));
                const char *module = string_member(json_array_get(modules, (size_t) int_member(s, "module", -1)), "name");
                _cleanup_free_ char *task_label = task ? task_text(task) : NULL;
                if (!task || !unit || !module)
                        return -EBADMSG;
                if (!task_label)
                        return -ENOMEM;
                k = stack_of(r, frames, int_member(s, "frame", -1), &n);
                if (k < 0)
                        return k;
                int64_t objects = int_member(s, "objects", 0), bytes = int_member(s, "bytes", 0);
                int64_t values[4] = { int_member(s, "allocObjects", 0), int_member(s, "allocBytes", 0), objects, bytes };
                const PprofLabel labels[] = { { "task", task_label }, { "unit", unit }, { "module", module } };
                k = pprof_builder_add(r->b, r->stack, n, go_heap ? values : values + 2, labels, ELEMENTSOF(labels),
                                      scale);
                if (k < 0)
                        return k;
        }
        if (scale > 0) {
                r->page_size = int_member(reply, "pageSize", 0);
                r->sample_interval = int_member(reply, "stackSampleInterval", -1);
                r->stacks_cut = int_member(reply, "stacksCut", 0);
                r->samples_folded = int_member(reply, "samplesFolded", 0);
                r->tracked_pages = int_member(reply, "trackedPages", -1);
                r->held_after = int_member(reply, "objects", 0);
        } else
                r->held_before = int_member(reply, "objects", 0);
        return 0;
}

/* --- Heap replies: userheap ---------------------------------------------------------------------------- */

/* The mappings of a heap's files, by the name its frames give them (the file's name without directory). */
static int add_object_mappings(PprofRender *r, const json_t *objects) {
        const json_t *o;
        uint64_t id;
        size_t i;
        int k;

        json_array_foreach(objects, i, o) {
                const char *path = string_member(o, "path"), *slash;
                if (!path)
                        return -EBADMSG;
                slash = strrchr(path, '/');
                PprofMapping map = {
                        .file = path,
                        .build_id = string_member(o, "buildId"),
                        .start = (uint64_t) int_member(o, "start", 0),
                        .limit = (uint64_t) int_member(o, "limit", 0),
                        .offset = (uint64_t) int_member(o, "offset", 0),
                };
                k = pprof_builder_mapping(r->b, true, slash ? slash + 1 : path, &map, &id);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* Visits node's children, then adds node's own blocks and bytes (what its children do not hold) for the
 * stack r->stack[0 .. depth) (outermost first here; reversed for the sample). */
static int walk_heap(PprofRender *r, const json_t *node, size_t depth, const PprofLabel *task, int scale) {
        int64_t bytes = int_member(node, "currentBytes", 0), blocks = int_member(node, "currentBlocks", 0);
        int64_t held_bytes = 0, held_blocks = 0;
        const json_t *child;
        size_t i;
        int k;

        if (depth > HEAP_DEPTH_MAX)
                return -EBADMSG;
        json_array_foreach(json_object_get(node, "children"), i, child) {
                const char *frame = string_member(child, "frame");
                if (!frame)
                        return -EBADMSG;
                if (greedy_realloc(&r->stack, &r->stack_alloc, depth + 1, sizeof(uint64_t), 64) < 0)
                        return -ENOMEM;
                k = pprof_builder_frame(r->b, frame, string_member(child, "module"), true,
                                        string_member(child, "address"), &r->stack[depth]);
                if (k < 0)
                        return k;
                k = walk_heap(r, child, depth + 1, task, scale);
                if (k < 0)
                        return k;
                held_bytes += int_member(child, "currentBytes", 0);
                held_blocks += int_member(child, "currentBlocks", 0);
        }
        if (depth == 0 || bytes <= held_bytes)
                return 0;
        _cleanup_free_ uint64_t *leaf_first = malloc(depth * sizeof(uint64_t));
        if (!leaf_first)
                return -ENOMEM;
        for (size_t j = 0; j < depth; j++)
                leaf_first[j] = r->stack[depth - 1 - j];
        int64_t values[2] = { MAX(blocks - held_blocks, (int64_t) 0), bytes - held_bytes };
        return pprof_builder_add(r->b, leaf_first, depth, values, task, 1, scale);
}

static int add_heaps(PprofRender *r, const json_t *reply, int scale) {
        const json_t *heaps = json_object_get(reply, "heaps"), *h;
        size_t i;
        int k;

        if (!json_is_array(heaps))
                return -EBADMSG;
        json_array_foreach(heaps, i, h) {
                const json_t *root = json_object_get(h, "root"), *objects = json_object_get(h, "objects");
                _cleanup_free_ char *task_label = task_text(h);
                if (!json_is_object(root))
                        return -EBADMSG;
                if (!task_label)
                        return -ENOMEM;
                if (json_is_array(objects)) {
                        k = add_object_mappings(r, objects);
                        if (k < 0)
                                return k;
                }
                const PprofLabel task = { "task", task_label };
                k = walk_heap(r, root, 0, &task, scale);
                if (k < 0)
                        return k;
                if (scale > 0)
                        r->sample_interval = MAX(r->sample_interval, int_member(h, "sampleInterval", 0));
        }
        if (scale > 0)
                r->heaps = json_array_size(heaps);
        return 0;
}

int pprof_render_add(PprofRender *r, const json_t *reply, int scale) {
        if (!json_is_object(reply) || (scale != 1 && scale != -1))
                return -EBADMSG;
        return r->endpoint == PPROF_USERHEAP ? add_heaps(r, reply, scale) : add_profile(r, reply, scale);
}

/* --- The whole profile --------------------------------------------------------------------------------- */

static int add_comments(PprofRender *r, int64_t duration_nanos) {
        PprofBuilder *b = r->b;
        const char *scope = r->scope ?: "all";
        int k;

        switch (r->endpoint) {
        case PPROF_HEAP:
        case PPROF_ALLOCS:
                if ((k = pprof_builder_comment(b, "memstrack: kernel pages by allocation call stack (%s)", scope)) < 0 ||
                    (k = pprof_builder_comment(b, "inuse_*: pages held now; alloc_*: pages allocated since memstrackd "
                                               "began tracing; objects count pages, space is pages x %" PRIi64
                                               " bytes", r->page_size)) < 0 ||
                    (k = pprof_builder_comment(b, "alloc_* are counted per call stack: a sample of them names its "
                                               "task and unit only for a process's own user-space stacks, else "
                                               "task and unit are [all]")) < 0)
                        return k;
                break;
        case PPROF_SLAB:
                if ((k = pprof_builder_comment(b, "memstrack: live slab objects by allocation call stack (%s)",
                                               scope)) < 0 ||
                    (k = pprof_builder_comment(b, "inuse_objects counts objects, inuse_space their allocated "
                                               "bytes")) < 0)
                        return k;
                break;
        default:
                if ((k = pprof_builder_comment(b, "memstrack: user-space heaps memstrackd records (%zu), live "
                                               "blocks by allocation call stack (%s)", r->heaps, scope)) < 0 ||
                    (k = pprof_builder_comment(b, "inuse_objects counts blocks, inuse_space their bytes "
                                               "(malloc_usable_size()); stacks sampled about 1 per %" PRIi64
                                               " bytes, values scaled to the exact counts",
                                               MAX(r->sample_interval, (int64_t) 1))) < 0)
                        return k;
        }
        if (r->endpoint != PPROF_USERHEAP) {
                if (r->sample_interval > 1)
                        k = pprof_builder_comment(b, "stacks sampled about 1 in %" PRIi64 " (stackSampleInterval): "
                                                  "each stack's values are an estimate, the totals exact",
                                                  r->sample_interval);
                else if (r->sample_interval == 1)
                        k = pprof_builder_comment(b, "every allocation's stack taken: values are exact");
                else
                        k = pprof_builder_comment(b, "no stacks taken (stackSampleInterval 0)");
                if (k < 0)
                        return k;
        }
        if (r->stacks_cut > 0 &&
            (k = pprof_builder_comment(b, "%" PRIi64 " samples' stacks cut short to fit memstrackd's reply",
                                       r->stacks_cut)) < 0)
                return k;
        if (r->samples_folded > 0 &&
            (k = pprof_builder_comment(b, "%" PRIi64 " smallest samples folded into one [no stack] sample labeled "
                                       "[other] to fit memstrackd's reply", r->samples_folded)) < 0)
                return k;
        /* What memstrackd counted at the same moment, for a reader to hold the samples' sum against. */
        if (duration_nanos == 0 && r->tracked_pages >= 0 &&
            (k = pprof_builder_comment(b, "memstrackd tracked %" PRIi64 " pages (%" PRIi64 " bytes) as it answered",
                                       r->tracked_pages, r->tracked_pages * MAX(r->page_size, (int64_t) 1))) < 0)
                return k;
        if (duration_nanos > 0 && r->endpoint != PPROF_USERHEAP &&
            (k = pprof_builder_comment(b, "a delta over %.1f s: each value is its change; the samples held %" PRIi64
                                       " %s at its start and %" PRIi64 " at its end", duration_nanos / 1e9,
                                       r->held_before, r->endpoint == PPROF_SLAB ? "objects" : "pages",
                                       r->held_after)) < 0)
                return k;
        if (duration_nanos > 0 && r->endpoint == PPROF_USERHEAP &&
            (k = pprof_builder_comment(b, "a delta over %.1f s: each value is its change", duration_nanos / 1e9)) < 0)
                return k;
        return pprof_builder_comment(b, "generated by memstrack-metrics %s", PACKAGE_VERSION);
}

int pprof_render_finish(PprofRender *r, int64_t time_nanos, int64_t duration_nanos, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *data = NULL;
        size_t size;
        int k;

        k = add_comments(r, duration_nanos);
        if (k < 0)
                return k;
        /* As Go's heap profiles: the sampling period in bytes. */
        int64_t every = MAX(r->sample_interval, (int64_t) 1);
        int64_t unit = r->endpoint == PPROF_USERHEAP ? 1 : MAX(r->page_size, (int64_t) 1);
        if (r->endpoint != PPROF_SLAB) {
                k = pprof_builder_set_period(r->b, "space", "bytes", every > INT64_MAX / unit ? INT64_MAX : every * unit);
                if (k < 0)
                        return k;
        }
        pprof_builder_set_time(r->b, time_nanos, duration_nanos);
        k = pprof_builder_encode(r->b, &data, &size, NULL);
        if (k < 0)
                return k;
        return pprof_gzip(data, size, ret, ret_size);
}
