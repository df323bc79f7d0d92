/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The daemon's only logger. Levels are syslog priorities. Under systemd (JOURNAL_STREAM matches stderr,
 * or log_open_journal() was called) entries go to the journal with CODE_FILE/LINE/FUNC and ERRNO fields;
 * otherwise to stderr with sd-daemon "<N>" prefixes when stderr is not a TTY.
 *
 * The _errno variants take a negative or positive errno, set errno for %m, and return -abs(error) so a
 * failure is logged and propagated in one statement:  return log_error_errno(r, "Failed to ...: %m");
 */

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

#define LOG_LEVEL_DEFAULT LOG_INFO

void log_set_max_level(int level);
int log_get_max_level(void);
/* Parses "debug", "info", ... or a number 0..7. Returns the level or -EINVAL. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);
/* Send entries to the journal (true) or to stderr (false). Default: journal when started by systemd. */
void log_set_target_journal(bool journal);

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
                _printf_(6, 7);

/*
 * Writes one line on stderr whatever the target and the maximum level, for the few lifecycle lines that
 * must reach the unit's journal stream (stderr under systemd). journald keeps what it learnt about the
 * PID of an open stream, its unit included, and native entries from that PID use it: with one line at
 * start and one right before the last native entry, that entry stays attributed to the unit
 * (_SYSTEMD_UNIT, so journalctl -u shows it) even when journald reads it after we exited and were reaped.
 */
void log_stderr(int level, const char *format, ...) _printf_(2, 3);

#define log_full_errno(level, error, ...)                                                               \
        ({                                                                                              \
                int _level = (level), _e = (error);                                                     \
                _e = _e < 0 ? -_e : _e;                                                                 \
                (log_get_max_level() >= _level)                                                         \
                        ? log_internal(_level, _e, __FILE__, __LINE__, __func__, __VA_ARGS__)           \
                        : -_e;                                                                          \
        })

#define log_full(level, ...) (void) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...)   log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)    log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...)  log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...)   log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...)   log_full_errno(LOG_DEBUG, error, __VA_ARGS__)
#define log_info_errno(error, ...)    log_full_errno(LOG_INFO, error, __VA_ARGS__)
#define log_notice_errno(error, ...)  log_full_errno(LOG_NOTICE, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...)   log_full_errno(LOG_ERR, error, __VA_ARGS__)

/* For allocation failures: logs once and returns -ENOMEM. */
#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
