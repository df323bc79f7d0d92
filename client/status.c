/* SPDX-License-Identifier: MIT */

/* memstrackctl status and reset. */

#include <inttypes.h>
#include <stdio.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"

/* Status slabReconciliation (memstrackd --slab): how the slab counts stand against the kernel's. */
static void print_slab_reconciliation(json_t *r) {
        if (!json_is_object(r))
                return;
        printf("     Slab frees: %" PRIu64 " lost (%.1f an hour), %.4f%% of the allocations whose frees are visible;"
               " not visible on this kernel: %" PRIu64 " caches, %" PRIu64 " call sites (memstrackctl slab)\n",
               reply_count(r, "lostFrees"), reply_double(r, "lostFreesPerHour", 0),
               reply_double(r, "visibleLostFreesPercent", 0), reply_count(r, "invisibleFreeCaches"),
               reply_count(r, "invisibleFreeCallSites"));
        if (!reply_bool(r, "reconciling", false)) {
                _cleanup_free_ char *why = format_sanitize(reply_string(r, "error") ?: "not read yet");
                printf("  Slab vs kernel: /proc/slabinfo not read: %s\n", why ?: "?");
                return;
        }
        printf("  Slab vs kernel: %" PRIu64 " caches held against /proc/slabinfo every %" PRIu64 " s, %" PRIu64
               " above the kernel's count; %" PRIu64 " objects dropped above it (%" PRIu64 " of destroyed "
               "caches)\n", reply_count(r, "caches"), reply_count(r, "intervalUsec") / 1000000,
               reply_count(r, "driftingCaches"), reply_count(r, "trimmedObjects"),
               reply_count(r, "destroyedObjects"));
}

/* Status kernelHooks: one line each, what the hook covers and whether it runs here. */
static void print_kernel_hooks(json_t *hooks) {
        size_t i;
        json_t *h;

        json_array_foreach(hooks, i, h) {
                _cleanup_free_ char *function = format_sanitize(reply_string(h, "function") ?: "?"),
                                    *covers = format_sanitize(reply_string(h, "covers") ?: "?"),
                                    *why = format_sanitize(reply_string(h, "reason") ?: "?");
                if (reply_bool(h, "attached", false))
                        printf("%s %s: hooked (%s)\n", i == 0 ? "   Kernel hooks:" : "               ",
                               function ?: "?", covers ?: "?");
                else
                        printf("%s %s: not hooked, %s (%s stay unseen)\n", i == 0 ? "   Kernel hooks:" :
                               "               ", function ?: "?", why ?: "?", covers ?: "?");
        }
}

static void print_status(json_t *s) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX], sampling[FORMAT_STACK_SAMPLING_MAX];
        uint64_t page_size = reply_count(s, "pageSize");
        json_t *lost_per_cpu = reply_array(s, "lostPerCpu");
        uint64_t lost = reply_count(s, "lostEvents");

        printf("        Backend: %s (memstrackd %s)\n", reply_string(s, "backend") ?: "?",
               reply_string(s, "version") ?: "?");
        /* Older daemons do not say: nothing printed. */
        if (reply_string(s, "backendReason") && *reply_string(s, "backendReason"))
                printf("  Backend chosen: %s\n", reply_string(s, "backendReason"));
        printf("         Uptime: %s\n", format_duration(a, sizeof(a), reply_count(s, "uptimeUsec")));
        printf("  Tracked pages: %s (%" PRIu64 " pages of %s), peak %s (%" PRIu64 " pages)\n",
               format_pages(a, sizeof(a), reply_count(s, "trackedPages"), page_size),
               reply_count(s, "trackedPages"), format_bytes(c, sizeof(c), page_size),
               format_pages(b, sizeof(b), reply_count(s, "peakTrackedPages"), page_size),
               reply_count(s, "peakTrackedPages"));
        printf(" Before tracing: %s (%" PRIu64 " pages) resident in %" PRIu64 " tasks alive since before "
               "memstrackd started, not counted above\n",
               format_pages(a, sizeof(a), reply_count(s, "baselinePages"), page_size),
               reply_count(s, "baselinePages"), reply_count(s, "baselineTasks"));
        printf("         Events: %" PRIu64 " (%.1f/s)\n", reply_count(s, "events"),
               reply_double(s, "eventsPerSecond", 0));
        printf("    Lost events: %" PRIu64 "%s", lost, lost > 0 ? " (counts are lower bounds" : "");
        if (lost > 0) {
                size_t i;
                json_t *v;
                /* A source without CPUs (an imported log) has no per-CPU counts. */
                if (json_array_size(lost_per_cpu) > 0)
                        printf("; per CPU:");
                json_array_foreach(lost_per_cpu, i, v)
                        printf(" %" JSON_INTEGER_FORMAT, json_integer_value(v));
                printf(")");
        }
        /* Every reason the source watches, so a 0 says it is watched: "ringFull 0, recursionMiss 0". */
        json_t *reasons = reply_array(s, "lostByReason");
        if (json_array_size(reasons) > 0) {
                size_t i;
                json_t *v;
                printf(" by reason:");
                json_array_foreach(reasons, i, v)
                        printf("%s %s %" PRIu64, i > 0 ? "," : "", reply_string(v, "reason") ?: "?",
                               reply_count(v, "count"));
        }
        printf("\n");
        printf("Untracked frees: %" PRIu64 " (%" PRIu64 " pages allocated before tracing or lost)\n",
               reply_count(s, "untrackedFrees"), reply_count(s, "untrackedFreePages"));
        /* Only when it happened: a corrupt record from the kernel is rare and worth seeing. */
        if (reply_count(s, "invalidEvents") > 0)
                printf(" Invalid events: %" PRIu64 " (impossible page orders, frame numbers or sample sizes, "
                       "not applied)\n",
                       reply_count(s, "invalidEvents"));
        /* Only from sources that aggregate in the kernel. */
        if (reply_count(s, "samples") > 0 || reply_count(s, "sampleUntrackedPages") > 0)
                printf("        Samples: %" PRIu64 " (%s held through them now; %" PRIu64 " pages taken off "
                       "that no sample had charged)\n", reply_count(s, "samples"),
                       format_pages(a, sizeof(a), reply_count(s, "sampledPages"), page_size),
                       reply_count(s, "sampleUntrackedPages"));
        if (reply_count(s, "saturatedEvents") > 0)
                printf("      Saturated: %" PRIu64 " events would have taken a count beyond its ceiling, held "
                       "there (counts are lower bounds)\n", reply_count(s, "saturatedEvents"));
        if (reply_count(s, "unsupportedEvents") > 0)
                printf("    Unsupported: %" PRIu64 " events of a kind not applied yet (slab objects)\n",
                       reply_count(s, "unsupportedEvents"));
        print_slab_reconciliation(json_object_get(s, "slabReconciliation"));
        print_kernel_hooks(reply_array(s, "kernelHooks"));
        if (json_object_get(s, "stackSampleInterval"))
                printf("   Stacks taken: %s\n", format_stack_sampling(sampling, sizeof(sampling),
                                                                    reply_count(s, "stackSampleInterval")));
        printf("    Stack nodes: %" PRIu64 " of %" PRIu64 ", %" PRIu64 " stacks truncated",
               reply_count(s, "stackNodes"), reply_count(s, "stackNodeBudget"), reply_count(s, "stacksTruncated"));
        if (reply_count(s, "stacksTruncated") > 0)
                printf(" (budget full: %s in \"[truncated]\"; raise --max-stack-nodes)",
                       format_pages(a, sizeof(a), reply_count(s, "truncatedPages"), page_size));
        printf("\n");
        printf("  Tasks evicted: %" PRIu64 "\n", reply_count(s, "tasksEvicted"));
        printf("  Daemon memory: %s\n", format_bytes(a, sizeof(a), reply_count(s, "daemonMemoryBytes")));
        printf("Kernel addresses: %s\n", reply_bool(s, "kernelAddressesHidden", true) ? "hidden" : "shown");
        /* Older daemons do not say: nothing printed. */
        if (json_object_get(s, "oomWatching")) {
                _cleanup_free_ char *why = format_sanitize(reply_string(s, "oomWatchReason") ?: "unknown reason");
                if (reply_bool(s, "oomWatching", false))
                        printf("      OOM kills: watched (memstrackctl oom)\n");
                else
                        printf("      OOM kills: not watched: %s\n", why ?: "?");
        }
}

int verb_status(int argc, char *argv[]) {
        json_auto_t *reply = NULL;
        int r;

        r = ctl_call_once("io.memstrack.Status", NULL, &reply);
        if (r != 0)
                return r;
        if (arg_json != CTL_JSON_OFF)
                return ctl_print_json(reply);
        print_status(reply);
        return 0;
}

int verb_reset(int argc, char *argv[]) {
        const char *what = argc > 1 ? argv[1] : "peaks";
        json_auto_t *params = NULL, *reply = NULL;
        int r;

        if (!streq(what, "peaks") && !streq(what, "all")) {
                fprintf(stderr, "memstrackctl: reset takes peaks or all, not '%s'.\n", what);
                return CTL_EXIT_USAGE;
        }
        params = json_pack("{s:s}", "what", what);
        if (!params)
                return -ENOMEM;
        r = ctl_call_once("io.memstrack.Reset", params, &reply);
        if (r != 0)
                return r;
        if (arg_json != CTL_JSON_OFF)
                return ctl_print_json(reply);
        printf(streq(what, "peaks") ? "Peaks reset to the current values.\n" :
                                      "All counters reset; current values are the new baselines.\n");
        return 0;
}
