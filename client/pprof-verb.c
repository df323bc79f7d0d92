/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl pprof: the stack tree of everything, of one task, unit or module, as a gzipped pprof
 * profile (pprof.c) for go tool pprof, Parca or Pyroscope. The tree comes from the daemon (StackTree,
 * whole: every level and every child) or from a snapshot file (--from, as report reads them).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "connection.h"
#include "ctl.h"
#include "macro.h"
#include "pprof.h"
#include "reply.h"
#include "report-select.h"
#include "snapshot.h"
#include "time-util.h"

/* The whole tree: StackTree's limits, not its defaults (32 levels, 16 children per node). */
#define PPROF_MAX_DEPTH 255
#define PPROF_MAX_CHILDREN 10000

/* The tree of doc (a snapshot document) for the scope asked for, borrowed; NULL if the file has none. */
static json_t *doc_tree(json_t *doc) {
        const char *list = arg_task >= 0 ? "taskStacks" : "moduleStacks";
        json_t *e;
        size_t i;

        if (arg_task < 0 && !arg_module)
                return reply_object(doc, "stackTree");
        json_array_foreach(reply_array(doc, list), i, e)
                if (arg_task >= 0 ? reply_int(e, "pid", -1) == arg_task :
                                    streq(reply_string(e, "name") ?: "", arg_module))
                        return reply_object(e, "stackTree");
        return NULL;
}

/* From the snapshot file arg_from: its tree, page size, stack sampling and time. */
static int load_file(json_t **ret_doc, PprofSource *s) {
        json_auto_t *doc = NULL;
        int r;

        if (arg_unit) {
                fprintf(stderr, "memstrackctl: snapshot files keep no unit stack trees; ask the daemon for "
                        "--unit %s.\n", arg_unit);
                return CTL_EXIT_USAGE;
        }
        r = snapshot_load(arg_from, &doc);
        if (r != 0)
                return r;
        /* A recorded heap's file (memstrackctl record --file): its heaps at their maximum, in bytes. */
        if (report_doc_stacks_are_heaps(doc) && !arg_module) {
                json_auto_t *tree = NULL;
                r = report_doc_heap_tree(doc, arg_task, &tree);
                if (r == -ESRCH) {
                        fprintf(stderr, "No heap of the task with pid %" PRIi64 " in the snapshot file %s.\n", arg_task,
                                arg_from);
                        return CTL_EXIT_FAILURE;
                }
                if (r < 0)
                        return r;
                json_t *first = json_array_get(reply_array(reply_object(doc, "heap"), "heaps"), 0);
                if (json_object_set_new(doc, "pprofHeapTree", json_pack("{s:O}", "root", tree)) < 0)
                        return -ENOMEM;
                s->tree = reply_object(doc, "pprofHeapTree");
                s->heap = true;
                s->page_size = 1;
                s->sample_interval = reply_int(first, "sampleInterval", -1);
                int64_t usec = reply_int(doc, "realtimeUsec", 0);
                s->time_nanos = usec > 0 && usec <= INT64_MAX / 1000 ? usec * 1000 : 0;
                *ret_doc = TAKE_PTR(doc);
                return 0;
        }
        s->tree = doc_tree(doc);
        if (!s->tree) {
                if (arg_task >= 0)
                        fprintf(stderr, "No stack tree of the task with pid %" PRIi64 " in the snapshot file %s.\n",
                                arg_task, arg_from);
                else
                        fprintf(stderr, "No stack tree of the module '%s' in the snapshot file %s.\n", arg_module,
                                arg_from);
                return CTL_EXIT_FAILURE;
        }
        json_t *status = reply_object(doc, "status");
        s->page_size = reply_count(status, "pageSize") ?: 4096;
        /* Files from before StackTree carried it: Status's is the same number. */
        s->sample_interval = reply_int(s->tree, "stackSampleInterval", reply_int(status, "stackSampleInterval", -2));
        if (s->sample_interval == -2)
                s->sample_interval = -1;
        /* An edited file's nonsense is "unknown", not an overflow. */
        int64_t usec = reply_int(doc, "realtimeUsec", 0);
        s->time_nanos = usec > 0 && usec <= INT64_MAX / 1000 ? usec * 1000 : 0;
        *ret_doc = TAKE_PTR(doc);
        return 0;
}

/* From the daemon: StackTree for the scope, whole. */
static int fetch(json_t **ret_reply, PprofSource *s) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *params = NULL, *reply = NULL;
        int r;

        params = json_pack("{s:i, s:i}", "maxDepth", PPROF_MAX_DEPTH, "maxChildren", PPROF_MAX_CHILDREN);
        if (!params ||
            (arg_task >= 0 && json_object_set_new(params, "pid", json_integer((json_int_t) arg_task)) < 0) ||
            (arg_unit && json_object_set_new(params, "unit", json_string(arg_unit)) < 0) ||
            (arg_module && json_object_set_new(params, "module", json_string(arg_module)) < 0))
                return -ENOMEM;
        r = ctl_connect(&c);
        if (r != 0)
                return r;
        r = ctl_call(c, "io.memstrack.StackTree", params, &reply);
        if (r != 0)
                return r;
        r = ctl_page_size(c, &s->page_size);
        if (r != 0)
                return r;
        s->tree = reply;
        s->sample_interval = -1;
        s->time_nanos = (int64_t) (now_usec(CLOCK_REALTIME) * 1000);
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

int verb_pprof(int argc, char *argv[]) {
        _cleanup_free_ uint8_t *data = NULL;
        _cleanup_free_ char *scope = NULL;
        json_auto_t *held = NULL;
        PprofStats stats;
        PprofSource s = { .generator = "memstrackctl " PACKAGE_VERSION };
        size_t size;
        int r;

        if (!arg_output) {
                fprintf(stderr, "memstrackctl: pprof needs --output FILE (the profile is binary).\n");
                return CTL_EXIT_USAGE;
        }
        if ((arg_task >= 0 && asprintf(&scope, "task %" PRIi64, arg_task) < 0) ||
            (arg_unit && asprintf(&scope, "unit %s", arg_unit) < 0) ||
            (arg_module && asprintf(&scope, "module %s", arg_module) < 0))
                return -ENOMEM;
        s.scope = scope;

        r = arg_from ? load_file(&held, &s) : fetch(&held, &s);
        if (r != 0)
                return r;
        r = pprof_encode(&s, &data, &size, &stats);
        if (r == -EINVAL) {
                fprintf(stderr, "The stack tree has no root: nothing to export.\n");
                return CTL_EXIT_FAILURE;
        }
        if (r < 0)
                return r;
        r = pprof_write_gzip(data, size, arg_output);
        if (r < 0) {
                fprintf(stderr, "Cannot write %s: %s\n", arg_output, strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        if (arg_legend && s.heap)
                fprintf(stderr, "Wrote %s: the heap at its maximum, %" PRIu64 " bytes in %zu samples, %zu locations, "
                        "%zu functions, %zu mappings.\n", arg_output, stats.pages, stats.n_samples, stats.n_locations,
                        stats.n_functions, stats.n_mappings);
        else if (arg_legend)
                fprintf(stderr, "Wrote %s: %" PRIu64 " pages (%" PRIu64 " bytes) in %zu samples, %zu locations, "
                        "%zu functions, %zu mappings.\n", arg_output, stats.pages, stats.pages * s.page_size,
                        stats.n_samples, stats.n_locations, stats.n_functions, stats.n_mappings);
        return 0;
}
