/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#include "bootphase.h"
#include "document.h"
#include "format-util.h"
#include "log.h"
#include "manager.h"
#include "summary.h"
#include "time-util.h"
#include "utf8.h"

#define STATUS_INTERVAL_USEC 1000000

uint64_t manager_uptime_usec(const Manager *m) {
        return m->start_usec ? now_usec(CLOCK_MONOTONIC) - m->start_usec : 0;
}

double manager_events_per_second(const Manager *m) {
        /* The oldest and newest of the per-second samples. */
        unsigned newest = (m->rate_next + EVENT_RATE_SAMPLES - 1) % EVENT_RATE_SAMPLES;
        unsigned oldest = m->rate_next % EVENT_RATE_SAMPLES;
        if (m->rate_usec[oldest] == 0)
                oldest = 0;
        if (m->rate_usec[newest] <= m->rate_usec[oldest])
                return 0;
        return (double) (m->rate_events[newest] - m->rate_events[oldest]) * 1e6 /
               (double) (m->rate_usec[newest] - m->rate_usec[oldest]);
}

void manager_save_history(Manager *m) {
        m->history_saved_usec = now_usec(CLOCK_MONOTONIC);
        if (!m->history_path)
                return;
        int r = history_save(m->history, m->history_path);
        if (r < 0)
                log_warning_errno(r, "Failed to write the history to %s, ignoring: %m", m->history_path);
        else
                log_debug("Wrote the history to %s.", m->history_path);
}

/* Where the history is kept, and what it held before a restart. A corrupt file is logged and replaced. */
static int manager_setup_history(Manager *m) {
        const char *dir = m->config.state_directory;
        _cleanup_free_ char *env_dir = NULL;
        int r;

        m->history = history_new();
        if (!m->history)
                return log_oom();
        if (!dir) {
                /* systemd's StateDirectory=: a colon-separated list, ours first. */
                const char *e = getenv("STATE_DIRECTORY");
                if (e && *e) {
                        env_dir = strndup(e, strcspn(e, ":"));
                        if (!env_dir)
                                return log_oom();
                        dir = env_dir;
                }
        }
        if (!dir || !*dir)
                return 0;
        if (asprintf(&m->history_path, "%s/history", dir) < 0) {
                m->history_path = NULL;
                return log_oom();
        }
        r = history_load(m->history, m->history_path);
        if (r == -EBADMSG)
                log_warning("The history in %s is corrupt or of another version, starting a new one.",
                            m->history_path);
        else if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Failed to read the history from %s, starting a new one: %m", m->history_path);
        else if (r == 0)
                log_info("Read the history from %s.", m->history_path);
        m->history_saved_usec = now_usec(CLOCK_MONOTONIC);
        return 0;
}

static int status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        AccountingStats st;
        UsageStats us;
        char size[32];

        /* On a quiet system records can sit below the wakeup watermark for long: a second at most. */
        manager_flush(m);
        accounting_get_stats(m->accounting, &st);
        m->rate_events[m->rate_next] = st.events;
        m->rate_usec[m->rate_next] = now_usec(CLOCK_MONOTONIC);
        m->rate_next = (m->rate_next + 1) % EVENT_RATE_SAMPLES;

        history_tick(m->history, m->accounting, now_usec(CLOCK_REALTIME));
        if (m->history_path && now_usec(CLOCK_MONOTONIC) - m->history_saved_usec >= HISTORY_SAVE_INTERVAL_USEC)
                manager_save_history(m);

        usage_get_stats(accounting_usage(m->accounting), &us);
        format_pages(size, sizeof(size), st.current_pages, (uint64_t) m->page_size);
        (void) sd_notifyf(false, "STATUS=Tracking %s in %zu tasks, %.0f events/s, %llu lost", size,
                          us.n_tasks - us.n_exited, manager_events_per_second(m),
                          (unsigned long long) st.lost_events);
        return sd_event_source_set_time(s, usec + STATUS_INTERVAL_USEC);
}

static int on_sigusr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        manager_flush(m);
        manager_log_summary(m, "SIGUSR1");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        int r;

        /* What can change at run time: the log level from the configuration file, and the symbol table.
         * MONOTONIC_USEC lets systemd >= 253 tell this reload from an earlier one (Type=notify-reload). */
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
        if (m->config.reload_config)
                (void) m->config.reload_config(); /* logs why it failed, and keeps the current settings */
        r = manager_reload_ksym(m);
        if (r < 0)
                log_warning_errno(r, "Failed to reload kernel symbols, keeping the old ones: %m");
        (void) sd_notify(false, "READY=1");
        return 0;
}

/* The snapshot of the pending kill, from the core as it is now. */
static void oom_snapshot(Manager *m) {
        const json_t *record = NULL;
        int r;

        m->oom_pending = false;
        /* The victim's unit by name. */
        if (units_pending(accounting_units(m->accounting)) > 0)
                manager_resolve_cgroups(m);
        r = oomlog_record_kill(m->oom, m->accounting, m->usym, &m->oom_pending_kill, m->page_size, &record);
        if (r < 0)
                return (void) log_warning_errno(r, "Failed to take the snapshot of the OOM kill of pid %d: %m",
                                                (int) m->oom_pending_kill.pid);
        r = oomlog_log_kill(record, m->journal, m->unit, m->page_size);
        if (r < 0)
                log_warning_errno(r, "Failed to log the OOM kill of pid %d: %m", (int) m->oom_pending_kill.pid);
}

/* A new global peak high enough above the last snapshot's: maybe a snapshot (rate-limited). */
static void offer_peak(Manager *m, uint64_t current) {
        int r = oomlog_offer_peak(m->oom, m->accounting, m->usym, current, now_usec(CLOCK_MONOTONIC));
        if (r < 0)
                log_debug_errno(r, "Failed to take a peak snapshot: %m");
        m->peak_threshold_pages = oomlog_peak_threshold(m->oom);
}

/* The OOM killer picked a victim. The snapshot is of that moment: the page records up to the kill are
 * delivered first, and on_event() takes it before applying the first record after it. */
static void on_oom_kill(void *userdata, const OomKill *kill) {
        Manager *m = userdata;

        if (m->oom_pending)
                oom_snapshot(m);        /* two kills at once: the first one's moment is now */
        m->oom_pending_kill = *kill;
        m->oom_pending = true;
        manager_flush(m);
        if (m->oom_pending)
                oom_snapshot(m);
        oomlog_set_lost(m->oom, oomwatch_lost(m->oom_watch));
}

/*
 * A cgroup seen for the first time is named from the task of the event while it lives (its
 * /proc/PID/cgroup, checked against the id): a unit that lives less than the debounced walk below takes,
 * or that the walk's timer, starved while the daemon drains a burst, reaches only after its cgroup is
 * gone, still has its name (an OOM-killed service is such a unit). Misses fall back on the walk.
 */
static void name_cgroup_from_task(Manager *m, const MsEvent *e) {
        Units *u = accounting_units(m->accounting);
        _cleanup_free_ char *path = NULL, *name = NULL;
        size_t n;

        if (!m->cgroups || e->pid <= 0 || e->cgroup_id == 0)
                return;
        uint32_t cgroup = units_cgroup_intern(u, e->cgroup_id);
        /* One try per cgroup: a miss (the task moved, or is gone) is the walk's to name. */
        if (cgroup == UNITS_NONE || !units_cgroup(u, cgroup)->pending || cgroup == m->cgroup_named_last)
                return;
        m->cgroup_named_last = cgroup;
        if (cgroupnames_task_path(m->cgroups, NULL, e->pid, e->cgroup_id, &path) < 0)
                return;
        const char *unit = cgroupnames_unit_name(path, &n);
        name = strndup(unit, n);
        if (!name || units_cgroup_resolve(u, cgroup, name, path) < 0)
                log_debug("Failed to name cgroup %" PRIu64 " from pid %d, naming it with the next walk.",
                          e->cgroup_id, (int) e->pid);
}

static void on_prefetch_page(void *userdata, uint64_t pfn) {
        Manager *m = userdata;
        accounting_prefetch_page(m->accounting, pfn);
}

/* Every event passes here on its way to the core, so module loads can refresh symbols. */
static void on_event(void *userdata, const MsEvent *e) {
        Manager *m = userdata;
        if (_unlikely_(m->oom_pending) && e->timestamp_nsec > m->oom_pending_kill.timestamp_nsec)
                oom_snapshot(m);
        accounting_handle_event(m->accounting, e);
        if ((e->type == MS_EVENT_PAGE_ALLOC || e->type == MS_EVENT_SAMPLE)) {
                uint64_t current = accounting_current_pages(m->accounting);
                if (_unlikely_(current >= m->peak_threshold_pages))
                        offer_peak(m, current);
        }
        /* A cgroup seen for the first time: named from its task now, or a moment later, a burst of new
         * ones with one walk. */
        if (_unlikely_(units_pending(accounting_units(m->accounting)) > 0))
                name_cgroup_from_task(m, e);
        if (_unlikely_(units_pending(accounting_units(m->accounting)) > 0) && !debounce_pending(m->cgroup_resolve)) {
                int r = debounce_request(m->cgroup_resolve);
                if (r < 0)
                        log_debug_errno(r, "Failed to schedule naming new cgroups, naming them at the next query: %m");
        }
        /* A cached symbol session belongs to one process image: not past its exit or exec. */
        if (_unlikely_(e->type == MS_EVENT_TASK_EXIT || e->type == MS_EVENT_TASK_COMM) && e->tid == e->pid)
                usym_forget(m->usym, e->pid);
        /* A process exited: its cgroup may be removed next (a unit stopped). Seen by a walk a few seconds
         * after the last exit of a burst. */
        if (_unlikely_(e->type == MS_EVENT_TASK_EXIT) && e->tid == e->pid && m->cgroups)
                (void) debounce_request(m->cgroup_recheck);
        if (_unlikely_(e->type == MS_EVENT_MODULE_LOAD)) {
                /* Not now: a moment after the last load of a burst. Nodes created until then are
                 * classified again by the reload (accounting_set_ksym()). */
                accounting_symbols_stale(m->accounting);
                int r = debounce_request(m->ksym_reload);
                if (r < 0) {
                        /* The module's name is the kernel's bytes (utf8.h). */
                        _cleanup_free_ char *name = utf8_escape(e->module.name, UTF8_ESCAPE_CONTROL);
                        log_warning_errno(r, "Failed to schedule the kernel symbol reload after loading %s, ignoring: %m",
                                          name ?: "a module");
                }
        }
}

/* The unit name and path of a cgroup id, if the last walk saw it. */
static bool lookup_cgroup(Manager *m, uint64_t id, char **ret_name, const char **ret_path) {
        const char *path = cgroupnames_path(m->cgroups, id);
        size_t n;

        if (!path)
                return false;
        const char *name = cgroupnames_unit_name(path, &n);
        *ret_name = strndup(name, n);
        *ret_path = path;
        return true;
}

/* Walks the cgroup tree again and marks which named cgroups are gone, or back. */
static int walk_cgroups(Manager *m) {
        Units *u = accounting_units(m->accounting);
        int r;

        r = cgroupnames_walk(m->cgroups);
        if (r < 0)
                return log_warning_errno(r, "Failed to walk the cgroup tree at %s, ignoring: %m",
                                         cgroupnames_root(m->cgroups));
        for (uint32_t i = 1; i < units_cgroup_count(u); i++) {
                const CgroupUsage *c = units_cgroup(u, i);
                if (c->id != 0 && !c->pending)
                        units_cgroup_set_removed(u, i, !cgroupnames_path(m->cgroups, c->id));
        }
        return 0;
}

void manager_resolve_cgroups(Manager *m) {
        Units *u = accounting_units(m->accounting);
        bool walked = false;
        int r;

        if (units_pending(u) == 0)
                return;
        for (uint32_t i = 1; i < units_cgroup_count(u) && units_pending(u) > 0; i++) {
                const CgroupUsage *c = units_cgroup(u, i);
                _cleanup_free_ char *name = NULL;
                const char *path = NULL;

                if (!c->pending)
                        continue;
                if (!m->cgroups) {
                        /* No cgroup2 tree to look in: nameless, as if removed. */
                        r = units_cgroup_resolve(u, i, NULL, NULL);
                        if (r < 0)
                                return (void) log_debug_errno(r, "Failed to name cgroup %" PRIu64 ": %m", c->id);
                        continue;
                }
                bool found = lookup_cgroup(m, c->id, &name, &path);
                if (!found && !walked) {
                        /* Made since the last walk: one walk for all the cgroups missing now. */
                        walked = true;
                        (void) walk_cgroups(m);
                        found = lookup_cgroup(m, c->id, &name, &path);
                }
                if (found && !name)
                        return (void) log_debug_errno(ENOMEM, "Failed to name cgroup %" PRIu64 ": %m", c->id);
                r = units_cgroup_resolve(u, i, name, found ? path : NULL);
                if (r < 0)
                        return (void) log_debug_errno(r, "Failed to name cgroup %" PRIu64 ": %m", c->id);
                /* Gone before it could be named. */
                if (!found)
                        units_cgroup_set_removed(u, i, true);
        }
}

static void resolve_cgroups_deferred(void *userdata) {
        manager_resolve_cgroups(userdata);
}

static void recheck_cgroups_deferred(void *userdata) {
        Manager *m = userdata;

        (void) walk_cgroups(m);
        manager_resolve_cgroups(m);
}

static void reload_ksym_deferred(void *userdata) {
        int r = manager_reload_ksym(userdata);
        if (r < 0)
                log_warning_errno(r, "Failed to reload kernel symbols after module loads, ignoring: %m");
}

int manager_reload_ksym(Manager *m) {
        Ksym *k = NULL;
        int r;

        /* A source that names its own frames (an imported log) has nothing to reload. */
        if (m->source_symbols)
                return 0;
        r = ksym_load(m->config.kallsyms, &k);
        if (r < 0)
                return r;
        accounting_set_ksym(m->accounting, k);
        ksym_free(m->ksym);
        m->ksym = k;
        return 0;
}

int manager_new(const ManagerConfig *config, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return log_oom();
        m->config = *config;
        m->page_size = sysconf(_SC_PAGESIZE);
        m->journal = getenv("JOURNAL_STREAM") != NULL;

        r = ksym_load(config->kallsyms, &m->ksym);
        if (r < 0)
                return log_error_errno(r, "Failed to read kernel symbols from %s: %m", config->kallsyms ?: "/proc/kallsyms");
        /* Whether addresses are hidden matters once the source is known (manager_start()): one that names
         * its own frames does not need them. */
        log_debug("Read %zu kernel symbols.", ksym_count(m->ksym));

        AccountingConfig accounting = config->accounting;
        accounting.slab = config->source_options.slab;
        r = accounting_new(&accounting, m->ksym, &m->accounting);
        if (r < 0)
                return log_error_errno(r, "Failed to set up accounting: %m");
        m->usym = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        if (!m->usym)
                return log_oom();
        r = manager_setup_history(m);
        if (r < 0)
                return r;
        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the event loop: %m");
        r = debounce_new(m->event, "ksym-reload", KSYM_RELOAD_DELAY_USEC, KSYM_RELOAD_MAX_DELAY_USEC,
                         reload_ksym_deferred, m, &m->ksym_reload);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the symbol reload timer: %m");
        r = debounce_new(m->event, "cgroup-resolve", CGROUP_RESOLVE_DELAY_USEC, CGROUP_RESOLVE_MAX_DELAY_USEC,
                         resolve_cgroups_deferred, m, &m->cgroup_resolve);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the cgroup naming timer: %m");
        r = debounce_new(m->event, "cgroup-recheck", CGROUP_RECHECK_DELAY_USEC, CGROUP_RECHECK_MAX_DELAY_USEC,
                         recheck_cgroups_deferred, m, &m->cgroup_recheck);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the cgroup recheck timer: %m");
        r = cgroupnames_new(config->cgroup_root, &m->cgroups);
        if (r == -ENOMEDIUM)
                log_notice("No cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified: pages per unit "
                           "are counted by cgroup id, without names.");
        else if (r < 0)
                return log_error_errno(r, "Failed to set up cgroup naming: %m");
        else
                /* The first walk is any later one: no cgroup is known yet to be marked gone. */
                (void) walk_cgroups(m);
        if (sd_pid_get_unit(0, &m->unit) < 0)
                m->unit = NULL;
        m->oom = oomlog_new();
        if (!m->oom)
                return log_oom();
        m->peak_threshold_pages = oomlog_peak_threshold(m->oom);
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        service_free(m->service);
        oomwatch_free(m->oom_watch);
        oomlog_free(m->oom);
        sd_event_source_disable_unref(m->status_timer);
        sd_event_source_disable_unref(m->sigusr1);
        sd_event_source_disable_unref(m->sighup);
        debounce_free(m->ksym_reload);
        debounce_free(m->cgroup_resolve);
        debounce_free(m->cgroup_recheck);
        cgroupnames_free(m->cgroups);
        history_free(m->history);
        free(m->history_path);
        event_source_free(m->source);
        usym_free(m->usym);
        accounting_free(m->accounting);
        ksym_free(m->ksym);
        sd_event_unref(m->event);
        free(m->source_reason);
        free(m->unit);
        free(m);
        return NULL;
}

/* The Service's view of the Manager: what it may ask between calls. */
static void service_flush(void *userdata) {
        manager_flush(userdata);
}

static void service_get_live(void *userdata, ServiceLive *ret) {
        Manager *m = userdata;

        *ret = (ServiceLive) {
                .backend = m->source ? m->source->ops->name : "none",
                .backend_reason = m->source_reason,
                .uptime_usec = manager_uptime_usec(m),
                .events_per_second = manager_events_per_second(m),
                .oom = m->oom,
        };
        if (m->source)
                m->source->ops->get_stats(m->source, &ret->source);
}

/* Takes the source's own symbol table, if it has one, in place of the kernel's: before any event. */
static int use_source_symbols(Manager *m) {
        const char *text = m->source->ops->symbols ? m->source->ops->symbols(m->source) : NULL;
        Ksym *k = NULL;
        int r;

        if (!text)
                return 0;
        r = ksym_load_text(text, &k);
        if (r < 0)
                return log_error_errno(r, "Failed to read the symbol table of the %s event source: %m",
                                       m->source->ops->name);
        accounting_set_ksym(m->accounting, k);
        ksym_free(m->ksym);
        m->ksym = k;
        m->source_symbols = true;
        log_debug("Using the %zu symbols of the %s event source.", ksym_count(k), m->source->ops->name);
        return 0;
}

int manager_start(Manager *m) {
        MsEventSink sink = { .event = on_event, .prefetch_page = on_prefetch_page, .userdata = m };
        const char *reason = NULL;
        int r;

        r = sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sigusr1, SIGUSR1, on_sigusr1, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");

        r = source_new(m->config.source, &m->config.source_options, &m->source, NULL, &m->source_reason);
        if (r < 0)
                return r; /* logged with the reason */
        r = use_source_symbols(m);
        if (r < 0)
                return r;
        if (!m->source_symbols && ksym_addresses_hidden(m->ksym))
                log_warning("Kernel addresses are hidden (kernel.kptr_restrict, or no CAP_SYSLOG): stacks will show raw "
                            "addresses and pages cannot be charged to modules.");
        m->start_usec = now_usec(CLOCK_MONOTONIC);
        r = m->source->ops->start(m->source, m->event, &sink);
        if (r < 0)
                return log_error_errno(r, "Failed to start the %s event source: %m", m->source->ops->name);

        r = oomwatch_new(m->event, m->config.source_options.tracefs, on_oom_kill, m, &m->oom_watch, &reason);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                log_notice("Not watching OOM kills: %s.", reason ?: "oom:mark_victim could not be opened");
        else
                log_debug("Watching OOM kills (oom:mark_victim).");
        r = oomlog_set_watching(m->oom, r >= 0, r >= 0 ? NULL : reason);
        if (r < 0)
                return log_oom();

        r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC, STATUS_INTERVAL_USEC, 0,
                                       status_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the status timer: %m");
        (void) sd_event_source_set_description(m->status_timer, "status");
        /* Time sources are one-shot by default; the handler moves the time on. */
        r = sd_event_source_set_enabled(m->status_timer, SD_EVENT_ON);
        if (r < 0)
                return log_error_errno(r, "Failed to enable the status timer: %m");

        if (m->config.serve) {
                r = service_new(&(ServiceConfig) {
                                        .event = m->event,
                                        .accounting = m->accounting,
                                        .usym = m->usym,
                                        .history = m->history,
                                        .page_size = m->page_size,
                                        .socket_path = m->config.socket_path,
                                        .boot_phase_path = !m->config.boot_snapshot ? BOOT_PHASE_PATH_DEFAULT :
                                                           m->config.boot_snapshot[0] == 0 ? NULL :
                                                           m->config.boot_snapshot,
                                        .group = m->config.group,
                                        .first_message_timeout_usec = m->config.first_message_timeout_usec,
                                        .request_timeout_usec = m->config.request_timeout_usec,
                                        .idle_timeout_usec = m->config.idle_timeout_usec,
                                        .output_timeout_usec = m->config.output_timeout_usec,
                                        .priority = MANAGER_PRIORITY_CLIENTS,
                                        .userdata = m,
                                        .flush = service_flush,
                                        .get_live = service_get_live,
                                }, &m->service);
                if (r < 0)
                        return r; /* logged */
        }
        /* On stderr: the first stream line makes journald pin our unit for the summary at exit (log.h). */
        log_stderr(LOG_INFO, "Tracing page allocations with the %s backend.", m->source->ops->name);
        return 0;
}

void manager_log_summary(Manager *m, const char *reason) {
        EventSourceStats src = {};

        if (m->source)
                m->source->ops->get_stats(m->source, &src);
        SummaryInput in = {
                .accounting = m->accounting,
                .source = m->source ? &src : NULL,
                .uptime_usec = manager_uptime_usec(m),
                .reason = reason,
                .unit = m->unit,
                .page_size = m->page_size,
        };
        int r = summary_log(&in, m->journal);
        if (r < 0)
                log_warning_errno(r, "Failed to write the summary, ignoring: %m");
}

void manager_flush(Manager *m) {
        if (!m->source)
                return;
        int r = m->source->ops->flush(m->source);
        if (r < 0)
                log_debug_errno(r, "Failed to flush the event source, answering with what arrived: %m");
        /* Answers name every unit they show. */
        if (units_pending(accounting_units(m->accounting)) > 0)
                manager_resolve_cgroups(m);
}

/* memstrack's reports from the state at exit, as memstrackctl report would render them now. */
static int write_reports(Manager *m) {
        const char *output = m->config.report_output;
        ServiceLive live;
        int r;

        service_get_live(m, &live);
        DocumentInput in = {
                .accounting = m->accounting,
                .usym = m->usym,
                .live = &live,
                .page_size = m->page_size,
                .sort_by_peak = report_wants_peak(m->config.report),
        };
        r = document_write_reports(&in, m->config.report, output);
        if (r < 0)
                return log_error_errno(r, "Failed to write the report to %s: %m", output ?: "standard output");
        log_info("Wrote the report to %s.", output ?: "standard output");
        return 0;
}

int manager_finish(Manager *m) {
        manager_flush(m);
        /* The summary names the modules loaded just before the end too. */
        if (m->ksym_reload)
                debounce_flush(m->ksym_reload);
        /* A stream line right before the summary keeps journald's record of our unit fresh (log.h). */
        log_stderr(LOG_INFO, "Stopping after %.1f s, writing the summary.", manager_uptime_usec(m) / 1e6);
        manager_log_summary(m, "shutdown");
        /* The last second too. */
        history_tick(m->history, m->accounting, now_usec(CLOCK_REALTIME));
        manager_save_history(m);
        return m->config.report ? write_reports(m) : 0;
}
