/* SPDX-License-Identifier: MIT */

/* Which recorded heaps the heap formats report in full (heap-select.h). */

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "heap-select.h"
#include "macro.h"
#include "parse-util.h"
#include "reply.h"
#include "report-select.h"

/* The kernel keeps a comm in 16 bytes with its NUL: a longer name is matched by what the kernel kept. */
#define HEAP_COMM_MAX 15

static bool word_is_pid(const char *word, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (!isdigit((unsigned char) word[i]))
                        return false;
        return len > 0;
}

static bool heap_matches_word(const json_t *h, const char *word, size_t len) {
        const char *comm = reply_string(h, "comm") ?: "";
        size_t comm_len = strlen(comm);

        if (word_is_pid(word, len)) {
                char pid[16];
                uint64_t v;
                if (len >= sizeof(pid))
                        return false;
                memcpy(pid, word, len);
                pid[len] = '\0';
                return parse_uint64(pid, 0, INT32_MAX, &v) >= 0 && reply_int(h, "pid", -1) == (int64_t) v;
        }
        if (len > HEAP_COMM_MAX && comm_len == HEAP_COMM_MAX)
                len = HEAP_COMM_MAX;
        return comm_len == len && strncmp(comm, word, len) == 0;
}

/* Calls match(word, len) on each word of --process, in order, until it returns true; returns that word. */
static const char *find_word(const ReportOptions *o, bool (*match)(const char *, size_t, const void *),
                const void *userdata, size_t *ret_len) {
        for (size_t i = 0; i < o->n_heap_processes; i++)
                for (const char *p = o->heap_processes[i]; *p;) {
                        size_t len = strcspn(p, ",");
                        if (len > 0 && match(p, len, userdata)) {
                                if (ret_len)
                                        *ret_len = len;
                                return p;
                        }
                        p += len + (p[len] == ',');
                }
        return NULL;
}

static bool word_matches_heap(const char *word, size_t len, const void *userdata) {
        return heap_matches_word(userdata, word, len);
}

static bool word_matches_none(const char *word, size_t len, const void *userdata) {
        const HeapSelection *s = userdata;
        json_t *h;
        size_t i;

        json_array_foreach(s->heaps, i, h)
                if (heap_matches_word(h, word, len))
                        return false;
        return true;
}

void heap_selection_init(json_t *doc, const ReportOptions *o, HeapSelection *ret) {
        json_t *heaps = reply_array(reply_object(doc, "heap"), "heaps"), *h, *first = NULL;
        json_t *recorded = json_object_get(doc, "heapCommandPid");
        uint64_t total = 0;
        size_t i;

        assert(o);
        assert(ret);

        json_array_foreach(heaps, i, h) {
                total += reply_count(h, "peakBytes");
                if (!first || reply_int(h, "serial", 0) < reply_int(first, "serial", 0))
                        first = h;
        }
        *ret = (HeapSelection) {
                .options = o,
                .heaps = heaps,
                .command_pid = -1,
                .total_peak_bytes = total,
        };
        if (json_is_integer(recorded)) {
                ret->command_pid = json_integer_value(recorded);
                ret->command_pid_recorded = true;
        } else if (first && report_doc_stacks_are_heaps(doc))
                /* A record's file from before "heapCommandPid": the command loads the library first, so
                 * the daemon numbers its heap first. A daemon's own document (--heap-socket) has no command. */
                ret->command_pid = reply_int(first, "pid", -1);
}

bool heap_selection_is_command(const HeapSelection *s, const json_t *h) {
        return s->command_pid >= 0 && reply_int(h, "pid", -1) == s->command_pid;
}

double heap_selection_share(const HeapSelection *s, const json_t *h) {
        return s->total_peak_bytes > 0 ? 100.0 * (double) reply_count(h, "peakBytes") / (double) s->total_peak_bytes :
                                         0.0;
}

bool heap_selection_shows(const HeapSelection *s, const json_t *h) {
        const ReportOptions *o = s->options;

        if (o->pid >= 0)
                return reply_int(h, "pid", -1) == o->pid;
        if (o->heap_all)
                return true;
        if (o->n_heap_processes > 0)
                return find_word(o, word_matches_heap, h, NULL) != NULL;
        if (heap_selection_is_command(s, h))
                return true;
        /* peak / total >= share / 100, in integers: a heap exactly at the share is in. */
        return s->total_peak_bytes > 0 &&
               (unsigned __int128) reply_count(h, "peakBytes") * 100 >=
                       (unsigned __int128) s->total_peak_bytes * o->heap_min_share;
}

size_t heap_selection_hidden(const HeapSelection *s) {
        json_t *h;
        size_t i, n = 0;

        json_array_foreach(s->heaps, i, h)
                n += !heap_selection_shows(s, h);
        return n;
}

const char *heap_selection_unmatched(const HeapSelection *s, size_t *ret_len) {
        return find_word(s->options, word_matches_none, s, ret_len);
}

int heap_selection_by_peak(const HeapSelection *s, json_t ***ret, size_t *ret_n) {
        size_t n = json_array_size(s->heaps), i;
        _cleanup_free_ ReportItem *items = calloc(MAX(n, (size_t) 1), sizeof(ReportItem));
        json_t **heaps = calloc(MAX(n, (size_t) 1), sizeof(json_t *)), *h;

        if (!items || !heaps) {
                free(heaps);
                return -ENOMEM;
        }
        json_array_foreach(s->heaps, i, h)
                items[i] = (ReportItem) { h, reply_count(h, "peakBytes"), i };
        qsort(items, n, sizeof(ReportItem), report_compare_items);
        for (i = 0; i < n; i++)
                heaps[i] = items[i].json;
        *ret = heaps;
        *ret_n = n;
        return 0;
}

bool heap_is_sampled(const json_t *h) {
        json_t *child;
        size_t i;

        json_array_foreach(reply_array(reply_object(h, "root"), "children"), i, child)
                if (!streq(reply_string(child, "frame") ?: "", "[not sampled]"))
                        return true;
        return false;
}
