/* SPDX-License-Identifier: MIT */

/*
 * The io.memstrack methods: replies. The server checked each call's parameters against
 * io.memstrack.varlink before its handler runs; the views themselves are built by query.c, marks.c and
 * the other api/ files; this file maps calls onto them, and their errnos onto the interface's errors in
 * one place (service_reply_errno()).
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bootphase.h"
#include "breakdown.h"
#include "coldquery.h"
#include "config.h"
#include "explain.h"
#include "heapquery.h"
#include "view.h"
#include "historyquery.h"
#include "log.h"
#include "marks.h"
#include "profilequery.h"
#include "query.h"
#include "service.h"
#include "leaks.h"
#include "slabquery.h"
#include "time-util.h"
#include "topstream.h"
#include "utf8.h"
#include "varlink-server.h"
#include "varlink.h"

extern const char varlink_interface_io_memstrack[];
extern const VarlinkSignature varlink_signature_io_memstrack;

struct Service {
        /* From ServiceConfig: event, accounting and usym are borrowed. */
        sd_event *event;
        Accounting *accounting;
        UserSymbols *usym;
        History *history;
        const Coldness *coldness;       /* NULL: no access rounds */
        long page_size;
        int64_t priority;
        void *userdata;
        void (*flush)(void *userdata);
        void (*get_state)(void *userdata, ServiceState *ret);
        int (*heap_stop)(void *userdata, int32_t pid);
        uint64_t (*now_nsec)(void *userdata, clockid_t clock);  /* NULL: the system's */

        VarlinkServer *server;          /* owned */
        Marks *marks;                   /* owned: the named snapshots */
        json_t *boot_phase;             /* owned: the initramfs's snapshot document, NULL if none */
        TopStreams *top;                /* owned: the open Top(more) calls */
        unsigned leaks_pace;            /* ServiceConfig's */
        uint64_t leaks_ready_usec;      /* CLOCK_MONOTONIC time from which Leaks is served again */
};

/* The core brought up to date with what the kernel reported so far, so that an answer is about now:
 * before every method (VarlinkServerConfig.before_call, its parameters already checked against the
 * interface file) and every Top frame (TopStreamsConfig.flush). */
static void service_flush(void *userdata) {
        Service *sv = userdata;
        sv->flush(sv->userdata);
}

/* The clocks calls read: ServiceConfig.now_nsec's, else the system's. */
static uint64_t service_now_nsec(Service *sv, clockid_t clock) {
        return sv->now_nsec ? sv->now_nsec(sv->userdata, clock) : now_nsec(clock);
}

static uint64_t service_now_usec(Service *sv, clockid_t clock) {
        return service_now_nsec(sv, clock) / NSEC_PER_USEC;
}

static ServiceState service_state(Service *sv) {
        ServiceState state = { .backend = "none" };
        sv->get_state(sv->userdata, &state);
        return state;
}

/* An integer parameter (absent: the default) within [min, max], a range the interface file cannot say.
 * False once the call got InvalidParameter. */
static bool int_parameter(VarlinkCall *call, const char *name, int64_t absent, int64_t min, int64_t max,
                int64_t *ret) {
        *ret = varlink_call_parameter_int(call, name, absent);
        if (varlink_call_has_parameter(call, name) && (*ret < min || *ret > max)) {
                (void) varlink_call_error_invalid_parameter(call, name);
                return false;
        }
        return true;
}

/* The pid a call is about: -1 when it names none. */
static bool pid_parameter(VarlinkCall *call, int64_t min, int64_t *ret) {
        return int_parameter(call, "pid", -1, min, INT32_MAX, ret);
}

static bool limit_parameter(VarlinkCall *call, int64_t absent, int64_t *ret) {
        return int_parameter(call, "limit", absent, 1, QUERY_LIMIT_MAX, ret);
}

static int reply_error_name(VarlinkCall *call, const char *error, const char *name) {
        json_auto_t *p = json_pack("{s:s}", "name", name);
        return p ? varlink_call_error(call, error, p) : -ENOMEM;
}

/* The string parameter name if the call's method declares it and it was given, else NULL. */
static const char *given_string(VarlinkCall *call, const char *name) {
        return varlink_call_declares_parameter(call, name) ? varlink_call_parameter_string(call, name) : NULL;
}

/* What a view's -errno means in the interface's errors, said about the call's own parameters
 * (VarlinkServerConfig.reply_errno): the one place they are mapped. 0 once answered; an errno the call
 * gives no meaning to goes back to the server as InternalError. */
static int service_reply_errno(VarlinkCall *call, int error, void *userdata) {
        json_auto_t *p = NULL;
        const char *name;

        switch (error) {
        case -ESRCH:            /* no such task: the call's pid */
                if (!varlink_call_declares_parameter(call, "pid"))
                        return error;
                p = json_pack("{s:I}", "pid", (json_int_t) varlink_call_parameter_int(call, "pid", 0));
                return p ? varlink_call_error(call, MEMSTRACK_ERROR_NO_SUCH_TASK, p) : -ENOMEM;
        case -ENXIO:            /* no such unit: the call's unit, or the name of a method about one unit */
                name = given_string(call, "unit") ?: given_string(call, "name");
                return name ? reply_error_name(call, MEMSTRACK_ERROR_NO_SUCH_UNIT, name) : error;
        case -ENOENT:           /* no such module where the call names one, else no such snapshot */
                if ((name = given_string(call, "module")))
                        return reply_error_name(call, MEMSTRACK_ERROR_NO_SUCH_MODULE, name);
                name = given_string(call, "name");
                return name ? reply_error_name(call, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT, name) : error;
        case -EDQUOT:           /* the caller's snapshots are full */
        case -ENOSPC:           /* every user's but root's are */
                p = json_pack("{s:s, s:i}", "limit", error == -EDQUOT ? "snapshots" : "snapshotsAllUsers",
                              "value", error == -EDQUOT ? MARKS_PER_UID_MAX : MARKS_OTHERS_MAX);
                return p ? varlink_call_error(call, MEMSTRACK_ERROR_LIMIT_EXCEEDED, p) : -ENOMEM;
        default:
                return error;
        }
}

static bool show_addresses(Service *sv, bool peer_is_root) {
        return status_addresses_shown(sv->accounting, peer_is_root);
}

/* User-space addresses: root sees every process's; anyone else only those of its own running processes,
 * as it could read their maps itself (query.h). */
static QueryUserAddresses user_addresses(VarlinkCall *call) {
        return varlink_call_peer_is_root(call) ? QUERY_USER_ADDRESSES_ALL : QUERY_USER_ADDRESSES_OWN;
}

/* sortBy, as the interface file's enum let it through (absent: current). */
static QuerySort sort_parameter(VarlinkCall *call) {
        return query_sort_from_string(varlink_call_parameter_string(call, "sortBy"));
}

static int method_status(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        ServiceState state = service_state(sv);
        json_auto_t *reply = status_reply_json(sv->accounting, &state, sv->page_size,
                                                 varlink_call_peer_is_root(call));
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_summary(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *tasks = NULL, *modules = NULL, *units = NULL, *reply = NULL;
        AccountingStats s;
        UsageStats us;
        int64_t limit;
        int r;

        if (!limit_parameter(call, 10, &limit))
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

        view_accounting_stats(sv->accounting, &s);
        view_usage_stats(sv->accounting, &us);
        ServiceState state = service_state(sv);
        reply = json_pack("{s:s, s:I, s:{s:I, s:I}, s:I, s:I, s:I, s:i, s:I, s:I, s:O, s:O, s:O, s:O}",
                          "backend", state.backend,
                          "uptimeUsec", varlink_count(state.uptime_usec),
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
        json_auto_t *reply = NULL;
        int64_t limit, pid;

        if (!limit_parameter(call, 50, &limit) || !pid_parameter(call, 0, &pid))
                return 0;
        QueryTasks q = {
                .sort = sort_parameter(call),
                .limit = (size_t) limit,
                .pid = (int32_t) pid,
                .comm = varlink_call_parameter_string(call, "comm"),
                .include_exited = varlink_call_parameter_bool(call, "includeExited", false),
                .threads = varlink_call_parameter_bool(call, "threads", false),
                .hide_zero = varlink_call_parameter_bool(call, "hideZero", false),
                .coldness = sv->coldness,
        };
        int r = query_tasks(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_modules(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *modules = NULL, *reply = NULL;
        int64_t limit;

        if (!limit_parameter(call, 50, &limit))
                return 0;
        int r = query_modules(sv->accounting, sort_parameter(call), (size_t) limit, &modules);
        if (r < 0)
                return r;
        reply = json_pack("{s:O}", "modules", modules);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_units(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *units = NULL, *reply = NULL;
        int64_t limit, stacks;

        if (!limit_parameter(call, 50, &limit) ||
            !int_parameter(call, "stacks", 0, 0, QUERY_UNIT_STACKS_MAX, &stacks))
                return 0;
        QueryUnits q = {
                .sort = sort_parameter(call),
                .limit = (size_t) limit,
                .name = varlink_call_parameter_string(call, "name"),
                .stacks = (unsigned) stacks,
                .hide_zero = varlink_call_parameter_bool(call, "hideZero", false),
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
                .coldness = sv->coldness,
        };
        int r = query_units(sv->accounting, &q, &units);
        if (r < 0)
                return r;
        reply = json_pack("{s:O}", "units", units);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_history(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t pid, seconds, resolution;
        json_auto_t *reply = NULL;
        const char *bad = NULL;

        if (!pid_parameter(call, 0, &pid) || !int_parameter(call, "seconds", -1, 0, INT32_MAX, &seconds) ||
            !int_parameter(call, "resolution", -1, 1, INT32_MAX, &resolution))
                return 0;
        HistoryQuery q = {
                .pid = (int32_t) pid,
                .unit = varlink_call_parameter_string(call, "unit"),
                .module = varlink_call_parameter_string(call, "module"),
                .seconds = seconds,
                .resolution = resolution,
                .now_realtime_usec = service_now_usec(sv, CLOCK_REALTIME),
        };
        int r = history_query_json(sv->history, sv->accounting, &q, &bad, &reply);
        if (r == -EINVAL)
                return varlink_call_error_invalid_parameter(call, bad);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

/* A process's user-space heap beside its pages (StackTree heap): the tree Heap would give of it. */
static int stack_tree_heap(Service *sv, VarlinkCall *call, int32_t pid, unsigned max_depth, unsigned max_children,
                json_t *reply) {
        uint32_t idx = pid > 0 ? view_find_process(sv->accounting, pid) : VIEW_TASK_NONE;
        ViewTask t;
        uint32_t serial = idx != VIEW_TASK_NONE && view_task(sv->accounting, idx, &t) ?
                query_task_heap_serial(sv->accounting, &t) : VIEW_HEAP_NONE;

        if (serial == VIEW_HEAP_NONE)
                return 0;
        HeapQuery q = {
                .pid = pid,
                .max_depth = max_depth,
                .max_children = max_children,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
        };
        json_t *root = heap_query_root_json(sv->accounting, sv->usym, &q, serial);
        if (!root || json_object_set_new(reply, "heap", root) < 0)
                return -ENOMEM;
        return 0;
}

/* pid, unit and module each name what a view is about and exclude each other: false once the later one
 * named got InvalidParameter. */
static bool one_subject(VarlinkCall *call) {
        bool pid = varlink_call_has_parameter(call, "pid"), unit = varlink_call_has_parameter(call, "unit");
        const char *extra = pid && unit ? "unit" :
                            (pid || unit) && varlink_call_has_parameter(call, "module") ? "module" : NULL;
        if (extra)
                (void) varlink_call_error_invalid_parameter(call, extra);
        return !extra;
}

static int method_stack_tree(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t pid, max_depth, min_pages, max_children;
        json_auto_t *reply = NULL;

        if (!pid_parameter(call, 0, &pid) || !int_parameter(call, "maxDepth", 32, 0, 255, &max_depth) ||
            !int_parameter(call, "minPages", 1, 0, INT64_MAX, &min_pages) ||
            !int_parameter(call, "maxChildren", 16, 1, 10000, &max_children) || !one_subject(call))
                return 0;
        QueryStackTree q = {
                .pid = (int32_t) pid,
                .unit = varlink_call_parameter_string(call, "unit"),
                .module = varlink_call_parameter_string(call, "module"),
                .max_depth = (unsigned) max_depth,
                .min_pages = (uint64_t) min_pages,
                .max_children = (unsigned) max_children,
                .sort = sort_parameter(call),
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
        };
        int r = query_stacktree(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        ServiceState state = service_state(sv);
        if (json_object_set_new(reply, "stackSampleInterval",
                                json_integer(varlink_count(state.source.stack_sample_interval))) < 0)
                return -ENOMEM;
        r = stack_tree_heap(sv, call, (int32_t) pid, (unsigned) max_depth, (unsigned) max_children, reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_profile(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *of = varlink_call_parameter_string(call, "of");
        json_auto_t *reply = NULL;
        int64_t pid, top;

        if (!pid_parameter(call, 0, &pid) || !int_parameter(call, "top", PROFILE_TOP_DEFAULT, 1, PROFILE_TOP_MAX, &top) ||
            !one_subject(call))
                return 0;
        ProfileQuery q = {
                .of = of ? profile_of_from_string(of) : PROFILE_OF_PAGES,
                .pid = (int32_t) pid,
                .unit = varlink_call_parameter_string(call, "unit"),
                .module = varlink_call_parameter_string(call, "module"),
                .top = (size_t) top,
                .page_size = (uint64_t) sv->page_size,
                .names = {
                        .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                        .user_addresses = user_addresses(call),
                        .caller_uid = varlink_call_get_peer_uid(call),
                        .usym = sv->usym,
                },
        };
        if (q.of == PROFILE_OF_SLAB && !view_traces_slab(sv->accounting)) {
                json_auto_t *p = json_pack("{s:s}", "reason", "slab objects are not traced (memstrackd --slab)");
                return p ? varlink_call_error(call, MEMSTRACK_ERROR_NOT_TRACING, p) : -ENOMEM;
        }
        int r = profile_query_json(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        ServiceState state = service_state(sv);
        if (json_object_set_new(reply, "pageSize", json_integer((json_int_t) sv->page_size)) < 0 ||
            json_object_set_new(reply, "stackSampleInterval",
                                json_integer(varlink_count(state.source.stack_sample_interval))) < 0)
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
                                                        .hide_zero = hide_zero, .coldness = sv->coldness }, &tasks);
        if (r < 0)
                return r;
        r = query_modules(sv->accounting, sort == QUERY_SORT_ALLOCS ? QUERY_SORT_CURRENT : sort, (size_t) limit,
                          &modules);
        if (r < 0)
                return r;
        r = query_units(sv->accounting, &(QueryUnits) { .sort = sort == QUERY_SORT_ALLOCS ? QUERY_SORT_CURRENT : sort,
                                                         .limit = (size_t) limit, .hide_zero = hide_zero,
                                                         .coldness = sv->coldness }, &units);
        if (r < 0)
                return r;
        /* Call sites by name only: one frame goes to every stream, root's or not. */
        if (view_traces_slab(sv->accounting)) {
                r = slab_top_json(sv->accounting, (size_t) limit, &slab);
                if (r < 0)
                        return r;
        }
        view_accounting_stats(sv->accounting, &s);
        view_stack_stats(sv->accounting, &st);
        ServiceState state = service_state(sv);
        *ret = json_pack("{s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:O, s:O, s:O, s:O, s:O?}",
                         "timestampUsec", varlink_count(service_now_usec(sv, CLOCK_MONOTONIC)),
                         "trackedPages", varlink_count(s.current_pages),
                         "peakTrackedPages", varlink_count(s.peak_pages),
                         "eventsPerSecond", state.events_per_second,
                         "lostEvents", varlink_count(s.lost_events),
                         "uptimeUsec", varlink_count(state.uptime_usec),
                         "stacksTruncated", varlink_count(st.stacks_truncated + st.process_paths_truncated),
                         "tasks", json_object_get(tasks, "tasks"),
                         "evicted", json_object_get(tasks, "evicted"),
                         "modules", modules,
                         "units", units,
                         "slab", slab);
        return *ret ? 0 : -ENOMEM;
}

static int method_top(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        bool hide_zero = varlink_call_parameter_bool(call, "hideZero", false);
        QuerySort sort = sort_parameter(call);
        json_auto_t *reply = NULL;
        int64_t interval, limit;
        int r;

        if (!int_parameter(call, "intervalUsec", 1000000, TOP_INTERVAL_MIN_USEC, INT64_MAX, &interval) ||
            !limit_parameter(call, 20, &limit))
                return 0;
        if (varlink_call_wants_more(call) && top_streams_count(sv->top) >= TOP_STREAMS_MAX) {
                json_auto_t *p = json_pack("{s:s, s:i}", "limit", "topStreams", "value", TOP_STREAMS_MAX);
                return varlink_call_error(call, MEMSTRACK_ERROR_LIMIT_EXCEEDED, p);
        }
        r = top_frame(sv, sort, limit, hide_zero, &reply);
        if (r < 0)
                return r;
        if (!varlink_call_wants_more(call))
                return varlink_call_reply(call, reply);
        r = varlink_call_reply_more(call, reply);
        if (r < 0)
                return r;
        r = top_streams_open(sv->top, call, (uint64_t) interval, limit, sort, hide_zero);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning_errno(r, "Cannot schedule the Top streams' timer, ignoring: %m");
        return 0;
}

/* The Top streams' frame: a Top reply. */
static int top_stream_frame(void *userdata, QuerySort sort, int64_t limit, bool hide_zero, json_t **ret) {
        return top_frame(userdata, sort, limit, hide_zero, ret);
}

int service_top_timer(Service *sv, uint64_t *ret_usec, uint64_t *ret_accuracy_usec) {
        return top_streams_timer(sv->top, ret_usec, ret_accuracy_usec);
}

static int method_reset(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *what = varlink_call_parameter_string(call, "what");

        view_reset(sv->accounting, streq(what, "all"));
        log_notice("Reset of %s requested by uid %u.", what, (unsigned) varlink_call_get_peer_uid(call));
        return varlink_call_reply(call, NULL);
}

static int method_snapshot(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *name = varlink_call_parameter_string(call, "name");
        uint64_t now = service_now_usec(sv, CLOCK_MONOTONIC);
        json_auto_t *reply = NULL;

        int r = marks_save(sv->marks, varlink_call_get_peer_uid(call), name, sv->accounting, now);
        if (r == -EINVAL)
                return varlink_call_error_invalid_parameter(call, "name");
        if (r < 0)
                return r;
        reply = json_pack("{s:s, s:I}", "name", name, "timestampUsec", varlink_count(now));
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_diff(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *reply = NULL;
        int64_t limit;

        if (!limit_parameter(call, 50, &limit))
                return 0;
        int r = marks_diff(sv->marks, varlink_call_get_peer_uid(call), varlink_call_parameter_string(call, "name"),
                           sv->accounting, service_now_usec(sv, CLOCK_MONOTONIC), (size_t) limit, &reply);
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
        bool all_users = varlink_call_parameter_bool(call, "allUsers", false);
        json_auto_t *reply = NULL;

        if (all_users && !varlink_call_peer_is_root(call))
                return reply_not_root(call, "only root sees other users' snapshots");
        int r = marks_list(sv->marks, sv->accounting, all_users, varlink_call_get_peer_uid(call), &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_delete_snapshot(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *name = varlink_call_parameter_string(call, "name");
        uid_t caller = varlink_call_get_peer_uid(call);
        int64_t uid;

        if (!int_parameter(call, "uid", -1, 0, UINT32_MAX - 1, &uid))
                return 0;
        if (uid >= 0 && (uid_t) uid != caller && !varlink_call_peer_is_root(call))
                return reply_not_root(call, "only root deletes other users' snapshots");
        int r = marks_delete(sv->marks, uid >= 0 ? (uid_t) uid : caller, name);
        if (r < 0)
                return r;
        if (uid >= 0 && (uid_t) uid != caller)
                log_notice("Snapshot \"%s\" of uid %u deleted by uid %u.", name, (unsigned) uid, (unsigned) caller);
        return varlink_call_reply(call, NULL);
}

static int method_boot_phase(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;

        if (!sv->boot_phase)
                return reply_error_name(call, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT, "initramfs");
        json_auto_t *doc = boot_phase_for_caller(sv->boot_phase, varlink_call_peer_is_root(call));
        json_auto_t *reply = doc ? json_pack("{s:O}", "snapshot", doc) : NULL;
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_set_log_level(VarlinkCall *call, json_t *parameters, void *userdata) {
        int l = log_level_from_string(varlink_call_parameter_string(call, "level"));
        if (l < 0)
                return varlink_call_error_invalid_parameter(call, "level");
        log_set_max_level(l);
        log_info("Log level set to %s.", log_level_to_string(l));
        return varlink_call_reply(call, NULL);
}

static int method_slab(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        const char *by = varlink_call_parameter_string(call, "by");
        json_auto_t *reply = NULL;
        int64_t limit;

        if (!limit_parameter(call, 50, &limit))
                return 0;
        int r = slab_query_json(sv->accounting, by ? slab_by_from_string(by) : SLAB_BY_CALLSITE, (size_t) limit,
                                show_addresses(sv, varlink_call_peer_is_root(call)), &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_heap(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t pid, max_depth, max_children, min_ppm;
        json_auto_t *reply = NULL;

        if (!pid_parameter(call, 1, &pid) ||
            !int_parameter(call, "maxDepth", HEAP_QUERY_DEPTH_DEFAULT, 0, 255, &max_depth) ||
            !int_parameter(call, "maxChildren", HEAP_QUERY_CHILDREN_DEFAULT, 1, 10000, &max_children) ||
            !int_parameter(call, "minPartsPerMillion", 0, 0, 1000000, &min_ppm))
                return 0;
        HeapQuery q = {
                .pid = (int32_t) MAX(pid, 0),
                .max_depth = (unsigned) max_depth,
                .max_children = (unsigned) max_children,
                .min_ppm = (uint32_t) min_ppm,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .timeline = varlink_call_parameter_bool(call, "timeline", false),
        };
        int r = heap_query_json(sv->accounting, sv->usym, &q, &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

/* The uid that owns process pid, from /proc; -errno when it is gone. */
static int process_owner(int32_t pid, uid_t *ret) {
        char path[64];
        struct stat st;

        (void) snprintf(path, sizeof(path), "/proc/%" PRIi32, pid);
        if (stat(path, &st) < 0)
                return negative_errno();
        *ret = st.st_uid;
        return 0;
}

static int method_heap_stop(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        uid_t owner;
        int64_t pid;

        if (!pid_parameter(call, 1, &pid))
                return 0;
        /* Root, or the user whose process it is: nobody stops someone else's recording. */
        if (!varlink_call_peer_is_root(call) &&
            (process_owner((int32_t) pid, &owner) < 0 || owner != varlink_call_get_peer_uid(call)))
                return reply_not_root(call, "only root or the process's owner may stop its heap");
        int r = sv->heap_stop ? sv->heap_stop(sv->userdata, (int32_t) pid) : -ESRCH;
        if (r < 0)
                return r;
        return varlink_call_reply(call, NULL);
}

#define LEAKS_INTERVALS_MAX 60

static int method_leaks(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        int64_t min_age, interval, intervals, pid, limit;
        json_auto_t *reply = NULL;

        if (!int_parameter(call, "minAgeSeconds", 60, 0, INT32_MAX, &min_age) ||
            !int_parameter(call, "intervalSeconds", 10, 1, INT32_MAX, &interval) ||
            !int_parameter(call, "intervals", 6, 1, LEAKS_INTERVALS_MAX, &intervals) ||
            !pid_parameter(call, 1, &pid) || !limit_parameter(call, 20, &limit))
                return 0;
        /* One walk of every tracked page per call (docs/performance.md): paced for all callers together,
         * so that no client, or all of them, can keep the daemon from its events. */
        uint64_t start_usec = service_now_usec(sv, CLOCK_MONOTONIC);
        if (start_usec < sv->leaks_ready_usec) {
                json_auto_t *p = json_pack("{s:s, s:I}", "limit", "leaksPace",
                                           "value", varlink_count(sv->leaks_ready_usec - start_usec));
                return varlink_call_error(call, MEMSTRACK_ERROR_LIMIT_EXCEEDED, p);
        }
        LeaksQuery q = {
                .now_nsec = service_now_nsec(sv, CLOCK_MONOTONIC),
                .min_age_nsec = (uint64_t) min_age * UINT64_C(1000000000),
                .interval_nsec = (uint64_t) interval * UINT64_C(1000000000),
                .intervals = (unsigned) intervals,
                .pid = (int32_t) MAX(pid, 0),
                .limit = (size_t) limit,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
        };
        int r = leaks_query_json(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        uint64_t end_usec = service_now_usec(sv, CLOCK_MONOTONIC);
        sv->leaks_ready_usec = end_usec + (end_usec - start_usec) * sv->leaks_pace;
        return varlink_call_reply(call, reply);
}

static int method_oom_kills(VarlinkCall *call, json_t *parameters, void *userdata) {
        ServiceState state = service_state(userdata);

        if (!state.oom_kills) {
                json_auto_t *p = json_pack("{s:s}", "reason", "OOM kills are not watched");
                return p ? varlink_call_error(call, MEMSTRACK_ERROR_NOT_TRACING, p) : -ENOMEM;
        }
        json_auto_t *reply = state.oom_kills(state.oom_room);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply);
}

static int method_explain(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *reply = NULL;
        int64_t limit, stacks;
        AccountingStats s;

        if (!limit_parameter(call, EXPLAIN_LIMIT_DEFAULT, &limit) ||
            !int_parameter(call, "stacks", EXPLAIN_STACKS_DEFAULT, 0, EXPLAIN_STACKS_MAX, &stacks))
                return 0;
        ServiceState state = service_state(sv);
        view_accounting_stats(sv->accounting, &s);
        ExplainQuery q = {
                .name = varlink_call_parameter_string(call, "name"),
                .limit = (size_t) limit,
                .stacks = (unsigned) stacks,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
                .memcg = state.memcg,
                .memcg_reason = state.memcg_reason,
                .page_size = sv->page_size,
                .lost_events = MAX(s.lost_events, state.source.lost_records),
                .stack_sample_interval = state.source.stack_sample_interval,
                .uptime_usec = state.uptime_usec,
                .coldness = sv->coldness,
        };
        int r = explain_query_json(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

#define EXPLAIN_UNITS_MAX 1000

static int method_explain_units(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_t *names = varlink_call_parameter_json(call, "names");
        json_auto_t *reply = NULL;

        if (json_array_size(names) > EXPLAIN_UNITS_MAX)
                return varlink_call_error_invalid_parameter(call, "names");
        ServiceState state = service_state(sv);
        int r = explain_units_json(sv->accounting, names, state.memcg, sv->page_size, &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_page_breakdown(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *reply = NULL;
        int64_t pid, limit;

        if (!pid_parameter(call, 0, &pid) || !limit_parameter(call, 0, &limit) || !one_subject(call))
                return 0;
        BreakdownQuery q = {
                .by = breakdown_by_from_string(varlink_call_parameter_string(call, "by")),
                .pid = (int32_t) pid,
                .unit = varlink_call_parameter_string(call, "unit"),
                .module = varlink_call_parameter_string(call, "module"),
                .limit = (size_t) limit,
        };
        int r = breakdown_query_json(sv->accounting, &q, &reply);
        if (r < 0)
                return r;
        return varlink_call_reply(call, reply);
}

static int method_cold(VarlinkCall *call, json_t *parameters, void *userdata) {
        Service *sv = userdata;
        json_auto_t *reply = NULL;
        int64_t limit, stacks;

        if (!limit_parameter(call, COLD_QUERY_LIMIT_DEFAULT, &limit) ||
            !int_parameter(call, "stacks", COLD_QUERY_STACKS_DEFAULT, 0, COLD_QUERY_STACKS_MAX, &stacks))
                return 0;
        ColdQuery q = {
                .limit = (size_t) limit,
                .stacks = (unsigned) stacks,
                .page_size = sv->page_size,
                .show_addresses = show_addresses(sv, varlink_call_peer_is_root(call)),
                .user_addresses = user_addresses(call),
                .caller_uid = varlink_call_get_peer_uid(call),
                .usym = sv->usym,
        };
        int r = cold_query_json(sv->accounting, sv->coldness, &q, &reply);
        if (r < 0)
                return r;
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
        { "io.memstrack.Profile", method_profile, 0 },
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
        { "io.memstrack.Explain", method_explain, 0 },
        { "io.memstrack.PageBreakdown", method_page_breakdown, 0 },
        { "io.memstrack.ExplainUnits", method_explain_units, 0 },
        { "io.memstrack.Heap", method_heap, 0 },
        { "io.memstrack.HeapStop", method_heap_stop, 0 },
        { "io.memstrack.Cold", method_cold, 0 },
};

static const VarlinkInterface interfaces[] = {
        { "io.memstrack", varlink_interface_io_memstrack, &varlink_signature_io_memstrack },
};

Service *service_free(Service *sv) {
        if (!sv)
                return NULL;
        /* Freeing the server calls every open call's disconnect handler, which frees its stream. */
        sv->server = varlink_server_free(sv->server);
        top_streams_free(sv->top);
        marks_free(sv->marks);
        json_decref(sv->boot_phase);
        free(sv);
        return NULL;
}

int service_new(const ServiceConfig *config, Service **ret) {
        _cleanup_(service_freep) Service *sv = NULL;
        int r;

        assert(config);
        assert(config->event && config->accounting && config->flush && config->get_state);
        assert(ret);

        sv = calloc(1, sizeof(Service));
        if (!sv)
                return log_oom();
        *sv = (Service) {
                .event = config->event,
                .accounting = config->accounting,
                .usym = config->usym,
                .history = config->history,
                .coldness = config->coldness,
                .page_size = config->page_size,
                .priority = config->priority,
                .userdata = config->userdata,
                .flush = config->flush,
                .get_state = config->get_state,
                .heap_stop = config->heap_stop,
                .now_nsec = config->now_nsec,
                .leaks_pace = config->leaks_pace ?: SERVICE_LEAKS_PACE,
        };
        sv->marks = marks_new();
        sv->top = top_streams_new(&(TopStreamsConfig) { .event = sv->event, .priority = sv->priority, .userdata = sv,
                                                         .flush = service_flush, .frame = top_stream_frame });
        if (!sv->marks || !sv->top)
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
                .before_call = service_flush,
                .reply_errno = service_reply_errno,
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
