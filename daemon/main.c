/* SPDX-License-Identifier: MIT */

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "config.h"
#include "log.h"
#include "manager.h"
#include "parse-util.h"

static PerfConfig arg_perf;
static AccountingConfig arg_accounting;
static const char *arg_kallsyms = NULL;
static const char *arg_socket = NULL;
static const char *arg_group = NULL;
static bool arg_serve = true;
static bool arg_foreground = false;

static void help(void) {
        printf("Usage: memstrackd [OPTIONS]\n\n"
               "Traces page allocations in the kernel and serves who holds them over varlink.\n\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "     --foreground           Log to stderr even when started by systemd\n"
               "     --log-level=LEVEL      emerg...debug (default info)\n"
               "     --callchain-depth=N    Frames per allocation stack (default %u, max %u)\n"
               "     --user-stacks          Also record user-space frames\n"
               "     --buffer-pages=N       Ring pages per CPU, a power of two (default %u)\n"
               "     --wakeup-bytes=N       Buffered bytes that wake the daemon (default: half the ring)\n"
               "     --kallsyms=PATH        Kernel symbols (default /proc/kallsyms)\n"
               "     --tracefs=PATH         tracefs mount point (default: found or mounted)\n"
               "     --socket=PATH          varlink socket (default " MEMSTRACK_SOCKET_DEFAULT ")\n"
               "     --group=NAME           Group allowed to query besides root (default " MEMSTRACK_GROUP_DEFAULT ")\n"
               "     --no-socket            Do not listen (summary on SIGUSR1 and at exit only)\n"
               "     --threads              Keep per-thread records besides per-process ones\n"
               "     --per-process-stacks   Keep a stack tree per process (true per-task stack peaks)\n"
               "     --max-stack-nodes=N    Stack tree node budget (default %zu)\n"
               "     --max-exited-tasks=N   Exited tasks kept queryable (default %zu)\n",
               PERF_DEPTH_DEFAULT, PERF_DEPTH_MAX, PERF_BUFFER_PAGES_DEFAULT,
               ACCOUNTING_CONFIG_DEFAULT.max_stack_nodes, ACCOUNTING_CONFIG_DEFAULT.max_exited_tasks);
}

static int parse_uint(const char *s, const char *what, uint64_t min, uint64_t max, uint64_t *ret) {
        int r = parse_uint64(s, min, max, ret);
        if (r < 0)
                return log_error_errno(r, "Invalid %s '%s': expected a number from %llu to %llu.", what, s,
                                       (unsigned long long) min, (unsigned long long) max);
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_FOREGROUND,
                ARG_LOG_LEVEL,
                ARG_DEPTH,
                ARG_USER_STACKS,
                ARG_BUFFER_PAGES,
                ARG_WAKEUP_BYTES,
                ARG_KALLSYMS,
                ARG_TRACEFS,
                ARG_SOCKET,
                ARG_GROUP,
                ARG_NO_SOCKET,
                ARG_THREADS,
                ARG_PER_PROCESS_STACKS,
                ARG_MAX_STACK_NODES,
                ARG_MAX_EXITED,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "foreground", no_argument, NULL, ARG_FOREGROUND },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "callchain-depth", required_argument, NULL, ARG_DEPTH },
                { "user-stacks", no_argument, NULL, ARG_USER_STACKS },
                { "buffer-pages", required_argument, NULL, ARG_BUFFER_PAGES },
                { "wakeup-bytes", required_argument, NULL, ARG_WAKEUP_BYTES },
                { "kallsyms", required_argument, NULL, ARG_KALLSYMS },
                { "tracefs", required_argument, NULL, ARG_TRACEFS },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "group", required_argument, NULL, ARG_GROUP },
                { "no-socket", no_argument, NULL, ARG_NO_SOCKET },
                { "threads", no_argument, NULL, ARG_THREADS },
                { "per-process-stacks", no_argument, NULL, ARG_PER_PROCESS_STACKS },
                { "max-stack-nodes", required_argument, NULL, ARG_MAX_STACK_NODES },
                { "max-exited-tasks", required_argument, NULL, ARG_MAX_EXITED },
                {}
        };
        uint64_t v;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("memstrackd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_FOREGROUND:
                        arg_foreground = true;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0)
                                return log_error_errno(r, "Invalid log level '%s'.", optarg);
                        log_set_max_level(r);
                        break;
                case ARG_DEPTH:
                        r = parse_uint(optarg, "call chain depth", 1, PERF_DEPTH_MAX, &v);
                        if (r < 0)
                                return r;
                        arg_perf.depth = (unsigned) v;
                        break;
                case ARG_USER_STACKS:
                        arg_perf.user_stacks = true;
                        break;
                case ARG_BUFFER_PAGES:
                        r = parse_uint(optarg, "buffer pages", 1, PERF_BUFFER_PAGES_MAX, &v);
                        if (r < 0)
                                return r;
                        if (v & (v - 1))
                                return log_error_errno(EINVAL, "Invalid buffer pages '%s': must be a power of two.", optarg);
                        arg_perf.buffer_pages = (unsigned) v;
                        break;
                case ARG_WAKEUP_BYTES:
                        r = parse_uint(optarg, "wakeup bytes", 1, UINT32_MAX, &v);
                        if (r < 0)
                                return r;
                        arg_perf.wakeup_bytes = (size_t) v;
                        break;
                case ARG_KALLSYMS:
                        arg_kallsyms = optarg;
                        break;
                case ARG_TRACEFS:
                        arg_perf.tracefs = optarg;
                        break;
                case ARG_SOCKET:
                        arg_socket = optarg;
                        break;
                case ARG_GROUP:
                        arg_group = optarg;
                        break;
                case ARG_NO_SOCKET:
                        arg_serve = false;
                        break;
                case ARG_THREADS:
                        arg_accounting.track_threads = true;
                        break;
                case ARG_PER_PROCESS_STACKS:
                        arg_accounting.per_process_stacks = true;
                        break;
                case ARG_MAX_STACK_NODES:
                        r = parse_uint(optarg, "stack node budget", 16, UINT32_C(1) << 29, &v);
                        if (r < 0)
                                return r;
                        arg_accounting.max_stack_nodes = (size_t) v;
                        break;
                case ARG_MAX_EXITED:
                        r = parse_uint(optarg, "exited task limit", 0, 1u << 24, &v);
                        if (r < 0)
                                return r;
                        arg_accounting.max_exited_tasks = (size_t) v;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return -EINVAL;
                }

        if (optind < argc)
                return log_error_errno(EINVAL, "This program takes no positional arguments.");
        return 1;
}

static int run(int argc, char *argv[]) {
        Manager *m = NULL;
        int r;

        perf_config_init(&arg_perf);
        arg_accounting = ACCOUNTING_CONFIG_DEFAULT;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        if (arg_foreground)
                log_set_target_journal(false);

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

        ManagerConfig config = {
                .perf = arg_perf,
                .accounting = arg_accounting,
                .kallsyms = arg_kallsyms,
                .socket_path = arg_socket,
                .group = arg_group,
                .serve = arg_serve,
        };
        r = manager_new(&config, &m);
        if (r < 0)
                return r;
        r = manager_start(m);
        if (r < 0)
                goto finish;

        (void) sd_notify(false, "READY=1\nSTATUS=Tracing.");
        r = sd_event_loop(m->event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Writing the summary.");
        manager_finish(m);
finish:
        manager_free(m);
        return r;
}

int main(int argc, char *argv[]) {
        int r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
