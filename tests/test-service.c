/* SPDX-License-Identifier: MIT */

/*
 * The io.memstrack Service (daemon/api/service.c) end to end, without a kernel: a Service on a real
 * sd-event loop and a socket in a temporary directory answers about an Accounting fed with synthetic
 * events (tests/synthetic-events.h). Every method is called through the varlink client library, and
 * every error it can send is provoked. One process: a call is sent, then the loop runs until the reply
 * is there, so the test can change the accounting between calls.
 *
 * Runs as any user. Not root, the caller is a group member: the root-only methods answer
 * PermissionDenied and their successful paths are left out (said on stderr). Root runs those, and
 * checks PermissionDenied from a child that became another user.
 */

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "accounting.h"
#include "ksym.h"
#include "log.h"
#include "macro.h"
#include "oomlog.h"
#include "service.h"
#include "synthetic-events.h"
#include "test-json.h"
#include "tests.h"
#include "time-util.h"
#include "varlink.h"

extern const char varlink_interface_io_memstrack[];
extern const VarlinkSignature varlink_signature_io_memstrack;

#define CALL_TIMEOUT_USEC (30U * 1000000U)
#define LOOP_SLICE_USEC 10000U
/* Bounded waits: 3000 slices of at most 10 ms, far beyond any reply; they only keep a bug from hanging. */
#define LOOP_SLICES_MAX 3000U
#define NOBODY_UID 65534

typedef struct Fixture {
        char dir[PATH_MAX];
        char socket[PATH_MAX + 16];
        sd_event *event;
        Ksym *ksym;
        Accounting *accounting;
        Service *service;
        VarlinkClient *client;
        unsigned flushes;
        uint64_t lost_per_cpu[2];
        bool root;
        OomLog *oom;                    /* what get_state hands out; NULL: kills not watched */
} Fixture;

static void fixture_flush(void *userdata) {
        Fixture *f = userdata;
        f->flushes++;
}

static void fixture_get_state(void *userdata, ServiceState *ret) {
        Fixture *f = userdata;
        *ret = (ServiceState) {
                .backend = "synthetic",
                .source = { .records = 42, .lost_records = 5, .n_cpus = 2, .lost_per_cpu = f->lost_per_cpu },
                .uptime_usec = 7000000,
                .events_per_second = 2.5,
        };
        if (f->oom)
                oomlog_service_view(f->oom, ret);
}

/* Set before fixture_setup() for an accounting that traces slab objects (memstrackd --slab), and for
 * another pace of Leaks (ServiceConfig.leaks_pace; 0: the default). */
static bool fixture_traces_slab;
static unsigned fixture_leaks_pace;
/* Set before fixture_setup() for a core that keeps no exited task (memstrackd --max-exited-tasks=0), and
 * for a Service whose clock stands still at FIXTURE_NOW_NSEC (ServiceConfig.now_nsec): Leaks then takes no
 * time, so its pace never refuses a second call. */
static bool fixture_keeps_no_exited;
static bool fixture_clock_stands;
#define FIXTURE_NOW_NSEC (3600 * UINT64_C(1000000000))

static uint64_t fixture_now_nsec(void *userdata, clockid_t clock) {
        return FIXTURE_NOW_NSEC;
}

static void fixture_setup(Fixture *f, unsigned max_connections_per_uid) {
        const char *tmp = getenv("TMPDIR") ?: "/tmp";
        struct group *gr;

        *f = (Fixture) { .root = geteuid() == 0, .lost_per_cpu = { 0, 5 } };
        ASSERT_TRUE(snprintf(f->dir, sizeof(f->dir), "%s/test-service.XXXXXX", tmp) < (int) sizeof(f->dir));
        ASSERT_NOT_NULL(mkdtemp(f->dir));
        /* Reachable by the other user root's child becomes. */
        ASSERT_OK(chmod(f->dir, 0755));
        (void) snprintf(f->socket, sizeof(f->socket), "%s/io.memstrack", f->dir);

        /* The allowed group is our own, so the connection is let in whoever runs the test. */
        gr = getgrgid(getgid());
        ASSERT_NOT_NULL(gr);

        ASSERT_OK(sd_event_new(&f->event));
        ASSERT_OK(ksym_load("data/kallsyms-modules", &f->ksym));
        AccountingConfig ac = ACCOUNTING_CONFIG_DEFAULT;
        ac.slab = fixture_traces_slab;
        if (fixture_keeps_no_exited)
                ac.max_exited_tasks = 0;
        ASSERT_OK(accounting_new(&ac, f->ksym, &f->accounting));
        /* Every case starts from synthetic_scene(): 15 pages tracked, peak 30. */
        synthetic_scene(f->accounting);

        ServiceConfig sc = {
                .event = f->event,
                .accounting = f->accounting,
                .page_size = 4096,
                .socket_path = f->socket,
                .group = gr->gr_name,
                .max_connections_per_uid = max_connections_per_uid,
                .leaks_pace = fixture_leaks_pace,
                .userdata = f,
                .flush = fixture_flush,
                .get_state = fixture_get_state,
                .now_nsec = fixture_clock_stands ? fixture_now_nsec : NULL,
        };
        ASSERT_OK(service_new(&sc, &f->service));
        ASSERT_OK(varlink_client_connect(f->socket, &f->client));
}

static void fixture_done(Fixture *f) {
        varlink_client_free(f->client);
        service_free(f->service);
        accounting_free(f->accounting);
        ksym_free(f->ksym);
        sd_event_unref(f->event);
        ASSERT_OK(rmdir(f->dir));
}

/* Runs the loop until c has a reply: the return of varlink_client_read_reply(). */
static int wait_reply(Fixture *f, VarlinkClient *c, json_t **ret, char **ret_error) {
        for (unsigned i = 0; i < LOOP_SLICES_MAX; i++) {
                int r = varlink_client_read_reply(c, 0, ret, ret_error);
                if (r != -EAGAIN)
                        return r;
                ASSERT_OK(sd_event_run(f->event, LOOP_SLICE_USEC));
        }
        fprintf(stderr, "no reply after %u loop iterations\n", LOOP_SLICES_MAX);
        abort();
}

/* Runs the loop until nothing is ready: the server has seen every close. */
static void drain(Fixture *f) {
        for (unsigned i = 0; i < LOOP_SLICES_MAX; i++) {
                int r = sd_event_run(f->event, 0);
                ASSERT_OK(r);
                if (r == 0)
                        return;
        }
}

static int call_on(Fixture *f, VarlinkClient *c, const char *method, const char *params, VarlinkCallFlags flags,
                   json_t **ret, char **ret_error) {
        json_auto_t *p = NULL;
        json_error_t err;

        if (params) {
                p = json_loads(params, 0, &err);
                ASSERT_NOT_NULL(p);
        }
        ASSERT_OK(varlink_client_send(c, method, p, flags, CALL_TIMEOUT_USEC));
        return wait_reply(f, c, ret, ret_error);
}

/* A successful final reply to method(params): its parameters, a new reference. */
static json_t *call_ok(Fixture *f, const char *method, const char *params) {
        json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        unsigned flushes = f->flushes;

        int r = call_on(f, f->client, method, params, 0, &reply, &error);
        if (error)
                fprintf(stderr, "%s(%s): %s\n", method, params ?: "", error);
        ASSERT_EQ(r, 0);
        ASSERT_NULL(error);
        ASSERT_NOT_NULL(reply);
        /* Every method answers about now: it brought the core up to date first, once. */
        ASSERT_EQ(f->flushes, flushes + 1);
        return reply;
}

/* The error method(params) must get: its parameters, a new reference. */
static json_t *call_error_flags(Fixture *f, const char *method, const char *params, VarlinkCallFlags flags,
                                const char *expected) {
        json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;

        ASSERT_EQ(call_on(f, f->client, method, params, flags, &reply, &error), 0);
        if (!error || !streq(error, expected))
                fprintf(stderr, "%s(%s): expected %s, got %s\n", method, params ?: "", expected, error ?: "a reply");
        ASSERT_STREQ(error, expected);
        return reply;
}

static json_t *call_error(Fixture *f, const char *method, const char *params, const char *expected) {
        return call_error_flags(f, method, params, 0, expected);
}

static void expect_invalid(Fixture *f, const char *method, const char *params, const char *parameter) {
        json_auto_t *e = call_error(f, method, params, VARLINK_ERROR_INVALID_PARAMETER);
        ASSERT_STREQ(json_string_value(json_object_get(e, "parameter")), parameter);
}

static int64_t get_int(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        if (!json_is_integer(v))
                fprintf(stderr, "no integer \"%s\"\n", key);
        ASSERT_TRUE(json_is_integer(v));
        return (int64_t) json_integer_value(v);
}

/* The pids of the Task list reply[key], in order, as "100 200". */
static void expect_pids(json_t *reply, const char *key, const char *expected) {
        _cleanup_free_ char *s = test_json_join(json_object_get(reply, key), "pid");
        ASSERT_STREQ(s, expected);
}

/* The names of a Module list, in order. */
static char *names(json_t *modules) {
        return test_json_join(modules, "name");
}

static void test_status_and_summary(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *st = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_STREQ(json_string_value(json_object_get(st, "backend")), "synthetic");
        ASSERT_EQ(get_int(st, "uptimeUsec"), 7000000);
        ASSERT_EQ(get_int(st, "trackedPages"), 15);
        ASSERT_EQ(get_int(st, "peakTrackedPages"), 30);
        /* The larger of the core's count (3) and the source's (5). */
        ASSERT_EQ(get_int(st, "lostEvents"), 5);
        ASSERT_EQ(json_array_size(json_object_get(st, "lostPerCpu")), 2);
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(st, "lostPerCpu"), 1)), 5);
        ASSERT_EQ(get_int(st, "pageSize"), 4096);
        ASSERT_EQ(get_int(st, "resets"), 0);
        /* Only root sees kernel addresses (and the table loaded from the file has them). */
        ASSERT_EQ(json_is_true(json_object_get(st, "kernelAddressesHidden")), !f.root);
        expect_invalid(&f, "io.memstrack.Status", "{\"bogus\": 1}", "bogus");
        /* The scene has page records only. */
        ASSERT_EQ(get_int(st, "invalidEvents"), 0);
        ASSERT_EQ(get_int(st, "samples"), 0);
        ASSERT_EQ(get_int(st, "sampledPages"), 0);
        ASSERT_EQ(get_int(st, "sampleUntrackedPages"), 0);
        ASSERT_EQ(get_int(st, "unsupportedEvents"), 0);

        json_auto_t *sum = call_ok(&f, "io.memstrack.Summary", "{\"limit\": 2}");
        ASSERT_EQ(get_int(json_object_get(sum, "pages"), "current"), 15);
        ASSERT_EQ(get_int(json_object_get(sum, "pages"), "peak"), 30);
        ASSERT_EQ(get_int(sum, "lostEvents"), 3);
        ASSERT_EQ(get_int(sum, "moduleCount"), 2);      /* limit 2: vmlinux and ext4 */
        expect_pids(sum, "topTasks", "100 200");
        _cleanup_free_ char *m = names(json_object_get(sum, "topModules"));
        ASSERT_STREQ(m, "vmlinux ext4");
        ASSERT_TRUE(json_is_object(json_object_get(sum, "evicted")));
        _cleanup_free_ char *u = names(json_object_get(sum, "topUnits"));
        ASSERT_STREQ(u, "alpha.service web.service");
        ASSERT_TRUE(json_is_null(json_object_get(json_array_get(json_object_get(sum, "topUnits"), 0), "topStacks")));
        expect_invalid(&f, "io.memstrack.Summary", "{\"limit\": 0}", "limit");
        expect_invalid(&f, "io.memstrack.Summary", "{\"limit\": 10001}", "limit");
        expect_invalid(&f, "io.memstrack.Summary", "{\"limit\": \"ten\"}", "limit");
        expect_invalid(&f, "io.memstrack.Summary", "{\"bogus\": true}", "bogus");

        /* Samples: alpha +6 (peak 9) through the kernel chain; gamma, holding nothing through it, -2 of
         * which no sample had charged any. Objects: one freed, one live (Slab). */
        synthetic_sample(f.accounting, 100, 6, 9, SYNTHETIC_KERNEL);
        synthetic_sample(f.accounting, 300, -2, 0, SYNTHETIC_KERNEL);
        synthetic_object(f.accounting, 200, 0xffff888000001000, 192);
        synthetic_object(f.accounting, 200, 0xffff888000001000, 0);
        synthetic_object(f.accounting, 100, 0xffff888000002000, 64);
        json_auto_t *st2 = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_EQ(get_int(st2, "samples"), 2);
        ASSERT_EQ(get_int(st2, "sampledPages"), 6);
        ASSERT_EQ(get_int(st2, "sampleUntrackedPages"), 2);
        ASSERT_EQ(get_int(st2, "unsupportedEvents"), 0);
        ASSERT_EQ(get_int(st2, "invalidEvents"), 0);
        ASSERT_EQ(get_int(st2, "trackedPages"), 21);
        ASSERT_EQ(get_int(st2, "peakTrackedPages"), 30);

        /* Slab: by call site (unknown: the synthetic events have none), by task, by cache (none named). */
        json_auto_t *slab = call_ok(&f, "io.memstrack.Slab", NULL);
        ASSERT_EQ(get_int(slab, "liveObjects"), 1);
        ASSERT_EQ(get_int(slab, "liveBytesAllocated"), 64);
        ASSERT_EQ(get_int(slab, "peakLiveBytes"), 192);
        ASSERT_EQ(get_int(slab, "allocs"), 2);
        ASSERT_EQ(get_int(slab, "frees"), 1);
        ASSERT_TRUE(json_is_false(json_object_get(slab, "tracing")));
        ASSERT_EQ(get_int(slab, "lostFrees"), 0);
        ASSERT_EQ(get_int(slab, "visibleAllocs"), 2);
        ASSERT_EQ(get_int(slab, "invisibleFreeCaches"), 0);
        json_t *row = json_array_get(json_object_get(slab, "rows"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(row, "name")), "[unknown]");
        ASSERT_EQ(get_int(row, "remoteFrees"), 0);
        ASSERT_TRUE(json_is_true(json_object_get(row, "freesVisible")));
        ASSERT_STREQ(json_string_value(json_object_get(row, "cache")), "[size-64]");
        json_auto_t *by_task = call_ok(&f, "io.memstrack.Slab", "{\"by\": \"task\"}");
        row = json_array_get(json_object_get(by_task, "rows"), 0);
        ASSERT_EQ(get_int(row, "pid"), 100);
        ASSERT_EQ(get_int(row, "liveBytesAllocated"), 64);
        ASSERT_EQ(json_array_size(json_object_get(by_task, "rows")), 1);
        /* By unit: the live object's unit, with the peak of its own bytes. */
        json_auto_t *by_unit = call_ok(&f, "io.memstrack.Slab", "{\"by\": \"unit\"}");
        ASSERT_EQ(json_array_size(json_object_get(by_unit, "rows")), 1);
        row = json_array_get(json_object_get(by_unit, "rows"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(row, "name")), "alpha.service");
        ASSERT_EQ(get_int(row, "liveBytesAllocated"), 64);
        ASSERT_EQ(get_int(row, "peakLiveBytes"), 64);
        /* By cache: no name, so the size class of the live one. */
        json_auto_t *by_cache = call_ok(&f, "io.memstrack.Slab", "{\"by\": \"cache\"}");
        ASSERT_EQ(json_array_size(json_object_get(by_cache, "rows")), 1);
        row = json_array_get(json_object_get(by_cache, "rows"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(row, "name")), "[size-64]");
        ASSERT_TRUE(json_is_null(json_object_get(row, "kernel")));
        /* Not traced here (no --slab): Status says nothing of reconciliation. */
        ASSERT_TRUE(json_is_null(json_object_get(st2, "slabReconciliation")));
        expect_invalid(&f, "io.memstrack.Slab", "{\"by\": \"pfn\"}", "by");
        expect_invalid(&f, "io.memstrack.Slab", "{\"limit\": 0}", "limit");
        fixture_done(&f);
}

static void test_tasks_and_modules(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *all = call_ok(&f, "io.memstrack.Tasks", NULL);
        expect_pids(all, "tasks", "100 200 300");
        ASSERT_TRUE(json_is_object(json_object_get(all, "evicted")));
        json_auto_t *hide = call_ok(&f, "io.memstrack.Tasks", "{\"hideZero\": true}");
        expect_pids(hide, "tasks", "100 200");
        json_auto_t *exited = call_ok(&f, "io.memstrack.Tasks", "{\"includeExited\": true}");
        expect_pids(exited, "tasks", "100 200 400 300");
        json_auto_t *peak = call_ok(&f, "io.memstrack.Tasks", "{\"sortBy\": \"peak\", \"limit\": 2}");
        expect_pids(peak, "tasks", "300 100");
        json_auto_t *allocs = call_ok(&f, "io.memstrack.Tasks", "{\"sortBy\": \"allocs\", \"limit\": 1}");
        expect_pids(allocs, "tasks", "200");
        json_auto_t *beta = call_ok(&f, "io.memstrack.Tasks", "{\"comm\": \"beta\", \"threads\": true}");
        expect_pids(beta, "tasks", "200");
        ASSERT_EQ(get_int(json_array_get(json_object_get(beta, "tasks"), 0), "currentPages"), 6);
        /* A pid is shown even exited and even with hideZero. */
        json_auto_t *delta = call_ok(&f, "io.memstrack.Tasks", "{\"pid\": 400, \"hideZero\": true}");
        expect_pids(delta, "tasks", "400");
        ASSERT_TRUE(json_is_true(json_object_get(json_array_get(json_object_get(delta, "tasks"), 0), "exited")));

        json_auto_t *nst = call_error(&f, "io.memstrack.Tasks", "{\"pid\": 999}", MEMSTRACK_ERROR_NO_SUCH_TASK);
        ASSERT_EQ(get_int(nst, "pid"), 999);
        expect_invalid(&f, "io.memstrack.Tasks", "{\"sortBy\": \"size\"}", "sortBy");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"limit\": 0}", "limit");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"limit\": 10001}", "limit");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"pid\": -1}", "pid");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"pid\": 2147483648}", "pid");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"comm\": 5}", "comm");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"includeExited\": 1}", "includeExited");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"threads\": \"yes\"}", "threads");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"hideZero\": 0}", "hideZero");
        expect_invalid(&f, "io.memstrack.Tasks", "{\"bogus\": null}", "bogus");

        json_auto_t *mods = call_ok(&f, "io.memstrack.Modules", NULL);
        _cleanup_free_ char *m = names(json_object_get(mods, "modules"));
        ASSERT_STREQ(m, "vmlinux ext4 xfs");
        ASSERT_EQ(get_int(json_array_get(json_object_get(mods, "modules"), 0), "currentPages"), 9);
        ASSERT_EQ(get_int(json_array_get(json_object_get(mods, "modules"), 0), "peakPages"), 24);
        json_auto_t *mpeak = call_ok(&f, "io.memstrack.Modules", "{\"sortBy\": \"peak\", \"limit\": 1}");
        _cleanup_free_ char *mp = names(json_object_get(mpeak, "modules"));
        ASSERT_STREQ(mp, "vmlinux");
        expect_invalid(&f, "io.memstrack.Modules", "{\"sortBy\": \"allocs\"}", "sortBy");
        expect_invalid(&f, "io.memstrack.Modules", "{\"limit\": 0}", "limit");
        expect_invalid(&f, "io.memstrack.Modules", "{\"limit\": 10001}", "limit");
        expect_invalid(&f, "io.memstrack.Modules", "{\"bogus\": 1}", "bogus");
        fixture_done(&f);
}

static json_t *unit_at(json_t *reply, size_t i) {
        return json_array_get(json_object_get(reply, "units"), i);
}

/* Units: the scene's three units, sorted, filtered by name, with stacks; and every error path. */
static void test_units(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *all = call_ok(&f, "io.memstrack.Units", NULL);
        _cleanup_free_ char *n = names(json_object_get(all, "units"));
        ASSERT_STREQ(n, "alpha.service web.service session-3.scope");
        json_t *alpha = unit_at(all, 0), *web = unit_at(all, 1), *session = unit_at(all, 2);
        ASSERT_STREQ(json_string_value(json_object_get(alpha, "cgroup")), "/system.slice/alpha.service");
        ASSERT_EQ(get_int(alpha, "currentPages"), 8);
        ASSERT_EQ(get_int(alpha, "peakPages"), 8);
        ASSERT_EQ(get_int(alpha, "tasks"), 1);
        ASSERT_TRUE(json_is_true(json_object_get(alpha, "live")));
        ASSERT_TRUE(json_is_null(json_object_get(alpha, "topStacks")));
        ASSERT_EQ(get_int(web, "currentPages"), 6);
        ASSERT_EQ(get_int(web, "peakPages"), 22);
        ASSERT_EQ(get_int(web, "tasks"), 2);
        /* Its only process exited. */
        ASSERT_EQ(get_int(session, "tasks"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(session, "cgroup")),
                     "/user.slice/user-1000.slice/session-3.scope");

        json_auto_t *peak = call_ok(&f, "io.memstrack.Units", "{\"sortBy\": \"peak\", \"limit\": 2}");
        _cleanup_free_ char *np = names(json_object_get(peak, "units"));
        ASSERT_STREQ(np, "web.service alpha.service");

        /* One unit by name, with its two biggest stacks, innermost frame first. */
        json_auto_t *one = call_ok(&f, "io.memstrack.Units", "{\"name\": \"web.service\", \"stacks\": 5}");
        ASSERT_EQ(json_array_size(json_object_get(one, "units")), 1);
        json_t *stacks = json_object_get(unit_at(one, 0), "topStacks");
        ASSERT_EQ(json_array_size(stacks), 2);
        ASSERT_EQ(get_int(json_array_get(stacks, 0), "currentPages"), 4);
        ASSERT_EQ(get_int(json_array_get(stacks, 1), "currentPages"), 2);
        json_t *frames = json_object_get(json_array_get(stacks, 0), "frames");
        ASSERT_EQ(json_array_size(frames), ELEMENTSOF(synthetic_chain_ext4));
        ASSERT_STREQ(json_string_value(json_array_get(frames, 0)), "__alloc_pages+0x10");
        /* Every unit's stacks from one walk: each gets its own biggest. */
        json_auto_t *every = call_ok(&f, "io.memstrack.Units", "{\"stacks\": 1}");
        ASSERT_EQ(json_array_size(json_object_get(every, "units")), 3);
        int64_t expected_stack[] = { 8, 4, 1 };
        for (size_t i = 0; i < 3; i++) {
                json_t *st = json_object_get(unit_at(every, i), "topStacks");
                ASSERT_EQ(json_array_size(st), 1);
                ASSERT_EQ(get_int(json_array_get(st, 0), "currentPages"), expected_stack[i]);
        }
        json_auto_t *limited = call_ok(&f, "io.memstrack.Units", "{\"name\": \"web.service\", \"stacks\": 1}");
        ASSERT_EQ(json_array_size(json_object_get(unit_at(limited, 0), "topStacks")), 1);

        /* A unit whose pages all went: listed, unless hideZero. */
        synthetic_free(f.accounting, 1, 0x5000, 0);
        json_auto_t *hz = call_ok(&f, "io.memstrack.Units", "{\"hideZero\": true}");
        _cleanup_free_ char *nh = names(json_object_get(hz, "units"));
        ASSERT_STREQ(nh, "alpha.service web.service");
        json_auto_t *shown = call_ok(&f, "io.memstrack.Units", "{\"name\": \"session-3.scope\", \"hideZero\": true}");
        ASSERT_EQ(get_int(unit_at(shown, 0), "currentPages"), 0);
        ASSERT_EQ(get_int(unit_at(shown, 0), "peakPages"), 1);

        json_auto_t *nsu = call_error(&f, "io.memstrack.Units", "{\"name\": \"nope.service\"}",
                                      MEMSTRACK_ERROR_NO_SUCH_UNIT);
        ASSERT_STREQ(json_string_value(json_object_get(nsu, "name")), "nope.service");
        expect_invalid(&f, "io.memstrack.Units", "{\"sortBy\": \"allocs\"}", "sortBy");
        expect_invalid(&f, "io.memstrack.Units", "{\"limit\": 0}", "limit");
        expect_invalid(&f, "io.memstrack.Units", "{\"limit\": 10001}", "limit");
        expect_invalid(&f, "io.memstrack.Units", "{\"stacks\": -1}", "stacks");
        expect_invalid(&f, "io.memstrack.Units", "{\"stacks\": 101}", "stacks");
        expect_invalid(&f, "io.memstrack.Units", "{\"name\": 3}", "name");
        expect_invalid(&f, "io.memstrack.Units", "{\"hideZero\": 1}", "hideZero");
        expect_invalid(&f, "io.memstrack.Units", "{\"bogus\": 1}", "bogus");

        /* The stack tree of one unit: its tasks' chains only. */
        json_auto_t *tree = call_ok(&f, "io.memstrack.StackTree", "{\"unit\": \"web.service\"}");
        ASSERT_EQ(get_int(tree, "totalPages"), 6);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(tree, "root"), "frame")), "[unit web.service]");
        ASSERT_TRUE(json_is_null(json_object_get(json_object_get(tree, "root"), "peakPages")));
        json_auto_t *tree_a = call_ok(&f, "io.memstrack.StackTree", "{\"unit\": \"alpha.service\"}");
        ASSERT_EQ(get_int(tree_a, "totalPages"), 8);
        json_auto_t *nsu2 = call_error(&f, "io.memstrack.StackTree", "{\"unit\": \"nope.service\"}",
                                       MEMSTRACK_ERROR_NO_SUCH_UNIT);
        ASSERT_STREQ(json_string_value(json_object_get(nsu2, "name")), "nope.service");
        /* pid, unit and module exclude each other. */
        expect_invalid(&f, "io.memstrack.StackTree", "{\"pid\": 200, \"unit\": \"web.service\"}", "unit");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"unit\": \"web.service\", \"module\": \"ext4\"}", "module");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"unit\": 1}", "unit");

        /* Top carries the units, cut to the limit. */
        json_auto_t *top = call_ok(&f, "io.memstrack.Top", "{\"limit\": 1, \"sortBy\": \"peak\"}");
        _cleanup_free_ char *nt = names(json_object_get(top, "units"));
        ASSERT_STREQ(nt, "web.service");
        fixture_done(&f);
}

/* The first node below n whose frame is name, depth first. */
static json_t *find_frame(json_t *n, const char *name) {
        json_t *c;
        size_t i;

        if (streq(json_string_value(json_object_get(n, "frame")) ?: "", name))
                return n;
        json_array_foreach(json_object_get(n, "children"), i, c) {
                json_t *found = find_frame(c, name);
                if (found)
                        return found;
        }
        return NULL;
}

static void test_stack_tree(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *all = call_ok(&f, "io.memstrack.StackTree", NULL);
        ASSERT_EQ(get_int(all, "totalPages"), 15);
        json_auto_t *beta = call_ok(&f, "io.memstrack.StackTree", "{\"pid\": 200}");
        ASSERT_EQ(get_int(beta, "totalPages"), 6);
        json_auto_t *ext4 = call_ok(&f, "io.memstrack.StackTree", "{\"module\": \"ext4\", \"sortBy\": \"peak\"}");
        ASSERT_EQ(get_int(ext4, "totalPages"), 4);
        /* Raw addresses for root only. */
        json_t *leaf = find_frame(json_object_get(all, "root"), "__alloc_pages+0x10");
        if (!leaf) {
                fprintf(stderr, "no frame __alloc_pages+0x10 in %s\n", json_dumps(all, JSON_COMPACT));
                abort();
        }
        ASSERT_EQ(json_is_string(json_object_get(leaf, "address")), f.root);
        json_auto_t *shallow = call_ok(&f, "io.memstrack.StackTree",
                                       "{\"maxDepth\": 0, \"minPages\": 0, \"maxChildren\": 1}");
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(shallow, "root"), "children")), 0);

        json_auto_t *nst = call_error(&f, "io.memstrack.StackTree", "{\"pid\": 999}", MEMSTRACK_ERROR_NO_SUCH_TASK);
        ASSERT_EQ(get_int(nst, "pid"), 999);
        json_auto_t *nsm = call_error(&f, "io.memstrack.StackTree", "{\"module\": \"btrfs\"}",
                                      MEMSTRACK_ERROR_NO_SUCH_MODULE);
        ASSERT_STREQ(json_string_value(json_object_get(nsm, "name")), "btrfs");
        /* One of pid and module. */
        expect_invalid(&f, "io.memstrack.StackTree", "{\"pid\": 200, \"module\": \"ext4\"}", "module");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"pid\": -1}", "pid");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"module\": 4}", "module");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"maxDepth\": 256}", "maxDepth");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"minPages\": -1}", "minPages");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"maxChildren\": 0}", "maxChildren");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"maxChildren\": 10001}", "maxChildren");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"sortBy\": \"allocs\"}", "sortBy");
        expect_invalid(&f, "io.memstrack.StackTree", "{\"bogus\": 1}", "bogus");
        fixture_done(&f);
}

/* Profile over the socket: the scene's pages, the page size and sampling from the Service, addresses for
 * root only, the errors and the ranges the interface file cannot say; slab objects only when traced. */
static void test_profile(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *all = call_ok(&f, "io.memstrack.Profile", NULL);
        ASSERT_STREQ(json_string_value(json_object_get(all, "of")), "pages");
        ASSERT_EQ(get_int(all, "objects"), 15);
        ASSERT_EQ(get_int(all, "bytes"), 15 * get_int(all, "pageSize"));
        ASSERT_EQ(get_int(all, "allocObjects"), 31);
        ASSERT_TRUE(json_is_integer(json_object_get(all, "stackSampleInterval")));
        json_t *frame;
        size_t i;
        json_array_foreach(json_object_get(all, "frames"), i, frame)
                ASSERT_EQ(json_is_string(json_object_get(frame, "address")), f.root);
        json_auto_t *web = call_ok(&f, "io.memstrack.Profile", "{\"unit\": \"web.service\", \"top\": 1}");
        ASSERT_EQ(get_int(web, "objects"), 6);
        ASSERT_EQ(json_array_size(json_object_get(web, "tasks")), 3);

        json_auto_t *nst = call_error(&f, "io.memstrack.Profile", "{\"pid\": 999}", MEMSTRACK_ERROR_NO_SUCH_TASK);
        ASSERT_EQ(get_int(nst, "pid"), 999);
        json_auto_t *nsu = call_error(&f, "io.memstrack.Profile", "{\"unit\": \"nope.service\"}",
                                      MEMSTRACK_ERROR_NO_SUCH_UNIT);
        ASSERT_STREQ(json_string_value(json_object_get(nsu, "name")), "nope.service");
        json_auto_t *nsm = call_error(&f, "io.memstrack.Profile", "{\"module\": \"btrfs\"}",
                                      MEMSTRACK_ERROR_NO_SUCH_MODULE);
        ASSERT_STREQ(json_string_value(json_object_get(nsm, "name")), "btrfs");
        json_auto_t *off = call_error(&f, "io.memstrack.Profile", "{\"of\": \"slab\"}", MEMSTRACK_ERROR_NOT_TRACING);
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(off, "reason")), "--slab"));
        expect_invalid(&f, "io.memstrack.Profile", "{\"pid\": 200, \"unit\": \"web.service\"}", "unit");
        expect_invalid(&f, "io.memstrack.Profile", "{\"top\": 0}", "top");
        expect_invalid(&f, "io.memstrack.Profile", "{\"top\": 1001}", "top");
        expect_invalid(&f, "io.memstrack.Profile", "{\"of\": \"heap\"}", "of");
        fixture_done(&f);

        fixture_traces_slab = true;
        fixture_setup(&f, 0);
        fixture_traces_slab = false;
        synthetic_object(f.accounting, 100, 0xffff888000001000, 192);
        json_auto_t *slab = call_ok(&f, "io.memstrack.Profile", "{\"of\": \"slab\"}");
        ASSERT_EQ(get_int(slab, "objects"), 1);
        ASSERT_EQ(get_int(slab, "bytes"), 192);
        ASSERT_TRUE(json_is_null(json_object_get(slab, "allocBytes")));
        fixture_done(&f);
}

/* Reads frames of an open Top stream until one reports tracked pages; bounded. */
static void top_wait_tracked(Fixture *f, VarlinkClient *c, int64_t tracked) {
        for (unsigned i = 0; i < 100; i++) {
                json_auto_t *frame = NULL;
                _cleanup_free_ char *error = NULL;
                ASSERT_EQ(wait_reply(f, c, &frame, &error), 1);
                ASSERT_NULL(error);
                if (get_int(frame, "trackedPages") == tracked)
                        return;
        }
        fprintf(stderr, "no Top frame with trackedPages %lld\n", (long long) tracked);
        abort();
}

/* Top's slab field: null without slab tracing; with it, the call sites by live bytes cut to the limit, by
 * name only (a frame goes to every stream, root's or not). */
static void test_top_slab(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *off = call_ok(&f, "io.memstrack.Top", NULL);
        ASSERT_TRUE(json_is_null(json_object_get(off, "slab")));
        fixture_done(&f);

        fixture_traces_slab = true;
        fixture_setup(&f, 0);
        fixture_traces_slab = false;
        synthetic_object(f.accounting, 100, 0xffff888000001000, 192);
        synthetic_object(f.accounting, 200, 0xffff888000002000, 64);
        json_auto_t *on = call_ok(&f, "io.memstrack.Top", "{\"limit\": 1}");
        json_t *slab = json_object_get(on, "slab");
        ASSERT_EQ(get_int(slab, "liveObjects"), 2);
        ASSERT_EQ(get_int(slab, "liveBytesAllocated"), 256);
        ASSERT_EQ(get_int(slab, "peakLiveBytes"), 256);
        ASSERT_NULL(json_object_get(slab, "tracing"));
        ASSERT_EQ(json_array_size(json_object_get(slab, "rows")), 1);
        json_t *row = json_array_get(json_object_get(slab, "rows"), 0);
        ASSERT_EQ(get_int(row, "liveObjects"), 2);
        ASSERT_TRUE(json_is_null(json_object_get(row, "address")));
        fixture_done(&f);
}

/* Leaks answers with pages and objects; asked again before its pace allows, LimitExceeded "leaksPace" with
 * the microseconds to wait. A pace of a million times the first call's time makes "too soon" certain. */
static void test_leaks_paced(void) {
        Fixture f;

        fixture_leaks_pace = 1000000;
        fixture_setup(&f, 0);
        fixture_leaks_pace = 0;
        json_auto_t *first = call_ok(&f, "io.memstrack.Leaks", "{\"minAgeSeconds\": 0}");
        ASSERT_TRUE(json_array_size(json_object_get(first, "pages")) > 0);
        ASSERT_TRUE(json_is_array(json_object_get(first, "rows")));
        json_auto_t *again = call_error(&f, "io.memstrack.Leaks", NULL, "io.memstrack.LimitExceeded");
        ASSERT_STREQ(json_string_value(json_object_get(again, "limit")), "leaksPace");
        ASSERT_TRUE(get_int(again, "value") > 0);
        /* Other methods are not paced. */
        json_auto_t *status = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_EQ(get_int(status, "trackedPages"), 15);
        fixture_done(&f);
}

/* The only object of list whose key is value. */
static json_t *only_with(json_t *list, const char *key, int64_t value) {
        json_t *o, *found = NULL;
        size_t i;

        json_array_foreach(list, i, o)
                if (get_int(o, key) == value) {
                        ASSERT_NULL(found);
                        found = o;
                }
        ASSERT_NOT_NULL(found);
        return found;
}

/* Exited tasks forgotten at once (--max-exited-tasks=0) while they hold pages and slab objects: every
 * view that names an owner answers, naming them "[evicted]" with pid -1 as Tasks sums them. One Leaks call
 * of any group member once made the daemon follow a NULL record here. */
static void test_evicted_owners(void) {
        Fixture f;

        fixture_traces_slab = fixture_keeps_no_exited = fixture_clock_stands = true;
        fixture_setup(&f, 0);
        fixture_traces_slab = fixture_keeps_no_exited = fixture_clock_stands = false;
        synthetic_task(f.accounting, 500, "eps");
        synthetic_alloc(f.accounting, 500, 0x6000, 2, SYNTHETIC_EXT4);
        synthetic_object(f.accounting, 500, 0xffff888000005000, 96);
        synthetic_object(f.accounting, 100, 0xffff888000001000, 32);
        synthetic_exit(f.accounting, 500);

        /* 400 of the scene and 500: 1 + 4 pages still held. */
        json_auto_t *tasks = call_ok(&f, "io.memstrack.Tasks", NULL);
        ASSERT_EQ(get_int(json_object_get(tasks, "evicted"), "tasks"), 2);
        ASSERT_EQ(get_int(json_object_get(tasks, "evicted"), "currentPages"), 5);

        json_auto_t *leaks = call_ok(&f, "io.memstrack.Leaks", "{\"minAgeSeconds\": 0}");
        json_t *pages = json_object_get(leaks, "pages");
        uint64_t evicted_pages = 0;
        json_t *row;
        size_t i;
        json_array_foreach(pages, i, row)
                if (get_int(row, "pid") == -1) {
                        ASSERT_STREQ(json_string_value(json_object_get(row, "comm")), "[evicted]");
                        evicted_pages += (uint64_t) get_int(row, "pages");
                        /* Aged to the Service's clock, within the page table's grain. */
                        ASSERT_TRUE(get_int(row, "oldestAgeUsec") <= 3600000000);
                        ASSERT_TRUE(get_int(row, "oldestAgeUsec") >= 3600000000 - get_int(leaks, "pageAgeGrainUsec"));
                }
        ASSERT_EQ(evicted_pages, 5);
        json_auto_t *one = call_ok(&f, "io.memstrack.Leaks", "{\"minAgeSeconds\": 0, \"pid\": 100}");
        ASSERT_EQ(get_int(json_array_get(json_object_get(one, "rows"), 0), "objects"), 1);
        ASSERT_EQ(get_int(json_array_get(json_object_get(one, "pages"), 0), "pid"), 100);

        json_auto_t *slab = call_ok(&f, "io.memstrack.Slab", "{\"by\": \"task\"}");
        row = only_with(json_object_get(slab, "rows"), "pid", -1);
        ASSERT_STREQ(json_string_value(json_object_get(row, "name")), "[evicted]");
        ASSERT_EQ(get_int(row, "liveBytesAllocated"), 96);
        ASSERT_EQ(get_int(only_with(json_object_get(slab, "rows"), "pid", 100), "liveBytesAllocated"), 32);
        json_auto_t *tree = call_ok(&f, "io.memstrack.StackTree", "{\"sortBy\": \"peak\"}");
        ASSERT_EQ(get_int(tree, "totalPages"), 19);
        fixture_done(&f);
}

static void test_top(void) {
        VarlinkClient *streams[16] = {};
        Fixture f;

        /* Room for 17 connections of one user: the Top limit (16 streams) is what refuses. */
        fixture_setup(&f, 20);
        /* Without "more": one frame. */
        json_auto_t *once = call_ok(&f, "io.memstrack.Top", "{\"limit\": 1, \"sortBy\": \"peak\"}");
        ASSERT_EQ(get_int(once, "trackedPages"), 15);
        ASSERT_EQ(get_int(once, "peakTrackedPages"), 30);
        expect_pids(once, "tasks", "300");
        json_auto_t *hz = call_ok(&f, "io.memstrack.Top", "{\"hideZero\": true}");
        expect_pids(hz, "tasks", "100 200");

        /* A stream: the first frame at once, later ones show what changed. */
        for (size_t i = 0; i < ELEMENTSOF(streams); i++) {
                json_auto_t *first = NULL;
                _cleanup_free_ char *error = NULL;
                ASSERT_OK(varlink_client_connect(f.socket, &streams[i]));
                ASSERT_EQ(call_on(&f, streams[i], "io.memstrack.Top",
                                  i % 2 ? "{\"intervalUsec\": 100000, \"limit\": 1}" : "{\"intervalUsec\": 100000}",
                                  VARLINK_CALL_MORE, &first, &error), 1);
                ASSERT_NULL(error);
                ASSERT_EQ(get_int(first, "trackedPages"), 15);
                ASSERT_EQ(json_array_size(json_object_get(first, "tasks")), i % 2 ? 1 : 3);
        }
        synthetic_alloc(f.accounting, 100, 0x8000, 2, SYNTHETIC_KERNEL);
        top_wait_tracked(&f, streams[3], 19);
        top_wait_tracked(&f, streams[0], 19);

        /* The 17th stream is refused, and the limit is kept on the one connection that asked. */
        json_auto_t *lim = call_error_flags(&f, "io.memstrack.Top", "{\"intervalUsec\": 100000}", VARLINK_CALL_MORE,
                                            MEMSTRACK_ERROR_LIMIT_EXCEEDED);
        ASSERT_STREQ(json_string_value(json_object_get(lim, "limit")), "topStreams");
        ASSERT_EQ(get_int(lim, "value"), 16);
        /* Streams closed from the middle, the head and the tail of the list give their places back. */
        size_t closed[] = { 7, 15, 0 };
        for (size_t i = 0; i < ELEMENTSOF(closed); i++)
                streams[closed[i]] = varlink_client_free(streams[closed[i]]);
        for (size_t i = 0; i < ELEMENTSOF(closed); i++) {
                json_auto_t *first = NULL;
                _cleanup_free_ char *error = NULL;
                /* The server notices the closes when its loop runs: let it do all it can now. */
                drain(&f);
                ASSERT_OK(varlink_client_connect(f.socket, &streams[closed[i]]));
                ASSERT_EQ(call_on(&f, streams[closed[i]], "io.memstrack.Top", "{\"intervalUsec\": 100000}",
                                  VARLINK_CALL_MORE, &first, &error), 1);
                ASSERT_NULL(error);
        }
        synthetic_free(f.accounting, 100, 0x8000, 2);
        for (size_t i = 0; i < ELEMENTSOF(streams); i++)
                top_wait_tracked(&f, streams[i], 15);

        expect_invalid(&f, "io.memstrack.Top", "{\"intervalUsec\": 99999}", "intervalUsec");
        expect_invalid(&f, "io.memstrack.Top", "{\"limit\": 0}", "limit");
        expect_invalid(&f, "io.memstrack.Top", "{\"limit\": 10001}", "limit");
        expect_invalid(&f, "io.memstrack.Top", "{\"sortBy\": \"size\"}", "sortBy");
        expect_invalid(&f, "io.memstrack.Top", "{\"hideZero\": \"yes\"}", "hideZero");
        expect_invalid(&f, "io.memstrack.Top", "{\"bogus\": 1}", "bogus");
        for (size_t i = 0; i < ELEMENTSOF(streams); i++)
                varlink_client_free(streams[i]);
        fixture_done(&f);
}

/* Reads the next frame of a Top stream; its timestampUsec. The loop waits for its own sources only (no
 * short slices that would wake it, and so fire a timer that may still wait, every 10 ms), as the
 * daemon's does when tracing is quiet. */
static uint64_t top_frame_time(Fixture *f, VarlinkClient *c) {
        for (unsigned i = 0; i < 100; i++) {
                json_auto_t *frame = NULL;
                _cleanup_free_ char *error = NULL;
                int r = varlink_client_read_reply(c, 0, &frame, &error);

                if (r == -EAGAIN) {
                        ASSERT_OK(sd_event_run(f->event, 2 * USEC_PER_SEC));
                        continue;
                }
                ASSERT_EQ(r, 1);
                ASSERT_NULL(error);
                return (uint64_t) get_int(frame, "timestampUsec");
        }
        fprintf(stderr, "no Top frame after 100 loop iterations\n");
        abort();
}

/*
 * Top keeps the interval asked for. The timer is set for the stream due next (no wakeup every 100 ms for
 * streams of a second) and may be late by a small part of the shortest interval: sd-event's default
 * accuracy (250 ms) made 100 ms streams come every 250 ms. The frames' own timestamps then come an
 * interval apart, never closer.
 */
static void test_top_interval(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *slow = NULL, *fast = NULL;
        uint64_t when = 1, accuracy = 1, slow_when, times[11];
        json_auto_t *first = NULL;
        _cleanup_free_ char *error = NULL;
        Fixture f;

        fixture_setup(&f, 0);
        ASSERT_OK(service_top_timer(f.service, &when, &accuracy));
        ASSERT_EQ(when, 0);

        ASSERT_OK(varlink_client_connect(f.socket, &slow));
        ASSERT_EQ(call_on(&f, slow, "io.memstrack.Top", "{\"intervalUsec\": 1000000}", VARLINK_CALL_MORE, &first,
                          &error), 1);
        /* The stream's next update is a second after its first frame was built, and no wakeup comes
         * before it. */
        ASSERT_OK(service_top_timer(f.service, &when, &accuracy));
        ASSERT_GE(when, (uint64_t) get_int(first, "timestampUsec") + 1000000);
        ASSERT_LE(accuracy, 1000000 / 20);
        slow_when = when;

        ASSERT_OK(varlink_client_connect(f.socket, &fast));
        {
                json_auto_t *p = json_pack("{s:i}", "intervalUsec", 100000);
                ASSERT_OK(varlink_client_send(fast, "io.memstrack.Top", p, VARLINK_CALL_MORE, CALL_TIMEOUT_USEC));
        }
        times[0] = top_frame_time(&f, fast);
        ASSERT_OK(service_top_timer(f.service, &when, &accuracy));
        ASSERT_LT(when, slow_when);
        ASSERT_GE(when, times[0] + 100000);
        ASSERT_LE(accuracy, 100000 / 20);

        for (size_t i = 1; i < ELEMENTSOF(times); i++)
                times[i] = top_frame_time(&f, fast);
        uint64_t mean = (times[ELEMENTSOF(times) - 1] - times[0]) / (ELEMENTSOF(times) - 1);
        /* Never early. How late depends on how the machine schedules us, which a test cannot know: the
         * timer's accuracy above is what holds the stream to its interval. */
        fprintf(stderr, "100 ms Top stream: frames %" PRIu64 " us apart on average\n", mean);
        ASSERT_GE(mean, 100000 / 2);

        /* The streams gone, the timer is off. */
        slow = varlink_client_free(slow);
        fast = varlink_client_free(fast);
        drain(&f);
        ASSERT_OK(service_top_timer(f.service, &when, &accuracy));
        ASSERT_EQ(when, 0);
        fixture_done(&f);
}

/*
 * Streams due at the same wakeup share one frame, built once: two streams of the same interval opened
 * one after the other (well within an eighth of their interval, the batching window) get the same
 * frame, timestamp and all, at every update.
 */
static void test_top_shared_frames(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *a = NULL, *b = NULL;
        json_auto_t *first_a = NULL, *first_b = NULL;
        _cleanup_free_ char *error_a = NULL, *error_b = NULL;
        Fixture f;

        fixture_setup(&f, 0);
        ASSERT_OK(varlink_client_connect(f.socket, &a));
        ASSERT_OK(varlink_client_connect(f.socket, &b));
        /* 2 s: a window of 250 ms between the two opens. */
        ASSERT_EQ(call_on(&f, a, "io.memstrack.Top", "{\"intervalUsec\": 2000000}", VARLINK_CALL_MORE, &first_a,
                          &error_a), 1);
        ASSERT_EQ(call_on(&f, b, "io.memstrack.Top", "{\"intervalUsec\": 2000000}", VARLINK_CALL_MORE, &first_b,
                          &error_b), 1);
        for (unsigned i = 0; i < 2; i++) {
                uint64_t t = top_frame_time(&f, a);
                ASSERT_EQ(top_frame_time(&f, b), t);
        }
        a = varlink_client_free(a);
        b = varlink_client_free(b);
        drain(&f);
        fixture_done(&f);
}

static void test_marks(void) {
        char name[80];
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *saved = call_ok(&f, "io.memstrack.Snapshot", "{\"name\": \"before\"}");
        ASSERT_STREQ(json_string_value(json_object_get(saved, "name")), "before");
        synthetic_alloc(f.accounting, 200, 0x9000, 3, SYNTHETIC_EXT4);

        json_auto_t *diff = call_ok(&f, "io.memstrack.Diff", "{\"name\": \"before\", \"limit\": 1}");
        ASSERT_EQ(get_int(diff, "beforePages"), 15);
        ASSERT_EQ(get_int(diff, "afterPages"), 23);
        expect_pids(diff, "tasks", "200");
        json_auto_t *list = call_ok(&f, "io.memstrack.ListSnapshots", NULL);
        ASSERT_EQ(json_array_size(json_object_get(list, "snapshots")), 1);
        json_t *info = json_array_get(json_object_get(list, "snapshots"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(info, "name")), "before");
        ASSERT_EQ(get_int(info, "uid"), (int64_t) geteuid());

        json_auto_t *nss = call_error(&f, "io.memstrack.Diff", "{\"name\": \"after\"}", MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT);
        ASSERT_STREQ(json_string_value(json_object_get(nss, "name")), "after");
        /* 8 names per uid; a 9th is refused, replacing one of them is not. */
        for (int i = 1; i < 8; i++) {
                (void) snprintf(name, sizeof(name), "{\"name\": \"m%d\"}", i);
                json_decref(call_ok(&f, "io.memstrack.Snapshot", name));
        }
        json_auto_t *lim = call_error(&f, "io.memstrack.Snapshot", "{\"name\": \"m8\"}", MEMSTRACK_ERROR_LIMIT_EXCEEDED);
        ASSERT_STREQ(json_string_value(json_object_get(lim, "limit")), "snapshots");
        ASSERT_EQ(get_int(lim, "value"), 8);
        json_decref(call_ok(&f, "io.memstrack.Snapshot", "{\"name\": \"m3\"}"));
        json_auto_t *list8 = call_ok(&f, "io.memstrack.ListSnapshots", NULL);
        ASSERT_EQ(json_array_size(json_object_get(list8, "snapshots")), 8);

        /* Deleting one makes room; it is gone for Diff and DeleteSnapshot. */
        json_decref(call_ok(&f, "io.memstrack.DeleteSnapshot", "{\"name\": \"m3\"}"));
        json_auto_t *gone = call_error(&f, "io.memstrack.Diff", "{\"name\": \"m3\"}", MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT);
        ASSERT_STREQ(json_string_value(json_object_get(gone, "name")), "m3");
        json_auto_t *gone2 = call_error(&f, "io.memstrack.DeleteSnapshot", "{\"name\": \"m3\"}",
                                        MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT);
        ASSERT_STREQ(json_string_value(json_object_get(gone2, "name")), "m3");
        json_decref(call_ok(&f, "io.memstrack.Snapshot", "{\"name\": \"m8\"}"));
        /* Naming oneself is allowed to anyone. */
        (void) snprintf(name, sizeof(name), "{\"name\": \"m8\", \"uid\": %u}", (unsigned) geteuid());
        json_decref(call_ok(&f, "io.memstrack.DeleteSnapshot", name));

        expect_invalid(&f, "io.memstrack.Snapshot", NULL, "name");
        expect_invalid(&f, "io.memstrack.Snapshot", "{\"name\": \"\"}", "name");
        expect_invalid(&f, "io.memstrack.Snapshot",
                       "{\"name\": \"12345678901234567890123456789012345678901234567890123456789012345\"}", "name");
        expect_invalid(&f, "io.memstrack.Snapshot", "{\"name\": 1}", "name");
        expect_invalid(&f, "io.memstrack.Diff", NULL, "name");
        expect_invalid(&f, "io.memstrack.Diff", "{\"name\": \"before\", \"limit\": 0}", "limit");
        expect_invalid(&f, "io.memstrack.Diff", "{\"name\": \"before\", \"limit\": 10001}", "limit");
        expect_invalid(&f, "io.memstrack.ListSnapshots", "{\"bogus\": 1}", "bogus");
        expect_invalid(&f, "io.memstrack.ListSnapshots", "{\"allUsers\": 1}", "allUsers");
        expect_invalid(&f, "io.memstrack.DeleteSnapshot", NULL, "name");
        expect_invalid(&f, "io.memstrack.DeleteSnapshot", "{\"name\": \"before\", \"uid\": -1}", "uid");
        expect_invalid(&f, "io.memstrack.DeleteSnapshot", "{\"name\": \"before\", \"uid\": 4294967295}", "uid");
        expect_invalid(&f, "io.memstrack.DeleteSnapshot", "{\"name\": \"before\", \"bogus\": 1}", "bogus");
        if (!f.root) {
                json_auto_t *d1 = call_error(&f, "io.memstrack.ListSnapshots", "{\"allUsers\": true}",
                                             MEMSTRACK_ERROR_PERMISSION_DENIED);
                ASSERT_TRUE(json_is_string(json_object_get(d1, "reason")));
                json_auto_t *d2 = call_error(&f, "io.memstrack.DeleteSnapshot", "{\"name\": \"before\", \"uid\": 0}",
                                             MEMSTRACK_ERROR_PERMISSION_DENIED);
                ASSERT_TRUE(json_is_string(json_object_get(d2, "reason")));
        }
        fixture_done(&f);
}

/* A call from a child running as another user (see run_as()): the reply, or the error named expected. */
static json_t *child_call(VarlinkClient *c, const char *method, const char *params, const char *expected) {
        json_auto_t *p = params ? json_loads(params, 0, NULL) : NULL;
        json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;

        ASSERT_EQ(varlink_client_call(c, method, p, CALL_TIMEOUT_USEC, &reply, &error), 0);
        if (!streq(error ?: "", expected ?: "")) {
                fprintf(stderr, "uid %u: %s(%s): expected %s, got %s\n", (unsigned) geteuid(), method, params ?: "",
                        expected ?: "a reply", error ?: "a reply");
                abort();
        }
        return reply;
}

/* Runs fn in a child that became uid (keeping our group, the allowed one, so it gets in) with its own
 * connection, while this process serves it; the child's assertions are the test's. */
static void run_as(Fixture *f, uid_t uid, void (*fn)(VarlinkClient *c, void *userdata), void *userdata) {
        pid_t pid = fork();
        ASSERT_OK(pid);
        if (pid == 0) {
                VarlinkClient *c = NULL;

                if (setgroups(0, NULL) < 0 || setresgid(getgid(), getgid(), getgid()) < 0 ||
                    setresuid(uid, uid, uid) < 0 || geteuid() != uid)
                        _exit(2);
                if (varlink_client_connect(f->socket, &c) < 0)
                        _exit(3);
                fn(c, userdata);
                varlink_client_free(c);
                _exit(0);
        }
        int status = 0;
        for (unsigned i = 0; i < LOOP_SLICES_MAX; i++) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                ASSERT_OK(w);
                if (w == pid)
                        break;
                ASSERT_OK(sd_event_run(f->event, LOOP_SLICE_USEC));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "the child running as uid %u failed: status 0x%x\n", (unsigned) uid, status);
                (void) kill(pid, SIGKILL);
                abort();
        }
}

static void member_fills_its_marks(VarlinkClient *c, void *userdata) {
        char name[80];

        /* Its own "before": root's is another snapshot, which it neither sees nor replaces. */
        json_auto_t *list = child_call(c, "io.memstrack.ListSnapshots", NULL, NULL);
        ASSERT_EQ(json_array_size(json_object_get(list, "snapshots")), 0);
        json_auto_t *nss = child_call(c, "io.memstrack.Diff", "{\"name\": \"before\"}", MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT);
        ASSERT_STREQ(json_string_value(json_object_get(nss, "name")), "before");
        json_decref(child_call(c, "io.memstrack.Snapshot", "{\"name\": \"before\"}", NULL));
        for (int i = 1; i < 8; i++) {
                (void) snprintf(name, sizeof(name), "{\"name\": \"m%d\"}", i);
                json_decref(child_call(c, "io.memstrack.Snapshot", name, NULL));
        }
        json_auto_t *lim = child_call(c, "io.memstrack.Snapshot", "{\"name\": \"m9\"}", MEMSTRACK_ERROR_LIMIT_EXCEEDED);
        ASSERT_STREQ(json_string_value(json_object_get(lim, "limit")), "snapshots");
        json_auto_t *diff = child_call(c, "io.memstrack.Diff", "{\"name\": \"before\"}", NULL);
        ASSERT_EQ(get_int(diff, "beforePages"), 23);
        /* Others' snapshots are root's business. */
        json_auto_t *d1 = child_call(c, "io.memstrack.ListSnapshots", "{\"allUsers\": true}",
                                     MEMSTRACK_ERROR_PERMISSION_DENIED);
        json_auto_t *d2 = child_call(c, "io.memstrack.DeleteSnapshot", "{\"name\": \"before\", \"uid\": 0}",
                                     MEMSTRACK_ERROR_PERMISSION_DENIED);
        ASSERT_TRUE(json_is_string(json_object_get(d1, "reason")) && json_is_string(json_object_get(d2, "reason")));
        json_auto_t *mine = child_call(c, "io.memstrack.ListSnapshots", NULL, NULL);
        ASSERT_EQ(json_array_size(json_object_get(mine, "snapshots")), 8);
}

static void member_finds_room_taken(VarlinkClient *c, void *userdata) {
        const char *expected_limit = userdata;

        if (!expected_limit) {
                json_decref(child_call(c, "io.memstrack.Snapshot", "{\"name\": \"before\"}", NULL));
                return;
        }
        json_auto_t *lim = child_call(c, "io.memstrack.Snapshot", "{\"name\": \"before\"}", MEMSTRACK_ERROR_LIMIT_EXCEEDED);
        ASSERT_STREQ(json_string_value(json_object_get(lim, "limit")), expected_limit);
        ASSERT_EQ(get_int(lim, "value"), 24);
}

/*
 * Snapshot names are per uid, bounded per uid and for all users but root together: a group member can
 * neither replace root's snapshot of the same name nor take root's room, and three members filling theirs
 * leave a fourth with LimitExceeded "snapshotsAllUsers" until one is deleted. Needs root to be other users.
 */
static void test_marks_per_uid(void) {
        char name[80];
        Fixture f;

        fixture_setup(&f, 0);
        if (!f.root) {
                fprintf(stderr, "not root: snapshots of other users not checked (they need setresuid())\n");
                fixture_done(&f);
                return;
        }
        json_decref(call_ok(&f, "io.memstrack.Snapshot", "{\"name\": \"before\"}"));
        synthetic_alloc(f.accounting, 200, 0x9000, 3, SYNTHETIC_EXT4);

        run_as(&f, NOBODY_UID, member_fills_its_marks, NULL);
        /* Root's "before" is still root's, taken before the 8 pages. */
        json_auto_t *diff = call_ok(&f, "io.memstrack.Diff", "{\"name\": \"before\"}");
        ASSERT_EQ(get_int(diff, "beforePages"), 15);
        /* Root keeps room of its own. */
        for (int i = 1; i < 8; i++) {
                (void) snprintf(name, sizeof(name), "{\"name\": \"r%d\"}", i);
                json_decref(call_ok(&f, "io.memstrack.Snapshot", name));
        }
        /* Two more members fill the others' 24; a fourth finds no room, even for its first. */
        for (uid_t uid = NOBODY_UID - 2; uid < NOBODY_UID; uid++)
                run_as(&f, uid, member_fills_its_marks, NULL);
        run_as(&f, NOBODY_UID - 3, member_finds_room_taken, (void *) "snapshotsAllUsers");

        json_auto_t *all = call_ok(&f, "io.memstrack.ListSnapshots", "{\"allUsers\": true}");
        ASSERT_EQ(json_array_size(json_object_get(all, "snapshots")), 32);
        json_auto_t *own = call_ok(&f, "io.memstrack.ListSnapshots", NULL);
        ASSERT_EQ(json_array_size(json_object_get(own, "snapshots")), 8);
        /* Root deletes a member's: the fourth member gets its place. */
        (void) snprintf(name, sizeof(name), "{\"name\": \"before\", \"uid\": %u}", (unsigned) NOBODY_UID);
        json_decref(call_ok(&f, "io.memstrack.DeleteSnapshot", name));
        json_auto_t *nss = call_error(&f, "io.memstrack.DeleteSnapshot", name, MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT);
        ASSERT_STREQ(json_string_value(json_object_get(nss, "name")), "before");
        run_as(&f, NOBODY_UID - 3, member_finds_room_taken, NULL);
        /* Root's own "before" was not touched. */
        json_auto_t *still = call_ok(&f, "io.memstrack.Diff", "{\"name\": \"before\"}");
        ASSERT_EQ(get_int(still, "beforePages"), 15);
        fixture_done(&f);
}

static bool stack_tree_shows(json_t *reply, const char *text) {
        _cleanup_free_ char *s = json_dumps(reply, JSON_COMPACT);
        ASSERT_NOT_NULL(s);
        return strstr(s, text);
}

static void member_sees_no_raw_user_frames(VarlinkClient *c, void *userdata) {
        json_auto_t *tree = child_call(c, "io.memstrack.StackTree", NULL, NULL);
        ASSERT_TRUE(!stack_tree_shows(tree, "[user] 0x"));
        ASSERT_TRUE(stack_tree_shows(tree, "[user] [unknown]"));
        json_auto_t *units = child_call(c, "io.memstrack.Units", "{\"stacks\": 5}", NULL);
        ASSERT_TRUE(!stack_tree_shows(units, "[user] 0x"));
}

/*
 * With --user-stacks, raw user-space addresses of another user's process are kept from a group member as
 * kernel addresses are (StackTree, Units' stacks): the caller here is this test's process itself (its
 * own: shown) and, as root, nobody (root's process: hidden).
 */
static void test_user_frames(void) {
        Fixture f;

        fixture_setup(&f, 0);
        synthetic_alloc_user(f.accounting, (int32_t) getpid(), 0x70000);
        json_auto_t *tree = call_ok(&f, "io.memstrack.StackTree", NULL);
        ASSERT_TRUE(stack_tree_shows(tree, "[user] 0x7f3a12345678"));
        if (f.root)
                run_as(&f, NOBODY_UID, member_sees_no_raw_user_frames, NULL);
        else
                fprintf(stderr, "not root: another user's view of user frames not checked\n");
        fixture_done(&f);
}

/* The integer parameters of every method of the embedded interface, as "Method param" lines: read from the
 * IDL, so a parameter added there is covered here. */
static char *int_parameters_from_idl(void) {
        const char *idl = varlink_interface_io_memstrack;
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);

        ASSERT_NOT_NULL(f);
        for (const char *p = strstr(idl, "\nmethod "); p; p = strstr(p + 1, "\nmethod ")) {
                const char *name = p + strlen("\nmethod "), *q = strchr(name, '(');
                int name_len = (int) (q - name), depth = 1;
                char field[64];
                size_t n = 0;

                ASSERT_NOT_NULL(q);
                /* The parameter list up to its closing parenthesis (enums nest), comments cut: each
                 * "NAME: TYPE" at the first level, separated by commas or new lines. */
                for (q++; *q && depth > 0; q++) {
                        if (*q == '#') {
                                q += strcspn(q, "\n") - 1;
                                continue;
                        }
                        depth += *q == '(';
                        depth -= *q == ')';
                        if (depth != 1 || *q == ' ' || *q == '(')
                                continue;
                        if (*q == ',' || *q == '\n') {
                                n = 0;
                                continue;
                        }
                        if (*q == ':') {
                                const char *t = q + 1 + strspn(q + 1, " ?");
                                if (strncmp(t, "int", 3) == 0 && strchr(",)\n ", t[3]))
                                        fprintf(f, "%.*s %.*s\n", name_len, name, (int) n, field);
                                n = sizeof(field);      /* the type is no name */
                                continue;
                        }
                        if (n < sizeof(field))
                                field[n++] = *q;
                }
        }
        ASSERT_EQ(fclose(f), 0);
        return out;
}

/*
 * A number beyond int64_t in any integer parameter of any method, positive or negative, gets
 * InvalidParameter naming it, and the connection stays usable: jansson refuses such a number, which made
 * the daemon close the connection without a word.
 */
static void test_huge_integers(void) {
        _cleanup_free_ char *params = int_parameters_from_idl();
        char method[64], parameter[64], text[256];
        size_t checked = 0;
        Fixture f;

        fixture_setup(&f, 0);
        for (const char *line = params; line && *line; line = strchr(line, '\n') + 1) {
                ASSERT_EQ(sscanf(line, "%63s %63s", method, parameter), 2);
                for (int sign = 0; sign < 2; sign++) {
                        json_auto_t *e = NULL;
                        _cleanup_free_ char *error = NULL;
                        int fd = varlink_client_get_fd(f.client);

                        (void) snprintf(text, sizeof(text),
                                        "{\"method\":\"io.memstrack.%s\",\"parameters\":{\"%s\":%s99999999999999999999999}}",
                                        method, parameter, sign ? "-" : "");
                        ASSERT_EQ(send(fd, text, strlen(text) + 1, MSG_NOSIGNAL), (ssize_t) strlen(text) + 1);
                        ASSERT_EQ(wait_reply(&f, f.client, &e, &error), 0);
                        if (!error || !streq(error, VARLINK_ERROR_INVALID_PARAMETER) ||
                            !streq(json_string_value(json_object_get(e, "parameter")) ?: "", parameter))
                                fprintf(stderr, "%s\n", text);
                        ASSERT_STREQ(error, VARLINK_ERROR_INVALID_PARAMETER);
                        ASSERT_STREQ(json_string_value(json_object_get(e, "parameter")), parameter);
                }
                checked++;
        }
        /* Summary, Tasks, Modules, Units, History, StackTree, Top, Diff, Slab, Leaks, DeleteSnapshot: 23. */
        fprintf(stderr, "%zu integer parameters checked\n", checked);
        ASSERT_GE(checked, 23);
        json_auto_t *status = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_EQ(get_int(status, "trackedPages"), 15);
        fixture_done(&f);
}

/* OomKills and Status's oomWatching: not watched without an OOM log, then a kill recorded. */
static void test_oom_kills(void) {
        Fixture f;

        fixture_setup(&f, 0);
        /* No OOM room at all (a core without a Manager): said so, not a crash. */
        json_auto_t *none = call_error(&f, "io.memstrack.OomKills", NULL, MEMSTRACK_ERROR_NOT_TRACING);
        ASSERT_TRUE(json_is_string(json_object_get(none, "reason")));
        json_auto_t *status_none = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_TRUE(json_is_false(json_object_get(status_none, "oomWatching")));
        ASSERT_STREQ(json_string_value(json_object_get(status_none, "oomWatchReason")), "not started");

        /* A room whose watch has not started yet. */
        f.oom = oomlog_new();
        ASSERT_NOT_NULL(f.oom);
        json_auto_t *off = call_ok(&f, "io.memstrack.OomKills", NULL);
        ASSERT_TRUE(json_is_false(json_object_get(off, "watching")));
        ASSERT_STREQ(json_string_value(json_object_get(off, "reason")), "not started");
        ASSERT_EQ(json_array_size(json_object_get(off, "kills")), 0);
        json_auto_t *status_off = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_TRUE(json_is_false(json_object_get(status_off, "oomWatching")));
        ASSERT_STREQ(json_string_value(json_object_get(status_off, "oomWatchReason")), "not started");

        ASSERT_OK(oomlog_set_watching(f.oom, true, NULL));
        OomKill k = { .pid = 200, .timestamp_nsec = 9000000, .fields = OOM_KILL_HAS_COMM, .comm = "beta" };
        ASSERT_OK(oomlog_record_kill(f.oom, f.accounting, NULL, &k, 4096, NULL));
        json_auto_t *on = call_ok(&f, "io.memstrack.OomKills", NULL);
        ASSERT_TRUE(json_is_true(json_object_get(on, "watching")));
        ASSERT_TRUE(json_is_null(json_object_get(on, "reason")));
        ASSERT_EQ(get_int(on, "killsSeen"), 1);
        json_t *kill = json_array_get(json_object_get(on, "kills"), 0);
        ASSERT_EQ(get_int(kill, "pid"), 200);
        ASSERT_STREQ(json_string_value(json_object_get(kill, "unit")), "web.service");
        ASSERT_EQ(get_int(json_object_get(kill, "victim"), "currentPages"), 6);
        /* Exited 400 is no holder of note: as in Tasks without includeExited. */
        expect_pids(json_object_get(kill, "holders"), "tasks", "100 200");
        json_auto_t *status_on = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_TRUE(json_is_true(json_object_get(status_on, "oomWatching")));
        ASSERT_TRUE(json_is_null(json_object_get(status_on, "oomWatchReason")));
        expect_invalid(&f, "io.memstrack.OomKills", "{\"bogus\": 1}", "bogus");
        fixture_done(&f);
        oomlog_free(f.oom);
}

/* PermissionDenied for a caller that is not root, from root: a child becomes nobody (keeping group 0,
 * the allowed one, so it gets in) and calls method. Returns the child's verdict. */
static void expect_denied_from_child(Fixture *f, const char *method, const char *params) {
        pid_t pid = fork();
        ASSERT_OK(pid);
        if (pid == 0) {
                _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
                json_auto_t *p = params ? json_loads(params, 0, NULL) : NULL;
                json_auto_t *reply = NULL;
                _cleanup_free_ char *error = NULL;

                if (setgroups(0, NULL) < 0 || setresgid(getgid(), getgid(), getgid()) < 0 ||
                    setresuid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0 || geteuid() != NOBODY_UID)
                        _exit(2);
                if (varlink_client_connect(f->socket, &c) < 0 ||
                    varlink_client_call(c, method, p, CALL_TIMEOUT_USEC, &reply, &error) < 0)
                        _exit(3);
                if (!error || !streq(error, MEMSTRACK_ERROR_PERMISSION_DENIED) ||
                    !json_is_string(json_object_get(reply, "reason")))
                        _exit(4);
                _exit(0);
        }
        int status = 0;
        for (unsigned i = 0; i < LOOP_SLICES_MAX; i++) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                ASSERT_OK(w);
                if (w == pid)
                        break;
                ASSERT_OK(sd_event_run(f->event, LOOP_SLICE_USEC));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "the child calling %s as uid %d failed: status 0x%x\n", method, NOBODY_UID, status);
                (void) kill(pid, SIGKILL);
                abort();
        }
}

static void test_root_only(void) {
        Fixture f;

        fixture_setup(&f, 0);
        if (!f.root) {
                json_auto_t *d1 = call_error(&f, "io.memstrack.Reset", "{\"what\": \"all\"}",
                                             MEMSTRACK_ERROR_PERMISSION_DENIED);
                ASSERT_TRUE(json_is_string(json_object_get(d1, "reason")));
                json_auto_t *d2 = call_error(&f, "io.memstrack.SetLogLevel", "{\"level\": \"debug\"}",
                                             MEMSTRACK_ERROR_PERMISSION_DENIED);
                ASSERT_TRUE(json_is_string(json_object_get(d2, "reason")));
                /* Nothing was reset. */
                json_auto_t *st = call_ok(&f, "io.memstrack.Status", NULL);
                ASSERT_EQ(get_int(st, "trackedPages"), 15);
                fprintf(stderr, "not root: Reset and SetLogLevel checked for PermissionDenied only; "
                                "their replies and InvalidParameter need root\n");
                fixture_done(&f);
                return;
        }

        expect_denied_from_child(&f, "io.memstrack.Reset", "{\"what\": \"all\"}");
        expect_denied_from_child(&f, "io.memstrack.SetLogLevel", "{\"level\": \"debug\"}");

        json_decref(call_ok(&f, "io.memstrack.Reset", "{\"what\": \"peaks\"}"));
        json_auto_t *peaks = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_EQ(get_int(peaks, "trackedPages"), 15);
        ASSERT_EQ(get_int(peaks, "peakTrackedPages"), 15);
        ASSERT_EQ(get_int(peaks, "resets"), 0);
        json_decref(call_ok(&f, "io.memstrack.Reset", "{\"what\": \"all\"}"));
        json_auto_t *all = call_ok(&f, "io.memstrack.Status", NULL);
        ASSERT_EQ(get_int(all, "trackedPages"), 0);
        ASSERT_EQ(get_int(all, "resets"), 1);
        expect_invalid(&f, "io.memstrack.Reset", NULL, "what");
        expect_invalid(&f, "io.memstrack.Reset", "{\"what\": \"some\"}", "what");
        expect_invalid(&f, "io.memstrack.Reset", "{\"what\": \"all\", \"bogus\": 1}", "bogus");

        int level = log_get_max_level();
        json_decref(call_ok(&f, "io.memstrack.SetLogLevel", "{\"level\": \"debug\"}"));
        ASSERT_EQ(log_get_max_level(), LOG_DEBUG);
        log_set_max_level(level);
        expect_invalid(&f, "io.memstrack.SetLogLevel", "{\"level\": \"loud\"}", "level");
        expect_invalid(&f, "io.memstrack.SetLogLevel", NULL, "level");
        fixture_done(&f);
}

/* Explain and PageBreakdown over the wire: the views themselves are test-explain's; here their parameters
 * and errors. No memory controller is known to this service: the kernel's side says so. */
static void test_explain_and_breakdown(void) {
        Fixture f;

        fixture_setup(&f, 0);
        json_auto_t *web = call_ok(&f, "io.memstrack.Explain", "{\"name\": \"web.service\", \"limit\": 1, \"stacks\": 1}");
        ASSERT_EQ(get_int(web, "currentPages"), 6);
        ASSERT_TRUE(json_is_null(json_object_get(web, "kernel")));
        ASSERT_EQ(get_int(json_object_get(web, "alive"), "pages"), 6);
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(web, "alive"), "stacks")), 1);
        json_auto_t *gone = call_error(&f, "io.memstrack.Explain", "{\"name\": \"nonesuch.service\"}",
                                       "io.memstrack.NoSuchUnit");
        ASSERT_STREQ(json_string_value(json_object_get(gone, "name")), "nonesuch.service");
        expect_invalid(&f, "io.memstrack.Explain", "{}", "name");
        expect_invalid(&f, "io.memstrack.Explain", "{\"name\": \"web.service\", \"stacks\": 101}", "stacks");

        json_auto_t *order = call_ok(&f, "io.memstrack.PageBreakdown", "{\"by\": \"order\"}");
        ASSERT_EQ(get_int(order, "totalPages"), 15);
        json_auto_t *unit = call_ok(&f, "io.memstrack.PageBreakdown", "{\"by\": \"order\", \"unit\": \"web.service\"}");
        ASSERT_EQ(get_int(unit, "totalPages"), 6);
        json_auto_t *pid = call_error(&f, "io.memstrack.PageBreakdown", "{\"by\": \"gfp\", \"pid\": 99999}",
                                      "io.memstrack.NoSuchTask");
        ASSERT_EQ(get_int(pid, "pid"), 99999);
        json_auto_t *module = call_error(&f, "io.memstrack.PageBreakdown", "{\"by\": \"node\", \"module\": \"nope\"}",
                                         "io.memstrack.NoSuchModule");
        ASSERT_STREQ(json_string_value(json_object_get(module, "name")), "nope");
        expect_invalid(&f, "io.memstrack.PageBreakdown", "{\"by\": \"color\"}", "by");
        expect_invalid(&f, "io.memstrack.PageBreakdown", "{}", "by");
        expect_invalid(&f, "io.memstrack.PageBreakdown", "{\"by\": \"order\", \"pid\": 1, \"unit\": \"x\"}", "unit");
        fixture_done(&f);
}

/* A value of type t (valid_value) and one that is not (wrong_value), new references. */
static json_t *valid_value(const VarlinkType *t) {
        switch (t->kind) {
        case VARLINK_TYPE_BOOL:
                return json_true();
        case VARLINK_TYPE_INT:
                return json_integer(1);
        case VARLINK_TYPE_FLOAT:
                return json_real(0.5);
        case VARLINK_TYPE_STRING:
                return json_string("x");
        case VARLINK_TYPE_ENUM:
                return json_string(t->choices[0]);
        case VARLINK_TYPE_ARRAY:
                return json_array();
        case VARLINK_TYPE_REF:
                return valid_value(t->element);
        case VARLINK_TYPE_STRUCT: {
                json_t *o = json_object();
                for (size_t i = 0; i < t->n_fields; i++)
                        if (!t->fields[i].type->nullable)
                                ASSERT_OK(json_object_set_new(o, t->fields[i].name, valid_value(t->fields[i].type)));
                return o;
        }
        default:                /* OBJECT, MAP */
                return json_object();
        }
}

static json_t *wrong_value(const VarlinkType *t) {
        switch (t->kind) {
        case VARLINK_TYPE_INT:
        case VARLINK_TYPE_FLOAT:
        case VARLINK_TYPE_OBJECT:
        case VARLINK_TYPE_STRUCT:
        case VARLINK_TYPE_MAP:
                return json_string("1");
        case VARLINK_TYPE_ENUM:
                return json_string("notAChoice");
        case VARLINK_TYPE_ARRAY:
                return json_pack("[o]", wrong_value(t->element));
        case VARLINK_TYPE_REF:
                return wrong_value(t->element);
        default:                /* BOOL, STRING */
                return json_integer(1);
        }
}

/* Parameters for m with every mandatory one valid, then name (NULL: none) set to value (stolen). */
static char *parameters_with(const VarlinkMethodSignature *m, const char *name, json_t *value) {
        json_auto_t *p = valid_value(m->parameters);
        if (name)
                ASSERT_OK(json_object_set_new(p, name, value));
        char *text = json_dumps(p, JSON_COMPACT);
        ASSERT_NOT_NULL(text);
        return text;
}

/* Every method of the interface file, through the server as a client calls it: a parameter it does not
 * declare, one of the wrong type, a string outside its enum and a missing mandatory one are each refused
 * with InvalidParameter naming it, before any handler runs (nothing is flushed). */
static void test_every_method_checks_parameters(void) {
        const VarlinkSignature *sig = &varlink_signature_io_memstrack;
        unsigned checked = 0, methods_in_file = 0;
        Fixture f;

        /* The types are the served interface file's: as many methods as its text declares. */
        for (const char *l = varlink_interface_io_memstrack; (l = strstr(l, "\nmethod ")); l++)
                methods_in_file++;
        ASSERT_EQ(sig->n_methods, methods_in_file);

        fixture_setup(&f, 0);
        unsigned flushes = f.flushes;
        for (size_t i = 0; i < sig->n_methods; i++) {
                const VarlinkMethodSignature *m = sig->methods + i;
                const VarlinkType *t = m->parameters;

                if (!f.root && (streq(m->name, "io.memstrack.Reset") || streq(m->name, "io.memstrack.SetLogLevel"))) {
                        fprintf(stderr, "not root: %s answers PermissionDenied before its parameters\n", m->name);
                        continue;
                }
                _cleanup_free_ char *unknown = parameters_with(m, "notInTheInterface", json_integer(1));
                expect_invalid(&f, m->name, unknown, "notInTheInterface");
                for (size_t j = 0; j < t->n_fields; j++) {
                        const VarlinkTypeField *field = t->fields + j;
                        _cleanup_free_ char *wrong = parameters_with(m, field->name, wrong_value(field->type));
                        expect_invalid(&f, m->name, wrong, field->name);
                        if (!field->type->nullable) {
                                _cleanup_free_ char *null = parameters_with(m, field->name, json_null());
                                expect_invalid(&f, m->name, null, field->name);
                                json_auto_t *p = valid_value(t);
                                ASSERT_OK(json_object_del(p, field->name));
                                _cleanup_free_ char *missing = json_dumps(p, JSON_COMPACT);
                                expect_invalid(&f, m->name, missing, field->name);
                        }
                        checked++;
                }
        }
        ASSERT_EQ(f.flushes, flushes);
        fprintf(stderr, "%zu methods, %u parameters refused when unknown, of the wrong type or missing\n",
                sig->n_methods, checked);
        ASSERT_TRUE(checked > 50);
        fixture_done(&f);
}

int main(void) {
        /* A peer that goes away while we write must not kill the test. */
        (void) signal(SIGPIPE, SIG_IGN);
        if (!getgrgid(getgid())) {
                fprintf(stderr, "SKIP: our group %d has no name, so the service cannot be told to let us in\n",
                        (int) getgid());
                return EXIT_TEST_SKIP;
        }
        TEST(test_status_and_summary);
        TEST(test_tasks_and_modules);
        TEST(test_stack_tree);
        TEST(test_profile);
        TEST(test_units);
        TEST(test_explain_and_breakdown);
        TEST(test_top);
        TEST(test_top_interval);
        TEST(test_top_slab);
        TEST(test_leaks_paced);
        TEST(test_evicted_owners);
        TEST(test_top_shared_frames);
        TEST(test_marks);
        TEST(test_marks_per_uid);
        TEST(test_oom_kills);
        TEST(test_huge_integers);
        TEST(test_user_frames);
        TEST(test_root_only);
        TEST(test_every_method_checks_parameters);
        return 0;
}
