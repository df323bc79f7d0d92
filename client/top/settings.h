/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the live view remembers per user: the view, each view's sort column and tree, the chart and the
 * share of the machine's memory that marks a row, in $XDG_CONFIG_HOME/memstrack/top.conf (by default
 * ~/.config/memstrack/top.conf), one "key=value" a line. Read at start, written when top quits. A value
 * that does not parse is ignored (the default stays), so an edited or older file never stops top. No
 * curses.
 */

#include "model.h"

/* The file's path (new string): NULL without $XDG_CONFIG_HOME and $HOME, or on OOM. */
char *top_settings_path(void);
/* Applies the settings in text to m. Returns how many lines were taken. */
int top_settings_parse(TopModel *m, const char *text);
/* Reads path into m: 0, -ENOENT when there is no file yet, other -errno. */
int top_settings_load(TopModel *m, const char *path);
/* The settings of m as the file's text (new string), NULL on OOM. */
char *top_settings_format(const TopModel *m);
/* Writes them to path atomically, making its folder: 0 or -errno. */
int top_settings_save(const TopModel *m, const char *path);
