/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroupnames.h"
#include "macro.h"
#include "memcg.h"
#include "parse-util.h"
#include "read-file.h"

/* memory.stat of a cgroup: a few dozen "key value" lines, 2 KiB on a 6.x kernel. */
#define MEMCG_STAT_SIZE_MAX (64u * 1024u)
/* v1's "no limit" is PAGE_COUNTER_MAX pages in bytes (LONG_MAX rounded down to a page): far above any
 * memory, so anything from 2^62 on is taken as none. */
#define MEMCG_V1_UNLIMITED_FROM (UINT64_C(1) << 62)

struct Memcg {
        MemcgHierarchy hierarchy;
        char *root;                     /* owned: the mount figures are read below */
        char *cgroup2_root;             /* owned, NULL if there is no cgroup2 mount */
};

/* Where a figure is kept: file alone (one number), or a key of a "key value" file. */
typedef struct FigureSource {
        const char *file;
        const char *key;
} FigureSource;

static const FigureSource v2_sources[_MEMCG_FIGURE_MAX] = {
        [MEMCG_CURRENT] = { "memory.current", NULL },
        [MEMCG_PEAK] = { "memory.peak", NULL },
        [MEMCG_MAX] = { "memory.max", NULL },
        [MEMCG_HIGH] = { "memory.high", NULL },
        [MEMCG_ANON] = { "memory.stat", "anon" },
        [MEMCG_FILE] = { "memory.stat", "file" },
        [MEMCG_KERNEL] = { "memory.stat", "kernel" },
        [MEMCG_KERNEL_STACK] = { "memory.stat", "kernel_stack" },
        [MEMCG_PAGETABLES] = { "memory.stat", "pagetables" },
        [MEMCG_PERCPU] = { "memory.stat", "percpu" },
        [MEMCG_SOCK] = { "memory.stat", "sock" },
        [MEMCG_VMALLOC] = { "memory.stat", "vmalloc" },
        [MEMCG_SHMEM] = { "memory.stat", "shmem" },
        [MEMCG_FILE_MAPPED] = { "memory.stat", "file_mapped" },
        [MEMCG_FILE_DIRTY] = { "memory.stat", "file_dirty" },
        [MEMCG_FILE_WRITEBACK] = { "memory.stat", "file_writeback" },
        [MEMCG_ANON_THP] = { "memory.stat", "anon_thp" },
        [MEMCG_SLAB_RECLAIMABLE] = { "memory.stat", "slab_reclaimable" },
        [MEMCG_SLAB_UNRECLAIMABLE] = { "memory.stat", "slab_unreclaimable" },
        [MEMCG_SLAB] = { "memory.stat", "slab" },
        [MEMCG_SWAPCACHED] = { "memory.stat", "swapcached" },
        [MEMCG_ZSWAP] = { "memory.stat", "zswap" },
        [MEMCG_INACTIVE_ANON] = { "memory.stat", "inactive_anon" },
        [MEMCG_ACTIVE_ANON] = { "memory.stat", "active_anon" },
        [MEMCG_INACTIVE_FILE] = { "memory.stat", "inactive_file" },
        [MEMCG_ACTIVE_FILE] = { "memory.stat", "active_file" },
};

/* v1's memory.stat keys are the hierarchical "total_" ones (what cgroup2 counts); without hierarchy
 * (use_hierarchy 0, before Linux 6.0 only) the key without the prefix is the same number. */
static const FigureSource v1_sources[_MEMCG_FIGURE_MAX] = {
        [MEMCG_CURRENT] = { "memory.usage_in_bytes", NULL },
        [MEMCG_PEAK] = { "memory.max_usage_in_bytes", NULL },
        [MEMCG_MAX] = { "memory.limit_in_bytes", NULL },
        [MEMCG_ANON] = { "memory.stat", "total_rss" },
        [MEMCG_FILE] = { "memory.stat", "total_cache" },
        [MEMCG_KERNEL] = { "memory.kmem.usage_in_bytes", NULL },
        [MEMCG_SOCK] = { "memory.kmem.tcp.usage_in_bytes", NULL },
        [MEMCG_SHMEM] = { "memory.stat", "total_shmem" },
        [MEMCG_FILE_MAPPED] = { "memory.stat", "total_mapped_file" },
        [MEMCG_FILE_DIRTY] = { "memory.stat", "total_dirty" },
        [MEMCG_FILE_WRITEBACK] = { "memory.stat", "total_writeback" },
        [MEMCG_ANON_THP] = { "memory.stat", "total_rss_huge" },
        [MEMCG_SWAPCACHED] = { "memory.stat", "total_swapcached" },
        [MEMCG_INACTIVE_ANON] = { "memory.stat", "total_inactive_anon" },
        [MEMCG_ACTIVE_ANON] = { "memory.stat", "total_active_anon" },
        [MEMCG_INACTIVE_FILE] = { "memory.stat", "total_inactive_file" },
        [MEMCG_ACTIVE_FILE] = { "memory.stat", "total_active_file" },
};

static const char *const figure_names[_MEMCG_FIGURE_MAX] = {
        [MEMCG_CURRENT] = "current",
        [MEMCG_PEAK] = "peak",
        [MEMCG_MAX] = "max",
        [MEMCG_HIGH] = "high",
        [MEMCG_ANON] = "anon",
        [MEMCG_FILE] = "file",
        [MEMCG_KERNEL] = "kernel",
        [MEMCG_KERNEL_STACK] = "kernel_stack",
        [MEMCG_PAGETABLES] = "pagetables",
        [MEMCG_PERCPU] = "percpu",
        [MEMCG_SOCK] = "sock",
        [MEMCG_VMALLOC] = "vmalloc",
        [MEMCG_SHMEM] = "shmem",
        [MEMCG_FILE_MAPPED] = "file_mapped",
        [MEMCG_FILE_DIRTY] = "file_dirty",
        [MEMCG_FILE_WRITEBACK] = "file_writeback",
        [MEMCG_ANON_THP] = "anon_thp",
        [MEMCG_SLAB_RECLAIMABLE] = "slab_reclaimable",
        [MEMCG_SLAB_UNRECLAIMABLE] = "slab_unreclaimable",
        [MEMCG_SLAB] = "slab",
        [MEMCG_SWAPCACHED] = "swapcached",
        [MEMCG_ZSWAP] = "zswap",
        [MEMCG_INACTIVE_ANON] = "inactive_anon",
        [MEMCG_ACTIVE_ANON] = "active_anon",
        [MEMCG_INACTIVE_FILE] = "inactive_file",
        [MEMCG_ACTIVE_FILE] = "active_file",
};

static const char *const event_names[_MEMCG_EVENT_MAX] = {
        [MEMCG_EVENT_LOW] = "low",
        [MEMCG_EVENT_HIGH] = "high",
        [MEMCG_EVENT_MAX] = "max",
        [MEMCG_EVENT_OOM] = "oom",
        [MEMCG_EVENT_OOM_KILL] = "oom_kill",
};

static const char *const hierarchy_names[_MEMCG_HIERARCHY_MAX] = {
        [MEMCG_HIERARCHY_V2] = "v2",
        [MEMCG_HIERARCHY_V1] = "v1",
};

const char *memcg_hierarchy_to_string(MemcgHierarchy h) {
        return h >= 0 && h < _MEMCG_HIERARCHY_MAX ? hierarchy_names[h] : NULL;
}

const char *memcg_figure_to_string(MemcgFigure x) {
        return x >= 0 && x < _MEMCG_FIGURE_MAX ? figure_names[x] : NULL;
}

const char *memcg_event_to_string(MemcgEvent e) {
        return e >= 0 && e < _MEMCG_EVENT_MAX ? event_names[e] : NULL;
}

static const FigureSource *figure_source(MemcgHierarchy h, MemcgFigure x) {
        if (x < 0 || x >= _MEMCG_FIGURE_MAX)
                return NULL;
        const FigureSource *s = h == MEMCG_HIERARCHY_V2 ? &v2_sources[x] : h == MEMCG_HIERARCHY_V1 ? &v1_sources[x] : NULL;
        return s && s->file ? s : NULL;
}

const char *memcg_figure_source(MemcgHierarchy h, MemcgFigure x) {
        /* "memory.stat key" for every pair the tables hold: static strings, made once. */
        static char text[_MEMCG_HIERARCHY_MAX][_MEMCG_FIGURE_MAX][64];
        const FigureSource *s = figure_source(h, x);

        if (!s)
                return NULL;
        if (!s->key)
                return s->file;
        if (text[h][x][0] == '\0')
                (void) snprintf(text[h][x], sizeof(text[h][x]), "%s %s", s->file, s->key);
        return text[h][x];
}

/* Whether a cgroup.controllers file lists name. */
static bool lists_controller(const char *root, const char *name) {
        _cleanup_free_ char *path = NULL;
        char buf[1024];

        if (asprintf(&path, "%s/cgroup.controllers", root) < 0)
                return false;
        if (read_file_small(path, buf, sizeof(buf)) < 0)
                return false;
        for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                if (streq(w, name))
                        return true;
        return false;
}

/* mountinfo's escapes (\040 for a space, as the kernel's show_mount_opts() writes them) undone in place. */
static void unescape_octal(char *s) {
        char *out = s;

        for (; *s; s++)
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
                        *out++ = (char) ((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
                        s += 3;
                } else
                        *out++ = *s;
        *out = '\0';
}

/* Whether a comma-separated option list has word. */
static bool has_option(const char *options, const char *word) {
        size_t n = strlen(word);

        for (const char *p = options; p && *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && memcmp(p, word, n) == 0)
                        return true;
                p += len + (p[len] == ',');
        }
        return false;
}

int memcg_find_v1_mount(const char *mountinfo, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = read_file_full(mountinfo, 1024u * 1024u, &text, &size);
        if (r < 0)
                return r;
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS */
                char *fields[5] = {}, *rest = line;
                size_t n = 0;
                while (n < ELEMENTSOF(fields) && (fields[n] = strsep(&rest, " ")))
                        n++;
                char *dash = rest ? strstr(rest, " - ") : NULL;
                if (n < ELEMENTSOF(fields) || !dash)
                        continue;
                char *after = dash + 3, *fstype = strsep(&after, " "), *source = strsep(&after, " ");
                if (!fstype || !source || !after || !streq(fstype, "cgroup") || !has_option(after, "memory"))
                        continue;
                unescape_octal(fields[4]);
                char *copy = strdup(fields[4]);
                if (!copy)
                        return -ENOMEM;
                *ret = copy;
                return 0;
        }
        return -ENOMEDIUM;
}

Memcg *memcg_free(Memcg *m) {
        if (!m)
                return NULL;
        free(m->root);
        free(m->cgroup2_root);
        free(m);
        return NULL;
}

int memcg_new(const char *cgroup2_root, const char *memory_root, Memcg **ret) {
        _cleanup_(memcg_freep) Memcg *m = calloc(1, sizeof(Memcg));
        int r;

        assert(ret);

        if (!m)
                return -ENOMEM;
        if (!cgroup2_root)
                cgroup2_root = cgroupnames_system_root();
        if (cgroup2_root && !(m->cgroup2_root = strdup(cgroup2_root)))
                return -ENOMEM;

        if (memory_root) {
                m->hierarchy = lists_controller(memory_root, "memory") ? MEMCG_HIERARCHY_V2 : MEMCG_HIERARCHY_V1;
                m->root = strdup(memory_root);
        } else if (cgroup2_root && lists_controller(cgroup2_root, "memory")) {
                m->hierarchy = MEMCG_HIERARCHY_V2;
                m->root = strdup(cgroup2_root);
        } else {
                r = memcg_find_v1_mount("/proc/self/mountinfo", &m->root);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return -ENOMEDIUM;
                m->hierarchy = MEMCG_HIERARCHY_V1;
        }
        if (!m->root)
                return -ENOMEM;
        *ret = TAKE_PTR(m);
        return 0;
}

MemcgHierarchy memcg_hierarchy(const Memcg *m) {
        return m->hierarchy;
}

const char *memcg_root(const Memcg *m) {
        return m->root;
}

const char *memcg_cgroup2_root(const Memcg *m) {
        return m->cgroup2_root;
}

/* A number, or "max" (cgroup2's word for no limit): -EINVAL for anything else. */
static int parse_value(const char *s, size_t len, uint64_t *ret) {
        char buf[32];

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (streq(buf, "max")) {
                *ret = MEMCG_UNLIMITED;
                return 0;
        }
        return parse_uint64(buf, 0, UINT64_MAX, ret);
}

/* The value of key in a text of "key value" lines; -ENOENT if it has none. */
static int find_key(const char *text, const char *key, uint64_t *ret) {
        size_t n = strlen(key);

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
                if (strncmp(line, key, n) == 0 && line[n] == ' ')
                        return parse_value(line + n + 1, strcspn(line + n + 1, "\n"), ret);
        return -ENOENT;
}

/* One number from dir/file (trailing newline allowed). */
static int read_number(const char *dir, const char *file, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;
        char buf[64];

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        ssize_t n = read_file_small(path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        return parse_value(buf, strcspn(buf, "\n"), ret);
}

/* The text of dir/file, or NULL (unreadable: its figures stay unknown); -ENOMEM only for lack of memory. */
static int read_text(const char *dir, const char *file, char **ret) {
        _cleanup_free_ char *path = NULL;
        size_t size;

        *ret = NULL;
        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        int r = read_file_full(path, MEMCG_STAT_SIZE_MAX, ret, &size);
        return r == -ENOMEM ? r : 0;
}

static void set_figure(MemcgFigures *f, MemcgFigure x, uint64_t value) {
        f->value[x] = value;
        f->known |= UINT32_C(1) << x;
}

static void set_event(MemcgFigures *f, MemcgEvent e, uint64_t value) {
        f->events[e] = value;
        f->events_known |= UINT32_C(1) << e;
}

static int read_events(const Memcg *m, const char *dir, MemcgFigures *f) {
        uint64_t v;
        int r;

        if (m->hierarchy == MEMCG_HIERARCHY_V1) {
                /* Times usage hit the limit, and the kills the controller's OOM killer made. */
                if (read_number(dir, "memory.failcnt", &v) >= 0)
                        set_event(f, MEMCG_EVENT_MAX, v);
                _cleanup_free_ char *oom = NULL;
                r = read_text(dir, "memory.oom_control", &oom);
                if (r < 0)
                        return r;
                if (oom && find_key(oom, "oom_kill", &v) >= 0)
                        set_event(f, MEMCG_EVENT_OOM_KILL, v);
                return 0;
        }
        _cleanup_free_ char *events = NULL;
        r = read_text(dir, "memory.events", &events);
        if (r < 0)
                return r;
        for (MemcgEvent e = 0; events && e < _MEMCG_EVENT_MAX; e++)
                if (find_key(events, event_names[e], &v) >= 0)
                        set_event(f, e, v);
        return 0;
}

/* An absolute path none of whose components is "..": it stays below the mount. */
static bool path_is_below(const char *path) {
        if (path[0] != '/')
                return false;
        for (const char *p = path; *p;) {
                p += strspn(p, "/");
                size_t len = strcspn(p, "/");
                if (len == 2 && p[0] == '.' && p[1] == '.')
                        return false;
                p += len;
        }
        return true;
}

int memcg_read(const Memcg *m, const char *path, MemcgFigures *ret) {
        _cleanup_free_ char *dir = NULL, *stat_text = NULL;
        MemcgFigures f = { .hierarchy = m->hierarchy };
        struct stat st;
        uint64_t v;
        int r;

        assert(m && path && ret);

        if (!path_is_below(path))
                return -EINVAL;
        if (asprintf(&dir, "%s%s", m->root, streq(path, "/") ? "" : path) < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                return -ENOENT;

        r = read_text(dir, "memory.stat", &stat_text);
        if (r < 0)
                return r;
        for (MemcgFigure x = 0; x < _MEMCG_FIGURE_MAX; x++) {
                const FigureSource *s = figure_source(m->hierarchy, x);
                if (!s)
                        continue;
                if (!s->key)
                        r = read_number(dir, s->file, &v);
                else if (!stat_text)
                        continue;
                else {
                        r = find_key(stat_text, s->key, &v);
                        if (r == -ENOENT && startswith(s->key, "total_"))
                                r = find_key(stat_text, s->key + strlen("total_"), &v);
                }
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                if (m->hierarchy == MEMCG_HIERARCHY_V1 && x == MEMCG_MAX && v >= MEMCG_V1_UNLIMITED_FROM)
                        v = MEMCG_UNLIMITED;
                set_figure(&f, x, v);
        }
        r = read_events(m, dir, &f);
        if (r < 0)
                return r;
        *ret = f;
        return 0;
}

int memcg_read_limits(const Memcg *m, const char *path, uint64_t *ret_current, uint64_t *ret_max,
                uint64_t *ret_high) {
        _cleanup_free_ char *dir = NULL;
        uint64_t current, limit[2] = { MEMCG_UNLIMITED, MEMCG_UNLIMITED };
        int r;

        assert(m && path && ret_current && ret_max && ret_high);

        if (!path_is_below(path))
                return -EINVAL;
        if (asprintf(&dir, "%s%s", m->root, streq(path, "/") ? "" : path) < 0)
                return -ENOMEM;
        r = read_number(dir, figure_source(m->hierarchy, MEMCG_CURRENT)->file, &current);
        if (r < 0)
                return r == -ENOENT ? -ENOENT : r;
        for (size_t i = 0; i < 2; i++) {
                const FigureSource *s = figure_source(m->hierarchy, i == 0 ? MEMCG_MAX : MEMCG_HIGH);
                if (s && read_number(dir, s->file, &limit[i]) < 0)
                        limit[i] = MEMCG_UNLIMITED;
        }
        if (m->hierarchy == MEMCG_HIERARCHY_V1 && limit[0] >= MEMCG_V1_UNLIMITED_FROM)
                limit[0] = MEMCG_UNLIMITED;
        *ret_current = current;
        *ret_max = limit[0];
        *ret_high = limit[1];
        return 0;
}
