/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl: the command line client of memstrackd. Two tables say everything about its command
 * line: the verbs, and the options with the verbs that take each. cmdline.c makes of them the getopt
 * pass (every option, global or not, before or after the verb), the check that the verb takes the
 * options given, --help (overall and per verb) and the listing the shell completions are generated
 * from; then the verb's handler runs.
 *
 * A new option is one entry in options[] (and the arg_* it sets, in ctl.h).
 */

#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmdline.h"
#include "config.h"
#include "ctl.h"
#include "format.h"
#include "heap-abi.h"
#include "macro.h"
#include "report.h"

const char *arg_address = NULL;
CtlJsonMode arg_json = CTL_JSON_OFF;
bool arg_pager = true;
bool arg_legend = true;
const char *arg_sort = NULL;
uint64_t arg_limit = 0;
bool arg_all = false;
const char *arg_comm = NULL;
int64_t arg_task = -1;
const char *arg_module = NULL;
int64_t arg_depth = -1;
bool arg_batch = false;
uint64_t arg_iterations = 0;
uint64_t arg_delay_usec = 1000000;
const char *arg_format = NULL;
uint64_t arg_throttle = 100;
const char *arg_output = NULL;
const char *arg_from = NULL;
bool arg_boot = false;
const char *arg_file = NULL;
bool arg_offsets = false;
int64_t arg_stacks = -1;
const char *arg_unit = NULL;
const char *arg_by = NULL;
int64_t arg_since_seconds = -1;
int64_t arg_min_age_seconds = -1;
uint64_t arg_sample_interval = HEAP_SAMPLE_INTERVAL_DEFAULT;
int64_t arg_pid = -1;
bool arg_live = false;
uint64_t arg_seconds_usec = 0;
int64_t arg_uid = -1;
CmdlineStrings arg_processes = {};
uint64_t arg_min_share = REPORT_HEAP_MIN_SHARE_DEFAULT;
bool arg_keep_frames = false;
CmdlineStrings arg_fold_frames = {};
const char *arg_at = NULL;
const char *arg_between = NULL;
uint64_t arg_max_peak = UINT64_MAX;
uint64_t arg_max_leaked = UINT64_MAX;

/* What the options that stop the command line ask for; only main() reads them. */
static bool arg_help = false;
static bool arg_version = false;
static bool arg_list_options = false;
static bool arg_parse_only = false;

static const CmdlineVerb verbs[] = {
        { "status", NULL, "The daemon's health, totals and losses", 0, 0, verb_status },
        { "tasks", NULL, "Tasks by pages held", 0, 0, verb_tasks },
        { "modules", NULL, "Kernel modules by pages allocated through them", 0, 0, verb_modules },
        { "units", NULL, "systemd units by pages their tasks allocated", 0, 0, verb_units },
        { "stacks", NULL, "The merged allocation call-stack tree", 0, 0, verb_stacks },
        { "top", NULL, "Live view (ncurses; text with --batch or when piped)", 0, 0, verb_top },
        { "reset", "[peaks|all]", "Restart peaks, or all counters (root)", 0, 1, verb_reset },
        { "snapshot", "[NAME]", "Save the counts in the daemon under NAME (--file: all, to FILE)", 0, 1,
          verb_snapshot },
        { "snapshots", NULL, "List your snapshots saved in the daemon", 0, 0, verb_snapshots },
        { "delete-snapshot", "NAME...", "Delete your snapshots NAME... from the daemon", 1, 64,
          verb_delete_snapshot },
        { "diff", "NAME | A.json B.json", "Compare now with the saved snapshot NAME, or two heap recordings by "
          "call site", 1, 2, verb_diff },
        { "oom", NULL, "OOM kills and new peaks, with who held the memory", 0, 0, verb_oom },
        { "slab", NULL, "Live slab objects by call site, cache, task or unit", 0, 0, verb_slab },
        { "leaks", NULL, "Old live slab objects and pages, and their growth", 0, 0, verb_leaks },
        { "cold", NULL, "Pages hot, warm and cold by task, unit, module and stack", 0, 0, verb_cold },
        { "report", NULL, "Reports as memstrack prints them", 0, 0, verb_report },
        { "pprof", "--output FILE", "The stack tree as a gzipped pprof profile", 0, 0, verb_pprof },
        { "import", "page-owner [FILE|-]", "Reports (or --file: a snapshot) of a page_owner log", 1, 2,
          verb_import },
        { "footprint", "VMLINUX [KO...]", "A built kernel's text/rodata/data/bss (no daemon)", 1, 4096,
          verb_footprint },
        { "history", NULL, "Current and peak pages over time", 0, 0, verb_history },
        { "record", "-- COMMAND [ARGS...] | --pid PID", "Run COMMAND (or watch process PID) and report "
          "which malloc call sites held its heap", 0, 65536, verb_record },
        { "pages", "--by KEY", "Pages by allocation order, GFP flags, migrate type or node", 0, 0, verb_pages },
        { "explain", "UNIT", "A unit's memory as the kernel counts it, beside who holds it", 1, 1, verb_explain },
};

static int parse_json(const CmdlineOption *o, const char *value) {
        if (!value)
                arg_json = CTL_JSON_AUTO;
        else if (streq(value, "short"))
                arg_json = CTL_JSON_SHORT;
        else if (streq(value, "pretty"))
                arg_json = CTL_JSON_PRETTY;
        else
                return -EINVAL;
        return 0;
}

/* Seconds with a fraction into *(uint64_t *) target in microseconds, at least min. */
static int parse_seconds(const CmdlineOption *o, const char *value) {
        uint64_t usec;

        if (format_parse_seconds(value, &usec) < 0 || usec < o->min)
                return -EINVAL;
        *(uint64_t *) o->target = usec;
        return 0;
}

/* "90", "90s", "10m", "2h", "1d" into *(int64_t *) target in seconds. */
static int parse_duration(const CmdlineOption *o, const char *value) {
        uint64_t seconds;

        if (history_parse_duration(value, &seconds) < 0)
                return -EINVAL;
        *(int64_t *) o->target = (int64_t) seconds;
        return 0;
}

/* The report formats, from report/'s table. */
static const char *report_format_word(size_t i) {
        return report_format_name(report_format_get(i));
}

#define DURATIONS CMDLINE_WORDS("30s", "10m", "1h", "24h")

/*
 * Every option once, in --help's order. parts say which verbs take it (NULL: every verb) with the help
 * for them; words are what shells offer for the value (and what cmdline_set_word() accepts).
 */
static const CmdlineOption options[] = {
        {
                .name = "help", .short_name = 'h', .stops = true,
                .parse = cmdline_set_true, .target = &arg_help,
                .parts = { { .verbs = NULL, .help = "Show this help (after a verb: the verb's options)" } },
        }, {
                .name = "version", .stops = true,
                .parse = cmdline_set_true, .target = &arg_version,
                .parts = { { .verbs = NULL, .help = "Show the version" } },
        }, {
                .name = "list-options", .stops = true, .hidden = true,
                .parse = cmdline_set_true, .target = &arg_list_options,
                .parts = { { .verbs = NULL,
                             .help = "Print the verb and option tables as JSON, for the completions" } },
        }, {
                .name = "parse-only", .hidden = true,
                .parse = cmdline_set_true, .target = &arg_parse_only,
                .parts = { { .verbs = NULL,
                             .help = "Check the command line, then exit without running the verb" } },
        }, {
                .name = "address", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "ADDR",
                .completion = CMDLINE_COMPLETE_FILE,
                .parse = cmdline_set_string, .target = &arg_address,
                .parts = { { .verbs = NULL, .help = "Daemon address (default $MEMSTRACK_ADDRESS, else unix:"
                                   MEMSTRACK_SOCKET_DEFAULT ")" } },
        }, {
                .name = "json", .argument = CMDLINE_OPTIONAL_ARGUMENT, .metavar = "short|pretty",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = parse_json,
                .parts = { { .verbs = NULL, .help = "Print the reply as JSON (pretty on a TTY by default)",
                             .words = CMDLINE_WORDS("short", "pretty") } },
        }, {
                .name = "no-pager",
                .parse = cmdline_set_false, .target = &arg_pager,
                .parts = { { .verbs = NULL, .help = "Accepted; memstrackctl never pages" } },
        }, {
                .name = "no-legend",
                .parse = cmdline_set_false, .target = &arg_legend,
                .parts = { { .verbs = NULL, .help = "Tables without header and footer lines" } },
        }, {
                .name = "sort", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "KEY",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = cmdline_set_word, .target = &arg_sort,
                .parts = {
                        { .verbs = CMDLINE_WORDS("tasks", "top"), .help = "current, peak or allocs",
                          .words = CMDLINE_WORDS("current", "peak", "allocs") },
                        { .verbs = CMDLINE_WORDS("modules", "units", "stacks", "report", "import"),
                          .help = "current or peak",
                          .words = CMDLINE_WORDS("current", "peak") },
                },
        }, {
                .name = "limit", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "N",
                .parse = cmdline_set_uint64, .target = &arg_limit, .min = 1, .max = 10000,
                .expects = "a number from 1 to 10000",
                .parts = {
                        { .verbs = CMDLINE_WORDS("tasks", "modules", "units", "top", "diff", "slab", "leaks",
                                        "cold", "footprint"), .help = "entries to show" },
                        { .verbs = CMDLINE_WORDS("explain"), .help = "rows per list (default 10)" },
                        { .verbs = CMDLINE_WORDS("pages"), .help = "rows (the rest as [other])" },
                        { .verbs = CMDLINE_WORDS("stacks"), .help = "children per frame" },
                },
        }, {
                .name = "all",
                .parse = cmdline_set_true, .target = &arg_all,
                .parts = {
                        { .verbs = CMDLINE_WORDS("tasks"),
                          .help = "include exited tasks and tasks holding nothing" },
                        { .verbs = CMDLINE_WORDS("top"), .help = "include tasks holding nothing" },
                        { .verbs = CMDLINE_WORDS("units"), .help = "include units holding nothing" },
                        { .verbs = CMDLINE_WORDS("snapshots"),
                          .help = "every user's snapshots, with their owners (root)" },
                        { .verbs = CMDLINE_WORDS("record", "report"),
                          .help = "the full heap report of every process recorded, not only the command's "
                                  "and the biggest" },
                },
        }, {
                .name = "process", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "PID|COMM",
                .parse = cmdline_add_text, .target = &arg_processes,
                .expects = "a pid or a process name (at most 64 of them)",
                .parts = {
                        { .verbs = CMDLINE_WORDS("record", "report"),
                          .help = "full heap reports of these processes instead (again, or a comma list, for "
                                  "more)" },
                        { .verbs = CMDLINE_WORDS("diff"),
                          .help = "with two files: compare this process's heap (default: the command's)" },
                },
        }, {
                .name = "min-share", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "PERCENT",
                .parse = cmdline_set_uint64, .target = &arg_min_share, .min = 1, .max = 100,
                .expects = "a percentage from 1 to 100",
                .parts = { { .verbs = CMDLINE_WORDS("record", "report"),
                             .help = "full heap reports of the processes holding at least PERCENT of the "
                                     "total maximum (default 10), besides the command's" } },
        }, {
                .name = "keep-frames",
                .parse = cmdline_set_true, .target = &arg_keep_frames,
                .parts = { { .verbs = CMDLINE_WORDS("record", "report", "diff"),
                             .help = "heap call sites may be allocator wrappers (operator new, g_malloc, "
                                     "PyObject_Malloc, xmalloc...), not their callers" } },
        }, {
                .name = "fold-frame", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "FUNCTION",
                .parse = cmdline_add_text, .target = &arg_fold_frames,
                .expects = "a function name, * matching any characters (at most 64 of them)",
                .parts = { { .verbs = CMDLINE_WORDS("record", "report", "diff"),
                             .help = "a heap call site is never FUNCTION, an allocator wrapper of the "
                                     "program's own, but its caller (again for more)" } },
        }, {
                .name = "at", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "SECONDS|max",
                .parse = cmdline_set_string, .target = &arg_at, .exclusive = "heap-time",
                .parts = { { .verbs = CMDLINE_WORDS("report"),
                             .help = "with --from a record file: each heap as it stood SECONDS after its "
                                     "start (from its timeline), or at its maximum" } },
        }, {
                .name = "between", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "FROM,TO",
                .parse = cmdline_set_string, .target = &arg_between, .exclusive = "heap-time",
                .parts = { { .verbs = CMDLINE_WORDS("report"),
                             .help = "with --from a record file: what each heap allocated and freed from "
                                     "FROM to TO seconds after its start, by call site" } },
        }, {
                .name = "comm", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "NAME",
                .parse = cmdline_set_text, .target = &arg_comm,
                .expects = "a name in UTF-8 (other bytes as \\xNN, as memstrackctl shows them)",
                .parts = { { .verbs = CMDLINE_WORDS("tasks"),
                             .help = "only tasks named NAME, as the COMM column shows it" } },
        }, {
                .name = "stacks", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "N",
                .parse = cmdline_set_int64, .target = &arg_stacks, .min = 0, .max = 100,
                .expects = "a number from 0 to 100",
                .parts = {
                        { .verbs = CMDLINE_WORDS("units"), .help = "each unit's N biggest call stacks" },
                        { .verbs = CMDLINE_WORDS("explain"), .help = "N biggest call stacks per holder (default 5)" },
                },
        }, {
                .name = "uid", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "UID",
                .parse = cmdline_set_int64, .target = &arg_uid, .min = 0, .max = UINT32_MAX - 1,
                .expects = "a uid",
                .parts = { { .verbs = CMDLINE_WORDS("delete-snapshot"),
                             .help = "another user's snapshots (root)" } },
        }, {
                .name = "task", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "PID",
                .completion = CMDLINE_COMPLETE_PID, .exclusive = "scope",
                .parse = cmdline_set_int64, .target = &arg_task, .min = 0, .max = INT32_MAX,
                .expects = "a pid",
                .parts = { { .verbs = CMDLINE_WORDS("stacks", "leaks", "report", "pprof", "import", "history", "record",
                                                    "pages"),
                             .help = "one task only" } },
        }, {
                .name = "unit", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "NAME",
                .completion = CMDLINE_COMPLETE_UNIT, .exclusive = "scope",
                .parse = cmdline_set_text, .target = &arg_unit,
                .expects = "a name in UTF-8 (other bytes as \\xNN, as memstrackctl shows them)",
                .parts = { { .verbs = CMDLINE_WORDS("pprof", "history", "pages"), .help = "one unit's tasks only" } },
        }, {
                .name = "module", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "NAME",
                .completion = CMDLINE_COMPLETE_MODULE, .exclusive = "scope",
                .parse = cmdline_set_text, .target = &arg_module,
                .expects = "a name in UTF-8 (other bytes as \\xNN, as memstrackctl shows them)",
                .parts = { { .verbs = CMDLINE_WORDS("stacks", "report", "pprof", "import", "history", "pages"),
                             .help = "stacks through one module only" } },
        }, {
                .name = "since", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "DURATION",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = parse_duration, .target = &arg_since_seconds,
                .expects = "a duration such as 90, 90s, 10m, 2h or 1d",
                .parts = { { .verbs = CMDLINE_WORDS("history"),
                             .help = "only the last DURATION (90, 90s, 10m, 2h, 1d)",
                             .words = DURATIONS } },
        }, {
                .name = "min-age", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "DURATION",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = parse_duration, .target = &arg_min_age_seconds,
                .expects = "a duration such as 90, 90s, 10m, 2h or 1d",
                .parts = { { .verbs = CMDLINE_WORDS("leaks"),
                             .help = "only objects and pages at least this old (default 60s)",
                             .words = DURATIONS } },
        }, {
                .name = "depth", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "N",
                .parse = cmdline_set_int64, .target = &arg_depth, .min = 0, .max = 255,
                .expects = "a number from 0 to 255",
                .parts = {
                        { .verbs = CMDLINE_WORDS("stacks", "report", "import", "record"),
                          .help = "levels below the root" },
                        { .verbs = CMDLINE_WORDS("footprint"), .help = "directory levels" },
                },
        }, {
                .name = "delay", .short_name = 'd',
                .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "SECONDS",
                .parse = parse_seconds, .target = &arg_delay_usec, .min = 100000,
                .expects = "seconds, at least 0.1",
                .parts = { { .verbs = CMDLINE_WORDS("top"), .help = "refresh interval (default 1)" } },
        }, {
                .name = "iterations", .short_name = 'n',
                .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "N",
                .parse = cmdline_set_uint64, .target = &arg_iterations, .min = 1, .max = UINT32_MAX,
                .expects = "a positive number",
                .parts = { { .verbs = CMDLINE_WORDS("top"), .help = "stop after N refreshes" } },
        }, {
                .name = "batch",
                .parse = cmdline_set_true, .target = &arg_batch,
                .parts = { { .verbs = CMDLINE_WORDS("top"),
                             .help = "text snapshots instead of the TUI (the default when "
                                                   "standard output is not a terminal)" } },
        }, {
                /* "import" first, so --help reads "import/report: FORMAT,..." ("report:" before the list) */
                .name = "format", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "LIST",
                .completion = CMDLINE_COMPLETE_WORD_LIST,
                .parse = cmdline_set_string, .target = &arg_format,
                .parts = { { .verbs = CMDLINE_WORDS("import", "report"),
                             .help = "(default module_summary,module_top; a heap record saved: record's own); "
                             "each takes :top=N, :throttle=PERCENT, "
                             ":sort_by_alloc, :sort_by_peak", .word_at = report_format_word },
                           { .verbs = CMDLINE_WORDS("history"), .help = "text (default), or svg: a chart",
                             .words = CMDLINE_WORDS("text", "svg") },
                           { .verbs = CMDLINE_WORDS("record"), .help = "(default heap_maximum,heap_leaks, after "
                             "heap_processes when the command ran several processes); any report format",
                             .word_at = report_format_word } },
        }, {
                .name = "throttle", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "PERCENT",
                .parse = cmdline_set_uint64, .target = &arg_throttle, .min = 1, .max = 100,
                .expects = "a percentage from 1 to 100",
                .parts = { { .verbs = CMDLINE_WORDS("report", "import"),
                             .help = "only what makes up PERCENT of the pages" },
                           { .verbs = CMDLINE_WORDS("record"),
                             .help = "only the children making up PERCENT of each frame's bytes" } },
        }, {
                .name = "output", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "FILE",
                .completion = CMDLINE_COMPLETE_FILE,
                .parse = cmdline_set_string, .target = &arg_output,
                .parts = {
                        { .verbs = CMDLINE_WORDS("report", "import", "record"),
                          .help = "write to FILE (a directory for several formats)" },
                        { .verbs = CMDLINE_WORDS("pprof"), .help = "the profile's file" },
                        { .verbs = CMDLINE_WORDS("history"), .help = "write to FILE instead of standard output" },
                },
        }, {
                .name = "from", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "FILE",
                .completion = CMDLINE_COMPLETE_FILE, .exclusive = "source",
                .parse = cmdline_set_string, .target = &arg_from,
                .parts = { { .verbs = CMDLINE_WORDS("report", "pprof"),
                             .help = "read a snapshot file instead of asking the daemon" } },
        }, {
                .name = "boot", .exclusive = "source",
                .parse = cmdline_set_true, .target = &arg_boot,
                .parts = { { .verbs = CMDLINE_WORDS("report"),
                             .help = "the boot phase, as memstrackd in the initramfs left it" } },
        }, {
                .name = "offsets",
                .parse = cmdline_set_true, .target = &arg_offsets,
                .parts = { { .verbs = CMDLINE_WORDS("report", "import"),
                             .help = "flame graph frames apart by offset, not merged" } },
        }, {
                .name = "file", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "FILE",
                .completion = CMDLINE_COMPLETE_FILE,
                .parse = cmdline_set_string, .target = &arg_file,
                .parts = { { .verbs = CMDLINE_WORDS("snapshot", "import", "record"),
                             .help = "write a snapshot file" } },
        }, {
                .name = "sample-interval", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "BYTES",
                .parse = cmdline_set_uint64, .target = &arg_sample_interval, .min = 1,
                .max = HEAP_SAMPLE_INTERVAL_MAX, .expects = "a number of bytes from 1 to 1099511627776",
                .parts = { { .verbs = CMDLINE_WORDS("record"), .help = "a stack per BYTES allocated on average "
                             "(default 524288, 512 KiB); 1: every call's" } },
        }, {
                .name = "pid", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "PID",
                .completion = CMDLINE_COMPLETE_PID,
                .parse = cmdline_set_int64, .target = &arg_pid, .min = 1, .max = INT32_MAX,
                .expects = "a pid",
                .parts = { { .verbs = CMDLINE_WORDS("record"), .help = "the running process PID instead of a "
                             "command, through eBPF uprobes on its allocator (root)" } },
        }, {
                .name = "live",
                .parse = cmdline_set_true, .target = &arg_live,
                .parts = { { .verbs = CMDLINE_WORDS("record"), .help = "into the system's memstrackd (--address), "
                             "when it takes heaps: the heap shows beside the process's pages" } },
        }, {
                .name = "seconds", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "SECONDS",
                .parse = parse_seconds, .target = &arg_seconds_usec, .min = 100000,
                .expects = "seconds, at least 0.1",
                .parts = { { .verbs = CMDLINE_WORDS("record"), .help = "with --pid: stop after SECONDS (default: "
                             "at Ctrl-C or when the process exits)" } },
        }, {
                .name = "max-peak", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "SIZE",
                .parse = cmdline_set_size, .target = &arg_max_peak, .max = UINT64_C(1) << 50,
                .expects = "a size such as 4096, 512K, 10M or 2GiB",
                .parts = { { .verbs = CMDLINE_WORDS("record"),
                             .help = "exit with status 7 (the command's own if it failed) when the command's "
                                     "heap peaked above SIZE, naming its biggest call sites" } },
        }, {
                .name = "max-leaked", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "SIZE",
                .parse = cmdline_set_size, .target = &arg_max_leaked, .max = UINT64_C(1) << 50,
                .expects = "a size such as 0, 4096, 512K or 10M",
                .parts = { { .verbs = CMDLINE_WORDS("record"),
                             .help = "the same when the command's heap left more than SIZE never freed" } },
        }, {
                .name = "by", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "KEY",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = cmdline_set_string, .target = &arg_by,
                .parts = {
                        { .verbs = CMDLINE_WORDS("footprint"),
                          .help = "directory (default), symbol or section",
                          .words = CMDLINE_WORDS("directory", "symbol", "section") },
                        { .verbs = CMDLINE_WORDS("slab"), .help = "callsite (default), cache, task or unit",
                          .words = CMDLINE_WORDS("callsite", "cache", "task", "unit") },
                        { .verbs = CMDLINE_WORDS("pages"), .help = "order, gfp, migratetype or node",
                          .words = CMDLINE_WORDS("order", "gfp", "migratetype", "node") },
                },
        },
};

static const Cmdline cmdline = {
        .program = "memstrackctl",
        .description = "Queries memstrackd, the page allocation tracer.",
        .verbs = verbs,
        .n_verbs = ELEMENTSOF(verbs),
        .options = options,
        .n_options = ELEMENTSOF(options),
};

int main(int argc, char *argv[]) {
        const CmdlineOption *stop = NULL;
        const CmdlineVerb *verb = NULL;
        int r;

        /* For the TUI's wide characters; numbers stay in the C locale's format. */
        (void) setlocale(LC_CTYPE, "");

        r = cmdline_parse(&cmdline, argc, argv, &stop, &verb);
        if (r < 0) {
                fprintf(stderr, "memstrackctl: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        if (r > 0)
                return r;

        if (stop) {
                if (arg_version) {
                        printf("memstrackctl %s\n", PACKAGE_VERSION);
                        return CTL_EXIT_SUCCESS;
                }
                r = arg_list_options ? cmdline_list(&cmdline, stdout) : cmdline_help(&cmdline, verb, stdout);
                return r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_SUCCESS;
        }
        if (arg_parse_only)
                return CTL_EXIT_SUCCESS;

        r = verb->run(argc - optind, argv + optind);
        if (r < 0) {
                fprintf(stderr, "memstrackctl %s failed: %s\n", verb->name, strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        return r;
}
