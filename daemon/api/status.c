/* SPDX-License-Identifier: MIT */

/*
 * The Status view: the daemon's health, totals and losses, from the core's counters and what the owner
 * knows at the moment of the call (ServiceState). Status answers it; the snapshot document keeps it.
 */

#include <stdio.h>
#include <unistd.h>

#include "config.h"
#include "ksym.h"
#include "macro.h"
#include "slabquery.h"
#include "status.h"
#include "varlink.h"

static uint64_t rss_bytes(void) {
        unsigned long long size, resident;
        _cleanup_fclose_ FILE *f = fopen("/proc/self/statm", "re");

        if (!f || fscanf(f, "%llu %llu", &size, &resident) != 2)
                return 0;
        return resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* Raw addresses in stacks go to root only, and never the made-up ones of a source that names its own
 * frames (an imported page_owner log): they are no kernel's. */
bool status_addresses_shown(Accounting *a, bool peer_is_root) {
        const Ksym *k = view_ksym(a);

        return peer_is_root && !(k && ksym_addresses_synthetic(k));
}

static json_t *status_json(Accounting *a, const ServiceState *state, long page_size, bool peer_is_root) {
        AccountingStats s;
        StackTreeStats st;
        UsageStats us;

        view_accounting_stats(a, &s);
        view_stack_stats(a, &st);
        view_usage_stats(a, &us);
        const EventSourceStats *src = &state->source;
        const Ksym *k = view_ksym(a);
        bool addresses_hidden = !status_addresses_shown(a, peer_is_root) || !k || ksym_addresses_hidden(k);

        json_t *lost = json_array();
        for (size_t i = 0; lost && i < src->n_cpus; i++)
                (void) json_array_append_new(lost, json_integer(varlink_count(src->lost_per_cpu[i])));

        size_t baseline_tasks;
        uint64_t baseline = view_baseline_pages(a, &baseline_tasks);
        uint64_t truncated_pages = view_truncated_pages(a);

        return json_pack("{s:s, s:s, s:I, s:f, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:i}",
                         "backend", state->backend,
                         "version", PACKAGE_VERSION,
                         "uptimeUsec", varlink_count(state->uptime_usec),
                         "eventsPerSecond", state->events_per_second,
                         "events", varlink_count(s.events),
                         "resets", varlink_count(s.resets),
                         "lostEvents", varlink_count(MAX(s.lost_events, src->lost_records)),
                         "lostPerCpu", lost,
                         "trackedPages", varlink_count(s.current_pages),
                         "peakTrackedPages", varlink_count(s.peak_pages),
                         "baselinePages", varlink_count(baseline),
                         "baselineTasks", varlink_count(baseline_tasks),
                         "untrackedFrees", varlink_count(s.untracked_frees),
                         "untrackedFreePages", varlink_count(s.untracked_free_pages),
                         "invalidEvents", varlink_count(s.invalid_events),
                         "daemonMemoryBytes", varlink_count(rss_bytes()),
                         "stackNodes", varlink_count(st.n_nodes),
                         "stackNodeBudget", varlink_count(st.max_nodes),
                         "stacksTruncated", varlink_count(st.stacks_truncated + st.process_paths_truncated),
                         "truncatedPages", varlink_count(truncated_pages),
                         "tasksEvicted", varlink_count(us.tasks_evicted),
                         "kernelAddressesHidden", addresses_hidden,
                         "pageSize", (int) page_size);
}

/* Status's counts of the events that are not page records (aggregated samples, events of a kind the core
 * does not apply yet), and of those held at COUNT_MAX. Added to status after invalidEvents (the
 * interface's order). */
static int status_add_event_counts(Accounting *a, json_t *status) {
        AccountingStats s;

        view_accounting_stats(a, &s);
        const struct {
                const char *key;
                uint64_t value;
        } counts[] = {
                { "samples", s.samples },
                { "sampledPages", s.sampled_pages },
                { "sampleUntrackedPages", s.sample_untracked_pages },
                { "unsupportedEvents", s.unsupported_events },
                { "saturatedEvents", s.saturated_events },
        };
        for (size_t i = 0; i < ELEMENTSOF(counts); i++)
                if (json_object_set_new(status, counts[i].key,
                                        json_integer(varlink_count(counts[i].value))) < 0)
                        return -ENOMEM;
        return 0;
}

/* Status lostByReason: [{reason, count}], one per way the source can lose data. NULL on OOM. */
static json_t *lost_by_reason_json(const EventSourceStats *src) {
        json_auto_t *a = json_array();

        for (size_t i = 0; a && i < src->n_losses; i++)
                if (json_array_append_new(a, json_pack("{s:s, s:I}", "reason", src->losses[i].reason,
                                                       "count", varlink_count(src->losses[i].count))) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* Status kernelHooks: [{function, covers, attached, reason}]. NULL on OOM. */
static json_t *kernel_hooks_json(const EventSourceStats *src) {
        json_auto_t *a = json_array();

        for (size_t i = 0; a && i < src->n_hooks; i++) {
                const EventSourceHook *h = &src->hooks[i];
                if (json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:o}", "function", h->function,
                                                       "covers", h->covers, "attached", h->attached, "reason",
                                                       h->attached ? json_null() : json_string(h->reason))) < 0)
                        return NULL;
        }
        return TAKE_PTR(a);
}

/* Status systemMemory, or null when tracing has not begun or /proc/meminfo could not be read. */
static json_t *system_memory_json(const SystemMemory *m) {
        if (!m || !m->known)
                return json_null();
        return json_pack("{s:I, s:I, s:I, s:o, s:b}",
                         "totalBytes", varlink_count(m->total_bytes),
                         "freeAtStartBytes", varlink_count(m->free_bytes),
                         "availableAtStartBytes", varlink_count(m->available_bytes),
                         "systemRamBytes", m->system_ram_bytes ? json_integer(varlink_count(m->system_ram_bytes)) :
                                                                 json_null(),
                         "captureKernel", m->capture_kernel);
}

/* Status coreMemory: the core's tables, their budget and what it gave up. NULL on OOM. */
static json_t *core_memory_json(Accounting *a) {
        BudgetStats b;
        json_auto_t *steps = json_array();

        view_budget_stats(a, &b);
        for (unsigned i = 0; steps && i < BUDGET_STEPS; i++)
                if (json_array_append_new(steps, json_pack("{s:s, s:b, s:I}", "name", view_budget_step_name(i),
                                                           "inEffect", (b.in_effect >> i) & 1,
                                                           "taken", varlink_count(b.taken[i]))) < 0)
                        return NULL;
        if (!steps)
                return NULL;
        return json_pack("{s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:I, s:I}",
                         "coreBytes", varlink_count(b.core_bytes),
                         "pageTableBytes", varlink_count(b.page_table_bytes),
                         "pageTableRegions",
                         "dense", varlink_count(b.dense_regions), "denseBlocks", varlink_count(b.dense_blocks),
                         "sparse", varlink_count(b.sparse_regions), "sparseBlocks", varlink_count(b.sparse_blocks),
                         "single", varlink_count(b.single_regions),
                         "limitBytes", b.limit_bytes ? json_integer(varlink_count(b.limit_bytes)) : json_null(),
                         "steps", TAKE_PTR(steps),
                         "untrackedAllocations", varlink_count(b.untracked_allocs),
                         "untrackedAllocationPages", varlink_count(b.untracked_pages));
}

/* Status oomWatching and oomWatchReason. -ENOMEM. */
static int status_add_oom(json_t *status, const ServiceState *state) {
        const char *reason = state->oom_kills ? state->oom_reason : "not started";

        if (json_object_set_new(status, "oomWatching", json_boolean(state->oom_watching)) < 0 ||
            json_object_set_new(status, "oomWatchReason", reason ? json_string(reason) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

json_t *status_reply_json(Accounting *a, const ServiceState *state, long page_size, bool peer_is_root) {
        json_auto_t *o = status_json(a, state, page_size, peer_is_root);

        if (!o ||
            json_object_set_new(o, "backendReason", json_string(state->backend_reason ?: "")) < 0 ||
            json_object_set_new(o, "stackSampleInterval",
                                json_integer(varlink_count(state->source.stack_sample_interval))) < 0 ||
            json_object_set_new(o, "lostByReason", lost_by_reason_json(&state->source)) < 0 ||
            status_add_event_counts(a, o) < 0 ||
            status_add_oom(o, state) < 0 ||
            json_object_set_new(o, "slabReconciliation", slab_status_json(a)) < 0 ||
            json_object_set_new(o, "kernelHooks", kernel_hooks_json(&state->source)) < 0 ||
            json_object_set_new(o, "systemMemory", system_memory_json(state->memory)) < 0 ||
            json_object_set_new(o, "coreMemory", core_memory_json(a)) < 0 ||
            (state->heap_socket && json_object_set_new(o, "heapSocket", json_string(state->heap_socket)) < 0))
                return NULL;
        return TAKE_PTR(o);
}

