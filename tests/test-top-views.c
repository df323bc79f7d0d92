/* SPDX-License-Identifier: MIT */

/*
 * A view is its class and one line in TOP_VIEWS. This test's build registers a sixth view, "probe",
 * through TOP_VIEWS_EXTRA (tests/meson.build) and defines its class below, as a file view-probe.c would:
 * its row type, its rows made, read and freed by its hooks, its sort keys, columns and texts. Nothing else
 * names it, and the shared code takes it: the Top reply's rows, sorting, filtering, trends, the selection
 * across updates, the header and rows' text, the settings file, the tab's number key and the help's line.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "actions.h"
#include "curses.h"
#include "graph.h"
#include "model.h"
#include "reply.h"
#include "settings.h"
#include "tests.h"
#include "view-class.h"

/* ---- The probe view: what its file would hold ------------------------------------------------------ */

typedef enum ProbeSort {
        PROBE_PAGES,
        PROBE_NAME,
        _PROBE_SORT_MAX,
} ProbeSort;

typedef struct Probe {
        char *name;             /* owned */
        uint64_t pages;
        TopTrend trend;
} Probe;

/* The view's rows (m->rows[TOP_VIEW_PROBE]): the Top reply's "probes"; an item is an index into them. */
typedef struct Probes {
        Probe *probes;          /* owned, n */
        size_t n;
} Probes;

/* Rows set up by rows_init and not yet emptied by rows_done, across every model of the test. */
static int probes_alive;

static const char *const probe_sort_names[_PROBE_SORT_MAX] = {
        [PROBE_PAGES] = "pages",
        [PROBE_NAME] = "name",
};

static const TopColumn probe_columns[] = {
        { "PAGES", 8, PROBE_PAGES, TOP_COLUMN_TREND },
        { "PROBE", 0, PROBE_NAME, TOP_COLUMN_LEFT },
};

static Probes *probes_of(const TopModel *m) {
        return m->rows[TOP_VIEW_PROBE];
}

static void probes_clear(Probes *probes) {
        for (size_t i = 0; i < probes->n; i++)
                free(probes->probes[i].name);
        probes->probes = mfree_ptr(probes->probes);
        probes->n = 0;
}

static void probes_init(void *rows) {
        probes_alive++;
}

static void probes_done(void *rows) {
        probes_clear(rows);
        probes_alive--;
}

static int probes_read(TopModel *m, json_t *reply) {
        json_t *array = reply_array(reply, "probes"), *e;
        Probes *probes = probes_of(m);
        size_t i;

        probes_clear(probes);
        probes->probes = calloc(json_array_size(array) + 1, sizeof(Probe));
        if (!probes->probes)
                return -ENOMEM;
        json_array_foreach(array, i, e) {
                Probe *p = &probes->probes[probes->n++];
                *p = (Probe) { .pages = reply_count(e, "pages") };
                int r = top_strdup_or_null(reply_string(e, "name") ?: "?", &p->name);
                if (r < 0)
                        return r;
        }
        return 0;
}

static size_t probes_n_items(const TopModel *m) {
        return probes_of(m)->n;
}

static char *probes_key(const TopModel *m, size_t value) {
        char *key;
        return asprintf(&key, "probe %s", probes_of(m)->probes[value].name) < 0 ? NULL : key;
}

static int probes_compare(const TopModel *m, unsigned sort, size_t a, size_t b) {
        const Probe *x = &probes_of(m)->probes[a], *y = &probes_of(m)->probes[b];
        int c = sort == PROBE_NAME ? 0 : top_compare_u64_desc(x->pages, y->pages);

        return c ?: strcmp(x->name, y->name);
}

static bool probes_matches(const TopModel *m, size_t item, const char *filter) {
        return top_text_matches(probes_of(m)->probes[item].name, filter);
}

static uint64_t probes_current(const TopModel *m, size_t item) {
        return probes_of(m)->probes[item].pages;
}

static void probes_set_trend(TopModel *m, size_t item, TopTrend trend) {
        probes_of(m)->probes[item].trend = trend;
}

static int probes_write(const TopModel *m, size_t value, const TopTreeLine *line, bool utf8, char **fields) {
        const Probe *p = &probes_of(m)->probes[value];
        int r = top_field(&fields[0], "%" PRIu64, p->pages);

        return r < 0 ? r : top_field(&fields[1], "%s", p->name);
}

static TopRowLook probes_look(const TopModel *m, size_t value) {
        return (TopRowLook) { .trend = probes_of(m)->probes[value].trend };
}

const TopViewClass top_view_probe = {
        .name = "probe",
        .title = "Probe",
        .sort_names = probe_sort_names,
        .n_sorts = _PROBE_SORT_MAX,
        .default_sort = PROBE_PAGES,
        .columns = probe_columns,
        .n_columns = ELEMENTSOF(probe_columns),
        .tree = TOP_TREE_NONE,
        .rows_size = sizeof(Probes),
        .rows_init = probes_init,
        .rows_done = probes_done,
        .read = probes_read,
        .n_items = probes_n_items,
        .key = probes_key,
        .compare = probes_compare,
        .matches = probes_matches,
        .current = probes_current,
        .set_trend = probes_set_trend,
        .write = probes_write,
        .look = probes_look,
};

/* ---- The shared code with it ------------------------------------------------------------------------- */

/* A Top reply with one task, no modules and these probes: name, pages, ... */
static json_t *reply_with(json_t *probes) {
        json_t *r = json_pack("{s:[{s:i, s:s, s:i}], s:[], s:o}", "tasks", "pid", 1, "comm", "init", "currentPages",
                              5, "modules", "probes", probes);

        ASSERT_NOT_NULL(r);
        return r;
}

static json_t *probe(const char *name, int pages) {
        return json_pack("{s:s, s:i}", "name", name, "pages", pages);
}

static void update(TopModel *m, json_t *probes) {
        json_t *r = reply_with(probes);

        ASSERT_OK(top_model_update(m, r));
        json_decref(r);
}

static const char *row_text(const TopModel *m, size_t row) {
        static char line[128];
        char *text = top_view_row_text(m, TOP_VIEW_PROBE, row, true);

        ASSERT_NOT_NULL(text);
        (void) snprintf(line, sizeof(line), "%s", text);
        free(text);
        return line;
}

/* Registered after today's five, in their order; its rows set up with each model and emptied with it. */
static void test_registry(void) {
        static const char *const names[] = { "tasks", "modules", "stacks", "units", "slab", "probe" };
        TopModel *a, *b;

        ASSERT_EQ(_TOP_VIEW_MAX, ELEMENTSOF(names));
        ASSERT_EQ(TOP_VIEW_PROBE, 5);
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                ASSERT_STREQ(top_view_class((TopView) v)->name, names[v]);
        ASSERT_TRUE(top_view_class(TOP_VIEW_PROBE) == &top_view_probe);

        ASSERT_EQ(probes_alive, 0);
        ASSERT_OK(top_model_new(4096, &a));
        ASSERT_OK(top_model_new(4096, &b));
        ASSERT_EQ(probes_alive, 2);
        ASSERT_NOT_NULL(a->rows[TOP_VIEW_PROBE]);
        update(a, json_pack("[o]", probe("x", 1)));
        top_model_free(a);
        ASSERT_EQ(probes_alive, 1);
        top_model_free(b);
        ASSERT_EQ(probes_alive, 0);
}

/* Rows from the Top reply, sorted, filtered, followed by key and coloured by trend, written by its class. */
static void test_rows(void) {
        TopModel *m;
        char *header;

        ASSERT_OK(top_model_new(4096, &m));
        update(m, json_pack("[o, o, o]", probe("beta", 20), probe("alpha", 10), probe("gamma", 30)));
        top_model_set_view(m, TOP_VIEW_PROBE);
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_PROBE), 3);
        ASSERT_STREQ(row_text(m, 0), "      30 gamma");
        header = top_view_header(m, TOP_VIEW_PROBE);
        ASSERT_STREQ(header, " [PAGES] PROBE");
        free(header);

        top_model_sort_next(m, 1);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_PROBE), "name");
        ASSERT_STREQ(row_text(m, 0), "      10 alpha");
        top_model_move(m, 1);
        ASSERT_OK(top_model_set_filter(m, "ET"));
        ASSERT_EQ(top_model_rows(m, TOP_VIEW_PROBE), 1);
        ASSERT_OK(top_model_set_filter(m, NULL));

        /* beta grows, alpha goes, delta comes: the selection stays on beta. */
        update(m, json_pack("[o, o, o]", probe("gamma", 30), probe("beta", 25), probe("delta", 1)));
        ASSERT_STREQ(row_text(m, top_model_selected(m, TOP_VIEW_PROBE)), "      25 beta");
        ASSERT_EQ(top_view_probe.look(m, 0).trend, TOP_TREND_SAME);
        ASSERT_EQ(top_view_probe.look(m, 1).trend, TOP_TREND_UP);
        ASSERT_EQ(top_view_probe.look(m, 2).trend, TOP_TREND_NEW);

        /* No Enter, no owner: the graph shows the total, Enter stays. */
        char *key = NULL;
        json_t *p = top_graph_parameters(m, &key);
        ASSERT_STREQ(key, "total");
        json_decref(p);
        free(key);
        ASSERT_EQ(top_model_open_stacks(m), 0);
        ASSERT_EQ(m->view, TOP_VIEW_PROBE);
        top_model_free(m);
}

/* The settings file names it, both ways. */
static void test_settings(void) {
        TopModel *m;
        char *text;

        ASSERT_OK(top_model_new(4096, &m));
        ASSERT_EQ(top_settings_parse(m, "view=probe\nsort.probe=name\n"), 2);
        ASSERT_EQ(m->view, TOP_VIEW_PROBE);
        text = top_settings_format(m);
        ASSERT_NOT_NULL(strstr(text, "\nview=probe\n"));
        ASSERT_NOT_NULL(strstr(text, "\nsort.probe=name\n"));
        free(text);
        top_model_free(m);
}

/* Key 6 shows it, and the help's line for the number keys says so. */
static void test_keys(void) {
        TopActionContext c = {};
        char *help = top_actions_help();

        ASSERT_NOT_NULL(strstr(help, "\n  1 2 3 4 5 6            tasks, modules, stacks, units, slab, probe view\n"));
        free(help);
        ASSERT_OK(top_model_new(4096, &c.model));
        ASSERT_EQ(top_actions_handle_key(&c, '6'), TOP_REACT_REDRAW);
        ASSERT_EQ(c.model->view, TOP_VIEW_PROBE);
        ASSERT_EQ(top_actions_handle_key(&c, '7'), TOP_REACT_NONE);
        ASSERT_EQ(c.model->view, TOP_VIEW_PROBE);
        /* Tab goes round through it. */
        ASSERT_EQ(top_actions_handle_key(&c, '\t'), TOP_REACT_REDRAW);
        ASSERT_EQ(c.model->view, TOP_VIEW_TASKS);
        ASSERT_EQ(top_actions_handle_key(&c, KEY_BTAB), TOP_REACT_REDRAW);
        ASSERT_EQ(c.model->view, TOP_VIEW_PROBE);
        top_model_free(c.model);
}

int main(void) {
        TEST(test_registry);
        TEST(test_rows);
        TEST(test_settings);
        TEST(test_keys);
        ASSERT_EQ(probes_alive, 0);
        return 0;
}
