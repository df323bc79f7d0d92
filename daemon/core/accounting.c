/* SPDX-License-Identifier: MIT */

#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "macro.h"

#define TRACER_CACHE_SLOTS 256u
/* Events between two checks of the memory budget: a check reads every part's bytes (no walk), and
 * between two the core grows by what this many events can add. */
#define BUDGET_CHECK_EVENTS 1024u
/* The last pfn at which a block of any valid order still ends within MS_PAGE_KEY_MAX. */
#define PFN_ANY_ORDER_MAX (MS_PAGE_KEY_MAX + 1 - (UINT64_C(1) << MS_EVENT_ORDER_MAX))

typedef struct TracerFrameSlot {
        uint64_t ip;                    /* 0: empty */
        bool tracer;                    /* in a function that runs a tracepoint's probes */
        bool program;                   /* in a BPF program, or in no symbol known (a program loaded later) */
} TracerFrameSlot;

struct Accounting {
        AccountingConfig config;
        const Ksym *ksym;               /* borrowed */
        PageMap *pages;                 /* owned: pfn -> (task, stack leaf, module) */
        StackTree *stacks;              /* owned */
        StackTree *slab_stacks;         /* owned: slab objects' stacks (with --slab only); holds no pages */
        Usage *usage;                   /* owned: tasks and modules */
        ChargeIndex *index;             /* owned: pages per (process, module, global leaf, cgroup) */
        Units *units;                   /* owned: pages per cgroup and unit */
        Slab *slab;                     /* owned: live slab objects */
        PageKinds kinds;                /* owned: the kinds of page allocation charge cells name */
        Heap *heap;                     /* owned: user-space heaps */
        uint64_t stamp_epoch;           /* pagemap_stamp_epoch() of the last pagemap_clamp_ages() */
        uint16_t loading_module;        /* "[loading]": pages of a module load whose module is not known yet */
        uint16_t kernel_module;         /* "vmlinux": allocations with no module frame, charged to the image */
        uint32_t stale_from;            /* first stack node classified with stale symbols, or STACK_NODE_NONE */
        const MsTracerFrames *tracer;   /* borrowed: the source's tracing frames; NULL: none dropped */
        TracerFrameSlot tracer_cache[TRACER_CACHE_SLOTS]; /* is a chain's innermost frame the tracer's? */
        AccountingStats stats;
        uint64_t interval_peak_pages;   /* the most current_pages reached since the last take (ledger_mark()) */
        Budget budget;                  /* the memory budget and the steps it took */
        uint32_t budget_countdown;      /* events until its next check */
        bool pages_held_back;           /* its step "pages": allocations are not tracked */
        uint64_t budget_untracked_allocs, budget_untracked_pages;
};

/*
 * Kernel functions whose presence in a chain means "the module loader is running". load_module() fires
 * the module_load tracepoint as its very last step before do_init_module() (a tail call, so its own frame
 * may be gone by then): below load_module() alone, the module being loaded has not been named yet.
 */
static const struct {
        const char *name;
        unsigned flags;
} module_loader_functions[] = {
        { "load_module", STACK_NODE_MODULE_LOADER },
        { "do_init_module", STACK_NODE_MODULE_LOADER | STACK_NODE_MODULE_INIT },
};

static uint16_t classify_frame(void *userdata, uint64_t ip, unsigned *flags) {
        Accounting *a = userdata;
        KsymResult sym;

        if (!a->ksym || !ksym_lookup(a->ksym, ip, &sym))
                return USAGE_MODULE_NONE;
        if (sym.real_module) {
                uint16_t id = usage_module_intern(a->usage, sym.module);
                ModuleUsage *m = usage_module(a->usage, id);
                /* Loaded before tracing began: no load event will say so, but kallsyms lists it. Only the
                 * first word counts: a free seen since wins over symbols not reloaded yet. */
                if (m && !m->loaded_known)
                        m->loaded = m->loaded_known = true;
                return id;
        }
        if (!sym.module)
                for (size_t i = 0; i < ELEMENTSOF(module_loader_functions); i++)
                        if (streq(sym.name, module_loader_functions[i].name))
                                *flags |= module_loader_functions[i].flags;
        return USAGE_MODULE_NONE;
}

/* One of the functions that run a tracepoint's probes for the source (MsTracerFrames). */
static bool is_tracer_function(const Accounting *a, const char *name) {
        for (const char *const *p = a->tracer ? a->tracer->prefixes : NULL; p && *p; p++)
                if (startswith(name, *p))
                        return true;
        return false;
}

static const TracerFrameSlot *tracer_frame(Accounting *a, uint64_t ip) {
        TracerFrameSlot *slot = &a->tracer_cache[(ip ^ (ip >> 12)) % TRACER_CACHE_SLOTS];
        if (slot->ip != ip) {
                KsymResult sym;
                bool known = a->ksym && ksym_lookup(a->ksym, ip, &sym);
                bool bpf = known && sym.module && streq(sym.module, "bpf");
                /* The kernel's own functions, and BPF trampolines, which kallsyms lists under [bpf]. */
                *slot = (TracerFrameSlot) {
                        .ip = ip,
                        .tracer = known && (!sym.module || bpf) && is_tracer_function(a, sym.name),
                        .program = a->tracer && a->tracer->program_first &&
                                   (!known || (sym.module && streq(sym.module, "bpf"))),
                };
        }
        return slot;
}

/* How many innermost kernel frames belong to the tracer: the run of tracepoint-running functions at the
 * top of the chain, after the BPF program's own frame, which may come first (named, or not yet in the
 * symbols). A chain that starts in the allocator (perf's) costs one lookup; a tracer function further
 * down, under frames of the allocation itself, is the allocation's own path and stays. */
static size_t tracer_frames(Accounting *a, const MsStack *stack) {
        size_t n = MIN(stack->n_kernel_frames, stack->n_frames), skip = 0;
        for (size_t i = 0; i < n; i++) {
                const TracerFrameSlot *f = tracer_frame(a, stack->frames[i]);
                if (f->tracer)
                        skip = i + 1;
                else if (i > 0 || !f->program)
                        break;
        }
        return skip;
}

/* The leaf of tree to charge for a chain, without the tracer's frames. The scope is the process record's
 * usage_task_scope(): a record reused for another process is another scope. */
static uint32_t intern_chain_in(Accounting *a, StackTree *tree, const MsStack *stack, uint32_t process) {
        size_t skip = stack->n_frames > 0 && a->tracer ? tracer_frames(a, stack) : 0;
        /* No stack may come as NULL frames, which take no offset, not even 0. */
        return stacktree_intern(tree, skip > 0 ? stack->frames + skip : stack->frames, stack->n_frames - skip,
                                stack->n_kernel_frames - skip, usage_task_scope(a->usage, process));
}

static uint32_t intern_chain(Accounting *a, const MsStack *stack, uint32_t process) {
        return intern_chain_in(a, a->stacks, stack, process);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Accounting *, accounting_free);

/* PageTaskFn: without thread records the task that owns a block is the process its cell names, so the
 * page table keeps no task of its own (4 bytes less per block). */
static uint32_t cell_process(void *userdata, uint32_t cell) {
        const Accounting *a = userdata;
        return chargeindex_process(a->index, cell);
}

int accounting_new(const AccountingConfig *config, const Ksym *ksym, Accounting **ret) {
        _cleanup_(accounting_freep) Accounting *a = calloc(1, sizeof(Accounting));
        if (!a)
                return -ENOMEM;

        a->config = *config;
        a->ksym = ksym;
        budget_init(&a->budget, config->max_memory_bytes);
        a->budget_countdown = BUDGET_CHECK_EVENTS;
        a->stale_from = STACK_NODE_NONE;
        a->pages = pagemap_new(config->expected_pages, config->track_threads ? NULL : cell_process, a);
        a->stacks = stacktree_new(config->max_stack_nodes, config->per_process_stacks, classify_frame, a);
        a->usage = usage_new(config->track_threads, config->max_exited_tasks);
        a->index = chargeindex_new();
        a->units = units_new();
        a->slab = slab_new(config->max_slab_objects);
        a->heap = heap_new(config->max_stack_nodes, config->max_heap_blocks, config->max_heaps, config->heap_shares);
        /* Objects come at many times the page rate with as many chains: a tree of their own keeps them out
         * of every page view and the pages' node budget. */
        if (config->slab && !(a->slab_stacks = stacktree_new(MAX(config->max_stack_nodes / 4, (size_t) 2), false,
                                                             classify_frame, a)))
                return -ENOMEM;
        if (page_kinds_init(&a->kinds) < 0)
                return -ENOMEM;
        if (!a->pages || !a->stacks || !a->usage || !a->index || !a->units || !a->slab || !a->heap)
                return -ENOMEM;
        a->kernel_module = usage_module_intern(a->usage, ACCOUNTING_KERNEL_MODULE);
        a->loading_module = usage_module_intern(a->usage, ACCOUNTING_LOADING_MODULE);
        /* On an empty table interning fails only for lack of memory. */
        if (a->kernel_module == USAGE_MODULE_NONE || a->loading_module == USAGE_MODULE_NONE)
                return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

Accounting *accounting_free(Accounting *a) {
        if (!a)
                return NULL;
        pagemap_free(a->pages);
        stacktree_free(a->stacks);
        stacktree_free(a->slab_stacks);
        usage_free(a->usage);
        chargeindex_free(a->index);
        units_free(a->units);
        slab_free(a->slab);
        page_kinds_done(&a->kinds);
        heap_free(a->heap);
        free(a);
        return NULL;
}

/*
 * Where pages are counted besides the total: a task (and so its process), and the stack leaf, module and
 * cgroup (so the unit) of a charge cell, which counts them too. A page owner's node is its cell: the
 * cell names the rest, and relabeling a cell moves all its blocks to another module at once.
 */
typedef struct PagePlace {
        uint32_t task;
        uint32_t cell;                  /* CHARGE_CELL_NONE: none holds them (a sample's first rise) */
        uint32_t leaf;
        uint32_t cgroup;
        uint16_t module;
} PagePlace;

static PagePlace cell_place(const Accounting *a, uint32_t task, uint32_t cell) {
        return (PagePlace) {
                .task = task,
                .cell = cell,
                .leaf = chargeindex_node(a->index, cell),
                .cgroup = chargeindex_cgroup(a->index, cell),
                .module = chargeindex_module(a->index, cell),
        };
}

/*
 * The one place a count of pages changes, so the six counts of a page stay in step: the total, the
 * task's, the leaf's (and every node above it), the module's, the unit's and the cell's. Each peak is
 * first raised to at least current + rise (ledger_raise(); 0 for a block, whose counts are exact), then
 * delta pages come or go. Pages come into their cell where the cell is chosen (chargeindex_add(), which
 * the block's owner names before its block is inserted), and leave it here. A block's move to another
 * module (move_block()) changes only the module and the cell, and keeps every sum.
 * accounting_disagreement() checks that the sums agree.
 */
static _always_inline_ void count_pages(Accounting *a, const PagePlace *p, uint64_t rise, int64_t delta) {
        uint64_t n = delta < 0 ? (uint64_t) -delta : (uint64_t) delta;      /* |delta| <= ACCOUNTING_PAGES_MAX */

        if (rise == 0 && delta > 0) {
                /* A block comes: exact counts, no peak to raise first (the cheaper walks). */
                usage_task_charge(a->usage, p->task, LEDGER_PAGES, n);
                stacktree_charge(a->stacks, p->leaf, n);
                usage_module_charge(a->usage, p->module, LEDGER_PAGES, n);
                units_charge(a->units, p->cgroup, n);
        } else if (rise == 0 && delta < 0) {
                usage_task_uncharge(a->usage, p->task, LEDGER_PAGES, n);
                stacktree_uncharge(a->stacks, p->leaf, n);
                usage_module_uncharge(a->usage, p->module, LEDGER_PAGES, n);
                units_uncharge(a->units, p->cgroup, n);
        } else {
                usage_task_apply(a->usage, p->task, LEDGER_PAGES, rise, delta);
                stacktree_apply(a->stacks, p->leaf, rise, delta);
                usage_module_apply(a->usage, p->module, LEDGER_PAGES, rise, delta);
                units_apply(a->units, p->cgroup, rise, delta);
        }
        if (delta < 0 && p->cell != CHARGE_CELL_NONE)
                chargeindex_sub(a->index, p->cell, n);

        /* The total stays at most ACCOUNTING_PAGES_MAX (see handle_alloc() and handle_sample()). */
        uint64_t high = a->stats.current_pages + rise;
        if (delta < 0)
                a->stats.current_pages -= MIN(n, a->stats.current_pages);
        else
                a->stats.current_pages += n;
        high = MAX(high, a->stats.current_pages);
        a->stats.peak_pages = MAX(a->stats.peak_pages, high);
        a->interval_peak_pages = MAX(a->interval_peak_pages, high);
}

/* PageReleaseFn: pages leave whoever allocated them (the cell's module: a relabeled cell took its blocks
 * along; the cell's cgroup: where they were allocated, wherever the task is now). */
static void release(void *userdata, const PageOwner *o, uint64_t pages) {
        Accounting *a = userdata;
        PagePlace p = cell_place(a, o->task, o->node);

        count_pages(a, &p, 0, -(int64_t) pages);
}

/* The module charged for a block allocated through node by process. */
static uint16_t owner_module(Accounting *a, const StackNode *node, uint32_t process) {
        uint16_t module = node->module;

        /* insmod/modprobe: the loader's own allocations belong to the module it is loading. That is the
         * module the process last announced only inside do_init_module(); before it, in load_module(),
         * the next one is on its way (modprobe loads the dependencies first, in one process), so those
         * pages wait in "[loading]" for its name. */
        if (module == USAGE_MODULE_NONE && (node->flags & STACK_NODE_MODULE_LOADER)) {
                const Task *p = (node->flags & STACK_NODE_MODULE_INIT) ? usage_task(a->usage, process) : NULL;
                module = (p ? p->loading_module : USAGE_MODULE_NONE) ?: a->loading_module;
        }
        return module ?: a->kernel_module;
}

/* The cgroup record of the event's cgroup, cached in the process record: one compare per event. */
static uint32_t event_cgroup(Accounting *a, uint32_t process, uint64_t cgroup_id) {
        Task *p = usage_task(a->usage, process);

        if (_likely_(p->cgroup != UNITS_NONE && p->cgroup_id == cgroup_id))
                return p->cgroup;
        uint32_t c = units_cgroup_intern(a->units, cgroup_id);
        if (c != UNITS_NONE) {
                p->cgroup = c;
                p->cgroup_id = cgroup_id;
        }
        return c;
}

void accounting_clamp_page_ages(Accounting *a, uint64_t now_nsec) {
        /* Ages ride in the page table modulo 39 hours: hold them at most 19.5 (pagemap.h). */
        if (_unlikely_(pagemap_stamp_epoch(now_nsec) != a->stamp_epoch)) {
                pagemap_clamp_ages(a->pages, now_nsec);
                a->stamp_epoch = pagemap_stamp_epoch(now_nsec);
        }
}

static void handle_alloc(Accounting *a, const MsEvent *e) {
        /* The memory budget's last step: the page table grows no more. The free will be untracked. */
        if (_unlikely_(a->pages_held_back)) {
                a->budget_untracked_allocs++;
                a->budget_untracked_pages += UINT64_C(1) << e->page.order;
                return;
        }
        uint32_t task = usage_task_lookup(a->usage, e->pid, e->tid, e->timestamp_nsec);
        if (task == USAGE_TASK_NONE) {
                a->stats.alloc_failures++;
                return;
        }

        /* Scoped by process record, not pid: a reused pid is another process. */
        uint32_t process = usage_task(a->usage, task)->process;
        uint32_t leaf = intern_chain(a, &e->page.stack, process);
        uint16_t module = owner_module(a, stacktree_node(a->stacks, leaf), process);
        uint64_t pages = UINT64_C(1) << e->page.order;
        uint32_t cgroup = event_cgroup(a, process, e->cgroup_id);
        if (cgroup == UNITS_NONE) {
                a->stats.alloc_failures++;
                return;
        }
        /* A block cannot be charged in part: one that would take the total beyond ACCOUNTING_PAGES_MAX
         * (only samples can bring it near) is not tracked, as if lost. */
        if (_unlikely_(pages > ACCOUNTING_PAGES_MAX - a->stats.current_pages)) {
                a->stats.saturated_events++;
                return;
        }

        /* The cell takes the pages first: a stale block of the same cell released by the insert must not
         * empty (and remove) it. */
        Task *t = usage_task(a->usage, task);
        uint32_t kind = page_kinds_intern(&a->kinds, e->page.pfn, e->page.order, e->page.gfp_flags, e->page.migrate_type);
        uint32_t cell = chargeindex_add(a->index, t->charge_hint, process, module, leaf, cgroup, false, kind, pages);
        if (cell == CHARGE_CELL_NONE) {
                a->stats.alloc_failures++;
                return;
        }
        t->charge_hint = cell;
        accounting_clamp_page_ages(a, e->timestamp_nsec);
        PageOwner owner = { .task = task, .node = cell, .stamp = pagemap_stamp(e->timestamp_nsec) };
        int r = pagemap_insert(a->pages, e->page.pfn, e->page.order, &owner, release, a);
        if (r < 0) {
                chargeindex_sub(a->index, cell, pages);
                a->stats.alloc_failures++;
                return;
        }
        if (r > 0)
                a->stats.stale_blocks++;

        PagePlace place = cell_place(a, task, cell);
        count_pages(a, &place, 0, (int64_t) pages);
        a->stats.allocs++;
        a->stats.alloc_pages += pages;
}

/* A slab object's bytes leave whoever they were charged to; its task may be reused after. */
static void release_object(Accounting *a, const SlabObject *o) {
        usage_task_uncharge(a->usage, o->task, LEDGER_BYTES, o->allocated);
        usage_task_drop_object(a->usage, o->task);
        if (o->cgroup != SLAB_NONE)
                units_uncharge_slab(a->units, o->cgroup, o->allocated);
}

/* The call site of an object allocation: the event's, or where a source cannot name it (a hook on a bulk
 * allocation sees only its own function) and leaves 0, the first frame of its stack past the tracer's. */
static uint64_t object_call_site(Accounting *a, const MsEvent *e) {
        const MsStack *chain = &e->object.stack;
        size_t skip;

        if (e->object.call_site != 0 || chain->n_kernel_frames == 0 || !chain->frames)
                return e->object.call_site;
        skip = a->tracer ? tracer_frames(a, chain) : 0;
        return skip < chain->n_kernel_frames ? chain->frames[skip] : 0;
}

/* A slab object: charged to its task's bytes (LEDGER_BYTES) and its cgroup's unit, and kept by pointer, so
 * that its free releases it from the same owners whoever frees it. */
static void handle_object_alloc(Accounting *a, const MsEvent *e) {
        uint32_t task = usage_task_lookup(a->usage, e->pid, e->tid, e->timestamp_nsec);
        if (task == USAGE_TASK_NONE) {
                a->stats.alloc_failures++;
                return;
        }
        uint32_t process = usage_task(a->usage, task)->process;
        uint32_t cgroup = event_cgroup(a, process, e->cgroup_id);
        /* An object whose chain is missing its frames is still an object: it just has no stack. */
        const MsStack *chain = &e->object.stack;
        bool has_chain = a->slab_stacks && (chain->n_frames == 0 || chain->frames);
        uint32_t stack = has_chain ? intern_chain_in(a, a->slab_stacks, chain, process) : STACK_NODE_ROOT;
        SlabObject old;
        int r = slab_alloc(a->slab, e->object.ptr, object_call_site(a, e), e->object.cache, task,
                           cgroup == UNITS_NONE ? SLAB_NONE : cgroup, stack, e->object.bytes_requested,
                           e->object.bytes_allocated, e->cpu, e->timestamp_nsec, &old);
        if (old.site != SLAB_NONE)
                release_object(a, &old);
        if (r < 0)
                return;
        uint32_t bytes = slab_object_bytes(e->object.bytes_requested, e->object.bytes_allocated);
        usage_task_charge(a->usage, task, LEDGER_BYTES, bytes);
        usage_task_hold_object(a->usage, task);
        if (cgroup != UNITS_NONE)
                units_charge_slab(a->units, cgroup, bytes);
}

/* SlabDropFn: an object the kernel freed unseen leaves its owners as a free would. */
static void drop_object(void *userdata, const SlabObject *o) {
        release_object(userdata, o);
}

int accounting_slab_reconcile(Accounting *a, const SlabInfo *info, uint64_t now_nsec) {
        return slab_reconcile(a->slab, info, now_nsec, drop_object, a);
}

static void handle_object_free(Accounting *a, const MsEvent *e) {
        SlabObject o;

        if (slab_release(a->slab, e->object.ptr, e->cpu, &o))
                release_object(a, &o);
}

typedef struct CellSearch {
        const ChargeIndex *index;
        uint32_t leaf;
        uint32_t skip;                  /* the cell already taken from */
        uint32_t found;
} CellSearch;

static void find_leaf_cell(void *userdata, uint32_t cell) {
        CellSearch *c = userdata;

        if (c->found == CHARGE_CELL_NONE && cell != c->skip && chargeindex_node(c->index, cell) == c->leaf &&
            chargeindex_sampled(c->index, cell))
                c->found = cell;
}

/*
 * Takes up to budget pages of the sample's chain off the counts for a negative sample, from cells of
 * sampled pages only (blocks in the page table name the others): first from the cell of place (the
 * chain's module and the task's cgroup now), raising the peaks by rise, then from cells of the same chain
 * under other modules or cgroups (a symbol reload re-classified the chain after earlier samples charged
 * it, or the task moved: those pages leave the module and the cgroup they were charged to). Returns the
 * pages taken.
 */
static uint64_t take_sampled_pages(Accounting *a, const PagePlace *place, uint32_t process, uint64_t rise,
                uint64_t budget) {
        PagePlace own = *place;

        own.cell = chargeindex_lookup(a->index, process, own.module, own.leaf, own.cgroup, true, PAGE_KIND_UNKNOWN);
        uint64_t taken = own.cell != CHARGE_CELL_NONE ? MIN(chargeindex_pages(a->index, own.cell), budget) : 0;
        count_pages(a, &own, rise, -(int64_t) taken);

        /* Rare: one walk of the process's cells per other (module, cgroup) holding the chain. */
        while (taken < budget) {
                CellSearch c = {
                        .index = a->index, .leaf = own.leaf, .skip = own.cell, .found = CHARGE_CELL_NONE,
                };

                chargeindex_foreach_cell_of_process(a->index, process, find_leaf_cell, &c);
                if (c.found == CHARGE_CELL_NONE)
                        break;
                uint64_t n = MIN(chargeindex_pages(a->index, c.found), budget - taken);
                PagePlace other = cell_place(a, own.task, c.found);
                count_pages(a, &other, 0, -(int64_t) n);
                taken += n;
        }
        return taken;
}

/*
 * An aggregated sample: "task T, stack S: delta pages, rising at most peak above where (T, S) stood".
 * No pfn: the pages go into the same task, module, stack and charge-cell counts as page records do, and
 * into sampled_pages instead of the page table. Each counter's peak is raised to its current value + the
 * sample's rise before delta applies (ledger_raise()), so the peak of (T, S) is exact, and the peak of a
 * sum (a task, a module, an outer stack node, the total) is the highest it stood if the samples' rises
 * happened one after another in delivery order: a value the sum really could have reached, at least
 * every part's peak, never a sum of parts' peaks (rises that overlapped in time are not added up; what
 * the kernel does not report cannot be told apart).
 *
 * A negative delta takes pages off the (process, module, chain) cells that earlier samples charged (see
 * take_sampled_pages()); what they did not hold (charged before tracing, or through a lost sample) is
 * counted in sample_untracked_pages, as untracked frees are. Sampled pages have no blocks, so a symbol
 * reload does not move them to a chain's new module: they stay where they were charged until they go.
 * Bytes samples go to the task and module ledgers of that unit; stack nodes and the charge index count
 * pages only.
 */
/* Whether a sample can be applied: a unit, a change and a rise of a size there can be, a chain. */
static bool sample_is_valid(const MsSampleEvent *s) {
        if (s->unit < 0 || s->unit >= _LEDGER_UNIT_MAX || s->delta == INT64_MIN ||
            s->stack.n_kernel_frames > s->stack.n_frames || (s->stack.n_frames > 0 && !s->stack.frames))
                return false;
        uint64_t max = s->unit == LEDGER_PAGES ? MS_EVENT_SAMPLE_PAGES_MAX : MS_EVENT_SAMPLE_BYTES_MAX;
        uint64_t change = s->delta < 0 ? (uint64_t) -s->delta : (uint64_t) s->delta;
        return change <= max && s->peak <= max;
}

static void handle_sample(Accounting *a, const MsEvent *e) {
        const MsSampleEvent *s = &e->sample;

        if (!sample_is_valid(s)) {
                a->stats.invalid_events++;
                return;
        }
        uint32_t task = usage_task_lookup(a->usage, e->pid, e->tid, e->timestamp_nsec);
        if (task == USAGE_TASK_NONE) {
                a->stats.alloc_failures++;
                return;
        }
        uint32_t process = usage_task(a->usage, task)->process;
        uint32_t leaf = intern_chain(a, &s->stack, process);
        uint16_t module = owner_module(a, stacktree_node(a->stacks, leaf), process);
        int64_t delta = s->delta;
        uint64_t rise = MAX(s->peak, delta > 0 ? (uint64_t) delta : 0);
        uint32_t cgroup = event_cgroup(a, process, e->cgroup_id);
        if (cgroup == UNITS_NONE) {
                a->stats.alloc_failures++;
                return;
        }

        a->stats.samples++;
        if (s->unit != LEDGER_PAGES) {
                /* No total bounds the ledgers of this unit: the sample rises, and adds, only up to
                 * COUNT_MAX in the largest two it touches, the process's and the module's (a thread's is
                 * part of its process's). */
                const ModuleUsage *m = usage_module(a->usage, module);
                uint64_t held = MAX(usage_task(a->usage, process)->ledger[s->unit].current,
                                    m ? m->ledger[s->unit].current : 0);

                if (_unlikely_(rise > COUNT_MAX - held)) {
                        rise = COUNT_MAX - held;
                        if (delta > 0 && (uint64_t) delta > rise)
                                delta = (int64_t) rise;
                        a->stats.saturated_events++;
                }
                usage_task_apply(a->usage, task, s->unit, rise, delta);
                usage_module_apply(a->usage, module, s->unit, rise, delta);
                return;
        }

        /* Every count of pages is a part of the total: a sample that would take the total beyond
         * ACCOUNTING_PAGES_MAX rises, and adds, only up to it, so no part gets beyond either. */
        uint64_t room = ACCOUNTING_PAGES_MAX - a->stats.current_pages;
        if (_unlikely_(rise > room)) {
                rise = room;
                if (delta > 0 && (uint64_t) delta > room)
                        delta = (int64_t) room;
                a->stats.saturated_events++;
        }

        PagePlace place = {
                .task = task, .cell = CHARGE_CELL_NONE, .leaf = leaf, .cgroup = cgroup, .module = module,
        };
        if (delta > 0) {
                place.cell = chargeindex_add(a->index, CHARGE_CELL_NONE, process, module, leaf, cgroup, true,
                                             PAGE_KIND_UNKNOWN, (uint64_t) delta);
                if (place.cell == CHARGE_CELL_NONE) {
                        a->stats.alloc_failures++;
                        return;
                }
                a->stats.sampled_pages += (uint64_t) delta;
                count_pages(a, &place, rise, delta);
        } else if (delta < 0) {
                uint64_t want = (uint64_t) -delta, budget = MIN(want, a->stats.sampled_pages);
                uint64_t taken = take_sampled_pages(a, &place, process, rise, budget);

                a->stats.sample_untracked_pages = count_add(a->stats.sample_untracked_pages, want - taken);
                a->stats.sampled_pages -= taken;
        } else
                count_pages(a, &place, rise, 0);
}

static void handle_free(Accounting *a, const MsEvent *e) {
        uint64_t pages = UINT64_C(1) << MIN(e->page.order, (uint32_t) PAGEMAP_ORDER_MAX);
        uint64_t released = pagemap_release(a->pages, e->page.pfn, e->page.order, release, a);

        if (released > 0) {
                a->stats.frees++;
                a->stats.freed_pages += released;
        } else
                a->stats.untracked_frees++;
        if (released < pages)
                a->stats.untracked_free_pages += pages - released;
}

/* Moves a block of 2^order pages to another module, and to the cell for it. */
static void move_block(Accounting *a, PageOwner *o, unsigned order, uint16_t module) {
        uint64_t pages = UINT64_C(1) << order;
        uint32_t cell = chargeindex_add(a->index, CHARGE_CELL_NONE, chargeindex_process(a->index, o->node), module,
                                        chargeindex_node(a->index, o->node), chargeindex_cgroup(a->index, o->node),
                                        false, chargeindex_kind(a->index, o->node), pages);

        /* Without a cell for the new module the block stays where it is: every count stays balanced. */
        if (cell == CHARGE_CELL_NONE)
                return;
        usage_module_uncharge(a->usage, chargeindex_module(a->index, o->node), LEDGER_PAGES, pages);
        chargeindex_sub(a->index, o->node, pages);
        usage_module_charge(a->usage, module, LEDGER_PAGES, pages);
        o->node = cell;
}

typedef struct ModuleMove {
        Accounting *a;
        uint32_t process;
        uint16_t module;
        size_t conflicts;
} ModuleMove;

static void relabel_loading_cell(void *userdata, uint32_t cell) {
        ModuleMove *m = userdata;
        Accounting *a = m->a;

        if (chargeindex_module(a->index, cell) != a->loading_module)
                return;
        uint64_t pages = chargeindex_pages(a->index, cell);
        if (chargeindex_relabel(a->index, cell, m->module) < 0) {
                m->conflicts++;
                return;
        }
        usage_module_uncharge(a->usage, a->loading_module, LEDGER_PAGES, pages);
        usage_module_charge(a->usage, m->module, LEDGER_PAGES, pages);
}

static void move_loading_pages(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        ModuleMove *m = userdata;
        Usage *u = m->a->usage;

        if (chargeindex_module(m->a->index, o->node) != m->a->loading_module || usage_task_process(u, o->task) != m->process)
                return;
        move_block(m->a, o, order, m->module);
}

static void handle_module_load(Accounting *a, const MsEvent *e) {
        uint16_t id = usage_module_intern(a->usage, e->module.name);
        ModuleUsage *m = usage_module(a->usage, id);
        if (!m)
                return;
        m->loaded = m->loaded_known = true;

        uint32_t task = usage_task_lookup(a->usage, e->pid, e->tid, e->timestamp_nsec);
        if (task == USAGE_TASK_NONE)
                return;
        uint32_t process = usage_task(a->usage, task)->process;
        usage_task(a->usage, process)->loading_module = id;

        /* What the loader allocated before the kernel announced the module's name is its too: its cells
         * change module, and their blocks with them, without a walk of the page table. */
        ModuleMove move = { .a = a, .process = process, .module = id };
        if (usage_module(a->usage, a->loading_module)->ledger[LEDGER_PAGES].current == 0)
                return;
        chargeindex_foreach_cell_of_process(a->index, process, relabel_loading_cell, &move);
        /* A cell that could not move (the module already had one for that chain) is moved block by block. */
        if (move.conflicts > 0) {
                pagemap_foreach(a->pages, move_loading_pages, &move);
                a->stats.module_walks++;
        }
}

/* The steps of the memory budget that would stop some growth now (1 << BudgetStep). */
static uint32_t budget_steps_that_apply(Accounting *a) {
        HeapStats h;
        uint32_t applies = UINT32_C(1) << BUDGET_STEP_EXITED_TASKS | UINT32_C(1) << BUDGET_STEP_STACKS |
                           UINT32_C(1) << BUDGET_STEP_PAGES;

        heap_get_stats(a->heap, &h);
        if (a->config.slab)
                applies |= UINT32_C(1) << BUDGET_STEP_SLAB_OBJECTS;
        if (h.n_images > 0)
                applies |= UINT32_C(1) << BUDGET_STEP_HEAP_BLOCKS;
        return applies;
}

/* Takes (in_effect) or lifts a step of the memory budget: what budget.h says each stops. */
static void budget_apply(Accounting *a, BudgetStep step, bool in_effect) {
        switch (step) {
        case BUDGET_STEP_SLAB_OBJECTS:
                slab_set_max_objects(a->slab, in_effect ? slab_stats(a->slab)->live_objects : a->config.max_slab_objects);
                break;
        case BUDGET_STEP_HEAP_BLOCKS: {
                HeapStats h;
                heap_get_stats(a->heap, &h);
                heap_set_max_blocks(a->heap, in_effect ? h.live_blocks : a->config.max_heap_blocks);
                break;
        }
        case BUDGET_STEP_EXITED_TASKS:
                usage_set_max_exited(a->usage, in_effect ? 0 : a->config.max_exited_tasks);
                break;
        case BUDGET_STEP_STACKS:
                stacktree_set_max_nodes(a->stacks, in_effect ? stacktree_size(a->stacks) : a->config.max_stack_nodes);
                if (a->slab_stacks)
                        stacktree_set_max_nodes(a->slab_stacks, in_effect ? stacktree_size(a->slab_stacks) :
                                                                            MAX(a->config.max_stack_nodes / 4, (size_t) 2));
                break;
        case BUDGET_STEP_PAGES:
                a->pages_held_back = in_effect;
                break;
        default:
                break;
        }
}

/* Every BUDGET_CHECK_EVENTS events: a step taken or lifted when the core's bytes call for it. */
static void budget_run(Accounting *a) {
        BudgetStep step;

        a->budget_countdown = BUDGET_CHECK_EVENTS;
        BudgetChange c = budget_check(&a->budget, accounting_memory_bytes(a), budget_steps_that_apply(a), &step);
        if (c == BUDGET_KEEP)
                return;
        budget_apply(a, step, c == BUDGET_TAKE);
        budget_changed(&a->budget, c, step);
}

void accounting_prefetch_page(Accounting *a, uint64_t pfn) {
        pagemap_prefetch(a->pages, pfn);
}

void accounting_handle_event(Accounting *a, const MsEvent *e) {
        a->stats.events++;
        if (a->stats.first_event_nsec == 0)
                a->stats.first_event_nsec = e->timestamp_nsec;
        a->stats.last_event_nsec = MAX(a->stats.last_event_nsec, e->timestamp_nsec);

        /* Events enter here from every source: an impossible order is counted, never applied (its free
         * would scan 2^order pfns, its allocation charge 2^order pages); so is a block that does not end
         * at or below MS_PAGE_KEY_MAX, which no page table entry can hold. One compare for the blocks
         * that start low enough for any order to fit. */
        if (_unlikely_((e->type == MS_EVENT_PAGE_ALLOC || e->type == MS_EVENT_PAGE_FREE) &&
                       (e->page.order > MS_EVENT_ORDER_MAX || e->page.pfn > PFN_ANY_ORDER_MAX)) &&
            (e->page.order > MS_EVENT_ORDER_MAX ||
             e->page.pfn > MS_PAGE_KEY_MAX + 1 - (UINT64_C(1) << e->page.order))) {
                a->stats.invalid_events++;
                return;
        }
        /* Nor is a chain whose frames are missing. */
        if (_unlikely_(e->type == MS_EVENT_PAGE_ALLOC && e->page.stack.n_frames > 0 && !e->page.stack.frames)) {
                a->stats.invalid_events++;
                return;
        }

        /* Pid 0 never forks, renames or exits: it is the idle task, or, for a daemon in a PID namespace
         * of its own, every task outside it. Such records (perf sends them for outside tasks) would end
         * and re-create one record standing for all of them at every outside fork. Their pages stay
         * charged to pid 0. */
        if (e->pid == 0 && (e->type == MS_EVENT_TASK_FORK || e->type == MS_EVENT_TASK_COMM ||
                            e->type == MS_EVENT_TASK_EXIT))
                return;

        switch (e->type) {
        case MS_EVENT_PAGE_ALLOC:
                handle_alloc(a, e);
                break;
        case MS_EVENT_PAGE_FREE:
                handle_free(a, e);
                break;
        case MS_EVENT_TASK_NEW:
                (void) usage_task_seed(a->usage, e->pid, e->task.parent_pid, e->task.name, e->task.cmdline, e->task.baseline_pages,
                                       e->timestamp_nsec);
                break;
        case MS_EVENT_TASK_FORK:
                (void) usage_task_fork(a->usage, e->task.parent_pid, e->pid, e->tid, e->timestamp_nsec);
                break;
        case MS_EVENT_TASK_COMM:
                usage_task_set_comm(a->usage, e->pid, e->tid, e->task.name, e->task.cmdline, e->timestamp_nsec);
                break;
        case MS_EVENT_TASK_EXIT:
                usage_task_exit(a->usage, e->pid, e->tid, e->timestamp_nsec);
                break;
        case MS_EVENT_MODULE_LOAD:
                handle_module_load(a, e);
                break;
        case MS_EVENT_MODULE_FREE: {
                ModuleUsage *m = usage_module(a->usage, usage_module_intern(a->usage, e->module.name));
                if (m) {
                        m->loaded = false;
                        m->loaded_known = true;
                }
                break;
        }
        case MS_EVENT_LOST:
                if (e->lost.n_lost > COUNT_MAX - a->stats.lost_events)
                        a->stats.saturated_events++;
                a->stats.lost_events = count_add(a->stats.lost_events, e->lost.n_lost);
                slab_note_lost(a->slab, e->lost.n_lost);
                break;
        case MS_EVENT_SAMPLE:
                handle_sample(a, e);
                break;
        case MS_EVENT_OBJECT_ALLOC:
                handle_object_alloc(a, e);
                break;
        case MS_EVENT_OBJECT_FREE:
                handle_object_free(a, e);
                break;
        case MS_EVENT_HEAP_START:
        case MS_EVENT_HEAP_ALLOC:
        case MS_EVENT_HEAP_FREE:
        case MS_EVENT_HEAP_STATE:
        case MS_EVENT_HEAP_MAPS:
        case MS_EVENT_HEAP_END:
                heap_handle_event(a->heap, e);
                break;
        default:
                break;
        }
        /* An exit, or a fork or thread that reuses an id, may have ended a task: the exited records stay
         * within their bound after every event, not only after exits. Nothing to do costs a compare. */
        (void) usage_evict(a->usage);
        if (_unlikely_(a->budget.limit_bytes > 0 && --a->budget_countdown == 0))
                budget_run(a);
}

static void sink_event(void *userdata, const MsEvent *event) {
        accounting_handle_event(userdata, event);
}

static void sink_prefetch_page(void *userdata, uint64_t pfn) {
        accounting_prefetch_page(userdata, pfn);
}

MsEventSink accounting_sink(Accounting *a) {
        return (MsEventSink) { .event = sink_event, .prefetch_page = sink_prefetch_page, .userdata = a };
}

void accounting_symbols_stale(Accounting *a) {
        a->stale_from = MIN(a->stale_from, (uint32_t) stacktree_size(a->stacks));
}

bool accounting_symbols_are_stale(const Accounting *a) {
        return a->stale_from != STACK_NODE_NONE;
}

typedef struct Reattribute {
        Accounting *a;
        uint32_t from;
        const bool *changed;            /* per node from stale_from on */
} Reattribute;

static void reattribute_block(void *userdata, uint64_t pfn, unsigned order, PageOwner *o) {
        Reattribute *r = userdata;
        Accounting *a = r->a;

        uint32_t node = chargeindex_node(a->index, o->node);
        if (node < r->from || !r->changed[node - r->from])
                return;
        uint16_t module = owner_module(a, stacktree_node(a->stacks, node), usage_task_process(a->usage, o->task));
        if (module != chargeindex_module(a->index, o->node))
                move_block(a, o, order, module);
}

void accounting_set_ksym(Accounting *a, const Ksym *ksym) {
        a->ksym = ksym;
        memset(a->tracer_cache, 0, sizeof(a->tracer_cache));
        if (a->stale_from == STACK_NODE_NONE)
                return;

        /* Nodes created while the symbols were stale may have code of the new module in them: classify
         * them again, and move their blocks to the module they belong to. The walk happens only if a node
         * changed, at most once per (coalesced) reload. */
        uint32_t from = a->stale_from;
        size_t n = stacktree_size(a->stacks);
        a->stale_from = STACK_NODE_NONE;
        if (from >= n)
                return;
        _cleanup_free_ bool *changed = calloc(n - from, sizeof(bool));
        if (!changed) {
                /* Future allocations are right either way; only the blocks already charged stay put. */
                (void) stacktree_reclassify(a->stacks, from, NULL);
                return;
        }
        if (stacktree_reclassify(a->stacks, from, changed) == 0)
                return;
        Reattribute r = { .a = a, .from = from, .changed = changed };
        pagemap_foreach(a->pages, reattribute_block, &r);
        a->stats.symbol_walks++;
}

void accounting_set_tracer_frames(Accounting *a, const MsTracerFrames *tracer) {
        a->tracer = tracer;
        memset(a->tracer_cache, 0, sizeof(a->tracer_cache));
}

const Ksym *accounting_ksym(const Accounting *a) {
        return a->ksym;
}

void accounting_reset(Accounting *a, AccountingReset what) {
        switch (what) {
        case ACCOUNTING_RESET_PEAKS:
                usage_reset_peaks(a->usage);
                stacktree_reset_peaks(a->stacks);
                units_reset_peaks(a->units);
                slab_reset_peaks(a->slab);
                a->stats.peak_pages = a->stats.current_pages;
                break;
        case ACCOUNTING_RESET_ALL: {
                uint64_t lost = a->stats.lost_events, invalid = a->stats.invalid_events, resets = a->stats.resets;
                uint64_t saturated = a->stats.saturated_events;

                pagemap_clear(a->pages);
                stacktree_clear(a->stacks);
                if (a->slab_stacks)
                        stacktree_clear(a->slab_stacks);
                chargeindex_clear(a->index);
                if (a->stale_from != STACK_NODE_NONE)
                        a->stale_from = (uint32_t) stacktree_size(a->stacks);
                usage_clear(a->usage);
                units_clear(a->units);
                /* Its objects name tasks and cgroups that are gone now (their slots are reused). */
                slab_clear(a->slab);
                heap_clear(a->heap);
                /* Loss and bad input are never hidden, not even by a reset; nor is the reset itself. */
                a->stats = (AccountingStats) {
                        .lost_events = lost,
                        .invalid_events = invalid,
                        .saturated_events = saturated,
                        .resets = resets + 1,
                };
                a->interval_peak_pages = 0;
                break;
        }
        default:
                break;
        }
}

Usage *accounting_usage(Accounting *a) {
        return a->usage;
}

StackTree *accounting_stacktree(Accounting *a) {
        return a->stacks;
}

StackTree *accounting_slab_stacktree(Accounting *a) {
        return a->slab_stacks;
}

Units *accounting_units(Accounting *a) {
        return a->units;
}

bool accounting_per_process_stacks(const Accounting *a) {
        return a->config.per_process_stacks;
}

bool accounting_traces_slab(const Accounting *a) {
        return a->config.slab;
}

Slab *accounting_slab(Accounting *a) {
        return a->slab;
}

PageKinds *accounting_page_kinds(Accounting *a) {
        return &a->kinds;
}

Heap *accounting_heap(Accounting *a) {
        return a->heap;
}

const ChargeIndex *accounting_chargeindex(const Accounting *a) {
        return a->index;
}

PageMap *accounting_pagemap(Accounting *a) {
        return a->pages;
}

void accounting_get_stats(const Accounting *a, AccountingStats *ret) {
        *ret = a->stats;
}

size_t accounting_memory_bytes(const Accounting *a) {
        return sizeof(Accounting) + pagemap_memory_bytes(a->pages) + stacktree_memory_bytes(a->stacks) +
               (a->slab_stacks ? stacktree_memory_bytes(a->slab_stacks) : 0) +
               usage_memory_bytes(a->usage) + chargeindex_memory_bytes(a->index) + units_memory_bytes(a->units) +
               slab_memory_bytes(a->slab) + heap_memory_bytes(a->heap) + page_kinds_memory_bytes(&a->kinds);
}

size_t accounting_trim(Accounting *a) {
        return pagemap_trim(a->pages);
}

void accounting_get_budget_stats(const Accounting *a, BudgetStats *ret) {
        PageMapShape shape;

        pagemap_shape(a->pages, &shape);
        *ret = (BudgetStats) {
                .dense_regions = shape.dense_regions,
                .sparse_regions = shape.sparse_regions,
                .single_regions = shape.inline_regions,
                .dense_blocks = shape.dense_blocks,
                .sparse_blocks = shape.sparse_blocks,
                .limit_bytes = a->budget.limit_bytes,
                .core_bytes = accounting_memory_bytes(a),
                .page_table_bytes = pagemap_memory_bytes(a->pages),
                .in_effect = a->budget.in_effect,
                .untracked_allocs = a->budget_untracked_allocs,
                .untracked_pages = a->budget_untracked_pages,
        };
        memcpy(ret->taken, a->budget.taken, sizeof(ret->taken));
}

uint64_t accounting_current_pages(const Accounting *a) {
        return a->stats.current_pages;
}

uint64_t accounting_interval_take(Accounting *a, uint64_t *ret_current_pages) {
        uint64_t p = MAX(a->interval_peak_pages, a->stats.current_pages);
        a->interval_peak_pages = a->stats.current_pages;
        *ret_current_pages = a->stats.current_pages;
        return p;
}
