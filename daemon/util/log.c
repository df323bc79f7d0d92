/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "log.h"

static int log_max_level = LOG_LEVEL_DEFAULT;
static int log_target_journal = -1; /* -1: not decided yet */

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg",   [LOG_ALERT] = "alert", [LOG_CRIT] = "crit", [LOG_ERR] = "err",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

int log_level_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        if (level < 0 || (size_t) level >= ELEMENTSOF(level_names))
                return NULL;
        return level_names[level];
}

void log_set_target_journal(bool journal) {
        log_target_journal = journal;
}

/* systemd sets JOURNAL_STREAM=dev:inode when stderr is connected to the journal. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

static void write_stderr(int level, const char *text) {
        /* journald reads the "<N>" prefix as the priority; a person at a terminal does not need it. */
        if (isatty(STDERR_FILENO))
                (void) fprintf(stderr, "%s\n", text);
        else
                (void) fprintf(stderr, "<%i>%s\n", level, text);
}

void log_stderr(int level, const char *format, ...) {
        char buf[2048];
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        write_stderr(level, buf);
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        char buf[2048];
        va_list ap;

        if (log_target_journal < 0)
                log_target_journal = stderr_is_journal();

        /* %m in the format refers to this error, not to whatever errno happens to hold. */
        errno = error;
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);

        if (log_target_journal) {
                /* ERRNO=0 is harmless and keeps one call instead of two. */
                (void) sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%i", level, "ERRNO=%i", error,
                                       "CODE_FILE=%s", file, "CODE_LINE=%i", line, "CODE_FUNC=%s", func,
                                       "SYSLOG_IDENTIFIER=memstrackd", NULL);
        } else
                write_stderr(level, buf);

        return -error;
}
