/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Call stacks of the running thread for the heap library, from the unwind tables (.eh_frame) of the code
 * on the stack, as glibc's backtrace() takes them, but with the rule of each return address cached: where
 * the caller's frame starts (CFA), where the return address and the caller's frame pointer are saved. A
 * stack of known addresses then costs a hash lookup and two loads per frame, where libgcc's unwinder
 * searches an FDE and interprets its CFI every time.
 *
 * Safe in the heap library's hooks: no allocation, no lock (the cache is lock-free; a rule not in it is
 * worked out with _dl_find_object(), which takes none, or dl_iterate_phdr() on older glibc), no system call
 * once the cache is mapped. It reads the stack only where the unwind tables say the caller saved something,
 * as libgcc does.
 *
 * Frames it cannot follow (a CFA computed by an expression other than the two GCC emits for realigned
 * stacks, registers saved in other registers, code without unwind tables such as JIT code) end the walk
 * with UNWIND_UNSUPPORTED: the caller falls back to backtrace(), so such stacks are as complete as before.
 * x86-64 only; elsewhere every walk is unsupported.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum UnwindEnd {
        UNWIND_COMPLETE,        /* the outermost frame was reached (or max frames were taken) */
        UNWIND_UNSUPPORTED,     /* a frame it cannot follow: the frames so far are right, the rest missing */
} UnwindEnd;

/* Maps the cache; false if it cannot (every walk is then unsupported). Called once, before any walk. */
bool unwind_init(void);

/*
 * The return addresses of the calling thread's stack, outermost last, from the frame whose frame pointer
 * is frame (a function built with frame pointers: frame[0] is its caller's frame pointer, frame[1] its
 * return address, which is the first address returned). Fills at most max; the count is returned, and in
 * *ret_end why the walk ended.
 */
size_t unwind_stack(void *frame, uint64_t *ret, size_t max, UnwindEnd *ret_end);

/* Forgets every cached rule: code was unmapped (dlclose), and its addresses may hold other code next. */
void unwind_flush(void);

/* Rules cached, rules worked out (misses), for tests and measurements. */
void unwind_get_stats(uint64_t *ret_cached, uint64_t *ret_misses);
