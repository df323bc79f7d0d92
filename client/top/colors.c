/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "colors.h"
#include "macro.h"

static bool enabled;

/* Foreground on the terminal's own background (-1 after use_default_colors()), and what is added to it. */
static const struct {
        short fg;
        int attr;               /* with colours */
        int mono;               /* without */
} roles[_TOP_COLOR_MAX] = {
        [TOP_COLOR_NORMAL]        = { -1, A_NORMAL, A_NORMAL },
        [TOP_COLOR_GROWING]       = { COLOR_RED, A_NORMAL, A_NORMAL },
        [TOP_COLOR_SHRINKING]     = { COLOR_GREEN, A_NORMAL, A_NORMAL },
        [TOP_COLOR_EXITED]        = { COLOR_BLUE, A_NORMAL, A_DIM },
        [TOP_COLOR_HIGH]          = { COLOR_MAGENTA, A_BOLD, A_BOLD },
        [TOP_COLOR_TRACKED]       = { COLOR_RED, A_BOLD, A_NORMAL },
        [TOP_COLOR_SLAB]          = { COLOR_MAGENTA, A_NORMAL, A_NORMAL },
        [TOP_COLOR_CACHE]         = { COLOR_YELLOW, A_NORMAL, A_NORMAL },
        [TOP_COLOR_USED]          = { COLOR_GREEN, A_NORMAL, A_NORMAL },
        [TOP_COLOR_LABEL]         = { COLOR_CYAN, A_BOLD, A_BOLD },
        [TOP_COLOR_LOST]          = { COLOR_RED, A_BOLD, A_BOLD | A_REVERSE },
        [TOP_COLOR_HEALTHY]       = { COLOR_GREEN, A_NORMAL, A_NORMAL },
        [TOP_COLOR_TREE]          = { COLOR_CYAN, A_NORMAL, A_NORMAL },
        [TOP_COLOR_CHART_CURRENT] = { COLOR_GREEN, A_NORMAL, A_NORMAL },
        [TOP_COLOR_CHART_PEAK]    = { COLOR_RED, A_BOLD, A_BOLD },
        [TOP_COLOR_AXIS]          = { COLOR_CYAN, A_NORMAL, A_NORMAL },
};

void top_colors_start(void) {
        const char *no_color = getenv("NO_COLOR");

        /* NO_COLOR set to anything but the empty string turns colours off. */
        enabled = has_colors() && !(no_color && no_color[0]) && start_color() != ERR && COLOR_PAIRS > _TOP_COLOR_MAX;
        if (!enabled)
                return;
        /* The terminal's own background (not black) where it allows it. */
        bool default_colors = use_default_colors() != ERR;
        for (size_t i = 1; i < _TOP_COLOR_MAX; i++)
                (void) init_pair((short) i, roles[i].fg, default_colors ? -1 : COLOR_BLACK);
}

int top_color(TopColor c) {
        if (c <= TOP_COLOR_NORMAL || c >= _TOP_COLOR_MAX)
                return A_NORMAL;
        return enabled ? (int) COLOR_PAIR(c) | roles[c].attr : roles[c].mono;
}
