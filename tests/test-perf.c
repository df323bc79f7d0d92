/* SPDX-License-Identifier: MIT */

/*
 * The perf source's record handling without a kernel: rings are built in memory, records written into
 * them byte by byte as the kernel lays them out, and the drain is checked for what the sink receives.
 * perf.c is included rather than linked, because the ring parser and the merge are (rightly) static;
 * the tests construct a PerfSource the way perf_source_new() would after opening its events.
 */

#include "../daemon/sources/perf.c"

#include "slab-live.h"
#include "test-sink.h"
#include "tests.h"

#define ID_ALLOC 653            /* tracepoint ids of tests/data/tracefs-6.18 */
#define ID_FREE 655
#define EV_ALLOC 1001           /* perf event ids (PERF_EVENT_IOC_ID) the fake rings use */
#define EV_FREE 1002
#define RING_BYTES 4096u

/* A writer for one fake ring: appends records at head, wrapping like the kernel does. */
typedef struct Writer {
        PerfRing *ring;
        uint8_t rec[512];
        size_t len;
} Writer;

static void w_begin(Writer *w, uint32_t type, uint16_t misc) {
        struct perf_event_header h = { .type = type, .misc = misc };

        w->len = 0;
        memcpy(w->rec, &h, sizeof(h));
        w->len = sizeof(h);
}

static void w_put(Writer *w, const void *p, size_t n) {
        ASSERT_LE(w->len + n, sizeof(w->rec));
        memcpy(w->rec + w->len, p, n);
        w->len += n;
}

static void w_u32(Writer *w, uint32_t v) {
        w_put(w, &v, sizeof(v));
}

static void w_u64(Writer *w, uint64_t v) {
        w_put(w, &v, sizeof(v));
}

/* Pads to 8 bytes, sets the size and copies the record into the ring at data_head. */
static void w_end(Writer *w) {
        PerfRing *r = w->ring;
        uint64_t head = r->meta->data_head;
        uint16_t size;

        while (w->len % 8)
                w->rec[w->len++] = 0;
        size = (uint16_t) w->len;
        memcpy(w->rec + 6, &size, sizeof(size));
        ASSERT_LE(head + size - r->meta->data_tail, r->data_size);
        for (size_t i = 0; i < size; i++)
                ((uint8_t *) r->data)[(head + i) & (r->data_size - 1)] = w->rec[i];
        r->meta->data_head = head + size;
}

/* The sample_id trailer every side-band record ends with. */
static void w_sample_id(Writer *w, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu, uint64_t id) {
        w_u32(w, pid);
        w_u32(w, tid);
        w_u64(w, time);
        w_u32(w, cpu);
        w_u32(w, 0);
        w_u64(w, id);
}

/* An mm_page_alloc sample with the given call chain (perf's raw ips, markers included). */
static void w_alloc(Writer *w, uint32_t pid, uint64_t time, uint64_t pfn, unsigned order, const uint64_t *ips,
                size_t n_ips) {
        uint8_t raw[36] = {};
        uint16_t type = ID_ALLOC;
        uint32_t o = order;
        int32_t mt = 1;

        w_begin(w, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
        w_u64(w, EV_ALLOC);
        w_u32(w, pid);
        w_u32(w, pid);
        w_u64(w, time);
        w_u32(w, w->ring->cpu);
        w_u32(w, 0);
        w_u64(w, n_ips);
        for (size_t i = 0; i < n_ips; i++)
                w_u64(w, ips[i]);
        memcpy(raw, &type, sizeof(type));
        memcpy(raw + 8, &pfn, sizeof(pfn));
        memcpy(raw + 16, &o, sizeof(o));
        memcpy(raw + 32, &mt, sizeof(mt));
        w_u32(w, 36 + 4);       /* the kernel pads raw so the record stays 8-byte aligned */
        w_put(w, raw, sizeof(raw));
        w_u32(w, 0);
        w_end(w);
}

/* An mm_page_alloc sample without a call chain, with PERF_SAMPLE_CGROUP after the raw data (n_cgroup
 * bytes of it: 8, or 0 for a truncated record). */
static void w_alloc_cgroup(Writer *w, uint32_t pid, uint64_t time, uint64_t pfn, uint64_t cgroup_id, size_t n_cgroup) {
        uint8_t raw[36] = {};
        uint16_t type = ID_ALLOC;
        int32_t mt = 1;

        w_begin(w, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
        w_u64(w, EV_ALLOC);
        w_u32(w, pid);
        w_u32(w, pid);
        w_u64(w, time);
        w_u32(w, w->ring->cpu);
        w_u32(w, 0);
        memcpy(raw, &type, sizeof(type));
        memcpy(raw + 8, &pfn, sizeof(pfn));
        memcpy(raw + 32, &mt, sizeof(mt));
        w_u32(w, sizeof(raw));  /* 4 + 36: already 8-byte aligned */
        w_put(w, raw, sizeof(raw));
        w_put(w, &cgroup_id, n_cgroup);
        w_end(w);
}

static void w_free(Writer *w, uint32_t pid, uint64_t time, uint64_t pfn, unsigned order) {
        uint8_t raw[20] = {};
        uint16_t type = ID_FREE;
        uint32_t o = order;

        w_begin(w, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
        w_u64(w, EV_FREE);
        w_u32(w, pid);
        w_u32(w, pid);
        w_u64(w, time);
        w_u32(w, w->ring->cpu);
        w_u32(w, 0);
        memcpy(raw, &type, sizeof(type));
        memcpy(raw + 8, &pfn, sizeof(pfn));
        memcpy(raw + 16, &o, sizeof(o));
        w_u32(w, 20);
        w_put(w, raw, sizeof(raw));
        w_end(w);
}

typedef struct Fixture {
        PerfSource *s;
        Writer w[2];
} Fixture;

static void fixture_init(Fixture *f) {
        PerfSource *s = calloc(1, sizeof(*s));

        ASSERT_NOT_NULL(s);
        perf_config_init(&s->config);
        live_source_init(&s->live, &perf_source_ops, &perf_steps, 4242);
        ASSERT_OK(tracepoint_load("data/tracefs-6.18", TRACEPOINT_BYTE_ORDER_HOST, &s->tracepoints, NULL));
        s->frames_max = 8;
        s->frames = calloc(s->frames_max, sizeof(uint64_t));
        s->bounce = malloc(RECORD_SIZE_MAX);
        s->cmdline = malloc(PERF_CMDLINE_MAX);
        s->n_cpus = s->n_rings = 2;
        s->lost_per_cpu = calloc(2, sizeof(uint64_t));
        s->rings = calloc(2, sizeof(PerfRing));
        ASSERT_OK(merge_init(&s->merge, 2, &ring_merge_ops));
        ASSERT_TRUE(s->frames && s->bounce && s->cmdline && s->lost_per_cpu && s->rings);
        s->live.sink = test_sink;

        for (unsigned c = 0; c < 2; c++) {
                PerfRing *r = &s->rings[c];

                r->source = s;
                r->cpu = c;
                for (size_t k = 0; k < N_ATTACHED; k++)
                        r->fds[k] = -EBADF;
                /* Descriptors that perf_source_free() may close harmlessly. */
                r->fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                r->fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                ASSERT_OK(r->fds[0]);
                ASSERT_OK(r->fds[1]);
                r->ids[0] = EV_ALLOC;
                r->ids[1] = EV_FREE;
                r->data_size = RING_BYTES;
                r->map_size = 4096 + RING_BYTES;
                r->meta = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                ASSERT_TRUE(r->meta != MAP_FAILED);
                r->data = (const uint8_t *) r->meta + 4096;
                f->w[c] = (Writer) { .ring = r };
        }
        f->s = s;
        test_sink_reset();
}

static void fixture_done(Fixture *f) {
        f->s = perf_source_free(f->s);
}

/* Sets both rings' positions so the next record starts at offset, to exercise wrapping. */
static void fixture_seek(Fixture *f, unsigned cpu, uint64_t offset) {
        PerfRing *r = &f->s->rings[cpu];

        r->meta->data_head = r->meta->data_tail = offset;
}

/* A page freed on CPU 0 and reused on CPU 1: the reuse must not overtake the free. */
static void test_merge_order(void) {
        static const uint64_t chain[] = { (uint64_t) PERF_CONTEXT_KERNEL, 0xffffffff81000010, 0xffffffff81000020 };
        Fixture f;

        fixture_init(&f);
        w_alloc(&f.w[0], 100, 10, 0x1000, 0, chain, ELEMENTSOF(chain));
        w_free(&f.w[0], 100, 30, 0x1000, 0);
        w_alloc(&f.w[1], 200, 20, 0x2000, 0, chain, ELEMENTSOF(chain));
        w_alloc(&f.w[1], 200, 40, 0x1000, 0, chain, ELEMENTSOF(chain));

        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 4);
        ASSERT_EQ(seen[0].ev.timestamp_nsec, 10);
        ASSERT_EQ(seen[1].ev.timestamp_nsec, 20);
        ASSERT_EQ(seen[2].ev.timestamp_nsec, 30);
        ASSERT_EQ(seen[2].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[3].ev.timestamp_nsec, 40);
        ASSERT_EQ(seen[3].ev.pid, 200);
        ASSERT_EQ(seen[3].ev.cpu, 1);
        ASSERT_EQ(seen[3].ev.page.pfn, 0x1000);

        /* Consumed: the tails moved to the heads, and a second flush delivers nothing. */
        ASSERT_EQ(f.s->rings[0].meta->data_tail, f.s->rings[0].meta->data_head);
        ASSERT_EQ(f.s->rings[1].meta->data_tail, f.s->rings[1].meta->data_head);
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 4);
        fixture_done(&f);
}

/* Records stamped after the round's cut stay in the ring for a later round. */
static void test_cut(void) {
        Fixture f;

        fixture_init(&f);
        w_free(&f.w[0], 100, 5, 0x10, 0);
        w_free(&f.w[0], 100, UINT64_MAX - 1, 0x11, 0);
        w_free(&f.w[1], 100, 6, 0x12, 0);
        ASSERT_TRUE(!source_drain(f.s, UINT64_MAX));
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(seen[0].ev.page.pfn, 0x10);
        ASSERT_EQ(seen[1].ev.page.pfn, 0x12);
        ASSERT_LT(f.s->rings[0].meta->data_tail, f.s->rings[0].meta->data_head);
        fixture_done(&f);
}

/* The budget stops a round early and says more is waiting. */
static void test_budget(void) {
        Fixture f;

        fixture_init(&f);
        for (unsigned i = 0; i < 5; i++)
                w_free(&f.w[i % 2], 100, 10 + i, 0x100 + i, 0);
        ASSERT_TRUE(source_drain(f.s, 2));
        ASSERT_EQ(n_seen, 2);
        ASSERT_TRUE(source_drain(f.s, 2));
        ASSERT_EQ(n_seen, 4);
        ASSERT_TRUE(!source_drain(f.s, 2));
        ASSERT_EQ(n_seen, 5);
        for (unsigned i = 0; i < 5; i++)
                ASSERT_EQ(seen[i].ev.page.pfn, 0x100 + i);
        fixture_done(&f);
}

/* Kernel frames, then user frames, markers stripped; a record wrapping the ring end goes via bounce. */
static void test_callchain_and_wrap(void) {
        static const uint64_t chain[] = {
                (uint64_t) PERF_CONTEXT_KERNEL, 0xffffffff81000001, 0xffffffff81000002,
                (uint64_t) PERF_CONTEXT_USER, 0x401000, 0x402000,
        };
        Fixture f;

        fixture_init(&f);
        fixture_seek(&f, 0, RING_BYTES - 40);   /* the sample is longer than 40 bytes: it wraps */
        w_alloc(&f.w[0], 100, 10, 0x77, 2, chain, ELEMENTSOF(chain));
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 1);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_EQ(seen[0].ev.page.pfn, 0x77);
        ASSERT_EQ(seen[0].ev.page.order, 2);
        ASSERT_EQ(seen[0].ev.page.migrate_type, 1);
        ASSERT_EQ(seen[0].ev.page.stack.n_frames, 4);
        ASSERT_EQ(seen[0].ev.page.stack.n_kernel_frames, 2);
        ASSERT_TRUE(seen[0].frames[0] == 0xffffffff81000001);
        ASSERT_TRUE(seen[0].frames[1] == 0xffffffff81000002);
        ASSERT_EQ(seen[0].frames[2], 0x401000);
        ASSERT_EQ(seen[0].frames[3], 0x402000);
        fixture_done(&f);
}

/* With PERF_SAMPLE_CGROUP, allocations carry the cgroup id that follows the raw data; frees have none.
 * A sample too short for it is counted as malformed. */
static void test_cgroup(void) {
        Fixture f;

        fixture_init(&f);
        f.s->config.depth = 0;
        f.s->cgroups = true;
        w_alloc_cgroup(&f.w[0], 100, 10, 0x50, 0x1234567890, 8);
        w_free(&f.w[0], 101, 11, 0x50, 0);
        w_alloc_cgroup(&f.w[0], 100, 12, 0x60, 0x77, 0);
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_EQ(seen[0].ev.page.pfn, 0x50);
        ASSERT_EQ(seen[0].ev.cgroup_id, 0x1234567890);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[1].ev.cgroup_id, 0);
        ASSERT_EQ(f.s->bad_records, 1);
        fixture_done(&f);
}

/* The daemon's own allocations are dropped, its frees kept. */
static void test_self(void) {
        static const uint64_t chain[] = { (uint64_t) PERF_CONTEXT_KERNEL, 0xffffffff81000001 };
        Fixture f;

        fixture_init(&f);
        w_alloc(&f.w[0], 4242, 10, 0x1, 0, chain, ELEMENTSOF(chain));
        w_free(&f.w[0], 4242, 11, 0x2, 0);
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 1);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(f.s->self_samples, 1);
        fixture_done(&f);
}

/* Side-band records: COMM, FORK, EXIT, LOST, in time order with the samples. */
static void test_side_band(void) {
        EventSourceStats st;
        Writer *w;
        Fixture f;

        fixture_init(&f);
        w = &f.w[1];
        w_begin(w, PERF_RECORD_FORK, 0);
        w_u32(w, 300);
        w_u32(w, 299);
        w_u32(w, 300);
        w_u32(w, 299);
        w_u64(w, 5);
        w_sample_id(w, 299, 299, 5, 1, EV_ALLOC);
        w_end(w);

        w_begin(w, PERF_RECORD_COMM, 0);
        w_u32(w, 300);
        w_u32(w, 301);
        w_put(w, "worker\0\0", 8);
        w_sample_id(w, 300, 301, 6, 1, EV_ALLOC);
        w_end(w);

        w_begin(w, PERF_RECORD_LOST, 0);
        w_u64(w, EV_ALLOC);
        w_u64(w, 17);
        w_sample_id(w, 0, 0, 7, 1, EV_ALLOC);
        w_end(w);

        w_begin(w, PERF_RECORD_EXIT, 0);
        w_u32(w, 300);
        w_u32(w, 299);
        w_u32(w, 300);
        w_u32(w, 299);
        w_u64(w, 8);
        w_sample_id(w, 300, 300, 8, 1, EV_ALLOC);
        w_end(w);

        w_free(&f.w[0], 1, 4, 0x5, 0);

        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 5);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_TASK_FORK);
        ASSERT_EQ(seen[1].ev.pid, 300);
        ASSERT_EQ(seen[1].ev.task.parent_pid, 299);
        ASSERT_EQ(seen[1].ev.cpu, 1);
        ASSERT_EQ(seen[2].ev.type, MS_EVENT_TASK_COMM);
        ASSERT_EQ(seen[2].ev.tid, 301);
        ASSERT_STREQ(seen[2].name, "worker");
        ASSERT_NULL(seen[2].ev.task.cmdline);        /* not an exec */
        ASSERT_EQ(seen[3].ev.type, MS_EVENT_LOST);
        ASSERT_EQ(seen[3].ev.lost.n_lost, 17);
        ASSERT_EQ(seen[3].ev.cpu, 1);
        ASSERT_EQ(seen[4].ev.type, MS_EVENT_TASK_EXIT);
        ASSERT_EQ(seen[4].ev.timestamp_nsec, 8);

        f.s->live.base.ops->get_stats(&f.s->live.base, &st);
        ASSERT_EQ(st.records, 5);
        ASSERT_EQ(st.lost_records, 17);
        ASSERT_EQ(st.n_cpus, 2);
        ASSERT_EQ(st.lost_per_cpu[0], 0);
        ASSERT_EQ(st.lost_per_cpu[1], 17);
        fixture_done(&f);
}

/* Malformed input is counted and skipped, never looped on or read past. */
static void test_malformed(void) {
        Writer *w;
        Fixture f;

        fixture_init(&f);
        w = &f.w[0];

        /* A sample of an event id this ring does not have. */
        w_begin(w, PERF_RECORD_SAMPLE, 0);
        w_u64(w, 999);
        w_u64(w, 0);
        w_u64(w, 1);
        w_u64(w, 0);
        w_u64(w, 0);
        w_end(w);
        /* An allocation whose chain length runs past the record. */
        w_begin(w, PERF_RECORD_SAMPLE, 0);
        w_u64(w, EV_ALLOC);
        w_u64(w, 0);
        w_u64(w, 2);
        w_u64(w, 0);
        w_u64(w, 1000);
        w_end(w);
        /* A COMM without a terminated name. */
        w_begin(w, PERF_RECORD_COMM, 0);
        w_u32(w, 1);
        w_u32(w, 1);
        w_put(w, "12345678", 8);
        w_sample_id(w, 1, 1, 3, 0, EV_ALLOC);
        w_end(w);
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 0);
        ASSERT_EQ(f.s->bad_records, 3);

        /* A header of size 0 would loop forever: the rest of the ring is skipped. */
        w_free(w, 1, 10, 0x9, 0);
        memset((uint8_t *) w->ring->data + (w->ring->meta->data_tail & (RING_BYTES - 1)) + 6, 0, 2);
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 0);
        ASSERT_EQ(f.s->bad_records, 4);
        ASSERT_EQ(w->ring->meta->data_tail, w->ring->meta->data_head);
        fixture_done(&f);
}

/* Slab samples: an allocation with its call chain and cache name, the daemon's own allocation dropped
 * (in the kernel by the filter; here as when the filter could not be set), a kfree, a kfree(NULL). */
static void test_slab_samples(void) {
        static const uint64_t chain[] = { (uint64_t) PERF_CONTEXT_KERNEL, 0xffffffff81000001, 0xffffffff81000002 };
        size_t k_cache = 0, k_kfree = 0;
        Writer *w;
        Fixture f;

        fixture_init(&f);
        for (size_t k = 0; k < N_ATTACHED; k++) {
                if (attached_kinds[k] == TRACEPOINT_KMEM_CACHE_ALLOC)
                        k_cache = k;
                if (attached_kinds[k] == TRACEPOINT_KFREE)
                        k_kfree = k;
        }
        ASSERT_GT(k_cache, 0);
        ASSERT_GT(k_kfree, 0);
        f.s->rings[0].fds[k_cache] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        f.s->rings[0].fds[k_kfree] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        f.s->rings[0].ids[k_cache] = 1003;
        f.s->rings[0].ids[k_kfree] = 1004;
        w = &f.w[0];

        for (uint32_t pid = 100; pid <= 4242; pid += 4142) {
                /* kmem_cache_alloc (id 659): call_site@8, ptr@16, name@24 (data_loc), bytes_req@32,
                 * bytes_alloc@40, gfp@48, node@56, accounted@60, the name at 64. */
                uint8_t raw[72] = {};
                uint16_t type = 659;
                uint64_t v;
                uint32_t loc = (5u << 16) | 64u;

                memcpy(raw, &type, sizeof(type));
                v = 0xffffffff81000100;
                memcpy(raw + 8, &v, 8);
                v = 0xffff888000004000 + pid;
                memcpy(raw + 16, &v, 8);
                memcpy(raw + 24, &loc, 4);
                v = 184;
                memcpy(raw + 32, &v, 8);
                v = 192;
                memcpy(raw + 40, &v, 8);
                memcpy(raw + 64, "filp", 5);
                w_begin(w, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
                w_u64(w, 1003);
                w_u32(w, pid);
                w_u32(w, pid);
                w_u64(w, 10 + pid);
                w_u32(w, 0);
                w_u32(w, 0);
                w_u64(w, ELEMENTSOF(chain));
                for (size_t i = 0; i < ELEMENTSOF(chain); i++)
                        w_u64(w, chain[i]);
                w_u32(w, sizeof(raw));
                w_put(w, raw, sizeof(raw));
                w_end(w);
        }
        for (uint64_t ptr = 0xffff888000004064; ptr != UINT64_MAX; ptr = ptr ? 0 : UINT64_MAX) {
                /* kfree (id 657): call_site@8, ptr@16; ptr 0 is kfree(NULL). */
                uint8_t raw[24] = {};
                uint16_t type = 657;
                uint64_t v = 0xffffffff81000200;

                memcpy(raw, &type, sizeof(type));
                memcpy(raw + 8, &v, 8);
                memcpy(raw + 16, &ptr, 8);
                w_begin(w, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
                w_u64(w, 1004);
                w_u32(w, 4242);
                w_u32(w, 4242);
                w_u64(w, 5000 + (ptr ? 0 : 1));
                w_u32(w, 0);
                w_u32(w, 0);
                w_u32(w, sizeof(raw) + 4);
                w_put(w, raw, sizeof(raw));
                w_u32(w, 0);
                w_end(w);
        }
        ASSERT_OK(f.s->live.base.ops->flush(&f.s->live.base));
        ASSERT_EQ(n_seen, 2);
        ASSERT_EQ(seen[0].ev.type, MS_EVENT_OBJECT_ALLOC);
        ASSERT_EQ(seen[0].ev.pid, 100);
        ASSERT_EQ(seen[0].ev.object.ptr, 0xffff888000004064);
        ASSERT_EQ(seen[0].ev.object.call_site, 0xffffffff81000100);
        ASSERT_EQ(seen[0].ev.object.bytes_requested, 184);
        ASSERT_EQ(seen[0].ev.object.bytes_allocated, 192);
        ASSERT_STREQ(seen[0].name, "filp");
        ASSERT_EQ(seen[0].ev.object.stack.n_frames, 2);
        ASSERT_EQ(seen[0].ev.object.stack.n_kernel_frames, 2);
        ASSERT_EQ(seen[0].frames[1], 0xffffffff81000002);
        /* The daemon's (4242) allocation dropped, its free kept; kfree(NULL) is neither failure nor event. */
        ASSERT_EQ(seen[1].ev.type, MS_EVENT_OBJECT_FREE);
        ASSERT_EQ(seen[1].ev.object.ptr, 0xffff888000004064);
        ASSERT_EQ(seen[1].ev.object.call_site, 0xffffffff81000200);
        ASSERT_EQ(f.s->self_samples, 1);
        ASSERT_EQ(f.s->failed_allocs, 0);
        ASSERT_EQ(f.s->bad_records, 0);
        fixture_done(&f);
}

static void test_parse_cpu_list(void) {
        unsigned *cpus = NULL;
        size_t n = 0;

        ASSERT_OK(parse_cpu_list("0-3,5,7-8\n", &cpus, &n));
        ASSERT_EQ(n, 7);
        ASSERT_EQ(cpus[0], 0);
        ASSERT_EQ(cpus[3], 3);
        ASSERT_EQ(cpus[4], 5);
        ASSERT_EQ(cpus[6], 8);
        free(cpus);
        ASSERT_OK(parse_cpu_list("1", &cpus, &n));
        ASSERT_EQ(n, 1);
        ASSERT_EQ(cpus[0], 1);
        free(cpus);
        ASSERT_EQ(parse_cpu_list("", &cpus, &n), -EINVAL);
        ASSERT_EQ(parse_cpu_list("3-1", &cpus, &n), -EINVAL);
        ASSERT_EQ(parse_cpu_list("0-x", &cpus, &n), -EINVAL);
        ASSERT_EQ(parse_cpu_list("0;1", &cpus, &n), -EINVAL);
        ASSERT_EQ(parse_cpu_list("99999", &cpus, &n), -EINVAL);
}

static void test_config(void) {
        PerfConfig c;

        perf_config_init(&c);
        ASSERT_OK(config_check(&c, 4096));
        c.buffer_pages = 3;
        ASSERT_EQ(config_check(&c, 4096), -EINVAL);
        c.buffer_pages = 1;
        c.wakeup_bytes = 4096;
        ASSERT_EQ(config_check(&c, 4096), -EINVAL);
        c.wakeup_bytes = 0;
        /* 0 means no call chains at all; past the maximum is refused. */
        c.depth = 0;
        ASSERT_OK(config_check(&c, 4096));
        c.depth = PERF_DEPTH_MAX + 1;
        ASSERT_EQ(config_check(&c, 4096), -EINVAL);
        c.depth = 1;
        c.drain_budget = 0;
        ASSERT_EQ(config_check(&c, 4096), -EINVAL);
}

int main(int argc, char *argv[]) {
        /* The expected-failure cases log errors; keep the test output to the assertions. */
        log_set_max_level(LOG_CRIT);
        int r = slab_live_mode(argc, argv, &perf_source_type);
        if (r >= 0)
                return r;

        TEST(test_parse_cpu_list);
        TEST(test_config);
        TEST(test_merge_order);
        TEST(test_cut);
        TEST(test_budget);
        TEST(test_callchain_and_wrap);
        TEST(test_self);
        TEST(test_cgroup);
        TEST(test_side_band);
        TEST(test_malformed);
        TEST(test_slab_samples);
        return 0;
}
