/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Usage: what each task (process, and optionally thread) and each kernel module holds, one Ledger per unit
 * (ledger.h): pages of the page allocator, bytes of objects.
 *
 * Tasks live in one array and are referred to by 32-bit index, which page owners store. A process record
 * folds in all its threads; with thread tracking on, each thread also has its own record whose charges
 * roll up into its process. Exited tasks stay queryable; past max_exited the oldest are evicted (their
 * remaining pages go to the "[evicted]" record, see usage_evict()), so that no more than max_exited are
 * ever kept between two events. Peaks are true maxima, kept on every charge.
 *
 * An evicted slot is reused for a new task once nothing names it any more: no page or byte is charged to
 * it, no thread record names it as its process and no slab object names it (usage_task_hold_object()).
 * Whoever keeps an index longer (a stack-tree process scope) keeps usage_task_scope() instead, which
 * tells the slot's tasks apart.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "stats.h"

#define USAGE_TASK_NONE UINT32_MAX
#define USAGE_TASK_EVICTED 0u           /* index of the record that inherits evicted tasks' pages */
#define USAGE_EVICTED_COMM "[evicted]"  /* its comm (its pid is -1): what views name evicted owners */
#define USAGE_MODULE_NONE 0u
#define USAGE_MODULE_ID_MAX 2047         /* fits a charge cell (chargeindex.h) */
#define USAGE_COMM_MAX 16               /* TASK_COMM_LEN */

typedef struct Task {
        int32_t pid;                    /* tgid for a process, tid for a thread */
        int32_t tgid;
        uint32_t process;               /* index of the process record; itself for a process */
        int32_t parent_pid;             /* process: the tgid that forked it (or its parent in /proc when
                                         * seeded), 0 unknown; kept as it was, not followed through
                                         * reparenting, so the parent may have exited */
        char comm[USAGE_COMM_MAX];
        char *cmdline;                  /* owned; NULL when unknown */
        Ledger ledger[_LEDGER_UNIT_MAX];        /* indexed by LedgerUnit */
        uint64_t interval_peak[_LEDGER_UNIT_MAX];       /* process: ledger_mark(), for history.h */
        uint64_t allocs;                /* charges (allocation events, positive samples), any unit */
        uint64_t frees;                 /* releases of tracked memory, any unit */
        uint64_t baseline_pages;        /* resident pages it had before tracing began; 0 if not seeded */
        uint64_t first_seen_nsec;
        uint64_t seeded_nsec;           /* when /proc showed it, if seeded */
        uint64_t exit_nsec;
        uint32_t n_threads;             /* process: its thread records not yet recycled (they name it) */
        uint32_t first_thread;          /* process: the first of those thread records, USAGE_TASK_NONE: none */
        uint32_t thread_prev, thread_next;      /* thread: its neighbours in its process's list */
        uint32_t exited_prev, exited_next;      /* exited, not evicted: neighbours in exit order (Usage) */
        uint32_t n_objects;             /* live slab objects naming it (they may be 0 bytes) */
        uint32_t generation;            /* tasks the slot held before this one (usage_task_scope()) */
        uint32_t charge_hint;           /* the core's last charge cell for this task: a hint, maybe stale */
        uint32_t cgroup;                /* process: the cgroup record (units.h) of its last allocation, 0 none */
        uint64_t cgroup_id;             /* process: the kernel's id of that cgroup */
        uint16_t loading_module;        /* module this task is loading (insmod/modprobe), or none */
        bool is_thread:1;
        bool seeded:1;                  /* existed before tracing began */
        bool exited:1;
        bool evicted:1;                 /* slot no longer describes a task; reused once no page names it */
        bool recycled:1;                /* evicted slot is on the free list */
} Task;

typedef struct ModuleUsage {
        char *name;                     /* owned */
        Ledger ledger[_LEDGER_UNIT_MAX];        /* indexed by LedgerUnit */
        uint64_t interval_peak[_LEDGER_UNIT_MAX];       /* ledger_mark(), for history.h */
        uint64_t allocs, frees;         /* as Task's */
        bool loaded;
        bool loaded_known;              /* loaded was set by a load or free event, or by kallsyms listing it */
} ModuleUsage;

typedef struct Usage Usage;

/* max_exited: exited records kept before eviction. Returns NULL on OOM. */
Usage *usage_new(bool track_threads, size_t max_exited);
Usage *usage_free(Usage *u);

bool usage_tracks_threads(const Usage *u);

/*
 * Finds or creates the live record charged for activity of (pid, tid): the thread's record with thread
 * tracking, else the process's. Returns USAGE_TASK_NONE on OOM.
 */
uint32_t usage_task_lookup(Usage *u, int32_t pid, int32_t tid, uint64_t now_nsec);

/* A new process or thread: a live record of the same id is replaced (pid reuse). A new process inherits its
 * parent's comm and cmdline (a fork without exec runs the parent's program). */
uint32_t usage_task_fork(Usage *u, int32_t parent_pid, int32_t pid, int32_t tid, uint64_t now_nsec);
/* A task seen before tracing began (seeded from /proc); parent_pid 0 when unknown. */
uint32_t usage_task_seed(Usage *u, int32_t pid, int32_t parent_pid, const char *comm, const char *cmdline,
                uint64_t baseline_pages, uint64_t now_nsec);
void usage_task_set_comm(Usage *u, int32_t pid, int32_t tid, const char *comm, const char *cmdline,
                uint64_t now_nsec);
/* Marks tid exited; the process is exited when its leader (tid == pid) is. */
void usage_task_exit(Usage *u, int32_t pid, int32_t tid, uint64_t now_nsec);

/* Adds/takes n (in unit) to/from the record and, for a thread, its process. Uncharging an evicted record
 * (memory it owned is freed) also takes n off "[evicted]", and recycles the slot once it holds nothing. */
void usage_task_charge(Usage *u, uint32_t task, LedgerUnit unit, uint64_t n);
void usage_task_uncharge(Usage *u, uint32_t task, LedgerUnit unit, uint64_t n);
/* An aggregated change (ledger_raise()): peaks of the record and its process rise to at least current +
 * rise, then delta is charged (> 0) or uncharged (< 0) as above. */
void usage_task_apply(Usage *u, uint32_t task, LedgerUnit unit, uint64_t rise, int64_t delta);

/* A slab object names the record: its slot is not reused until every object naming it is dropped, whatever
 * its byte count says (kmalloc(0) charges nothing). Dropping an object of an evicted record may recycle it. */
void usage_task_hold_object(Usage *u, uint32_t task);
void usage_task_drop_object(Usage *u, uint32_t task);

/* NULL for an index out of range or an evicted (or free) slot. */
Task *usage_task(Usage *u, uint32_t idx);
/*
 * A key for the task in slot idx that no later task of the slot shares: the slot's generation above the
 * index. A slot is retired rather than reused once its generation would wrap, so keys are not reused
 * (unless a reset that failed to keep the records' names started them over, which clears the stack tree
 * that holds keys too).
 */
uint64_t usage_task_scope(const Usage *u, uint32_t idx);
/* The task a usage_task_scope() key was made for; NULL once it was evicted (its slot maybe reused). */
Task *usage_task_of_scope(Usage *u, uint64_t scope);
size_t usage_task_slots(const Usage *u);
/* The live process record with this tgid, else the newest exited one; USAGE_TASK_NONE if none. */
uint32_t usage_find_process(const Usage *u, int32_t pid);

/*
 * Evicts the oldest exited records (and the threads of evicted processes, running or not) until at most
 * max_exited are left; an evicted process's remaining pages are counted by "[evicted]". Run it after
 * every event that may have ended a task (an exit, or a fork or thread that reuses an id): the bound then
 * holds whenever the records are looked at. Page owners need no rewrite: a slot that still holds pages is
 * reused only after usage_task_uncharge() took its last page off (the uncharge then also leaves
 * "[evicted]"). Cost: O(1) when nothing is over the bound; else O(1) per record evicted, the exited
 * records being kept in exit order and each process's threads in a list of their own; never a walk of
 * the slots or of the page table. Returns the number of records evicted.
 */
size_t usage_evict(Usage *u);
/* Changes max_exited (the memory budget, budget.h); the next usage_evict() holds the records to it. */
void usage_set_max_exited(Usage *u, size_t max_exited);
/* Where an evicted record's pages are counted now: USAGE_TASK_EVICTED, its live process, or idx itself. */
uint32_t usage_task_forward(const Usage *u, uint32_t idx);
/* The process record of any slot still named by a page, evicted or not; USAGE_TASK_NONE out of range. */
uint32_t usage_task_process(const Usage *u, uint32_t idx);
/* Who answers in views for what slot idx holds: its process record, or USAGE_TASK_EVICTED once that was
 * evicted (as Tasks sums evicted tasks in "evicted"). usage_task() of it is never NULL. USAGE_TASK_NONE
 * out of range. */
uint32_t usage_task_owner(const Usage *u, uint32_t idx);

/* Module ids are 1..n; the same name always gets the same id. Returns USAGE_MODULE_NONE when full. */
uint16_t usage_module_intern(Usage *u, const char *name);
ModuleUsage *usage_module(Usage *u, uint16_t id);
size_t usage_module_count(const Usage *u);     /* ids are 1..count */
/* The module of a name as clients were shown it (UTF-8-escaped), the last of that name;
 * USAGE_MODULE_NONE if none. */
uint16_t usage_find_module_shown(Usage *u, const char *name);
void usage_module_charge(Usage *u, uint16_t id, LedgerUnit unit, uint64_t n);
void usage_module_uncharge(Usage *u, uint16_t id, LedgerUnit unit, uint64_t n);
void usage_module_apply(Usage *u, uint16_t id, LedgerUnit unit, uint64_t rise, int64_t delta);

/* Peaks become current values (tasks and modules). */
void usage_reset_peaks(Usage *u);
/* Zeroes every count and forgets exited tasks; live tasks keep their names, modules their ids. */
void usage_clear(Usage *u);

void usage_get_stats(const Usage *u, UsageStats *ret);
/* Sum of baseline_pages over live processes seeded when tracing began (memory they held before it, which
 * no counter here includes), and how many they are. Walks the task array. */
uint64_t usage_baseline_pages(const Usage *u, size_t *ret_tasks);
size_t usage_memory_bytes(const Usage *u);

