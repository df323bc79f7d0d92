/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The snapshot document (snapshot-document.h) of memstrackd's own state: snapshot_document_build(), which
 * memstrackctl runs with varlink calls, run here with direct calls of the functions that answer those
 * methods; and memstrack's reports rendered from it into a file, which is what `memstrackd --report LIST
 * --output FILE` writes when it stops (an initramfs has nobody left to ask the daemon by then).
 */

#include <stdbool.h>

#include <jansson.h>

#include "view.h"
#include "report.h"
#include "service.h"
#include "usym.h"

typedef struct DocumentInput {
        Accounting *accounting;         /* borrowed */
        UserSymbols *usym;              /* borrowed; NULL: user frames as raw addresses */
        const ServiceState *state;        /* what the owner knows now (backend, uptime, source counters) */
        History *history;               /* borrowed; NULL: the document has no history */
        const Coldness *coldness;       /* borrowed: the access rounds; NULL: none */
        long page_size;
        bool sort_by_peak;              /* the stack trees keep their biggest children by peak, not current */
        uint64_t now_nsec;              /* CLOCK_MONOTONIC time the leak view's ages count to; 0: now */
} DocumentInput;

/* The document, with kernel addresses as root sees them. 0 with a new reference in *ret, or -ENOMEM. */
int document_build(const DocumentInput *in, json_t **ret);

/*
 * Builds the document and writes the reports of o (report_render()) to path: a regular file (or a new
 * one) is replaced whole by a rename, so a reader never sees half a report; anything else (/dev/console,
 * a FIFO) is written in place. NULL path: standard output. Logs the outcome. 0 or -errno: -EPIPE when no
 * process reads the FIFO (or pipe) at path, -ECANCELED when SIGTERM or SIGINT came while waiting for one to
 * read.
 */
int document_write_reports(const DocumentInput *in, const ReportOptions *o, const char *path);
