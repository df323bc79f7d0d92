/* SPDX-License-Identifier: MIT */

/*
 * A malloc-heavy workload for bench/measure-heap.py: THREADS threads (4 by default), each with 1024 slots,
 * each step freeing a random slot and allocating a random size of 16 B to 64 KiB into it (and touching
 * its first byte), for STEPS steps per thread. Prints its own peak RSS in KiB at the end, so the memory the
 * heap library adds to a process can be read beside the untraced run's.
 *
 * malloc-bench [STEPS [THREADS]]
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define SLOTS 1024

static long steps = 2000000;

static void *worker(void *arg) {
        uint64_t x = (uint64_t) (uintptr_t) arg * 0x9E3779B97F4A7C15u + 1;
        char *slot[SLOTS] = { 0 };

        for (long i = 0; i < steps; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                size_t k = (size_t) (x % SLOTS), n = 16 + (size_t) ((x >> 20) % (64 * 1024 - 16 + 1));
                free(slot[k]);
                slot[k] = malloc(n);
                if (!slot[k])
                        abort();
                slot[k][0] = (char) i;
        }
        for (size_t k = 0; k < SLOTS; k++)
                free(slot[k]);
        return NULL;
}

int main(int argc, char *argv[]) {
        int threads = 4;
        pthread_t t[64];
        struct rusage ru;

        if (argc > 1)
                steps = strtol(argv[1], NULL, 10);
        if (argc > 2)
                threads = atoi(argv[2]);
        if (steps <= 0 || threads < 1 || threads > 64)
                return 2;
        for (int i = 0; i < threads; i++)
                if (pthread_create(&t[i], NULL, worker, (void *) (uintptr_t) (i + 1)) != 0)
                        return 1;
        for (int i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
        getrusage(RUSAGE_SELF, &ru);
        fprintf(stderr, "maxrss_kib %ld\n", ru.ru_maxrss);
        return 0;
}
