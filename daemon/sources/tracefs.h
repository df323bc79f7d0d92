/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * tracefs: where the kernel's trace events are described. Every source that reads tracepoints (perf
 * today, ftrace later) finds it here; parsing what is inside stays in tracepoint.c.
 */

#define TRACEFS_DEFAULT "/sys/kernel/tracing"

/*
 * Finds the mounted tracefs: the first tracefs mount in /proc/mounts, preferring /sys/kernel/tracing, and
 * /sys/kernel/debug/tracing when only debugfs is there. When none is mounted, mounts tracefs at
 * /sys/kernel/tracing. On success *ret_path is a new string the caller frees; returns 1 if this call
 * mounted tracefs (the caller should say so), 0 if it was mounted already. -ENOENT when tracefs is
 * neither mounted nor mountable (mount's own error when it is more telling, e.g. -EPERM).
 */
int tracefs_find(char **ret_path);

#define LOCKDOWN_FILE_DEFAULT "/sys/kernel/security/lockdown"

/*
 * Whether the kernel's lockdown (lockdown=, or Secure Boot on some distributions) closes tracing:
 * confidentiality mode shuts tracefs, perf's kernel data and BPF's reads of kernel memory to every
 * tracer, root included. -EPERM with *ret_reason saying so when path (NULL: LOCKDOWN_FILE_DEFAULT) reads
 * "[confidentiality]"; 0 otherwise, also when the file cannot be read (no securityfs, no lockdown LSM):
 * the sources then find out for themselves.
 */
int tracefs_lockdown_check(const char *path, const char **ret_reason);
