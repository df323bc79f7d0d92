/* SPDX-License-Identifier: MIT */

#include "view.h"

typedef struct CellWalk {
        const ChargeIndex *index;
        const Units *units;
        StackTree *tree;
        ViewScope scope;
        ViewCellFn fn;
        void *userdata;
} CellWalk;

static void walk_cell(void *userdata, uint32_t cell) {
        CellWalk *w = userdata;
        uint32_t cgroup = chargeindex_cgroup(w->index, cell);
        uint32_t unit = units_unit_of(w->units, cgroup);

        if (w->scope.kind == VIEW_SCOPE_UNIT && unit != w->scope.id)
                return;
        uint32_t node = chargeindex_node(w->index, cell);
        const StackNode *n = stacktree_node(w->tree, node);
        ViewCell c = {
                .id = cell,
                .process = chargeindex_process(w->index, cell),
                .node = node,
                /* A process-tree leaf stands for its twin in the global tree. */
                .leaf = n && n->twin != STACK_NODE_NONE ? n->twin : node,
                .cgroup = cgroup,
                .unit = unit,
                .kind = chargeindex_kind(w->index, cell),
                .module = chargeindex_module(w->index, cell),
                .sampled = chargeindex_sampled(w->index, cell),
                .pages = chargeindex_pages(w->index, cell),
        };
        w->fn(w->userdata, &c);
}

void view_foreach_cell(Accounting *a, ViewScope scope, ViewCellFn fn, void *userdata) {
        CellWalk w = {
                .index = accounting_chargeindex(a),
                .units = accounting_units(a),
                .tree = accounting_stacktree(a),
                .scope = scope,
                .fn = fn,
                .userdata = userdata,
        };

        switch (scope.kind) {
        case VIEW_SCOPE_PROCESS:
                chargeindex_foreach_cell_of_process(w.index, scope.id, walk_cell, &w);
                break;
        case VIEW_SCOPE_MODULE:
                chargeindex_foreach_cell_of_module(w.index, (uint16_t) scope.id, walk_cell, &w);
                break;
        default:
                chargeindex_foreach_cell(w.index, walk_cell, &w);
        }
}
