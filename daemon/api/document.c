/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "document.h"
#include "query.h"
#include "reply.h"
#include "leaks.h"
#include "slabquery.h"
#include "snapshot-document.h"
#include "time-util.h"

/* A StackTree reply as the method builds it: the tree, and which allocations have stacks. */
static int tree_json(const DocumentInput *in, int32_t pid, const char *module, json_t **ret) {
        json_auto_t *tree = NULL;
        int r;

        QueryStackTree q = {
                .pid = pid,
                .module = module,
                .max_depth = SNAPSHOT_STACK_DEPTH_DEFAULT,
                .min_pages = 1,
                .max_children = SNAPSHOT_STACK_CHILDREN,
                .sort = in->sort_by_peak ? QUERY_SORT_PEAK : QUERY_SORT_CURRENT,
                .show_addresses = true,
                .usym = in->usym,
        };
        r = query_stacktree(in->accounting, &q, &tree);
        if (r < 0)
                return r;
        if (json_object_set_new(tree, "stackSampleInterval",
                                json_integer((json_int_t) in->live->source.stack_sample_interval)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(tree);
        return 0;
}

/* {key: value, "stackTree": tree} appended to list, for the first max entries of entries with pages. */
static int add_scoped_trees(const DocumentInput *in, json_t *entries, bool tasks, size_t max, json_t *list) {
        size_t n = 0, i;
        json_t *e;
        int r;

        json_array_foreach(entries, i, e) {
                json_auto_t *tree = NULL;

                if (n >= max || reply_count(e, "currentPages") == 0)
                        break;
                if (tasks && reply_int(e, "pid", -1) < 0)
                        continue;       /* "[evicted]" has no tree of its own */
                r = tasks ? tree_json(in, (int32_t) reply_int(e, "pid", -1), NULL, &tree) :
                            tree_json(in, -1, reply_string(e, "name"), &tree);
                if (r == -ESRCH || r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                const char *key = tasks ? "pid" : "name";
                if (json_array_append_new(list, json_pack("{s:O, s:O}", key, json_object_get(e, key),
                                                          "stackTree", tree)) < 0)
                        return -ENOMEM;
                n++;
        }
        return 0;
}

int document_build(const DocumentInput *in, json_t **ret) {
        json_auto_t *status = NULL, *tasks = NULL, *modules = NULL, *units = NULL, *tree = NULL, *doc = NULL;
        json_auto_t *task_stacks = json_array(), *module_stacks = json_array();
        json_auto_t *slab_callsites = NULL, *slab_caches = NULL, *leaks = NULL;
        int r;

        assert(in);
        assert(ret);

        if (!task_stacks || !module_stacks)
                return -ENOMEM;
        status = service_status_json(in->accounting, in->live, in->page_size, true);
        if (!status)
                return -ENOMEM;
        r = query_tasks(in->accounting, &(QueryTasks) { .sort = QUERY_SORT_CURRENT, .limit = SNAPSHOT_LIST_LIMIT,
                                                        .pid = -1, .include_exited = true }, &tasks);
        if (r < 0)
                return r;
        r = query_modules(in->accounting, QUERY_SORT_CURRENT, SNAPSHOT_LIST_LIMIT, &modules);
        if (r < 0)
                return r;
        r = query_units(in->accounting, &(QueryUnits) { .sort = QUERY_SORT_CURRENT, .limit = SNAPSHOT_LIST_LIMIT,
                                                         .stacks = SNAPSHOT_UNIT_STACKS, .show_addresses = true,
                                                         .usym = in->usym }, &units);
        if (r < 0)
                return r;
        r = slab_query_json(in->accounting, SLAB_BY_CALLSITE, SNAPSHOT_LIST_LIMIT, true, &slab_callsites);
        if (r < 0)
                return r;
        r = slab_query_json(in->accounting, SLAB_BY_CACHE, SNAPSHOT_LIST_LIMIT, true, &slab_caches);
        if (r < 0)
                return r;
        uint64_t now = in->now_nsec ?: now_nsec(CLOCK_MONOTONIC);
        r = leaks_query_json(in->accounting, &(LeaksQuery) LEAKS_QUERY_DEFAULT(now, SNAPSHOT_LEAKS_LIMIT, in->usym),
                             &leaks);
        if (r < 0)
                return r;
        r = tree_json(in, -1, NULL, &tree);
        if (r < 0)
                return r;
        r = add_scoped_trees(in, reply_array(tasks, "tasks"), true, SNAPSHOT_TASK_STACKS_MAX, task_stacks);
        if (r < 0)
                return r;
        r = add_scoped_trees(in, modules, false, SNAPSHOT_MODULE_STACKS_MAX, module_stacks);
        if (r < 0)
                return r;

        char host[HOST_NAME_MAX + 1] = "";
        (void) gethostname(host, sizeof(host) - 1);
        doc = json_pack("{s:i, s:s, s:o?, s:I, s:O, s:O, s:{s:O}, s:O, s:O, s:O, s:{s:O}, s:{s:O, s:O}, s:O}",
                        "memstrackSnapshot", SNAPSHOT_FORMAT_VERSION,
                        "generator", "memstrackd " PACKAGE_VERSION,
                        "host", host[0] ? json_string(host) : NULL,
                        "realtimeUsec", (json_int_t) now_usec(CLOCK_REALTIME),
                        "status", status,
                        "tasks", tasks,
                        "modules", "modules", modules,
                        "stackTree", tree,
                        "taskStacks", task_stacks,
                        "moduleStacks", module_stacks,
                        "units", "units", units,
                        "slab", "callsites", slab_callsites, "caches", slab_caches,
                        "leaks", leaks);
        if (!doc)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}

/* The rendered reports, in memory: nothing is written when rendering fails. */
static int render(const DocumentInput *in, const ReportOptions *o, char **ret, size_t *ret_size) {
        json_auto_t *doc = NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        r = document_build(in, &doc);
        if (r < 0)
                return r;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        r = report_render(doc, o, f);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0) {
                free(buf);
                return r;
        }
        *ret = buf;
        *ret_size = size;
        return 0;
}

static int write_all(int fd, const char *buf, size_t size) {
        while (size > 0) {
                ssize_t n = write(fd, buf, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                size -= (size_t) n;
        }
        return 0;
}

/* Writes to something that is not a regular file, or standard output, as it is. */
static int write_in_place(const char *path, const char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;

        if (!path)
                return write_all(STDOUT_FILENO, buf, size);
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_APPEND);
        if (fd < 0)
                return -errno;
        return write_all(fd, buf, size);
}

int document_write_reports(const DocumentInput *in, const ReportOptions *o, const char *path) {
        _cleanup_free_ char *buf = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        size_t size;
        int r;

        assert(in);
        assert(o);

        r = render(in, o, &buf, &size);
        if (r < 0)
                return r;
        if (!path || (stat(path, &st) >= 0 && !S_ISREG(st.st_mode)))
                return write_in_place(path, buf, size);

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* A report is for reading: 0644 as other files root writes, not mkostemp()'s 0600. */
        (void) fchmod(fd, 0644);
        r = write_all(fd, buf, size);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}
