/* SPDX-License-Identifier: MIT */

/*
 * The io.memstrack methods: parameter checking and replies. The views themselves are built by query.c
 * and marks.c; this file only maps calls onto them and errors onto the interface's errors.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bootphase.h"
#include "config.h"
#include "heapquery.h"
#include "history.h"
#include "list.h"
#include "log.h"
#include "marks.h"
#include "query.h"
#include "service.h"
#include "leaks.h"
#include "slabquery.h"
#include "time-util.h"
#include "units.h"
#include "utf8.h"
#include "varlink-server.h"
#include "varlink.h"

extern const char varlink_interface_io_memstrack[];

typedef struct TopStream TopStream;

struct Service {
        /* From ServiceConfig: event, accounting and usym are borrowed. */
        sd_event *event;
        Accounting *accounting;
        UserSymbols *usym;
        History *history;
        long page_size;
        int64_t priority;
        void *userdata;
        void (*flush)(void *userdata);
        void (*get_live)(void *userdata, ServiceLive *ret);

        VarlinkServer *server;          /* owned */
        Marks *marks;                   /* owned: the named snapshots */
        json_t *boot_phase;             /* owned: the initramfs's snapshot document, NULL if none */
        TopStream *top_streams;         /* owned list of open Top(more) calls */
        size_t n_top_streams;
        sd_event_source *top_timer;     /* owned: the one timer behind every Top stream, set for the next
                                         * stream due; off without streams */
        unsigned leaks_pace;            /* ServiceConfig's */
        uint64_t leaks_ready_usec;      /* CLOCK_MONOTONIC time from which Leaks is served again */
};

/*
 * Top streams share one timer, set for the stream due next: the daemon wakes when a stream wants a frame,
 * not at a fixed tick. When it fires, every stream due by then or within TOP_BATCH_DIVISOR-th of its
 * interval gets the frame of its sort, built once per wakeup at the largest limit any of them asked for
 * (smaller limits get a prefix of its lists). A stream served early keeps its beat (its next update is
 * one interval after the one it was due for), so streams that once shared a frame go on sharing one,
 * and N streams cost one flush and at most one query per sort order, not N; only the serialization is
 * per stream, and TOP_STREAMS_MAX bounds that.
 */
struct TopStream {
        Service *service;
        VarlinkCall *call;              /* the open Top call; its connection owns it */
        uint64_t interval_usec;
        uint64_t next_usec;             /* CLOCK_MONOTONIC time of the next update */
        int64_t limit;
        QuerySort sort;
        bool hide_zero;
        TopStream *prev, *next;
};

#define TOP_INTERVAL_MIN_USEC 100000
#define TOP_STREAMS_MAX 16
/* A stream due within interval / TOP_BATCH_DIVISOR of a wakeup is served in it. */
#define TOP_BATCH_DIVISOR 8
/* How late sd-event may fire the timer, as a fraction of the shortest interval open: its default (250 ms)
 * turned 100 ms streams into 250 ms ones, 1/50 lets it merge wakeups without anyone noticing. */
#define TOP_ACCURACY_DIVISOR 50

static uint64_t rss_bytes(void) {
        unsigned long long size, resident;
        _cleanup_fclose_ FILE *f = fopen("/proc/self/statm", "re");

        if (!f || fscanf(f, "%llu %llu", &size, &resident) != 2)
                return 0;
        return resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

static void service_flush(Service *sv) {
        sv->flush(sv->userdata);
}

static ServiceLive service_live(Service *sv) {
        ServiceLive live = { .backend = "none" };
        sv->get_live(sv->userdata, &live);
        return live;
}

/* Checks the parameters (replying InvalidParameter if they are wrong), then brings the core up to date
 * with what the kernel reported so far: every method answers about now. */
static int begin_call(VarlinkCall *call, json_t *parameters, const VarlinkField *fields, size_t n) {
        const char *bad = NULL;
        int r = varlink_parameters_unpack(parameters, fields, n, &bad);
        if (r < 0) {
                (void) varlink_call_error_invalid_parameter(call, bad ?: "parameters");
                return r;
        }
        service_flush(varlink_call_get_userdata(call));
        return 0;
}

static const char *const sort_choices[] = { "current", "peak", "allocs", NULL };
static const char *const sort_choices_pages[] = { "current", "peak", NULL };

/* Raw addresses in stacks go to root only, and never the made-up ones of a source that names its own
 * frames (an imported page_owner log): they are no kernel's. */
static bool addresses_shown(const Accounting *a, bool peer_is_root) {
        const Ksym *k = accounting_ksym(a);

        return peer_is_root && !(k && ksym_addresses_synthetic(k));
}

static bool show_addresses(Service *sv, bool peer_is_root) {
        return addresses_shown(sv->accounting, peer_is_root);
}

/* User-space addresses: root sees every process's; anyone else only those of its own running processes,
 * as it could read their maps itself (query.h). */
static QueryUserAddresses user_addresses(VarlinkCall *call) {
        return varlink_call_peer_is_root(call) ? QUERY_USER_ADDRESSES_ALL : QUERY_USER_ADDRESSES_OWN;
}

static json_t *status_json(Accounting *a, const ServiceLive *live, long page_size, bool peer_is_root) {
        AccountingStats s;
        StackTreeStats st;
        UsageStats us;

        accounting_get_stats(a, &s);
        stacktree_get_stats(accounting_stacktree(a), &st);
        usage_get_stats(accounting_usage(a), &us);
        const EventSourceStats *src = &live->source;
        const Ksym *k = accounting_ksym(a);
        bool addresses_hidden = !addresses_shown(a, peer_is_root) || !k || ksym_addresses_hidden(k);

        json_t *lost = json_array();
        for (size_t i = 0; lost && i < src->n_cpus; i++)
                (void) json_array_append_new(lost, json_integer(varlink_count(src->lost_per_cpu[i])));

        size_t baseline_tasks;
        uint64_t baseline = usage_baseline_pages(accounting_usage(a), &baseline_tasks);
        uint64_t truncated_pages = stacktree_truncated_pages(accounting_stacktree(a));

        return json_pack("{s:s, s:s, s:I, s:f, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:i}",
                         "backend", live->backend,
                         "version", PACKAGE_VERSION,
                         "uptimeUsec", varlink_count(live->uptime_usec),
                         "eventsPerSecond", live->events_per_second,
                         "events", varlink_count(s.events),
                         "resets", varlink_count(s.resets),
                         "lostEvents", varlink_count(MAX(s.lost_events, src->lost_records)),
                         "lostPerCpu", lost,
                         "trackedPages", varlink_count(s.current_pages),
                         "peakTrackedPages", varlink_count(s.peak_pages),
                         "baselinePages", varlink_count(baseline),
                         "baselineTasks", varlink_count(baseline_tasks),
                         "untrackedFrees", varlink_count(s.untracked_frees),
                         "untrackedFreePages", varlink_count(s.untracked_free_pages),
                         "invalidEvents", varlink_count(s.invalid_events),
                         "daemonMemoryBytes", varlink_count(rss_bytes()),
                         "stackNodes", varlink_count(st.n_nodes),
                         "stackNodeBudget", varlink_count(st.max_nodes),
                         "stacksTruncated", varlink_count(st.stacks_truncated + st.process_paths_truncated),
                         "truncatedPages", varlink_count(truncated_pages),
                         "tasksEvicted", varlink_count(us.tasks_evicted),
                         "kernelAddressesHidden", addresses_hidden,
                         "pageSize", (int) page_size);
}

/* Status's counts of the events that are not page records (aggregated samples, events of a kind the core
 * does not apply yet), and of those held at COUNT_MAX. Added to status after invalidEvents (the
 * interface's order). */
static int status_add_event_counts(Accounting *a, json_t *status) {
        AccountingStats s;

        accounting_get_stats(a, &s);
        const struct {
                const char *key;
                uint64_t value;
        } counts[] = {
                { "samples", s.samples },
                { "sampledPages", s.sampled_pages },
                { "sampleUntrackedPages", s.sample_untracked_pages },
                { "unsupportedEvents", s.unsupported_events },
                { "saturatedEvents", s.saturated_events },
        };
        for (size_t i = 0; i < ELEMENTSOF(counts); i++)
                if (json_object_set_new(status, counts[i].key,
                                        json_integer(varlink_count(counts[i].value))) < 0)
                        return -ENOMEM;
        return 0;
}

/* Status lostByReason: [{reason, count}], one per way the source can lose data. NULL on OOM. */
static json_t *lost_by_reason_json(const EventSourceStats *src) {
        json_auto_t *a = json_array();

        for (size_t i = 0; a && i < src->n_losses; i++)
                if (json_array_append_new(a, json_pack("{s:s, s:I}", "reason", src->losses[i].reason,
                                                       "count", varlink_count(src->losses[i].count))) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* Status oomWatching and oomWatchReason for oom (NULL: not watched). -ENOMEM. */
static int status_add_oom(json_t *status, const OomLog *oom) {
        const char *reason = oom ? oomlog_reason(oom) : "not started";

        if (json_object_set_new(status, "oomWatching", json_boolean(oom && oomlog_watching(oom))) < 0 ||
            json_object_set_new(status, "oomWatchReason", reason ? json_string(reason) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

json_t *service_status_json(Accounting *a, const ServiceLive *live, long page_size, bool peer_is_root) {
        json_auto_t *o = status_json(a, live, page_size, peer_is_root);

        if (!o ||
            json_object_set_new(o, "backendReason", json_string(live->backend_reason ?: "")) < 0 ||
            json_object_set_new(o, "stackSampleInterval",
                                json_integer(varlink_count(live->source.stack_sample_interval))) < 0 ||
            json_object_set_new(o, "lostByReason", lost_by_reason_json(&live->source)) < 0 ||
            status_add_event_counts(a, o) < 0 ||
            status_add_oom(o, live->oom) < 0 ||
            json_object_set_new(o, "slabReconciliation", slab_status_json(a)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static int method_status(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        if (begin_call(call, parameters, NULL, 0) < 0)
                return 0;
        ServiceLive live = service_live(sv);
        json_auto_t *reply = service_status_json(sv->accounting, &live, sv->page_size,
                                                 varlink_call_peer_is_root(call));
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_summary(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t limit = 10;
        const VarlinkField fields[] = {
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
        };
        json_auto_t *tasks = NULL, *modules = NULL, *units = NULL, *reply = NULL;
        AccountingStats s;
        UsageStats us;
        int r;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        /* The biggest: tasks holding nothing are not among them. */
        r = query_tasks(sv->accounting, &(QueryTasks) { .sort = QUERY_SORT_CURRENT, .limit = (size_t) limit, .pid = -1,
                                                        .hide_zero = true }, &tasks);
        if (r < 0)
                return r;
        r = query_modules(sv->accounting, QUERY_SORT_CURRENT, (size_t) limit, &modules);
        if (r < 0)
                return r;
        r = query_units(sv->accounting, &(QueryUnits) { .sort = QUERY_SORT_CURRENT, .limit = (size_t) limit,
                                                         .hide_zero = true }, &units);
        if (r < 0)
                return r;

        accounting_get_stats(sv->accounting, &s);
        usage_get_stats(accounting_usage(sv->accounting), &us);
        ServiceLive live = service_live(sv);
        reply = json_pack("{s:s, s:I, s:{s:I, s:I}, s:I, s:I, s:I, s:i, s:I, s:I, s:O, s:O, s:O, s:O}",
                          "backend", live.backend,
                          "uptimeUsec", varlink_count(live.uptime_usec),
                          "pages", "current", varlink_count(s.current_pages),
                          "peak", varlink_count(s.peak_pages),
                          "events", varlink_count(s.events),
                          "lostEvents", varlink_count(s.lost_events),
                          "untrackedFrees", varlink_count(s.untracked_frees),
                          "pageSize", (int) sv->page_size,
                          "taskCount", varlink_count(us.n_tasks),
                          "moduleCount", varlink_count(json_array_size(modules)),
                          "topTasks", json_object_get(tasks, "tasks"),
                          "topModules", modules,
                          "topUnits", units,
                          "evicted", json_object_get(tasks, "evicted"));
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_tasks(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *sort = NULL, *comm = NULL;
        int64_t limit = 50, pid = -1;
        bool include_exited = false, threads = false, hide_zero = false;
        const VarlinkField fields[] = {
                { .name = "sortBy", .type = VARLINK_FIELD_STRING, .ret = &sort, .choices = sort_choices },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
                { .name = "pid", .type = VARLINK_FIELD_INT, .ret = &pid, .min = 0, .max = INT32_MAX },
                { .name = "comm", .type = VARLINK_FIELD_STRING, .ret = &comm },
                { .name = "includeExited", .type = VARLINK_FIELD_BOOL, .ret = &include_exited },
                { .name = "threads", .type = VARLINK_FIELD_BOOL, .ret = &threads },
                { .name = "hideZero", .type = VARLINK_FIELD_BOOL, .ret = &hide_zero },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        QueryTasks q = {
                .sort = query_sort_from_string(sort),
                .limit = (size_t) limit,
                .pid = (int32_t) pid,
                .comm = comm,
                .include_exited = include_exited,
                .threads = threads,
                .hide_zero = hide_zero,
        };
        int r = query_tasks(sv->accounting, &q, &reply);
        if (r == -ESRCH) {
                json_auto_t *p = json_pack("{s:I}", "pid", (json_int_t) pid);
                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_TASK, p);
        }
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_modules(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *sort = NULL;
        int64_t limit = 50;
        const VarlinkField fields[] = {
                { .name = "sortBy", .type = VARLINK_FIELD_STRING, .ret = &sort, .choices = sort_choices_pages },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
        };
        json_auto_t *modules = NULL, *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        int r = query_modules(sv->accounting, query_sort_from_string(sort), (size_t) limit, &modules);
        if (r < 0)
                return r;
        reply = json_pack("{s:O}", "modules", modules);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int reply_no_such_unit(VarlinkCall *call, const char *name) {
        json_auto_t *p = json_pack("{s:s}", "name", name);
        return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_UNIT, p);
}

static int method_units(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *sort = NULL, *name = NULL;
        int64_t limit = 50, stacks = 0;
        bool hide_zero = false;
        const VarlinkField fields[] = {
                { .name = "sortBy", .type = VARLINK_FIELD_STRING, .ret = &sort, .choices = sort_choices_pages },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
                { .name = "name", .type = VARLINK_FIELD_STRING, .ret = &name },
                { .name = "stacks", .type = VARLINK_FIELD_INT, .ret = &stacks, .min = 0, .max = QUERY_UNIT_STACKS_MAX },
                { .name = "hideZero", .type = VARLINK_FIELD_BOOL, .ret = &hide_zero },
        };
        json_auto_t *units = NULL, *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        QueryUnits q = {
                .sort = query_sort_from_string(sort),
                .limit = (size_t) limit,
                .name = name,
                .stacks = (unsigned) stacks,
                .hide_zero = hide_zero,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
        };
        int r = query_units(sv->accounting, &q, &units);
        if (r == -ENXIO)
                return reply_no_such_unit(call, name);
        if (r < 0)
                return r;
        reply = json_pack("{s:O}", "units", units);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

/* The raw name (as the core keeps it) of a unit or module named as in replies; NULL if unknown. */
static const char *history_owner_name(Accounting *a, HistoryKind kind, const char *name) {
        if (kind == HISTORY_UNIT) {
                Units *un = accounting_units(a);
                for (uint32_t i = 1; i < units_unit_count(un); i++) {
                        const UnitUsage *x = units_unit(un, i);
                        if (x && x->name && utf8_escaped_streq(x->name, name))
                                return x->name;
                }
        } else {
                Usage *u = accounting_usage(a);
                for (uint16_t id = 1; id <= usage_module_count(u); id++)
                        if (utf8_escaped_streq(usage_module(u, id)->name, name))
                                return usage_module(u, id)->name;
        }
        return NULL;
}

static int method_history(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *unit = NULL, *module = NULL, *name = NULL;
        int64_t pid = -1, seconds = -1, resolution = -1;
        const VarlinkField fields[] = {
                { .name = "pid", .type = VARLINK_FIELD_INT, .ret = &pid, .min = 0, .max = INT32_MAX },
                { .name = "unit", .type = VARLINK_FIELD_STRING, .ret = &unit },
                { .name = "module", .type = VARLINK_FIELD_STRING, .ret = &module },
                { .name = "seconds", .type = VARLINK_FIELD_INT, .ret = &seconds, .min = 0, .max = INT32_MAX },
                { .name = "resolution", .type = VARLINK_FIELD_INT, .ret = &resolution, .min = 1, .max = INT32_MAX },
        };
        _cleanup_free_ HistorySample *samples = NULL;
        json_auto_t *points = NULL, *resolutions = NULL, *reply = NULL;
        HistoryKind kind = HISTORY_TOTAL;
        unsigned level = 0;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        if (pid >= 0 && unit)
                return varlink_call_error_invalid_parameter(call, "unit");
        if ((pid >= 0 || unit) && module)
                return varlink_call_error_invalid_parameter(call, "module");
        if (resolution > 0) {
                while (level < HISTORY_LEVELS &&
                       history_levels[level].resolution_usec != (uint64_t) resolution * USEC_PER_SEC)
                        level++;
                if (level == HISTORY_LEVELS)
                        return varlink_call_error_invalid_parameter(call, "resolution");
        } else if (seconds >= 0)
                level = history_level_for((uint64_t) seconds);
        if (!sv->history)
                return -EOPNOTSUPP;

        HistorySeries *series;
        if (pid >= 0) {
                kind = HISTORY_TASK;
                series = history_find(sv->history, kind, (int32_t) pid, NULL);
                if (!series) {
                        if (usage_find_process(accounting_usage(sv->accounting), (int32_t) pid) == USAGE_TASK_NONE) {
                                json_auto_t *p = json_pack("{s:I}", "pid", (json_int_t) pid);
                                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_TASK, p);
                        }
                        Usage *u = accounting_usage(sv->accounting);
                        Task *t = usage_task(u, usage_find_process(u, (int32_t) pid));
                        series = history_track(sv->history, kind, (int32_t) pid, t ? t->comm : NULL);
                }
        } else if (unit || module) {
                kind = unit ? HISTORY_UNIT : HISTORY_MODULE;
                const char *asked = unit ?: module;
                const char *raw = history_owner_name(sv->accounting, kind, asked);
                series = history_find(sv->history, kind, 0, raw ?: asked);
                if (!series) {
                        if (!raw) {
                                if (unit)
                                        return reply_no_such_unit(call, unit);
                                json_auto_t *p = json_pack("{s:s}", "name", module);
                                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_MODULE, p);
                        }
                        series = history_track(sv->history, kind, 0, raw);
                }
        } else
                series = history_find(sv->history, kind, 0, NULL);
        if (!series)
                return -ENOSPC; /* every series of the kind is among the biggest: cannot be (history.h) */
        name = series->name;

        samples = calloc(history_levels[level].n_buckets, sizeof(HistorySample));
        if (!samples)
                return -ENOMEM;
        uint64_t since = 0;
        if (seconds >= 0) {
                uint64_t now = now_usec(CLOCK_REALTIME), back = (uint64_t) seconds * USEC_PER_SEC;
                since = now > back ? now - back : 0;
        }
        size_t n = history_series_read(series, level, since, samples);
        points = json_array();
        resolutions = json_array();
        if (!points || !resolutions)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(points, json_pack("{s:I, s:I, s:I}",
                                                            "timestampUsec", varlink_count(samples[i].time_usec),
                                                            "current", varlink_count(samples[i].current_pages),
                                                            "peak", varlink_count(samples[i].peak_pages))) < 0)
                        return -ENOMEM;
        for (unsigned l = 0; l < HISTORY_LEVELS; l++)
                if (json_array_append_new(resolutions,
                                          json_integer(varlink_count(history_levels[l].resolution_usec /
                                                                     USEC_PER_SEC))) < 0)
                        return -ENOMEM;
        reply = json_pack("{s:s, s:o, s:I, s:O, s:O}",
                          "what", history_kind_to_string(kind),
                          "name", kind == HISTORY_TOTAL ? json_string("") : utf8_json_string(name),
                          "resolution", varlink_count(history_levels[level].resolution_usec / USEC_PER_SEC),
                          "resolutions", resolutions,
                          "points", points);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_stack_tree(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *module = NULL, *unit = NULL, *sort = NULL;
        int64_t pid = -1, max_depth = 32, min_pages = 1, max_children = 16;
        const VarlinkField fields[] = {
                { .name = "pid", .type = VARLINK_FIELD_INT, .ret = &pid, .min = 0, .max = INT32_MAX },
                { .name = "unit", .type = VARLINK_FIELD_STRING, .ret = &unit },
                { .name = "module", .type = VARLINK_FIELD_STRING, .ret = &module },
                { .name = "maxDepth", .type = VARLINK_FIELD_INT, .ret = &max_depth, .min = 0, .max = 255 },
                { .name = "minPages", .type = VARLINK_FIELD_INT, .ret = &min_pages, .min = 0, .max = INT64_MAX },
                { .name = "maxChildren", .type = VARLINK_FIELD_INT, .ret = &max_children, .min = 1, .max = 10000 },
                { .name = "sortBy", .type = VARLINK_FIELD_STRING, .ret = &sort, .choices = sort_choices_pages },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        /* pid, unit and module exclude each other: the later one named is the wrong one. */
        if (pid >= 0 && unit)
                return varlink_call_error_invalid_parameter(call, "unit");
        if ((pid >= 0 || unit) && module)
                return varlink_call_error_invalid_parameter(call, "module");

        QueryStackTree q = {
                .pid = (int32_t) pid,
                .unit = unit,
                .module = module,
                .max_depth = (unsigned) max_depth,
                .min_pages = (uint64_t) min_pages,
                .max_children = (unsigned) max_children,
                .sort = query_sort_from_string(sort),
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
        };
        int r = query_stacktree(sv->accounting, &q, &reply);
        if (r == -ESRCH) {
                json_auto_t *p = json_pack("{s:I}", "pid", (json_int_t) pid);
                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_TASK, p);
        }
        if (r == -ENOENT) {
                json_auto_t *p = json_pack("{s:s}", "name", module);
                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_MODULE, p);
        }
        if (r == -ENXIO)
                return reply_no_such_unit(call, unit);
        if (r < 0)
                return r;
        ServiceLive live = service_live(sv);
        if (json_object_set_new(reply, "stackSampleInterval",
                                json_integer(varlink_count(live.source.stack_sample_interval))) < 0)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

/* One Top frame: totals and the first limit tasks (without those holding nothing if hide_zero) and
 * modules and units in sort order. */
static int top_frame(Service *sv, QuerySort sort, int64_t limit, bool hide_zero, json_t **ret) {
        json_auto_t *tasks = NULL, *modules = NULL, *units = NULL, *slab = NULL;
        AccountingStats s;
        StackTreeStats st;
        int r;

        r = query_tasks(sv->accounting, &(QueryTasks) { .sort = sort, .limit = (size_t) limit, .pid = -1,
                                                        .hide_zero = hide_zero }, &tasks);
        if (r < 0)
                return r;
        r = query_modules(sv->accounting, sort == QUERY_SORT_ALLOCS ? QUERY_SORT_CURRENT : sort, (size_t) limit,
                          &modules);
        if (r < 0)
                return r;
        r = query_units(sv->accounting, &(QueryUnits) { .sort = sort == QUERY_SORT_ALLOCS ? QUERY_SORT_CURRENT : sort,
                                                         .limit = (size_t) limit, .hide_zero = hide_zero }, &units);
        if (r < 0)
                return r;
        /* Call sites by name only: one frame goes to every stream, root's or not. */
        if (accounting_traces_slab(sv->accounting)) {
                r = slab_top_json(sv->accounting, (size_t) limit, &slab);
                if (r < 0)
                        return r;
        }
        accounting_get_stats(sv->accounting, &s);
        stacktree_get_stats(accounting_stacktree(sv->accounting), &st);
        ServiceLive live = service_live(sv);
        *ret = json_pack("{s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:O, s:O, s:O, s:O, s:O?}",
                         "timestampUsec", varlink_count(now_usec(CLOCK_MONOTONIC)),
                         "trackedPages", varlink_count(s.current_pages),
                         "peakTrackedPages", varlink_count(s.peak_pages),
                         "eventsPerSecond", live.events_per_second,
                         "lostEvents", varlink_count(s.lost_events),
                         "uptimeUsec", varlink_count(live.uptime_usec),
                         "stacksTruncated", varlink_count(st.stacks_truncated + st.process_paths_truncated),
                         "tasks", json_object_get(tasks, "tasks"),
                         "evicted", json_object_get(tasks, "evicted"),
                         "modules", modules,
                         "units", units,
                         "slab", slab);
        return *ret ? 0 : -ENOMEM;
}

/* The first limit entries of an array, sharing its elements. */
static json_t *array_prefix(json_t *a, size_t limit) {
        json_auto_t *p = json_array();

        if (!p)
                return NULL;
        for (size_t i = 0; i < json_array_size(a) && i < limit; i++)
                if (json_array_append(p, json_array_get(a, i)) < 0)
                        return NULL;
        return TAKE_PTR(p);
}

/* frame as a stream with a smaller limit sees it. A new reference. */
static json_t *top_frame_cut(json_t *frame, int64_t limit) {
        json_auto_t *cut = json_copy(frame); /* shallow: the values are shared */

        if (!cut ||
            json_object_set_new(cut, "tasks", array_prefix(json_object_get(frame, "tasks"), (size_t) limit)) < 0 ||
            json_object_set_new(cut, "modules", array_prefix(json_object_get(frame, "modules"), (size_t) limit)) < 0 ||
            json_object_set_new(cut, "units", array_prefix(json_object_get(frame, "units"), (size_t) limit)) < 0)
                return NULL;
        json_t *slab = json_object_get(frame, "slab");
        if (json_is_object(slab)) {
                json_auto_t *slab_cut = json_copy(slab);
                if (!slab_cut ||
                    json_object_set_new(slab_cut, "rows", array_prefix(json_object_get(slab, "rows"), (size_t) limit)) < 0 ||
                    json_object_set(cut, "slab", slab_cut) < 0)
                        return NULL;
        }
        return TAKE_PTR(cut);
}

/* Sets the timer for the stream due next, or turns it off when none is open. */
static int top_timer_arm(Service *sv) {
        uint64_t next = UINT64_MAX, shortest = UINT64_MAX;
        int r;

        for (TopStream *t = sv->top_streams; t; t = t->next) {
                next = MIN(next, t->next_usec);
                shortest = MIN(shortest, t->interval_usec);
        }
        if (next == UINT64_MAX)
                return sv->top_timer ? sd_event_source_set_enabled(sv->top_timer, SD_EVENT_OFF) : 0;
        r = sd_event_source_set_time(sv->top_timer, next);
        if (r < 0)
                return r;
        r = sd_event_source_set_time_accuracy(sv->top_timer, MAX(shortest / TOP_ACCURACY_DIVISOR, (uint64_t) 1));
        if (r < 0)
                return r;
        /* Time sources are one-shot by default; every wakeup arms it again. */
        return sd_event_source_set_enabled(sv->top_timer, SD_EVENT_ON);
}

static TopStream *top_stream_free(TopStream *t) {
        if (!t)
                return NULL;
        Service *sv = t->service;
        LIST_REMOVE(sv->top_streams, t);
        sv->n_top_streams--;
        free(t);
        /* No wakeup for a stream that is gone. */
        if (sv->top_timer)
                (void) top_timer_arm(sv);
        return NULL;
}

static void top_disconnected(VarlinkCall *call, void *userdata) {
        top_stream_free(userdata);
}

static bool top_stream_due(const TopStream *t, uint64_t now) {
        /* A little early is on time: streams due close together share a frame. */
        return t->next_usec <= now + t->interval_usec / TOP_BATCH_DIVISOR;
}

/* Whether t takes part in this wakeup: due, and its last update read. A client that does not read costs
 * neither memory nor work (the server drops it when its output stays unread). */
static bool top_stream_wants_frame(const TopStream *t, uint64_t now) {
        return top_stream_due(t, now) && varlink_call_output_pending(t->call) == 0;
}

static int top_timer_fired(sd_event_source *s, uint64_t usec, void *userdata) {
        /* One frame per sort key and zero-row filter, shared by every stream that asks for it. */
        json_t *frames[_QUERY_SORT_MAX][2] = {};
        int64_t limits[_QUERY_SORT_MAX][2] = {};
        Service *sv = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool any = false;
        int r;

        for (TopStream *t = sv->top_streams; t; t = t->next)
                if (top_stream_wants_frame(t, now)) {
                        limits[t->sort][t->hide_zero] = MAX(limits[t->sort][t->hide_zero], t->limit);
                        any = true;
                }
        if (any) {
                service_flush(sv);
                for (QuerySort q = 0; q < _QUERY_SORT_MAX; q++)
                        for (int z = 0; z < 2; z++)
                                if (limits[q][z] > 0) {
                                        r = top_frame(sv, q, limits[q][z], z, &frames[q][z]);
                                        if (r < 0)
                                                log_debug_errno(r, "Top frame failed, skipping a beat: %m");
                                }
        }

        for (TopStream *t = sv->top_streams, *next; t; t = next) {
                next = t->next; /* a failed send never frees t here, but do not rely on it */
                if (!top_stream_due(t, now))
                        continue;
                bool wants = top_stream_wants_frame(t, now);
                /* On the beat; a stream that fell a whole interval behind (a busy loop, an unread frame)
                 * skips what it missed instead of getting frames back to back. */
                t->next_usec += t->interval_usec;
                if (t->next_usec <= now)
                        t->next_usec = now + t->interval_usec;
                json_t *frame = frames[t->sort][t->hide_zero];
                if (!wants || !frame)
                        continue;
                int64_t frame_limit = limits[t->sort][t->hide_zero];
                json_auto_t *reply = t->limit == frame_limit ? json_incref(frame) : top_frame_cut(frame, t->limit);
                r = reply ? varlink_call_reply_more(t->call, reply) : -ENOMEM;
                /* The connection is going (its disconnect handler frees the stream) or memory is short. */
                if (r < 0)
                        log_debug_errno(r, "Top stream update failed, ignoring: %m");
        }
        for (QuerySort q = 0; q < _QUERY_SORT_MAX; q++)
                for (int z = 0; z < 2; z++)
                        json_decref(frames[q][z]);

        return top_timer_arm(sv);
}

/* Adds t to the open streams (it is theirs even on failure) and sets the timer for whichever is due first. */
static int top_stream_start(Service *sv, TopStream *t) {
        int r;

        LIST_PREPEND(sv->top_streams, t);
        sv->n_top_streams++;
        if (!sv->top_timer) {
                r = sd_event_add_time(sv->event, &sv->top_timer, CLOCK_MONOTONIC, t->next_usec,
                                      MAX(t->interval_usec / TOP_ACCURACY_DIVISOR, (uint64_t) 1), top_timer_fired, sv);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(sv->top_timer, "top-timer");
                /* Below the event rings, as every client's work. */
                r = sd_event_source_set_priority(sv->top_timer, sv->priority);
                if (r < 0)
                        return r;
        }
        return top_timer_arm(sv);
}

int service_top_timer(Service *sv, uint64_t *ret_usec, uint64_t *ret_accuracy_usec) {
        int enabled = SD_EVENT_OFF, r;

        assert(sv);
        assert(ret_usec);
        assert(ret_accuracy_usec);

        if (sv->top_timer) {
                r = sd_event_source_get_enabled(sv->top_timer, &enabled);
                if (r < 0)
                        return r;
        }
        if (enabled == SD_EVENT_OFF) {
                *ret_usec = *ret_accuracy_usec = 0;
                return 0;
        }
        r = sd_event_source_get_time(sv->top_timer, ret_usec);
        if (r < 0)
                return r;
        return sd_event_source_get_time_accuracy(sv->top_timer, ret_accuracy_usec);
}

static int method_top(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *sort = NULL;
        int64_t interval = 1000000, limit = 20;
        bool hide_zero = false;
        const VarlinkField fields[] = {
                { .name = "intervalUsec", .type = VARLINK_FIELD_INT, .ret = &interval, .min = TOP_INTERVAL_MIN_USEC, .max = INT64_MAX },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
                { .name = "sortBy", .type = VARLINK_FIELD_STRING, .ret = &sort, .choices = sort_choices },
                { .name = "hideZero", .type = VARLINK_FIELD_BOOL, .ret = &hide_zero },
        };
        json_auto_t *reply = NULL;
        _cleanup_free_ TopStream *t = NULL;
        int r;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        if (varlink_call_wants_more(call) && sv->n_top_streams >= TOP_STREAMS_MAX) {
                json_auto_t *p = json_pack("{s:s, s:i}", "limit", "topStreams", "value", TOP_STREAMS_MAX);
                return varlink_call_error(call, MEMSTRACK_ERROR_LIMIT_EXCEEDED, p);
        }
        r = top_frame(sv, query_sort_from_string(sort), limit, hide_zero, &reply);
        if (r < 0)
                return r;
        if (!varlink_call_wants_more(call))
                return varlink_call_reply(call, reply);

        t = calloc(1, sizeof(TopStream));
        if (!t)
                return -ENOMEM;
        *t = (TopStream) { .service = sv, .call = call, .interval_usec = (uint64_t) interval, .limit = limit,
                           .sort = query_sort_from_string(sort), .hide_zero = hide_zero,
                           .next_usec = now_usec(CLOCK_MONOTONIC) + (uint64_t) interval };
        r = varlink_call_reply_more(call, reply);
        if (r < 0)
                return r;
        /* From here the stream is the connection's: its disconnect handler frees it. */
        varlink_call_set_disconnect_handler(call, top_disconnected, t);
        r = top_stream_start(sv, TAKE_PTR(t));
        if (r < 0)
                log_warning_errno(r, "Cannot schedule the Top streams' timer, ignoring: %m");
        return 0;
}

static int method_reset(VarlinkCall *call, json_t *parameters, void *userdata) {
        static const char *const choices[] = { "peaks", "all", NULL };
        Service *sv = userdata;
        const char *what = NULL;
        const VarlinkField fields[] = {
                { .name = "what", .type = VARLINK_FIELD_STRING, .ret = &what, .mandatory = true, .choices = choices },
        };

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        accounting_reset(sv->accounting, streq(what, "all") ? ACCOUNTING_RESET_ALL : ACCOUNTING_RESET_PEAKS);
        log_notice("Reset of %s requested by uid %u.", what, (unsigned) varlink_call_get_peer_uid(call));
        return varlink_call_reply(call, NULL);
}

static int method_snapshot(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *name = NULL;
        const VarlinkField fields[] = {
                { .name = "name", .type = VARLINK_FIELD_STRING, .ret = &name, .mandatory = true },
        };
        json_auto_t *reply = NULL;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        int r = marks_save(sv->marks, varlink_call_get_peer_uid(call), name, sv->accounting, now);
        if (r == -EINVAL)
                return varlink_call_error_invalid_parameter(call, "name");
        if (r == -EDQUOT || r == -ENOSPC) {
                json_auto_t *p = json_pack("{s:s, s:i}", "limit", r == -EDQUOT ? "snapshots" : "snapshotsAllUsers",
                                           "value", r == -EDQUOT ? MARKS_PER_UID_MAX : MARKS_OTHERS_MAX);
                return varlink_call_error(call, MEMSTRACK_ERROR_LIMIT_EXCEEDED, p);
        }
        if (r < 0)
                return r;
        reply = json_pack("{s:s, s:I}", "name", name, "timestampUsec", varlink_count(now));
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_diff(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *name = NULL;
        int64_t limit = 50;
        const VarlinkField fields[] = {
                { .name = "name", .type = VARLINK_FIELD_STRING, .ret = &name, .mandatory = true },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        int r = marks_diff(sv->marks, varlink_call_get_peer_uid(call), name, sv->accounting, now_usec(CLOCK_MONOTONIC),
                           (size_t) limit, &reply);
        if (r == -ENOENT) {
                json_auto_t *p = json_pack("{s:s}", "name", name);
                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT, p);
        }
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int reply_not_root(VarlinkCall *call, const char *reason) {
        json_auto_t *p = json_pack("{s:s}", "reason", reason);
        return p ? varlink_call_error(call, MEMSTRACK_ERROR_PERMISSION_DENIED, p) : -ENOMEM;
}

static int method_list_snapshots(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        bool all_users = false;
        const VarlinkField fields[] = {
                { .name = "allUsers", .type = VARLINK_FIELD_BOOL, .ret = &all_users },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        if (all_users && !varlink_call_peer_is_root(call))
                return reply_not_root(call, "only root sees other users' snapshots");
        int r = marks_list(sv->marks, sv->accounting, all_users, varlink_call_get_peer_uid(call), &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_delete_snapshot(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *name = NULL;
        int64_t uid = -1;
        const VarlinkField fields[] = {
                { .name = "name", .type = VARLINK_FIELD_STRING, .ret = &name, .mandatory = true },
                { .name = "uid", .type = VARLINK_FIELD_INT, .ret = &uid, .min = 0, .max = UINT32_MAX - 1 },
        };

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        uid_t caller = varlink_call_get_peer_uid(call);
        if (uid >= 0 && (uid_t) uid != caller && !varlink_call_peer_is_root(call))
                return reply_not_root(call, "only root deletes other users' snapshots");
        int r = marks_delete(sv->marks, uid >= 0 ? (uid_t) uid : caller, name);
        if (r == -ENOENT) {
                json_auto_t *p = json_pack("{s:s}", "name", name);
                return p ? varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT, p) : -ENOMEM;
        }
        if (r < 0)
                return r;
        if (uid >= 0 && (uid_t) uid != caller)
                log_notice("Snapshot \"%s\" of uid %u deleted by uid %u.", name, (unsigned) uid, (unsigned) caller);
        return varlink_call_reply(call, NULL);
}

static int method_boot_phase(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;

        if (begin_call(call, parameters, NULL, 0) < 0)
                return 0;
        if (!sv->boot_phase) {
                json_auto_t *e = json_pack("{s:s}", "name", "initramfs");
                return e ? varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT, e) : -ENOMEM;
        }
        json_auto_t *doc = boot_phase_for_caller(sv->boot_phase, varlink_call_peer_is_root(call));
        json_auto_t *reply = doc ? json_pack("{s:O}", "snapshot", doc) : NULL;
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_set_log_level(VarlinkCall *call, json_t *parameters, void *userdata) {
        const char *level = NULL;
        const VarlinkField fields[] = {
                { .name = "level", .type = VARLINK_FIELD_STRING, .ret = &level, .mandatory = true },
        };

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        int l = log_level_from_string(level);
        if (l < 0)
                return varlink_call_error_invalid_parameter(call, "level");
        log_set_max_level(l);
        log_info("Log level set to %s.", log_level_to_string(l));
        return varlink_call_reply(call, NULL);
}

static const char *const slab_by_choices[] = { "callsite", "cache", "task", "unit", NULL };

static int method_slab(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *by = NULL;
        int64_t limit = 50;
        const VarlinkField fields[] = {
                { .name = "by", .type = VARLINK_FIELD_STRING, .ret = &by, .choices = slab_by_choices },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        int r = slab_query_json(sv->accounting, by ? slab_by_from_string(by) : SLAB_BY_CALLSITE, (size_t) limit,
                                show_addresses(sv, varlink_call_peer_is_root(call)), &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_heap(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t pid = 0, max_depth = HEAP_QUERY_DEPTH_DEFAULT, max_children = HEAP_QUERY_CHILDREN_DEFAULT;
        const VarlinkField fields[] = {
                { .name = "pid", .type = VARLINK_FIELD_INT, .ret = &pid, .min = 1, .max = INT32_MAX },
                { .name = "maxDepth", .type = VARLINK_FIELD_INT, .ret = &max_depth, .min = 0, .max = 255 },
                { .name = "maxChildren", .type = VARLINK_FIELD_INT, .ret = &max_children, .min = 1,
                  .max = 10000 },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        HeapQuery q = {
                .pid = (int32_t) pid,
                .max_depth = (unsigned) max_depth,
                .max_children = (unsigned) max_children,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
        };
        int r = heap_query_json(sv->accounting, sv->usym, &q, &reply);
        if (r == -ESRCH) {
                json_auto_t *p = json_pack("{s:I}", "pid", (json_int_t) pid);
                return varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_TASK, p);
        }
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

#define LEAKS_INTERVALS_MAX 60

static int method_leaks(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t min_age = 60, interval = 10, intervals = 6, pid = 0, limit = 20;
        const VarlinkField fields[] = {
                { .name = "minAgeSeconds", .type = VARLINK_FIELD_INT, .ret = &min_age, .min = 0, .max = INT32_MAX },
                { .name = "intervalSeconds", .type = VARLINK_FIELD_INT, .ret = &interval, .min = 1, .max = INT32_MAX },
                { .name = "intervals", .type = VARLINK_FIELD_INT, .ret = &intervals, .min = 1,
                  .max = LEAKS_INTERVALS_MAX },
                { .name = "pid", .type = VARLINK_FIELD_INT, .ret = &pid, .min = 1, .max = INT32_MAX },
                { .name = "limit", .type = VARLINK_FIELD_INT, .ret = &limit, .min = 1, .max = QUERY_LIMIT_MAX },
        };
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, fields, ELEMENTSOF(fields)) < 0)
                return 0;
        /* One walk of every tracked page per call (docs/performance.md): paced for all callers together,
         * so that no client, or all of them, can keep the daemon from its events. */
        uint64_t start_usec = now_usec(CLOCK_MONOTONIC);
        if (start_usec < sv->leaks_ready_usec) {
                json_auto_t *p = json_pack("{s:s, s:I}", "limit", "leaksPace",
                                           "value", varlink_count(sv->leaks_ready_usec - start_usec));
                return varlink_call_error(call, MEMSTRACK_ERROR_LIMIT_EXCEEDED, p);
        }
        LeaksQuery q = {
                .now_nsec = now_nsec(CLOCK_MONOTONIC),
                .min_age_nsec = (uint64_t) min_age * UINT64_C(1000000000),
                .interval_nsec = (uint64_t) interval * UINT64_C(1000000000),
                .intervals = (unsigned) intervals,
                .pid = (int32_t) pid,
                .limit = (size_t) limit,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
        };
        int r = leaks_query_json(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        uint64_t end_usec = now_usec(CLOCK_MONOTONIC);
        sv->leaks_ready_usec = end_usec + (end_usec - start_usec) * sv->leaks_pace;
        return varlink_call_reply(call, reply);
}

static int method_oom_kills(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *reply = NULL;

        if (begin_call(call, parameters, NULL, 0) < 0)
                return 0;
        ServiceLive live = service_live(sv);
        if (live.oom)
                reply = oomlog_json(live.oom);
        else {
                _cleanup_(oomlog_freep) OomLog *empty = oomlog_new();
                if (empty && oomlog_set_watching(empty, false, "not started") >= 0)
                        reply = oomlog_json(empty);
        }
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static const VarlinkMethod methods[] = {
        { "io.memstrack.Status", method_status, 0 },
        { "io.memstrack.Summary", method_summary, 0 },
        { "io.memstrack.Tasks", method_tasks, 0 },
        { "io.memstrack.Modules", method_modules, 0 },
        { "io.memstrack.Units", method_units, 0 },
        { "io.memstrack.History", method_history, 0 },
        { "io.memstrack.StackTree", method_stack_tree, 0 },
        { "io.memstrack.Top", method_top, 0 },
        { "io.memstrack.Reset", method_reset, VARLINK_METHOD_ROOT_ONLY },
        { "io.memstrack.Snapshot", method_snapshot, 0 },
        { "io.memstrack.Diff", method_diff, 0 },
        { "io.memstrack.ListSnapshots", method_list_snapshots, 0 },
        { "io.memstrack.DeleteSnapshot", method_delete_snapshot, 0 },
        { "io.memstrack.BootPhase", method_boot_phase, 0 },
        { "io.memstrack.SetLogLevel", method_set_log_level, VARLINK_METHOD_ROOT_ONLY },
        { "io.memstrack.OomKills", method_oom_kills, 0 },
        { "io.memstrack.Slab", method_slab, 0 },
        { "io.memstrack.Leaks", method_leaks, 0 },
        { "io.memstrack.Heap", method_heap, 0 },
};

static const VarlinkInterface interfaces[] = {
        { "io.memstrack", varlink_interface_io_memstrack },
};

Service *service_free(Service *sv) {
        if (!sv)
                return NULL;
        /* Freeing the server calls every open call's disconnect handler, which frees its stream. */
        sv->server = varlink_server_free(sv->server);
        while (sv->top_streams)
                top_stream_free(sv->top_streams);
        sd_event_source_disable_unref(sv->top_timer);
        marks_free(sv->marks);
        json_decref(sv->boot_phase);
        free(sv);
        return NULL;
}

int service_new(const ServiceConfig *config, Service **ret) {
        _cleanup_(service_freep) Service *sv = NULL;
        int r;

        assert(config);
        assert(config->event && config->accounting && config->flush && config->get_live);
        assert(ret);

        sv = calloc(1, sizeof(Service));
        if (!sv)
                return log_oom();
        *sv = (Service) {
                .event = config->event,
                .accounting = config->accounting,
                .usym = config->usym,
                .history = config->history,
                .page_size = config->page_size,
                .priority = config->priority,
                .userdata = config->userdata,
                .flush = config->flush,
                .get_live = config->get_live,
                .leaks_pace = config->leaks_pace ?: SERVICE_LEAKS_PACE,
        };
        sv->marks = marks_new();
        if (!sv->marks)
                return log_oom();
        /* Not serving it is no reason not to serve the rest: boot_phase_load() said why. */
        if (config->boot_phase_path)
                (void) boot_phase_load(config->boot_phase_path, &sv->boot_phase);

        VarlinkServerConfig c = {
                .socket_path = config->socket_path ?: MEMSTRACK_SOCKET_DEFAULT,
                .group = config->group ?: MEMSTRACK_GROUP_DEFAULT,
                .vendor = "memstrack",
                .product = "memstrackd",
                .version = PACKAGE_VERSION,
                .url = "man:memstrackd(8)",
                .interfaces = interfaces,
                .n_interfaces = ELEMENTSOF(interfaces),
                .methods = methods,
                .n_methods = ELEMENTSOF(methods),
                .errors = {
                        .permission_denied = MEMSTRACK_ERROR_PERMISSION_DENIED,
                        .too_many_connections = MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS,
                        .limit_exceeded = MEMSTRACK_ERROR_LIMIT_EXCEEDED,
                        .internal = MEMSTRACK_ERROR_INTERNAL,
                },
                .userdata = sv,
                .first_message_timeout_usec = config->first_message_timeout_usec,
                .request_timeout_usec = config->request_timeout_usec,
                .idle_timeout_usec = config->idle_timeout_usec,
                .output_timeout_usec = config->output_timeout_usec,
                .priority = config->priority,
                .max_connections_per_uid = config->max_connections_per_uid,
        };
        r = varlink_server_new(sv->event, &c, &sv->server);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on %s: %m", c.socket_path);
        const char *path = varlink_server_get_socket_path(sv->server);
        log_info("Serving io.memstrack on %s.", path ?: "the socket passed by systemd");
        *ret = TAKE_PTR(sv);
        return 0;
}
