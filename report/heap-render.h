/* SPDX-License-Identifier: MIT */
#pragma once

/* The heap formats (heap_maximum, heap_leaks) of a snapshot document with user-space heaps (report.h). */

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "report.h"

/* Whether the document holds heaps (the Heap reply under "heap"). */
bool heap_document(json_t *doc);

/* The heaps of doc (o->pid: one process's), at their maximum or what was never freed (leaks), as text.
 * A document without heaps says so. -ESRCH when o->pid recorded none, -ENOMEM. */
int heap_render_text(json_t *doc, const ReportOptions *o, bool leaks, FILE *f);
/* The same as JSON (new reference): one object per heap with its call sites and tree; null without heaps. */
int heap_render_json(json_t *doc, const ReportOptions *o, bool leaks, json_t **ret);
