/* SPDX-License-Identifier: MIT */

/*
 * bench-core: pushes a synthetic but realistic event mix through the accounting core on one thread and
 * prints events per second and bytes per live page.
 *
 * Mix: 10k distinct 20-frame kernel chains (shared outer frames, skewed popularity, each process mostly
 * within a working set of its own), 200 processes in 40 cgroups (units),
 * ~1M live pages held steady (90 % order 0, the rest orders 1..3), frees by a task other than the
 * allocator half of the time. Each measured step frees one live block and allocates another, so the
 * table stays at its working size. Usage: bench-core [EVENTS] [LIVE_PAGES] [exits|PREFETCH_AHEAD] ("exits": only the last
 * part, below)
 *
 * Then the aggregated-sample path (MS_EVENT_SAMPLE, what a source that counts in the kernel delivers):
 * "task T, stack S: +n or -n pages" on the same stacks and processes, negative deltas never taking more
 * than (T, S) holds, so the core's sampled pages must equal the trace's and none be untracked.
 *
 * Last, short-lived processes (fork, allocate, exit, the page freed later): the cost of exits and of
 * evicting exited records past --max-exited-tasks.
 *
 * PREFETCH_AHEAD (default 8): the replay asks the core to prefetch the page of the event that many ahead
 * (accounting_prefetch_page()), as the eBPF source does within a batch; 0 replays without.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accounting.h"
#include "macro.h"
#include "time-util.h"

#define DEPTH 20
#define N_STACKS 10000
#define N_PIDS 200
#define N_CGROUPS 40

static uint64_t rng_state = 0x9E3779B97F4A7C15;

static inline uint64_t rng(void) {
        /* xorshift64*: cheap enough not to matter next to the core's work. */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(2685821657736338717);
}

/* Each block lives in its own 8-page aligned chunk, so any order up to 3 fits without overlaps. */
typedef struct Block {
        uint32_t chunk;
        uint8_t order;
} Block;

static unsigned pick_order(void) {
        unsigned r = (unsigned) (rng() % 100);
        return r < 90 ? 0 : r < 96 ? 1 : r < 99 ? 2 : 3;
}

/*
 * Popular stacks are popular (a squared uniform draw skews towards low indices), and a process keeps to
 * a working set: 3 in 4 of its allocations come from 64 stacks of its own, the rest from all 10k.
 */
static unsigned pick_stack(int32_t pid) {
        uint64_t x = rng() % 1000;
        unsigned skewed = (unsigned) ((x * x) / 1000);
        if (rng() % 4 != 0)
                return (unsigned) (pid * 64 + skewed % 64) % N_STACKS;
        return (unsigned) (skewed * N_STACKS / 1000);
}

/* One precomputed event: the replay reads these sequentially, so only the core's own costs are timed. */
typedef struct TraceEvent {
        uint64_t pfn;
        int32_t pid;
        uint16_t stack;
        uint8_t order;
        uint8_t is_free;
} TraceEvent;

typedef struct Trace {
        TraceEvent *events;
        size_t n, allocated;
} Trace;

static void trace_push(Trace *t, TraceEvent e) {
        if (t->n == t->allocated) {
                t->allocated = t->allocated ? t->allocated * 2 : 1 << 20;
                t->events = realloc(t->events, t->allocated * sizeof(TraceEvent));
                if (!t->events) {
                        fprintf(stderr, "bench-core: out of memory\n");
                        abort();
                }
        }
        t->events[t->n++] = e;
}

/*
 * Builds the warm-up (filling live_target pages) and the measured steps (free one block, allocate one).
 * lifo: allocations reuse the most recently freed chunk, as the kernel's per-CPU page lists do, and half
 * of the frees hit a recently allocated block (short-lived pages); otherwise both are uniformly random.
 */
static void make_trace(Trace *warmup, Trace *steps, uint64_t n_events, uint64_t live_target, bool lifo) {
        uint32_t n_chunks = (uint32_t) (live_target / 1.2 * 2);
        Block *live = malloc(n_chunks * sizeof(Block));
        uint32_t *free_chunks = malloc(n_chunks * sizeof(uint32_t));
        if (!live || !free_chunks)
                abort();
        for (uint32_t i = 0; i < n_chunks; i++)
                free_chunks[i] = n_chunks - 1 - i;
        uint32_t n_free = n_chunks, n_live = 0;
        uint64_t live_pages = 0;

        bool warm = true;
        for (;;) {
                /* One way: once measuring, a dip below the target must not append to the warm-up. */
                warm = warm && live_pages < live_target;
                Trace *t = warm ? warmup : steps;

                if (!warm) {
                        /* Free: a recent block (the last few allocated) or any live block. */
                        uint32_t k = lifo && rng() % 2 ? n_live - 1 - (uint32_t) (rng() % 16)
                                                       : (uint32_t) (rng() % n_live);
                        Block b = live[k];
                        live[k] = live[--n_live];
                        trace_push(t, (TraceEvent) {
                                .pfn = (uint64_t) b.chunk * 8 + 0x100000,
                                .pid = (int32_t) (rng() % N_PIDS) + 1000,
                                .order = b.order,
                                .is_free = 1,
                        });
                        free_chunks[n_free++] = b.chunk;
                        live_pages -= 1u << b.order;
                }

                uint32_t slot = lifo ? n_free - 1 : (uint32_t) (rng() % n_free);
                uint32_t chunk = free_chunks[slot];
                free_chunks[slot] = free_chunks[--n_free];
                unsigned order = pick_order();
                int32_t pid = (int32_t) (rng() % N_PIDS) + 1000;
                trace_push(t, (TraceEvent) {
                        .pfn = (uint64_t) chunk * 8 + 0x100000,
                        .pid = pid,
                        .stack = (uint16_t) pick_stack(pid),
                        .order = (uint8_t) order,
                });
                live[n_live++] = (Block) { .chunk = chunk, .order = (uint8_t) order };
                live_pages += 1u << order;
                if (!warm && steps->n >= n_events)
                        break;
        }
        free(live);
        free(free_chunks);
}

static uint64_t stacks[N_STACKS][DEPTH];

/* Events ahead of the current one whose page the replay prefetches (accounting_prefetch_page()), as the
 * eBPF source does for its batches; 0: none. */
#define PREFETCH_DEFAULT 8
static size_t prefetch_ahead;

static void replay(Accounting *a, const Trace *t, uint64_t *ts) {
        MsEvent e = { .page.stack = { .n_frames = DEPTH, .n_kernel_frames = DEPTH } };

        for (size_t i = 0; i < t->n; i++) {
                if (prefetch_ahead > 0 && i + prefetch_ahead < t->n)
                        accounting_prefetch_page(a, t->events[i + prefetch_ahead].pfn);
                const TraceEvent *te = &t->events[i];
                e.type = te->is_free ? MS_EVENT_PAGE_FREE : MS_EVENT_PAGE_ALLOC;
                e.pid = e.tid = te->pid;
                e.cgroup_id = 5000 + (uint64_t) (te->pid % N_CGROUPS);
                e.page.pfn = te->pfn;
                e.page.order = te->order;
                e.page.stack.frames = stacks[te->stack];
                e.timestamp_nsec = (*ts)++;
                accounting_handle_event(a, &e);
        }
}

static int run(const char *label, uint64_t n_events, uint64_t live_target, bool lifo, bool per_process) {
        AccountingConfig config = ACCOUNTING_CONFIG_DEFAULT;
        Trace warmup = {}, steps = {};
        Accounting *a = NULL;
        uint64_t ts = 1;
        int r;

        config.per_process_stacks = per_process;
        make_trace(&warmup, &steps, n_events, live_target, lifo);
        r = accounting_new(&config, NULL, &a);
        if (r < 0) {
                fprintf(stderr, "accounting_new: %d\n", r);
                return 1;
        }
        replay(a, &warmup, &ts);

        uint64_t start = now_nsec(CLOCK_MONOTONIC);
        replay(a, &steps, &ts);
        uint64_t elapsed = now_nsec(CLOCK_MONOTONIC) - start;

        AccountingStats s;
        accounting_get_stats(a, &s);
        StackTreeStats st;
        stacktree_get_stats(accounting_stacktree(a), &st);
        if (s.untracked_frees != 0 || s.stale_blocks != 0) {
                fprintf(stderr, "bench-core: accounting disagrees with the trace: %" PRIu64 " untracked frees, %" PRIu64 " stale blocks, %" PRIu64 " alloc failures\n", s.untracked_frees, s.stale_blocks, s.alloc_failures);
                return 1;
        }

        size_t core_bytes = accounting_memory_bytes(a);
        size_t table_bytes = pagemap_memory_bytes(accounting_pagemap(a));
        printf("%s\n", label);
        printf("  events            %zu\n", steps.n);
        printf("  events/s          %.2f M (%.1f ns/event, prefetch %zu ahead)\n",
               steps.n / (elapsed / 1e9) / 1e6, (double) elapsed / steps.n, prefetch_ahead);
        printf("  live pages        %" PRIu64 " in %zu blocks\n", s.current_pages,
               pagemap_blocks(accounting_pagemap(a)));
        printf("  page table        %.1f bytes/live page\n", (double) table_bytes / s.current_pages);
        printf("  whole core        %.1f bytes/live page (%zu stack nodes, %zu in process trees, %zu KiB)\n",
               (double) core_bytes / s.current_pages, st.n_nodes, st.n_process_nodes, core_bytes / 1024);
        printf("  truncated         %" PRIu64 " global, %" PRIu64 " process paths\n", st.stacks_truncated,
               st.process_paths_truncated);
        printf("  stack cache       %.2f %% hits\n", 100.0 * st.cache_hits / (st.cache_hits + st.cache_misses));

        free(warmup.events);
        free(steps.events);
        accounting_free(a);
        return 0;
}

/* One precomputed aggregated sample. */
typedef struct SampleEvent {
        int32_t pid;
        uint16_t stack;
        int8_t delta;
        uint8_t peak;
} SampleEvent;

/* n samples on random (process, stack) pairs, as pick_stack() chooses them; held[] is what each pair holds
 * (N_PIDS * N_STACKS entries), kept up to date so a negative delta takes at most that. positive_only for the
 * warm-up. */
static SampleEvent *make_samples(size_t n, uint32_t *held, bool positive_only, uint64_t *total) {
        SampleEvent *v = malloc(MAX(n, (size_t) 1) * sizeof(SampleEvent));
        if (!v)
                abort();
        for (size_t i = 0; i < n; i++) {
                int32_t pid = (int32_t) (rng() % N_PIDS) + 1000;
                unsigned stack = pick_stack(pid);
                uint32_t *h = &held[(size_t) (pid - 1000) * N_STACKS + stack];
                int delta;

                if (!positive_only && *h > 0 && rng() % 2)
                        delta = -(int) MIN(*h, (uint32_t) (1 + rng() % 8));
                else
                        delta = (int) (1 + rng() % 8);
                *h = (uint32_t) ((int64_t) *h + delta);
                *total = (uint64_t) ((int64_t) *total + delta);
                /* A rise at least the delta itself when it is positive, a small one between samples else. */
                int peak = delta > 0 ? delta + (int) (rng() % 4) : (int) (rng() % 2);
                v[i] = (SampleEvent) { .pid = pid, .stack = (uint16_t) stack, .delta = (int8_t) delta,
                                       .peak = (uint8_t) peak };
        }
        return v;
}

static void replay_samples(Accounting *a, const SampleEvent *v, size_t n, uint64_t *ts) {
        MsEvent e = {
                .type = MS_EVENT_SAMPLE,
                .sample = { .stack = { .n_frames = DEPTH, .n_kernel_frames = DEPTH }, .unit = LEDGER_PAGES },
        };

        for (size_t i = 0; i < n; i++) {
                e.pid = e.tid = v[i].pid;
                e.sample.stack.frames = stacks[v[i].stack];
                e.sample.delta = v[i].delta;
                e.sample.peak = v[i].peak;
                e.timestamp_nsec = (*ts)++;
                accounting_handle_event(a, &e);
        }
}

static int run_samples(const char *label, uint64_t n_events, bool per_process) {
        AccountingConfig config = ACCOUNTING_CONFIG_DEFAULT;
        size_t n_warmup = N_PIDS * 64 * 4;
        uint64_t ts = 1, total = 0;
        Accounting *a = NULL;
        int r;

        uint32_t *held = calloc((size_t) N_PIDS * N_STACKS, sizeof(uint32_t));
        if (!held)
                abort();
        SampleEvent *warmup = make_samples(n_warmup, held, true, &total);
        SampleEvent *steps = make_samples(n_events, held, false, &total);

        config.per_process_stacks = per_process;
        r = accounting_new(&config, NULL, &a);
        if (r < 0) {
                fprintf(stderr, "accounting_new: %d\n", r);
                return 1;
        }
        replay_samples(a, warmup, n_warmup, &ts);

        uint64_t start = now_nsec(CLOCK_MONOTONIC);
        replay_samples(a, steps, n_events, &ts);
        uint64_t elapsed = now_nsec(CLOCK_MONOTONIC) - start;

        AccountingStats s;
        accounting_get_stats(a, &s);
        StackTreeStats st;
        stacktree_get_stats(accounting_stacktree(a), &st);
        if (s.samples != n_warmup + n_events || s.sampled_pages != total || s.sample_untracked_pages != 0 ||
            s.current_pages != total) {
                fprintf(stderr, "bench-core: accounting disagrees with the samples: %" PRIu64 " samples, %"
                        PRIu64 " sampled pages (trace: %" PRIu64 "), %" PRIu64 " untracked, %" PRIu64
                        " alloc failures\n",
                        s.samples, s.sampled_pages, total, s.sample_untracked_pages, s.alloc_failures);
                return 1;
        }

        printf("%s\n", label);
        printf("  events            %" PRIu64 "\n", n_events);
        printf("  events/s          %.2f M (%.1f ns/event)\n", n_events / (elapsed / 1e9) / 1e6,
               (double) elapsed / n_events);
        printf("  sampled pages     %" PRIu64 " (%zu stack nodes, %zu in process trees)\n", s.sampled_pages,
               st.n_nodes, st.n_process_nodes);

        free(held);
        free(warmup);
        free(steps);
        accounting_free(a);
        return 0;
}

/*
 * Short-lived processes: each forks, allocates a page and exits; the page is freed EXIT_FREE_LAG cycles
 * later by another task, so evicted records still hold pages for a while and their slots are recycled at
 * the free. Past --max-exited-tasks (the default, 4096) every exit evicts the oldest exited record. Prints
 * the cost per cycle (four events) and the most exited records held after any event.
 */
#define EXIT_FREE_LAG 8192

static int run_exits(const char *label, uint64_t n_cycles) {
        AccountingConfig config = ACCOUNTING_CONFIG_DEFAULT;
        MsEvent e = { .page.stack = { .n_frames = DEPTH, .n_kernel_frames = DEPTH } };
        Accounting *a = NULL;
        size_t most_exited = 0;
        uint64_t ts = 1;
        UsageStats us;
        int r;

        r = accounting_new(&config, NULL, &a);
        if (r < 0) {
                fprintf(stderr, "accounting_new: %d\n", r);
                return 1;
        }
        uint64_t start = now_nsec(CLOCK_MONOTONIC);
        for (uint64_t i = 0; i < n_cycles; i++) {
                /* Pids wrap as the kernel's do, so forks also reuse pids of evicted records. */
                int32_t pid = 2 + (int32_t) (i % 4000000);

                e = (MsEvent) { .type = MS_EVENT_TASK_FORK, .pid = pid, .tid = pid, .timestamp_nsec = ts++,
                                .task.parent_pid = 1 };
                accounting_handle_event(a, &e);
                e = (MsEvent) { .type = MS_EVENT_PAGE_ALLOC, .pid = pid, .tid = pid, .timestamp_nsec = ts++,
                                .page = { .pfn = 0x100000 + i % (2 * EXIT_FREE_LAG),
                                          .stack = { .frames = stacks[i % N_STACKS], .n_frames = DEPTH,
                                                     .n_kernel_frames = DEPTH } } };
                accounting_handle_event(a, &e);
                e = (MsEvent) { .type = MS_EVENT_TASK_EXIT, .pid = pid, .tid = pid, .timestamp_nsec = ts++ };
                accounting_handle_event(a, &e);
                if (i >= EXIT_FREE_LAG) {
                        e = (MsEvent) { .type = MS_EVENT_PAGE_FREE, .pid = 1, .tid = 1, .timestamp_nsec = ts++,
                                        .page.pfn = 0x100000 + (i - EXIT_FREE_LAG) % (2 * EXIT_FREE_LAG) };
                        accounting_handle_event(a, &e);
                }
                usage_get_stats(accounting_usage(a), &us);
                most_exited = MAX(most_exited, us.n_exited);
        }
        uint64_t elapsed = now_nsec(CLOCK_MONOTONIC) - start;

        AccountingStats s;
        accounting_get_stats(a, &s);
        usage_get_stats(accounting_usage(a), &us);
        if (s.untracked_frees != 0 || most_exited > config.max_exited_tasks) {
                fprintf(stderr, "bench-core: %" PRIu64 " untracked frees, %zu exited records held (bound %zu)\n",
                        s.untracked_frees, most_exited, config.max_exited_tasks);
                return 1;
        }
        printf("%s\n", label);
        printf("  cycles            %" PRIu64 " (fork, alloc, exit, free)\n", n_cycles);
        printf("  cycles/s          %.2f M (%.1f ns/cycle)\n", n_cycles / (elapsed / 1e9) / 1e6,
               (double) elapsed / n_cycles);
        printf("  exited held       at most %zu (bound %zu); %" PRIu64 " evicted, %" PRIu64 " recycled, "
               "%zu task slots\n", most_exited, config.max_exited_tasks, us.tasks_evicted, us.tasks_recycled,
               usage_task_slots(accounting_usage(a)));
        accounting_free(a);
        return 0;
}

int main(int argc, char **argv) {
        uint64_t n_events = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
        uint64_t live_target = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;

        bool exits_only = argc > 3 && streq(argv[3], "exits");
        char *end = NULL;

        prefetch_ahead = PREFETCH_DEFAULT;
        if (argc > 3 && !exits_only)
                prefetch_ahead = strtoul(argv[3], &end, 10);
        if (n_events < 2 || live_target == 0 || argc > 4 || (end && *end)) {
                fprintf(stderr, "usage: bench-core [EVENTS] [LIVE_PAGES] [exits|PREFETCH_AHEAD]\n");
                return 2;
        }

        for (unsigned s = 0; s < N_STACKS; s++)
                for (unsigned d = 0; d < DEPTH; d++) {
                        /* Outer frames (high d) are shared by many stacks, inner ones distinct. */
                        unsigned fanout = d >= 15 ? 4 : d >= 10 ? 100 : N_STACKS;
                        stacks[s][d] = UINT64_C(0xffffffff81000000) + (uint64_t) d * 0x100000 + (s % fanout) * 0x40;
                }

        if (exits_only)
                return run_exits("short-lived processes, default config (--max-exited-tasks 4096):", n_events / 4);
        if (run("default config; page reuse like the kernel's per-CPU lists (LIFO), half the frees short-lived:",
                n_events, live_target, true, false) != 0)
                return 1;
        if (run("default config; worst case, uniformly random pfns for every alloc and free:", n_events,
                live_target, false, false) != 0)
                return 1;
        if (run("per-process stack trees on; LIFO page reuse:", n_events, live_target, true, true) != 0)
                return 1;
        if (run_samples("aggregated samples (MS_EVENT_SAMPLE), default config; +-1..8 pages per "
                        "(task, stack):", n_events, false) != 0)
                return 1;
        return run_exits("short-lived processes, default config (--max-exited-tasks 4096):", n_events / 4);
}
