/* SPDX-License-Identifier: MIT */

/* memstrackctl snapshot and diff, and snapshot documents (snapshot.h). */

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"
#include "snapshot.h"
#include "tasks.h"
#include "time-util.h"

/* SnapshotFetch on memstrackctl's connection (userdata): ctl_call() but for the answers flags let the
 * builder take as "not there", which are returned unsaid. */
static int fetch_over_varlink(const char *method, json_t *params, SnapshotFetchFlags flags,
                json_t **ret_reply, void *userdata) {
        VarlinkClient *c = userdata;
        _cleanup_free_ char *error = NULL;
        json_auto_t *reply = NULL;
        int r;

        r = ctl_client_call(c, method, params, &reply, &error);
        if (r >= 0 && error) {
                /* An earlier memstrackd answers MethodNotFound, or declaring it without serving it,
                 * MethodNotImplemented. */
                if ((flags & SNAPSHOT_FETCH_OPTIONAL) && (streq(error, VARLINK_ERROR_METHOD_NOT_FOUND) ||
                                                          streq(error, VARLINK_ERROR_METHOD_NOT_IMPLEMENTED)))
                        return -EOPNOTSUPP;
                if ((flags & SNAPSHOT_FETCH_MAY_VANISH) && streq(error, MEMSTRACK_ERROR_NO_SUCH_TASK))
                        return -ESRCH;
                if ((flags & SNAPSHOT_FETCH_MAY_VANISH) && streq(error, MEMSTRACK_ERROR_NO_SUCH_MODULE))
                        return -ENOENT;
                if ((flags & SNAPSHOT_FETCH_MAY_VANISH) && streq(error, MEMSTRACK_ERROR_NO_SUCH_UNIT))
                        return -ENXIO;
        }
        r = ctl_call_result(method, r, error, reply);
        if (r != 0)
                return r;
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

int snapshot_fetch(VarlinkClient *c, const SnapshotRequest *req, json_t **ret) {
        assert(c);
        assert(req);
        assert(ret);

        return snapshot_document_build("memstrackctl", req, fetch_over_varlink, c, ret);
}

/* Whether doc is a snapshot document this memstrackctl reads; says why not, naming it as what. */
static int snapshot_check(json_t *doc, const char *what) {
        if (!json_is_object(doc) || !json_is_integer(json_object_get(doc, "memstrackSnapshot"))) {
                fprintf(stderr, "%s is not a memstrack snapshot file.\n", what);
                return CTL_EXIT_FAILURE;
        }
        if (reply_int(doc, "memstrackSnapshot", 0) != SNAPSHOT_FORMAT_VERSION) {
                fprintf(stderr, "%s is a snapshot file of version %" PRIi64 "; this memstrackctl reads version %d.\n",
                        what, reply_int(doc, "memstrackSnapshot", 0), SNAPSHOT_FORMAT_VERSION);
                return CTL_EXIT_FAILURE;
        }
        if (!reply_object(doc, "status") || !reply_object(doc, "tasks") || !reply_object(doc, "modules") ||
            !reply_object(doc, "stackTree")) {
                fprintf(stderr, "Snapshot file %s lacks status, tasks, modules or stackTree.\n", what);
                return CTL_EXIT_FAILURE;
        }
        return 0;
}

int snapshot_load(const char *path, json_t **ret) {
        json_auto_t *doc = NULL;
        json_error_t e;
        int r;

        assert(path);
        assert(ret);

        doc = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
        if (!doc) {
                fprintf(stderr, "Cannot read snapshot file %s: %s (line %d).\n", path, e.text, e.line);
                return CTL_EXIT_FAILURE;
        }
        r = snapshot_check(doc, path);
        if (r != 0)
                return r;
        *ret = TAKE_PTR(doc);
        return 0;
}

int snapshot_fetch_boot(json_t **ret) {
        json_auto_t *reply = NULL;
        int r;

        assert(ret);

        r = ctl_call_once("io.memstrack.BootPhase", NULL, &reply);
        if (r != 0)
                return r;
        json_t *doc = json_object_get(reply, "snapshot");
        r = snapshot_check(doc, "The boot phase memstrackd serves");
        if (r != 0)
                return r;
        *ret = json_incref(doc);
        return 0;
}

/* Writes doc to something that is not a regular file (a FIFO, /dev/stdout, a terminal) in place. */
static int snapshot_write_in_place(json_t *doc, const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "we");

        if (!f)
                return negative_errno();
        if (json_dumpf(doc, f, JSON_INDENT(1)) < 0 || fputc('\n', f) == EOF || fflush(f) != 0)
                return errno > 0 ? -errno : -EIO;
        return 0;
}

int snapshot_save(json_t *doc, const char *path) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        struct stat st;
        int fd, r;

        /* A temporary file renamed over the target keeps a regular file whole if we die halfway; over
         * anything else (/dev/null, a FIFO) the rename would replace the device or pipe with a file. */
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
                return snapshot_write_in_place(doc, path);
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        /* mkostemp() makes 0600 files; a snapshot is as readable as other files the user writes. */
        mode_t mask = umask(0);
        umask(mask);
        (void) fchmod(fd, 0666 & ~mask);
        f = fdopen(fd, "w");
        if (!f) {
                r = negative_errno();
                (void) close(fd);
                (void) unlink(tmp);
                return r;
        }
        if (json_dumpf(doc, f, JSON_INDENT(1)) < 0 || fputc('\n', f) == EOF || fflush(f) != 0 ||
            fsync(fileno(f)) < 0) {
                r = errno > 0 ? -errno : -EIO;
                (void) unlink(tmp);
                return r;
        }
        if (rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

int verb_snapshot(int argc, char *argv[]) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *params = NULL, *reply = NULL;
        int r;

        if (!arg_file && argc < 2) {
                fprintf(stderr, "memstrackctl: snapshot needs a NAME or --file FILE.\n");
                return CTL_EXIT_USAGE;
        }
        if (arg_file && argc > 1) {
                fprintf(stderr, "memstrackctl: snapshot takes a NAME or --file FILE, not both.\n");
                return CTL_EXIT_USAGE;
        }

        r = ctl_connect(&c);
        if (r != 0)
                return r;

        if (arg_file) {
                r = snapshot_fetch(c, &SNAPSHOT_REQUEST_DEFAULT, &reply);
                if (r != 0)
                        return r;
                r = snapshot_save(reply, arg_file);
                if (r < 0) {
                        fprintf(stderr, "Failed to write %s: %s\n", arg_file, strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
                size_t n_tasks = json_array_size(reply_array(reply_object(reply, "tasks"), "tasks"));
                uint64_t tracked = reply_count(reply_object(reply, "status"), "trackedPages");
                if (arg_json != CTL_JSON_OFF) {
                        json_auto_t *j = json_pack("{s:s, s:I, s:I}", "file", arg_file, "tasks", (json_int_t) n_tasks,
                                                   "trackedPages", (json_int_t) tracked);
                        if (!j)
                                return -ENOMEM;
                        return ctl_print_json(j);
                }
                printf("Wrote %s (%zu tasks, %" PRIu64 " pages tracked).\n", arg_file, n_tasks, tracked);
                return 0;
        }

        params = json_pack("{s:s}", "name", argv[1]);
        if (!params)
                return -ENOMEM;
        r = ctl_call(c, "io.memstrack.Snapshot", params, &reply);
        if (r != 0)
                return r;
        if (arg_json != CTL_JSON_OFF)
                return ctl_print_json(reply);
        printf("Saved snapshot '%s' in memstrackd; compare with: memstrackctl diff %s\n", argv[1], argv[1]);
        return 0;
}

static int print_diff(json_t *d, uint64_t page_size) {
        static const TableColumn task_columns[] = {
                { .header = "PID", .align = TABLE_ALIGN_RIGHT },
                { .header = "COMM", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 8 },
                { .header = "BEFORE", .align = TABLE_ALIGN_RIGHT },
                { .header = "AFTER", .align = TABLE_ALIGN_RIGHT },
                { .header = "DELTA", .align = TABLE_ALIGN_RIGHT },
                { .header = "SIZE", .align = TABLE_ALIGN_RIGHT },
                { .header = "STATE", .align = TABLE_ALIGN_LEFT },
        };
        static const TableColumn module_columns[] = {
                { .header = "MODULE", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 12 },
                { .header = "BEFORE", .align = TABLE_ALIGN_RIGHT },
                { .header = "AFTER", .align = TABLE_ALIGN_RIGHT },
                { .header = "DELTA", .align = TABLE_ALIGN_RIGHT },
                { .header = "SIZE", .align = TABLE_ALIGN_RIGHT },
        };
        _cleanup_(table_freep) Table *tasks = NULL, *modules = NULL;
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX], d_buf[FORMAT_BUFFER_MAX];
        size_t width = format_terminal_columns(), i;
        int64_t before = reply_int(d, "beforePages", 0), after = reply_int(d, "afterPages", 0);
        uint64_t ts = reply_count(d, "timestampUsec"), snap_ts = reply_count(d, "snapshotTimestampUsec");
        json_t *e;
        int r;

        if (arg_legend)
                printf("Snapshot '%s', taken %s ago: %s -> %s (%s, %+" PRIi64 " pages)\n\n",
                       reply_string(d, "name") ?: "?", format_duration(a, sizeof(a), ts > snap_ts ? ts - snap_ts : 0),
                       format_pages(b, sizeof(b), (uint64_t) MAX(before, (int64_t) 0), page_size),
                       format_pages(c, sizeof(c), (uint64_t) MAX(after, (int64_t) 0), page_size),
                       format_delta(d_buf, sizeof(d_buf), after - before, page_size), after - before);
        /* Not part of the legend: without it the numbers below would be misread. */
        if (reply_bool(d, "resetSince", false))
                printf("Note: the counters were reset (reset all) after this snapshot; AFTER counts restarted "
                       "from 0, so negative deltas are not frees.\n\n");

        if ((r = table_new(task_columns, ELEMENTSOF(task_columns), &tasks)) < 0 ||
            (r = table_new(module_columns, ELEMENTSOF(module_columns), &modules)) < 0)
                return r;
        table_set_header(tasks, arg_legend);
        table_set_header(modules, arg_legend);
        json_array_foreach(reply_array(d, "tasks"), i, e) {
                int64_t delta = reply_int(e, "deltaPages", 0);
                /* The task's state now; "new" for one the snapshot did not know. */
                bool appeared = reply_bool(e, "appeared", false), exited = reply_bool(e, "exited", false);
                const char *state = appeared ? (exited ? "new, exited" : "new") : exited ? "exited" : "running";
                if ((r = table_add_cellf(tasks, "%" PRIi64, reply_int(e, "pid", -1))) < 0 ||
                    (r = table_add_cell(tasks, reply_string(e, "comm"))) < 0 ||
                    (r = table_add_cellf(tasks, "%" PRIi64, reply_int(e, "beforePages", 0))) < 0 ||
                    (r = table_add_cellf(tasks, "%" PRIi64, reply_int(e, "afterPages", 0))) < 0 ||
                    (r = table_add_cellf(tasks, "%+" PRIi64, delta)) < 0 ||
                    (r = table_add_cell(tasks, format_delta(a, sizeof(a), delta, page_size))) < 0 ||
                    (r = table_add_cell(tasks, state)) < 0)
                        return r;
        }
        json_array_foreach(reply_array(d, "modules"), i, e) {
                int64_t delta = reply_int(e, "deltaPages", 0);
                if ((r = table_add_cell(modules, reply_string(e, "name"))) < 0 ||
                    (r = table_add_cellf(modules, "%" PRIi64, reply_int(e, "beforePages", 0))) < 0 ||
                    (r = table_add_cellf(modules, "%" PRIi64, reply_int(e, "afterPages", 0))) < 0 ||
                    (r = table_add_cellf(modules, "%+" PRIi64, delta)) < 0 ||
                    (r = table_add_cell(modules, format_delta(a, sizeof(a), delta, page_size))) < 0)
                        return r;
        }
        r = table_print(tasks, stdout, width);
        if (r < 0)
                return r;
        printf("\n");
        return table_print(modules, stdout, width);
}

/* A uid as a user name when the system knows one. */
static const char *format_user(char *buf, size_t size, uint64_t uid) {
        const struct passwd *pw = uid <= UINT32_MAX ? getpwuid((uid_t) uid) : NULL;

        (void) snprintf(buf, size, "%s", pw ? pw->pw_name : "");
        if (!pw || !*buf)
                (void) snprintf(buf, size, "%" PRIu64, uid);
        return buf;
}

int verb_snapshots(int argc, char *argv[]) {
        static const TableColumn columns[] = {
                { .header = "NAME", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 8 },
                { .header = "AGE", .align = TABLE_ALIGN_RIGHT },
                { .header = "TRACKED", .align = TABLE_ALIGN_RIGHT },
                { .header = "PAGES", .align = TABLE_ALIGN_RIGHT },
                { .header = "NOTE", .align = TABLE_ALIGN_LEFT },
                { .header = "OWNER", .align = TABLE_ALIGN_LEFT },
        };
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        json_auto_t *status = NULL, *reply = NULL, *params = NULL;
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        json_t *e;
        size_t i;
        int r;

        r = ctl_connect(&c);
        if (r != 0)
                return r;
        /* Every user's, with whose each is, for root; one's own otherwise. */
        if (arg_all && !(params = json_pack("{s:b}", "allUsers", true)))
                return -ENOMEM;
        r = ctl_call(c, "io.memstrack.ListSnapshots", params, &reply);
        if (r != 0)
                return r;
        if (arg_json != CTL_JSON_OFF)
                return ctl_print_json(reply);
        /* Status for the page size. The daemon's timestamps are CLOCK_MONOTONIC of this machine (the
         * socket is local), so ours tells their age. */
        r = ctl_call(c, "io.memstrack.Status", NULL, &status);
        if (r != 0)
                return r;
        uint64_t page_size = reply_count(status, "pageSize") ?: 4096, now = now_usec(CLOCK_MONOTONIC);

        r = table_new(columns, ELEMENTSOF(columns) - !arg_all, &t);
        if (r < 0)
                return r;
        json_array_foreach(reply_array(reply, "snapshots"), i, e) {
                uint64_t ts = reply_count(e, "timestampUsec"), pages = reply_count(e, "trackedPages");
                if ((r = table_add_cell(t, reply_string(e, "name"))) < 0 ||
                    (r = table_add_cell(t, format_duration(a, sizeof(a), now > ts ? now - ts : 0))) < 0 ||
                    (r = table_add_cell(t, format_pages(b, sizeof(b), pages, page_size))) < 0 ||
                    (r = table_add_cellf(t, "%" PRIu64, pages)) < 0 ||
                    (r = table_add_cell(t, reply_bool(e, "resetSince", false) ? "reset since" : "")) < 0 ||
                    (arg_all && (r = table_add_cell(t, format_user(a, sizeof(a), reply_count(e, "uid")))) < 0))
                        return r;
        }
        r = table_print(t, stdout, format_terminal_columns());
        if (r < 0)
                return r;
        if (table_rows(t) == 0)
                printf("(none)\n");
        return 0;
}

int verb_delete_snapshot(int argc, char *argv[]) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        int r;

        r = ctl_connect(&c);
        if (r != 0)
                return r;
        /* One call per name, stopping at the first the daemon refuses: those before it are gone. */
        for (int i = 1; i < argc; i++) {
                json_auto_t *params = json_pack("{s:s}", "name", argv[i]), *reply = NULL;

                if (!params || (arg_uid >= 0 && json_object_set_new(params, "uid", json_integer(arg_uid)) < 0))
                        return -ENOMEM;
                r = ctl_call(c, "io.memstrack.DeleteSnapshot", params, &reply);
                if (r != 0)
                        return r;
        }
        return 0;
}

int verb_diff(int argc, char *argv[]) {
        json_auto_t *params = NULL, *reply = NULL;
        uint64_t page_size;
        int r;

        if (argc == 3)
                return heap_diff(argv[1], argv[2]);
        if (arg_processes.n > 0 || arg_keep_frames || arg_fold_frames.n > 0) {
                fprintf(stderr, "memstrackctl: --process, --keep-frames and --fold-frame go with diff A.json B.json, "
                        "two recordings.\nTry 'memstrackctl diff --help'.\n");
                return CTL_EXIT_USAGE;
        }

        params = json_pack("{s:s}", "name", argv[1]);
        if (!params)
                return -ENOMEM;
        if (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0)
                return -ENOMEM;
        r = ctl_query("io.memstrack.Diff", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        return print_diff(reply, page_size);
}
