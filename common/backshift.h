/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Backward-shift deletion for the core's open-addressing tables (linear probing, no tombstones): the page
 * table (pagemap.c), the charge index (chargeindex.c) and the task id maps (usage.c). One copy of the rule
 * that keeps every lookup exact after a removal; each table says what a slot is through three callbacks.
 *
 * The function is always inlined and its callbacks are passed as constants, so the compiler turns each
 * call into a loop specialized for its table: no indirect calls on the free path.
 */

#include <stdbool.h>
#include <stddef.h>

/* The home slot of the entry in slot i, or BACKSHIFT_EMPTY if slot i is empty. */
typedef size_t (*BackshiftHomeFn)(const void *table, size_t i);
/* Copies the entry in slot from into slot to. */
typedef void (*BackshiftMoveFn)(void *table, size_t to, size_t from);
/* Marks slot i empty. */
typedef void (*BackshiftClearFn)(void *table, size_t i);

#define BACKSHIFT_EMPTY ((size_t) -1)

/*
 * Whether an entry in slot i, whose home is home, may stay when slot hole (earlier in the same probe run)
 * empties: only if its home lies cyclically within (hole, i], or a lookup starting at home would stop at
 * the hole before reaching it.
 */
static inline bool backshift_entry_stays(size_t hole, size_t i, size_t home) {
        return hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
}

/*
 * Empties slot hole of a table of capacity slots (any capacity, not only powers of two): later members
 * of its probe run that would become unreachable move back into the hole, one after another, until an
 * empty slot ends the run.
 */
static inline __attribute__((always_inline)) void backshift_delete(void *table, size_t capacity, size_t hole,
                BackshiftHomeFn home_fn, BackshiftMoveFn move_fn, BackshiftClearFn clear_fn) {
        for (size_t i = hole + 1 == capacity ? 0 : hole + 1;; i = i + 1 == capacity ? 0 : i + 1) {
                size_t home = home_fn(table, i);
                if (home == BACKSHIFT_EMPTY)
                        break;
                if (backshift_entry_stays(hole, i, home))
                        continue;
                move_fn(table, hole, i);
                hole = i;
        }
        clear_fn(table, hole);
}
