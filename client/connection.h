/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * memstrackctl's side of the daemon connection: connecting and calling with errors a user can act on.
 * Every function here that fails after printing the reason returns a positive CtlExit (see ctl.h):
 * CTL_EXIT_NOT_RUNNING, CTL_EXIT_PERMISSION, CTL_EXIT_PROTOCOL, CTL_EXIT_BUSY (TooManyConnections), or
 * CTL_EXIT_FAILURE for the daemon's other error replies. -ENOMEM is returned unreported.
 */

#include <stdint.h>

#include <jansson.h>

#include "varlink.h"

/* How long one call may take: big stack trees take the daemon a while on large machines. */
#define CTL_CALL_TIMEOUT_USEC (60ULL * 1000000ULL)

/* --address, else $MEMSTRACK_ADDRESS if set and not empty, else the default socket. */
const char *ctl_address(void);

/* Connects to ctl_address(). */
int ctl_connect(VarlinkClient **ret);

/* One call; *ret_reply gets the reply's parameters (new reference). */
int ctl_call(VarlinkClient *c, const char *method, json_t *parameters, json_t **ret_reply);
/* What ctl_call() makes of ctl_client_call()'s result r, error and reply (borrowed) to method: 0 for a
 * final reply with parameters, else the failure reported (ctl_reply_result(), or CTL_EXIT_PROTOCOL for a
 * streaming reply or one without parameters) and its CtlExit, or -ENOMEM. */
int ctl_call_result(const char *method, int r, const char *error, json_t *reply);
/* varlink_client_call() with the daemon's pacing of its dearest methods taken care of: a LimitExceeded
 * "leaksPace" reply (Leaks asked for again too soon) is waited out and the call sent again, a few times. */
int ctl_client_call(VarlinkClient *c, const char *method, json_t *parameters, json_t **ret_reply,
                    char **ret_error);

/* Connects and calls once. */
int ctl_call_once(const char *method, json_t *parameters, json_t **ret_reply);

/* Describes a transport failure (-errno from the varlink client) and returns its CtlExit. */
int ctl_report_transport_error(int error);
/* What a varlink_client_call() or _read_reply() result r (with its error name and parameters, borrowed)
 * means for a verb: 0 for a reply (final or not: r tells), else the failure reported as above and its
 * CtlExit, or -ENOMEM unreported. The one mapping every verb and `top --batch` share. */
int ctl_reply_result(int r, const char *error, json_t *parameters);
/* Prints ctl_error_message() for an error reply (name and parameters, both borrowed) and returns its
 * CtlExit (ctl_error_exit_status()), or -ENOMEM. */
int ctl_report_error_reply(const char *error, json_t *parameters);

/* Prints j to stdout as --json asked (short or pretty), with a final newline. -EIO, -ENOMEM. */
int ctl_print_json(json_t *j);

/* The page size for table units: asked once per command, 4096 if the daemon cannot say. */
int ctl_page_size(VarlinkClient *c, uint64_t *ret);

/*
 * One query for a human table or --json: connects and calls method. With --json the reply is printed
 * and *ret_reply is NULL; otherwise *ret_reply is the reply (the caller unrefs it) and *ret_page_size
 * the daemon's page size. Returns 0 or an exit code/-errno, as ctl_call().
 */
int ctl_query(const char *method, json_t *parameters, json_t **ret_reply, uint64_t *ret_page_size);
