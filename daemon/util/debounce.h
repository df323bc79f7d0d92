/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Debounce: runs a callback once, a quiet moment after the last of a burst of requests, on an sd-event
 * loop. A burst that never pauses still gets a run max_delay_usec after its first request. Used for the
 * kallsyms reload after module loads: udev loading fifty modules at boot costs one reload, not fifty.
 */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

typedef struct Debounce Debounce;

/* The work: it logs its own failures. */
typedef void (*DebounceFn)(void *userdata);

/* description names the timer source. Returns -errno. */
int debounce_new(sd_event *e, const char *description, uint64_t delay_usec, uint64_t max_delay_usec,
                DebounceFn fn, void *userdata, Debounce **ret);
Debounce *debounce_free(Debounce *d);

/* Asks for a run: delay_usec from now, but no later than max_delay_usec after the first pending request. */
int debounce_request(Debounce *d);
bool debounce_pending(const Debounce *d);
/* CLOCK_MONOTONIC time the pending run is due; 0 if none is pending. */
uint64_t debounce_due_usec(const Debounce *d);
/* Runs the callback now if a request is pending. */
void debounce_flush(Debounce *d);
/* Times the callback ran. */
uint64_t debounce_runs(const Debounce *d);
