/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Being asked to stop (SIGTERM, SIGINT) while busy outside the event loop: reading the input at start,
 * writing the report at exit. main.c blocks both signals for sd-event, so they wait as pending signals
 * until someone takes them; these helpers only look, and leave them pending. A process that does not
 * block them is stopped by them as usual, and never sees them here.
 */

#include <poll.h>

/* A new descriptor (a signalfd, close-on-exec, non-blocking) that polls readable while SIGTERM or SIGINT
 * is pending. -errno. */
int stop_signal_fd(void);

/* The stop signal pending, SIGTERM or SIGINT, or 0. */
int stop_signal_pending(void);

/* Waits until fd is ready for events (POLLIN, POLLOUT) or a stop signal is pending (stop_fd, from
 * stop_signal_fd(); -EBADF: only fd). 0 when fd is ready (or hung up), -ECANCELED when asked to stop,
 * -errno. */
int stop_signal_wait(int fd, short events, int stop_fd);
