/* SPDX-License-Identifier: MIT */

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "bootphase.h"
#include "config-file.h"
#include "config.h"
#include "file-util.h"
#include "heap-abi.h"
#include "log.h"
#include "manager.h"
#include "pressure-watch.h"
#include "parse-util.h"
#include "report.h"
#include "system-memory.h"
#include "time-util.h"

static const char *arg_source = NULL;  /* NULL: auto */
static SourceOptions arg_source_options;
static bool arg_buffer_pages_set = false;      /* else the default, which --slab raises */
static AccountingConfig arg_accounting;
/* The core's memory budget as given: a size or a share of the RAM, resolved at start (memory_budget()). */
#define MAX_MEMORY_DEFAULT "10%"
static const char *arg_max_memory = MAX_MEMORY_DEFAULT;
static const char *arg_kallsyms = NULL;
static const char *arg_cgroup_root = NULL;
static const char *arg_memcg_root = NULL;
static const char *arg_zoneinfo = NULL;
static unsigned arg_pressure_margin = PRESSURE_MARGIN_PERCENT_DEFAULT;
static const char *arg_pressure_trigger = PRESSURE_TRIGGER_DEFAULT;
static uint64_t arg_pressure_interval_usec = PRESSURE_INTERVAL_USEC_DEFAULT;
static const char *arg_state_directory = NULL;  /* NULL: $STATE_DIRECTORY; "": no persistence */
static const char *arg_heap_socket = NULL;      /* the heap source beside the kernel's; NULL: none */
static const char *arg_socket = NULL;
static const char *arg_boot_snapshot = NULL;
static const char *arg_group = NULL;
static bool arg_serve = true;
static bool arg_foreground = false;
static const char *arg_config = NULL;   /* NULL: MEMSTRACK_CONFIG_FILE, which may be missing */
/* Client deadlines in usec; 0: the varlink server's defaults (5 s, 10 s, 5 min, 30 s). */
static uint64_t arg_first_message_timeout_usec = 0;
static uint64_t arg_request_timeout_usec = 0;
static uint64_t arg_idle_timeout_usec = 0;
static uint64_t arg_output_timeout_usec = 0;
static const char *arg_report = NULL;   /* memstrack's report list, written at exit */
static const char *arg_output = NULL;   /* the report's file; NULL: standard output */
static ReportOptions arg_report_options; /* arg_report parsed (parse_report()) */
static AccessConfig arg_access;         /* cold memory: the access source, thresholds, rounds */

enum {
        _ARG_FIRST = 0x100,
        ARG_VERSION = _ARG_FIRST,
        ARG_CONFIG,
        ARG_FOREGROUND,
        ARG_LOG_LEVEL,
        ARG_SOURCE,
        ARG_SOURCE_INPUT,
        ARG_DEPTH,
        ARG_USER_STACKS,
        ARG_SLAB,
        ARG_BUFFER_PAGES,
        ARG_WAKEUP_BYTES,
        ARG_STACK_SAMPLE_INTERVAL,
        ARG_HEAP_SAMPLE_INTERVAL,
        ARG_NESTED_ALLOCATIONS,
        ARG_BTF,
        ARG_KALLSYMS,
        ARG_CGROUP_ROOT,
        ARG_MEMCG_ROOT,
        ARG_ZONEINFO,
        ARG_PRESSURE_MARGIN,
        ARG_PRESSURE_TRIGGER,
        ARG_PRESSURE_INTERVAL,
        ARG_STATE_DIRECTORY,
        ARG_HEAP_SOCKET,
        ARG_TRACEFS,
        ARG_SOCKET,
        ARG_BOOT_SNAPSHOT,
        ARG_GROUP,
        ARG_NO_SOCKET,
        ARG_THREADS,
        ARG_PER_PROCESS_STACKS,
        ARG_MAX_STACK_NODES,
        ARG_MAX_EXITED,
        ARG_MAX_MEMORY,
        ARG_FIRST_MESSAGE_TIMEOUT,
        ARG_REQUEST_TIMEOUT,
        ARG_IDLE_TIMEOUT,
        ARG_OUTPUT_TIMEOUT,
        ARG_REPORT,
        ARG_OUTPUT,
        ARG_ACCESS,
        ARG_ACCESS_INTERVAL,
        ARG_WARM_AFTER,
        ARG_COLD_AFTER,
        ARG_DAMON_SAMPLE_INTERVAL,
        ARG_DAMON_AGGREGATION_INTERVAL,
        ARG_KPAGEFLAGS_BUDGET,
        _ARG_MAX,
};

/* The long options double as the keys of the configuration file (except help, version and config). */
static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "config", required_argument, NULL, ARG_CONFIG },
        { "foreground", no_argument, NULL, ARG_FOREGROUND },
        { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
        { "source", required_argument, NULL, ARG_SOURCE },
        { "source-input", required_argument, NULL, ARG_SOURCE_INPUT },
        { "callchain-depth", required_argument, NULL, ARG_DEPTH },
        { "user-stacks", no_argument, NULL, ARG_USER_STACKS },
        { "slab", no_argument, NULL, ARG_SLAB },
        { "buffer-pages", required_argument, NULL, ARG_BUFFER_PAGES },
        { "wakeup-bytes", required_argument, NULL, ARG_WAKEUP_BYTES },
        { "stack-sample-interval", required_argument, NULL, ARG_STACK_SAMPLE_INTERVAL },
        { "heap-sample-interval", required_argument, NULL, ARG_HEAP_SAMPLE_INTERVAL },
        { "nested-allocations", required_argument, NULL, ARG_NESTED_ALLOCATIONS },
        { "btf", required_argument, NULL, ARG_BTF },
        { "kallsyms", required_argument, NULL, ARG_KALLSYMS },
        { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
        { "memcg-root", required_argument, NULL, ARG_MEMCG_ROOT },
        { "zoneinfo", required_argument, NULL, ARG_ZONEINFO },
        { "pressure-margin", required_argument, NULL, ARG_PRESSURE_MARGIN },
        { "pressure-trigger", required_argument, NULL, ARG_PRESSURE_TRIGGER },
        { "pressure-interval", required_argument, NULL, ARG_PRESSURE_INTERVAL },
        { "state-directory", required_argument, NULL, ARG_STATE_DIRECTORY },
        { "heap-socket", required_argument, NULL, ARG_HEAP_SOCKET },
        { "tracefs", required_argument, NULL, ARG_TRACEFS },
        { "socket", required_argument, NULL, ARG_SOCKET },
        { "boot-snapshot", required_argument, NULL, ARG_BOOT_SNAPSHOT },
        { "group", required_argument, NULL, ARG_GROUP },
        { "no-socket", no_argument, NULL, ARG_NO_SOCKET },
        { "threads", no_argument, NULL, ARG_THREADS },
        { "per-process-stacks", no_argument, NULL, ARG_PER_PROCESS_STACKS },
        { "max-stack-nodes", required_argument, NULL, ARG_MAX_STACK_NODES },
        { "max-exited-tasks", required_argument, NULL, ARG_MAX_EXITED },
        { "max-memory", required_argument, NULL, ARG_MAX_MEMORY },
        { "first-message-timeout", required_argument, NULL, ARG_FIRST_MESSAGE_TIMEOUT },
        { "request-timeout", required_argument, NULL, ARG_REQUEST_TIMEOUT },
        { "idle-timeout", required_argument, NULL, ARG_IDLE_TIMEOUT },
        { "output-timeout", required_argument, NULL, ARG_OUTPUT_TIMEOUT },
        { "report", required_argument, NULL, ARG_REPORT },
        { "output", required_argument, NULL, ARG_OUTPUT },
        { "access", required_argument, NULL, ARG_ACCESS },
        { "access-interval", required_argument, NULL, ARG_ACCESS_INTERVAL },
        { "warm-after", required_argument, NULL, ARG_WARM_AFTER },
        { "cold-after", required_argument, NULL, ARG_COLD_AFTER },
        { "damon-sample-interval", required_argument, NULL, ARG_DAMON_SAMPLE_INTERVAL },
        { "damon-aggregation-interval", required_argument, NULL, ARG_DAMON_AGGREGATION_INTERVAL },
        { "kpageflags-budget", required_argument, NULL, ARG_KPAGEFLAGS_BUDGET },
        {}
};

/* Options given on the command line, indexed by option - _ARG_FIRST: the configuration file does not
 * override them. */
static bool arg_from_cmdline[_ARG_MAX - _ARG_FIRST];
/* The configuration file's values live in these strings until exit: arg_* keep pointers into them. */
static char **arg_config_strings = NULL;
static size_t arg_n_config_strings = 0;

static void help(void) {
        printf("Usage: memstrackd [OPTIONS]\n\n"
               "Traces page allocations in the kernel and serves who holds them over varlink.\n\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "     --config=PATH          Configuration file (default " MEMSTRACK_CONFIG_FILE ")\n"
               "     --foreground           Log to stderr even when started by systemd\n"
               "     --log-level=LEVEL      emerg...debug (default info)\n"
               "     --source=NAME          Event source, or auto for the first that can run (default)\n"
               "     --source-input=PATH    File of events, for sources that read one\n"
               "     --callchain-depth=N    Frames per allocation stack, 0 for none (default %u, max %u)\n"
               "     --user-stacks          Also record user-space frames\n"
               "     --slab                 Also trace slab objects (kmalloc, kmem_cache)\n"
               "     --buffer-pages=N       Ring pages per CPU, a power of two (default %u, %u with --slab)\n"
               "     --wakeup-bytes=N       Buffered bytes that wake the daemon (default: half the ring)\n"
               "     --stack-sample-interval=N  eBPF: a stack per N pages on average, 1 for every\n"
               "                            allocation; counts stay exact (default %u)\n"
               "     --heap-sample-interval=BYTES  heap-uprobe: a stack per BYTES allocated on\n"
               "                            average, 1 for every call (default 524288)\n"
               "     --nested-allocations=WHEN  eBPF: record allocations made by an interrupt\n"
               "                            while the allocation program runs from the first one\n"
               "                            missed (after-miss, default) or from the start (always)\n"
               "     --btf=PATH             eBPF: kernel BTF (default " SOURCE_BTF_DEFAULT ")\n"
               "     --kallsyms=PATH        Kernel symbols (default /proc/kallsyms)\n"
               "     --cgroup-root=PATH     cgroup2 tree that names units (default: /sys/fs/cgroup's)\n"
               "     --memcg-root=PATH      The memory controller's hierarchy, cgroup2 or v1, whose\n"
               "                            figures Explain shows (default: found)\n"
               "     --zoneinfo=PATH        Memory zones, for pages by node (default /proc/zoneinfo)\n"
               "     --pressure-margin=PERCENT  A pressure record when a unit comes this close to\n"
               "                            its memory limit (default %u; 0: none)\n"
               "     --pressure-trigger=SPEC  ... or memory pressure passes this PSI trigger\n"
               "                            (default \"" PRESSURE_TRIGGER_DEFAULT "\"; empty: none)\n"
               "     --pressure-interval=SEC  At most one pressure record per unit per SEC (60)\n"
               "     --heap-socket=PATH     Also take user-space heaps there (every user's processes\n"
               "                            preloading libmemstrack-heap.so; a passed socket named heap)\n"
               "     --state-directory=PATH Keep the history there across restarts (default:\n"
               "                            $STATE_DIRECTORY; empty: not kept)\n"
               "     --tracefs=PATH         tracefs mount point (default: found or mounted)\n"
               "     --socket=PATH          varlink socket (default " MEMSTRACK_SOCKET_DEFAULT ")\n"
               "     --boot-snapshot=PATH   The initramfs's snapshot, served by BootPhase (default\n"
               "                            " BOOT_PHASE_PATH_DEFAULT "; empty: none)\n"
               "     --group=NAME           Group allowed to query besides root (default " MEMSTRACK_GROUP_DEFAULT ")\n"
               "     --no-socket            Do not listen (summary on SIGUSR1 and at exit only)\n"
               "     --threads              Keep per-thread records besides per-process ones\n"
               "     --per-process-stacks   Keep a stack tree per process (true per-task stack peaks)\n"
               "     --max-stack-nodes=N    Stack tree node budget (default %zu)\n"
               "     --max-exited-tasks=N   Exited tasks kept queryable (default %zu)\n"
               "     --max-memory=SIZE      Hold the tables of pages, tasks and stacks below SIZE\n"
               "                            bytes (K, M, G, T: powers of 1024), a share of the RAM\n"
               "                            (N%%), or infinity (default %s)\n"
               "     --first-message-timeout=SEC  Close clients silent this long after connecting (5)\n"
               "     --request-timeout=SEC  Close clients that take longer to send one message (10)\n"
               "     --idle-timeout=SEC     Close clients idle this long between calls (300)\n"
               "     --output-timeout=SEC   Close clients that leave replies unread this long (30)\n"
               "     --report=LIST          memstrack's reports to write when stopping, e.g.\n"
               "                            module_summary,module_top:top=5:sort_by_peak\n"
               "     --output=FILE          The file of --report (default: standard output)\n"
               "     --access=SOURCE        How recently pages were touched, for cold memory: off\n"
               "                            (default), damon-read (a running kdamond's results, read\n"
               "                            only), damon (those, else a kdamond of memstrackd's own),\n"
               "                            kpageflags (the LRU's flags), auto (damon, else kpageflags)\n"
               "     --warm-after=SEC       Pages idle this long are warm (default 60)\n"
               "     --cold-after=SEC       Pages idle this long are cold (default 600)\n"
               "     --access-interval=SEC  Seconds between sampling rounds, at least DAMON's\n"
               "                            aggregation interval (default 10)\n"
               "     --damon-sample-interval=MSEC  memstrackd's own kdamond: sampling (default 100)\n"
               "     --damon-aggregation-interval=MSEC  ... and aggregation interval (default 2000)\n"
               "     --kpageflags-budget=N  kpageflags: tracked blocks read per round (default 65536)\n",
               SOURCE_DEPTH_DEFAULT, SOURCE_DEPTH_MAX, SOURCE_BUFFER_PAGES_DEFAULT, SOURCE_BUFFER_PAGES_SLAB_DEFAULT,
               SOURCE_STACK_SAMPLE_INTERVAL_DEFAULT, PRESSURE_MARGIN_PERCENT_DEFAULT,
               ACCOUNTING_CONFIG_DEFAULT.max_stack_nodes, ACCOUNTING_CONFIG_DEFAULT.max_exited_tasks,
               MAX_MEMORY_DEFAULT);

        printf("\nEvent sources, in the order auto tries them:\n");
        for (size_t i = 0; source_type_get(i); i++) {
                const SourceType *t = source_type_get(i);

                printf("  %-24s %s%s\n", t->name, t->description, t->automatic ? "" : " (never auto)");
        }
}

/* A bad command line: the exit status of memstrackctl's usage errors and LSB's "invalid or excess
 * arguments" (systemd shows it as 2/INVALIDARGUMENT). */
#define EXIT_USAGE 2
/* Room for what an option takes, as apply_option() describes it. */
#define OPTION_EXPECTED_MAX 96

/* Tells the person at the command line what is wrong, in memstrackctl's words. Returns -EINVAL. */
static int usage_error(const char *format, ...) _printf_(1, 2);
static int usage_error(const char *format, ...) {
        va_list ap;

        fputs("memstrackd: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputs("\nTry 'memstrackd --help'.\n", stderr);
        return -EINVAL;
}

static int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret, char *ret_expected) {
        int r = parse_uint64(s, min, max, ret);
        if (r < 0)
                (void) snprintf(ret_expected, OPTION_EXPECTED_MAX, "a number from %llu to %llu",
                                (unsigned long long) min, (unsigned long long) max);
        return r;
}

/*
 * --max-memory: bytes with an optional K, M, G or T (powers of 1024, as systemd's MemoryMax= counts), a
 * share of the RAM as N%, or infinity. Into *ret the bytes (0 for infinity) or, with *ret_percent set,
 * the percentage. -EINVAL.
 */
static int parse_memory_size(const char *s, uint64_t *ret, bool *ret_percent) {
        static const char suffixes[] = "KMGT";
        _cleanup_free_ char *digits = NULL;
        size_t n = strspn(s, "0123456789");
        unsigned shift = 0;
        uint64_t v;

        if (streq(s, "infinity")) {
                *ret = 0;
                *ret_percent = false;
                return 0;
        }
        if (n == 0 || !(digits = strndup(s, n)))
                return -EINVAL;
        bool percent = streq(s + n, "%");
        if (!percent && s[n]) {
                const char *p = s[n + 1] == 0 ? strchr(suffixes, s[n]) : NULL;
                if (!p)
                        return -EINVAL;
                shift = 10 * (unsigned) (p - suffixes + 1);
        }
        if (parse_uint64(digits, percent ? 1 : 0, percent ? 100 : UINT64_MAX >> shift, &v) < 0)
                return -EINVAL;
        *ret = v << shift;
        *ret_percent = percent;
        return 0;
}

/* Flags from the configuration file: yes/no, true/false, on/off, 1/0. */
static int parse_boolean(const char *s, bool *ret, char *ret_expected) {
        if (streq(s, "yes") || streq(s, "true") || streq(s, "on") || streq(s, "1"))
                *ret = true;
        else if (streq(s, "no") || streq(s, "false") || streq(s, "off") || streq(s, "0"))
                *ret = false;
        else {
                (void) snprintf(ret_expected, OPTION_EXPECTED_MAX, "yes or no");
                return -EINVAL;
        }
        return 0;
}

/*
 * Applies one option, from the command line or from the configuration file. Flags take value NULL on the
 * command line (set) and a boolean in the file. String values are borrowed: they must outlive the daemon.
 * Returns 0, or -EINVAL with what the option takes in ret_expected (OPTION_EXPECTED_MAX bytes): the
 * caller says where the value came from, as a usage error or a configuration error.
 */
static int apply_option(int c, const char *value, char *ret_expected) {
        bool flag = true;
        uint64_t v;
        int r;

        switch (c) {
        case ARG_FOREGROUND:
        case ARG_USER_STACKS:
        case ARG_SLAB:
        case ARG_NO_SOCKET:
        case ARG_THREADS:
        case ARG_PER_PROCESS_STACKS:
                if (value) {
                        r = parse_boolean(value, &flag, ret_expected);
                        if (r < 0)
                                return r;
                }
                break;
        default:
                break;
        }

        switch (c) {
        case ARG_FOREGROUND:
                arg_foreground = flag;
                break;
        case ARG_LOG_LEVEL:
                r = log_level_from_string(value);
                if (r < 0) {
                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX,
                                        "emerg, alert, crit, err, warning, notice, info, debug or 0 to 7");
                        return r;
                }
                log_set_max_level(r);
                break;
        case ARG_SOURCE:
                if (!streq(value, "auto") && !source_type_find(value)) {
                        char names[OPTION_EXPECTED_MAX - sizeof("auto or one of ")];

                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX, "auto or one of %s",
                                        source_type_names(", ", names, sizeof(names)));
                        return -EINVAL;
                }
                arg_source = streq(value, "auto") ? NULL : value;
                break;
        case ARG_SOURCE_INPUT:
                arg_source_options.input = value;
                break;
        case ARG_DEPTH:
                r = parse_uint(value, 0, SOURCE_DEPTH_MAX, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_source_options.depth = (unsigned) v;
                break;
        case ARG_USER_STACKS:
                arg_source_options.user_stacks = flag;
                break;
        case ARG_SLAB:
                arg_source_options.slab = flag;
                break;
        case ARG_BUFFER_PAGES:
                r = parse_uint(value, 1, SOURCE_BUFFER_PAGES_MAX, &v, ret_expected);
                if (r >= 0 && (v & (v - 1)))
                        r = -EINVAL;
                if (r < 0) {
                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX, "a power of two from 1 to %u",
                                        SOURCE_BUFFER_PAGES_MAX);
                        return r;
                }
                arg_source_options.buffer_pages = (unsigned) v;
                arg_buffer_pages_set = true;
                break;
        case ARG_WAKEUP_BYTES:
                r = parse_uint(value, 1, UINT32_MAX, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_source_options.wakeup_bytes = (size_t) v;
                break;
        case ARG_STACK_SAMPLE_INTERVAL:
                r = parse_uint(value, 1, SOURCE_STACK_SAMPLE_INTERVAL_MAX, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_source_options.stack_sample_interval = (unsigned) v;
                break;
        case ARG_HEAP_SAMPLE_INTERVAL:
                r = parse_uint(value, 1, HEAP_SAMPLE_INTERVAL_MAX, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_source_options.heap_sample_interval = v;
                break;
        case ARG_NESTED_ALLOCATIONS:
                if (streq(value, "always"))
                        arg_source_options.nested_allocations_always = true;
                else if (streq(value, "after-miss"))
                        arg_source_options.nested_allocations_always = false;
                else {
                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX, "after-miss or always");
                        return -EINVAL;
                }
                break;
        case ARG_BTF:
                arg_source_options.btf = value;
                break;
        case ARG_KALLSYMS:
                arg_kallsyms = value;
                break;
        case ARG_CGROUP_ROOT:
                arg_cgroup_root = value;
                break;
        case ARG_HEAP_SOCKET:
                arg_heap_socket = value;
                arg_accounting.heap_shares = true;
                break;
        case ARG_MEMCG_ROOT:
                arg_memcg_root = value;
                break;
        case ARG_ZONEINFO:
                arg_zoneinfo = value;
                break;
        case ARG_PRESSURE_MARGIN:
                r = parse_uint(value, 0, 99, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_pressure_margin = (unsigned) v;
                break;
        case ARG_PRESSURE_TRIGGER: {
                bool full;
                uint64_t stall, window;
                if (*value && pressure_trigger_parse(value, &full, &stall, &window) < 0) {
                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX,
                                        "\"some|full STALL_USEC WINDOW_USEC\" (a window of 500000 to 10000000), or \"\"");
                        return -EINVAL;
                }
                arg_pressure_trigger = value;
                break;
        }
        case ARG_PRESSURE_INTERVAL:
                r = parse_uint(value, 1, 86400, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_pressure_interval_usec = v * UINT64_C(1000000);
                break;
        case ARG_STATE_DIRECTORY:
                arg_state_directory = value;
                break;
        case ARG_TRACEFS:
                arg_source_options.tracefs = value;
                break;
        case ARG_SOCKET:
                arg_socket = value;
                break;
        case ARG_BOOT_SNAPSHOT:
                arg_boot_snapshot = value;
                break;
        case ARG_GROUP:
                arg_group = value;
                break;
        case ARG_NO_SOCKET:
                arg_serve = !flag;
                break;
        case ARG_THREADS:
                arg_accounting.track_threads = flag;
                break;
        case ARG_PER_PROCESS_STACKS:
                arg_accounting.per_process_stacks = flag;
                break;
        case ARG_MAX_STACK_NODES:
                r = parse_uint(value, 16, UINT32_C(1) << 29, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_accounting.max_stack_nodes = (size_t) v;
                break;
        case ARG_MAX_EXITED:
                r = parse_uint(value, 0, 1u << 24, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_accounting.max_exited_tasks = (size_t) v;
                break;
        case ARG_MAX_MEMORY: {
                bool percent;
                if (parse_memory_size(value, &v, &percent) < 0) {
                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX,
                                        "a size in bytes (K, M, G, T suffixes), a share of the RAM (1%% to 100%%) or infinity");
                        return -EINVAL;
                }
                arg_max_memory = value;
                break;
        }
        case ARG_REPORT:
                arg_report = value;     /* checked once all options are known (parse_report()) */
                break;
        case ARG_OUTPUT:
                arg_output = value;
                break;
        case ARG_ACCESS: {
                AccessMode m = access_mode_from_string(value);
                if (m < 0) {
                        (void) snprintf(ret_expected, OPTION_EXPECTED_MAX,
                                        "off, damon-read, damon, kpageflags or auto");
                        return -EINVAL;
                }
                arg_access.mode = m;
                break;
        }
        case ARG_ACCESS_INTERVAL:
        case ARG_WARM_AFTER:
        case ARG_COLD_AFTER:
                r = parse_uint(value, 1, 7 * 24 * 3600, &v, ret_expected);
                if (r < 0)
                        return r;
                v *= UINT64_C(1000000);
                if (c == ARG_ACCESS_INTERVAL)
                        arg_access.interval_usec = v;
                else if (c == ARG_WARM_AFTER)
                        arg_access.warm_usec = v;
                else
                        arg_access.cold_usec = v;
                break;
        case ARG_DAMON_SAMPLE_INTERVAL:
        case ARG_DAMON_AGGREGATION_INTERVAL:
                r = parse_uint(value, 1, 3600 * 1000, &v, ret_expected);
                if (r < 0)
                        return r;
                if (c == ARG_DAMON_SAMPLE_INTERVAL)
                        arg_access.kdamond.sample_usec = v * 1000;
                else
                        arg_access.kdamond.aggr_usec = v * 1000;
                break;
        case ARG_KPAGEFLAGS_BUDGET:
                r = parse_uint(value, 1, UINT32_C(1) << 24, &v, ret_expected);
                if (r < 0)
                        return r;
                arg_access.kpageflags_budget = (size_t) v;
                break;
        case ARG_FIRST_MESSAGE_TIMEOUT:
        case ARG_REQUEST_TIMEOUT:
        case ARG_IDLE_TIMEOUT:
        case ARG_OUTPUT_TIMEOUT:
                r = parse_uint(value, 1, 7 * 24 * 3600, &v, ret_expected);
                if (r < 0)
                        return r;
                v *= 1000000U;
                if (c == ARG_FIRST_MESSAGE_TIMEOUT)
                        arg_first_message_timeout_usec = v;
                else if (c == ARG_REQUEST_TIMEOUT)
                        arg_request_timeout_usec = v;
                else if (c == ARG_IDLE_TIMEOUT)
                        arg_idle_timeout_usec = v;
                else
                        arg_output_timeout_usec = v;
                break;
        default:
                (void) snprintf(ret_expected, OPTION_EXPECTED_MAX, "nothing");
                return -EINVAL;
        }
        return 0;
}

/*
 * Parses --report into arg_report_options, and checks --output goes with it. -EINVAL with what is wrong
 * in *ret_message (a new string, NULL if that failed too), -ENOMEM.
 */
static int parse_report(char **ret_message) {
        _cleanup_free_ char *message = NULL;
        int r;

        if (!arg_report) {
                if (!arg_output)
                        return 0;
                *ret_message = strdup("--output names the file of --report, and no --report is given.");
                return -EINVAL;
        }
        arg_report_options = REPORT_OPTIONS_DEFAULT;
        r = report_parse_formats(arg_report, &arg_report_options, &message);
        if (r == -EINVAL && asprintf(ret_message, "--report: %s", message ?: "invalid.") < 0)
                *ret_message = NULL;
        if (r < 0)
                return r;
        /* As memstrackctl refuses it on standard output: an SVG framed by text lines is no SVG. */
        if (arg_report_options.n_formats > 1 && report_has_format(&arg_report_options, "flamegraph")) {
                *ret_message = strdup("--report: a flame graph cannot share the report with other formats; "
                                      "ask for it alone.");
                return -EINVAL;
        }
        return 0;
}

/* The name of the option with this value, for messages. */
static const char *option_name(int c) {
        for (const struct option *o = options; o->name; o++)
                if (o->val == c)
                        return o->name;
        return "?";
}

/*
 * Returns 1 to go on, 0 to exit successfully (--help, --version), -EINVAL after a usage error was
 * printed with the hint to --help.
 */
static int parse_argv(int argc, char *argv[]) {
        char expected[OPTION_EXPECTED_MAX];
        int c, r;

        /* We say what is wrong ourselves, with the hint; ':' reports a missing argument apart. */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("memstrackd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case ':':
                        return usage_error("Option '%s' needs an argument.", argv[optind - 1]);
                case '?':
                        /* optopt names a known option given an argument it does not take (--threads=x),
                         * or an unknown short one; it is 0 for an unknown or ambiguous long one. */
                        if (optopt >= _ARG_FIRST || optopt == 'h')
                                return usage_error("Option '--%s' takes no argument.", option_name(optopt));
                        if (optopt != 0)
                                return usage_error("Unknown option '-%c'.", optopt);
                        return usage_error("Unknown option '%s'.", argv[optind - 1]);
                default:
                        r = apply_option(c, optarg, expected);
                        if (r < 0)
                                return usage_error("--%s takes %s, not '%s'.", option_name(c), expected,
                                                   optarg);
                        arg_from_cmdline[c - _ARG_FIRST] = true;
                }

        if (optind < argc)
                return usage_error("Unexpected argument '%s': memstrackd takes only options.", argv[optind]);
        /* A bad --report is a usage error now, not a failure when stopping. */
        _cleanup_free_ char *message = NULL;
        r = parse_report(&message);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return usage_error("%s", message ?: "--report is invalid.");
        return 1;
}

static const struct option *option_by_name(const char *name) {
        for (const struct option *o = options; o->name; o++)
                if (streq(o->name, name))
                        return o;
        return NULL;
}

static int config_keep_string(const char *s, const char **ret) {
        char **a = reallocarray(arg_config_strings, arg_n_config_strings + 1, sizeof(char *));
        if (!a)
                return -ENOMEM;
        arg_config_strings = a;
        a[arg_n_config_strings] = strdup(s);
        if (!a[arg_n_config_strings])
                return -ENOMEM;
        *ret = a[arg_n_config_strings++];
        return 0;
}

static void config_strings_free(void) {
        for (size_t i = 0; i < arg_n_config_strings; i++)
                free(arg_config_strings[i]);
        free(arg_config_strings);
        arg_config_strings = NULL;
        arg_n_config_strings = 0;
}

typedef struct ConfigParse {
        bool reloading;         /* SIGHUP: only the log level may change */
        bool invalid;           /* a value was rejected (and logged) */
        int log_level;          /* when reloading: the level the file sets, -1 if none */
} ConfigParse;

static int config_handler(const char *path, unsigned line, const char *key, const char *value,
                void *userdata) {
        ConfigParse *p = userdata;
        const struct option *o = option_by_name(key);
        const char *v = value;
        char expected[OPTION_EXPECTED_MAX];
        int r;

        if (!o || o->val < _ARG_FIRST || o->val == ARG_VERSION || o->val == ARG_CONFIG) {
                log_warning("%s:%u: unknown key \"%s\", ignoring.", path, line, key);
                return 0;
        }
        if (arg_from_cmdline[o->val - _ARG_FIRST])
                return 0; /* the command line wins */
        if (p->reloading) {
                if (o->val != ARG_LOG_LEVEL) {
                        log_debug("%s:%u: %s only changes on restart, ignoring.", path, line, key);
                        return 0;
                }
                /* Applied once the whole file has been read, so a bad value keeps the current level. */
                r = log_level_from_string(value);
                if (r < 0) {
                        p->invalid = true;
                        log_warning("%s:%u: invalid log level '%s', keeping the current one.", path, line,
                                    value);
                        return 0;
                }
                p->log_level = r;
                return 0;
        }

        if (o->has_arg == required_argument) {
                r = config_keep_string(value, &v);
                if (r < 0)
                        return log_oom();
        }
        r = apply_option(o->val, v, expected);
        if (r < 0) {
                p->invalid = true;
                return log_error_errno(r, "%s:%u: %s takes %s, not '%s'.", path, line, key, expected, value);
        }
        return 0;
}

/*
 * Reads the configuration file: --config=PATH must exist, the default one may be missing. On reload
 * (SIGHUP) only the log level is applied, and goes back to the default when the file no longer sets it.
 */
static int parse_config(bool reloading) {
        const char *path = arg_config ?: MEMSTRACK_CONFIG_FILE;
        ConfigParse p = { .reloading = reloading, .log_level = -1 };
        int r;

        r = config_file_read(path, config_handler, &p);
        if (r == -ENOENT && !arg_config) {
                log_debug("No configuration file %s, using the defaults.", path);
                r = 0;
        } else if (r < 0 && !p.invalid)
                return log_error_errno(r, "Failed to read the configuration file %s: %s", path, file_error_string(r));
        if (r < 0)
                return r;

        if (reloading && !p.invalid && !arg_from_cmdline[ARG_LOG_LEVEL - _ARG_FIRST])
                log_set_max_level(p.log_level >= 0 ? p.log_level : LOG_LEVEL_DEFAULT);
        return 0;
}

static int reload_config(void) {
        int r = parse_config(true);
        if (r >= 0)
                log_info("Reloaded %s: log level %s.", arg_config ?: MEMSTRACK_CONFIG_FILE,
                         log_level_to_string(log_get_max_level()) ?: "?");
        return r;
}

static int on_sigusr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        manager_log_summary(userdata, "SIGUSR1");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        /* What can change at run time: the log level from the configuration file, and what the daemon
         * reads from outside (the symbol table). MONOTONIC_USEC lets systemd >= 253 tell this reload from
         * an earlier one (Type=notify-reload). */
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
        (void) reload_config(); /* logs why it failed, and keeps the current settings */
        manager_reload(userdata);
        (void) sd_notify(false, "READY=1");
        return 0;
}

/* SIGTERM and SIGINT end the loop, SIGUSR1 and SIGHUP go to the Manager: all on its loop, the thread's
 * default one. The sources are the loop's. */
static int add_signals(Manager *m) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        int r;

        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGUSR1, on_sigusr1, m);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");
        return 0;
}

/* The core's memory budget in bytes (0: none), from --max-memory and, for a share, the RAM now. */
static uint64_t memory_budget(void) {
        SystemMemory mem;
        uint64_t v;
        bool percent;

        if (parse_memory_size(arg_max_memory, &v, &percent) < 0 || !percent)
                return v;
        system_memory_read(NULL, &mem);
        if (!mem.known) {
                log_warning("No MemTotal in /proc/meminfo for --max-memory=%s, ignoring: no budget.", arg_max_memory);
                return 0;
        }
        return mem.total_bytes / 100 * v;
}

static int run(void) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        r = parse_config(false);
        if (r < 0)
                return r;
        if (arg_foreground)
                log_set_target_journal(false);
        /* The configuration file may have named the report. */
        _cleanup_free_ char *message = NULL;
        r = parse_report(&message);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "%s", message ?: "--report is invalid.");

        /* Signals become sd-event sources; block them before anything can be delivered. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGUSR1);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        /* A client that hangs up must not kill us. */
        signal(SIGPIPE, SIG_IGN);

        if (arg_access.warm_usec > arg_access.cold_usec)
                return log_error_errno(EINVAL, "--warm-after is longer than --cold-after: "
                                       "pages would be cold before they are warm.");
        if (arg_source_options.slab && !arg_buffer_pages_set)
                arg_source_options.buffer_pages = SOURCE_BUFFER_PAGES_SLAB_DEFAULT;
        arg_accounting.max_memory_bytes = memory_budget();
        ManagerConfig config = {
                .source = arg_source,
                .source_options = arg_source_options,
                .accounting = arg_accounting,
                .kallsyms = arg_kallsyms,
                .cgroup_root = arg_cgroup_root,
                .memcg_root = arg_memcg_root,
                .zoneinfo = arg_zoneinfo,
                .pressure = {
                        .margin_percent = arg_pressure_margin,
                        .trigger = arg_pressure_trigger,
                        .interval_usec = arg_pressure_interval_usec,
                },
                .state_directory = arg_state_directory,
                .heap_socket = arg_heap_socket,
                .serve = arg_serve,
                .service = {
                        .socket_path = arg_socket,
                        .group = arg_group,
                        .first_message_timeout_usec = arg_first_message_timeout_usec,
                        .request_timeout_usec = arg_request_timeout_usec,
                        .idle_timeout_usec = arg_idle_timeout_usec,
                        .output_timeout_usec = arg_output_timeout_usec,
                        .boot_phase_path = !arg_boot_snapshot ? BOOT_PHASE_PATH_DEFAULT :
                                           arg_boot_snapshot[0] == 0 ? NULL : arg_boot_snapshot,
                },
                .report = arg_report ? &arg_report_options : NULL,
                .report_output = arg_output,
                .access = arg_access,
        };
        r = manager_new(&config, &m);
        if (r < 0)
                return r;
        r = add_signals(m);
        if (r < 0)
                return r;
        r = manager_start(m);
        if (r == -ECANCELED)
                return 0;       /* asked to stop before tracing began: nothing to sum up */
        if (r < 0)
                return r;

        (void) sd_notify(false, "READY=1\nSTATUS=Tracing.");
        r = manager_run(m);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Writing the summary.");
        int k = manager_finish(m);
        return r < 0 ? r : k;
}

int main(int argc, char *argv[]) {
        int r;

        source_options_init(&arg_source_options);
        arg_accounting = ACCOUNTING_CONFIG_DEFAULT;
        arg_access = ACCESS_CONFIG_DEFAULT;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;

        r = run();
        config_strings_free();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
