/* SPDX-License-Identifier: MIT */
#pragma once

/* Sizes for people, shared by memstrackd (status line, summary) and memstrackctl. */

#include <stddef.h>
#include <stdint.h>

/* "512 B", "4.0 KiB", "64.0 MiB", "1.5 GiB": binary units, one decimal from KiB on. Returns buf. */
char *format_bytes(char *buf, size_t size, uint64_t bytes);
/* format_bytes() of pages * page_size (page_size 0 counts as 4096), saturating instead of overflowing. */
char *format_pages(char *buf, size_t size, uint64_t pages, uint64_t page_size);
