/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The pieces of the perf ABI that more than the perf source (perf.c) needs: opening an event, reading a
 * record that may wrap around the end of a ring's data area, and for the watchers beside any source (the
 * OOM room's oom-watch.c, the access room's damon-watch.c) a small ring mapped and drained record by
 * record. Everything else about perf stays in perf.c.
 */

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
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

/* A ring of a watcher: the metadata page and data_pages (a power of two) pages of data. */
typedef struct PerfWatchRing {
        void *map;
        size_t map_size, data_size;
} PerfWatchRing;

/* Maps fd's ring. -errno. */
static inline int perf_watch_ring_map(int fd, size_t data_pages, PerfWatchRing *ret) {
        size_t page_size = (size_t) sysconf(_SC_PAGESIZE);
        PerfWatchRing r = { .data_size = data_pages * page_size, .map_size = (data_pages + 1) * page_size };

        r.map = mmap(NULL, r.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r.map == MAP_FAILED)
                return negative_errno();
        *ret = r;
        return 0;
}

static inline void perf_watch_ring_unmap(PerfWatchRing *r) {
        if (r->map)
                (void) munmap(r->map, r->map_size);
        *r = (PerfWatchRing) {};
}

/* Called per sample record (its body, at most 4 KiB of it) and per lost record (the number lost). */
typedef void (*PerfWatchSampleFn)(void *userdata, const uint8_t *body, size_t size);
typedef void (*PerfWatchLostFn)(void *userdata, uint64_t n_lost);

/* Hands every whole record in the ring to sample or lost, and gives their room back to the kernel. */
static inline void perf_watch_ring_drain(PerfWatchRing *r, PerfWatchSampleFn sample, PerfWatchLostFn lost,
                void *userdata) {
        struct perf_event_mmap_page *meta = r->map;
        const uint8_t *data = (const uint8_t *) r->map + (r->map_size - r->data_size);
        uint8_t buf[4096];

        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        while (tail + sizeof(struct perf_event_header) <= head) {
                struct perf_event_header h;

                perf_ring_copy(data, r->data_size, tail, &h, sizeof(h));
                if (h.size < sizeof(h) || tail + h.size > head)
                        break;
                size_t body = MIN((size_t) h.size - sizeof(h), sizeof(buf));
                perf_ring_copy(data, r->data_size, tail + sizeof(h), buf, body);
                if (h.type == PERF_RECORD_SAMPLE)
                        sample(userdata, buf, body);
                else if (h.type == PERF_RECORD_LOST && body >= 2 * sizeof(uint64_t)) {
                        uint64_t n;
                        memcpy(&n, buf + sizeof(uint64_t), sizeof(n));
                        lost(userdata, n);
                }
                tail += h.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}
