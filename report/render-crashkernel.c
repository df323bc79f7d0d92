/* SPDX-License-Identifier: MIT */

/*
 * The family "crashkernel": how big a kdump capture kernel's crashkernel= reservation must be, from a
 * snapshot taken in the capture kernel after the dump: the RAM the kernel was given, what it kept at boot,
 * what was in use before tracing began (all from Status systemMemory) and the true peak of the pages
 * tracing saw (peakTrackedPages), plus a margin. Each figure is a line with where it comes from, and what
 * the sum cannot see is said under it.
 */

#include <inttypes.h>
#include <string.h>

#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"

/* The margin over what the run needed: a fifth of it, and never less than this. */
#define CRASHKERNEL_MARGIN_PERCENT 20
#define CRASHKERNEL_MARGIN_MIN (32ull << 20)
/* The recommendation is rounded up to this: crashkernel= takes sizes in MiB, and 16 MiB is the
 * alignment the kernel places the reservation at on x86-64. */
#define CRASHKERNEL_ROUND (16ull << 20)

typedef struct CrashkernelFigures {
        bool known;                     /* the snapshot has systemMemory */
        bool capture_kernel;
        bool ram_known;                 /* systemRamBytes was readable */
        uint64_t system_ram, total, free_at_start;
        uint64_t kept_by_kernel;        /* system_ram - total */
        uint64_t in_use_at_start;       /* total - free_at_start */
        uint64_t peak_tracked;
        uint64_t needed, margin, recommended;
        uint64_t lost_events;
        size_t oom_kills;               /* kills the snapshot's OomKills holds: the run ran out of memory */
        /* The biggest peak of memstrack's own tools in the run (memstrackctl printing reports, the dracut
         * module's script): in the peak, and not needed where memstrack does not run. */
        uint64_t tools_peak;
} CrashkernelFigures;

/* The names memstrack's own programs run under in a capture initramfs (comm, cut at 15 characters). */
static bool memstrack_tool(const char *comm) {
        return comm && (streq(comm, "memstrackctl") || strncmp(comm, "memstrackd-init", 15) == 0);
}

static void crashkernel_figures(json_t *doc, CrashkernelFigures *ret) {
        json_t *status = reply_object(doc, "status"), *mem = reply_object(status, "systemMemory");
        uint64_t page_size = reply_count(status, "pageSize") ?: 4096;
        CrashkernelFigures c = {};

        c.known = mem != NULL;
        c.capture_kernel = reply_bool(mem, "captureKernel", false);
        c.total = reply_count(mem, "totalBytes");
        c.free_at_start = MIN(reply_count(mem, "freeAtStartBytes"), c.total);
        c.system_ram = reply_count(mem, "systemRamBytes");
        c.ram_known = c.system_ram > 0;
        c.kept_by_kernel = c.ram_known && c.system_ram > c.total ? c.system_ram - c.total : 0;
        c.in_use_at_start = c.total - c.free_at_start;
        uint64_t peak = reply_count(status, "peakTrackedPages");
        c.peak_tracked = count_mul(peak, page_size);
        c.lost_events = reply_count(status, "lostEvents");
        c.oom_kills = json_array_size(reply_array(reply_object(doc, "oomKills"), "kills"));
        json_t *task;
        size_t i;
        json_array_foreach(reply_array(reply_object(doc, "tasks"), "tasks"), i, task)
                if (memstrack_tool(reply_string(task, "comm")))
                        c.tools_peak = MAX(c.tools_peak, reply_count(task, "peakPages"));
        c.tools_peak = count_mul(c.tools_peak, page_size);
        /* Every figure stops at COUNT_MAX (macro.h), so each fits a JSON integer as it is. */
        c.needed = count_add(count_add(c.kept_by_kernel, c.in_use_at_start), c.peak_tracked);
        c.margin = MAX(c.needed / 100 * CRASHKERNEL_MARGIN_PERCENT, CRASHKERNEL_MARGIN_MIN);
        c.recommended = count_add(count_add(c.needed, c.margin), CRASHKERNEL_ROUND - 1) / CRASHKERNEL_ROUND *
                        CRASHKERNEL_ROUND;
        *ret = c;
}

/* Of the reservation this run had: "too small" (the kernel killed tasks for memory), "tight" (it ran,
 * with less than the margin to spare), "enough", or "unknown" (no System RAM figure, or not a capture
 * kernel). */
static const char *crashkernel_verdict(const CrashkernelFigures *c) {
        if (!c->capture_kernel || !c->ram_known)
                return "unknown";
        if (c->oom_kills > 0)
                return "too small";
        return c->system_ram >= c->recommended ? "enough" : "tight";
}

static void print_line(FILE *f, const char *what, uint64_t bytes, const char *whence) {
        char b[FORMAT_BUFFER_MAX];

        fprintf(f, "  %-28s %12s   %s\n", what, format_bytes(b, sizeof(b), bytes), whence);
}

static int text_crashkernel(json_t *doc, const ReportOptions *o, FILE *f) {
        CrashkernelFigures c;
        char b[FORMAT_BUFFER_MAX], b2[FORMAT_BUFFER_MAX];

        (void) o;
        crashkernel_figures(doc, &c);
        if (!c.known) {
                fputs("(no system memory figures in this snapshot: it comes from an earlier memstrackd, or "
                      "/proc/meminfo could not be read)\n", f);
                return 0;
        }
        fputs("crashkernel= for this capture run: what it needed at its peak, and a margin\n", f);
        if (!c.capture_kernel)
                fputs("  (not a capture kernel: this snapshot was taken where /proc/vmcore did not exist, so the "
                      "figures describe this system, not a kdump)\n", f);
        if (c.ram_known)
                print_line(f, "RAM this kernel was given", c.system_ram,
                           "/proc/iomem System RAM: in a capture kernel, the reservation");
        else
                fputs("  RAM this kernel was given    unknown        /proc/iomem hid its addresses (CAP_SYS_ADMIN)\n", f);
        print_line(f, "kept by the kernel at boot", c.kept_by_kernel,
                   c.ram_known ? "RAM - MemTotal: its image, page structures, reserved ranges" : "unknown: counted as 0");
        print_line(f, "in use when tracing began", c.in_use_at_start,
                   "MemTotal - MemFree then: early allocations, the initramfs");
        print_line(f, "peak of tracked pages", c.peak_tracked,
                   "the most pages allocated since and not yet freed at once");
        if (c.tools_peak > 0)
                print_line(f, "  memstrack's own, at most", c.tools_peak,
                           "its tools printing reports: in the peak, not needed without memstrack");
        print_line(f, "needed at the peak", c.needed, "the sum of the three above");
        fprintf(f, "  %-28s %12s   %d %% of what was needed, at least %s\n", "margin",
                format_bytes(b, sizeof(b), c.margin), CRASHKERNEL_MARGIN_PERCENT,
                format_bytes(b2, sizeof(b2), CRASHKERNEL_MARGIN_MIN));
        fprintf(f, "  %-28s %12s   crashkernel=%" PRIu64 "M (rounded up to %llu MiB)\n", "recommended",
                format_bytes(b, sizeof(b), c.recommended), c.recommended >> 20, CRASHKERNEL_ROUND >> 20);
        const char *verdict = crashkernel_verdict(&c);
        if (streq(verdict, "too small"))
                fprintf(f, "This run had %s: TOO SMALL, the kernel killed %zu tasks for memory (memstrackctl oom).\n",
                        format_bytes(b, sizeof(b), c.system_ram), c.oom_kills);
        else if (streq(verdict, "tight"))
                fprintf(f, "This run had %s: it ran, but with less than the margin to spare (%s at its peak).\n",
                        format_bytes(b, sizeof(b), c.system_ram),
                        format_bytes(b2, sizeof(b2), c.system_ram > c.needed ? c.system_ram - c.needed : 0));
        else if (streq(verdict, "enough"))
                fprintf(f, "This run had %s: enough, %s to spare at its peak.\n", format_bytes(b, sizeof(b), c.system_ram),
                        format_bytes(b2, sizeof(b2), c.system_ram - c.needed));
        if (c.lost_events > 0)
                fprintf(f, "%" PRIu64 " events were lost: the peak is a lower bound.\n", c.lost_events);
        fputs("Not in these figures:\n"
              "  - memory the firmware or the first kernel keeps outside System RAM (crashkernel=...,low and\n"
              "    the first MiB on x86-64 are reserved apart);\n"
              "  - what runs after this snapshot was taken: take it after the dump, as memstrack's dracut\n"
              "    module does in a capture kernel;\n"
              "  - other machines: the capture kernel's needs grow with the RAM it must dump (makedumpfile's\n"
              "    bitmaps), its devices and its drivers; size the fleet from a run on its largest machine.\n"
              "Pages the kernel could have reclaimed (page cache, reclaimable slab) count in full, and pages in\n"
              "use when tracing began count even where they were freed later: the sum errs on the large side.\n",
              f);
        return 0;
}

static int json_crashkernel(json_t *doc, const ReportOptions *o, json_t **ret) {
        CrashkernelFigures c;

        (void) o;
        crashkernel_figures(doc, &c);
        if (!c.known) {
                *ret = json_null();
                return 0;
        }
        char value[32];
        snprintf(value, sizeof(value), "%" PRIu64 "M", c.recommended >> 20);
        *ret = json_pack("{s:b, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I, s:I}",
                         "captureKernel", c.capture_kernel,
                         "systemRamBytes", c.ram_known ? json_integer((json_int_t) c.system_ram) :
                                                         json_null(),
                         "keptByKernelBytes", (json_int_t) c.kept_by_kernel,
                         "inUseAtStartBytes", (json_int_t) c.in_use_at_start,
                         "peakTrackedBytes", (json_int_t) c.peak_tracked,
                         "memstrackToolsPeakBytes", (json_int_t) c.tools_peak,
                         "neededBytes", (json_int_t) c.needed,
                         "marginBytes", (json_int_t) c.margin,
                         "recommendedBytes", (json_int_t) c.recommended,
                         "recommendedMiB", (json_int_t) (c.recommended >> 20),
                         "crashkernel", value,
                         "verdict", crashkernel_verdict(&c),
                         "lostEvents", (json_int_t) c.lost_events,
                         "oomKills", (json_int_t) c.oom_kills);
        return *ret ? 0 : -ENOMEM;
}

const ReportFormat report_format_crashkernel = {
        .name = "crashkernel",
        .family = "crashkernel",
        .text = text_crashkernel,
        .json = json_crashkernel,
};
