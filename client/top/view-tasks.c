/* SPDX-License-Identifier: MIT */

/* The tasks view: Top's tasks, a list or a tree by parent pid. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "reply.h"
#include "view-class.h"

/* Its sort keys, in the order 's' cycles them. */
typedef enum TopTaskColumn {
        TOP_TASK_PID,
        TOP_TASK_COMM,
        TOP_TASK_CURRENT,
        TOP_TASK_PEAK,
        TOP_TASK_ALLOCS,
        TOP_TASK_FREES,
        TOP_TASK_STATE,
        TOP_TASK_COLD,
        _TOP_TASK_COLUMN_MAX,
} TopTaskColumn;

typedef struct TopTask {
        int64_t pid;
        int64_t parent_pid;     /* -1: unknown (a memstrackd without parentPid, a thread) */
        char *comm;             /* owned */
        char *cmdline;          /* owned, NULL if unknown */
        uint64_t current_pages, peak_pages, allocs, frees;
        int64_t cold_pages;     /* idle at least memstrackd's --cold-after at its last access round; -1: not
                                 * measured (no access source, or no figures of it yet) */
        bool exited;
        TopTrend trend;
} TopTask;

/* The view's rows (m->rows[TOP_VIEW_TASKS]): Top's tasks in the daemon's order; an item, and a row's value,
 * is an index into them. */
typedef struct Tasks {
        TopTask *tasks;         /* owned, n */
        size_t n;
} Tasks;

static const char *const sort_names[_TOP_TASK_COLUMN_MAX] = {
        [TOP_TASK_PID] = "pid",
        [TOP_TASK_COMM] = "comm",
        [TOP_TASK_CURRENT] = "current",
        [TOP_TASK_PEAK] = "peak",
        [TOP_TASK_ALLOCS] = "allocs",
        [TOP_TASK_FREES] = "frees",
        [TOP_TASK_STATE] = "state",
        [TOP_TASK_COLD] = "cold",
};

enum { COL_PID, COL_COMM, COL_CURRENT, COL_PEAK, COL_COLD, COL_ALLOCS, COL_FREES, COL_STATE, COL_COMMAND, _COL_MAX };

static const TopColumn columns[_COL_MAX] = {
        [COL_PID] = { "PID", 7, TOP_TASK_PID, 0 },
        [COL_COMM] = { "COMM", 15, TOP_TASK_COMM, TOP_COLUMN_LEFT },
        [COL_CURRENT] = { "CURRENT", 10, TOP_TASK_CURRENT, TOP_COLUMN_TREND },
        [COL_PEAK] = { "PEAK", 10, TOP_TASK_PEAK, 0 },
        [COL_COLD] = { "COLD", 10, TOP_TASK_COLD, 0 },
        [COL_ALLOCS] = { "ALLOCS", 9, TOP_TASK_ALLOCS, 0 },
        [COL_FREES] = { "FREES", 9, TOP_TASK_FREES, 0 },
        [COL_STATE] = { "STATE", 7, TOP_TASK_STATE, TOP_COLUMN_LEFT },
        /* In the tree it begins with the lines to the parent, as htop's. */
        [COL_COMMAND] = { "COMMAND", 0, -1, TOP_COLUMN_LEFT | TOP_COLUMN_TREE },
};

static Tasks *tasks_of(const TopModel *m) {
        return m->rows[TOP_VIEW_TASKS];
}

/* The task of a value, NULL out of range. */
static const TopTask *task_of(const TopModel *m, size_t value) {
        const Tasks *tasks = tasks_of(m);
        return value < tasks->n ? &tasks->tasks[value] : NULL;
}

/* Empties them: before a read, and at the end. */
static void tasks_clear(void *rows) {
        Tasks *tasks = rows;

        for (size_t i = 0; i < tasks->n; i++) {
                free(tasks->tasks[i].comm);
                free(tasks->tasks[i].cmdline);
        }
        tasks->tasks = mfree_ptr(tasks->tasks);
        tasks->n = 0;
}

static int tasks_read(TopModel *m, json_t *reply) {
        json_t *array = reply_array(reply, "tasks"), *e;
        Tasks *tasks = tasks_of(m);
        size_t i;
        int r;

        tasks_clear(tasks);
        tasks->tasks = calloc(MAX(json_array_size(array), (size_t) 1), sizeof(TopTask));
        if (!tasks->tasks)
                return -ENOMEM;
        json_array_foreach(array, i, e) {
                TopTask *t = &tasks->tasks[tasks->n++];
                *t = (TopTask) {
                        .pid = reply_int(e, "pid", -1),
                        .parent_pid = reply_int(e, "parentPid", -1),
                        .current_pages = reply_count(e, "currentPages"),
                        .peak_pages = reply_count(e, "peakPages"),
                        .allocs = reply_count(e, "allocs"),
                        .frees = reply_count(e, "frees"),
                        .exited = reply_bool(e, "exited", false),
                        .cold_pages = json_is_object(json_object_get(e, "cold")) ?
                                      (int64_t) reply_count(json_object_get(e, "cold"), "coldPages") : -1,
                };
                if ((r = top_strdup_or_null(reply_string(e, "comm") ?: "?", &t->comm)) < 0 ||
                    (r = top_strdup_or_null(reply_string(e, "cmdline"), &t->cmdline)) < 0)
                        return r;
        }
        return 0;
}

const char *top_task_comm(const TopModel *m, int64_t pid) {
        const Tasks *tasks = tasks_of(m);
        const char *comm = NULL;

        for (size_t i = 0; i < tasks->n; i++)
                if (tasks->tasks[i].pid == pid)
                        comm = tasks->tasks[i].comm;
        return comm;
}

static size_t tasks_n_items(const TopModel *m) {
        return tasks_of(m)->n;
}

static char *tasks_key(const TopModel *m, size_t value) {
        char *key;
        return asprintf(&key, "pid %" PRIi64, task_of(m, value)->pid) < 0 ? NULL : key;
}

static int tasks_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const TopTask *x = task_of(m, a), *y = task_of(m, b);
        int c;

        switch (sort) {
        case TOP_TASK_PID:
                c = top_compare_i64(x->pid, y->pid);
                break;
        case TOP_TASK_COMM:
                c = strcasecmp(x->comm, y->comm);
                break;
        case TOP_TASK_PEAK:
                c = top_compare_u64_desc(x->peak_pages, y->peak_pages);
                break;
        case TOP_TASK_ALLOCS:
                c = top_compare_u64_desc(x->allocs, y->allocs);
                break;
        case TOP_TASK_FREES:
                c = top_compare_u64_desc(x->frees, y->frees);
                break;
        case TOP_TASK_STATE:
                c = (int) x->exited - (int) y->exited;
                break;
        case TOP_TASK_COLD:
                c = top_compare_i64(y->cold_pages, x->cold_pages);
                break;
        default:
                c = top_compare_u64_desc(x->current_pages, y->current_pages);
        }
        if (c == 0)
                c = top_compare_u64_desc(x->current_pages, y->current_pages);
        return c ?: top_compare_i64(x->pid, y->pid);
}

static bool tasks_matches(const TopModel *m, size_t item, const char *filter) {
        return top_text_matches(task_of(m, item)->comm, filter);
}

/* Positions in a list of tasks, ordered by pid. */
typedef struct PidOrder {
        const TopTask *tasks;
        const size_t *values;
} PidOrder;

static int compare_pid(const void *a, const void *b, void *userdata) {
        const PidOrder *o = userdata;
        return top_compare_i64(o->tasks[o->values[*(const size_t *) a]].pid,
                               o->tasks[o->values[*(const size_t *) b]].pid);
}

/* Each task under the task of its parentPid among the rows shown (the filtered ones); a task whose
 * parent is not shown is a root, as htop's tree shows a process whose parent it hides. */
static int tasks_forest(TopModel *m, const size_t *items, size_t n, TopForest *ret) {
        const TopTask *tasks = tasks_of(m)->tasks;
        _cleanup_free_ size_t *values = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        _cleanup_free_ size_t *parent = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        _cleanup_free_ size_t *by_pid = calloc(MAX(n, (size_t) 1), sizeof(size_t));

        if (!values || !parent || !by_pid)
                return -ENOMEM;
        memcpy(values, items, n * sizeof(size_t));
        /* Positions in values, by pid: a parent is found by binary search. */
        for (size_t i = 0; i < n; i++)
                by_pid[i] = i;
        qsort_r(by_pid, n, sizeof(size_t), compare_pid, &(PidOrder) { tasks, values });
        for (size_t i = 0; i < n; i++) {
                const TopTask *t = &tasks[values[i]];
                parent[i] = SIZE_MAX;
                if (t->parent_pid < 0 || t->parent_pid == t->pid)
                        continue;
                for (size_t lo = 0, hi = n; lo < hi;) {
                        size_t mid = lo + (hi - lo) / 2;
                        int64_t pid = tasks[values[by_pid[mid]]].pid;
                        if (pid == t->parent_pid) {
                                parent[i] = by_pid[mid];
                                break;
                        }
                        if (pid < t->parent_pid)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
        }
        *ret = (TopForest) { .values = TAKE_PTR(values), .parent = TAKE_PTR(parent), .n = n };
        return 0;
}

/* The daemon keeps the biggest tasks by current pages, peak or allocations within the Top call's limit. */
static const char *tasks_stream_sort(unsigned sort) {
        switch (sort) {
        case TOP_TASK_PEAK:
                return "peak";
        case TOP_TASK_ALLOCS:
                return "allocs";
        default:
                return "current";
        }
}

static uint64_t tasks_current(const TopModel *m, size_t item) {
        return task_of(m, item)->current_pages;
}

static void tasks_set_trend(TopModel *m, size_t item, TopTrend trend) {
        tasks_of(m)->tasks[item].trend = trend;
}

static int tasks_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const TopTask *t = task_of(m, value);
        char cur[FORMAT_BUFFER_MAX], peak[FORMAT_BUFFER_MAX], cold[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *clean = NULL, *guides = NULL;
        int r;

        /* 15 columns of the escaped name (format_sanitize()), not 15 bytes: no cut inside a character or an
         * escape, and the columns after it stay aligned. */
        clean = format_sanitize(t->comm);
        fields[COL_COMM] = clean ? format_ellipsize(clean, 15) : NULL;
        guides = top_tree_guides(line, utf8);
        if (!fields[COL_COMM] || !guides)
                return -ENOMEM;
        if ((r = top_field(&fields[COL_PID], "%" PRIi64, t->pid)) < 0 ||
            (r = top_field(&fields[COL_CURRENT], "%s", format_pages(cur, sizeof(cur), t->current_pages, m->page_size))) < 0 ||
            (r = top_field(&fields[COL_PEAK], "%s", format_pages(peak, sizeof(peak), t->peak_pages, m->page_size))) < 0 ||
            (r = top_field(&fields[COL_COLD], "%s", t->cold_pages < 0 ? "-" :
                           format_pages(cold, sizeof(cold), (uint64_t) t->cold_pages, m->page_size))) < 0 ||
            (r = top_field(&fields[COL_ALLOCS], "%" PRIu64, t->allocs)) < 0 ||
            (r = top_field(&fields[COL_FREES], "%" PRIu64, t->frees)) < 0 ||
            (r = top_field(&fields[COL_STATE], "%s", t->exited ? "exited" : "running")) < 0)
                return r;
        /* The tree names a task without a command line by its comm. */
        return top_field(&fields[COL_COMMAND], "%s%s", guides, t->cmdline ?: line ? fields[COL_COMM] : "");
}

static TopRowLook tasks_look(const TopModel *m, size_t value) {
        const TopTask *t = task_of(m, value);
        return (TopRowLook) { .state = t->exited ? TOP_ROW_GONE : TOP_ROW_PLAIN,
                              .high = top_model_is_high(m, t->current_pages), .trend = t->trend };
}

static bool tasks_owner(const TopModel *m, size_t value, TopOwner *ret) {
        const TopTask *t = task_of(m, value);

        if (!t || t->pid < 0)
                return false;
        *ret = (TopOwner) { .pid = t->pid };
        return true;
}

const TopViewClass top_view_tasks = {
        .name = "tasks",
        .title = "Tasks",
        .sort_names = sort_names,
        .n_sorts = _TOP_TASK_COLUMN_MAX,
        .default_sort = TOP_TASK_CURRENT,
        .columns = columns,
        .n_columns = _COL_MAX,
        .tree = TOP_TREE_OPTIONAL,
        .rows_size = sizeof(Tasks),
        .rows_done = tasks_clear,
        .required = "tasks",
        .read = tasks_read,
        .n_items = tasks_n_items,
        .key = tasks_key,
        .compare = tasks_compare,
        .matches = tasks_matches,
        .forest = tasks_forest,
        .stream_sort = tasks_stream_sort,
        .current = tasks_current,
        .set_trend = tasks_set_trend,
        .write = tasks_write,
        .look = tasks_look,
        .owner = tasks_owner,
        .enter = top_model_open_owner,
};
