/* SPDX-License-Identifier: MIT OR GPL-2.0-only */

/*
 * bpf-floor's programs (bench/bpf-floor.c loads one variant): what each piece of an in-kernel design for
 * exact mode costs per page event, measured alone on the page tracepoints, apart from memstrackd. Not
 * memstrackd's program; nothing here is read back beyond the counters that prove the work was done.
 *
 * Variants (a pair of programs, allocation and free, named VARIANT_alloc and VARIANT_free):
 *   empty    both return at once: the kernel's dispatch, the floor of any design with two programs a page
 *   owner    ownership in a pfn-indexed array (the owner's slot at the block's first page), counters per
 *            process (current, true peak) in an array of slots, the slot found through task local storage
 *            of the thread group leader; per-owner atomics, no global shared line
 *   total    owner, plus one global counter of all pages (fetch-add, and a compare-and-swap when a new
 *            peak is reached): the shared cache line per event the issue asks about
 *   cgroup   owner, plus counters per cgroup (the slot's cgroup, known when the slot was made)
 *   kstack   a count per kernel stack in the kernel (bpf_get_stackid() into a stack map, a hash map of
 *            counts by stack id): what bpftrace's `@[kstack] = count()` does, for full mode
 *   getstack the frames copied into a ring record per allocation (bpf_get_stack(), ring output): full
 *            mode as memstrackd does it today, without its batch and ordering
 * The twin variant is owner with a second, empty program on mm_page_free (what a nested twin costs
 * beyond its body: the tracepoint's second probe). Parts of owner alone:
 *   cell     only the pfn-indexed array: the owner's tgid stored at allocation, read and cleared at free
 *   storage  only the task local storage lookup at allocation (frees return at once)
 *   counter  the array and the counters, the slot the tgid's low bits (no local storage)
 * And what orders events across CPUs without ownership in the kernel:
 *   seq      one global counter taken by every event (fetch-add): today's event_seq
 *   clock    bpf_ktime_get_ns() in every event: what a time-ordered merge of per-CPU streams needs
 */

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by bpf-floor.c: struct page index bits kept (the array's size is 1 << page_bits). */
const volatile __u32 page_bits = 23;
const volatile __u32 self_tgid = 0;

#define SLOTS (1u << 16)

typedef struct Owner {
        __s64 current, peak;
        __u32 cgroup_slot, pad;
        __u64 pad2[5];                  /* a cache line each: owners on different CPUs share none */
} Owner;

typedef struct Counter {
        __s64 current, peak;
        __u64 pad[6];
} Counter;

typedef struct TaskOwner {
        __u32 slot;
} TaskOwner;

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1 << 23);           /* bpf-floor.c sets it: 1 << page_bits */
        __uint(map_flags, BPF_F_MMAPABLE);
        __type(key, __u32);
        __type(value, __u32);
} page_owner SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, SLOTS);
        __type(key, __u32);
        __type(value, Owner);
} owners SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, SLOTS);
        __type(key, __u32);
        __type(value, Counter);
} cgroups SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, TaskOwner);
} task_owner SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_STACK_TRACE);
        __uint(max_entries, 1 << 14);
        __uint(key_size, sizeof(__u32));
        __uint(value_size, 127 * sizeof(__u64));
} stacks SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1 << 14);
        __type(key, __u32);
        __type(value, __u64);
} stack_counts SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 1 << 23);
} ring SEC(".maps");

struct frames {
        __u64 n;
        __u64 ip[127];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct frames);
} scratch SEC(".maps");

__u32 next_slot = 1;
__u32 next_cgroup_slot = 1;
__s64 total_current, total_peak;
__u64 untracked_frees, stack_errors;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
} address SEC(".maps");

/* The struct page's index, cut to page_bits: the array's index (vmemmap starts on a 1 GiB boundary, so the
 * cut index is the pfn plus a constant while the machine has fewer than 1 << page_bits pages). The
 * verifier allows no arithmetic on the pointer; read back from a map it is a number. */
static __always_inline __u32 page_index(const struct page *page) {
        __u32 zero = 0;
        __u64 *slot = bpf_map_lookup_elem(&address, &zero), a;

        if (!slot)
                return 0;
        *slot = (__u64) page;
        a = *(volatile __u64 *) slot;
        return (__u32) ((a / sizeof(struct page)) & ((1ULL << page_bits) - 1));
}

/* Raises *peak to value unless it is higher already (a bounded compare-and-swap: a lost race with a
 * higher value is no loss). */
static __always_inline void raise_peak(__s64 *peak, __s64 value) {
        for (int i = 0; i < 4; i++) {
                __s64 old = *(volatile __s64 *) peak;

                if (old >= value)
                        return;
                if (__sync_val_compare_and_swap(peak, old, value) == old)
                        return;
        }
}

/* The process's slot, made on its first page. */
static __always_inline __u32 process_slot(struct task_struct *t, bool with_cgroup) {
        struct task_struct *leader = t->group_leader;
        TaskOwner *to = bpf_task_storage_get(&task_owner, leader, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
        __u32 slot;

        if (!to)
                return 0;
        if (to->slot)
                return to->slot;
        slot = __sync_fetch_and_add(&next_slot, 1) & (SLOTS - 1);
        if (with_cgroup) {
                Owner *o = bpf_map_lookup_elem(&owners, &slot);

                if (o)
                        o->cgroup_slot = __sync_fetch_and_add(&next_cgroup_slot, 1) & (SLOTS - 1);
        }
        to->slot = slot;
        return slot;
}

static __always_inline void charge(__u32 slot, __s64 n, bool with_cgroup, bool with_total) {
        Owner *o = bpf_map_lookup_elem(&owners, &slot);
        __s64 now;

        if (!o)
                return;
        now = __sync_add_and_fetch(&o->current, n);
        if (n > 0 && now > o->peak)
                raise_peak(&o->peak, now);
        if (with_cgroup) {
                __u32 c = o->cgroup_slot;
                Counter *cg = bpf_map_lookup_elem(&cgroups, &c);

                if (cg) {
                        now = __sync_add_and_fetch(&cg->current, n);
                        if (n > 0 && now > cg->peak)
                                raise_peak(&cg->peak, now);
                }
        }
        if (with_total) {
                now = __sync_add_and_fetch(&total_current, n);
                if (n > 0 && now > total_peak)
                        raise_peak(&total_peak, now);
        }
}

static __always_inline int owner_alloc(struct page *page, unsigned int order, bool with_cgroup, bool with_total) {
        struct task_struct *t = bpf_get_current_task_btf();
        __u32 idx, slot, *cell;

        if (!page || t->tgid == self_tgid)
                return 0;
        slot = process_slot(t, with_cgroup);
        idx = page_index(page);
        cell = bpf_map_lookup_elem(&page_owner, &idx);
        if (!cell || !slot)
                return 0;
        *cell = slot;
        charge(slot, 1LL << (order & 31), with_cgroup, with_total);
        return 0;
}

static __always_inline int owner_free(struct page *page, unsigned int order, bool with_cgroup, bool with_total) {
        __u32 idx = page_index(page), slot, *cell;

        cell = bpf_map_lookup_elem(&page_owner, &idx);
        if (!cell)
                return 0;
        slot = *cell;
        if (!slot) {
                __sync_fetch_and_add(&untracked_frees, 1);
                return 0;
        }
        *cell = 0;
        charge(slot, -(1LL << (order & 31)), with_cgroup, with_total);
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(empty_alloc, struct page *page, unsigned int order) {
        return 0;
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(empty_free, struct page *page, unsigned int order) {
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(owner_alloc_prog, struct page *page, unsigned int order) {
        return owner_alloc(page, order, false, false);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(owner_free_prog, struct page *page, unsigned int order) {
        return owner_free(page, order, false, false);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(twin_free, struct page *page, unsigned int order) {
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(total_alloc, struct page *page, unsigned int order) {
        return owner_alloc(page, order, false, true);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(total_free, struct page *page, unsigned int order) {
        return owner_free(page, order, false, true);
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(cgroup_alloc, struct page *page, unsigned int order) {
        return owner_alloc(page, order, true, true);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(cgroup_free, struct page *page, unsigned int order) {
        return owner_free(page, order, true, true);
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(kstack_alloc, struct page *page, unsigned int order) {
        long id = bpf_get_stackid(ctx, &stacks, 0);
        __u32 key;
        __u64 one = 1, *count;

        if (id < 0) {
                __sync_fetch_and_add(&stack_errors, 1);
                return 0;
        }
        key = (__u32) id;
        count = bpf_map_lookup_elem(&stack_counts, &key);
        if (count)
                __sync_fetch_and_add(count, 1);
        else
                bpf_map_update_elem(&stack_counts, &key, &one, BPF_NOEXIST);
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(getstack_alloc, struct page *page, unsigned int order) {
        __u32 zero = 0;
        struct frames *f = bpf_map_lookup_elem(&scratch, &zero);
        long n;
        __u64 size;

        if (!f)
                return 0;
        n = bpf_get_stack(ctx, f->ip, sizeof(f->ip), 0);
        if (n < 0) {
                __sync_fetch_and_add(&stack_errors, 1);
                return 0;
        }
        f->n = (__u64) n / 8;
        size = 8 + (__u64) n;
        barrier_var(size);
        if (size > sizeof(*f))
                size = sizeof(*f);
        barrier_var(size);
        bpf_ringbuf_output(&ring, f, size, BPF_RB_NO_WAKEUP);
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(cell_alloc, struct page *page, unsigned int order) {
        struct task_struct *t = bpf_get_current_task_btf();
        __u32 idx, *cell;

        if (!page)
                return 0;
        idx = page_index(page);
        cell = bpf_map_lookup_elem(&page_owner, &idx);
        if (cell)
                *cell = (__u32) t->tgid;
        return 0;
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(cell_free, struct page *page, unsigned int order) {
        __u32 idx = page_index(page), *cell;

        cell = bpf_map_lookup_elem(&page_owner, &idx);
        if (cell && *cell)
                *cell = 0;
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(storage_alloc, struct page *page, unsigned int order) {
        struct task_struct *t = bpf_get_current_task_btf();

        return process_slot(t, false) == 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(counter_alloc, struct page *page, unsigned int order) {
        struct task_struct *t = bpf_get_current_task_btf();
        __u32 idx, slot, *cell;

        if (!page)
                return 0;
        slot = ((__u32) t->tgid & (SLOTS - 1)) | 1;
        idx = page_index(page);
        cell = bpf_map_lookup_elem(&page_owner, &idx);
        if (!cell)
                return 0;
        *cell = slot;
        charge(slot, 1LL << (order & 31), false, false);
        return 0;
}

__u64 seq_counter;
__u64 clock_sink;

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(seq_alloc, struct page *page, unsigned int order) {
        __sync_fetch_and_add(&seq_counter, 1);
        return 0;
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(seq_free, struct page *page, unsigned int order) {
        __sync_fetch_and_add(&seq_counter, 1);
        return 0;
}

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
} last_time SEC(".maps");

static __always_inline int clock_event(void) {
        __u32 zero = 0;
        __u64 *t = bpf_map_lookup_elem(&last_time, &zero);

        if (t)
                *t = bpf_ktime_get_ns();
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(clock_alloc, struct page *page, unsigned int order) {
        return clock_event();
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(clock_free, struct page *page, unsigned int order) {
        return clock_event();
}

/*
 * fentry: the floor of exact mode on fentry and fexit programs instead of the page tracepoints, where the
 * kernel has BPF trampolines (Debian's kernels; not this machine's, without function tracing): the
 * allocator's return and each free path's entry, each reading what an exact mode must (the block and its
 * order; every folio of a freed batch) into per-CPU page counts. Which functions a kernel has differs
 * (__alloc_pages_noprof since 6.10, __alloc_pages before; free_unref_folios since 6.10,
 * free_unref_page_list before): bpf-floor.c loads those the running kernel's BTF names. fcover is fentry
 * and the empty tracepoint pair together, each counting, to tell whether the functions see every page the
 * tracepoints do.
 */
enum { PAGES_TP_ALLOC, PAGES_TP_FREE, PAGES_F_ALLOC, PAGES_F_FREE, PAGES_COUNTERS };

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PAGES_COUNTERS);
        __type(key, __u32);
        __type(value, __u64);
} pages SEC(".maps");

static __always_inline void count_pages(__u32 which, __u64 n) {
        __u64 *c = bpf_map_lookup_elem(&pages, &which);

        if (c)
                *c += n;
}

/* A block of 2^order pages at page (NULL: a failed allocation, none). */
static __always_inline int count_block(__u32 which, const struct page *page, unsigned int order) {
        if (page)
                count_pages(which, 1ULL << (order & 31));
        return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(cover_alloc, struct page *page, unsigned int order) {
        return count_block(PAGES_TP_ALLOC, page, order);
}

SEC("tp_btf/mm_page_free")
int BPF_PROG(cover_free, struct page *page, unsigned int order) {
        return count_block(PAGES_TP_FREE, page, order);
}

SEC("fexit/__alloc_pages_noprof")
int BPF_PROG(fentry_alloc_noprof, gfp_t gfp, unsigned int order, int nid, nodemask_t *nodemask, struct page *ret) {
        return count_block(PAGES_F_ALLOC, ret, order);
}

SEC("fexit/__alloc_pages")
int BPF_PROG(fentry_alloc, gfp_t gfp, unsigned int order, int nid, nodemask_t *nodemask, struct page *ret) {
        return count_block(PAGES_F_ALLOC, ret, order);
}

SEC("fentry/free_unref_page")
int BPF_PROG(fentry_free_unref_page, struct page *page, unsigned int order) {
        return count_block(PAGES_F_FREE, page, order);
}

SEC("fentry/__free_pages_ok")
int BPF_PROG(fentry_free_pages_ok, struct page *page, unsigned int order) {
        return count_block(PAGES_F_FREE, page, order);
}

/* A batch of folios (PAGEVEC_SIZE, 31), each of its order: the loop an exact mode runs per batch. */
SEC("fentry/free_unref_folios")
int BPF_PROG(fentry_free_unref_folios, struct folio_batch *batch) {
        unsigned int n = BPF_CORE_READ(batch, nr);
        __u64 total = 0;

        for (unsigned int i = 0; i < 31 && i < n; i++) {
                struct folio *f = BPF_CORE_READ(batch, folios[i]);
                /* folio_order() since 6.10: a large folio's order is the low byte of its second page's flags.
                 * Read as words at their offsets, the flags first in a folio: their type became a struct of
                 * one (memdesc_flags_t) in 6.18, which CO-RE will not match with 6.12's unsigned long. */
                unsigned long flags = 0, flags_1 = 0;
                unsigned int order = 0;

                (void) bpf_probe_read_kernel(&flags, sizeof(flags), f);
                if (flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))) {
                        (void) bpf_probe_read_kernel(&flags_1, sizeof(flags_1),
                                                     (const char *) f + bpf_core_field_offset(struct folio, _flags_1));
                        order = (unsigned int) (flags_1 & 0xff);
                }
                total += 1ULL << (order & 31);
        }
        count_pages(PAGES_F_FREE, total);
        return 0;
}

/* Order-0 pages on their lru list: the walk an exact mode makes, bounded. */
SEC("fentry/free_unref_page_list")
int BPF_PROG(fentry_free_unref_page_list, struct list_head *list) {
        struct list_head *at = BPF_CORE_READ(list, next);
        __u64 total = 0;

        for (int i = 0; i < 512 && at && at != list; i++) {
                total++;
                at = BPF_CORE_READ(at, next);
        }
        count_pages(PAGES_F_FREE, total);
        return 0;
}
