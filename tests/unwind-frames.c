/* SPDX-License-Identifier: MIT */

/*
 * Frames of the shapes the heap unwinder must follow, built with -O2 and without frame pointers
 * (tests/meson.build) so that only their unwind tables say where each caller's frame is: plain frames
 * (CFA from %rsp), frames with a variable-length array (CFA from %rbp), a large frame, and a realigned
 * frame (GCC's DRAP: the CFA read from memory, %rbp saved at %rbp). Each calls leaf(arg) at its bottom
 * and returns a value that depends on the call, so that no call becomes a jump.
 */

#include <string.h>

#include "unwind-frames.h"

__attribute__((noinline)) int frames_chain(int depth, FramesLeaf leaf, void *arg) {
        volatile int here = depth;

        if (depth <= 0)
                return leaf(arg) + here;
        return frames_chain(depth - 1, leaf, arg) + here;
}

int frames_vla(int n, FramesLeaf leaf, void *arg) {
        volatile char buf[n];

        buf[0] = (char) n;
        buf[n - 1] = 1;
        return frames_chain(2, leaf, arg) + buf[0] + buf[n - 1];
}

int frames_big(FramesLeaf leaf, void *arg) {
        volatile char buf[100 * 1024];

        buf[0] = 1;
        buf[sizeof(buf) - 1] = 2;
        return frames_chain(1, leaf, arg) + buf[0] + buf[sizeof(buf) - 1];
}

int frames_realigned(int n, FramesLeaf leaf, void *arg) {
        char vla[n];
        __attribute__((aligned(64))) char aligned[64];

        memset(aligned, n, sizeof(aligned));
        memset(vla, 1, (size_t) n);
        __asm__ volatile("" : : "r"(aligned), "r"(vla) : "memory");
        return frames_chain(1, leaf, arg) + aligned[3] + vla[0];
}
