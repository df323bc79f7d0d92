/* SPDX-License-Identifier: MIT */

/*
 * varlink-test-server: serves io.memstrack.test on the generic varlink server, so tests can talk to the
 * server with independent clients (vlgo, setpriv'ed processes) without the memory core.
 *
 *   varlink-test-server --socket PATH [--group NAME] [--socket-mode OCTAL] [--max-connections N]
 *                       [--max-message BYTES] [--max-output BYTES] [--idle-timeout-usec USEC]
 *                       [--log-level LEVEL]
 *
 * Prints "READY" on stdout once it listens; exits 0 on SIGTERM/SIGINT after freeing everything.
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "varlink-server.h"
#include "varlink-test-service.h"

static int parse_u64(const char *s, int base, uint64_t *ret) {
        unsigned long long v;
        char *end;

        errno = 0;
        if (!s || *s == '\0' || *s == '-')
                return -EINVAL;
        v = strtoull(s, &end, base);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int run(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "group", required_argument, NULL, 'g' },
                { "socket-mode", required_argument, NULL, 'm' },
                { "max-connections", required_argument, NULL, 'c' },
                { "max-message", required_argument, NULL, 'M' },
                { "max-output", required_argument, NULL, 'o' },
                { "idle-timeout-usec", required_argument, NULL, 'i' },
                { "log-level", required_argument, NULL, 'l' },
                {}
        };
        _cleanup_(varlink_server_freep) VarlinkServer *server = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        VarlinkServerConfig cfg = { .group = "", .vendor = "memstrack", .version = PACKAGE_VERSION,
                                    .url = "https://example.invalid/memstrack" };
        TestService t = {};
        sigset_t mask;
        uint64_t v;
        int c, r;

        log_set_max_level(LOG_WARNING);
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                        cfg.socket_path = optarg;
                        break;
                case 'g':
                        cfg.group = optarg;
                        break;
                case 'm':
                        if (parse_u64(optarg, 8, &v) < 0 || v > 0777)
                                return log_error_errno(EINVAL, "Invalid --socket-mode: %s", optarg);
                        cfg.socket_mode = (unsigned) v;
                        break;
                case 'c':
                        if (parse_u64(optarg, 10, &v) < 0 || v == 0 || v > 100000)
                                return log_error_errno(EINVAL, "Invalid --max-connections: %s", optarg);
                        cfg.max_connections = (unsigned) v;
                        break;
                case 'M':
                        if (parse_u64(optarg, 10, &v) < 0 || v == 0)
                                return log_error_errno(EINVAL, "Invalid --max-message: %s", optarg);
                        cfg.max_message_bytes = cfg.max_request_bytes = (size_t) v;
                        break;
                case 'o':
                        if (parse_u64(optarg, 10, &v) < 0 || v == 0)
                                return log_error_errno(EINVAL, "Invalid --max-output: %s", optarg);
                        cfg.max_output_bytes = (size_t) v;
                        break;
                case 'i':
                        if (parse_u64(optarg, 10, &v) < 0 || v == 0)
                                return log_error_errno(EINVAL, "Invalid --idle-timeout-usec: %s", optarg);
                        cfg.idle_timeout_usec = v;
                        break;
                case 'l':
                        r = log_level_from_string(optarg);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --log-level: %s", optarg);
                        log_set_max_level(r);
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);

        /* Signals arrive through the loop, so the exit path frees everything (leak checks see it). */
        if (sigemptyset(&mask) < 0 || sigaddset(&mask, SIGTERM) < 0 || sigaddset(&mask, SIGINT) < 0 ||
            sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block signals: %m");

        r = sd_event_default(&e);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        r = sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to watch signals: %m");

        t.event = e;
        cfg.product = "varlink-test-server";
        test_service_fill_config(&t, &cfg);
        r = varlink_server_new(e, &cfg, &server);
        if (r < 0)
                return log_error_errno(r, "Failed to start the varlink server: %m");
        t.server = server;

        printf("READY\n");
        (void) fflush(stdout);

        r = sd_event_loop(e);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
