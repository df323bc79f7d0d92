/* SPDX-License-Identifier: MIT */

#include <string.h>

#include "budget.h"
#include "macro.h"

static const char *const step_names[_BUDGET_STEP_MAX] = {
        [BUDGET_STEP_SLAB_OBJECTS] = "slabObjects",
        [BUDGET_STEP_HEAP_BLOCKS] = "heapBlocks",
        [BUDGET_STEP_EXITED_TASKS] = "exitedTasks",
        [BUDGET_STEP_STACKS] = "stacks",
        [BUDGET_STEP_PAGES] = "pages",
};

const char *budget_step_to_string(BudgetStep step) {
        return step >= 0 && step < _BUDGET_STEP_MAX ? step_names[step] : NULL;
}

void budget_init(Budget *b, uint64_t limit_bytes) {
        *b = (Budget) { .limit_bytes = limit_bytes };
}

BudgetChange budget_check(Budget *b, uint64_t bytes, uint32_t applies, BudgetStep *ret_step) {
        if (b->limit_bytes == 0)
                return BUDGET_KEEP;
        b->peak_bytes = MAX(b->peak_bytes, bytes);

        if (bytes >= b->limit_bytes - b->limit_bytes / 16) {
                for (BudgetStep s = 0; s < _BUDGET_STEP_MAX; s++)
                        if (!(b->in_effect & (UINT32_C(1) << s)) && (applies & (UINT32_C(1) << s))) {
                                *ret_step = s;
                                return BUDGET_TAKE;
                        }
                return BUDGET_KEEP;
        }
        if (bytes < b->limit_bytes / 4 * 3 && b->in_effect != 0) {
                /* The last taken: the highest in the order. */
                *ret_step = (BudgetStep) (31 - __builtin_clz(b->in_effect));
                return BUDGET_LIFT;
        }
        return BUDGET_KEEP;
}

void budget_changed(Budget *b, BudgetChange change, BudgetStep step) {
        if (change == BUDGET_TAKE) {
                b->in_effect |= UINT32_C(1) << step;
                b->taken[step]++;
        } else if (change == BUDGET_LIFT)
                b->in_effect &= ~(UINT32_C(1) << step);
}

bool budget_in_effect(const Budget *b, BudgetStep step) {
        return b->in_effect & (UINT32_C(1) << step);
}
