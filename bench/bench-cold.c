/* SPDX-License-Identifier: MIT */

/*
 * What an access round (core/coldness.c) costs: BLOCKS single pages of 64 processes and 512 call chains
 * in the page table, REGIONS regions over them, one round timed five times (docs/performance.md).
 *
 * Usage: bench-cold [BLOCKS [REGIONS]]   (default 1000000 1500)
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accounting.h"
#include "coldness.h"
#include "time-util.h"

#define ROUNDS 5

int main(int argc, char **argv) {
        size_t n_blocks = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
        size_t n_regions = argc > 2 ? strtoul(argv[2], NULL, 10) : 1500;
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        uint64_t chain[3] = { 0xffffffff81003010, 0xffffffff81005020, 0 };
        Accounting *a = NULL;

        if (n_blocks == 0 || n_regions == 0)
                return 2;
        c.expected_pages = n_blocks * 2;
        if (accounting_new(&c, NULL, &a) < 0)
                return 1;
        /* Every other pfn, so the regions hold blocks and gaps. */
        for (size_t i = 0; i < n_blocks; i++) {
                chain[2] = 0xffffffff8100e010 + (i % 512) * 16;
                MsEvent e = {
                        .type = MS_EVENT_PAGE_ALLOC, .pid = 100 + (int32_t) (i % 64), .tid = 100 + (int32_t) (i % 64),
                        .timestamp_nsec = NSEC_PER_SEC,
                        .page = { .pfn = i * 2, .order = 0, .migrate_type = -1,
                                  .stack = { .frames = chain, .n_frames = 3, .n_kernel_frames = 3 } },
                };
                accounting_handle_event(a, &e);
        }
        AccessRegion *regions = calloc(n_regions, sizeof(AccessRegion));
        Coldness *cold = coldness_new(10 * USEC_PER_SEC, 60 * USEC_PER_SEC);
        if (!regions || !cold)
                return 1;
        uint64_t span = n_blocks * 2 / n_regions + 1;
        for (size_t i = 0; i < n_regions; i++)
                regions[i] = (AccessRegion) { i * span, (i + 1) * span, (i % 3) * 60 * USEC_PER_SEC };
        AccessSample s = { regions, n_regions, 500 * NSEC_PER_SEC };
        if (coldness_round(cold, a, &s, 600 * NSEC_PER_SEC) < 0)
                return 1;
        uint64_t start = now_nsec(CLOCK_MONOTONIC);
        for (int k = 0; k < ROUNDS; k++)
                (void) coldness_round(cold, a, &s, 600 * NSEC_PER_SEC);
        uint64_t took = now_nsec(CLOCK_MONOTONIC) - start;
        printf("%zu blocks, %zu regions: %.1f ms a round; the figures kept: %zu KiB\n", n_blocks, n_regions,
               (double) took / ROUNDS / 1e6, coldness_memory_bytes(cold) / 1024);
        coldness_free(cold);
        free(regions);
        accounting_free(a);
        return 0;
}
