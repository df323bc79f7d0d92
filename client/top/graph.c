/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "graph.h"
#include "macro.h"
#include "reply.h"

void top_graph_clear(TopGraph *g) {
        g->current = mfree_ptr(g->current);
        g->peak = mfree_ptr(g->peak);
        g->n = 0;
}

void top_graph_done(TopGraph *g) {
        top_graph_clear(g);
        g->key = mfree_ptr(g->key);
}

json_t *top_graph_parameters(const TopModel *m, char **ret_key) {
        json_auto_t *p = json_pack("{s:i}", "seconds", TOP_GRAPH_SECONDS);
        char *key = NULL;
        int r = 0;

        if (!p)
                return NULL;
        size_t row = top_model_selected(m, m->view);
        const TopTask *t;
        const TopModule *mod;
        const TopUnit *u;
        int64_t pid = -1;
        const char *module = NULL, *unit = NULL;

        switch (m->view) {
        case TOP_VIEW_TASKS:
                if ((t = top_model_task_row(m, row)))
                        pid = t->pid;
                break;
        case TOP_VIEW_MODULES:
                if ((mod = top_model_module_row(m, row)))
                        module = mod->name;
                break;
        case TOP_VIEW_UNITS:
                if ((u = top_model_unit_row(m, row)))
                        unit = u->name;
                break;
        case TOP_VIEW_SLAB:
                break;          /* slab objects have no page history: the total's */
        default:
                pid = m->scope_pid;
                module = m->scope_module;
                unit = m->scope_unit;
        }
        if (pid >= 0) {
                r = json_object_set_new(p, "pid", json_integer((json_int_t) pid));
                if (asprintf(&key, "pid %" PRIi64, pid) < 0)
                        key = NULL;
        } else if (module) {
                r = json_object_set_new(p, "module", json_string(module));
                if (asprintf(&key, "module %s", module) < 0)
                        key = NULL;
        } else if (unit) {
                r = json_object_set_new(p, "unit", json_string(unit));
                if (asprintf(&key, "unit %s", unit) < 0)
                        key = NULL;
        } else
                key = strdup("total");
        if (r < 0 || !key) {
                free(key);
                return NULL;
        }
        *ret_key = key;
        return TAKE_PTR(p);
}

bool top_graph_is_for(const TopGraph *g, const char *key) {
        return g->key && key && streq(g->key, key);
}

int top_graph_update(TopGraph *g, const char *key, json_t *reply) {
        json_t *points = json_object_get(reply, "points"), *p;
        _cleanup_free_ uint64_t *current = NULL, *peak = NULL;
        char *k;
        size_t i, n;

        if (!json_is_array(points))
                return -EBADMSG;
        n = json_array_size(points);
        current = calloc(MAX(n, (size_t) 1), sizeof(uint64_t));
        peak = calloc(MAX(n, (size_t) 1), sizeof(uint64_t));
        k = strdup(key);
        if (!current || !peak || !k) {
                free(k);
                return -ENOMEM;
        }
        json_array_foreach(points, i, p) {
                current[i] = reply_count(p, "current");
                peak[i] = MAX(reply_count(p, "peak"), current[i]);
        }
        top_graph_done(g);
        g->key = k;
        g->current = TAKE_PTR(current);
        g->peak = TAKE_PTR(peak);
        g->n = n;
        return 0;
}

int top_graph_line(const TopGraph *g, uint64_t page_size, size_t width, bool utf8, char **ret, int *ret_peak_col) {
        static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586",
                                              "\u2587", "\u2588" };
        static const char ascii[] = "_.:-=+*#";
        char peak_text[FORMAT_BUFFER_MAX], now_text[FORMAT_BUFFER_MAX];
        _cleanup_free_ char *line = NULL;
        size_t shown, first, len, col;
        uint64_t top = 0;
        int peak_col = -1;

        *ret = NULL;
        *ret_peak_col = -1;
        if (!g->key || g->n == 0 || width < 20)
                return 0;
        shown = MIN(g->n, width / 2);
        first = g->n - shown;
        size_t top_at = first;
        for (size_t i = first; i < g->n; i++)
                if (g->peak[i] > top) {
                        top = g->peak[i];
                        top_at = i;
                }

        /* The key and a space, then one column per bucket (3 bytes of UTF-8 each), then the figures. */
        len = strlen(g->key) + 1 + shown * 3 + 2 * FORMAT_BUFFER_MAX + 32;
        line = malloc(len);
        if (!line)
                return -ENOMEM;
        int k = snprintf(line, len, "%s ", g->key);
        if (k < 0)
                return -EINVAL;
        size_t pos = (size_t) k;
        /* Screen columns of the key: its characters (UTF-8 lead bytes). */
        col = 0;
        for (size_t i = 0; i < pos; i++)
                col += ((unsigned char) line[i] & 0xc0) != 0x80;
        for (size_t i = first; i < g->n; i++) {
                unsigned level = top ? (unsigned) ((g->current[i] * 7 + top / 2) / top) : 0;
                if (utf8) {
                        memcpy(line + pos, blocks[MIN(level, 7u)], 3);
                        pos += 3;
                } else
                        line[pos++] = ascii[MIN(level, 7u)];
                if (i == top_at && top > 0)
                        peak_col = (int) col;
                col++;
        }
        (void) snprintf(line + pos, len - pos, " peak %s now %s",
                        format_pages(peak_text, sizeof(peak_text), top, page_size),
                        format_pages(now_text, sizeof(now_text), g->current[g->n - 1], page_size));
        *ret = TAKE_PTR(line);
        *ret_peak_col = peak_col;
        return 0;
}
