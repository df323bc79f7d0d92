/* SPDX-License-Identifier: MIT */

#include <errno.h>

#include "observer.h"

/* Who wants each type, from the observers' masks: at registration and when one changes them. */
static void index_wants(ObserverList *l) {
        for (unsigned applied = 0; applied < 2; applied++)
                for (unsigned type = 0; type < _MS_EVENT_TYPE_MAX; type++) {
                        uint8_t n = 0;
                        for (size_t i = 0; i < l->n; i++) {
                                const EventObserver *o = l->items[i];
                                if ((applied ? o->after_types : o->before_types) & MS_EVENT_BIT(type))
                                        l->wanting[applied][type][n++] = l->items[i];
                        }
                        l->n_wanting[applied][type] = n;
                }
}

void event_observer_set_types(EventObserver *o, uint32_t before_types, uint32_t after_types) {
        o->before_types = before_types;
        o->after_types = after_types;
        if (o->list)
                index_wants(o->list);
}

int observer_list_add(ObserverList *l, EventObserver *o) {
        if (!o)
                return -ENOMEM;
        if (l->n == OBSERVER_LIST_MAX) {
                if (o->free)
                        o->free(o->userdata);
                return -E2BIG;
        }
        l->items[l->n++] = o;
        o->list = l;
        index_wants(l);
        return 0;
}

void observer_list_run(const ObserverList *l, ObserverHook hook) {
        for (size_t i = 0; i < l->n; i++) {
                const EventObserver *o = l->items[i];
                void (*fn)(void *userdata) = hook == OBSERVER_HOOK_FLUSH ? o->flush :
                                             hook == OBSERVER_HOOK_TICK ? o->tick :
                                             hook == OBSERVER_HOOK_RELOAD ? o->reload : o->finish;
                if (fn)
                        fn(o->userdata);
        }
}

void observer_list_done(ObserverList *l) {
        while (l->n > 0) {
                EventObserver *o = l->items[--l->n];
                o->list = NULL;
                if (o->free)
                        o->free(o->userdata);
        }
        index_wants(l);
}
