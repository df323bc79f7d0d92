/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Budget: the core's tables held under a number of bytes (memstrackd --max-memory) by giving things up
 * in a fixed order instead of growing past it. Each step stops one kind of growth, from what costs the
 * answers least to what costs them most:
 *
 *   slabObjects   new slab objects are not kept (counted as dropped; their bytes still reach no one)
 *   heapBlocks    new sampled blocks of user heaps are not kept (counted as dropped)
 *   exitedTasks   exited tasks go to "[evicted]" at once instead of staying queryable
 *   stacks        new call chains stop at what the stack trees hold: charged to "[truncated]" below
 *                 their deepest part already there, or to that part
 *   pages         new page allocations are not tracked (counted; their frees count as untracked), so
 *                 tasks, units, modules and stacks then count less than they hold
 *
 * A step is taken when the core's bytes come within a sixteenth of the limit, one step per check, the
 * next one the core says applies (a step that would stop nothing, as slabObjects without --slab, is
 * passed over); the last step taken is lifted when they fall below three quarters of it, one per check,
 * so that a core near its limit does not take and lift a step on every check. Nothing is freed by a
 * step but exitedTasks' records: the steps hold the bytes where they are; whatever the budget held back
 * is counted, and what is in effect is in Status.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

typedef enum BudgetStep {
        BUDGET_STEP_SLAB_OBJECTS,
        BUDGET_STEP_HEAP_BLOCKS,
        BUDGET_STEP_EXITED_TASKS,
        BUDGET_STEP_STACKS,
        BUDGET_STEP_PAGES,
        _BUDGET_STEP_MAX,
        _BUDGET_STEP_INVALID = -EINVAL,
} BudgetStep;

_Static_assert(_BUDGET_STEP_MAX == BUDGET_STEPS, "stats.h says how many steps there are");

/* "slabObjects", "heapBlocks", "exitedTasks", "stacks", "pages"; NULL for an invalid step. */
const char *budget_step_to_string(BudgetStep step);

/* What to do at a check. */
typedef enum BudgetChange {
        BUDGET_KEEP,
        BUDGET_TAKE,                    /* take *ret_step */
        BUDGET_LIFT,                    /* lift *ret_step */
} BudgetChange;

typedef struct Budget {
        uint64_t limit_bytes;           /* 0: no budget */
        uint32_t in_effect;             /* 1 << BudgetStep of the steps taken and not lifted */
        uint64_t taken[_BUDGET_STEP_MAX];       /* times each step was taken */
        uint64_t peak_bytes;            /* the most the core held at a check */
} Budget;

/* A budget of limit_bytes, 0 for none. */
void budget_init(Budget *b, uint64_t limit_bytes);

/*
 * The check, with the core at bytes and applies telling which steps would stop anything now (1 << step):
 * BUDGET_TAKE with the step to take next, BUDGET_LIFT with the one to lift, or BUDGET_KEEP. The caller
 * applies the change and then calls budget_changed().
 */
BudgetChange budget_check(Budget *b, uint64_t bytes, uint32_t applies, BudgetStep *ret_step);
void budget_changed(Budget *b, BudgetChange change, BudgetStep step);

bool budget_in_effect(const Budget *b, BudgetStep step);
