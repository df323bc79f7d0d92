/* SPDX-License-Identifier: MIT */

/*
 * The eBPF source's user-space half without a kernel: the sampling thresholds, and ring records built in
 * memory as the BPF program writes them, checked for what the sink receives (page keys, sample and hold,
 * "[not sampled]", task and module events, batches put in event order, malformed records, the drain budget).
 * ebpf.c is included rather
 * than linked, because its record handling is (rightly) static; the tests construct an EbpfSource the way
 * ebpf_source_new() would before loading the program.
 */

#include "../daemon/sources/ebpf.c"

#include "slab-live.h"
#include "test-sink.h"
#include "tests.h"

#define DEPTH 8

/* The number the next record takes, as the BPF program's event_seq; each test's source starts at 0. */
static uint64_t next_seq;

static EbpfSource *source_fake(bool user_stacks) {
        EbpfSource *s = calloc(1, sizeof(*s));

        ASSERT_NOT_NULL(s);
        live_source_init(&s->live, &ebpf_source_ops, &ebpf_steps, 0);
        source_options_init(&s->options);
        s->options.user_stacks = user_stacks;
        s->depth = DEPTH;
        s->user_at = DEPTH;
        s->struct_page_size = 64;
        s->not_sampled_frame = MS_FRAME_NOT_SAMPLED;
        s->frames = calloc(2 * EBPF_DEPTH_MAX, sizeof(*s->frames));
        s->cmdline = malloc(PROC_CMDLINE_MAX);
        ASSERT_TRUE(s->frames && s->cmdline);
        s->live.sink = test_sink;
        s->budget = UINT64_MAX;
        s->order = seq_order_new(&order_ops, s);
        ASSERT_NOT_NULL(s->order);
        next_seq = 0;
        test_sink_reset();
        return s;
}

/* A page record of the given type, with n_kernel kernel frames 0xffffffff81000000 + i and n_user user
 * frames 0x400000 + i at the user area when sampled. Returns its size. */
static size_t page_record(uint64_t *buf, size_t buf_size, uint16_t type, uint32_t tid, uint64_t address,
                unsigned order, bool sampled, unsigned n_kernel, unsigned n_user, unsigned user_at) {
        MsBpfPage *p = (MsBpfPage *) buf;
        size_t size = sizeof(*p);

        memset(buf, 0, buf_size);
        *p = (MsBpfPage) {
                .head = { .timestamp_nsec = 1000 + tid, .cgroup_id = 77, .pid = 100, .tid = tid, .type = type,
                          .cpu = 1 },
                .pfn = address,
                .order = (uint8_t) order,
                .flags = sampled ? MS_BPF_STACK : 0,
                .n_kernel = (uint8_t) n_kernel,
                .n_user = (uint8_t) n_user,
        };
        if (sampled) {
                for (unsigned i = 0; i < n_kernel; i++)
                        p->frames[i] = UINT64_C(0xffffffff81000000) + i;
                for (unsigned i = 0; i < n_user; i++)
                        p->frames[user_at + i] = UINT64_C(0x400000) + i;
                size += (n_user > 0 ? user_at + n_user : n_kernel) * sizeof(uint64_t);
        }
        return size;
}

/* Hands a record to the source as the ring would, numbered next as the program numbers it (batches carry
 * their entries' numbers). */
static int feed(EbpfSource *s, void *rec, size_t size) {
        if (((MsBpfHead *) rec)->type != MS_BPF_PAGE_BATCH)
                ((MsBpfHead *) rec)->seq = next_seq++;
        return ring_record(s, rec, size);
}

/* A batch of one free (numbered next), as a nested program sends it; returns its size. */
static size_t free_record(uint64_t *buf, size_t buf_size, uint64_t address, unsigned order, uint64_t nsec) {
        MsBpfBatch *b = (MsBpfBatch *) buf;

        memset(buf, 0, buf_size);
        *b = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .n_words = 2, .timestamp_nsec = nsec };
        b->words[0] = next_seq++ << MS_BPF_ENTRY_SEQ_SHIFT | order << MS_BPF_ENTRY_ORDER_SHIFT | MS_BPF_ENTRY_FREE;
        b->words[1] = address;
        return sizeof(*b) + 2 * sizeof(uint64_t);
}

/* Appends to a batch an entry numbered seq: a free, or an allocation by tid of thread group 100. */
static void batch_add(MsBpfBatch *b, uint64_t seq, bool alloc, uint32_t tid, uint64_t address, unsigned order) {
        __u64 *w = b->words + b->n_words;

        w[0] = seq << MS_BPF_ENTRY_SEQ_SHIFT | order << MS_BPF_ENTRY_ORDER_SHIFT |
                (alloc ? MS_BPF_ENTRY_ALLOC : MS_BPF_ENTRY_FREE);
        w[1] = address;
        if (!alloc) {
                b->n_words += MS_BPF_ENTRY_FREE_WORDS;
                return;
        }
        w[2] = UINT64_C(100) << 32 | tid;
        w[3] = 77;
        w[4] = UINT64_C(0xcc0) << 32 | 1;
        b->n_words += MS_BPF_ENTRY_ALLOC_WORDS;
}

static size_t batch_size(const MsBpfBatch *b) {
        return sizeof(*b) + b->n_words * sizeof(uint64_t);
}

static void test_sampling(void) {
        __u32 every, fraction[MS_BPF_LOG2_STEPS];
        __u64 scale;

        /* Full mode: every allocation, without a draw. */
        sample_setup(1, &every, &scale, fraction);
        ASSERT_EQ(every, 1u);

        /* 1 in 64 pages: a gap is floor(-log2(u) * scale) + 1 with scale = 1 / -log2(63/64) = 44.01. */
        sample_setup(64, &every, &scale, fraction);
        ASSERT_EQ(every, 0u);
        ASSERT_EQ(scale, (uint64_t) llround(65536.0 / -log2(63.0 / 64)));
        ASSERT_GT(scale, 44 * 65536u);
        ASSERT_LT(scale, 45 * 65536u);
        /* log2(1 + (i + 0.5) / 1024): from just above 0 to just below 1, rising. */
        ASSERT_EQ(fraction[0], (uint32_t) llround(65536.0 * log2(1.0 + 0.5 / 1024)));
        ASSERT_EQ(fraction[MS_BPF_LOG2_STEPS - 1], (uint32_t) llround(65536.0 * log2(2.0 - 0.5 / 1024)));
        for (unsigned i = 1; i < MS_BPF_LOG2_STEPS; i++)
                ASSERT_GT(fraction[i], fraction[i - 1]);
        /* The largest interval does not overflow a gap: 32 << 16 times the scale fits 64 bits. */
        sample_setup(SOURCE_STACK_SAMPLE_INTERVAL_MAX, &every, &scale, fraction);
        ASSERT_LT(scale, UINT64_MAX / (UINT64_C(32) << MS_BPF_LOG2_SHIFT));
}

/*
 * The BPF program's own geometric draw (sample_gap(), through its test program) at a stack per 64 pages:
 * mean 64, a gap of 1 with p = 1/64, beyond 128 with (63/64)^128, over 100,000 draws (the bounds are 5 to 7
 * standard deviations). Needs root and BPF, else says so and returns.
 */
static void test_gap_distribution(void) {
        struct memstrack_bpf *k = memstrack_bpf__open();
        const unsigned n = 100000;
        uint64_t sum = 0, ones = 0, beyond = 0;
        struct bpf_program *prog;
        int fd;

        ASSERT_NOT_NULL(k);
        bpf_object__for_each_program(prog, k->obj)
                (void) bpf_program__set_autoload(prog, prog == k->progs.sample_gap_draw);
        sample_setup(64, &k->rodata->sample_every, &k->rodata->sample_gap_scale, k->rodata->log2_fraction);
        if (memstrack_bpf__load(k) < 0) {
                printf("test-ebpf: the sampling draw not checked: cannot load BPF here (%m)\n");
                memstrack_bpf__destroy(k);
                return;
        }
        fd = bpf_program__fd(k->progs.sample_gap_draw);
        for (unsigned i = 0; i < n; i++) {
                LIBBPF_OPTS(bpf_test_run_opts, opts);

                ASSERT_OK(bpf_prog_test_run_opts(fd, &opts));
                ASSERT_GE(opts.retval, 1u);
                sum += opts.retval;
                ones += opts.retval == 1;
                beyond += opts.retval > 128;
        }
        printf("test-ebpf: gaps mean %.2f, %" PRIu64 " of 1, %" PRIu64 " beyond 128 in %u draws\n",
               (double) sum / n, ones, beyond, n);
        ASSERT_GT(sum, (uint64_t) (62.5 * n));
        ASSERT_LT(sum, (uint64_t) (65.5 * n));
        ASSERT_GT(ones, 1562u - 200u);
        ASSERT_LT(ones, 1562u + 200u);
        ASSERT_GT(beyond, 13340u - 550u);
        ASSERT_LT(beyond, 13340u + 550u);
        memstrack_bpf__destroy(k);
}

/*
 * Batches of two CPUs and records sent on their own, in ring order but not in event order: delivered by
 * number, the entries' fields intact; a number that never comes holds the rest until it is given up on, and
 * what comes after that is delivered when it comes.
 */
static void test_batch_order(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        uint64_t a_buf[64] = {}, b_buf[64] = {}, c_buf[64] = {};
        MsBpfBatch *a = (MsBpfBatch *) a_buf, *b = (MsBpfBatch *) b_buf, *c = (MsBpfBatch *) c_buf;
        MsBpfHead fork_rec = { .seq = 4, .pid = 300, .tid = 301, .type = MS_BPF_TASK_FORK, .aux = 100 };
        SeqOrderStats stats;

        /* CPU 0 allocates page 1 (0), CPU 1 frees page 5 (1), CPU 0 frees page 1 (2), CPU 1 reuses it (3),
         * a fork (4), CPU 0 allocates an order-3 block (5). */
        *a = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = 0, .timestamp_nsec = 100 };
        batch_add(a, 0, true, 101, 64 * 1, 0);
        batch_add(a, 2, false, 0, 64 * 1, 0);
        batch_add(a, 5, true, 101, 64 * 16, 3);
        *b = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = 1, .timestamp_nsec = 200 };
        batch_add(b, 1, false, 0, 64 * 5, 0);
        batch_add(b, 3, true, 102, 64 * 1, 0);

        ASSERT_OK(ring_record(s, a, batch_size(a)));
        ASSERT_EQ(n_seen, 1u);                          /* 0; 2 and 5 wait for 1 */
        ASSERT_OK(ring_record(s, &fork_rec, sizeof(fork_rec)));
        ASSERT_EQ(n_seen, 1u);
        ASSERT_OK(ring_record(s, b, batch_size(b)));
        ASSERT_EQ(n_seen, 6u);
        ASSERT_EQ(seq_order_next(s->order), 6u);

        ASSERT_EQ(seen[0].ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_EQ(seen[0].ev.pid, 100);
        ASSERT_EQ(seen[0].ev.tid, 101);
        ASSERT_EQ(seen[0].ev.cgroup_id, 77u);
        ASSERT_EQ(seen[0].ev.page.gfp_flags, 0xcc0u);
        ASSERT_EQ(seen[0].ev.page.migrate_type, 1);
        ASSERT_EQ(seen[0].ev.page.pfn, 1u);
        ASSERT_EQ(seen[0].frames[0], MS_FRAME_NOT_SAMPLED);
        ASSERT_EQ(seen[0].ev.timestamp_nsec, 100u);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[1].ev.page.pfn, 5u);
        ASSERT_EQ(seen[1].ev.timestamp_nsec, 200u);
        ASSERT_EQ(seen[2].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[2].ev.page.pfn, 1u);
        ASSERT_EQ(seen[2].ev.timestamp_nsec, 200u);     /* never back in time */
        ASSERT_EQ(seen[3].ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_EQ(seen[3].ev.tid, 102);
        ASSERT_EQ(seen[3].ev.cpu, 1u);
        ASSERT_EQ(seen[4].ev.type, MS_EVENT_TASK_FORK);
        ASSERT_EQ(seen[5].ev.page.order, 3u);
        ASSERT_EQ(seen[5].ev.page.pfn, 16u);
        ASSERT_EQ(s->unsampled_pages, 1u + 1u + 8u);

        /* 6 is lost: 7 and 8 wait, then are delivered once 6 is given up on; 6 arrives late after all. */
        *c = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = 1, .timestamp_nsec = 300 };
        batch_add(c, 7, false, 0, 64 * 16, 3);
        batch_add(c, 8, true, 101, 64 * 40, 0);
        ASSERT_OK(ring_record(s, c, batch_size(c)));
        ASSERT_EQ(n_seen, 6u);
        seq_order_get_stats(s->order, &stats);
        ASSERT_EQ(stats.waiting_entries, 2u);
        ASSERT_EQ(stats.waiting_bytes, batch_size(c));
        ASSERT_EQ(seq_order_skip(s->order, 7), 1u);
        ASSERT_EQ(n_seen, 8u);
        ASSERT_EQ(seen[6].ev.page.pfn, 16u);
        ASSERT_EQ(seen[7].ev.page.pfn, 40u);
        *a = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = 0, .timestamp_nsec = 250 };
        batch_add(a, 6, true, 101, 64 * 50, 0);
        ASSERT_OK(ring_record(s, a, batch_size(a)));
        ASSERT_EQ(n_seen, 9u);
        ASSERT_EQ(seen[8].ev.page.pfn, 50u);
        seq_order_get_stats(s->order, &stats);
        ASSERT_EQ(stats.skipped, 1u);
        ASSERT_EQ(stats.late, 1u);
        ASSERT_EQ(stats.waiting_entries, 0u);
        ASSERT_EQ(stats.waiting_bytes, 0u);

        /* A batch whose entry runs past its words, or has no kind, is cut there; one claiming more words
         * than the record holds is bad. */
        *a = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .timestamp_nsec = 400 };
        batch_add(a, 9, false, 0, 64 * 60, 0);
        batch_add(a, 10, true, 101, 64 * 61, 0);
        a->n_words -= 1;
        ASSERT_OK(ring_record(s, a, batch_size(a)));
        ASSERT_EQ(n_seen, 10u);
        a->words[0] &= ~(uint64_t) MS_BPF_ENTRY_KIND_MASK;
        ASSERT_OK(ring_record(s, a, batch_size(a)));
        seq_order_get_stats(s->order, &stats);
        ASSERT_EQ(stats.malformed, 2u);
        a->n_words = 100;
        ASSERT_OK(ring_record(s, a, sizeof(a_buf)));
        ASSERT_EQ(s->bad_records, 1u);
        ASSERT_EQ(n_seen, 10u);
}

/*
 * Four CPUs' batches of random sizes (each CPU's events in its own numbers' order, interleaved at random
 * among the CPUs), sent in a random order: every event delivered once, in number order, nothing left
 * waiting.
 */
typedef struct PfnLog {
        uint64_t pfns[3000];
        size_t n;
} PfnLog;

static void pfn_log_event(void *userdata, const MsEvent *ev) {
        PfnLog *log = userdata;

        ASSERT_LT(log->n, ELEMENTSOF(log->pfns));
        log->pfns[log->n++] = ev->page.pfn;
}

static void test_batch_shuffle(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        enum { N = 3000, CPUS = 4, RUNS_MAX = 2000 };
        static PfnLog log;
        static uint64_t runs[RUNS_MAX][2 + 2 * 64];
        size_t n_runs = 0, order[RUNS_MAX];
        MsBpfBatch *open_run[CPUS] = {};
        SeqOrderStats stats;

        s->live.sink = (MsEventSink) { .event = pfn_log_event, .userdata = &log };
        srand(11);
        for (uint64_t seq = 0; seq < N; seq++) {
                unsigned cpu = (unsigned) rand() % CPUS;
                MsBpfBatch *b = open_run[cpu];

                if (!b) {
                        ASSERT_LT(n_runs, (size_t) RUNS_MAX);
                        b = open_run[cpu] = (MsBpfBatch *) runs[n_runs++];
                        *b = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = (uint16_t) cpu };
                }
                /* The page is the number: frees only, so the sink sees pfns in delivery order. */
                batch_add(b, seq, false, 0, 64 * seq, 0);
                if (b->n_words >= 2 * 64 || rand() % 8 == 0)
                        open_run[cpu] = NULL;
        }
        for (size_t i = 0; i < n_runs; i++)
                order[i] = i;
        for (size_t i = n_runs - 1; i > 0; i--) {
                size_t j = (size_t) rand() % (i + 1), t = order[i];

                order[i] = order[j];
                order[j] = t;
        }
        for (size_t i = 0; i < n_runs; i++) {
                const MsBpfBatch *b = (const MsBpfBatch *) runs[order[i]];

                ASSERT_OK(ring_record(s, (void *) b, batch_size(b)));
        }
        ASSERT_EQ(log.n, (size_t) N);
        for (size_t i = 0; i < N; i++)
                ASSERT_EQ(log.pfns[i], (uint64_t) i);
        seq_order_get_stats(s->order, &stats);
        ASSERT_EQ(stats.waiting_entries, 0u);
        ASSERT_EQ(stats.waiting_bytes, 0u);
        ASSERT_EQ(stats.late, 0u);
        ASSERT_EQ(seq_order_next(s->order), (uint64_t) N);
}

/* Clients cannot make the source interrupt the CPUs at their pace: a burst of flushes asks, then they
 * wait for the rate to allow one again. */
static void test_flush_rate(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        unsigned allowed = 0;
        uint64_t start = now_usec(CLOCK_MONOTONIC), took;

        for (unsigned i = 0; i < 10 * EBPF_FLUSH_BURST; i++)
                allowed += flush_allowed(s);
        took = now_usec(CLOCK_MONOTONIC) - start;
        /* The burst, and what the rate gave back while the loop ran (nothing unless the machine stalled). */
        ASSERT_GE(allowed, EBPF_FLUSH_BURST);
        ASSERT_LE(allowed, EBPF_FLUSH_BURST + 1 + took * EBPF_FLUSH_RATE / USEC_PER_SEC);
        ASSERT_OK(usleep(3 * USEC_PER_SEC / EBPF_FLUSH_RATE));
        ASSERT_TRUE(flush_allowed(s));
}

static void test_sample_and_hold(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        uint64_t buf[64 + 2 * MS_BPF_FRAMES_MAX];
        size_t size;

        /* Before the thread's first sample: the one "[not sampled]" frame. */
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 10, 64 * 5000, 0, false, 0, 0, 0);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(n_seen, 1u);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_EQ(seen[0].ev.page.pfn, 5000u);
        ASSERT_EQ(seen[0].ev.cgroup_id, 77u);
        ASSERT_EQ(seen[0].ev.tid, 10);
        ASSERT_EQ(seen[0].ev.page.stack.n_frames, 1u);
        ASSERT_EQ(seen[0].ev.page.stack.n_kernel_frames, 1u);
        ASSERT_EQ(seen[0].frames[0], MS_FRAME_NOT_SAMPLED);
        ASSERT_EQ(s->unsampled_pages, 1u);

        /* A sampled allocation: its own stack, held for the thread. */
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 10, 64 * 6000, 2, true, 3, 0, 0);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[1].ev.page.order, 2u);
        ASSERT_EQ(seen[1].ev.page.stack.n_frames, 3u);
        ASSERT_EQ(seen[1].frames[2], UINT64_C(0xffffffff81000002));

        /* Unsampled allocations of that thread carry it; another thread's do not. */
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 10, 64 * 7000, 1, false, 0, 0, 0);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[2].ev.page.stack.n_frames, 3u);
        ASSERT_EQ(seen[2].frames[0], UINT64_C(0xffffffff81000000));
        ASSERT_EQ(s->held_pages, 2u);
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 11, 64 * 7100, 0, false, 0, 0, 0);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[3].frames[0], MS_FRAME_NOT_SAMPLED);

        /* A free: the key of the same struct page, no stack. */
        size = free_record(buf, sizeof(buf), 64 * 6000, 2, 1012);
        ASSERT_EQ(size, 32u);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[4].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[4].ev.page.pfn, 6000u);
        ASSERT_EQ(seen[4].ev.page.order, 2u);

        /* The thread exits: its stack is forgotten; a new thread of that id starts unsampled. */
        MsBpfHead exit_rec = { .pid = 100, .tid = 10, .type = MS_BPF_TASK_EXIT };
        ASSERT_EQ(feed(s, &exit_rec, sizeof(exit_rec)), 0);
        ASSERT_EQ(seen[5].ev.type, MS_EVENT_TASK_EXIT);
        ASSERT_EQ(s->n_held, 0u);
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 10, 64 * 8000, 0, false, 0, 0, 0);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[6].frames[0], MS_FRAME_NOT_SAMPLED);

        /* A sampled allocation whose stack failed is held like an unsampled one. */
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 11, 64 * 8100, 0, false, 0, 0, 0);
        ((MsBpfPage *) buf)->flags = MS_BPF_STACK_FAILED;
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[7].frames[0], MS_FRAME_NOT_SAMPLED);
        ASSERT_EQ(s->bad_records, 0u);
}

static void test_user_frames(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(true);
        uint64_t buf[64 + 2 * MS_BPF_FRAMES_MAX];
        size_t size;

        /* Kernel frames first, then the user frames from their fixed area after the kernel's. */
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 20, 64, 0, true, 2, 3, DEPTH);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[0].ev.page.stack.n_frames, 5u);
        ASSERT_EQ(seen[0].ev.page.stack.n_kernel_frames, 2u);
        ASSERT_EQ(seen[0].frames[1], UINT64_C(0xffffffff81000001));
        ASSERT_EQ(seen[0].frames[2], UINT64_C(0x400000));
        ASSERT_EQ(seen[0].frames[4], UINT64_C(0x400002));

        /* A record shorter than the frames it claims is skipped and counted. */
        ASSERT_EQ(feed(s, buf, size - 8), 0);
        ASSERT_EQ(n_seen, 1u);
        ASSERT_EQ(s->bad_records, 1u);
}

static void test_other_records(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        MsBpfHead fork_rec = { .pid = 300, .tid = 301, .type = MS_BPF_TASK_FORK, .aux = 200 };
        MsBpfTask comm_rec = { .head = { .pid = 300, .tid = 300, .type = MS_BPF_TASK_COMM } };
        MsBpfModule mod_rec = { .head = { .pid = 1, .tid = 1, .type = MS_BPF_MODULE_LOAD } };
        MsBpfHead bogus = { .type = 99 };
        uint64_t buf[64 + 2 * MS_BPF_FRAMES_MAX];

        ASSERT_EQ(feed(s, &fork_rec, sizeof(fork_rec)), 0);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_TASK_FORK);
        ASSERT_EQ(seen[0].ev.pid, 300);
        ASSERT_EQ(seen[0].ev.tid, 301);
        ASSERT_EQ(seen[0].ev.task.parent_pid, 200);

        /* A comm filling all 16 bytes, no NUL: cut, never read past. */
        memcpy(comm_rec.comm, "0123456789abcdef", MS_BPF_COMM_MAX);
        ASSERT_EQ(feed(s, &comm_rec, sizeof(comm_rec)), 0);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_TASK_COMM);
        ASSERT_STREQ(seen[1].name, "0123456789abcdef");
        ASSERT_NULL(seen[1].ev.task.cmdline);

        memcpy(mod_rec.name, "ext4", 5);
        ASSERT_EQ(feed(s, &mod_rec, sizeof(mod_rec)), 0);
        ASSERT_EQ(seen[2].ev.type, MS_EVENT_MODULE_LOAD);
        ASSERT_STREQ(seen[2].name, "ext4");

        /* Unknown types and records shorter than their type's body are skipped and counted. */
        ASSERT_EQ(ring_record(s, &bogus, sizeof(bogus)), 0);
        ASSERT_EQ(ring_record(s, &comm_rec, sizeof(MsBpfHead)), 0);
        ASSERT_EQ(ring_record(s, buf, 4), 0);
        free_record(buf, sizeof(buf), 0x1000, 0, 0);
        next_seq--;                                                     /* never delivered */
        ASSERT_EQ(ring_record(s, buf, sizeof(MsBpfBatch) + 8), 0);      /* a batch cut short */
        ASSERT_EQ(n_seen, 3u);
        ASSERT_EQ(s->bad_records, 4u);

        /* The budget: the record that spends it still counts, then the drain stops. */
        s->budget = 2;
        ASSERT_EQ(feed(s, &fork_rec, sizeof(fork_rec)), 0);
        ASSERT_EQ(feed(s, &fork_rec, sizeof(fork_rec)), EBPF_BUDGET_SPENT);
        ASSERT_EQ(n_seen, 5u);
}

/* A thread that is not the leader execs and takes the leader's id: its old id (the record's aux) exits then,
 * held stack and all; a leader's exec, or one whose old id is unknown (0, in a PID namespace), ends no one. */
static void test_exec_by_thread(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        MsBpfTask exec_rec = { .head = { .pid = 400, .tid = 400, .type = MS_BPF_TASK_EXEC, .aux = 401 } };
        uint64_t buf[64 + 2 * MS_BPF_FRAMES_MAX];
        size_t size;

        memcpy(exec_rec.comm, "sh", 3);
        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 401, 0x1000, 0, true, 3, 0, 0);
        ((MsBpfPage *) buf)->head.pid = 400;
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_NOT_NULL(held_find(s, 401));

        ASSERT_EQ(feed(s, &exec_rec, sizeof(exec_rec)), 0);
        ASSERT_EQ(n_seen, 3u);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_TASK_EXIT);
        ASSERT_EQ(seen[1].ev.pid, 400);
        ASSERT_EQ(seen[1].ev.tid, 401);
        ASSERT_EQ(seen[2].ev.type, MS_EVENT_TASK_COMM);
        ASSERT_EQ(seen[2].ev.tid, 400);
        ASSERT_STREQ(seen[2].name, "sh");
        ASSERT_NULL(held_find(s, 401));

        exec_rec.head.aux = 400;
        ASSERT_EQ(feed(s, &exec_rec, sizeof(exec_rec)), 0);
        exec_rec.head.aux = 0;
        ASSERT_EQ(feed(s, &exec_rec, sizeof(exec_rec)), 0);
        ASSERT_EQ(n_seen, 5u);
        ASSERT_EQ(seen[3].ev.type, MS_EVENT_TASK_COMM);
        ASSERT_EQ(seen[4].ev.type, MS_EVENT_TASK_COMM);
}

/* Records without a time (slab records but every 64th per CPU) and batch entries (their batch's time) get the
 * latest time before them; a record stamped earlier than one before it does not take the stream's time back. */
static void test_record_time(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        MsBpfHead fork_rec = { .timestamp_nsec = 5000, .pid = 300, .tid = 301, .type = MS_BPF_TASK_FORK };
        uint64_t buf[64 + 2 * MS_BPF_FRAMES_MAX];
        MsBpfPage *p = (MsBpfPage *) buf;
        size_t size;

        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 1, 0x1000, 0, false, 0, 0, 0);
        p->head.timestamp_nsec = 0;
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[0].ev.timestamp_nsec, 0u);       /* nothing seen yet */

        ASSERT_EQ(feed(s, &fork_rec, sizeof(fork_rec)), 0);
        ASSERT_EQ(seen[1].ev.timestamp_nsec, 5000u);

        size = free_record(buf, sizeof(buf), 64 * 9, 1, 0);
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[2].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[2].ev.timestamp_nsec, 5000u);
        ASSERT_EQ(seen[2].ev.page.pfn, 9u);
        ASSERT_EQ(seen[2].ev.page.order, 1u);

        size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, 1, 0x1000, 0, false, 0, 0, 0);
        p->head.timestamp_nsec = 4000;                  /* stamped, then reserved after the fork */
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[3].ev.timestamp_nsec, 5000u);

        p->head.timestamp_nsec = 7000;
        ASSERT_EQ(feed(s, buf, size), 0);
        ASSERT_EQ(seen[4].ev.timestamp_nsec, 7000u);
        ASSERT_EQ(n_seen, 5u);
}

/* Many threads sampled and exiting in another order: the held table grows and deletes exactly. */
static void test_held_table(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        uint64_t buf[64 + 2 * MS_BPF_FRAMES_MAX];

        for (uint32_t tid = 1; tid <= 5000; tid++) {
                size_t size = page_record(buf, sizeof(buf), MS_BPF_PAGE_ALLOC, tid, 64 * tid, 0, true, 1, 0, 0);

                ((MsBpfPage *) buf)->frames[0] = tid;
                ASSERT_EQ(feed(s, buf, size), 0);
                test_sink_reset();
        }
        ASSERT_EQ(s->n_held, 5000u);
        for (uint32_t tid = 2; tid <= 5000; tid += 2)
                held_forget(s, (int32_t) tid);
        ASSERT_EQ(s->n_held, 2500u);
        for (uint32_t tid = 1; tid <= 5000; tid++) {
                const HeldStack *h = held_find(s, (int32_t) tid);

                if (tid % 2 == 0)
                        ASSERT_NULL(h);
                else {
                        ASSERT_NOT_NULL(h);
                        ASSERT_EQ(h->frames[0], tid);
                }
        }
}

/* Slab records: an unsampled object before any sample ("[not sampled]"), a sampled one held apart from the
 * thread's page stack, an unsampled one charged to it, a free, and a cache name filling its field. */
static void test_objects(void) {
        EbpfSource *s = source_fake(false);
        uint64_t buf[64];
        MsBpfObject *o = (MsBpfObject *) buf;
        MsBpfObjectFree f = { .type = MS_BPF_OBJECT_FREE, .cpu = 1, .timestamp_nsec = 3000, .ptr = 0xffff888000000040,
                              .call_site = 0xffffffff81000900 };
        uint64_t page[64];

        /* A page stack of thread 7 held first: objects must not take it. */
        ASSERT_OK(feed(s, page, page_record(page, sizeof(page), MS_BPF_PAGE_ALLOC, 7, 0x1000, 0, true, 3, 0,
                                                    DEPTH)));
        for (unsigned i = 0; i < 3; i++) {
                bool sampled = i == 1;

                memset(buf, 0, sizeof(buf));
                *o = (MsBpfObject) {
                        .head = { .type = MS_BPF_OBJECT_ALLOC, .cpu = 0, .pid = 100, .tid = 7,
                                  .timestamp_nsec = 2000 + i, .cgroup_id = 5 },
                        .ptr = 0xffff888000000040 + i * 64,
                        .call_site = 0xffffffff81000800,
                        .bytes_requested = 48,
                        .bytes_allocated = 64,
                        .flags = sampled ? MS_BPF_STACK : 0,
                        .n_kernel = sampled ? 2 : 0,
                };
                if (i == 2)
                        memset(o->cache, 'c', MS_BPF_CACHE_NAME_MAX);   /* no NUL: cut, not overrun */
                o->frames[0] = 0xffffffff81000a00;
                o->frames[1] = 0xffffffff81000a01;
                ASSERT_OK(feed(s, buf, sizeof(*o) + (sampled ? 2 * sizeof(uint64_t) : 0)));
        }
        ASSERT_OK(feed(s, &f, sizeof(f)));

        ASSERT_EQ(n_seen, 5u);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_OBJECT_ALLOC);
        ASSERT_EQ(seen[1].ev.object.ptr, 0xffff888000000040u);
        ASSERT_EQ(seen[1].ev.object.call_site, 0xffffffff81000800u);
        ASSERT_EQ(seen[1].ev.object.bytes_requested, 48u);
        ASSERT_EQ(seen[1].ev.object.bytes_allocated, 64u);
        ASSERT_EQ(seen[1].ev.cgroup_id, 5u);
        ASSERT_NULL(seen[1].ev.object.cache);
        ASSERT_EQ(seen[1].ev.object.stack.n_frames, 1u);
        ASSERT_EQ(seen[1].frames[0], MS_FRAME_NOT_SAMPLED);
        ASSERT_EQ(seen[2].ev.object.stack.n_frames, 2u);
        ASSERT_EQ(seen[2].frames[1], 0xffffffff81000a01u);
        ASSERT_EQ(seen[3].ev.object.stack.n_frames, 2u);
        ASSERT_EQ(seen[3].frames[0], 0xffffffff81000a00u);
        ASSERT_EQ(strlen(seen[3].name), (size_t) MS_BPF_CACHE_NAME_MAX);
        ASSERT_EQ(s->held_objects, 1u);
        ASSERT_EQ(s->unsampled_objects, 1u);
        ASSERT_EQ(seen[4].ev.type, MS_EVENT_OBJECT_FREE);
        ASSERT_EQ(seen[4].ev.object.ptr, 0xffff888000000040u);
        ASSERT_EQ(seen[4].ev.object.call_site, 0xffffffff81000900u);
        ASSERT_EQ(seen[4].ev.cpu, 1u);
        /* The thread's exit drops both its stacks. */
        held_forget(s, 7);
        ASSERT_EQ(s->n_held, 0u);
        /* A sampled object whose frames run past the record is malformed. */
        memset(buf, 0, sizeof(buf));
        *o = (MsBpfObject) { .head = { .type = MS_BPF_OBJECT_ALLOC, .tid = 8 }, .ptr = 0x100, .flags = MS_BPF_STACK,
                             .n_kernel = 4 };
        ASSERT_OK(feed(s, buf, sizeof(*o) + sizeof(uint64_t)));
        ASSERT_EQ(s->bad_records, 1u);
        ASSERT_EQ(n_seen, 5u);
        ebpf_source_free(s);
}

/* Adds typedef btf_trace_EVENT: a pointer to void (void *, ARGS...), where args names each argument's
 * type: 'u' unsigned long, 'p' const void *, 'c' struct kmem_cache *, 'P' struct page *, 'z' size_t,
 * 'g' gfp_t, 'i' int. */
static void add_trace_proto(struct btf *btf, const char *event, const char *args) {
        int ulong = btf__find_by_name_kind(btf, "unsigned long", BTF_KIND_INT);
        int uint = btf__find_by_name_kind(btf, "unsigned int", BTF_KIND_INT);
        int sint = btf__find_by_name_kind(btf, "int", BTF_KIND_INT);
        int cache = btf__find_by_name_kind(btf, "kmem_cache", BTF_KIND_STRUCT);
        int page = btf__find_by_name_kind(btf, "page", BTF_KIND_STRUCT);
        int voidp = btf__add_ptr(btf, 0), cvoidp = btf__add_ptr(btf, btf__add_const(btf, 0));
        int cachep = btf__add_ptr(btf, cache), pagep = btf__add_ptr(btf, page), size_t_id = btf__add_typedef(btf, "size_t", ulong);
        int gfp = btf__add_typedef(btf, "gfp_t", uint), proto;
        char name[64];

        ASSERT_TRUE(ulong > 0 && uint > 0 && sint > 0 && cache > 0 && page > 0);
        proto = btf__add_func_proto(btf, 0);
        ASSERT_OK(proto);
        ASSERT_OK(btf__add_func_param(btf, "__data", voidp));
        for (const char *a = args; *a; a++)
                ASSERT_OK(btf__add_func_param(btf, "", *a == 'u' ? ulong : *a == 'p' ? cvoidp : *a == 'c' ? cachep :
                                                       *a == 'P' ? pagep : *a == 'z' ? size_t_id : *a == 'g' ? gfp : sint));
        (void) snprintf(name, sizeof(name), "btf_trace_%s", event);
        ASSERT_OK(btf__add_typedef(btf, name, btf__add_ptr(btf, proto)));
}

/* The slab tracepoints' prototypes over the kernel versions, as the kernel's BTF gives them. */
static void test_slab_layouts(void) {
        struct btf *btf = btf__new_empty();
        uint32_t layout = UINT32_MAX;

        ASSERT_NOT_NULL(btf);
        ASSERT_OK(btf__add_int(btf, "unsigned long", 8, 0));
        ASSERT_OK(btf__add_int(btf, "unsigned int", 4, 0));
        ASSERT_OK(btf__add_int(btf, "int", 4, BTF_INT_SIGNED));
        ASSERT_OK(btf__add_struct(btf, "kmem_cache", 64));
        ASSERT_OK(btf__add_struct(btf, "page", 64));
        /* To 5.19: kmalloc and kmem_cache_alloc (call_site, ptr, bytes_req, bytes_alloc, gfp), *_node + node. */
        add_trace_proto(btf, "old_kmalloc", "upzzg");
        add_trace_proto(btf, "old_kmalloc_node", "upzzgi");
        /* 6.0: the cache before the sizes. */
        add_trace_proto(btf, "v60_kmem_cache_alloc", "upczzg");
        add_trace_proto(btf, "v60_kmem_cache_alloc_node", "upczzgi");
        /* 6.1 on: kmalloc with node, kmem_cache_alloc with the cache and no sizes. */
        add_trace_proto(btf, "kmalloc", "upzzgi");
        add_trace_proto(btf, "kmem_cache_alloc", "upcgi");
        /* Something else: a struct pointer that is no cache, too few arguments. */
        add_trace_proto(btf, "odd", "upPzg");
        add_trace_proto(btf, "short", "upz");

        ASSERT_OK(slab_layout_of(btf, "old_kmalloc", &layout));
        ASSERT_EQ(layout, MS_BPF_SLAB_SIZES);
        ASSERT_OK(slab_layout_of(btf, "old_kmalloc_node", &layout));
        ASSERT_EQ(layout, MS_BPF_SLAB_SIZES);
        ASSERT_OK(slab_layout_of(btf, "v60_kmem_cache_alloc", &layout));
        ASSERT_EQ(layout, MS_BPF_SLAB_CACHE_SIZES);
        ASSERT_OK(slab_layout_of(btf, "v60_kmem_cache_alloc_node", &layout));
        ASSERT_EQ(layout, MS_BPF_SLAB_CACHE_SIZES);
        ASSERT_OK(slab_layout_of(btf, "kmalloc", &layout));
        ASSERT_EQ(layout, MS_BPF_SLAB_SIZES);
        ASSERT_OK(slab_layout_of(btf, "kmem_cache_alloc", &layout));
        ASSERT_EQ(layout, MS_BPF_SLAB_CACHE);
        ASSERT_EQ(slab_layout_of(btf, "odd", &layout), -EBADMSG);
        ASSERT_EQ(slab_layout_of(btf, "short", &layout), -EBADMSG);
        ASSERT_EQ(slab_layout_of(btf, "kmalloc_node", &layout), -ENOENT);
        btf__free(btf);
}

/*
 * Recursion misses count as lost only when no twin recorded them: a miss read a moment before its
 * record is not a loss, a miss never recorded is, once a poll sees no more records than new misses.
 */
static void test_misses_unrecorded(void) {
        uint64_t before = 0;

        /* 33 nested frees: the misses read, their records not yet. */
        ASSERT_EQ(misses_unrecorded(&before, 33, 0), 0U);
        ASSERT_EQ(misses_unrecorded(&before, 33, 33), 0U);
        /* 7 missed and never recorded, while another burst is on its way. */
        ASSERT_EQ(misses_unrecorded(&before, 45, 38), 0U);
        ASSERT_EQ(misses_unrecorded(&before, 45, 38), 7U);
        ASSERT_EQ(misses_unrecorded(&before, 45, 38), 7U);
        /* Records read now, of misses newer than the last read, outnumbering the old misses: no loss. */
        before = 0;
        ASSERT_EQ(misses_unrecorded(&before, 2, 5), 0U);
        ASSERT_EQ(misses_unrecorded(&before, 2, 5), 0U);
        printf("test-ebpf: recursion misses lost only when never recorded\n");
}

static void ignore_event(void *userdata, const MsEvent *ev) {
}

/* The tracepoint a program's link is attached to, into tp (size bytes). */
static void link_tracepoint(struct bpf_link *link, char *tp, uint32_t size) {
        struct bpf_link_info info = {};
        uint32_t len = sizeof(info);

        info.raw_tracepoint.tp_name = (uint64_t) (uintptr_t) tp;
        info.raw_tracepoint.tp_name_len = size;
        ASSERT_OK(bpf_obj_get_info_by_fd(bpf_link__fd(link), &info, &len));
}

/*
 * The twins on the live kernel: the free twin from the start; the allocation twin from page_alloc's first
 * recursion miss (alloc_twin_update(), fed the count poll_losses() reads), or from the start with
 * --nested-allocations=always, and attached once.
 */
static void test_alloc_twin(void) {
        for (int always = 0; always <= 1; always++) {
                _cleanup_(sd_event_unrefp) sd_event *event = NULL;
                EventSource *source = NULL;
                struct bpf_link *link;
                SourceOptions o;
                EbpfSource *s;
                char tp[64];
                int r;

                source_options_init(&o);
                o.nested_allocations_always = always;
                r = ebpf_source_type.new(&o, &source);
                if (r < 0) {
                        printf("test-ebpf: the twins' attachment not checked: the source cannot run here (%s)\n",
                               strerror(-r));
                        return;
                }
                s = ebpf_source_from(source);
                ASSERT_OK(sd_event_new(&event));
                ASSERT_OK(source->ops->start(source, event, &(MsEventSink) { .event = ignore_event }));
                ASSERT_NOT_NULL(s->skel->links.page_free_nested);
                link_tracepoint(s->skel->links.page_free_nested, tp, sizeof(tp));
                ASSERT_STREQ(tp, "mm_page_free");
                link = s->skel->links.page_alloc_nested;
                ASSERT_EQ(link != NULL, always);

                twin_update(s, &s->twinned[EBPF_TWINNED_PAGE_ALLOC], 0);
                ASSERT_TRUE(s->skel->links.page_alloc_nested == link);
                twin_update(s, &s->twinned[EBPF_TWINNED_PAGE_ALLOC], 2);
                ASSERT_NOT_NULL(s->skel->links.page_alloc_nested);
                if (always)
                        ASSERT_TRUE(s->skel->links.page_alloc_nested == link);
                link = s->skel->links.page_alloc_nested;
                link_tracepoint(link, tp, sizeof(tp));
                ASSERT_STREQ(tp, "mm_page_alloc");
                twin_update(s, &s->twinned[EBPF_TWINNED_PAGE_ALLOC], 3);
                ASSERT_TRUE(s->skel->links.page_alloc_nested == link);
                ASSERT_EQ(s->alloc_twin_failed, false);
                /* The free twin is there from the start: a miss changes nothing. */
                link = s->skel->links.page_free_nested;
                twin_update(s, &s->twinned[EBPF_TWINNED_PAGE_FREE], 4);
                ASSERT_TRUE(s->skel->links.page_free_nested == link);
                event_source_free(source);
        }
        printf("test-ebpf: the allocation twin attached at a miss, or at start when told\n");
}

/* The pages the source asked the sink to prefetch, in order. */
static uint64_t prefetched[64];
static size_t n_prefetched;

static void record_prefetch(void *userdata, uint64_t pfn) {
        ASSERT_LT(n_prefetched, ELEMENTSOF(prefetched));
        prefetched[n_prefetched++] = pfn;
}

/*
 * The sink is asked to prefetch the pages of the entries after the one it is given, each once while a
 * batch is delivered in one piece, never past the batch's end or a malformed entry, and when entries of
 * two batches alternate, only pages of those batches.
 */
static void test_prefetch_ahead(void) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = source_fake(false);
        uint64_t a_buf[128] = {}, b_buf[64] = {};
        MsBpfBatch *a = (MsBpfBatch *) a_buf, *b = (MsBpfBatch *) b_buf;
        unsigned n = 12;

        s->live.sink.prefetch_page = record_prefetch;
        n_prefetched = 0;
        *a = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .timestamp_nsec = 100 };
        for (unsigned i = 0; i < n; i++)
                batch_add(a, i, i % 3 != 2, 101, 64 * (10 + i), 0);
        ASSERT_OK(ring_record(s, a, batch_size(a)));
        ASSERT_EQ(n_seen, (size_t) n);
        /* Entries 1 .. n-1, each once, in order: the first is delivered before any is asked for. */
        ASSERT_EQ(n_prefetched, (size_t) n - 1);
        for (unsigned i = 1; i < n; i++)
                ASSERT_EQ(prefetched[i - 1], 10u + i);

        /* A malformed entry (kind 0) after the third: nothing at or past it is asked for. */
        test_sink_reset();
        n_prefetched = 0;
        *a = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .timestamp_nsec = 200 };
        for (unsigned i = 0; i < 3; i++)
                batch_add(a, n + i, false, 0, 64 * (40 + i), 0);
        a->words[a->n_words++] = (n + 3) << MS_BPF_ENTRY_SEQ_SHIFT;
        a->words[a->n_words++] = 64 * 99;
        batch_add(a, n + 4, false, 0, 64 * 44, 0);
        (void) ring_record(s, a, batch_size(a));
        ASSERT_EQ(n_prefetched, 2u);
        ASSERT_EQ(prefetched[0], 41u);
        ASSERT_EQ(prefetched[1], 42u);

        /* Two CPUs' batches whose entries alternate: every page asked for is one of theirs. */
        s->order = seq_order_free(s->order);
        s->order = seq_order_new(&order_ops, s);
        ASSERT_NOT_NULL(s->order);
        test_sink_reset();
        n_prefetched = 0;
        *a = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = 0, .timestamp_nsec = 300 };
        *b = (MsBpfBatch) { .type = MS_BPF_PAGE_BATCH, .cpu = 1, .timestamp_nsec = 300 };
        for (unsigned i = 0; i < 10; i++)
                batch_add(i % 2 ? b : a, i, true, 101, 64 * (i % 2 ? 200 + i : 100 + i), 0);
        ASSERT_OK(ring_record(s, b, batch_size(b)));
        ASSERT_OK(ring_record(s, a, batch_size(a)));
        ASSERT_EQ(n_seen, 10u);
        ASSERT_GT(n_prefetched, 0u);
        for (size_t i = 0; i < n_prefetched; i++)
                ASSERT_TRUE((prefetched[i] >= 100 && prefetched[i] < 110) ||
                            (prefetched[i] >= 200 && prefetched[i] < 210));
        printf("test-ebpf: page prefetch hints ahead of delivery, within the batch\n");
}

/*
 * The slab programs' twins on the live kernel: loaded with --slab only, each attached at its main program's
 * first recursion miss (twin_update()), or from the start with --nested-allocations=always, on its
 * main program's tracepoint, and once.
 */
static void test_slab_twins(void) {
        for (int mode = 0; mode <= 2; mode++) {
                _cleanup_(sd_event_unrefp) sd_event *event = NULL;
                const TwinnedProgram *p;
                EventSource *source = NULL;
                bool always = mode == 2;
                size_t n_loaded = 0;
                SourceOptions o;
                EbpfSource *s;
                char tp[64];
                int r;

                source_options_init(&o);
                o.slab = mode > 0;
                o.nested_allocations_always = always;
                r = ebpf_source_type.new(&o, &source);
                if (r < 0) {
                        printf("test-ebpf: the slab twins not checked: the source cannot run here (%s)\n",
                               strerror(-r));
                        return;
                }
                s = ebpf_source_from(source);
                ASSERT_OK(sd_event_new(&event));
                ASSERT_OK(source->ops->start(source, event, &(MsEventSink) { .event = ignore_event }));
                p = s->twinned + EBPF_TWINNED_SLAB;
                for (size_t i = 0; i < EBPF_TWINNED - EBPF_TWINNED_SLAB; i++) {
                        bool loaded = bpf_program__autoload(p[i].main);

                        /* A twin loads with its main program, and only under --slab. */
                        ASSERT_EQ(bpf_program__autoload(p[i].twin), loaded);
                        if (!o.slab)
                                ASSERT_TRUE(!loaded);
                        if (!loaded) {
                                twin_update(s, &p[i], 5);
                                ASSERT_NULL(*p[i].twin_link);
                                continue;
                        }
                        n_loaded++;
                        struct bpf_link *link = *p[i].twin_link;
                        ASSERT_EQ(link != NULL, always);
                        twin_update(s, &p[i], 0);
                        ASSERT_TRUE(*p[i].twin_link == link);
                        twin_update(s, &p[i], 5);
                        ASSERT_NOT_NULL(*p[i].twin_link);
                        if (always)
                                ASSERT_TRUE(*p[i].twin_link == link);
                        link = *p[i].twin_link;
                        link_tracepoint(link, tp, sizeof(tp));
                        ASSERT_STREQ(tp, p[i].event);
                        twin_update(s, &p[i], 6);
                        ASSERT_TRUE(*p[i].twin_link == link);
                        ASSERT_TRUE(p[i].slab);
                }
                /* kmalloc and kmem_cache_alloc (or their *_node twins), kfree and kmem_cache_free. */
                if (o.slab)
                        ASSERT_GE(n_loaded, 4);
                ASSERT_EQ(s->slab_twin_failed, false);
                ASSERT_EQ(s->twinned[EBPF_TWINNED_PAGE_ALLOC].slab, false);
                ASSERT_EQ(s->twinned[EBPF_TWINNED_PAGE_FREE].slab, false);
                event_source_free(source);
        }
        printf("test-ebpf: the slab twins loaded with --slab, attached at a miss, or at start when told\n");
}

int main(int argc, char *argv[]) {
        int r = slab_live_mode(argc, argv, &ebpf_source_type);
        if (r >= 0)
                return r;
        test_sampling();
        test_batch_order();
        test_prefetch_ahead();
        test_batch_shuffle();
        test_flush_rate();
        test_sample_and_hold();
        test_user_frames();
        test_other_records();
        test_exec_by_thread();
        test_record_time();
        test_held_table();
        test_objects();
        test_slab_layouts();
        test_gap_distribution();
        test_misses_unrecorded();
        test_alloc_twin();
        test_slab_twins();
        printf("test-ebpf: all passed\n");
        return 0;
}
