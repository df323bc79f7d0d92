/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The user-symbol sessions' observer: a cached session (usym.h) names the frames of one process image, so
 * it is dropped when its process exits or execs (a TASK_COMM of the leader), never used past them.
 */

#include "observer.h"
#include "usym.h"

/* An observer for usym (borrowed; it must outlive the observer), freed by its free hook. NULL on OOM. */
EventObserver *user_symbols_observer_new(UserSymbols *usym);
