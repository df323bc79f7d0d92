/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Snapshot documents (snapshot-document.h): fetched from the daemon now, or read from a file that
 * `memstrackctl snapshot --file` wrote earlier.
 */

#include <stdint.h>

#include <jansson.h>

#include "snapshot-document.h"
#include "varlink.h"

/* Builds a snapshot document (snapshot_document_build()) from the daemon, with varlink calls on c.
 * 0, a positive CtlExit (reported), or -ENOMEM. */
int snapshot_fetch(VarlinkClient *c, const SnapshotRequest *req, json_t **ret);

/* Reads and checks a snapshot file. 0, or CTL_EXIT_FAILURE after saying what is wrong with it. */
int snapshot_load(const char *path, json_t **ret);
/* The boot phase document memstrackd serves (BootPhase): what its initramfs instance left in /run. 0, or
 * a positive CtlExit (reported: NoSuchSnapshot "initramfs" when there was none). */
int snapshot_fetch_boot(json_t **ret);

/* Writes doc to path atomically (a temporary file renamed over it). -errno. */
int snapshot_save(json_t *doc, const char *path);
