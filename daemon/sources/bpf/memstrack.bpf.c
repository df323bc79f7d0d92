/* SPDX-License-Identifier: MIT OR GPL-2.0-only */

/*
 * The kernel half of the eBPF source (ebpf.c is the other): one entry per page allocation and free, and a
 * record per task fork, rename, exec and exit and module load and free, into one ring buffer shared by all
 * CPUs. Page events, the bulk, are collected per CPU and sent in batches (see "Batches" below): a ring
 * record costs a lock, two helper calls and cache lines the reader shares, per event that was most of the
 * program's time. Every event takes a number from one counter for all CPUs when it is written, and the
 * daemon delivers them in that order (seqorder.c): a page freed on one CPU and reused on another is freed
 * first, since the free takes its number before the page reaches a free list, the reuse after it left one.
 *
 * Counts stay exact: every allocation gets an entry. Stacks are taken for a random subset, each page with
 * probability 1/interval: a countdown per CPU of pages to the next sampled one, drawn from the geometric
 * distribution (as heap profilers sample bytes), so an allocation of 2^order pages is sampled with
 * probability 1 - (1 - 1/interval)^(2^order) and draws a random number only when sampled. Unsampled
 * entries carry no frames; ebpf.c charges them to their thread's last sampled stack.
 *
 * The page, task and module programs are BTF tracepoints (tp_btf): typed arguments, no trace buffer filled
 * for nothing, and a recursion guard per program rather than one for all tracing programs on the CPU (see
 * page_alloc_nested). The slab programs are raw tracepoints, which run the same way with the same guard but
 * take their arguments as plain words: older kernels (Debian 11's 5.10 and 12's 6.1) refuse a tp_btf program
 * that reads an argument of type void *, as every slab tracepoint's object pointer is ("func 'kmalloc' arg1
 * type UNKNOWN is not a struct"), and the slab programs read only words and CO-RE probes anyway.
 *
 * Nothing here allocates or loops; a record that does not fit is counted per CPU, never retried.
 * GPL-compatible license: bpf_get_stack() and bpf_probe_read_kernel_str() are GPL-only helpers.
 */

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "memstrack-bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by ebpf.c before loading. Read-only once loaded, so the verifier knows their values and drops
 * the branches they switch off. */
const volatile __u32 self_tgid = 0;             /* the daemon: its allocations are not recorded */
const volatile __u32 kernel_depth_bytes = 0;    /* kernel frames per stack * 8; 0: no stacks at all */
const volatile __u32 user_depth_bytes = 0;      /* user frames per stack * 8; 0: kernel frames only */
const volatile __u32 user_at = 0;               /* the first user frame's index in MsBpfPage.frames */
/* Sampling (see sample_this()): every allocation, or geometric gaps of mean interval pages, whose
 * 1 / -log2(1 - 1/interval) is sample_gap_scale / 2^16; log2_fraction as MS_BPF_LOG2_* say. */
const volatile __u32 sample_every = 0;
const volatile __u64 sample_gap_scale = 0;
const volatile __u32 log2_fraction[MS_BPF_LOG2_STEPS] = {};
/* Buffered bytes above which a record wakes the reader; below it records wait (BPF_RB_NO_WAKEUP). */
const volatile __u64 wakeup_bytes = 0;
const volatile __u64 wakeup_check_mask = 0;
/* memstrackd's PID namespace, when it is not the initial one (a container): pids are reported as that
 * namespace sees them, and 0 for tasks outside it, as perf does; the daemon looks them up in its /proc.
 * pidns_translate 0: the initial namespace, the kernel's pids as they are (and no cost). */
const volatile __u32 pidns_translate = 0;
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
/* Prototype of each slab allocation tracepoint (MS_BPF_SLAB_SIZES and so on), by MS_BPF_SLAB_*. The slab
 * programs load only with --slab (ebpf.c turns their autoload off otherwise). */
const volatile __u32 slab_layout[MS_BPF_SLAB_ALLOCS] = {};

/* The next event's number (see the top); the daemon reads it to know what it has not seen yet. Every page
 * event on every CPU writes it, so what page events only read lives apart, in a section (a map, a page) of
 * its own: on the line event_seq is on, each of those reads would wait for the line to come back from the
 * CPU that last took a number (docs/performance.md). */
__u64 event_seq = 0;
/* Set by the daemon when it cannot run batch_flush (a kernel before 5.10, a sandbox): no batches then, every
 * page event goes to the ring on its own, as a nested one does. */
__u32 batches_off SEC(".data.read_mostly") = 0;
/* Grows with every cgroup made: a new cgroup may take a freed one's address (see task_cgroup_id()). */
__u64 cgroup_generation SEC(".data.read_mostly") = 0;

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 1 << 22);   /* ebpf.c sets the size */
} events SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, MsBpfStats);
} stats SEC(".maps");

/* A sampled allocation's record is built here, then copied into the ring at its real size: reserving
 * the largest size for every sample would waste the ring on short stacks. */
struct scratch {
        __u64 data[(sizeof(MsBpfObject) / 8) + 2 * MS_BPF_FRAMES_MAX]; /* an MsBpfPage or MsBpfObject and
                                                                         * its frames */
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        /* 0: page_alloc, 1: page_alloc_nested, which may interrupt it; then one per slab allocation
         * program (MS_BPF_SLAB_SCRATCH + MS_BPF_SLAB_*), since any may interrupt another, and one per
         * nested twin of those, which interrupts its main program. */
        __uint(max_entries, MS_BPF_SLAB_SCRATCH + 2 * MS_BPF_SLAB_ALLOCS);
        __type(key, __u32);
        __type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline MsBpfStats *stats_get(void) {
        __u32 zero = 0;

        return bpf_map_lookup_elem(&stats, &zero);
}

static __always_inline void count_ring_full(void) {
        MsBpfStats *s = stats_get();

        if (s)
                s->ring_full++;
}

/* Wakes the reader only once enough is buffered: a wakeup per record would cost more than the record. */
static __always_inline __u64 wakeup_flag(void) {
        return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
                                                                            : BPF_RB_NO_WAKEUP;
}

/* Slab records ask only every (wakeup_check_mask + 1)th record per CPU: the query reads the consumer's
 * position, a cache line the reader writes, and the watermark does not need to be met to the record.
 * ebpf.c makes the mask 0 (ask every time) when the ring above the watermark could fill before some CPU
 * asks: a full ring takes no record, so nothing would wake the reader then. */
static __always_inline __u64 slab_wakeup_flag(MsBpfStats *st) {
        if (st && (++st->records & wakeup_check_mask) != 0)
                return BPF_RB_NO_WAKEUP;
        return wakeup_flag();
}

/* The number of the event being written (see the top). Taken last, just before the record or entry is
 * handed over, so that a number is lost only with its record (a full ring), which the daemon skips. */
static __always_inline __u64 seq_next(void) {
        return __sync_fetch_and_add(&event_seq, 1);
}

/* The current task's tgid << 32 | pid, in memstrackd's PID namespace (see pidns_translate); 0 outside it. */
static __always_inline __u64 current_pid_tgid(void) {
        struct bpf_pidns_info ns;

        if (!pidns_translate)
                return bpf_get_current_pid_tgid();
        if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) < 0)
                return 0;
        return (__u64) ns.tgid << 32 | ns.pid;
}

/* As current_pid_tgid(), for the page programs that have the task at hand: two loads, not a helper call. */
static __always_inline __u64 task_pid_tgid(const struct task_struct *t) {
        if (pidns_translate)
                return current_pid_tgid();
        return (__u64) t->tgid << 32 | (__u32) t->pid;
}

/* Levels of nested PID namespaces looked through (the kernel allows 32; containers use a few). */
#define PIDNS_LEVELS_MAX 8

/* A task's pid (or its thread group's: group) in memstrackd's PID namespace; 0 outside it. A pid has one
 * number per namespace level from the initial one down to the task's own, numbers[i] in namespace i. */
static __always_inline __u32 task_pid_in_ns(struct task_struct *t, bool group) {
        struct pid *p;
        unsigned int level;

        if (!pidns_translate)
                return group ? (__u32) t->tgid : (__u32) t->pid;
        p = group ? BPF_CORE_READ(t, group_leader, thread_pid) : BPF_CORE_READ(t, thread_pid);
        if (!p)
                return 0;
        level = BPF_CORE_READ(p, level);
        for (unsigned int i = 1; i < PIDNS_LEVELS_MAX; i++) {
                struct upid up;

                if (i > level)
                        break;
                if (bpf_probe_read_kernel(&up, sizeof(up), &p->numbers[i]) < 0 || !up.ns)
                        return 0;
                if (BPF_CORE_READ(up.ns, ns.inum) == pidns_ino)
                        return (__u32) up.nr;
        }
        return 0;
}

/* Every record but page batches has it; the page programs fill their entries themselves. */
static __always_inline void head_fill(MsBpfHead *h, __u16 type, __u64 pid_tgid, __u64 timestamp_nsec) {
        h->timestamp_nsec = timestamp_nsec;
        h->cgroup_id = bpf_get_current_cgroup_id();
        h->pid = (__u32) (pid_tgid >> 32);
        h->tid = (__u32) pid_tgid;
        h->type = type;
        h->cpu = (__u16) bpf_get_smp_processor_id();
        h->aux = 0;
        h->seq = 0;     /* set by seq_next() when sent */
}

/*
 * The time is the dearest field of a slab record (~32 ns a read of this VM's clock source, measured with
 * bpf_stats_enabled; docs/performance.md), and the daemon needs it only to date what it first meets. So a
 * slab record takes the time only every (MS_BPF_TIME_MASK + 1)th record per CPU and carries 0 otherwise;
 * ebpf.c gives those the last time it saw. (The coarse clock, a few ns, is not allowed in tracing
 * programs.) Page entries take the time once per batch.
 */
static __always_inline __u64 slab_time(const MsBpfStats *st) {
        if (st && (st->records & MS_BPF_TIME_MASK) != 0)
                return 0;
        return bpf_ktime_get_ns();
}

/*
 * Batches. A CPU's page events go into its BatchBuffer (a per-CPU map value, so only that CPU writes it,
 * with plain stores; its CpuBatch keeps the state) and the batch into the ring once it holds
 * MS_BPF_BATCH_FLUSH words, or when the daemon runs batch_flush on that CPU (it does when it misses
 * numbers, see ebpf.c). Programs nest on a CPU: an interrupt may run a page program while another is
 * writing the batch. depth says a write is under way; a program that finds it set (a *_nested twin can
 * too) sends its event on its own, as a batch of one entry, and leaves the batch alone. depth is 0 or 1,
 * set and cleared by the same program; a nested program's read-modify-write of anything in the batch
 * completes before the interrupted one resumes.
 */
typedef struct CpuBatch {
        MsBpfBatchState state;                  /* first: the daemon reads it */
        __s64 countdown[2];                     /* pages, objects until the next sampled one */
        __u64 cgroup, cgroup_id, cgroup_gen;    /* task_cgroup_id()'s last answer */
} CpuBatch;

/* The batch itself, an MsBpfBatch with room for MS_BPF_BATCH_WORDS. Apart from CpuBatch so that the
 * daemon's look at every CPU's state copies a few bytes each, not the words. */
typedef struct BatchBuffer {
        __u16 type;
        __u16 cpu;
        __u32 n_words;
        __u64 timestamp_nsec;
        __u64 words[MS_BPF_BATCH_WORDS];
} BatchBuffer;

_Static_assert(__builtin_offsetof(BatchBuffer, words) == __builtin_offsetof(MsBpfBatch, words),
               "BatchBuffer is an MsBpfBatch");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, CpuBatch);
} batch_state SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, BatchBuffer);
} batches SEC(".maps");

static __always_inline CpuBatch *cpu_batch(void) {
        __u32 zero = 0;

        return bpf_map_lookup_elem(&batch_state, &zero);
}

static __always_inline BatchBuffer *batch_buffer(void) {
        __u32 zero = 0;

        return bpf_map_lookup_elem(&batches, &zero);
}

/* Sends the batch; false (and the batch kept for the next try) when the ring is full. */
static __always_inline bool batch_send(CpuBatch *b, BatchBuffer *buf) {
        __u64 n = b->state.used;

        if (n > MS_BPF_BATCH_WORDS)
                n = MS_BPF_BATCH_WORDS;
        buf->type = MS_BPF_PAGE_BATCH;
        buf->cpu = (__u16) bpf_get_smp_processor_id();
        buf->n_words = (__u32) n;
        n = sizeof(MsBpfBatch) + n * 8;
        /* One register for the check and the call: clang would bound a copy the verifier does not see. */
        barrier_var(n);
        if (n > sizeof(BatchBuffer))
                n = sizeof(BatchBuffer);
        barrier_var(n);
        if (bpf_ringbuf_output(&events, buf, n, wakeup_flag()) < 0)
                return false;
        b->state.used = 0;
        return true;
}

/* Claims the batch for this program's event: false when another page program on this CPU is writing it. */
static __always_inline bool batch_begin(CpuBatch *b, BatchBuffer *buf) {
        if (!b || !buf || b->state.depth != 0 || batches_off)
                return false;
        b->state.depth = 1;
        /* An interrupt between the check and here finds depth 0 and may send the batch: read used after. */
        barrier();
        return true;
}

static __always_inline void batch_end(CpuBatch *b, BatchBuffer *buf) {
        if (b->state.used >= MS_BPF_BATCH_FLUSH)
                (void) batch_send(b, buf);
        barrier();
        b->state.depth = 0;
}

/* The index of n free words for an entry in the claimed batch, or -1 (counted as lost): the batch is full,
 * which happens only while the ring is. */
static __always_inline long batch_room(CpuBatch *b, BatchBuffer *buf, __u64 n, MsBpfStats *st) {
        __u64 used = b->state.used;

        if (used > MS_BPF_BATCH_WORDS - n) {
                if (st)
                        st->ring_full++;
                return -1;
        }
        if (used == 0)
                buf->timestamp_nsec = bpf_ktime_get_ns();
        return (long) used;
}

#define BATCH_AT(buf, i) (buf)->words[(i) & (MS_BPF_BATCH_WORDS - 1)]

static __always_inline __u64 entry_head(__u32 kind, __u32 order) {
        return seq_next() << MS_BPF_ENTRY_SEQ_SHIFT | (__u64) (order & MS_BPF_ENTRY_ORDER_MASK)
                << MS_BPF_ENTRY_ORDER_SHIFT | kind;
}

/* Writes the entry's head (taking its number) at i and closes the entry of n words. */
static __always_inline void batch_commit(CpuBatch *b, BatchBuffer *buf, long i, __u64 n, __u32 kind,
                __u32 order) {
        __u64 head = entry_head(kind, order);

        BATCH_AT(buf, i) = head;
        if (i == 0)
                b->state.first_seq = head >> MS_BPF_ENTRY_SEQ_SHIFT;
        b->state.used = i + n;
}

/* An event sent on its own: a batch of one entry. */
typedef struct DirectEntry {
        __u16 type;
        __u16 cpu;
        __u32 n_words;
        __u64 timestamp_nsec;
        __u64 words[MS_BPF_ENTRY_WORDS_MAX];
} DirectEntry;

_Static_assert(__builtin_offsetof(DirectEntry, words) == __builtin_offsetof(MsBpfBatch, words),
               "DirectEntry is an MsBpfBatch");

/* A batch of one entry of n words (a constant at each call, as the ring's reserve needs), head unset. */
static __always_inline DirectEntry *direct_reserve(__u32 n, MsBpfStats *st) {
        DirectEntry *rec = bpf_ringbuf_reserve(&events, sizeof(MsBpfBatch) + n * 8, 0);

        if (!rec) {
                if (st)
                        st->ring_full++;
                return NULL;
        }
        rec->type = MS_BPF_PAGE_BATCH;
        rec->cpu = (__u16) bpf_get_smp_processor_id();
        rec->n_words = n;
        rec->timestamp_nsec = bpf_ktime_get_ns();
        return rec;
}

/* Numbers the entry last, as seq_next() says, and sends it. */
static __always_inline void direct_send(DirectEntry *rec, __u32 kind, __u32 order) {
        rec->words[0] = entry_head(kind, order);
        bpf_ringbuf_submit(rec, wakeup_flag());
}

static __always_inline void page_free_entry(CpuBatch *b, __u64 key, __u32 order, MsBpfStats *st) {
        BatchBuffer *buf = batch_buffer();
        DirectEntry *rec;
        long i;

        if (batch_begin(b, buf)) {
                i = batch_room(b, buf, MS_BPF_ENTRY_FREE_WORDS, st);
                if (i >= 0) {
                        BATCH_AT(buf, i + 1) = key;
                        batch_commit(b, buf, i, MS_BPF_ENTRY_FREE_WORDS, MS_BPF_ENTRY_FREE, order);
                }
                batch_end(b, buf);
                return;
        }
        rec = direct_reserve(MS_BPF_ENTRY_FREE_WORDS, st);
        if (!rec)
                return;
        rec->words[1] = key;
        direct_send(rec, MS_BPF_ENTRY_FREE, order);
}

static __always_inline void page_alloc_entry(CpuBatch *b, __u64 key, __u32 order, __u64 pid_tgid,
                __u64 cgroup_id, __u64 gfp, __s32 migrate_type, MsBpfStats *st) {
        __u64 flags = gfp << 32 | (__u32) migrate_type;
        BatchBuffer *buf = batch_buffer();
        DirectEntry *rec;
        long i;

        if (batch_begin(b, buf)) {
                i = batch_room(b, buf, MS_BPF_ENTRY_ALLOC_WORDS, st);
                if (i >= 0) {
                        BATCH_AT(buf, i + 1) = key;
                        BATCH_AT(buf, i + 2) = pid_tgid;
                        BATCH_AT(buf, i + 3) = cgroup_id;
                        BATCH_AT(buf, i + 4) = flags;
                        batch_commit(b, buf, i, MS_BPF_ENTRY_ALLOC_WORDS, MS_BPF_ENTRY_ALLOC, order);
                }
                batch_end(b, buf);
                return;
        }
        rec = direct_reserve(MS_BPF_ENTRY_ALLOC_WORDS, st);
        if (!rec)
                return;
        rec->words[1] = key;
        rec->words[2] = pid_tgid;
        rec->words[3] = cgroup_id;
        rec->words[4] = flags;
        direct_send(rec, MS_BPF_ENTRY_ALLOC, order);
}

/*
 * The task's cgroup id, as bpf_get_current_cgroup_id() gives it, without its last two loads most of the
 * time: the kernfs node's id sits on a cache line other CPUs write, ~18 ns a read under page load
 * (docs/performance.md). Each CPU keeps the last cgroup it saw with its id; a cgroup made since may have
 * taken a freed one's address, so a new cgroup (cgroup_made) makes every CPU read it again.
 */
static __always_inline __u64 task_cgroup_id(CpuBatch *b, struct task_struct *t) {
        struct cgroup *cg;
        __u64 gen;

        if (!bpf_core_field_exists(t->cgroups))
                return 0;
        cg = t->cgroups->dfl_cgrp;
        gen = *(volatile __u64 *) &cgroup_generation;
        if (!b)
                return cg->kn->id;
        if ((__u64) cg != b->cgroup || gen != b->cgroup_gen) {
                b->cgroup_id = cg->kn->id;
                b->cgroup = (__u64) cg;
                b->cgroup_gen = gen;
        }
        return b->cgroup_id;
}

/* floor(log2(x)) for 1 <= x < 2^32. */
static __always_inline __u32 top_bit(__u64 x) {
        __u32 k = 0;

        if (x >> 16) { x >>= 16; k += 16; }
        if (x >> 8) { x >>= 8; k += 8; }
        if (x >> 4) { x >>= 4; k += 4; }
        if (x >> 2) { x >>= 2; k += 2; }
        if (x >> 1)
                k += 1;
        return k;
}

/* Pages (objects) from this one to the next sampled one: geometric, 1 with probability p, k with
 * (1 - p)^(k - 1) p; floor(log(u) / log(1 - p)) + 1 for u uniform in (0, 1]. */
static __always_inline __s64 sample_gap(void) {
        __u64 x = (__u64) bpf_get_prandom_u32() + 1;    /* u = x / 2^32 */
        __u64 neg_log2_u = 0;                            /* -log2(u) = 32 - log2(x), fixed point */
        __u32 k, i;

        if (x < (1ULL << 32)) {
                /* log2(x) = k + log2(1 + the bits after the top one), those from the table. */
                k = top_bit(x);
                i = (__u32) (k >= 10 ? x >> (k - 10) : x << (10 - k)) & (MS_BPF_LOG2_STEPS - 1);
                neg_log2_u = ((__u64) (32 - k) << MS_BPF_LOG2_SHIFT) - log2_fraction[i];
        }
        return (__s64) ((neg_log2_u * sample_gap_scale) >> (2 * MS_BPF_LOG2_SHIFT)) + 1;
}

/* Whether an allocation of n pages (objects: which 1) is sampled, moving this CPU's countdown. */
static __always_inline bool sample_this(CpuBatch *b, __u32 which, __u64 n) {
        __s64 *countdown;

        if (kernel_depth_bytes == 0)
                return false;
        if (sample_every)
                return true;
        if (!b)
                return false;
        countdown = &b->countdown[which & 1];
        if (*countdown > (__s64) n) {
                *countdown -= (__s64) n;
                return false;
        }
        /* Geometric gaps are memoryless: the next sampled page is as far past this block's end as a
         * fresh gap says, however many sample points the block held. */
        *countdown = sample_gap();
        return true;
}

/*
 * A tp_btf program sees the struct page, not the pfn, and the verifier allows no arithmetic on its
 * address: the record carries the address, ebpf.c turns it into a key (page_key() there).
 */
static __always_inline __u64 page_key(const struct page *page) {
        return (__u64) page;
}

/*
 * Takes the allocation's stack into a sampled record (page or slab object: flags, n_kernel, n_user and
 * frames as MsBpfPage's), size bytes before its frames, and sends it. The record is a scratch slot's.
 */
static __always_inline int stack_output(void *ctx, void *rec, __u64 *seq, __u8 *flags, __u8 *n_kernel,
                __u8 *n_user, __u64 *frames, __u64 size, MsBpfStats *st) {
        long n = bpf_get_stack(ctx, frames, kernel_depth_bytes, 0);

        if (n < 0) {
                *flags = MS_BPF_STACK_FAILED;
                if (st)
                        st->stack_failed++;
        } else {
                *flags = MS_BPF_STACK;
                *n_kernel = (__u8) ((__u64) n / 8);
                if (st)
                        st->sampled++;
                if (user_depth_bytes > 0) {
                        n = bpf_get_stack(ctx, &frames[user_at], user_depth_bytes, BPF_F_USER_STACK);
                        /* Kernel threads have no user stack: not a failure. */
                        *n_user = n > 0 ? (__u8) ((__u64) n / 8) : 0;
                        size += (user_at + *n_user) * 8;
                } else
                        size += *n_kernel * 8;
        }
        /* One register for the check and the call: clang would bound a copy the verifier does not see. */
        barrier_var(size);
        if (size > sizeof(struct scratch))
                size = sizeof(struct scratch);
        barrier_var(size);
        *seq = seq_next();
        if (bpf_ringbuf_output(&events, rec, size, slab_wakeup_flag(st)) < 0 && st) {
                st->ring_full++;
                st->numbered_lost++;
        }
        return 0;
}

static __always_inline int page_alloc_sampled(void *ctx, __u32 slot, __u64 pid_tgid, __u64 key, __u32 order,
                __u64 gfp, __s32 migrate_type, MsBpfStats *st) {
        __u64 size = sizeof(MsBpfPage);
        struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
        MsBpfPage *rec;

        if (!sc)
                return 0;
        rec = (MsBpfPage *) sc->data;
        head_fill(&rec->head, MS_BPF_PAGE_ALLOC, pid_tgid, bpf_ktime_get_ns());
        rec->pfn = key;
        rec->gfp_flags = gfp;
        rec->migrate_type = migrate_type;
        rec->order = (__u8) order;
        rec->n_kernel = 0;
        rec->n_user = 0;

        return stack_output(ctx, rec, &rec->head.seq, &rec->flags, &rec->n_kernel, &rec->n_user, rec->frames,
                            size, st);
}

/* t: the current task. The stack-taking path is rare (1 in interval pages) and keeps the helpers. */
static __always_inline int page_alloc_event(void *ctx, __u32 slot, struct task_struct *t, struct page *page,
                __u32 order, __u64 gfp, __s32 migrate_type, MsBpfStats *st) {
        __u64 pid_tgid;
        CpuBatch *b;

        /* A failed allocation: no page to account. */
        if (!page)
                return 0;
        pid_tgid = task_pid_tgid(t);
        if ((__u32) (pid_tgid >> 32) == self_tgid) {
                if (st)
                        st->self_dropped++;
                return 0;
        }
        b = cpu_batch();
        if (sample_this(b, 0, 1ULL << (order & 31)))
                return page_alloc_sampled(ctx, slot, pid_tgid, page_key(page), order, gfp, migrate_type, st);
        page_alloc_entry(b, page_key(page), order, pid_tgid, task_cgroup_id(b, t), gfp, migrate_type, st);
        return 0;
}

/*
 * Each page event has two programs. The kernel does not run a tracing program again on a CPU where it is
 * still running: an interrupt that allocates or frees a page while page_alloc runs would be missed
 * (recursion_misses), and interrupts free pages often (RCU callbacks, network buffers). So
 * page_alloc_nested, attached to the same tracepoint after page_alloc (a tracepoint calls its programs in
 * the order they were attached, and the skeleton attaches them in the order this file defines them),
 * records exactly the events page_alloc did not, by what page_alloc notes first thing, per CPU (the
 * daemon attaches page_alloc_nested late, at page_alloc's first miss, unless told otherwise: ebpf.c,
 * twin_update()):
 *
 * - The note is the event's page and where the event is: the address of the tracepoint's argument array
 *   (ctx), which lies in the frame of the kernel function that calls both programs, so the same address
 *   for both programs of one event, and different for events nested in each other (a nested event's frame
 *   is deeper on the same stack, or on the interrupt stack).
 * - Events on the task's own stack (task context) never nest in each other: one note. Events on the
 *   interrupt stack (softirqs and the hardirqs that interrupt them) keep a list of notes, outermost
 *   (highest address) first: a note deeper than the current frame belongs to an event that has returned.
 * - The twin records the event unless a note at its frame holds its page; it drops the note either way.
 *
 * An event page_alloc misses is nested in page_alloc's run, anywhere in the window where the kernel counts
 * it as running (which includes the kernel's code before and after the program: the first version set a
 * flag inside the program and missed events there, about 5 in a million under mixed load and hundreds a
 * second with kernel.bpf_stats_enabled, whose clock reads sit in that window; docs/performance.md). Its
 * frame has no note of its own page: page_alloc did not run for it, and a stale note left at that frame
 * (by an event whose twin was skipped) names another page, since a page is not allocated or freed twice at
 * once. The two programs use separate scratch slots.
 *
 * Kernels without struct irq_stack in their BTF (not x86-64) fall back to the first version: a flag set
 * while page_alloc runs.
 */
#define NEST_IRQ_NOTES 8

typedef struct NestNote {
        __u64 frame, key;
} NestNote;

typedef struct Nest {
        NestNote task;                          /* the event in task context; frame 0: none */
        __u32 n_irq, flag;                      /* flag: the fallback */
        NestNote irq[NEST_IRQ_NOTES];           /* on the interrupt stack, outermost first */
} Nest;

/* Per CPU: each CPU writes its own cache lines on every event, and the kernel inlines the lookup of a
 * per-CPU array, so the note is among the program's first instructions. */
typedef struct Busy {
        __u64 scratch;                          /* turns an address into a number (see frame_of()) */
        Nest alloc, free;
        Nest slab[MS_BPF_SLAB_NESTS];           /* the slab programs' (MS_BPF_SLAB_*, MS_BPF_SLAB_NEST_*) */
} Busy;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, Busy);
} busy SEC(".maps");

static __always_inline Busy *busy_get(void) {
        __u32 zero = 0;

        return bpf_map_lookup_elem(&busy, &zero);
}

static __always_inline bool nest_by_frame(void) {
        return bpf_core_type_exists(struct irq_stack);
}

/* The event's frame as a number: the verifier allows no arithmetic on ctx, but a value read back from a
 * map is a plain number. */
static __always_inline __u64 frame_of(Busy *b, void *ctx) {
        b->scratch = (__u64) ctx;
        return *(volatile __u64 *) &b->scratch;
}

/* Whether frame is on the current task's stack (task context) rather than an interrupt stack. */
static __always_inline bool frame_in_task(const struct task_struct *t, __u64 frame) {
        __u64 base = (__u64) t->stack;

        /* x86-64's task and interrupt stacks have the same size. */
        return frame - base < bpf_core_type_size(struct irq_stack);
}

/* How many interrupt-stack notes stay: those above frame (or at it, unless drop_at). */
static __always_inline __u32 nest_irq_above(const Nest *n, __u64 frame, bool drop_at) {
        __u32 i = n->n_irq;

        if (i > NEST_IRQ_NOTES)
                i = NEST_IRQ_NOTES;
        for (int k = 0; k < NEST_IRQ_NOTES; k++) {
                __u32 j;
                __u64 f;

                if (i == 0)
                        break;
                j = i - 1;
                barrier_var(j);
                f = n->irq[j & (NEST_IRQ_NOTES - 1)].frame;
                if (f > frame || (f == frame && !drop_at))
                        break;
                i--;
        }
        return i;
}

/* The main program's note, first thing. */
static __always_inline void nest_enter(Busy *b, Nest *n, const struct task_struct *t, void *ctx, __u64 key) {
        __u64 frame;
        __u32 i;

        if (!nest_by_frame()) {
                n->flag = 1;
                return;
        }
        frame = frame_of(b, ctx);
        if (frame_in_task(t, frame)) {
                n->task.frame = frame;
                n->task.key = key;
                return;
        }
        /* Notes at or below this frame are of events that returned. */
        i = nest_irq_above(n, frame, true);
        if (i >= NEST_IRQ_NOTES)
                i = NEST_IRQ_NOTES - 1; /* not reached: events nest two levels deep on this stack */
        barrier_var(i);
        i &= NEST_IRQ_NOTES - 1;
        n->irq[i].frame = frame;
        n->irq[i].key = key;
        n->n_irq = i + 1;
}

static __always_inline void nest_leave(Nest *n) {
        if (!nest_by_frame())
                n->flag = 0;
}

/* Whether the twin must record this event: the main program did not. */
static __always_inline bool nest_missed(Busy *b, Nest *n, void *ctx, __u64 key) {
        __u64 frame;
        bool handled = false;
        __u32 i;

        if (!nest_by_frame())
                return n->flag;
        /* No need to ask which stack the frame is on: the task's note is at this frame only in task
         * context, and in task context no interrupt runs, so the interrupt stack's notes are all stale. */
        frame = frame_of(b, ctx);
        if (n->task.frame == frame) {
                handled = n->task.key == key;
                n->task.frame = 0;
                return !handled;
        }
        i = nest_irq_above(n, frame, false);
        if (i > 0) {
                __u32 j = i - 1;

                barrier_var(j);
                j &= NEST_IRQ_NOTES - 1;
                if (n->irq[j].frame == frame) {
                        handled = n->irq[j].key == key;
                        i--;
                }
        }
        n->n_irq = i;
        return !handled;
}

/* The current task: a helper call, made once for both the note and the entry. */
SEC("tp_btf/mm_page_alloc")
int BPF_PROG(page_alloc, struct page *page, unsigned int order, gfp_t gfp_flags, int migratetype) {
        struct task_struct *t = bpf_get_current_task_btf();
        Busy *b = busy_get();

        if (b)
                nest_enter(b, &b->alloc, t, ctx, page_key(page));
        page_alloc_event(ctx, 0, t, page, order, gfp_flags, migratetype, stats_get());
        if (b)
                nest_leave(&b->alloc);
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(page_alloc_nested, struct page *page, unsigned int order, gfp_t gfp_flags, int migratetype) {
        Busy *b = busy_get();
        MsBpfStats *st;

        if (!b || !nest_missed(b, &b->alloc, ctx, page_key(page)))
                return 0;
        st = stats_get();
        if (st)
                st->nested++;
        return page_alloc_event(ctx, 1, bpf_get_current_task_btf(), page, order, gfp_flags, migratetype, st);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(page_free, struct page *page, unsigned int order) {
        Busy *b = busy_get();

        if (b)
                nest_enter(b, &b->free, bpf_get_current_task_btf(), ctx, page_key(page));
        page_free_entry(cpu_batch(), page_key(page), order, stats_get());
        if (b)
                nest_leave(&b->free);
        return 0;
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(page_free_nested, struct page *page, unsigned int order) {
        Busy *b = busy_get();
        MsBpfStats *st;

        if (!b || !nest_missed(b, &b->free, ctx, page_key(page)))
                return 0;
        st = stats_get();
        if (st)
                st->nested++;
        page_free_entry(cpu_batch(), page_key(page), order, st);
        return 0;
}

/*
 * Sends this CPU's batch now: the daemon runs it on every CPU (BPF_F_TEST_RUN_ON_CPU, an interrupt there)
 * when it misses numbers, and before it answers a query. MS_BPF_FLUSH_BUSY when it interrupted a page
 * program's write: the daemon asks again.
 */
SEC("raw_tp")
int batch_flush(void *ctx) {
        CpuBatch *b = cpu_batch();
        BatchBuffer *buf = batch_buffer();
        int r;

        if (!b || !buf)
                return MS_BPF_FLUSH_DONE;
        if (b->state.depth != 0)
                return MS_BPF_FLUSH_BUSY;
        if (b->state.used == 0)
                return MS_BPF_FLUSH_DONE;
        b->state.depth = 1;
        r = batch_send(b, buf) ? MS_BPF_FLUSH_DONE : MS_BPF_FLUSH_RING_FULL;
        b->state.depth = 0;
        return r;
}

/* One draw of sample_gap(), for tests/test-ebpf.c (BPF_PROG_TEST_RUN); memstrackd does not load it. */
SEC("raw_tp")
int sample_gap_draw(void *ctx) {
        return (int) sample_gap();
}

/* See task_cgroup_id(). */
SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(cgroup_made, struct cgroup *cgrp, const char *path) {
        __sync_fetch_and_add(&cgroup_generation, 1);
        return 0;
}

/*
 * Slab objects (--slab): one record per allocation and free, as for pages, through the same ring, with the
 * same counters. Stacks are sampled by objects, not bytes: each allocation with probability 1/interval
 * (the order-0 threshold, whatever its size), since an object's size says little about how often a stack
 * is worth taking. Failed allocations (NULL), kmalloc(0) (ZERO_SIZE_PTR) and kfree(NULL) are no objects.
 *
 * The tracepoints' prototypes changed over time (see the MS_BPF_SLAB_* layouts); ebpf.c reads which one
 * this kernel has from its BTF, and the verifier, knowing slab_layout, drops the branches for the others,
 * including their reads of arguments this kernel's tracepoint does not have.
 *
 * Nested events: an interrupt that frees or allocates an object while the program of that tracepoint runs
 * on its CPU (RCU callbacks freeing in a softirq, network buffers allocated in one) is refused by the
 * kernel's recursion guard, which is per program. Each slab program has a twin on its tracepoint, as
 * page_alloc and page_free do (see page_alloc_nested): the main program leaves a note with the object's
 * pointer, the twin records the event only when the main program did not. ebpf.c attaches a twin at its
 * main program's first miss (slabRecursionMiss counts the misses before, and those no twin caught).
 */
#define SLAB_ZERO_SIZE_PTR 16

static __always_inline void slab_object_fill(MsBpfObject *rec, __u64 pid_tgid, __u64 call_site, __u64 ptr,
                __u64 req, __u64 alloc, const struct kmem_cache *cache, MsBpfStats *st) {
        head_fill(&rec->head, MS_BPF_OBJECT_ALLOC, pid_tgid, slab_time(st));
        rec->ptr = ptr;
        rec->call_site = call_site;
        rec->bytes_requested = req;
        rec->bytes_allocated = alloc;
        rec->cache[0] = '\0';
        if (cache && bpf_probe_read_kernel_str(rec->cache, sizeof(rec->cache), BPF_CORE_READ(cache, name)) < 0)
                rec->cache[0] = '\0';
        rec->flags = 0;
        rec->n_kernel = 0;
        rec->n_user = 0;
        __builtin_memset(rec->pad, 0, sizeof(rec->pad));
}

static __always_inline int slab_alloc_sampled(void *ctx, __u32 slot, __u64 pid_tgid, __u64 call_site,
                __u64 ptr, __u64 req, __u64 alloc, const struct kmem_cache *cache, MsBpfStats *st) {
        __u64 size = sizeof(MsBpfObject);
        struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
        MsBpfObject *rec;

        if (!sc)
                return 0;
        rec = (MsBpfObject *) sc->data;
        slab_object_fill(rec, pid_tgid, call_site, ptr, req, alloc, cache, st);
        return stack_output(ctx, rec, &rec->head.seq, &rec->flags, &rec->n_kernel, &rec->n_user, rec->frames,
                            size, st);
}

/* The pointer an allocation or free event is about: what the notes are keyed by. */
static __always_inline __u64 slab_ptr(const __u64 *ctx) {
        return ctx[1];
}

/* which: MS_BPF_SLAB_*, a constant in each program, so slab_layout[which] is known to the verifier;
 * nested: the twin's record, whose sampled stack is built in a scratch slot of its own. */
static __always_inline int slab_alloc_record(__u64 *ctx, __u32 which, bool nested, MsBpfStats *st) {
        __u64 pid_tgid = current_pid_tgid();
        const struct kmem_cache *cache = NULL;
        __u64 call_site = ctx[0], ptr = slab_ptr(ctx), req, alloc;
        MsBpfObject *rec;
        __u32 layout = slab_layout[which];

        if (ptr <= SLAB_ZERO_SIZE_PTR)
                return 0;
        if ((__u32) (pid_tgid >> 32) == self_tgid) {
                if (st)
                        st->self_dropped++;
                return 0;
        }
        if (layout == MS_BPF_SLAB_CACHE) {
                cache = (const struct kmem_cache *) ctx[2];
                req = BPF_CORE_READ(cache, object_size);
                alloc = BPF_CORE_READ(cache, size);
        } else if (layout == MS_BPF_SLAB_CACHE_SIZES) {
                cache = (const struct kmem_cache *) ctx[2];
                req = ctx[3];
                alloc = ctx[4];
        } else {
                req = ctx[2];
                alloc = ctx[3];
        }
        /* kmalloc's cache is the size class's, which perf and ftrace do not name either. */
        if (which == MS_BPF_SLAB_KMALLOC || which == MS_BPF_SLAB_KMALLOC_NODE)
                cache = NULL;

        if (sample_this(cpu_batch(), 1, 1))
                return slab_alloc_sampled(ctx, MS_BPF_SLAB_SCRATCH + (nested ? MS_BPF_SLAB_ALLOCS : 0) + which,
                                          pid_tgid, call_site, ptr, req, alloc, cache, st);
        rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
        if (!rec) {
                if (st)
                        st->ring_full++;
                return 0;
        }
        slab_object_fill(rec, pid_tgid, call_site, ptr, req, alloc, cache, st);
        rec->head.seq = seq_next();
        bpf_ringbuf_submit(rec, slab_wakeup_flag(st));
        return 0;
}

static __always_inline int slab_free_record(__u64 *ctx, MsBpfStats *st) {
        MsBpfObjectFree *rec;
        __u64 ptr = slab_ptr(ctx);

        if (ptr <= SLAB_ZERO_SIZE_PTR)
                return 0;
        rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
        if (!rec) {
                if (st)
                        st->ring_full++;
                return 0;
        }
        rec->type = MS_BPF_OBJECT_FREE;
        rec->cpu = (__u16) bpf_get_smp_processor_id();
        rec->pad = 0;
        rec->timestamp_nsec = slab_time(st);
        rec->ptr = ptr;
        rec->call_site = ctx[0];
        rec->seq = seq_next();
        bpf_ringbuf_submit(rec, slab_wakeup_flag(st));
        return 0;
}

/* The note of slab tracepoint nest (MS_BPF_SLAB_*, MS_BPF_SLAB_NEST_*), NULL without the map. */
static __always_inline Nest *slab_nest(Busy *b, __u32 nest) {
        return b && nest < MS_BPF_SLAB_NESTS ? &b->slab[nest] : NULL;
}

/* A main program: the note, the record, the note's end. */
static __always_inline int slab_event(__u64 *ctx, __u32 which, bool alloc) {
        Busy *b = busy_get();
        Nest *n = slab_nest(b, which);

        if (n)
                nest_enter(b, n, bpf_get_current_task_btf(), ctx, slab_ptr(ctx));
        if (alloc)
                slab_alloc_record(ctx, which, false, stats_get());
        else
                slab_free_record(ctx, stats_get());
        if (n)
                nest_leave(n);
        return 0;
}

/* A twin: the record, when its main program did not make it. */
static __always_inline int slab_event_nested(__u64 *ctx, __u32 which, bool alloc) {
        Busy *b = busy_get();
        Nest *n = slab_nest(b, which);
        MsBpfStats *st;

        if (!n || !nest_missed(b, n, ctx, slab_ptr(ctx)))
                return 0;
        st = stats_get();
        if (st)
                st->slab_nested++;
        if (alloc)
                return slab_alloc_record(ctx, which, true, st);
        return slab_free_record(ctx, st);
}

SEC("raw_tp/kmalloc")
int slab_kmalloc(__u64 *ctx) {
        return slab_event(ctx, MS_BPF_SLAB_KMALLOC, true);
}

SEC("raw_tp/kmalloc_node")
int slab_kmalloc_node(__u64 *ctx) {
        return slab_event(ctx, MS_BPF_SLAB_KMALLOC_NODE, true);
}

SEC("raw_tp/kmem_cache_alloc")
int slab_cache_alloc(__u64 *ctx) {
        return slab_event(ctx, MS_BPF_SLAB_CACHE_ALLOC, true);
}

SEC("raw_tp/kmem_cache_alloc_node")
int slab_cache_alloc_node(__u64 *ctx) {
        return slab_event(ctx, MS_BPF_SLAB_CACHE_ALLOC_NODE, true);
}

SEC("raw_tp/kfree")
int slab_kfree(__u64 *ctx) {
        return slab_event(ctx, MS_BPF_SLAB_NEST_KFREE, false);
}

SEC("raw_tp/kmem_cache_free")
int slab_cache_free(__u64 *ctx) {
        return slab_event(ctx, MS_BPF_SLAB_NEST_CACHE_FREE, false);
}

/* The twins, after their main programs in this file: with --nested-allocations=always the skeleton
 * attaches them in this order, and a tracepoint runs its programs in the order they were attached. */
SEC("raw_tp/kmalloc")
int slab_kmalloc_nested(__u64 *ctx) {
        return slab_event_nested(ctx, MS_BPF_SLAB_KMALLOC, true);
}

SEC("raw_tp/kmalloc_node")
int slab_kmalloc_node_nested(__u64 *ctx) {
        return slab_event_nested(ctx, MS_BPF_SLAB_KMALLOC_NODE, true);
}

SEC("raw_tp/kmem_cache_alloc")
int slab_cache_alloc_nested(__u64 *ctx) {
        return slab_event_nested(ctx, MS_BPF_SLAB_CACHE_ALLOC, true);
}

SEC("raw_tp/kmem_cache_alloc_node")
int slab_cache_alloc_node_nested(__u64 *ctx) {
        return slab_event_nested(ctx, MS_BPF_SLAB_CACHE_ALLOC_NODE, true);
}

SEC("raw_tp/kfree")
int slab_kfree_nested(__u64 *ctx) {
        return slab_event_nested(ctx, MS_BPF_SLAB_NEST_KFREE, false);
}

SEC("raw_tp/kmem_cache_free")
int slab_cache_free_nested(__u64 *ctx) {
        return slab_event_nested(ctx, MS_BPF_SLAB_NEST_CACHE_FREE, false);
}

/*
 * Bulk slab calls (--slab, where the kernel lets a program attach to the functions): kmem_cache_alloc_bulk()
 * and kmem_cache_free_bulk() fire no slab tracepoint for their objects, so without these a cache that uses
 * them (maple_node; kfree_rcu()'s batches end in kfree_bulk()) loses frees, or never shows its objects.
 * One record per call (per MS_BPF_BULK_CHUNK objects): its pointers copied in one read, the cache's name
 * and sizes, and for allocations the stack, whose first frame past the hook is the call site. fentry and
 * fexit programs have the kernel's recursion guard per program as tracepoints do: a bulk call an interrupt
 * makes while the same program runs on its CPU is missed, counted as slabRecursionMiss.
 */
const volatile __u32 bulk_frames = 0;   /* stack words a bulk allocation's record has room for */

struct bulk_scratch {
        __u64 data[sizeof(MsBpfObjectBulk) / 8 + MS_BPF_FRAMES_MAX + MS_BPF_BULK_CHUNK];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 2);         /* the free program's, the allocation program's: either may interrupt
                                         * the other */
        __type(key, __u32);
        __type(value, struct bulk_scratch);
} bulk_scratch SEC(".maps");

/* n objects at p (a kernel array of pointers) of cache (NULL for kfree_bulk()). */
static __always_inline int slab_bulk(void *ctx, bool alloc, const struct kmem_cache *cache, __u64 n, __u64 p) {
        __u32 slot = alloc, at = 0;
        struct bulk_scratch *sc = bpf_map_lookup_elem(&bulk_scratch, &slot);
        __u64 pid_tgid = current_pid_tgid();
        MsBpfStats *st = stats_get();
        MsBpfObjectBulk *rec;

        if (!sc || n == 0 || !p)
                return 0;
        if ((__u32) (pid_tgid >> 32) == self_tgid) {
                if (st)
                        st->self_dropped++;
                return 0;
        }
        rec = (MsBpfObjectBulk *) sc->data;
        head_fill(&rec->head, alloc ? MS_BPF_OBJECT_ALLOC_BULK : MS_BPF_OBJECT_FREE_BULK, pid_tgid,
                  bpf_ktime_get_ns());
        rec->bytes_requested = 0;
        rec->bytes_allocated = 0;
        rec->cache[0] = '\0';
        rec->flags = 0;
        rec->n_kernel = 0;
        rec->pad[0] = rec->pad[1] = 0;
        if (alloc) {
                long k;

                if (cache) {
                        rec->bytes_requested = BPF_CORE_READ(cache, object_size);
                        rec->bytes_allocated = BPF_CORE_READ(cache, size);
                        if (bpf_probe_read_kernel_str(rec->cache, sizeof(rec->cache), BPF_CORE_READ(cache, name)) < 0)
                                rec->cache[0] = '\0';
                }
                k = bpf_get_stack(ctx, rec->words, bulk_frames * 8, 0);
                if (k > 0) {
                        rec->flags = MS_BPF_STACK;
                        rec->n_kernel = (__u8) ((__u64) k / 8);
                } else {
                        rec->flags = MS_BPF_STACK_FAILED;
                        if (st)
                                st->stack_failed++;
                }
                at = bulk_frames;
        }
        rec->frames_at = at;
        for (__u32 c = 0; c < MS_BPF_BULK_CHUNKS; c++) {
                __u64 done = (__u64) c * MS_BPF_BULK_CHUNK, m, size;

                if (done >= n)
                        return 0;
                m = n - done;
                if (m > MS_BPF_BULK_CHUNK)
                        m = MS_BPF_BULK_CHUNK;
                barrier_var(m);
                if (m == 0 || m > MS_BPF_BULK_CHUNK)
                        return 0;
                if (bpf_probe_read_kernel(&rec->words[at], m * 8,
                                          (const void *) (p + done * 8)) < 0)
                        return 0;
                rec->head.aux = (__u32) m;
                size = sizeof(*rec) + ((__u64) at + m) * 8;
                barrier_var(size);
                if (size > sizeof(struct bulk_scratch))
                        size = sizeof(struct bulk_scratch);
                barrier_var(size);
                rec->head.seq = seq_next();
                if (bpf_ringbuf_output(&events, rec, size, slab_wakeup_flag(st)) < 0 && st) {
                        st->ring_full++;
                        st->numbered_lost++;
                }
        }
        if (st && n > (__u64) MS_BPF_BULK_CHUNKS * MS_BPF_BULK_CHUNK)
                st->bulk_cut += n - (__u64) MS_BPF_BULK_CHUNKS * MS_BPF_BULK_CHUNK;
        return 0;
}

/* Word i of the traced function's arguments (then its return value), as the trampoline stored them: read
 * as a plain word, since the verifier checks a direct read against the argument's type and older kernels
 * (6.1) refuse pointers to pointers (void **) and to void. */
static __always_inline __u64 traced_arg(__u64 *ctx, __u32 i) {
        __u64 v = 0;

        (void) bpf_probe_read_kernel(&v, sizeof(v), &ctx[i]);
        return v;
}

/* void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p) */
SEC("fentry/kmem_cache_free_bulk")
int slab_free_bulk(__u64 *ctx) {
        return slab_bulk(ctx, false, NULL, traced_arg(ctx, 1), traced_arg(ctx, 2));
}

/* int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t flags, size_t size, void **p): how many it
 * allocated, at p (0: none, it freed what it had). Named kmem_cache_alloc_bulk_noprof since 6.10. */
static __always_inline int slab_alloc_bulk_exit(__u64 *ctx) {
        return slab_bulk(ctx, true, (const struct kmem_cache *) traced_arg(ctx, 0), (__u32) traced_arg(ctx, 4),
                         traced_arg(ctx, 3));
}

SEC("fexit/kmem_cache_alloc_bulk")
int slab_alloc_bulk(__u64 *ctx) {
        return slab_alloc_bulk_exit(ctx);
}

SEC("fexit/kmem_cache_alloc_bulk_noprof")
int slab_alloc_bulk_noprof(__u64 *ctx) {
        return slab_alloc_bulk_exit(ctx);
}

/*
 * Sends a task record, or drops it when its task is outside memstrackd's PID namespace (pid 0 there):
 * such a task has no pid the daemon could name, and records for pid 0 would keep ending and re-creating
 * one task that stands for all of them (their pages are still charged to pid 0, as perf does).
 */
static __always_inline void task_submit(MsBpfHead *rec) {
        if (pidns_translate && rec->pid == 0) {
                bpf_ringbuf_discard(rec, 0);
                return;
        }
        rec->seq = seq_next();
        bpf_ringbuf_submit(rec, wakeup_flag());
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(task_fork, struct task_struct *parent, struct task_struct *child) {
        MsBpfHead *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

        if (!rec) {
                count_ring_full();
                return 0;
        }
        head_fill(rec, MS_BPF_TASK_FORK, current_pid_tgid(), bpf_ktime_get_ns());
        rec->pid = task_pid_in_ns(child, true);
        rec->tid = task_pid_in_ns(child, false);
        rec->aux = task_pid_in_ns(parent, true);
        task_submit(rec);
        return 0;
}

/* prctl(PR_SET_NAME) and exec both rename through here; exec says more below. */
SEC("tp_btf/task_rename")
int BPF_PROG(task_rename, struct task_struct *task, const char *comm) {
        MsBpfTask *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

        if (!rec) {
                count_ring_full();
                return 0;
        }
        head_fill(&rec->head, MS_BPF_TASK_COMM, current_pid_tgid(), bpf_ktime_get_ns());
        rec->head.pid = task_pid_in_ns(task, true);
        rec->head.tid = task_pid_in_ns(task, false);
        if (bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), comm) < 0)
                rec->comm[0] = '\0';
        task_submit(&rec->head);
        return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(task_exec, struct task_struct *task, pid_t old_pid) {
        MsBpfTask *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

        if (!rec) {
                count_ring_full();
                return 0;
        }
        head_fill(&rec->head, MS_BPF_TASK_EXEC, current_pid_tgid(), bpf_ktime_get_ns());
        /* The thread id before the exec (a thread that is not the leader takes the leader's id): the
         * kernel's number, which is memstrackd's only in the initial PID namespace. In another, the old
         * id is gone with its struct pid by now (de_thread() swapped them), so 0: unknown, never a number
         * from outside the namespace. */
        rec->head.aux = pidns_translate ? 0 : (__u32) old_pid;
        if (bpf_get_current_comm(rec->comm, sizeof(rec->comm)) < 0)
                rec->comm[0] = '\0';
        task_submit(&rec->head);
        return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(task_exit, struct task_struct *task) {
        MsBpfHead *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

        if (!rec) {
                count_ring_full();
                return 0;
        }
        head_fill(rec, MS_BPF_TASK_EXIT, current_pid_tgid(), bpf_ktime_get_ns());
        rec->pid = task_pid_in_ns(task, true);
        rec->tid = task_pid_in_ns(task, false);
        task_submit(rec);
        return 0;
}

static __always_inline int module_event(struct module *mod, __u16 type) {
        MsBpfModule *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

        if (!rec) {
                count_ring_full();
                return 0;
        }
        head_fill(&rec->head, type, current_pid_tgid(), bpf_ktime_get_ns());
        if (bpf_probe_read_kernel_str(rec->name, sizeof(rec->name), mod->name) < 0)
                rec->name[0] = '\0';
        rec->head.seq = seq_next();
        bpf_ringbuf_submit(rec, wakeup_flag());
        return 0;
}

SEC("tp_btf/module_load")
int BPF_PROG(module_load, struct module *mod) {
        return module_event(mod, MS_BPF_MODULE_LOAD);
}

SEC("tp_btf/module_free")
int BPF_PROG(module_free, struct module *mod) {
        return module_event(mod, MS_BPF_MODULE_FREE);
}
