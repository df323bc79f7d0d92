/* SPDX-License-Identifier: MIT */

/*
 * The capture kernel's memory figures and the crashkernel= recommendation: /proc/meminfo and /proc/iomem as
 * Debian 12's 6.1 capture kernel showed them in the kernel lab (daemon/util/system-memory.c), and the report
 * format crashkernel on a document built from them (report/render-crashkernel.c): each figure, the sum,
 * the margin, the rounding and the verdict.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "macro.h"
#include "report.h"
#include "system-memory.h"
#include "tests.h"

#define MIB (1024ull * 1024ull)

/* Debian 12's 6.1 capture kernel under crashkernel=384M in the kernel lab, as the dump step saved them. */
static const char meminfo[] =
        "MemTotal:         335820 kB\n"
        "MemFree:          217520 kB\n"
        "MemAvailable:     224932 kB\n"
        "Buffers:              204 kB\n";

/* The capture kernel's RAM is the crashkernel= range (0x18000000, 384 MiB, split where the kernel keeps
 * setup data) and the low 640 KiB; the nested lines are not System RAM of their own. */
static const char iomem[] =
        "00000000-00000fff : Reserved\n"
        "00001000-0009fbff : System RAM\n"
        "0009fc00-0009ffff : Reserved\n"
        "000f0000-000fffff : Reserved\n"
        "18000000-1800000f : System RAM\n"
        "18000010-2ff5cfff : System RAM\n"
        "  1b000000-1be02576 : Kernel code\n"
        "  1c000000-1c6b9fff : Kernel rodata\n"
        "2ff5d000-2ffffbff : RAM buffer\n"
        "2ffffc00-2fffffff : System RAM\n"
        "3ffda000-3fffffff : Reserved\n"
        "fec00000-fec003ff : IOAPIC 0\n";

static void test_parse_meminfo(void) {
        SystemMemory m = {};

        ASSERT_OK(system_memory_parse_meminfo(meminfo, &m));
        ASSERT_TRUE(m.known);
        ASSERT_EQ(m.total_bytes, 335820ull * 1024);
        ASSERT_EQ(m.free_bytes, 217520ull * 1024);
        ASSERT_EQ(m.available_bytes, 224932ull * 1024);
        /* Before 3.14 there is no MemAvailable: MemFree stands for it. */
        SystemMemory old = {};
        ASSERT_OK(system_memory_parse_meminfo("MemTotal: 1000 kB\nMemFree: 400 kB\n", &old));
        ASSERT_EQ(old.available_bytes, 400ull * 1024);
        /* MemTotalX is not MemTotal; without both figures there is nothing. */
        SystemMemory bad = {};
        ASSERT_EQ(system_memory_parse_meminfo("MemTotalX: 5 kB\nMemFree: 1 kB\n", &bad), -EINVAL);
        ASSERT_TRUE(!bad.known);
        ASSERT_EQ(system_memory_parse_meminfo("MemTotal: x kB\nMemFree: 1 kB\n", &bad), -EINVAL);
}

static void test_parse_iomem(void) {
        /* What memstrackd reported in that run. */
        ASSERT_EQ(system_memory_parse_iomem(iomem), 402636800u);
        /* As an unprivileged reader sees it: every range 00000000-00000000. */
        ASSERT_EQ(system_memory_parse_iomem("00000000-00000000 : System RAM\n00000000-00000000 : System RAM\n"), 0u);
        /* "System RAM (kexec)" and the like are other ranges; nothing at all is 0. */
        ASSERT_EQ(system_memory_parse_iomem("00000000-3fffffff : System RAMX\n"), 0u);
        ASSERT_EQ(system_memory_parse_iomem(""), 0u);
}

/* A snapshot document with Status as memstrackd gives it, and OomKills holding kills kills. */
static json_t *document(const SystemMemory *m, uint64_t peak_pages, uint64_t lost, size_t kills) {
        json_t *k = json_array();
        for (size_t i = 0; i < kills; i++)
                ASSERT_OK(json_array_append_new(k, json_pack("{s:i}", "pid", 100 + (int) i)));
        json_t *doc = json_pack("{s:i, s:{s:I, s:I, s:i, s:{s:I, s:I, s:I, s:o, s:b}}, s:{s:o}}",
                                "memstrackSnapshot", 1,
                                "status", "peakTrackedPages", (json_int_t) peak_pages, "lostEvents", (json_int_t) lost,
                                "pageSize", 4096, "systemMemory",
                                "totalBytes", (json_int_t) m->total_bytes, "freeAtStartBytes", (json_int_t) m->free_bytes,
                                "availableAtStartBytes", (json_int_t) m->available_bytes,
                                "systemRamBytes", m->system_ram_bytes ? json_integer((json_int_t) m->system_ram_bytes) :
                                                                        json_null(),
                                "captureKernel", m->capture_kernel,
                                "oomKills", "kills", k);
        ASSERT_NOT_NULL(doc);
        return doc;
}

/* The report options of "--format crashkernel". */
static ReportOptions crashkernel_options(void) {
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        _cleanup_free_ char *message = NULL;

        ASSERT_OK(report_parse_formats("crashkernel", &o, &message));
        return o;
}

static json_t *render_json(json_t *doc) {
        ReportOptions o = crashkernel_options();
        json_t *ret = NULL;

        ASSERT_OK(report_render_json(doc, &o, &ret));
        json_t *v = json_incref(json_object_get(ret, "crashkernel"));
        json_decref(ret);
        return v;
}

static char *render_text(json_t *doc) {
        ReportOptions o = crashkernel_options();
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(report_render(doc, &o, f));
        ASSERT_EQ(fclose(f), 0);
        return text;
}

static void test_recommendation(void) {
        SystemMemory m = {};
        ASSERT_OK(system_memory_parse_meminfo(meminfo, &m));
        m.system_ram_bytes = system_memory_parse_iomem(iomem);
        m.capture_kernel = true;
        /* A peak of 20000 pages (78.1 MiB), memstrack's own tools' share of it said apart: the biggest of
         * their peaks, which ran one after the other. */
        json_t *doc = document(&m, 20000, 0, 0);
        ASSERT_OK(json_object_set_new(doc, "tasks", json_pack("{s:[{s:s, s:i}, {s:s, s:i}, {s:s, s:i}]}", "tasks",
                                                              "comm", "memstrackctl", "peakPages", 1000,
                                                              "comm", "memstrackd-init", "peakPages", 300,
                                                              "comm", "makedumpfile", "peakPages", 9000)));
        json_t *r = render_json(doc);
        ASSERT_EQ(json_integer_value(json_object_get(r, "memstrackToolsPeakBytes")), 1000 * 4096);

        uint64_t kept = m.system_ram_bytes - m.total_bytes, in_use = m.total_bytes - m.free_bytes,
                 peak = 20000ull * 4096, needed = kept + in_use + peak;
        ASSERT_EQ(json_integer_value(json_object_get(r, "keptByKernelBytes")), (json_int_t) kept);
        ASSERT_EQ(json_integer_value(json_object_get(r, "inUseAtStartBytes")), (json_int_t) in_use);
        ASSERT_EQ(json_integer_value(json_object_get(r, "peakTrackedBytes")), (json_int_t) peak);
        ASSERT_EQ(json_integer_value(json_object_get(r, "neededBytes")), (json_int_t) needed);
        /* 20 % of what was needed is above the 32 MiB floor. */
        uint64_t margin = needed / 100 * 20;
        ASSERT_GT(margin, 32 * MIB);
        ASSERT_EQ(json_integer_value(json_object_get(r, "marginBytes")), (json_int_t) margin);
        uint64_t rec = (needed + margin + 16 * MIB - 1) / (16 * MIB) * (16 * MIB);
        ASSERT_EQ(json_integer_value(json_object_get(r, "recommendedBytes")), (json_int_t) rec);
        ASSERT_EQ(rec % (16 * MIB), 0u);
        char value[32];
        snprintf(value, sizeof(value), "%lluM", (unsigned long long) (rec / MIB));
        ASSERT_STREQ(json_string_value(json_object_get(r, "crashkernel")), value);
        /* 384 MiB was more than the recommendation: enough. */
        ASSERT_TRUE(m.system_ram_bytes >= rec);
        ASSERT_STREQ(json_string_value(json_object_get(r, "verdict")), "enough");
        ASSERT_TRUE(json_is_true(json_object_get(r, "captureKernel")));

        _cleanup_free_ char *text = render_text(doc);
        fputs(text, stderr);
        char line[64];
        snprintf(line, sizeof(line), "crashkernel=%lluM", (unsigned long long) (rec / MIB));
        ASSERT_NOT_NULL(strstr(text, line));
        ASSERT_NOT_NULL(strstr(text, "enough"));
        ASSERT_NOT_NULL(strstr(text, "Not in these figures"));
        ASSERT_NOT_NULL(strstr(text, "memstrack's own, at most"));
        ASSERT_NULL(strstr(text, "not a capture kernel"));
        json_decref(r);
        json_decref(doc);
}

static void test_verdicts(void) {
        SystemMemory m = { .known = true, .total_bytes = 200 * MIB, .free_bytes = 150 * MIB,
                           .available_bytes = 150 * MIB, .system_ram_bytes = 220 * MIB, .capture_kernel = true };

        /* 20 + 50 + 100 = 170 MiB needed, 204 with the margin: 208 recommended; 220 is enough. */
        json_t *doc = document(&m, 100 * MIB / 4096, 0, 0), *r = render_json(doc);
        ASSERT_EQ(json_integer_value(json_object_get(r, "recommendedMiB")), 208);
        ASSERT_STREQ(json_string_value(json_object_get(r, "verdict")), "enough");
        json_decref(r);
        json_decref(doc);
        /* 140 MiB tracked: 210 needed, 252 with the margin, 256 recommended: 220 ran but is tight. */
        doc = document(&m, 140 * MIB / 4096, 0, 0);
        r = render_json(doc);
        ASSERT_EQ(json_integer_value(json_object_get(r, "recommendedMiB")), 256);
        ASSERT_STREQ(json_string_value(json_object_get(r, "verdict")), "tight");
        json_decref(r);
        json_decref(doc);
        /* An OOM kill in the run: too small, whatever the sum says; lost events are carried. */
        doc = document(&m, 10, 7, 2);
        r = render_json(doc);
        ASSERT_STREQ(json_string_value(json_object_get(r, "verdict")), "too small");
        ASSERT_EQ(json_integer_value(json_object_get(r, "oomKills")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(r, "lostEvents")), 7);
        _cleanup_free_ char *text = render_text(doc);
        ASSERT_NOT_NULL(strstr(text, "TOO SMALL"));
        ASSERT_NOT_NULL(strstr(text, "lower bound"));
        json_decref(r);
        json_decref(doc);
        /* The 32 MiB floor of the margin for a small run. */
        m.total_bytes = m.system_ram_bytes = 64 * MIB;
        m.free_bytes = 60 * MIB;
        doc = document(&m, 1, 0, 0);
        r = render_json(doc);
        ASSERT_EQ(json_integer_value(json_object_get(r, "marginBytes")), (json_int_t) (32 * MIB));
        json_decref(r);
        json_decref(doc);
}

static void test_not_a_capture_kernel(void) {
        SystemMemory m = { .known = true, .total_bytes = 200 * MIB, .free_bytes = 150 * MIB,
                           .available_bytes = 150 * MIB };
        json_t *doc = document(&m, 10, 0, 0), *r = render_json(doc);

        /* No System RAM figure (an unprivileged daemon) and no /proc/vmcore: figures, but no verdict. */
        ASSERT_TRUE(json_is_null(json_object_get(r, "systemRamBytes")));
        ASSERT_EQ(json_integer_value(json_object_get(r, "keptByKernelBytes")), 0);
        ASSERT_STREQ(json_string_value(json_object_get(r, "verdict")), "unknown");
        _cleanup_free_ char *text = render_text(doc);
        ASSERT_NOT_NULL(strstr(text, "not a capture kernel"));
        ASSERT_NOT_NULL(strstr(text, "RAM this kernel was given    unknown"));
        json_decref(r);
        json_decref(doc);
        /* A document from before systemMemory: said, and null as JSON. */
        doc = json_pack("{s:i, s:{s:i}}", "memstrackSnapshot", 1, "status", "pageSize", 4096);
        r = render_json(doc);
        ASSERT_TRUE(json_is_null(r));
        _cleanup_free_ char *old = render_text(doc);
        ASSERT_NOT_NULL(strstr(old, "no system memory figures"));
        json_decref(r);
        json_decref(doc);
}

int main(void) {
        TEST(test_parse_meminfo);
        TEST(test_parse_iomem);
        TEST(test_recommendation);
        TEST(test_verdicts);
        TEST(test_not_a_capture_kernel);
        return 0;
}
