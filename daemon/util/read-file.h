/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Readers for the small files the kernel exports (/proc, /sys, tracefs) and for files a user names: one
 * read loop (EINTR retried, short reads continued) behind a fixed-buffer reader for the hot path and an
 * allocating one for files of unknown size. Neither waits on a FIFO or reads without end. Nothing is
 * logged; callers say what the file was for.
 */

#include <stddef.h>
#include <sys/types.h>

/* Reads up to size - 1 bytes of path into buf (size > 0) and NUL-terminates them. Returns the length, or
 * -errno of open/read (-EAGAIN for a FIFO without a writer). Allocates nothing. */
ssize_t read_file_small(const char *path, char *buf, size_t size);

/* Reads all of path, a regular file (file-util.h), into a new NUL-terminated buffer the caller frees;
 * *ret_size is the length without the NUL. -EFBIG if the file holds more than max_size bytes, -EBADFD if it
 * is not a regular file, -ENOMEM, or -errno of open/read. */
int read_file_full(const char *path, size_t max_size, char **ret, size_t *ret_size);

/* Reads a file holding one decimal number (and maybe a newline), as /proc/sys does. -EINVAL if it holds
 * anything else. */
int read_file_long(const char *path, long *ret);

/* The user a process belongs to: its real, effective and saved uid, when the three are one and the kernel
 * lets that user read its memory layout (the process is dumpable: its /proc directory is that user's; a
 * process that changed credentials, or was made undumpable, has a /proc directory of root's). -EPERM when
 * there is no such single owner, -ENOENT or -ESRCH when the process is gone, -errno of open/read. */
int read_proc_owner(pid_t pid, uid_t *ret_uid);
