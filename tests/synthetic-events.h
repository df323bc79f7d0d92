/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Synthetic events for the tests of the core, the heap and the API: the one place the tests spell out the
 * body of an MsEvent, so a change of the event record is adapted here once. The synthetic_*_event()
 * builders return one event (tid = pid, time 0: the caller sets the header's time, cpu or cgroup where
 * it matters); the synthetic_*() helpers below them feed one event of the API tests' scene to a.
 */

#include <stdint.h>

#include "accounting.h"
#include "event.h"
#include "macro.h"

/* Addresses from tests/data/kallsyms-modules: a kernel chain and one through each module. */
static const uint64_t synthetic_chain_kernel[] = { 0xffffffff81003010, 0xffffffff81005020, 0xffffffff8100e010 };
static const uint64_t synthetic_chain_ext4[] = { 0xffffffff81003010, 0xffffffffc0002010, 0xffffffffc0001010,
                                                 0xffffffff8100a010, 0xffffffff8100e010 };
static const uint64_t synthetic_chain_xfs[] = { 0xffffffff81003010, 0xffffffffc0100010, 0xffffffff8100a010,
                                                0xffffffff8100e010 };

/* ---- Builders ------------------------------------------------------------------------------------ */

static inline MsStack synthetic_stack(const uint64_t *frames, size_t n_frames, size_t n_kernel_frames) {
        return (MsStack) { .frames = frames, .n_frames = (uint32_t) n_frames,
                           .n_kernel_frames = (uint32_t) n_kernel_frames };
}

/* An event of type by pid's thread pid, with no body: exits, and the bodies no test fills. */
static inline MsEvent synthetic_event(MsEventType type, int32_t pid) {
        return (MsEvent) { .type = type, .pid = pid, .tid = pid };
}

/* A page allocation or free of 2^order pages at pfn; migrate type unknown (-1) on allocations. */
static inline MsEvent synthetic_page_event(MsEventType type, int32_t pid, uint64_t pfn, uint32_t order,
                                           MsStack stack) {
        MsEvent e = synthetic_event(type, pid);
        e.page = (MsPageEvent) { .pfn = pfn, .order = order, .migrate_type = type == MS_EVENT_PAGE_ALLOC ? -1 : 0,
                                 .stack = stack };
        return e;
}

/* The same allocation with the kind of page: its GFP flags and migrate type. */
static inline MsEvent synthetic_page_kind_event(int32_t pid, uint64_t pfn, uint32_t order, MsStack stack,
                                                uint64_t gfp_flags, int32_t migrate_type) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, order, stack);
        e.page.gfp_flags = gfp_flags;
        e.page.migrate_type = migrate_type;
        return e;
}

/* TASK_NEW, TASK_FORK, TASK_COMM, TASK_EXIT: name (NEW, COMM) and parent (FORK, NEW) as given. */
static inline MsEvent synthetic_task_event(MsEventType type, int32_t pid, const char *name, int32_t parent_pid) {
        MsEvent e = synthetic_event(type, pid);
        e.task = (MsTaskEvent) { .name = name, .parent_pid = parent_pid };
        return e;
}

static inline MsEvent synthetic_module_event(MsEventType type, const char *name) {
        MsEvent e = synthetic_event(type, 0);
        e.module.name = name;
        return e;
}

static inline MsEvent synthetic_lost_event(uint32_t cpu, uint64_t n_lost) {
        MsEvent e = synthetic_event(MS_EVENT_LOST, 0);
        e.cpu = cpu;
        e.lost.n_lost = n_lost;
        return e;
}

/* An aggregated sample: pid's unit count through stack changed by delta, rising at most peak. */
static inline MsEvent synthetic_sample_event(int32_t pid, MsStack stack, LedgerUnit unit, int64_t delta,
                                             uint64_t peak) {
        MsEvent e = synthetic_event(MS_EVENT_SAMPLE, pid);
        e.sample = (MsSampleEvent) { .stack = stack, .unit = unit, .delta = delta, .peak = peak };
        return e;
}

/* A slab object allocation or free at ptr: bytes asked for and handed out, its cache (NULL: unknown),
 * call site (0: unknown) and stack. */
static inline MsEvent synthetic_object_event(MsEventType type, int32_t pid, uint64_t ptr, uint64_t requested,
                                             uint64_t allocated, const char *cache, uint64_t call_site,
                                             MsStack stack) {
        MsEvent e = synthetic_event(type, pid);
        e.object = (MsObjectEvent) { .ptr = ptr, .bytes_requested = requested, .bytes_allocated = allocated,
                                     .cache = cache, .call_site = call_site, .stack = stack };
        return e;
}

/* A heap's events (MsHeapEvent): its start, a block allocated or freed, its exact counts, its end. */
static inline MsEvent synthetic_heap_start_event(int32_t pid, uint64_t sample_interval, const char *comm) {
        MsEvent e = synthetic_event(MS_EVENT_HEAP_START, pid);
        e.heap.sample_interval = sample_interval;
        e.heap.comm = comm;
        return e;
}

/* HEAP_ALLOC (stack and its id, 0: none) or HEAP_FREE (no stack) of the block at ptr. */
static inline MsEvent synthetic_heap_block_event(MsEventType type, int32_t pid, uint64_t ptr, uint64_t bytes,
                                                 MsStack stack, uint32_t stack_id, MsHeapPeak peak) {
        MsEvent e = synthetic_event(type, pid);
        e.heap.ptr = ptr;
        e.heap.bytes = bytes;
        e.heap.stack = stack;
        e.heap.stack_id = stack_id;
        e.heap.peak = peak;
        return e;
}

static inline MsEvent synthetic_heap_state_event(int32_t pid, const MsHeapCounters *counters, MsHeapPeak peak) {
        MsEvent e = synthetic_event(MS_EVENT_HEAP_STATE, pid);
        e.heap.counters = counters;
        e.heap.peak = peak;
        return e;
}

static inline MsEvent synthetic_heap_end_event(int32_t pid, MsHeapEnd end) {
        MsEvent e = synthetic_event(MS_EVENT_HEAP_END, pid);
        e.heap.end = end;
        return e;
}

/* ---- The API tests' scene ------------------------------------------------------------------------ */

typedef enum SyntheticChain {
        SYNTHETIC_KERNEL,
        SYNTHETIC_EXT4,
        SYNTHETIC_XFS,
} SyntheticChain;

static inline void synthetic_feed(Accounting *a, MsEvent e) {
        static uint64_t clock_nsec = 1000;

        e.timestamp_nsec = clock_nsec++;
        accounting_handle_event(a, &e);
}

static inline void synthetic_task(Accounting *a, int32_t pid, const char *comm) {
        synthetic_feed(a, synthetic_task_event(MS_EVENT_TASK_NEW, pid, comm, 0));
}

static inline void synthetic_exit(Accounting *a, int32_t pid) {
        synthetic_feed(a, synthetic_event(MS_EVENT_TASK_EXIT, pid));
}

/* The stack of a chain: every frame a kernel one. */
static inline MsStack synthetic_chain_stack(SyntheticChain chain) {
        switch (chain) {
        case SYNTHETIC_EXT4:
                return synthetic_stack(synthetic_chain_ext4, ELEMENTSOF(synthetic_chain_ext4),
                                       ELEMENTSOF(synthetic_chain_ext4));
        case SYNTHETIC_XFS:
                return synthetic_stack(synthetic_chain_xfs, ELEMENTSOF(synthetic_chain_xfs),
                                       ELEMENTSOF(synthetic_chain_xfs));
        default:
                return synthetic_stack(synthetic_chain_kernel, ELEMENTSOF(synthetic_chain_kernel),
                                       ELEMENTSOF(synthetic_chain_kernel));
        }
}

/* The cgroup id of a pid's allocations: 100 in 1001, 200 and 300 in 1002, 400 in 1003, others none (0). */
static inline uint64_t synthetic_cgroup_of(int32_t pid) {
        switch (pid) {
        case 100:
                return 1001;
        case 200:
        case 300:
                return 1002;
        case 400:
                return 1003;
        default:
                return 0;
        }
}

/* Names the pending cgroups as the daemon's resolver would (cgroup_naming_resolve()). */
static inline void synthetic_name_units(Accounting *a) {
        static const struct {
                uint64_t id;
                const char *path, *name;
        } names[] = {
                { 1001, "/system.slice/alpha.service", "alpha.service" },
                { 1002, "/system.slice/web.service", "web.service" },
                { 1003, "/user.slice/user-1000.slice/session-3.scope", "session-3.scope" },
        };
        Units *u = accounting_units(a);

        for (uint32_t c = 1; c < units_cgroup_count(u); c++)
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (units_cgroup(u, c)->pending && units_cgroup(u, c)->id == names[i].id)
                                (void) units_cgroup_resolve(u, c, names[i].name, names[i].path);
}

static inline void synthetic_alloc(Accounting *a, int32_t pid, uint64_t pfn, uint32_t order, SyntheticChain chain) {
        MsEvent e = synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, order, synthetic_chain_stack(chain));
        e.cgroup_id = synthetic_cgroup_of(pid);
        synthetic_feed(a, e);
}

/* An allocation whose stack goes on into user space (memstrackd --user-stacks): two kernel frames of the
 * kernel chain, then two user addresses without a symbol file. */
static const uint64_t synthetic_chain_user[] = { 0xffffffff81003010, 0xffffffff81005020, 0x7f3a12345678,
                                                 0x55d0c0ffee00 };

static inline void synthetic_alloc_user(Accounting *a, int32_t pid, uint64_t pfn) {
        MsStack user = synthetic_stack(synthetic_chain_user, ELEMENTSOF(synthetic_chain_user), 2);
        synthetic_feed(a, synthetic_page_event(MS_EVENT_PAGE_ALLOC, pid, pfn, 0, user));
}

static inline void synthetic_free(Accounting *a, int32_t pid, uint64_t pfn, uint32_t order) {
        synthetic_feed(a, synthetic_page_event(MS_EVENT_PAGE_FREE, pid, pfn, order, (MsStack) {}));
}

static inline void synthetic_lost(Accounting *a, uint32_t cpu, uint64_t n) {
        synthetic_feed(a, synthetic_lost_event(cpu, n));
}

/* An aggregated sample of pages: pid's pages through the chain changed by delta, rising at most peak. */
static inline void synthetic_sample(Accounting *a, int32_t pid, int64_t delta, uint64_t peak, SyntheticChain chain) {
        synthetic_feed(a, synthetic_sample_event(pid, synthetic_chain_stack(chain), LEDGER_PAGES, delta, peak));
}

/* A slab object allocation (bytes > 0) or free (bytes == 0) at ptr. */
static inline void synthetic_object(Accounting *a, int32_t pid, uint64_t ptr, uint64_t bytes) {
        MsEvent e = synthetic_object_event(bytes > 0 ? MS_EVENT_OBJECT_ALLOC : MS_EVENT_OBJECT_FREE, pid, ptr, bytes,
                                           bytes, NULL, 0, (MsStack) {});
        e.cgroup_id = synthetic_cgroup_of(pid);
        synthetic_feed(a, e);
}

/*
 * The scene the API tests start from (pages of any size):
 *   100 alpha  8 pages through the kernel chain (vmlinux)
 *   200 beta   4 pages through ext4, 2 through xfs
 *   300 gamma  16 pages allocated and freed: 0 now, peak 16
 *   400 delta  1 page (vmlinux), then exited
 * Tracked now 15, peak 30; vmlinux 9 now, peak 24; 3 events lost on cpu 1.
 * Units: web.service (200, 300) 6 now, peak 22; alpha.service (100) 8, peak 8; session-3.scope (400) 1,
 * peak 1, no live task.
 */
static inline void synthetic_scene(Accounting *a) {
        synthetic_task(a, 100, "alpha");
        synthetic_task(a, 200, "beta");
        synthetic_task(a, 300, "gamma");
        synthetic_task(a, 400, "delta");
        synthetic_alloc(a, 100, 0x1000, 3, SYNTHETIC_KERNEL);
        synthetic_alloc(a, 200, 0x2000, 2, SYNTHETIC_EXT4);
        synthetic_alloc(a, 200, 0x3000, 1, SYNTHETIC_XFS);
        synthetic_alloc(a, 300, 0x4000, 4, SYNTHETIC_KERNEL);
        synthetic_free(a, 300, 0x4000, 4);
        synthetic_alloc(a, 400, 0x5000, 0, SYNTHETIC_KERNEL);
        synthetic_exit(a, 400);
        synthetic_lost(a, 1, 3);
        synthetic_name_units(a);
}
