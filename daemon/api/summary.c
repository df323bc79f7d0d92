/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syslog.h>

#include <systemd/sd-journal.h>

#include "format-util.h"
#include "macro.h"
#include "summary.h"
#include "utf8.h"

typedef struct Top {
        uint32_t idx[SUMMARY_TOP_N];
        uint64_t key[SUMMARY_TOP_N];
        size_t n;
} Top;

/* Keeps the SUMMARY_TOP_N largest keys seen, largest first. */
static void top_offer(Top *top, uint32_t idx, uint64_t key) {
        size_t pos = top->n;
        while (pos > 0 && top->key[pos - 1] < key)
                pos--;
        if (pos >= SUMMARY_TOP_N)
                return;
        size_t end = MIN(top->n, (size_t) SUMMARY_TOP_N - 1);
        memmove(&top->idx[pos + 1], &top->idx[pos], (end - pos) * sizeof(uint32_t));
        memmove(&top->key[pos + 1], &top->key[pos], (end - pos) * sizeof(uint64_t));
        top->idx[pos] = idx;
        top->key[pos] = key;
        top->n = MIN(top->n + 1, (size_t) SUMMARY_TOP_N);
}

/* The units with pages at some point, and how many they are. */
static size_t find_top_units(Accounting *a, Top *units) {
        size_t n = 0;
        ViewUnit x;

        *units = (Top) {};
        for (uint32_t i = 1; i < view_unit_count(a); i++)
                if (view_unit(a, i, &x) && x.pages.peak > 0) {
                        top_offer(units, i, x.pages.peak);
                        n++;
                }
        return n;
}

static void find_tops(Accounting *a, Top *tasks, Top *modules) {
        ViewModule m;
        ViewTask t;

        *tasks = (Top) {};
        *modules = (Top) {};
        /* The "[evicted]" record is no task: summary_text() reports it apart. */
        for (uint32_t i = VIEW_TASK_EVICTED + 1; i < view_task_slots(a); i++)
                if (view_task(a, i, &t) && !t.is_thread && t.pages.peak > 0)
                        top_offer(tasks, i, t.pages.peak);
        for (uint16_t id = 1; id <= view_module_count(a); id++)
                if (view_module(a, id, &m) && m.pages.peak > 0)
                        top_offer(modules, id, m.pages.peak);
}

/* What one summary says, gathered once for both its text and its journal fields. */
typedef struct Summary {
        AccountingStats stats;
        Top tasks, modules, units;
        size_t n_units;
} Summary;

static void summary_gather(const SummaryInput *in, Summary *ret) {
        view_accounting_stats(in->accounting, &ret->stats);
        find_tops(in->accounting, &ret->tasks, &ret->modules);
        ret->n_units = find_top_units(in->accounting, &ret->units);
}

/* A unit's name as shown: a pending unit has none yet. */
static const char *unit_name(const ViewUnit *x) {
        return x->name ?: VIEW_UNKNOWN_UNIT;
}

static char *summary_text(const SummaryInput *in, const Summary *sum) {
        Accounting *acc = in->accounting;
        const AccountingStats s = sum->stats;
        const Top tasks = sum->tasks, modules = sum->modules;
        char *text = NULL, a[32], b[32];
        size_t size = 0;
        bool oom = false;

        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;

        format_pages(a, sizeof(a), s.current_pages, (uint64_t) in->page_size);
        format_pages(b, sizeof(b), s.peak_pages, (uint64_t) in->page_size);
        fprintf(f, "memstrack summary (%s) after %.1f s: tracking %s (%" PRIu64 " pages), peak %s (%" PRIu64
                   " pages); %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64 " untracked frees.",
                in->reason, in->uptime_usec / 1e6, a, s.current_pages, b, s.peak_pages, s.events,
                s.lost_events, s.untracked_frees);
        /* Not for a source without CPUs (an imported log): its losses are in "Lost by reason". */
        if (in->source && in->source->lost_records > 0 && in->source->n_cpus > 0) {
                fprintf(f, "\nLost per CPU:");
                for (size_t i = 0; i < in->source->n_cpus; i++)
                        if (in->source->lost_per_cpu[i] > 0)
                                fprintf(f, " cpu%zu=%" PRIu64, i, in->source->lost_per_cpu[i]);
        }
        if (in->source) {
                uint64_t any = 0;

                for (size_t i = 0; i < in->source->n_losses; i++)
                        any = count_add(any, in->source->losses[i].count);
                if (any > 0) {
                        fprintf(f, "\nLost by reason:");
                        for (size_t i = 0; i < in->source->n_losses; i++)
                                fprintf(f, " %s=%" PRIu64, in->source->losses[i].reason,
                                        in->source->losses[i].count);
                }
        }
        /* Only corrupt input gets there, and the counts above are then lower bounds. */
        if (s.saturated_events > 0)
                fprintf(f, "\nSaturated: %" PRIu64 " events would have taken a count beyond its ceiling, held "
                        "there; the counts are lower bounds.", s.saturated_events);
        /* Names are the kernel's bytes: escaped (utf8.h), control characters too, so that journalctl shows
         * the text instead of "[blob data]" and a name cannot start a line of its own on stderr. */
        fprintf(f, "\nTop tasks by peak:");
        for (size_t i = 0; i < tasks.n && !oom; i++) {
                ViewTask t;
                if (!view_task(acc, tasks.idx[i], &t))
                        continue;
                _cleanup_free_ char *comm = utf8_escape(t.comm, UTF8_ESCAPE_CONTROL);
                oom = !comm;
                format_pages(a, sizeof(a), t.pages.peak, (uint64_t) in->page_size);
                fprintf(f, "\n  %7d %-16s peak %s (%" PRIu64 " pages), now %" PRIu64 " pages%s", (int) t.pid,
                        comm ?: "", a, t.pages.peak, t.pages.current, t.exited ? ", exited" : "");
        }
        ViewTask evicted;
        if (view_task(acc, VIEW_TASK_EVICTED, &evicted) && evicted.pages.current > 0) {
                UsageStats us;
                view_usage_stats(acc, &us);
                format_pages(a, sizeof(a), evicted.pages.current, (uint64_t) in->page_size);
                fprintf(f, "\n  %s (%" PRIu64 " pages) still held by %" PRIu64 " evicted exited tasks", a,
                        evicted.pages.current, us.tasks_evicted);
        }
        fprintf(f, "\nTop modules by peak:");
        for (size_t i = 0; i < modules.n && !oom; i++) {
                ViewModule m;
                if (!view_module(acc, (uint16_t) modules.idx[i], &m))
                        continue;
                _cleanup_free_ char *name = utf8_escape(m.name, UTF8_ESCAPE_CONTROL);
                oom = !name;
                format_pages(a, sizeof(a), m.pages.peak, (uint64_t) in->page_size);
                fprintf(f, "\n  %-24s peak %s (%" PRIu64 " pages), now %" PRIu64 " pages", name ?: "", a,
                        m.pages.peak, m.pages.current);
        }
        fprintf(f, "\nTop units by peak:");
        for (size_t i = 0; i < sum->units.n && !oom; i++) {
                ViewUnit x;
                if (!view_unit(acc, sum->units.idx[i], &x))
                        continue;
                _cleanup_free_ char *name = utf8_escape(unit_name(&x), UTF8_ESCAPE_CONTROL);
                oom = !name;
                format_pages(a, sizeof(a), x.pages.peak, (uint64_t) in->page_size);
                fprintf(f, "\n  %-24s peak %s (%" PRIu64 " pages), now %" PRIu64 " pages%s", name ?: "", a,
                        x.pages.peak, x.pages.current, x.live ? "" : ", removed");
        }
        if (fclose(f) != 0 || oom) {
                free(text);
                return NULL;
        }
        return text;
}

char *summary_format(const SummaryInput *in) {
        Summary sum;

        summary_gather(in, &sum);
        return summary_text(in, &sum);
}

int summary_log(const SummaryInput *in, bool journal) {
        Summary sum;

        summary_gather(in, &sum);
        _cleanup_free_ char *text = summary_text(in, &sum);
        if (!text)
                return -ENOMEM;
        if (!journal) {
                fprintf(stderr, "%s\n", text);
                return 0;
        }

        const AccountingStats s = sum.stats;
        const Top tasks = sum.tasks, modules = sum.modules;
        ViewTask task;
        ViewModule module;
        ViewUnit unit;
        const ViewTask *top_task = tasks.n > 0 && view_task(in->accounting, tasks.idx[0], &task) ? &task : NULL;
        const ViewModule *top_module = modules.n > 0 && view_module(in->accounting, (uint16_t) modules.idx[0], &module) ?
                &module : NULL;
        const ViewUnit *top_unit = sum.units.n > 0 && view_unit(in->accounting, sum.units.idx[0], &unit) ? &unit : NULL;
        /* Fields a reader matches on: the same encoding as in the replies and the text. */
        _cleanup_free_ char *top_comm = utf8_escape(top_task ? top_task->comm : "", UTF8_ESCAPE_CONTROL);
        _cleanup_free_ char *top_name = utf8_escape(top_module ? top_module->name : "", UTF8_ESCAPE_CONTROL);
        _cleanup_free_ char *top_unit_name = utf8_escape(top_unit ? unit_name(top_unit) : "", UTF8_ESCAPE_CONTROL);
        if (!top_comm || !top_name || !top_unit_name)
                return -ENOMEM;
        /* "ringFull=0 recursionMiss=0 stackFailed=0": every reason the source watches, losses or not. */
        _cleanup_free_ char *lost_by_reason = NULL;
        size_t lost_by_reason_size = 0;
        FILE *lf = open_memstream(&lost_by_reason, &lost_by_reason_size);
        if (!lf)
                return -ENOMEM;
        for (size_t i = 0; in->source && i < in->source->n_losses; i++)
                fprintf(lf, "%s%s=%" PRIu64, i > 0 ? " " : "", in->source->losses[i].reason,
                        in->source->losses[i].count);
        if (fclose(lf) != 0 || !lost_by_reason)
                return -ENOMEM;

        /* OBJECT_SYSTEMD_UNIT makes "journalctl -u" find the entry even when journald cannot map a
         * datagram sent just before exit to our cgroup any more (it honours it from root senders). */
        int r = sd_journal_send("MESSAGE=%s", text,
                                "MESSAGE_ID=" SUMMARY_MESSAGE_ID,
                                "PRIORITY=%i", LOG_INFO,
                                "SYSLOG_IDENTIFIER=memstrackd",
                                "OBJECT_SYSTEMD_UNIT=%s", in->unit ?: "memstrackd.service",
                                "MEMSTRACK_REASON=%s", in->reason,
                                "MEMSTRACK_UPTIME_USEC=%" PRIu64, in->uptime_usec,
                                "MEMSTRACK_CURRENT_PAGES=%" PRIu64, s.current_pages,
                                "MEMSTRACK_PEAK_PAGES=%" PRIu64, s.peak_pages,
                                "MEMSTRACK_EVENTS=%" PRIu64, s.events,
                                "MEMSTRACK_LOST=%" PRIu64, s.lost_events,
                                "MEMSTRACK_LOST_BY_REASON=%s", lost_by_reason,
                                "MEMSTRACK_UNTRACKED_FREES=%" PRIu64, s.untracked_frees,
                                "MEMSTRACK_TOP_TASK=%s", top_comm,
                                "MEMSTRACK_TOP_TASK_PID=%d", top_task ? (int) top_task->pid : 0,
                                "MEMSTRACK_TOP_TASK_PEAK_PAGES=%" PRIu64, top_task ? top_task->pages.peak : 0,
                                "MEMSTRACK_TOP_MODULE=%s", top_name,
                                "MEMSTRACK_TOP_MODULE_PEAK_PAGES=%" PRIu64,
                                top_module ? top_module->pages.peak : 0,
                                "MEMSTRACK_TOP_UNIT=%s", top_unit_name,
                                "MEMSTRACK_TOP_UNIT_PEAK_PAGES=%" PRIu64, top_unit ? top_unit->pages.peak : 0,
                                "MEMSTRACK_TOP_UNIT_CURRENT_PAGES=%" PRIu64, top_unit ? top_unit->pages.current : 0,
                                "MEMSTRACK_UNITS=%zu", sum.n_units,
                                "MEMSTRACK_PAGE_SIZE=%ld", in->page_size,
                                NULL);
        return r < 0 ? r : 0;
}
