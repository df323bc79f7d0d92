/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Lenient getters for reply and snapshot-file objects: a missing member, null or a member of the wrong
 * type reads as the default. The daemon's replies are well-formed; snapshot files may have been edited,
 * and a report from a damaged file should show zeros, not crash. Strings are borrowed from the object.
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

int64_t reply_int(const json_t *o, const char *key, int64_t def);
/* Negative integers read as 0 (page counts, event counts). */
uint64_t reply_count(const json_t *o, const char *key);
double reply_double(const json_t *o, const char *key, double def);
bool reply_bool(const json_t *o, const char *key, bool def);
const char *reply_string(const json_t *o, const char *key);
/* The member if it is an array, else NULL. */
json_t *reply_array(const json_t *o, const char *key);
json_t *reply_object(const json_t *o, const char *key);

/* A StackNode's label: "frame [module]", or just the frame for the kernel image and the root.
 * New string (NULL on OOM), not sanitized. */
char *reply_frame_label(const json_t *node);
/* A StackNode's peak, or -1 when the daemon could not tell (null in filtered views). */
int64_t reply_node_peak(const json_t *node);
