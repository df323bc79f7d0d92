/* SPDX-License-Identifier: MIT */

/* Prints the built-in list of allocator wrappers (report/heap-sites.c), one a line, in its order, for
 * test-heap-sites.py: what no call site may be, and what docs/client.md must list. */

#include <stdio.h>

#include "heap-sites.h"

int main(void) {
        const char *name;

        for (size_t i = 0; (name = heap_sites_wrapper(i)); i++)
                printf("%s\n", name);
        return fflush(stdout) == 0 ? 0 : 1;
}
