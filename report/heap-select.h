/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The processes of a recorded heap document and which of them the heap formats report in full.
 *
 * memstrackctl record keeps the Heap reply under "heap" (one HeapImage per process image: a process that
 * execs is two) and the pid of the process it started under "heapCommandPid" beside it. heap_processes
 * lists every heap; heap_maximum, heap_leaks and the HTML page show in full the command's heaps and those
 * holding at least heap_min_share percent of the total maximum (the sum of each heap's own maximum),
 * unless the options choose others: --all every one, --process by pid or comm, --task one pid.
 * Every json_t here is borrowed from the document.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "report.h"

typedef struct HeapSelection {
        const ReportOptions *options;   /* borrowed */
        json_t *heaps;                  /* the HeapImages; NULL when the document has none */
        int64_t command_pid;            /* -1: not a recording of a command (a daemon's document) */
        bool command_pid_recorded;      /* the document names it (else it is the first heap's, see below) */
        uint64_t total_peak_bytes;      /* the sum of each heap's own maximum */
} HeapSelection;

/* What o chooses among the heaps of doc. A record's document written before record kept the command's
 * pid counts its first heap's (the lowest serial: the command is the first process to load the library)
 * as the command's. */
void heap_selection_init(json_t *doc, const ReportOptions *o, HeapSelection *ret);

/* Whether the heap formats show heap h in full. */
bool heap_selection_shows(const HeapSelection *s, const json_t *h);
bool heap_selection_is_command(const HeapSelection *s, const json_t *h);
/* h's maximum as a percentage of the total maximum. */
double heap_selection_share(const HeapSelection *s, const json_t *h);
/* How many heaps the heap formats leave out. */
size_t heap_selection_hidden(const HeapSelection *s);

/* The first word of --process (the words of each comma list in turn) that names no heap, NULL when each
 * names one; *ret_len is its length (it is not NUL-terminated at a comma). */
const char *heap_selection_unmatched(const HeapSelection *s, size_t *ret_len);

/* The heaps by maximum, biggest first (equal ones in the document's order). *ret is a new array of
 * borrowed pointers, the caller frees it. 0 or -ENOMEM. */
int heap_selection_by_peak(const HeapSelection *s, json_t ***ret, size_t *ret_n);

/* Whether any of h's stacks was sampled: a heap of fewer bytes than a few sample intervals may have none,
 * all its bytes then being under the root's "[not sampled]". */
bool heap_is_sampled(const json_t *h);
