/* SPDX-License-Identifier: MIT */

/*
 * A static program: LD_PRELOAD cannot reach it, and memstrackctl record must say so. Linked statically with
 * glibc, or with jemalloc or tcmalloc inside (tests/meson.build), its malloc is its own: record --pid finds
 * it in the program's symbol table.
 *
 * heap-static wait-known: says "ready", waits for SIGUSR1, allocates what it knows, writes what it expects
 * to $HEAP_TARGET_EXPECT (heap-target's format: each call site's bytes and blocks at the maximum and at the
 * end, from malloc_usable_size()), says "leaked" and waits for the signal that ends it.
 */

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t go;

static void on_usr1(int sig) {
        go = 1;
}

static void say(const char *s) {
        if (write(STDOUT_FILENO, s, strlen(s)) < 0)
                abort();
}

static int wait_known(void) {
        struct sigaction sa = { .sa_handler = on_usr1 };
        sigset_t usr1, before;
        size_t leaked = 0, aligned = 0, peak_extra;
        char text[512];

        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        if (sigprocmask(SIG_BLOCK, &usr1, &before) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
                return 1;
        say("ready\n");
        while (!go)
                sigsuspend(&before);

        for (int i = 0; i < 10; i++) {
                void *p = malloc(1000 + (size_t) i * 100);
                if (!p)
                        abort();
                leaked += malloc_usable_size(p);
        }
        int leak_line = __LINE__ - 5;
        void *q;
        if (posix_memalign(&q, 256, 3000) != 0)
                abort();
        aligned += malloc_usable_size(q);
        int aligned_line = __LINE__ - 3;
        void *big = malloc(4u << 20);
        int big_line = __LINE__ - 1;
        if (!big)
                abort();
        peak_extra = malloc_usable_size(big);
        free(big);
        free(realloc(malloc(100), 20000));

        const char *path = getenv("HEAP_TARGET_EXPECT");
        int n = snprintf(text, sizeof(text),
                         "{\"sites\": [{\"function\": \"wait_known\", \"line\": %d, \"maxBytes\": %zu, \"maxBlocks\": 10, "
                         "\"leakBytes\": %zu, \"leakBlocks\": 10}, {\"function\": \"wait_known\", \"line\": %d, "
                         "\"maxBytes\": %zu, \"maxBlocks\": 1, \"leakBytes\": %zu, \"leakBlocks\": 1}, "
                         "{\"function\": \"wait_known\", \"line\": %d, \"maxBytes\": %zu, \"maxBlocks\": 1, "
                         "\"leakBytes\": 0, \"leakBlocks\": 0}]}\n",
                         leak_line, leaked, leaked, aligned_line, aligned, aligned, big_line, peak_extra);
        int fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
        if (path && (fd < 0 || write(fd, text, (size_t) n) != n))
                abort();
        if (fd >= 0)
                close(fd);
        say("leaked\n");
        for (;;)
                pause();
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "wait-known") == 0)
                return wait_known();
        free(malloc(10));
        return 0;
}
