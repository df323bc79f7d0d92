/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the live view's colours mean. Each role is a curses attribute: a colour pair where the terminal
 * has colours and NO_COLOR is not set (https://no-color.org), else a monochrome attribute (bold, dim or
 * none) so that nothing depends on colour alone: the STATE column still says "exited", the meter and the
 * chart still draw with distinct characters.
 */

#include <stdbool.h>

#include "curses.h"

typedef enum TopColor {
        TOP_COLOR_NORMAL,
        TOP_COLOR_GROWING,      /* a row's current pages rose since the last update */
        TOP_COLOR_SHRINKING,    /* ... fell */
        TOP_COLOR_EXITED,       /* an exited task, a removed unit, an unloaded module */
        TOP_COLOR_HIGH,         /* holding at least the high share of the machine's memory */
        TOP_COLOR_TRACKED,      /* the meter: memstrack's pages */
        TOP_COLOR_SLAB,         /* ... slab */
        TOP_COLOR_CACHE,        /* ... page cache and buffers */
        TOP_COLOR_USED,         /* ... the rest in use */
        TOP_COLOR_LABEL,        /* the meters' labels */
        TOP_COLOR_LOST,         /* events lost: the daemon missed some */
        TOP_COLOR_HEALTHY,      /* the event rate with nothing lost */
        TOP_COLOR_TREE,         /* tree guide lines */
        TOP_COLOR_CHART_CURRENT,
        TOP_COLOR_CHART_PEAK,
        TOP_COLOR_AXIS,
        _TOP_COLOR_MAX,
} TopColor;

/* Decides colour or monochrome for the screen just started, and sets the pairs up. */
void top_colors_start(void);
/* The attribute of a role. */
int top_color(TopColor c);
