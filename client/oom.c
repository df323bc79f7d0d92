/* SPDX-License-Identifier: MIT */

/* memstrackctl oom: the OomKills reply, each kill and peak snapshot with who held the memory then. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "reply.h"
#include "tasks.h"

static void print_time(const char *what, json_t *record) {
        time_t t = (time_t) (reply_count(record, "realtimeUsec") / 1000000);
        struct tm tm;
        char when[64] = "?";

        if (localtime_r(&t, &tm))
                (void) strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
        printf("%s at %s", what, when);
}

static int print_holders(json_t *h, uint64_t page_size) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        size_t width = format_terminal_columns(), i, k;
        json_t *s, *frame;
        int r;

        printf("  Tracked then: %s (%" PRIu64 " pages), peak %s\n",
               format_pages(a, sizeof(a), reply_count(h, "trackedPages"), page_size), reply_count(h, "trackedPages"),
               format_pages(b, sizeof(b), reply_count(h, "peakTrackedPages"), page_size));
        printf("\nTop tasks:\n");
        r = tasks_print_table(reply_array(h, "tasks"), page_size, stdout, width);
        if (r < 0)
                return r;
        printf("\nTop units:\n");
        r = units_print_table(reply_array(h, "units"), page_size, false, stdout, width);
        if (r < 0)
                return r;
        printf("\nTop modules:\n");
        r = modules_print_table(reply_array(h, "modules"), page_size, stdout, width);
        if (r < 0)
                return r;
        printf("\nTop stacks:\n");
        json_array_foreach(reply_array(h, "stacks"), i, s) {
                uint64_t pages = reply_count(s, "currentPages");
                printf("  %s (%" PRIu64 " pages)\n", format_pages(a, sizeof(a), pages, page_size), pages);
                json_array_foreach(reply_array(s, "frames"), k, frame) {
                        /* Frames are the kernel's and the ELF files' bytes (format.h). */
                        _cleanup_free_ char *text = format_sanitize(json_string_value(frame) ?: "?");
                        printf("      %s\n", text ?: "?");
                }
        }
        if (json_array_size(reply_array(h, "stacks")) == 0)
                printf("  (none)\n");
        return 0;
}

static int print_kill(json_t *k, uint64_t page_size) {
        char a[FORMAT_BUFFER_MAX];
        json_t *victim = json_object_get(k, "victim");
        _cleanup_free_ char *comm = format_sanitize(reply_string(k, "comm") ?: "?");
        _cleanup_free_ char *unit = format_sanitize(reply_string(k, "unit") ?: "unknown unit");

        print_time("OOM kill", k);
        printf(": pid %" PRIu64 " (%s) in %s\n", reply_count(k, "pid"), comm ?: "?", unit ?: "?");
        if (json_is_object(victim))
                printf("  Victim held: %s (%" PRIu64 " pages) tracked by memstrack, peak %" PRIu64 " pages\n",
                       format_pages(a, sizeof(a), reply_count(victim, "currentPages"), page_size),
                       reply_count(victim, "currentPages"), reply_count(victim, "peakPages"));
        if (json_is_integer(json_object_get(k, "anonRssBytes")))
                printf("  Kernel says: anon-rss %s", format_bytes(a, sizeof(a), reply_count(k, "anonRssBytes")));
        if (json_is_integer(json_object_get(k, "fileRssBytes")))
                printf(", file-rss %s", format_bytes(a, sizeof(a), reply_count(k, "fileRssBytes")));
        if (json_is_integer(json_object_get(k, "totalVmBytes")))
                printf(", total-vm %s", format_bytes(a, sizeof(a), reply_count(k, "totalVmBytes")));
        if (json_is_integer(json_object_get(k, "oomScoreAdj")))
                printf(", oom_score_adj %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(k, "oomScoreAdj")));
        if (json_is_integer(json_object_get(k, "anonRssBytes")))
                printf("\n");
        return print_holders(json_object_get(k, "holders"), page_size);
}

static int print_pressure(json_t *p, uint64_t page_size) {
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *unit = format_sanitize(reply_string(p, "unit") ?: "the system");
        const json_t *explain = json_object_get(p, "explain");

        print_time("Pressure", p);
        if (streq(reply_string(p, "reason") ?: "", "limit")) {
                uint64_t current = reply_count(p, "currentBytes"), limit = reply_count(p, "limitBytes");
                _cleanup_free_ char *which = format_sanitize(reply_string(p, "limit") ?: "?");
                printf(": %s at %s of its memory.%s %s (%" PRIu64 " %%, within %" PRIu64 " %%)\n", unit ?: "?",
                       format_bytes(a, sizeof(a), current), which ?: "?", format_bytes(b, sizeof(b), limit),
                       limit / 100 > 0 ? current / (limit / 100) : 0, reply_count(p, "marginPercent"));
        } else {
                _cleanup_free_ char *line = format_sanitize(reply_string(p, "pressure") ?: "?");
                printf(": %s, memory pressure %s\n", unit ?: "?", line ?: "?");
        }
        if (json_is_object(explain)) {
                const json_t *alive = json_object_get(explain, "alive"), *orphaned = json_object_get(explain, "orphaned");
                printf("  The unit then: %s held by live processes, %s by no live process",
                       format_pages(a, sizeof(a), reply_count(alive, "pages"), page_size),
                       format_pages(b, sizeof(b), reply_count(orphaned, "pages"), page_size));
                if (json_is_true(json_object_get(explain, "tracingSlab")))
                        printf(" (slab objects: %s and %s)", format_bytes(a, sizeof(a), reply_count(alive, "slabBytes")),
                               format_bytes(b, sizeof(b), reply_count(orphaned, "slabBytes")));
                printf("; --json has its whole Explain view\n");
        }
        return print_holders(json_object_get(p, "holders"), page_size);
}

int verb_oom(int argc, char *argv[]) {
        json_auto_t *reply = NULL;
        uint64_t page_size = 4096;
        size_t i;
        json_t *x;
        int r;

        r = ctl_query("io.memstrack.OomKills", NULL, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        json_t *kills = reply_array(reply, "kills"), *peaks = reply_array(reply, "peakSnapshots");
        if (!json_is_true(json_object_get(reply, "watching")))
                printf("OOM kills are not watched: %s.\n", reply_string(reply, "reason") ?: "unknown reason");
        else
                printf("OOM kills seen: %" PRIu64 " (the last %zu kept), lost: %" PRIu64 "\n",
                       reply_count(reply, "killsSeen"), json_array_size(kills), reply_count(reply, "lost"));
        json_array_foreach(kills, i, x) {
                printf("\n");
                r = print_kill(x, page_size);
                if (r < 0)
                        return r;
        }
        printf("\nPeak snapshots taken: %" PRIu64 " (the last %zu kept)\n", reply_count(reply, "peakSnapshotsTaken"),
               json_array_size(peaks));
        json_array_foreach(peaks, i, x) {
                printf("\n");
                print_time("New peak", x);
                printf("\n");
                r = print_holders(json_object_get(x, "holders"), page_size);
                if (r < 0)
                        return r;
        }
        json_t *pressure = reply_array(reply, "pressureRecords"), *watch = json_object_get(reply, "pressureWatch");
        printf("\nPressure records taken: %" PRIu64 " (the last %zu kept)", reply_count(reply, "pressureRecordsTaken"),
               json_array_size(pressure));
        if (json_is_object(watch)) {
                _cleanup_free_ char *trigger = format_sanitize(reply_string(watch, "trigger") ?: "none");
                _cleanup_free_ char *psi = format_sanitize(reply_string(watch, "psi") ?: "?");
                printf("; within %" PRIu64 " %% of a limit, PSI trigger %s (%s)", reply_count(watch, "marginPercent"),
                       trigger ?: "?", psi ?: "?");
        }
        printf("\n");
        json_array_foreach(pressure, i, x) {
                printf("\n");
                r = print_pressure(x, page_size);
                if (r < 0)
                        return r;
        }
        return 0;
}
