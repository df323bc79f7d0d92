/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Numbers jansson cannot hold: an integer literal beyond int64_t, a real beyond double. jansson fails the
 * whole text for one of them ("too big integer"), which would make a call with "limit":
 * 99999999999999999999999 look like garbage and end the connection. These helpers find such numbers
 * outside strings, say which call member or parameter holds the first one, and make a copy of the text
 * with every such number replaced by 0, so the rest of the call can still be read and answered.
 *
 * They follow the text as JSON only as far as needed (strings, nesting, keys); whether the text is JSON
 * at all is for jansson to decide on the copy.
 */

#include <stddef.h>

/*
 * Scans text (size bytes, no NUL needed). Returns 1 when it holds numbers out of range: *ret_copy is a
 * NUL-terminated copy with each of them replaced by 0 (malloc'ed), and *ret_name names the first one's
 * holder (malloc'ed): the parameter, for a number under the call's "parameters" object (at any depth
 * below it), else the call member ("more", or "parameters" when that is not an object), else NULL.
 * Returns 0 when there is none (nothing is allocated), -ENOMEM, or -EBADMSG for nesting deeper than
 * jansson accepts.
 */
int json_overflow_scan(const char *text, size_t size, char **ret_copy, char **ret_name);
