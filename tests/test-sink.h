/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The sink the source tests hand their source: it keeps a copy of every event, in order, in seen[] and
 * n_seen, with what the event's pointers show during the call (the first stack frames, the task or
 * module name, the command line), since those buffers belong to the source and are reused after it.
 * File statics: one sink per test program; test_sink_reset() empties it before each case.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "event.h"
#include "macro.h"
#include "tests.h"

#define MAX_SEEN 64

typedef struct Seen {
        MsEvent ev;                     /* pointers in it are stale: read the copies below */
        uint64_t frames[16];            /* ALLOC: the first frames of the stack */
        char name[64];                  /* TASK_NEW, TASK_COMM: the task's; MODULE_*: the module's;
                                         * OBJECT_ALLOC: the cache's, "" when NULL */
        char cmdline[64];               /* TASK_NEW, TASK_COMM, when has_cmdline */
        bool has_cmdline;
} Seen;

static Seen seen[MAX_SEEN];
static size_t n_seen;

static void test_sink_event(void *userdata, const MsEvent *ev) {
        Seen *s;

        ASSERT_LT(n_seen, MAX_SEEN);
        s = &seen[n_seen++];
        *s = (Seen) { .ev = *ev };
        switch (ev->type) {
        case MS_EVENT_PAGE_ALLOC:
                for (size_t i = 0; i < ev->page.stack.n_frames && i < ELEMENTSOF(s->frames); i++)
                        s->frames[i] = ev->page.stack.frames[i];
                break;
        case MS_EVENT_OBJECT_ALLOC:
                for (size_t i = 0; i < ev->object.stack.n_frames && i < ELEMENTSOF(s->frames); i++)
                        s->frames[i] = ev->object.stack.frames[i];
                if (ev->object.cache)
                        (void) snprintf(s->name, sizeof(s->name), "%s", ev->object.cache);
                break;
        case MS_EVENT_TASK_NEW:
        case MS_EVENT_TASK_COMM:
                /* event.h: a name always, a command line when known. */
                ASSERT_NOT_NULL(ev->task.name);
                (void) snprintf(s->name, sizeof(s->name), "%s", ev->task.name);
                s->has_cmdline = ev->task.cmdline != NULL;
                if (ev->task.cmdline)
                        (void) snprintf(s->cmdline, sizeof(s->cmdline), "%s", ev->task.cmdline);
                break;
        case MS_EVENT_MODULE_LOAD:
        case MS_EVENT_MODULE_FREE:
                if (ev->module.name)
                        (void) snprintf(s->name, sizeof(s->name), "%s", ev->module.name);
                break;
        default:
                break;
        }
}

static const MsEventSink test_sink = { .event = test_sink_event };

static inline void test_sink_reset(void) {
        n_seen = 0;
}
