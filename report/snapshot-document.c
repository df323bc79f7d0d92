/* SPDX-License-Identifier: MIT */

/* The snapshot document, assembled once for memstrackctl and memstrackd alike (snapshot-document.h). */

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "reply.h"
#include "snapshot-document.h"
#include "time-util.h"

typedef struct Builder {
        const SnapshotRequest *req;
        SnapshotFetch fetch;
        void *userdata;
} Builder;

/* A method the other side may lack: 0 with *ret NULL then, so the document just goes without it (reports
 * say so) and the rest still works. Takes params. */
static int fetch_optional(const Builder *b, const char *method, json_t *params, json_t **ret) {
        json_auto_t *p = params;
        int r;

        if (!p)
                return -ENOMEM;
        r = b->fetch(method, p, SNAPSHOT_FETCH_OPTIONAL, ret, b->userdata);
        if (r == -EOPNOTSUPP) {
                *ret = NULL;
                return 0;
        }
        return r;
}

/* {"callsites": <Slab by callsite>, "caches": <Slab by cache>}, or NULL from a memstrackd without Slab. */
static int fetch_slab(const Builder *b, json_t **ret) {
        static const char *const by[][2] = { { "callsites", "callsite" }, { "caches", "cache" } };
        json_auto_t *slab = json_object();

        if (!slab)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(by); i++) {
                json_auto_t *reply = NULL;
                int r = fetch_optional(b, "io.memstrack.Slab",
                                       json_pack("{s:i, s:s}", "limit", SNAPSHOT_LIST_LIMIT, "by", by[i][1]),
                                       &reply);
                if (r != 0 || !reply) {
                        *ret = NULL;
                        return r;
                }
                if (json_object_set(slab, by[i][0], reply) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(slab);
        return 0;
}

/* The Explain replies of the biggest units holding pages (in the Units reply's order), or NULL from a
 * memstrackd without Explain. */
static int fetch_explain(const Builder *b, json_t *units, json_t **ret) {
        json_auto_t *list = json_array();
        json_t *u;
        size_t i, n = 0;

        if (!list)
                return -ENOMEM;
        json_array_foreach(reply_array(units, "units"), i, u) {
                json_auto_t *reply = NULL;
                const char *name = reply_string(u, "name");
                if (n >= SNAPSHOT_EXPLAIN_UNITS || reply_count(u, "currentPages") == 0)
                        break;
                if (!name)
                        continue;
                json_auto_t *params = json_pack("{s:s, s:i, s:i}", "name", name, "limit", SNAPSHOT_EXPLAIN_LIMIT,
                                                "stacks", SNAPSHOT_EXPLAIN_STACKS);
                if (!params)
                        return -ENOMEM;
                /* A unit gone since Units listed it, or not named yet ("[unknown]"), is left out. */
                int r = b->fetch("io.memstrack.Explain", params, SNAPSHOT_FETCH_OPTIONAL | SNAPSHOT_FETCH_MAY_VANISH,
                                 &reply, b->userdata);
                if (r == -ENXIO)
                        continue;
                if (r == -EOPNOTSUPP) {
                        *ret = NULL;
                        return 0;
                }
                if (r != 0)
                        return r;
                if (json_array_append(list, reply) < 0)
                        return -ENOMEM;
                n++;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

/* The StackTree reply, of everything (key NULL) or of one task ("pid") or module ("module") value. Unless
 * required, a task or module gone meanwhile gives 0 and NULL; one asked for by name fails as any call. */
static int fetch_tree(const Builder *b, const char *key, json_t *value, bool required, json_t **ret) {
        json_auto_t *params = NULL;
        int r;

        params = json_pack("{s:i, s:i, s:i, s:s}",
                           "maxDepth", (int) (b->req->max_depth ?: SNAPSHOT_STACK_DEPTH_DEFAULT),
                           "maxChildren", SNAPSHOT_STACK_CHILDREN,
                           "minPages", 1,
                           "sortBy", b->req->sort_by_peak ? "peak" : "current");
        if (!params)
                return -ENOMEM;
        if (key && json_object_set(params, key, value) < 0)
                return -ENOMEM;

        r = b->fetch("io.memstrack.StackTree", params, key && !required ? SNAPSHOT_FETCH_MAY_VANISH : 0, ret,
                     b->userdata);
        if ((r == -ESRCH || r == -ENOENT) && key && !required) {
                *ret = NULL;
                return 0;
        }
        return r;
}

/* Appends {key: value, "stackTree": tree} to list unless the tree could not be had. */
static int add_scoped_tree(const Builder *b, json_t *list, const char *param, const char *key, json_t *value,
                bool required) {
        json_auto_t *tree = NULL;
        int r;

        r = fetch_tree(b, param, value, required, &tree);
        if (r != 0 || !tree)
                return r;
        if (json_array_append_new(list, json_pack("{s:O, s:O}", key, value, "stackTree", tree)) < 0)
                return -ENOMEM;
        return 0;
}

static bool list_has(json_t *list, const char *key, json_t *value) {
        json_t *e;
        size_t i;

        json_array_foreach(list, i, e)
                if (json_equal(json_object_get(e, key), value))
                        return true;
        return false;
}

/* To list, the trees of the first max tasks (or modules) of entries that hold pages, then the tree of
 * required (a pid or module name; NULL: none) if it is not among them. */
static int add_scoped_trees(const Builder *b, json_t *entries, bool tasks, size_t max, json_t *required,
                json_t *list) {
        const char *param = tasks ? "pid" : "module", *key = tasks ? "pid" : "name";
        size_t n = 0, i;
        json_t *e;
        int r;

        json_array_foreach(entries, i, e) {
                if (n >= max || reply_count(e, "currentPages") == 0)
                        break;
                /* "[evicted]" (pid -1) gathers forgotten tasks: it has no tree of its own. */
                if (tasks && reply_int(e, "pid", -1) < 0)
                        continue;
                r = add_scoped_tree(b, list, param, key, json_object_get(e, key), false);
                if (r != 0)
                        return r;
                n++;
        }
        if (required && !list_has(list, key, required))
                return add_scoped_tree(b, list, param, key, required, true);
        return 0;
}

int snapshot_document_build(const char *program, const SnapshotRequest *req, SnapshotFetch fetch,
                void *userdata, json_t **ret) {
        json_auto_t *status = NULL, *tasks = NULL, *modules = NULL, *tree = NULL, *params = NULL;
        json_auto_t *units = NULL, *slab = NULL, *leaks = NULL, *history = NULL, *oom = NULL, *doc = NULL, *pid = NULL,
                *module = NULL, *explain = NULL, *cold = NULL;
        json_auto_t *task_stacks = json_array(), *module_stacks = json_array();
        _cleanup_free_ char *generator = NULL;
        const Builder b = { .req = req, .fetch = fetch, .userdata = userdata };
        int r;

        assert(program);
        assert(req);
        assert(fetch);
        assert(ret);

        if (!task_stacks || !module_stacks)
                return -ENOMEM;
        r = fetch("io.memstrack.Status", NULL, 0, &status, userdata);
        if (r != 0)
                return r;
        params = json_pack("{s:i, s:b, s:s}", "limit", SNAPSHOT_LIST_LIMIT, "includeExited", true,
                           "sortBy", "current");
        if (!params)
                return -ENOMEM;
        r = fetch("io.memstrack.Tasks", params, 0, &tasks, userdata);
        if (r != 0)
                return r;
        json_decref(params);
        params = json_pack("{s:i, s:s}", "limit", SNAPSHOT_LIST_LIMIT, "sortBy", "current");
        if (!params)
                return -ENOMEM;
        r = fetch("io.memstrack.Modules", params, 0, &modules, userdata);
        if (r != 0)
                return r;
        if (req->heaps_only)
                goto trees;
        /* Units with each unit's biggest stacks. */
        r = fetch_optional(&b, "io.memstrack.Units",
                           json_pack("{s:i, s:i, s:s}", "limit", SNAPSHOT_LIST_LIMIT,
                                     "stacks", SNAPSHOT_UNIT_STACKS, "sortBy", "current"),
                           &units);
        if (r != 0)
                return r;
        r = fetch_slab(&b, &slab);
        if (r != 0)
                return r;
        r = fetch_optional(&b, "io.memstrack.Leaks", json_pack("{s:i}", "limit", SNAPSHOT_LEAKS_LIMIT),
                           &leaks);
        if (r != 0)
                return r;
        /* The total's history at its finest (the last 10 minutes) and the OOM records, for the HTML page. */
        r = fetch_optional(&b, "io.memstrack.History", json_object(), &history);
        if (r != 0)
                return r;
        r = fetch_optional(&b, "io.memstrack.OomKills", json_object(), &oom);
        if (r != 0)
                return r;
        if (units) {
                r = fetch_explain(&b, units, &explain);
                if (r != 0)
                        return r;
        }
        /* Cold memory by owner, from the access source's last round. */
        r = fetch_optional(&b, "io.memstrack.Cold", json_pack("{s:i, s:i}", "limit", SNAPSHOT_COLD_LIMIT,
                                                              "stacks", SNAPSHOT_COLD_STACKS), &cold);
        if (r != 0)
                return r;
trees:
        r = fetch_tree(&b, NULL, NULL, true, &tree);
        if (r != 0)
                return r;

        if (req->pid >= 0 && !(pid = json_integer((json_int_t) req->pid)))
                return -ENOMEM;
        r = add_scoped_trees(&b, reply_array(tasks, "tasks"), true, SNAPSHOT_TASK_STACKS_MAX, pid,
                             task_stacks);
        if (r != 0)
                return r;
        if (req->module && !(module = json_string(req->module)))
                return -ENOMEM;
        r = add_scoped_trees(&b, reply_array(modules, "modules"), false, SNAPSHOT_MODULE_STACKS_MAX, module,
                             module_stacks);
        if (r != 0)
                return r;

        /* Where and when, for titles (memstrackctl asks on a local socket: the daemon's host is ours). A
         * host name jansson cannot take as UTF-8 is left out (null). */
        char host[HOST_NAME_MAX + 1] = "";
        (void) gethostname(host, sizeof(host) - 1);
        if (asprintf(&generator, "%s %s", program, PACKAGE_VERSION) < 0)
                return -ENOMEM;

        doc = json_pack("{s:i, s:s, s:o?, s:I, s:O, s:O, s:O, s:O, s:O, s:O}",
                        "memstrackSnapshot", SNAPSHOT_FORMAT_VERSION,
                        "generator", generator,
                        "host", host[0] ? json_string(host) : NULL,
                        "realtimeUsec", (json_int_t) now_usec(CLOCK_REALTIME),
                        "status", status,
                        "tasks", tasks,
                        "modules", modules,
                        "stackTree", tree,
                        "taskStacks", task_stacks,
                        "moduleStacks", module_stacks);
        if (!doc)
                return -ENOMEM;
        /* Left out, not null, when the other side lacks them: as in files from before them. */
        if ((units && json_object_set(doc, "units", units) < 0) ||
            (slab && json_object_set(doc, "slab", slab) < 0) ||
            (leaks && json_object_set(doc, "leaks", leaks) < 0) ||
            (history && json_object_set(doc, "history", history) < 0) ||
            (oom && json_object_set(doc, "oomKills", oom) < 0) ||
            (explain && json_object_set(doc, "explain", explain) < 0) ||
            (cold && json_object_set(doc, "cold", cold) < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}
