/* SPDX-License-Identifier: MIT */

/*
 * Live bytes and their exact peak, without a shared atomic operation on every call where the peak cannot
 * move. One counter for all threads costs a cache line that every allocation and free pulls from the other
 * CPUs: on a malloc-heavy program with four threads, more than half of the library's own time.
 *
 * The peak needs every change of the live bytes in one order. Near the peak (MODE_EXACT) each call adds
 * to the header's live_bytes atomically and raises peak_bytes, so the order is the counter's. Far below it
 * (MODE_FAST) a thread keeps its changes in its own slot's live_delta with plain stores while that stays
 * within the allowance either way; past it, the thread moves its delta into live_bytes with a
 * compare-and-swap that keeps
 *
 *         live_bytes + n_fast * allowance <= peak_bytes
 *
 * That bound holds at every moment in MODE_FAST, and every delta is within the allowance, so no call made
 * there can take the live bytes past the peak: none needs the shared counter, and the peak stays exact.
 *
 * Switching takes `lock`: to MODE_EXACT when a move would break the bound (MODE_FOLDING while every
 * delta is folded into live_bytes), back to MODE_FAST when an exact call leaves the live bytes two bounds
 * below the peak (MODE_LEAVING while the exact calls under way finish). A call marks its slot live_busy
 * around its look at the mode and what it does by it; a switch stores the new mode, runs membarrier()
 * and waits until no slot is marked. That is an asymmetric Dekker handshake: calls pay plain stores, the
 * rare switch pays a system call, and after it no call acts on the old mode.
 *
 * A switch waits for calls, and a call may wait for a full ring, which waits for the records reserved
 * before: so a thread never switches while it holds a reserved record. An exact call that finds the
 * process far below its peak leaves the switch to live_done(), after its record is written.
 *
 * A call that writes a record reserves its ring slot inside its change: near the peak under order_lock,
 * with the add, so that the records there are in the order of the changes (each record's tree is the heap
 * as that change left it, and the peak's record closes the tree at the maximum); far below it while its
 * slot is marked, so that a switch to MODE_EXACT waits for those reservations too.
 *
 * One thread in MODE_EXACT may own the counter (live_state.owner) and change it and the peak with plain
 * stores: the thread alone in its process (the one fast slot), or one that made BIAS_STREAK_FIRST exact
 * changes in a row while the others made none (a program whose worker allocates while its main thread
 * waits). Nested calls leave their bytes pending then; the owner takes them in. Ownership is given and
 * taken only by a switch, so that no call of another thread is under way: it is given by the owner's own
 * switch after its record (as live_leave_wanted leaves MODE_EXACT), and taken by any other thread's call,
 * which doubles the run the next owner needs (threads that take turns soon stop trading it).
 *
 * Calls that mark no slot use others_busy, an atomic count: those of threads without a fast slot (beyond
 * FAST_THREADS_MAX, or sharing the last counts slot), which keep the process in MODE_EXACT from their
 * first call on, and nested calls (a signal handler that allocates), which may interrupt this very code
 * and so never wait. Outside MODE_EXACT a nested call that cannot move its bytes within the bound adds
 * them to nested_pending and asks for a fold (MODE_RECHECK): the peak sees them when the next call folds
 * them in.
 */

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live.h"
#include "spin-lock.h"

#define TLS __thread __attribute__((tls_model("initial-exec")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define FAST_THREADS_MAX 64u

_Alignas(64) LiveState live_state = { .mode = MODE_EXACT };
TLS int live_thread_kind;
TLS bool live_leave_wanted;

/* Exact changes in a row that make a thread the counter's owner; doubled each time ownership is taken. */
#define BIAS_STREAK_FIRST 256u
#define BIAS_STREAK_MAX (UINT32_C(1) << 20)

static uint32_t bias_streak = BIAS_STREAK_FIRST;
static TLS HeapAbiThread *my_slot;      /* this thread's fast slot, if it has one */
static TLS int64_t my_last_live;        /* the counter after this thread's last exact change */
static TLS uint32_t my_streak;          /* exact changes in a row that found the counter as it left it */
static TLS bool bias_wanted;

/* What calls write, on lines of their own: the line of live_state is read by every call. */
static _Alignas(64) int order_lock;     /* MODE_EXACT: a change and its record's slot, together */
static int lock;                        /* switches and joins */
static uint64_t others_busy;
static _Alignas(64) HeapAbiThread *fast_slots[FAST_THREADS_MAX];
static LiveReserveFn reserve_slot;

static void lock_hold(void) {
        (void) lock_take(&lock, false);
}

static void lock_drop(void) {
        lock_release(&lock);
}

static int64_t load_live(void) {
        return __atomic_load_n(&live_state.header->live_bytes, __ATOMIC_RELAXED);
}

static int64_t load_peak(void) {
        return (int64_t) __atomic_load_n(&live_state.header->peak_bytes, __ATOMIC_RELAXED);
}

static int64_t bound(void) {
        return (int64_t) __atomic_load_n(&live_state.n_fast, __ATOMIC_ACQUIRE) * live_state.allowance;
}

static void peak_raise(int64_t live) {
        uint64_t peak = __atomic_load_n(&live_state.header->peak_bytes, __ATOMIC_RELAXED);
        while (live > 0 && (uint64_t) live > peak &&
               !__atomic_compare_exchange_n(&live_state.header->peak_bytes, &peak, (uint64_t) live, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                ;
}

/* MODE_EXACT: the counter holds everything (nested calls' pending bytes are taken in by the switches). */
static int64_t exact_add(int64_t bytes) {
        int64_t live = __atomic_add_fetch(&live_state.header->live_bytes, bytes, __ATOMIC_RELEASE);
        peak_raise(live);
        return live;
}

/* peak: the peak as this change left it, not as later ones may have raised it since (a record that named
 * a later peak would mark the maximum before its own block). */
static void reserve(LiveRecord *record, bool nested, uint64_t peak) {
        record->reserved = reserve_slot(nested, &record->seq);
        record->peak = peak;
}

static uint64_t peak_after(uint64_t peak_before, int64_t live) {
        return live > 0 && (uint64_t) live > peak_before ? (uint64_t) live : peak_before;
}

/* MODE_EXACT, with the record's slot reserved in the order of the change. A nested call only tries the
 * lock (the call it interrupted may hold it): without it, the record is dropped and counted. */
static int64_t exact_add_recorded(int64_t bytes, bool nested, LiveRecord *record) {
        if (!record)
                return exact_add(bytes);
        if (!lock_take(&order_lock, nested)) {
                record->reserved = false;
                __atomic_fetch_add(&live_state.header->lost_nested, 1, __ATOMIC_RELAXED);
                return exact_add(bytes);
        }
        uint64_t peak_before = __atomic_load_n(&live_state.header->peak_bytes, __ATOMIC_RELAXED);
        int64_t live = exact_add(bytes);
        reserve(record, nested, peak_after(peak_before, live));
        lock_release(&order_lock);
        return live;
}

/* The owner's change in MODE_EXACT (live_state.owner is this thread's slot), with plain stores. */
static void alone_store_peak(int64_t live) {
        if (live > load_peak())
                __atomic_store_n(&live_state.header->peak_bytes, (uint64_t) live, __ATOMIC_RELAXED);
}

static int64_t alone_add(int64_t bytes, LiveRecord *record) {
        int64_t live = load_live();
        /* What nested calls left came first: into the counter, and the peak, before this change. */
        if (unlikely(__atomic_load_n(&live_state.header->nested_pending, __ATOMIC_RELAXED) != 0)) {
                live += __atomic_exchange_n(&live_state.header->nested_pending, 0, __ATOMIC_RELAXED);
                alone_store_peak(live);
        }
        live += bytes;
        __atomic_store_n(&live_state.header->live_bytes, live, __ATOMIC_RELEASE);
        alone_store_peak(live);
        if (record)
                reserve(record, false, (uint64_t) load_peak());
        return live;
}

/* MODE_FAST: moves bytes into the counter if the bound still holds after; false if it would not. */
static bool move_within_bound(int64_t bytes) {
        int64_t live = load_live();
        do {
                if (bytes > 0 && live + bytes + bound() > load_peak())
                        return false;
        } while (!__atomic_compare_exchange_n(&live_state.header->live_bytes, &live, live + bytes, true, __ATOMIC_RELEASE,
                                              __ATOMIC_RELAXED));
        return true;
}

/* After storing a new mode: once this returns, every call that saw the old one has finished. */
static void wait_for_calls(void) {
        (void) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
        /* This side's own order: the mode's store before the loads below (others_busy's side is atomic). */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        for (unsigned i = 0; i < live_state.n_fast; i++)
                while (__atomic_load_n(&fast_slots[i]->live_busy, __ATOMIC_ACQUIRE) != 0)
                        sched_yield();
        while (__atomic_load_n(&others_busy, __ATOMIC_ACQUIRE) != 0)
                sched_yield();
}

/* Under the lock, the mode just set to MODE_FOLDING: once the calls that saw the old one are done, every
 * delta and pending byte goes into the counter and the peak is raised by it; then MODE_EXACT, owned by
 * owner: this thread's slot or NULL (the pending bytes taken in last are added atomically, which only
 * the owner itself may do beside its own plain stores). Nested calls that saw MODE_FOLDING meanwhile are
 * waited for and what they left taken in too: only their bytes, in the moment of that last step, meet
 * exact calls of other threads before they are in the counter. */
static void fold_all_locked(HeapAbiThread *owner) {
        wait_for_calls();
        int64_t sum = __atomic_exchange_n(&live_state.header->nested_pending, 0, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < live_state.n_fast; i++) {
                sum += __atomic_load_n(&fast_slots[i]->live_delta, __ATOMIC_RELAXED);
                __atomic_store_n(&fast_slots[i]->live_delta, 0, __ATOMIC_RELAXED);
        }
        peak_raise(__atomic_add_fetch(&live_state.header->live_bytes, sum, __ATOMIC_RELEASE));
        __atomic_store_n(&live_state.owner, owner, __ATOMIC_RELAXED);
        __atomic_store_n(&live_state.mode, MODE_EXACT, __ATOMIC_RELEASE);
        while (__atomic_load_n(&others_busy, __ATOMIC_ACQUIRE) != 0)
                sched_yield();
        int64_t pending = __atomic_exchange_n(&live_state.header->nested_pending, 0, __ATOMIC_RELAXED);
        if (pending != 0)
                peak_raise(__atomic_add_fetch(&live_state.header->live_bytes, pending, __ATOMIC_RELEASE));
}

/* The owner after a switch this thread makes: the lone thread, or this one if it owned the counter. */
static HeapAbiThread *owner_after_switch(void) {
        HeapAbiThread *owner = __atomic_load_n(&live_state.owner, __ATOMIC_RELAXED);
        return my_slot && (owner == my_slot || live_alone()) ? my_slot : NULL;
}

/* Under the lock: to MODE_EXACT, which another thread's ownership leaves (its plain stores would race
 * this thread's atomic ones). */
static void fold_locked(void) {
        int m = __atomic_load_n(&live_state.mode, __ATOMIC_RELAXED);
        HeapAbiThread *owner = __atomic_load_n(&live_state.owner, __ATOMIC_RELAXED);
        if (m == MODE_EXACT && (!owner || owner == my_slot))
                return;
        if (m == MODE_EXACT && bias_streak < BIAS_STREAK_MAX)    /* taken: the next owner needs a longer run */
                __atomic_store_n(&bias_streak, bias_streak * 2, __ATOMIC_RELAXED);
        __atomic_store_n(&live_state.mode, MODE_FOLDING, __ATOMIC_RELAXED);
        fold_all_locked(m == MODE_EXACT ? NULL : owner_after_switch());
}

/* MODE_EXACT without an owner: this thread owns the counter from now on, once no other call is under way.
 * Tries the lock only. */
static void try_own(void) {
        if (!my_slot || !lock_take(&lock, true))
                return;
        if (__atomic_load_n(&live_state.mode, __ATOMIC_RELAXED) == MODE_EXACT && !live_state.owner &&
            live_state.fast_possible) {
                __atomic_store_n(&live_state.mode, MODE_FOLDING, __ATOMIC_RELAXED);
                fold_all_locked(my_slot);
        }
        lock_drop();
}

/* From MODE_EXACT back to MODE_FAST if the bound holds once the exact calls under way are done. Tries the
 * lock only: another thread's switch or join is as good a moment to stay. */
static void try_leave(void) {
        if (!__atomic_load_n(&live_state.fast_possible, __ATOMIC_RELAXED) || !lock_take(&lock, true))
                return;
        if (live_state.fast_possible && __atomic_load_n(&live_state.mode, __ATOMIC_RELAXED) == MODE_EXACT) {
                __atomic_store_n(&live_state.mode, MODE_LEAVING, __ATOMIC_RELAXED);
                wait_for_calls();
                int64_t pending = __atomic_exchange_n(&live_state.header->nested_pending, 0, __ATOMIC_RELAXED);
                int64_t live = __atomic_add_fetch(&live_state.header->live_bytes, pending, __ATOMIC_RELAXED);
                peak_raise(live);
                int expected = MODE_LEAVING;
                /* A nested call that came since turned it to MODE_RECHECK: fold what it left. */
                if (live + bound() > load_peak() ||
                    !__atomic_compare_exchange_n(&live_state.mode, &expected, MODE_FAST, false, __ATOMIC_RELEASE,
                                                 __ATOMIC_RELAXED))
                        fold_locked();
        }
        lock_drop();
}

/* Where the fast way cannot go on: under the lock, folds if asked to or if a nested call left bytes, and
 * adds exactly. need_exact: the bound would break. Returns false if the mode is MODE_FAST again and the
 * call should try the fast way. */
static bool change_locked(int64_t bytes, bool need_exact, LiveRecord *record, int64_t *ret_live) {
        lock_hold();
        int m = __atomic_load_n(&live_state.mode, __ATOMIC_RELAXED);
        if (m == MODE_FAST && !need_exact) {
                lock_drop();
                return false;
        }
        fold_locked();
        *ret_live = exact_add_recorded(bytes, false, record);
        lock_drop();
        return true;
}

/* A thread's first ordinary call: a fast slot if there is one, else the process stays exact for good. The
 * bound grows with the slots, so the mode goes to MODE_EXACT (a later call comes back if it may). A thread
 * that was alone may be amid a change with plain stores, and nested calls decide by the count too: no call
 * runs (MODE_FOLDING) while the count changes. */
static void join(HeapAbiThread *own) {
        lock_hold();
        __atomic_store_n(&live_state.mode, MODE_FOLDING, __ATOMIC_RELAXED);
        if (live_state.fast_possible)
                wait_for_calls();
        if (own && live_state.fast_possible && live_state.n_fast < FAST_THREADS_MAX) {
                fast_slots[live_state.n_fast] = own;
                __atomic_store_n(&live_state.n_fast, live_state.n_fast + 1, __ATOMIC_RELEASE);
                live_thread_kind = THREAD_FAST;
        } else {
                __atomic_store_n(&live_state.fast_possible, false, __ATOMIC_RELAXED);
                live_thread_kind = THREAD_SHARED;
        }
        if (live_thread_kind == THREAD_FAST)
                my_slot = own;
        fold_all_locked(owner_after_switch());
        lock_drop();
}

static int64_t nested_change(int64_t bytes, LiveRecord *record) {
        int64_t live;

        __atomic_add_fetch(&others_busy, 1, __ATOMIC_SEQ_CST);
        int m = __atomic_load_n(&live_state.mode, __ATOMIC_SEQ_CST);
        if (m == MODE_EXACT && !__atomic_load_n(&live_state.owner, __ATOMIC_RELAXED)) {
                live = exact_add_recorded(bytes, true, record);
                __atomic_sub_fetch(&others_busy, 1, __ATOMIC_RELEASE);
                return live;
        }
        if (m == MODE_FAST && move_within_bound(bytes))
                live = load_live();
        else {
                live = __atomic_add_fetch(&live_state.header->nested_pending, bytes, __ATOMIC_RELAXED) + load_live();
                /* Whoever folds next takes them in: ask for it unless a fold or MODE_EXACT is on its way. */
                for (;;) {
                        m = __atomic_load_n(&live_state.mode, __ATOMIC_RELAXED);
                        if ((m != MODE_FAST && m != MODE_LEAVING) ||
                            __atomic_compare_exchange_n(&live_state.mode, &m, MODE_RECHECK, false, __ATOMIC_RELAXED,
                                                        __ATOMIC_RELAXED))
                                break;
                }
        }
        if (record)
                reserve(record, true, (uint64_t) load_peak());
        __atomic_sub_fetch(&others_busy, 1, __ATOMIC_RELEASE);
        return live;
}

static int64_t shared_change(int64_t bytes, LiveRecord *record) {
        int64_t live;

        __atomic_add_fetch(&others_busy, 1, __ATOMIC_SEQ_CST);
        bool exact = __atomic_load_n(&live_state.mode, __ATOMIC_SEQ_CST) == MODE_EXACT &&
                     !__atomic_load_n(&live_state.owner, __ATOMIC_RELAXED);
        if (exact)
                live = exact_add_recorded(bytes, false, record);
        __atomic_sub_fetch(&others_busy, 1, __ATOMIC_RELEASE);
        if (!exact)
                (void) change_locked(bytes, true, record, &live);
        return live;
}

/* An exact change without an owner, from before to after: a run of them that found the counter as this
 * thread left it asks for ownership (after the call's record, as a switch must). */
static void count_streak(int64_t before, int64_t after) {
        my_streak = before == my_last_live ? my_streak + 1 : 0;
        my_last_live = after;
        if (unlikely(my_streak >= __atomic_load_n(&bias_streak, __ATOMIC_RELAXED) && live_state.fast_possible)) {
                my_streak = 0;
                bias_wanted = live_leave_wanted = true;
        }
}

int64_t live_change(HeapAbiThread *own, int64_t bytes, bool nested, LiveRecord *record) {
        if (unlikely(nested))
                return nested_change(bytes, record);
        if (unlikely(live_thread_kind != THREAD_FAST)) {
                if (live_thread_kind == THREAD_NEW)
                        join(own);
                if (live_thread_kind == THREAD_SHARED)
                        return shared_change(bytes, record);
        }
        for (;;) {
                int64_t live;
                live_mark(own, 1);
                int m = __atomic_load_n(&live_state.mode, __ATOMIC_ACQUIRE);
                if (likely(m == MODE_FAST)) {
                        int64_t before = __atomic_load_n(&own->live_delta, __ATOMIC_RELAXED), delta = before + bytes;
                        if (likely(delta >= -live_state.allowance && delta <= live_state.allowance)) {
                                __atomic_store_n(&own->live_delta, delta, __ATOMIC_RELAXED);
                                live = delta;
                        } else {
                                /* Out of the slot before into the counter: the daemon, which reads the counter
                                 * first, may miss the bytes for a moment but never counts them twice. */
                                __atomic_store_n(&own->live_delta, 0, __ATOMIC_RELAXED);
                                if (!move_within_bound(delta)) {
                                        __atomic_store_n(&own->live_delta, before, __ATOMIC_RELAXED);
                                        goto slow;
                                }
                                live = 0;
                        }
                        /* The counter's line is the one other threads' moves write: read for a record only. */
                        if (record) {
                                live += load_live();
                                reserve(record, false, (uint64_t) load_peak());
                        }
                        live_mark(own, 0);
                        return live;
                }
                HeapAbiThread *owner = __atomic_load_n(&live_state.owner, __ATOMIC_RELAXED);
                if (m == MODE_EXACT && (!owner || owner == own)) {
                        if (owner)
                                live = alone_add(bytes, record);
                        else {
                                live = exact_add_recorded(bytes, false, record);
                                count_streak(live - bytes, live);
                        }
                        live_mark(own, 0);
                        /* Not now: a switch waits for other calls, which may wait for this call's record. */
                        if (unlikely(live + 2 * bound() <= load_peak()))
                                live_leave_wanted = true;
                        return live;
                }
        slow:
                live_mark(own, 0);
                if (change_locked(bytes, m == MODE_FAST, record, &live))
                        return live;
        }
}

void live_leave(void) {
        live_leave_wanted = false;
        if (bias_wanted) {
                bias_wanted = false;
                try_own();
        } else
                try_leave();
}

void live_init(HeapAbiHeader *h, uint64_t allowance_bytes, LiveReserveFn reserve_fn) {
        live_state.header = h;
        reserve_slot = reserve_fn;
        live_state.allowance = (int64_t) (allowance_bytes < (UINT64_C(1) << 40) ? allowance_bytes : UINT64_C(1) << 40);
        live_state.fast_possible = live_state.allowance > 0 &&
                        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void live_reset(void) {
        live_state.header = NULL;
        live_state.fast_possible = false;
        live_state.mode = MODE_EXACT;
        lock = 0;
        order_lock = 0;
        live_state.n_fast = 0;
        others_busy = 0;
        live_state.owner = NULL;
        bias_streak = BIAS_STREAK_FIRST;
        live_thread_kind = THREAD_NEW;
        live_leave_wanted = bias_wanted = false;
        my_slot = NULL;
        my_streak = 0;
}
