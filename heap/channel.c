/* SPDX-License-Identifier: MIT */

/*
 * The library's end of the channel (channel.h). The region is a sealed memfd: the daemon maps what it was
 * given and the process cannot shrink it under the daemon's feet. Both descriptors are closed once the
 * daemon has the region, so that a program that closes every descriptor or lowers RLIMIT_NOFILE changes
 * nothing; after that the channel makes no system call but in a ring that stays full.
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "library.h"

Channel channel;

static int memfd = -1;                  /* the region's, from channel_create() to channel_hand_over() */
static void (*closed_fn)(void);
static bool consumer_stalled;           /* the daemon stopped polling: full rings drop at once */
static TLS uint32_t thread_id;

static void warn(const char *what, int error) {
        char line[512];
        int n = snprintf(line, sizeof(line), "memstrack-heap: %s: %s; this process is not recorded.\n", what,
                         strerror(error));
        if (n > 0)
                (void) !write(STDERR_FILENO, line, (size_t) n < sizeof(line) ? (size_t) n : sizeof(line) - 1);
}

bool channel_create(uint64_t sample_interval, void (*on_closed)(void)) {
        /* Every call's record needs room for the daemon's scheduling delay at millions of calls a second. */
        size_t ring_records = sample_interval <= 1 ? HEAP_RING_RECORDS_EVERY_CALL : HEAP_RING_RECORDS;
        size_t ring_bytes = ring_records * sizeof(HeapAbiRecord);
        size_t slots_bytes = (size_t) HEAP_STACK_SLOTS * sizeof(HeapAbiStackSlot);
        size_t frames_bytes = (size_t) HEAP_FRAMES * sizeof(uint64_t);
        size_t objects_bytes = (size_t) HEAP_OBJECTS * sizeof(HeapAbiObject);
        size_t ring_offset = 4096, slots_offset = ring_offset + ring_bytes;
        size_t frames_offset = slots_offset + slots_bytes, objects_offset = frames_offset + frames_bytes;
        size_t threads_offset = objects_offset + objects_bytes;
        size_t total = threads_offset + (size_t) HEAP_THREAD_SLOTS * sizeof(HeapAbiThread);
        void *region = MAP_FAILED;
        int fd;

        fd = memfd_create("memstrack-heap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, (off_t) total) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
            (region = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
                int error = errno;
                if (fd >= 0)
                        close(fd);
                warn("cannot create its shared memory", error);
                return false;
        }
        memfd = fd;
        closed_fn = on_closed;
        channel = (Channel) {
                .header = region,
                .ring = (HeapAbiRecord *) ((char *) region + ring_offset),
                .ring_mask = ring_records - 1,
                .stack_slots = (HeapAbiStackSlot *) ((char *) region + slots_offset),
                .frames = (uint64_t *) ((char *) region + frames_offset),
                .objects = (HeapAbiObject *) ((char *) region + objects_offset),
                .thread_slots = (HeapAbiThread *) ((char *) region + threads_offset),
        };
        *channel.header = (HeapAbiHeader) {
                .magic = HEAP_ABI_MAGIC,
                .version = HEAP_ABI_VERSION,
                .header_bytes = sizeof(HeapAbiHeader),
                .region_bytes = total,
                .ring_offset = ring_offset,
                .ring_records = ring_records,
                .stack_slots_offset = slots_offset,
                .n_stack_slots = HEAP_STACK_SLOTS,
                .frames_offset = frames_offset,
                .n_frames = HEAP_FRAMES,
                .objects_offset = objects_offset,
                .n_objects_max = HEAP_OBJECTS,
                .threads_offset = threads_offset,
                .n_thread_slots = HEAP_THREAD_SLOTS,
                .sample_interval = sample_interval,
                .pid = getpid(),
        };
        return true;
}

bool channel_hand_over(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *what = "the socket path is too long";
        int sock = -1, error = ENAMETOOLONG;

        if (strlen(path) >= sizeof(sa.sun_path))
                goto fail;
        memcpy(sa.sun_path, path, strlen(path));

        what = "cannot reach memstrackd's heap socket";
        sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (sock < 0 || connect(sock, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                goto fail_errno;
        /* The daemon answers at once; a daemon that does not is not waited for long. */
        struct timeval tv = { .tv_sec = 10 };
        (void) setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        char control[CMSG_SPACE(sizeof(int))] = {};
        uint64_t hello[2] = { HEAP_ABI_MAGIC, HEAP_ABI_VERSION };
        struct iovec iov = { .iov_base = hello, .iov_len = sizeof(hello) };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                              .msg_controllen = sizeof(control) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &memfd, sizeof(int));
        what = "memstrackd's heap socket did not take the region";
        if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
                goto fail_errno;
        char answer = 0;
        ssize_t k = recv(sock, &answer, 1, 0);
        if (k != 1 || answer != 'y') {
                errno = k < 0 ? errno : ECONNREFUSED;
                goto fail_errno;
        }
        close(sock);
        close(memfd);
        memfd = -1;
        return true;

fail_errno:
        error = errno;
fail:
        if (sock >= 0)
                close(sock);
        close(memfd);
        memfd = -1;
        (void) munmap(channel.header, (size_t) channel.header->region_bytes);
        channel.header = NULL;
        warn(what, error);
        return false;
}

bool channel_reserve(bool nested, uint64_t *ret_seq) {
        HeapAbiHeader *h = channel.header;

        /* Nobody reads the region any more (HeapStop): the process goes on unrecorded. */
        if (unlikely(__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & HEAP_ABI_FLAG_CLOSED)) {
                closed_fn();
                return false;
        }

        uint64_t head = __atomic_load_n(&h->ring_head, __ATOMIC_RELAXED);
        uint64_t polls = 0, since = 0;
        unsigned spins = 0;

        for (;;) {
                uint64_t tail = __atomic_load_n(&h->ring_tail, __ATOMIC_ACQUIRE);
                if (head - tail >= h->ring_records) {
                        uint64_t p = __atomic_load_n(&h->consumer_polls, __ATOMIC_RELAXED);
                        if (nested || __atomic_load_n(&consumer_stalled, __ATOMIC_RELAXED)) {
                                __atomic_fetch_add(&h->lost_ring_full, 1, __ATOMIC_RELAXED);
                                return false;
                        }
                        if (since == 0 || p != polls) {
                                polls = p;
                                since = now_msec();
                        } else if (now_msec() - since > 1000) {
                                /* The daemon stopped draining: stop waiting, here and in every thread. */
                                __atomic_store_n(&consumer_stalled, true, __ATOMIC_RELAXED);
                                continue;
                        }
                        if (++spins < 64)
                                sched_yield();
                        else
                                (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 }, NULL);
                        head = __atomic_load_n(&h->ring_head, __ATOMIC_RELAXED);
                        continue;
                }
                if (since != 0)
                        __atomic_store_n(&consumer_stalled, false, __ATOMIC_RELAXED);
                if (__atomic_compare_exchange_n(&h->ring_head, &head, head + 1, true, __ATOMIC_ACQ_REL,
                                                __ATOMIC_RELAXED)) {
                        *ret_seq = head;
                        return true;
                }
        }
}

void channel_emit(const LiveRecord *slot, HeapAbiRecordType type, uint64_t ptr, uint64_t bytes,
                int64_t live_after, uint32_t stack, uint32_t thread_allocs) {
        if (!slot->reserved)
                return;
        if (thread_id == 0)
                thread_id = (uint32_t) gettid();
        HeapAbiRecord *r = &channel.ring[slot->seq & channel.ring_mask];
        r->ptr = ptr;
        r->bytes = bytes;
        r->live_after = live_after > 0 ? (uint64_t) live_after : 0;
        r->peak = slot->peak;
        r->stack = stack;
        r->tid = thread_id;
        r->type = type;
        r->thread_allocs = thread_allocs;
        /* Only records pay for a clock read (the vDSO's, no system call): lifetimes and the timeline. */
        r->time_nsec = now_nsec();
        __atomic_store_n(&r->commit, slot->seq + 1, __ATOMIC_RELEASE);
}

void channel_forget(void) {
        HeapAbiHeader *h = channel.header;

        channel.header = NULL;
        thread_id = 0;
        if (h)
                (void) munmap(h, (size_t) h->region_bytes);
}
