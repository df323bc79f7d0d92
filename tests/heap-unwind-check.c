/* SPDX-License-Identifier: MIT */

/*
 * libheap-unwind-check.so, preloaded into a real program by test-heap-unwind-real.py: every 16th malloc()
 * of the program takes its stack twice, with the heap library's unwinder and with glibc's backtrace(), and
 * counts the stacks where they differ. The counts are appended to the file $HEAP_UNWIND_CHECK_OUTPUT at
 * exit, one line per process: "pid stacks unsupported mismatches".
 */

#include <execinfo.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind.h"

#define FRAMES_MAX 64
#define CHECK_EVERY 16

void *__libc_malloc(size_t n);

static __thread int busy;
static uint64_t calls, stacks, unsupported, mismatches;
static int ready;

/* The first stack that differed, for the message. */
static char first_mismatch[512];

__attribute__((noinline)) static void check_stack(void) {
        void *traced[FRAMES_MAX + 8];
        uint64_t unwound[FRAMES_MAX];
        UnwindEnd end;

        int n_traced = backtrace(traced, FRAMES_MAX + 1);
        size_t n = unwind_stack(__builtin_frame_address(0), unwound, FRAMES_MAX, &end);
        __atomic_fetch_add(&stacks, 1, __ATOMIC_RELAXED);
        if (end == UNWIND_UNSUPPORTED) {
                /* The heap library falls back to backtrace() for these: the frames so far must agree. */
                __atomic_fetch_add(&unsupported, 1, __ATOMIC_RELAXED);
                if (n_traced - 1 < (int) n)
                        n = n_traced > 0 ? (size_t) n_traced - 1 : 0;
        } else if (n_traced - 1 != (int) n)
                goto differ;
        for (size_t i = 0; i < n; i++)
                if (unwound[i] != (uint64_t) (uintptr_t) traced[i + 1])
                        goto differ;
        return;
differ:
        if (__atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED) == 0) {
                int k = snprintf(first_mismatch, sizeof(first_mismatch), "unwound %zu frames, backtrace() %d:",
                                 n, n_traced - 1);
                for (size_t i = 0; i < FRAMES_MAX && k > 0 && (size_t) k < sizeof(first_mismatch) - 40; i++)
                        k += snprintf(first_mismatch + k, sizeof(first_mismatch) - (size_t) k, " %#lx/%p",
                                      i < n ? (unsigned long) unwound[i] : 0ul,
                                      (int) i + 1 < n_traced ? traced[i + 1] : NULL);
        }
}

__attribute__((visibility("default"))) void *malloc(size_t n) {
        void *p = __libc_malloc(n);

        if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) && !busy &&
            __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED) % CHECK_EVERY == 0) {
                busy = 1;
                check_stack();
                busy = 0;
        }
        return p;
}

__attribute__((constructor)) static void start(void) {
        void *warm[4];

        busy = 1;
        (void) backtrace(warm, 4);      /* loads libgcc's unwinder, which allocates */
        busy = 0;
        if (unwind_init())
                __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void finish(void) {
        const char *path = getenv("HEAP_UNWIND_CHECK_OUTPUT");
        char line[700];

        if (!path)
                return;
        int k = snprintf(line, sizeof(line), "%d %lu %lu %lu %s\n", (int) getpid(), (unsigned long) stacks,
                         (unsigned long) unsupported, (unsigned long) mismatches, first_mismatch);
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0 && k > 0) {
                (void) !write(fd, line, (size_t) k);
                close(fd);
        }
}
