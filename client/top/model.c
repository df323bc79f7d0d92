/* SPDX-License-Identifier: MIT */

/*
 * What every view shares: reading a Top reply through each view's class, trends, filtering, sorting,
 * laying trees out, the selection and the open or closed tree nodes kept by key across updates, and the
 * user's choices. Nothing here knows which view it works on; view-class.h says what a class answers.
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain-text.h"
#include "macro.h"
#include "model.h"
#include "reply.h"
#include "view-class.h"

static void free_strings(char **strings, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(strings[i]);
        free(strings);
}

static void table_clear_rows(TopTable *t) {
        for (size_t i = 0; t->lines && i < t->n_rows; i++)
                free(t->lines[i].guides);
        t->lines = mfree_ptr(t->lines);
        t->rows = mfree_ptr(t->rows);
        t->n_rows = 0;
}

static void table_done(TopTable *t) {
        table_clear_rows(t);
        free(t->selected_key);
        free_strings(t->toggled, t->n_toggled);
}

int top_model_new(uint64_t page_size, TopModel **ret) {
        TopModel *m = calloc(1, sizeof(TopModel));

        if (!m)
                return -ENOMEM;
        m->page_size = page_size ?: 4096;
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);
                m->sort[v] = c->default_sort;
                m->rows[v] = calloc(1, c->rows_size);
                if (!m->rows[v]) {
                        top_model_free(m);
                        return -ENOMEM;
                }
                if (c->rows_init)
                        c->rows_init(m->rows[v]);
        }
        m->high_percent = 10;
        *ret = m;
        return 0;
}

static void clear_explain_lines(TopModel *m) {
        free_strings(m->explain_lines, m->n_explain_lines);
        m->explain_lines = NULL;
        m->n_explain_lines = 0;
}

TopModel *top_model_free(TopModel *m) {
        if (!m)
                return NULL;
        clear_explain_lines(m);
        free(m->explain_unit);
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);
                table_done(&m->tables[v]);
                if (m->rows[v] && c->rows_done)
                        c->rows_done(m->rows[v]);
                free(m->rows[v]);
                free(m->filter[v]);
        }
        free(m->filter_edit);
        free(m);
        return NULL;
}

/* ---- Trends: each row's pages against the same row's in the previous update ------------------------- */

typedef struct PreviousRow {
        char *key;              /* owned */
        uint64_t current;
        size_t item;            /* its place in the previous update: the first of equal keys wins */
} PreviousRow;

/* A view's rows of the previous update, by key. */
typedef struct Previous {
        PreviousRow *rows;      /* owned, n, sorted by key */
        size_t n;
} Previous;

typedef struct Trends {
        Previous views[_TOP_VIEW_MAX];
        bool had_data;          /* the first update has nothing to compare with: no row is "new" then */
} Trends;

static void trends_done(Trends *t) {
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                for (size_t i = 0; i < t->views[v].n; i++)
                        free(t->views[v].rows[i].key);
                free(t->views[v].rows);
        }
}

static int compare_previous(const void *a, const void *b) {
        const PreviousRow *x = a, *y = b;
        return strcmp(x->key, y->key) ?: (x->item > y->item) - (x->item < y->item);
}

static int previous_take(const TopModel *m, const TopViewClass *c, Previous *ret) {
        size_t n = c->n_items(m);

        ret->rows = calloc(MAX(n, (size_t) 1), sizeof(PreviousRow));
        if (!ret->rows)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char *key = c->key(m, i);
                if (!key)
                        return -ENOMEM;
                ret->rows[ret->n++] = (PreviousRow) { .key = key, .current = c->current(m, i), .item = i };
        }
        qsort(ret->rows, ret->n, sizeof(PreviousRow), compare_previous);
        return 0;
}

static int set_trends(TopModel *m, const TopViewClass *c, const Previous *p, bool had_data) {
        for (size_t i = 0, n = c->n_items(m); i < n; i++) {
                _cleanup_free_ char *key = had_data ? c->key(m, i) : NULL;
                const PreviousRow *old = NULL;
                uint64_t now = c->current(m, i);

                if (!had_data) {
                        c->set_trend(m, i, TOP_TREND_SAME);
                        continue;
                }
                if (!key)
                        return -ENOMEM;
                /* The first row of that key: a binary search for its lower bound. */
                for (size_t lo = 0, hi = p->n; lo < hi;) {
                        size_t mid = lo + (hi - lo) / 2;
                        int k = strcmp(p->rows[mid].key, key);
                        if (k == 0)
                                old = &p->rows[mid];
                        if (k < 0)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                c->set_trend(m, i, !old ? TOP_TREND_NEW : now > old->current ? TOP_TREND_UP :
                                   now < old->current ? TOP_TREND_DOWN : TOP_TREND_SAME);
        }
        return 0;
}

int top_model_update(TopModel *m, json_t *reply) {
        _cleanup_(trends_done) Trends trends = { .had_data = m->have_data };
        int r;

        assert(m);

        if (m->paused)
                return 0;
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const char *required = top_view_class((TopView) v)->required;
                if (required && !reply_array(reply, required))
                        return -EBADMSG;
        }

        /* The previous rows are kept by key until the new ones are read: each row's trend compares with them. */
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);
                if (c->set_trend && (r = previous_take(m, c, &trends.views[v])) < 0)
                        return r;
        }
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);
                if (c->read && (r = c->read(m, reply)) < 0)
                        goto fail;
        }
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                const TopViewClass *c = top_view_class((TopView) v);
                if (c->set_trend && (r = set_trends(m, c, &trends.views[v], trends.had_data)) < 0)
                        goto fail;
        }
        m->tracked_pages = reply_count(reply, "trackedPages");
        m->peak_tracked_pages = reply_count(reply, "peakTrackedPages");
        m->lost_events = reply_count(reply, "lostEvents");
        m->stacks_truncated = reply_count(reply, "stacksTruncated");
        m->uptime_usec = reply_count(reply, "uptimeUsec");
        m->events_per_second = reply_double(reply, "eventsPerSecond", 0);
        m->have_data = true;
        return top_model_rebuild(m);
fail:
        /* The rows read so far replace the old ones: the visible rows must not point past them. */
        (void) top_model_rebuild(m);
        return r;
}

json_t *top_model_fetch_parameters(const TopModel *m, TopView v) {
        const TopViewFetch *f = top_view_class(v)->fetch;
        return f ? f->parameters(m) : NULL;
}

int top_model_update_fetched(TopModel *m, TopView v, json_t *reply) {
        const TopViewFetch *f = top_view_class(v)->fetch;
        int r;

        assert(m);

        if (!f)
                return -EOPNOTSUPP;
        if (m->paused)
                return 0;
        r = f->read(m, reply);
        if (r < 0)
                return r;
        return top_model_rebuild(m);
}

/* ---- Rows of a view --------------------------------------------------------------------------------- */

size_t top_model_rows(const TopModel *m, TopView v) {
        return v >= 0 && v < _TOP_VIEW_MAX ? m->tables[v].n_rows : 0;
}

size_t top_model_selected(const TopModel *m, TopView v) {
        return v >= 0 && v < _TOP_VIEW_MAX ? m->tables[v].selected : 0;
}

size_t top_model_row_value(const TopModel *m, TopView v, size_t row) {
        return row < top_model_rows(m, v) ? m->tables[v].rows[row] : SIZE_MAX;
}

const TopTreeLine *top_model_tree_line(const TopModel *m, TopView v, size_t row) {
        if (row >= top_model_rows(m, v) || !m->tables[v].lines)
                return NULL;
        return &m->tables[v].lines[row];
}

bool top_model_is_high(const TopModel *m, uint64_t pages) {
        if (m->high_percent <= 0 || m->meminfo.total == 0)
                return false;
        return (double) pages * (double) m->page_size * 100.0 >= m->high_percent * (double) m->meminfo.total;
}

bool top_model_owner(const TopModel *m, TopView v, size_t row, TopOwner *ret) {
        const TopViewClass *c = top_view_class(v);
        return c->owner && c->owner(m, top_model_row_value(m, v, row), ret);
}

/* ---- Filtering, sorting and trees ------------------------------------------------------------------- */

static const char *active_filter(const TopModel *m, TopView v) {
        return m->filter[v] && m->filter[v][0] ? m->filter[v] : NULL;
}

/* A view's order on its values. */
typedef struct Sorting {
        const TopModel *model;
        const TopViewClass *class;
        unsigned sort;
} Sorting;

static int compare_values(const void *a, const void *b, void *userdata) {
        const Sorting *s = userdata;
        return s->class->compare(s->model, s->sort, *(const size_t *) a, *(const size_t *) b);
}

static bool has_key(char *const *keys, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq(keys[i], key))
                        return true;
        return false;
}

/* Records a tree node as opened or closed by the user: toggled means against the tree's default. Returns
 * 1 if that changed the set, 0 if not, -ENOMEM. */
static int set_toggled(TopTable *t, const char *key, bool toggled) {
        for (size_t i = 0; i < t->n_toggled; i++)
                if (streq(t->toggled[i], key)) {
                        if (toggled)
                                return 0;
                        free(t->toggled[i]);
                        t->toggled[i] = t->toggled[--t->n_toggled];
                        return 1;
                }
        if (!toggled)
                return 0;
        char **k = reallocarray(t->toggled, t->n_toggled + 1, sizeof(char *));
        if (!k)
                return -ENOMEM;
        t->toggled = k;
        t->toggled[t->n_toggled] = strdup(key);
        if (!t->toggled[t->n_toggled])
                return -ENOMEM;
        t->n_toggled++;
        return 1;
}

/* The user opens (open) or closes a node by key: a browse tree remembers what is open, the others what
 * is closed. */
static int set_open(TopTable *t, const TopViewClass *c, const char *key, bool open) {
        return set_toggled(t, key, c->tree == TOP_TREE_BROWSE ? open : !open);
}

/* A forest laid out as rows: depth first, siblings in the view's sort order. */
typedef struct TreeBuild {
        const TopModel *model;
        const TopViewClass *class;
        const TopTable *table;
        const TopForest *forest;
        unsigned sort;
        const bool *shown;              /* NULL: every node */
        const bool *forced_open;        /* NULL: none; the way down to a filter's matches */
        size_t *first, *next;           /* first child, next sibling (SIZE_MAX: none), in sorted order */
        bool *done;                     /* laid out already: a parent cycle (pid reuse) cannot loop */
        size_t *rows;
        TopTreeLine *lines;
        size_t n_rows;
} TreeBuild;

static int compare_nodes(const void *a, const void *b, void *userdata) {
        const TreeBuild *t = userdata;
        return t->class->compare(t->model, t->sort, t->forest->values[*(const size_t *) a],
                                 t->forest->values[*(const size_t *) b]);
}

/* Whether a node with children shows them: a browse tree's roots always do, and so does the way down to
 * a filter's match; otherwise the tree's default, unless the user toggled it. */
static int node_open(const TreeBuild *t, size_t node, unsigned depth, bool *ret) {
        bool browse = t->class->tree == TOP_TREE_BROWSE;

        if ((t->forced_open && t->forced_open[node]) || (browse && depth == 0)) {
                *ret = true;
                return 0;
        }
        _cleanup_free_ char *key = t->class->key(t->model, t->forest->values[node]);
        if (!key)
                return -ENOMEM;
        bool toggled = has_key(t->table->toggled, t->table->n_toggled, key);
        *ret = browse ? toggled : !toggled;
        return 0;
}

/* A closed node's subtree: not shown, and not taken for a cycle either. */
static void mark_done(TreeBuild *t, size_t node) {
        t->done[node] = true;
        for (size_t c = t->first[node]; c != SIZE_MAX; c = t->next[c])
                if (!t->done[c])
                        mark_done(t, c);
}

static int lay_out(TreeBuild *t, size_t node, unsigned depth, const char *guides, bool last) {
        _cleanup_free_ char *mine = NULL, *below = NULL;
        bool has_children = t->first[node] != SIZE_MAX, open = true;
        int r;

        t->done[node] = true;
        mine = malloc(depth + 1);
        below = malloc(depth + 2);
        if (!mine || !below)
                return -ENOMEM;
        if (has_children && (r = node_open(t, node, depth, &open)) < 0)
                return r;
        /* Ancestors' lines, then this row's own corner; its children see a line here if it has later
         * siblings. */
        memcpy(mine, guides, depth);
        if (depth > 0)
                mine[depth - 1] = last ? 'l' : 't';
        mine[depth] = '\0';
        memcpy(below, guides, depth);
        if (depth > 0)
                below[depth - 1] = last ? ' ' : '|';
        below[depth] = ' ';
        below[depth + 1] = '\0';

        t->rows[t->n_rows] = t->forest->values[node];
        t->lines[t->n_rows++] = (TopTreeLine) {
                .depth = depth, .guides = TAKE_PTR(mine), .has_children = has_children, .collapsed = !open,
        };
        if (!open) {
                mark_done(t, node);
                return 0;
        }
        for (size_t c = t->first[node]; c != SIZE_MAX; c = t->next[c]) {
                if (t->done[c])
                        continue;
                r = lay_out(t, c, depth + 1, below, t->next[c] == SIZE_MAX);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Lays the forest's shown nodes out into the table's rows and lines. */
static int lay_out_forest(TreeBuild *t, TopTable *table) {
        size_t n = t->forest->n, alloc = MAX(n, (size_t) 1);
        _cleanup_free_ size_t *order = calloc(alloc, sizeof(size_t));
        _cleanup_free_ size_t *first = calloc(alloc, sizeof(size_t));
        _cleanup_free_ size_t *next = calloc(alloc, sizeof(size_t));
        _cleanup_free_ bool *done = calloc(alloc, sizeof(bool));
        int r = 0;

        /* The table owns rows and lines from here: cleared with it even if this fails half way. */
        table->rows = t->rows = calloc(alloc, sizeof(size_t));
        table->lines = t->lines = calloc(alloc, sizeof(TopTreeLine));
        if (!order || !first || !next || !done || !t->rows || !t->lines)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                order[i] = i;
                first[i] = next[i] = SIZE_MAX;
        }
        qsort_r(order, n, sizeof(size_t), compare_nodes, t);
        /* Children lists in sorted order: walk the sorted nodes backwards, pushing each on its parent's. */
        size_t roots = SIZE_MAX;
        for (size_t k = n; k-- > 0;) {
                size_t i = order[k], p = t->forest->parent[i];
                if (t->shown && !t->shown[i])
                        continue;
                size_t *head = p == SIZE_MAX ? &roots : &first[p];
                next[i] = *head;
                *head = i;
        }
        t->first = first;
        t->next = next;
        t->done = done;
        t->n_rows = 0;
        for (size_t i = roots; i != SIZE_MAX && r >= 0; i = next[i])
                r = lay_out(t, i, 0, "", next[i] == SIZE_MAX);
        /* Nodes in a parent cycle have no root above them: each cycle shows from its first node. */
        for (size_t k = 0; k < n && r >= 0; k++)
                if (!done[order[k]] && (!t->shown || t->shown[order[k]]))
                        r = lay_out(t, order[k], 0, "", true);
        table->n_rows = t->n_rows;
        return r;
}

static void forest_done(TopForest *f) {
        free(f->values);
        free(f->parent);
}

/*
 * A browse tree under a filter: each match shows with all below it and the way down to it, and the way
 * down is open. The forest has every parent before its children, so one pass down finds what is below a
 * match and one pass up what is above one.
 */
static int browse_filter(const TopModel *m, const TopViewClass *c, const char *filter, const TopForest *f,
                bool **ret_shown, bool **ret_forced_open) {
        size_t alloc = MAX(f->n, (size_t) 1);
        _cleanup_free_ bool *matched = calloc(alloc, sizeof(bool)), *above = calloc(alloc, sizeof(bool));
        _cleanup_free_ bool *shown = calloc(alloc, sizeof(bool)), *forced_open = calloc(alloc, sizeof(bool));

        if (!matched || !above || !shown || !forced_open)
                return -ENOMEM;
        for (size_t i = 0; i < f->n; i++) {
                size_t p = f->parent[i];
                assert(p == SIZE_MAX || p < i);
                /* A match, or below one. */
                matched[i] = c->matches(m, f->values[i], filter) || (p != SIZE_MAX && matched[p]);
        }
        for (size_t i = f->n; i-- > 0;)
                if ((matched[i] || above[i]) && f->parent[i] != SIZE_MAX)
                        above[f->parent[i]] = true;
        for (size_t i = 0; i < f->n; i++) {
                shown[i] = matched[i] || above[i];
                forced_open[i] = !matched[i] && above[i];
        }
        *ret_shown = TAKE_PTR(shown);
        *ret_forced_open = TAKE_PTR(forced_open);
        return 0;
}

/* The selection stays on the row of its key, else at its place clamped to the new rows. Of rows with the
 * same key the last one is taken. */
static int find_selection(const TopModel *m, const TopViewClass *c, TopTable *t) {
        ssize_t found = -1;

        for (size_t i = 0; t->selected_key && i < t->n_rows; i++) {
                _cleanup_free_ char *key = c->key(m, t->rows[i]);
                if (!key)
                        return -ENOMEM;
                if (streq(key, t->selected_key))
                        found = (ssize_t) i;
        }
        if (found >= 0)
                t->selected = (size_t) found;
        else
                t->selected = t->n_rows == 0 ? 0 : MIN(t->selected, t->n_rows - 1);
        return 0;
}

/* A view's visible rows: the items its filter matches, sorted or laid out as its tree. */
static int build_rows(TopModel *m, TopView v) {
        const TopViewClass *c = top_view_class(v);
        TopTable *t = &m->tables[v];
        const char *filter = active_filter(m, v);
        size_t n = c->n_items(m), n_shown = 0;
        _cleanup_free_ size_t *items = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        _cleanup_free_ bool *shown = NULL, *forced_open = NULL;
        _cleanup_(forest_done) TopForest forest = {};
        TreeBuild tree = { .model = m, .class = c, .table = t, .forest = &forest, .sort = m->sort[v] };
        int r;

        table_clear_rows(t);
        if (!items)
                return -ENOMEM;
        if (c->tree == TOP_TREE_BROWSE) {
                /* The whole tree, then what the filter leaves of it. */
                for (size_t i = 0; i < n; i++)
                        items[i] = i;
                r = c->forest(m, items, n, &forest);
                if (r >= 0 && filter)
                        r = browse_filter(m, c, filter, &forest, &shown, &forced_open);
                tree.shown = shown;
                tree.forced_open = forced_open;
                if (r >= 0)
                        r = lay_out_forest(&tree, t);
        } else {
                for (size_t i = 0; i < n; i++)
                        if (!filter || c->matches(m, i, filter))
                                items[n_shown++] = i;
                qsort_r(items, n_shown, sizeof(size_t), compare_values, &(Sorting) { m, c, m->sort[v] });
                if (c->tree == TOP_TREE_OPTIONAL && m->tree[v]) {
                        r = c->forest(m, items, n_shown, &forest);
                        if (r >= 0)
                                r = lay_out_forest(&tree, t);
                } else {
                        t->rows = TAKE_PTR(items);
                        t->n_rows = n_shown;
                        r = 0;
                }
        }
        if (r < 0)
                return r;
        return find_selection(m, c, t);
}

static int remember_selection(TopModel *m) {
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                TopTable *t = &m->tables[v];
                size_t value = top_model_row_value(m, (TopView) v, t->selected);
                char *key;

                if (value == SIZE_MAX)
                        continue;
                key = top_view_class((TopView) v)->key(m, value);
                if (!key)
                        return -ENOMEM;
                free(t->selected_key);
                t->selected_key = key;
        }
        return 0;
}

int top_model_rebuild(TopModel *m) {
        int r;

        assert(m);

        for (size_t v = 0; v < _TOP_VIEW_MAX; v++) {
                r = build_rows(m, (TopView) v);
                if (r < 0)
                        return r;
        }
        return remember_selection(m);
}

/* ---- The user's choices ----------------------------------------------------------------------------- */

void top_model_set_view(TopModel *m, TopView v) {
        if (v >= 0 && v < _TOP_VIEW_MAX)
                m->view = v;
}

void top_model_move(TopModel *m, int64_t delta) {
        size_t n = top_model_rows(m, m->view), *sel = &m->tables[m->view].selected;

        if (n == 0)
                return;
        if (delta == INT64_MIN)
                *sel = 0;
        else if (delta == INT64_MAX)
                *sel = n - 1;
        else if (delta < 0)
                *sel = (uint64_t) -delta > *sel ? 0 : *sel - (size_t) -delta;
        else
                *sel = MIN(*sel + (size_t) delta, n - 1);
        (void) remember_selection(m);
}

void top_model_select(TopModel *m, size_t row) {
        size_t n = top_model_rows(m, m->view);

        if (n == 0)
                return;
        m->tables[m->view].selected = MIN(row, n - 1);
        (void) remember_selection(m);
}

void top_model_set_sort(TopModel *m, unsigned column) {
        if (column >= top_view_class(m->view)->n_sorts)
                return;
        m->sort[m->view] = column;
        (void) top_model_rebuild(m);
}

void top_model_sort_next(TopModel *m, int direction) {
        unsigned n = top_view_class(m->view)->n_sorts;

        m->sort[m->view] = (m->sort[m->view] + n + (direction < 0 ? n - 1 : 1)) % n;
        (void) top_model_rebuild(m);
}

/* The view whose order the Top call's limit keeps, _TOP_VIEW_INVALID if none. */
static TopView stream_view(void) {
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                if (top_view_class((TopView) v)->stream_sort)
                        return (TopView) v;
        return _TOP_VIEW_INVALID;
}

const char *top_model_stream_sort(const TopModel *m) {
        TopView v = stream_view();
        return v >= 0 ? top_view_class(v)->stream_sort(m->sort[v]) : "current";
}

int top_model_set_stream_sort(TopModel *m, const char *name) {
        TopView v = stream_view();

        if (v < 0)
                return -EINVAL;
        /* The sort key that has the call's name for its own. */
        const TopViewClass *c = top_view_class(v);
        for (unsigned k = 0; k < c->n_sorts; k++)
                if (streq(c->sort_names[k], name) && streq(c->stream_sort(k), name)) {
                        m->sort[v] = k;
                        return top_model_rebuild(m);
                }
        return -EINVAL;
}

const char *top_model_sort_name(const TopModel *m, TopView v) {
        const TopViewClass *c = top_view_class(v);
        return c->sort_names[m->sort[v] % c->n_sorts];
}

int top_model_set_filter(TopModel *m, const char *filter) {
        char *copy = NULL;

        if (filter && filter[0]) {
                copy = strdup(filter);
                if (!copy)
                        return -ENOMEM;
        }
        free(m->filter[m->view]);
        m->filter[m->view] = copy;
        return top_model_rebuild(m);
}

const char *top_model_filter(const TopModel *m) {
        return m->filter[m->view];
}

void top_model_toggle_pause(TopModel *m) {
        m->paused = !m->paused;
}

int top_model_toggle_tree(TopModel *m) {
        if (top_view_class(m->view)->tree != TOP_TREE_OPTIONAL)
                return -EOPNOTSUPP;
        m->tree[m->view] = !m->tree[m->view];
        return top_model_rebuild(m);
}

/* Opens the selected node, and the run of only children below it where the class has them. */
int top_model_expand(TopModel *m) {
        const TopViewClass *c = top_view_class(m->view);
        TopTable *t = &m->tables[m->view];
        const TopTreeLine *line = top_model_tree_line(m, m->view, t->selected);
        bool changed = false;

        if (!line || !line->has_children)
                return 0;
        for (size_t v = t->rows[t->selected]; v != SIZE_MAX; v = c->only_child ? c->only_child(m, v) : SIZE_MAX) {
                _cleanup_free_ char *key = c->key(m, v);
                if (!key)
                        return -ENOMEM;
                int r = set_open(t, c, key, true);
                if (r < 0)
                        return r;
                changed = changed || r > 0;
        }
        return changed ? top_model_rebuild(m) : 0;
}

/* Closes the selected node; on a closed node or a leaf (or a browse tree's root), selects its parent. */
int top_model_collapse(TopModel *m) {
        const TopViewClass *c = top_view_class(m->view);
        TopTable *t = &m->tables[m->view];
        const TopTreeLine *line = top_model_tree_line(m, m->view, t->selected);
        int r;

        if (!line)
                return 0;
        if (line->has_children && !line->collapsed && !(c->tree == TOP_TREE_BROWSE && line->depth == 0)) {
                _cleanup_free_ char *key = c->key(m, t->rows[t->selected]);
                if (!key)
                        return -ENOMEM;
                r = set_open(t, c, key, false);
                if (r < 0)
                        return r;
                return top_model_rebuild(m);
        }
        /* The parent: the nearest row above that is one level up. */
        for (size_t i = t->selected; i-- > 0;)
                if (t->lines[i].depth + 1 == line->depth) {
                        t->selected = i;
                        return remember_selection(m);
                }
        return 0;
}

int top_model_toggle(TopModel *m) {
        const TopTreeLine *line = top_model_tree_line(m, m->view, top_model_selected(m, m->view));

        if (line && line->has_children && !line->collapsed)
                return top_model_collapse(m);
        return top_model_expand(m);
}

int top_model_open_stacks(TopModel *m) {
        const TopViewClass *c = top_view_class(m->view);
        return c->enter ? c->enter(m) : 0;
}

/* ---- The Explain view ------------------------------------------------------------------------------- */

int top_model_open_explain(TopModel *m) {
        TopOwner o;

        if (!top_view_class(m->view)->explains || !top_model_owner(m, m->view, top_model_selected(m, m->view), &o) ||
            !o.unit)
                return -ENOENT;
        char *name = strdup(o.unit);
        if (!name)
                return -ENOMEM;
        free(m->explain_unit);
        m->explain_unit = name;
        clear_explain_lines(m);
        m->explain_scroll = 0;
        m->mode = TOP_MODE_EXPLAIN;
        return 0;
}

void top_model_close_explain(TopModel *m) {
        if (m->mode == TOP_MODE_EXPLAIN)
                m->mode = TOP_MODE_NORMAL;
}

json_t *top_model_explain_parameters(const TopModel *m) {
        return m->explain_unit ? json_pack("{s:s}", "name", m->explain_unit) : NULL;
}

int top_model_update_explain(TopModel *m, json_t *reply) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0, n = 0;
        char **lines = NULL;
        int r;

        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        r = explain_render_text(reply, f);
        if (fclose(f) != 0 || !text)
                return -ENOMEM;
        if (r < 0)
                return r;
        for (char *p = text, *end; *p; p = end + (*end == '\n')) {
                end = p + strcspn(p, "\n");
                char **l = realloc(lines, (n + 1) * sizeof(char *));
                char *line = l ? strndup(p, (size_t) (end - p)) : NULL;
                if (l)
                        lines = l;
                if (!line) {
                        free_strings(lines, n);
                        return -ENOMEM;
                }
                lines[n++] = line;
        }
        clear_explain_lines(m);
        m->explain_lines = lines;
        m->n_explain_lines = n;
        m->explain_scroll = MIN(m->explain_scroll, n > 0 ? n - 1 : 0);
        return 0;
}

void top_model_scroll_explain(TopModel *m, int64_t delta, size_t page_lines) {
        size_t last = m->n_explain_lines > page_lines ? m->n_explain_lines - page_lines : 0;

        if (delta == INT64_MIN)
                m->explain_scroll = 0;
        else if (delta == INT64_MAX)
                m->explain_scroll = last;
        else if (delta < 0)
                m->explain_scroll -= MIN(m->explain_scroll, (size_t) -delta);
        else
                m->explain_scroll = MIN(m->explain_scroll + (size_t) delta, last);
}
