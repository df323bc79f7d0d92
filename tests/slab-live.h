/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The live slab check the source tests end with (test-perf.c, test-ebpf.c, test-ftrace.c): a source of
 * the given type runs on this kernel while this process holds SLAB_LIVE_N eventfds, then closes them.
 * Each eventfd is one kmalloc of its context by eventfd's own code, so the sink must see at least N
 * object allocations from one call site that /proc/kallsyms places in an eventfd function (the name is
 * found, not assumed: do_eventfd on 6.18, another where a kernel inlines it elsewhere), all of one
 * requested size and allocated no smaller, then a free of each of those pointers. Without --slab the
 * same run must bring no object event at all.
 *
 * The sink keeps only what the check needs: this process's allocations and every free (a free may come
 * from any context), in arrays that grow as needed, unlike test-sink.h's 64 events.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "ksym.h"
#include "macro.h"
#include "source.h"
#include "tests.h"
#include "tracefs.h"

#define SLAB_LIVE_N 200

typedef struct SlabLiveAlloc {
        uint64_t ptr;
        uint64_t call_site;
        uint64_t requested;
        uint64_t allocated;
} SlabLiveAlloc;

typedef struct SlabLive {
        pid_t pid;                      /* whose allocations are kept: ours */
        bool recording;
        uint64_t n_events;              /* every event the source delivered */
        uint64_t n_objects;             /* object events among them, recording or not */
        SlabLiveAlloc *allocs;          /* owned */
        size_t n_allocs, allocs_allocated;
        uint64_t *frees;                /* owned: pointers freed, in order */
        size_t n_frees, frees_allocated;
        size_t frees_at_close;          /* n_frees when the eventfds began to close */
} SlabLive;

static void slab_live_event(void *userdata, const MsEvent *ev) {
        SlabLive *l = userdata;

        l->n_events++;
        if (ev->type != MS_EVENT_OBJECT_ALLOC && ev->type != MS_EVENT_OBJECT_FREE)
                return;
        l->n_objects++;
        if (!l->recording)
                return;
        if (ev->type == MS_EVENT_OBJECT_ALLOC) {
                if (ev->pid != l->pid)
                        return;
                ASSERT_OK(greedy_realloc(&l->allocs, &l->allocs_allocated, l->n_allocs + 1, sizeof(*l->allocs),
                                         1024));
                l->allocs[l->n_allocs++] = (SlabLiveAlloc) {
                        .ptr = ev->object.ptr,
                        .call_site = ev->object.call_site,
                        .requested = ev->object.bytes_requested,
                        .allocated = ev->object.bytes_allocated,
                };
                return;
        }
        ASSERT_OK(greedy_realloc(&l->frees, &l->frees_allocated, l->n_frees + 1, sizeof(*l->frees), 4096));
        l->frees[l->n_frees++] = ev->object.ptr;
}

static void slab_live_done(SlabLive *l) {
        free(l->allocs);
        free(l->frees);
        *l = (SlabLive) {};
}

/* Why this machine cannot run the check, or NULL. */
static const char *slab_live_skip_reason(void) {
        static char reason[256];
        _cleanup_free_ char *tracefs = NULL;
        static const char *const needed[][2] = {
                { "kmalloc", "kmalloc_node" },
                { "kfree", "kfree" },
        };

        if (geteuid() != 0)
                return "not root";
        if (tracefs_find(&tracefs) < 0)
                return "no tracefs";
        for (size_t i = 0; i < ELEMENTSOF(needed); i++) {
                bool found = false;

                for (size_t j = 0; j < 2; j++) {
                        char path[512];
                        struct stat st;

                        (void) snprintf(path, sizeof(path), "%s/events/kmem/%s/format", tracefs, needed[i][j]);
                        if (stat(path, &st) >= 0)
                                found = true;
                }
                if (!found) {
                        (void) snprintf(reason, sizeof(reason), "the kernel has no kmem:%s tracepoint",
                                        needed[i][0]);
                        return reason;
                }
        }
        return NULL;
}

/*
 * Runs a source of type (options from source_options_init(), slab as given, a shallow call chain, and
 * our parent as the "daemon" whose allocations are dropped, so that ours are kept) around the eventfd
 * workload. 0, or EXIT_TEST_SKIP after printing why when the source cannot run here.
 */
static int slab_live_run(const SourceType *type, bool slab, SlabLive *l) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        EventSource *source = NULL;
        const char *reason = NULL;
        SourceOptions o;
        int fds[SLAB_LIVE_N];
        int r;

        *l = (SlabLive) { .pid = getpid() };
        source_options_init(&o);
        o.slab = slab;
        o.depth = 16;
        o.self = getppid();
        if (type->probe && type->probe(&o, &reason) < 0) {
                fprintf(stderr, "skipping the live %s slab check: %s\n", type->name, reason);
                return EXIT_TEST_SKIP;
        }
        r = type->new(&o, &source);
        if (r == -EPERM || r == -EACCES || r == -ENOENT || r == -EOPNOTSUPP || r == -ENOSYS) {
                fprintf(stderr, "skipping the live %s slab check: the source cannot run here: %s\n", type->name,
                        strerror(-r));
                return EXIT_TEST_SKIP;
        }
        ASSERT_OK(r);
        ASSERT_OK(sd_event_new(&event));
        ASSERT_OK(source->ops->start(source, event, &(MsEventSink) { .event = slab_live_event, .userdata = l }));
        ASSERT_OK(source->ops->flush(source));

        l->recording = true;
        for (size_t i = 0; i < SLAB_LIVE_N; i++) {
                fds[i] = eventfd(0, EFD_CLOEXEC);
                ASSERT_OK(fds[i]);
        }
        ASSERT_OK(source->ops->flush(source));
        l->frees_at_close = l->n_frees;
        for (size_t i = 0; i < SLAB_LIVE_N; i++)
                ASSERT_OK(close(fds[i]));
        ASSERT_OK(source->ops->flush(source));
        l->recording = false;

        EventSourceStats st;
        source->ops->get_stats(source, &st);
        for (size_t i = 0; i < st.n_losses; i++)
                if (st.losses[i].count > 0)
                        fprintf(stderr, "%s lost %" PRIu64 " (%s)\n", type->name, st.losses[i].count,
                                st.losses[i].reason);
        event_source_free(source);
        return 0;
}

static int slab_live_cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Asserts what a --slab run must have seen (see the top). */
static void slab_live_check(const SlabLive *l, const char *source_name) {
        Ksym *k = NULL;
        uint64_t site = 0;
        size_t best = 0, found = 0;
        KsymResult sym;

        ASSERT_OK(ksym_load(NULL, &k));
        ASSERT_TRUE(!ksym_addresses_hidden(k));

        /* The call site in eventfd code with the most allocations of ours. */
        for (size_t i = 0; i < l->n_allocs; i++) {
                size_t n = 0;

                if (!ksym_lookup(k, l->allocs[i].call_site, &sym) || !strstr(sym.name, "eventfd"))
                        continue;
                for (size_t j = 0; j < l->n_allocs; j++)
                        n += l->allocs[j].call_site == l->allocs[i].call_site;
                if (n > best) {
                        best = n;
                        site = l->allocs[i].call_site;
                }
        }
        fprintf(stderr, "%s: %zu allocations of ours, %zu frees seen\n", source_name, l->n_allocs, l->n_frees);
        ASSERT_GE(best, SLAB_LIVE_N);
        ASSERT_TRUE(ksym_lookup(k, site, &sym));
        fprintf(stderr, "%s: %zu allocations at %s+0x%" PRIx64 "\n", source_name, best, sym.name, sym.offset);

        /* One requested size at one call site; the allocator rounds up, never down. */
        uint64_t requested = 0;
        for (size_t i = 0; i < l->n_allocs; i++) {
                const SlabLiveAlloc *a = &l->allocs[i];

                if (a->call_site != site)
                        continue;
                if (requested == 0)
                        requested = a->requested;
                ASSERT_GT(a->requested, 0);
                ASSERT_EQ(a->requested, requested);
                ASSERT_GE(a->allocated, a->requested);
        }

        /* Each of those objects freed after the close. */
        uint64_t *frees = l->frees + l->frees_at_close;
        size_t n_frees = l->n_frees - l->frees_at_close;
        qsort(frees, n_frees, sizeof(*frees), slab_live_cmp_u64);
        for (size_t i = 0; i < l->n_allocs; i++)
                if (l->allocs[i].call_site == site &&
                    bsearch(&l->allocs[i].ptr, frees, n_frees, sizeof(*frees), slab_live_cmp_u64))
                        found++;
        fprintf(stderr, "%s: %zu of them freed after the close\n", source_name, found);
        ASSERT_GE(found, SLAB_LIVE_N);
        ksym_free(k);
}

/* Runs both halves: with slab, the check above; without, no object event (and some events, so the sink
 * was listening). Returns EXIT_TEST_SKIP when the machine cannot run it, else 0. */
static int slab_live_test(const SourceType *type) {
        const char *reason = slab_live_skip_reason();
        SlabLive l;

        if (reason) {
                fprintf(stderr, "skipping the live %s slab check: %s\n", type->name, reason);
                return EXIT_TEST_SKIP;
        }
        if (slab_live_run(type, false, &l) == EXIT_TEST_SKIP)
                return EXIT_TEST_SKIP;
        ASSERT_GT(l.n_events, 0);
        ASSERT_EQ(l.n_objects, 0);
        slab_live_done(&l);

        ASSERT_EQ(slab_live_run(type, true, &l), 0);
        slab_live_check(&l, type->name);
        slab_live_done(&l);
        return 0;
}

/* A source's test program: no argument runs its kernel-free cases (the unit suite), "slab-live" only the
 * live check above (the live suite), so a machine that cannot trace skips that test alone. Returns -1 for
 * the kernel-free cases, else the exit status. */
static int slab_live_mode(int argc, char *argv[], const SourceType *type) {
        if (argc == 1)
                return -1;
        if (argc == 2 && strcmp(argv[1], "slab-live") == 0)
                return slab_live_test(type);
        fprintf(stderr, "Usage: %s [slab-live]\n", argv[0]);
        return EXIT_FAILURE;
}
