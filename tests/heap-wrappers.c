/* SPDX-License-Identifier: MIT */

/*
 * Allocations through allocator wrappers, for the call sites of memstrackctl record (tests/test-heap-sites.py).
 * Each mode makes one big allocation (4 MiB) through a wrapper from a known line, so that it is the heap's
 * biggest call site, and writes to $HEAP_TARGET_EXPECT what the report must say of it:
 *   {"caller": {"function", "line", "bytes"}, "wrapper": NAME}
 * the caller's function and the line of its call (the call site by default), the block's usable bytes, and
 * the wrapper (the call site with --keep-frames, or without --fold-frame for a wrapper the list lacks).
 *
 *   xmalloc   a wrapper of the program's own with a source line: without folding it would be the site
 *   custom    the same under a name of no list, my_pool_alloc (--fold-frame my_pool_alloc)
 *   cxx       C++ new[] (heap-wrappers-cxx.cc): libstdc++'s operator new[], _Znam
 *   glib      g_malloc, g_new0 and g_strdup (only when built with glib: HAVE_GLIB)
 *
 * grow MIB [extra] [exit=N], for memstrackctl diff and record's limits: the same heap in every run but
 * for grow_site's block of MIB MiB (live at the maximum, freed before the end), and with extra a site of
 * 3 MiB only this run has; steady_site's 1 MiB and leak_site's 10 blocks of 100000 bytes, never freed, in
 * every run. It writes
 * {"grow": {"function", "line", "bytes"}, "extra": ...} and exits with N (default 0).
 */

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if HAVE_GLIB
#include <glib.h>
#endif

#define BIG_BYTES (4u << 20)

void *heap_wrappers_new(size_t n, int *ret_line);        /* heap-wrappers-cxx.cc */
void *xmalloc(size_t n);
void *my_pool_alloc(size_t n);

static int expect(const char *caller, int line, void *block, const char *wrapper) {
        const char *path = getenv("HEAP_TARGET_EXPECT");
        char buf[512];

        if (!block)
                return 1;
        int n = snprintf(buf, sizeof(buf), "{\"caller\": {\"function\": \"%s\", \"line\": %d, \"bytes\": %zu}, "
                         "\"wrapper\": \"%s\"}\n", caller, line, malloc_usable_size(block), wrapper);
        if (!path)
                return 0;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, (size_t) n) != n)
                return 1;
        return close(fd) < 0;
}

/* As gnulib's, with a line of its own: without the list its line would name every call. */
__attribute__((noinline)) void *xmalloc(size_t n) {
        void *p = malloc(n);
        if (!p)
                abort();
        return p;
}

static int mode_xmalloc(void) {
        void *small = xmalloc(100);
        void *big = xmalloc(BIG_BYTES);
        int line = __LINE__ - 1;
        (void) small;
        return expect(__func__, line, big, "xmalloc");
}

/* A program's own pool, known to no list. */
__attribute__((noinline)) void *my_pool_alloc(size_t n) {
        return calloc(1, n);
}

static int mode_custom(void) {
        void *big = my_pool_alloc(BIG_BYTES);
        int line = __LINE__ - 1;
        return expect(__func__, line, big, "my_pool_alloc");
}

static int mode_cxx(void) {
        int line;
        void *big = heap_wrappers_new(BIG_BYTES, &line);
        return expect("heap_wrappers_new", line, big, "_Znam");
}

#if HAVE_GLIB
typedef struct Item {
        char name[64];
        long value;
} Item;

static int mode_glib(void) {
        Item *items = g_new0(Item, 100);
        char *name = g_strdup("heap-wrappers");
        void *big = g_malloc(BIG_BYTES);
        int line = __LINE__ - 1;
        (void) items, (void) name;
        return expect(__func__, line, big, "g_malloc");
}
#endif

/* ---- grow ------------------------------------------------------------------------------------------- */

static void *grow_site(size_t mib, int *ret_line) {
        void *p = malloc(mib << 20);
        *ret_line = __LINE__ - 1;
        return p;
}

static void *steady_site(void) {
        return malloc(1u << 20);
}

static void *extra_site(int *ret_line) {
        void *p = malloc(3u << 20);
        *ret_line = __LINE__ - 1;
        return p;
}

static void *leaked[10];

static void leak_site(void) {
        for (int i = 0; i < 10; i++)
                leaked[i] = malloc(100000);
}

/* A whole number of at most max, or -1. */
static long number(const char *s, long max) {
        char *end = NULL;

        errno = 0;
        long v = strtol(s, &end, 10);
        return errno == 0 && end != s && *end == '\0' && v >= 0 && v <= max ? v : -1;
}

static int mode_grow(int argc, char *argv[]) {
        const char *path = getenv("HEAP_TARGET_EXPECT");
        long mib = argc > 2 ? number(argv[2], 1024) : 1, status = 0;
        bool extra = false;
        int grow_line, extra_line = 0;
        char buf[512];

        for (int i = 3; i < argc && mib >= 0 && status >= 0; i++) {
                if (strcmp(argv[i], "extra") == 0)
                        extra = true;
                else if (strncmp(argv[i], "exit=", 5) == 0)
                        status = number(argv[i] + 5, 255);
                else
                        status = -1;
        }
        if (mib < 0 || status < 0)
                return 2;
        leak_site();
        void *steady = steady_site(), *grow = grow_site((size_t) mib, &grow_line);
        void *more = extra ? extra_site(&extra_line) : NULL;
        if (!steady || !grow || (extra && !more))
                return 1;
        int n = snprintf(buf, sizeof(buf), "{\"grow\": {\"function\": \"grow_site\", \"line\": %d, \"bytes\": %zu}, "
                         "\"extra\": {\"function\": \"extra_site\", \"line\": %d, \"bytes\": %zu}}\n", grow_line,
                         malloc_usable_size(grow), extra_line, more ? malloc_usable_size(more) : (size_t) 0);
        free(more);
        free(grow);
        free(steady);
        if (path) {
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, buf, (size_t) n) != n || close(fd) < 0)
                        return 1;
        }
        return (int) status;
}

int main(int argc, char *argv[]) {
        const char *mode = argc > 1 ? argv[1] : "";

        if (strcmp(mode, "xmalloc") == 0)
                return mode_xmalloc();
        if (strcmp(mode, "custom") == 0)
                return mode_custom();
        if (strcmp(mode, "cxx") == 0)
                return mode_cxx();
        if (strcmp(mode, "grow") == 0)
                return mode_grow(argc, argv);
        if (strcmp(mode, "glib") == 0) {
#if HAVE_GLIB
                return mode_glib();
#else
                (void) !write(STDERR_FILENO, "built without glib\n", 19);
                return 77;
#endif
        }
        return 2;
}
