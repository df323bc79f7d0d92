/* SPDX-License-Identifier: MIT */

/* A library heap-target dlopen()s: memstrack must name frames of a library loaded after the start. */

#include <stdlib.h>

void *heap_plugin_alloc(size_t n);

void *heap_plugin_alloc(size_t n) {
        return malloc(n);
}
