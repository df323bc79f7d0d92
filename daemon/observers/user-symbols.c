/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "user-symbols.h"

typedef struct UserSymbolsObserver {
        EventObserver observer;
        UserSymbols *usym;              /* borrowed */
} UserSymbolsObserver;

static void on_event(void *userdata, const MsEvent *e, bool applied) {
        UserSymbolsObserver *u = userdata;

        (void) applied;
        if (e->tid == e->pid)
                usym_forget(u->usym, e->pid);
}

EventObserver *user_symbols_observer_new(UserSymbols *usym) {
        UserSymbolsObserver *u = malloc(sizeof(UserSymbolsObserver));

        if (!u)
                return NULL;
        *u = (UserSymbolsObserver) {
                .observer = {
                        .name = "user-symbols",
                        .after_types = MS_EVENT_BIT(MS_EVENT_TASK_EXIT) | MS_EVENT_BIT(MS_EVENT_TASK_COMM),
                        .userdata = u,
                        .event = on_event,
                        .free = free,
                },
                .usym = usym,
        };
        return &u->observer;
}
