/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the families of report formats share: finding things in a snapshot document, choosing the
 * entries a report shows (the biggest, cut at the throttle share and at top=N, as memstrack cuts them)
 * and the stack tree it is about. Every json_t returned is borrowed from the document unless said.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "report.h"

/* Levels below the root any tree is cut at; the daemon sends at most 255. */
#define REPORT_DEPTH_MAX 255

/* One entry chosen for a report. */
typedef struct ReportItem {
        json_t *json;           /* borrowed */
        uint64_t key;           /* current or peak pages, as the report sorts */
        size_t index;           /* position in the input: keeps equal keys in the daemon's order */
} ReportItem;

/* For qsort() of ReportItems: the biggest key first, equal keys in their input order. */
int report_compare_items(const void *a, const void *b);

/* Borrowed value or JSON null, for json_pack()'s "O" which takes no NULL. */
static inline json_t *report_or_null(json_t *v) {
        return v ?: json_null();
}

/* ceil(total * percent / 100) without overflow. */
uint64_t report_throttle_limit(uint64_t total, unsigned percent);

/*
 * The entries of array with a non-zero key, biggest first, cut at o->throttle percent of their sum the
 * way memstrack's --throttle cuts (entries are taken while the ones taken so far hold less than the
 * limit), and at max entries unless max is 0. *ret is malloc'ed. 0 or -ENOMEM.
 */
int report_select_items(json_t *array, const ReportOptions *o, unsigned max, ReportItem **ret,
                size_t *ret_n);

/* Status pageSize, 4096 if the document does not say. */
uint64_t report_doc_page_size(json_t *doc);

/* The StackTree reply kept in list ("taskStacks" or "moduleStacks") for the task (key "pid") or module
 * (key "name") value, or NULL. */
json_t *report_doc_scoped_tree(json_t *doc, const char *list, const char *key, json_t *value);

/* The tasks (or modules) a *_summary / *_top report lists, as items: the focused one (o->pid,
 * o->module), or those with pages that make up the throttle share, at most max of them (0: no limit).
 * 0, -ESRCH (no such task), -ENOENT (no such module), -ENOMEM. */
int report_doc_select(json_t *doc, const ReportOptions *o, bool tasks, unsigned max, ReportItem **ret,
                size_t *ret_n);

/* The units a unit_* report lists, as items: those with pages that make up the throttle share. Returns 1
 * (nothing in *ret) when the document has no units at all (taken from a memstrackd without Units, or by
 * an earlier memstrackctl: not the same as an empty list), which each format says in its own way; else 0
 * or -ENOMEM. */
int report_doc_select_units(json_t *doc, const ReportOptions *o, unsigned max, ReportItem **ret,
                size_t *ret_n);

/* The stack tree the report is about (everything, the --task's or the --module's), pruned by the
 * options (report_prune_tree()); for a flame graph (by_function) with frames merged by function first,
 * unless o->offsets. A recorded heap's document (report_doc_stacks_are_heaps()) gives its heaps instead,
 * at their maximum, counted in bytes: the tree's root says "unit": "bytes" (frames named "function
 * file:line"). *ret is a new reference. 0, -ESRCH, -ENOENT, -ENOMEM. */
int report_doc_pruned_tree(json_t *doc, const ReportOptions *o, bool by_function, json_t **ret);
/* The heaps of the document (pid's only, unless -1) at their maximum as one stack tree counting bytes
 * (currentPages, selfPages) and blocks (currentBlocks), "unit": "bytes" at its root: a heap's own root, or
 * a "[heaps]" root above several; frames named by report_heap_frame_label(). -ESRCH if none,
 * -ENOMEM. */
int report_doc_heap_tree(json_t *doc, int64_t pid, json_t **ret);
/* A HeapNode's frame as every heap view names it: "function  file:line", the function's inlined callers
 * after it ("(inlined into caller  file:line)"); the frame as StackTree names it when DWARF knows nothing. */
char *report_heap_frame_label(const json_t *node);
/* The same from the level-th function the frame's code was inlined into on (0: the frame's own function,
 * as report_heap_frame_label()): "caller  file:line" and the functions that one was inlined into. NULL past
 * the last, or on OOM. */
char *report_heap_frame_label_at(const json_t *node, size_t level);
/* Whether the stack formats show the document's heaps: it has some and its page stack tree holds nothing
 * (memstrackctl record's). */
bool report_doc_stacks_are_heaps(json_t *doc);

/* memstrack's MB: pages * page_size / 2^20. */
double report_megabytes(uint64_t pages, uint64_t page_size);

/* Reports of stacks from sampled ones (Status stackSampleInterval above 1) say so first, as every stack
 * view does: their pages per stack are an estimate scaled to the exact counts. */
void report_print_stack_sampling(json_t *doc, FILE *f);
