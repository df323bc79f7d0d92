/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "macro.h"
#include "render.h"
#include "utf8.h"

/* The name of the "everything else" series of tasks and units: bracketed like the daemon's own
 * "[unknown]" and "[removed]", so no unit or process name can be it. */
#define OTHER_NAME "[other]"

typedef enum MetricType {
        METRIC_GAUGE,
        METRIC_COUNTER,
        METRIC_INFO,
} MetricType;

/* One metric family. name is the OpenMetrics family name: a counter's samples add "_total", an info's
 * "_info"; the Prometheus text format names the family after its samples. A unit, when given, ends the
 * name (OpenMetrics requires it). */
typedef struct Family {
        const char *name;
        MetricType type;
        const char *unit;
        const char *help;
} Family;

typedef struct Label {
        const char *name;
        const char *value;      /* as memstrackd sent it: UTF-8, kernel strings encoded (utf8.h) */
} Label;

typedef struct Writer {
        FILE *f;
        MetricsFormat format;
        int error;              /* the first failure; writing goes on and is thrown away */
} Writer;

static const Family FAMILY_UP = { "memstrack_up", METRIC_GAUGE, NULL,
        "1 if memstrackd answered this scrape, else 0 (and no other metric is written)" };
static const Family FAMILY_BUILD = { "memstrack_build", METRIC_INFO, NULL, "memstrackd's version" };
static const Family FAMILY_SOURCE = { "memstrack_source", METRIC_INFO, NULL,
        "The event source memstrackd traces page allocations with" };
static const Family FAMILY_UPTIME = { "memstrack_uptime_seconds", METRIC_GAUGE, "seconds",
        "Time since memstrackd started tracing" };
static const Family FAMILY_PAGE_SIZE = { "memstrack_page_size_bytes", METRIC_GAUGE, "bytes",
        "The size of a page, the unit memstrackd counts in" };
static const Family FAMILY_EVENTS = { "memstrack_events", METRIC_COUNTER, NULL,
        "Page allocation and free events processed (restarts at 0 on Reset all)" };
static const Family FAMILY_LOST = { "memstrack_lost_events", METRIC_COUNTER, NULL,
        "Records an event source could not deliver, by reason: the byte counts are lower bounds while any grows" };
static const Family FAMILY_UNTRACKED_FREES = { "memstrack_untracked_frees", METRIC_COUNTER, NULL,
        "Frees of pages whose allocation was not seen (allocated before tracing, or lost)" };
static const Family FAMILY_INVALID = { "memstrack_invalid_events", METRIC_COUNTER, NULL,
        "Events no kernel sends (an impossible page order or frame number, a sample beyond any machine), "
        "counted and not applied" };
static const Family FAMILY_SATURATED = { "memstrack_saturated_events", METRIC_COUNTER, NULL,
        "Events that would have taken a count beyond its ceiling, held there: counts are lower bounds "
        "while this is not 0" };
static const Family FAMILY_TRACKED = { "memstrack_tracked_bytes", METRIC_GAUGE, "bytes",
        "Memory allocated in pages since tracing began and not freed" };
static const Family FAMILY_TRACKED_PEAK = { "memstrack_tracked_peak_bytes", METRIC_GAUGE, "bytes",
        "The highest memstrack_tracked_bytes since memstrackd started or peaks were reset" };
static const Family FAMILY_BASELINE = { "memstrack_baseline_bytes", METRIC_GAUGE, "bytes",
        "Resident memory that the tasks alive when tracing began held then, for those still alive" };
static const Family FAMILY_TASK = { "memstrack_task_bytes", METRIC_GAUGE, "bytes",
        "Pages a live process allocated and holds now, for the biggest ones; pid=\"[other]\" holds the rest "
        "of memstrack_tracked_bytes" };
static const Family FAMILY_UNIT = { "memstrack_unit_bytes", METRIC_GAUGE, "bytes",
        "Pages a systemd unit's processes allocated and hold now, for the biggest units; unit=\"[other]\" "
        "holds the rest of memstrack_tracked_bytes" };
static const Family FAMILY_TASK_IDLE = { "memstrack_task_idle_bytes", METRIC_GAUGE, "bytes",
        "A listed process's pages by how long they went untouched at memstrackd's last access round: state "
        "hot, warm, cold (memstrackd --warm-after, --cold-after), unknown (the access source says nothing of "
        "them) or newer (allocated since its regions were taken); absent without an access source" };
static const Family FAMILY_UNIT_IDLE = { "memstrack_unit_idle_bytes", METRIC_GAUGE, "bytes",
        "A listed unit's pages by how long they went untouched, as memstrack_task_idle_bytes" };
static const Family FAMILY_MODULE = { "memstrack_module_bytes", METRIC_GAUGE, "bytes",
        "Pages held now that were allocated through a kernel module (vmlinux: the kernel image); a page "
        "counts in every module on its call stack" };
static const Family FAMILY_MODULE_PEAK = { "memstrack_module_peak_bytes", METRIC_GAUGE, "bytes",
        "The highest memstrack_module_bytes of the module" };
static const Family FAMILY_DAEMON_MEMORY = { "memstrack_daemon_memory_bytes", METRIC_GAUGE, "bytes",
        "Resident memory of memstrackd itself" };
static const Family FAMILY_STACK_NODES = { "memstrack_stack_nodes", METRIC_GAUGE, NULL,
        "Call-stack tree nodes in use" };
static const Family FAMILY_STACK_BUDGET = { "memstrack_stack_node_budget", METRIC_GAUGE, NULL,
        "The most call-stack tree nodes memstrackd may use (--max-stack-nodes)" };
static const Family FAMILY_TRUNCATED = { "memstrack_stacks_truncated", METRIC_COUNTER, NULL,
        "Call stacks cut short because the node budget was exhausted" };
static const Family FAMILY_EVICTED = { "memstrack_evicted_tasks", METRIC_COUNTER, NULL,
        "Records of exited tasks forgotten to bound memory" };

static const Family FAMILY_UNIT_KERNEL = { "memstrack_unit_kernel_bytes", METRIC_GAUGE, "bytes",
        "What the kernel's memory controller says a listed unit's cgroup holds, per figure (memory.current, "
        "memory.stat)" };
static const Family FAMILY_UNIT_LIMIT = { "memstrack_unit_kernel_limit_bytes", METRIC_GAUGE, "bytes",
        "A listed unit's memory limits (memory.max, memory.high), where it has one" };
static const Family FAMILY_UNIT_HELD = { "memstrack_unit_held_bytes", METRIC_GAUGE, "bytes",
        "What a listed unit's live processes (holder alive) and no live process (holder orphaned) hold, in "
        "pages or slab objects" };
static const Family FAMILY_BY[_METRICS_BY_MAX] = {
        [METRICS_BY_ORDER] = { "memstrack_pages_by_order_bytes", METRIC_GAUGE, "bytes",
                               "Tracked pages by allocation order" },
        [METRICS_BY_MIGRATETYPE] = { "memstrack_pages_by_migratetype_bytes", METRIC_GAUGE, "bytes",
                                     "Tracked pages by migrate type" },
        [METRICS_BY_NODE] = { "memstrack_pages_by_node_bytes", METRIC_GAUGE, "bytes",
                              "Tracked pages by NUMA node and zone" },
        [METRICS_BY_GFP] = { "memstrack_pages_by_gfp_bytes", METRIC_GAUGE, "bytes",
                             "Tracked pages by GFP flags, the N biggest" },
};

const char *metrics_breakdown_by(MetricsBreakdown b) {
        static const char *const by[_METRICS_BY_MAX] = { "order", "migratetype", "node", "gfp" };
        return b < _METRICS_BY_MAX ? by[b] : NULL;
}

MetricsFormat metrics_format_from_accept(const char *accept) {
        /* Quality values in thousandths, -1 where a range of that kind was not named. */
        int om = -1, other = -1;

        if (!accept)
                return METRICS_FORMAT_PROMETHEUS;

        for (const char *p = accept; *p;) {
                size_t len = strcspn(p, ",");
                _cleanup_free_ char *range = strndup(p, len);
                char *save = NULL, *media, *param;
                bool version_ok = true;
                int q = 1000;

                p += len + (p[len] == ',');
                if (!range)
                        return METRICS_FORMAT_PROMETHEUS;
                media = strtok_r(range, ";", &save);
                if (!media)
                        continue;
                media += strspn(media, " \t");
                media[strcspn(media, " \t")] = 0;
                while ((param = strtok_r(NULL, ";", &save))) {
                        char *eq, *key, *value;

                        param += strspn(param, " \t");
                        eq = strchr(param, '=');
                        if (!eq)
                                continue;
                        *eq = 0;
                        key = param;
                        key[strcspn(key, " \t")] = 0;
                        value = eq + 1 + strspn(eq + 1, " \t");
                        value[strcspn(value, " \t")] = 0;
                        if (strcasecmp(key, "version") == 0)
                                version_ok = streq(value, "1.0.0");
                        else if (strcasecmp(key, "q") == 0) {
                                /* 0, 0.xyz, 1, 1.000 (RFC 9110 "qvalue"); anything else: not acceptable. */
                                if (value[0] == '1')
                                        q = 1000;
                                else if (value[0] == '0') {
                                        q = 0;
                                        if (value[1] == '.')
                                                for (int i = 2, scale = 100; i < 5 && value[i] >= '0' &&
                                                     value[i] <= '9'; i++, scale /= 10)
                                                        q += (value[i] - '0') * scale;
                                } else
                                        q = 0;
                        }
                }
                if (strcasecmp(media, "application/openmetrics-text") == 0) {
                        if (version_ok)
                                om = MAX(om, q);
                } else if (strcasecmp(media, "text/plain") == 0 || streq(media, "*/*") ||
                           strcasecmp(media, "text/*") == 0)
                        other = MAX(other, q);
        }
        return om > 0 && om >= other ? METRICS_FORMAT_OPENMETRICS : METRICS_FORMAT_PROMETHEUS;
}

const char *metrics_content_type(MetricsFormat f) {
        return f == METRICS_FORMAT_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                               : "text/plain; version=0.0.4; charset=utf-8";
}

static const char *type_name(MetricType t) {
        switch (t) {
        case METRIC_COUNTER:
                return "counter";
        case METRIC_INFO:
                return "info";
        default:
                return "gauge";
        }
}

static const char *sample_suffix(MetricType t) {
        return t == METRIC_COUNTER ? "_total" : t == METRIC_INFO ? "_info" : "";
}

static void writer_put(Writer *w, const char *s) {
        if (fputs(s, w->f) < 0 && w->error == 0)
                w->error = -ENOMEM;
}

_printf_(2, 3)
static void writer_printf(Writer *w, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vfprintf(w->f, fmt, ap) < 0 && w->error == 0)
                w->error = -ENOMEM;
        va_end(ap);
}

static void family_header(Writer *w, const Family *fam) {
        if (w->format == METRICS_FORMAT_OPENMETRICS) {
                writer_printf(w, "# TYPE %s %s\n", fam->name, type_name(fam->type));
                if (fam->unit)
                        writer_printf(w, "# UNIT %s %s\n", fam->name, fam->unit);
                writer_printf(w, "# HELP %s %s\n", fam->name, fam->help);
        } else {
                /* No info type here: an info family is a gauge of value 1 named after its samples. */
                const char *suffix = sample_suffix(fam->type);
                writer_printf(w, "# HELP %s%s %s\n", fam->name, suffix, fam->help);
                writer_printf(w, "# TYPE %s%s %s\n", fam->name, suffix,
                              fam->type == METRIC_COUNTER ? "counter" : "gauge");
        }
}

/* A label value as both formats quote it. The value is UTF-8 already (JSON), with bytes that were not
 * encoded as the text \xNN; control characters become \xNN too, as memstrackctl prints them, so a
 * name cannot break a line. Then backslash, quote and newline are escaped as the formats want. */
static void write_label_value(Writer *w, const char *value) {
        _cleanup_free_ char *text = utf8_escape(value, UTF8_ESCAPE_CONTROL);

        if (!text) {
                if (w->error == 0)
                        w->error = -ENOMEM;
                return;
        }
        writer_put(w, "\"");
        for (const char *p = text; *p; p++)
                switch (*p) {
                case '\\':
                        writer_put(w, "\\\\");
                        break;
                case '"':
                        writer_put(w, "\\\"");
                        break;
                case '\n':
                        writer_put(w, "\\n");
                        break;
                default:
                        if (fputc(*p, w->f) == EOF && w->error == 0)
                                w->error = -ENOMEM;
                }
        writer_put(w, "\"");
}

static void sample_begin(Writer *w, const Family *fam, const Label *labels, size_t n_labels) {
        writer_printf(w, "%s%s", fam->name, sample_suffix(fam->type));
        if (n_labels == 0)
                return;
        writer_put(w, "{");
        for (size_t i = 0; i < n_labels; i++) {
                writer_printf(w, "%s%s=", i > 0 ? "," : "", labels[i].name);
                write_label_value(w, labels[i].value);
        }
        writer_put(w, "}");
}

static void sample_u64(Writer *w, const Family *fam, const Label *labels, size_t n_labels, uint64_t v) {
        sample_begin(w, fam, labels, n_labels);
        writer_printf(w, " %" PRIu64 "\n", v);
}

/* A family of one sample without labels. */
static void metric_u64(Writer *w, const Family *fam, uint64_t v) {
        family_header(w, fam);
        sample_u64(w, fam, NULL, 0, v);
}

static bool get_u64(json_t *o, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(o, key);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return false;
        *ret = (uint64_t) json_integer_value(v);
        return true;
}

static uint64_t mul_sat(uint64_t a, uint64_t b) {
        uint64_t r;

        return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* A counter or gauge of pages or plain numbers from a Status field, if the reply has it. */
static void metric_field(Writer *w, const Family *fam, json_t *o, const char *key, uint64_t scale) {
        uint64_t v;

        if (get_u64(o, key, &v))
                metric_u64(w, fam, mul_sat(v, scale));
}

/* One listed task, unit or module. */
typedef struct Row {
        char pid[24];           /* tasks: the pid as text; else empty */
        const char *name;       /* borrowed from the reply */
        uint64_t bytes, peak_bytes;
} Row;

static int row_compare_key(const void *a, const void *b) {
        const Row *x = a, *y = b;
        int c = strcmp(x->pid, y->pid);

        return c != 0 ? c : strcmp(x->name, y->name);
}

static int row_compare_bytes(const void *a, const void *b) {
        const Row *x = a, *y = b;

        if (x->bytes != y->bytes)
                return x->bytes > y->bytes ? -1 : 1;
        return row_compare_key(a, b);
}

/*
 * Rows from the first max entries of the array, with their key (pid for tasks, else the name) made unique:
 * two entries with one key (which the daemon does not send, but a series must not repeat) become one row
 * holding their sum, so the bytes still add up. Entries holding nothing are left out. Sorted by key.
 */
static int rows_collect(json_t *array, size_t max, bool tasks, uint64_t page_size, Row **ret, size_t *ret_n) {
        size_t n = 0, total = MIN(json_array_size(array), max);
        _cleanup_free_ Row *rows = NULL;

        rows = calloc(total ?: 1, sizeof(Row));
        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < total; i++) {
                json_t *e = json_array_get(array, i);
                const char *name = json_string_value(json_object_get(e, tasks ? "comm" : "name"));
                uint64_t current, peak = 0, pid = 0;
                Row *row = &rows[n];

                if (!name || !get_u64(e, "currentPages", &current) || current == 0)
                        continue;
                if (tasks && !get_u64(e, "pid", &pid))
                        continue;
                (void) get_u64(e, "peakPages", &peak);
                *row = (Row) { .name = name, .bytes = mul_sat(current, page_size),
                               .peak_bytes = mul_sat(peak, page_size) };
                if (tasks)
                        (void) snprintf(row->pid, sizeof(row->pid), "%" PRIu64, pid);
                n++;
        }
        qsort(rows, n, sizeof(Row), row_compare_key);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
                bool same = m > 0 && (tasks ? streq(rows[m - 1].pid, rows[i].pid) : streq(rows[m - 1].name, rows[i].name));
                if (same) {
                        rows[m - 1].bytes += rows[i].bytes;
                        rows[m - 1].peak_bytes = MAX(rows[m - 1].peak_bytes, rows[i].peak_bytes);
                } else
                        rows[m++] = rows[i];
        }
        *ret = TAKE_PTR(rows);
        *ret_n = m;
        return 0;
}

/* The top tasks or units, biggest first, and "[other]" with what the listed ones leave of total. */
static int write_top(Writer *w, const Family *fam, json_t *array, size_t top, bool tasks, uint64_t page_size,
                uint64_t total) {
        _cleanup_free_ Row *rows = NULL;
        uint64_t sum = 0;
        size_t n;
        int r;

        r = rows_collect(array, top, tasks, page_size, &rows, &n);
        if (r < 0)
                return r;
        qsort(rows, n, sizeof(Row), row_compare_bytes);

        family_header(w, fam);
        for (size_t i = 0; i < n; i++) {
                const Label task_labels[] = { { "pid", rows[i].pid }, { "comm", rows[i].name } };
                const Label unit_labels[] = { { "unit", rows[i].name } };

                if (tasks)
                        sample_u64(w, fam, task_labels, ELEMENTSOF(task_labels), rows[i].bytes);
                else
                        sample_u64(w, fam, unit_labels, ELEMENTSOF(unit_labels), rows[i].bytes);
                sum = sum > UINT64_MAX - rows[i].bytes ? UINT64_MAX : sum + rows[i].bytes;
        }
        /* The lists and the total come from one Top reply, one moment in the daemon: the remainder is
         * exact. Should a list ever hold more than the total (it cannot), "[other]" is 0, never negative. */
        const Label task_other[] = { { "pid", OTHER_NAME }, { "comm", OTHER_NAME } };
        const Label unit_other[] = { { "unit", OTHER_NAME } };
        uint64_t other = total > sum ? total - sum : 0;
        if (tasks)
                sample_u64(w, fam, task_other, ELEMENTSOF(task_other), other);
        else
                sample_u64(w, fam, unit_other, ELEMENTSOF(unit_other), other);
        return 0;
}

/* The first top tasks or units that carry a "cold" object (Task.cold, Unit.cold), each once, by state;
 * nothing, not even the family, when none does (memstrackd measures no access). */
static void write_idle(Writer *w, const Family *fam, json_t *array, size_t top, bool tasks, uint64_t page_size) {
        static const char *const states[][2] = { { "hotPages", "hot" }, { "warmPages", "warm" },
                                                 { "coldPages", "cold" }, { "unknownPages", "unknown" },
                                                 { "newerPages", "newer" } };
        size_t n = MIN(json_array_size(array), top);
        bool header = false;

        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(array, i), *cold = json_object_get(e, "cold");
                const char *name = json_string_value(json_object_get(e, tasks ? "comm" : "name"));
                char pid[32] = "";
                uint64_t v, id = 0;
                bool dup = false;

                if (!json_is_object(cold) || !name || (tasks && !get_u64(e, "pid", &id)))
                        continue;
                /* A key twice would repeat a series: the first is kept (the daemon sends each once). */
                for (size_t j = 0; j < i && !dup; j++) {
                        json_t *o = json_array_get(array, j);
                        uint64_t other;
                        dup = json_is_object(json_object_get(o, "cold")) &&
                              (tasks ? get_u64(o, "pid", &other) && other == id :
                                       streq(json_string_value(json_object_get(o, "name")) ?: "", name));
                }
                if (dup)
                        continue;
                if (!header) {
                        family_header(w, fam);
                        header = true;
                }
                (void) snprintf(pid, sizeof(pid), "%" PRIu64, id);
                for (size_t k = 0; k < ELEMENTSOF(states); k++) {
                        if (!get_u64(cold, states[k][0], &v))
                                continue;
                        const Label task_labels[] = { { "pid", pid }, { "comm", name }, { "state", states[k][1] } };
                        const Label unit_labels[] = { { "unit", name }, { "state", states[k][1] } };
                        if (tasks)
                                sample_u64(w, fam, task_labels, ELEMENTSOF(task_labels), mul_sat(v, page_size));
                        else
                                sample_u64(w, fam, unit_labels, ELEMENTSOF(unit_labels), mul_sat(v, page_size));
                }
        }
}

static int write_modules(Writer *w, json_t *array, uint64_t page_size) {
        _cleanup_free_ Row *rows = NULL;
        size_t n;
        int r;

        r = rows_collect(array, METRICS_MODULES_MAX, false, page_size, &rows, &n);
        if (r < 0)
                return r;
        family_header(w, &FAMILY_MODULE);
        for (size_t i = 0; i < n; i++)
                sample_u64(w, &FAMILY_MODULE, &(Label) { "module", rows[i].name }, 1, rows[i].bytes);
        family_header(w, &FAMILY_MODULE_PEAK);
        for (size_t i = 0; i < n; i++)
                sample_u64(w, &FAMILY_MODULE_PEAK, &(Label) { "module", rows[i].name }, 1, rows[i].peak_bytes);
        return 0;
}

static void write_lost(Writer *w, json_t *status) {
        json_t *reasons = json_object_get(status, "lostByReason");
        size_t n = MIN(json_array_size(reasons), (size_t) METRICS_LOST_REASONS_MAX);

        family_header(w, &FAMILY_LOST);
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(reasons, i);
                const char *reason = json_string_value(json_object_get(e, "reason"));
                bool dup = false;
                uint64_t count;

                if (!reason || !get_u64(e, "count", &count))
                        continue;
                for (size_t j = 0; j < i && !dup; j++) {
                        const char *o = json_string_value(json_object_get(json_array_get(reasons, j), "reason"));
                        dup = o && streq(o, reason);
                }
                if (!dup)
                        sample_u64(w, &FAMILY_LOST, &(Label) { "reason", reason }, 1, count);
        }
}

/* Per listed unit: the kernel's figures, limits, and who holds its memory (ExplainUnits). Units come in
 * the order asked, each once (the daemon answers each name once). */
static void write_explain_units(Writer *w, json_t *reply) {
        static const char *const holders[][3] = {
                { "aliveBytes", "alive", "pages" }, { "orphanedBytes", "orphaned", "pages" },
                { "aliveSlabBytes", "alive", "slab" }, { "orphanedSlabBytes", "orphaned", "slab" },
        };
        json_t *units = json_object_get(reply, "units"), *u, *x;
        size_t i, k;
        uint64_t v;

        family_header(w, &FAMILY_UNIT_HELD);
        json_array_foreach(units, i, u) {
                const char *name = json_string_value(json_object_get(u, "name"));
                for (size_t h = 0; name && h < ELEMENTSOF(holders); h++)
                        if (get_u64(u, holders[h][0], &v)) {
                                const Label l[] = { { "unit", name }, { "holder", holders[h][1] },
                                                    { "kind", holders[h][2] } };
                                sample_u64(w, &FAMILY_UNIT_HELD, l, ELEMENTSOF(l), v);
                        }
        }
        family_header(w, &FAMILY_UNIT_KERNEL);
        json_array_foreach(units, i, u) {
                const char *name = json_string_value(json_object_get(u, "name"));
                json_t *kernel = json_object_get(u, "kernel");
                if (!name || !json_is_object(kernel))
                        continue;
                if (get_u64(kernel, "currentBytes", &v))
                        sample_u64(w, &FAMILY_UNIT_KERNEL, (const Label[]) { { "unit", name }, { "figure", "current" } },
                                   2, v);
                json_array_foreach(json_object_get(kernel, "stat"), k, x) {
                        const char *figure = json_string_value(json_object_get(x, "name"));
                        if (figure && get_u64(x, "bytes", &v))
                                sample_u64(w, &FAMILY_UNIT_KERNEL, (const Label[]) { { "unit", name }, { "figure", figure } },
                                           2, v);
                }
        }
        family_header(w, &FAMILY_UNIT_LIMIT);
        json_array_foreach(units, i, u) {
                const char *name = json_string_value(json_object_get(u, "name"));
                json_t *kernel = json_object_get(u, "kernel");
                if (!name || !json_is_object(kernel))
                        continue;
                if (get_u64(kernel, "maxBytes", &v))
                        sample_u64(w, &FAMILY_UNIT_LIMIT, (const Label[]) { { "unit", name }, { "limit", "max" } }, 2, v);
                if (get_u64(kernel, "highBytes", &v))
                        sample_u64(w, &FAMILY_UNIT_LIMIT, (const Label[]) { { "unit", name }, { "limit", "high" } }, 2, v);
        }
}

/* A PageBreakdown reply as one family: a label per row ("order", "migratetype", "gfp", or "node" and
 * "zone"), each key once; the rows the daemon left out (gfp: beyond N) as "[other]". */
static void write_breakdown(Writer *w, MetricsBreakdown b, json_t *reply, uint64_t page_size) {
        const Family *fam = &FAMILY_BY[b];
        json_t *rows = json_object_get(reply, "rows"), *row;
        size_t i;
        uint64_t pages;

        family_header(w, fam);
        json_array_foreach(rows, i, row) {
                const char *key = json_string_value(json_object_get(row, "key"));
                bool dup = false;
                if (!key || !get_u64(row, "pages", &pages))
                        continue;
                for (size_t j = 0; j < i && !dup; j++) {
                        const char *o = json_string_value(json_object_get(json_array_get(rows, j), "key"));
                        dup = o && streq(o, key);
                }
                if (dup)
                        continue;
                if (b == METRICS_BY_NODE) {
                        char node[24] = "[unknown]";
                        uint64_t n;
                        const char *zone = json_string_value(json_object_get(row, "zone"));
                        if (get_u64(row, "node", &n))
                                (void) snprintf(node, sizeof(node), "%" PRIu64, n);
                        const Label l[] = { { "node", node }, { "zone", zone ?: "" } };
                        sample_u64(w, fam, l, ELEMENTSOF(l), mul_sat(pages, page_size));
                } else
                        sample_u64(w, fam, &(Label) { metrics_breakdown_by(b), key }, 1, mul_sat(pages, page_size));
        }
        if (get_u64(reply, "otherPages", &pages) && pages > 0)
                sample_u64(w, fam, &(Label) { metrics_breakdown_by(b), OTHER_NAME }, 1, mul_sat(pages, page_size));
}

static void write_info(Writer *w, const Family *fam, const char *label, const char *value) {
        if (!value)
                return;
        family_header(w, fam);
        sample_u64(w, fam, &(Label) { label, value }, 1, 1);
}

static int render(Writer *w, const MetricsInput *in, size_t top) {
        json_t *s = in->status;
        uint64_t page_size, v, tracked;
        int r;

        family_header(w, &FAMILY_UP);
        sample_u64(w, &FAMILY_UP, NULL, 0, s && get_u64(s, "pageSize", &page_size) && page_size > 0);
        if (!s || !get_u64(s, "pageSize", &page_size) || page_size == 0)
                return 0;

        write_info(w, &FAMILY_BUILD, "version", json_string_value(json_object_get(s, "version")));
        write_info(w, &FAMILY_SOURCE, "backend", json_string_value(json_object_get(s, "backend")));
        if (get_u64(s, "uptimeUsec", &v)) {
                family_header(w, &FAMILY_UPTIME);
                sample_begin(w, &FAMILY_UPTIME, NULL, 0);
                writer_printf(w, " %" PRIu64 ".%06" PRIu64 "\n", v / 1000000, v % 1000000);
        }
        metric_u64(w, &FAMILY_PAGE_SIZE, page_size);
        metric_field(w, &FAMILY_EVENTS, s, "events", 1);
        write_lost(w, s);
        metric_field(w, &FAMILY_UNTRACKED_FREES, s, "untrackedFrees", 1);
        metric_field(w, &FAMILY_INVALID, s, "invalidEvents", 1);
        metric_field(w, &FAMILY_SATURATED, s, "saturatedEvents", 1);

        /* Totals from the Top reply where there is one: its lists add up to them. */
        json_t *totals = in->top && get_u64(in->top, "trackedPages", &v) ? in->top : s;
        metric_field(w, &FAMILY_TRACKED, totals, "trackedPages", page_size);
        metric_field(w, &FAMILY_TRACKED_PEAK, totals, "peakTrackedPages", page_size);
        metric_field(w, &FAMILY_BASELINE, s, "baselinePages", page_size);

        if (in->top && get_u64(in->top, "trackedPages", &tracked)) {
                tracked = mul_sat(tracked, page_size);
                r = write_top(w, &FAMILY_TASK, json_object_get(in->top, "tasks"), top, true, page_size, tracked);
                if (r < 0)
                        return r;
                r = write_top(w, &FAMILY_UNIT, json_object_get(in->top, "units"), top, false, page_size, tracked);
                if (r < 0)
                        return r;
                write_idle(w, &FAMILY_TASK_IDLE, json_object_get(in->top, "tasks"), top, true, page_size);
                write_idle(w, &FAMILY_UNIT_IDLE, json_object_get(in->top, "units"), top, false, page_size);
        }
        if (in->modules) {
                r = write_modules(w, json_object_get(in->modules, "modules"), page_size);
                if (r < 0)
                        return r;
        }
        if (in->explain_units)
                write_explain_units(w, in->explain_units);
        for (MetricsBreakdown b = 0; b < _METRICS_BY_MAX; b++)
                if (in->breakdown[b])
                        write_breakdown(w, b, in->breakdown[b], page_size);

        metric_field(w, &FAMILY_DAEMON_MEMORY, s, "daemonMemoryBytes", 1);
        metric_field(w, &FAMILY_STACK_NODES, s, "stackNodes", 1);
        metric_field(w, &FAMILY_STACK_BUDGET, s, "stackNodeBudget", 1);
        metric_field(w, &FAMILY_TRUNCATED, s, "stacksTruncated", 1);
        metric_field(w, &FAMILY_EVICTED, s, "tasksEvicted", 1);
        return 0;
}

int metrics_render(const MetricsInput *in, MetricsFormat f, size_t top, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        Writer w = { .format = f };
        int r;

        assert(in);
        assert(ret);
        assert(ret_size);

        if (top < 1 || top > METRICS_TOP_MAX || f < 0 || f >= _METRICS_FORMAT_MAX)
                return -EINVAL;
        w.f = open_memstream(&buf, &size);
        if (!w.f)
                return -ENOMEM;
        r = render(&w, in, top);
        if (f == METRICS_FORMAT_OPENMETRICS)
                writer_put(&w, "# EOF\n");
        if (fclose(w.f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        if (w.error < 0)
                return w.error;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}
