/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The machine's memory for the live view's header meter: /proc/meminfo's MemTotal, MemFree,
 * MemAvailable, Cached, Buffers and Slab, in bytes. No curses.
 */

#include "model.h"

/* Reads the fields from text in /proc/meminfo's format ("Key:   123 kB" lines); missing ones stay 0.
 * -EBADMSG without MemTotal. */
int top_meminfo_parse(const char *text, TopMemInfo *ret);
/* Reads and parses the file (path NULL: /proc/meminfo). -errno, -EBADMSG. */
int top_meminfo_read(const char *path, TopMemInfo *ret);
