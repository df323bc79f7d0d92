/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "build-id.h"
#include "keyindex.h"
#include "macro.h"
#include "profilequery.h"
#include "utf8.h"
#include "varlink.h"

static const char *const profile_of_names[_PROFILE_OF_MAX] = {
        [PROFILE_OF_PAGES] = "pages",
        [PROFILE_OF_SLAB] = "slab",
};

const char *profile_of_to_string(ProfileOf of) {
        return of >= 0 && of < _PROFILE_OF_MAX ? profile_of_names[of] : NULL;
}

ProfileOf profile_of_from_string(const char *s) {
        for (ProfileOf of = 0; s && of < _PROFILE_OF_MAX; of++)
                if (streq(s, profile_of_names[of]))
                        return of;
        return _PROFILE_OF_INVALID;
}

/* The first entries of the task and unit label tables; named tasks and units come after. */
enum {
        LABEL_OTHER,
        LABEL_ALL,
        _LABEL_FIRST_NAMED,
};

/* A sample's key: node (32 bits), task label (10), unit label (10), module label (12). */
#define LABEL_BITS 10
#define MODULE_LABEL_BITS 12
#define MODULE_LABELS_MAX (1u << MODULE_LABEL_BITS)

typedef struct Row {
        uint32_t node;                  /* the innermost frame; VIEW_NODE_ROOT: none */
        uint16_t task, unit;            /* label indices */
        uint16_t module;                /* index into Profile.modules */
        uint64_t objects, bytes;        /* held now */
        uint64_t alloc_objects;         /* pages allocated (pages only) */
} Row;

typedef struct Profile {
        Accounting *a;
        const ProfileQuery *q;
        ViewTree tree;
        int error;                      /* the first failure inside a callback */

        /* The scope: at most one of them set. */
        uint32_t process;               /* VIEW_TASK_NONE: any */
        uint32_t unit;                  /* VIEW_UNIT_NONE: any */
        uint16_t module;                /* VIEW_MODULE_NONE: any */
        uint16_t kernel_module;         /* "vmlinux": the module of nodes in none */

        /* What each process and unit holds in the scope, to choose the named ones. */
        uint64_t *task_held;            /* by task slot */
        uint64_t *unit_held;            /* by unit id */
        size_t n_slots, n_units;

        /* Labels: task slot / unit id -> label index (LABEL_OTHER unless named), and the named ones. */
        uint16_t *task_label, *unit_label;
        uint32_t *named_tasks, *named_units;    /* label index - _LABEL_FIRST_NAMED -> slot or unit id */
        size_t n_named_tasks, n_named_units;

        /* Modules in the samples: module id -> index + 1 (0: none yet), and index -> id (0: "[other]"). */
        uint16_t *module_label;
        uint16_t *modules;
        size_t n_modules, modules_alloc;

        /* For allocations: the process record whose "[pid N comm]" node a node hangs below
         * (VIEW_TASK_EVICTED once forgotten), VIEW_TASK_NONE for none. NULL: no node has one. */
        uint32_t *process_of;

        Row *rows;                      /* owned */
        size_t n_rows, rows_alloc;
        KeyIndex row_of;                /* sample key -> index into rows */
        uint64_t samples_folded;        /* rows beyond PROFILE_SAMPLES_MAX, folded into one */
        uint64_t stacks_cut;            /* rows whose stack did not fit PROFILE_FRAMES_MAX */
} Profile;

static void profile_done(Profile *p) {
        free(p->task_held);
        free(p->unit_held);
        free(p->task_label);
        free(p->unit_label);
        free(p->named_tasks);
        free(p->named_units);
        free(p->module_label);
        free(p->modules);
        free(p->process_of);
        free(p->rows);
        key_index_done(&p->row_of);
}

/* The label index of a module id, given one the first time; -ENOMEM, -E2BIG past MODULE_LABELS_MAX. */
static int module_label(Profile *p, uint16_t id) {
        if (p->module_label[id] != 0)
                return p->module_label[id] - 1;
        if (p->n_modules + 1 >= MODULE_LABELS_MAX)
                return -E2BIG;
        if (greedy_realloc(&p->modules, &p->modules_alloc, p->n_modules + 1, sizeof(uint16_t), 64) < 0)
                return -ENOMEM;
        p->modules[p->n_modules] = id;
        p->module_label[id] = (uint16_t) ++p->n_modules;
        return (int) p->n_modules - 1;
}

/* Adds to the row of (node, task label, unit label, module id). */
static void add_row(Profile *p, uint32_t node, uint16_t task, uint16_t unit, uint16_t module_id, uint64_t objects,
                uint64_t bytes, uint64_t alloc_objects) {
        int m;

        if (p->error < 0)
                return;
        m = module_label(p, module_id);
        if (m < 0) {
                p->error = m;
                return;
        }
        uint64_t key = (uint64_t) node << 32 | (uint64_t) task << (LABEL_BITS + MODULE_LABEL_BITS) |
                       (uint64_t) unit << MODULE_LABEL_BITS | (uint64_t) m;
        uint32_t i = key_index_get(&p->row_of, key);
        if (i == KEY_INDEX_NONE) {
                if (greedy_realloc(&p->rows, &p->rows_alloc, p->n_rows + 1, sizeof(Row), 256) < 0 ||
                    key_index_put(&p->row_of, key, (uint32_t) p->n_rows) < 0) {
                        p->error = -ENOMEM;
                        return;
                }
                i = (uint32_t) p->n_rows++;
                p->rows[i] = (Row) { .node = node, .task = task, .unit = unit, .module = (uint16_t) m };
        }
        Row *r = &p->rows[i];
        r->objects = count_add(r->objects, objects);
        r->bytes = count_add(r->bytes, bytes);
        r->alloc_objects = count_add(r->alloc_objects, alloc_objects);
}

/* --- Who is named ------------------------------------------------------------------------------------- */

static void tally(Profile *p, uint32_t task, uint32_t unit, uint64_t amount) {
        uint32_t owner = view_task_owner(p->a, task);

        if (owner < p->n_slots)
                p->task_held[owner] = count_add(p->task_held[owner], amount);
        if (unit < p->n_units)
                p->unit_held[unit] = count_add(p->unit_held[unit], amount);
}

static void tally_cell(void *userdata, const ViewCell *cell) {
        tally(userdata, cell->process, cell->unit, cell->pages);
}

static bool object_in_scope(Profile *p, const ViewSlabObject *o) {
        ViewNode n;

        if (p->process != VIEW_TASK_NONE && view_task_owner(p->a, o->task) != p->process)
                return false;
        if (p->unit != VIEW_UNIT_NONE && o->unit != p->unit)
                return false;
        if (p->module != VIEW_MODULE_NONE &&
            (!view_node(p->a, VIEW_TREE_SLAB, o->stack, &n) || (n.module ?: p->kernel_module) != p->module))
                return false;
        return true;
}

static void tally_object(void *userdata, const ViewSlabObject *o) {
        Profile *p = userdata;

        if (object_in_scope(p, o))
                tally(p, o->task, o->unit, o->allocated);
}

typedef struct Ranked {
        uint64_t held;
        uint32_t id;
} Ranked;

static int compare_ranked(const void *a, const void *b) {
        const Ranked *x = a, *y = b;
        if (x->held != y->held)
                return x->held > y->held ? -1 : 1;
        return x->id < y->id ? -1 : x->id > y->id;
}

/* The top ids by held (none holding nothing) get label indices from _LABEL_FIRST_NAMED on, in order;
 * *ret_named lists them. skip: an id never named (the evicted tasks' record). */
static int name_top(const uint64_t *held, size_t n, size_t top, uint32_t skip, uint16_t *labels, uint32_t **ret_named,
                size_t *ret_n) {
        _cleanup_free_ Ranked *ranked = malloc(MAX(n, (size_t) 1) * sizeof(Ranked));
        _cleanup_free_ uint32_t *named = malloc(MAX(top, (size_t) 1) * sizeof(uint32_t));
        size_t k = 0, m = 0;

        if (!ranked || !named)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (held[i] > 0 && i != skip)
                        ranked[k++] = (Ranked) { held[i], (uint32_t) i };
        qsort(ranked, k, sizeof(Ranked), compare_ranked);
        for (size_t i = 0; i < k && m < top; i++) {
                labels[ranked[i].id] = (uint16_t) (_LABEL_FIRST_NAMED + m);
                named[m++] = ranked[i].id;
        }
        *ret_named = TAKE_PTR(named);
        *ret_n = m;
        return 0;
}

/* --- Samples ------------------------------------------------------------------------------------------ */

static uint16_t task_label_of(Profile *p, uint32_t task) {
        uint32_t owner = view_task_owner(p->a, task);
        return owner < p->n_slots ? p->task_label[owner] : LABEL_OTHER;
}

static uint16_t unit_label_of(Profile *p, uint32_t unit) {
        return unit < p->n_units ? p->unit_label[unit] : LABEL_OTHER;
}

static void cell_row(void *userdata, const ViewCell *cell) {
        Profile *p = userdata;

        add_row(p, cell->leaf, task_label_of(p, cell->process), unit_label_of(p, cell->unit), cell->module,
                cell->pages, count_mul(cell->pages, p->q->page_size), 0);
}

static void object_row(void *userdata, const ViewSlabObject *o) {
        Profile *p = userdata;
        ViewNode n = { .module = VIEW_MODULE_NONE };

        if (!object_in_scope(p, o))
                return;
        (void) view_node(p->a, VIEW_TREE_SLAB, o->stack, &n);
        add_row(p, o->stack, task_label_of(p, o->task), unit_label_of(p, o->unit), n.module ?: p->kernel_module,
                1, o->allocated, 0);
}

/* p->process_of for every node of the page tree, when any stack has user frames (they hang below a
 * "[pid N comm]" child of the root): one pass, a parent's id being below its children's. */
static int find_processes(Profile *p) {
        size_t n = view_tree_size(p->a, VIEW_TREE_PAGES);
        ViewNode root, x;
        bool any = false;

        if (!view_node(p->a, VIEW_TREE_PAGES, VIEW_NODE_ROOT, &root))
                return 0;
        for (uint32_t c = root.first_child; c != VIEW_NODE_NONE && !any; c = x.next_sibling)
                any = view_node(p->a, VIEW_TREE_PAGES, c, &x) && x.kind == VIEW_FRAME_PROCESS;
        if (!any)
                return 0;
        p->process_of = malloc(n * sizeof(uint32_t));
        if (!p->process_of)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                ViewTask t;
                p->process_of[i] = VIEW_TASK_NONE;
                if (!view_node(p->a, VIEW_TREE_PAGES, i, &x) || x.parent == VIEW_NODE_NONE || x.parent >= i)
                        continue;
                if (x.parent == VIEW_NODE_ROOT && x.kind == VIEW_FRAME_PROCESS)
                        p->process_of[i] = view_task_of_scope(p->a, x.ip, &t) ? t.process : VIEW_TASK_EVICTED;
                else
                        p->process_of[i] = p->process_of[x.parent];
        }
        return 0;
}

/* ViewNodeAllocatedFn: a stack's allocations, with the task and unit of its process where it has one. */
static void allocated_row(void *userdata, uint32_t node, uint64_t pages) {
        Profile *p = userdata;
        uint32_t process = p->process_of ? p->process_of[node] : VIEW_TASK_NONE;
        uint16_t task = LABEL_ALL, unit = LABEL_ALL;
        uint32_t unit_id = VIEW_UNIT_NONE;
        ViewNode n = { .module = VIEW_MODULE_NONE };
        ViewTask t;

        (void) view_node(p->a, VIEW_TREE_PAGES, node, &n);
        uint16_t module = n.module ?: p->kernel_module;
        if (process != VIEW_TASK_NONE) {
                task = unit = LABEL_OTHER;
                if (process != VIEW_TASK_EVICTED && view_task(p->a, process, &t)) {
                        task = task_label_of(p, process);
                        unit_id = t.unit;
                        unit = unit_label_of(p, unit_id);
                }
        }
        /* A task's or a unit's profile has the allocations of its own stacks only. */
        if ((p->process != VIEW_TASK_NONE && process != p->process) ||
            (p->unit != VIEW_UNIT_NONE && (process == VIEW_TASK_NONE || unit_id != p->unit)) ||
            (p->module != VIEW_MODULE_NONE && module != p->module))
                return;
        add_row(p, node, task, unit, module, 0, 0, pages);
}

static uint64_t row_weight(const Row *r) {
        return count_add(r->objects, r->alloc_objects);
}

static int compare_rows(const void *a, const void *b) {
        const Row *x = a, *y = b;
        uint64_t wx = row_weight(x), wy = row_weight(y);

        if (wx != wy)
                return wx > wy ? -1 : 1;
        if (x->node != y->node)
                return x->node < y->node ? -1 : 1;
        if (x->task != y->task)
                return x->task < y->task ? -1 : 1;
        if (x->unit != y->unit)
                return x->unit < y->unit ? -1 : 1;
        return x->module < y->module ? -1 : x->module > y->module;
}

/* Biggest first; past PROFILE_SAMPLES_MAX, the rest is one row without a stack or names. */
static int bound_rows(Profile *p) {
        /* qsort() takes no NULL array, even of nothing. */
        if (p->n_rows > 0)
                qsort(p->rows, p->n_rows, sizeof(Row), compare_rows);
        if (p->n_rows <= PROFILE_SAMPLES_MAX)
                return 0;
        int other = module_label(p, VIEW_MODULE_NONE);
        if (other < 0)
                return other;
        Row *last = &p->rows[PROFILE_SAMPLES_MAX - 1];
        Row folded = { .node = VIEW_NODE_ROOT, .task = LABEL_OTHER, .unit = LABEL_OTHER, .module = (uint16_t) other };
        for (size_t i = PROFILE_SAMPLES_MAX - 1; i < p->n_rows; i++) {
                folded.objects = count_add(folded.objects, p->rows[i].objects);
                folded.bytes = count_add(folded.bytes, p->rows[i].bytes);
                folded.alloc_objects = count_add(folded.alloc_objects, p->rows[i].alloc_objects);
        }
        p->samples_folded = p->n_rows - (PROFILE_SAMPLES_MAX - 1);
        *last = folded;
        p->n_rows = PROFILE_SAMPLES_MAX;
        return 0;
}

/* --- Frames ------------------------------------------------------------------------------------------- */

typedef struct FrameOrder {
        uint32_t top;                   /* its ancestor below the root: one process's frames together */
        uint32_t node;
} FrameOrder;

static int compare_frames(const void *a, const void *b) {
        const FrameOrder *x = a, *y = b;
        if (x->top != y->top)
                return x->top < y->top ? -1 : 1;
        return x->node < y->node ? -1 : x->node > y->node;
}

static ViewNode node_of(Profile *p, uint32_t id) {
        ViewNode n = { .id = id, .parent = VIEW_NODE_NONE };
        (void) view_node(p->a, p->tree, id, &n);
        return n;
}

/*
 * The frames of the rows' stacks, biggest rows first, at most PROFILE_FRAMES_MAX: a row whose stack
 * does not fit moves to its deepest frame that does. Into frames[] in an order where each process's
 * "[pid N comm]" node comes before its frames; *frame_of maps node -> index.
 */
static int frames_json(Profile *p, KeyIndex *frame_of, json_t **ret) {
        _cleanup_(query_framer_freep) QueryFramer *framer = NULL;
        _cleanup_free_ FrameOrder *order = NULL;
        json_auto_t *frames = json_array();
        size_t n = 0, order_alloc = 0;

        if (!frames)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_rows; i++) {
                Row *r = &p->rows[i];
                size_t needed = 0;
                uint32_t x = r->node, fits;

                for (; x != VIEW_NODE_ROOT && x != VIEW_NODE_NONE && key_index_get(frame_of, x) == KEY_INDEX_NONE;
                     x = node_of(p, x).parent)
                        needed++;
                fits = x == VIEW_NODE_NONE ? VIEW_NODE_ROOT : x;
                if (n + needed > PROFILE_FRAMES_MAX) {
                        r->node = fits;
                        p->stacks_cut++;
                        continue;
                }
                for (uint32_t y = r->node; y != fits; y = node_of(p, y).parent) {
                        if (greedy_realloc(&order, &order_alloc, n + 1, sizeof(FrameOrder), 256) < 0 ||
                            key_index_put(frame_of, y, (uint32_t) n) < 0)
                                return -ENOMEM;
                        order[n++] = (FrameOrder) { .node = y };
                }
        }
        if (n == 0) {
                *ret = TAKE_PTR(frames);
                return 0;
        }
        /* The ancestor below the root of each: parents first, so each takes its parent's. */
        qsort(order, n, sizeof(FrameOrder), compare_frames);
        for (size_t i = 0; i < n; i++)
                if (key_index_put(frame_of, order[i].node, (uint32_t) i) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint32_t parent = node_of(p, order[i].node).parent;
                order[i].top = parent == VIEW_NODE_ROOT || parent == VIEW_NODE_NONE ? order[i].node :
                               order[key_index_get(frame_of, parent)].top;
        }
        qsort(order, n, sizeof(FrameOrder), compare_frames);
        for (size_t i = 0; i < n; i++)
                if (key_index_put(frame_of, order[i].node, (uint32_t) i) < 0)
                        return -ENOMEM;

        framer = query_framer_new(p->a, p->tree, &p->q->names);
        if (!framer)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                ViewNode x = node_of(p, order[i].node);
                uint32_t caller = x.parent == VIEW_NODE_ROOT || x.parent == VIEW_NODE_NONE ? KEY_INDEX_NONE :
                                  key_index_get(frame_of, x.parent);
                json_t *f = query_framer_frame(framer, x.id);
                if (!f || json_object_set_new(f, "user", json_boolean(x.kind == VIEW_FRAME_USER)) < 0 ||
                    json_object_set_new(f, "caller", json_integer(caller == KEY_INDEX_NONE ? -1 : (json_int_t) caller)) < 0 ||
                    json_array_append_new(frames, f) < 0) {
                        json_decref(f);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(frames);
        return 0;
}

/* --- The reply ---------------------------------------------------------------------------------------- */

static json_t *tasks_json(Profile *p) {
        json_auto_t *list = json_pack("[{s:n, s:s}, {s:n, s:s}]", "pid", "comm", PROFILE_LABEL_OTHER, "pid", "comm",
                                      PROFILE_LABEL_ALL);
        ViewTask t;

        if (!list)
                return NULL;
        for (size_t i = 0; i < p->n_named_tasks; i++) {
                if (!view_task(p->a, p->named_tasks[i], &t))
                        t = (ViewTask) { .comm = "[unknown]" };
                if (json_array_append_new(list, json_pack("{s:i, s:o}", "pid", (int) t.pid, "comm",
                                                          utf8_json_string(t.comm))) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

static json_t *units_json(Profile *p) {
        json_auto_t *list = json_pack("[s, s]", PROFILE_LABEL_OTHER, PROFILE_LABEL_ALL);
        ViewUnit u;

        if (!list)
                return NULL;
        for (size_t i = 0; i < p->n_named_units; i++) {
                const char *name = view_unit(p->a, p->named_units[i], &u) && u.name ? u.name : VIEW_UNKNOWN_UNIT;
                if (json_array_append_new(list, utf8_json_string(name)) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

static json_t *modules_json(Profile *p) {
        json_auto_t *list = json_array();
        ViewModule m;

        if (!list)
                return NULL;
        for (size_t i = 0; i < p->n_modules; i++) {
                _cleanup_free_ char *build_id = NULL;
                const char *name = PROFILE_LABEL_OTHER;

                if (p->modules[i] != VIEW_MODULE_NONE && view_module(p->a, p->modules[i], &m)) {
                        name = m.name;
                        /* Synthetic modules ("[loading]") and unloaded ones have none. */
                        if (kernel_build_id(m.kernel ? NULL : name, &build_id) == -ENOMEM)
                                return NULL;
                }
                if (json_array_append_new(list, json_pack("{s:o, s:o}", "name", utf8_json_string(name), "buildId",
                                                          build_id ? json_string(build_id) : json_null())) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

static json_t *samples_json(Profile *p, const KeyIndex *frame_of, bool alloc) {
        json_auto_t *list = json_array();

        if (!list)
                return NULL;
        for (size_t i = 0; i < p->n_rows; i++) {
                const Row *r = &p->rows[i];
                uint32_t frame = r->node == VIEW_NODE_ROOT ? KEY_INDEX_NONE : key_index_get(frame_of, r->node);
                json_t *s = json_pack("{s:I, s:i, s:i, s:i, s:I, s:I, s:o, s:o}",
                                      "frame", frame == KEY_INDEX_NONE ? (json_int_t) -1 : (json_int_t) frame,
                                      "task", (int) r->task, "unit", (int) r->unit, "module", (int) r->module,
                                      "objects", varlink_count(r->objects), "bytes", varlink_count(r->bytes),
                                      "allocObjects", alloc ? json_integer(varlink_count(r->alloc_objects)) : json_null(),
                                      "allocBytes", alloc ? json_integer(varlink_count(count_mul(r->alloc_objects,
                                                                                                  p->q->page_size))) :
                                                            json_null());
                if (json_array_append_new(list, s) < 0)
                        return NULL;
        }
        return TAKE_PTR(list);
}

/* The scope's ids from the query's names. */
static int find_scope(Profile *p) {
        const ProfileQuery *q = p->q;
        ViewTask t;

        p->process = VIEW_TASK_NONE;
        p->unit = VIEW_UNIT_NONE;
        p->module = VIEW_MODULE_NONE;
        if (q->pid >= 0) {
                p->process = view_find_process(p->a, q->pid);
                if (p->process == VIEW_TASK_NONE || !view_task(p->a, p->process, &t))
                        return -ESRCH;
        }
        if (q->unit) {
                p->unit = view_find_unit_shown(p->a, q->unit);
                if (p->unit == VIEW_UNIT_NONE)
                        return -ENXIO;
        }
        if (q->module) {
                p->module = view_find_module_shown(p->a, q->module);
                if (p->module == VIEW_MODULE_NONE)
                        return -ENOENT;
        }
        p->kernel_module = view_find_module_shown(p->a, VIEW_KERNEL_MODULE);
        return 0;
}

int profile_query_json(Accounting *a, const ProfileQuery *q, json_t **ret) {
        _cleanup_(profile_done) Profile p = { .a = a, .q = q };
        _cleanup_(key_index_done) KeyIndex frame_of = {};
        json_auto_t *frames = NULL;
        bool pages = q->of == PROFILE_OF_PAGES;
        uint64_t objects = 0, bytes = 0, alloc_objects = 0;
        int r;

        if (q->of < 0 || q->of >= _PROFILE_OF_MAX || q->top < 1 || q->top > PROFILE_TOP_MAX || q->page_size == 0)
                return -EINVAL;
        p.tree = pages ? VIEW_TREE_PAGES : VIEW_TREE_SLAB;
        r = find_scope(&p);
        if (r < 0)
                return r;
        ViewScope scope = p.process != VIEW_TASK_NONE ? (ViewScope) { VIEW_SCOPE_PROCESS, p.process } :
                          p.unit != VIEW_UNIT_NONE ? (ViewScope) { VIEW_SCOPE_UNIT, p.unit } :
                          p.module != VIEW_MODULE_NONE ? (ViewScope) { VIEW_SCOPE_MODULE, p.module } :
                          VIEW_SCOPE_EVERY;

        p.n_slots = view_task_slots(a);
        p.n_units = view_unit_count(a);
        p.task_held = calloc(MAX(p.n_slots, (size_t) 1), sizeof(uint64_t));
        p.unit_held = calloc(MAX(p.n_units, (size_t) 1), sizeof(uint64_t));
        p.task_label = calloc(MAX(p.n_slots, (size_t) 1), sizeof(uint16_t));
        p.unit_label = calloc(MAX(p.n_units, (size_t) 1), sizeof(uint16_t));
        p.module_label = calloc(view_module_count(a) + 1, sizeof(uint16_t));
        if (!p.task_held || !p.unit_held || !p.task_label || !p.unit_label || !p.module_label)
                return -ENOMEM;

        if (pages)
                view_foreach_cell(a, scope, tally_cell, &p);
        else
                view_foreach_slab_object(a, tally_object, &p);
        r = name_top(p.task_held, p.n_slots, q->top, VIEW_TASK_EVICTED, p.task_label, &p.named_tasks, &p.n_named_tasks);
        if (r < 0)
                return r;
        r = name_top(p.unit_held, p.n_units, q->top, VIEW_UNIT_NONE, p.unit_label, &p.named_units, &p.n_named_units);
        if (r < 0)
                return r;

        if (pages) {
                view_foreach_cell(a, scope, cell_row, &p);
                r = find_processes(&p);
                if (r < 0)
                        return r;
                if (p.error >= 0)
                        p.error = view_foreach_own_allocated(a, allocated_row, &p);
        } else
                view_foreach_slab_object(a, object_row, &p);
        if (p.error < 0)
                return p.error;
        for (size_t i = 0; i < p.n_rows; i++) {
                objects = count_add(objects, p.rows[i].objects);
                bytes = count_add(bytes, p.rows[i].bytes);
                alloc_objects = count_add(alloc_objects, p.rows[i].alloc_objects);
        }
        r = bound_rows(&p);
        if (r < 0)
                return r;
        r = frames_json(&p, &frame_of, &frames);
        if (r < 0)
                return r;

        json_t *tasks = tasks_json(&p), *units = units_json(&p), *modules = modules_json(&p);
        json_t *samples = samples_json(&p, &frame_of, pages);
        AccountingStats st;
        view_accounting_stats(a, &st);
        *ret = json_pack("{s:s, s:I, s:I, s:o, s:o, s:o, s:O, s:o, s:o, s:o, s:o, s:I, s:I}",
                         "of", profile_of_to_string(q->of),
                         "objects", varlink_count(objects),
                         "bytes", varlink_count(bytes),
                         "allocObjects", pages ? json_integer(varlink_count(alloc_objects)) : json_null(),
                         "allocBytes", pages ? json_integer(varlink_count(count_mul(alloc_objects, q->page_size))) :
                                               json_null(),
                         "trackedPages", pages ? json_integer(varlink_count(st.current_pages)) : json_null(),
                         "frames", frames,
                         "tasks", tasks,
                         "units", units,
                         "modules", modules,
                         "samples", samples,
                         "stacksCut", varlink_count(p.stacks_cut),
                         "samplesFolded", varlink_count(p.samples_folded));
        return *ret ? 0 : -ENOMEM;
}
