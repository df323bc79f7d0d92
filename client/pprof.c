/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "macro.h"
#include "pprof.h"
#include "pprof-builder.h"
#include "reply.h"

/* A StackTree (or heap) tree walked into a profile. */
typedef struct Walk {
        PprofBuilder *b;
        /* Location ids from below the root down to the node being visited, and the same leaf first. */
        uint64_t *stack, *leaf_first;
        size_t n_stack, stack_alloc, leaf_first_alloc;
        uint64_t page_size;
        bool heap;                      /* PprofSource.heap */
        uint64_t pages;                 /* sum of the samples' pages (bytes of a heap) */
        uint64_t truncated;             /* children the daemon left out, summed over the tree */
} Walk;

static void walk_done(Walk *w) {
        pprof_builder_free(w->b);
        free(w->stack);
        free(w->leaf_first);
}

/* A sample of count objects, bytes bytes for the stack w->stack (outermost first). */
static int add_sample(Walk *w, uint64_t count, uint64_t bytes) {
        int64_t values[2] = { (int64_t) MIN(count, (uint64_t) INT64_MAX), (int64_t) MIN(bytes, (uint64_t) INT64_MAX) };

        if (greedy_realloc(&w->leaf_first, &w->leaf_first_alloc, MAX(w->n_stack, (size_t) 1), sizeof(uint64_t), 16) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < w->n_stack; i++)
                w->leaf_first[i] = w->stack[w->n_stack - 1 - i];
        w->pages += w->heap ? bytes : count;
        return pprof_builder_add(w->b, w->leaf_first, w->n_stack, values, NULL, 0, 1);
}

/* The sample of pages: their count, and their bytes (a page count from a file can be anything up to
 * INT64_MAX: bytes saturate instead of wrapping). */
static int add_pages_sample(Walk *w, uint64_t pages) {
        return add_sample(w, pages, pages > (uint64_t) INT64_MAX / w->page_size ? INT64_MAX : pages * w->page_size);
}

/* The location of node's frame. user: the frame is on the user side of its stack (see walk()). */
static int location_id(Walk *w, const json_t *node, bool user, uint64_t *ret) {
        return pprof_builder_frame(w->b, reply_string(node, "frame") ?: "[unknown]", reply_string(node, "module"), user,
                                   reply_string(node, "address"), ret);
}

/*
 * Visits node's children and their subtrees, then adds node's own pages as a sample. user: the node is
 * below a process node ("[pid N comm]", where the daemon hangs stacks with user frames, outermost user
 * frame first) and above the first kernel image frame, where a stack enters the kernel: frames with a
 * module there are user ELF files, elsewhere kernel modules.
 */
static int walk(Walk *w, const json_t *node, bool user, unsigned level) {
        uint64_t held = 0, cur = reply_count(node, "currentPages");
        uint64_t held_blocks = 0, blocks = reply_count(node, "currentBlocks");
        json_t *child;
        size_t i;
        int r;

        /* jansson refuses documents nested deeper than 2048; this is only a guard against a loop. */
        if (level > 4096)
                return -ELOOP;
        w->truncated += reply_count(node, "truncatedChildren");
        json_array_foreach(reply_array(node, "children"), i, child) {
                const char *frame = reply_string(child, "frame") ?: "[unknown]";
                bool image = frame[0] != '[' && !reply_string(child, "module");
                bool below = image ? false : user || strncmp(frame, "[pid ", 5) == 0;
                uint64_t loc;

                r = location_id(w, child, user && !image, &loc);
                if (r < 0)
                        return r;
                r = greedy_realloc(&w->stack, &w->stack_alloc, w->n_stack + 1, sizeof(uint64_t), 16);
                if (r < 0)
                        return r;
                w->stack[w->n_stack++] = loc;
                r = walk(w, child, below, level + 1);
                w->n_stack--;
                if (r < 0)
                        return r;
                held += reply_count(child, "currentPages");
                held_blocks += reply_count(child, "currentBlocks");
        }
        if (level > 0 && cur > held)
                return w->heap ? add_sample(w, blocks > held_blocks ? blocks - held_blocks : 0, cur - held)
                               : add_pages_sample(w, cur - held);
        return 0;
}

static int add_comments(Walk *w, const PprofSource *s, int64_t interval) {
        PprofBuilder *b = w->b;
        int r;

        if (s->heap) {
                if ((r = pprof_builder_comment(b, "memstrack: user-space heap at its maximum, by allocation call "
                                               "stack (%s)", s->scope ?: "all")) < 0 ||
                    (r = pprof_builder_comment(b, "inuse_objects counts blocks, inuse_space their bytes "
                                               "(malloc_usable_size())")) < 0)
                        return r;
                if (interval > 1)
                        r = pprof_builder_comment(b, "stacks sampled about 1 per %" PRIi64 " bytes: each stack's "
                                                  "values are an estimate, scaled so the totals are the exact counts",
                                                  interval);
                else
                        r = pprof_builder_comment(b, "every allocation's stack: values are exact");
                if (r < 0)
                        return r;
                interval = 0;   /* said */
        } else if ((r = pprof_builder_comment(b, "memstrack: kernel pages held now, by allocation call stack (%s)",
                                              s->scope ?: "all")) < 0 ||
                   (r = pprof_builder_comment(b, "inuse_objects counts pages, inuse_space their bytes (%" PRIu64
                                              " per page); no alloc_* values: StackTree sends none (memstrack-"
                                              "metrics' /debug/pprof/allocs has them)", s->page_size)) < 0)
                return r;
        if (interval > 1)
                r = pprof_builder_comment(b, "stacks sampled about 1 in %" PRIi64 " pages (stackSampleInterval): "
                                          "each stack's pages are an estimate, scaled so the totals are the exact "
                                          "counts", interval);
        else if (interval == 1)
                r = pprof_builder_comment(b, "stacks taken for every allocation (stackSampleInterval 1): counts are "
                                          "exact");
        else if (interval == 0 && !s->heap)
                r = pprof_builder_comment(b, "no stacks taken (stackSampleInterval 0): pages are at the root frame");
        if (r < 0)
                return r;
        if (w->truncated > 0 &&
            (r = pprof_builder_comment(b, "branches too small for the daemon to send: %" PRIu64 ", counted in the "
                                       "frames above them", w->truncated)) < 0)
                return r;
        if (s->generator && (r = pprof_builder_comment(b, "generated by %s", s->generator)) < 0)
                return r;
        return 0;
}

static int build(Walk *w, const PprofSource *s) {
        static const PprofValueType types[] = {
                /* Counts first, as the format's comment asks of a value that counts events. */
                { "inuse_objects", "count" },
                { "inuse_space", "bytes" },
        };
        const json_t *root = reply_object(s->tree, "root");
        int64_t interval = s->sample_interval >= 0 ? s->sample_interval :
                           reply_int(s->tree, "stackSampleInterval", -1);
        uint64_t root_pages, loc, kernel_id;
        int r;

        if (!root)
                return -EINVAL;
        w->page_size = s->page_size;
        w->heap = s->heap;
        r = pprof_builder_new(types, ELEMENTSOF(types), "inuse_space", &w->b);
        if (r < 0)
                return r;
        /* As in Go heap profiles: the sampling period in bytes. Values are scaled already: a reader
         * shows them as they are. */
        uint64_t every = (uint64_t) MAX(interval, (int64_t) 1);
        r = pprof_builder_set_period(w->b, "space", "bytes", every > (uint64_t) INT64_MAX / s->page_size ? INT64_MAX :
                                                             (int64_t) (every * s->page_size));
        if (r < 0)
                return r;
        pprof_builder_set_time(w->b, s->time_nanos, 0);

        /* The kernel image is the main binary: mapping[0], as readers take it to name the profile. */
        r = s->heap ? 0 : pprof_builder_mapping(w->b, false, PPROF_KERNEL_MAPPING, NULL, &kernel_id);
        if (r < 0)
                return r;

        /* A task's view has its root "[pid N]": frames with a module right below it may be user ones. */
        r = walk(w, root, s->heap || strncmp(reply_string(root, "frame") ?: "", "[pid ", 5) == 0, 0);
        if (r < 0)
                return r;
        /* Pages at the root itself (stacks cut at the root, children left out there): a frame of their
         * own named after the root, so the samples add up to the tree's total. */
        root_pages = reply_count(root, "currentPages");
        if (root_pages > w->pages) {
                r = location_id(w, root, false, &loc);
                if (r < 0)
                        return r;
                w->n_stack = 0;
                r = greedy_realloc(&w->stack, &w->stack_alloc, 1, sizeof(uint64_t), 16);
                if (r < 0)
                        return r;
                w->stack[w->n_stack++] = loc;
                r = w->heap ? add_sample(w, 0, root_pages - w->pages) : add_pages_sample(w, root_pages - w->pages);
                if (r < 0)
                        return r;
        }
        return add_comments(w, s, interval);
}

int pprof_encode(const PprofSource *s, uint8_t **ret, size_t *ret_size, PprofStats *ret_stats) {
        _cleanup_(walk_done) Walk w = {};
        PprofBuilderStats st;
        int r;

        assert(s && s->page_size > 0 && ret && ret_size);

        r = build(&w, s);
        if (r < 0)
                return r;
        r = pprof_builder_encode(w.b, ret, ret_size, &st);
        if (r < 0)
                return r;
        if (ret_stats)
                *ret_stats = (PprofStats) {
                        .pages = w.pages,
                        .n_samples = st.n_samples,
                        .n_locations = st.n_locations,
                        .n_functions = st.n_functions,
                        .n_mappings = st.n_mappings,
                        .n_strings = st.n_strings,
                };
        return 0;
}

int pprof_write_gzip(const uint8_t *data, size_t size, const char *path) {
        _cleanup_free_ uint8_t *gz = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n, done = 0;
        int r;

        r = pprof_gzip(data, size, &gz, &n);
        if (r < 0)
                return r;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
                return negative_errno();
        while (done < n) {
                ssize_t k = write(fd, gz + done, n - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                done += (size_t) k;
        }
        if (close(TAKE_FD(fd)) < 0)
                return negative_errno();
        return 0;
}
