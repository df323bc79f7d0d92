/* SPDX-License-Identifier: MIT */
#pragma once

/* Sizes for people, shared by memstrackd (status line, summary) and memstrackctl. */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* A new string of printf's output, however long (a C++ symbol runs to hundreds of bytes); NULL on OOM.
 * For names a fixed buffer would cut. */
char *strdup_printf(const char *format, ...) _printf_(1, 2);

/* "512 B", "4.0 KiB", "64.0 MiB", "1.5 GiB": binary units, one decimal from KiB on. Returns buf. */
char *format_bytes(char *buf, size_t size, uint64_t bytes);
/* format_bytes() of pages * page_size (page_size 0 counts as 4096), saturating instead of overflowing. */
char *format_pages(char *buf, size_t size, uint64_t pages, uint64_t page_size);
