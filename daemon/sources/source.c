/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "log.h"
#include "macro.h"
#include "source.h"

/*
 * The registry: one line per source, in the order "auto" tries them. X(NAME) names the
 * `const SourceType NAME_source_type` its file defines.
 * (tests/test-source.c defines a registry of fake sources before it includes this file.)
 */
#ifndef SOURCE_REGISTRY
#if HAVE_EBPF
#  define SOURCE_REGISTRY_EBPF(X) X(ebpf)
#  define SOURCE_REGISTRY_HEAP_UPROBE(X) X(heap_uprobe)
#else
#  define SOURCE_REGISTRY_HEAP_UPROBE(X)
#  define SOURCE_REGISTRY_EBPF(X)
#endif
#define SOURCE_REGISTRY(X)                                                                              \
        SOURCE_REGISTRY_EBPF(X)                                                                         \
        X(perf)                                                                                         \
        X(ftrace)                                                                                       \
        X(replay)                                                                                       \
        X(page_owner)                                                                                   \
        X(heap)                                                                                         \
        SOURCE_REGISTRY_HEAP_UPROBE(X)                                                                  \
        /* end of the registry */
#endif

#define SOURCE_DECLARE(n) extern const SourceType n##_source_type;
SOURCE_REGISTRY(SOURCE_DECLARE)

#define SOURCE_ENTRY(n) &n##_source_type,
static const SourceType *const source_types[] = {
        SOURCE_REGISTRY(SOURCE_ENTRY)
};

void source_options_init(SourceOptions *ret) {
        assert(ret);
        *ret = (SourceOptions) {
                .depth = SOURCE_DEPTH_DEFAULT,
                .buffer_pages = SOURCE_BUFFER_PAGES_DEFAULT,
                .stack_sample_interval = SOURCE_STACK_SAMPLE_INTERVAL_DEFAULT,
        };
}

const SourceType *source_type_get(size_t i) {
        return i < ELEMENTSOF(source_types) ? source_types[i] : NULL;
}

const SourceType *source_type_find(const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(source_types); i++)
                if (streq(source_types[i]->name, name))
                        return source_types[i];
        return NULL;
}

const char *source_type_names(const char *sep, char *buf, size_t size) {
        size_t n = 0;

        assert(sep);
        assert(buf);
        assert(size > 0);

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(source_types) && n < size; i++) {
                int k = snprintf(buf + n, size - n, "%s%s", i > 0 ? sep : "", source_types[i]->name);

                if (k < 0)
                        break;
                n += (size_t) k;
        }
        return buf;
}

/* Picks the first automatic source whose probe passes; *reasons gets what the skipped ones lacked. */
static int source_pick(const SourceOptions *options, const SourceType **ret, char *reasons, size_t size) {
        size_t n = 0;

        reasons[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(source_types); i++) {
                const SourceType *t = source_types[i];
                const char *reason = NULL;
                int r;

                if (!t->automatic)
                        continue;
                r = t->probe ? t->probe(options, &reason) : 0;
                if (r >= 0) {
                        *ret = t;
                        return 0;
                }
                log_debug_errno(r, "Event source %s cannot run here: %s", t->name, reason ?: "(no reason)");
                if (n < size) {
                        int k = snprintf(reasons + n, size - n, "%s%s: %s", n > 0 ? "; " : "",
                                         t->name, reason ?: "(no reason)");
                        if (k > 0)
                                n += (size_t) k;
                }
        }
        return log_error_errno(EOPNOTSUPP, "No event source can run here (%s).",
                               n > 0 ? reasons : "none is registered for automatic use");
}

int source_new(const char *name, const SourceOptions *options, EventSource **ret,
                const SourceType **ret_type, char **ret_reason) {
        _cleanup_free_ char *why = NULL;
        const SourceType *t = NULL;
        char reasons[512];
        int r;

        assert(options);
        assert(ret);

        if (!name || streq(name, "auto")) {
                r = source_pick(options, &t, reasons, sizeof(reasons));
                if (r < 0)
                        return r;
                if (reasons[0] != '\0') {
                        /* The one line a machine without the preferred source gets. */
                        log_notice("Event source auto: %s; using %s.", reasons, t->name);
                        if (asprintf(&why, "auto: %s", reasons) < 0)
                                return log_oom();
                } else {
                        log_debug("Automatic event source: %s.", t->name);
                        why = strdup("auto");
                }
        } else {
                char names[128];

                t = source_type_find(name);
                if (!t)
                        return log_error_errno(ENOENT, "Unknown event source '%s' (known: auto, %s).", name,
                                               source_type_names(", ", names, sizeof(names)));
                why = strdup("asked for");
        }
        if (!why)
                return log_oom();

        r = t->new(options, ret);
        if (r < 0) {
                const char *reason = NULL;

                /* What the kernel lacks, as auto would say it: the constructor's error may not (a program
                 * the kernel refuses as a whole). */
                if (name && t->probe && t->probe(options, &reason) < 0 && reason)
                        log_error("Event source %s cannot run here: %s.", t->name, reason);
                return r;
        }
        if (ret_type)
                *ret_type = t;
        if (ret_reason)
                *ret_reason = TAKE_PTR(why);
        return 0;
}

int source_add_drain_later(sd_event *event, sd_event_source **ret, sd_event_handler_t handler, void *userdata,
                const char *description) {
        int r = sd_event_add_defer(event, ret, handler, userdata);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(*ret, SD_EVENT_OFF);
        (void) sd_event_source_set_description(*ret, description);
        return 0;
}

void source_drain_later(sd_event_source *s) {
        int r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_debug_errno(r, "Failed to schedule more draining, waiting for the next wakeup: %m");
}

int source_start_heap_beside(const SourceOptions *options, const char *socket, EventSource *main, sd_event *event,
                const MsEventSink *sink, EventSource **ret) {
        SourceOptions o = *options;
        int r;

        *ret = NULL;
        if (!socket || streq(main->ops->name, "heap"))
                return 0;
        o.input = socket;
        o.heap_beside = true;
        r = source_new("heap", &o, ret, NULL, NULL);
        if (r < 0)
                return r;       /* logged */
        r = (*ret)->ops->start(*ret, event, sink);
        if (r < 0)
                return log_error_errno(r, "Failed to start the heap source: %m");
        return 0;
}

int source_heap_stop(EventSource *const sources[], size_t n, int32_t pid) {
        for (size_t i = 0; i < n; i++) {
                int r = sources[i] && sources[i]->ops->heap_stop ? sources[i]->ops->heap_stop(sources[i], pid) : -ESRCH;
                if (r != -ESRCH)
                        return r;
        }
        return -ESRCH;
}
