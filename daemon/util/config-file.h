/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * memstrackd's configuration file: one "key=value" per line, keys being the daemon's long option names
 * (callchain-depth=32, log-level=debug). Blank lines and lines starting with '#' are skipped; spaces
 * around keys and values are trimmed. The parser only splits lines: what a key means, and whether it is
 * known at all, is the handler's business (main.c maps keys to the command line options).
 */

#include <stdio.h>

/*
 * Called once per "key=value" line, in file order. line is 1-based, for messages. A negative return
 * stops the parse and is returned by config_file_parse(); 0 goes on.
 */
typedef int (*ConfigFileHandler)(const char *path, unsigned line, const char *key, const char *value,
                                 void *userdata);

/*
 * Parses f, naming it path in messages. Lines without '=' or with an empty key are logged as warnings
 * and skipped. Returns 0, a handler's negative return, or -errno if reading fails.
 */
int config_file_parse(FILE *f, const char *path, ConfigFileHandler handler, void *userdata);

/* Opens and parses path. Returns -ENOENT if it does not exist, so callers decide whether that matters;
 * -EBADFD if it is not a regular file (file-util.h): a FIFO or a device is never read. */
int config_file_read(const char *path, ConfigFileHandler handler, void *userdata);
