/* SPDX-License-Identifier: MIT OR GPL-2.0-only */

/*
 * The kernel half of the heap-uprobe source (heap-uprobe.c is the other): uprobes on the malloc family of
 * the allocator one running process calls (memstrackctl record --pid): glibc's, jemalloc, tcmalloc or
 * mimalloc, in a library or in the program itself, as memleak -p attaches them to libc. Every call is
 * counted exactly: a block table from address to usable bytes gives each free its size, and the process's
 * live bytes and their peak are kept with atomic operations. A block's usable bytes are what the
 * allocator's malloc_usable_size() says (block_bytes()): read from glibc's chunk header or mimalloc's
 * page, worked out from jemalloc's and tcmalloc's size classes and the call's arguments. A sample of the
 * bytes gets a record with the user stack: one per sample interval on average, drawn as the heap library
 * draws them (exponential gaps over the bytes, a countdown per CPU), so the daemon weighs them the same
 * way; every block with interval 1.
 *
 * Stacks are taken at the return of the outermost probed call: their first frame is the call's return
 * address into its caller, read from the registers; the frames above it come from the kernel's walk of
 * the frame pointer chain, so they are complete only for code built with frame pointers.
 *
 * Every probed function is described by its link's cookie (heap-uprobe-bpf.h): the kind of call and where
 * its arguments are. Allocations return through uretprobes (the pointer is known only then); where the
 * arguments matter, or calls nest (an allocator's operator new calling its own aligned_alloc), an entry
 * probe keeps the call in `calls` until it returns, and probed calls made inside it only count there.
 * Frees are seen at their entry, before the block can go to another thread, and a resize's old block
 * likewise: a block's allocation always has its record before its free. Nothing here allocates or loops
 * without bound; what does not fit (a full block table or ring) is counted, never retried.
 * GPL-compatible license: bpf_get_stack() and bpf_probe_read_user() are GPL-only helpers.
 */

#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "heap-uprobe-bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by heap-uprobe.c before loading. sample_every: every block is sampled; else the mean gap is
 * sample_scale / ln 2 bytes (sample_scale = interval * ln 2, in bytes). allocator: HEAP_BPF_GLIBC and
 * its kin. */
const volatile __u32 sample_every = 0;
const volatile __u32 allocator = HEAP_BPF_GLIBC;
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
        __type(value, HeapBpfCall);
} calls SEC(".maps");

/* tcmalloc's class sizes by class index, filled by heap-uprobe.c after the load. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, HEAP_BPF_TC_CLASS_INDEXES);
        __type(key, __u32);
        __type(value, __u32);
} tc_classes SEC(".maps");

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

/* ---- A block's usable bytes ------------------------------------------------------------------------- */

/* jemalloc 5's size class of a block of size bytes (sz_s2u()): 8 bytes, 16-byte steps to 128, then four
 * classes per doubling. */
static __always_inline __u64 je_size_class(__u64 size) {
        __u64 lg, delta;

        if (size <= 8)
                return 8;
        lg = top_bit((size << 1) - 1);
        delta = lg < 7 ? 16 : (__u64) 1 << (lg - 3);
        return (size + delta - 1) & ~(delta - 1);
}

/* ... of an aligned block (sz_sa2u()): a small class that holds the aligned size, else a large one, at
 * least 16 KiB (large blocks are aligned by their pages). */
static __always_inline __u64 je_aligned_class(__u64 size, __u64 alignment) {
        if (size == 0)
                size = 1;
        if (size <= 14336 && alignment <= HEAP_BPF_PAGE_BYTES) {
                __u64 usable = je_size_class((size + alignment - 1) & ~(alignment - 1));
                if (usable < 16384)
                        return usable;
        }
        return size <= 16384 ? 16384 : je_size_class(size);
}

/* tcmalloc's class of a block of size bytes: its table below 256 KiB, whole pages above. */
static __always_inline __u64 tc_size_class(__u64 size) {
        __u32 index;
        __u32 *usable;

        if (size > HEAP_BPF_TC_SMALL_MAX)
                return (size + HEAP_BPF_TC_PAGE_BYTES - 1) & ~((__u64) HEAP_BPF_TC_PAGE_BYTES - 1);
        index = size <= 1024 ? (__u32) ((size + 7) >> 3) : (__u32) ((size + 127 + (120 << 7)) >> 7);
        usable = bpf_map_lookup_elem(&tc_classes, &index);
        return usable ? *usable : 0;
}

/* tcmalloc's memalign: a small class of the size rounded up to the alignment, or whole pages. */
static __always_inline __u64 tc_aligned_class(__u64 size, __u64 alignment) {
        if (alignment > HEAP_BPF_TC_PAGE_BYTES)
                return ((size ? size : 1) + HEAP_BPF_TC_PAGE_BYTES - 1) & ~((__u64) HEAP_BPF_TC_PAGE_BYTES - 1);
        return tc_size_class((size + alignment - 1) & ~(alignment - 1));
}

/* What malloc_usable_size() says of a glibc block: its chunk's size is in the word before it, flags in the
 * low three bits (0x2: mmap()ed, a header of two words); a chunk not mmap()ed is in use when the next
 * one's 0x1 bit says so. */
static __always_inline __u64 glibc_usable(__u64 ptr) {
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

/* mimalloc 2.0's mi_usable_size(): the block's segment (32 MiB aligned) holds a page descriptor per
 * 64 KiB slice (an array at 264 bytes, 80 bytes each); a slice inside a page points back to the page's
 * first (slice_offset, bytes), which has the block size (xblock_size). A block allocated aligned inside a
 * larger one (the page's has_aligned flag) has the rest of that block from its address on. */
#define MI_SEGMENT_BYTES ((__u64) 1 << 25)
#define MI_SLICE_SHIFT 16
#define MI_SLICES_OFFSET 264
#define MI_PAGE_BYTES 80
static __always_inline __u64 mi_usable(__u64 ptr) {
        __u64 segment = (ptr - 1) & ~(MI_SEGMENT_BYTES - 1), slice, page, start, index;
        __u32 slice_offset = 0, block = 0;
        __u8 flags = 0;

        slice = segment + MI_SLICES_OFFSET + ((ptr - segment) >> MI_SLICE_SHIFT) * MI_PAGE_BYTES;
        if (bpf_probe_read_user(&slice_offset, sizeof(slice_offset), (const void *) (slice + 4)) < 0)
                return 0;
        page = slice - slice_offset;
        if (bpf_probe_read_user(&block, sizeof(block), (const void *) (page + 28)) < 0 || block == 0 ||
            bpf_probe_read_user(&flags, sizeof(flags), (const void *) (page + 14)) < 0)
                return 0;
        if (!(flags & 2))
                return block;
        /* Where the page's blocks begin: small blocks' pages start 384 bytes in. */
        index = (page - segment - MI_SLICES_OFFSET) / MI_PAGE_BYTES;
        start = segment + (index << MI_SLICE_SHIFT) + (block >= 8 && block <= 1024 ? 384 : 0);
        return ptr >= start ? block - (ptr - start) % block : 0;
}

/* An argument of a call, by its 1-based number in the cookie (0: none, and 0 returned). */
static __always_inline __u64 call_arg(const HeapBpfCall *call, __u64 number) {
        if (!call || number == 0 || number > 3)
                return 0;
        return call->args[(number - 1) & 3];
}

/* The usable bytes of the block ptr, which a call of the function with cookie returned; call: its
 * arguments, NULL for a function probed at its return only (glibc's malloc family, whose sizes are read
 * from the block). */
static __always_inline __u64 block_bytes(__u64 ptr, __u64 cookie, const HeapBpfCall *call) {
        __u64 size, count, alignment;

        if (allocator == HEAP_BPF_GLIBC)
                return glibc_usable(ptr);
        if (allocator == HEAP_BPF_MIMALLOC)
                return mi_usable(ptr);
        size = call_arg(call, (cookie >> 8) & 15);
        count = call_arg(call, (cookie >> 12) & 15);
        alignment = call_arg(call, (cookie >> 16) & 15);
        if (count)
                size *= count;
        if (cookie & HEAP_BPF_ALIGN_FLAGS)
                alignment = alignment & 63 ? (__u64) 1 << (alignment & 63) : 0;
        if (cookie & HEAP_BPF_SIZE_PAGES)
                size = size ? (size + HEAP_BPF_PAGE_BYTES - 1) & ~((__u64) HEAP_BPF_PAGE_BYTES - 1) : HEAP_BPF_PAGE_BYTES;
        if (cookie & HEAP_BPF_ALIGN_PAGE)
                alignment = HEAP_BPF_PAGE_BYTES;
        if (allocator == HEAP_BPF_JEMALLOC)
                return alignment ? je_aligned_class(size, alignment) : je_size_class(size);
        /* tcmalloc's realloc keeps a block that shrinks to no less than half or does not grow, and grows
         * one by at least a quarter. */
        if ((cookie & 0xff) == HEAP_BPF_CALL_REALLOC && call && call->old_tracked) {
                __u64 old = call->old_bytes;
                if (ptr == call->args[0])
                        return old;
                if (size > old && size < old + old / 4)
                        size = old + old / 4;
        }
        return alignment ? tc_aligned_class(size, alignment) : tc_size_class(size);
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

/* A block of bytes the allocator handed out. */
static __always_inline void on_alloc(struct pt_regs *ctx, __u64 ptr, __u64 bytes) {
        HeapBpfCounters *c = the_counters();
        HeapBpfRecord *rec = NULL;
        HeapBpfBlock b;
        long n;

        if (!ptr || !c || stopped)
                return;
        b.bytes = bytes;
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

/* A block going back to the allocator; its bytes, and whether it was tracked, in *ret_bytes and the
 * return value (a resize that fails puts it back). */
static __always_inline bool on_free(__u64 ptr, __u64 *ret_bytes) {
        HeapBpfCounters *c = the_counters();
        HeapBpfBlock *found;
        HeapBpfRecord *rec;
        __u64 bytes, sampled;

        if (!ptr || !c || stopped)
                return false;
        found = bpf_map_lookup_elem(&blocks, &ptr);
        if (!found) {
                __sync_fetch_and_add(&c->unknown_frees, 1);
                return false;
        }
        bytes = found->bytes;
        sampled = found->sampled;
        if (bpf_map_delete_elem(&blocks, &ptr) < 0)
                return false;   /* another thread freed it first (a double free): that one counts */
        *ret_bytes = bytes;
        __s64 live = __sync_fetch_and_add(&c->live_bytes, -(__s64) bytes) - (__s64) bytes;
        __sync_fetch_and_add(&c->frees, 1);
        if (!sampled)
                return true;
        rec = bpf_ringbuf_reserve(&events, sizeof(HeapBpfRecord), 0);
        if (!rec) {
                __sync_fetch_and_add(&c->lost_ring, 1);
                return true;
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
        return true;
}

/* The probed call under way on this thread that a call at stack pointer sp is inside, or NULL. slack: 8 at
 * a return (the return address is popped); a call tail-called from the outer one has its stack pointer. */
static __always_inline HeapBpfCall *outer_call(__u64 id, __u64 sp, __u64 slack) {
        HeapBpfCall *call = bpf_map_lookup_elem(&calls, &id);

        return call && call->depth > 0 && sp <= call->sp + slack ? call : NULL;
}

/* Every probed function's entry: a free frees, a resize frees its old block, and a call with a return
 * probe keeps its arguments for it; inside another probed call only the depth counts. */
SEC("uprobe")
int call_entry(struct pt_regs *ctx) {
        __u64 cookie = bpf_get_attach_cookie(ctx), id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
        __u64 kind = cookie & 0xff, arg0 = PT_REGS_PARM1(ctx);
        HeapBpfCall *outer, call = {};

        if (stopped)
                return 0;
        outer = outer_call(id, sp, 0);
        if (outer) {
                if (cookie & HEAP_BPF_HAS_ENTRY)
                        outer->depth++;
                return 0;
        }
        if (kind == HEAP_BPF_CALL_FREE || kind == HEAP_BPF_CALL_REALLOC || kind == HEAP_BPF_CALL_IN_PLACE)
                call.old_tracked = on_free(arg0, &call.old_bytes);
        if (!(cookie & HEAP_BPF_HAS_ENTRY))
                return 0;
        call.sp = sp;
        call.args[0] = arg0;
        call.args[1] = PT_REGS_PARM2(ctx);
        call.args[2] = PT_REGS_PARM3(ctx);
        call.depth = 1;
        (void) bpf_map_update_elem(&calls, &id, &call, BPF_ANY);
        return 0;
}

/* Every probed function's return: the block it made, if the call is the outermost. */
SEC("uretprobe")
int call_return(struct pt_regs *ctx) {
        __u64 cookie = bpf_get_attach_cookie(ctx), id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
        __u64 kind = cookie & 0xff, ret = PT_REGS_RC(ctx), ptr = 0;
        HeapBpfCall *found, call;

        if (stopped)
                return 0;
        if (!(cookie & HEAP_BPF_HAS_ENTRY)) {
                /* A block glibc's malloc family made: recorded unless inside another probed call. */
                if (kind == HEAP_BPF_CALL_ALLOC && !outer_call(id, sp, 8))
                        on_alloc(ctx, ret, block_bytes(ret, cookie, NULL));
                return 0;
        }
        found = bpf_map_lookup_elem(&calls, &id);
        if (!found || found->depth == 0)
                return 0;               /* its entry came before the probes */
        if (--found->depth > 0)
                return 0;
        call = *found;
        (void) bpf_map_delete_elem(&calls, &id);
        switch (kind) {
        case HEAP_BPF_CALL_ALLOC:
                on_alloc(ctx, ret, block_bytes(ret, cookie, &call));
                break;
        case HEAP_BPF_CALL_REALLOC:
                if (ret)
                        on_alloc(ctx, ret, block_bytes(ret, cookie, &call));
                else if (call.old_tracked && call_arg(&call, (cookie >> 8) & 15) != 0 &&
                         !(cookie & HEAP_BPF_FREES_ON_FAILURE))
                        on_alloc(ctx, call.args[0], call.old_bytes);    /* failed: the old block is still there */
                break;
        case HEAP_BPF_CALL_POSIX_MEMALIGN:
                if ((int) ret == 0 && call.args[0] &&
                    bpf_probe_read_user(&ptr, sizeof(ptr), (const void *) call.args[0]) == 0)
                        on_alloc(ctx, ptr, block_bytes(ptr, cookie, &call));
                break;
        case HEAP_BPF_CALL_IN_PLACE:
                /* jemalloc's xallocx(): the same block, of the usable size it returns. */
                on_alloc(ctx, call.args[0], ret);
                break;
        }
        return 0;
}
