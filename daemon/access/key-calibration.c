/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "key-calibration.h"

#define KEY_MASK ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1)

struct KeyCalibration {
        pid_t child;                    /* 0 once reaped */
        int fd;                         /* the pipe's read end */
        uint64_t pfns[KEY_CALIBRATION_PAGES];
        size_t n_bytes;                 /* of pfns read so far */
        uint64_t keys[KEY_CALIBRATION_KEYS_MAX];
        size_t n_keys;
};

/* The child: KEY_CALIBRATION_PAGES pages of its own, every other page of a mapping twice as long, so that
 * their pfns are unlikely to run in a row; their pfns into the pipe, then it waits to be killed (its pages stay its own until the
 * parent is done; at most a minute, should the parent die first). Only async-signal-safe calls. */
static void __attribute__((noreturn)) child_main(int fd) {
        long page = sysconf(_SC_PAGESIZE);
        uint64_t pfns[KEY_CALIBRATION_PAGES] = {};

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        char *p = mmap(NULL, (size_t) page * KEY_CALIBRATION_PAGES * 2, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int map = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (p != MAP_FAILED && map >= 0)
                for (size_t i = 0; i < KEY_CALIBRATION_PAGES; i++) {
                        uint64_t e = 0;
                        p[2 * i * (size_t) page] = 1;
                        if (pread(map, &e, sizeof(e), (off_t) (((uintptr_t) p / (uintptr_t) page + 2 * i) * sizeof(e))) ==
                            sizeof(e) && (e >> 63))
                                pfns[i] = e & ((UINT64_C(1) << 55) - 1);
                }
        (void) write(fd, pfns, sizeof(pfns));
        (void) alarm(60);
        for (;;)
                pause();
}

int key_calibration_start(KeyCalibration **ret) {
        _cleanup_(key_calibration_freep) KeyCalibration *k = calloc(1, sizeof(KeyCalibration));
        int fds[2];

        if (!k)
                return -ENOMEM;
        k->fd = -1;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        k->child = fork();
        if (k->child < 0) {
                int r = -errno;
                close(fds[0]);
                close(fds[1]);
                k->child = 0;
                return r;
        }
        if (k->child == 0) {
                close(fds[0]);
                child_main(fds[1]);
        }
        close(fds[1]);
        k->fd = fds[0];
        (void) fcntl(k->fd, F_SETFL, O_NONBLOCK);
        *ret = TAKE_PTR(k);
        return 0;
}

KeyCalibration *key_calibration_free(KeyCalibration *k) {
        if (!k)
                return NULL;
        if (k->child > 0) {
                (void) kill(k->child, SIGKILL);
                (void) waitpid(k->child, NULL, 0);
        }
        if (k->fd >= 0)
                close(k->fd);
        free(k);
        return NULL;
}

pid_t key_calibration_pid(const KeyCalibration *k) {
        return k->child;
}

void key_calibration_event(KeyCalibration *k, const MsEvent *e) {
        if (e->type == MS_EVENT_PAGE_ALLOC && e->pid == k->child && e->page.order == 0 &&
            k->n_keys < KEY_CALIBRATION_KEYS_MAX)
                k->keys[k->n_keys++] = e->page.pfn;
}

static bool has_key(const uint64_t *keys, size_t n_keys, uint64_t key) {
        for (size_t i = 0; i < n_keys; i++)
                if (keys[i] == key)
                        return true;
        return false;
}

int key_calibration_match(const uint64_t *pfns, size_t n_pfns, const uint64_t *keys, size_t n_keys,
                uint64_t *ret_offset) {
        size_t fits = 0;
        uint64_t found = 0;

        if (n_pfns == 0)
                return 0;
        /* Each key as the first page's: the offset that maps every page onto a key. Pages of consecutive
         * pfns among more of the child's could fit a neighbouring offset too: only one fit is an answer. */
        for (size_t i = 0; i < n_keys; i++) {
                uint64_t offset = (keys[i] - pfns[0]) & KEY_MASK;
                size_t j = 1;
                while (j < n_pfns && has_key(keys, n_keys, (pfns[j] + offset) & KEY_MASK))
                        j++;
                if (j == n_pfns && (fits == 0 || offset != found)) {
                        found = offset;
                        fits++;
                }
        }
        if (fits > 1)
                return -ENOTUNIQ;
        if (fits == 0)
                return 0;
        *ret_offset = found;
        return 1;
}

int key_calibration_result(KeyCalibration *k, uint64_t *ret_offset) {
        while (k->n_bytes < sizeof(k->pfns)) {
                ssize_t n = read(k->fd, (uint8_t *) k->pfns + k->n_bytes, sizeof(k->pfns) - k->n_bytes);
                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                if (n == 0)
                        return -ENODATA;
                k->n_bytes += (size_t) n;
        }
        for (size_t i = 0; i < KEY_CALIBRATION_PAGES; i++)
                if (k->pfns[i] == 0)
                        return -ENODATA;
        return key_calibration_match(k->pfns, KEY_CALIBRATION_PAGES, k->keys, k->n_keys, ret_offset);
}
