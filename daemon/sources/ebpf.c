/* SPDX-License-Identifier: MIT */

/*
 * The eBPF event source: the only module that knows libbpf. Its kernel half (bpf/memstrack.bpf.c, built
 * into the skeleton memstrack.skel.h) writes every page allocation and free as an entry in its CPU's batch,
 * and the batch into one ring buffer shared by all CPUs once it fills; task and module events, sampled
 * allocations and slab objects as records of their own. This half puts them in event order and turns them
 * into MsEvents.
 *
 * Why batches in one ring and not a record per event, per-CPU rings or in-kernel aggregation: exact counts
 * need every page event in user space anyway (an in-kernel pfn -> owner map cost more per event), and a
 * ring record per event spent most of the program's time on the ring (docs/performance.md has the
 * figures). Batches of different CPUs arrive out of order, so every event carries a number from one
 * counter for all CPUs, and seqorder.c delivers by number: the pfn ownership rules of the perf source hold
 * (a free takes its number before its page can be reused). A CPU that goes quiet would hold its partial
 * batch, and every later number, for good: the daemon asks the CPUs holding numbers it waits for to send
 * (the batch_flush program, run there by the kernel) 10 ms after it noticed, and before each query.
 *
 * Stacks are sampled in the kernel (a stack for about one page in stack_sample_interval, see the BPF
 * program); counts are exact. The stack tree's totals stay equal to the exact counts by sample-and-hold:
 * an allocation without a stack is charged to its thread's most recently sampled stack, and before a
 * thread's first sample to the single frame MS_FRAME_NOT_SAMPLED ("[not sampled]"). Sampling is
 * memoryless (each page independently), so the expected share of every stack is its true share. The
 * held stacks live in a table keyed by thread id, dropped when the thread exits.
 *
 * Page keys are struct page indexes, a constant away from the pfn (see page_key() in the BPF program):
 * the same ownership rules as the perf source's pfns, other numbers.
 *
 * With --slab (options.slab) also slab objects: one record per kmalloc, kmem_cache_alloc (and their *_node
 * twins before 6.1), kfree and kmem_cache_free, through the same ring, stacks sampled per object and held
 * per thread apart from its page stack. Without it the slab programs are not even loaded.
 *
 * Losses, each counted per reason: ring full (the program's per-CPU counters, emitted as MS_EVENT_LOST with
 * their CPU), numbers given up on that no other reason counts (sequenceGap), recursion misses (an event
 * nested in a running program of the same kind on that CPU, which its *_nested twin did not catch either
 * (page_alloc_nested and each slab program's twin wait for their main program's first miss, see
 * twin_update()): the kernel's per-program recursion_misses minus the twins'
 * records (misses_unrecorded()), emitted as MS_EVENT_LOST on CPU 0, those of the slab programs apart as
 * slabRecursionMiss), and stack failures (the allocation is counted, its stack held as if unsampled).
 *
 * The daemon's own allocations are dropped in the kernel, its frees kept (as perf does). Tasks alive at
 * start are seeded from /proc after the programs are attached (proc-seed.h).
 */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <systemd/sd-event.h>

#include "file-util.h"
#include "live.h"
#include "log.h"
#include "macro.h"
#include "memstrack-bpf.h"
#include "memstrack.skel.h"
#include "backshift.h"
#include "proc-seed.h"
#include "seqorder.h"
#include "source.h"
#include "tracefs.h"
#include "time-util.h"

/* Page entries of a batch whose pages the sink is asked to prefetch ahead of the one it is given: the core's
 * page table is tens of MiB at a million live pages, a cache miss per lookup that is most of its time per
 * event, and a few lookups in flight at once hide most of it (docs/performance.md). */
#define EBPF_PREFETCH_ENTRIES 8u
/* Records handled per dispatch before other event sources get their turn. */
#define EBPF_DRAIN_BUDGET 4096u
/* A kernel and a user stack of up to this many frames each (kernel.perf_event_max_stack's default). */
#define EBPF_DEPTH_MAX (MS_BPF_FRAMES_MAX - 1u)
/* Stack frames a bulk allocation's record takes at least, for its call site, when stacks are off. */
#define EBPF_BULK_FRAMES_MIN 8u
/* kmalloc(0)'s pointer (ZERO_SIZE_PTR) and NULL: no object. */
#define EBPF_ZERO_SIZE_PTR 16u
/* Returned by the ring callback to stop a drain that used its budget. */
#define EBPF_BUDGET_SPENT (-EAGAIN)
/* How long events may wait in a CPU's batch before the daemon asks for them (see order_timer_handler()). */
#define EBPF_ORDER_WAIT_USEC 10000u
/* Times the daemon asks every CPU for its batch before a query is answered, if some CPU was busy. */
#define EBPF_FLUSH_TRIES 4
/* Asking the CPUs interrupts each that holds a partial batch, so clients must not make the daemon do it at
 * their pace: at most EBPF_FLUSH_RATE rounds a second on average, bursts of EBPF_FLUSH_BURST; a flush beyond
 * that delivers what arrived. Far above what top, scripts and tests ask. */
#define EBPF_FLUSH_RATE 200u
#define EBPF_FLUSH_BURST 20u
/* Bytes of runs waiting for a number before the daemon gives up on it without waiting for the timer. */
#define EBPF_ORDER_WAITING_MAX (64u << 20)

/* Loss reasons, in the order Status lists them. */
enum {
        EBPF_LOSS_RING_FULL,
        EBPF_LOSS_RECURSION,
        EBPF_LOSS_STACK,
        EBPF_LOSS_SEQUENCE,             /* numbered events that never came (see order_timer_handler()) */
        EBPF_LOSS_SLAB_RECURSION,       /* slab events nested in a slab program (no twins catch those);
                                         * from here on listed with --slab only */
        EBPF_LOSS_SLAB_BULK_CUT,        /* objects of bulk calls too big to send (MS_BPF_BULK_CHUNKS) */
        _EBPF_LOSS_MAX,
};

/* The kernel functions hooked beside the tracepoints (Status kernelHooks), with --slab. */
enum {
        EBPF_HOOK_FREE_BULK,
        EBPF_HOOK_ALLOC_BULK,
        _EBPF_HOOK_MAX,
};

/* A thread's most recently sampled stack: what its unsampled allocations are charged to. Pages hold under
 * the thread id, slab objects apart under its negation (held_key()): an unsampled kmalloc is not charged
 * to a page stack. */
typedef struct HeldStack {
        int32_t tid;                    /* 0: an empty slot */
        uint32_t n_frames, n_kernel;
        uint64_t *frames;               /* owned, n_frames entries */
} HeldStack;

/* A program that records the events of one tracepoint, its nested twin there, and the twin's link. */
typedef struct TwinnedProgram {
        struct bpf_program *main, *twin;
        struct bpf_link **twin_link;
        const char *event;              /* the tracepoint */
        bool slab;                      /* its misses count as slabRecursionMiss, not recursionMiss */
} TwinnedProgram;

/* The page programs (EBPF_TWINNED_PAGE_*), then the slab ones from EBPF_TWINNED_SLAB in MS_BPF_SLAB_* order,
 * then kfree's and kmem_cache_free's. */
enum {
        EBPF_TWINNED_PAGE_ALLOC,
        EBPF_TWINNED_PAGE_FREE,
        EBPF_TWINNED_SLAB,
        EBPF_TWINNED = EBPF_TWINNED_SLAB + MS_BPF_SLAB_ALLOCS + 2,
};

typedef struct EbpfSource {
        LiveSource live;                /* first: the skeleton every live source shares (live.h) */
        SourceOptions options;          /* strings not kept */
        unsigned depth;                 /* kernel (and user) frames per stack, 0: none */
        unsigned user_at;               /* first user frame in a record */
        size_t ring_bytes, wakeup_bytes;
        uint64_t struct_page_size;      /* the kernel's sizeof(struct page), from its BTF */

        struct memstrack_bpf *skel;     /* owned */
        struct ring_buffer *ring;       /* owned */
        sd_event_source *io_source;     /* owned: the ring's wakeups */
        sd_event_source *order_timer;   /* owned: asks the CPUs for events that wait in their batches */
        SeqOrder *order;                /* owned: puts the CPUs' batches in event order */
        uint64_t order_noted;           /* event_seq when order_timer was armed */
        unsigned order_stuck;           /* timer rounds in a row that found numbers missing */
        uint64_t order_lost;            /* numbers skipped that no other count has */
        uint64_t flushes;               /* batch_flush runs asked for */
        double flush_tokens;            /* rounds of asking the CPUs left (see EBPF_FLUSH_RATE) */
        uint64_t flush_tokens_usec;     /* CLOCK_MONOTONIC when flush_tokens was last topped up */
        bool flush_failed;              /* batch_flush failed once: said so */

        /* Sample-and-hold: tid -> HeldStack, open addressing with linear probing, power-of-two size. */
        HeldStack *held;
        size_t n_held, held_size;

        /* Reused for every record, so the hot path allocates nothing. */
        MsEvent ev;
        uint64_t *frames;               /* owned, 2 * EBPF_DEPTH_MAX entries */
        char *cmdline;                  /* owned, PROC_CMDLINE_MAX bytes */
        uint64_t not_sampled_frame;
        uint64_t budget;                /* events left in this dispatch */
        const MsBpfBatch *batch;        /* the batch being delivered, borrowed */
        /* Prefetching the pages of the entries ahead (see prefetch_ahead()): the batch, its next entry not
         * yet prefetched, and how many entries are prefetched beyond the one being delivered. */
        const MsBpfBatch *prefetch_batch;
        const uint64_t *prefetch_at;
        unsigned prefetch_lead;

        /* Losses as last read from the kernel, to emit the differences. */
        int n_possible_cpus;
        MsBpfStats *cpu_stats;          /* owned, n_possible_cpus entries: the stats map's last values */
        uint64_t *lost_per_cpu;         /* owned, n_possible_cpus entries */
        uint64_t recursion_misses;      /* page events nobody recorded, as emitted */
        uint64_t page_misses_read;      /* the page programs' recursion_misses at the last poll */
        EventSourceLoss losses[_EBPF_LOSS_MAX];

        uint64_t records;               /* events delivered to the sink */
        uint64_t last_nsec;             /* the latest record time, in ring order (see event_reset()) */
        uint64_t lost_records;          /* ring full + recursion misses */
        uint64_t wakeups;
        uint64_t bad_records;
        uint64_t held_pages;            /* pages charged to a held stack */
        uint64_t unsampled_pages;       /* pages charged to "[not sampled]" */
        uint64_t nested_records;        /* events the nested twins recorded (bpf/memstrack.bpf.c) */
        uint64_t held_objects;          /* objects charged to a held stack */
        uint64_t unsampled_objects;     /* objects charged to "[not sampled]" */
        uint64_t slab_recursion_misses; /* slab events nobody recorded, as emitted */
        uint64_t slab_misses_read;      /* the slab programs' recursion_misses at the last poll */
        uint64_t slab_nested_records;   /* slab events the slab twins recorded */
        uint64_t bulk_cut_emitted;      /* objects of bulk calls not sent, as emitted */
        EventSourceHook hooks[_EBPF_HOOK_MAX];
        struct bpf_program *hook_programs[_EBPF_HOOK_MAX];     /* the one loaded for each hook, or NULL */
        struct bpf_link **hook_links[_EBPF_HOOK_MAX];
        bool alloc_twin_failed;         /* page_alloc_nested could not be attached: said so */
        bool slab_twin_failed;          /* a slab twin could not be attached: said so */
        TwinnedProgram twinned[EBPF_TWINNED];   /* see twinned_programs() */
        char cache[MS_BPF_CACHE_NAME_MAX + 1];  /* the current object's cache name */
} EbpfSource;

static EbpfSource *ebpf_source_from(EventSource *es) {
        return (EbpfSource *) es;
}

/* libbpf's messages (a verifier log is many lines): debug only, the caller logs what failed once. */
static int libbpf_log(enum libbpf_print_level level, const char *format, va_list ap) _printf_(2, 0);
static int libbpf_log(enum libbpf_print_level level, const char *format, va_list ap) {
        _cleanup_free_ char *text = NULL;
        char *line, *save = NULL;

        if (log_get_max_level() < LOG_DEBUG || vasprintf(&text, format, ap) < 0)
                return 0;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                log_debug("libbpf: %s", line);
        return 0;
}

/* Thread ids are dense and sequential: a multiplicative hash spreads them. */
static size_t held_home(const EbpfSource *s, int32_t tid) {
        return (size_t) (((uint32_t) tid * UINT32_C(2654435761)) & (s->held_size - 1));
}

static HeldStack *held_find(EbpfSource *s, int32_t tid) {
        if (s->held_size == 0)
                return NULL;
        for (size_t i = held_home(s, tid);; i = (i + 1) & (s->held_size - 1)) {
                if (s->held[i].tid == tid)
                        return &s->held[i];
                if (s->held[i].tid == 0)
                        return NULL;
        }
}

static int held_grow(EbpfSource *s) {
        size_t size = s->held_size ? s->held_size * 2 : 256;
        HeldStack *old = s->held, *t = calloc(size, sizeof(*t));
        size_t old_size = s->held_size;

        if (!t)
                return -ENOMEM;
        s->held = t;
        s->held_size = size;
        for (size_t i = 0; i < old_size; i++) {
                size_t j;

                if (old[i].tid == 0)
                        continue;
                for (j = held_home(s, old[i].tid); t[j].tid != 0; j = (j + 1) & (size - 1))
                        ;
                t[j] = old[i];
        }
        free(old);
        return 0;
}

/* The held table's key of thread tid's page stack, or its object stack. */
static int32_t held_key(int32_t tid, bool object) {
        return object ? -tid : tid;
}

/* Remembers stack st for key (held_key()). Out of memory, the thread keeps its older stack. */
static void held_store(EbpfSource *s, int32_t tid, const MsStack *st) {
        HeldStack *h;

        if (tid == 0)   /* the idle task: allocations in interrupts, no thread to hold for */
                return;
        h = held_find(s, tid);
        if (!h) {
                size_t i;

                if ((s->n_held + 1) * 4 > s->held_size * 3 && held_grow(s) < 0)
                        return;
                for (i = held_home(s, tid); s->held[i].tid != 0; i = (i + 1) & (s->held_size - 1))
                        ;
                h = &s->held[i];
                h->frames = malloc(2 * EBPF_DEPTH_MAX * sizeof(uint64_t));
                if (!h->frames)
                        return;
                h->tid = tid;
                s->n_held++;
        }
        memcpy(h->frames, st->frames, st->n_frames * sizeof(uint64_t));
        h->n_frames = st->n_frames;
        h->n_kernel = st->n_kernel_frames;
}

static size_t held_home_fn(const void *table, size_t i) {
        const EbpfSource *s = table;

        return s->held[i].tid == 0 ? BACKSHIFT_EMPTY : held_home(s, s->held[i].tid);
}

static void held_move_fn(void *table, size_t to, size_t from) {
        EbpfSource *s = table;

        s->held[to] = s->held[from];
}

static void held_clear_fn(void *table, size_t i) {
        EbpfSource *s = table;

        s->held[i] = (HeldStack) {};
}

static void held_forget_key(EbpfSource *s, int32_t key) {
        HeldStack *h = held_find(s, key);

        if (!h)
                return;
        free(h->frames);
        s->n_held--;
        backshift_delete(s, s->held_size, (size_t) (h - s->held), held_home_fn, held_move_fn, held_clear_fn);
}

/* Drops the stacks thread tid holds, its page and its object stack. */
static void held_forget(EbpfSource *s, int32_t tid) {
        held_forget_key(s, held_key(tid, false));
        held_forget_key(s, held_key(tid, true));
}

static void emit(EbpfSource *s) {
        s->records++;
        s->live.sink.event(s->live.sink.userdata, &s->ev);
}

/* Slab records mostly carry no time (slab_time() in bpf/memstrack.bpf.c) and a batch's entries only their
 * batch's: each gets the latest time seen before it, so times never go back along the stream the core
 * sees. */
static void event_reset(EbpfSource *s, MsEventType type, const MsBpfHead *h) {
        s->last_nsec = MAX(s->last_nsec, h->timestamp_nsec);
        s->ev = (MsEvent) {
                .type = type,
                .cpu = h->cpu,
                .pid = (int32_t) h->pid,
                .tid = (int32_t) h->tid,
                .timestamp_nsec = s->last_nsec,
                .cgroup_id = h->cgroup_id,
        };
}

/*
 * The page's key from its struct page's address (what the BPF program records): the struct page's index in
 * the address space, cut to MS_PAGE_KEY_BITS (the core's limit). With the page array linear in memory (vmemmap,
 * flatmem, and within a sparsemem section, which a buddy block never crosses) the index is the pfn plus a
 * constant, so the pages of a block have consecutive keys and each page one key for good, which is all
 * the pfn ownership rules need, without reading a kernel variable (vmemmap_base) for the constant. The cut
 * keeps keys unique (no array holds 2^40 struct pages) and blocks contiguous: the array starts at a
 * multiple of 1 GiB at least, so a block (order <= 20) never straddles a multiple of 2^40 keys.
 */
static uint64_t page_key(const EbpfSource *s, uint64_t address) {
        return (address / s->struct_page_size) & ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1);
}

/*
 * The stack of an allocation record (a page's or an object's): its own frames when sampled, held for its
 * thread (under key); else the thread's held stack, or "[not sampled]". *ret_held says which of the two
 * an unsampled one got. -EBADMSG when the frames run past the record.
 */
static int record_stack(EbpfSource *s, int32_t key, uint8_t flags, uint8_t n_kernel_rec, uint8_t n_user_rec,
                const __u64 *frames, size_t frames_bytes, MsStack *ret, bool *ret_held) {
        *ret_held = false;
        if (flags & MS_BPF_STACK) {
                size_t n_kernel = MIN((size_t) n_kernel_rec, (size_t) s->depth);
                size_t n_user = MIN((size_t) n_user_rec, (size_t) s->depth);
                size_t user_at = s->options.user_stacks ? s->user_at : n_kernel;

                if (frames_bytes < (user_at + n_user) * sizeof(uint64_t))
                        return -EBADMSG;
                memcpy(s->frames, frames, n_kernel * sizeof(uint64_t));
                memcpy(s->frames + n_kernel, frames + user_at, n_user * sizeof(uint64_t));
                *ret = (MsStack) {
                        .frames = s->frames,
                        .n_frames = (uint32_t) (n_kernel + n_user),
                        .n_kernel_frames = (uint32_t) n_kernel,
                };
                if (key != 0)
                        held_store(s, key, ret);
                return 0;
        }

        const HeldStack *h = key != 0 ? held_find(s, key) : NULL;
        if (h) {
                *ret = (MsStack) { .frames = h->frames, .n_frames = h->n_frames, .n_kernel_frames = h->n_kernel };
                *ret_held = true;
        } else
                *ret = (MsStack) { .frames = &s->not_sampled_frame, .n_frames = 1, .n_kernel_frames = 1 };
        return 0;
}

/* An allocation's stack when its record has none: counted by which one it got. */
static void count_unsampled(EbpfSource *s, unsigned order, bool held) {
        if (held)
                s->held_pages += UINT64_C(1) << order;
        else
                s->unsampled_pages += UINT64_C(1) << order;
}

static void handle_page(EbpfSource *s, const MsBpfPage *p, size_t size) {
        bool held;

        event_reset(s, MS_EVENT_PAGE_ALLOC, &p->head);
        s->ev.page.pfn = page_key(s, p->pfn);
        s->ev.page.order = p->order;
        s->ev.page.migrate_type = p->migrate_type;
        s->ev.page.gfp_flags = p->gfp_flags;
        if (s->depth == 0) {
                emit(s);
                return;
        }
        if (record_stack(s, held_key(s->ev.tid, false), p->flags, p->n_kernel, p->n_user, p->frames,
                         size - sizeof(*p), &s->ev.page.stack, &held) < 0) {
                s->bad_records++;
                return;
        }
        if (!(p->flags & MS_BPF_STACK))
                count_unsampled(s, p->order, held);
        emit(s);
}

/* Words of a batch entry by its kind, 0 for none. */
static size_t entry_words(uint64_t head) {
        switch (head & MS_BPF_ENTRY_KIND_MASK) {
        case MS_BPF_ENTRY_FREE:
                return MS_BPF_ENTRY_FREE_WORDS;
        case MS_BPF_ENTRY_ALLOC:
                return MS_BPF_ENTRY_ALLOC_WORDS;
        default:
                return 0;
        }
}

/*
 * Asks the sink to prefetch the pages of the next EBPF_PREFETCH_ENTRIES entries of b after w (ending at end).
 * Entries of one batch usually come one after the other; when another CPU's batch comes between, the
 * cursor starts again from w (a few prefetches twice, no harm: a hint changes nothing).
 */
static void prefetch_ahead(EbpfSource *s, const MsBpfBatch *b, const uint64_t *w, const uint64_t *end) {
        if (!s->live.sink.prefetch_page)
                return;
        if (s->prefetch_batch != b || s->prefetch_at <= w || s->prefetch_at > end) {
                s->prefetch_batch = b;
                s->prefetch_at = w;
                s->prefetch_lead = 0;
        } else if (s->prefetch_lead > 0)
                s->prefetch_lead--;     /* w was prefetched: one less ahead */
        if (s->prefetch_at == w)
                s->prefetch_at += MAX(entry_words(w[0]), (size_t) 1);
        while (s->prefetch_lead < EBPF_PREFETCH_ENTRIES && s->prefetch_at < end) {
                size_t n = entry_words(s->prefetch_at[0]);

                if (n == 0 || n > (size_t) (end - s->prefetch_at)) {
                        s->prefetch_at = end;
                        break;
                }
                s->live.sink.prefetch_page(s->live.sink.userdata, page_key(s, s->prefetch_at[1]));
                s->prefetch_at += n;
                s->prefetch_lead++;
        }
}

/*
 * A batch's entry: a free (no task, cpu or cgroup: the page goes back to its owner's account whoever frees
 * it) or an unsampled allocation (its thread's held stack, as handle_page() gives one).
 */
static void handle_batch_entry(EbpfSource *s, const MsBpfBatch *b, const uint64_t *w) {
        unsigned order = (unsigned) ((w[0] >> MS_BPF_ENTRY_ORDER_SHIFT) & MS_BPF_ENTRY_ORDER_MASK);
        bool held;

        s->last_nsec = MAX(s->last_nsec, b->timestamp_nsec);
        if ((w[0] & MS_BPF_ENTRY_KIND_MASK) == MS_BPF_ENTRY_FREE) {
                s->ev = (MsEvent) {
                        .type = MS_EVENT_PAGE_FREE,
                        .timestamp_nsec = s->last_nsec,
                };
                s->ev.page.pfn = page_key(s, w[1]);
                s->ev.page.order = order;
                emit(s);
                return;
        }
        s->ev = (MsEvent) {
                .type = MS_EVENT_PAGE_ALLOC,
                .cpu = b->cpu,
                .pid = (int32_t) (w[2] >> 32),
                .tid = (int32_t) (uint32_t) w[2],
                .timestamp_nsec = s->last_nsec,
                .cgroup_id = w[3],
        };
        s->ev.page.pfn = page_key(s, w[1]);
        s->ev.page.order = order;
        s->ev.page.gfp_flags = w[4] >> 32;
        s->ev.page.migrate_type = (int32_t) (uint32_t) w[4];
        if (s->depth > 0) {
                (void) record_stack(s, held_key(s->ev.tid, false), 0, 0, 0, NULL, 0, &s->ev.page.stack, &held);
                count_unsampled(s, order, held);
        }
        emit(s);
}

/* A slab object: sampled and held like pages, by objects (see the BPF program). */
static void handle_object(EbpfSource *s, const MsBpfObject *o, size_t size) {
        bool held;

        event_reset(s, MS_EVENT_OBJECT_ALLOC, &o->head);
        memcpy(s->cache, o->cache, MS_BPF_CACHE_NAME_MAX);
        s->cache[MS_BPF_CACHE_NAME_MAX] = '\0';
        s->ev.object = (MsObjectEvent) {
                .ptr = o->ptr,
                .call_site = o->call_site,
                .bytes_requested = o->bytes_requested,
                .bytes_allocated = o->bytes_allocated,
                .cache = s->cache[0] ? s->cache : NULL,
        };
        if (s->depth > 0) {
                if (record_stack(s, held_key(s->ev.tid, true), o->flags, o->n_kernel, o->n_user, o->frames,
                                 size - sizeof(*o), &s->ev.object.stack, &held) < 0) {
                        s->bad_records++;
                        return;
                }
                if (!(o->flags & MS_BPF_STACK)) {
                        if (held)
                                s->held_objects++;
                        else
                                s->unsampled_objects++;
                }
        }
        emit(s);
}

static void handle_object_free(EbpfSource *s, const MsBpfObjectFree *f) {
        s->last_nsec = MAX(s->last_nsec, f->timestamp_nsec);
        s->ev = (MsEvent) {
                .type = MS_EVENT_OBJECT_FREE,
                .cpu = f->cpu,
                .timestamp_nsec = s->last_nsec,
        };
        s->ev.object.ptr = f->ptr;
        s->ev.object.call_site = f->call_site;
        emit(s);
}

/*
 * The objects of a bulk call, one event each (see MsBpfObjectBulk). An allocation's call site is left 0:
 * the hook sees only its own function, and the core takes the stack's first frame past the tracer's
 * (ebpf_tracer_frames names the hooks' frames), so the record's stack goes along even when no stacks are
 * kept otherwise. ring_record() checked that the pointers fit the record.
 */
static void handle_object_bulk(EbpfSource *s, const MsBpfObjectBulk *b) {
        bool alloc = b->head.type == MS_BPF_OBJECT_ALLOC_BULK;
        const __u64 *ptrs = b->words + b->frames_at;
        MsStack stack = {};

        if (alloc) {
                memcpy(s->cache, b->cache, MS_BPF_CACHE_NAME_MAX);
                s->cache[MS_BPF_CACHE_NAME_MAX] = '\0';
                if (b->flags & MS_BPF_STACK) {
                        uint32_t n = MIN((uint32_t) b->n_kernel, b->frames_at);
                        stack = (MsStack) { .frames = (const uint64_t *) b->words, .n_frames = n, .n_kernel_frames = n };
                }
        }
        for (uint32_t i = 0; i < b->head.aux; i++) {
                if (ptrs[i] <= EBPF_ZERO_SIZE_PTR)
                        continue;
                event_reset(s, alloc ? MS_EVENT_OBJECT_ALLOC : MS_EVENT_OBJECT_FREE, &b->head);
                s->ev.object = (MsObjectEvent) { .ptr = ptrs[i] };
                if (alloc) {
                        s->ev.object.bytes_requested = b->bytes_requested;
                        s->ev.object.bytes_allocated = b->bytes_allocated;
                        s->ev.object.cache = s->cache[0] ? s->cache : NULL;
                        s->ev.object.stack = stack;
                }
                emit(s);
        }
}

/*
 * A thread that is not its process's leader and execs takes the leader's id: its own id ends without an
 * exit record (the kernel traces the exits of the other threads, not this one's old id). The exec record
 * names the old id (aux; 0 when unknown, in a PID namespace): its thread exits here, so its held stack
 * and the core's thread record do not outlive it.
 */
static void handle_exec_old_thread(EbpfSource *s, const MsBpfTask *t) {
        if (t->head.aux == 0 || t->head.aux == t->head.tid || t->head.pid == 0)
                return;
        event_reset(s, MS_EVENT_TASK_EXIT, &t->head);
        s->ev.tid = (int32_t) t->head.aux;
        held_forget(s, s->ev.tid);
        emit(s);
}

static void handle_task(EbpfSource *s, const MsBpfTask *t) {
        char comm[MS_BPF_COMM_MAX + 1];

        if (t->head.type == MS_BPF_TASK_EXEC)
                handle_exec_old_thread(s, t);

        memcpy(comm, t->comm, MS_BPF_COMM_MAX);
        comm[MS_BPF_COMM_MAX] = '\0';
        event_reset(s, MS_EVENT_TASK_COMM, &t->head);
        s->ev.task.name = comm;
        if (t->head.type == MS_BPF_TASK_EXEC)
                s->ev.task.cmdline = proc_read_cmdline(PROC_ROOT_DEFAULT, s->ev.pid, s->cmdline,
                                                      PROC_CMDLINE_MAX);
        emit(s);
}

static void handle_module(EbpfSource *s, const MsBpfModule *m) {
        char name[MS_BPF_MODULE_NAME_MAX + 1];

        memcpy(name, m->name, MS_BPF_MODULE_NAME_MAX);
        name[MS_BPF_MODULE_NAME_MAX] = '\0';
        event_reset(s, m->head.type == MS_BPF_MODULE_LOAD ? MS_EVENT_MODULE_LOAD : MS_EVENT_MODULE_FREE,
                    &m->head);
        s->ev.module.name = name;
        emit(s);
}

/* A record other than a batch, in event order. */
static void deliver_record(EbpfSource *s, const void *data, size_t size) {
        const MsBpfHead *h = data;

        /* ring_record() checked the size for the type. */
        switch (h->type) {
        case MS_BPF_PAGE_ALLOC:
                handle_page(s, data, size);
                break;
        case MS_BPF_OBJECT_ALLOC:
                handle_object(s, data, size);
                break;
        case MS_BPF_OBJECT_FREE:
                handle_object_free(s, data);
                break;
        case MS_BPF_OBJECT_ALLOC_BULK:
        case MS_BPF_OBJECT_FREE_BULK:
                handle_object_bulk(s, data);
                break;
        case MS_BPF_TASK_FORK:
                event_reset(s, MS_EVENT_TASK_FORK, h);
                s->ev.task.parent_pid = (int32_t) h->aux;
                emit(s);
                break;
        case MS_BPF_TASK_COMM:
        case MS_BPF_TASK_EXEC:
                handle_task(s, data);
                break;
        case MS_BPF_TASK_EXIT:
                event_reset(s, MS_EVENT_TASK_EXIT, h);
                held_forget(s, s->ev.tid);
                emit(s);
                break;
        case MS_BPF_MODULE_LOAD:
        case MS_BPF_MODULE_FREE:
                handle_module(s, data);
                break;
        default:
                s->bad_records++;
        }
}

/* SeqOrderOps: a batch's entries, or a whole record (its number in its head). */
static bool order_entry(void *userdata, const uint8_t *run, size_t size, size_t offset, uint64_t *ret_seq,
                size_t *ret_length) {
        const MsBpfHead *h = (const MsBpfHead *) run;
        uint64_t head;
        size_t words;

        if (h->type != MS_BPF_PAGE_BATCH) {
                *ret_seq = h->seq;
                *ret_length = size - offset;
                return true;
        }
        if (size - offset < sizeof(uint64_t))
                return false;
        memcpy(&head, run + offset, sizeof(head));
        words = entry_words(head);
        if (words == 0 || size - offset < words * sizeof(uint64_t))
                return false;
        *ret_seq = head >> MS_BPF_ENTRY_SEQ_SHIFT;
        *ret_length = words * sizeof(uint64_t);
        return true;
}

static void order_deliver(void *userdata, const uint8_t *run, size_t size, size_t offset, size_t length) {
        EbpfSource *s = userdata;
        const MsBpfHead *h = (const MsBpfHead *) run;

        if (h->type == MS_BPF_PAGE_BATCH) {
                const uint64_t *w = (const uint64_t *) (const void *) (run + offset);

                prefetch_ahead(s, (const MsBpfBatch *) run, w, (const uint64_t *) (const void *) (run + size));
                handle_batch_entry(s, (const MsBpfBatch *) run, w);
        }
        else
                deliver_record(s, run, size);
        if (s->budget > 0)
                s->budget--;
}

static const SeqOrderOps order_ops = {
        .entry = order_entry,
        .deliver = order_deliver,
};

/* The size a record must have at least, by type; 0 for an unknown type. */
static size_t record_min_size(uint16_t type) {
        switch (type) {
        case MS_BPF_PAGE_ALLOC:
                return sizeof(MsBpfPage);
        case MS_BPF_PAGE_BATCH:
                return sizeof(MsBpfBatch);
        case MS_BPF_OBJECT_ALLOC:
                return sizeof(MsBpfObject);
        case MS_BPF_OBJECT_FREE:
                return sizeof(MsBpfObjectFree);
        case MS_BPF_OBJECT_ALLOC_BULK:
        case MS_BPF_OBJECT_FREE_BULK:
                return sizeof(MsBpfObjectBulk);
        case MS_BPF_TASK_COMM:
        case MS_BPF_TASK_EXEC:
                return sizeof(MsBpfTask);
        case MS_BPF_MODULE_LOAD:
        case MS_BPF_MODULE_FREE:
                return sizeof(MsBpfModule);
        case MS_BPF_TASK_FORK:
        case MS_BPF_TASK_EXIT:
                return sizeof(MsBpfHead);
        default:
                return 0;
        }
}

/* One ring record: into event order, which delivers what is next. */
static int ring_record(void *userdata, void *data, size_t size) {
        EbpfSource *s = userdata;
        const MsBpfBatch *b = data;
        size_t min;
        int r;

        if (size < sizeof(uint16_t)) {
                s->bad_records++;
                return 0;
        }
        min = record_min_size(b->type);
        if (min == 0 || size < min) {
                s->bad_records++;
                return 0;
        }
        if (b->type == MS_BPF_OBJECT_ALLOC_BULK || b->type == MS_BPF_OBJECT_FREE_BULK) {
                const MsBpfObjectBulk *bulk = data;

                if ((uint64_t) bulk->frames_at + bulk->head.aux > (size - sizeof(*bulk)) / sizeof(uint64_t)) {
                        s->bad_records++;
                        return 0;
                }
        }
        if (b->type == MS_BPF_PAGE_BATCH) {
                if (b->n_words > (size - sizeof(*b)) / sizeof(uint64_t)) {
                        s->bad_records++;
                        return 0;
                }
                size = sizeof(*b) + b->n_words * sizeof(uint64_t);
                r = seq_order_add(s->order, data, size, sizeof(*b));
        } else
                r = seq_order_add(s->order, data, size, 0);
        if (r < 0)
                log_debug_errno(r, "Out of memory for events out of order, dropping a record: %m");
        if (s->budget == 0)
                return EBPF_BUDGET_SPENT;
        return 0;
}

/* Counts n records lost for reason, on cpu, and tells the sink. */
static void emit_lost(EbpfSource *s, unsigned reason, uint32_t cpu, uint64_t n) {
        s->losses[reason].count = count_add(s->losses[reason].count, n);
        s->lost_per_cpu[cpu] = count_add(s->lost_per_cpu[cpu], n);
        s->ev = (MsEvent) {
                .type = MS_EVENT_LOST,
                .cpu = cpu,
                .lost.n_lost = n,
        };
        s->lost_records = count_add(s->lost_records, n);
        emit(s);
}

/* Emits what a cumulative count of losses the kernel does not place on a CPU (charged to CPU 0) grew by
 * since *emitted, what was emitted of it so far. */
static void emit_lost_growth(EbpfSource *s, unsigned reason, uint64_t total, uint64_t *emitted) {
        if (total <= *emitted)
                return;
        emit_lost(s, reason, 0, total - *emitted);
        *emitted = total;
}

/* Fills s->twinned, once the skeleton is open. */
static void twinned_programs(EbpfSource *s) {
        struct memstrack_bpf *k = s->skel;
        TwinnedProgram *t = s->twinned, *slab = t + EBPF_TWINNED_SLAB;

        t[EBPF_TWINNED_PAGE_ALLOC] = (TwinnedProgram) { k->progs.page_alloc, k->progs.page_alloc_nested,
                                                        &k->links.page_alloc_nested, "mm_page_alloc", false };
        t[EBPF_TWINNED_PAGE_FREE] = (TwinnedProgram) { k->progs.page_free, k->progs.page_free_nested,
                                                       &k->links.page_free_nested, "mm_page_free", false };
        slab[MS_BPF_SLAB_KMALLOC] = (TwinnedProgram) { k->progs.slab_kmalloc, k->progs.slab_kmalloc_nested,
                                                       &k->links.slab_kmalloc_nested, "kmalloc", true };
        slab[MS_BPF_SLAB_KMALLOC_NODE] = (TwinnedProgram) { k->progs.slab_kmalloc_node,
                                                            k->progs.slab_kmalloc_node_nested,
                                                            &k->links.slab_kmalloc_node_nested, "kmalloc_node",
                                                            true };
        slab[MS_BPF_SLAB_CACHE_ALLOC] = (TwinnedProgram) { k->progs.slab_cache_alloc,
                                                           k->progs.slab_cache_alloc_nested,
                                                           &k->links.slab_cache_alloc_nested, "kmem_cache_alloc",
                                                           true };
        slab[MS_BPF_SLAB_CACHE_ALLOC_NODE] = (TwinnedProgram) { k->progs.slab_cache_alloc_node,
                                                                k->progs.slab_cache_alloc_node_nested,
                                                                &k->links.slab_cache_alloc_node_nested,
                                                                "kmem_cache_alloc_node", true };
        slab[MS_BPF_SLAB_NEST_KFREE] = (TwinnedProgram) { k->progs.slab_kfree, k->progs.slab_kfree_nested,
                                                          &k->links.slab_kfree_nested, "kfree", true };
        slab[MS_BPF_SLAB_NEST_CACHE_FREE] = (TwinnedProgram) { k->progs.slab_cache_free,
                                                               k->progs.slab_cache_free_nested,
                                                               &k->links.slab_cache_free_nested,
                                                               "kmem_cache_free", true };
}

/*
 * A twin costs every event of its tracepoint a second program, about 0.07 us per page (docs/performance.md).
 * Frees nest under any load (pages and objects freed by RCU callbacks in a softirq that interrupted the
 * program), so the page free twin is attached from the start; allocations nest on few machines (network
 * buffers refilled in a softirq; never in any test or bench run here), and slab events cost too much per
 * object for a twin nobody needs. So unless told otherwise (--nested-allocations=always) every other twin
 * is attached at its main program's first recursion miss: the misses until this poll are counted as
 * recursionMiss (slabRecursionMiss), the nested events after it are caught. main_misses: the main
 * program's recursion_misses, read now.
 */
static void twin_update(EbpfSource *s, const TwinnedProgram *p, uint64_t main_misses) {
        bool *failed = p->slab ? &s->slab_twin_failed : &s->alloc_twin_failed;
        const char *reason = p->slab ? "slabRecursionMiss" : "recursionMiss";

        if (main_misses == 0 || *p->twin_link || *failed || !bpf_program__autoload(p->twin))
                return;
        *p->twin_link = bpf_program__attach(p->twin);
        if (!*p->twin_link) {
                *failed = true;
                log_warning_errno(negative_errno(), "Failed to attach the program for kmem:%s events nested in "
                                  "interrupts; they stay missed, counted as %s: %m", p->event, reason);
                return;
        }
        log_info("%" PRIu64 " kmem:%s events made by an interrupt while their program ran were missed (counted "
                 "as %s); recording such events from now on.", main_misses, p->event, reason);
}

/*
 * The page events nobody recorded, of page_misses (the main programs' recursion_misses, read now) and
 * nested (the twins' records, read just before). The kernel counts a miss a moment before the twin
 * records the event, so one read of both can see a miss whose record is still on its way, and a loss
 * once emitted stays: the misses read at the previous poll (*misses_before) are compared with the records
 * read now. That never counts a recorded event as lost; a true loss shows at the first poll after which
 * no twin recorded more than the new misses (nested events come in rare bursts).
 */
static uint64_t misses_unrecorded(uint64_t *misses_before, uint64_t page_misses, uint64_t nested) {
        uint64_t before = *misses_before;

        *misses_before = page_misses;
        return before > nested ? before - nested : 0;
}

/* Reads the kernel's loss counters and emits what grew since the last read. A few syscalls per drain. */
static void poll_losses(EbpfSource *s) {
        _cleanup_free_ MsBpfStats *now = NULL;
        uint64_t misses = 0, slab_misses = 0, stack_failed = 0, nested = 0, slab_nested = 0, numbered_lost = 0,
                 bulk_cut = 0;
        SeqOrderStats order;
        uint32_t zero = 0;

        /* Every count is cumulative: without this read, the next poll does it all. Going on would take
         * the twins' records and the ring's refusals as 0 and report losses that stay. */
        now = calloc(s->n_possible_cpus, sizeof(*now));
        if (!now || bpf_map__lookup_elem(s->skel->maps.stats, &zero, sizeof(zero), now,
                                         s->n_possible_cpus * sizeof(*now), 0) != 0)
                return;
        for (int c = 0; c < s->n_possible_cpus; c++) {
                uint64_t d = now[c].ring_full - s->cpu_stats[c].ring_full;

                if (d > 0)
                        emit_lost(s, EBPF_LOSS_RING_FULL, (uint32_t) c, d);
                stack_failed += now[c].stack_failed;
                nested += now[c].nested;
                slab_nested += now[c].slab_nested;
                numbered_lost += now[c].numbered_lost;
                bulk_cut += now[c].bulk_cut;
                s->cpu_stats[c] = now[c];
        }
        s->losses[EBPF_LOSS_STACK].count = stack_failed;

        /* Numbers given up on and not come since, but for records the ring refused (counted as ringFull). */
        seq_order_get_stats(s->order, &order);
        emit_lost_growth(s, EBPF_LOSS_SEQUENCE, order.skipped - MIN(order.skipped, order.late + numbered_lost),
                         &s->order_lost);

        /* The nested programs' own misses are events their twin recorded; the twins' misses minus what
         * the nested programs recorded for them are the events nobody recorded. Only the twinned programs
         * are asked (a syscall each, every drain): a program misses only when it runs nested in itself on
         * a CPU, and the others (tasks, modules, cgroups) run in process context only. */
        for (size_t i = 0; i < EBPF_TWINNED; i++) {
                const TwinnedProgram *p = &s->twinned[i];
                struct bpf_prog_info info = {};
                uint32_t len = sizeof(info);
                int fd = bpf_program__fd(p->main);

                if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
                        continue;
                if (p->slab)
                        slab_misses += info.recursion_misses;
                else
                        misses += info.recursion_misses;
                twin_update(s, p, info.recursion_misses);
        }
        /* The hooks have no twins: what they miss stays missed. */
        for (size_t i = 0; i < _EBPF_HOOK_MAX; i++) {
                struct bpf_prog_info info = {};
                uint32_t len = sizeof(info);
                int fd = s->hooks[i].attached ? bpf_program__fd(s->hook_programs[i]) : -1;

                if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
                        slab_misses += info.recursion_misses;
        }
        if (s->options.slab)
                emit_lost_growth(s, EBPF_LOSS_SLAB_BULK_CUT, bulk_cut, &s->bulk_cut_emitted);
        /* The kernel does not say on which CPU a program missed. */
        s->slab_nested_records = slab_nested;
        emit_lost_growth(s, EBPF_LOSS_SLAB_RECURSION,
                         misses_unrecorded(&s->slab_misses_read, slab_misses, slab_nested), &s->slab_recursion_misses);
        s->nested_records = nested;
        emit_lost_growth(s, EBPF_LOSS_RECURSION, misses_unrecorded(&s->page_misses_read, misses, nested),
                         &s->recursion_misses);
}

/* Delivers up to budget records; returns true if more may remain. */
static bool source_drain(EbpfSource *s, uint64_t budget) {
        int r;

        SeqOrderStats order;
        uint64_t first;

        s->budget = budget;
        r = ring_buffer__consume(s->ring);
        if (r < 0 && r != EBPF_BUDGET_SPENT)
                log_debug_errno(r, "Failed to read the eBPF ring buffer, retrying at the next wakeup: %m");
        /* Memory is the limit on waiting, before the timer's: give up on the first missing number. */
        seq_order_get_stats(s->order, &order);
        if (order.waiting_bytes > EBPF_ORDER_WAITING_MAX && seq_order_first_waiting(s->order, &first))
                (void) seq_order_skip(s->order, first);
        poll_losses(s);
        return r == EBPF_BUDGET_SPENT;
}

/* The number the next event will take: those below it and above the order's next have not come yet. */
static uint64_t events_numbered(const EbpfSource *s) {
        return __atomic_load_n(&s->skel->bss->event_seq, __ATOMIC_ACQUIRE);
}

/*
 * Asks the CPUs whose batch holds a number below upto to send it (batch_flush, run there by the kernel
 * through an interrupt). Returns how many were busy (a page program was writing their batch: ask again),
 * or a negative errno. An offline CPU cannot be asked: what its batch held is skipped in time.
 */
static int flush_cpus(EbpfSource *s, uint64_t upto) {
        _cleanup_free_ MsBpfBatchState *state = NULL;
        size_t stride = (bpf_map__value_size(s->skel->maps.batch_state) + 7) & ~(size_t) 7;
        int fd = bpf_program__fd(s->skel->progs.batch_flush), busy = 0;
        uint32_t zero = 0;

        state = calloc(s->n_possible_cpus, stride);
        if (!state)
                return -ENOMEM;
        if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.batch_state), &zero, state) < 0)
                return negative_errno();
        for (int c = 0; c < s->n_possible_cpus; c++) {
                const MsBpfBatchState *st = (const MsBpfBatchState *) ((const uint8_t *) state + c * stride);
                LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = (uint32_t) c);

                /* A program in a write may have taken a number below upto and not yet counted its entry
                 * in used: it set depth before it took the number (the number's atomic add orders the two),
                 * so such a CPU is asked too (and says busy). */
                if (st->depth == 0 && (st->used == 0 || st->first_seq >= upto))
                        continue;
                s->flushes++;
                if (bpf_prog_test_run_opts(fd, &opts) < 0) {
                        /* Offline: nothing runs there. Anything else: count it busy, so that what it
                         * holds is waited for, not given up on. */
                        if (errno == ENXIO)
                                continue;
                        if (!s->flush_failed)
                                log_warning_errno(errno, "Failed to ask CPU %d for its page events, waiting "
                                                  "for them: %m", c);
                        s->flush_failed = true;
                        busy++;
                        continue;
                }
                if (opts.retval == MS_BPF_FLUSH_BUSY)
                        busy++;
        }
        return busy;
}

/*
 * Events wait in a CPU's batch until it fills, so a CPU that goes quiet holds back every later number. The
 * timer asks the CPUs holding numbers that were taken EBPF_ORDER_WAIT_USEC ago and still have not come;
 * when two rounds in a row find them missing though no CPU was busy, they are lost (their record was, or
 * their CPU went offline) and are given up on, so nothing waits for good.
 */
static void order_timer_arm(EbpfSource *s) {
        int enabled = SD_EVENT_OFF;
        uint64_t now;

        if (!s->order_timer || events_numbered(s) <= seq_order_next(s->order))
                return;
        if (sd_event_source_get_enabled(s->order_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        s->order_noted = events_numbered(s);
        if (sd_event_now(s->live.event, CLOCK_MONOTONIC, &now) < 0 ||
            sd_event_source_set_time(s->order_timer, now + EBPF_ORDER_WAIT_USEC) < 0 ||
            sd_event_source_set_enabled(s->order_timer, SD_EVENT_ONESHOT) < 0)
                log_debug("Failed to arm the eBPF order timer: events may wait until the next batch.");
}

static void source_drain_some(EbpfSource *s) {
        if (source_drain(s, EBPF_DRAIN_BUDGET))
                live_source_drain_later(&s->live);
        else
                order_timer_arm(s);
}

static int order_timer_handler(sd_event_source *es, uint64_t usec, void *userdata) {
        EbpfSource *s = userdata;
        int busy;

        if (seq_order_next(s->order) < s->order_noted) {
                busy = flush_cpus(s, s->order_noted);
                (void) source_drain(s, UINT64_MAX);
                if (seq_order_next(s->order) >= s->order_noted || busy != 0)
                        s->order_stuck = 0;
                else if (++s->order_stuck >= 2) {
                        uint64_t n = seq_order_skip(s->order, s->order_noted);

                        log_debug("eBPF source: %" PRIu64 " events never came, given up on.", n);
                        s->order_stuck = 0;
                        poll_losses(s);
                }
        } else
                s->order_stuck = 0;
        if (s->order_stuck > 0) {
                /* Same numbers again: keep order_noted. */
                uint64_t now;

                if (sd_event_now(s->live.event, CLOCK_MONOTONIC, &now) >= 0 &&
                    sd_event_source_set_time(s->order_timer, now + EBPF_ORDER_WAIT_USEC) >= 0)
                        (void) sd_event_source_set_enabled(s->order_timer, SD_EVENT_ONESHOT);
                return 0;
        }
        order_timer_arm(s);
        return 0;
}

static int ring_io_handler(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EbpfSource *s = userdata;

        s->wakeups++;
        source_drain_some(s);
        return 0;
}

static void drain_more(LiveSource *ls) {
        source_drain_some((EbpfSource *) ls);
}

static EbpfSource *ebpf_source_free(EbpfSource *s) {
        if (!s)
                return NULL;
        log_debug("eBPF source: %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64 " wakeups, %" PRIu64
                  " pages on held stacks, %" PRIu64 " before a first sample, %" PRIu64 " objects on held "
                  "stacks, %" PRIu64 " before a first sample, %" PRIu64 " nested page events and %" PRIu64
                  " nested slab events caught, %" PRIu64 " bad records, %" PRIu64 " batches asked for.",
                  s->records, s->lost_records, s->wakeups, s->held_pages, s->unsampled_pages, s->held_objects,
                  s->unsampled_objects, s->nested_records, s->slab_nested_records, s->bad_records, s->flushes);
        s->order_timer = sd_event_source_disable_unref(s->order_timer);
        s->order = seq_order_free(s->order);
        s->io_source = sd_event_source_disable_unref(s->io_source);
        ring_buffer__free(s->ring);
        memstrack_bpf__destroy(s->skel);
        live_source_done(&s->live);
        for (size_t i = 0; i < s->held_size; i++)
                free(s->held[i].frames);
        free(s->held);
        free(s->lost_per_cpu);
        free(s->cpu_stats);
        free(s->cmdline);
        free(s->frames);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(EbpfSource *, ebpf_source_free);

static void ebpf_source_free_op(EventSource *es) {
        ebpf_source_free(ebpf_source_from(es));
}

/* LiveSourceSteps.attach: the ring's wakeups and the order timer. */
static int attach(LiveSource *ls, sd_event *event) {
        EbpfSource *s = (EbpfSource *) ls;
        int r;

        /* The map itself, not libbpf's epoll fd: nothing calls epoll_wait() on that one, so it would stay
         * readable forever and spin the loop. Edge-triggered: only the program's forced wakeups count,
         * and a drain that ran out of budget goes on from the defer source. */
        r = sd_event_add_io(event, &s->io_source, bpf_map__fd(s->skel->maps.events), EPOLLIN | EPOLLET,
                            ring_io_handler, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the eBPF ring buffer: %m");
        (void) sd_event_source_set_description(s->io_source, "ebpf-ring");
        r = sd_event_add_time(event, &s->order_timer, CLOCK_MONOTONIC, UINT64_MAX, 0, order_timer_handler, s);
        if (r < 0)
                return log_error_errno(r, "Failed to add the eBPF order timer: %m");
        (void) sd_event_source_set_enabled(s->order_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(s->order_timer, "ebpf-order");
        return 0;
}

/* Attaches the loaded hooks, each on its own: a kernel that cannot (no BPF trampolines, no function
 * tracing) keeps the tracepoints and says why in Status. */
static void bulk_hooks_attach(EbpfSource *s) {
        for (size_t h = 0; h < _EBPF_HOOK_MAX; h++) {
                EventSourceHook *hook = &s->hooks[h];

                if (!s->hook_programs[h])
                        continue;
                *s->hook_links[h] = bpf_program__attach(s->hook_programs[h]);
                if (!*s->hook_links[h]) {
                        int r = negative_errno();
                        (void) snprintf(hook->reason, sizeof(hook->reason), "cannot attach to %s: %s",
                                        hook->function, strerror(-r));
                        log_notice("--slab: %s; %s stay unseen, their caches marked as such.", hook->reason,
                                   hook->covers);
                        continue;
                }
                hook->attached = true;
                log_debug("--slab: %s hooked (%s).", hook->function, hook->covers);
        }
}

/* LiveSourceSteps.enable: the programs attached, the task programs first. */
static int enable(LiveSource *ls) {
        EbpfSource *s = (EbpfSource *) ls;
        int r;

        /* Batches need the daemon to ask quiet CPUs for them; where it cannot (a kernel before 5.10), page
         * events go to the ring one by one. Decided before the page programs write any. */
        LIBBPF_OPTS(bpf_test_run_opts, probe);
        if (bpf_prog_test_run_opts(bpf_program__fd(s->skel->progs.batch_flush), &probe) < 0) {
                log_info_errno(errno, "Cannot run the batch flush program (%m): sending every page event to "
                               "the ring on its own, which costs more per page.");
                s->skel->data_read_mostly->batches_off = 1;
        }

        /* The task programs before the page programs (the skeleton would attach them in the file's
         * order, pages first): a task whose pages are recorded then has its exit recorded too, where one
         * that ended while the page programs attached stayed alive in our view for good. */
        struct {
                struct bpf_program *program;
                struct bpf_link **link;
        } tasks_first[] = {
                { s->skel->progs.task_fork, &s->skel->links.task_fork },
                { s->skel->progs.task_rename, &s->skel->links.task_rename },
                { s->skel->progs.task_exec, &s->skel->links.task_exec },
                { s->skel->progs.task_exit, &s->skel->links.task_exit },
        };
        for (size_t i = 0; i < ELEMENTSOF(tasks_first); i++) {
                *tasks_first[i].link = bpf_program__attach(tasks_first[i].program);
                if (!*tasks_first[i].link)
                        return log_error_errno(negative_errno(), "Failed to attach the eBPF program %s: %m",
                                               bpf_program__name(tasks_first[i].program));
        }
        /* The rest; the skeleton leaves programs that have a link alone. The allocation twin and the slab
         * twins wait for a miss (twin_update()). */
        if (!s->options.nested_allocations_always)
                for (size_t i = 0; i < EBPF_TWINNED; i++)
                        if (i != EBPF_TWINNED_PAGE_FREE)
                                (void) bpf_program__set_autoattach(s->twinned[i].twin, false);
        r = memstrack_bpf__attach(s->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the eBPF programs: %m");
        bulk_hooks_attach(s);
        return 0;
}

static const LiveSourceSteps ebpf_steps = {
        .name = "ebpf",
        .attach = attach,
        .enable = enable,
        .drain_more = drain_more,
};

static int ebpf_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        EbpfSource *s = ebpf_source_from(es);
        uint64_t seeded = 0;

        int r = live_source_start(&s->live, event, sink, &seeded);
        s->records += seeded;
        if (r < 0)
                return r;
        log_debug("eBPF source started.");
        return 0;
}

/* Whether a flush may ask the CPUs now (a token bucket, see EBPF_FLUSH_RATE). */
static bool flush_allowed(EbpfSource *s) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (s->flush_tokens_usec == 0)
                s->flush_tokens = EBPF_FLUSH_BURST;
        else
                s->flush_tokens = MIN((double) EBPF_FLUSH_BURST,
                                      s->flush_tokens + (double) (now - s->flush_tokens_usec) *
                                                        EBPF_FLUSH_RATE / USEC_PER_SEC);
        s->flush_tokens_usec = now;
        if (s->flush_tokens < 1.0)
                return false;
        s->flush_tokens -= 1.0;
        return true;
}

/* Everything numbered before the call, delivered (but for a CPU busy every time it was asked, and beyond
 * EBPF_FLUSH_RATE, where it delivers what arrived). */
static int ebpf_source_flush(EventSource *es) {
        EbpfSource *s = ebpf_source_from(es);
        uint64_t upto;
        int r = 0;

        assert(s);
        if (!flush_allowed(s)) {
                (void) source_drain(s, UINT64_MAX);
                return 0;
        }
        upto = events_numbered(s);
        /* Again while numbers below upto are missing: a CPU was busy, or a record sent on its own took its
         * number just before the ring had it. */
        for (unsigned i = 0; i < EBPF_FLUSH_TRIES; i++) {
                r = flush_cpus(s, upto);
                (void) source_drain(s, UINT64_MAX);
                if (r < 0 || seq_order_next(s->order) >= upto)
                        break;
        }
        order_timer_arm(s);
        return MIN(r, 0);
}

static void ebpf_source_get_stats(EventSource *es, EventSourceStats *ret) {
        EbpfSource *s = ebpf_source_from(es);

        assert(s);
        assert(ret);
        *ret = (EventSourceStats) {
                .records = s->records,
                .lost_records = s->lost_records,
                .wakeups = s->wakeups,
                .n_cpus = (size_t) s->n_possible_cpus,
                .lost_per_cpu = s->lost_per_cpu,
                .losses = s->losses,
                /* The slab reason only where slab events are traced: without --slab, as before. */
                .n_losses = s->options.slab ? _EBPF_LOSS_MAX : EBPF_LOSS_SLAB_RECURSION,
                .stack_sample_interval = s->depth > 0 ? s->options.stack_sample_interval : 0,
                .hooks = s->hooks,
                .n_hooks = s->options.slab ? _EBPF_HOOK_MAX : 0,
        };
}

/* bpf_get_stack() unwinds from inside the program: the program, then the functions that ran it (for the
 * bulk hooks, the trampoline and the hooked function). */
static const MsTracerFrames ebpf_tracer_frames = {
        .prefixes = (const char *const[]) { "__traceiter_", "__bpf_trace_", "bpf_trace_run", "bpf_trampoline_",
                                            "kmem_cache_alloc_bulk", NULL },
        .program_first = true,
};

static const EventSourceOps ebpf_source_ops = {
        .name = "ebpf",
        .tracer_frames = &ebpf_tracer_frames,
        .start = ebpf_source_start,
        .flush = ebpf_source_flush,
        .get_stats = ebpf_source_get_stats,
        .free = ebpf_source_free_op,
};

/*
 * The sampling parameters of the BPF program (sample_this() there): every allocation for interval 1, else
 * geometric gaps with p = 1/interval drawn as floor(-log2(u) * scale) + 1, scale = 1 / -log2(1 - p) in
 * 1/2^MS_BPF_LOG2_SHIFT units, and log2 of the bits after a draw's top one from a table.
 */
static void sample_setup(unsigned interval, __u32 *ret_every, __u64 *ret_scale, __u32 *ret_log2_fraction) {
        *ret_every = interval <= 1;
        *ret_scale = interval <= 1 ? 0 :
                (__u64) llround(ldexp(1.0 / -log2(1.0 - 1.0 / interval), MS_BPF_LOG2_SHIFT));
        for (unsigned i = 0; i < MS_BPF_LOG2_STEPS; i++)
                ret_log2_fraction[i] = (__u32) llround(ldexp(log2(1.0 + (i + 0.5) / MS_BPF_LOG2_STEPS),
                                                             MS_BPF_LOG2_SHIFT));
}

/* sizeof(struct page) of the kernel whose BTF is at path. */
static int struct_page_size(const char *path, uint64_t *ret) {
        struct btf *btf = btf__parse(path, NULL);
        const struct btf_type *t;
        uint32_t size = 0;
        int id;

        if (!btf)
                return -errno;
        id = btf__find_by_name_kind(btf, "page", BTF_KIND_STRUCT);
        t = id > 0 ? btf__type_by_id(btf, id) : NULL;
        if (t)
                size = t->size;
        btf__free(btf);
        if (size == 0)
                return -ENOENT;
        *ret = size;
        return 0;
}

/* The struct a BTF type names, through pointers, typedefs and qualifiers; NULL if it is no struct pointer. */
static const char *btf_pointee_struct(const struct btf *btf, uint32_t id) {
        const struct btf_type *t = btf__type_by_id(btf, id);

        if (!t || !btf_is_ptr(t))
                return NULL;
        t = btf__type_by_id(btf, btf__resolve_type(btf, t->type));
        if (!t || !btf_is_struct(t))
                return NULL;
        return btf__name_by_offset(btf, t->name_off);
}

/*
 * The prototype of slab allocation tracepoint event (MS_BPF_SLAB_* layout) from the kernel's BTF: its
 * typedef btf_trace_EVENT is a pointer to void (void *data, call_site, ptr, ...). -ENOENT when the kernel
 * has no such tracepoint, -EBADMSG for a prototype none of the layouts fits.
 */
static int slab_layout_of(const struct btf *btf, const char *event, uint32_t *ret) {
        char name[64];
        const struct btf_type *t;
        const struct btf_param *params;
        unsigned n;
        int id;

        (void) snprintf(name, sizeof(name), "btf_trace_%s", event);
        id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
        if (id < 0)
                return -ENOENT;
        t = btf__type_by_id(btf, btf__resolve_type(btf, (uint32_t) id));
        if (!t || !btf_is_ptr(t))
                return -EBADMSG;
        t = btf__type_by_id(btf, t->type);
        if (!t || !btf_is_func_proto(t))
                return -EBADMSG;
        params = btf_params(t);
        n = btf_vlen(t);
        /* data, call_site, ptr, and at least two more. */
        if (n < 5)
                return -EBADMSG;
        const char *third = btf_pointee_struct(btf, params[3].type);
        if (!third)
                *ret = MS_BPF_SLAB_SIZES;
        else if (!streq(third, "kmem_cache"))
                return -EBADMSG;
        else if (n == 6)
                *ret = MS_BPF_SLAB_CACHE;
        else
                *ret = MS_BPF_SLAB_CACHE_SIZES;
        return 0;
}

/*
 * The bulk hooks (see the BPF program): with --slab, each on the first of its functions the kernel's BTF
 * has (kmem_cache_alloc_bulk was renamed in 6.10), unless s->hooks says already why it cannot run (the
 * object would not load with it: ebpf_source_new() tries again without).
 */
static void bulk_hooks_setup(EbpfSource *s, bool slab) {
        struct memstrack_bpf *k = s->skel;
        const struct {
                const char *function;
                struct bpf_program *program;
                struct bpf_link **link;
        } candidates[_EBPF_HOOK_MAX][2] = {
                [EBPF_HOOK_FREE_BULK] = { { "kmem_cache_free_bulk", k->progs.slab_free_bulk, &k->links.slab_free_bulk } },
                [EBPF_HOOK_ALLOC_BULK] = {
                        { "kmem_cache_alloc_bulk_noprof", k->progs.slab_alloc_bulk_noprof,
                          &k->links.slab_alloc_bulk_noprof },
                        { "kmem_cache_alloc_bulk", k->progs.slab_alloc_bulk, &k->links.slab_alloc_bulk },
                },
        };
        static const char *const covers[_EBPF_HOOK_MAX] = {
                [EBPF_HOOK_FREE_BULK] = "slab objects freed in bulk: kmem_cache_free_bulk(), kfree_bulk(), "
                                        "kfree_rcu() batches",
                [EBPF_HOOK_ALLOC_BULK] = "slab objects allocated in bulk: kmem_cache_alloc_bulk()",
        };

        for (size_t h = 0; h < _EBPF_HOOK_MAX; h++) {
                EventSourceHook *hook = &s->hooks[h];
                bool refused = hook->reason[0] != '\0';

                hook->covers = covers[h];
                hook->function = candidates[h][0].function;
                s->hook_programs[h] = NULL;
                for (size_t c = 0; c < ELEMENTSOF(candidates[h]); c++) {
                        if (!candidates[h][c].program)
                                continue;
                        (void) bpf_program__set_autoload(candidates[h][c].program, false);
                        (void) bpf_program__set_autoattach(candidates[h][c].program, false);
                        if (!slab || refused || s->hook_programs[h] ||
                            libbpf_find_vmlinux_btf_id(candidates[h][c].function, BPF_TRACE_FENTRY) < 0)
                                continue;
                        (void) bpf_program__set_autoload(candidates[h][c].program, true);
                        s->hook_programs[h] = candidates[h][c].program;
                        s->hook_links[h] = candidates[h][c].link;
                        hook->function = candidates[h][c].function;
                }
                if (slab && !refused && !s->hook_programs[h])
                        (void) snprintf(hook->reason, sizeof(hook->reason), "the kernel's BTF has no %s",
                                        hook->function);
        }
        s->skel->rodata->bulk_frames = MAX(s->depth, EBPF_BULK_FRAMES_MIN);
}

/*
 * The slab programs: loaded only with --slab (without it the kernel runs nothing more than before), and
 * then each only where the kernel has its tracepoint with a prototype we know, which it logs once. Sets
 * the programs' layouts. -errno only for a BTF that cannot be read.
 */
static int slab_programs_setup(EbpfSource *s, const char *btf_path, bool slab) {
        const TwinnedProgram *slab_progs = s->twinned + EBPF_TWINNED_SLAB;
        struct btf *btf;
        bool present[MS_BPF_SLAB_ALLOCS] = {};

        for (size_t i = EBPF_TWINNED_SLAB; i < EBPF_TWINNED; i++) {
                (void) bpf_program__set_autoload(s->twinned[i].main, false);
                (void) bpf_program__set_autoload(s->twinned[i].twin, false);
        }
        bulk_hooks_setup(s, slab);
        if (!slab)
                return 0;

        btf = btf__parse(btf_path, NULL);
        if (!btf)
                return log_error_errno(negative_errno(), "Failed to read the kernel BTF at %s: %m", btf_path);
        for (size_t i = 0; i < MS_BPF_SLAB_ALLOCS; i++) {
                uint32_t layout;
                int r = slab_layout_of(btf, slab_progs[i].event, &layout);

                if (r == -EBADMSG)
                        log_notice("--slab: the kmem:%s tracepoint has a prototype memstrackd does not know, no "
                                   "slab events from it.", slab_progs[i].event);
                if (r < 0)
                        continue;
                s->skel->rodata->slab_layout[i] = layout;
                (void) bpf_program__set_autoload(slab_progs[i].main, true);
                (void) bpf_program__set_autoload(slab_progs[i].twin, true);
                present[i] = true;
        }
        for (size_t i = MS_BPF_SLAB_ALLOCS; i < EBPF_TWINNED - EBPF_TWINNED_SLAB; i++) {
                char name[64];

                /* Every version's free events start (call_site, ptr): their presence is all to check. */
                (void) snprintf(name, sizeof(name), "btf_trace_%s", slab_progs[i].event);
                if (btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) < 0) {
                        log_notice("--slab: the kernel has no kmem:%s tracepoint, no slab events from it.",
                                   slab_progs[i].event);
                        continue;
                }
                (void) bpf_program__set_autoload(slab_progs[i].main, true);
                (void) bpf_program__set_autoload(slab_progs[i].twin, true);
        }
        btf__free(btf);
        /* A kind and its *_node twin are one: Linux 6.1 folded the twins in. */
        if (!present[MS_BPF_SLAB_KMALLOC] && !present[MS_BPF_SLAB_KMALLOC_NODE])
                log_notice("--slab: the kernel has no usable kmem:kmalloc tracepoint, no slab events from it.");
        if (!present[MS_BPF_SLAB_CACHE_ALLOC] && !present[MS_BPF_SLAB_CACHE_ALLOC_NODE])
                log_notice("--slab: the kernel has no usable kmem:kmem_cache_alloc tracepoint, no slab events "
                           "from it.");
        return 0;
}

/* Whether this process may load tracing programs (CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON, effective):
 * then an EACCES from loading is the verifier's refusal, not a missing privilege. */
static bool ebpf_privileged(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        unsigned long long eff;

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "CapEff: %llx", &eff) == 1)
                        return (eff >> 21 & 1) || ((eff >> 38 & 1) && (eff >> 39 & 1));
        return false;
}

/* Opens the skeleton, sets what the kernel half reads as constants, picks the programs and loads them;
 * -errno without a word when the kernel refuses the object. */
static int skeleton_load(EbpfSource *s, const SourceOptions *options) {
        LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = options->btf);
        int r;

        s->skel = memstrack_bpf__open_opts(&open_opts);
        if (!s->skel)
                return log_error_errno(errno, "Failed to open the eBPF program: %m");
        twinned_programs(s);

        /* The BPF program reports pids as the daemon sees them (its /proc, its own pid). */
        bool pidns_initial = true;
        uint64_t pidns_dev = 0, pidns_ino = 0;
        r = proc_pid_namespace(&pidns_dev, &pidns_ino, &pidns_initial);
        if (r < 0)
                return log_error_errno(r, "Failed to find memstrackd's PID namespace: %m");
        bool pidns_translate = !pidns_initial;
        if (pidns_translate)
                log_debug("In a PID namespace of its own: pids as it sees them, 0 for tasks outside it.");
        s->skel->rodata->pidns_translate = pidns_translate;
        s->skel->rodata->pidns_dev = pidns_dev;
        s->skel->rodata->pidns_ino = pidns_ino;
        s->skel->rodata->self_tgid = (uint32_t) s->live.self;
        s->skel->rodata->kernel_depth_bytes = s->depth * 8;
        s->skel->rodata->user_depth_bytes = options->user_stacks ? s->depth * 8 : 0;
        s->skel->rodata->user_at = s->user_at;
        s->skel->rodata->wakeup_bytes = s->wakeup_bytes;
        /* Every 64th slab record per CPU checks the watermark, if 64 of the largest records per CPU fit
         * twice above it; else every record does (tiny rings, tests). */
        if (s->ring_bytes - s->wakeup_bytes >=
            2 * 64 * (sizeof(MsBpfPage) + 2 * MS_BPF_FRAMES_MAX * 8 + 8) * (size_t) s->n_possible_cpus)
                s->skel->rodata->wakeup_check_mask = 63;
        sample_setup(options->stack_sample_interval, &s->skel->rodata->sample_every,
                     &s->skel->rodata->sample_gap_scale, s->skel->rodata->log2_fraction);
        r = bpf_map__set_max_entries(s->skel->maps.events, (uint32_t) MIN(s->ring_bytes, (size_t) 1 << 30));
        if (r < 0)
                return log_error_errno(r, "Failed to size the eBPF ring buffer to %zu bytes: %m", s->ring_bytes);
        /* A kernel without modules has no module tracepoints: leave them out rather than fail. */
        if (libbpf_find_vmlinux_btf_id("module_load", BPF_TRACE_RAW_TP) < 0 ||
            libbpf_find_vmlinux_btf_id("module_free", BPF_TRACE_RAW_TP) < 0) {
                log_debug("No module tracepoints: module loads are not tracked.");
                (void) bpf_program__set_autoload(s->skel->progs.module_load, false);
                (void) bpf_program__set_autoload(s->skel->progs.module_free, false);
        }

        (void) bpf_program__set_autoload(s->skel->progs.sample_gap_draw, false);    /* for the tests */
        /* Without cgroups, no ids to keep fresh (task_cgroup_id() gives 0). */
        if (libbpf_find_vmlinux_btf_id("cgroup_mkdir", BPF_TRACE_RAW_TP) < 0)
                (void) bpf_program__set_autoload(s->skel->progs.cgroup_made, false);

        r = slab_programs_setup(s, options->btf ?: SOURCE_BTF_DEFAULT, options->slab);
        if (r < 0)
                return r;

        /* The caller says why it failed: it may try again without the hooks. */
        return memstrack_bpf__load(s->skel);
}

static int ebpf_source_new(const SourceOptions *options, EventSource **ret) {
        _cleanup_(ebpf_source_freep) EbpfSource *s = NULL;
        long page_size = sysconf(_SC_PAGESIZE), n_online = sysconf(_SC_NPROCESSORS_ONLN);
        size_t ring;
        int r;

        assert(options);
        assert(ret);

        if (options->stack_sample_interval < 1 || options->stack_sample_interval > SOURCE_STACK_SAMPLE_INTERVAL_MAX)
                return log_error_errno(EINVAL, "Stack sample interval %u out of range 1..%u.",
                                       options->stack_sample_interval, SOURCE_STACK_SAMPLE_INTERVAL_MAX);

        (void) libbpf_set_print(libbpf_log);
        /* libbpf opens it as it is: a FIFO there would be waited on. */
        r = open_regular(options->btf ?: SOURCE_BTF_DEFAULT, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot read the kernel BTF at %s, which the eBPF source needs: %s",
                                       options->btf ?: SOURCE_BTF_DEFAULT, file_error_string(r));
        (void) close(r);

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        live_source_init(&s->live, &ebpf_source_ops, &ebpf_steps, options->self > 0 ? options->self : getpid());
        s->options = *options;
        s->options.tracefs = s->options.input = s->options.btf = NULL;
        s->depth = MIN(options->depth, EBPF_DEPTH_MAX);
        if (options->depth > EBPF_DEPTH_MAX)
                log_info("The eBPF source takes at most %u frames per stack, not %u.", EBPF_DEPTH_MAX,
                         options->depth);
        s->user_at = s->depth;
        s->not_sampled_frame = MS_FRAME_NOT_SAMPLED;
        s->losses[EBPF_LOSS_RING_FULL].reason = "ringFull";
        s->losses[EBPF_LOSS_RECURSION].reason = "recursionMiss";
        s->losses[EBPF_LOSS_STACK].reason = "stackFailed";
        s->losses[EBPF_LOSS_SEQUENCE].reason = "sequenceGap";
        s->losses[EBPF_LOSS_SLAB_RECURSION].reason = "slabRecursionMiss";
        s->losses[EBPF_LOSS_SLAB_BULK_CUT].reason = "slabBulkCut";

        /* As much memory as the perf source's per-CPU rings together, in one ring of a power of two. */
        ring = (size_t) options->buffer_pages * (size_t) page_size * (size_t) MAX(n_online, 1L);
        s->ring_bytes = (size_t) page_size;
        while (s->ring_bytes < ring && s->ring_bytes < (SIZE_MAX >> 2))
                s->ring_bytes <<= 1;
        s->wakeup_bytes = options->wakeup_bytes > 0 ? options->wakeup_bytes : s->ring_bytes / 4;
        if (s->wakeup_bytes >= s->ring_bytes)
                return log_error_errno(EINVAL, "Wakeup watermark of %zu bytes does not fit a ring of %zu bytes.",
                                       s->wakeup_bytes, s->ring_bytes);

        s->n_possible_cpus = libbpf_num_possible_cpus();
        if (s->n_possible_cpus <= 0)
                return log_error_errno(s->n_possible_cpus < 0 ? s->n_possible_cpus : -EINVAL,
                                       "Failed to count the possible CPUs: %m");
        s->cpu_stats = calloc(s->n_possible_cpus, sizeof(*s->cpu_stats));
        s->lost_per_cpu = calloc(s->n_possible_cpus, sizeof(*s->lost_per_cpu));
        s->frames = calloc(2 * EBPF_DEPTH_MAX, sizeof(*s->frames));
        s->cmdline = malloc(PROC_CMDLINE_MAX);
        s->order = seq_order_new(&order_ops, s);
        if (!s->cpu_stats || !s->lost_per_cpu || !s->frames || !s->cmdline || !s->order)
                return log_oom();

        r = struct_page_size(options->btf ?: SOURCE_BTF_DEFAULT, &s->struct_page_size);
        if (r < 0)
                return log_error_errno(r, "Failed to find the size of struct page in the kernel BTF at %s: %m",
                                       options->btf ?: SOURCE_BTF_DEFAULT);

        r = skeleton_load(s, options);
        if (r < 0 && s->skel && (s->hook_programs[EBPF_HOOK_FREE_BULK] || s->hook_programs[EBPF_HOOK_ALLOC_BULK])) {
                /* A kernel whose verifier refuses the bulk hooks still gets the tracepoints. */
                bool no_ftrace = access("/sys/kernel/tracing/available_filter_functions", F_OK) < 0 &&
                        access("/sys/kernel/debug/tracing/available_filter_functions", F_OK) < 0;
                for (size_t h = 0; h < _EBPF_HOOK_MAX; h++)
                        if (s->hook_programs[h])
                                (void) snprintf(s->hooks[h].reason, sizeof(s->hooks[h].reason),
                                                "the kernel refused the program for %s: %s%s", s->hooks[h].function,
                                                strerror(-r), no_ftrace ? " (the kernel has no function tracing, "
                                                "which BPF trampolines need)" : "");
                log_notice("--slab: the kernel refused the bulk hooks (%s); loading without them.", strerror(-r));
                memstrack_bpf__destroy(s->skel);
                s->skel = NULL;
                r = skeleton_load(s, options);
        }
        /* The verifier's refusals are EACCES too. */
        if (r == -EPERM || (r == -EACCES && !ebpf_privileged()))
                return log_error_errno(r, "Not allowed to load the eBPF program: run as root or with CAP_BPF and "
                                       "CAP_PERFMON: %m");
        if (r < 0)
                return log_error_errno(r, "The kernel refused the eBPF program (libbpf says why with "
                                       "--log-level=debug): %m");

        s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_record, s, NULL);
        if (!s->ring)
                return log_error_errno(errno, "Failed to map the eBPF ring buffer: %m");

        log_debug("eBPF source: %zu-byte ring, wakeup at %zu bytes, depth %u%s, a stack per %u pages.",
                  s->ring_bytes, s->wakeup_bytes, s->depth, options->user_stacks ? " with user frames" : "",
                  options->stack_sample_interval);
        *ret = &TAKE_PTR(s)->live.base;
        return 0;
}

/* The reason a probe gives is static (source.h); one source probes at a time. */
static char probe_reason[256];

/*
 * Whether the kernel's BPF has the atomic fetch-and-add that numbers every event (seq_next() in the BPF
 * program; Linux 5.12): a program of one such add on a map value, loaded and closed. Kernels without it
 * refuse the whole object ("BPF_STX uses reserved fields", Debian 11's 5.10). 1 yes, 0 no, -errno when no
 * program could be loaded at all.
 */
static int probe_atomic_fetch(void) {
        _cleanup_close_ int map = -EBADF, prog = -EBADF;
        int r;

        map = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, sizeof(__u32), sizeof(__u64), 1, NULL);
        if (map < 0)
                return -errno;
        const struct bpf_insn insns[] = {
                /* key = 0; r0 = lookup(map, &key) */
                { .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4, .imm = 0 },
                { .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
                { .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
                { .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map },
                { .code = 0 },
                { .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
                { .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0, .off = 2, .imm = 0 },
                /* r1 = 1; r1 = atomic_fetch_add(*(u64 *) r0, r1) */
                { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
                { .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_0, .src_reg = BPF_REG_1,
                  .imm = BPF_ADD | BPF_FETCH },
                { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
                { .code = BPF_JMP | BPF_EXIT },
        };
        prog = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, ELEMENTSOF(insns), NULL);
        if (prog >= 0)
                return 1;
        r = -errno;
        return r == -EINVAL ? 0 : r;
}

/*
 * Whether BPF with BTF can work here: the BTF file is readable, the kernel has BPF ring buffers and we
 * may load a tracepoint program. Cheap: one map and one tiny program, created and closed.
 */
static int ebpf_source_probe(const SourceOptions *options, const char **ret_reason) {
        const char *btf = options->btf ?: SOURCE_BTF_DEFAULT;
        int r;

        assert(ret_reason);

        r = tracefs_lockdown_check(NULL, ret_reason);
        if (r < 0)
                return r;
        r = open_regular(btf, 0);
        if (r < 0) {
                (void) snprintf(probe_reason, sizeof(probe_reason), r == -ENOENT ? "no BTF at %s" :
                                r == -EBADFD ? "BTF at %s not a regular file" : "BTF at %s not readable", btf);
                *ret_reason = probe_reason;
                return r;
        }
        (void) close(r);
        (void) libbpf_set_print(libbpf_log);
        r = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL);
        if (r == 0) {
                *ret_reason = "the kernel has no BPF ring buffer (Linux 5.8 or later)";
                return -EOPNOTSUPP;
        }
        if (r == -EPERM || r == -EACCES) {
                *ret_reason = "not allowed to use bpf() (needs root, or CAP_BPF with CAP_PERFMON)";
                return r;
        }
        if (r == -ENOSYS) {
                *ret_reason = "the kernel has no bpf()";
                return r;
        }
        if (r < 0) {
                (void) snprintf(probe_reason, sizeof(probe_reason), "bpf() failed: %s", strerror(-r));
                *ret_reason = probe_reason;
                return r;
        }
        r = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, NULL);
        if (r <= 0) {
                *ret_reason = "not allowed to load BPF tracepoint programs (needs root, or CAP_BPF with CAP_PERFMON)";
                return r < 0 ? r : -EOPNOTSUPP;
        }
        r = probe_atomic_fetch();
        if (r == 0) {
                *ret_reason = "the kernel's BPF has no atomic fetch-and-add, which numbers the events (Linux 5.12 "
                              "or later)";
                return -EOPNOTSUPP;
        }
        if (r < 0) {
                (void) snprintf(probe_reason, sizeof(probe_reason), "bpf() failed: %s", strerror(-r));
                *ret_reason = probe_reason;
                return r;
        }
        return 0;
}

const SourceType ebpf_source_type = {
        .name = "ebpf",
        .description = "the page tracepoints through an eBPF program (needs BTF; root or CAP_BPF+CAP_PERFMON)",
        .automatic = true,
        .probe = ebpf_source_probe,
        .new = ebpf_source_new,
};
