/* SPDX-License-Identifier: MIT */

/*
 * The summary memstrackd logs on SIGUSR1 and at exit (daemon/api/summary.c), from a synthetic core:
 * what each line says, which tasks and modules make the top lists, the lost-per-CPU and evicted lines
 * only when they have something to say, names with control characters kept on their line, and the
 * stderr form being the text. No kernel, no journal, any user.
 */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounting.h"
#include "format-util.h"
#include "ksym.h"
#include "macro.h"
#include "summary.h"
#include "synthetic-events.h"
#include "tests.h"

static size_t count_lines(const char *s) {
        size_t n = 1;

        for (; *s; s++)
                n += *s == '\n';
        return n;
}

/* Line i (from 0) of text, copied. */
static char *line(const char *text, size_t i) {
        const char *p = text;

        for (; i > 0; i--) {
                p = strchr(p, '\n');
                ASSERT_NOT_NULL(p);
                p++;
        }
        return strndup(p, strcspn(p, "\n"));
}

static void expect_line(const char *text, size_t i, const char *expected) {
        _cleanup_free_ char *l = line(text, i);
        ASSERT_STREQ(l, expected);
}

static void expect_line_has(const char *text, size_t i, const char *part) {
        _cleanup_free_ char *l = line(text, i);
        if (!strstr(l, part))
                fprintf(stderr, "line %zu \"%s\" lacks \"%s\"\n", i, l, part);
        ASSERT_NOT_NULL(strstr(l, part));
}

/* A source that names its losses: one more line after the per-CPU one, every reason with its count. */
static void test_lost_by_reason(void) {
        uint64_t lost_per_cpu[] = { 4, 3 };
        EventSourceLoss losses[] = { { "ringFull", 4 }, { "recursionMiss", 3 }, { "stackFailed", 1 } };
        EventSourceStats source = { .lost_records = 7, .n_cpus = 2, .lost_per_cpu = lost_per_cpu,
                                    .losses = losses, .n_losses = ELEMENTSOF(losses) };
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        Ksym *k = NULL;

        ASSERT_OK(ksym_load("data/kallsyms-modules", &k));
        ASSERT_OK(accounting_new(&c, k, &a));
        synthetic_scene(a);
        SummaryInput in = { .accounting = a, .source = &source, .uptime_usec = 7000000, .reason = "SIGUSR1",
                            .page_size = 4096 };
        _cleanup_free_ char *text = summary_format(&in);
        ASSERT_NOT_NULL(text);
        expect_line(text, 1, "Lost per CPU: cpu0=4 cpu1=3");
        expect_line(text, 2, "Lost by reason: ringFull=4 recursionMiss=3 stackFailed=1");
        expect_line(text, 3, "Top tasks by peak:");

        /* All zero: no line. */
        losses[0].count = losses[1].count = losses[2].count = 0;
        source.lost_records = 0;
        _cleanup_free_ char *quiet = summary_format(&in);
        ASSERT_NOT_NULL(quiet);
        ASSERT_NULL(strstr(quiet, "Lost by reason"));
        accounting_free(a);
        ksym_free(k);
}

static void test_scene(void) {
        uint64_t lost_per_cpu[] = { 0, 5, 0, 2 };
        EventSourceStats source = { .lost_records = 7, .n_cpus = 4, .lost_per_cpu = lost_per_cpu };
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;
        Ksym *k = NULL;
        char pages[32];

        ASSERT_OK(ksym_load("data/kallsyms-modules", &k));
        ASSERT_OK(accounting_new(&c, k, &a));
        synthetic_scene(a);
        synthetic_free(a, 500, 0x9000, 0);      /* allocated before tracing: untracked */

        AccountingStats s;
        accounting_get_stats(a, &s);
        SummaryInput in = { .accounting = a, .source = &source, .uptime_usec = 7000000, .reason = "SIGUSR1",
                            .page_size = 4096 };
        _cleanup_free_ char *text = summary_format(&in);
        ASSERT_NOT_NULL(text);
        fprintf(stderr, "%s\n", text);

        /* Totals, then lost per CPU (only the CPUs that lost), 4 tasks, 3 modules, 3 units. */
        ASSERT_EQ(count_lines(text), 1 + 1 + 1 + 4 + 1 + 3 + 1 + 3);
        _cleanup_free_ char *first = NULL;
        char cur[32], peak[32];
        ASSERT_TRUE(asprintf(&first, "memstrack summary (SIGUSR1) after 7.0 s: tracking %s (15 pages), peak %s "
                                     "(30 pages); %llu events, 3 lost, 1 untracked frees.",
                             format_pages(cur, sizeof(cur), 15, 4096), format_pages(peak, sizeof(peak), 30, 4096),
                             (unsigned long long) s.events) > 0);
        expect_line(text, 0, first);
        expect_line(text, 1, "Lost per CPU: cpu1=5 cpu3=2");
        expect_line(text, 2, "Top tasks by peak:");
        /* By peak, largest first; the exited task says so. */
        expect_line_has(text, 3, "    300 gamma");
        expect_line_has(text, 3, "(16 pages), now 0 pages");
        expect_line_has(text, 3, format_pages(pages, sizeof(pages), 16, 4096));
        expect_line_has(text, 4, "    100 alpha");
        expect_line_has(text, 4, "(8 pages), now 8 pages");
        expect_line_has(text, 5, "    200 beta");
        expect_line_has(text, 5, "(6 pages), now 6 pages");
        expect_line_has(text, 6, "    400 delta");
        expect_line_has(text, 6, "(1 pages), now 1 pages, exited");
        expect_line(text, 7, "Top modules by peak:");
        expect_line_has(text, 8, "  vmlinux");
        expect_line_has(text, 8, "(24 pages), now 9 pages");
        expect_line_has(text, 9, "  ext4");
        expect_line_has(text, 9, "(4 pages), now 4 pages");
        expect_line_has(text, 10, "  xfs");
        expect_line_has(text, 10, "(2 pages), now 2 pages");
        expect_line(text, 11, "Top units by peak:");
        expect_line_has(text, 12, "  web.service");
        expect_line_has(text, 12, "(22 pages), now 6 pages");
        expect_line_has(text, 13, "  alpha.service");
        expect_line_has(text, 13, "(8 pages), now 8 pages");
        expect_line_has(text, 14, "  session-3.scope");
        expect_line_has(text, 14, "(1 pages), now 1 pages");

        /* No source, or one that lost nothing: no lost-per-CPU line. The reason is the caller's. */
        in.source = NULL;
        in.reason = "shutdown";
        _cleanup_free_ char *bare = summary_format(&in);
        ASSERT_NOT_NULL(bare);
        ASSERT_EQ(count_lines(bare), count_lines(text) - 1);
        ASSERT_TRUE(strncmp(bare, "memstrack summary (shutdown) after 7.0 s:", 41) == 0);
        expect_line(bare, 1, "Top tasks by peak:");

        /* The stderr form is the text and a newline. */
        char path[] = "/tmp/test-summary.XXXXXX";
        int fd = mkstemp(path);
        ASSERT_OK(fd);
        ASSERT_OK(unlink(path));
        int saved = dup(STDERR_FILENO);
        ASSERT_OK(saved);
        ASSERT_OK(dup2(fd, STDERR_FILENO));
        int r = summary_log(&in, false);
        ASSERT_OK(dup2(saved, STDERR_FILENO));
        ASSERT_OK(close(saved));
        ASSERT_EQ(r, 0);
        size_t n = strlen(bare);
        _cleanup_free_ char *logged = calloc(1, n + 2);
        ASSERT_NOT_NULL(logged);
        ASSERT_EQ(pread(fd, logged, n + 1, 0), (ssize_t) n + 1);
        ASSERT_OK(close(fd));
        ASSERT_TRUE(memcmp(logged, bare, n) == 0);
        ASSERT_EQ(logged[n], '\n');

        accounting_free(a);
        ksym_free(k);
}

/* Nine tasks, three exited and two of those evicted: the five largest peaks; names from the kernel cannot start lines of their own; tasks
 * forgotten to bound memory are summed up in one line. */
static void test_top_cut_escape_and_evicted(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        c.max_exited_tasks = 1;
        ASSERT_OK(accounting_new(&c, NULL, &a));
        for (int32_t pid = 1; pid <= 9; pid++) {
                synthetic_task(a, pid, pid == 7 ? "evil\nname" : "worker");
                synthetic_alloc(a, pid, (uint64_t) pid * 0x100, (uint32_t) (pid % 4), SYNTHETIC_KERNEL);
        }
        /* Three exits, one exited task kept: two evicted, with the pages of pids 1 and 2 (2 + 4). */
        synthetic_exit(a, 1);
        synthetic_exit(a, 2);
        synthetic_exit(a, 5);

        SummaryInput in = { .accounting = a, .uptime_usec = 1500000, .reason = "SIGUSR1", .page_size = 4096 };
        _cleanup_free_ char *text = summary_format(&in);
        ASSERT_NOT_NULL(text);
        fprintf(stderr, "%s\n", text);
        /* Totals, header, 5 tasks, evicted, header, vmlinux, header, "[unknown]" (no cgroup ids). */
        ASSERT_EQ(count_lines(text), 1 + 1 + 5 + 1 + 1 + 1 + 1 + 1);
        /* Pages 2^(pid % 4): by peak, ties in the order first seen; 4 and 8 (1 page) are cut. */
        expect_line_has(text, 2, "      3 worker");
        expect_line_has(text, 2, "(8 pages), now 8 pages");
        expect_line_has(text, 3, "      7 evil\\x0aname");
        expect_line_has(text, 4, "      6 worker");
        expect_line_has(text, 5, "      5 worker");
        expect_line_has(text, 5, "(2 pages), now 2 pages, exited");
        expect_line_has(text, 6, "      9 worker");
        expect_line_has(text, 7, "(6 pages) still held by 2 evicted exited tasks");
        expect_line(text, 8, "Top modules by peak:");
        expect_line(text, 10, "Top units by peak:");
        expect_line_has(text, 11, "  [unknown]");
        expect_line_has(text, 11, "(32 pages), now 32 pages");
        accounting_free(a);
}

static void test_empty(void) {
        AccountingConfig c = ACCOUNTING_CONFIG_DEFAULT;
        Accounting *a = NULL;

        ASSERT_OK(accounting_new(&c, NULL, &a));
        SummaryInput in = { .accounting = a, .reason = "shutdown", .page_size = 4096 };
        _cleanup_free_ char *text = summary_format(&in);
        ASSERT_NOT_NULL(text);
        ASSERT_EQ(count_lines(text), 4);
        expect_line(text, 1, "Top tasks by peak:");
        expect_line(text, 2, "Top modules by peak:");
        expect_line(text, 3, "Top units by peak:");
        accounting_free(a);
}

int main(void) {
        TEST(test_scene);
        TEST(test_lost_by_reason);
        TEST(test_top_cut_escape_and_evicted);
        TEST(test_empty);
        return 0;
}
