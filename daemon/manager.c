/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-login.h>

#include "access.h"
#include "cgroup-naming.h"
#include "document.h"
#include "history-keeper.h"
#include "kernel-symbols.h"
#include "log.h"
#include "manager.h"
#include "memcg.h"
#include "memory-trim.h"
#include "tracepoint.h"
#include "observer.h"
#include "oom.h"
#include "service.h"
#include "slab-reconciler.h"
#include "status-line.h"
#include "summary.h"
#include "system-memory.h"
#include "time-util.h"
#include "user-symbols.h"
#include "usym.h"

/* sd-event priority of everything clients cause (the varlink server, Top streams): below the event
 * source's ring buffers (SD_EVENT_PRIORITY_NORMAL), so draining the kernel's records always runs first
 * and no client load makes the daemon lose them. */
#define PRIORITY_CLIENTS (SD_EVENT_PRIORITY_NORMAL + 10)
#define TICK_INTERVAL_USEC 1000000

struct Manager {
        sd_event *event;
        ManagerConfig config;           /* strings borrowed from the caller (arg_* globals) */

        Accounting *accounting;         /* owned */
        EventSource *source;            /* owned */
        EventSource *heap_source;       /* owned: the heap source beside it (--heap-socket, polled), or NULL */
        char *source_reason;            /* owned: why this source runs (Status backendReason) */
        Service *service;               /* owned: io.memstrack on the varlink socket, if serving */
        UserSymbols *usym;              /* owned: names user frames in StackTree replies */
        Oom *oom;                       /* owned: OOM kills, their moments, pressure, the log */
        CgroupNaming *cgroup_naming;    /* the observer's: names new cgroups for the OOM room */
        Memcg *memcg;                   /* owned: the memory controller's figures; NULL: none */

        ObserverList observers;         /* owned: the policies told of events (observer.h) */
        /* Observers the Manager also talks to, borrowed from the list. */
        KernelSymbols *ksyms;           /* the kernel's symbol table */
        HistoryKeeper *history;         /* answers History */
        StatusLine *status;             /* the event rate */
        AccessWatch *access;            /* how recently pages were touched */

        sd_event_source *tick_timer;    /* owned: once a second, the observers' ticks */

        uint64_t start_usec;            /* CLOCK_MONOTONIC */
        SystemMemory memory_at_start;   /* the machine's memory right before tracing began */
        char *unit;                     /* our systemd unit, if started by systemd */
        long page_size;
        bool journal;                   /* log and summarize to the journal */
};

/* A daemon of user-space heaps alone (record's private one): no kernel memory to account, its report
 * wanted the moment the program ends. */
static bool heaps_alone(const ManagerConfig *c) {
        const SourceType *t = c->source ? source_type_find(c->source) : NULL;
        return t && t->user_space_only;
}

/* Takes o (NULL: its constructor ran out of memory). Errors logged. */
static int observe(Manager *m, EventObserver *o) {
        int r = observer_list_add(&m->observers, o);
        if (r == -E2BIG)
                return log_error_errno(r, "More observers than OBSERVER_LIST_MAX (%d): raise it.", OBSERVER_LIST_MAX);
        return r < 0 ? log_oom() : 0;
}

/* Every event passes here on its way to the core: the observers that want it before, the core, the
 * observers that want it after. */
static void on_event(void *userdata, const MsEvent *e) {
        Manager *m = userdata;

        observer_list_event(&m->observers, e, false);
        accounting_handle_event(m->accounting, e);
        observer_list_event(&m->observers, e, true);
}

/* The source's hint that a page event is coming: the core fetches its page table line meanwhile. */
static void on_prefetch_page(void *userdata, uint64_t pfn) {
        accounting_prefetch_page(((Manager *) userdata)->accounting, pfn);
}

/* Delivers what the source buffers below its wakeup watermark, so an answer reflects everything the
 * kernel reported up to now, and lets the observers catch up (answers name every unit they show). */
static void manager_flush(void *userdata) {
        Manager *m = userdata;

        if (!m->source)
                return;
        int r = m->source->ops->flush(m->source);
        if (r < 0)
                log_debug_errno(r, "Failed to flush the event source, answering with what arrived: %m");
        observer_list_run(&m->observers, OBSERVER_HOOK_FLUSH);
}

static uint64_t uptime_usec(const Manager *m) {
        return m->start_usec ? now_usec(CLOCK_MONOTONIC) - m->start_usec : 0;
}

static int tick_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        /* On a quiet system records can sit below the wakeup watermark for long: a second at most. */
        manager_flush(m);
        observer_list_run(&m->observers, OBSERVER_HOOK_TICK);
        /* Outside the observers' hooks: a pressure record may deliver again. */
        oom_tick(m->oom);
        return sd_event_source_set_time(s, usec + TICK_INTERVAL_USEC);
}

void manager_log_summary(Manager *m, const char *reason) {
        EventSourceStats src = {};

        manager_flush(m);
        if (m->source)
                m->source->ops->get_stats(m->source, &src);
        SummaryInput in = {
                .accounting = m->accounting,
                .source = m->source ? &src : NULL,
                .uptime_usec = uptime_usec(m),
                .reason = reason,
                .unit = m->unit,
                .page_size = m->page_size,
        };
        int r = summary_log(&in, m->journal);
        if (r < 0)
                log_warning_errno(r, "Failed to write the summary, ignoring: %m");
}

void manager_reload(Manager *m) {
        observer_list_run(&m->observers, OBSERVER_HOOK_RELOAD);
}

/* The cgroup namer alone, not the observers' flush: the OOM room names units from inside delivery. */
static void name_units(void *userdata) {
        cgroup_naming_resolve(((Manager *) userdata)->cgroup_naming);
}

/* The observers after the kernel symbols', in the order they are told of an event. */
static int add_observers(Manager *m) {
        EventObserver *cgroup_naming = NULL;
        int r;

        kernel_symbols_attach(m->ksyms, m->accounting);
        if ((r = cgroup_naming_new(m->event, m->config.cgroup_root, m->accounting, &cgroup_naming)) < 0)
                return r;
        m->cgroup_naming = cgroup_naming_of(cgroup_naming);
        if ((r = observe(m, cgroup_naming)) < 0 ||
            (r = history_keeper_new(m->config.state_directory, m->accounting, &m->history)) < 0 ||
            (r = observe(m, history_keeper_observer(m->history))) < 0 ||
            (r = observe(m, user_symbols_observer_new(m->usym, heaps_alone(&m->config) ?
                                                               accounting_heap(m->accounting) : NULL))) < 0)
                return r;
        m->status = status_line_new(m->accounting, m->page_size);
        if ((r = observe(m, m->status ? status_line_observer(m->status) : NULL)) < 0)
                return r;
        SlabReconciler *slab = slab_reconciler_new(m->accounting, "/proc/slabinfo");
        if ((r = observe(m, slab ? slab_reconciler_observer(slab) : NULL)) < 0)
                return r;
        AccessConfig access = m->config.access;
        if (!access.tracefs)
                access.tracefs = m->config.source_options.tracefs;
        r = access_watch_new(m->event, &access, m->accounting, &m->access);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Invalid thresholds of cold memory: %m");
        if ((r = observe(m, access_watch_observer(m->access))) < 0)
                return r;
        MemoryTrim *trim = memory_trim_new(m->accounting);
        if ((r = observe(m, trim ? memory_trim_observer(trim) : NULL)) < 0)
                return r;
        m->oom = oom_new(&(OomConfig) {
                /* What it reads, and the Manager's hooks its own handlers call. */
                .event = m->event, .accounting = m->accounting, .usym = m->usym, .memcg = m->memcg,
                .page_size = m->page_size, .journal = m->journal, .unit = m->unit,
                .pressure = m->config.pressure, .flush_source = manager_flush, .name_units = name_units,
                .userdata = m,
        });
        return observe(m, m->oom ? oom_observer(m->oom) : NULL);
}

int manager_new(const ManagerConfig *config, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return log_oom();
        m->config = *config;
        m->page_size = sysconf(_SC_PAGESIZE);
        m->journal = getenv("JOURNAL_STREAM") != NULL;
        if (sd_pid_get_unit(0, &m->unit) < 0)
                m->unit = NULL;

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the event loop: %m");
        if ((r = kernel_symbols_new(m->event, config->kallsyms, &m->ksyms)) < 0 ||
            (r = observe(m, kernel_symbols_observer(m->ksyms))) < 0)
                return r;
        AccountingConfig accounting = config->accounting;
        accounting.slab = config->source_options.slab;
        if (heaps_alone(config))
                accounting.expected_pages = 0;  /* the page table's smallest: no page will come */
        r = accounting_new(&accounting, kernel_symbols_table(m->ksyms), &m->accounting);
        if (r < 0)
                return log_error_errno(r, "Failed to set up accounting: %m");
        r = memcg_new(config->cgroup_root, config->memcg_root, &m->memcg);
        if (r == -ENOMEM)
                return log_oom();
        m->usym = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        if (!m->usym)
                return log_oom();
        if ((r = add_observers(m)) < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        service_free(m->service);
        sd_event_source_disable_unref(m->tick_timer);
        event_source_free(m->heap_source);
        event_source_free(m->source);
        /* Observers may hold timers on the loop and borrow the core: before both. */
        observer_list_done(&m->observers);
        oom_free(m->oom);
        memcg_free(m->memcg);
        usym_free(m->usym);
        accounting_free(m->accounting);
        sd_event_unref(m->event);
        free(m->source_reason);
        free(m->unit);
        free(m);
        return NULL;
}

/* The Service's and the reports' view of the Manager: what they may ask between calls. */
static void get_state(void *userdata, ServiceState *ret) {
        Manager *m = userdata;

        *ret = (ServiceState) {
                .backend = m->source ? m->source->ops->name : "none",
                .backend_reason = m->source_reason,
                .uptime_usec = uptime_usec(m),
                .events_per_second = status_line_events_per_second(m->status),
                .heap_socket = m->heap_source ? m->config.heap_socket : NULL,
                .memcg = m->memcg,
                .memcg_reason = m->memcg ? NULL : "no memory controller on this host",
                .memory = m->start_usec ? &m->memory_at_start : NULL,
        };
        if (m->source)
                m->source->ops->get_stats(m->source, &ret->source);
        if (m->oom)
                oom_service_view(m->oom, ret);
}

static int start_tick_timer(Manager *m) {
        int r = sd_event_add_time_relative(m->event, &m->tick_timer, CLOCK_MONOTONIC, TICK_INTERVAL_USEC, 0,
                                           tick_timer, m);
        /* Time sources are one-shot by default; the handler moves the time on. */
        if (r >= 0)
                r = sd_event_source_set_enabled(m->tick_timer, SD_EVENT_ON);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the tick timer: %m");
        (void) sd_event_source_set_description(m->tick_timer, "tick");
        return 0;
}

static int heap_stop(void *userdata, int32_t pid) {
        Manager *m = userdata;
        return source_heap_stop((EventSource *[]) { m->source, m->heap_source }, 2, pid);
}

static int start_service(Manager *m) {
        ServiceConfig c = m->config.service;

        /* What the service answers about is ours; where and to whom it answers is the configuration's. */
        c.event = m->event;
        c.accounting = m->accounting;
        c.usym = m->usym;
        c.history = history_keeper_history(m->history);
        c.coldness = access_watch_coldness(m->access);
        c.page_size = m->page_size;
        c.priority = PRIORITY_CLIENTS;
        c.userdata = m;
        c.flush = manager_flush;
        c.get_state = get_state;
        c.heap_stop = heap_stop;
        return service_new(&c, &m->service);
}

int manager_start(Manager *m) {
        MsEventSink sink = { .event = on_event, .prefetch_page = on_prefetch_page, .userdata = m };
        int r;

        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");
        /* A source reading its input here, before the loop, stops at SIGTERM or SIGINT (-ECANCELED). */
        r = source_new(m->config.source, &m->config.source_options, &m->source, NULL, &m->source_reason);
        if (r < 0)
                return r; /* logged with the reason */
        /* Before any event: its tracing frames, and its own symbols if it names its frames (a log), else the
         * kernel's (read only now: a source with a table of its own needs none). */
        accounting_set_tracer_frames(m->accounting, m->source->ops->tracer_frames);
        /* Heaps alone have no kernel frame to name: /proc/kallsyms (tens of ms of the kernel's time to
         * write out) is not read. */
        if (!heaps_alone(&m->config) &&
            (r = kernel_symbols_load(m->ksyms, m->source->ops->symbols ? m->source->ops->symbols(m->source) : NULL,
                                     m->source->ops->name)) < 0)
                return r;
        /* What tracing will not see: read before it begins, so that nothing falls between the two (a page
         * allocated in between counts in both, which errs on the large side). */
        system_memory_read(NULL, &m->memory_at_start);
        m->start_usec = now_usec(CLOCK_MONOTONIC);
        r = m->source->ops->start(m->source, m->event, &sink);
        if (r < 0)      /* -ECANCELED: stopped by a signal, logged */
                return r == -ECANCELED ? r :
                       log_error_errno(r, "Failed to start the %s event source: %m", m->source->ops->name);
        EventSourceStats st = {};
        m->source->ops->get_stats(m->source, &st);
        kernel_symbols_after_hooks(m->ksyms, &st);
        if ((r = source_start_heap_beside(&m->config.source_options, m->config.heap_socket, m->source, m->event,
                                          &sink, &m->heap_source)) < 0)
                return r;
        /* Pages by kind are named from outside the events: the GFP flags from the allocation tracepoint's
         * format, the zones from /proc/zoneinfo where the source's page keys are pfns. */
        GfpName *gfp_names = NULL;
        size_t n_gfp_names = 0;
        if (!heaps_alone(&m->config) &&
            tracepoint_gfp_names(m->config.source_options.tracefs, &gfp_names, &n_gfp_names) >= 0)
                page_kinds_set_gfp_names(accounting_page_kinds(m->accounting), gfp_names, n_gfp_names);
        (void) page_kinds_read_zones(accounting_page_kinds(m->accounting), m->config.zoneinfo, st.pfns);
        /* A daemon of user-space heaps alone shows no kernel pages beside a kill, and closing the watch's
         * events at exit would wait for an RCU grace period that record's user waits out too. */
        if ((r = oom_start(m->oom, !heaps_alone(&m->config), "only user-space heaps are traced",
                           m->config.source_options.tracefs)) < 0 ||
            (!heaps_alone(&m->config) && (r = access_watch_start(m->access, m->source->ops->name, st.pfns)) < 0) ||
            (r = start_tick_timer(m)) < 0 ||
            (m->config.serve && (r = start_service(m)) < 0))
                return r; /* logged */
        /* On stderr: the first stream line makes journald pin our unit for the summary at exit (log.h). */
        log_stderr(LOG_INFO, "Tracing page allocations with the %s backend.", m->source->ops->name);
        return 0;
}

int manager_run(Manager *m) {
        int r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

/* memstrack's reports from the state at exit, as memstrackctl report would render them now. */
static int write_reports(Manager *m) {
        ServiceState state;

        get_state(m, &state);
        DocumentInput in = {
                .accounting = m->accounting,
                .usym = m->usym,
                .state = &state,
                .history = history_keeper_history(m->history),
                .coldness = access_watch_coldness(m->access),
                .page_size = m->page_size,
                .sort_by_peak = report_wants_peak(m->config.report),
        };
        return document_write_reports(&in, m->config.report, m->config.report_output);
}

int manager_finish(Manager *m) {
        manager_flush(m);
        /* A stream line right before the summary keeps journald's record of our unit fresh (log.h). */
        log_stderr(LOG_INFO, "Stopping after %.1f s, writing the summary.", uptime_usec(m) / 1e6);
        /* What the observers have pending (module names to read, the last history) comes before the
         * summary, as before any answer. */
        observer_list_run(&m->observers, OBSERVER_HOOK_FINISH);
        manager_log_summary(m, "shutdown");
        return m->config.report ? write_reports(m) : 0;
}
