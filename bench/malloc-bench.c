/* SPDX-License-Identifier: MIT */

/*
 * A malloc-heavy workload for bench/measure-heap.py: THREADS threads (4 by default), each with 1024 slots,
 * each step freeing a random slot and allocating a random size of 16 B to MAX_BYTES (64 KiB by default)
 * into it (and touching its first byte), for STEPS steps per thread. Prints its own peak RSS in KiB at the end, so the memory the
 * heap library adds to a process can be read beside the untraced run's, and the wall time of the steps.
 * With MALLOC_BENCH_WAIT set it says "ready" on standard output and waits for SIGUSR1 first, so that a
 * profiler can attach to it (record --pid, memleak -p) before it starts.
 *
 * malloc-bench [STEPS [THREADS [MAX_BYTES]]]
 */

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define SLOTS 1024

static long steps = 2000000;
static size_t max_bytes = 64 * 1024;

static void *worker(void *arg) {
        uint64_t x = (uint64_t) (uintptr_t) arg * 0x9E3779B97F4A7C15u + 1;
        char *slot[SLOTS] = { 0 };

        for (long i = 0; i < steps; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                size_t k = (size_t) (x % SLOTS), n = 16 + (size_t) ((x >> 20) % (max_bytes - 16 + 1));
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
        if (argc > 3)
                max_bytes = (size_t) strtoul(argv[3], NULL, 10);
        if (steps <= 0 || threads < 1 || threads > 64 || max_bytes < 16)
                return 2;
        if (getenv("MALLOC_BENCH_WAIT")) {
                sigset_t usr1;
                int sig;
                sigemptyset(&usr1);
                sigaddset(&usr1, SIGUSR1);
                if (sigprocmask(SIG_BLOCK, &usr1, NULL) != 0)
                        return 1;
                printf("ready\n");
                fflush(stdout);
                if (sigwait(&usr1, &sig) != 0)
                        return 1;
        }
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (int i = 0; i < threads; i++)
                if (pthread_create(&t[i], NULL, worker, (void *) (uintptr_t) (i + 1)) != 0)
                        return 1;
        for (int i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
        clock_gettime(CLOCK_MONOTONIC, &end);
        getrusage(RUSAGE_SELF, &ru);
        fprintf(stderr, "maxrss_kib %ld\n", ru.ru_maxrss);
        fprintf(stderr, "steps_wall_s %.6f\n", (double) (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
        return 0;
}
