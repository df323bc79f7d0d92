/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "keyindex.h"
#include "usage.h"
#include "utf8.h"

struct Usage {
        Task *tasks;            /* owned; slot 0 is "[evicted]" */
        size_t n_tasks, n_allocated;
        uint32_t *free_slots;   /* owned, room for n_allocated; evicted slots no page refers to any more */
        size_t n_free;

        KeyIndex processes;     /* tgid -> newest process record with that tgid */
        KeyIndex threads;       /* tid -> newest thread record (thread tracking only) */

        size_t n_exited, max_exited;            /* records exited and not evicted */
        uint32_t exited_head, exited_tail;      /* those records, oldest exit first (Task.exited_*) */

        ModuleUsage *modules;   /* owned; id i is modules[i - 1] */
        size_t n_modules;

        bool track_threads;
        int32_t last_pid, last_tid;
        uint32_t last_idx;      /* hot-path cache of the last lookup */

        uint64_t tasks_evicted, tasks_recycled, modules_dropped, underflows;
        size_t cmdline_bytes;   /* of every Task.cmdline, so that usage_memory_bytes() is no walk */
};

/* Replaces a task's command line with a copy of cmdline (NULL: none); a copy that fails leaves none. */
static void task_set_cmdline(Usage *u, Task *t, const char *cmdline) {
        if (t->cmdline)
                u->cmdline_bytes -= strlen(t->cmdline) + 1;
        free(t->cmdline);
        t->cmdline = cmdline ? strdup(cmdline) : NULL;
        if (t->cmdline)
                u->cmdline_bytes += strlen(t->cmdline) + 1;
}

/* A task id (a tgid or tid) as a key of the id maps. */
static uint64_t id_key(int32_t id) {
        return (uint32_t) id;
}

static uint32_t idmap_get(const KeyIndex *m, int32_t id) {
        uint32_t idx = key_index_get(m, id_key(id));
        return idx == KEY_INDEX_NONE ? USAGE_TASK_NONE : idx;
}

static int idmap_put(KeyIndex *m, int32_t id, uint32_t idx) {
        return key_index_put(m, id_key(id), idx);
}

/* Removes id only if it still maps to idx (a newer record may have taken the id). */
static void idmap_remove(KeyIndex *m, int32_t id, uint32_t idx) {
        if (idmap_get(m, id) == idx)
                (void) key_index_remove(m, id_key(id));
}

static void set_comm(Task *t, const char *comm) {
        (void) snprintf(t->comm, sizeof(t->comm), "%s", comm);
}

static void init_evicted_record(Usage *u) {
        u->tasks[USAGE_TASK_EVICTED] = (Task) {
                .pid = -1,
                .tgid = -1,
                .process = USAGE_TASK_EVICTED,
                .first_thread = USAGE_TASK_NONE,
                .thread_prev = USAGE_TASK_NONE,
                .thread_next = USAGE_TASK_NONE,
                .exited_prev = USAGE_TASK_NONE,
                .exited_next = USAGE_TASK_NONE,
        };
        set_comm(&u->tasks[USAGE_TASK_EVICTED], USAGE_EVICTED_COMM);
        u->n_tasks = 1;
        u->exited_head = u->exited_tail = USAGE_TASK_NONE;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Usage *, usage_free);

Usage *usage_new(bool track_threads, size_t max_exited) {
        _cleanup_(usage_freep) Usage *u = calloc(1, sizeof(Usage));
        if (!u)
                return NULL;

        u->track_threads = track_threads;
        u->max_exited = max_exited;
        u->last_idx = USAGE_TASK_NONE;
        u->n_allocated = 256;
        u->tasks = malloc(u->n_allocated * sizeof(Task));
        /* Room for every slot on the free list from the start: recycling a slot never fails. */
        u->free_slots = malloc(u->n_allocated * sizeof(uint32_t));
        if (!u->tasks || !u->free_slots)
                return NULL;
        init_evicted_record(u);
        return TAKE_PTR(u);
}

static void tasks_done(Usage *u) {
        for (size_t i = 0; i < u->n_tasks; i++)
                free(u->tasks[i].cmdline);
}

Usage *usage_free(Usage *u) {
        if (!u)
                return NULL;
        tasks_done(u);
        for (size_t i = 0; i < u->n_modules; i++)
                free(u->modules[i].name);
        free(u->modules);
        key_index_done(&u->processes);
        key_index_done(&u->threads);
        free(u->free_slots);
        free(u->tasks);
        free(u);
        return NULL;
}

bool usage_tracks_threads(const Usage *u) {
        return u->track_threads;
}

/* Exit order is the order of the events (the sources merge them by time), so appending keeps the list
 * oldest first and the next record to evict is its head. */
static void mark_exited(Usage *u, uint32_t idx, uint64_t now_nsec) {
        Task *t = &u->tasks[idx];

        if (t->exited)
                return;
        t->exited = true;
        t->exit_nsec = now_nsec;
        t->exited_prev = u->exited_tail;
        t->exited_next = USAGE_TASK_NONE;
        if (u->exited_tail != USAGE_TASK_NONE)
                u->tasks[u->exited_tail].exited_next = idx;
        else
                u->exited_head = idx;
        u->exited_tail = idx;
        u->n_exited++;
}

static void exited_unlink(Usage *u, uint32_t idx) {
        Task *t = &u->tasks[idx];

        if (t->exited_prev != USAGE_TASK_NONE)
                u->tasks[t->exited_prev].exited_next = t->exited_next;
        else
                u->exited_head = t->exited_next;
        if (t->exited_next != USAGE_TASK_NONE)
                u->tasks[t->exited_next].exited_prev = t->exited_prev;
        else
                u->exited_tail = t->exited_prev;
        t->exited_prev = t->exited_next = USAGE_TASK_NONE;
        u->n_exited--;
}

/* A thread record joins its process's list, which the process's eviction walks. */
static void thread_link(Usage *u, uint32_t thread, uint32_t process) {
        Task *t = &u->tasks[thread], *p = &u->tasks[process];

        t->thread_prev = USAGE_TASK_NONE;
        t->thread_next = p->first_thread;
        if (p->first_thread != USAGE_TASK_NONE)
                u->tasks[p->first_thread].thread_prev = thread;
        p->first_thread = thread;
        p->n_threads++;
}

static void thread_unlink(Usage *u, uint32_t thread) {
        Task *t = &u->tasks[thread], *p = &u->tasks[t->process];

        if (t->thread_prev != USAGE_TASK_NONE)
                u->tasks[t->thread_prev].thread_next = t->thread_next;
        else
                p->first_thread = t->thread_next;
        if (t->thread_next != USAGE_TASK_NONE)
                u->tasks[t->thread_next].thread_prev = t->thread_prev;
        t->thread_prev = t->thread_next = USAGE_TASK_NONE;
        p->n_threads--;
}

/* A fresh record; USAGE_TASK_NONE on OOM. Reuses evicted slots first. */
static uint32_t task_new(Usage *u, int32_t pid, int32_t tgid, bool is_thread, uint64_t now_nsec) {
        uint32_t idx, generation = 0;

        if (u->n_free > 0) {
                idx = u->free_slots[--u->n_free];
                generation = u->tasks[idx].generation + 1;
        } else {
                if (u->n_tasks == u->n_allocated) {
                        if (u->n_allocated >= USAGE_TASK_NONE / 2)
                                return USAGE_TASK_NONE;
                        uint32_t *f = realloc(u->free_slots, u->n_allocated * 2 * sizeof(uint32_t));
                        if (!f)
                                return USAGE_TASK_NONE;
                        u->free_slots = f;
                        Task *t = realloc(u->tasks, u->n_allocated * 2 * sizeof(Task));
                        if (!t)
                                return USAGE_TASK_NONE;
                        u->tasks = t;
                        u->n_allocated *= 2;
                }
                idx = (uint32_t) u->n_tasks++;
        }

        u->tasks[idx] = (Task) {
                .pid = pid,
                .tgid = tgid,
                .process = idx,
                .first_seen_nsec = now_nsec,
                .charge_hint = UINT32_MAX,
                .first_thread = USAGE_TASK_NONE,
                .thread_prev = USAGE_TASK_NONE,
                .thread_next = USAGE_TASK_NONE,
                .exited_prev = USAGE_TASK_NONE,
                .exited_next = USAGE_TASK_NONE,
                .generation = generation,
                .is_thread = is_thread,
        };
        /* Until a COMM record or /proc says otherwise. */
        (void) snprintf(u->tasks[idx].comm, sizeof(u->tasks[idx].comm), "%s", pid == 0 ? "swapper" : "<unknown>");
        return idx;
}

static uint32_t process_get(Usage *u, int32_t pid, uint64_t now_nsec) {
        uint32_t idx = idmap_get(&u->processes, pid);
        if (idx != USAGE_TASK_NONE)
                return idx;

        idx = task_new(u, pid, pid, false, now_nsec);
        if (idx == USAGE_TASK_NONE)
                return idx;
        if (idmap_put(&u->processes, pid, idx) < 0)
                return USAGE_TASK_NONE; /* the slot stays unreferenced; harmless */
        return idx;
}

static uint32_t thread_get(Usage *u, int32_t pid, int32_t tid, uint32_t process, uint64_t now_nsec) {
        uint32_t idx = idmap_get(&u->threads, tid);
        if (idx != USAGE_TASK_NONE) {
                if (u->tasks[idx].tgid == pid)
                        return idx;
                /* The id now names a thread of another process: its old thread is gone. */
                mark_exited(u, idx, now_nsec);
        }

        idx = task_new(u, tid, pid, true, now_nsec);
        if (idx == USAGE_TASK_NONE)
                return idx;
        u->tasks[idx].process = process;
        thread_link(u, idx, process);
        memcpy(u->tasks[idx].comm, u->tasks[process].comm, sizeof(u->tasks[idx].comm));
        if (idmap_put(&u->threads, tid, idx) < 0)
                return USAGE_TASK_NONE;
        return idx;
}

uint32_t usage_task_lookup(Usage *u, int32_t pid, int32_t tid, uint64_t now_nsec) {
        if (pid == u->last_pid && tid == u->last_tid && u->last_idx != USAGE_TASK_NONE)
                return u->last_idx;

        uint32_t idx = process_get(u, pid, now_nsec);
        if (idx != USAGE_TASK_NONE && u->track_threads)
                idx = thread_get(u, pid, tid, idx, now_nsec);

        u->last_pid = pid;
        u->last_tid = tid;
        u->last_idx = idx;
        return idx;
}

static void forget_last(Usage *u) {
        u->last_idx = USAGE_TASK_NONE;
}

uint32_t usage_task_fork(Usage *u, int32_t parent_pid, int32_t pid, int32_t tid, uint64_t now_nsec) {
        forget_last(u);

        if (pid == tid) {
                uint32_t old = idmap_get(&u->processes, pid);
                if (old != USAGE_TASK_NONE) {
                        /* Seeded from /proc after this fork happened (the sources seed after they start
                         * tracing, so a task born in between is met twice): the same process. */
                        if (u->tasks[old].seeded && !u->tasks[old].exited && u->tasks[old].seeded_nsec >= now_nsec)
                                return old;
                        /* Otherwise the pid was reused: whoever had it is gone, even if its exit was never
                         * seen (lost, or before tracing), and must not stay alive unmapped for good. */
                        mark_exited(u, old, now_nsec);
                }

                /* A new process. */
                uint32_t parent = idmap_get(&u->processes, parent_pid);
                uint32_t idx = task_new(u, pid, pid, false, now_nsec);
                if (idx == USAGE_TASK_NONE)
                        return idx;
                u->tasks[idx].parent_pid = parent_pid;
                /* Until it execs, a child runs its parent's program: it shows the parent's name and
                 * command line (a failed copy only leaves the command line unknown). */
                if (parent != USAGE_TASK_NONE) {
                        memcpy(u->tasks[idx].comm, u->tasks[parent].comm, sizeof(u->tasks[idx].comm));
                        if (u->tasks[parent].cmdline)
                                task_set_cmdline(u, &u->tasks[idx], u->tasks[parent].cmdline);
                }
                if (idmap_put(&u->processes, pid, idx) < 0)
                        return USAGE_TASK_NONE;
                return idx;
        }

        uint32_t process = process_get(u, pid, now_nsec);
        if (process == USAGE_TASK_NONE || !u->track_threads)
                return process;
        return thread_get(u, pid, tid, process, now_nsec);
}

uint32_t usage_task_seed(Usage *u, int32_t pid, int32_t parent_pid, const char *comm, const char *cmdline,
                uint64_t baseline_pages, uint64_t now_nsec) {
        forget_last(u);
        uint32_t idx = process_get(u, pid, now_nsec);
        if (idx == USAGE_TASK_NONE)
                return idx;

        Task *t = &u->tasks[idx];
        if (comm)
                set_comm(t, comm);
        if (cmdline)
                task_set_cmdline(u, t, cmdline);
        if (parent_pid > 0)
                t->parent_pid = parent_pid;
        t->seeded = true;
        t->seeded_nsec = now_nsec;
        t->baseline_pages = baseline_pages;
        return idx;
}

void usage_task_set_comm(Usage *u, int32_t pid, int32_t tid, const char *comm, const char *cmdline,
                uint64_t now_nsec) {
        uint32_t process = process_get(u, pid, now_nsec);
        if (process == USAGE_TASK_NONE)
                return;

        /* The leader's name is the process's name; other threads may rename only themselves. */
        if (tid == pid && comm)
                set_comm(&u->tasks[process], comm);
        if (cmdline)
                task_set_cmdline(u, &u->tasks[process], cmdline);
        if (u->track_threads && comm) {
                uint32_t thread = thread_get(u, pid, tid, process, now_nsec);
                if (thread != USAGE_TASK_NONE)
                        set_comm(&u->tasks[thread], comm);
        }
        forget_last(u);
}

void usage_task_exit(Usage *u, int32_t pid, int32_t tid, uint64_t now_nsec) {
        /* A task first met at its exit (it began before tracing and ends before the seed reaches it) gets
         * its record all the same, exited: what it frees and allocates on its way out must not make a
         * live ghost of it. The record stays mapped, so stragglers of the same process are still charged
         * to it, until a fork reuses the pid. */
        uint32_t process = process_get(u, pid, now_nsec);
        if (process == USAGE_TASK_NONE)
                return;
        if (u->track_threads) {
                uint32_t thread = thread_get(u, pid, tid, process, now_nsec);
                if (thread != USAGE_TASK_NONE)
                        mark_exited(u, thread, now_nsec);
        }
        if (tid == pid)
                mark_exited(u, process, now_nsec);
}

void usage_task_charge(Usage *u, uint32_t task, LedgerUnit unit, uint64_t n) {
        Task *t = &u->tasks[task];

        /* allocs and frees count page allocations: slab objects have their own counts (slab.h). */
        bool pages = unit == LEDGER_PAGES;

        ledger_add(&t->ledger[unit], n);
        t->allocs += pages;
        if (t->process != task) {
                Task *p = &u->tasks[t->process];
                ledger_add(&p->ledger[unit], n);
                p->allocs += pages;
                ledger_mark(&p->ledger[unit], &p->interval_peak[unit]);
        } else
                ledger_mark(&t->ledger[unit], &t->interval_peak[unit]);
}

static void ledger_release(Usage *u, Ledger *l, uint64_t *frees, uint64_t n) {
        if (!ledger_sub(l, n))
                u->underflows++;
        if (frees)
                (*frees)++;
}

static bool holds_nothing(const Task *t) {
        for (LedgerUnit unit = 0; unit < _LEDGER_UNIT_MAX; unit++)
                if (t->ledger[unit].current > 0)
                        return false;
        return true;
}

/* Frees an evicted slot for reuse, or retires it for good when its next task's generation would wrap (a
 * scope key of that generation may still name the first of its tasks). */
static void recycle(Usage *u, uint32_t idx) {
        Task *t = &u->tasks[idx];

        task_set_cmdline(u, t, NULL);
        t->recycled = true;
        if (t->generation < UINT32_MAX)
                u->free_slots[u->n_free++] = idx;
}

/* Puts an evicted slot on the free list once nothing refers to it: no page (its count, which for a
 * process includes its threads'), no slab object and, for a process, no thread record. */
static void maybe_recycle(Usage *u, uint32_t idx) {
        Task *t = &u->tasks[idx];

        if (!t->evicted || t->recycled || !holds_nothing(t) || t->n_objects > 0 ||
            (!t->is_thread && t->n_threads > 0))
                return;
        recycle(u, idx);
        u->tasks_recycled++;
        if (t->is_thread && t->process != idx) {
                thread_unlink(u, idx);
                maybe_recycle(u, t->process);
        }
}

void usage_task_uncharge(Usage *u, uint32_t task, LedgerUnit unit, uint64_t n) {
        Task *t = &u->tasks[task];
        uint32_t process = t->process;

        bool pages = unit == LEDGER_PAGES;

        ledger_release(u, &t->ledger[unit], pages ? &t->frees : NULL, n);
        if (process != task)
                ledger_release(u, &u->tasks[process].ledger[unit], pages ? &u->tasks[process].frees : NULL, n);
        if (_likely_(!t->evicted && !u->tasks[process].evicted))
                return;

        /* What an evicted process held was handed to "[evicted]" at eviction: it leaves it now. The
         * evicted records keep counting their own, so a slot is reused only once nothing names it. */
        if (u->tasks[process].evicted) {
                Task *evicted = &u->tasks[USAGE_TASK_EVICTED];
                ledger_release(u, &evicted->ledger[unit], pages ? &evicted->frees : NULL, n);
        }
        maybe_recycle(u, task);
        if (process != task)
                maybe_recycle(u, process);
}

void usage_task_apply(Usage *u, uint32_t task, LedgerUnit unit, uint64_t rise, int64_t delta) {
        Task *t = &u->tasks[task];

        Task *p = &u->tasks[t->process];

        ledger_raise(&t->ledger[unit], rise);
        if (t->process != task)
                ledger_raise(&p->ledger[unit], rise);
        ledger_mark_rise(&p->ledger[unit], rise, &p->interval_peak[unit]);
        if (delta > 0)
                usage_task_charge(u, task, unit, (uint64_t) delta);
        else if (delta < 0)
                usage_task_uncharge(u, task, unit, (uint64_t) -(delta + 1) + 1);
}

void usage_task_hold_object(Usage *u, uint32_t task) {
        u->tasks[task].n_objects++;
}

void usage_task_drop_object(Usage *u, uint32_t task) {
        Task *t = &u->tasks[task];

        /* A reset forgot the objects' owners (usage_clear()): nothing to drop then. */
        if (t->n_objects == 0)
                return;
        t->n_objects--;
        /* A thread's process goes with its last thread record. */
        maybe_recycle(u, task);
}

Task *usage_task(Usage *u, uint32_t idx) {
        if (idx >= u->n_tasks || u->tasks[idx].evicted)
                return NULL;
        return &u->tasks[idx];
}

uint64_t usage_task_scope(const Usage *u, uint32_t idx) {
        return (uint64_t) u->tasks[idx].generation << 32 | idx;
}

Task *usage_task_of_scope(Usage *u, uint64_t scope) {
        Task *t = usage_task(u, (uint32_t) scope);

        return t && t->generation == (uint32_t) (scope >> 32) ? t : NULL;
}

size_t usage_task_slots(const Usage *u) {
        return u->n_tasks;
}

uint32_t usage_find_process(const Usage *u, int32_t pid) {
        uint32_t idx = idmap_get(&u->processes, pid);
        if (idx != USAGE_TASK_NONE)
                return idx;
        /* Evicted from the map by pid reuse: the newest exited record wins. */
        uint32_t best = USAGE_TASK_NONE;
        for (size_t i = 1; i < u->n_tasks; i++) {
                const Task *t = &u->tasks[i];
                if (!t->evicted && !t->is_thread && t->pid == pid &&
                    (best == USAGE_TASK_NONE || t->first_seen_nsec >= u->tasks[best].first_seen_nsec))
                        best = (uint32_t) i;
        }
        return best;
}

uint32_t usage_task_process(const Usage *u, uint32_t idx) {
        return idx < u->n_tasks ? u->tasks[idx].process : USAGE_TASK_NONE;
}

uint32_t usage_task_owner(const Usage *u, uint32_t idx) {
        uint32_t process = usage_task_process(u, idx);

        if (process == USAGE_TASK_NONE)
                return process;
        return u->tasks[process].evicted ? USAGE_TASK_EVICTED : process;
}

uint32_t usage_task_forward(const Usage *u, uint32_t idx) {
        const Task *t = &u->tasks[idx];

        if (!t->evicted)
                return idx;
        /* An evicted thread of a live process: its pages are already in the process's counts. */
        if (t->is_thread && !u->tasks[t->process].evicted)
                return t->process;
        return USAGE_TASK_EVICTED;
}

static void evict_one(Usage *u, uint32_t idx) {
        Task *t = &u->tasks[idx];

        t->evicted = true;
        if (t->exited)
                exited_unlink(u, idx);
        if (t->is_thread)
                idmap_remove(&u->threads, t->pid, idx);
        else {
                idmap_remove(&u->processes, t->pid, idx);
                /* The evicted record inherits what the process still holds (its threads' pages included):
                 * pages are part of a bounded total, bytes of no total, so held at COUNT_MAX. */
                for (LedgerUnit unit = 0; unit < _LEDGER_UNIT_MAX; unit++) {
                        Ledger *e = &u->tasks[USAGE_TASK_EVICTED].ledger[unit];

                        ledger_add(e, MIN(t->ledger[unit].current, COUNT_MAX - e->current));
                }
        }
        u->tasks_evicted++;
}

/* Evicts a process with its threads (running or not), or a thread. Returns the records evicted. */
static size_t evict_with_threads(Usage *u, uint32_t idx) {
        size_t n = 1;

        evict_one(u, idx);
        if (!u->tasks[idx].is_thread) {
                for (uint32_t th = u->tasks[idx].first_thread; th != USAGE_TASK_NONE; th = u->tasks[th].thread_next)
                        if (!u->tasks[th].evicted) {
                                evict_one(u, th);
                                n++;
                        }
                /*
                 * Page owners keep naming evicted slots; no walk of the page table rewrites them. A slot
                 * still holding pages stays reserved, its pages counted by "[evicted]" (or its live
                 * process), until the last one is freed (usage_task_uncharge()); the others are reusable
                 * now, threads first: a process's slot waits for the thread records that name it.
                 */
                for (uint32_t th = u->tasks[idx].first_thread, next; th != USAGE_TASK_NONE; th = next) {
                        next = u->tasks[th].thread_next;
                        maybe_recycle(u, th);
                }
        }
        maybe_recycle(u, idx);
        return n;
}

size_t usage_evict(Usage *u) {
        size_t n = 0;

        /* The head is the oldest exit; evicting it (with its threads) only ever shortens the list. */
        while (u->n_exited > u->max_exited)
                n += evict_with_threads(u, u->exited_head);
        if (n > 0)
                forget_last(u);
        return n;
}

uint16_t usage_module_intern(Usage *u, const char *name) {
        for (size_t i = 0; i < u->n_modules; i++)
                if (streq(u->modules[i].name, name))
                        return (uint16_t) (i + 1);

        /* Ids must fit a page owner (see pagemap.h). */
        if (u->n_modules >= USAGE_MODULE_ID_MAX) {
                u->modules_dropped++;
                return USAGE_MODULE_NONE;
        }
        ModuleUsage *m = realloc(u->modules, (u->n_modules + 1) * sizeof(ModuleUsage));
        if (!m)
                return USAGE_MODULE_NONE;
        u->modules = m;
        char *copy = strdup(name);
        if (!copy)
                return USAGE_MODULE_NONE;
        u->modules[u->n_modules] = (ModuleUsage) { .name = copy };
        return (uint16_t) ++u->n_modules;
}

ModuleUsage *usage_module(Usage *u, uint16_t id) {
        if (id == USAGE_MODULE_NONE || id > u->n_modules)
                return NULL;
        return &u->modules[id - 1];
}

size_t usage_module_count(const Usage *u) {
        return u->n_modules;
}

uint16_t usage_find_module_shown(Usage *u, const char *name) {
        uint16_t found = USAGE_MODULE_NONE;

        for (uint16_t id = 1; id <= usage_module_count(u); id++)
                if (utf8_escaped_streq(usage_module(u, id)->name, name))
                        found = id;
        return found;
}

void usage_module_charge(Usage *u, uint16_t id, LedgerUnit unit, uint64_t n) {
        ModuleUsage *m = usage_module(u, id);
        if (!m)
                return;
        ledger_add(&m->ledger[unit], n);
        ledger_mark(&m->ledger[unit], &m->interval_peak[unit]);
        m->allocs++;
}

void usage_module_uncharge(Usage *u, uint16_t id, LedgerUnit unit, uint64_t n) {
        ModuleUsage *m = usage_module(u, id);
        if (m)
                ledger_release(u, &m->ledger[unit], &m->frees, n);
}

void usage_module_apply(Usage *u, uint16_t id, LedgerUnit unit, uint64_t rise, int64_t delta) {
        ModuleUsage *m = usage_module(u, id);
        if (!m)
                return;
        ledger_raise(&m->ledger[unit], rise);
        ledger_mark_rise(&m->ledger[unit], rise, &m->interval_peak[unit]);
        if (delta > 0)
                usage_module_charge(u, id, unit, (uint64_t) delta);
        else if (delta < 0)
                usage_module_uncharge(u, id, unit, (uint64_t) -(delta + 1) + 1);
}

static void ledgers_reset_peaks(Ledger *l) {
        for (LedgerUnit unit = 0; unit < _LEDGER_UNIT_MAX; unit++)
                ledger_reset_peak(&l[unit]);
}

void usage_reset_peaks(Usage *u) {
        for (size_t i = 0; i < u->n_tasks; i++)
                ledgers_reset_peaks(u->tasks[i].ledger);
        for (size_t i = 0; i < u->n_modules; i++)
                ledgers_reset_peaks(u->modules[i].ledger);
}

/* Zeroes a record's counts, every unit. */
static void counts_clear(Ledger *l, uint64_t *interval_peak, uint64_t *allocs, uint64_t *frees) {
        for (LedgerUnit unit = 0; unit < _LEDGER_UNIT_MAX; unit++) {
                l[unit] = (Ledger) {};
                interval_peak[unit] = 0;
        }
        *allocs = *frees = 0;
}

void usage_set_max_exited(Usage *u, size_t max_exited) {
        u->max_exited = max_exited;
}

void usage_clear(Usage *u) {
        /* Live tasks keep their names; exited ones are forgotten. */
        for (size_t i = 1; i < u->n_tasks; i++) {
                Task *t = &u->tasks[i];

                counts_clear(t->ledger, t->interval_peak, &t->allocs, &t->frees);
                if (t->exited && !t->evicted)
                        evict_one(u, (uint32_t) i);
                /* The page table and the slab objects were cleared with us: nothing names any slot
                 * now. */
                t->n_threads = t->n_objects = 0;
                t->first_thread = USAGE_TASK_NONE;
        }
        for (size_t i = 1; i < u->n_tasks; i++) {
                Task *t = &u->tasks[i];
                /* A thread still running after its leader exited goes with the process, whose slot is
                 * about to be reused. */
                if (t->is_thread && !t->evicted && u->tasks[t->process].evicted)
                        evict_one(u, (uint32_t) i);
                if (t->evicted && !t->recycled)
                        recycle(u, (uint32_t) i);
        }
        /* Live threads still name their processes. */
        for (size_t i = 1; i < u->n_tasks; i++)
                if (u->tasks[i].is_thread && !u->tasks[i].evicted)
                        thread_link(u, (uint32_t) i, u->tasks[i].process);
        counts_clear(u->tasks[USAGE_TASK_EVICTED].ledger, u->tasks[USAGE_TASK_EVICTED].interval_peak,
                     &u->tasks[USAGE_TASK_EVICTED].allocs, &u->tasks[USAGE_TASK_EVICTED].frees);
        assert(u->n_exited == 0 && u->exited_head == USAGE_TASK_NONE);
        for (size_t i = 0; i < u->n_modules; i++)
                counts_clear(u->modules[i].ledger, u->modules[i].interval_peak, &u->modules[i].allocs, &u->modules[i].frees);
        u->tasks_evicted = u->tasks_recycled = u->modules_dropped = u->underflows = 0;
        forget_last(u);
}

void usage_get_stats(const Usage *u, UsageStats *ret) {
        *ret = (UsageStats) {
                .n_tasks = u->n_tasks - 1 - u->n_free,
                .n_exited = u->n_exited,
                .tasks_evicted = u->tasks_evicted,
                .tasks_recycled = u->tasks_recycled,
                .modules_dropped = u->modules_dropped,
                .underflows = u->underflows,
        };
}

uint64_t usage_baseline_pages(const Usage *u, size_t *ret_tasks) {
        uint64_t pages = 0;
        size_t n = 0;

        for (size_t i = 1; i < u->n_tasks; i++) {
                const Task *t = &u->tasks[i];
                if (t->seeded && !t->is_thread && !t->exited && !t->evicted) {
                        pages += t->baseline_pages;
                        n++;
                }
        }
        if (ret_tasks)
                *ret_tasks = n;
        return pages;
}

size_t usage_memory_bytes(const Usage *u) {
        return sizeof(Usage) + u->n_allocated * (sizeof(Task) + sizeof(uint32_t)) +
               key_index_memory_bytes(&u->processes) + key_index_memory_bytes(&u->threads) +
               u->n_modules * sizeof(ModuleUsage) + u->cmdline_bytes;
}
