/* SPDX-License-Identifier: MIT */

/* The live view's keys without a terminal: the views' number keys and their help line come from the
 * registry of views, and the keys ask the event loop for a view's own call or a new stream when needed. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "actions.h"
#include "curses.h"
#include "model.h"
#include "tests.h"
#include "view-class.h"

/* A model with two tasks and a module, from one Top reply. */
static TopModel *model_with_rows(void) {
        json_t *reply = json_pack("{s:[{s:i, s:s, s:i, s:i, s:i}, {s:i, s:s, s:i, s:i, s:i}], s:[{s:s, s:i}]}",
                                  "tasks", "pid", 1, "comm", "init", "currentPages", 5, "peakPages", 9,
                                  "allocs", 5, "pid", 2, "comm", "work", "currentPages", 50, "peakPages", 60,
                                  "allocs", 70, "modules", "name", "vmlinux", "currentPages", 55);
        TopModel *m;

        ASSERT_NOT_NULL(reply);
        ASSERT_OK(top_model_new(4096, &m));
        ASSERT_OK(top_model_update(m, reply));
        json_decref(reply);
        return m;
}

static TopReaction press(TopModel *m, int key) {
        TopActionContext c = { .model = m, .page_rows = 10 };
        return top_actions_handle_key(&c, key);
}

/* Key 1 shows the first view registered, and so on; a view with a call of its own asks for it. */
static void test_view_keys(void) {
        TopModel *m = model_with_rows();
        size_t n = _TOP_VIEW_MAX < 9 ? _TOP_VIEW_MAX : 9;

        for (size_t v = n; v-- > 0;) {
                TopReaction r = press(m, '1' + (int) v);
                ASSERT_EQ(m->view, (TopView) v);
                ASSERT_TRUE(r & TOP_REACT_REDRAW);
                ASSERT_EQ(!!(r & TOP_REACT_FETCH_VIEW), !!top_view_class((TopView) v)->fetch);
        }
        /* A number past the last view is no key at all. */
        if (n < 9) {
                ASSERT_EQ(press(m, '1' + (int) n), TOP_REACT_NONE);
                ASSERT_EQ(m->view, (TopView) 0);
        }
        ASSERT_EQ(press(m, '0'), TOP_REACT_NONE);
        top_model_free(m);
}

/* The help names the number keys and the views they show, in the order of TOP_VIEWS. */
static void test_help(void) {
        char *help = top_actions_help(), *want = NULL, *names = NULL, *keys = NULL;
        size_t names_size = 0, keys_size = 0;
        FILE *fn = open_memstream(&names, &names_size), *fk = open_memstream(&keys, &keys_size);
        size_t n = _TOP_VIEW_MAX < 9 ? _TOP_VIEW_MAX : 9;

        ASSERT_NOT_NULL(help);
        ASSERT_TRUE(fn && fk);
        for (size_t v = 0; v < n; v++) {
                fprintf(fk, "%s%zu", v > 0 ? " " : "", v + 1);
                fprintf(fn, "%s%s", v > 0 ? ", " : "", top_view_class((TopView) v)->name);
        }
        ASSERT_OK(fclose(fn));
        ASSERT_OK(fclose(fk));
        ASSERT_TRUE(asprintf(&want, "\n  %-22s %s view\n", keys, names) > 0);
        ASSERT_NOT_NULL(strstr(help, want));
        /* Today's five, as the help has always said them. */
        ASSERT_NOT_NULL(strstr(help, "\n  1 2 3 4 5              tasks, modules, stacks, units, slab view\n"));
        /* Every line is a key's, in the same column. */
        for (const char *line = help; *line; line = strchr(line, '\n') + 1) {
                ASSERT_TRUE(strncmp(line, "  ", 2) == 0 && line[2] != ' ');
                ASSERT_NOT_NULL(strchr(line, '\n'));
        }
        free(want);
        free(names);
        free(keys);
        free(help);
}

/* Enter, 'a' and the sort keys ask for the stacks' own call where the stacks show, and start the Top
 * stream again only when the order the daemon keeps tasks in changed. */
static void test_reactions(void) {
        TopModel *m = model_with_rows();

        /* Tasks by current, peak, allocs, frees, state: the daemon has the first three. */
        ASSERT_TRUE(press(m, 's') & TOP_REACT_RESTREAM);
        ASSERT_TRUE(press(m, 's') & TOP_REACT_RESTREAM);
        ASSERT_TRUE(press(m, 's') & TOP_REACT_RESTREAM);
        ASSERT_EQ(press(m, 's'), TOP_REACT_REDRAW);
        ASSERT_STREQ(top_model_sort_name(m, TOP_VIEW_TASKS), "state");

        /* Enter on a task: its stacks, asked for once; Enter there opens a node, no call. */
        ASSERT_EQ(press(m, '\n'), TOP_REACT_REDRAW | TOP_REACT_FETCH_VIEW);
        ASSERT_EQ(m->view, TOP_VIEW_STACKS);
        ASSERT_EQ(press(m, '\n'), TOP_REACT_REDRAW);
        /* Their sort is the call's: asked for again, the Top stream left alone. */
        ASSERT_EQ(press(m, 's'), TOP_REACT_REDRAW | TOP_REACT_FETCH_VIEW);
        /* 'a' from another view: the stacks of everything. */
        ASSERT_EQ(press(m, '\t'), TOP_REACT_REDRAW);
        ASSERT_EQ(press(m, 'a'), TOP_REACT_REDRAW | TOP_REACT_FETCH_VIEW);
        ASSERT_EQ(m->view, TOP_VIEW_STACKS);
        top_model_free(m);
}

int main(void) {
        TEST(test_view_keys);
        TEST(test_help);
        TEST(test_reactions);
        return 0;
}
