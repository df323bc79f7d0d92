/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What memstrackctl's verbs share: the parsed command line (arg_* globals, set once by main.c before a
 * verb runs) and the exit statuses.
 *
 * Verb handlers return 0 on success; a positive CTL_EXIT_* value when they have already told the user
 * what went wrong; or -errno for a failure nobody reported yet, which main() prints and turns into
 * CTL_EXIT_FAILURE (as systemctl's verbs do).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "cmdline.h"

typedef enum CtlExit {
        CTL_EXIT_SUCCESS = 0,
        CTL_EXIT_FAILURE = 1,           /* the daemon answered with an error, or a local failure */
        CTL_EXIT_USAGE = 2,             /* bad command line */
        CTL_EXIT_NOT_RUNNING = 3,       /* no daemon at the address */
        CTL_EXIT_PERMISSION = 4,        /* the socket or the daemon refused us */
        CTL_EXIT_PROTOCOL = 5,          /* malformed, oversized or missing reply */
        CTL_EXIT_BUSY = 6,              /* the daemon had no connection slot for us (TooManyConnections) */
        CTL_EXIT_LIMIT = 7,             /* record: the command's heap passed --max-peak or --max-leaked */
} CtlExit;

typedef enum CtlJsonMode {
        CTL_JSON_OFF,
        CTL_JSON_AUTO,                  /* pretty on a TTY, short otherwise */
        CTL_JSON_SHORT,
        CTL_JSON_PRETTY,
        _CTL_JSON_MODE_MAX,
        _CTL_JSON_MODE_INVALID = -EINVAL,
} CtlJsonMode;

/* Global options. */
extern const char *arg_address;         /* NULL: $MEMSTRACK_ADDRESS, else MEMSTRACK_SOCKET_DEFAULT */
extern CtlJsonMode arg_json;
extern bool arg_pager;                  /* accepted for compatibility; memstrackctl never pages */
extern bool arg_legend;                 /* header and footer lines of tables (--no-legend: false) */

/* Verb options; each says in main.c's option table which verbs take it. */
extern const char *arg_sort;            /* NULL: the verb's default */
extern uint64_t arg_limit;              /* 0: the verb's default */
extern bool arg_all;
extern const char *arg_comm;            /* tasks: only tasks of this comm, as encoded in replies (NULL: all) */
extern int64_t arg_task;                /* -1: none */
extern const char *arg_module;
extern int64_t arg_depth;               /* -1: the verb's default */
extern bool arg_batch;
extern uint64_t arg_iterations;         /* 0: forever */
extern uint64_t arg_delay_usec;
extern const char *arg_format;
extern uint64_t arg_throttle;           /* percent, 1..100 */
extern const char *arg_output;
extern const char *arg_from;
extern bool arg_boot;
extern const char *arg_file;
extern bool arg_offsets;                /* report: flame graph frames by offset, not by function */
extern int64_t arg_stacks;              /* units: stacks per unit; explain: per list; -1: the verb's default */
extern const char *arg_unit;            /* pprof, history: one unit (NULL: none) */
extern const char *arg_by;              /* footprint: directory, symbol or section (NULL: directory) */
extern int64_t arg_since_seconds;       /* history: how far back, -1: all kept */
extern int64_t arg_min_age_seconds;     /* leaks: the youngest object shown, -1: the daemon's default */
extern uint64_t arg_sample_interval;    /* record: bytes per sampled stack, 1: every call */
extern int64_t arg_pid;                 /* record: the running process to watch, -1: none (run a command) */
extern bool arg_live;                   /* record: into the system's memstrackd, not a private one */
extern uint64_t arg_seconds_usec;       /* record --pid: how long, 0: until Ctrl-C or its exit */
extern int64_t arg_uid;                 /* delete-snapshot: whose snapshots (root), -1: the caller's own */
extern CmdlineStrings arg_processes;    /* record, report, diff: heaps by PID or COMM, each maybe a comma list */
extern uint64_t arg_min_share;          /* record, report: percent of the total maximum for a full report */
extern bool arg_keep_frames;            /* record, report, diff: allocator wrappers may be call sites */
extern const char *arg_at;              /* report: a recorded heap at SECONDS after its start, or "max" */
extern const char *arg_between;         /* report: what a recorded heap did from FROM to TO seconds */
extern CmdlineStrings arg_fold_frames;  /* record, report, diff: more wrappers, by function name */
extern uint64_t arg_max_peak;           /* record: bytes the command's heap may peak at (UINT64_MAX: any) */
extern uint64_t arg_max_leaked;         /* record: bytes it may leave never freed (UINT64_MAX: any) */

/* The verbs (argv[0] is the verb, then its positional arguments). */
int verb_status(int argc, char *argv[]);
int verb_reset(int argc, char *argv[]);
int verb_tasks(int argc, char *argv[]);
int verb_modules(int argc, char *argv[]);
int verb_units(int argc, char *argv[]);
int verb_oom(int argc, char *argv[]);
int verb_slab(int argc, char *argv[]);
int verb_leaks(int argc, char *argv[]);
int verb_cold(int argc, char *argv[]);
int verb_stacks(int argc, char *argv[]);
int verb_snapshot(int argc, char *argv[]);
int verb_diff(int argc, char *argv[]);
int verb_snapshots(int argc, char *argv[]);
int verb_delete_snapshot(int argc, char *argv[]);
int verb_report(int argc, char *argv[]);
int verb_import(int argc, char *argv[]);
int verb_top(int argc, char *argv[]);
int verb_pprof(int argc, char *argv[]);
int verb_footprint(int argc, char *argv[]);
int verb_history(int argc, char *argv[]);
int verb_explain(int argc, char *argv[]);
int verb_pages(int argc, char *argv[]);
int verb_record(int argc, char *argv[]);

/* What record shows of a heap, and report of a document record saved, unless --format says otherwise;
 * a recording of several processes gets the table of them first (ctl_heap_default_formats()). */
#define CTL_HEAP_FORMAT_DEFAULT "heap_maximum,heap_leaks,heap_lifetimes"
#define CTL_HEAP_FORMAT_PROCESSES "heap_processes," CTL_HEAP_FORMAT_DEFAULT

/* report's options from the command line (its --format, else default_formats), checked for usage before
 * anything is asked: 0, CTL_EXIT_USAGE (said), -ENOMEM. */
typedef struct ReportOptions ReportOptions;
int ctl_report_options(const char *default_formats, ReportOptions *ret);
/* Renders doc's reports where --output and --json say (standard output, a file, a directory). */
typedef struct json_t json_t;
int ctl_report_write(json_t *doc, const ReportOptions *o);
/* The heap options of the command line (--all, --process, --min-share, --keep-frames, --fold-frame) into o. */
void ctl_heap_options(ReportOptions *o);
/* diff A.json B.json: two recordings of record --file compared by call site (heap-diff.c); verb_diff()
 * hands over when given two files. 0 or a CtlExit said, -ENOMEM. */
int heap_diff(const char *path_a, const char *path_b);
/* The default formats of a recorded heap's document: CTL_HEAP_FORMAT_PROCESSES when it holds several
 * heaps, else CTL_HEAP_FORMAT_DEFAULT. */
const char *ctl_heap_default_formats(json_t *doc);
/* o for a document of heaps (recording: record's own, else when report_doc_stacks_are_heaps()): record's
 * default formats unless --format, and each word of --process checked against its heaps. 0, or a CtlExit
 * said (a word that names no heap: CTL_EXIT_FAILURE). */
int ctl_heap_report_options(json_t *doc, bool recording, ReportOptions *o);
/* "90", "90s", "10m", "2h", "1d" into seconds. -EINVAL, -ERANGE. */
int history_parse_duration(const char *s, uint64_t *ret_seconds);
