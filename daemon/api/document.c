/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "document.h"
#include "explain.h"
#include "historyquery.h"
#include "coldquery.h"
#include "leaks.h"
#include "log.h"
#include "macro.h"
#include "query.h"
#include "slabquery.h"
#include "snapshot-document.h"
#include "stop-signal.h"
#include "time-util.h"
#include "varlink.h"

/*
 * memstrackd's SnapshotFetch: the methods snapshot_document_build() asks for, answered by the functions
 * the Service answers them with, as root sees them (raw kernel addresses). Parameters are the ones the
 * builder sends, checked strictly, so that one it starts sending fails here rather than go unheard.
 */

typedef int (*DocumentMethod)(const DocumentInput *in, json_t *params, json_t **ret);

/* json_unpack_ex() of params (NULL: none) with JSON_STRICT, its failure as -EINVAL. */
static int unpack_params(json_t *params, const char *fmt, ...) {
        json_auto_t *none = NULL;
        json_error_t e;
        va_list ap;
        int r;

        if (!params && !(params = none = json_object()))
                return -ENOMEM;
        va_start(ap, fmt);
        r = json_vunpack_ex(params, &e, JSON_STRICT, fmt, ap);
        va_end(ap);
        return r < 0 ? -EINVAL : 0;
}

static int parse_sort(const char *s, QuerySort *ret) {
        QuerySort sort = query_sort_from_string(s);

        if (sort < 0)
                return -EINVAL;
        *ret = sort;
        return 0;
}

static int document_status(const DocumentInput *in, json_t *params, json_t **ret) {
        int r;

        r = unpack_params(params, "{}");
        if (r < 0)
                return r;
        *ret = status_reply_json(in->accounting, in->state, in->page_size, true);
        return *ret ? 0 : -ENOMEM;
}

static int document_tasks(const DocumentInput *in, json_t *params, json_t **ret) {
        QueryTasks q = { .limit = 50, .pid = -1 };
        const char *sort = NULL;
        json_int_t limit = 50;
        int include_exited = false, r;

        r = unpack_params(params, "{s?I, s?b, s?s}", "limit", &limit, "includeExited", &include_exited,
                          "sortBy", &sort);
        if (r < 0 || (r = parse_sort(sort, &q.sort)) < 0)
                return r;
        q.limit = (size_t) limit;
        q.include_exited = include_exited;
        return query_tasks(in->accounting, &q, ret);
}

static int document_modules(const DocumentInput *in, json_t *params, json_t **ret) {
        json_auto_t *modules = NULL;
        const char *sort = NULL;
        json_int_t limit = 50;
        QuerySort s;
        int r;

        r = unpack_params(params, "{s?I, s?s}", "limit", &limit, "sortBy", &sort);
        if (r < 0 || (r = parse_sort(sort, &s)) < 0)
                return r;
        r = query_modules(in->accounting, s, (size_t) limit, &modules);
        if (r < 0)
                return r;
        *ret = json_pack("{s:O}", "modules", modules);
        return *ret ? 0 : -ENOMEM;
}

static int document_units(const DocumentInput *in, json_t *params, json_t **ret) {
        QueryUnits q = { .show_addresses = true, .user_addresses = QUERY_USER_ADDRESSES_ALL, .usym = in->usym };
        json_auto_t *units = NULL;
        json_int_t limit = 50, stacks = 0;
        const char *sort = NULL;
        int r;

        r = unpack_params(params, "{s?I, s?I, s?s}", "limit", &limit, "stacks", &stacks, "sortBy", &sort);
        if (r < 0 || (r = parse_sort(sort, &q.sort)) < 0)
                return r;
        q.limit = (size_t) limit;
        q.stacks = (unsigned) stacks;
        r = query_units(in->accounting, &q, &units);
        if (r < 0)
                return r;
        *ret = json_pack("{s:O}", "units", units);
        return *ret ? 0 : -ENOMEM;
}

static int document_slab(const DocumentInput *in, json_t *params, json_t **ret) {
        const char *by = NULL;
        json_int_t limit = 50;
        SlabBy b;
        int r;

        r = unpack_params(params, "{s?I, s?s}", "limit", &limit, "by", &by);
        if (r < 0)
                return r;
        b = by ? slab_by_from_string(by) : SLAB_BY_CALLSITE;
        if (b < 0)
                return -EINVAL;
        return slab_query_json(in->accounting, b, (size_t) limit, true, ret);
}

static int document_leaks(const DocumentInput *in, json_t *params, json_t **ret) {
        json_int_t limit = 20;
        int r;

        r = unpack_params(params, "{s?I}", "limit", &limit);
        if (r < 0)
                return r;
        uint64_t now = in->now_nsec ?: now_nsec(CLOCK_MONOTONIC);
        return leaks_query_json(in->accounting, &(LeaksQuery) LEAKS_QUERY_DEFAULT(now, (size_t) limit, in->usym),
                                ret);
}

/* The Cold reply, as root sees it. */
static int document_cold(const DocumentInput *in, json_t *params, json_t **ret) {
        json_int_t limit = COLD_QUERY_LIMIT_DEFAULT, stacks = COLD_QUERY_STACKS_DEFAULT;
        int r;

        r = unpack_params(params, "{s?I, s?I}", "limit", &limit, "stacks", &stacks);
        if (r < 0)
                return r;
        ColdQuery q = {
                .limit = (size_t) limit,
                .stacks = (unsigned) MIN(stacks, (json_int_t) COLD_QUERY_STACKS_MAX),
                .page_size = in->page_size,
                .show_addresses = true,
                .user_addresses = QUERY_USER_ADDRESSES_ALL,
                .usym = in->usym,
        };
        return cold_query_json(in->accounting, in->coldness, &q, ret);
}

/* The History reply of the total, for the HTML page's chart; a memstrackd keeping none leaves it out. */
static int document_history(const DocumentInput *in, json_t *params, json_t **ret) {
        HistoryQuery q = { .pid = -1, .seconds = -1, .resolution = -1, .now_realtime_usec = now_usec(CLOCK_REALTIME) };
        const char *bad = NULL;
        int r;

        r = unpack_params(params, "{}");
        if (r < 0)
                return r;
        if (!in->history)
                return -EOPNOTSUPP;
        return history_query_json(in->history, in->accounting, &q, &bad, ret);
}

/* The OomKills reply, for the HTML page's OOM section; a memstrackd not watching them leaves it out. */
static int document_oom_kills(const DocumentInput *in, json_t *params, json_t **ret) {
        if (!in->state || !in->state->oom_kills)
                return -EOPNOTSUPP;
        *ret = in->state->oom_kills(in->state->oom_room);
        return *ret ? 0 : -ENOMEM;
}

/* A unit's Explain view, with the kernel's figures where memstrackd reads them. */
static int document_explain(const DocumentInput *in, json_t *params, json_t **ret) {
        ExplainQuery q = {
                .show_addresses = true,
                .user_addresses = QUERY_USER_ADDRESSES_ALL,
                .usym = in->usym,
                .page_size = in->page_size,
                .coldness = in->coldness,
        };
        json_int_t limit = EXPLAIN_LIMIT_DEFAULT, stacks = EXPLAIN_STACKS_DEFAULT;
        int r;

        r = unpack_params(params, "{s:s, s?I, s?I}", "name", &q.name, "limit", &limit, "stacks", &stacks);
        if (r < 0)
                return r;
        q.limit = (size_t) limit;
        q.stacks = (unsigned) stacks;
        if (in->state) {
                q.memcg = in->state->memcg;
                q.memcg_reason = in->state->memcg_reason;
                q.lost_events = in->state->source.lost_records;
                q.stack_sample_interval = in->state->source.stack_sample_interval;
                q.uptime_usec = in->state->uptime_usec;
        }
        return explain_query_json(in->accounting, &q, ret);
}

/* The StackTree reply as the method builds it: the tree, and which allocations have stacks. */
static int document_stack_tree(const DocumentInput *in, json_t *params, json_t **ret) {
        QueryStackTree q = {
                .pid = -1,
                .show_addresses = true,
                .user_addresses = QUERY_USER_ADDRESSES_ALL,
                .usym = in->usym,
        };
        json_int_t pid = -1, max_depth = 32, min_pages = 1, max_children = 16;
        json_auto_t *tree = NULL;
        const char *sort = NULL;
        int r;

        r = unpack_params(params, "{s?I, s?s, s?I, s?I, s?I, s?s}", "pid", &pid, "module", &q.module,
                          "maxDepth", &max_depth, "minPages", &min_pages, "maxChildren", &max_children,
                          "sortBy", &sort);
        if (r < 0 || (r = parse_sort(sort, &q.sort)) < 0)
                return r;
        q.pid = (int32_t) pid;
        q.max_depth = (unsigned) max_depth;
        q.min_pages = (uint64_t) min_pages;
        q.max_children = (unsigned) max_children;
        r = query_stacktree(in->accounting, &q, &tree);
        if (r < 0)
                return r;
        if (json_object_set_new(tree, "stackSampleInterval",
                                json_integer(varlink_count(in->state->source.stack_sample_interval))) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(tree);
        return 0;
}

static const struct {
        const char *method;
        DocumentMethod call;
} document_methods[] = {
        { "io.memstrack.Status", document_status },
        { "io.memstrack.Tasks", document_tasks },
        { "io.memstrack.Modules", document_modules },
        { "io.memstrack.Units", document_units },
        { "io.memstrack.Slab", document_slab },
        { "io.memstrack.Leaks", document_leaks },
        { "io.memstrack.Cold", document_cold },
        { "io.memstrack.History", document_history },
        { "io.memstrack.OomKills", document_oom_kills },
        { "io.memstrack.Explain", document_explain },
        { "io.memstrack.StackTree", document_stack_tree },
};

/* Answers with the query layer's -errno as they are: -ESRCH and -ENOENT for a task or module gone are the
 * builder's NoSuchTask and NoSuchModule. A method not in the table is one memstrackd's document does
 * without (-EOPNOTSUPP). */
static int document_fetch(const char *method, json_t *params, SnapshotFetchFlags flags, json_t **ret_reply,
                void *userdata) {
        const DocumentInput *in = userdata;

        for (size_t i = 0; i < ELEMENTSOF(document_methods); i++)
                if (streq(document_methods[i].method, method))
                        return document_methods[i].call(in, params, ret_reply);
        return -EOPNOTSUPP;
}

int document_build(const DocumentInput *in, json_t **ret) {
        SnapshotRequest req = SNAPSHOT_REQUEST_DEFAULT;

        assert(in);
        assert(ret);

        req.sort_by_peak = in->sort_by_peak;
        return snapshot_document_build("memstrackd", &req, document_fetch, (void *) in, ret);
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

/*
 * Writes to fd, which may be a pipe whose reader reads slowly or never: each write waits until it can go
 * (pieces of PIPE_BUF, which a pipe that polls writable takes whole, so a blocking descriptor does not
 * block either), and gives up when SIGTERM or SIGINT comes (-ECANCELED).
 */
static int write_all_stoppable(int fd, const char *buf, size_t size) {
        _cleanup_close_ int stop_fd = stop_signal_fd();

        while (size > 0) {
                int r = stop_signal_wait(fd, POLLOUT, stop_fd);
                if (r < 0)
                        return r;
                ssize_t n = write(fd, buf, MIN(size, (size_t) PIPE_BUF));
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                buf += n;
                size -= (size_t) n;
        }
        return 0;
}

/* Writes to something that is not a regular file, or standard output, as it is. A FIFO is opened
 * without waiting for a reader: none is -EPIPE, as is one that goes away. */
static int write_in_place(const char *path, const char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;

        if (!path)
                return write_all_stoppable(STDOUT_FILENO, buf, size);
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_APPEND | O_NONBLOCK);
        if (fd < 0)
                return errno == ENXIO ? -EPIPE : -errno;
        return write_all_stoppable(fd, buf, size);
}

static int write_reports(const DocumentInput *in, const ReportOptions *o, const char *path) {
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

int document_write_reports(const DocumentInput *in, const ReportOptions *o, const char *path) {
        const char *where = path ?: "standard output";

        int r = write_reports(in, o, path);
        if (r == -EPIPE)
                return log_error_errno(r, "Failed to write the report to %s: no process reads it.", where);
        if (r == -ECANCELED)
                return log_error_errno(r, "Stopped writing the report to %s at SIGTERM or SIGINT.", where);
        if (r < 0)
                return log_error_errno(r, "Failed to write the report to %s: %m", where);
        log_info("Wrote the report to %s.", where);
        return 0;
}
