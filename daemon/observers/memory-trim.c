/* SPDX-License-Identifier: MIT */

#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>

#include "macro.h"
#include "memory-trim.h"

#define TRIM_GROWTH_BYTES ((size_t) 1 << 20)

struct MemoryTrim {
        Accounting *accounting;         /* borrowed */
        bool trimmed;                   /* once: what starting up (symbols, BTF, seeding) left free goes */
        size_t base_free_bytes;         /* the heap's free bytes after the last trim, or their low since */
        EventObserver observer;
};

static void on_tick(void *userdata) {
        MemoryTrim *t = userdata;

        (void) accounting_trim(t->accounting);
#ifdef __GLIBC__
        size_t free_bytes = mallinfo2().fordblks;

        /* Free space reused lowers the mark: what counts is what was freed since. */
        t->base_free_bytes = MIN(t->base_free_bytes, free_bytes);
        if (t->trimmed && free_bytes < t->base_free_bytes + TRIM_GROWTH_BYTES)
                return;
        (void) malloc_trim(0);
        t->trimmed = true;
        t->base_free_bytes = mallinfo2().fordblks;
#endif
}

static void observer_free(void *userdata) {
        memory_trim_free(userdata);
}

MemoryTrim *memory_trim_new(Accounting *accounting) {
        MemoryTrim *t = calloc(1, sizeof(MemoryTrim));

        if (!t)
                return NULL;
        t->accounting = accounting;
        t->observer = (EventObserver) {
                .name = "memory-trim",
                .userdata = t,
                .tick = on_tick,
                .free = observer_free,
        };
        return t;
}

MemoryTrim *memory_trim_free(MemoryTrim *t) {
        free(t);
        return NULL;
}

EventObserver *memory_trim_observer(MemoryTrim *t) {
        return &t->observer;
}
