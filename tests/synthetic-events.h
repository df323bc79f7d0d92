/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Synthetic events for the API tests (service, query, summary): the only place these tests build an
 * MsEvent, so a change of the event record is adapted here once. Each helper feeds one event to a.
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
        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_TASK_NEW, .pid = pid, .tid = pid, .task.name = comm });
}

static inline void synthetic_exit(Accounting *a, int32_t pid) {
        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_TASK_EXIT, .pid = pid, .tid = pid });
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
        const uint64_t *frames = chain == SYNTHETIC_EXT4 ? synthetic_chain_ext4 :
                                 chain == SYNTHETIC_XFS ? synthetic_chain_xfs : synthetic_chain_kernel;
        uint32_t n = chain == SYNTHETIC_EXT4 ? ELEMENTSOF(synthetic_chain_ext4) :
                     chain == SYNTHETIC_XFS ? ELEMENTSOF(synthetic_chain_xfs) : ELEMENTSOF(synthetic_chain_kernel);

        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_PAGE_ALLOC, .pid = pid, .tid = pid,
                                      .cgroup_id = synthetic_cgroup_of(pid),
                                      .page = { .pfn = pfn, .order = order, .migrate_type = -1,
                                                .stack = { .frames = frames, .n_frames = n, .n_kernel_frames = n } } });
}

/* An allocation whose stack goes on into user space (memstrackd --user-stacks): two kernel frames of the
 * kernel chain, then two user addresses without a symbol file. */
static const uint64_t synthetic_chain_user[] = { 0xffffffff81003010, 0xffffffff81005020, 0x7f3a12345678,
                                                 0x55d0c0ffee00 };

static inline void synthetic_alloc_user(Accounting *a, int32_t pid, uint64_t pfn) {
        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_PAGE_ALLOC, .pid = pid, .tid = pid,
                                      .page = { .pfn = pfn, .migrate_type = -1,
                                                .stack = { .frames = synthetic_chain_user,
                                                           .n_frames = ELEMENTSOF(synthetic_chain_user),
                                                           .n_kernel_frames = 2 } } });
}

static inline void synthetic_free(Accounting *a, int32_t pid, uint64_t pfn, uint32_t order) {
        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_PAGE_FREE, .pid = pid, .tid = pid,
                                      .page = { .pfn = pfn, .order = order } });
}

static inline void synthetic_lost(Accounting *a, uint32_t cpu, uint64_t n) {
        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_LOST, .cpu = cpu, .lost.n_lost = n });
}

/* An aggregated sample of pages: pid's pages through the chain changed by delta, rising at most peak. */
static inline void synthetic_sample(Accounting *a, int32_t pid, int64_t delta, uint64_t peak, SyntheticChain chain) {
        const uint64_t *frames = chain == SYNTHETIC_EXT4 ? synthetic_chain_ext4 :
                                 chain == SYNTHETIC_XFS ? synthetic_chain_xfs : synthetic_chain_kernel;
        uint32_t n = chain == SYNTHETIC_EXT4 ? ELEMENTSOF(synthetic_chain_ext4) :
                     chain == SYNTHETIC_XFS ? ELEMENTSOF(synthetic_chain_xfs) : ELEMENTSOF(synthetic_chain_kernel);

        synthetic_feed(a, (MsEvent) { .type = MS_EVENT_SAMPLE, .pid = pid, .tid = pid,
                                      .sample = { .stack = { .frames = frames, .n_frames = n, .n_kernel_frames = n },
                                                  .unit = LEDGER_PAGES, .delta = delta, .peak = peak } });
}

/* A slab object allocation (bytes > 0) or free (bytes == 0) at ptr. */
static inline void synthetic_object(Accounting *a, int32_t pid, uint64_t ptr, uint64_t bytes) {
        synthetic_feed(a, (MsEvent) { .type = bytes > 0 ? MS_EVENT_OBJECT_ALLOC : MS_EVENT_OBJECT_FREE,
                                      .pid = pid, .tid = pid, .cgroup_id = synthetic_cgroup_of(pid),
                                      .object = { .ptr = ptr, .bytes_requested = bytes, .bytes_allocated = bytes } });
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
