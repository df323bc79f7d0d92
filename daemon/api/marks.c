/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "marks.h"
#include "utf8.h"
#include "varlink.h"

typedef struct MarkTask {
        int32_t pid;
        bool exited;
        uint64_t first_seen_nsec;       /* tells a reused pid apart */
        char comm[VIEW_COMM_MAX];
        uint64_t pages;
} MarkTask;

/* marks.h states what a mark costs. */
_Static_assert(sizeof(MarkTask) == 40, "MarkTask grew: update the cost in marks.h and docs/protocol.md");

typedef struct MarkModule {
        char *name;
        uint64_t pages;
} MarkModule;

typedef struct Mark {
        uid_t uid;                      /* whose: names are per uid */
        char name[MARK_NAME_MAX + 1];
        uint64_t timestamp_usec;
        uint64_t total_pages;
        uint64_t resets;                /* AccountingStats.resets when taken */
        MarkTask *tasks;                /* owned */
        size_t n_tasks;
        MarkModule *modules;            /* owned, names owned */
        size_t n_modules;
} Mark;

struct Marks {
        Mark *items[MARKS_MAX];         /* owned; NULL slots are free */
        uint64_t diff_steps;            /* comparisons the last diff made (sorts and merges) */
};

/* Marks keep tasks sorted by (pid, first seen) and modules by name, so a diff is a merge. */
static int compare_tasks(const void *a, const void *b, void *userdata) {
        const MarkTask *x = a, *y = b;
        uint64_t *steps = userdata;

        (*steps)++;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        if (x->first_seen_nsec != y->first_seen_nsec)
                return x->first_seen_nsec < y->first_seen_nsec ? -1 : 1;
        return 0;
}

static int compare_modules(const void *a, const void *b, void *userdata) {
        const MarkModule *x = a, *y = b;
        uint64_t *steps = userdata;

        (*steps)++;
        return strcmp(x->name, y->name);
}

static Mark *mark_free(Mark *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_modules; i++)
                free(s->modules[i].name);
        free(s->modules);
        free(s->tasks);
        free(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Mark *, mark_free);
Marks *marks_new(void) {
        return calloc(1, sizeof(Marks));
}

Marks *marks_free(Marks *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < MARKS_MAX; i++)
                mark_free(s->items[i]);
        free(s);
        return NULL;
}

uint64_t marks_diff_steps(const Marks *s) {
        return s->diff_steps;
}

size_t marks_count(const Marks *s) {
        size_t n = 0;
        for (size_t i = 0; i < MARKS_MAX; i++)
                n += s->items[i] != NULL;
        return n;
}

static Mark **find(Marks *s, uid_t uid, const char *name) {
        for (size_t i = 0; i < MARKS_MAX; i++)
                if (s->items[i] && s->items[i]->uid == uid && streq(s->items[i]->name, name))
                        return &s->items[i];
        return NULL;
}

/* Marks of uid, or with others of every uid but root. */
static size_t count_of(const Marks *s, bool others, uid_t uid) {
        size_t n = 0;
        for (size_t i = 0; i < MARKS_MAX; i++)
                n += s->items[i] && (others ? s->items[i]->uid != 0 : s->items[i]->uid == uid);
        return n;
}

static int compare_mark_age(const void *a, const void *b) {
        const Mark *x = *(const Mark *const *) a, *y = *(const Mark *const *) b;

        if (x->timestamp_usec != y->timestamp_usec)
                return x->timestamp_usec < y->timestamp_usec ? -1 : 1;
        if (x->uid != y->uid)
                return x->uid < y->uid ? -1 : 1;
        return strcmp(x->name, y->name);
}

static int capture(Accounting *a, const char *name, uint64_t now_usec, uint64_t *steps, Mark **ret) {
        _cleanup_(mark_freep) Mark *snap = calloc(1, sizeof(Mark));
        AccountingStats stats;
        ViewModule m;
        ViewTask t;

        if (!snap)
                return -ENOMEM;
        (void) snprintf(snap->name, sizeof(snap->name), "%s", name);
        snap->timestamp_usec = now_usec;
        view_accounting_stats(a, &stats);
        snap->total_pages = stats.current_pages;
        snap->resets = stats.resets;

        size_t n_slots = view_task_slots(a);
        snap->tasks = malloc(MAX(n_slots, (size_t) 1) * sizeof(MarkTask));
        if (!snap->tasks)
                return -ENOMEM;
        for (uint32_t i = 0; i < n_slots; i++) {
                /* Tasks only: what evicted tasks still hold is no task's (Tasks "evicted"). */
                if (i == VIEW_TASK_EVICTED || !view_task(a, i, &t) || t.is_thread)
                        continue;
                MarkTask *st = &snap->tasks[snap->n_tasks++];
                *st = (MarkTask) { .pid = t.pid, .first_seen_nsec = t.first_seen_nsec,
                                   .pages = t.pages.current, .exited = t.exited };
                (void) snprintf(st->comm, sizeof(st->comm), "%s", t.comm);
        }

        size_t n_modules = view_module_count(a);
        snap->modules = calloc(MAX(n_modules, (size_t) 1), sizeof(MarkModule));
        if (!snap->modules)
                return -ENOMEM;
        for (uint16_t id = 1; id <= n_modules; id++) {
                if (!view_module(a, id, &m))
                        continue;
                char *copy = strdup(m.name);
                if (!copy)
                        return -ENOMEM;
                snap->modules[snap->n_modules++] = (MarkModule) { .name = copy, .pages = m.pages.current };
        }
        qsort_r(snap->tasks, snap->n_tasks, sizeof(MarkTask), compare_tasks, steps);
        qsort_r(snap->modules, snap->n_modules, sizeof(MarkModule), compare_modules, steps);
        *ret = TAKE_PTR(snap);
        return 0;
}

int marks_list(const Marks *s, Accounting *a, bool all_uids, uid_t uid, json_t **ret) {
        json_auto_t *list = json_array();
        AccountingStats stats;

        if (!list)
                return -ENOMEM;
        view_accounting_stats(a, &stats);
        /* Oldest first: the order they are usually compared in. */
        const Mark *sorted[MARKS_MAX];
        size_t n = 0;
        for (size_t i = 0; i < MARKS_MAX; i++)
                if (s->items[i] && (all_uids || s->items[i]->uid == uid))
                        sorted[n++] = s->items[i];
        qsort(sorted, n, sizeof(Mark *), compare_mark_age);
        for (size_t i = 0; i < n; i++) {
                json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:b}", "name", sorted[i]->name,
                                      "uid", varlink_count(sorted[i]->uid),
                                      "timestampUsec", varlink_count(sorted[i]->timestamp_usec),
                                      "trackedPages", varlink_count(sorted[i]->total_pages),
                                      "resetSince", stats.resets != sorted[i]->resets);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:O}", "snapshots", list);
        return *ret ? 0 : -ENOMEM;
}

int marks_save(Marks *s, uid_t uid, const char *name, Accounting *a, uint64_t now_usec) {
        Mark *snap = NULL;
        int r;

        if (!name || !*name || strlen(name) > MARK_NAME_MAX)
                return -EINVAL;

        /* Replacing one's own mark takes no room; a new one must fit the caller's bound and, for all but
         * root, the others' shared one. Root's room is its own: MARKS_MAX holds both. */
        Mark **slot = find(s, uid, name);
        if (!slot) {
                if (count_of(s, false, uid) >= MARKS_PER_UID_MAX)
                        return -EDQUOT;
                if (uid != 0 && count_of(s, true, 0) >= MARKS_OTHERS_MAX)
                        return -ENOSPC;
                for (size_t i = 0; i < MARKS_MAX && !slot; i++)
                        if (!s->items[i])
                                slot = &s->items[i];
                assert(slot);
        }

        uint64_t steps = 0;
        r = capture(a, name, now_usec, &steps, &snap);
        if (r < 0)
                return r;
        snap->uid = uid;
        mark_free(*slot);
        *slot = snap;
        return 0;
}

int marks_delete(Marks *s, uid_t uid, const char *name) {
        Mark **slot = name ? find(s, uid, name) : NULL;

        if (!slot)
                return -ENOENT;
        *slot = mark_free(*slot);
        return 0;
}

typedef struct DiffItem {
        int64_t delta;
        uint64_t before, after;
        const char *name;       /* comm or module name, borrowed */
        int32_t pid;
        bool appeared, exited;
} DiffItem;

static int compare_diffs(const void *a, const void *b) {
        const DiffItem *x = a, *y = b;
        uint64_t dx = (uint64_t) llabs(x->delta), dy = (uint64_t) llabs(y->delta);
        if (dx != dy)
                return dx > dy ? -1 : 1;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return strcmp(x->name, y->name);
}

int marks_diff(Marks *s, uid_t uid, const char *name, Accounting *a, uint64_t now_usec, size_t limit,
                json_t **ret) {
        _cleanup_(mark_freep) Mark *now = NULL;
        _cleanup_free_ DiffItem *items = NULL;
        json_auto_t *tasks = json_array(), *modules = json_array();
        size_t n = 0;
        int r;

        Mark **slot = find(s, uid, name);
        if (!slot)
                return -ENOENT;
        Mark *then = *slot;
        limit = MIN(limit ?: 50, (size_t) 10000);
        if (!tasks || !modules)
                return -ENOMEM;

        s->diff_steps = 0;
        r = capture(a, "", now_usec, &s->diff_steps, &now);
        if (r < 0)
                return r;

        items = malloc((now->n_tasks + then->n_tasks + now->n_modules + then->n_modules + 1) * sizeof(DiffItem));
        if (!items)
                return -ENOMEM;

        /* Tasks: the same pid first seen at the same time is the same task. Both lists are sorted by that
         * key, so one merge pairs them: O(n) here, O(n log n) for the sort of the current tasks. */
        for (size_t i = 0, j = 0; i < now->n_tasks || j < then->n_tasks;) {
                const MarkTask *t = i < now->n_tasks ? &now->tasks[i] : NULL;
                const MarkTask *old = j < then->n_tasks ? &then->tasks[j] : NULL;
                int c = !t ? 1 : !old ? -1 : compare_tasks(t, old, &s->diff_steps);

                if (c > 0) {
                        /* Gone since the snapshot: exited and evicted, or forgotten by a reset. */
                        if (old->pages > 0)
                                items[n++] = (DiffItem) { -(int64_t) old->pages, old->pages, 0, old->comm, old->pid,
                                                          false, true };
                        j++;
                        continue;
                }
                if (c < 0)
                        old = NULL;
                else
                        j++;
                i++;
                uint64_t before = old ? old->pages : 0;
                if (before == t->pages)
                        continue;
                /* The task's state now: a matched task may have exited since. */
                items[n++] = (DiffItem) { (int64_t) (t->pages - before), before, t->pages, t->comm, t->pid, !old,
                                          t->exited };
        }

        qsort(items, n, sizeof(DiffItem), compare_diffs);
        for (size_t i = 0; i < n && i < limit; i++) {
                json_t *o = json_pack("{s:i, s:o, s:I, s:I, s:I, s:b, s:b}", "pid", (int) items[i].pid,
                                      "comm", utf8_json_string(items[i].name),
                                      "beforePages", varlink_count(items[i].before),
                                      "afterPages", varlink_count(items[i].after),
                                      "deltaPages", (json_int_t) items[i].delta, "appeared", items[i].appeared,
                                      "exited", items[i].exited);
                if (!o || json_array_append_new(tasks, o) < 0)
                        return -ENOMEM;
        }

        /* Modules: matched by name (names are unique), both lists sorted by it. Modules are never
         * forgotten, so every module of the snapshot is still there. */
        n = 0;
        for (size_t i = 0, j = 0; i < now->n_modules; i++) {
                const MarkModule *mod = &now->modules[i];
                uint64_t before = 0;
                int c = 1;

                while (j < then->n_modules && (c = compare_modules(&then->modules[j], mod, &s->diff_steps)) < 0)
                        j++;
                if (j < then->n_modules && c == 0)
                        before = then->modules[j].pages;
                if (before != mod->pages)
                        items[n++] = (DiffItem) { (int64_t) (mod->pages - before), before, mod->pages, mod->name, 0,
                                                  false, false };
        }
        qsort(items, n, sizeof(DiffItem), compare_diffs);
        for (size_t i = 0; i < n && i < limit; i++) {
                json_t *o = json_pack("{s:o, s:I, s:I, s:I}", "name", utf8_json_string(items[i].name),
                                      "beforePages", varlink_count(items[i].before),
                                      "afterPages", varlink_count(items[i].after),
                                      "deltaPages", (json_int_t) items[i].delta);
                if (!o || json_array_append_new(modules, o) < 0)
                        return -ENOMEM;
        }

        *ret = json_pack("{s:s, s:I, s:b, s:I, s:I, s:I, s:O, s:O}", "name", then->name,
                         "snapshotTimestampUsec", varlink_count(then->timestamp_usec),
                         "resetSince", now->resets != then->resets,
                         "timestampUsec", varlink_count(now_usec),
                         "beforePages", varlink_count(then->total_pages),
                         "afterPages", varlink_count(now->total_pages), "tasks", tasks, "modules", modules);
        return *ret ? 0 : -ENOMEM;
}
