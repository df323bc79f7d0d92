/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The one place that includes curses (as htop's ProvideCurses.h): widgets and the screen code include
 * this header, the model never does. ncursesw, for UTF-8 task names and frames.
 */

#include <ncursesw/curses.h>
