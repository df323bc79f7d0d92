/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * EventObserver: a policy that reacts to the event stream beside the core (naming new cgroups, reloading
 * kernel symbols after module loads, the moment of an OOM kill, ...). The Manager keeps a list of them and
 * delivers each event as "tell the observers that want it first, account it, tell the others": on_event
 * names no policy, and a new policy is one file plus one registration.
 *
 * An observer says which event types it wants before and after the core applies them, as bit masks it
 * sets at registration and may change with event_observer_set_types() (an OOM kill pending wants every
 * event, none otherwise). The list keeps, per type, who wants it: a type nobody wants costs one load and
 * compare per event, a wanted one a call per observer that wants it. Events are borrowed for the call.
 * Observers run on the daemon's one loop; none may call back into the Manager's delivery.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "macro.h"

#define MS_EVENT_BIT(type) (UINT32_C(1) << (type))

_Static_assert(_MS_EVENT_TYPE_MAX <= 32, "an observer's type masks have a bit per event type");

typedef struct EventObserver EventObserver;
typedef struct ObserverList ObserverList;

struct EventObserver {
        const char *name;               /* for logs */
        uint32_t before_types;          /* MS_EVENT_BIT()s told before the core applies the event */
        uint32_t after_types;           /* ... after it; both changed by event_observer_set_types() only */
        void *userdata;
        /* The event, before (applied false) or after (true) the core applied it. */
        void (*event)(void *userdata, const MsEvent *e, bool applied);
        /* A query is about to read the core: bring what the observer keeps up to date. May be NULL. */
        void (*flush)(void *userdata);
        /* Once a second, from the daemon's status timer. May be NULL. */
        void (*tick)(void *userdata);
        /* SIGHUP: re-read what may have changed outside. May be NULL. */
        void (*reload)(void *userdata);
        /* The daemon stops: do what is pending now. May be NULL. */
        void (*finish)(void *userdata);
        /* Frees the observer (userdata); NULL if the observer is owned elsewhere. */
        void (*free)(void *userdata);
        ObserverList *list;             /* where it is registered; set by observer_list_add() */
};

/* Changes what o wants; the list it is registered with follows at once. */
void event_observer_set_types(EventObserver *o, uint32_t before_types, uint32_t after_types);

/* The hooks other than events, for observer_list_run(). */
typedef enum ObserverHook {
        OBSERVER_HOOK_FLUSH,
        OBSERVER_HOOK_TICK,
        OBSERVER_HOOK_RELOAD,
        OBSERVER_HOOK_FINISH,
} ObserverHook;

/* The Manager wires nine today; the bound only sizes the arrays below. */
#define OBSERVER_LIST_MAX 16

/* The Manager's observers, in the order they are told. Owns them through their free hooks. */
struct ObserverList {
        EventObserver *items[OBSERVER_LIST_MAX];
        size_t n;
        /* [applied][type]: the observers that want the type at that moment, in order. */
        EventObserver *wanting[2][_MS_EVENT_TYPE_MAX][OBSERVER_LIST_MAX];
        uint8_t n_wanting[2][_MS_EVENT_TYPE_MAX];
};

/* Takes o. -ENOMEM for a NULL o (its constructor failed), -E2BIG past OBSERVER_LIST_MAX (o freed). */
int observer_list_add(ObserverList *l, EventObserver *o);
/* Tells every observer that wants e at this moment: before (applied false) or after the core applied it. */
static inline void observer_list_event(const ObserverList *l, const MsEvent *e, bool applied) {
        unsigned type = (unsigned) e->type;

        if (_likely_(type >= _MS_EVENT_TYPE_MAX || l->n_wanting[applied][type] == 0))
                return;
        for (unsigned i = 0; i < l->n_wanting[applied][type]; i++)
                l->wanting[applied][type][i]->event(l->wanting[applied][type][i]->userdata, e, applied);
}
/* Runs the hook of every observer that has it, in order. */
void observer_list_run(const ObserverList *l, ObserverHook hook);
/* Frees the observers, last first. */
void observer_list_done(ObserverList *l);
