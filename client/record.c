/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl record [OPTIONS] -- COMMAND [ARGS]: runs COMMAND with the heap library preloaded
 * (libmemstrack-heap.so) and a memstrackd of its own reading it (--source=heap), and when COMMAND ends
 * prints its heap at the maximum and what it never freed (heap_maximum, heap_leaks; any report format
 * with --format), or writes a snapshot file with --file for `report --from`. Every process COMMAND runs
 * (exec) is recorded as a heap of its own; a child that forks without exec is not.
 *
 * memstrackctl exits with COMMAND's status (128 + N for a signal N), as time(1) does; 1 when nothing
 * could be recorded (a static or setuid program, which LD_PRELOAD does not reach, says so first); 7
 * (CTL_EXIT_LIMIT) when COMMAND succeeded but its process's heap passed --max-peak or --max-leaked, which
 * stderr says with the call sites that take it over.
 *
 * record --live -- COMMAND: the same, into the system's memstrackd (started with --heap-socket), where the
 * heap shows beside the process's pages; only COMMAND's own pid is reported (the processes it runs are
 * there too, each a heap of its own).
 *
 * record --pid PID [--seconds N]: a process already running, through eBPF uprobes on its libc's allocator
 * (memstrackd's heap-uprobe source), until it exits, N seconds pass or Ctrl-C; then the uprobes are
 * detached, the process runs on, and its heap over that time is reported. Exit status 0.
 */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "connection.h"
#include "ctl.h"
#include "format-text.h"
#include "format-util.h"
#include "heap-abi.h"
#include "heap-sites.h"
#include "macro.h"
#include "private-daemon.h"
#include "program-paths.h"
#include "reply.h"
#include "report.h"
#include "snapshot.h"
#include "time-util.h"

#define RECORD_START_TIMEOUT_MSEC (30u * 1000u)
/* How long the daemon may take to read the rest of a heap after its process ended. */
#define RECORD_END_TIMEOUT_MSEC (10u * 1000u)
#define RECORD_TREE_DEPTH 128
#define RECORD_TREE_CHILDREN 1000
/* Frames below 0.02 % of their heap, now and at its maximum, are not in the text reports: below what
 * their percentages show. */
#define RECORD_TEXT_MIN_PPM 200
/* Call sites named on stderr for a heap over --max-peak or --max-leaked, at most. */
#define RECORD_LIMIT_SITES 20

/* COMMAND as execvp() would find it; NULL if it is nowhere (execvp() then says so). */
static char *find_program(const char *name) {
        const char *path = getenv("PATH");

        if (strchr(name, '/'))
                return strdup(name);
        if (!path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ":");
                char *candidate = NULL;
                if (asprintf(&candidate, "%.*s/%s", (int) n, n > 0 ? p : ".", name) < 0)
                        return NULL;
                if (access(candidate, X_OK) == 0)
                        return candidate;
                free(candidate);
                p += n + (p[n] == ':');
        }
        return NULL;
}

/* Why LD_PRELOAD cannot reach the program at path, or NULL: a static ELF program (no interpreter) or one
 * that runs setuid/setgid to someone else (the loader ignores LD_PRELOAD in secure-execution mode). */
static const char *preload_obstacle(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        Elf64_Ehdr eh;
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return NULL;
        if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) || ((st.st_mode & S_ISGID) && st.st_gid != getegid()))
                return "it runs setuid or setgid, and the dynamic loader ignores LD_PRELOAD for such programs";
        if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t) sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
            eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
                return NULL;    /* a script, or another class: its interpreter is checked when it runs */
        if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
                return NULL;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;
                if (pread(fd, &ph, sizeof(ph), (off_t) (eh.e_phoff + (uint64_t) i * sizeof(ph))) != (ssize_t) sizeof(ph))
                        return NULL;
                if (ph.p_type == PT_INTERP)
                        return NULL;
        }
        return "it is statically linked: no dynamic loader runs to preload the library";
}

/* LD_PRELOAD for the child: ours first, then what the caller had. Says which library and memstrackd
 * record runs when they are not the installed ones (a build tree's, or named in the environment). */
static int preload_value(char **ret) {
        _cleanup_free_ char *lib = NULL, *daemon = NULL;
        const char *old = getenv("LD_PRELOAD");
        ProgramOrigin lib_origin, daemon_origin;

        if (program_path(PROGRAM_HEAP_LIBRARY, &lib, &lib_origin) < 0 ||
            program_path(PROGRAM_MEMSTRACKD, &daemon, &daemon_origin) < 0)
                return -ENOMEM;
        if (access(lib, R_OK) < 0) {
                fprintf(stderr, "memstrackctl: cannot read the heap library %s (%s): %s.\n", lib,
                        program_origin_to_string(PROGRAM_HEAP_LIBRARY, lib_origin), strerror(errno));
                return CTL_EXIT_FAILURE;
        }
        /* --live records into the system's memstrackd: only the library is record's own then. */
        if (arg_live && lib_origin != PROGRAM_INSTALLED)
                fprintf(stderr, "memstrackctl: recording with the heap library %s (%s).\n", lib,
                        program_origin_to_string(PROGRAM_HEAP_LIBRARY, lib_origin));
        else if (!arg_live && (lib_origin != PROGRAM_INSTALLED || daemon_origin != PROGRAM_INSTALLED))
                fprintf(stderr, "memstrackctl: recording with the heap library %s (%s) and memstrackd %s (%s).\n",
                        lib, program_origin_to_string(PROGRAM_HEAP_LIBRARY, lib_origin), daemon,
                        program_origin_to_string(PROGRAM_MEMSTRACKD, daemon_origin));
        if (asprintf(ret, "%s%s%s", lib, old && *old ? " " : "", old ?: "") < 0)
                return -ENOMEM;
        return 0;
}

static int run_command(char *argv[], const char *socket_path, const char *preload, pid_t *ret) {
        char interval[32];

        (void) snprintf(interval, sizeof(interval), "%llu", (unsigned long long) arg_sample_interval);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                if (setenv("LD_PRELOAD", preload, 1) < 0 || setenv(HEAP_ENV_SOCKET, socket_path, 1) < 0 ||
                    setenv(HEAP_ENV_SAMPLE_INTERVAL, interval, 1) < 0)
                        _exit(127);
                (void) signal(SIGINT, SIG_DFL);
                (void) signal(SIGQUIT, SIG_DFL);
                execvp(argv[0], argv);
                fprintf(stderr, "memstrackctl: cannot run %s: %s\n", argv[0], strerror(errno));
                _exit(errno == ENOENT ? 127 : 126);
        }
        *ret = pid;
        return 0;
}

/* The Heap reply to params, or *ret NULL when it is larger than memstrackd sends (LimitExceeded). */
static int heap_call(VarlinkClient *c, json_t *params, json_t **ret) {
        _cleanup_free_ char *error = NULL;
        json_auto_t *reply = NULL;
        int r;

        r = ctl_client_call(c, "io.memstrack.Heap", params, &reply, &error);
        if (r >= 0 && error && streq(error, MEMSTRACK_ERROR_LIMIT_EXCEEDED)) {
                *ret = NULL;
                return 0;
        }
        r = ctl_call_result("io.memstrack.Heap", r, error, reply);
        if (r == 0)
                *ret = TAKE_PTR(reply);
        return r;
}

/* The whole trees of one pid's heaps (every heap with pid <= 0), with their timelines for a saved record;
 * one pid's heap whose timeline does not fit a reply beside its tree goes without it, said so. *ret NULL
 * when they do not fit a reply: for every heap, with their timelines; for one pid, even without. */
static int heap_trees(VarlinkClient *c, pid_t pid, json_t **ret) {
        /* Text shows the frames above a few hundredths of a percent; JSON and files get all. */
        bool text = arg_json == CTL_JSON_OFF && !arg_file;
        json_auto_t *params = json_pack("{s:i, s:i, s:i, s:b}", "maxDepth", RECORD_TREE_DEPTH,
                                        "maxChildren", RECORD_TREE_CHILDREN, "minPartsPerMillion",
                                        text ? RECORD_TEXT_MIN_PPM : 0, "timeline", arg_file != NULL);
        int r;

        if (!params || (pid > 0 && json_object_set_new(params, "pid", json_integer(pid)) < 0))
                return -ENOMEM;
        r = heap_call(c, params, ret);
        if (r != 0 || *ret || !arg_file || pid <= 0)
                return r;
        /* A saved record keeps the timelines, for report --at and --between: without them, then. */
        if (json_object_set_new(params, "timeline", json_false()) < 0)
                return -ENOMEM;
        r = heap_call(c, params, ret);
        if (r == 0 && *ret)
                fprintf(stderr, "memstrackctl: the timeline of pid %d's heap does not fit a reply beside its tree: "
                        "%s is saved without it (report --at and --between need it).\n", (int) pid, arg_file);
        return r;
}

/* The whole trees of the heaps the roots-only reply lists (of pid alone with only_pid): in one reply when
 * they fit, else pid by pid, each a reply of its own, merged into one. */
static int fetch_heaps(VarlinkClient *c, json_t *roots, pid_t pid, bool only_pid, json_t **ret) {
        json_auto_t *merged = NULL;
        json_t *h;
        size_t i;
        int r;

        r = heap_trees(c, only_pid ? pid : 0, ret);
        if (r != 0 || *ret || only_pid)
                goto done;
        json_array_foreach(reply_array(roots, "heaps"), i, h) {
                pid_t p = (pid_t) reply_int(h, "pid", 0);
                json_auto_t *one = NULL;
                bool seen = false;
                json_t *x;
                size_t k;

                /* A pid of several heaps (it exec'd) is asked for once. */
                json_array_foreach(reply_array(merged, "heaps"), k, x)
                        seen |= reply_int(x, "pid", 0) == p;
                if (seen)
                        continue;
                r = heap_trees(c, p, &one);
                if (r != 0)
                        return r;
                if (!one) {
                        fprintf(stderr, "memstrackctl: the heap of pid %d is larger than memstrackd sends in a reply: "
                                "left out (a larger --sample-interval makes it smaller).\n", (int) p);
                        continue;
                }
                if (!merged)
                        merged = json_incref(one);
                else if (json_array_extend(reply_array(merged, "heaps"), reply_array(one, "heaps")) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(merged);
done:
        if (r == 0 && !*ret) {
                fprintf(stderr, "memstrackctl: the heaps are larger than memstrackd sends in a reply; a larger "
                        "--sample-interval makes them smaller.\n");
                return CTL_EXIT_FAILURE;
        }
        return r;
}

/* Waits until the daemon has read the heaps of pid to their end (its exit seen through a pidfd), asking
 * for the roots alone meanwhile; then takes the whole trees once. The daemon usually sees the end within a
 * millisecond of the exit: asked again after 1 ms, then twice as long each time, up to 20 ms. */
static int wait_heaps_ended(VarlinkClient *c, pid_t pid, bool only_pid, json_t **ret) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), pause_usec = 1000;

        for (;;) {
                json_auto_t *params = json_pack("{s:i, s:i}", "maxDepth", 0, "maxChildren", 1);
                json_auto_t *reply = NULL;
                json_t *h;
                size_t i;
                bool open = false, seen = false;

                if (!params)
                        return -ENOMEM;
                int r = ctl_call(c, "io.memstrack.Heap", params, &reply);
                if (r != 0)
                        return r;
                json_array_foreach(reply_array(reply, "heaps"), i, h)
                        if (reply_int(h, "pid", 0) == pid) {
                                seen = true;
                                open |= !reply_bool(h, "ended", false);
                        }
                if (!open || now_usec(CLOCK_MONOTONIC) - start >= RECORD_END_TIMEOUT_MSEC * USEC_PER_MSEC) {
                        if (open)
                                fprintf(stderr, "memstrackctl: memstrackd did not see pid %d end; its heap is "
                                        "reported as last read.\n", (int) pid);
                        /* The daemon's other heaps are others' (the system's memstrackd): none of pid. */
                        if (only_pid && !seen) {
                                *ret = json_pack("{s:[], s:i, s:i}", "heaps", "heapsDropped", 0, "invalidEvents", 0);
                                return *ret ? 0 : -ENOMEM;
                        }
                        return fetch_heaps(c, reply, pid, only_pid, ret);
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = (long) (pause_usec * NSEC_PER_USEC) }, NULL);
                pause_usec = MIN(pause_usec * 2, 20 * USEC_PER_MSEC);
        }
}

/* COMMAND's status as an exit status. */
static int command_exit(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return CTL_EXIT_FAILURE;
}

/* The report of a recording's document: record's formats unless --format, the processes --process names
 * (each must be there). 0, or a CtlExit said. */
static int write_heap_report(json_t *doc, const ReportOptions *o) {
        ReportOptions chosen = *o;
        int r;

        r = ctl_heap_report_options(doc, true, &chosen);
        if (r != 0)
                return r;
        r = ctl_report_write(doc, &chosen);
        if (r == -ESRCH) {
                fprintf(stderr, "memstrackctl: pid %lld recorded no heap.\n", (long long) arg_task);
                return CTL_EXIT_FAILURE;
        }
        if (r < 0 && arg_output && r != -ENOMEM)
                return CTL_EXIT_FAILURE;
        return r;
}

/* The biggest call sites of heap h (at its maximum, or never freed), largest first, until they add up to
 * more than limit (those that alone take it over), at most RECORD_LIMIT_SITES of them, on stderr. */
static int print_limit_sites(const json_t *h, bool leaks, uint64_t limit, const ReportOptions *o) {
        _cleanup_(heap_sites_done) HeapSites c = {};
        uint64_t sum = 0;
        int r;

        r = heap_sites_collect(h, leaks, o, &c);
        if (r < 0)
                return r;
        for (size_t i = 0; i < c.n && i < RECORD_LIMIT_SITES && (i == 0 || sum <= limit); i++) {
                const HeapSite *s = &c.sites[i];
                uint64_t error = heap_site_error(s->bytes, reply_count(h, "sampleInterval"));
                char size[FORMAT_BUFFER_MAX], err[FORMAT_BUFFER_MAX];
                _cleanup_free_ char *label = heap_site_label(s), *clean = label ? format_sanitize(label) : NULL;
                if (!clean)
                        return -ENOMEM;
                fprintf(stderr, "  %10s (%" PRIu64 "x%s%s) %s\n", format_bytes(size, sizeof(size), s->bytes), s->blocks,
                        error > 0 ? ", +-" : "", error > 0 ? format_bytes(err, sizeof(err), error) : "", clean);
                sum += s->bytes;
        }
        return 0;
}

/* --max-peak and --max-leaked against each heap of pid (each image of the command's process): 1 when one
 * passed a limit, said on stderr with the call sites that take it over; 0 when none did; -ENOMEM. */
static int check_limits(json_t *doc, pid_t pid, const ReportOptions *o) {
        json_t *h;
        size_t i;
        bool over = false;
        int r;

        json_array_foreach(reply_array(reply_object(doc, "heap"), "heaps"), i, h) {
                if (reply_int(h, "pid", -1) != pid)
                        continue;
                for (int leaks = 0; leaks < 2; leaks++) {
                        uint64_t limit = leaks ? arg_max_leaked : arg_max_peak;
                        uint64_t bytes = reply_count(h, leaks ? "liveBytes" : "peakBytes");
                        char have[FORMAT_BUFFER_MAX], allowed[FORMAT_BUFFER_MAX];
                        _cleanup_free_ char *comm = format_sanitize(reply_string(h, "comm") ?: "?");
                        if (limit == UINT64_MAX || bytes <= limit)
                                continue;
                        if (!comm)
                                return -ENOMEM;
                        over = true;
                        fprintf(stderr, "memstrackctl: the heap of pid %d (%s) %s %s (%" PRIu64 " bytes)%s, over "
                                "--max-%s=%s (%" PRIu64 " bytes); its biggest call sites:\n", (int) pid, comm,
                                leaks ? "left" : "peaked at", format_bytes(have, sizeof(have), bytes), bytes,
                                leaks ? " never freed" : "", leaks ? "leaked" : "peak",
                                format_bytes(allowed, sizeof(allowed), limit), limit);
                        r = print_limit_sites(h, leaks, limit, o);
                        if (r < 0)
                                return r;
                }
        }
        return over;
}

/* Reports the heaps of pid: the command's (status its wait status), or with stop a process recorded with
 * --pid, whose recording is stopped first. d: the private memstrackd, whose warnings are shown; NULL: the
 * system's (--live), whose heaps of other processes are left out. *ret_over_limit: whether pid's heap
 * passed --max-peak or --max-leaked (said). */
static int report_heaps(PrivateDaemon *d, pid_t pid, int status, bool stop, const ReportOptions *o,
                bool *ret_over_limit) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *doc = NULL, *heap = NULL;
        SnapshotRequest req = SNAPSHOT_REQUEST_DEFAULT;
        int r;

        /* The private daemon traces heaps alone: nothing of the kernel's to ask it for. */
        req.heaps_only = d != NULL;
        if (d)
                arg_address = d->address;
        r = ctl_connect(&c);
        if (r != 0)
                return r;
        if (stop) {
                json_auto_t *params = json_pack("{s:i}", "pid", (int) pid), *reply = NULL;
                if (!params)
                        return -ENOMEM;
                r = ctl_call(c, "io.memstrack.HeapStop", params, &reply);
                if (r != 0)
                        return r;
        }
        r = wait_heaps_ended(c, pid, !d, &heap);
        if (r != 0)
                return r;
        r = snapshot_fetch(c, &req, &doc);
        if (r != 0)
                return r;
        /* Which process the recording is of: the heap formats report it in full, whatever it holds. */
        if (json_object_set(doc, "heap", heap) < 0 ||
            json_object_set_new(doc, "heapCommandPid", json_integer(pid)) < 0)
                return -ENOMEM;
        if (d) {
                private_daemon_print_warnings(d);
                /* All is asked: it exits while the report is written. */
                private_daemon_terminate(d);
        }

        if (json_array_size(reply_array(heap, "heaps")) == 0 && stop) {
                fprintf(stderr, "memstrackctl: nothing was recorded of process %d.\n", (int) pid);
                return CTL_EXIT_FAILURE;
        }
        if (json_array_size(reply_array(heap, "heaps")) == 0) {
                fprintf(stderr, "memstrackctl: nothing was recorded: no process of the command loaded the heap "
                        "library (a static or setuid program, or one that clears LD_PRELOAD).\n");
                return CTL_EXIT_FAILURE;
        }
        if (WIFSIGNALED(status))
                fprintf(stderr, "memstrackctl: the command was killed by signal %d (%s); its heap is reported as "
                        "far as it was recorded.\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
        if (arg_file) {
                r = snapshot_save(doc, arg_file);
                if (r < 0) {
                        fprintf(stderr, "Cannot write %s: %s\n", arg_file, strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
        }
        /* --file alone writes the file; with --format or --output it reports as well. */
        if (!arg_file || arg_format || arg_output) {
                r = write_heap_report(doc, o);
                if (r != 0)
                        return r;
        }
        r = check_limits(doc, pid, o);
        if (r < 0)
                return r;
        *ret_over_limit = r > 0;
        return 0;
}

/* record's exit status: COMMAND's (0 when it was no command: --pid), else 7 if its heap passed a limit. A
 * command that failed keeps its own status: the limits were said all the same. */
static int record_exit(int command_status, bool over_limit) {
        return command_status == 0 && over_limit ? CTL_EXIT_LIMIT : command_status;
}

/* record --pid: a memstrackd whose heap-uprobe source attaches to the process, until it exits, --seconds
 * pass or a stop signal comes; then the recording is stopped (the uprobes detached, the process runs on)
 * and reported. */
static int record_pid(pid_t pid, const ReportOptions *o) {
        _cleanup_free_ char *input = NULL, *interval = NULL, *action = NULL;
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        PrivateDaemon d = {};
        int r;

        if (pidfd < 0) {
                fprintf(stderr, "memstrackctl: cannot record process %d: %s.\n", (int) pid, strerror(errno));
                return CTL_EXIT_FAILURE;
        }
        if (asprintf(&input, "--source-input=%d", (int) pid) < 0 ||
            asprintf(&interval, "--heap-sample-interval=%llu", (unsigned long long) arg_sample_interval) < 0 ||
            asprintf(&action, "attach to process %d", (int) pid) < 0)
                return -ENOMEM;

        private_daemon_catch_stop_signals();
        r = private_daemon_prepare(&d);
        if (r < 0)
                goto finish;
        char *const args[] = { (char *) "--source=heap-uprobe", input, interval, NULL };
        r = private_daemon_start(&d, args);
        if (r < 0)
                goto finish;
        r = private_daemon_wait_ready(&d, action, RECORD_START_TIMEOUT_MSEC);
        if (r == -EINTR)
                r = 0;          /* stopped before it began: an empty recording, reported as such */
        if (r != 0)
                goto finish;
        if (!private_daemon_stop_signal()) {
                char duration[64] = "";
                if (arg_seconds_usec > 0)
                        (void) snprintf(duration, sizeof(duration), " for %.1f s", (double) arg_seconds_usec / 1e6);
                fprintf(stderr, "memstrackctl: recording the heap of process %d%s; Ctrl-C stops.\n", (int) pid,
                        duration);
                r = private_daemon_wait_fd(pidfd, arg_seconds_usec > 0 ? arg_seconds_usec : UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        goto finish;
        }
        bool over = false;
        r = report_heaps(&d, pid, 0, true, o, &over);
        if (r == 0)
                r = record_exit(0, over);

finish:
        arg_address = NULL;
        private_daemon_release_stop_signals();
        private_daemon_stop(&d);
        return r;
}

/* record --live: the command hands its heap to the system's memstrackd (--address), which shows it beside
 * the process's pages (tasks, stacks --task, top), and is reported from there. */
static int record_live(char *argv[], const char *preload, const ReportOptions *o) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_auto_t *status_reply = NULL;
        pid_t pid;
        int status = 0, r;

        r = ctl_connect(&c);
        if (r != 0)
                return r;
        r = ctl_call(c, "io.memstrack.Status", NULL, &status_reply);
        if (r != 0)
                return r;
        const char *heap_socket = reply_string(status_reply, "heapSocket");
        if (!heap_socket) {
                fprintf(stderr, "memstrackctl: memstrackd at %s takes no heaps (it runs without --heap-socket).\n",
                        ctl_address());
                return CTL_EXIT_FAILURE;
        }
        r = run_command(argv + 1, heap_socket, preload, &pid);
        if (r < 0)
                return r;
        struct sigaction ignore = { .sa_handler = SIG_IGN }, old_int, old_quit;
        (void) sigaction(SIGINT, &ignore, &old_int);
        (void) sigaction(SIGQUIT, &ignore, &old_quit);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        (void) sigaction(SIGINT, &old_int, NULL);
        (void) sigaction(SIGQUIT, &old_quit, NULL);
        bool over = false;
        r = report_heaps(NULL, pid, status, false, o, &over);
        return r == 0 ? record_exit(command_exit(status), over) : r;
}

int verb_record(int argc, char *argv[]) {
        _cleanup_free_ char *program = NULL, *preload = NULL;
        const char *heap_socket = NULL;
        ReportOptions o;
        PrivateDaemon d = {};
        pid_t pid = 0;
        int status = 0, r;

        if (arg_address && !arg_live) {
                fprintf(stderr, "memstrackctl: record runs a memstrackd of its own and takes no --address "
                        "(but --live does).\n");
                return CTL_EXIT_USAGE;
        }
        if (arg_live && arg_pid > 0) {
                fprintf(stderr, "memstrackctl: record --pid runs a memstrackd of its own; --live goes with a "
                        "command.\n");
                return CTL_EXIT_USAGE;
        }
        if ((arg_pid > 0) == (argc > 1)) {
                fprintf(stderr, "memstrackctl: record takes a command (after --) or --pid PID, %s.\n"
                        "Try 'memstrackctl --help'.\n", argc > 1 ? "not both" : "and got neither");
                return CTL_EXIT_USAGE;
        }
        if (arg_seconds_usec > 0 && arg_pid <= 0) {
                fprintf(stderr, "memstrackctl: --seconds goes with --pid: a command is recorded to its end.\n"
                        "Try 'memstrackctl --help'.\n");
                return CTL_EXIT_USAGE;
        }
        r = ctl_report_options(CTL_HEAP_FORMAT_DEFAULT, &o);
        if (r != 0)
                return r;
        if (arg_pid > 0)
                return record_pid((pid_t) arg_pid, &o);
        program = find_program(argv[1]);
        const char *obstacle = program ? preload_obstacle(program) : NULL;
        if (obstacle) {
                fprintf(stderr, "memstrackctl: cannot record %s: %s.\n", argv[1], obstacle);
                return CTL_EXIT_FAILURE;
        }
        r = preload_value(&preload);
        if (r != 0)
                return r;
        if (arg_live)
                return record_live(argv, preload, &o);

        /* The heap source's socket beside the daemon's, bound here and passed to it. */
        r = private_daemon_prepare(&d);
        if (r >= 0)
                r = private_daemon_listen(&d, "heap", SOCK_SEQPACKET, &heap_socket);
        if (r < 0)
                goto finish;
        /* No PSI trigger: units near their memory limit are the system daemon's concern, and closing a
         * trigger waits for an RCU grace period (~10 ms) as this daemon stops, on the command's clock. */
        char *const args[] = { (char *) "--source=heap", (char *) "--pressure-trigger=", NULL };
        r = private_daemon_start(&d, args);
        if (r < 0)
                goto finish;
        /* The command starts beside it: its library's hello waits in the socket's queue until memstrackd
         * takes it. */
        r = run_command(argv + 1, heap_socket, preload, &pid);
        if (r < 0)
                goto finish;

        /* Like system(): a Ctrl-C is for the command; we report what it did. */
        struct sigaction ignore = { .sa_handler = SIG_IGN }, old_int, old_quit;
        (void) sigaction(SIGINT, &ignore, &old_int);
        (void) sigaction(SIGQUIT, &ignore, &old_quit);
        /* Should memstrackd not start, the command runs unrecorded (its library says so) to its end. */
        int ready = private_daemon_wait_ready(&d, "record the command's heap", RECORD_START_TIMEOUT_MSEC);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        (void) sigaction(SIGINT, &old_int, NULL);
        (void) sigaction(SIGQUIT, &old_quit, NULL);
        if (ready != 0) {
                r = ready;
                goto finish;
        }

        bool over = false;
        r = report_heaps(&d, pid, status, false, &o, &over);
        if (r == 0)
                r = record_exit(command_exit(status), over);

finish:
        arg_address = NULL;
        private_daemon_stop(&d);
        return r;
}
