/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What memstrackd's error replies mean, in words: the one place that turns an error name and its
 * parameters into the sentence memstrackctl shows, so every verb, report and the live view say the
 * same thing for the same condition (a user should not see "io.memstrack.NoSuchTask {"pid":1}" from
 * one verb and "No task 1 known" from another). Pure functions: no I/O, no arguments from ctl.h.
 */

#include <jansson.h>

/*
 * The sentence for the error reply error with parameters (borrowed, may be NULL): no trailing newline,
 * names from the kernel passed through format_sanitize(). Errors without a sentence of their own read
 * "memstrackd replied with error NAME {parameters}". New string, NULL on OOM.
 */
char *ctl_error_message(const char *error, const json_t *parameters);

/* The exit status (CtlExit) for an error reply: PERMISSION, BUSY (no connection slot), PROTOCOL (the daemon did not understand
 * us: another version) or FAILURE. */
int ctl_error_exit_status(const char *error);
