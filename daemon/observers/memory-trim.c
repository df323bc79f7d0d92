/* SPDX-License-Identifier: MIT */

#include <malloc.h>
#include <stdlib.h>

#include "macro.h"
#include "memory-trim.h"

#define TRIM_MIN_BYTES ((size_t) 4 << 20)

struct MemoryTrim {
        Accounting *accounting;         /* borrowed */
        size_t high_bytes;              /* the most the core held since the last trim */
        EventObserver observer;
};

static void on_tick(void *userdata) {
        MemoryTrim *t = userdata;
        size_t now = accounting_memory_bytes(t->accounting);

        t->high_bytes = MAX(t->high_bytes, now);
        if (t->high_bytes - now < MAX(TRIM_MIN_BYTES, t->high_bytes / 8))
                return;
#ifdef __GLIBC__
        (void) malloc_trim(0);
#endif
        t->high_bytes = now;
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
