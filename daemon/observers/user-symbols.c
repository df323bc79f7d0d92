/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "user-symbols.h"

/* Heap allocations per image whose frames are looked up as they come: enough to name every file a
 * recorded program allocates through (the program, libc, libstdc++), few enough to cost nothing after. */
#define WARM_ALLOCATIONS 32u

typedef struct UserSymbolsObserver {
        EventObserver observer;
        UserSymbols *usym;              /* borrowed */
        const Heap *warm_heap;          /* borrowed, or NULL */
} UserSymbolsObserver;

/* Reads the DWARF of the files an image's first stacks pass through while the program runs, instead of
 * after it ended, when record's user waits for the report (libc's debug file takes tens of ms to inflate). */
static void warm(UserSymbolsObserver *u, const MsEvent *e) {
        uint32_t serial = heap_find(u->warm_heap, e->pid);
        const HeapImage *img = heap_image(u->warm_heap, serial);

        if (!img || !img->maps || img->sampled_allocs > WARM_ALLOCATIONS)
                return;
        UsymImage *im = usym_image(u->usym, serial, img->maps);
        for (size_t i = 0; im && i < e->heap.stack.n_frames; i++) {
                UsymSource source;
                (void) usym_image_lookup(im, e->heap.stack.frames[i], true, &source);
        }
}

static void on_event(void *userdata, const MsEvent *e, bool applied) {
        UserSymbolsObserver *u = userdata;

        if (e->type == MS_EVENT_HEAP_ALLOC) {
                if (applied && e->heap.stack.n_frames > 0 && e->heap.stack.frames)
                        warm(u, e);
                return;
        }
        if (e->tid == e->pid)
                usym_forget(u->usym, e->pid);
}

EventObserver *user_symbols_observer_new(UserSymbols *usym, const Heap *warm_heap) {
        UserSymbolsObserver *u = malloc(sizeof(UserSymbolsObserver));

        if (!u)
                return NULL;
        *u = (UserSymbolsObserver) {
                .observer = {
                        .name = "user-symbols",
                        .after_types = MS_EVENT_BIT(MS_EVENT_TASK_EXIT) | MS_EVENT_BIT(MS_EVENT_TASK_COMM) |
                                       (warm_heap ? MS_EVENT_BIT(MS_EVENT_HEAP_ALLOC) : 0),
                        .userdata = u,
                        .event = on_event,
                        .free = free,
                },
                .usym = usym,
                .warm_heap = warm_heap,
        };
        return &u->observer;
}
