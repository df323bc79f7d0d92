/* SPDX-License-Identifier: MIT */

/*
 * The observer list (daemon/core/observer.c): each observer hears exactly the event types it asked for,
 * before or after the core, in registration order; a mask changed later takes effect at once; the other
 * hooks run on those that have them; the list frees what it owns.
 */

#include <stdlib.h>
#include <string.h>

#include "observer.h"
#include "synthetic-events.h"
#include "tests.h"

typedef struct Recorder {
        EventObserver observer;
        char log[256];                  /* "name:type:b|a " per event heard */
        char *shared;                   /* every recorder's log, in the order they were told */
        unsigned flushes, ticks, reloads, finishes;
        bool *freed;
} Recorder;

static void record_event(void *userdata, const MsEvent *e, bool applied) {
        Recorder *r = userdata;
        char entry[64];

        (void) snprintf(entry, sizeof(entry), "%s:%d:%c ", r->observer.name, (int) e->type, applied ? 'a' : 'b');
        strcat(r->log, entry);
        strcat(r->shared, entry);
}

static void on_flush(void *userdata) {
        ((Recorder *) userdata)->flushes++;
}

static void on_tick(void *userdata) {
        ((Recorder *) userdata)->ticks++;
}

static void on_finish(void *userdata) {
        ((Recorder *) userdata)->finishes++;
}

static void free_recorder(void *userdata) {
        Recorder *r = userdata;
        *r->freed = true;
        free(r);
}

static Recorder *recorder_new(const char *name, uint32_t before, uint32_t after, char *shared, bool *freed) {
        Recorder *r = calloc(1, sizeof(Recorder));

        ASSERT_NOT_NULL(r);
        r->shared = shared;
        r->freed = freed;
        r->observer = (EventObserver) {
                .name = name,
                .before_types = before,
                .after_types = after,
                .userdata = r,
                .event = record_event,
                .flush = on_flush,
                .tick = on_tick,
                .finish = on_finish,
                .free = free_recorder,
        };
        return r;
}

static void deliver(ObserverList *l, MsEventType type, char *shared, const char *core_mark) {
        MsEvent e = synthetic_event(type, 0);

        observer_list_event(l, &e, false);
        strcat(shared, core_mark);
        observer_list_event(l, &e, true);
}

int main(void) {
        ObserverList l = {};
        char shared[1024] = "";
        bool freed_a = false, freed_b = false;

        Recorder *a = recorder_new("a", 0, MS_EVENT_BIT(MS_EVENT_PAGE_ALLOC) | MS_EVENT_BIT(MS_EVENT_TASK_EXIT),
                                   shared, &freed_a);
        Recorder *b = recorder_new("b", MS_EVENT_BIT(MS_EVENT_PAGE_ALLOC), MS_EVENT_BIT(MS_EVENT_PAGE_ALLOC), shared,
                                   &freed_b);
        b->observer.flush = NULL;       /* a hook left out is skipped */
        ASSERT_OK(observer_list_add(&l, &a->observer));
        ASSERT_OK(observer_list_add(&l, &b->observer));
        ASSERT_TRUE(a->observer.list == &l);

        /* Before the core, then after it, each in registration order; unwanted types reach nobody. */
        deliver(&l, MS_EVENT_PAGE_ALLOC, shared, "core ");
        deliver(&l, MS_EVENT_PAGE_FREE, shared, "core ");
        deliver(&l, MS_EVENT_TASK_EXIT, shared, "core ");
        ASSERT_STREQ(shared, "b:0:b core a:0:a b:0:a core core a:7:a ");

        /* A mask changed later takes effect at once (an OOM kill pending wants every event first). */
        shared[0] = 0;
        event_observer_set_types(&a->observer, ~UINT32_C(0), 0);
        deliver(&l, MS_EVENT_PAGE_FREE, shared, "core ");
        ASSERT_STREQ(shared, "a:1:b core ");
        event_observer_set_types(&a->observer, 0, 0);
        shared[0] = 0;
        deliver(&l, MS_EVENT_PAGE_FREE, shared, "core ");
        ASSERT_STREQ(shared, "core ");

        /* An event type beyond the known ones reaches nobody. */
        MsEvent odd = synthetic_event(_MS_EVENT_TYPE_MAX, 0);
        observer_list_event(&l, &odd, true);
        ASSERT_STREQ(shared, "core ");

        /* The other hooks run on those that have them. */
        observer_list_run(&l, OBSERVER_HOOK_FLUSH);
        observer_list_run(&l, OBSERVER_HOOK_TICK);
        observer_list_run(&l, OBSERVER_HOOK_TICK);
        observer_list_run(&l, OBSERVER_HOOK_RELOAD);    /* nobody has one: nothing happens */
        observer_list_run(&l, OBSERVER_HOOK_FINISH);
        ASSERT_EQ(a->flushes, 1);
        ASSERT_EQ(b->flushes, 0);
        ASSERT_EQ(a->ticks, 2);
        ASSERT_EQ(b->ticks, 2);
        ASSERT_EQ(a->finishes, 1);
        ASSERT_EQ(b->finishes, 1);

        /* A full list refuses, and frees what it was given (the caller handed it over). */
        bool freed_extra[OBSERVER_LIST_MAX] = {};
        for (size_t i = l.n; i < OBSERVER_LIST_MAX; i++)
                ASSERT_OK(observer_list_add(&l, &recorder_new("x", 0, 0, shared, &freed_extra[i])->observer));
        bool freed_over = false;
        ASSERT_EQ(observer_list_add(&l, &recorder_new("over", 0, 0, shared, &freed_over)->observer), -E2BIG);
        ASSERT_TRUE(freed_over);
        ASSERT_EQ(observer_list_add(&l, NULL), -ENOMEM);

        observer_list_done(&l);
        ASSERT_TRUE(freed_a);
        ASSERT_TRUE(freed_b);
        for (size_t i = 2; i < OBSERVER_LIST_MAX; i++)
                ASSERT_TRUE(freed_extra[i]);
        ASSERT_EQ(l.n, 0);
        return 0;
}
