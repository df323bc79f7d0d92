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
        g->timestamp_usec = mfree_ptr(g->timestamp_usec);
        g->n = 0;
}

void top_graph_done(TopGraph *g) {
        top_graph_clear(g);
        g->key = mfree_ptr(g->key);
}

json_t *top_graph_parameters(const TopModel *m, char **ret_key) {
        /* The chart's spans are the two the daemon keeps, at their own resolution. */
        json_auto_t *p = m->chart == TOP_CHART_24H ? json_pack("{s:i, s:i}", "seconds", 86400, "resolution", 60) :
                         m->chart == TOP_CHART_10MIN ? json_pack("{s:i, s:i}", "seconds", 600, "resolution", 1) :
                         json_pack("{s:i}", "seconds", TOP_GRAPH_SECONDS);
        char *key = NULL;
        int r = 0;

        if (!p)
                return NULL;
        /* The selection's owner (in the stacks view the scope; slab call sites have none: the total). */
        TopOwner o = { .pid = -1 };
        (void) top_model_owner(m, m->view, top_model_selected(m, m->view), &o);

        if (o.pid >= 0) {
                r = json_object_set_new(p, "pid", json_integer((json_int_t) o.pid));
                if (asprintf(&key, "pid %" PRIi64, o.pid) < 0)
                        key = NULL;
        } else if (o.module) {
                r = json_object_set_new(p, "module", json_string(o.module));
                if (asprintf(&key, "module %s", o.module) < 0)
                        key = NULL;
        } else if (o.unit) {
                r = json_object_set_new(p, "unit", json_string(o.unit));
                if (asprintf(&key, "unit %s", o.unit) < 0)
                        key = NULL;
        } else
                key = strdup("total");
        if (r < 0 || !key) {
                free(key);
                return NULL;
        }
        /* The same owner over another span is another graph. */
        if (m->chart != TOP_CHART_OFF) {
                char *spanned;
                if (asprintf(&spanned, "%s%s", key, m->chart == TOP_CHART_24H ? " (24 h)" : " (10 min)") < 0) {
                        free(key);
                        return NULL;
                }
                free(key);
                key = spanned;
        }
        *ret_key = key;
        return TAKE_PTR(p);
}

bool top_graph_is_for(const TopGraph *g, const char *key) {
        return g->key && key && streq(g->key, key);
}

int top_graph_update(TopGraph *g, const char *key, json_t *reply) {
        json_t *points = json_object_get(reply, "points"), *p;
        _cleanup_free_ uint64_t *current = NULL, *peak = NULL, *ts = NULL;
        uint64_t resolution = reply_count(reply, "resolution");
        char *k;
        size_t i, n;

        if (!json_is_array(points))
                return -EBADMSG;
        n = json_array_size(points);
        current = calloc(MAX(n, (size_t) 1), sizeof(uint64_t));
        peak = calloc(MAX(n, (size_t) 1), sizeof(uint64_t));
        ts = calloc(MAX(n, (size_t) 1), sizeof(uint64_t));
        k = strdup(key);
        if (!current || !peak || !ts || !k) {
                free(k);
                return -ENOMEM;
        }
        json_array_foreach(points, i, p) {
                current[i] = reply_count(p, "current");
                peak[i] = MAX(reply_count(p, "peak"), current[i]);
                ts[i] = reply_count(p, "timestampUsec");
        }
        bool unsupported = g->unsupported;
        top_graph_done(g);
        g->unsupported = unsupported;
        g->key = k;
        g->current = TAKE_PTR(current);
        g->peak = TAKE_PTR(peak);
        g->timestamp_usec = TAKE_PTR(ts);
        g->n = n;
        g->resolution_usec = (resolution ?: 1) * 1000000;
        /* The span asked for is in the key: 24 h at 1 min buckets, else 10 min or the sparkline's. */
        g->span_usec = (strstr(k, " (24 h)") ? 86400 : strstr(k, " (10 min)") ? 600 : TOP_GRAPH_SECONDS) * UINT64_C(1000000);
        return 0;
}

void top_chart_done(TopChart *c) {
        c->current = mfree_ptr(c->current);
        c->peak = mfree_ptr(c->peak);
}

/* The smallest of 1, 2, 5 times a power of ten that is at least v (a top value the axis reads well). */
static uint64_t round_up_125(uint64_t v) {
        for (uint64_t base = 1;; base *= 10) {
                if (v <= base)
                        return base;
                if (v <= 2 * base)
                        return 2 * base;
                if (v <= 5 * base)
                        return 5 * base;
                if (base > UINT64_MAX / 100)
                        return v;
        }
}

/* The round size at or above pages, in pages: 1, 2 or 5 times a power of ten of the largest binary unit
 * it holds (96 MiB: 100 MiB), so the axis reads as format_pages() prints. */
static uint64_t round_pages(uint64_t pages, uint64_t page_size) {
        uint64_t bytes = pages * page_size, unit = 1;

        while (unit <= UINT64_MAX / 1024 && bytes >= unit * 1024)
                unit *= 1024;
        uint64_t top = round_up_125((bytes + unit - 1) / unit);
        if (top > UINT64_MAX / unit)
                return pages;
        return MAX((top * unit + page_size - 1) / page_size, pages);
}

int top_graph_chart(const TopGraph *g, uint64_t page_size, size_t width, size_t height, TopChart *ret) {
        _cleanup_free_ uint32_t *current = NULL, *peak = NULL;
        _cleanup_free_ uint64_t *col_current = NULL, *col_peak = NULL;
        _cleanup_free_ bool *filled = NULL;
        uint64_t top = 0, end, span;

        if (width == 0 || height == 0)
                return -EINVAL;
        current = calloc(width, sizeof(uint32_t));
        peak = calloc(width, sizeof(uint32_t));
        col_current = calloc(width, sizeof(uint64_t));
        col_peak = calloc(width, sizeof(uint64_t));
        filled = calloc(width, sizeof(bool));
        if (!current || !peak || !col_current || !col_peak || !filled)
                return -ENOMEM;

        /* The plot ends with the newest bucket; each column covers span / width of time. */
        span = g->span_usec ?: TOP_GRAPH_SECONDS * UINT64_C(1000000);
        end = g->n > 0 ? g->timestamp_usec[g->n - 1] + (g->resolution_usec ?: 1000000) : 0;
        size_t peak_column = SIZE_MAX;
        for (size_t i = 0; i < g->n; i++) {
                uint64_t t = g->timestamp_usec[i];
                if (t + span < end || t >= end)
                        continue;
                size_t col = (size_t) ((t - (end - MIN(end, span))) * (unsigned __int128) width / span);
                col = MIN(col, width - 1);
                /* Points are oldest first: the last current in a column is its newest. */
                col_current[col] = g->current[i];
                col_peak[col] = MAX(col_peak[col], g->peak[i]);
                filled[col] = true;
                if (g->peak[i] > top) {
                        top = g->peak[i];
                        peak_column = col;
                }
        }
        top = round_pages(MAX(top, (uint64_t) 1), page_size ?: 4096);
        for (size_t c = 0; c < width; c++) {
                if (!filled[c]) {
                        current[c] = peak[c] = TOP_CHART_EMPTY;
                        continue;
                }
                uint64_t full = (uint64_t) height * 8;
                current[c] = (uint32_t) ((col_current[c] * (unsigned __int128) full + top / 2) / top);
                peak[c] = (uint32_t) ((col_peak[c] * (unsigned __int128) full + top / 2) / top);
                /* Anything above nothing shows as at least one eighth. */
                if (col_current[c] > 0 && current[c] == 0)
                        current[c] = 1;
                if (col_peak[c] > 0 && peak[c] == 0)
                        peak[c] = 1;
        }
        *ret = (TopChart) {
                .width = width, .height = height, .current = TAKE_PTR(current), .peak = TAKE_PTR(peak),
                .top_pages = top, .span_usec = span, .peak_column = peak_column,
        };
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
