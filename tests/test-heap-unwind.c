/* SPDX-License-Identifier: MIT */

/*
 * The heap library's unwinder (heap/unwind.c) against glibc's backtrace() on the same stacks: frames
 * without frame pointers of every shape GCC makes (tests/unwind-frames.c), a signal handler's stack
 * through the signal trampoline, a thread's stack to its outermost frame, a stack deeper than the frames
 * kept; and its cache: a second walk works out no rule, a flush makes it work them out again, and it
 * grows past its first size without losing rules for good.
 */

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "tests.h"
#include "unwind-frames.h"
#include "unwind.h"

#define UNWOUND_MAX 64

typedef struct Capture {
        uint64_t unwound[UNWOUND_MAX];
        size_t n_unwound;
        UnwindEnd end;
        void *traced[UNWOUND_MAX + 8];
        int n_traced;
} Capture;

/* Both walks from here (this file keeps frame pointers): backtrace()'s first address is its own call in
 * this function, the unwinder's first is this function's return address. */
__attribute__((noinline)) static int capture(void *arg) {
        Capture *c = arg;

        c->n_traced = backtrace(c->traced, (int) (sizeof(c->traced) / sizeof(c->traced[0])));
        c->n_unwound = unwind_stack(__builtin_frame_address(0), c->unwound, UNWOUND_MAX, &c->end);
        return 1;
}

/* The unwinder saw what backtrace() saw, to the outermost frame (or the first max frames of it). */
static void assert_same(const Capture *c, size_t min_frames) {
        ASSERT_EQ(c->end, UNWIND_COMPLETE);
        ASSERT_GT(c->n_traced, 1);
        size_t traced = (size_t) c->n_traced - 1;
        ASSERT_EQ(c->n_unwound, traced < UNWOUND_MAX ? traced : UNWOUND_MAX);
        ASSERT_GE(c->n_unwound, min_frames);
        for (size_t i = 0; i < c->n_unwound; i++)
                if (c->unwound[i] != (uint64_t) (uintptr_t) c->traced[i + 1]) {
                        fprintf(stderr, "frame %zu: unwound %#" PRIx64 ", backtrace() %p\n", i, c->unwound[i],
                                c->traced[i + 1]);
                        ASSERT_TRUE(false);
                }
}

static void test_plain_frames(void) {
        Capture c;

        ASSERT_GT(frames_chain(10, capture, &c), 0);
        assert_same(&c, 12);
}

static void test_vla_frame(void) {
        Capture c;

        ASSERT_GT(frames_vla(100, capture, &c), 0);
        assert_same(&c, 5);
}

static void test_big_frame(void) {
        Capture c;

        ASSERT_GT(frames_big(capture, &c), 0);
        assert_same(&c, 4);
}

static void test_realigned_frame(void) {
        Capture c;

        ASSERT_GT(frames_realigned(40, capture, &c), 0);
        assert_same(&c, 4);
}

static void test_deeper_than_kept(void) {
        Capture c;

        ASSERT_GT(frames_chain(100, capture, &c), 0);
        ASSERT_EQ(c.n_unwound, (size_t) UNWOUND_MAX);
        assert_same(&c, UNWOUND_MAX);
}

/* Walks n times from one call instruction, the misses so far after each: every walk meets the same return
 * addresses only if the compiler neither unrolls nor peels this loop (clang unrolled it in the test's body,
 * gcc peeled it even with "#pragma GCC unroll 1"), so it is built without optimization. */
#if defined(__clang__)
__attribute__((noinline, optnone))
#else
__attribute__((noinline, optimize("O0")))
#endif
static void walk_repeatedly(Capture *c, uint64_t *misses, size_t n) {
        uint64_t cached;

        for (size_t i = 0; i < n; i++) {
                ASSERT_GT(frames_chain(6, capture, &c[i]), 0);
                unwind_get_stats(&cached, &misses[i]);
        }
}

/* Rules are cached: the same stack again works out none; after a flush every one again. */
static void test_cache(void) {
        Capture c[3];
        uint64_t cached, misses[3];

        walk_repeatedly(c, misses, 2);
        unwind_flush();
        walk_repeatedly(&c[2], &misses[2], 1);
        unwind_get_stats(&cached, &misses[2]);
        for (size_t i = 0; i < 3; i++)
                assert_same(&c[i], 8);
        ASSERT_GT(cached, 0);
        ASSERT_EQ(misses[1], misses[0]);
        ASSERT_EQ(c[0].n_unwound, c[1].n_unwound);
        ASSERT_EQ(memcmp(c[0].unwound, c[1].unwound, c[0].n_unwound * sizeof(uint64_t)), 0);
        /* Every distinct return address again: capture's, frames_chain's into itself and into
         * walk_repeatedly, and those of the callers above. */
        ASSERT_GE(misses[2], misses[1] + 5);
}

/* 1,024 call sites, one return address each: neither inlined nor folded into one (GCC folds identical
 * functions unless noipa; clang, which has no noipa, does not fold them). */
#if defined(__clang__)
#define SITE_ATTRIBUTES __attribute__((noinline))
#else
#define SITE_ATTRIBUTES __attribute__((noipa))
#endif
#define SITE(n) \
        SITE_ATTRIBUTES static int site_##n(Capture *c) { \
                int r = capture(c); \
                __asm__ volatile("" ::: "memory"); \
                return r; \
        }
#define SITES4(n) SITE(n##0) SITE(n##1) SITE(n##2) SITE(n##3)
#define SITES16(n) SITES4(n##0) SITES4(n##1) SITES4(n##2) SITES4(n##3)
#define SITES64(n) SITES16(n##0) SITES16(n##1) SITES16(n##2) SITES16(n##3)
#define SITES256(n) SITES64(n##0) SITES64(n##1) SITES64(n##2) SITES64(n##3)
SITES256(0) SITES256(1) SITES256(2) SITES256(3)
#define REF(n) site_##n,
#define REFS4(n) REF(n##0) REF(n##1) REF(n##2) REF(n##3)
#define REFS16(n) REFS4(n##0) REFS4(n##1) REFS4(n##2) REFS4(n##3)
#define REFS64(n) REFS16(n##0) REFS16(n##1) REFS16(n##2) REFS16(n##3)
#define REFS256(n) REFS64(n##0) REFS64(n##1) REFS64(n##2) REFS64(n##3)
static int (*const sites[])(Capture *) = { REFS256(0) REFS256(1) REFS256(2) REFS256(3) };
#define N_SITES (sizeof(sites) / sizeof(sites[0]))

/* More rules than the cache's first table holds: it grows (its rules worked out again once, in the pass
 * after), and then keeps them all: a third pass works out none. Every stack stays right. Built without
 * optimization, as walk_repeatedly() is: each pass calls from the same instructions. */
#if defined(__clang__)
__attribute__((noinline, optnone))
#else
__attribute__((noinline, optimize("O0")))
#endif
static void test_cache_growth(void) {
        static Capture c;
        uint64_t cached, misses[4];

        for (size_t pass = 0; pass < 3; pass++) {
                unwind_get_stats(&cached, &misses[pass]);
                for (size_t i = 0; i < N_SITES; i++) {
                        ASSERT_EQ(sites[i](&c), 1);
                        if (pass == 2 && i % 64 == 0)
                                assert_same(&c, 3);
                }
        }
        unwind_get_stats(&cached, &misses[3]);
        ASSERT_GE(misses[1] - misses[0], (uint64_t) N_SITES);
        ASSERT_EQ(misses[3], misses[2]);
        ASSERT_GE(cached, (uint64_t) N_SITES);
}

static Capture in_handler;

static void on_signal(int sig) {
        (void) frames_chain(2, capture, &in_handler);
}

static int raise_signal(void *arg) {
        return raise(SIGUSR1) == 0;
}

/* A handler's stack goes through the signal trampoline into the interrupted frames (raise()'s). */
static void test_signal_frame(void) {
        struct sigaction sa = { .sa_handler = on_signal }, old;

        ASSERT_OK(sigaction(SIGUSR1, &sa, &old));
        ASSERT_GT(frames_chain(3, raise_signal, NULL), 0);
        ASSERT_OK(sigaction(SIGUSR1, &old, NULL));
        /* capture's callers, the trampoline, raise() and what called it */
        assert_same(&in_handler, 10);
}

static void *thread_main(void *arg) {
        (void) frames_chain(5, capture, arg);
        return NULL;
}

/* A thread's stack ends at its outermost frame (clone's, whose return address is undefined). */
static void test_thread(void) {
        pthread_t t;
        Capture c;

        ASSERT_EQ(pthread_create(&t, NULL, thread_main, &c), 0);
        ASSERT_EQ(pthread_join(t, NULL), 0);
        assert_same(&c, 8);
}

int main(void) {
#if !defined(__x86_64__)
        fprintf(stderr, "The heap unwinder follows x86-64 frames only: skipped.\n");
        return EXIT_TEST_SKIP;
#endif
        ASSERT_TRUE(unwind_init());
        TEST(test_plain_frames);
        TEST(test_vla_frame);
        TEST(test_big_frame);
        TEST(test_realigned_frame);
        TEST(test_deeper_than_kept);
        TEST(test_cache);
        TEST(test_cache_growth);
        TEST(test_signal_frame);
        TEST(test_thread);
        return 0;
}
