/* SPDX-License-Identifier: MIT */

/*
 * loadgen: allocates exactly N pages of anonymous memory (or of a memfd), holds them and frees them, as
 * load for benchmarks and as a known quantity for tests.
 *
 * Every page is touched once by a one-byte write, so exactly N page faults allocate N order-0 pages:
 * the mapping is marked MADV_NOHUGEPAGE, because with transparent huge pages one fault could allocate
 * 512 pages at once (order 9) and the count would depend on alignment and THP settings.
 *
 * Modes:
 *   scripted (default)  alloc, hold (--hold-ms or --hold-until-signal SIGUSR1), free; --repeat K times
 *   --commands          one command per stdin line, one reply line each on stdout, so a test decides
 *                       when things happen:  alloc -> "allocated", free -> "freed", release -> "released"
 *                       (--memfd: the holder drops the last reference), exit -> "bye" (EOF acts as exit)
 *   --seconds S         alloc/touch/free rounds of N pages (default 256) as fast as possible (or at
 *                       --rate) for S seconds, per thread; prints pages and pages/s at the end
 * The process that allocates first prints "pid=PID" (with --child a forked child, whose pid it is);
 * with --memfd the process holding the second reference prints "holder=PID".
 *   --eventfds N        with --seconds: slab objects instead of pages, one thread: rounds of opening N
 *                       eventfds and closing them (each eventfd is a kmalloc'd context and a struct file
 *                       from its kmem_cache, both freed at close) for S seconds; prints eventfds and
 *                       eventfds/s at the end
 * --comm NAME renames the process first (PR_SET_NAME): NAME is taken as raw bytes, so a test can give it
 * bytes that are not UTF-8 or control characters (bash $'bad\xff'); the kernel keeps its first 15 bytes.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

#define THREADS_MAX 256u
#define SECONDS_PAGES_DEFAULT 256u
/* A fast paced thread checks the clock every this many pages, a slow one after each page. */
#define RATE_STEP_PAGES 16u
#define RATE_STEP_MIN_RATE 16000u

static uint64_t arg_pages;
static uint64_t arg_hold_ms;
static bool arg_hold_until_signal;
static bool arg_child;
static unsigned arg_threads = 1;
static uint64_t arg_rate;               /* pages per second over all threads, 0: unlimited */
static uint64_t arg_repeat = 1;
static uint64_t arg_seconds;
static uint64_t arg_eventfds;
static bool arg_memfd;
static bool arg_commands;
static const char *arg_comm;

typedef struct Region {
        uint8_t *addr;
        size_t n_pages;
        int memfd;                      /* --memfd: our reference to the file, -EBADF otherwise */
        pid_t holder;                   /* --memfd: the process holding the second reference */
        int holder_pipe;                /* write end: closing it tells the holder to drop its reference */
} Region;

typedef struct TouchJob {
        uint8_t *addr;
        size_t n_pages;
        uint64_t rate;                  /* this thread's pages per second, 0: unlimited */
        uint64_t deadline_nsec;         /* --seconds: loop rounds until then (CLOCK_MONOTONIC) */
        uint64_t done_pages;
        int error;
} TouchJob;

static size_t page_size;

static void sleep_until_nsec(uint64_t t) {
        struct timespec ts = {
                .tv_sec = (time_t) (t / UINT64_C(1000000000)),
                .tv_nsec = (long) (t % UINT64_C(1000000000)),
        };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

/* Writes one byte to each page, paced at rate pages per second if rate is not 0. Never inlined: the
 * page faults happen here, and the integration tests look for this name in user stacks. */
static __attribute__((noinline)) void touch_pages(uint8_t *addr, size_t n_pages, uint64_t rate) {
        uint64_t start = rate ? now_nsec(CLOCK_MONOTONIC) : 0;
        size_t step = rate >= RATE_STEP_MIN_RATE ? RATE_STEP_PAGES : 1;

        for (size_t i = 0; i < n_pages; i++) {
                ((volatile uint8_t *) addr)[i * page_size] = 1;
                if (rate && (i + 1) % step == 0)
                        sleep_until_nsec(start + (uint64_t) (i + 1) * UINT64_C(1000000000) / rate);
        }
}

static uint8_t *map_anonymous(size_t n_pages) {
        void *p = mmap(NULL, n_pages * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED)
                return NULL;
        /* Order-0 faults only, see the top of this file. Kernels without THP reject this: harmless. */
        (void) madvise(p, n_pages * page_size, MADV_NOHUGEPAGE);
        return p;
}

static void *touch_thread(void *userdata) {
        TouchJob *job = userdata;

        if (job->deadline_nsec == 0) {
                touch_pages(job->addr, job->n_pages, job->rate);
                job->done_pages = job->n_pages;
                return NULL;
        }

        /* Benchmark rounds: every round allocates, touches and frees its own mapping. */
        while (now_nsec(CLOCK_MONOTONIC) < job->deadline_nsec) {
                uint8_t *p = map_anonymous(job->n_pages);

                if (!p) {
                        job->error = negative_errno();
                        return NULL;
                }
                touch_pages(p, job->n_pages, job->rate);
                (void) munmap(p, job->n_pages * page_size);
                job->done_pages += job->n_pages;
        }
        return NULL;
}

/* Runs T touch jobs over disjoint slices of addr (or, with a deadline, independent rounds). */
static int run_threads(uint8_t *addr, size_t n_pages, uint64_t deadline_nsec, uint64_t *ret_pages) {
        TouchJob jobs[THREADS_MAX] = {};
        pthread_t threads[THREADS_MAX];
        unsigned n = arg_threads;
        uint64_t total = 0;
        int r = 0;

        for (unsigned i = 0; i < n; i++) {
                size_t from = n_pages * i / n, to = n_pages * (i + 1) / n;

                jobs[i] = (TouchJob) {
                        .addr = addr ? addr + from * page_size : NULL,
                        .n_pages = deadline_nsec ? MAX(n_pages / n, (size_t) 1) : to - from,
                        .rate = arg_rate / n,
                        .deadline_nsec = deadline_nsec,
                };
                if (arg_rate && jobs[i].rate == 0)
                        jobs[i].rate = 1;
        }
        if (n == 1)
                (void) touch_thread(&jobs[0]);
        else
                for (unsigned i = 0; i < n; i++) {
                        r = -pthread_create(&threads[i], NULL, touch_thread, &jobs[i]);
                        if (r < 0) {
                                n = i;
                                log_error_errno(r, "Failed to start a thread: %m");
                                break;
                        }
                }
        if (arg_threads > 1)
                for (unsigned i = 0; i < n; i++)
                        (void) pthread_join(threads[i], NULL);
        for (unsigned i = 0; i < n; i++) {
                total += jobs[i].done_pages;
                if (jobs[i].error < 0 && r >= 0)
                        r = log_error_errno(jobs[i].error, "Failed to map memory: %m");
        }
        if (ret_pages)
                *ret_pages = total;
        return r;
}

static void say(const char *line) {
        (void) printf("%s\n", line);
        (void) fflush(stdout);
}

/* The holder: keeps its copy of the memfd open until the write end of the pipe closes. */
static _Noreturn void holder_main(int memfd, int pipe_read) {
        char c;

        while (read(pipe_read, &c, 1) < 0 && errno == EINTR)
                ;
        /* Dropping the last reference frees the pages, in this process. */
        (void) close(memfd);
        _exit(EXIT_SUCCESS);
}

static int region_alloc(Region *reg, size_t n_pages) {
        int r;

        assert(!reg->addr);
        reg->n_pages = n_pages;
        if (arg_memfd) {
                int pipefd[2];
                pid_t pid;
                void *p;

                reg->memfd = memfd_create("loadgen", MFD_CLOEXEC);
                if (reg->memfd < 0)
                        return log_error_errno(errno, "Failed to create a memfd: %m");
                if (ftruncate(reg->memfd, (off_t) (n_pages * page_size)) < 0)
                        return log_error_errno(errno, "Failed to size the memfd: %m");
                if (pipe2(pipefd, O_CLOEXEC) < 0)
                        return log_error_errno(errno, "Failed to create a pipe: %m");
                pid = fork();
                if (pid < 0)
                        return log_error_errno(errno, "Failed to fork the memfd holder: %m");
                if (pid == 0) {
                        (void) close(pipefd[1]);
                        holder_main(reg->memfd, pipefd[0]);
                }
                (void) close(pipefd[0]);
                reg->holder = pid;
                reg->holder_pipe = pipefd[1];
                (void) printf("holder=%d\n", (int) pid);
                (void) fflush(stdout);

                p = mmap(NULL, n_pages * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, reg->memfd, 0);
                if (p == MAP_FAILED)
                        return log_error_errno(errno, "Failed to map the memfd: %m");
                (void) madvise(p, n_pages * page_size, MADV_NOHUGEPAGE);
                reg->addr = p;
        } else {
                reg->addr = map_anonymous(n_pages);
                if (!reg->addr)
                        return log_error_errno(errno, "Failed to map %zu pages: %m", n_pages);
        }

        r = run_threads(reg->addr, n_pages, 0, NULL);
        return r;
}

/* Unmaps; with --memfd also drops our reference, so the holder's is the last one. */
static void region_free(Region *reg) {
        if (reg->addr)
                (void) munmap(reg->addr, reg->n_pages * page_size);
        reg->addr = NULL;
        reg->memfd = safe_close(reg->memfd);
}

/* --memfd: tells the holder to drop the last reference and waits until it has. */
static void region_release(Region *reg) {
        reg->holder_pipe = safe_close(reg->holder_pipe);
        if (reg->holder > 0)
                (void) waitpid(reg->holder, NULL, 0);
        reg->holder = 0;
}

static void hold(void) {
        if (arg_hold_until_signal) {
                sigset_t set;
                int sig;

                (void) sigemptyset(&set);
                (void) sigaddset(&set, SIGUSR1);
                (void) sigwait(&set, &sig);
        } else if (arg_hold_ms > 0)
                sleep_until_nsec(now_nsec(CLOCK_MONOTONIC) + arg_hold_ms * UINT64_C(1000000));
}

static int run_scripted(void) {
        for (uint64_t i = 0; i < arg_repeat; i++) {
                Region reg = { .memfd = -EBADF, .holder_pipe = -EBADF };
                int r;

                r = region_alloc(&reg, arg_pages);
                if (r < 0) {
                        region_free(&reg);
                        region_release(&reg);
                        return r;
                }
                say("allocated");
                hold();
                region_free(&reg);
                say("freed");
                if (arg_memfd) {
                        region_release(&reg);
                        say("released");
                }
        }
        return 0;
}

static int run_commands(void) {
        Region reg = { .memfd = -EBADF, .holder_pipe = -EBADF };
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0;
        int r = 0;

        for (;;) {
                ssize_t n = getline(&line, &allocated, stdin);

                if (n < 0)
                        break;          /* EOF: as "exit" */
                if (n > 0 && line[n - 1] == '\n')
                        line[n - 1] = '\0';

                if (streq(line, "alloc")) {
                        if (reg.addr || reg.holder > 0) {
                                say("error busy");
                                continue;
                        }
                        r = region_alloc(&reg, arg_pages);
                        if (r < 0)
                                break;
                        say("allocated");
                } else if (streq(line, "free")) {
                        region_free(&reg);
                        say("freed");
                } else if (streq(line, "release")) {
                        region_release(&reg);
                        say("released");
                } else if (streq(line, "exit"))
                        break;
                else
                        say("error unknown-command");
        }
        region_free(&reg);
        region_release(&reg);
        say("bye");
        return r;
}

static int run_seconds(void) {
        uint64_t start = now_nsec(CLOCK_MONOTONIC), pages, elapsed;
        int r;

        r = run_threads(NULL, arg_pages, start + arg_seconds * UINT64_C(1000000000), &pages);
        if (r < 0)
                return r;
        elapsed = now_nsec(CLOCK_MONOTONIC) - start;
        (void) printf("pages=%" PRIu64 " seconds=%.3f pages_per_sec=%.0f\n", pages, (double) elapsed / 1e9,
                      (double) pages * 1e9 / (double) elapsed);
        (void) fflush(stdout);
        return 0;
}

/* --eventfds: open and close arg_eventfds eventfds per round until the deadline. */
static int run_eventfds(void) {
        uint64_t start = now_nsec(CLOCK_MONOTONIC), end = start + arg_seconds * UINT64_C(1000000000), n = 0;
        uint64_t elapsed;
        _cleanup_free_ int *fds = calloc(arg_eventfds, sizeof(int));

        if (!fds)
                return log_oom();
        do {
                for (uint64_t i = 0; i < arg_eventfds; i++) {
                        fds[i] = eventfd(0, EFD_CLOEXEC);
                        if (fds[i] < 0) {
                                int r = -errno;

                                for (uint64_t j = 0; j < i; j++)
                                        (void) close(fds[j]);
                                return log_error_errno(r, "Failed to create an eventfd: %m");
                        }
                }
                for (uint64_t i = 0; i < arg_eventfds; i++)
                        (void) close(fds[i]);
                n += arg_eventfds;
        } while (now_nsec(CLOCK_MONOTONIC) < end);
        elapsed = now_nsec(CLOCK_MONOTONIC) - start;
        (void) printf("eventfds=%" PRIu64 " seconds=%.3f eventfds_per_sec=%.0f\n", n, (double) elapsed / 1e9,
                      (double) n * 1e9 / (double) elapsed);
        (void) fflush(stdout);
        return 0;
}

static int run(void) {
        (void) printf("pid=%d\n", (int) getpid());
        (void) fflush(stdout);

        if (arg_seconds > 0 && arg_eventfds > 0)
                return run_eventfds();
        if (arg_seconds > 0)
                return run_seconds();
        if (arg_commands)
                return run_commands();
        return run_scripted();
}

static void help(void) {
        (void) printf("%s --pages N [OPTIONS]\n\n"
                      "Allocates, touches, holds and frees exactly N pages.\n\n"
                      "  --pages N              pages per allocation (per round with --seconds)\n"
                      "  --hold-ms MS           hold the pages this long before freeing\n"
                      "  --hold-until-signal    hold the pages until SIGUSR1\n"
                      "  --child                allocate in a forked child (its pid is printed)\n"
                      "  --threads T            touch disjoint slices from T threads\n"
                      "  --rate PAGES_PER_SEC   pace the touching\n"
                      "  --repeat K             allocate, hold and free K times\n"
                      "  --seconds S            benchmark: alloc/touch/free rounds for S seconds\n"
                      "  --eventfds N           with --seconds: open and close N eventfds per round instead\n"
                      "  --memfd                allocate in a memfd, a second process holds the last reference\n"
                      "  --commands             take alloc/free/release/exit commands on stdin\n"
                      "  --comm NAME            rename the process to NAME's bytes (the kernel keeps 15)\n",
                      program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_PAGES = 0x100, ARG_HOLD_MS, ARG_HOLD_UNTIL_SIGNAL, ARG_CHILD, ARG_THREADS, ARG_RATE,
                ARG_REPEAT, ARG_SECONDS, ARG_MEMFD, ARG_COMMANDS, ARG_COMM, ARG_EVENTFDS,
        };
        static const struct option options[] = {
                { "help",              no_argument,       NULL, 'h'                   },
                { "pages",             required_argument, NULL, ARG_PAGES             },
                { "hold-ms",           required_argument, NULL, ARG_HOLD_MS           },
                { "hold-until-signal", no_argument,       NULL, ARG_HOLD_UNTIL_SIGNAL },
                { "child",             no_argument,       NULL, ARG_CHILD             },
                { "threads",           required_argument, NULL, ARG_THREADS           },
                { "rate",              required_argument, NULL, ARG_RATE              },
                { "repeat",            required_argument, NULL, ARG_REPEAT            },
                { "seconds",           required_argument, NULL, ARG_SECONDS           },
                { "memfd",             no_argument,       NULL, ARG_MEMFD             },
                { "commands",          no_argument,       NULL, ARG_COMMANDS          },
                { "comm",              required_argument, NULL, ARG_COMM              },
                { "eventfds",          required_argument, NULL, ARG_EVENTFDS          },
                {}
        };
        uint64_t v;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                int r = 0;

                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_PAGES:
                        r = parse_uint64(optarg, 1, UINT64_C(1) << 40, &arg_pages);
                        break;
                case ARG_HOLD_MS:
                        r = parse_uint64(optarg, 0, UINT64_C(1) << 40, &arg_hold_ms);
                        break;
                case ARG_HOLD_UNTIL_SIGNAL:
                        arg_hold_until_signal = true;
                        break;
                case ARG_CHILD:
                        arg_child = true;
                        break;
                case ARG_THREADS:
                        r = parse_uint64(optarg, 1, THREADS_MAX, &v);
                        arg_threads = (unsigned) v;
                        break;
                case ARG_RATE:
                        r = parse_uint64(optarg, 1, UINT64_C(1) << 40, &arg_rate);
                        break;
                case ARG_REPEAT:
                        r = parse_uint64(optarg, 1, UINT64_C(1) << 40, &arg_repeat);
                        break;
                case ARG_SECONDS:
                        r = parse_uint64(optarg, 1, UINT64_C(1) << 30, &arg_seconds);
                        break;
                case ARG_MEMFD:
                        arg_memfd = true;
                        break;
                case ARG_COMMANDS:
                        arg_commands = true;
                        break;
                case ARG_COMM:
                        arg_comm = optarg;
                        break;
                case ARG_EVENTFDS:
                        r = parse_uint64(optarg, 1, 4096, &arg_eventfds);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        assert(false);
                }
                if (r < 0)
                        return log_error_errno(r, "Invalid value for --%s: %s", options[c - ARG_PAGES + 1].name,
                                               optarg);
        }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);
        if (arg_eventfds > 0 && (arg_seconds == 0 || arg_threads > 1 || arg_child))
                return log_error_errno(EINVAL, "--eventfds needs --seconds, and runs one thread in this process.");
        if (arg_seconds > 0 && arg_pages == 0)
                arg_pages = SECONDS_PAGES_DEFAULT;
        if (arg_pages == 0)
                return log_error_errno(EINVAL, "--pages is required.");
        if (arg_seconds > 0 && (arg_memfd || arg_commands))
                return log_error_errno(EINVAL, "--seconds cannot be combined with --memfd or --commands.");
        if (arg_threads > arg_pages)
                return log_error_errno(EINVAL, "More threads than pages.");
        return 1;
}

int main(int argc, char *argv[]) {
        sigset_t set;
        int r, status;
        pid_t pid;

        page_size = (size_t) sysconf(_SC_PAGESIZE);
        log_set_target_journal(false);

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        /* Before the fork: the child inherits the name. */
        if (arg_comm && prctl(PR_SET_NAME, (unsigned long) arg_comm, 0, 0, 0) < 0) {
                log_error_errno(errno, "Failed to rename the process: %m");
                return EXIT_FAILURE;
        }

        /* SIGUSR1 is taken with sigwait(), in whichever process holds. */
        (void) sigemptyset(&set);
        (void) sigaddset(&set, SIGUSR1);
        (void) sigprocmask(SIG_BLOCK, &set, NULL);

        if (!arg_child)
                return run() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        (void) fflush(stdout);
        pid = fork();
        if (pid < 0) {
                log_error_errno(errno, "Failed to fork: %m");
                return EXIT_FAILURE;
        }
        if (pid == 0)
                _exit(run() < 0 ? EXIT_FAILURE : EXIT_SUCCESS);

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        log_error_errno(errno, "Failed to wait for the child: %m");
                        return EXIT_FAILURE;
                }
        return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_FAILURE;
}
