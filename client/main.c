/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl: the command line client of memstrackd. One getopt pass reads every option (global or
 * not, before or after the verb); then the verb table checks the verb, its argument count and that it
 * takes the options given, and runs its handler.
 */

#include <getopt.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "format.h"
#include "parse-util.h"
#include "macro.h"

const char *arg_address = NULL;
CtlJsonMode arg_json = CTL_JSON_OFF;
bool arg_pager = true;
bool arg_legend = true;
const char *arg_sort = NULL;
uint64_t arg_limit = 0;
bool arg_all = false;
int64_t arg_task = -1;
const char *arg_module = NULL;
int64_t arg_depth = -1;
bool arg_batch = false;
uint64_t arg_iterations = 0;
uint64_t arg_delay_usec = 1000000;
const char *arg_format = NULL;
unsigned arg_throttle = 100;
const char *arg_output = NULL;
const char *arg_from = NULL;
bool arg_boot = false;
const char *arg_file = NULL;
bool arg_offsets = false;
uint64_t arg_stacks = 0;
const char *arg_unit = NULL;
const char *arg_by = NULL;
int64_t arg_since_seconds = -1;
int64_t arg_min_age_seconds = -1;
int64_t arg_uid = -1;

/* Options that only some verbs take. */
typedef enum VerbOption {
        OPTION_SORT       = 1 << 0,
        OPTION_LIMIT      = 1 << 1,
        OPTION_ALL        = 1 << 2,
        OPTION_TASK       = 1 << 3,
        OPTION_MODULE     = 1 << 4,
        OPTION_DEPTH      = 1 << 5,
        OPTION_BATCH      = 1 << 6,
        OPTION_ITERATIONS = 1 << 7,
        OPTION_DELAY      = 1 << 8,
        OPTION_FORMAT     = 1 << 9,
        OPTION_THROTTLE   = 1 << 10,
        OPTION_OUTPUT     = 1 << 11,
        OPTION_FROM       = 1 << 12,
        OPTION_FILE       = 1 << 13,
        OPTION_OFFSETS    = 1 << 14,
        OPTION_STACKS     = 1 << 15,
        OPTION_UNIT       = 1 << 16,
        OPTION_BOOT       = 1 << 17,
        OPTION_BY         = 1 << 18,
        OPTION_SINCE      = 1 << 19,
        OPTION_MIN_AGE    = 1 << 20,
        OPTION_UID        = 1 << 21,
} VerbOption;

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args;    /* positional arguments after the verb */
        VerbOption options;
        int (*run)(int argc, char *argv[]);
} Verb;

static const Verb verbs[] = {
        { "status",   0, 0, 0, verb_status },
        { "tasks",    0, 0, OPTION_SORT | OPTION_LIMIT | OPTION_ALL, verb_tasks },
        { "modules",  0, 0, OPTION_SORT | OPTION_LIMIT, verb_modules },
        { "units",    0, 0, OPTION_SORT | OPTION_LIMIT | OPTION_ALL | OPTION_STACKS, verb_units },
        { "stacks",   0, 0, OPTION_TASK | OPTION_MODULE | OPTION_DEPTH | OPTION_SORT | OPTION_LIMIT, verb_stacks },
        { "top",      0, 0, OPTION_BATCH | OPTION_ITERATIONS | OPTION_DELAY | OPTION_SORT | OPTION_LIMIT |
                            OPTION_ALL, verb_top },
        { "reset",    0, 1, 0, verb_reset },
        { "snapshot", 0, 1, OPTION_FILE, verb_snapshot },
        { "snapshots", 0, 0, OPTION_ALL, verb_snapshots },
        { "delete-snapshot", 1, 64, OPTION_UID, verb_delete_snapshot },
        { "diff",     1, 1, OPTION_LIMIT, verb_diff },
        { "oom",      0, 0, 0, verb_oom },
        { "slab",     0, 0, OPTION_BY | OPTION_LIMIT, verb_slab },
        { "leaks",    0, 0, OPTION_MIN_AGE | OPTION_TASK | OPTION_LIMIT, verb_leaks },
        { "report",   0, 0, OPTION_FORMAT | OPTION_THROTTLE | OPTION_SORT | OPTION_TASK | OPTION_MODULE |
                            OPTION_OUTPUT | OPTION_FROM | OPTION_BOOT | OPTION_DEPTH | OPTION_OFFSETS, verb_report },
        { "pprof",    0, 0, OPTION_TASK | OPTION_UNIT | OPTION_MODULE | OPTION_OUTPUT | OPTION_FROM, verb_pprof },
        { "import",   1, 2, OPTION_FORMAT | OPTION_THROTTLE | OPTION_SORT | OPTION_TASK | OPTION_MODULE |
                            OPTION_OUTPUT | OPTION_DEPTH | OPTION_OFFSETS | OPTION_FILE, verb_import },
        { "footprint", 1, 4096, OPTION_BY | OPTION_DEPTH | OPTION_LIMIT, verb_footprint },
        { "history",  0, 0, OPTION_TASK | OPTION_UNIT | OPTION_MODULE | OPTION_SINCE, verb_history },
};

static void help(void) {
        printf("Usage: memstrackctl [OPTIONS] VERB [ARGS]\n\n"
               "Queries memstrackd, the page allocation tracer.\n\n"
               "Verbs:\n"
               "  status                     The daemon's health, totals and losses\n"
               "  tasks                      Tasks by pages held\n"
               "  modules                    Kernel modules by pages allocated through them\n"
               "  units                      systemd units by pages their tasks allocated\n"
               "  stacks                     The merged allocation call-stack tree\n"
               "  top                        Live view (ncurses; text with --batch or when piped)\n"
               "  reset [peaks|all]          Restart peaks, or all counters (root)\n"
               "  snapshot NAME              Save the counts in the daemon under NAME\n"
               "  snapshot --file FILE       Save everything needed for reports to FILE\n"
               "  snapshots                  List your snapshots saved in the daemon\n"
               "  delete-snapshot NAME...    Delete your snapshots NAME... from the daemon\n"
               "  diff NAME                  Compare now with the saved snapshot NAME\n"
               "  oom                        OOM kills and new peaks, with who held the memory\n"
               "  slab                       Live slab objects by call site, cache, task or unit\n"
               "  leaks                      Old live slab objects by call site, and their growth\n"
               "  report                     Reports as memstrack prints them\n"
               "  pprof --output FILE        The stack tree as a gzipped pprof profile\n"
               "  import page-owner [FILE|-] Reports (or --file: a snapshot file) of a page_owner log\n"
               "  footprint VMLINUX [KO...]  A built kernel's text/rodata/data/bss (no daemon)\n"
               "  history                    Current and peak pages over time\n\n"
               "Options:\n"
               "  -h --help                  Show this help\n"
               "     --version               Show the version\n"
               "     --address=ADDR          Daemon address (default $MEMSTRACK_ADDRESS, else\n"
               "                             unix:%s)\n"
               "     --json[=short|pretty]   Print the reply as JSON (pretty on a TTY by default)\n"
               "     --no-pager              Accepted; memstrackctl never pages\n"
               "     --no-legend             Tables without header and footer lines\n"
               "     --sort=KEY              current, peak (or allocs for tasks/top)\n"
               "     --limit=N               Entries to show (children per node for stacks)\n"
               "     --all                   tasks: include exited tasks and tasks holding nothing;\n"
               "                             top: include tasks holding nothing;\n"
               "                             units: include units holding nothing;\n"
               "                             snapshots: every user's (root)\n"
               "     --stacks=N              units: each unit's N biggest call stacks\n"
               "     --task=PID              stacks/report/pprof/history: one task only\n"
               "     --unit=NAME             pprof/history: one unit's tasks only\n"
               "     --module=NAME           stacks/report/pprof/history: stacks through one module only\n"
               "     --since=DURATION        history: only the last DURATION (90, 90s, 10m, 2h, 1d)\n"
               "     --min-age=DURATION      leaks: only objects at least this old (default 60s)\n"
               "     --depth=N               stacks/report: levels below the root; footprint: directory levels\n"
               "  -d --delay=SECONDS         top: refresh interval (default 1)\n"
               "  -n --iterations=N          top: stop after N refreshes\n"
               "     --batch                 top: text snapshots instead of the TUI (the default\n"
               "                             when standard output is not a terminal)\n"
               "     --format=LIST           report: task_summary,task_top,module_summary,module_top,\n"
               "                             unit_summary,unit_top,stack_tree,folded,flamegraph,\n"
               "                             task_top_json,proc_slab_static,slab_callsites,\n"
               "                             slab_caches,leaks\n"
               "                             (default module_summary,module_top); each takes\n"
               "                             :top=N, :throttle=PERCENT, :sort_by_alloc, :sort_by_peak\n"
               "     --throttle=PERCENT      report: only what makes up PERCENT of the pages\n"
               "     --output=FILE           report: write to FILE (a directory for several formats);\n"
               "                             pprof: the profile's file\n"
               "     --from=FILE             report/pprof: read a snapshot file instead of asking the daemon\n"
               "     --boot                  report: the boot phase, as memstrackd in the initramfs left it\n"
               "     --offsets               report: flame graph frames apart by offset, not merged\n"
               "     --file=FILE             snapshot, import: write a snapshot file\n"
               "     --uid=UID               delete-snapshot: that user's snapshots (root)\n"
               "     --by=KEY                footprint: directory (default), symbol or section;\n"
               "                             slab: callsite (default), cache, task or unit\n\n"
               "See memstrackctl(1).\n",
               MEMSTRACK_SOCKET_DEFAULT);
}

static int usage_error(const char *format, ...) _printf_(1, 2);
static int usage_error(const char *format, ...) {
        va_list ap;

        fputs("memstrackctl: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputs("\nTry 'memstrackctl --help'.\n", stderr);
        return CTL_EXIT_USAGE;
}

/* The option's name for messages, in VerbOption bit order. */
static const char *const option_names[] = {
        "--sort", "--limit", "--all", "--task", "--module", "--depth", "--batch", "--iterations",
        "--delay", "--format", "--throttle", "--output", "--from", "--file", "--offsets", "--stacks",
        "--unit", "--boot", "--by", "--since", "--min-age", "--uid",
};
/* One name per VerbOption bit, or a verb would take an option it was never checked for. */
_Static_assert(1u << (ELEMENTSOF(option_names) - 1) == OPTION_UID, "option_names and VerbOption differ");

/* Returns 0 to go on, a positive exit status to stop (help, version, usage error). */
static int parse_argv(int argc, char *argv[], VerbOption *ret_seen) {
        enum {
                ARG_VERSION = 0x100,
                ARG_ADDRESS,
                ARG_JSON,
                ARG_NO_PAGER,
                ARG_NO_LEGEND,
                ARG_SORT,
                ARG_LIMIT,
                ARG_ALL,
                ARG_TASK,
                ARG_MODULE,
                ARG_DEPTH,
                ARG_BATCH,
                ARG_FORMAT,
                ARG_THROTTLE,
                ARG_OUTPUT,
                ARG_FROM,
                ARG_FILE,
                ARG_OFFSETS,
                ARG_STACKS,
                ARG_UNIT,
                ARG_BOOT,
                ARG_BY,
                ARG_SINCE,
                ARG_MIN_AGE,
                ARG_UID,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "json", optional_argument, NULL, ARG_JSON },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "sort", required_argument, NULL, ARG_SORT },
                { "limit", required_argument, NULL, ARG_LIMIT },
                { "all", no_argument, NULL, ARG_ALL },
                { "task", required_argument, NULL, ARG_TASK },
                { "module", required_argument, NULL, ARG_MODULE },
                { "depth", required_argument, NULL, ARG_DEPTH },
                { "delay", required_argument, NULL, 'd' },
                { "iterations", required_argument, NULL, 'n' },
                { "batch", no_argument, NULL, ARG_BATCH },
                { "format", required_argument, NULL, ARG_FORMAT },
                { "throttle", required_argument, NULL, ARG_THROTTLE },
                { "output", required_argument, NULL, ARG_OUTPUT },
                { "from", required_argument, NULL, ARG_FROM },
                { "boot", no_argument, NULL, ARG_BOOT },
                { "file", required_argument, NULL, ARG_FILE },
                { "offsets", no_argument, NULL, ARG_OFFSETS },
                { "stacks", required_argument, NULL, ARG_STACKS },
                { "unit", required_argument, NULL, ARG_UNIT },
                { "by", required_argument, NULL, ARG_BY },
                { "since", required_argument, NULL, ARG_SINCE },
                { "min-age", required_argument, NULL, ARG_MIN_AGE },
                { "uid", required_argument, NULL, ARG_UID },
                {}
        };
        VerbOption seen = 0;
        uint64_t v;
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hd:n:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return -1;
                case ARG_VERSION:
                        printf("memstrackctl %s\n", PACKAGE_VERSION);
                        return -1;
                case ARG_ADDRESS:
                        arg_address = optarg;
                        break;
                case ARG_JSON:
                        if (!optarg)
                                arg_json = CTL_JSON_AUTO;
                        else if (streq(optarg, "short"))
                                arg_json = CTL_JSON_SHORT;
                        else if (streq(optarg, "pretty"))
                                arg_json = CTL_JSON_PRETTY;
                        else
                                return usage_error("--json takes short or pretty, not '%s'.", optarg);
                        break;
                case ARG_NO_PAGER:
                        arg_pager = false;
                        break;
                case ARG_NO_LEGEND:
                        arg_legend = false;
                        break;
                case ARG_SORT:
                        if (!streq(optarg, "current") && !streq(optarg, "peak") && !streq(optarg, "allocs"))
                                return usage_error("--sort takes current, peak or allocs, not '%s'.", optarg);
                        arg_sort = optarg;
                        seen |= OPTION_SORT;
                        break;
                case ARG_LIMIT:
                        if (parse_uint64(optarg, 1, 10000, &arg_limit) < 0)
                                return usage_error("--limit takes a number from 1 to 10000, not '%s'.", optarg);
                        seen |= OPTION_LIMIT;
                        break;
                case ARG_ALL:
                        arg_all = true;
                        seen |= OPTION_ALL;
                        break;
                case ARG_TASK:
                        if (parse_uint64(optarg, 0, INT32_MAX, &v) < 0)
                                return usage_error("--task takes a pid, not '%s'.", optarg);
                        arg_task = (int64_t) v;
                        seen |= OPTION_TASK;
                        break;
                case ARG_MODULE:
                        arg_module = optarg;
                        seen |= OPTION_MODULE;
                        break;
                case ARG_DEPTH:
                        if (parse_uint64(optarg, 0, 255, &v) < 0)
                                return usage_error("--depth takes a number from 0 to 255, not '%s'.", optarg);
                        arg_depth = (int64_t) v;
                        seen |= OPTION_DEPTH;
                        break;
                case 'd':
                        if (format_parse_seconds(optarg, &arg_delay_usec) < 0 || arg_delay_usec < 100000)
                                return usage_error("--delay takes seconds, at least 0.1, not '%s'.", optarg);
                        seen |= OPTION_DELAY;
                        break;
                case 'n':
                        if (parse_uint64(optarg, 1, UINT32_MAX, &arg_iterations) < 0)
                                return usage_error("--iterations takes a positive number, not '%s'.", optarg);
                        seen |= OPTION_ITERATIONS;
                        break;
                case ARG_BATCH:
                        arg_batch = true;
                        seen |= OPTION_BATCH;
                        break;
                case ARG_FORMAT:
                        arg_format = optarg;
                        seen |= OPTION_FORMAT;
                        break;
                case ARG_THROTTLE:
                        if (parse_uint64(optarg, 1, 100, &v) < 0)
                                return usage_error("--throttle takes a percentage from 1 to 100, not '%s'.", optarg);
                        arg_throttle = (unsigned) v;
                        seen |= OPTION_THROTTLE;
                        break;
                case ARG_OUTPUT:
                        arg_output = optarg;
                        seen |= OPTION_OUTPUT;
                        break;
                case ARG_FROM:
                        arg_from = optarg;
                        seen |= OPTION_FROM;
                        break;
                case ARG_BOOT:
                        arg_boot = true;
                        seen |= OPTION_BOOT;
                        break;
                case ARG_FILE:
                        arg_file = optarg;
                        seen |= OPTION_FILE;
                        break;
                case ARG_OFFSETS:
                        arg_offsets = true;
                        seen |= OPTION_OFFSETS;
                        break;
                case ARG_STACKS:
                        if (parse_uint64(optarg, 0, 100, &arg_stacks) < 0)
                                return usage_error("--stacks takes a number from 0 to 100, not '%s'.", optarg);
                        seen |= OPTION_STACKS;
                        break;
                case ARG_UNIT:
                        arg_unit = optarg;
                        seen |= OPTION_UNIT;
                        break;
                case ARG_BY:
                        arg_by = optarg;
                        seen |= OPTION_BY;
                        break;
                case ARG_SINCE:
                        if (history_parse_duration(optarg, &v) < 0)
                                return usage_error("--since takes a duration such as 90, 90s, 10m, 2h or 1d, not '%s'.",
                                                   optarg);
                        arg_since_seconds = (int64_t) v;
                        seen |= OPTION_SINCE;
                        break;
                case ARG_MIN_AGE:
                        if (history_parse_duration(optarg, &v) < 0)
                                return usage_error("--min-age takes a duration such as 90, 90s, 10m, 2h or 1d, not '%s'.",
                                                   optarg);
                        arg_min_age_seconds = (int64_t) v;
                        seen |= OPTION_MIN_AGE;
                        break;
                case ARG_UID:
                        if (parse_uint64(optarg, 0, UINT32_MAX - 1, &v) < 0)
                                return usage_error("--uid takes a user id, not '%s'.", optarg);
                        arg_uid = (int64_t) v;
                        seen |= OPTION_UID;
                        break;
                case ':':
                        return usage_error("Option '%s' needs an argument.", argv[optind - 1]);
                default:
                        return usage_error("Unknown option '%s'.", argv[optind - 1]);
                }

        *ret_seen = seen;
        return 0;
}

int main(int argc, char *argv[]) {
        VerbOption seen = 0;
        const Verb *verb = NULL;
        int r;

        /* For the TUI's wide characters; numbers stay in the C locale's format. */
        (void) setlocale(LC_CTYPE, "");

        r = parse_argv(argc, argv, &seen);
        if (r != 0)
                return r < 0 ? CTL_EXIT_SUCCESS : r;

        if (optind >= argc)
                return usage_error("Missing verb.");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[optind]))
                        verb = &verbs[i];
        if (!verb)
                return usage_error("Unknown verb '%s'.", argv[optind]);

        unsigned n_args = (unsigned) (argc - optind - 1);
        if (n_args < verb->min_args)
                return usage_error("Too few arguments for '%s'.", verb->name);
        if (n_args > verb->max_args)
                return usage_error("Too many arguments for '%s'.", verb->name);
        for (size_t i = 0; i < ELEMENTSOF(option_names); i++)
                if (seen & ~verb->options & (1u << i))
                        return usage_error("'%s' does not take %s.", verb->name, option_names[i]);
        if (arg_from && arg_boot)
                return usage_error("--from and --boot exclude each other.");
        if ((arg_task >= 0) + !!arg_module + !!arg_unit > 1)
                return usage_error("--task, --unit and --module exclude each other.");

        r = verb->run(argc - optind, argv + optind);
        if (r < 0) {
                fprintf(stderr, "memstrackctl %s failed: %s\n", verb->name, strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        return r;
}
