/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What a live source learns from /proc rather than from the kernel's events: the tasks alive before it
 * started tracing, and the arguments of a task that exec'd. Every live source seeds the same way, so the
 * core meets the same task baseline whichever source runs.
 *
 * The /proc root is a parameter so the tests can hand a fake tree in a temporary directory.
 */

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"

#define PROC_ROOT_DEFAULT "/proc"
/* Arguments of a task, joined by spaces, at most this many bytes with the NUL. */
#define PROC_CMDLINE_MAX 4096u

/*
 * Reads <proc>/PID/cmdline into buf (size bytes, > 0) with the arguments joined by spaces, cut at size - 1
 * bytes. Returns buf, or NULL if there is none: kernel threads, zombies, a task already gone. Allocates
 * nothing (it runs once per exec).
 */
const char *proc_read_cmdline(const char *proc, int32_t pid, char *buf, size_t size);

/* Reads <proc>/PID/comm into comm, without its newline; "" if there is none (a task already gone). */
void proc_read_comm(const char *proc, int32_t pid, char comm[static 16]);

/*
 * Emits one MS_EVENT_TASK_NEW into sink for every process in <proc> except self: name = its comm,
 * cmdline, baseline_pages = its resident pages (statm; 0 if unreadable), pid = tid = the process, cpu 0,
 * timestamp now (CLOCK_MONOTONIC). A task that vanishes while being read is skipped: its exit follows in
 * the source's own events. Logs a warning if <proc> cannot be listed, -ENOMEM at error level. Returns the
 * number of events emitted.
 */
uint64_t proc_seed_tasks(const char *proc, pid_t self, const MsEventSink *sink);

/* memstrackd's PID namespace: the nsfs device and inode of /proc/self/ns/pid, and whether it is the
 * initial one (whose pids the kernel's tracepoint fields carry). -errno if it cannot be read. */
int proc_pid_namespace(uint64_t *ret_dev, uint64_t *ret_ino, bool *ret_initial);
