/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Text that reports print: widths, terminal-safe copies, cuts. Shared by memstrackctl (tables, the live
 * view) and the report renderers that memstrackd uses too, so it needs nothing but libc and utf8.h.
 */

#include <stddef.h>
#include <stdint.h>

/* Big enough for every format_*() result that fills a caller's buffer (format-util.h, format.h). */
#define FORMAT_BUFFER_MAX 32

/* Display width of UTF-8 text, one column per code point (jansson only hands out valid UTF-8). */
size_t format_text_width(const char *s);
/* A copy of s safe to print on a terminal: control characters (C0, DEL, C1: ESC, \r, \n, \b, ...) and bytes
 * that are not UTF-8 become \xNN per byte (utf8.h), so "\033[2J" shows as \x1b[2J. Every name, frame and
 * command line memstrackctl prints as text passes here (tables do it for their cells). NULL on OOM. */
char *format_sanitize(const char *s);
/* A copy of s cut to at most width columns; "..." marks a cut when width allows. NULL on OOM. */
char *format_ellipsize(const char *s, size_t width);
/* Room for format_stack_sampling(). */
#define FORMAT_STACK_SAMPLING_MAX 80
/* Which allocations' stacks are taken, from Status/StackTree stackSampleInterval, one short phrase:
 * "every allocation", "1 in 64 pages, scaled to exact counts", "none". */
char *format_stack_sampling(char *buf, size_t size, uint64_t interval);
