/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <traceevent/event-parse.h>

#include "log.h"
#include "macro.h"
#include "read-file.h"
#include "tracefs.h"
#include "tracepoint.h"

/* Formats are a few KiB (mm_page_alloc's print fmt is the largest); anything bigger is not a format. */
#define FORMAT_SIZE_MAX (1024u * 1024u)

/* Surrogate keys from struct page pointers are kept below 2^MS_PAGE_KEY_BITS, as the page map needs
 * (tracepoint.h). */
#define SURROGATE_KEY_MASK ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1)

typedef struct TracepointInfo {
        const char *system;
        const char *event;
        const char *path;               /* system/event, what tracepoint_kind_to_string() returns */
        bool required;
} TracepointInfo;

static const TracepointInfo tracepoint_info[_TRACEPOINT_KIND_MAX] = {
        [TRACEPOINT_PAGE_ALLOC]        = { "kmem", "mm_page_alloc", "kmem/mm_page_alloc", true },
        [TRACEPOINT_PAGE_FREE]         = { "kmem", "mm_page_free", "kmem/mm_page_free", true },
        [TRACEPOINT_PAGE_FREE_BATCHED] = { "kmem", "mm_page_free_batched", "kmem/mm_page_free_batched", false },
        [TRACEPOINT_MODULE_LOAD]       = { "module", "module_load", "module/module_load", false },
        [TRACEPOINT_MODULE_FREE]       = { "module", "module_free", "module/module_free", false },
        [TRACEPOINT_SCHED_FORK]        = { "sched", "sched_process_fork", "sched/sched_process_fork", false },
        [TRACEPOINT_SCHED_EXEC]        = { "sched", "sched_process_exec", "sched/sched_process_exec", false },
        [TRACEPOINT_SCHED_EXIT]        = { "sched", "sched_process_exit", "sched/sched_process_exit", false },
        [TRACEPOINT_TASK_NEWTASK]      = { "task", "task_newtask", "task/task_newtask", false },
        [TRACEPOINT_TASK_RENAME]       = { "task", "task_rename", "task/task_rename", false },
        [TRACEPOINT_KERNEL_STACK]      = { "ftrace", "kernel_stack", "ftrace/kernel_stack", false },
        [TRACEPOINT_KMALLOC]           = { "kmem", "kmalloc", "kmem/kmalloc", false },
        [TRACEPOINT_KMALLOC_NODE]      = { "kmem", "kmalloc_node", "kmem/kmalloc_node", false },
        [TRACEPOINT_KMEM_CACHE_ALLOC]  = { "kmem", "kmem_cache_alloc", "kmem/kmem_cache_alloc", false },
        [TRACEPOINT_KMEM_CACHE_ALLOC_NODE] = { "kmem", "kmem_cache_alloc_node", "kmem/kmem_cache_alloc_node",
                                               false },
        [TRACEPOINT_KFREE]             = { "kmem", "kfree", "kmem/kfree", false },
        [TRACEPOINT_KMEM_CACHE_FREE]   = { "kmem", "kmem_cache_free", "kmem/kmem_cache_free", false },
};

/* ZERO_SIZE_PTR: what kmalloc(0) returns and kfree() accepts. A pointer at or below it (NULL included) is
 * no object. */
#define SLAB_ZERO_SIZE_PTR 16u

static bool kind_is_task(TracepointKind kind) {
        return kind >= TRACEPOINT_SCHED_FORK && kind <= TRACEPOINT_TASK_RENAME;
}

bool tracepoint_kind_is_slab(TracepointKind kind) {
        return kind >= TRACEPOINT_KMALLOC && kind <= TRACEPOINT_KMEM_CACHE_FREE;
}

bool tracepoint_kind_is_slab_alloc(TracepointKind kind) {
        return kind >= TRACEPOINT_KMALLOC && kind <= TRACEPOINT_KMEM_CACHE_ALLOC_NODE;
}

static bool slab_kind_is_free(TracepointKind kind) {
        return kind == TRACEPOINT_KFREE || kind == TRACEPOINT_KMEM_CACHE_FREE;
}

/* One event's resolved fields. Handles are borrowed from the tep_handle and live as long as it does. */
typedef struct TracepointFormat {
        bool present;
        int id;
        size_t min_size;                        /* a record shorter than this cannot hold the fields */
        struct tep_format_field *pfn;           /* "pfn", or "page" on older kernels */
        bool pfn_is_page;
        unsigned page_shift;                    /* log2 of the assumed sizeof(struct page), for "page" */
        struct tep_format_field *order;         /* NULL: order 0 */
        struct tep_format_field *gfp_flags;     /* NULL: 0 */
        struct tep_format_field *migrate_type;  /* NULL: -1 */
        struct tep_format_field *name;          /* __data_loc or __rel_loc char[] */
        /* Task events: pid, parent_pid / old_pid, clone_flags, group_dead, comm (fixed or dynamic),
         * filename (dynamic). Stack: size (entries), caller (the array). NULL where absent. */
        struct tep_format_field *pid, *other_pid, *clone_flags, *group_dead, *comm, *filename;
        struct tep_format_field *stack_size, *caller;
        /* Slab events: ptr, call_site; allocations bytes_req, bytes_alloc; name when the kernel records the
         * cache's (kept in cache, not name, which marks module events). */
        struct tep_format_field *ptr, *call_site, *bytes_req, *bytes_alloc, *cache;
} TracepointFormat;

struct Tracepoints {
        struct tep_handle *tep;                 /* owns every event and field below */
        size_t type_offset;                     /* common_type, the same in every event */
        size_t type_size;
        size_t pid_offset;                      /* common_pid, the same in every event */
        size_t pid_size;
        bool surrogate;
        TracepointFormat formats[_TRACEPOINT_KIND_MAX];
};

const char *tracepoint_kind_to_string(TracepointKind kind) {
        if (kind < 0 || kind >= _TRACEPOINT_KIND_MAX)
                return NULL;
        return tracepoint_info[kind].path;
}

bool tracepoint_kind_is_required(TracepointKind kind) {
        if (kind < 0 || kind >= _TRACEPOINT_KIND_MAX)
                return false;
        return tracepoint_info[kind].required;
}

/* tep_read_number_field() only reads these sizes. */
static bool field_size_ok(const struct tep_format_field *f) {
        return f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8;
}

static void extend_min_size(TracepointFormat *fmt, const struct tep_format_field *f) {
        if (f)
                fmt->min_size = MAX(fmt->min_size, (size_t) f->offset + (size_t) f->size);
}

/* Resolves the fields of a page event. -EBADMSG names nothing more: the caller knows the kind. */
static int resolve_page_fields(TracepointFormat *fmt, struct tep_event *event, TracepointKind kind) {
        fmt->pfn = tep_find_field(event, "pfn");
        if (!fmt->pfn) {
                fmt->pfn = tep_find_field(event, "page");
                fmt->pfn_is_page = true;
        }
        if (!fmt->pfn || !field_size_ok(fmt->pfn)) {
                log_debug("Format of %s has no usable pfn or page field.", tracepoint_info[kind].path);
                return -EBADMSG;
        }
        /* 64 bytes per struct page for 64-bit pointers, 32 for 32-bit ones; see tracepoint.h. */
        fmt->page_shift = fmt->pfn->size == 8 ? 6 : 5;
        extend_min_size(fmt, fmt->pfn);

        if (kind == TRACEPOINT_PAGE_FREE_BATCHED)
                return 0;

        fmt->order = tep_find_field(event, "order");
        if (kind == TRACEPOINT_PAGE_ALLOC && !fmt->order) {
                log_debug("Format of %s has no order field.", tracepoint_info[kind].path);
                return -EBADMSG;
        }
        if (kind == TRACEPOINT_PAGE_ALLOC) {
                fmt->gfp_flags = tep_find_field(event, "gfp_flags");
                fmt->migrate_type = tep_find_field(event, "migratetype");
        }

        struct tep_format_field *fields[] = { fmt->order, fmt->gfp_flags, fmt->migrate_type };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                if (!fields[i])
                        continue;
                if (!field_size_ok(fields[i])) {
                        log_debug("Field %s of %s has unsupported size %d.", fields[i]->name,
                                  tracepoint_info[kind].path, fields[i]->size);
                        return -EBADMSG;
                }
                extend_min_size(fmt, fields[i]);
        }
        return 0;
}

static int resolve_module_fields(TracepointFormat *fmt, struct tep_event *event, TracepointKind kind) {
        fmt->name = tep_find_field(event, "name");
        if (!fmt->name || !(fmt->name->flags & TEP_FIELD_IS_DYNAMIC) || fmt->name->size != 4) {
                log_debug("Format of %s has no dynamic name field.", tracepoint_info[kind].path);
                return -EBADMSG;
        }
        extend_min_size(fmt, fmt->name);
        return 0;
}

static bool field_is_string(const struct tep_format_field *f) {
        if (!f)
                return false;
        if (f->flags & TEP_FIELD_IS_DYNAMIC)
                return f->size == 4;
        return (f->flags & TEP_FIELD_IS_ARRAY) && f->size > 0;
}

/* Resolves the fields of a task or stack event. Fields the ftrace source cannot do without are checked;
 * the rest stay NULL when a kernel lacks them. */
static int resolve_task_fields(TracepointFormat *fmt, struct tep_event *event, TracepointKind kind) {
        static const struct {
                TracepointKind kind;
                const char *pid, *other_pid, *comm, *filename;
        } names[] = {
                { TRACEPOINT_SCHED_FORK, "child_pid", "parent_pid", "child_comm", NULL },
                { TRACEPOINT_SCHED_EXEC, "pid", "old_pid", NULL, "filename" },
                { TRACEPOINT_SCHED_EXIT, "pid", NULL, "comm", NULL },
                { TRACEPOINT_TASK_NEWTASK, "pid", NULL, "comm", NULL },
                { TRACEPOINT_TASK_RENAME, "pid", NULL, "newcomm", NULL },
        };

        if (kind == TRACEPOINT_KERNEL_STACK) {
                fmt->stack_size = tep_find_field(event, "size");
                fmt->caller = tep_find_field(event, "caller");
                if (!fmt->stack_size || !field_size_ok(fmt->stack_size) || !fmt->caller ||
                    !(fmt->caller->flags & TEP_FIELD_IS_ARRAY) ||
                    (fmt->caller->elementsize != 4 && fmt->caller->elementsize != 8)) {
                        log_debug("Format of %s has no usable size and caller fields.", tracepoint_info[kind].path);
                        return -EBADMSG;
                }
                /* The caller array is as long as the record: the format's 8 entries are nominal. */
                extend_min_size(fmt, fmt->stack_size);
                fmt->min_size = MAX(fmt->min_size, (size_t) fmt->caller->offset);
                return 0;
        }

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                if (names[i].kind != kind)
                        continue;
                fmt->pid = tep_find_field(event, names[i].pid);
                fmt->other_pid = names[i].other_pid ? tep_find_field(event, names[i].other_pid) : NULL;
                fmt->comm = names[i].comm ? tep_find_field(event, names[i].comm) : NULL;
                fmt->filename = names[i].filename ? tep_find_field(event, names[i].filename) : NULL;
                break;
        }
        if (kind == TRACEPOINT_TASK_NEWTASK)
                fmt->clone_flags = tep_find_field(event, "clone_flags");
        if (kind == TRACEPOINT_SCHED_EXIT)
                fmt->group_dead = tep_find_field(event, "group_dead");

        struct tep_format_field *numbers[] = { fmt->pid, fmt->other_pid, fmt->clone_flags, fmt->group_dead };
        if (!fmt->pid || (kind == TRACEPOINT_SCHED_FORK && !fmt->other_pid) ||
            (kind == TRACEPOINT_TASK_NEWTASK && !fmt->clone_flags)) {
                log_debug("Format of %s lacks a pid field.", tracepoint_info[kind].path);
                return -EBADMSG;
        }
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                if (!numbers[i])
                        continue;
                if (!field_size_ok(numbers[i]))
                        return -EBADMSG;
                extend_min_size(fmt, numbers[i]);
        }
        if (fmt->comm && !field_is_string(fmt->comm))
                fmt->comm = NULL;
        if (fmt->filename && !field_is_string(fmt->filename))
                fmt->filename = NULL;
        extend_min_size(fmt, fmt->comm);
        extend_min_size(fmt, fmt->filename);
        return 0;
}

/* Resolves the fields of a slab event; -EBADMSG when one it needs is missing or of an odd size. */
static int resolve_slab_fields(TracepointFormat *fmt, struct tep_event *event, TracepointKind kind) {
        fmt->ptr = tep_find_field(event, "ptr");
        fmt->call_site = tep_find_field(event, "call_site");
        if (!slab_kind_is_free(kind)) {
                fmt->bytes_req = tep_find_field(event, "bytes_req");
                fmt->bytes_alloc = tep_find_field(event, "bytes_alloc");
        }
        struct tep_format_field *numbers[] = { fmt->ptr, fmt->call_site, fmt->bytes_req, fmt->bytes_alloc };
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                if (i >= 2 && slab_kind_is_free(kind))
                        break;
                if (!numbers[i] || !field_size_ok(numbers[i])) {
                        log_debug("Format of %s has no usable ptr, call_site, bytes_req and bytes_alloc.",
                                  tracepoint_info[kind].path);
                        return -EBADMSG;
                }
                extend_min_size(fmt, numbers[i]);
        }
        /* The cache name: a __data_loc string on recent kernels' kmem_cache_* events, absent elsewhere. */
        fmt->cache = tep_find_field(event, "name");
        if (fmt->cache && (!(fmt->cache->flags & TEP_FIELD_IS_DYNAMIC) || fmt->cache->size != 4))
                fmt->cache = NULL;
        extend_min_size(fmt, fmt->cache);
        return 0;
}

static int load_one(Tracepoints *t, const char *tracefs, TracepointKind kind) {
        const TracepointInfo *info = &tracepoint_info[kind];
        TracepointFormat *fmt = &t->formats[kind];
        _cleanup_free_ char *path = NULL, *buf = NULL;
        struct tep_event *event = NULL;
        struct tep_format_field *type;
        enum tep_errno e;
        size_t size;
        int r;

        if (asprintf(&path, "%s/events/%s/%s/format", tracefs, info->system, info->event) < 0)
                return -ENOMEM;
        r = read_file_full(path, FORMAT_SIZE_MAX, &buf, &size);
        if (r == -ENOENT) {
                log_debug("%s not found: the kernel has no %s tracepoint.", path, info->path);
                return -ENOENT;
        }
        if (r < 0)
                return log_debug_errno(r, "Failed to read %s: %m", path);

        e = tep_parse_format(t->tep, &event, buf, size, info->system);
        /*
         * A print format libtraceevent cannot evaluate (helpers like page_to_pfn() on old kernels) fails
         * the parse, but the event is kept with its fields, which is all this module uses.
         */
        if (e != 0 && !event) {
                log_debug("Failed to parse %s (libtraceevent error %d).", path, (int) e);
                return -EBADMSG;
        }
        if (e != 0)
                log_debug("Print format of %s not understood, using its fields only.", path);

        type = tep_find_common_field(event, "common_type");
        if (!type || !field_size_ok(type)) {
                log_debug("Format %s has no common_type field.", path);
                return -EBADMSG;
        }
        if (t->type_size == 0) {
                t->type_offset = (size_t) type->offset;
                t->type_size = (size_t) type->size;
        } else if (t->type_offset != (size_t) type->offset || t->type_size != (size_t) type->size) {
                log_debug("Format %s places common_type differently from the others.", path);
                return -EBADMSG;
        }
        if (t->pid_size == 0) {
                struct tep_format_field *pid = tep_find_common_field(event, "common_pid");

                if (pid && pid->size == 4) {
                        t->pid_offset = (size_t) pid->offset;
                        t->pid_size = (size_t) pid->size;
                }
        }

        fmt->id = event->id;
        fmt->min_size = (size_t) type->offset + (size_t) type->size;
        if (kind == TRACEPOINT_MODULE_LOAD || kind == TRACEPOINT_MODULE_FREE)
                r = resolve_module_fields(fmt, event, kind);
        else if (kind_is_task(kind) || kind == TRACEPOINT_KERNEL_STACK)
                r = resolve_task_fields(fmt, event, kind);
        else if (tracepoint_kind_is_slab(kind))
                r = resolve_slab_fields(fmt, event, kind);
        else
                r = resolve_page_fields(fmt, event, kind);
        if (r < 0)
                return r;

        fmt->present = true;
        log_debug("Tracepoint %s: id %d, %s field, records >= %zu bytes.", info->path, fmt->id,
                  fmt->pfn_is_page ? "page" : fmt->pfn ? "pfn" : fmt->name ? "name" : fmt->ptr ? "ptr" : "task",
                  fmt->min_size);
        return 0;
}

static bool host_is_big_endian(void) {
        return __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
}

int tracepoint_load(const char *tracefs, TracepointByteOrder byte_order, Tracepoints **ret,
                const char **reterr_what) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        _cleanup_free_ char *events = NULL;
        struct stat st;
        bool big;
        int r;

        assert(tracefs);
        assert(ret);
        if (byte_order < 0 || byte_order >= _TRACEPOINT_BYTE_ORDER_MAX)
                return -EINVAL;

        if (asprintf(&events, "%s/events", tracefs) < 0)
                return -ENOMEM;
        if (stat(events, &st) < 0 || !S_ISDIR(st.st_mode)) {
                /* Unreadable (tracefs is root-only) is not the same as absent: keep EACCES. */
                r = errno == EACCES || errno == EPERM ? -errno : -ENOENT;
                if (reterr_what)
                        *reterr_what = "events";
                return log_debug_errno(r, "%s is not an accessible directory.", events);
        }

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->tep = tep_alloc();
        if (!t->tep)
                return -ENOMEM;

        big = byte_order == TRACEPOINT_BYTE_ORDER_HOST ? host_is_big_endian()
                                                         : byte_order == TRACEPOINT_BYTE_ORDER_BIG;
        tep_set_file_bigendian(t->tep, big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
        tep_set_local_bigendian(t->tep, host_is_big_endian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);

        for (TracepointKind k = 0; k < _TRACEPOINT_KIND_MAX; k++) {
                r = load_one(t, tracefs, k);
                if (r == -ENOENT && !tracepoint_info[k].required)
                        continue;
                /* Slab events are opt-in extras: one this module cannot read is absent, not fatal for the
                 * page tracing everyone gets. */
                if (r == -EBADMSG && tracepoint_kind_is_slab(k)) {
                        t->formats[k] = (TracepointFormat) {};
                        continue;
                }
                if (r < 0) {
                        if (reterr_what && r != -ENOMEM)
                                *reterr_what = tracepoint_info[k].path;
                        return r;
                }
        }

        t->surrogate = t->formats[TRACEPOINT_PAGE_ALLOC].pfn_is_page;
        /* Allocations and frees must name pages the same way, or no free would ever match. */
        for (TracepointKind k = TRACEPOINT_PAGE_FREE; k <= TRACEPOINT_PAGE_FREE_BATCHED; k++)
                if (t->formats[k].present && t->formats[k].pfn_is_page != t->surrogate) {
                        if (reterr_what)
                                *reterr_what = tracepoint_info[k].path;
                        return log_debug_errno(EBADMSG, "%s and %s identify pages differently.",
                                               tracepoint_info[k].path,
                                               tracepoint_info[TRACEPOINT_PAGE_ALLOC].path);
                }

        *ret = TAKE_PTR(t);
        return 0;
}

/* Frees a holder of parsed formats and the tep handle its fields point into. */
static void *free_with_tep(struct tep_handle *tep, void *holder) {
        if (tep)
                tep_free(tep);
        free(holder);
        return NULL;
}

Tracepoints *tracepoint_free(Tracepoints *t) {
        return t ? free_with_tep(t->tep, t) : NULL;
}

int tracepoint_id(const Tracepoints *t, TracepointKind kind) {
        assert(t);
        if (kind < 0 || kind >= _TRACEPOINT_KIND_MAX)
                return -EINVAL;
        if (!t->formats[kind].present)
                return -ENOENT;
        return t->formats[kind].id;
}

const char *tracepoint_slab_missing(const Tracepoints *t, char *buf, size_t size) {
        static const struct {
                TracepointKind kind, twin;
        } groups[] = {
                { TRACEPOINT_KMALLOC, TRACEPOINT_KMALLOC_NODE },
                { TRACEPOINT_KMEM_CACHE_ALLOC, TRACEPOINT_KMEM_CACHE_ALLOC_NODE },
                { TRACEPOINT_KFREE, TRACEPOINT_KFREE },
                { TRACEPOINT_KMEM_CACHE_FREE, TRACEPOINT_KMEM_CACHE_FREE },
        };
        size_t n = 0;

        assert(t);
        assert(buf && size > 0);

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(groups); i++) {
                int w;

                if (t->formats[groups[i].kind].present || t->formats[groups[i].twin].present)
                        continue;
                w = snprintf(buf + n, size - n, "%s%s", n > 0 ? ", " : "", tracepoint_info[groups[i].kind].path);
                if (w < 0 || (size_t) w >= size - n) {
                        buf[n] = '\0';        /* cut at a whole name */
                        break;
                }
                n += (size_t) w;
        }
        return buf;
}

bool tracepoint_pfn_is_surrogate(const Tracepoints *t) {
        assert(t);
        return t->surrogate;
}

static uint64_t read_unsigned(struct tep_format_field *f, const void *raw) {
        unsigned long long v = 0;

        /* Cannot fail: sizes were checked at load time. */
        (void) tep_read_number_field(f, raw, &v);
        return (uint64_t) v;
}

static int64_t read_signed(struct tep_format_field *f, const void *raw) {
        uint64_t v = read_unsigned(f, raw);
        unsigned bits = (unsigned) f->size * 8;

        if (bits < 64 && (f->flags & TEP_FIELD_IS_SIGNED) && (v & (UINT64_C(1) << (bits - 1))))
                v |= ~UINT64_C(0) << bits;
        return (int64_t) v;
}

static int decode_page(const TracepointFormat *fmt, TracepointKind kind, const uint8_t *raw, MsEvent *ev) {
        uint64_t v = read_unsigned(fmt->pfn, raw);

        if (fmt->pfn_is_page) {
                /* A NULL page is a failed allocation. */
                if (v == 0)
                        return -ENODATA;
                v = (v >> fmt->page_shift) & SURROGATE_KEY_MASK;
        } else {
                uint64_t all_ones = fmt->pfn->size == 8 ? UINT64_MAX
                                                        : (UINT64_C(1) << (fmt->pfn->size * 8)) - 1;

                /* Kernels record pfn -1 when the allocator returned no page. */
                if (v == all_ones)
                        return -ENODATA;
        }

        ev->type = kind == TRACEPOINT_PAGE_ALLOC ? MS_EVENT_PAGE_ALLOC : MS_EVENT_PAGE_FREE;
        ev->page.pfn = v;
        ev->page.order = fmt->order ? (uint32_t) read_unsigned(fmt->order, raw) : 0;
        ev->page.migrate_type = -1;
        if (kind == TRACEPOINT_PAGE_ALLOC) {
                ev->page.gfp_flags = fmt->gfp_flags ? read_unsigned(fmt->gfp_flags, raw) : 0;
                ev->page.migrate_type = fmt->migrate_type ? (int32_t) read_signed(fmt->migrate_type, raw) : -1;
        }
        return kind;
}

/* A __data_loc or __rel_loc string of the record, NUL-terminated inside it; NULL if it is not. */
static const char *read_dynamic_string(const struct tep_format_field *f, const uint8_t *raw, size_t size) {
        uint64_t loc = read_unsigned((struct tep_format_field *) f, raw);
        size_t offset = (size_t) (loc & 0xffff), len = (size_t) (loc >> 16);

        /* __rel_loc counts from the end of the field itself, __data_loc from the start of the record. */
        if (f->flags & TEP_FIELD_IS_RELATIVE)
                offset += (size_t) f->offset + (size_t) f->size;
        if (len == 0 || offset > size || len > size - offset)
                return NULL;
        if (!memchr(raw + offset, '\0', len))
                return NULL;
        return (const char *) raw + offset;
}

static int decode_module(const TracepointFormat *fmt, TracepointKind kind, const uint8_t *raw, size_t size,
                MsEvent *ev) {
        const char *name = read_dynamic_string(fmt->name, raw, size);

        if (!name)
                return -EBADMSG;
        ev->type = kind == TRACEPOINT_MODULE_LOAD ? MS_EVENT_MODULE_LOAD : MS_EVENT_MODULE_FREE;
        ev->module.name = name;
        return kind;
}

static int decode_slab(const TracepointFormat *fmt, TracepointKind kind, const uint8_t *raw, size_t size,
                MsEvent *ev) {
        uint64_t ptr = read_unsigned(fmt->ptr, raw);

        /* A failed allocation, kmalloc(0), kfree(NULL): no object to account. */
        if (ptr <= SLAB_ZERO_SIZE_PTR)
                return -ENODATA;
        ev->object = (MsObjectEvent) {
                .ptr = ptr,
                .call_site = read_unsigned(fmt->call_site, raw),
        };
        if (slab_kind_is_free(kind)) {
                ev->type = MS_EVENT_OBJECT_FREE;
                return kind;
        }
        ev->type = MS_EVENT_OBJECT_ALLOC;
        ev->object.bytes_requested = read_unsigned(fmt->bytes_req, raw);
        ev->object.bytes_allocated = read_unsigned(fmt->bytes_alloc, raw);
        if (fmt->cache) {
                ev->object.cache = read_dynamic_string(fmt->cache, raw, size);
                if (!ev->object.cache)
                        return -EBADMSG;
        }
        return kind;
}

/* The kind of a record whose size was checked against its format. */
static int record_kind(const Tracepoints *t, const uint8_t *p, size_t size) {
        unsigned long long type;

        if (size < t->type_offset + t->type_size)
                return -EBADMSG;
        type = tep_read_number(t->tep, p + t->type_offset, (int) t->type_size);

        for (TracepointKind k = 0; k < _TRACEPOINT_KIND_MAX; k++) {
                const TracepointFormat *fmt = &t->formats[k];

                if (!fmt->present || (unsigned long long) fmt->id != type)
                        continue;
                if (size < fmt->min_size)
                        return -EBADMSG;
                return k;
        }
        return -ENOENT;
}

int tracepoint_decode(const Tracepoints *t, const void *raw, size_t size, MsEvent *ev) {
        const uint8_t *p = raw;
        int k;

        assert(t);
        assert(raw || size == 0);
        assert(ev);

        k = record_kind(t, p, size);
        if (k < 0)
                return k;
        if (kind_is_task(k) || k == TRACEPOINT_KERNEL_STACK)
                return -ENOENT;
        if (tracepoint_kind_is_slab(k))
                return decode_slab(&t->formats[k], k, p, size, ev);
        if (t->formats[k].name)
                return decode_module(&t->formats[k], k, p, size, ev);
        return decode_page(&t->formats[k], k, p, ev);
}

int tracepoint_kind_of(const Tracepoints *t, const void *raw, size_t size, int32_t *ret_common_pid) {
        int k;

        assert(t);
        assert(raw || size == 0);

        k = record_kind(t, raw, size);
        if (k < 0)
                return k;
        if (ret_common_pid) {
                if (t->pid_size == 0 || size < t->pid_offset + t->pid_size)
                        *ret_common_pid = -1;
                else
                        *ret_common_pid = (int32_t) tep_read_number(t->tep, (const uint8_t *) raw + t->pid_offset,
                                                                    (int) t->pid_size);
        }
        return k;
}

int tracepoint_decode_task(const Tracepoints *t, const void *raw, size_t size, TracepointTask *ret) {
        const uint8_t *p = raw;
        const TracepointFormat *fmt;
        int k;

        assert(t);
        assert(raw || size == 0);
        assert(ret);

        k = record_kind(t, p, size);
        if (k < 0)
                return k;
        if (!kind_is_task(k))
                return -ENOENT;
        fmt = &t->formats[k];

        *ret = (TracepointTask) {
                .pid = (int32_t) read_signed(fmt->pid, p),
                .group_dead = fmt->group_dead ? read_unsigned(fmt->group_dead, p) != 0 : -1,
        };
        if (k == TRACEPOINT_SCHED_FORK)
                ret->parent_pid = (int32_t) read_signed(fmt->other_pid, p);
        else if (k == TRACEPOINT_SCHED_EXEC)
                ret->old_pid = fmt->other_pid ? (int32_t) read_signed(fmt->other_pid, p) : ret->pid;
        if (fmt->clone_flags)
                ret->clone_flags = read_unsigned(fmt->clone_flags, p);
        if (fmt->comm) {
                const char *s;
                size_t n;

                if (fmt->comm->flags & TEP_FIELD_IS_DYNAMIC) {
                        s = read_dynamic_string(fmt->comm, p, size);
                        if (!s)
                                return -EBADMSG;
                        n = strlen(s);
                } else {
                        s = (const char *) p + fmt->comm->offset;
                        n = strnlen(s, (size_t) fmt->comm->size);
                }
                n = MIN(n, sizeof(ret->comm) - 1);
                memcpy(ret->comm, s, n);
                ret->comm[n] = '\0';
        }
        if (fmt->filename) {
                ret->filename = read_dynamic_string(fmt->filename, p, size);
                if (!ret->filename)
                        return -EBADMSG;
        }
        return k;
}

int tracepoint_decode_stack(const Tracepoints *t, const void *raw, size_t size, uint64_t *frames, size_t max,
                size_t *ret_n) {
        const uint8_t *p = raw;
        const TracepointFormat *fmt;
        size_t n, width, room;
        int64_t entries;
        int k;

        assert(t);
        assert(raw || size == 0);
        assert(frames || max == 0);
        assert(ret_n);

        k = record_kind(t, p, size);
        if (k < 0)
                return k;
        if (k != TRACEPOINT_KERNEL_STACK)
                return -ENOENT;
        fmt = &t->formats[k];

        entries = read_signed(fmt->stack_size, p);
        width = (size_t) fmt->caller->elementsize;
        room = (size - (size_t) fmt->caller->offset) / width;
        if (entries < 0 || (uint64_t) entries > room)
                return -EBADMSG;
        n = MIN((size_t) entries, max);
        for (size_t i = 0; i < n; i++) {
                unsigned long long v = tep_read_number(t->tep, p + fmt->caller->offset + i * width, (int) width);

                frames[i] = (uint64_t) v;
        }
        *ret_n = n;
        return k;
}

/* oom:mark_victim, on a tep_handle of its own. Field handles are borrowed from it; NULL where the kernel
 * does not record the field. */
struct TracepointOom {
        struct tep_handle *tep;
        int id;
        struct tep_format_field *type, *common_pid, *pid, *comm;
        struct tep_format_field *total_vm, *anon_rss, *file_rss, *shmem_rss, *uid, *pgtables, *oom_score_adj;
        size_t min_size;
};

/* One event's format (events/SYSTEM/NAME/format) on a tep_handle of its own, host byte order: the event
 * in *ret_event, borrowed from *ret_tep. -errno of the read, -ENOMEM, -EBADMSG. */
static int load_single_event(const char *tracefs, const char *system, const char *name, struct tep_handle **ret_tep,
                struct tep_event **ret_event) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        struct tep_event *event = NULL;
        struct tep_handle *tep;
        size_t size;
        int r;

        if (asprintf(&path, "%s/events/%s/%s/format", tracefs, system, name) < 0)
                return -ENOMEM;
        r = read_file_full(path, FORMAT_SIZE_MAX, &buf, &size);
        if (r < 0)
                return log_debug_errno(r, "Failed to read %s: %m", path);
        tep = tep_alloc();
        if (!tep)
                return -ENOMEM;
        tep_set_file_bigendian(tep, host_is_big_endian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
        tep_set_local_bigendian(tep, host_is_big_endian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
        if (tep_parse_format(tep, &event, buf, size, system) != 0 && !event) {
                tep_free(tep);
                return log_debug_errno(EBADMSG, "Failed to parse %s.", path);
        }
        *ret_tep = tep;
        *ret_event = event;
        return 0;
}

int tracepoint_oom_load(const char *tracefs, TracepointOom **ret) {
        _cleanup_(tracepoint_oom_freep) TracepointOom *t = NULL;
        struct tep_event *event = NULL;
        int r;

        assert(tracefs);
        assert(ret);

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        r = load_single_event(tracefs, "oom", "mark_victim", &t->tep, &event);
        if (r < 0)
                return r;
        t->id = event->id;
        t->type = tep_find_common_field(event, "common_type");
        t->common_pid = tep_find_common_field(event, "common_pid");
        if (t->common_pid && !field_size_ok(t->common_pid))
                t->common_pid = NULL;
        t->pid = tep_find_field(event, "pid");
        if (!t->type || !field_size_ok(t->type) || !t->pid || !field_size_ok(t->pid))
                return log_debug_errno(EBADMSG, "oom/mark_victim has no usable common_type and pid fields.");
        t->comm = tep_find_field(event, "comm");
        if (!field_is_string(t->comm))
                t->comm = NULL;
        struct {
                struct tep_format_field **field;
                const char *name;
        } numbers[] = {
                { &t->total_vm, "total_vm" }, { &t->anon_rss, "anon_rss" }, { &t->file_rss, "file_rss" },
                { &t->shmem_rss, "shmem_rss" }, { &t->uid, "uid" }, { &t->pgtables, "pgtables" },
                { &t->oom_score_adj, "oom_score_adj" },
        };
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                struct tep_format_field *f = tep_find_field(event, numbers[i].name);
                *numbers[i].field = f && field_size_ok(f) ? f : NULL;
        }
        struct tep_format_field *all[] = { t->type, t->common_pid, t->pid, t->comm, t->total_vm, t->anon_rss, t->file_rss,
                                           t->shmem_rss, t->uid, t->pgtables, t->oom_score_adj };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                if (all[i])
                        t->min_size = MAX(t->min_size, (size_t) all[i]->offset + (size_t) all[i]->size);
        log_debug("Tracepoint oom/mark_victim: id %d, %s, records >= %zu bytes.", t->id,
                  t->comm ? "with comm and sizes" : "pid only", t->min_size);
        *ret = TAKE_PTR(t);
        return 0;
}

TracepointOom *tracepoint_oom_free(TracepointOom *t) {
        return t ? free_with_tep(t->tep, t) : NULL;
}

int tracepoint_oom_id(const TracepointOom *t) {
        assert(t);
        return t->id;
}

int tracepoint_oom_decode(const TracepointOom *t, const void *raw, size_t size, OomKill *ret) {
        const uint8_t *p = raw;
        OomKill k = {};

        assert(t);
        assert(ret);

        if (!raw || size < t->min_size)
                return -EBADMSG;
        if (read_unsigned(t->type, p) != (uint64_t) t->id)
                return -ENOENT;
        k.pid = (int32_t) read_signed(t->pid, p);
        k.current_pid = t->common_pid ? (int32_t) read_signed(t->common_pid, p) : -1;
        if (t->comm) {
                const char *comm = NULL;

                if (t->comm->flags & TEP_FIELD_IS_DYNAMIC)
                        comm = read_dynamic_string(t->comm, p, size);
                else if (memchr(p + t->comm->offset, '\0', (size_t) t->comm->size))
                        comm = (const char *) p + t->comm->offset;
                if (comm) {
                        snprintf(k.comm, sizeof(k.comm), "%s", comm);
                        k.fields |= OOM_KILL_HAS_COMM;
                }
        }
        const struct {
                struct tep_format_field *field;
                uint64_t *ret;
                OomKillField flag;
        } sizes[] = {
                { t->total_vm, &k.total_vm_kib, OOM_KILL_HAS_TOTAL_VM },
                { t->anon_rss, &k.anon_rss_kib, OOM_KILL_HAS_ANON_RSS },
                { t->file_rss, &k.file_rss_kib, OOM_KILL_HAS_FILE_RSS },
                { t->shmem_rss, &k.shmem_rss_kib, OOM_KILL_HAS_SHMEM_RSS },
                { t->pgtables, &k.pgtables_kib, OOM_KILL_HAS_PGTABLES },
        };
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                if (sizes[i].field) {
                        *sizes[i].ret = read_unsigned(sizes[i].field, p);
                        k.fields |= sizes[i].flag;
                }
        if (t->uid) {
                k.uid = (uint32_t) read_unsigned(t->uid, p);
                k.fields |= OOM_KILL_HAS_UID;
        }
        if (t->oom_score_adj) {
                k.oom_score_adj = (int32_t) read_signed(t->oom_score_adj, p);
                k.fields |= OOM_KILL_HAS_OOM_SCORE_ADJ;
        }
        *ret = k;
        return 0;
}

/* damon:damon_aggregated, on a tep_handle of its own: every field it has is needed. */
struct TracepointDamon {
        struct tep_handle *tep;
        int id;
        struct tep_format_field *type, *common_pid, *target_id, *nr_regions, *start, *end, *nr_accesses, *age;
        size_t min_size;
};

int tracepoint_damon_load(const char *tracefs, TracepointDamon **ret) {
        _cleanup_(tracepoint_damon_freep) TracepointDamon *t = NULL;
        struct tep_event *event = NULL;
        int r;

        assert(tracefs);
        assert(ret);

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        r = load_single_event(tracefs, "damon", "damon_aggregated", &t->tep, &event);
        if (r < 0)
                return r;
        t->id = event->id;
        t->type = tep_find_common_field(event, "common_type");
        t->common_pid = tep_find_common_field(event, "common_pid");
        struct {
                struct tep_format_field **field;
                const char *name;
        } fields[] = {
                { &t->target_id, "target_id" }, { &t->nr_regions, "nr_regions" }, { &t->start, "start" },
                { &t->end, "end" }, { &t->nr_accesses, "nr_accesses" }, { &t->age, "age" },
        };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                *fields[i].field = tep_find_field(event, fields[i].name);
        struct tep_format_field *all[] = { t->type, t->common_pid, t->target_id, t->nr_regions, t->start, t->end,
                                           t->nr_accesses, t->age };
        for (size_t i = 0; i < ELEMENTSOF(all); i++) {
                if (!all[i] || !field_size_ok(all[i]))
                        return log_debug_errno(EBADMSG, "damon/damon_aggregated lacks a field of a size it can read.");
                t->min_size = MAX(t->min_size, (size_t) all[i]->offset + (size_t) all[i]->size);
        }
        log_debug("Tracepoint damon/damon_aggregated: id %d, records >= %zu bytes.", t->id, t->min_size);
        *ret = TAKE_PTR(t);
        return 0;
}

TracepointDamon *tracepoint_damon_free(TracepointDamon *t) {
        return t ? free_with_tep(t->tep, t) : NULL;
}

int tracepoint_damon_id(const TracepointDamon *t) {
        assert(t);
        return t->id;
}

int tracepoint_damon_decode(const TracepointDamon *t, const void *raw, size_t size, DamonRecord *ret) {
        const uint8_t *p = raw;

        assert(t);
        assert(ret);

        if (!raw || size < t->min_size)
                return -EBADMSG;
        if (read_unsigned(t->type, p) != (uint64_t) t->id)
                return -ENOENT;
        *ret = (DamonRecord) {
                .common_pid = (int32_t) read_signed(t->common_pid, p),
                .target_id = read_unsigned(t->target_id, p),
                .nr_regions = read_unsigned(t->nr_regions, p),
                .start = read_unsigned(t->start, p),
                .end = read_unsigned(t->end, p),
                .nr_accesses = read_unsigned(t->nr_accesses, p),
                .age = read_unsigned(t->age, p),
        };
        return 0;
}

/* The __print_flags() of the field called name, anywhere in a print argument tree ("(REC->gfp_flags) ?
 * __print_flags(REC->gfp_flags, "|", ...) : "none"" puts it in a conditional). */
static const struct tep_print_flag_sym *find_print_flags(const struct tep_print_arg *arg, const char *name,
                unsigned depth) {
        for (; arg && depth < 32; arg = arg->next) {
                const struct tep_print_flag_sym *f = NULL;
                switch (arg->type) {
                case TEP_PRINT_FLAGS: {
                        const struct tep_print_arg *field = arg->flags.field;
                        while (field && field->type == TEP_PRINT_TYPE)
                                field = field->typecast.item;
                        if (field && field->type == TEP_PRINT_FIELD && field->field.name &&
                            streq(field->field.name, name))
                                return arg->flags.flags;
                        break;
                }
                case TEP_PRINT_OP:
                        f = find_print_flags(arg->op.left, name, depth + 1);
                        if (!f)
                                f = find_print_flags(arg->op.right, name, depth + 1);
                        break;
                case TEP_PRINT_TYPE:
                        f = find_print_flags(arg->typecast.item, name, depth + 1);
                        break;
                default:
                        break;
                }
                if (f)
                        return f;
        }
        return NULL;
}

int tracepoint_gfp_names(const char *tracefs, GfpName **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        struct tep_event *event = NULL;
        struct tep_handle *tep = NULL;
        GfpName *names = NULL;
        size_t size, n = 0, allocated = 0;
        int r;

        _cleanup_free_ char *found = NULL;

        assert(ret && ret_n);

        if (!tracefs) {
                r = tracefs_find(&found);
                if (r < 0)
                        return r;
                tracefs = found;
        }
        if (asprintf(&path, "%s/events/kmem/mm_page_alloc/format", tracefs) < 0)
                return -ENOMEM;
        r = read_file_full(path, FORMAT_SIZE_MAX, &buf, &size);
        if (r < 0)
                return log_debug_errno(r, "Failed to read %s: %m", path);
        tep = tep_alloc();
        if (!tep)
                return -ENOMEM;
        /* libtraceevent evaluates the masks' expressions while it parses, into decimal text. */
        if (tep_parse_format(tep, &event, buf, size, "kmem") != 0 || !event) {
                tep_free(tep);
                return log_debug_errno(EBADMSG, "Failed to parse the print format of %s.", path);
        }
        for (const struct tep_print_flag_sym *f = find_print_flags(event->print_fmt.args, "gfp_flags", 0); f;
             f = f->next) {
                char *end;
                errno = 0;
                unsigned long long mask = f->value ? strtoull(f->value, &end, 0) : 0;
                /* A mask that is one literal stays as the kernel wrote it, C's suffix and all: Linux 6.1
                 * prints "(( gfp_t)0x40000u)" for __GFP_COMP, where libtraceevent leaves "0x40000u". */
                if (f->value)
                        end += strspn(end, "uUlL");
                if (!f->value || !f->str || errno != 0 || *end != '\0' || mask == 0)
                        continue;
                if (greedy_realloc(&names, &allocated, n + 1, sizeof(GfpName), 64) < 0 ||
                    !(names[n].name = strdup(f->str))) {
                        /* Freed here: the sources link no core code (gfp_names_free()). */
                        while (n > 0)
                                free(names[--n].name);
                        free(names);
                        tep_free(tep);
                        return -ENOMEM;
                }
                names[n++].mask = mask;
        }
        tep_free(tep);
        if (n == 0) {
                free(names);
                return log_debug_errno(ENOENT, "%s names no GFP flags.", path);
        }
        log_debug("%zu GFP flag names from %s.", n, path);
        *ret = names;
        *ret_n = n;
        return 0;
}
