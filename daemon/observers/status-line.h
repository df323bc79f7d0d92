/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * StatusLine: once a second, the event rate (averaged over the last five seconds) and the one line of
 * state `systemctl status memstrackd` shows (sd_notify STATUS=: pages tracked, tasks, events/s, lost).
 */

#include "accounting.h"
#include "observer.h"

typedef struct StatusLine StatusLine;

/* accounting is borrowed. NULL on OOM. */
StatusLine *status_line_new(Accounting *accounting, long page_size);
StatusLine *status_line_free(StatusLine *s);

/* Events per second over the last seconds ticked, 0 before two ticks. */
double status_line_events_per_second(const StatusLine *s);

/* The observer to register with the Manager (its tick samples and notifies); it frees s. */
EventObserver *status_line_observer(StatusLine *s);
