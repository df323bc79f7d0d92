/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cgroupnames.h"
#include "macro.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Deeper than any real hierarchy (systemd nests a few levels, containers a few more): a bound on the
 * recursion and on the open directories during a walk, not a limit anyone meets. */
#define WALK_DEPTH_MAX 64

typedef struct CgroupEntry {
        uint64_t id;
        char *path;                     /* owned */
} CgroupEntry;

struct CgroupNames {
        char *root;                     /* owned */
        CgroupEntry *entries;           /* owned, sorted by id */
        size_t n_entries;
        uint64_t walks;
};

typedef struct Walk {
        CgroupEntry *entries;
        size_t n, allocated;
} Walk;

static void entries_free(CgroupEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].path);
        free(e);
}

static bool is_cgroup2(const char *path) {
        struct statfs fs;

        return statfs(path, &fs) == 0 && (uint64_t) fs.f_type == (uint64_t) CGROUP2_SUPER_MAGIC;
}

const char *cgroupnames_system_root(void) {
        if (is_cgroup2("/sys/fs/cgroup"))
                return "/sys/fs/cgroup";
        if (is_cgroup2("/sys/fs/cgroup/unified"))
                return "/sys/fs/cgroup/unified";
        return NULL;
}

int cgroupnames_new(const char *root, CgroupNames **ret) {
        if (!root && !(root = cgroupnames_system_root()))
                return -ENOMEDIUM;

        _cleanup_free_ CgroupNames *c = calloc(1, sizeof(CgroupNames));
        if (!c)
                return -ENOMEM;
        c->root = strdup(root);
        if (!c->root)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

CgroupNames *cgroupnames_free(CgroupNames *c) {
        if (!c)
                return NULL;
        entries_free(c->entries, c->n_entries);
        free(c->root);
        free(c);
        return NULL;
}

const char *cgroupnames_root(const CgroupNames *c) {
        return c->root;
}

static int walk_add(Walk *w, uint64_t id, const char *path) {
        if (greedy_realloc(&w->entries, &w->allocated, w->n + 1, sizeof(CgroupEntry), 64) < 0)
                return -ENOMEM;
        char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        w->entries[w->n++] = (CgroupEntry) { .id = id, .path = p };
        return 0;
}

/* Adds the directory open at fd (path relative to the root) and, recursively, every directory below. */
static int walk_dir(Walk *w, int fd, const char *path, unsigned depth) {
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0) {
                safe_close(fd);
                return 0;       /* gone meanwhile */
        }
        r = walk_add(w, (uint64_t) st.st_ino, path);
        if (r < 0 || depth >= WALK_DEPTH_MAX) {
                safe_close(fd);
                return r;
        }

        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return 0;
        }
        size_t len = strlen(path);
        for (struct dirent *de; (de = readdir(d));) {
                if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (child < 0)
                        continue;       /* removed meanwhile, or not ours to read */
                size_t n = strlen(de->d_name);
                _cleanup_free_ char *sub = malloc(len + 1 + n + 1);
                if (!sub) {
                        safe_close(child);
                        r = -ENOMEM;
                        break;
                }
                /* "/" + name below the root, "/parent/name" further down. */
                size_t at = streq(path, "/") ? 0 : len;
                memcpy(sub, path, at);
                sub[at] = '/';
                memcpy(sub + at + 1, de->d_name, n + 1);
                r = walk_dir(w, child, sub, depth + 1);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

static int entry_compare(const void *a, const void *b) {
        const CgroupEntry *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

int cgroupnames_walk(CgroupNames *c) {
        Walk w = {};
        int r;

        int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = walk_dir(&w, fd, "/", 0);
        if (r < 0) {
                entries_free(w.entries, w.n);
                return r;
        }
        qsort(w.entries, w.n, sizeof(CgroupEntry), entry_compare);
        entries_free(c->entries, c->n_entries);
        c->entries = w.entries;
        c->n_entries = w.n;
        c->walks++;
        return 0;
}

uint64_t cgroupnames_walks(const CgroupNames *c) {
        return c->walks;
}

const char *cgroupnames_path(const CgroupNames *c, uint64_t id) {
        size_t lo = 0, hi = c->n_entries;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (c->entries[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < c->n_entries && c->entries[lo].id == id ? c->entries[lo].path : NULL;
}

size_t cgroupnames_count(const CgroupNames *c) {
        return c->n_entries;
}

static bool is_unit_component(const char *s, size_t n) {
        static const char *const suffixes[] = { ".service", ".scope", ".slice", ".socket", ".mount", ".swap" };

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t k = strlen(suffixes[i]);
                if (n > k && memcmp(s + n - k, suffixes[i], k) == 0)
                        return true;
        }
        return false;
}

const char *cgroupnames_unit_name(const char *path, size_t *ret_len) {
        size_t len = strlen(path);

        /* From the innermost component outwards. */
        for (size_t end = len; end > 0;) {
                size_t start = end;
                while (start > 0 && path[start - 1] != '/')
                        start--;
                if (end > start && is_unit_component(path + start, end - start)) {
                        *ret_len = end - start;
                        return path + start;
                }
                end = start > 0 ? start - 1 : 0;
        }
        *ret_len = len;
        return path;
}

int cgroupnames_task_path(const CgroupNames *c, const char *proc, int32_t pid, uint64_t id, char **ret_path) {
        char file[64], buf[4096], full[PATH_MAX];
        struct stat st;

        assert(c);
        assert(ret_path);

        if (pid <= 0 || (size_t) snprintf(file, sizeof(file), "%s/%d/cgroup", proc ?: "/proc", (int) pid) >= sizeof(file))
                return -EINVAL;
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        int err = errno;
        (void) close(fd);
        if (n < 0)
                return -err;
        buf[n] = '\0';

        /* "0::PATH" is the cgroup2 line; v1 hierarchies have lines of their own. */
        const char *line = startswith(buf, "0::") ? buf : strstr(buf, "\n0::");
        if (!line)
                return -ENOENT;
        line += line == buf ? 3 : 4;
        size_t len = strcspn(line, "\n");
        if (len == 0 || line[0] != '/')
                return -EBADMSG;
        /* The task may have moved since: the path must still be the cgroup of that id. */
        if ((size_t) snprintf(full, sizeof(full), "%s%.*s", c->root, (int) len, line) >= sizeof(full))
                return -ENAMETOOLONG;
        if (stat(full, &st) < 0)
                return -errno;
        if ((uint64_t) st.st_ino != id)
                return -ESTALE;
        char *path = strndup(line, len);
        if (!path)
                return -ENOMEM;
        *ret_path = path;
        return 0;
}
