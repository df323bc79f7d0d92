/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <systemd/sd-journal.h>

#include "format-util.h"
#include "log.h"
#include "oomlog.h"
#include "query.h"
#include "time-util.h"
#include "utf8.h"
#include "varlink.h"

/* A ring of records: items[(first + i) % max] for i < n, oldest first. Owns the records. */
#define RING_MAX MAX3_CONST(OOMLOG_KILLS_MAX, OOMLOG_PEAKS_MAX, OOMLOG_PRESSURE_MAX)
#define MAX3_CONST(a, b, c) ((a) > (b) ? ((a) > (c) ? (a) : (c)) : ((b) > (c) ? (b) : (c)))

typedef struct Ring {
        json_t *items[RING_MAX];
        size_t first, n, max;
        uint64_t total;                 /* ever added */
} Ring;

struct OomLog {
        bool watching;
        char *reason;                   /* owned: why kills are not watched */
        uint64_t lost;
        Ring kills, peaks, pressure;
        json_t *pressure_watch;         /* owned: PressureWatch, NULL until set */
        uint64_t growth_pages;          /* a snapshot needs a total at least this: the last one's + 10 % */
        uint64_t peak_threshold_pages;  /* callers offer totals at or above this (oomlog_peak_threshold()) */
        uint64_t last_peak_usec;        /* CLOCK_MONOTONIC of the last peak snapshot, or of the first offer */
        bool offered;
};

static void ring_add(Ring *r, json_t *record) {
        if (r->n == r->max) {
                json_decref(r->items[r->first]);
                r->items[r->first] = record;
                r->first = (r->first + 1) % r->max;
        } else
                r->items[(r->first + r->n++) % r->max] = record;
        r->total++;
}

static const json_t *ring_last(const Ring *r) {
        return r->n > 0 ? r->items[(r->first + r->n - 1) % r->max] : NULL;
}

static json_t *ring_json(const Ring *r) {
        json_auto_t *a = json_array();

        for (size_t i = 0; a && i < r->n; i++)
                if (json_array_append(a, r->items[(r->first + i) % r->max]) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

static void ring_done(Ring *r) {
        for (size_t i = 0; i < r->n; i++)
                json_decref(r->items[(r->first + i) % r->max]);
        *r = (Ring) { .max = r->max };
}

OomLog *oomlog_new(void) {
        OomLog *l = calloc(1, sizeof(OomLog));

        if (!l)
                return NULL;
        l->kills.max = OOMLOG_KILLS_MAX;
        l->peaks.max = OOMLOG_PEAKS_MAX;
        l->pressure.max = OOMLOG_PRESSURE_MAX;
        l->growth_pages = l->peak_threshold_pages = 1;
        l->reason = strdup("not started");
        if (!l->reason)
                return oomlog_free(l);
        return l;
}

OomLog *oomlog_free(OomLog *l) {
        if (!l)
                return NULL;
        ring_done(&l->kills);
        ring_done(&l->peaks);
        ring_done(&l->pressure);
        json_decref(l->pressure_watch);
        free(l->reason);
        free(l);
        return NULL;
}

int oomlog_set_watching(OomLog *l, bool watching, const char *reason) {
        char *copy = NULL;

        if (reason && !(copy = strdup(reason)))
                return -ENOMEM;
        free(l->reason);
        l->reason = copy;
        l->watching = watching;
        return 0;
}

bool oomlog_watching(const OomLog *l) {
        return l->watching;
}

const char *oomlog_reason(const OomLog *l) {
        return l->reason;
}

void oomlog_set_lost(OomLog *l, uint64_t n) {
        l->lost = n;
}

/* Holders: totals and the top OOMLOG_TOP_N tasks, units, modules and stacks by current pages. */
static int holders_json(Accounting *a, UserSymbols *usym, json_t **ret) {
        json_auto_t *tasks = NULL, *modules = NULL, *units = NULL, *stacks = NULL;
        AccountingStats s;
        int r;

        r = query_tasks(a, &(QueryTasks) { .sort = QUERY_SORT_CURRENT, .limit = OOMLOG_TOP_N, .pid = -1,
                                           .hide_zero = true }, &tasks);
        if (r < 0)
                return r;
        r = query_units(a, &(QueryUnits) { .sort = QUERY_SORT_CURRENT, .limit = OOMLOG_TOP_N, .hide_zero = true },
                        &units);
        if (r < 0)
                return r;
        r = query_modules(a, QUERY_SORT_CURRENT, OOMLOG_TOP_N, &modules);
        if (r < 0)
                return r;
        /* Kept for later readers of any uid: no raw kernel addresses. */
        r = query_top_stacks(a, OOMLOG_TOP_N, false, usym, &stacks);
        if (r < 0)
                return r;
        accounting_get_stats(a, &s);
        *ret = json_pack("{s:I, s:I, s:O, s:O, s:O, s:O}",
                         "trackedPages", varlink_count(s.current_pages),
                         "peakTrackedPages", varlink_count(s.peak_pages),
                         "tasks", json_object_get(tasks, "tasks"),
                         "units", units,
                         "modules", modules,
                         "stacks", stacks);
        return *ret ? 0 : -ENOMEM;
}

static int set_kib(json_t *o, const char *key, bool has, uint64_t kib) {
        return json_object_set_new(o, key, has ? json_integer(varlink_count(kib * 1024)) : json_null());
}

int oomlog_record_kill(OomLog *l, Accounting *a, UserSymbols *usym, const OomKill *k, long page_size,
                const json_t **ret_record) {
        json_auto_t *holders = NULL, *victim = json_null(), *unit = json_null(), *o = NULL;
        int r;

        assert(l && a && k);

        r = holders_json(a, usym, &holders);
        if (r < 0)
                return r;
        uint32_t idx = k->pid > 0 ? view_find_process(a, k->pid) : VIEW_TASK_NONE;
        ViewTask t;
        ViewUnit x;
        bool known = idx != VIEW_TASK_NONE && view_task(a, idx, &t);
        if (known) {
                json_decref(victim);
                victim = query_task_json(&t);
                if (!victim)
                        return -ENOMEM;
                if (t.unit != VIEW_UNIT_NONE && view_unit(a, t.unit, &x) && x.name) {
                        json_decref(unit);
                        unit = utf8_json_string(x.name);
                        if (!unit)
                                return -ENOMEM;
                }
        }
        /* The kernel's comm first; memstrack's when the kernel records the pid only. */
        const char *comm = k->fields & OOM_KILL_HAS_COMM ? k->comm : known ? t.comm : NULL;
        o = json_pack("{s:I, s:I, s:i, s:o, s:O, s:O}",
                      "timestampUsec", varlink_count(k->timestamp_nsec / 1000),
                      "realtimeUsec", varlink_count(now_usec(CLOCK_REALTIME)),
                      "pid", (int) k->pid,
                      "comm", comm ? utf8_json_string(comm) : json_null(),
                      "unit", unit,
                      "victim", victim);
        if (!o ||
            json_object_set_new(o, "uid", k->fields & OOM_KILL_HAS_UID ? json_integer(k->uid) : json_null()) < 0 ||
            json_object_set_new(o, "oomScoreAdj", k->fields & OOM_KILL_HAS_OOM_SCORE_ADJ ?
                                json_integer(k->oom_score_adj) : json_null()) < 0 ||
            set_kib(o, "totalVmBytes", k->fields & OOM_KILL_HAS_TOTAL_VM, k->total_vm_kib) < 0 ||
            set_kib(o, "anonRssBytes", k->fields & OOM_KILL_HAS_ANON_RSS, k->anon_rss_kib) < 0 ||
            set_kib(o, "fileRssBytes", k->fields & OOM_KILL_HAS_FILE_RSS, k->file_rss_kib) < 0 ||
            set_kib(o, "shmemRssBytes", k->fields & OOM_KILL_HAS_SHMEM_RSS, k->shmem_rss_kib) < 0 ||
            set_kib(o, "pgtablesBytes", k->fields & OOM_KILL_HAS_PGTABLES, k->pgtables_kib) < 0 ||
            json_object_set_new(o, "pageSize", json_integer(page_size)) < 0 ||
            json_object_set(o, "holders", holders) < 0)
                return -ENOMEM;
        ring_add(&l->kills, TAKE_PTR(o));
        if (ret_record)
                *ret_record = ring_last(&l->kills);
        return 0;
}

static const char *str_or(const json_t *o, const char *key, const char *fallback) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ?: fallback;
}

/* A name of a record for text and journal fields: control characters escaped too (utf8.h), so a name
 * cannot start a line of its own. Never NULL: "" on OOM. */
static char *text_of(const json_t *o, const char *key, const char *fallback) {
        char *t = utf8_escape(str_or(o, key, fallback), UTF8_ESCAPE_CONTROL);
        return t ?: strdup("");
}

static json_int_t int_of(const json_t *o, const char *key) {
        return json_integer_value(json_object_get(o, key));
}

/* "pid comm size, ..." of a list of tasks, or "name size, ..." of units or modules. */
static void print_list(FILE *f, const json_t *list, bool tasks, long page_size) {
        size_t i;
        json_t *x;
        char b[32];

        json_array_foreach(list, i, x) {
                _cleanup_free_ char *name = text_of(x, tasks ? "comm" : "name", "?");
                format_pages(b, sizeof(b), (uint64_t) int_of(x, "currentPages"), (uint64_t) page_size);
                if (tasks)
                        fprintf(f, "%s%d %s %s", i > 0 ? ", " : "", (int) int_of(x, "pid"), name ?: "", b);
                else
                        fprintf(f, "%s%s %s", i > 0 ? ", " : "", name ?: "", b);
        }
        if (i == 0)
                fputs("none", f);
}

/* The innermost frame of the biggest stack, escaped as text_of(); "" if none. */
static char *top_frame(const json_t *holders) {
        const json_t *frames = json_object_get(json_array_get(json_object_get(holders, "stacks"), 0), "frames");
        char *t = utf8_escape(json_string_value(json_array_get(frames, 0)) ?: "", UTF8_ESCAPE_CONTROL);
        return t ?: strdup("");
}

int oomlog_log_kill(const json_t *record, bool journal, const char *unit, long page_size) {
        const json_t *holders = json_object_get(record, "holders");
        const json_t *tasks = json_object_get(holders, "tasks"), *units = json_object_get(holders, "units");
        const json_t *modules = json_object_get(holders, "modules");
        const json_t *top_task = json_array_get(tasks, 0), *top_unit = json_array_get(units, 0);
        const json_t *top_module = json_array_get(modules, 0);
        const json_t *victim = json_object_get(record, "victim");
        _cleanup_free_ char *text = NULL, *fields = NULL, *frame = top_frame(holders);
        _cleanup_free_ char *comm = text_of(record, "comm", "?"), *unit_name = text_of(record, "unit", "");
        _cleanup_free_ char *task = text_of(top_task, "comm", ""), *top_unit_name = text_of(top_unit, "name", "");
        _cleanup_free_ char *module = text_of(top_module, "name", "");
        size_t size = 0;
        char b[32];

        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        format_pages(b, sizeof(b), (uint64_t) int_of(victim, "currentPages"), (uint64_t) page_size);
        /* Names in records are escaped already (utf8_json_string()). */
        fprintf(f, "OOM killer picked pid %d (%s) in %s, holding %s; top tasks: ", (int) int_of(record, "pid"),
                comm ?: "", unit_name && *unit_name ? unit_name : "an unknown unit",
                json_is_object(victim) ? b : "nothing tracked");
        print_list(f, tasks, true, page_size);
        fputs("; top units: ", f);
        print_list(f, units, false, page_size);
        fputs("; top modules: ", f);
        print_list(f, modules, false, page_size);
        if (frame && *frame)
                fprintf(f, "; top stack at %s", frame);
        if (fclose(f) != 0 || !text)
                return -ENOMEM;
        if (!journal) {
                log_warning("%s", text);
                return 0;
        }
        fields = json_dumps(record, JSON_COMPACT);
        if (!fields)
                return -ENOMEM;
        int r = sd_journal_send("MESSAGE=%s", text,
                                "MESSAGE_ID=" OOMLOG_MESSAGE_ID,
                                "PRIORITY=%i", LOG_WARNING,
                                "SYSLOG_IDENTIFIER=memstrackd",
                                "OBJECT_SYSTEMD_UNIT=%s", unit ?: "memstrackd.service",
                                "MEMSTRACK_OOM_VICTIM_PID=%d", (int) int_of(record, "pid"),
                                "MEMSTRACK_OOM_VICTIM_COMM=%s", json_is_string(json_object_get(record, "comm")) ? comm : "",
                                "MEMSTRACK_OOM_VICTIM_UNIT=%s", unit_name ?: "",
                                "MEMSTRACK_OOM_VICTIM_PAGES=%" PRIi64, (int64_t) int_of(victim, "currentPages"),
                                "MEMSTRACK_OOM_TOP_TASK=%s", task ?: "",
                                "MEMSTRACK_OOM_TOP_TASK_PID=%d", (int) int_of(top_task, "pid"),
                                "MEMSTRACK_OOM_TOP_TASK_PAGES=%" PRIi64, (int64_t) int_of(top_task, "currentPages"),
                                "MEMSTRACK_OOM_TOP_UNIT=%s", top_unit_name ?: "",
                                "MEMSTRACK_OOM_TOP_UNIT_PAGES=%" PRIi64, (int64_t) int_of(top_unit, "currentPages"),
                                "MEMSTRACK_OOM_TOP_MODULE=%s", module ?: "",
                                "MEMSTRACK_OOM_TOP_STACK=%s", frame ?: "",
                                "MEMSTRACK_OOM_TRACKED_PAGES=%" PRIi64, (int64_t) int_of(holders, "trackedPages"),
                                "MEMSTRACK_OOM_RECORD=%s", fields,
                                "MEMSTRACK_PAGE_SIZE=%ld", page_size,
                                NULL);
        return r < 0 ? r : 0;
}

uint64_t oomlog_peak_threshold(const OomLog *l) {
        return l->peak_threshold_pages;
}

int oomlog_offer_peak(OomLog *l, Accounting *a, UserSymbols *usym, uint64_t current_pages, uint64_t usec) {
        json_auto_t *holders = NULL, *o = NULL;
        AccountingStats s;
        int r;

        /* The first interval starts with the first offer (the first allocation): the totals of the first
         * seconds of tracing are no peaks worth a snapshot. */
        if (!l->offered) {
                l->offered = true;
                l->last_peak_usec = usec;
        }
        /* Not due: the threshold moves to where it may be, so the per-event check stays one compare. */
        accounting_get_stats(a, &s);
        if (current_pages < l->growth_pages || current_pages < s.peak_pages) {
                l->peak_threshold_pages = MAX(l->growth_pages, s.peak_pages);
                return 0;
        }
        if (usec < l->last_peak_usec + OOMLOG_PEAK_INTERVAL_USEC) {
                /* Too soon: asked again 1 % higher, so a growing total is not timed at every page. */
                l->peak_threshold_pages = current_pages + MAX(current_pages / 100, (uint64_t) 1);
                return 0;
        }
        r = holders_json(a, usym, &holders);
        if (r < 0)
                return r;
        o = json_pack("{s:I, s:I, s:O}",
                      "timestampUsec", varlink_count(usec),
                      "realtimeUsec", varlink_count(now_usec(CLOCK_REALTIME)),
                      "holders", holders);
        if (!o)
                return -ENOMEM;
        ring_add(&l->peaks, TAKE_PTR(o));
        l->last_peak_usec = usec;
        l->growth_pages = current_pages + MAX(current_pages * OOMLOG_PEAK_GROWTH_PERCENT / 100, (uint64_t) 1);
        l->peak_threshold_pages = l->growth_pages;
        return 1;
}

static const char *const pressure_reasons[_OOM_PRESSURE_REASON_MAX] = {
        [OOM_PRESSURE_LIMIT] = "limit",
        [OOM_PRESSURE_PSI] = "pressure",
};

int oomlog_record_pressure(OomLog *l, Accounting *a, UserSymbols *usym, const OomPressure *p, json_t *explain,
                const json_t **ret_record) {
        json_auto_t *holders = NULL, *o = NULL;
        bool limit = p->reason == OOM_PRESSURE_LIMIT;
        int r;

        assert(l && a && p && p->reason >= 0 && p->reason < _OOM_PRESSURE_REASON_MAX);

        r = holders_json(a, usym, &holders);
        if (r < 0)
                return r;
        o = json_pack("{s:I, s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:O, s:O}",
                      "timestampUsec", varlink_count(p->timestamp_usec),
                      "realtimeUsec", varlink_count(now_usec(CLOCK_REALTIME)),
                      "reason", pressure_reasons[p->reason],
                      "unit", p->unit ? utf8_json_string(p->unit) : json_null(),
                      "cgroup", p->cgroup ? utf8_json_string(p->cgroup) : json_null(),
                      "limit", limit && p->limit ? json_string(p->limit) : json_null(),
                      "currentBytes", limit ? json_integer(varlink_count(p->current_bytes)) : json_null(),
                      "limitBytes", limit ? json_integer(varlink_count(p->limit_bytes)) : json_null(),
                      "marginPercent", limit ? json_integer(p->margin_percent) : json_null(),
                      "pressure", p->pressure ? utf8_json_string(p->pressure) : json_null(),
                      "holders", holders,
                      "explain", explain ?: json_null());
        if (!o)
                return -ENOMEM;
        ring_add(&l->pressure, TAKE_PTR(o));
        if (ret_record)
                *ret_record = ring_last(&l->pressure);
        return 0;
}

int oomlog_log_pressure(const json_t *record, bool journal, const char *unit, long page_size) {
        const json_t *holders = json_object_get(record, "holders");
        const json_t *tasks = json_object_get(holders, "tasks"), *units = json_object_get(holders, "units");
        const json_t *top_task = json_array_get(tasks, 0), *top_unit = json_array_get(units, 0);
        bool limit = streq(str_or(record, "reason", ""), "limit");
        _cleanup_free_ char *text = NULL, *fields = NULL, *frame = top_frame(holders);
        _cleanup_free_ char *name = text_of(record, "unit", "the system"), *what = text_of(record, "limit", "");
        _cleanup_free_ char *pressure = text_of(record, "pressure", "");
        _cleanup_free_ char *task = text_of(top_task, "comm", ""), *top_unit_name = text_of(top_unit, "name", "");
        size_t size = 0;
        char a[32], b[32];

        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        if (limit) {
                uint64_t current = (uint64_t) int_of(record, "currentBytes"), max = (uint64_t) int_of(record, "limitBytes");
                fprintf(f, "Memory pressure: %s at %s of its %s memory.%s (%u %%)", name ?: "",
                        format_bytes(a, sizeof(a), current), format_bytes(b, sizeof(b), max), what ?: "",
                        max > 0 ? (unsigned) (current / (max / 100 ?: 1)) : 0);
        } else
                fprintf(f, "Memory pressure: %s: %s", name ?: "", pressure ?: "");
        fputs("; top tasks: ", f);
        print_list(f, tasks, true, page_size);
        fputs("; top units: ", f);
        print_list(f, units, false, page_size);
        if (frame && *frame)
                fprintf(f, "; top stack at %s", frame);
        if (fclose(f) != 0 || !text)
                return -ENOMEM;
        if (!journal) {
                log_notice("%s", text);
                return 0;
        }
        fields = json_dumps(record, JSON_COMPACT);
        if (!fields)
                return -ENOMEM;
        int r = sd_journal_send("MESSAGE=%s", text,
                                "MESSAGE_ID=" OOMLOG_PRESSURE_MESSAGE_ID,
                                "PRIORITY=%i", LOG_NOTICE,
                                "SYSLOG_IDENTIFIER=memstrackd",
                                "OBJECT_SYSTEMD_UNIT=%s", unit ?: "memstrackd.service",
                                "MEMSTRACK_PRESSURE_REASON=%s", str_or(record, "reason", ""),
                                "MEMSTRACK_PRESSURE_UNIT=%s", json_is_string(json_object_get(record, "unit")) ? name : "",
                                "MEMSTRACK_PRESSURE_LIMIT=%s", what ?: "",
                                "MEMSTRACK_PRESSURE_CURRENT_BYTES=%" PRIi64, (int64_t) int_of(record, "currentBytes"),
                                "MEMSTRACK_PRESSURE_LIMIT_BYTES=%" PRIi64, (int64_t) int_of(record, "limitBytes"),
                                "MEMSTRACK_PRESSURE_PSI=%s", pressure ?: "",
                                "MEMSTRACK_PRESSURE_TOP_TASK=%s", task ?: "",
                                "MEMSTRACK_PRESSURE_TOP_TASK_PID=%d", (int) int_of(top_task, "pid"),
                                "MEMSTRACK_PRESSURE_TOP_UNIT=%s", top_unit_name ?: "",
                                "MEMSTRACK_PRESSURE_TOP_STACK=%s", frame ?: "",
                                "MEMSTRACK_PRESSURE_RECORD=%s", fields,
                                "MEMSTRACK_PAGE_SIZE=%ld", page_size,
                                NULL);
        return r < 0 ? r : 0;
}

void oomlog_set_pressure_watch(OomLog *l, json_t *watch) {
        json_decref(l->pressure_watch);
        l->pressure_watch = json_incref(watch);
}

json_t *oomlog_json(const OomLog *l) {
        return json_pack("{s:b, s:o, s:I, s:I, s:o, s:I, s:o, s:I, s:o, s:o, s:{s:i, s:i, s:i, s:I, s:i, s:i}}",
                         "watching", l->watching,
                         "reason", l->reason ? json_string(l->reason) : json_null(),
                         "lost", varlink_count(l->lost),
                         "killsSeen", varlink_count(l->kills.total),
                         "kills", ring_json(&l->kills),
                         "peakSnapshotsTaken", varlink_count(l->peaks.total),
                         "peakSnapshots", ring_json(&l->peaks),
                         "pressureRecordsTaken", varlink_count(l->pressure.total),
                         "pressureRecords", ring_json(&l->pressure),
                         "pressureWatch", l->pressure_watch ? json_incref(l->pressure_watch) : json_null(),
                         "limits", "top", OOMLOG_TOP_N, "kills", OOMLOG_KILLS_MAX, "peakSnapshots", OOMLOG_PEAKS_MAX,
                         "peakIntervalUsec", varlink_count(OOMLOG_PEAK_INTERVAL_USEC),
                         "peakGrowthPercent", OOMLOG_PEAK_GROWTH_PERCENT,
                         "pressureRecords", OOMLOG_PRESSURE_MAX);
}

static json_t *service_kills(const void *room) {
        return oomlog_json(room);
}

void oomlog_service_view(const OomLog *l, ServiceState *state) {
        state->oom_watching = l->watching;
        state->oom_reason = l->reason;
        state->oom_kills = service_kills;
        state->oom_room = l;
}
