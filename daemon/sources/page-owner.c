/* SPDX-License-Identifier: MIT */

/*
 * The page-owner source: imports a page_owner log (--source-input=PATH, "-" for standard input), so a dump
 * taken on any machine, a kdump kernel's or a customer's, gets the views of live tracing: pages per process
 * (tgid), per module and per call chain. Never picked by "auto".
 *
 * What it reads (the kernel's format strings in mm/page_owner.c and tools/mm/page_owner_sort.c):
 *
 *   /sys/kernel/debug/page_owner, one record per allocated block, ended by a blank line:
 *     Page allocated via order N, mask 0xM(FLAGS)[, pid P[, tgid T (COMM)], ts N ns[, free_ts N ns]]
 *     PFN N type ... Block N type ... Flags ...        (decimal PFN in older kernels, 0x-hex today)
 *      frame                                          (one per line: " func+0xoff/0xsize [module]")
 *     Page has been migrated, last migrate reason: ... / Slab cache page / Charged ... memcg ... / handle: N
 *   page_owner_sort's output: "N times[, M pages][, allocated by ...]:" and a record without its PFN
 *     line; culled by task or stack: "N times, M pages[, PID P][, TGID T][, task_comm_name: C]..." and,
 *     culled by stack, ":" and the frames;
 *   /sys/kernel/debug/page_owner_stacks/show_stacks: frames, [handle: N], nr_base_pages: N, blank line.
 *
 * A record with its PFN becomes a page allocation; aggregated ones (counts, show_stacks) become
 * aggregated samples (MsSampleEvent) of their pages. Records of kernels that do not record the task
 * (before 5.11) and show_stacks' are charged to pid 0, named "[unknown]".
 *
 * Frames arrive as text from a kernel that is usually not the running one, so they are not looked up in
 * /proc/kallsyms: every (function, module) the file names gets an address range of its own, and the
 * source hands the manager a symbol table in kallsyms format naming those ranges (symbols()). Modules are
 * thereby the ones the frames name ("[module]"), and the stack tree shows the functions and offsets as
 * the file has them.
 *
 * The file is read twice: once when the source is built, to check it and name every function, and once
 * by start(), which delivers every event at once, stamped with the time of delivery. What cannot be read
 * twice the same (standard input, a pipe or FIFO, the debugfs file itself) is copied to a temporary file
 * as the first reading goes. Anything else that is not a regular file (a device, a socket) is refused.
 * A record that cannot be read (a garbled line, a truncated end) is skipped with a warning naming its
 * line, counted (Status lostByReason "badRecord"), and everything else is imported; a file with no
 * record at all is refused, and so is one whose first PO_FIRST_RECORD_BYTES hold none, without reading
 * on. Input may be endless (/dev/urandom through a pipe): it is read up to PO_INPUT_MAX_BYTES, and both
 * readings stop at SIGTERM or SIGINT (-ECANCELED, which memstrackd takes as a stop before tracing).
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format-util.h"
#include "frame-text.h"
#include "line-reader.h"
#include "log.h"
#include "macro.h"
#include "source.h"
#include "stop-signal.h"
#include "time-util.h"

/* Synthetic symbols: the i-th function the file names starts at BASE + i * STRIDE. An offset must be
 * below STRIDE (16 MiB; no kernel function comes near). */
#define PO_SYMBOL_BASE UINT64_C(0xffff000000000000)
#define PO_SYMBOL_STRIDE (UINT64_C(1) << 24)
#define PO_SYMBOLS_MAX (1u << 24)
/* page_owner keeps 16 frames; a few more allow other tools' output, and bound a record. */
#define PO_FRAMES_MAX 256u
/* Bad records shown one by one; the rest are counted. */
#define PO_WARNINGS_MAX 20u
/* The most input read: the dump of a machine with 1 TiB in single pages (a record is some 800 bytes),
 * and a bound on input that does not end. */
#define PO_INPUT_MAX_BYTES (UINT64_C(256) << 30)
/* A page_owner log starts with a record: input whose first MiB holds none is not one. */
#define PO_FIRST_RECORD_BYTES (UINT64_C(1) << 20)
/* No line of page_owner, or of the tools that sort it, comes near this; a longer one is cut and its
 * record is bad. */
#define PO_LINE_MAX (64u * 1024u)
#define PO_UNKNOWN_COMM "[unknown]"

typedef struct PoSymbol {
        char *name;                     /* owned */
        char *module;                   /* owned; NULL for the kernel image */
} PoSymbol;

/* The record being read. */
typedef struct PoRecord {
        unsigned first_line;
        bool open;
        bool header;                    /* "Page allocated via ..." read */
        bool counted;                   /* "N times ..." read: an aggregate */
        bool stacks_only;               /* a show_stacks block */
        bool one_line;                  /* a culled aggregate without frames: complete as it is */
        bool has_pfn, has_pages, has_task;
        uint64_t times, pages, pfn, gfp;
        uint32_t order;
        int32_t pid, tgid;
        char comm[64];
        uint64_t frames[PO_FRAMES_MAX];
        size_t n_frames;
        unsigned bad_line;              /* the first line that was wrong; 0: none */
        const char *bad_reason;         /* static */
} PoRecord;

typedef struct PageOwnerSource {
        EventSource source;             /* first, so the vtable's EventSource* is this */
        char *path;                     /* owned: what messages call the input */
        int fd;                         /* the input: owned, or standard input's (not closed) */
        bool fd_owned;
        FILE *copy;                     /* owned: what was read of an input that cannot be read twice */
        int stop_fd;                    /* owned: stop_signal_fd() */

        PoSymbol *symbols;              /* owned: the functions the file names, by first appearance */
        size_t n_symbols, n_symbols_allocated;
        uint32_t *symbol_slots;         /* owned: open-addressing table of symbol index + 1 (0: empty) */
        size_t n_symbol_slots;
        char *kallsyms;                 /* owned: the symbols as kallsyms text, once the file is checked */
        size_t n_table_symbols;         /* how many symbols kallsyms names */

        uint32_t *tgid_slots;           /* owned: tgid + 1 of the processes already named (0: empty) */
        size_t n_tgid_slots, n_tgids;

        uint64_t checked;               /* good records found by the first pass */
        uint64_t records, pages, bad_records;
        EventSourceLoss losses[1];
} PageOwnerSource;

static uint64_t hash_bytes(uint64_t h, const char *s) {
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

static uint64_t symbol_hash(const char *name, const char *module) {
        return hash_bytes(hash_bytes(UINT64_C(0xcbf29ce484222325), name) * 31 + 1, module ?: "");
}

static bool symbol_is(const PoSymbol *s, const char *name, const char *module) {
        return streq(s->name, name) && streq(s->module ?: "", module ?: "");
}

static int symbols_grow(PageOwnerSource *s) {
        size_t n = MAX(s->n_symbol_slots * 2, (size_t) 1024);
        uint32_t *slots = calloc(n, sizeof(uint32_t));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_symbols; i++) {
                size_t j = symbol_hash(s->symbols[i].name, s->symbols[i].module) & (n - 1);

                while (slots[j] != 0)
                        j = (j + 1) & (n - 1);
                slots[j] = (uint32_t) i + 1;
        }
        free(s->symbol_slots);
        s->symbol_slots = slots;
        s->n_symbol_slots = n;
        return 0;
}

/* The index of (name, module), added if new. */
static int symbol_intern(PageOwnerSource *s, const char *name, const char *module, uint32_t *ret) {
        size_t j;
        int r;

        if ((s->n_symbols + 1) * 2 > s->n_symbol_slots) {
                r = symbols_grow(s);
                if (r < 0)
                        return r;
        }
        j = symbol_hash(name, module) & (s->n_symbol_slots - 1);
        for (; s->symbol_slots[j] != 0; j = (j + 1) & (s->n_symbol_slots - 1))
                if (symbol_is(&s->symbols[s->symbol_slots[j] - 1], name, module)) {
                        *ret = s->symbol_slots[j] - 1;
                        return 0;
                }

        if (s->n_symbols >= PO_SYMBOLS_MAX)
                return -E2BIG;
        if (greedy_realloc(&s->symbols, &s->n_symbols_allocated, s->n_symbols + 1, sizeof(PoSymbol), 256) < 0)
                return -ENOMEM;
        PoSymbol *sym = &s->symbols[s->n_symbols];
        *sym = (PoSymbol) { .name = strdup(name), .module = module ? strdup(module) : NULL };
        if (!sym->name || (module && !sym->module)) {
                free(sym->name);
                free(sym->module);
                return -ENOMEM;
        }
        s->symbol_slots[j] = (uint32_t) ++s->n_symbols;
        *ret = (uint32_t) (s->n_symbols - 1);
        return 0;
}

/* Whether tgid was seen before; remembers it. -ENOMEM. */
static int tgid_seen(PageOwnerSource *s, int32_t tgid) {
        uint32_t key = (uint32_t) tgid + 1;
        size_t j;

        if ((s->n_tgids + 1) * 2 > s->n_tgid_slots) {
                size_t n = MAX(s->n_tgid_slots * 2, (size_t) 256);
                uint32_t *slots = calloc(n, sizeof(uint32_t));

                if (!slots)
                        return -ENOMEM;
                for (size_t i = 0; i < s->n_tgid_slots; i++)
                        if (s->tgid_slots[i] != 0) {
                                for (j = (s->tgid_slots[i] * UINT64_C(0x9e3779b97f4a7c15)) >> 40 & (n - 1);
                                     slots[j] != 0; j = (j + 1) & (n - 1))
                                        ;
                                slots[j] = s->tgid_slots[i];
                        }
                free(s->tgid_slots);
                s->tgid_slots = slots;
                s->n_tgid_slots = n;
        }
        for (j = (key * UINT64_C(0x9e3779b97f4a7c15)) >> 40 & (s->n_tgid_slots - 1); s->tgid_slots[j] != 0;
             j = (j + 1) & (s->n_tgid_slots - 1))
                if (s->tgid_slots[j] == key)
                        return 1;
        s->tgid_slots[j] = key;
        s->n_tgids++;
        return 0;
}

/* A decimal number (hex with 0x) at *p, advancing *p past it. */
static int parse_uint(const char **p, uint64_t max, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!(**p >= '0' && **p <= '9'))
                return -EINVAL;
        errno = 0;
        v = strtoull(*p, &end, 0);
        if (errno != 0 || v > max)
                return -EINVAL;
        *p = end;
        *ret = v;
        return 0;
}

static int expect(const char **p, const char *text) {
        if (!startswith(*p, text))
                return -EINVAL;
        *p += strlen(text);
        return 0;
}

/*
 * "Page allocated via order N, mask 0xM[(FLAGS)][, pid P[, tgid T (COMM)], ts N ns[, free_ts N ns]]".
 * COMM is what the task called itself: any bytes, ")" and ", ts " included, so it ends at the last
 * "), ts ".
 */
static int parse_header(PoRecord *rec, const char *line) {
        const char *p = line;
        uint64_t v;
        int r;

        r = expect(&p, "Page allocated via order ");
        if (r >= 0)
                r = parse_uint(&p, MS_EVENT_ORDER_MAX, &v);
        if (r < 0)
                return r;
        rec->order = (uint32_t) v;
        r = expect(&p, ", mask ");
        if (r >= 0)
                r = parse_uint(&p, UINT64_MAX, &rec->gfp);
        if (r < 0)
                return r;
        if (*p == '(') {
                p = strchr(p, ')');
                if (!p)
                        return -EINVAL;
                p++;
        }
        if (*p == '\0')
                return 0;               /* before 5.11: no task, no time */

        r = expect(&p, ", pid ");
        if (r >= 0)
                r = parse_uint(&p, INT32_MAX, &v);
        if (r < 0)
                return r;
        rec->pid = rec->tgid = (int32_t) v;
        rec->has_task = true;
        if (startswith(p, ", tgid ")) {
                const char *end = NULL;

                p += strlen(", tgid ");
                r = parse_uint(&p, INT32_MAX, &v);
                if (r >= 0)
                        r = expect(&p, " (");
                if (r < 0)
                        return r;
                rec->tgid = (int32_t) v;
                for (const char *q = strstr(p, "), ts "); q; q = strstr(q + 1, "), ts "))
                        end = q;
                if (!end)
                        return -EINVAL;
                (void) snprintf(rec->comm, sizeof(rec->comm), "%.*s", (int) (end - p), p);
                p = end + 1;
        }
        r = expect(&p, ", ts ");
        if (r >= 0)
                r = parse_uint(&p, UINT64_MAX, &v);
        if (r >= 0)
                r = expect(&p, " ns");
        if (r >= 0 && startswith(p, ", free_ts ")) {
                p += strlen(", free_ts ");
                r = parse_uint(&p, UINT64_MAX, &v);
                if (r >= 0)
                        r = expect(&p, " ns");
        }
        if (r < 0)
                return r;
        return *p == '\0' ? 0 : -EINVAL;
}

/*
 * page_owner_sort's head of an aggregate: "N times[, M pages][, allocated by ...][, PID P][, TGID T]
 * [, task_comm_name: C][ (UNRELEASED)][:]". A trailing ':' means lines follow (a record, or frames).
 */
static int parse_count(PoRecord *rec, const char *line) {
        const char *p = line;
        size_t len = strlen(line);
        uint64_t v;
        int r;

        /* Known first, so that a garbled one-liner ends with its line and takes no others with it. */
        rec->counted = true;
        rec->one_line = !(len > 0 && line[len - 1] == ':');
        r = parse_uint(&p, UINT64_MAX, &rec->times);
        if (r >= 0)
                r = expect(&p, " times");
        if (r < 0)
                return r;
        if (startswith(p, ", ") && p[2] >= '0' && p[2] <= '9') {
                p += 2;
                r = parse_uint(&p, UINT64_MAX, &rec->pages);
                if (r >= 0)
                        r = expect(&p, " pages");
                if (r < 0)
                        return r;
                rec->has_pages = true;
        }
        for (;;) {
                if (startswith(p, ", PID ")) {
                        p += strlen(", PID ");
                        r = parse_uint(&p, INT32_MAX, &v);
                        if (r < 0)
                                return r;
                        rec->pid = (int32_t) v;
                        if (!rec->has_task)
                                rec->tgid = rec->pid;
                        rec->has_task = true;
                } else if (startswith(p, ", TGID ")) {
                        p += strlen(", TGID ");
                        r = parse_uint(&p, INT32_MAX, &v);
                        if (r < 0)
                                return r;
                        rec->tgid = (int32_t) v;
                        if (!rec->has_task)
                                rec->pid = rec->tgid;
                        rec->has_task = true;
                } else if (startswith(p, ", task_comm_name: ")) {
                        /* The name runs to what the tool prints after it, if anything. */
                        const char *q = p + strlen(", task_comm_name: "), *end = line + len - !rec->one_line;
                        const char *tail = strstr(q, ", allocated by ");

                        if (!tail)
                                tail = strstr(q, " (UNRELEASED)") ?: strstr(q, " (RELEASED)");
                        if (tail && tail < end)
                                end = tail;
                        (void) snprintf(rec->comm, sizeof(rec->comm), "%.*s", (int) (end - q), q);
                        p = end;
                } else if (startswith(p, ", allocated by ") || startswith(p, ", allocator by ") ||
                           startswith(p, " (UNRELEASED)") || startswith(p, " (RELEASED)")) {
                        /* What allocated the pages, and whether they were freed: nothing to charge. */
                        p = line + len - !rec->one_line;
                } else
                        break;
        }
        if (!rec->one_line && p == line + len - 1)
                p++;
        return *p == '\0' ? 0 : -EINVAL;
}

/* One frame as %pS prints it: "func+0xoff/0xsize [module]" (each part after func optional; "[module
 * buildid]" with build ids), or a bare "0xaddr". Interned, its address into *ret. */
static int parse_frame(PageOwnerSource *s, const char *text, uint64_t *ret) {
        _cleanup_free_ char *name = NULL, *module = NULL;
        uint32_t idx;
        FrameText f;
        int r;

        r = frame_text_parse(text, &f);
        if (r < 0)
                return r;
        /* Another machine's raw address names nothing here: it stands for itself, as a name. */
        if (f.offset >= PO_SYMBOL_STRIDE)
                return -ERANGE;
        name = strndup(f.name, f.name_len);
        if (!name)
                return -ENOMEM;
        if (f.module) {
                module = strndup(f.module, f.module_len);
                if (!module)
                        return -ENOMEM;
        }

        r = symbol_intern(s, name, module, &idx);
        if (r < 0)
                return r;
        /* A function the check did not see: the file changed since. */
        if (s->kallsyms && idx >= s->n_table_symbols)
                return -ESTALE;
        *ret = PO_SYMBOL_BASE + idx * PO_SYMBOL_STRIDE + f.offset;
        return 0;
}

static void record_fail(PoRecord *rec, unsigned line, const char *reason) {
        if (rec->bad_line == 0) {
                rec->bad_line = line;
                rec->bad_reason = reason;
        }
}

/* Names the process (and thread) of rec the first time it is seen, and when its leader speaks. */
static int emit_task(PageOwnerSource *s, const PoRecord *rec, const MsEventSink *sink, uint64_t now) {
        const char *comm = rec->comm[0] ? rec->comm : PO_UNKNOWN_COMM;
        MsEvent ev = { .type = MS_EVENT_TASK_COMM, .timestamp_nsec = now, .pid = rec->tgid };
        int r;

        r = tgid_seen(s, rec->tgid);
        if (r < 0)
                return r;
        if (r == 0 || (rec->pid == rec->tgid && rec->comm[0])) {
                /* The process takes the first name it is seen with, then its leader's. The first naming
                 * is a new task: pid 0 (records without a task) takes no renames in the core. */
                ev.tid = rec->tgid;
                ev.task.name = comm;
                if (r == 0)
                        ev.type = MS_EVENT_TASK_NEW;
                sink->event(sink->userdata, &ev);
                ev.type = MS_EVENT_TASK_COMM;
        }
        if (rec->pid != rec->tgid && rec->comm[0]) {
                ev.tid = rec->pid;
                ev.task.name = comm;
                sink->event(sink->userdata, &ev);
        }
        return 0;
}

/* A record is complete: counts it, or the reason it is bad; delivers it if sink is not NULL. */
static int record_finish(PageOwnerSource *s, PoRecord *rec, const MsEventSink *sink) {
        uint64_t now = now_nsec(CLOCK_MONOTONIC), pages;
        int r;

        if (rec->bad_line == 0) {
                if (rec->stacks_only && !rec->has_pages)
                        record_fail(rec, rec->first_line, "a stack without its nr_base_pages line");
                else if (rec->counted && !rec->one_line && !rec->header && rec->n_frames == 0)
                        record_fail(rec, rec->first_line, "a count without the record it counts");
                else if (!rec->stacks_only && !rec->one_line && rec->n_frames == 0)
                        record_fail(rec, rec->first_line, "a record without its stack");
                else if (rec->counted && !rec->has_pages && !rec->header)
                        record_fail(rec, rec->first_line, "a count without pages or an order");
                else if ((rec->has_pages && rec->pages > MS_PAGES_MAX) ||
                         (rec->counted && !rec->has_pages && rec->times > MS_PAGES_MAX >> rec->order))
                        record_fail(rec, rec->first_line, "more pages than a machine has");
        }
        if (rec->bad_line != 0) {
                if (!sink) {
                        s->bad_records++;
                        if (s->bad_records <= PO_WARNINGS_MAX)
                                log_warning("%s:%u: not a page_owner record (%s), skipping the record.", s->path,
                                            rec->bad_line, rec->bad_reason);
                        if (s->bad_records == PO_WARNINGS_MAX)
                                log_warning("%s: further bad records are counted, not shown.", s->path);
                }
                *rec = (PoRecord) {};
                return 0;
        }

        if (rec->stacks_only || rec->has_pages)
                pages = rec->pages;
        else
                pages = (rec->counted ? rec->times : 1) << rec->order;

        if (sink) {
                MsEvent ev = { .timestamp_nsec = now, .pid = rec->tgid, .tid = rec->pid };

                if (!rec->has_task) {
                        ev.pid = ev.tid = rec->tgid = rec->pid = 0;
                        (void) snprintf(rec->comm, sizeof(rec->comm), "%s", PO_UNKNOWN_COMM);
                }
                r = emit_task(s, rec, sink, now);
                if (r < 0)
                        return r;
                if (rec->header && rec->has_pfn && !rec->counted) {
                        ev.type = MS_EVENT_PAGE_ALLOC;
                        ev.page = (MsPageEvent) {
                                .pfn = rec->pfn,
                                .order = rec->order,
                                .migrate_type = -1,
                                .gfp_flags = rec->gfp,
                                .stack = { rec->frames, (uint32_t) rec->n_frames, (uint32_t) rec->n_frames },
                        };
                } else {
                        ev.type = MS_EVENT_SAMPLE;
                        ev.sample = (MsSampleEvent) {
                                .stack = { rec->frames, (uint32_t) rec->n_frames, (uint32_t) rec->n_frames },
                                .unit = LEDGER_PAGES,
                                .delta = (int64_t) pages,       /* at most MS_PAGES_MAX */
                                .peak = pages,
                        };
                }
                sink->event(sink->userdata, &ev);
                s->records++;
                s->pages = count_add(s->pages, pages);
        } else
                s->checked++;
        *rec = (PoRecord) {};
        return 0;
}

/* One line (without its newline) of the record being read, or the first of a new one. */
static int record_line(PageOwnerSource *s, PoRecord *rec, const char *line, unsigned n) {
        uint64_t v;
        int r;

        if (!rec->open) {
                *rec = (PoRecord) { .open = true, .first_line = n };
                if (startswith(line, "Page allocated via order ")) {
                        if (parse_header(rec, line) < 0)
                                record_fail(rec, n, "a garbled 'Page allocated' line");
                        rec->header = true;
                        return 0;
                }
                if (line[0] >= '0' && line[0] <= '9') {
                        if (parse_count(rec, line) < 0)
                                record_fail(rec, n, "a garbled 'N times' line");
                        return 0;
                }
                if (line[0] == ' ' || line[0] == '\t')
                        rec->stacks_only = true;        /* show_stacks: the frames come first */
                else {
                        record_fail(rec, n, "an unknown line");
                        return 0;
                }
        }
        if (rec->bad_line != 0)
                return 0;               /* skipping to the end of the record */

        if (line[0] == ' ' || line[0] == '\t') {
                if (rec->one_line || (rec->has_pages && rec->stacks_only)) {
                        record_fail(rec, n, "a frame after the record's end");
                        return 0;
                }
                if (rec->n_frames >= PO_FRAMES_MAX) {
                        record_fail(rec, n, "too many frames");
                        return 0;
                }
                r = parse_frame(s, line, &rec->frames[rec->n_frames]);
                if (r == -ENOMEM || r == -E2BIG)
                        return r;
                if (r == -ESTALE)
                        record_fail(rec, n, "a frame the file did not have when it was checked");
                else if (r < 0)
                        record_fail(rec, n, "a garbled frame");
                else
                        rec->n_frames++;
        } else if (startswith(line, "Page allocated via order ") && rec->counted && !rec->header &&
                   !rec->one_line && rec->n_frames == 0) {
                if (parse_header(rec, line) < 0)
                        record_fail(rec, n, "a garbled 'Page allocated' line");
                rec->header = true;
        } else if (startswith(line, "PFN ") && rec->header && !rec->has_pfn && rec->n_frames == 0) {
                const char *p = line + 4;

                if (parse_uint(&p, UINT64_MAX, &rec->pfn) < 0 || (*p != ' ' && *p != '\0'))
                        record_fail(rec, n, "a garbled PFN line");
                rec->has_pfn = true;
        } else if (rec->stacks_only && !rec->has_pages &&
                   (startswith(line, "nr_base_pages: ") || startswith(line, "handle: "))) {
                const char *p = strchr(line, ' ') + 1;

                if (parse_uint(&p, UINT64_MAX, &v) < 0 || *p != '\0')
                        record_fail(rec, n, "a garbled show_stacks line");
                else if (line[0] == 'n') {
                        rec->pages = v;
                        rec->has_pages = true;
                }
        } else if ((rec->header || rec->counted) && rec->n_frames > 0 &&
                   (startswith(line, "Page has been migrated") || startswith(line, "page has been migrated") ||
                    startswith(line, "page last ") || streq(line, "Slab cache page") ||
                    startswith(line, "Charged ") || startswith(line, "handle: "))) {
                /* Migration, slab, memcg and stack depot notes: nothing to charge. */
        } else
                record_fail(rec, n, rec->stacks_only ? "an unknown line in a stack" : "an unknown line");
        return 0;
}

/* Says why the input was not read to its end: a stop signal (-ECANCELED, at notice level) or an error. */
static int read_failed(const PageOwnerSource *s, int r) {
        if (r == -ECANCELED) {
                int sig = stop_signal_pending();

                log_notice("Stopped by SIG%s while reading the page_owner log %s.", sig ? sigabbrev_np(sig) : "?",
                           s->path);
                return r;
        }
        if (r == -EFBIG) {
                char max[32];

                return log_error_errno(r, "%s: more than %s of input, the most a page_owner log is read up to; "
                                       "stopped reading.", s->path, format_bytes(max, sizeof(max), PO_INPUT_MAX_BYTES));
        }
        return log_error_errno(r, "Failed to read %s: %m", s->path);
}

/*
 * Goes through the input: checks every record (sink NULL) or delivers them. The check reads the input
 * itself, copying it as it goes where it cannot be read twice; delivery reads the file, or the copy,
 * again from the start.
 */
static int page_owner_all(PageOwnerSource *s, const MsEventSink *sink) {
        _cleanup_(line_reader_freep) LineReader *reader = NULL;
        _cleanup_free_ PoRecord *rec = NULL;
        bool first = !sink, newline = true;
        int fd = s->copy && !first ? fileno(s->copy) : s->fd;
        unsigned n = 0, flags;
        size_t k;
        char *line;
        int r;

        rec = calloc(1, sizeof(PoRecord));
        if (!rec)
                return log_oom();
        if ((!first || !s->copy) && lseek(fd, 0, SEEK_SET) < 0)
                return log_error_errno(errno, "Failed to rewind %s: %m", s->path);
        reader = line_reader_new(fd, PO_INPUT_MAX_BYTES, PO_LINE_MAX, first && s->copy ? fileno(s->copy) : -EBADF,
                                 s->stop_fd);
        if (!reader)
                return log_oom();
        while ((r = line_reader_next(reader, &line, &k, &flags)) > 0) {
                /* Random bytes, or another kind of file: said now, not after reading all of it. */
                if (first && s->checked == 0 && line_reader_bytes(reader) > PO_FIRST_RECORD_BYTES) {
                        char size[32];

                        return log_error_errno(EBADMSG, "%s: no page_owner record in the first %s; not a page_owner "
                                               "log.", s->path, format_bytes(size, sizeof(size), PO_FIRST_RECORD_BYTES));
                }
                newline = !(flags & LINE_UNTERMINATED);
                if (flags & LINE_CONTINUED)
                        continue;       /* more of a line too long, whose record failed */
                n++;
                /* CRLF, and lines of blanks only, which an editor may leave between records. */
                while (k > 0 && (line[k - 1] == ' ' || line[k - 1] == '\t' || line[k - 1] == '\r'))
                        line[--k] = '\0';
                if (k != strlen(line) || (flags & LINE_CUT)) {
                        if (!rec->open)
                                *rec = (PoRecord) { .open = true, .first_line = n };
                        record_fail(rec, n, (flags & LINE_CUT) ? "a line longer than 64 KiB" : "a NUL byte");
                        continue;
                }
                if (k == 0 && !rec->open)
                        continue;
                if (k == 0 || (rec->open && rec->one_line)) {
                        /* The end of a record; a culled one-liner needs none. */
                        r = record_finish(s, rec, sink);
                        if (r < 0)
                                return log_oom();
                        if (k == 0)
                                continue;
                }
                r = record_line(s, rec, line, n);
                if (r < 0)
                        return log_error_errno(r, "%s:%u: cannot import more: %m", s->path, n);
        }
        if (r < 0)
                return read_failed(s, r);
        if (rec->open) {
                /* Every record ends with a blank line, but a one-liner at the very end of a file. */
                if (!(rec->one_line && newline))
                        record_fail(rec, n, newline ? "the file ends inside the record" :
                                                      "the file ends inside a line");
                r = record_finish(s, rec, sink);
                if (r < 0)
                        return log_oom();
        }
        return 0;
}

/* The symbol table in kallsyms format: what symbols() hands the manager. */
static int build_kallsyms(PageOwnerSource *s) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_symbols; i++) {
                fprintf(f, "%016" PRIx64 " t %s", PO_SYMBOL_BASE + i * PO_SYMBOL_STRIDE, s->symbols[i].name);
                if (s->symbols[i].module)
                        fprintf(f, "\t[%s]", s->symbols[i].module);
                fputc('\n', f);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        s->kallsyms = TAKE_PTR(buf);
        s->n_table_symbols = s->n_symbols;
        return 0;
}

static PageOwnerSource *page_owner_source_free(PageOwnerSource *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_symbols; i++) {
                free(s->symbols[i].name);
                free(s->symbols[i].module);
        }
        free(s->symbols);
        free(s->symbol_slots);
        free(s->tgid_slots);
        free(s->kallsyms);
        if (s->copy)
                (void) fclose(s->copy);
        if (s->fd_owned)
                safe_close(s->fd);
        safe_close(s->stop_fd);
        free(s->path);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(PageOwnerSource *, page_owner_source_free);

static void page_owner_source_free_op(EventSource *es) {
        page_owner_source_free((PageOwnerSource *) es);
}

static int page_owner_source_start(EventSource *es, sd_event *event, const MsEventSink *sink) {
        PageOwnerSource *s = (PageOwnerSource *) es;
        int r;

        assert(s);
        assert(sink && sink->event);

        r = page_owner_all(s, sink);
        if (r < 0)
                return r;
        if (s->bad_records > 0) {
                /* Pages of the skipped records are missing: the counts are lower bounds, as after a loss. */
                MsEvent ev = {
                        .type = MS_EVENT_LOST,
                        .timestamp_nsec = now_nsec(CLOCK_MONOTONIC),
                        .lost.n_lost = s->bad_records,
                };
                sink->event(sink->userdata, &ev);
        }
        log_info("Imported %" PRIu64 " page_owner records (%" PRIu64 " pages) from %s; %" PRIu64
                 " bad records skipped.", s->records, s->pages, s->path, s->bad_records);
        return 0;
}

static int page_owner_source_flush(EventSource *es) {
        return 0;       /* everything was delivered at start */
}

static void page_owner_source_get_stats(EventSource *es, EventSourceStats *ret) {
        PageOwnerSource *s = (PageOwnerSource *) es;

        s->losses[0] = (EventSourceLoss) { .reason = "badRecord", .count = s->bad_records };
        *ret = (EventSourceStats) {
                .records = s->records,
                .lost_records = s->bad_records,
                .losses = s->losses,
                .stack_sample_interval = 1,     /* every record has its stack */
                .n_losses = ELEMENTSOF(s->losses),
        };
}

static const char *page_owner_source_symbols(EventSource *es) {
        PageOwnerSource *s = (PageOwnerSource *) es;

        return s->kallsyms;     /* empty when no record has frames: still no kernel's symbols */
}

static const EventSourceOps page_owner_source_ops = {
        .name = "page-owner",
        .start = page_owner_source_start,
        .flush = page_owner_source_flush,
        .get_stats = page_owner_source_get_stats,
        .free = page_owner_source_free_op,
        .symbols = page_owner_source_symbols,
};

/*
 * Opens the input: standard input, or path without waiting (a FIFO has no writer yet), as s->fd. What can
 * be read twice, a regular file with a size, is read where it is; the rest (standard input, a FIFO, the
 * debugfs file) gets a copy for the second reading. A device or a socket is refused, as is a file beyond
 * the bound.
 */
static int open_input(PageOwnerSource *s, const char *input) {
        struct stat st;

        if (streq(input, "-")) {
                s->fd = STDIN_FILENO;
                if (fstat(s->fd, &st) < 0)
                        return log_error_errno(errno, "Failed to read the page_owner log from standard input: %m");
        } else {
                s->fd = open(input, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (s->fd < 0)
                        return log_error_errno(errno, "Failed to open the page_owner log %s: %m", s->path);
                s->fd_owned = true;
                if (fstat(s->fd, &st) < 0)
                        return log_error_errno(errno, "Failed to open the page_owner log %s: %m", s->path);
                if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
                        return log_error_errno(EBADFD, "Failed to open the page_owner log %s: not a regular file "
                                               "or a pipe.", s->path);
        }
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size > PO_INPUT_MAX_BYTES) {
                char size[32], max[32];

                return log_error_errno(EFBIG, "%s is %s, more than the %s a page_owner log is read up to.", s->path,
                                       format_bytes(size, sizeof(size), (uint64_t) st.st_size),
                                       format_bytes(max, sizeof(max), PO_INPUT_MAX_BYTES));
        }
        if (!streq(input, "-") && S_ISREG(st.st_mode) && st.st_size > 0)
                return 0;
        s->copy = tmpfile();
        if (!s->copy)
                return log_error_errno(errno, "Failed to make a copy of %s to read it twice: %m", s->path);
        return 0;
}

static int page_owner_source_new(const SourceOptions *options, EventSource **ret) {
        _cleanup_(page_owner_source_freep) PageOwnerSource *s = NULL;
        int r;

        assert(options);
        assert(ret);

        if (!options->input)
                return log_error_errno(EINVAL, "The page-owner source reads a page_owner log from "
                                       "--source-input=PATH (- for standard input).");
        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->source.ops = &page_owner_source_ops;
        s->fd = s->stop_fd = -EBADF;
        s->path = strdup(streq(options->input, "-") ? "(standard input)" : options->input);
        if (!s->path)
                return log_oom();
        s->stop_fd = stop_signal_fd();
        if (s->stop_fd < 0)
                return log_error_errno(s->stop_fd, "Failed to watch for SIGTERM while reading %s: %m", s->path);
        r = open_input(s, options->input);
        if (r < 0)
                return r;

        log_debug("Reading the page_owner log %s.", s->path);
        r = page_owner_all(s, NULL);
        if (r < 0)
                return r;
        r = build_kallsyms(s);
        if (r < 0)
                return log_oom();
        /* Nothing but bad records: not a page_owner log at all. */
        if (s->checked == 0)
                return log_error_errno(EBADMSG, "%s has no page_owner record that can be read.", s->path);
        log_debug("%s names %zu functions; %" PRIu64 " bad records.", s->path, s->n_symbols, s->bad_records);
        *ret = &TAKE_PTR(s)->source;
        return 0;
}

const SourceType page_owner_source_type = {
        .name = "page-owner",
        .description = "a page_owner log from the file --source-input names (- for standard input)",
        .automatic = false,
        .new = page_owner_source_new,
};
