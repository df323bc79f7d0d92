/* SPDX-License-Identifier: MIT */
#pragma once

/* Number parsing for command lines and configuration, shared by every program of memstrack. */

#include <stdint.h>

/*
 * Parses s, a whole decimal number with no sign, space or suffix, into [min, max]. -EINVAL for anything
 * else than digits, -ERANGE outside the range (or past 2^64 - 1). *ret is set only on success.
 */
int parse_uint64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/*
 * Parses a size in bytes: a whole number as parse_uint64() takes it, then optionally a binary unit, K, M, G
 * or T (also k; KiB, MiB, GiB and TiB; B alone for bytes): "4096", "512K", "10M", "2GiB". Decimal units
 * (KB, MB) are refused rather than guessed. -EINVAL for anything else, -ERANGE above max (or past 2^64 - 1).
 * *ret is set only on success.
 */
int parse_size(const char *s, uint64_t max, uint64_t *ret);
