/* SPDX-License-Identifier: MIT */

/*
 * A program whose blocks live known lives, for memstrackctl record's lifetimes and timeline
 * (tests/test-heap-record.py, cases lifetimes and phases). It measures each block's life itself and writes
 * what memstrack must report to $HEAP_TARGET_EXPECT, as JSON, per call site (function):
 *
 *   frees             blocks freed there
 *   temporaryAtLeast  those surely temporary: freed on their thread before it allocated again, and within a
 *                     millisecond of the allocation even counting all the time around the library's own
 *                     clock reads (from before malloc() to after free() returned)
 *   temporaryAtMost   the same, adding those whose life straddles the millisecond by that reckoning (a
 *                     preemption between the calls: rare, and counted rather than guessed)
 *   minLifetimeUsec   a lower bound of every block's life there (from after malloc() returned to before
 *                     free() was called)
 *
 * lifetimes: three sites on one thread. temporary_site() allocates and at once frees, 2000 times;
 * interleaved_site() allocates, then allocates at other_site(), then frees its block (never temporary: its
 * thread allocated in between) and the other (temporary, as the thread's last allocation); kept_site()
 * holds 50 blocks until the others are done.
 *
 * phases: for --at and --between. Phase one allocates 8 MiB at phase_one_site() and keeps it; after a
 * pause of at least PAUSE_MSEC, phase two frees it and allocates 4 MiB at phase_two_site(), kept to the
 * end. The expectations give each phase's start and end, and the program's end, in microseconds of
 * CLOCK_MONOTONIC: the recording says when the heap began on the same clock (HeapImage.startUsec).
 *
 * No stdio: the only allocations are these and the C library's few.
 */

#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TEMPORARY_NSEC 1000000          /* HEAP_TEMPORARY_NSEC of daemon/core/heap.h */
#define PAUSE_MSEC 400

typedef struct Expect {
        const char *function;
        uint64_t frees, temporary_at_least, temporary_at_most, min_lifetime_nsec;
} Expect;

static Expect expects[8];
static int n_expects;

static uint64_t now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static Expect *expect(const char *function) {
        for (int i = 0; i < n_expects; i++)
                if (strcmp(expects[i].function, function) == 0)
                        return &expects[i];
        expects[n_expects] = (Expect) { .function = function, .min_lifetime_nsec = UINT64_MAX };
        return &expects[n_expects++];
}

/* A block's life as measured around the calls: [after_alloc, before_free] surely inside the library's
 * two stamps, [before_alloc, after_free] surely around them. temporary: the thread made no allocation in
 * between. */
static void lived(const char *function, uint64_t before_alloc, uint64_t after_alloc, uint64_t before_free,
                uint64_t after_free, int temporary) {
        Expect *e = expect(function);
        e->frees++;
        if (temporary && after_free - before_alloc < TEMPORARY_NSEC)
                e->temporary_at_least++;
        if (temporary && before_free - after_alloc < TEMPORARY_NSEC)
                e->temporary_at_most++;
        if (before_free - after_alloc < e->min_lifetime_nsec)
                e->min_lifetime_nsec = before_free - after_alloc;
}

static void write_expectations(const char *phases) {
        const char *path = getenv("HEAP_TARGET_EXPECT");
        static char buf[8192];
        size_t n = 0;

        if (!path)
                return;
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "{%s\"sites\": [", phases ?: "");
        for (int i = 0; i < n_expects; i++) {
                const Expect *e = &expects[i];
                n += (size_t) snprintf(buf + n, sizeof(buf) - n,
                                       "%s{\"function\": \"%s\", \"frees\": %llu, \"temporaryAtLeast\": %llu, "
                                       "\"temporaryAtMost\": %llu, \"minLifetimeUsec\": %llu}",
                                       i ? ", " : "", e->function, (unsigned long long) e->frees,
                                       (unsigned long long) e->temporary_at_least,
                                       (unsigned long long) e->temporary_at_most,
                                       (unsigned long long) (e->frees ? e->min_lifetime_nsec / 1000 : 0));
        }
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "]}\n");
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, n) != (ssize_t) n)
                abort();
        close(fd);
}

/* Each site a function of its own that is never inlined: the call site memstrack names. */
#define SITE __attribute__((noinline)) static

SITE void *temporary_site(size_t n) {
        return malloc(n);
}

SITE void *interleaved_site(size_t n) {
        return malloc(n);
}

SITE void *other_site(size_t n) {
        return malloc(n);
}

SITE void *kept_site(size_t n) {
        return malloc(n);
}

SITE void *phase_one_site(size_t n) {
        return malloc(n);
}

SITE void *phase_two_site(size_t n) {
        return malloc(n);
}

/* Keeps the compiler from dropping a block it never reads. */
static void touch(void *p, size_t n) {
        memset(p, 0x5a, n);
        __asm__ volatile("" : : "r"(p) : "memory");
}

static int mode_lifetimes(void) {
        void *kept[50];
        uint64_t kept_at[50];

        for (int i = 0; i < 50; i++) {
                kept[i] = kept_site(100);
                kept_at[i] = now_nsec();
                if (!kept[i])
                        abort();
        }
        for (int i = 0; i < 2000; i++) {
                uint64_t t0 = now_nsec();
                void *p = temporary_site(64);
                uint64_t t1 = now_nsec();
                if (!p)
                        abort();
                touch(p, 64);
                uint64_t t2 = now_nsec();
                free(p);
                lived("temporary_site", t0, t1, t2, now_nsec(), 1);
        }
        for (int i = 0; i < 300; i++) {
                uint64_t t0 = now_nsec();
                void *p = interleaved_site(48);
                uint64_t t1 = now_nsec();
                void *q = other_site(32);
                uint64_t t2 = now_nsec();
                if (!p || !q)
                        abort();
                touch(p, 48);
                touch(q, 32);
                uint64_t t3 = now_nsec();
                free(p);
                uint64_t t4 = now_nsec();
                free(q);
                uint64_t t5 = now_nsec();
                lived("interleaved_site", t0, t1, t3, t4, 0);
                lived("other_site", t1, t2, t4, t5, 1);
        }
        for (int i = 0; i < 50; i++) {
                uint64_t t = now_nsec();
                free(kept[i]);
                lived("kept_site", kept_at[i], kept_at[i], t, now_nsec(), 0);
        }
        write_expectations(NULL);
        return 0;
}

static uint64_t now_usec(void) {
        return now_nsec() / 1000;
}

static void pause_msec(unsigned msec) {
        struct timespec ts = { .tv_sec = msec / 1000, .tv_nsec = (long) (msec % 1000) * 1000000 };
        while (nanosleep(&ts, &ts) != 0)
                ;
}

static int mode_phases(void) {
        char phases[256];
        uint64_t one_start = now_usec();
        void *one = phase_one_site((size_t) 8 << 20);
        if (!one)
                abort();
        touch(one, (size_t) 8 << 20);
        uint64_t one_end = now_usec();
        pause_msec(PAUSE_MSEC);
        uint64_t two_start = now_usec();
        free(one);
        void *two = phase_two_site((size_t) 4 << 20);
        if (!two)
                abort();
        touch(two, (size_t) 4 << 20);
        uint64_t two_end = now_usec();
        pause_msec(PAUSE_MSEC);
        (void) snprintf(phases, sizeof(phases),
                        "\"phaseOneUsec\": [%llu, %llu], \"phaseTwoUsec\": [%llu, %llu], \"endUsec\": %llu, ",
                        (unsigned long long) one_start, (unsigned long long) one_end,
                        (unsigned long long) two_start, (unsigned long long) two_end,
                        (unsigned long long) now_usec());
        write_expectations(phases);
        free(two);
        return 0;
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "phases") == 0)
                return mode_phases();
        return mode_lifetimes();
}
