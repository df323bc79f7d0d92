/* SPDX-License-Identifier: MIT */

/*
 * The replay source: events from a text file (--source-input=PATH), for tests and for reproducing what a
 * live source saw, with no kernel involved. It is never picked by "auto". One event per line, fields
 * separated by spaces, numbers decimal or 0x-hex; blank lines and lines starting with # are skipped:
 *
 *   task PID COMM [CMDLINE...]       a task alive before tracing (TASK_NEW, no baseline)
 *   fork PID PARENT                  PID forked from PARENT
 *   exit PID                         PID exited
 *   alloc PID PFN ORDER [FRAME...]   PID allocated 2^ORDER pages at PFN; kernel frames, innermost first
 *   free PFN ORDER                   the block at PFN was freed
 *   lost CPU N                       N records were lost on CPU
 *   sample PID DELTA PEAK [FRAME...] an aggregated sample: PID's pages through this chain changed by DELTA
 *                                    (negative with a leading -), having risen at most PEAK above where
 *                                    they stood (MsSampleEvent); both at most 2^52 (MS_PAGES_MAX)
 *   object PID PTR BYTES             PID allocated a BYTES-byte slab object at PTR (BYTES < 2^32)
 *   object-free PTR                  the object at PTR was freed
 *   cgroup ID                        the allocations below carry cgroup id ID (0, the start: none)
 *
 * The whole file is read and checked when the source is built, so a bad line fails the start with its
 * line number; start() delivers every event at once, stamped with the time of delivery. A number that
 * no source could send (more pages than a machine has, a loss beyond what a count holds) is such a bad
 * line; a pfn or an order the core cannot apply is not: the core counts it as an invalid event, as it
 * would a live source's.
 */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file-util.h"
#include "log.h"
#include "macro.h"
#include "read-file.h"
#include "source.h"
#include "stop-signal.h"
#include "time-util.h"

#define REPLAY_FILE_MAX (16u * 1024u * 1024u)
#define REPLAY_FIELDS_MAX 64u

typedef struct ReplaySource {
        EventSource source;             /* first, so the vtable's EventSource* is this */
        char *path;                     /* owned */
        char *text;                     /* owned: the file, NUL-terminated */
        size_t size;
        uint64_t records;
        uint64_t cgroup_id;             /* what the next allocations carry (a "cgroup" line sets it) */
} ReplaySource;

/* -EINVAL if s is not a number, -ERANGE if it is one above max. */
static int parse_number(const char *s, uint64_t max, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!(*s >= '0' && *s <= '9'))
                return -EINVAL;         /* strtoull() would take a sign and spaces */
        errno = 0;
        v = strtoull(s, &end, 0);
        if (*end != '\0')
                return -EINVAL;
        if (errno == ERANGE || v > max)
                return -ERANGE;
        if (errno != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* A number as parse_number() takes it, negative with a leading '-', at most max either way. */
static int parse_signed(const char *s, uint64_t max, int64_t *ret) {
        bool negative = *s == '-';
        uint64_t v;
        int r;

        assert(max <= INT64_MAX);
        r = parse_number(s + negative, max, &v);
        if (r < 0)
                return r;
        *ret = negative ? -(int64_t) v : (int64_t) v;
        return 0;
}

/* Parses one line, split into fields, into an event; delivers it to sink unless sink is NULL. -EBADMSG for
 * a line that is not an event, -ERANGE for a number no source could send, with what it is in *ret_why. */
static int replay_line(ReplaySource *s, char **f, size_t n, const MsEventSink *sink, const char **ret_why) {
        uint64_t frames[REPLAY_FIELDS_MAX], a = 0, b = 0, c = 0;
        char cmdline[4096] = "";
        MsEvent ev = { .timestamp_nsec = now_nsec(CLOCK_MONOTONIC) };
        const char *verb = f[0];
        int r = 0;

        if (streq(verb, "task") && n >= 3) {
                r = parse_number(f[1], INT32_MAX, &a);
                for (size_t i = 3, len = 0; i < n && len < sizeof(cmdline) - 1; i++) {
                        int k = snprintf(cmdline + len, sizeof(cmdline) - len, "%s%s", i > 3 ? " " : "", f[i]);

                        len += k > 0 ? (size_t) k : 0;
                }
                ev.type = MS_EVENT_TASK_NEW;
                ev.pid = ev.tid = (int32_t) a;
                ev.task.name = f[2];
                ev.task.cmdline = n > 3 ? cmdline : NULL;
        } else if (streq(verb, "fork") && n == 3) {
                r = parse_number(f[1], INT32_MAX, &a);
                if (r >= 0)
                        r = parse_number(f[2], INT32_MAX, &b);
                ev.type = MS_EVENT_TASK_FORK;
                ev.pid = ev.tid = (int32_t) a;
                ev.task.parent_pid = (int32_t) b;
        } else if (streq(verb, "exit") && n == 2) {
                r = parse_number(f[1], INT32_MAX, &a);
                ev.type = MS_EVENT_TASK_EXIT;
                ev.pid = ev.tid = (int32_t) a;
        } else if (streq(verb, "alloc") && n >= 4) {
                r = parse_number(f[1], INT32_MAX, &a);
                if (r >= 0)
                        r = parse_number(f[2], UINT64_MAX, &b);
                if (r >= 0)
                        r = parse_number(f[3], MS_EVENT_ORDER_MAX, &c);
                for (size_t i = 4; i < n && r >= 0; i++)
                        r = parse_number(f[i], UINT64_MAX, &frames[i - 4]);
                ev.type = MS_EVENT_PAGE_ALLOC;
                ev.pid = ev.tid = (int32_t) a;
                ev.page.pfn = b;
                ev.page.order = (uint32_t) c;
                ev.page.migrate_type = -1;
                ev.page.stack.frames = frames;
                ev.page.stack.n_frames = ev.page.stack.n_kernel_frames = (uint32_t) (n - 4);
                ev.cgroup_id = s->cgroup_id;
        } else if (streq(verb, "free") && n == 3) {
                r = parse_number(f[1], UINT64_MAX, &b);
                if (r >= 0)
                        r = parse_number(f[2], MS_EVENT_ORDER_MAX, &c);
                ev.type = MS_EVENT_PAGE_FREE;
                ev.page.pfn = b;
                ev.page.order = (uint32_t) c;
        } else if (streq(verb, "cgroup") && n == 2) {
                /* No event: state for the allocations that follow. */
                r = parse_number(f[1], UINT64_MAX, &a);
                if (r < 0)
                        return -EBADMSG;
                s->cgroup_id = a;
                return 0;
        } else if (streq(verb, "lost") && n == 3) {
                r = parse_number(f[1], SOURCE_MAX_CPUS - 1, &a);
                if (r >= 0) {
                        r = parse_number(f[2], COUNT_MAX, &b);
                        if (r == -ERANGE)
                                *ret_why = "more records lost than a count holds (2^63 - 1)";
                }
                ev.type = MS_EVENT_LOST;
                ev.cpu = (uint32_t) a;
                ev.lost.n_lost = b;
        } else if (streq(verb, "sample") && n >= 4) {
                int64_t delta = 0;

                r = parse_number(f[1], INT32_MAX, &a);
                if (r >= 0) {
                        r = parse_signed(f[2], MS_PAGES_MAX, &delta);
                        if (r == -ERANGE)
                                *ret_why = "the sample's delta is not a page count (more than 2^52 pages, "
                                           "all a 64-bit machine can have)";
                }
                if (r >= 0) {
                        r = parse_number(f[3], MS_PAGES_MAX, &c);
                        if (r == -ERANGE)
                                *ret_why = "the sample's peak is not a page count (more than 2^52 pages, "
                                           "all a 64-bit machine can have)";
                }
                for (size_t i = 4; i < n && r >= 0; i++)
                        r = parse_number(f[i], UINT64_MAX, &frames[i - 4]);
                ev.type = MS_EVENT_SAMPLE;
                ev.pid = ev.tid = (int32_t) a;
                ev.sample.unit = LEDGER_PAGES;
                ev.sample.delta = delta;
                ev.sample.peak = c;
                ev.sample.stack.frames = frames;
                ev.sample.stack.n_frames = ev.sample.stack.n_kernel_frames = (uint32_t) (n - 4);
        } else if (streq(verb, "object") && n == 4) {
                r = parse_number(f[1], INT32_MAX, &a);
                if (r >= 0)
                        r = parse_number(f[2], UINT64_MAX, &b);
                if (r >= 0) {
                        r = parse_number(f[3], UINT32_MAX, &c);
                        if (r == -ERANGE)
                                *ret_why = "more than 4 GiB in one slab object";
                }
                ev.type = MS_EVENT_OBJECT_ALLOC;
                ev.pid = ev.tid = (int32_t) a;
                ev.object.ptr = b;
                ev.object.bytes_requested = ev.object.bytes_allocated = c;
        } else if (streq(verb, "object-free") && n == 2) {
                r = parse_number(f[1], UINT64_MAX, &b);
                ev.type = MS_EVENT_OBJECT_FREE;
                ev.object.ptr = b;
        } else
                return -EBADMSG;
        if (r < 0)
                return *ret_why ? -ERANGE : -EBADMSG;

        if (sink) {
                s->records++;
                sink->event(sink->userdata, &ev);
        }
        return 0;
}

/* Goes through the file: checks every line, and delivers them if sink is not NULL. The text is
 * split in a copy, so the file can be gone through twice. */
static int replay_all(ReplaySource *s, const MsEventSink *sink) {
        _cleanup_free_ char *copy = NULL;
        unsigned line = 0;
        char *p, *next;

        copy = strdup(s->text);
        if (!copy)
                return log_oom();
        s->cgroup_id = 0;
        for (p = copy; p; p = next) {
                char *f[REPLAY_FIELDS_MAX + 4], *save = NULL, *tok;
                size_t n = 0;
                int r;

                next = strchr(p, '\n');
                if (next)
                        *next++ = '\0';
                line++;
                /* Up to millions of lines, outside the event loop: SIGTERM and SIGINT are looked at. */
                int sig = line % 65536 == 0 ? stop_signal_pending() : 0;
                if (sig != 0) {
                        log_notice("Stopped by SIG%s while reading the replay file %s.", sigabbrev_np(sig), s->path);
                        return -ECANCELED;
                }
                for (tok = strtok_r(p, " \t\r", &save); tok && n < ELEMENTSOF(f);
                     tok = strtok_r(NULL, " \t\r", &save))
                        f[n++] = tok;
                if (n == 0 || f[0][0] == '#')
                        continue;
                if (tok)
                        return log_error_errno(EBADMSG, "%s:%u: more than %zu fields.", s->path, line,
                                               ELEMENTSOF(f));
                const char *why = NULL;
                r = replay_line(s, f, n, sink, &why);
                if (r == -ERANGE)
                        return log_error_errno(r, "%s:%u: %s.", s->path, line, why);
                if (r < 0)
                        return log_error_errno(r, "%s:%u: not a replay event: '%s'.", s->path, line, f[0]);
        }
        return 0;
}

static ReplaySource *replay_source_free(ReplaySource *s) {
        if (!s)
                return NULL;
        free(s->text);
        free(s->path);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(ReplaySource *, replay_source_free);

static void replay_source_free_op(EventSource *es) {
        replay_source_free((ReplaySource *) es);
}

static int replay_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        ReplaySource *s = (ReplaySource *) es;
        int r;

        assert(s);
        assert(sink && sink->event);

        r = replay_all(s, sink);
        if (r < 0)
                return r;       /* logged; -ECANCELED when asked to stop */
        log_debug("Replayed %" PRIu64 " events from %s.", s->records, s->path);
        return 0;
}

static int replay_source_flush(EventSource *es) {
        return 0;       /* everything was delivered at start */
}

static void replay_source_get_stats(EventSource *es, EventSourceStats *ret) {
        ReplaySource *s = (ReplaySource *) es;

        *ret = (EventSourceStats) { .records = s->records };
}

static const EventSourceOps replay_source_ops = {
        .name = "replay",
        .start = replay_source_start,
        .flush = replay_source_flush,
        .get_stats = replay_source_get_stats,
        .free = replay_source_free_op,
};

static int replay_source_new(const SourceOptions *options, EventSource **ret) {
        _cleanup_(replay_source_freep) ReplaySource *s = NULL;
        int r;

        assert(options);
        assert(ret);

        if (!options->input)
                return log_error_errno(EINVAL, "The replay source reads its events from --source-input=PATH.");
        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->source.ops = &replay_source_ops;
        s->path = strdup(options->input);
        if (!s->path)
                return log_oom();
        r = read_file_full(s->path, REPLAY_FILE_MAX, &s->text, &s->size);
        if (r < 0)
                return log_error_errno(r, "Failed to read the replay file %s: %s", s->path, file_error_string(r));
        if (strlen(s->text) != s->size)
                return log_error_errno(EBADMSG, "The replay file %s is not text.", s->path);
        r = replay_all(s, NULL);
        if (r < 0)
                return r;
        *ret = &TAKE_PTR(s)->source;
        return 0;
}

const SourceType replay_source_type = {
        .name = "replay",
        .description = "events from the text file --source-input names (for tests)",
        .automatic = false,
        .new = replay_source_new,
};
