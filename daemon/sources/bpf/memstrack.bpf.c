/* SPDX-License-Identifier: MIT OR GPL-2.0-only */

/*
 * The kernel half of the eBPF source (ebpf.c is the other): one record per page allocation and free, and
 * per task fork, rename, exec and exit and module load and free, into one ring buffer shared by all CPUs.
 * The ring is multi-producer and hands records out in the order they were reserved, so a page freed on
 * one CPU and reused on another arrives free first without a merge: the free reserves its record before
 * the page reaches a free list, the reuse after it left one.
 *
 * Counts stay exact: every allocation gets a record. Stacks are taken for a random subset, each page with
 * probability 1/interval (Bernoulli per page, so the gaps between sampled pages are geometric, as heap
 * profilers sample bytes): an allocation of 2^order pages is sampled with probability
 * 1 - (1 - 1/interval)^(2^order), a threshold per order ebpf.c computes. Unsampled records carry no
 * frames; ebpf.c charges them to their thread's last sampled stack.
 *
 * All programs are BTF tracepoints (tp_btf): typed arguments, no trace buffer filled for nothing, and a
 * recursion guard per program rather than one for all tracing programs on the CPU (see page_alloc_nested).
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
/* An allocation of 2^order pages is sampled when bpf_get_prandom_u32() < sample_threshold[order]; a
 * threshold above UINT32_MAX samples every allocation without drawing. */
const volatile __u64 sample_threshold[MS_BPF_ORDERS] = {};
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
         * program (MS_BPF_SLAB_SCRATCH + MS_BPF_SLAB_*), since any may interrupt another. */
        __uint(max_entries, MS_BPF_SLAB_SCRATCH + MS_BPF_SLAB_ALLOCS);
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

/* The page programs ask only every (wakeup_check_mask + 1)th record per CPU: the query reads the
 * consumer's position, a cache line the reader writes, and the watermark does not need to be met to the
 * record. ebpf.c makes the mask 0 (ask every time) when the ring above the watermark could fill before
 * some CPU asks: a full ring takes no record, so nothing would wake the reader then. */
static __always_inline __u64 page_wakeup_flag(MsBpfStats *st) {
        if (st && (++st->records & wakeup_check_mask) != 0)
                return BPF_RB_NO_WAKEUP;
        return wakeup_flag();
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

/* Frees have a record of their own without it (MsBpfFree); reading the cgroup id is four dependent
 * loads (~20 ns). */
static __always_inline void head_fill(MsBpfHead *h, __u16 type, __u64 pid_tgid, __u64 timestamp_nsec) {
        h->timestamp_nsec = timestamp_nsec;
        h->cgroup_id = bpf_get_current_cgroup_id();
        h->pid = (__u32) (pid_tgid >> 32);
        h->tid = (__u32) pid_tgid;
        h->type = type;
        h->cpu = (__u16) bpf_get_smp_processor_id();
        h->aux = 0;
}

/*
 * The time is the dearest field of a page record (~32 ns a read of this VM's clock source, measured with
 * bpf_stats_enabled; docs/performance.md), and page records do not need it for their order: the ring hands
 * them out in the order they were reserved. The owner's account needs no time either; the daemon only
 * dates a task it first meets through an allocation. So a page record takes the time only every
 * (MS_BPF_TIME_MASK + 1)th record per CPU and carries 0 otherwise; ebpf.c gives those the last time it saw
 * in ring order. (The coarse clock, a few ns, is not allowed in tracing programs.)
 */
static __always_inline __u64 page_time(const MsBpfStats *st) {
        if (st && (st->records & MS_BPF_TIME_MASK) != 0)
                return 0;
        return bpf_ktime_get_ns();
}

static __always_inline bool sample_this(__u32 order) {
        __u64 threshold;

        if (kernel_depth_bytes == 0)
                return false;
        if (order >= MS_BPF_ORDERS)
                order = MS_BPF_ORDERS - 1;
        /* Keeps clang from merging the clamp into the index: the verifier needs the bound it sees. */
        barrier_var(order);
        threshold = sample_threshold[order & (MS_BPF_ORDERS - 1)];
        if (threshold > 0xffffffffULL)
                return true;
        return bpf_get_prandom_u32() < threshold;
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
static __always_inline int stack_output(void *ctx, void *rec, __u8 *flags, __u8 *n_kernel, __u8 *n_user,
                __u64 *frames, __u64 size, MsBpfStats *st) {
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
        if (bpf_ringbuf_output(&events, rec, size, page_wakeup_flag(st)) < 0 && st)
                st->ring_full++;
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
        head_fill(&rec->head, MS_BPF_PAGE_ALLOC, pid_tgid, page_time(st));
        rec->pfn = key;
        rec->gfp_flags = gfp;
        rec->migrate_type = migrate_type;
        rec->order = (__u8) order;
        rec->n_kernel = 0;
        rec->n_user = 0;

        return stack_output(ctx, rec, &rec->flags, &rec->n_kernel, &rec->n_user, rec->frames, size, st);
}

static __always_inline int page_alloc_event(void *ctx, __u32 slot, struct page *page, __u32 order, __u64 gfp,
                __s32 migrate_type, MsBpfStats *st) {
        __u64 pid_tgid = current_pid_tgid();
        MsBpfPage *rec;

        /* A failed allocation: no page to account. */
        if (!page)
                return 0;
        if ((__u32) (pid_tgid >> 32) == self_tgid) {
                if (st)
                        st->self_dropped++;
                return 0;
        }
        if (sample_this(order))
                return page_alloc_sampled(ctx, slot, pid_tgid, page_key(page), order, gfp, migrate_type, st);

        rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
        if (!rec) {
                if (st)
                        st->ring_full++;
                return 0;
        }
        head_fill(&rec->head, MS_BPF_PAGE_ALLOC, pid_tgid, page_time(st));
        rec->pfn = page_key(page);
        rec->gfp_flags = gfp;
        rec->migrate_type = migrate_type;
        rec->order = (__u8) order;
        rec->flags = 0;
        rec->n_kernel = 0;
        rec->n_user = 0;
        bpf_ringbuf_submit(rec, page_wakeup_flag(st));
        return 0;
}

static __always_inline int page_free_event(struct page *page, __u32 order, MsBpfStats *st) {
        MsBpfFree *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

        if (!rec) {
                if (st)
                        st->ring_full++;
                return 0;
        }
        rec->type = MS_BPF_PAGE_FREE;
        rec->order = (__u8) order;
        __builtin_memset(rec->pad, 0, sizeof(rec->pad));
        rec->timestamp_nsec = page_time(st);
        rec->pfn = page_key(page);
        bpf_ringbuf_submit(rec, page_wakeup_flag(st));
        return 0;
}

/*
 * Each page event has two programs. The kernel does not run a tracing program again on a CPU where it is
 * still running: an interrupt that allocates or frees a page while page_alloc runs would be missed
 * (recursion_misses), and interrupts free pages often (RCU callbacks, network buffers). So
 * page_alloc_nested, attached to the same tracepoint after page_alloc (a tracepoint calls its programs in
 * the order they were attached, and the skeleton attaches them in the order this file defines them),
 * records exactly the events page_alloc did not, by what page_alloc notes first thing, per CPU:
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
static __always_inline bool frame_in_task(__u64 frame) {
        struct task_struct *t = bpf_get_current_task_btf();
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
static __always_inline void nest_enter(Busy *b, Nest *n, void *ctx, __u64 key) {
        __u64 frame;
        __u32 i;

        if (!nest_by_frame()) {
                n->flag = 1;
                return;
        }
        frame = frame_of(b, ctx);
        if (frame_in_task(frame)) {
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

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(page_alloc, struct page *page, unsigned int order, gfp_t gfp_flags, int migratetype) {
        Busy *b = busy_get();

        if (b)
                nest_enter(b, &b->alloc, ctx, page_key(page));
        page_alloc_event(ctx, 0, page, order, gfp_flags, migratetype, stats_get());
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
        return page_alloc_event(ctx, 1, page, order, gfp_flags, migratetype, st);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(page_free, struct page *page, unsigned int order) {
        Busy *b = busy_get();

        if (b)
                nest_enter(b, &b->free, ctx, page_key(page));
        page_free_event(page, order, stats_get());
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
        return page_free_event(page, order, st);
}

/*
 * Slab objects (--slab): one record per allocation and free, as for pages, through the same ring, with the
 * same counters. Stacks are sampled by objects, not bytes: each allocation with probability 1/interval
 * (the order-0 threshold, whatever its size), since an object's size says little about how often a stack
 * is worth taking. Failed allocations (NULL), kmalloc(0) (ZERO_SIZE_PTR) and kfree(NULL) are no objects.
 *
 * The tracepoints' prototypes changed over time (see the MS_BPF_SLAB_* layouts); ebpf.c reads which one
 * this kernel has from its BTF, and the verifier, knowing slab_layout, drops the branches for the others,
 * including their reads of arguments this kernel's tracepoint does not have. Nested events (an interrupt
 * that frees an object while a slab program runs on its CPU) are missed and counted (the kernel's
 * recursion_misses of these programs, "slabRecursionMiss" in ebpf.c); they have no twins as pages do.
 */
#define SLAB_ZERO_SIZE_PTR 16

static __always_inline void slab_object_fill(MsBpfObject *rec, __u64 pid_tgid, __u64 call_site, __u64 ptr,
                __u64 req, __u64 alloc, const struct kmem_cache *cache, MsBpfStats *st) {
        head_fill(&rec->head, MS_BPF_OBJECT_ALLOC, pid_tgid, page_time(st));
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
        return stack_output(ctx, rec, &rec->flags, &rec->n_kernel, &rec->n_user, rec->frames, size, st);
}

/* which: MS_BPF_SLAB_*, a constant in each program, so slab_layout[which] is known to the verifier. */
static __always_inline int slab_alloc_event(__u64 *ctx, __u32 which) {
        __u64 pid_tgid = current_pid_tgid();
        const struct kmem_cache *cache = NULL;
        __u64 call_site = ctx[0], ptr = ctx[1], req, alloc;
        MsBpfStats *st = stats_get();
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

        if (sample_this(0))
                return slab_alloc_sampled(ctx, MS_BPF_SLAB_SCRATCH + which, pid_tgid, call_site, ptr, req, alloc,
                                          cache, st);
        rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
        if (!rec) {
                if (st)
                        st->ring_full++;
                return 0;
        }
        slab_object_fill(rec, pid_tgid, call_site, ptr, req, alloc, cache, st);
        bpf_ringbuf_submit(rec, page_wakeup_flag(st));
        return 0;
}

static __always_inline int slab_free_event(__u64 *ctx) {
        MsBpfStats *st;
        MsBpfObjectFree *rec;
        __u64 ptr = ctx[1];

        if (ptr <= SLAB_ZERO_SIZE_PTR)
                return 0;
        st = stats_get();
        rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
        if (!rec) {
                if (st)
                        st->ring_full++;
                return 0;
        }
        rec->type = MS_BPF_OBJECT_FREE;
        rec->cpu = (__u16) bpf_get_smp_processor_id();
        rec->pad = 0;
        rec->timestamp_nsec = page_time(st);
        rec->ptr = ptr;
        rec->call_site = ctx[0];
        bpf_ringbuf_submit(rec, page_wakeup_flag(st));
        return 0;
}

SEC("tp_btf/kmalloc")
int slab_kmalloc(__u64 *ctx) {
        return slab_alloc_event(ctx, MS_BPF_SLAB_KMALLOC);
}

SEC("tp_btf/kmalloc_node")
int slab_kmalloc_node(__u64 *ctx) {
        return slab_alloc_event(ctx, MS_BPF_SLAB_KMALLOC_NODE);
}

SEC("tp_btf/kmem_cache_alloc")
int slab_cache_alloc(__u64 *ctx) {
        return slab_alloc_event(ctx, MS_BPF_SLAB_CACHE_ALLOC);
}

SEC("tp_btf/kmem_cache_alloc_node")
int slab_cache_alloc_node(__u64 *ctx) {
        return slab_alloc_event(ctx, MS_BPF_SLAB_CACHE_ALLOC_NODE);
}

SEC("tp_btf/kfree")
int slab_kfree(__u64 *ctx) {
        return slab_free_event(ctx);
}

SEC("tp_btf/kmem_cache_free")
int slab_cache_free(__u64 *ctx) {
        return slab_free_event(ctx);
}

/*
 * Sends a task record, or drops it when its task is outside memstrackd's PID namespace (pid 0 there):
 * such a task has no pid the daemon could name, and records for pid 0 would keep ending and re-creating
 * one task that stands for all of them (their pages are still charged to pid 0, as perf does).
 */
static __always_inline void task_submit(void *rec, __u32 pid) {
        if (pidns_translate && pid == 0)
                bpf_ringbuf_discard(rec, 0);
        else
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
        task_submit(rec, rec->pid);
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
        task_submit(rec, rec->head.pid);
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
        task_submit(rec, rec->head.pid);
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
        task_submit(rec, rec->pid);
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
