/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "explain.h"
#include "log.h"
#include "parse-util.h"
#include "pressure-watch.h"
#include "read-file.h"
#include "time-util.h"

/* One pressure file watched: the system's (unit 0) or a unit's. */
typedef struct PsiWatch {
        PressureWatch *watch;
        uint32_t unit;                  /* UNITS_NONE: the system */
        char *path;                     /* owned */
        sd_event_source *trigger;       /* owned: the kernel wakes it past the threshold; NULL: averages */
        bool tried;                     /* a trigger was tried (once per path) */
} PsiWatch;

/* What the watcher knows of one unit, by unit index. */
typedef struct UnitWatch {
        char *cgroup;                   /* owned: the path the rest was read at */
        bool limited;                   /* it has a memory.max or memory.high of its own */
        uint64_t last_record_usec;
        bool recorded;
        PsiWatch psi;                   /* path NULL until the unit is limited */
} UnitWatch;

struct PressureWatch {
        PressureWatchConfig config;     /* strings copied below */
        char *trigger;                  /* owned, NULL: no PSI */
        bool trigger_full;
        uint64_t stall_usec, window_usec;
        double threshold_percent;       /* the trigger as a share of stall, for averages */
        bool use_triggers;              /* false: averages (the system's trigger could not be written) */
        char *psi_reason;               /* owned: why averages, or NULL */
        PsiWatch system;
        uint64_t system_last_usec;
        bool system_recorded;
        UnitWatch **units;              /* owned, by unit index; NULL entries */
        size_t n_units;
        unsigned ticks;
};

int pressure_trigger_parse(const char *s, bool *ret_full, uint64_t *ret_stall_usec, uint64_t *ret_window_usec) {
        char kind[8], stall[24], window[24], rest;
        uint64_t a, b;

        if (!s || sscanf(s, "%7s %23s %23s %c", kind, stall, window, &rest) != 3)
                return -EINVAL;
        if (!streq(kind, "some") && !streq(kind, "full"))
                return -EINVAL;
        /* The kernel's bounds: a window of 0.5 to 10 s, a stall within it. */
        if (parse_uint64(window, 500000, 10000000, &b) < 0 || parse_uint64(stall, 1, b, &a) < 0)
                return -EINVAL;
        *ret_full = streq(kind, "full");
        *ret_stall_usec = a;
        *ret_window_usec = b;
        return 0;
}

const char *pressure_limit_crossed(uint64_t current, uint64_t max, uint64_t high, unsigned margin_percent,
                uint64_t *ret_limit) {
        const struct {
                const char *name;
                uint64_t value;
        } limits[] = { { "high", high }, { "max", max } };

        for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
                uint64_t l = limits[i].value;
                if (l == MEMCG_UNLIMITED || l == 0)
                        continue;
                /* Within margin: current >= l - l * margin / 100, without overflow. */
                if (current >= l - l / 100 * margin_percent - l % 100 * margin_percent / 100) {
                        *ret_limit = l;
                        return limits[i].name;
                }
        }
        return NULL;
}

int pressure_avg10(const char *text, bool full, double *ret) {
        const char *want = full ? "full " : "some ";

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                if (!startswith(line, want))
                        continue;
                const char *p = strstr(line, "avg10=");
                char *end;
                if (!p)
                        return -EINVAL;
                double v = strtod(p + strlen("avg10="), &end);
                if (end == p + strlen("avg10="))
                        return -EINVAL;
                *ret = v;
                return 0;
        }
        return -EINVAL;
}

static void psi_done(PsiWatch *p) {
        p->trigger = sd_event_source_disable_unref(p->trigger);
        free(p->path);
        p->path = NULL;
        p->tried = false;
}

static void unit_watch_free(UnitWatch *u) {
        if (!u)
                return;
        psi_done(&u->psi);
        free(u->cgroup);
        free(u);
}

PressureWatch *pressure_watch_free(PressureWatch *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_units; i++)
                unit_watch_free(w->units[i]);
        free(w->units);
        psi_done(&w->system);
        free(w->trigger);
        free(w->psi_reason);
        free(w);
        return NULL;
}

static bool due(const PressureWatch *w, bool recorded, uint64_t last, uint64_t now) {
        return !recorded || now >= last + w->config.interval_usec;
}

/* Takes and logs a record. unit_name and cgroup are copies: the flush may move the core's tables. */
static void take_record(PressureWatch *w, OomPressure *p) {
        const PressureWatchConfig *c = &w->config;
        json_auto_t *explain = NULL;
        const json_t *record = NULL;
        int r;

        /* The moment is now: what the kernel reported up to it first, and the names of new cgroups. */
        c->flush_source(c->userdata);
        if (units_pending(accounting_units(c->accounting)) > 0)
                c->name_units(c->userdata);
        if (p->unit) {
                ExplainQuery q = {
                        .name = p->unit,
                        .limit = OOMLOG_TOP_N,
                        .stacks = 3,
                        .memcg = c->memcg,
                        .memcg_reason = "no memory controller",
                        .page_size = c->page_size,
                        .usym = c->usym,
                };
                r = explain_query_json(c->accounting, &q, &explain);
                if (r < 0 && r != -ENXIO)
                        log_debug_errno(r, "Failed to explain %s for its pressure record, ignoring: %m", p->unit);
        }
        r = oomlog_record_pressure(c->log, c->accounting, c->usym, p, explain, &record);
        if (r < 0)
                return (void) log_warning_errno(r, "Failed to take the pressure record of %s: %m",
                                                p->unit ?: "the system");
        r = oomlog_log_pressure(record, c->journal, c->unit, c->page_size);
        if (r < 0)
                log_warning_errno(r, "Failed to log the pressure record of %s, ignoring: %m", p->unit ?: "the system");
}

/* The line of a pressure file the record quotes ("some avg10=21.30 ..."), into buf. */
static const char *pressure_line(const char *path, bool full, char *buf, size_t size) {
        char text[256];
        const char *want = full ? "full " : "some ";

        if (read_file_small(path, text, sizeof(text)) < 0)
                return NULL;
        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
                if (startswith(line, want)) {
                        (void) snprintf(buf, size, "%.*s", (int) strcspn(line, "\n"), line);
                        return buf;
                }
        return NULL;
}

/* Pressure past the threshold on p's file: a record, if one is due. */
static void psi_crossed(PressureWatch *w, PsiWatch *p) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char line[256];
        _cleanup_free_ char *name = NULL, *cgroup = NULL;

        if (p->unit == UNITS_NONE) {
                if (!due(w, w->system_recorded, w->system_last_usec, now))
                        return;
                w->system_recorded = true;
                w->system_last_usec = now;
        } else {
                UnitWatch *u = p->unit < w->n_units ? w->units[p->unit] : NULL;
                const UnitUsage *x = units_unit(accounting_units(w->config.accounting), p->unit);
                if (!u || !x || !x->name || !due(w, u->recorded, u->last_record_usec, now))
                        return;
                u->recorded = true;
                u->last_record_usec = now;
                name = strdup(x->name);
                cgroup = x->cgroup ? strdup(x->cgroup) : NULL;
                if (!name)
                        return (void) log_oom();
        }
        OomPressure rec = {
                .reason = OOM_PRESSURE_PSI,
                .unit = name,
                .cgroup = cgroup,
                .pressure = pressure_line(p->path, w->trigger_full, line, sizeof(line)) ?: w->trigger,
                .timestamp_usec = now,
        };
        take_record(w, &rec);
}

static int on_trigger(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PsiWatch *p = userdata;

        if (revents & (EPOLLERR | EPOLLHUP)) {
                /* The cgroup is gone: its file says so once; the next round drops the unit. */
                p->trigger = sd_event_source_disable_unref(p->trigger);
                return 0;
        }
        if (revents & EPOLLPRI)
                psi_crossed(p->watch, p);
        return 0;
}

/* Writes the trigger to p's file and watches it. -errno (then averages are read instead). */
static int psi_open_trigger(PressureWatch *w, PsiWatch *p) {
        p->tried = true;
        int fd = open(p->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* The kernel takes the trigger with its terminating NUL. */
        if (write(fd, w->trigger, strlen(w->trigger) + 1) < 0) {
                int r = -errno;
                (void) close(fd);
                return r;
        }
        int r = sd_event_add_io(w->config.event, &p->trigger, fd, EPOLLPRI, on_trigger, p);
        if (r < 0) {
                (void) close(fd);
                return r;
        }
        (void) sd_event_source_set_io_fd_own(p->trigger, true);
        (void) sd_event_source_set_description(p->trigger, "psi-trigger");
        return 0;
}

/* In averages mode (or where a trigger could not be written): avg10 against the trigger's share. */
static void psi_poll(PressureWatch *w, PsiWatch *p) {
        char text[256];
        double avg;

        if (p->trigger || !p->path || read_file_small(p->path, text, sizeof(text)) < 0 ||
            pressure_avg10(text, w->trigger_full, &avg) < 0)
                return;
        if (avg >= w->threshold_percent)
                psi_crossed(w, p);
}

static UnitWatch *unit_watch(PressureWatch *w, uint32_t unit) {
        if (unit >= w->n_units) {
                size_t n = MAX((size_t) unit + 1, w->n_units * 2);
                UnitWatch **a = realloc(w->units, n * sizeof(UnitWatch *));
                if (!a)
                        return NULL;
                memset(a + w->n_units, 0, (n - w->n_units) * sizeof(UnitWatch *));
                w->units = a;
                w->n_units = n;
        }
        if (!w->units[unit]) {
                w->units[unit] = calloc(1, sizeof(UnitWatch));
                if (w->units[unit])
                        w->units[unit]->psi = (PsiWatch) { .watch = w, .unit = unit };
        }
        return w->units[unit];
}

static void unit_drop(PressureWatch *w, uint32_t unit) {
        if (unit < w->n_units) {
                unit_watch_free(w->units[unit]);
                w->units[unit] = NULL;
        }
}

static void check_unit(PressureWatch *w, uint32_t unit, const UnitUsage *x, bool limits_round) {
        const PressureWatchConfig *c = &w->config;
        uint64_t current, max, high, limit;

        UnitWatch *u = unit_watch(w, unit);
        if (!u)
                return;
        if (!u->cgroup || !streq(u->cgroup, x->cgroup)) {
                /* New, or the unit's cgroup changed (a restart): what was watched is another's. */
                psi_done(&u->psi);
                free(u->cgroup);
                u->cgroup = strdup(x->cgroup);
                u->limited = false;
                if (!u->cgroup)
                        return;
                limits_round = true;
        }
        if (!u->limited && !limits_round)
                return;
        if (memcg_read_limits(c->memcg, u->cgroup, &current, &max, &high) < 0) {
                u->limited = false;
                return;
        }
        u->limited = max != MEMCG_UNLIMITED || high != MEMCG_UNLIMITED;
        if (!u->limited)
                return;

        const char *which = c->margin_percent > 0 ?
                pressure_limit_crossed(current, max, high, c->margin_percent, &limit) : NULL;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        if (which && due(w, u->recorded, u->last_record_usec, now)) {
                _cleanup_free_ char *name = strdup(x->name), *cgroup = strdup(x->cgroup);
                if (!name || !cgroup)
                        return (void) log_oom();
                u->recorded = true;
                u->last_record_usec = now;
                OomPressure rec = {
                        .reason = OOM_PRESSURE_LIMIT,
                        .unit = name,
                        .cgroup = cgroup,
                        .limit = which,
                        .current_bytes = current,
                        .limit_bytes = limit,
                        .margin_percent = c->margin_percent,
                        .timestamp_usec = now,
                };
                take_record(w, &rec);
                return;
        }

        /* Pressure of its own, on cgroup2's file (PSI is cgroup2's on hybrid hosts too). */
        const char *root = memcg_cgroup2_root(c->memcg);
        if (!w->trigger || !root)
                return;
        if (!u->psi.path && asprintf(&u->psi.path, "%s%s/memory.pressure", root, u->cgroup) < 0) {
                u->psi.path = NULL;
                return;
        }
        if (w->use_triggers && !u->psi.tried) {
                int r = psi_open_trigger(w, &u->psi);
                if (r < 0)
                        log_debug_errno(r, "No PSI trigger on %s, reading its averages: %m", u->psi.path);
        }
        psi_poll(w, &u->psi);
}

void pressure_watch_check(PressureWatch *w) {
        const PressureWatchConfig *c = &w->config;
        Units *un = accounting_units(c->accounting);
        bool limits_round = w->ticks++ % PRESSURE_LIMITS_EVERY == 0;

        if (c->memcg && (c->margin_percent > 0 || w->trigger))
                for (uint32_t i = 1; i < units_unit_count(un); i++) {
                        /* Re-read each time: a record flushes the core, which may move its tables. */
                        const UnitUsage *x = units_unit(un, i);
                        if (!x || x->n_live == 0 || !x->cgroup || !x->name || x->cgroup[0] != '/')
                                unit_drop(w, i);
                        else
                                check_unit(w, i, x, limits_round);
                }
        if (w->trigger)
                psi_poll(w, &w->system);
}

/* The system's pressure file: the cgroup2 root's (the whole machine, or the container), else /proc's. */
static char *system_pressure_path(const PressureWatchConfig *c) {
        const char *root = c->memcg ? memcg_cgroup2_root(c->memcg) : NULL;
        char *path = NULL;

        if (c->system_pressure)
                return strdup(c->system_pressure);
        if (root && asprintf(&path, "%s/memory.pressure", root) >= 0) {
                if (access(path, R_OK) == 0)
                        return path;
                free(path);
        }
        return strdup("/proc/pressure/memory");
}

/* The PressureWatch object of OomKills: how pressure is watched. */
static void publish(PressureWatch *w) {
        json_auto_t *o = json_pack("{s:i, s:o, s:s, s:o, s:I}",
                                   "marginPercent", (int) w->config.margin_percent,
                                   "trigger", w->trigger ? json_string(w->trigger) : json_null(),
                                   "psi", !w->trigger ? "off" : w->use_triggers ? "trigger" : "averages",
                                   "reason", w->psi_reason ? json_string(w->psi_reason) : json_null(),
                                   "intervalUsec", (json_int_t) w->config.interval_usec);
        if (o)
                oomlog_set_pressure_watch(w->config.log, o);
}

int pressure_watch_new(const PressureWatchConfig *config, PressureWatch **ret) {
        _cleanup_(pressure_watch_freep) PressureWatch *w = calloc(1, sizeof(PressureWatch));
        int r;

        assert(config && config->event && config->log && config->accounting && config->flush_source &&
               config->name_units && ret);

        if (!w)
                return -ENOMEM;
        w->config = *config;
        w->config.interval_usec = config->interval_usec ?: PRESSURE_INTERVAL_USEC_DEFAULT;
        w->config.trigger = w->config.system_pressure = NULL;    /* copies below */
        w->system = (PsiWatch) { .watch = w, .unit = UNITS_NONE };
        if (config->trigger && *config->trigger) {
                r = pressure_trigger_parse(config->trigger, &w->trigger_full, &w->stall_usec, &w->window_usec);
                if (r < 0)
                        return r;
                w->trigger = strdup(config->trigger);
                w->system.path = system_pressure_path(config);
                if (!w->trigger || !w->system.path)
                        return -ENOMEM;
                w->threshold_percent = 100.0 * (double) w->stall_usec / (double) w->window_usec;
                r = psi_open_trigger(w, &w->system);
                w->use_triggers = r >= 0;
                if (r < 0 && asprintf(&w->psi_reason, "cannot write a trigger to %s (%s): reading its averages "
                                      "each second", w->system.path, strerror(-r)) < 0)
                        w->psi_reason = NULL;
                if (r < 0)
                        log_info("Memory pressure: %s.", w->psi_reason ?: "reading averages");
        }
        publish(w);
        *ret = TAKE_PTR(w);
        return 0;
}
