/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The summary memstrackd writes on SIGUSR1 and when it stops: top tasks, modules and units by peak, totals,
 * lost events, uptime. As text for a person, and as one structured journal entry whose fields scripts
 * can query (journalctl MESSAGE_ID=... -o json).
 */

#include <stdint.h>

#include "view.h"

/* The fixed MESSAGE_ID of summary entries. */
#define SUMMARY_MESSAGE_ID "8f3c1b2e6a7d4c59b0e4a1d2c3f4e5a6"
#define SUMMARY_TOP_N 5

typedef struct SummaryInput {
        Accounting *accounting;
        const EventSourceStats *source;         /* may be NULL */
        uint64_t uptime_usec;
        const char *reason;                     /* "shutdown", "SIGUSR1" */
        const char *unit;                       /* systemd unit to attribute the entry to, or NULL */
        long page_size;
} SummaryInput;

/* The readable text, several lines. Returns NULL on OOM; the caller frees. */
char *summary_format(const SummaryInput *in);
/* Sends the summary: one structured journal entry when journal is true, else lines on stderr. */
int summary_log(const SummaryInput *in, bool journal);
