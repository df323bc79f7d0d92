/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A recorded heap at a moment of its life, or over a window of it, from its timeline (HeapImage.timeline:
 * what each frame allocated and freed in each time bucket): `memstrackctl report --at` and `--between` of a
 * saved record. Each works on one HeapImage of a Heap reply, in place, rewriting its tree's now-values
 * (currentBytes, currentBlocks) so that the heap formats render the moment or the window as they render
 * "now", and marking the image with what it now shows:
 *
 *   at:      each frame's bytes and blocks live at that moment: everything its stacks allocated in the
 *            buckets that began before it, less what they freed there. The moment is rounded up to the
 *            end of its bucket (the image's "moment": {"usec", "bucketUsec"}).
 *   between: each frame's bytes and blocks allocated in the buckets that began in [from, to), and in
 *            windowFreedBytes/windowFreedBlocks beside them what was freed there, at the frames that had allocated it
 *            (the image's "window": {"fromUsec", "toUsec", "bucketUsec"}).
 *
 * errorBytes become 0: the timeline holds the sampled blocks' weights, exact with every call's stack
 * (sampleInterval 1) and estimates otherwise, which the renderers say.
 */

#include <stdint.h>

#include <jansson.h>

/* -ENODATA: the image has no timeline (a record saved without one); -EINVAL: a malformed one; -ENOMEM. */
int heap_moment_at(json_t *image, uint64_t at_usec);
int heap_moment_between(json_t *image, uint64_t from_usec, uint64_t to_usec);
