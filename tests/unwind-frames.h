/* SPDX-License-Identifier: MIT */
#pragma once

/* Frames for tests/test-heap-unwind.c, built without frame pointers (tests/unwind-frames.c). */

typedef int (*FramesLeaf)(void *arg);

/* depth frames of itself, then leaf(arg). */
int frames_chain(int depth, FramesLeaf leaf, void *arg);
/* A frame with a variable-length array of n bytes (n > 0). */
int frames_vla(int n, FramesLeaf leaf, void *arg);
/* A frame of 100 KiB. */
int frames_big(FramesLeaf leaf, void *arg);
/* A frame realigned to 64 bytes, with a variable-length array of n bytes (n > 0). */
int frames_realigned(int n, FramesLeaf leaf, void *arg);
