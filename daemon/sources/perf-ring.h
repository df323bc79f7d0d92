/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The two pieces of the perf ABI that both of its users need, the perf source (perf.c) and the OOM
 * watcher (oom-watch.c): opening an event, and reading a record that may wrap around the end of a
 * ring's data area. Everything else about perf stays in perf.c.
 */

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "macro.h"

/* perf_event_open(2), which libc does not wrap: the fd, or -errno. */
static inline int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                unsigned long flags) {
        long r = syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, flags);

        return r < 0 ? negative_errno() : (int) r;
}

/* Copies len bytes at ring position pos of a data area of data_size bytes (a power of two, as perf
 * requires), wrapping around its end. */
static inline void perf_ring_copy(const uint8_t *data, uint64_t data_size, uint64_t pos, void *dst, size_t len) {
        size_t offset = (size_t) (pos & (data_size - 1)), first = MIN(len, (size_t) data_size - offset);

        memcpy(dst, data + offset, first);
        memcpy((uint8_t *) dst + first, data, len - first);
}
