/* SPDX-License-Identifier: MIT */

/*
 * report/snapshot-document.c, the one builder of snapshot documents, on a scripted fetcher: what it asks
 * for and with which flags, what it leaves out when the other side lacks a method or a task went away,
 * and that a fetcher's failure comes back unchanged.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "macro.h"
#include "snapshot-document.h"
#include "tests.h"

/* What the scripted other side knows and does. */
typedef struct Script {
        bool units;             /* serves Units, History and OomKills (a daemon of now; without: an earlier one) */
        bool slab_caches;       /* serves Slab by cache (by callsite always) */
        int leaks_result;       /* Leaks' answer: 0 a reply, else this */
        int required_result;    /* StackTree of a task or module asked for without MAY_VANISH, if unknown */
        json_t *calls;          /* owned: [{"method", "params", "flags"}] in order */
} Script;

#define SCRIPT_CODE_FAILED 42   /* a fetcher's own failure, as memstrackctl's positive exit statuses */

static json_t *tree_reply(const char *frame, json_int_t pages) {
        return json_pack("{s:{s:s, s:I, s:[]}, s:I}", "root", "frame", frame, "currentPages", pages, "children",
                         "totalPages", pages);
}

/* Tasks 10 (5 pages), "[evicted]" (pid -1), 11 (gone by the time its tree is asked for), 12 (no pages);
 * modules ext4 and gone (likewise gone). Unknown tasks and modules answer as the daemon's query layer:
 * -ESRCH, -ENOENT. */
static int scripted_fetch(const char *method, json_t *params, SnapshotFetchFlags flags, json_t **ret_reply,
                void *userdata) {
        Script *s = userdata;
        json_t *pid = json_object_get(params, "pid"), *module = json_object_get(params, "module");

        ASSERT_OK(json_array_append_new(s->calls, json_pack("{s:s, s:O?, s:i}", "method", method,
                                                            "params", params, "flags", (int) flags)));
        if (streq(method, "io.memstrack.Status"))
                *ret_reply = json_pack("{s:i}", "pageSize", 4096);
        else if (streq(method, "io.memstrack.Tasks"))
                *ret_reply = json_pack("{s:[{s:i, s:i}, {s:i, s:i}, {s:i, s:i}, {s:i, s:i}]}", "tasks",
                                       "pid", 10, "currentPages", 5, "pid", -1, "currentPages", 4,
                                       "pid", 11, "currentPages", 3, "pid", 12, "currentPages", 0);
        else if (streq(method, "io.memstrack.Modules"))
                *ret_reply = json_pack("{s:[{s:s, s:i}, {s:s, s:i}]}", "modules",
                                       "name", "ext4", "currentPages", 2, "name", "gone", "currentPages", 1);
        else if (streq(method, "io.memstrack.Units") && s->units)
                *ret_reply = json_pack("{s:[{s:s, s:i}, {s:s, s:i}, {s:s, s:i}]}", "units", "name", "web.service",
                                       "currentPages", 3, "name", "[unknown]", "currentPages", 2, "name",
                                       "idle.service", "currentPages", 0);
        else if (streq(method, "io.memstrack.Explain") && s->units) {
                /* A unit not named yet is listed as "[unknown]", which names none. */
                if (streq(json_string_value(json_object_get(params, "name")), "[unknown]"))
                        return flags & SNAPSHOT_FETCH_MAY_VANISH ? -ENXIO : -EBADR;
                *ret_reply = json_pack("{s:O}", "name", json_object_get(params, "name"));
        }
        else if (streq(method, "io.memstrack.History") && s->units)
                *ret_reply = json_pack("{s:s, s:[]}", "what", "total", "points");
        else if (streq(method, "io.memstrack.Cold") && s->units)
                *ret_reply = json_pack("{s:n, s:[]}", "source", "stacks");
        else if (streq(method, "io.memstrack.OomKills") && s->units)
                *ret_reply = json_pack("{s:b, s:[]}", "watching", true, "kills");
        else if (streq(method, "io.memstrack.Slab") &&
                 (s->slab_caches || streq(json_string_value(json_object_get(params, "by")), "callsite")))
                *ret_reply = json_pack("{s:b, s:[]}", "tracing", true, "rows");
        else if (streq(method, "io.memstrack.Leaks")) {
                if (s->leaks_result != 0)
                        return s->leaks_result;
                *ret_reply = json_pack("{s:[], s:[]}", "rows", "pages");
        } else if (streq(method, "io.memstrack.StackTree")) {
                if (json_integer_value(pid) == 11 || json_integer_value(pid) == 99)
                        return flags & SNAPSHOT_FETCH_MAY_VANISH ? -ESRCH : s->required_result;
                if (streq(json_string_value(module) ?: "", "gone"))
                        return flags & SNAPSHOT_FETCH_MAY_VANISH ? -ENOENT : s->required_result;
                *ret_reply = tree_reply(pid ? "task" : module ? "module" : "all", 1);
        } else
                return flags & SNAPSHOT_FETCH_OPTIONAL ? -EOPNOTSUPP : -EBADR;
        ASSERT_NOT_NULL(*ret_reply);
        return 0;
}

/* The call number i: its method, and its flags. */
static json_t *call(const Script *s, size_t i, const char *method, int flags) {
        json_t *c = json_array_get(s->calls, i);

        ASSERT_NOT_NULL(c);
        ASSERT_STREQ(json_string_value(json_object_get(c, "method")), method);
        ASSERT_EQ(json_integer_value(json_object_get(c, "flags")), flags);
        return json_object_get(c, "params");
}

static void check_tree_params(json_t *params, json_int_t depth, const char *sort) {
        ASSERT_EQ(json_integer_value(json_object_get(params, "maxDepth")), depth);
        ASSERT_EQ(json_integer_value(json_object_get(params, "maxChildren")), SNAPSHOT_STACK_CHILDREN);
        ASSERT_EQ(json_integer_value(json_object_get(params, "minPages")), 1);
        ASSERT_STREQ(json_string_value(json_object_get(params, "sortBy")), sort);
}

/* Everything the other side has: the calls in order, what each scoped list keeps. */
static void test_full(void) {
        Script s = { .units = true, .slab_caches = true, .calls = json_array() };
        json_auto_t *doc = NULL;
        const char *key;
        json_t *v;
        size_t i = 0;
        static const char *const keys[] = { "memstrackSnapshot", "generator", "host", "realtimeUsec", "status",
                                            "tasks", "modules", "stackTree", "taskStacks", "moduleStacks",
                                            "units", "slab", "leaks", "history", "oomKills", "explain", "cold" };

        ASSERT_OK(snapshot_document_build("tester", &SNAPSHOT_REQUEST_DEFAULT, scripted_fetch, &s, &doc));
        json_object_foreach(doc, key, v) {
                ASSERT_LT(i, ELEMENTSOF(keys));
                ASSERT_STREQ(key, keys[i]);
                i++;
        }
        ASSERT_EQ(i, ELEMENTSOF(keys));
        ASSERT_EQ(json_integer_value(json_object_get(doc, "memstrackSnapshot")), SNAPSHOT_FORMAT_VERSION);
        ASSERT_STREQ(json_string_value(json_object_get(doc, "generator")), "tester " PACKAGE_VERSION);
        ASSERT_TRUE(json_is_object(json_object_get(json_object_get(doc, "slab"), "caches")));

        ASSERT_TRUE(json_is_null(call(&s, 0, "io.memstrack.Status", 0)));      /* no parameters */
        ASSERT_EQ(json_integer_value(json_object_get(call(&s, 1, "io.memstrack.Tasks", 0), "limit")),
                  SNAPSHOT_LIST_LIMIT);
        ASSERT_TRUE(json_is_true(json_object_get(call(&s, 1, "io.memstrack.Tasks", 0), "includeExited")));
        (void) call(&s, 2, "io.memstrack.Modules", 0);
        ASSERT_EQ(json_integer_value(json_object_get(call(&s, 3, "io.memstrack.Units", SNAPSHOT_FETCH_OPTIONAL),
                                                     "stacks")), SNAPSHOT_UNIT_STACKS);
        (void) call(&s, 4, "io.memstrack.Slab", SNAPSHOT_FETCH_OPTIONAL);
        (void) call(&s, 5, "io.memstrack.Slab", SNAPSHOT_FETCH_OPTIONAL);
        ASSERT_EQ(json_integer_value(json_object_get(call(&s, 6, "io.memstrack.Leaks", SNAPSHOT_FETCH_OPTIONAL),
                                                     "limit")), SNAPSHOT_LEAKS_LIMIT);
        /* The total's history at the daemon's default (no parameter), and the OOM records. */
        ASSERT_EQ(json_object_size(call(&s, 7, "io.memstrack.History", SNAPSHOT_FETCH_OPTIONAL)), 0);
        (void) call(&s, 8, "io.memstrack.OomKills", SNAPSHOT_FETCH_OPTIONAL);
        /* The units holding pages explained, one no longer found by its name left out; one holding nothing
         * ends the list. */
        json_t *explain = call(&s, 9, "io.memstrack.Explain", SNAPSHOT_FETCH_OPTIONAL | SNAPSHOT_FETCH_MAY_VANISH);
        ASSERT_STREQ(json_string_value(json_object_get(explain, "name")), "web.service");
        ASSERT_EQ(json_integer_value(json_object_get(explain, "stacks")), SNAPSHOT_EXPLAIN_STACKS);
        ASSERT_STREQ(json_string_value(json_object_get(call(&s, 10, "io.memstrack.Explain",
                                                            SNAPSHOT_FETCH_OPTIONAL | SNAPSHOT_FETCH_MAY_VANISH),
                                                       "name")), "[unknown]");
        ASSERT_EQ(json_array_size(json_object_get(doc, "explain")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(call(&s, 11, "io.memstrack.Cold", SNAPSHOT_FETCH_OPTIONAL),
                                                     "stacks")), SNAPSHOT_COLD_STACKS);
        check_tree_params(call(&s, 12, "io.memstrack.StackTree", 0), SNAPSHOT_STACK_DEPTH_DEFAULT, "current");
        /* 10, then 11 (gone); "[evicted]" has no tree of its own, 12 holds nothing and ends the list. */
        ASSERT_EQ(json_integer_value(json_object_get(call(&s, 13, "io.memstrack.StackTree",
                                                          SNAPSHOT_FETCH_MAY_VANISH), "pid")), 10);
        ASSERT_EQ(json_integer_value(json_object_get(call(&s, 14, "io.memstrack.StackTree",
                                                          SNAPSHOT_FETCH_MAY_VANISH), "pid")), 11);
        ASSERT_STREQ(json_string_value(json_object_get(call(&s, 15, "io.memstrack.StackTree",
                                                            SNAPSHOT_FETCH_MAY_VANISH), "module")), "ext4");
        ASSERT_STREQ(json_string_value(json_object_get(call(&s, 16, "io.memstrack.StackTree",
                                                            SNAPSHOT_FETCH_MAY_VANISH), "module")), "gone");
        ASSERT_EQ(json_array_size(s.calls), 17);

        json_t *tasks = json_object_get(doc, "taskStacks"), *modules = json_object_get(doc, "moduleStacks");
        ASSERT_EQ(json_array_size(tasks), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(tasks, 0), "pid")), 10);
        ASSERT_EQ(json_array_size(modules), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(modules, 0), "name")), "ext4");
        json_decref(s.calls);
}

/* An earlier memstrackd: no Units, History or OomKills, Slab only by call site. Their sections are left
 * out, not null. */
static void test_older_daemon(void) {
        Script s = { .calls = json_array() };
        json_auto_t *doc = NULL;

        ASSERT_OK(snapshot_document_build("tester", &SNAPSHOT_REQUEST_DEFAULT, scripted_fetch, &s, &doc));
        ASSERT_NULL(json_object_get(doc, "units"));
        ASSERT_NULL(json_object_get(doc, "slab"));
        ASSERT_NULL(json_object_get(doc, "history"));
        ASSERT_NULL(json_object_get(doc, "oomKills"));
        ASSERT_NULL(json_object_get(doc, "explain"));
        ASSERT_NULL(json_object_get(doc, "cold"));
        ASSERT_TRUE(json_is_object(json_object_get(doc, "leaks")));
        ASSERT_TRUE(json_is_object(json_object_get(doc, "stackTree")));
        json_decref(s.calls);
}

/* A task and a module asked for by name: their trees come too, with the request's depth and sort; one
 * already among the biggest is not asked for twice. */
static void test_requested(void) {
        Script s = { .units = true, .slab_caches = true, .calls = json_array() };
        SnapshotRequest req = { .sort_by_peak = true, .max_depth = 3, .pid = 10, .module = "xfs" };
        json_auto_t *doc = NULL;

        ASSERT_OK(snapshot_document_build("tester", &req, scripted_fetch, &s, &doc));
        ASSERT_EQ(json_array_size(s.calls), 18);
        check_tree_params(call(&s, 12, "io.memstrack.StackTree", 0), 3, "peak");
        check_tree_params(call(&s, 13, "io.memstrack.StackTree", SNAPSHOT_FETCH_MAY_VANISH), 3, "peak");
        ASSERT_STREQ(json_string_value(json_object_get(call(&s, 17, "io.memstrack.StackTree", 0), "module")),
                     "xfs");
        ASSERT_EQ(json_array_size(json_object_get(doc, "moduleStacks")), 2);
        json_decref(s.calls);
}

/* Failures come back as the fetcher said them, and *ret stays untouched. */
static void test_failures(void) {
        Script s = { .units = true, .slab_caches = true, .required_result = SCRIPT_CODE_FAILED,
                     .calls = json_array() };
        json_t *doc = NULL;

        /* A task asked for by name that is gone: not skipped. */
        ASSERT_EQ(snapshot_document_build("tester", &(SnapshotRequest) { .pid = 99 }, scripted_fetch, &s, &doc),
                  SCRIPT_CODE_FAILED);
        ASSERT_NULL(doc);
        ASSERT_EQ(snapshot_document_build("tester", &(SnapshotRequest) { .pid = -1, .module = "gone" },
                                          scripted_fetch, &s, &doc), SCRIPT_CODE_FAILED);
        ASSERT_NULL(doc);
        /* A fetcher answering as the daemon's query layer, whatever the flags: -ESRCH is a failure then. */
        s.required_result = -ESRCH;
        ASSERT_EQ(snapshot_document_build("tester", &(SnapshotRequest) { .pid = 11 }, scripted_fetch, &s, &doc),
                  -ESRCH);
        ASSERT_NULL(doc);
        /* An optional method failing otherwise than by being unknown fails the document. */
        s.leaks_result = -ENOMEM;
        ASSERT_EQ(snapshot_document_build("tester", &SNAPSHOT_REQUEST_DEFAULT, scripted_fetch, &s, &doc),
                  -ENOMEM);
        ASSERT_NULL(doc);
        json_decref(s.calls);
}

int main(void) {
        test_full();
        test_older_daemon();
        test_requested();
        test_failures();
        return 0;
}
