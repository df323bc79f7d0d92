/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * UserSymbols: user-space address of a live process -> symbol+offset and the ELF file it is in, read
 * from the files mapped into the process (/proc/PID/maps). The only module that knows libdwfl/libelf.
 *
 * Symbols come from each mapped file's own .symtab, else its .dynsym (and an embedded .gnu_debugdata
 * table): no separate debuginfo is looked for, on disk or on the network. Files are opened through
 * /proc/PID/root, so a process in a container or chroot is symbolized with its own files.
 *
 * One libdwfl session per process, in a least-recently-used cache of at most max_processes. A session
 * is checked to still belong to the process image it was made for whenever it is handed out
 * (usym_process()): the start time tells a reused pid apart, the executable and the code and stack
 * addresses an exec. An address outside every known mapping re-reads the maps (at most once a second
 * per process), for libraries loaded later. Answers are memoized per session, so a stack tree's
 * repeated frames cost one hash probe after the first (a symbol search in libc takes ~50 us).
 *
 * Anything that stops a lookup makes it fail, never the caller: the process gone, /proc/PID/maps not
 * readable (another user's process without CAP_SYS_PTRACE), a deleted or replaced file, anonymous or
 * JIT code, the vDSO (reading it would mean reading the process's memory), a stripped file.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USYM_MAX_PROCESSES_DEFAULT 64

typedef struct UserSymbols UserSymbols;
/* One process's session, owned by its UserSymbols. */
typedef struct UsymProcess UsymProcess;

typedef struct UsymResult {
        const char *name;       /* the ELF symbol, e.g. "malloc" */
        uint64_t offset;        /* address - symbol start */
        const char *object;     /* basename of the mapped ELF file, e.g. "libc.so.6" */
} UsymResult;

/* max_processes >= 1. Returns NULL on OOM. */
UserSymbols *usym_new(size_t max_processes);
UserSymbols *usym_free(UserSymbols *u);

/*
 * The session of process pid (a thread group id), checked against the running image, or a new one.
 * NULL if the process is gone or cannot be identified (or on OOM). Borrowed: valid until the next
 * usym_process(), usym_lookup() or usym_forget() on u. For many addresses of one process, take the
 * session once and use usym_process_lookup(): the check costs two /proc reads.
 */
UsymProcess *usym_process(UserSymbols *u, pid_t pid);

/*
 * Symbolizes ip in the session's process. False if it cannot be: see the top of this file. The strings
 * in *ret are borrowed, valid until the next call on the UserSymbols.
 */
bool usym_process_lookup(UsymProcess *p, uint64_t ip, UsymResult *ret);

/* usym_process() and usym_process_lookup() in one: for a single address. */
bool usym_lookup(UserSymbols *u, pid_t pid, uint64_t ip, UsymResult *ret);

/* Drops what is cached for pid (after it exited or exec'd). Cheap when pid is not cached. */
void usym_forget(UserSymbols *u, pid_t pid);

/* Processes with a cached session, at most max_processes. */
size_t usym_cached_processes(const UserSymbols *u);
