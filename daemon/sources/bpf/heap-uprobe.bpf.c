/* SPDX-License-Identifier: MIT OR GPL-2.0-only */

/*
 * The kernel half of the heap-uprobe source (heap-uprobe.c is the other): uprobes on the malloc family of
 * the libc one running process maps (memstrackctl record --pid), as memleak -p attaches them. Every call
 * is counted exactly: a block table from address to usable bytes (read from glibc's chunk header, as
 * malloc_usable_size() reads it) gives each free its size, and the process's live bytes and their peak
 * are kept with atomic operations. A sample of the bytes gets a record with the user stack: one per
 * sample interval on average, drawn as the heap library draws them (exponential gaps over the bytes,
 * a countdown per CPU), so the daemon weighs them the same way; every block with interval 1.
 *
 * Stacks are taken at the return of the allocator: their first frame is the call's return address into
 * its caller, read from the registers; the frames above it come from the kernel's walk of the frame
 * pointer chain, so they are complete only for code built with frame pointers.
 *
 * Allocations return through uretprobes (the pointer is known only then); frees are seen at their entry,
 * before the block can go to another thread, and realloc's old block likewise: a block's allocation
 * always has its record before its free. Nothing here allocates or loops without bound; what does not fit
 * (a full block table or ring) is counted, never retried.
 * GPL-compatible license: bpf_get_stack() and bpf_probe_read_user() are GPL-only helpers.
 */

#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "heap-uprobe-bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by heap-uprobe.c before loading. sample_every: every block is sampled; else the mean gap is
 * sample_scale / ln 2 bytes (sample_scale = interval * ln 2, in bytes). */
const volatile __u32 sample_every = 0;
const volatile __u64 sample_scale = 0;
const volatile __u32 log2_fraction[HEAP_BPF_LOG2_STEPS] = {};

/* Set by heap-uprobe.c when the recording ends, before it detaches the probes one by one (each takes a
 * while): from then on every probe returns at once, so the recording ends at one moment for all calls. */
__u32 stopped = 0;

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 1 << 24);   /* heap-uprobe.c sets the size */
} events SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(map_flags, BPF_F_NO_PREALLOC);   /* entries as blocks come, not max_entries at the load */
        __uint(max_entries, 1 << 20);   /* heap-uprobe.c sets the size */
        __type(key, __u64);
        __type(value, HeapBpfBlock);
} blocks SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1 << 14);
        __type(key, __u64);             /* pid_tgid */
        __type(value, HeapBpfPending);
} pending SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, HeapBpfCounters);
} counters SEC(".maps");

/* Bytes to the next sampled one, per CPU (a program runs on one CPU to its end). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __s64);
} countdown SEC(".maps");

static __always_inline HeapBpfCounters *the_counters(void) {
        __u32 zero = 0;
        return bpf_map_lookup_elem(&counters, &zero);
}

static __always_inline __u32 top_bit(__u64 x) {
        __u32 k = 0;

        if (x >> 32) {
                x >>= 32;
                k += 32;
        }
        if (x >> 16) {
                x >>= 16;
                k += 16;
        }
        if (x >> 8) {
                x >>= 8;
                k += 8;
        }
        if (x >> 4) {
                x >>= 4;
                k += 4;
        }
        if (x >> 2) {
                x >>= 2;
                k += 2;
        }
        if (x >> 1)
                k += 1;
        return k;
}

/* An exponential gap of mean interval bytes: -ln(u) * interval = -log2(u) * sample_scale. */
static __always_inline __s64 sample_gap(void) {
        __u64 x = (__u64) bpf_get_prandom_u32() + 1;    /* u = x / 2^32 */
        __u64 neg_log2_u = 0;                            /* 32 - log2(x), fixed point */
        __u32 k, i;

        if (x < (1ULL << 32)) {
                k = top_bit(x);
                i = (__u32) (k >= 10 ? x >> (k - 10) : x << (10 - k)) & (HEAP_BPF_LOG2_STEPS - 1);
                neg_log2_u = ((__u64) (32 - k) << HEAP_BPF_LOG2_SHIFT) - log2_fraction[i];
        }
        return (__s64) ((neg_log2_u * sample_scale) >> HEAP_BPF_LOG2_SHIFT) + 1;
}

/* Whether a block of bytes is sampled, moving this CPU's countdown (a block of 0 bytes counts as 1). */
static __always_inline bool sample_this(__u64 bytes) {
        __u32 zero = 0;
        __s64 *c;

        if (sample_every)
                return true;
        c = bpf_map_lookup_elem(&countdown, &zero);
        if (!c)
                return false;
        if (*c == 0)
                *c = sample_gap();
        *c -= (__s64) (bytes ? bytes : 1);
        if (*c > 0)
                return false;
        /* Exponential gaps are memoryless: the next sample is a fresh gap past this block. */
        *c = sample_gap();
        return true;
}

/* What malloc_usable_size() says of a block: glibc keeps a chunk's size in the word before it, flags in the
 * low three bits (0x2: mmap()ed, a header of two words); a chunk not mmap()ed is in use when the next one's
 * 0x1 bit says so. */
static __always_inline __u64 usable_size(__u64 ptr) {
        __u64 head = 0, next = 0, chunk;

        if (bpf_probe_read_user(&head, sizeof(head), (const void *) (ptr - 8)) < 0)
                return 0;
        chunk = head & ~7ULL;
        if (head & 2)
                return chunk >= 16 ? chunk - 16 : 0;
        if (bpf_probe_read_user(&next, sizeof(next), (const void *) (ptr - 8 + chunk)) < 0)
                return 0;
        return (next & 1) && chunk >= 8 ? chunk - 8 : 0;
}

static __always_inline void raise_peak(HeapBpfCounters *c, __s64 live) {
        __u64 peak = c->peak_bytes;

        for (int i = 0; i < 8 && live > 0 && (__u64) live > peak; i++) {
                __u64 seen = __sync_val_compare_and_swap(&c->peak_bytes, peak, (__u64) live);
                if (seen == peak)
                        break;
                peak = seen;
        }
}

static __always_inline void on_alloc(struct pt_regs *ctx, __u64 ptr) {
        HeapBpfCounters *c = the_counters();
        HeapBpfRecord *rec = NULL;
        HeapBpfBlock b;
        long n;

        if (!ptr || !c || stopped)
                return;
        b.bytes = usable_size(ptr);
        b.sampled = sample_this(b.bytes);
        if (b.sampled) {
                rec = bpf_ringbuf_reserve(&events, sizeof(HeapBpfRecord) + HEAP_BPF_FRAMES_MAX * 8, 0);
                if (!rec) {
                        __sync_fetch_and_add(&c->lost_ring, 1);
                        b.sampled = 0;
                }
        }
        /* An address still tracked: its free went unseen (a path around the probes). */
        HeapBpfBlock *old = bpf_map_lookup_elem(&blocks, &ptr);
        if (old) {
                __u64 old_bytes = old->bytes;
                if (bpf_map_delete_elem(&blocks, &ptr) == 0) {
                        __sync_fetch_and_add(&c->live_bytes, -(__s64) old_bytes);
                        __sync_fetch_and_add(&c->replaced, 1);
                }
        }
        if (bpf_map_update_elem(&blocks, &ptr, &b, BPF_NOEXIST) < 0) {
                __sync_fetch_and_add(&c->lost_table, 1);
                if (rec)
                        bpf_ringbuf_discard(rec, 0);
                return;
        }
        __s64 live = __sync_fetch_and_add(&c->live_bytes, (__s64) b.bytes) + (__s64) b.bytes;
        __sync_fetch_and_add(&c->allocs, 1);
        __sync_fetch_and_add(&c->alloc_bytes, b.bytes);
        raise_peak(c, live);
        if (!rec)
                return;
        rec->type = HEAP_BPF_ALLOC;
        rec->tid = (__u32) bpf_get_current_pid_tgid();
        rec->ptr = ptr;
        rec->bytes = b.bytes;
        rec->live_after = live > 0 ? (__u64) live : 0;
        rec->peak = c->peak_bytes;
        rec->reserved = 0;
        n = bpf_get_stack(ctx, rec->frames, HEAP_BPF_FRAMES_MAX * 8, BPF_F_USER_STACK);
        rec->n_frames = n > 0 ? (__u32) ((__u64) n / 8) : 0;
        bpf_ringbuf_submit(rec, 0);
}

static __always_inline void on_free(__u64 ptr) {
        HeapBpfCounters *c = the_counters();
        HeapBpfBlock *found;
        HeapBpfRecord *rec;
        __u64 bytes, sampled;

        if (!ptr || !c || stopped)
                return;
        found = bpf_map_lookup_elem(&blocks, &ptr);
        if (!found) {
                __sync_fetch_and_add(&c->unknown_frees, 1);
                return;
        }
        bytes = found->bytes;
        sampled = found->sampled;
        if (bpf_map_delete_elem(&blocks, &ptr) < 0)
                return;         /* another thread freed it first (a double free): that one counts */
        __s64 live = __sync_fetch_and_add(&c->live_bytes, -(__s64) bytes) - (__s64) bytes;
        __sync_fetch_and_add(&c->frees, 1);
        if (!sampled)
                return;
        rec = bpf_ringbuf_reserve(&events, sizeof(HeapBpfRecord), 0);
        if (!rec) {
                __sync_fetch_and_add(&c->lost_ring, 1);
                return;
        }
        rec->type = HEAP_BPF_FREE;
        rec->tid = (__u32) bpf_get_current_pid_tgid();
        rec->ptr = ptr;
        rec->bytes = bytes;
        rec->live_after = live > 0 ? (__u64) live : 0;
        rec->peak = c->peak_bytes;
        rec->n_frames = 0;
        rec->reserved = 0;
        bpf_ringbuf_submit(rec, 0);
}

/* malloc, calloc, memalign (aligned_alloc), valloc, pvalloc: the block is what they return. */
SEC("uretprobe")
int BPF_KRETPROBE(alloc_return, void *ret) {
        on_alloc(ctx, (__u64) ret);
        return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_entry, void *ptr) {
        on_free((__u64) ptr);
        return 0;
}

/* The old block is released at the entry: once realloc moved it, another thread may get its address. */
SEC("uprobe")
int BPF_KPROBE(realloc_entry, void *ptr, __u64 size) {
        __u64 id = bpf_get_current_pid_tgid();
        HeapBpfPending p = { .arg0 = (__u64) ptr, .arg1 = size };

        on_free((__u64) ptr);
        (void) bpf_map_update_elem(&pending, &id, &p, BPF_ANY);
        return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(realloc_return, void *ret) {
        __u64 id = bpf_get_current_pid_tgid();
        HeapBpfPending *p = bpf_map_lookup_elem(&pending, &id);
        __u64 old = p ? p->arg0 : 0, size = p ? p->arg1 : 0;

        if (p)
                (void) bpf_map_delete_elem(&pending, &id);
        if (ret)
                on_alloc(ctx, (__u64) ret);
        else if (old && size)
                on_alloc(ctx, old);     /* failed: the old block is still there */
        return 0;
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_entry, void **memptr) {
        __u64 id = bpf_get_current_pid_tgid();
        HeapBpfPending p = { .arg0 = (__u64) memptr };

        (void) bpf_map_update_elem(&pending, &id, &p, BPF_ANY);
        return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(posix_memalign_return, int ret) {
        __u64 id = bpf_get_current_pid_tgid(), ptr = 0;
        HeapBpfPending *p = bpf_map_lookup_elem(&pending, &id);
        __u64 memptr = p ? p->arg0 : 0;

        if (p)
                (void) bpf_map_delete_elem(&pending, &id);
        if (ret == 0 && memptr && bpf_probe_read_user(&ptr, sizeof(ptr), (const void *) memptr) == 0)
                on_alloc(ctx, ptr);
        return 0;
}
