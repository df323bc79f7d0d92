/* SPDX-License-Identifier: MIT */

/*
 * perf-source-probe: runs the perf event source on the live kernel with a deliberately tiny sink that
 * counts pages per process (allocations +2^order; frees matched by pfn to the allocating process). It
 * validates the source before the accounting core exists and measures its cost; it is not the core.
 *
 *   --seconds S   trace for S seconds (or until SIGINT/SIGTERM), then print totals and the CPU time used
 *   --commands    print "ready", then answer stdin lines, flushing the rings first:
 *                   report PID  -> "pid=PID alloc_pages=A freed_pages=F live_pages=L"
 *                   task PID    -> "pid=PID comm=C parent=P seeded=0|1 baseline_pages=B exited=0|1 cmdline=..."
 *                   stats       -> "records=R lost=L wakeups=W alloc_pages=A freed_pages=F ..."
 *                   quit        -> exit
 * Source options: --tracefs DIR --buffer-pages N --wakeup-bytes B --depth D --user-stacks, the generic
 * SourceOptions: the probe opens "perf" through the registry (source_new()), as memstrackd does.
 * Exits non-zero when the source cannot be opened; the reason is on stderr.
 */

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "event.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "source.h"

static uint64_t arg_seconds;
static bool arg_commands;
static SourceOptions arg_options;

/* An open-addressing map from a nonzero u64 key to a u64 value; backward-shift deletion. */
typedef struct U64Map {
        uint64_t *keys;                 /* 0: empty slot */
        uint64_t *values;
        size_t n_slots;                 /* a power of two */
        size_t n_used;
} U64Map;

static size_t map_slot(const U64Map *m, uint64_t key) {
        /* Fibonacci hashing spreads consecutive pfns and pids. */
        return (size_t) ((key * UINT64_C(0x9e3779b97f4a7c15)) >> 20) & (m->n_slots - 1);
}

static uint64_t *map_get(const U64Map *m, uint64_t key) {
        if (m->n_slots == 0)
                return NULL;
        for (size_t i = map_slot(m, key);; i = (i + 1) & (m->n_slots - 1)) {
                if (m->keys[i] == key)
                        return &m->values[i];
                if (m->keys[i] == 0)
                        return NULL;
        }
}

static int map_put(U64Map *m, uint64_t key, uint64_t value);

static int map_grow(U64Map *m) {
        U64Map bigger = { .n_slots = m->n_slots ? m->n_slots * 2 : 4096 };

        bigger.keys = calloc(bigger.n_slots, sizeof(uint64_t));
        bigger.values = calloc(bigger.n_slots, sizeof(uint64_t));
        if (!bigger.keys || !bigger.values) {
                free(bigger.keys);
                free(bigger.values);
                return -ENOMEM;
        }
        for (size_t i = 0; i < m->n_slots; i++)
                if (m->keys[i] != 0)
                        (void) map_put(&bigger, m->keys[i], m->values[i]);
        free(m->keys);
        free(m->values);
        *m = bigger;
        return 0;
}

static int map_put(U64Map *m, uint64_t key, uint64_t value) {
        size_t i;

        assert(key != 0);
        if ((m->n_used + 1) * 2 > m->n_slots) {
                int r = map_grow(m);
                if (r < 0)
                        return r;
        }
        for (i = map_slot(m, key); m->keys[i] != 0 && m->keys[i] != key; i = (i + 1) & (m->n_slots - 1))
                ;
        if (m->keys[i] == 0)
                m->n_used++;
        m->keys[i] = key;
        m->values[i] = value;
        return 0;
}

static void map_remove(U64Map *m, uint64_t key) {
        size_t i, j;

        if (m->n_slots == 0)
                return;
        for (i = map_slot(m, key); m->keys[i] != key; i = (i + 1) & (m->n_slots - 1))
                if (m->keys[i] == 0)
                        return;
        /* Pull later members of the cluster back so no lookup stops early at the hole. */
        for (j = (i + 1) & (m->n_slots - 1); m->keys[j] != 0; j = (j + 1) & (m->n_slots - 1)) {
                size_t home = map_slot(m, m->keys[j]);

                if (((j - home) & (m->n_slots - 1)) >= ((j - i) & (m->n_slots - 1))) {
                        m->keys[i] = m->keys[j];
                        m->values[i] = m->values[j];
                        i = j;
                }
        }
        m->keys[i] = 0;
        m->n_used--;
}

static void map_done(U64Map *m) {
        free(m->keys);
        free(m->values);
        *m = (U64Map) {};
}

typedef struct PidStat {
        uint64_t alloc_pages;
        uint64_t freed_pages;
        char comm[16];                  /* TASK_COMM_LEN */
        char *cmdline;                  /* owned, NULL if unknown */
        int32_t parent;                 /* from FORK, 0 if unknown */
        uint64_t baseline_pages;        /* from TASK_NEW */
        bool seeded, exited;
} PidStat;

typedef struct Probe {
        EventSource *source;
        sd_event *event;
        U64Map pages;                   /* pfn + 1 -> pid << 8 | order */
        U64Map pids;                    /* pid + 1 -> index into stats */
        PidStat *stats;
        size_t n_stats, allocated_stats;
        uint64_t alloc_pages, freed_pages, unmatched_frees, lost, task_events, module_events;
        uint64_t kernel_frames, user_frames, allocs_with_user_frames;
        int error;                      /* first -ENOMEM in the sink */
} Probe;

static PidStat *probe_stat(Probe *p, int32_t pid) {
        uint64_t *v = map_get(&p->pids, (uint64_t) (uint32_t) pid + 1);

        if (v)
                return &p->stats[*v];
        if (p->n_stats == p->allocated_stats) {
                size_t want = MAX(p->allocated_stats * 2, (size_t) 256);
                PidStat *q = realloc(p->stats, want * sizeof(*q));

                if (!q)
                        return NULL;
                p->stats = q;
                p->allocated_stats = want;
        }
        if (map_put(&p->pids, (uint64_t) (uint32_t) pid + 1, p->n_stats) < 0)
                return NULL;
        p->stats[p->n_stats] = (PidStat) {};
        return &p->stats[p->n_stats++];
}

static void set_comm(PidStat *st, const char *comm) {
        (void) snprintf(st->comm, sizeof(st->comm), "%s", comm);
}

/* Remembers names, parents and exits per process (threads are folded into their process). */
static void probe_task_event(Probe *p, const MsEvent *ev) {
        char comm[sizeof(((PidStat *) NULL)->comm)] = "";
        PidStat *st;

        if (ev->type == MS_EVENT_TASK_FORK) {
                if (ev->pid == ev->task.parent_pid)
                        return;         /* a new thread */
                st = probe_stat(p, ev->task.parent_pid);
                if (st)
                        memcpy(comm, st->comm, sizeof(comm));
        }
        st = probe_stat(p, ev->pid);
        if (!st) {
                p->error = -ENOMEM;
                return;
        }
        switch (ev->type) {
        case MS_EVENT_TASK_NEW:
                set_comm(st, ev->task.name);
                st->seeded = true;
                st->baseline_pages = ev->task.baseline_pages;
                break;
        case MS_EVENT_TASK_FORK:
                set_comm(st, comm);
                st->parent = ev->task.parent_pid;
                st->exited = false;
                break;
        case MS_EVENT_TASK_COMM:
                if (ev->tid == ev->pid)
                        set_comm(st, ev->task.name);
                break;
        case MS_EVENT_TASK_EXIT:
                if (ev->tid == ev->pid)
                        st->exited = true;
                return;
        default:
                return;
        }
        if (ev->task.cmdline) {
                free(st->cmdline);
                st->cmdline = strdup(ev->task.cmdline);
        }
}

static void probe_event(void *userdata, const MsEvent *ev) {
        Probe *p = userdata;
        uint64_t *v;
        PidStat *st;

        switch (ev->type) {
        case MS_EVENT_PAGE_ALLOC:
                st = probe_stat(p, ev->pid);
                if (!st ||
                    map_put(&p->pages, ev->page.pfn + 1, (uint64_t) (uint32_t) ev->pid << 8 | ev->page.order) < 0) {
                        p->error = -ENOMEM;
                        return;
                }
                st->alloc_pages += UINT64_C(1) << ev->page.order;
                p->alloc_pages += UINT64_C(1) << ev->page.order;
                p->kernel_frames += ev->page.stack.n_kernel_frames;
                p->user_frames += ev->page.stack.n_frames - ev->page.stack.n_kernel_frames;
                if (ev->page.stack.n_frames > ev->page.stack.n_kernel_frames)
                        p->allocs_with_user_frames++;
                return;
        case MS_EVENT_PAGE_FREE:
                v = map_get(&p->pages, ev->page.pfn + 1);
                if (!v) {
                        p->unmatched_frees++;
                        return;
                }
                st = probe_stat(p, (int32_t) (uint32_t) (*v >> 8));
                if (st)
                        st->freed_pages += UINT64_C(1) << (*v & 0xff);
                p->freed_pages += UINT64_C(1) << (*v & 0xff);
                map_remove(&p->pages, ev->page.pfn + 1);
                return;
        case MS_EVENT_LOST:
                p->lost += ev->lost.n_lost;
                return;
        case MS_EVENT_MODULE_LOAD:
        case MS_EVENT_MODULE_FREE:
                p->module_events++;
                return;
        default:
                p->task_events++;
                probe_task_event(p, ev);
                return;
        }
}

static void print_stats(Probe *p) {
        EventSourceStats st;

        p->source->ops->get_stats(p->source, &st);
        (void) printf("records=%" PRIu64 " lost=%" PRIu64 " wakeups=%" PRIu64 " alloc_pages=%" PRIu64
                      " freed_pages=%" PRIu64 " unmatched_frees=%" PRIu64 " task_events=%" PRIu64
                      " module_events=%" PRIu64 " kernel_frames=%" PRIu64 " user_frames=%" PRIu64
                      " allocs_with_user_frames=%" PRIu64, st.records, st.lost_records, st.wakeups,
                      p->alloc_pages, p->freed_pages, p->unmatched_frees, p->task_events, p->module_events, p->kernel_frames,
                      p->user_frames, p->allocs_with_user_frames);
        for (size_t i = 0; i < st.n_cpus; i++)
                (void) printf(" lost_cpu%zu=%" PRIu64, i, st.lost_per_cpu[i]);
        (void) printf("\n");
        (void) fflush(stdout);
}

static void print_cpu_time(Probe *p) {
        EventSourceStats st;
        struct rusage ru;
        double user, sys;

        p->source->ops->get_stats(p->source, &st);
        (void) getrusage(RUSAGE_SELF, &ru);
        user = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6;
        sys = (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
        (void) printf("cpu_user_sec=%.3f cpu_sys_sec=%.3f cpu_sec_per_million_records=%.3f\n", user, sys,
                      st.records > 0 ? (user + sys) * 1e6 / (double) st.records : 0.0);
        (void) fflush(stdout);
}

static void handle_command(Probe *p, char *line) {
        char *end;
        long pid;

        p->source->ops->flush(p->source);

        if (streq(line, "stats")) {
                print_stats(p);
                return;
        }
        if (streq(line, "quit")) {
                (void) sd_event_exit(p->event, 0);
                return;
        }
        if (strncmp(line, "task ", 5) == 0) {
                errno = 0;
                pid = strtol(line + 5, &end, 10);
                if (errno == 0 && end != line + 5 && *end == '\0' && pid > 0 && pid <= INT32_MAX) {
                        PidStat *st = probe_stat(p, (int32_t) pid);

                        if (st) {
                                (void) printf("pid=%ld comm=%s parent=%" PRIi32 " seeded=%d baseline_pages=%"
                                              PRIu64 " exited=%d cmdline=%s\n", pid,
                                              st->comm[0] ? st->comm : "?", st->parent, st->seeded, st->baseline_pages, st->exited,
                                              st->cmdline ? st->cmdline : "");
                                (void) fflush(stdout);
                                return;
                        }
                }
        }
        if (strncmp(line, "report ", 7) == 0) {
                errno = 0;
                pid = strtol(line + 7, &end, 10);
                if (errno == 0 && end != line + 7 && *end == '\0' && pid > 0 && pid <= INT32_MAX) {
                        PidStat *st = probe_stat(p, (int32_t) pid);
                        uint64_t a = st ? st->alloc_pages : 0, f = st ? st->freed_pages : 0;

                        (void) printf("pid=%ld alloc_pages=%" PRIu64 " freed_pages=%" PRIu64
                                      " live_pages=%" PRIi64 "\n", pid, a, f, (int64_t) (a - f));
                        (void) fflush(stdout);
                        return;
                }
        }
        (void) printf("error %s\n", line);
        (void) fflush(stdout);
}

static int on_stdin(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        static char buf[4096];
        static size_t n;
        Probe *p = userdata;
        ssize_t k;

        k = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (k < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : sd_event_exit(p->event, negative_errno());
        if (k == 0)
                return sd_event_exit(p->event, 0);
        n += (size_t) k;
        for (;;) {
                char *nl = memchr(buf, '\n', n);
                size_t len;

                if (!nl)
                        break;
                *nl = '\0';
                handle_command(p, buf);
                len = (size_t) (nl - buf) + 1;
                memmove(buf, nl + 1, n - len);
                n -= len;
        }
        if (n == sizeof(buf) - 1)
                n = 0;          /* a line longer than any command: drop it */
        return 0;
}

static int on_signal(sd_event_source *es, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(es), 0);
}

static int on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(es), 0);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_TRACEFS = 0x100, ARG_BUFFER_PAGES, ARG_WAKEUP_BYTES, ARG_DEPTH, ARG_USER_STACKS,
                ARG_SECONDS, ARG_COMMANDS, ARG_LOG_LEVEL,
        };
        static const struct option options[] = {
                { "tracefs",      required_argument, NULL, ARG_TRACEFS      },
                { "buffer-pages", required_argument, NULL, ARG_BUFFER_PAGES },
                { "wakeup-bytes", required_argument, NULL, ARG_WAKEUP_BYTES },
                { "depth",        required_argument, NULL, ARG_DEPTH        },
                { "user-stacks",  no_argument,       NULL, ARG_USER_STACKS  },
                { "seconds",      required_argument, NULL, ARG_SECONDS      },
                { "commands",     no_argument,       NULL, ARG_COMMANDS     },
                { "log-level",    required_argument, NULL, ARG_LOG_LEVEL    },
                {}
        };
        uint64_t v;
        int c;

        source_options_init(&arg_options);
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                int r = 0;

                switch (c) {
                case ARG_TRACEFS:
                        arg_options.tracefs = optarg;
                        break;
                case ARG_BUFFER_PAGES:
                        r = parse_uint64(optarg, 0, UINT32_MAX, &v);
                        arg_options.buffer_pages = (unsigned) v;
                        break;
                case ARG_WAKEUP_BYTES:
                        r = parse_uint64(optarg, 0, UINT32_MAX, &v);
                        arg_options.wakeup_bytes = (size_t) v;
                        break;
                case ARG_DEPTH:
                        r = parse_uint64(optarg, 0, UINT32_MAX, &v);
                        arg_options.depth = (unsigned) v;
                        break;
                case ARG_USER_STACKS:
                        arg_options.user_stacks = true;
                        break;
                case ARG_SECONDS:
                        r = parse_uint64(optarg, 0, UINT32_MAX, &arg_seconds);
                        break;
                case ARG_COMMANDS:
                        arg_commands = true;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r >= 0)
                                log_set_max_level(r);
                        break;
                default:
                        return -EINVAL;
                }
                if (r < 0)
                        return log_error_errno(r, "Invalid argument: %s", optarg);
        }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);
        if (!arg_commands && arg_seconds == 0)
                return log_error_errno(EINVAL, "Need --seconds or --commands.");
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        Probe p = {};
        MsEventSink sink = { .event = probe_event, .userdata = &p };
        sigset_t mask;
        int r;

        log_set_target_journal(false);
        r = parse_argv(argc, argv);
        if (r < 0)
                return EXIT_FAILURE;

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);

        r = source_new("perf", &arg_options, &p.source, NULL, NULL);
        if (r < 0)
                return EXIT_FAILURE;    /* logged */

        r = sd_event_default(&event);
        if (r < 0) {
                log_error_errno(r, "Failed to allocate the event loop: %m");
                goto finish;
        }
        p.event = event;
        (void) sd_event_add_signal(event, NULL, SIGINT, on_signal, NULL);
        (void) sd_event_add_signal(event, NULL, SIGTERM, on_signal, NULL);
        if (arg_seconds > 0) {
                r = sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, arg_seconds * UINT64_C(1000000), 0,
                                               on_timer, NULL);
                if (r < 0) {
                        log_error_errno(r, "Failed to add the timer: %m");
                        goto finish;
                }
        }
        if (arg_commands) {
                r = sd_event_add_io(event, NULL, STDIN_FILENO, EPOLLIN, on_stdin, &p);
                if (r < 0) {
                        log_error_errno(r, "Failed to watch stdin: %m");
                        goto finish;
                }
        }

        r = p.source->ops->start(p.source, event, &sink);
        if (r < 0)
                goto finish;
        if (arg_commands) {
                (void) printf("ready\n");
                (void) fflush(stdout);
        }

        r = sd_event_loop(event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        p.source->ops->flush(p.source);
        if (p.error < 0 && r >= 0)
                r = log_error_errno(p.error, "Sink ran out of memory: %m");
        if (arg_seconds > 0) {
                print_stats(&p);
                print_cpu_time(&p);
        }

finish:
        p.source = event_source_free(p.source);
        map_done(&p.pages);
        map_done(&p.pids);
        for (size_t i = 0; i < p.n_stats; i++)
                free(p.stats[i].cmdline);
        free(p.stats);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
