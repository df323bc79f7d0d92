/* SPDX-License-Identifier: MIT */

/*
 * The live view's model without a terminal: selection across refreshes, sorting, filtering, stacks. The
 * rows of each view are its class's own (view-class.h): the tests read them as the shared code and the
 * screen do, through the class (a row's key, a column's text, its current pages, its look).
 */

#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "format.h"
#include "graph.h"
#include "meminfo.h"
#include "model.h"
#include "settings.h"
#include "tests.h"
#include "view-class.h"

/* Room for what the readers below copy out of the model: each call's result lasts until the next. */
static char seen[512];

/* The key of a value of a view (a row read, or a node of the class's tree): "pid 10", "unit x.service",
 * "slice /x.slice", a module's or a call site's name, a stack node's labels from the root ('\x1f' between
 * them). */
static const char *value_key(const TopModel *m, TopView v, size_t value) {
        char *key = top_view_class(v)->key(m, value);

        ASSERT_NOT_NULL(key);
        (void) snprintf(seen, sizeof(seen), "%s", key);
        free(key);
        return seen;
}

/* The key of a visible row, NULL for no such row. */
static const char *row_key(const TopModel *m, TopView v, size_t row) {
        size_t value = top_model_row_value(m, v, row);
        return value == SIZE_MAX ? NULL : value_key(m, v, value);
}

/* The label of a visible row of the stacks: the last of its key's labels. */
static const char *stack_label(const TopModel *m, size_t row) {
        const char *key = row_key(m, TOP_VIEW_STACKS, row), *sep = key ? strrchr(key, '\x1f') : NULL;
        return sep ? sep + 1 : key;
}

/* The text of the column titled title of a value (a row read, or a node of the class's tree), written by
 * its class as the screen shows it without a tree. */
static const char *column(const TopModel *m, TopView v, size_t value, const char *title) {
        const TopViewClass *c = top_view_class(v);
        char *fields[16] = {};
        ssize_t at = -1;

        ASSERT_LE(c->n_columns, ELEMENTSOF(fields));
        for (size_t i = 0; i < c->n_columns; i++)
                if (streq(c->columns[i].title, title))
                        at = (ssize_t) i;
        ASSERT_GE(at, 0);
        ASSERT_OK(c->write(m, value, NULL, true, fields));
        (void) snprintf(seen, sizeof(seen), "%s", fields[at]);
        for (size_t i = 0; i < c->n_columns; i++)
                free(fields[i]);
        return seen;
}

/* The same of a visible row. */
static const char *row_column(const TopModel *m, TopView v, size_t row, const char *title) {
        return column(m, v, top_model_row_value(m, v, row), title);
}

/* The caption before the sort in the tab line ("[unit x.service]" for the stacks' scope). */
static const char *caption(const TopModel *m, TopView v) {
        char *s = top_view_class(v)->caption(m);

        ASSERT_NOT_NULL(s);
        (void) snprintf(seen, sizeof(seen), "%s", s);
        free(s);
        return seen;
}

/* A size as the columns write it, to compare with one of them (a buffer of its own). */
static char figure[FORMAT_BUFFER_MAX];

static const char *as_pages(uint64_t n) {
        return format_pages(figure, sizeof(figure), n, 4096);
}

static const char *as_bytes(uint64_t n) {
        return format_bytes(figure, sizeof(figure), n);
}

static json_t *task(int pid, const char *comm, int current, int peak, int allocs) {
        return json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:b}", "pid", pid, "comm", comm, "cmdline", comm,
                         "currentPages", current, "peakPages", peak, "allocs", allocs, "frees", allocs - current,
                         "baselinePages", 0, "exited", false);
}

static json_t *top_reply(json_t *tasks) {
        json_t *r = json_pack("{s:i, s:i, s:i, s:f, s:i, s:i, s:o, s:[{s:s, s:i, s:i, s:b}, {s:s, s:i, s:i, s:b}]}",
                              "timestampUsec", 1, "trackedPages", 1000, "peakTrackedPages", 2000,
                              "eventsPerSecond", 10.0, "lostEvents", 0, "uptimeUsec", 5000000, "tasks", tasks,
                              "modules", "name", "vmlinux", "currentPages", 900, "peakPages", 950, "loaded", true,
                              "name", "ext4", "currentPages", 100, "peakPages", 1000, "loaded", true);
        ASSERT_NOT_NULL(r);
        return r;
}

static void test_selection_survives_refresh(void) {
        TopModel *m;
        json_t *r;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o, o, o]", task(10, "big", 500, 500, 600), task(20, "mid", 300, 900, 400),
                                task(30, "small", 100, 100, 100)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 3);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 10");

        top_model_move(m, 1);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, top_model_selected(m, TOP_VIEW_TASKS)), "pid 20");

        /* mid grows past big: the selection follows pid 20 to the top. */
        r = top_reply(json_pack("[o, o, o]", task(20, "mid", 800, 900, 900), task(10, "big", 500, 500, 600),
                                task(30, "small", 100, 100, 100)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_selected(m, TOP_VIEW_TASKS), 0);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 20");

        /* pid 20 exits and vanishes: the selection stays at its row, clamped. */
        top_model_move(m, INT64_MAX);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, top_model_selected(m, TOP_VIEW_TASKS)), "pid 30");
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_selected(m, TOP_VIEW_TASKS), 0);

        /* Paused: updates are ignored. */
        top_model_toggle_pause(m);
        r = top_reply(json_pack("[o, o]", task(10, "big", 1, 1, 1), task(11, "new", 2, 2, 2)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 1);
        ASSERT_EQ(top_view_class(TOP_VIEW_TASKS)->current(m, top_model_row_value(m, TOP_VIEW_TASKS, 0)), 500);
        top_model_toggle_pause(m);

        top_model_free(m);
}

static void test_sort_and_filter(void) {
        TopModel *m;
        json_t *r;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o, o, o]", task(10, "big", 500, 500, 600), task(20, "mid", 300, 900, 400),
                                task(30, "Small", 100, 100, 1000)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);

        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "current");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "peak");
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 20");
        ASSERT_STREQ(top_model_stream_sort(m), "peak");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "allocs");
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 30");
        ASSERT_STREQ(top_model_stream_sort(m), "allocs");
        top_model_sort_next(m, -1);
        top_model_sort_next(m, -1);
        top_model_sort_next(m, -1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "comm");
        /* The daemon has no order by name: it keeps the biggest by current pages. */
        ASSERT_STREQ(top_model_stream_sort(m), "current");
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 10");    /* big, mid, Small: case-insensitive */
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 2), "pid 30");
        top_model_sort_next(m, -1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "pid");
        top_model_sort_next(m, -1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "cold");
        top_model_sort_next(m, -1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "state");

        ASSERT_OK(top_model_set_filter(m, "SMA"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 1);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 30");
        ASSERT_OK(top_model_set_filter(m, "ext"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 0);
        /* Each view has its own filter. */
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_MODULES), 2);
        top_model_set_view(m, TOP_VIEW_MODULES);
        ASSERT_OK(top_model_set_filter(m, "ext"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_MODULES), 1);
        ASSERT_OK(top_model_set_filter(m, NULL));
        top_model_set_view(m, TOP_VIEW_TASKS);
        ASSERT_OK(top_model_set_filter(m, ""));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 3);

        /* Modules: by current, then by peak. */
        top_model_set_view(m, TOP_VIEW_MODULES);
        ASSERT_STREQ(row_key(m, TOP_VIEW_MODULES, 0), "vmlinux");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_MODULES), "peak");
        ASSERT_STREQ(row_key(m, TOP_VIEW_MODULES, 0), "ext4");

        /* The Top call's order follows the tasks' sort alone; --sort names one the daemon has. */
        ASSERT_STREQ(top_model_stream_sort(m), "current");
        ASSERT_EQ(top_model_set_stream_sort(m, "pid"), -EINVAL);
        ASSERT_EQ(top_model_set_stream_sort(m, "sideways"), -EINVAL);
        ASSERT_OK(top_model_set_stream_sort(m, "allocs"));
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "allocs");
        ASSERT_STREQ(top_model_stream_sort(m), "allocs");
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_MODULES), "peak");
        top_model_free(m);
}

static json_t *node(const char *frame, int current, json_t *children) {
        return json_pack("{s:s, s:n, s:n, s:i, s:i, s:o, s:i}", "frame", frame, "module", "address",
                         "currentPages", current, "peakPages", current, "children", children ?: json_array(),
                         "truncatedChildren", 0);
}

static void test_stacks(void) {
        TopModel *m;
        json_t *r;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);

        /* Enter on a task scopes the stacks to it. */
        ASSERT_EQ(top_model_open_stacks(m), 1);
        ASSERT_EQ(m->view, TOP_VIEW_STACKS);
        json_t *p = top_model_fetch_parameters(m, TOP_VIEW_STACKS);
        ASSERT_EQ(json_integer_value(json_object_get(p, "pid")), 10);
        json_decref(p);

        r = json_pack("{s:o, s:i}", "root",
                      node("[pid 10 big]", 500, json_pack("[o, o]",
                           node("a", 100, json_pack("[o]", node("a1", 100, json_pack("[o]", node("a2", 100, NULL))))),
                           node("b", 400, json_pack("[o, o]", node("b1", 300, NULL), node("b2", 100, NULL))))),
                      "totalPages", 500);
        ASSERT_OK(top_model_update_fetched(m, TOP_VIEW_STACKS, r));
        /* A memstrackd from before sampling says nothing: not sampled. */
        char *header = top_view_header(m, TOP_VIEW_STACKS);
        ASSERT_NULL(strstr(header, "sampled"));
        free(header);
        /* Root open, children sorted biggest first. */
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 3);
        ASSERT_STREQ(stack_label(m, 1), "b");

        /* Expanding "a" opens its whole single-child chain. */
        top_model_move(m, 2);
        ASSERT_STREQ(stack_label(m, 2), "a");
        ASSERT_OK(top_model_expand(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 5);
        ASSERT_STREQ(stack_label(m, 4), "a2");

        /* The next refresh keeps what is open and what is selected, and takes the sampling interval. */
        ASSERT_EQ(json_object_set_new(r, "stackSampleInterval", json_integer(64)), 0);
        ASSERT_OK(top_model_update_fetched(m, TOP_VIEW_STACKS, r));
        header = top_view_header(m, TOP_VIEW_STACKS);
        ASSERT_NOT_NULL(strstr(header, "sampled 1 in 64 pages"));
        free(header);
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 5);
        ASSERT_STREQ(stack_label(m, top_model_selected(m, TOP_VIEW_STACKS)), "a");

        /* Left on an open node closes it; Left again goes to the parent. */
        ASSERT_OK(top_model_collapse(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 3);
        ASSERT_OK(top_model_collapse(m));
        ASSERT_EQ(top_model_selected(m, TOP_VIEW_STACKS), 0);

        /* A filter shows the way down to a match. */
        ASSERT_OK(top_model_set_filter(m, "b2"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 3);
        ASSERT_STREQ(stack_label(m, 2), "b2");
        ASSERT_OK(top_model_set_filter(m, NULL));
        json_decref(r);

        /* Back to all stacks: the old tree is dropped until the new one comes. */
        ASSERT_EQ(top_model_scope_all(m), 1);
        ASSERT_STREQ(top_view_class(TOP_VIEW_STACKS)->empty_note(m), "loading the stack tree...");
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 0);
        top_model_free(m);
}

static json_t *heap_node(const char *frame, int bytes, int peak, json_t *children) {
        return json_pack("{s:s, s:i, s:i, s:o, s:i}", "frame", frame, "currentBytes", bytes, "peakBytes", peak,
                         "children", children ?: json_array(), "truncatedChildren", 0);
}

/* A task that records its heap into the daemon: its user-space heap is the last child of its stacks, in
 * bytes, with its own peak, and can be opened like any node. */
static void test_stacks_heap(void) {
        TopModel *m;

        ASSERT_OK(top_model_new(4096, &m));
        json_t *r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_open_stacks(m), 1);

        r = json_pack("{s:o, s:o, s:i}", "root", node("[pid 10 big]", 500, json_pack("[o]", node("a", 500, NULL))),
                      "heap", heap_node("[heap pid 10 big]", 3000, 8000,
                                        json_pack("[o]", heap_node("leak_site", 3000, 8000, NULL))),
                      "totalPages", 500);
        ASSERT_OK(top_model_update_fetched(m, TOP_VIEW_STACKS, r));
        json_decref(r);

        /* The tree as the class hangs it: the root (node 0) has two children, the heap last, and the heap
         * one. */
        const TopViewClass *c = top_view_class(TOP_VIEW_STACKS);
        size_t n = c->n_items(m), nodes[8], heap = SIZE_MAX, leak = SIZE_MAX, below_root = 0, below_heap = 0;
        TopForest forest;
        ASSERT_LE(n, ELEMENTSOF(nodes));
        for (size_t i = 0; i < n; i++)
                nodes[i] = i;
        ASSERT_OK(c->forest(m, nodes, n, &forest));
        for (size_t i = 0; i < n; i++)
                if (forest.parent[i] == 0) {
                        below_root++;
                        heap = forest.values[i];
                }
        for (size_t i = 0; i < n; i++)
                if (heap != SIZE_MAX && forest.parent[i] == heap) {
                        below_heap++;
                        leak = forest.values[i];
                }
        free(forest.values);
        free(forest.parent);
        ASSERT_EQ(below_root, 2u);
        ASSERT_STREQ(value_key(m, TOP_VIEW_STACKS, heap), "[pid 10 big]\x1f[heap] (user space)");
        /* Bytes, not pages: its current and its own peak, and its child's. */
        ASSERT_STREQ(column(m, TOP_VIEW_STACKS, heap, "CURRENT"), as_bytes(3000));
        ASSERT_STREQ(column(m, TOP_VIEW_STACKS, heap, "PEAK"), as_bytes(8000));
        ASSERT_EQ(below_heap, 1u);
        ASSERT_STREQ(value_key(m, TOP_VIEW_STACKS, leak), "[pid 10 big]\x1f[heap] (user space)\x1fleak_site");
        ASSERT_STREQ(column(m, TOP_VIEW_STACKS, leak, "CURRENT"), as_bytes(3000));
        top_model_free(m);
}

static json_t *unit(const char *name, int current, int peak, int tasks) {
        return json_pack("{s:s, s:s, s:i, s:i, s:i, s:b}", "name", name, "cgroup", name,
                         "currentPages", current, "peakPages", peak, "tasks", tasks, "live", true);
}

static void test_units(void) {
        TopModel *m;
        json_t *r, *p;

        ASSERT_OK(top_model_new(4096, &m));
        /* A memstrackd without units: the reply is still good, the units view is empty and says why. */
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_NOT_NULL(top_view_class(TOP_VIEW_UNITS)->empty_note(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_UNITS), 0);

        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(json_object_set_new(r, "units", json_pack("[o, o, o]", unit("sshd.service", 100, 900, 1),
                                      unit("db.service", 500, 500, 2),
                                      unit("session-2.scope", 300, 300, 7))));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_NULL(top_view_class(TOP_VIEW_UNITS)->empty_note(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_UNITS), 3);
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 0), "unit db.service");
        ASSERT_STREQ(row_column(m, TOP_VIEW_UNITS, 0, "TASKS"), "2");
        ASSERT_STREQ(row_column(m, TOP_VIEW_UNITS, 0, "PEAK"), as_pages(500));

        /* The key 4 (view number 3) shows the units; its sort columns are its own. */
        top_model_set_view(m, TOP_VIEW_UNITS);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_UNITS), "current");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_UNITS), "peak");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 0), "unit sshd.service");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_UNITS), "tasks");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 0), "unit session-2.scope");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_UNITS), "name");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 0), "unit db.service");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_UNITS), "current");
        /* The tasks view kept its own sort. */
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "current");

        /* The selection follows the unit when it moves in the list. */
        top_model_move(m, 1);
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, top_model_selected(m, TOP_VIEW_UNITS)), "unit session-2.scope");
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(json_object_set_new(r, "units", json_pack("[o, o, o]", unit("session-2.scope", 800, 800, 7),
                                      unit("db.service", 500, 500, 2), unit("sshd.service", 100, 900, 1))));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_selected(m, TOP_VIEW_UNITS), 0);
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 0), "unit session-2.scope");

        /* The filter of the units view matches unit names, and only there. */
        ASSERT_OK(top_model_set_filter(m, "SSHD"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_UNITS), 1);
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 1);
        ASSERT_OK(top_model_set_filter(m, NULL));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_UNITS), 3);
        /* The unit the filter left selected stays selected without it. */
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, top_model_selected(m, TOP_VIEW_UNITS)), "unit sshd.service");

        /* Enter on a unit: its stacks, asked for with StackTree(unit: NAME) and nothing else. */
        top_model_move(m, -1);
        ASSERT_EQ(top_model_open_stacks(m), 1);
        ASSERT_EQ(m->view, TOP_VIEW_STACKS);
        p = top_model_fetch_parameters(m, TOP_VIEW_STACKS);
        ASSERT_STREQ(json_string_value(json_object_get(p, "unit")), "db.service");
        ASSERT_NULL(json_object_get(p, "pid"));
        ASSERT_NULL(json_object_get(p, "module"));
        json_decref(p);
        ASSERT_STREQ(caption(m, TOP_VIEW_STACKS), "[unit db.service]");

        /* A task's stacks after a unit's: the unit is dropped from the call. */
        top_model_set_view(m, TOP_VIEW_TASKS);
        ASSERT_EQ(top_model_open_stacks(m), 1);
        p = top_model_fetch_parameters(m, TOP_VIEW_STACKS);
        ASSERT_NULL(json_object_get(p, "unit"));
        ASSERT_EQ(json_integer_value(json_object_get(p, "pid")), 10);
        json_decref(p);

        /* The same unit again from the units view is a new scope once more. */
        top_model_set_view(m, TOP_VIEW_UNITS);
        ASSERT_EQ(top_model_open_stacks(m), 1);
        ASSERT_EQ(top_model_open_stacks(m), 0);
        ASSERT_EQ(top_model_scope_all(m), 1);
        ASSERT_STREQ(caption(m, TOP_VIEW_STACKS), "[all]");
        /* 'a' from another view: the stacks of everything, which they show already. */
        top_model_set_view(m, TOP_VIEW_UNITS);
        ASSERT_EQ(top_model_scope_all(m), 0);
        ASSERT_EQ(m->view, TOP_VIEW_STACKS);
        top_model_free(m);
}

static json_t *slab_site(const char *name, int objects, int bytes, int requested, int peak, int allocs) {
        double waste = 100.0 * (bytes - requested) / bytes;
        return json_pack("{s:s, s:n, s:n, s:i, s:i, s:i, s:f, s:i, s:i, s:i, s:i}", "name", name, "address", "pid",
                         "liveObjects", objects, "liveBytesRequested", requested, "liveBytesAllocated", bytes,
                         "wastePercent", waste, "peakLiveBytes", peak, "allocs", allocs, "frees", allocs - objects,
                         "remoteFrees", 0);
}

/* Top replies with and without slab objects: the slab view's rows, sorts, filter, selection, and its
 * state when memstrackd does not trace them. */
static void test_slab(void) {
        TopSlabTotals totals;
        TopModel *m;
        json_t *r;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_TRUE(!top_slab_totals(m, &totals));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_SLAB), 0);

        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(json_object_set_new(r, "slab", json_pack(
                "{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:[o, o, o]}", "liveObjects", 1300,
                "liveBytesRequested", 90000, "liveBytesAllocated", 100000, "peakLiveBytes", 150000, "allocs", 5000,
                "frees", 3700, "unknownFrees", 1, "lostFrees", 0, "droppedObjects", 0, "wastePercent", 10.0,
                "rows", slab_site("do_eventfd+0x34", 200, 12800, 9600, 12800, 200),
                slab_site("ext4_alloc_inode+0x1a", 100, 80000, 79000, 90000, 900),
                slab_site("alloc_pipe_info+0x5c", 1000, 7200, 7200, 9000, 3900))));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_TRUE(top_slab_totals(m, &totals));
        ASSERT_EQ(totals.bytes, 100000);
        ASSERT_EQ(totals.peak_bytes, 150000);
        /* The tab line says them: the totals of every call site, listed or not. */
        ASSERT_STREQ(caption(m, TOP_VIEW_SLAB), "[all: 97.7 KiB in 1300 objects, peak 146.5 KiB, waste 10.0 %]");
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_SLAB), 3);
        /* Most live bytes first, then each column in turn. */
        top_model_set_view(m, TOP_VIEW_SLAB);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "bytes");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 0), "ext4_alloc_inode+0x1a");
        ASSERT_STREQ(row_column(m, TOP_VIEW_SLAB, 0, "REQUESTED"), as_bytes(79000));
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "objects");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 0), "alloc_pipe_info+0x5c");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "waste");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 0), "do_eventfd+0x34");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "peak");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 0), "ext4_alloc_inode+0x1a");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "allocs");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 0), "alloc_pipe_info+0x5c");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "site");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 0), "alloc_pipe_info+0x5c");
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, 2), "ext4_alloc_inode+0x1a");
        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "bytes");

        /* The selection stays on its call site across a refresh that reorders them; the filter matches
         * call-site names. Enter does nothing: call sites have no page stacks. */
        top_model_move(m, 1);
        ASSERT_STREQ(row_key(m, TOP_VIEW_SLAB, top_model_selected(m, TOP_VIEW_SLAB)), "do_eventfd+0x34");
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(json_object_set_new(r, "slab", json_pack("{s:i, s:i, s:i, s:[o, o]}", "liveObjects", 400,
                "liveBytesAllocated", 25600, "peakLiveBytes", 150000,
                "rows", slab_site("do_eventfd+0x34", 400, 25600, 19200, 25600, 400),
                slab_site("ext4_alloc_inode+0x1a", 10, 8000, 7900, 90000, 900))));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_selected(m, TOP_VIEW_SLAB), 0);
        ASSERT_OK(top_model_set_filter(m, "EXT4"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_SLAB), 1);
        ASSERT_EQ(top_model_open_stacks(m), 0);
        ASSERT_EQ(m->view, TOP_VIEW_SLAB);

        /* memstrackd stops tracing them (a restart without --slab): the view empties and says so. */
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(json_object_set_new(r, "slab", json_null()));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_TRUE(!top_slab_totals(m, &totals));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_SLAB), 0);
        ASSERT_TRUE(!top_view_class(TOP_VIEW_SLAB)->caption(m));
        top_model_free(m);
}

/* The graph of the selected row: what it asks for, and the sparkline with the peak marked. */
static void test_graph(void) {
        TopGraph g = {};
        TopModel *m;
        json_t *r, *p;
        char *key = NULL, *line = NULL;
        int col;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o, o]", task(10, "big", 500, 500, 600), task(20, "mid", 300, 900, 400)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        top_model_move(m, 1);
        p = top_graph_parameters(m, &key);
        ASSERT_NOT_NULL(p);
        ASSERT_STREQ(key, "pid 20");
        ASSERT_EQ(json_integer_value(json_object_get(p, "pid")), 20);
        ASSERT_EQ(json_integer_value(json_object_get(p, "seconds")), TOP_GRAPH_SECONDS);
        json_decref(p);

        /* Nothing yet: no line. */
        ASSERT_OK(top_graph_line(&g, 4096, 80, true, &line, &col));
        ASSERT_NULL(line);

        /* 0, 4, 8 pages with a peak of 16 in the middle bucket: scaled to 16, the peak column marked. */
        r = json_pack("{s:s, s:s, s:i, s:[i, i], s:[{s:i, s:i, s:i}, {s:i, s:i, s:i}, {s:i, s:i, s:i}]}",
                      "what", "task", "name", "mid", "resolution", 1, "resolutions", 1, 60, "points",
                      "timestampUsec", 1, "current", 0, "peak", 0,
                      "timestampUsec", 2, "current", 4, "peak", 16,
                      "timestampUsec", 3, "current", 8, "peak", 8);
        ASSERT_OK(top_graph_update(&g, key, r));
        json_decref(r);
        ASSERT_TRUE(top_graph_is_for(&g, "pid 20"));
        ASSERT_TRUE(!top_graph_is_for(&g, "pid 10"));
        ASSERT_OK(top_graph_line(&g, 4096, 80, true, &line, &col));
        ASSERT_NOT_NULL(line);
        /* "pid 20 " is 7 columns; the peak is the second bucket. */
        ASSERT_STREQ(line, "pid 20 \u2581\u2583\u2585 peak 64.0 KiB now 32.0 KiB");
        ASSERT_EQ(col, 8);
        free(line);
        /* A terminal without UTF-8: ASCII levels, the same columns. */
        ASSERT_OK(top_graph_line(&g, 4096, 80, false, &line, &col));
        ASSERT_STREQ(line, "pid 20 _:= peak 64.0 KiB now 32.0 KiB");
        ASSERT_EQ(col, 8);
        free(line);

        /* Narrow screens show the newest buckets only, at most half the width. */
        ASSERT_OK(top_graph_line(&g, 4096, 20, true, &line, &col));
        ASSERT_NOT_NULL(line);
        free(line);
        ASSERT_OK(top_graph_line(&g, 4096, 19, true, &line, &col));
        ASSERT_NULL(line);

        /* Modules, units and, in the stacks view, the scope (all: the total). */
        top_model_set_view(m, TOP_VIEW_MODULES);
        free(key);
        p = top_graph_parameters(m, &key);
        ASSERT_STREQ(key, "module vmlinux");
        ASSERT_STREQ(json_string_value(json_object_get(p, "module")), "vmlinux");
        json_decref(p);
        top_model_set_view(m, TOP_VIEW_STACKS);
        free(key);
        p = top_graph_parameters(m, &key);
        ASSERT_STREQ(key, "total");
        ASSERT_NULL(json_object_get(p, "pid"));
        json_decref(p);
        free(key);

        top_graph_clear(&g);
        ASSERT_OK(top_graph_line(&g, 4096, 80, true, &line, &col));
        ASSERT_NULL(line);
        top_graph_done(&g);
        top_model_free(m);
}

static json_t *child(int pid, int parent, int current) {
        json_t *t = task(pid, "t", current, current, current);
        ASSERT_OK(json_object_set_new(t, "parentPid", json_integer(parent)));
        return t;
}

/* The tasks tree: 1 > {2 > 4, 3}, 5 whose parent is not shown is a root, 6 and 7 each other's parent
 * (pid reuse) still show, from the bigger. Siblings (roots too) sorted by current pages. */
static void test_task_tree(void) {
        TopModel *m;
        json_t *r;
        const char *want[] = { "pid 5", "pid 1", "pid 3", "pid 2", "pid 4", "pid 6", "pid 7" };
        const char *guides[] = { "", "", "t", "l", " l", "", "l" };

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o, o, o, o, o, o, o]", child(2, 1, 10), child(1, 0, 5), child(3, 1, 20), child(4, 2, 1),
                                child(5, 99, 30), child(6, 7, 2), child(7, 6, 1)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_NULL(top_model_tree_line(m, TOP_VIEW_TASKS, 0));
        ASSERT_OK(top_model_toggle_tree(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 7);
        for (size_t i = 0; i < 7; i++) {
                ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, i), want[i]);
                ASSERT_STREQ(top_model_tree_line(m, TOP_VIEW_TASKS, i)->guides, guides[i]);
        }
        ASSERT_TRUE(!top_model_tree_line(m, TOP_VIEW_TASKS, 0)->has_children);
        ASSERT_TRUE(top_model_tree_line(m, TOP_VIEW_TASKS, 1)->has_children);

        /* Close 1: its children go, and it stays closed across an update. Right opens it. */
        top_model_select(m, 1);
        ASSERT_OK(top_model_collapse(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 4);
        ASSERT_TRUE(top_model_tree_line(m, TOP_VIEW_TASKS, 1)->collapsed);
        ASSERT_OK(top_model_rebuild(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 4);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, top_model_selected(m, TOP_VIEW_TASKS)), "pid 1");
        ASSERT_OK(top_model_expand(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_TASKS), 7);
        /* Left on 4 goes to its parent 2. */
        top_model_select(m, 4);
        ASSERT_OK(top_model_collapse(m));
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, top_model_selected(m, TOP_VIEW_TASKS)), "pid 2");
        top_model_free(m);
}

static json_t *sliced_unit(const char *name, const char *cgroup, int current) {
        return json_pack("{s:s, s:s, s:i, s:i, s:i, s:b}", "name", name, "cgroup", cgroup, "currentPages", current,
                         "peakPages", current, "tasks", 1, "live", true);
}

static void test_unit_tree(void) {
        TopModel *m;
        json_t *r = top_reply(json_array());

        ASSERT_OK(json_object_set_new(r, "units", json_pack("[o, o, o, o, o]",
                sliced_unit("a.service", "/system.slice/a.service", 10),
                sliced_unit("b.service", "/system.slice/b.service", 30),
                sliced_unit("session-1.scope", "/user.slice/user-1000.slice/session-1.scope", 5),
                sliced_unit("user-1000.slice", "/user.slice/user-1000.slice", 2),
                sliced_unit("init.scope", "/init.scope", 1))));
        ASSERT_OK(top_model_new(4096, &m));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        top_model_set_view(m, TOP_VIEW_UNITS);
        ASSERT_OK(top_model_toggle_tree(m));
        /* system.slice (40) > b, a; user.slice (7) > user-1000.slice (the unit's own row) > session-1.scope;
         * init.scope at the top. */
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_UNITS), 7);
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 0), "slice /system.slice");
        ASSERT_STREQ(row_column(m, TOP_VIEW_UNITS, 0, "PAGES"), "40");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 1), "unit b.service");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 2), "unit a.service");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 3), "slice /user.slice");
        ASSERT_STREQ(row_column(m, TOP_VIEW_UNITS, 3, "PAGES"), "7");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 4), "slice /user.slice/user-1000.slice");
        /* The unit user-1000.slice is that slice's row, not a row of its own. */
        for (size_t i = 0; i < 7; i++)
                ASSERT_TRUE(!streq(row_key(m, TOP_VIEW_UNITS, i), "unit user-1000.slice"));
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 5), "unit session-1.scope");
        ASSERT_STREQ(top_model_tree_line(m, TOP_VIEW_UNITS, 5)->guides, " l");
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, 6), "unit init.scope");
        /* A slice row stays selected by its path across an update. */
        top_model_select(m, 3);
        ASSERT_OK(top_model_rebuild(m));
        ASSERT_STREQ(row_key(m, TOP_VIEW_UNITS, top_model_selected(m, TOP_VIEW_UNITS)), "slice /user.slice");
        top_model_free(m);
}

/* How an item (a row read, in the daemon's order) moved since the previous update, as its row shows it. */
static TopTrend trend(const TopModel *m, TopView v, size_t item) {
        return top_view_class(v)->look(m, item).trend;
}

static void test_trends(void) {
        TopModel *m;
        json_t *r;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o, o, o]", task(1, "a", 10, 10, 10), task(2, "b", 10, 10, 10), task(3, "c", 5, 5, 5)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(trend(m, TOP_VIEW_TASKS, 0), TOP_TREND_SAME);         /* nothing to compare with yet */
        r = top_reply(json_pack("[o, o, o]", task(1, "a", 11, 11, 11), task(2, "b", 9, 10, 10), task(4, "d", 1, 1, 1)));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(trend(m, TOP_VIEW_TASKS, 0), TOP_TREND_UP);
        ASSERT_EQ(trend(m, TOP_VIEW_TASKS, 1), TOP_TREND_DOWN);
        ASSERT_EQ(trend(m, TOP_VIEW_TASKS, 2), TOP_TREND_NEW);
        ASSERT_EQ(trend(m, TOP_VIEW_MODULES, 0), TOP_TREND_SAME);
        /* The high share: 10 % of 1 GiB is 26215 pages. */
        m->meminfo.total = 1ULL << 30;
        ASSERT_TRUE(top_model_is_high(m, 26215));
        ASSERT_TRUE(!top_model_is_high(m, 26213));
        top_model_free(m);
}

static void test_meminfo(void) {
        TopMemInfo mi;

        ASSERT_OK(top_meminfo_parse("MemTotal:       16303856 kB\nMemFree:          512 kB\nMemAvailable: 8000 kB\n"
                                    "Buffers:  100 kB\nCached:  2000 kB\nSwapCached: 7 kB\nSlab: 300 kB\n", &mi));
        ASSERT_EQ(mi.total, 16303856ULL * 1024);
        ASSERT_EQ(mi.free, 512 * 1024);
        ASSERT_EQ(mi.available, 8000 * 1024);
        ASSERT_EQ(mi.cached, 2000 * 1024);      /* not SwapCached */
        ASSERT_EQ(mi.buffers, 100 * 1024);
        ASSERT_EQ(mi.slab, 300 * 1024);
        ASSERT_EQ(top_meminfo_parse("MemFree: 1 kB\n", &mi), -EBADMSG);
        ASSERT_EQ(top_meminfo_parse("", &mi), -EBADMSG);
        /* The machine's own. */
        ASSERT_OK(top_meminfo_read(NULL, &mi));
        ASSERT_GT(mi.total, 0);
}

static void test_settings(void) {
        TopModel *m, *back;
        char *text;

        ASSERT_OK(top_model_new(4096, &m));
        ASSERT_EQ(top_settings_parse(m, "# comment\nview=units\nsort.tasks=peak\nsort.units=tasks\ntree.units=yes\n"
                                        "chart=24h\nhigh-percent=2.5\nview=nowhere\nsort.slab=sideways\n"
                                        "tree.modules=yes\nhigh-percent=101\nnonsense\n"), 6);
        ASSERT_EQ(m->view, TOP_VIEW_UNITS);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "peak");
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_UNITS), "tasks");
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_SLAB), "bytes");
        ASSERT_TRUE(m->tree[TOP_VIEW_UNITS] && !m->tree[TOP_VIEW_MODULES]);
        ASSERT_EQ(m->chart, TOP_CHART_24H);
        ASSERT_TRUE(m->high_percent == 2.5);
        /* What is written reads back the same. */
        text = top_settings_format(m);
        ASSERT_NOT_NULL(text);
        ASSERT_OK(top_model_new(4096, &back));
        ASSERT_EQ(top_settings_parse(back, text), 10);
        ASSERT_EQ(back->view, m->view);
        ASSERT_STREQ(top_model_sort_name(back, TOP_VIEW_UNITS), "tasks");
        ASSERT_TRUE(back->tree[TOP_VIEW_UNITS] && !back->tree[TOP_VIEW_TASKS]);
        ASSERT_EQ(back->chart, TOP_CHART_24H);
        free(text);
        top_model_free(back);
        top_model_free(m);
}

/* The chart bins 600 one-second buckets into the plot's columns: the newest current, the highest peak. */
static void test_chart(void) {
        TopGraph g = {};
        TopChart c = {};
        json_t *points = json_array(), *reply;

        for (int i = 0; i < 600; i++)
                ASSERT_OK(json_array_append_new(points, json_pack("{s:I, s:i, s:i}", "timestampUsec",
                                (json_int_t) (1000 + i) * 1000000, "current", i < 300 ? 0 : 256,
                                "peak", i == 450 ? 1000 : i < 300 ? 0 : 256)));
        reply = json_pack("{s:o, s:i}", "points", points, "resolution", 1);
        ASSERT_OK(top_graph_update(&g, "pid 1 (10 min)", reply));
        json_decref(reply);
        ASSERT_EQ(g.span_usec, 600 * 1000000ULL);
        ASSERT_OK(top_graph_chart(&g, 4096, 60, 4, &c));
        /* 1000 pages of 4 KiB is 3.9 MiB: the top is 5 MiB, 1280 pages. */
        ASSERT_EQ(c.top_pages, 1280);
        ASSERT_EQ(c.current[0], 0);
        /* 256 of 1280 pages over 4 rows of 8 eighths: 6.4, so 6. */
        ASSERT_EQ(c.current[59], 6);
        ASSERT_EQ(c.peak_column, 45);
        ASSERT_EQ(c.peak[45], 25);
        top_chart_done(&c);
        /* A wider plot than buckets: the columns between buckets stay empty. */
        ASSERT_OK(top_graph_chart(&g, 4096, 1200, 4, &c));
        ASSERT_EQ(c.current[1], TOP_CHART_EMPTY);
        ASSERT_EQ(c.current[1198], 6);
        ASSERT_EQ(c.current[1199], TOP_CHART_EMPTY);
        top_chart_done(&c);
        ASSERT_EQ(top_graph_chart(&g, 4096, 0, 4, &c), -EINVAL);
        top_graph_done(&g);
}

/* The Explain view: opened on a unit of the units view only, its reply as lines, scrolled within them. */
static void test_explain(void) {
        TopModel *m;
        json_t *r;

        ASSERT_OK(top_model_new(4096, &m));
        r = top_reply(json_pack("[o]", task(10, "big", 500, 500, 600)));
        ASSERT_OK(json_object_set_new(r, "units", json_pack("[o, o]", unit("db.service", 500, 500, 2),
                                                             unit("web.service", 100, 100, 1))));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        ASSERT_EQ(top_model_open_explain(m), -ENOENT);         /* the tasks view */
        top_model_set_view(m, TOP_VIEW_UNITS);
        top_model_move(m, 1);
        ASSERT_OK(top_model_open_explain(m));
        ASSERT_EQ(m->mode, TOP_MODE_EXPLAIN);
        json_t *params = top_model_explain_parameters(m);
        ASSERT_STREQ(json_string_value(json_object_get(params, "name")), "web.service");
        json_decref(params);

        r = json_pack("{s:s, s:s, s:b, s:i, s:i, s:n, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:{s:i, s:[]}, s:{s:i},"
                      " s:[], s:[{s:s, s:n, s:s}]}",
                      "name", "web.service", "cgroup", "/system.slice/web.service", "live", true, "tasks", 1,
                      "pageSize", 4096, "kernel", "kernelReason", "no memory controller", "currentPages", 100,
                      "peakPages", 100, "slabBytes", 0, "peakSlabBytes", 0, "descendantPages", 0,
                      "descendantSlabBytes", 0, "tracingSlab", false, "alive", "pages", 100, "tasks",
                      "orphaned", "pages", 0, "comparisons", "reasons", "reason", "before-tracing", "bytes",
                      "text", "memstrack counts what it traced.");
        ASSERT_NOT_NULL(r);
        ASSERT_OK(top_model_update_explain(m, r));
        json_decref(r);
        ASSERT_GT(m->n_explain_lines, 5);
        ASSERT_STREQ(m->explain_lines[0], "web.service (/system.slice/web.service): 1 live process");
        top_model_scroll_explain(m, 3, 2);
        ASSERT_EQ(m->explain_scroll, 3);
        top_model_scroll_explain(m, INT64_MAX, 2);
        ASSERT_EQ(m->explain_scroll, m->n_explain_lines - 2);
        top_model_scroll_explain(m, -100, 2);
        ASSERT_EQ(m->explain_scroll, 0);
        top_model_close_explain(m);
        ASSERT_EQ(m->mode, TOP_MODE_NORMAL);
        top_model_free(m);
}

/* Every registered class answers what the shared code asks of it, and its tables agree with themselves:
 * each sort key has a name and one column to click, only the last column is as wide as its text, a tree
 * has a forest, trends come in pairs. */
static void test_view_classes(void) {
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);

                fprintf(stderr, "   %s\n", c->name);
                ASSERT_NOT_NULL(c->name);
                ASSERT_NOT_NULL(c->title);
                ASSERT_GT(c->rows_size, 0);
                ASSERT_NOT_NULL(c->n_items);
                ASSERT_NOT_NULL(c->key);
                ASSERT_NOT_NULL(c->compare);
                ASSERT_NOT_NULL(c->matches);
                ASSERT_NOT_NULL(c->write);
                ASSERT_TRUE(!c->required || c->read);
                /* Rows from Top replies or from a call of their own, not both. */
                ASSERT_TRUE(!c->fetch || !c->read);
                ASSERT_TRUE(!c->fetch || (c->fetch->method && c->fetch->what && c->fetch->parameters &&
                                          c->fetch->read));
                ASSERT_TRUE(!c->current == !c->set_trend);
                ASSERT_TRUE((c->tree == TOP_TREE_NONE) == !c->forest);
                ASSERT_TRUE(!c->only_child || c->tree != TOP_TREE_NONE);
                for (size_t w = 0; w < v; w++) {
                        ASSERT_TRUE(strcmp(top_view_class((TopView) w)->name, c->name) != 0);
                        ASSERT_TRUE(strcmp(top_view_class((TopView) w)->title, c->title) != 0);
                        /* One view at most orders the Top call. */
                        ASSERT_TRUE(!c->stream_sort || !top_view_class((TopView) w)->stream_sort);
                }

                ASSERT_GT(c->n_sorts, 0);
                ASSERT_LT(c->default_sort, c->n_sorts);
                for (unsigned k = 0; k < c->n_sorts; k++) {
                        size_t columns = 0;
                        ASSERT_NOT_NULL(c->sort_names[k]);
                        for (unsigned j = 0; j < k; j++)
                                ASSERT_TRUE(strcmp(c->sort_names[j], c->sort_names[k]) != 0);
                        for (size_t i = 0; i < c->n_columns; i++)
                                columns += c->columns[i].sort == (int) k;
                        ASSERT_EQ(columns, 1);
                }
                ASSERT_GT(c->n_columns, 0);
                for (size_t i = 0; i < c->n_columns; i++) {
                        ASSERT_NOT_NULL(c->columns[i].title);
                        ASSERT_LT(c->columns[i].sort, (int) c->n_sorts);
                        /* Width 0 is the last column's alone: every other one has a place to click. */
                        ASSERT_TRUE((c->columns[i].width == 0) == (i + 1 == c->n_columns));
                        ASSERT_TRUE(!(c->columns[i].flags & TOP_COLUMN_TREE) || c->tree != TOP_TREE_NONE);
                }
        }
        /* The settings name each view by its class, both ways. */
        TopModel *m;
        ASSERT_OK(top_model_new(4096, &m));
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                char line[64];
                (void) snprintf(line, sizeof(line), "view=%s\n", top_view_class((TopView) v)->name);
                ASSERT_EQ(top_settings_parse(m, line), 1);
                ASSERT_EQ(m->view, (TopView) v);
        }
        top_model_free(m);
}

static json_t *parented(int pid, int parent, const char *comm, int current, int peak, int allocs) {
        json_t *t = task(pid, comm, current, peak, allocs);
        ASSERT_OK(json_object_set_new(t, "parentPid", json_integer(parent)));
        return t;
}

/* Stacks of two siblings and two cousins of equal counts, and one label twice under different parents;
 * sampled 1 in interval pages when not 0. */
static json_t *tied_stacks(int interval) {
        json_t *r = json_pack("{s:o}", "root", node("[all]", 40, json_pack("[o, o]",
                              node("a", 20, json_pack("[o, o]", node("dup", 10, NULL), node("c", 10, NULL))),
                              node("b", 20, json_pack("[o]", node("dup", 20, NULL))))));

        ASSERT_NOT_NULL(r);
        if (interval > 0)
                ASSERT_OK(json_object_set_new(r, "stackSampleInterval", json_integer(interval)));
        return r;
}

/* Rows that tie on every figure a sort key looks at, so each compare has to settle ties itself. */
static TopModel *tied_model(void) {
        TopModel *m;
        json_t *r = top_reply(json_pack("[o, o, o, o, o]", parented(1, 0, "init", 5, 5, 5),
                                        parented(10, 1, "same", 100, 200, 300), parented(11, 1, "same", 100, 200, 300),
                                        parented(12, 10, "Same", 100, 200, 300), parented(13, 12, "other", 7, 200, 1)));

        ASSERT_OK(json_object_set_new(r, "modules", json_pack("[{s:s, s:i, s:i}, {s:s, s:i, s:i}, {s:s, s:i, s:i}]",
                                      "name", "b", "currentPages", 10, "peakPages", 10,
                                      "name", "a", "currentPages", 10, "peakPages", 10,
                                      "name", "c", "currentPages", 10, "peakPages", 20)));
        ASSERT_OK(json_object_set_new(r, "units", json_pack("[o, o, o, o, o]",
                                      sliced_unit("a.service", "/system.slice/a.service", 10),
                                      sliced_unit("b.service", "/system.slice/b.service", 10),
                                      sliced_unit("system.slice", "/system.slice", 20),
                                      sliced_unit("c.scope", "/user.slice/c.scope", 40),
                                      sliced_unit("d.scope", "/d.scope", 40))));
        ASSERT_OK(json_object_set_new(r, "slab", json_pack("{s:i, s:[o, o, o]}", "liveObjects", 3, "rows",
                                      slab_site("x+0x1", 10, 1000, 500, 1000, 10),
                                      slab_site("y+0x2", 10, 1000, 500, 1000, 10),
                                      slab_site("z+0x3", 20, 1000, 500, 2000, 10))));
        ASSERT_OK(top_model_new(4096, &m));
        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
        r = tied_stacks(0);
        ASSERT_OK(top_model_update_fetched(m, TOP_VIEW_STACKS, r));
        json_decref(r);
        return m;
}

static int sign(int x) {
        return x < 0 ? -1 : x > 0;
}

/* compare is a strict total order on the values for every sort key: antisymmetric, never equal for two
 * values, transitive. */
static void assert_total_order(const TopModel *m, TopView v, const size_t *values, size_t n) {
        const TopViewClass *c = top_view_class(v);

        ASSERT_GT(n, 2);
        for (unsigned k = 0; k < c->n_sorts; k++)
                for (size_t a = 0; a < n; a++)
                        for (size_t b = 0; b < n; b++) {
                                int ab = sign(c->compare(m, k, values[a], values[b]));
                                ASSERT_EQ(ab, a == b ? 0 : -sign(c->compare(m, k, values[b], values[a])));
                                ASSERT_TRUE(a == b || ab != 0);
                                for (size_t z = 0; z < n && ab < 0; z++)
                                        if (sign(c->compare(m, k, values[b], values[z])) < 0)
                                                ASSERT_LT(c->compare(m, k, values[a], values[z]), 0);
                        }
}

static void test_compare_total(void) {
        TopModel *m = tied_model();
        size_t values[16];

        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                size_t n = top_view_class((TopView) v)->n_items(m);
                ASSERT_LE(n, ELEMENTSOF(values));
                for (size_t i = 0; i < n; i++)
                        values[i] = i;
                fprintf(stderr, "   %s\n", top_view_class((TopView) v)->name);
                assert_total_order(m, (TopView) v, values, n);
        }
        /* The units tree's slices take part in its order too. */
        top_model_set_view(m, TOP_VIEW_UNITS);
        ASSERT_OK(top_model_toggle_tree(m));
        size_t n = top_model_rows(m, TOP_VIEW_UNITS);
        ASSERT_LE(n, ELEMENTSOF(values));
        for (size_t i = 0; i < n; i++)
                values[i] = top_model_row_value(m, TOP_VIEW_UNITS, i);
        ASSERT_TRUE(strncmp(row_key(m, TOP_VIEW_UNITS, 0), "slice ", 6) == 0);
        assert_total_order(m, TOP_VIEW_UNITS, values, n);
        top_model_free(m);
}

/* The text of headers and rows comes from the columns' widths as the printf formats of the rows had it,
 * and a click lands on the column whose title the header shows there. */
static void test_row_text(void) {
        TopModel *m = tied_model();
        char want[256], a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX], c[FORMAT_BUFFER_MAX];
        char *text;

        text = top_view_header(m, TOP_VIEW_TASKS);
        (void) snprintf(want, sizeof(want), "%7s %-15s %10s %10s %10s %9s %9s %-7s %s", "PID", "COMM", "[CURRENT]",
                        "PEAK", "COLD", "ALLOCS", "FREES", "STATE", "COMMAND");
        ASSERT_STREQ(text, want);
        free(text);
        ASSERT_STREQ(row_key(m, TOP_VIEW_TASKS, 0), "pid 10");
        text = top_view_row_text(m, TOP_VIEW_TASKS, 0, true);
        (void) snprintf(want, sizeof(want), "%7d %-15s %10s %10s %10s %9d %9d %-7s %s", 10, "same", "400.0 KiB",
                        "800.0 KiB", "-", 300, 200, "running", "same");
        ASSERT_STREQ(text, want);
        free(text);
        ASSERT_NULL(top_view_row_text(m, TOP_VIEW_TASKS, 5, true));

        /* The units tree: a slice's row sums its units, lines before the names below it. */
        top_model_set_view(m, TOP_VIEW_UNITS);
        ASSERT_OK(top_model_toggle_tree(m));
        text = top_view_row_text(m, TOP_VIEW_UNITS, 0, false);
        (void) snprintf(want, sizeof(want), "%-28s %10s %10d %10s %7d %s", "system.slice", "160.0 KiB", 40, "-", 3, "slice");
        ASSERT_STREQ(text, want);
        free(text);
        text = top_view_row_text(m, TOP_VIEW_UNITS, 1, false);
        (void) snprintf(want, sizeof(want), "%-28s %10s %10d %10s %7d %s", "|- a.service", "40.0 KiB", 10, "40.0 KiB", 1,
                        "live");
        ASSERT_STREQ(text, want);
        free(text);

        text = top_view_row_text(m, TOP_VIEW_SLAB, 0, true);
        (void) snprintf(want, sizeof(want), "%-28s %8d %9s %9s %5.1f%% %9s %9d %9d %8d %s", "x+0x1", 10,
                        format_bytes(a, sizeof(a), 1000), format_bytes(b, sizeof(b), 500), 50.0,
                        format_bytes(c, sizeof(c), 1000), 10, 0, 0, "");
        ASSERT_STREQ(text, want);
        free(text);

        /* The stacks: sampling said after STACK, each level two columns in. */
        json_t *sampled = tied_stacks(64);
        ASSERT_OK(top_model_update_fetched(m, TOP_VIEW_STACKS, sampled));
        json_decref(sampled);
        text = top_view_header(m, TOP_VIEW_STACKS);
        ASSERT_STREQ(text, " [CURRENT]       PEAK STACK sampled 1 in 64 pages, scaled to exact counts; callers first; "
                           "Enter/Right open, Left close");
        free(text);
        text = top_view_row_text(m, TOP_VIEW_STACKS, 1, true);
        ASSERT_STREQ(text, "  80.0 KiB   80.0 KiB   [+] a");
        free(text);

        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *k = top_view_class((TopView) v);
                for (unsigned sort = 0; sort < k->n_sorts; sort++) {
                        m->sort[v] = sort;
                        text = top_view_header(m, (TopView) v);
                        ASSERT_NOT_NULL(text);
                        for (size_t i = 0; i < k->n_columns; i++) {
                                if (k->columns[i].sort < 0)
                                        continue;
                                char *at = strstr(text, k->columns[i].title);
                                int x = top_view_column_x(k, i);
                                ASSERT_NOT_NULL(at);
                                ASSERT_GE(at - text, x);
                                ASSERT_LT(at - text, x + k->columns[i].width);
                                /* The sorted column in brackets, the others not. */
                                ASSERT_EQ(at > text && at[-1] == '[', (unsigned) k->columns[i].sort == sort);
                        }
                        free(text);
                }
        }
        top_model_free(m);
}

/* The / filter of each view matches its own names, case-insensitively, and leaves the other views alone;
 * the stacks' shows a match with the way down to it, open, and all below it, closed. */
static void test_filter_per_view(void) {
        static const struct {
                TopView view;
                const char *filter;
                size_t rows;
                const char *first_key;
        } cases[] = {
                { TOP_VIEW_TASKS, "OTHER", 1, "pid 13" },
                { TOP_VIEW_MODULES, "C", 1, "c" },
                { TOP_VIEW_UNITS, "SCOPE", 2, "unit c.scope" },
                { TOP_VIEW_SLAB, "Z+", 1, "z+0x3" },
                { TOP_VIEW_STACKS, "DUP", 5, "[all]" },
        };
        TopModel *m = tied_model();
        size_t all[_TOP_VIEW_MAX];

        ASSERT_EQ(ELEMENTSOF(cases), _TOP_VIEW_MAX);
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                all[v] = top_model_rows(m, (TopView) v);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const TopViewClass *c = top_view_class(cases[i].view);
                top_model_set_view(m, cases[i].view);
                ASSERT_OK(top_model_set_filter(m, cases[i].filter));
                ASSERT_EQ(top_model_rows(m, cases[i].view), cases[i].rows);
                char *key = c->key(m, top_model_row_value(m, cases[i].view, 0));
                ASSERT_STREQ(key, cases[i].first_key);
                free(key);
                for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                        if (v != (size_t) cases[i].view)
                                ASSERT_EQ(top_model_rows(m, (TopView) v), all[v]);
                /* Nothing matches: no rows, and the selection stays in range. */
                ASSERT_OK(top_model_set_filter(m, "no such name"));
                ASSERT_EQ(top_model_rows(m, cases[i].view), 0);
                ASSERT_EQ(top_model_selected(m, cases[i].view), 0);
                ASSERT_OK(top_model_set_filter(m, NULL));
                ASSERT_EQ(top_model_rows(m, cases[i].view), all[cases[i].view]);
        }

        /* "dup" under a and under b: both, the way down to them open, "c" beside it not shown. */
        top_model_set_view(m, TOP_VIEW_STACKS);
        ASSERT_OK(top_model_set_filter(m, "dup"));
        const char *labels[] = { "[all]", "a", "dup", "b", "dup" };
        for (size_t i = 0; i < ELEMENTSOF(labels); i++) {
                ASSERT_STREQ(stack_label(m, i), labels[i]);
                ASSERT_TRUE(!top_model_tree_line(m, TOP_VIEW_STACKS, i)->collapsed);
        }
        /* A match itself stays closed until opened, and "a" beside it goes. */
        ASSERT_OK(top_model_set_filter(m, "b"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 2);
        ASSERT_STREQ(stack_label(m, 1), "b");
        ASSERT_TRUE(top_model_tree_line(m, TOP_VIEW_STACKS, 1)->collapsed);
        top_model_free(m);
}

/* Keys: the same row has the same key in every update, two rows never share one, so the selection and
 * what is open stay put; the stacks' key is the path, so one label under two parents is two rows. */
static void test_keys(void) {
        TopModel *m = tied_model();

        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);
                size_t n = c->n_items(m);
                for (size_t a = 0; a < n; a++) {
                        char *x = c->key(m, a);
                        ASSERT_NOT_NULL(x);
                        for (size_t b = a + 1; b < n; b++) {
                                char *y = c->key(m, b);
                                ASSERT_TRUE(strcmp(x, y) != 0);
                                free(y);
                        }
                        free(x);
                }
        }
        /* Open both "a" and "b": four rows below the root; the second "dup" (under b) selected stays
         * selected when the tree comes again with the nodes in another order. */
        top_model_set_view(m, TOP_VIEW_STACKS);
        top_model_select(m, 1);
        ASSERT_OK(top_model_expand(m));
        ASSERT_STREQ(stack_label(m, 4), "b");
        top_model_select(m, 4);
        ASSERT_OK(top_model_expand(m));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 6);
        top_model_select(m, 5);
        ASSERT_STREQ(stack_label(m, 5), "dup");
        json_t *r = json_pack("{s:o}", "root", node("[all]", 40, json_pack("[o, o]",
                              node("b", 30, json_pack("[o]", node("dup", 30, NULL))),
                              node("a", 20, json_pack("[o, o]", node("dup", 10, NULL), node("c", 10, NULL))))));
        ASSERT_OK(top_model_update_fetched(m, TOP_VIEW_STACKS, r));
        json_decref(r);
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_STACKS), 6);
        size_t sel = top_model_selected(m, TOP_VIEW_STACKS);
        ASSERT_EQ(sel, 2);
        ASSERT_STREQ(stack_label(m, sel), "dup");
        ASSERT_STREQ(stack_label(m, 1), "b");
        top_model_free(m);
}

int main(void) {
        TEST(test_selection_survives_refresh);
        TEST(test_sort_and_filter);
        TEST(test_stacks);
        TEST(test_stacks_heap);
        TEST(test_units);
        TEST(test_slab);
        TEST(test_graph);
        TEST(test_task_tree);
        TEST(test_unit_tree);
        TEST(test_trends);
        TEST(test_meminfo);
        TEST(test_settings);
        TEST(test_chart);
        TEST(test_explain);
        TEST(test_view_classes);
        TEST(test_row_text);
        TEST(test_compare_total);
        TEST(test_filter_per_view);
        TEST(test_keys);
        return 0;
}
