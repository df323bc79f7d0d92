/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flamegraph.h"
#include "frame-text.h"
#include "format-text.h"
#include "format-util.h"
#include "macro.h"
#include "reply.h"
#include "xml.h"

#define FONT_PX 12
/* Average advance of the font's glyphs, to fit labels into boxes (as flamegraph.pl estimates it). */
#define CHAR_PX (FONT_PX * 0.59)
#define TITLE_PX 44
/* The line under the frames: zoom and search controls, what a search matched. */
#define BOTTOM_PX 20
#define LEGEND_MODULES_MAX 12
/* Levels merged below the root; the daemon sends at most 255. */
#define MERGE_DEPTH_MAX 255
#define SMALL_FRAMES_COLOR "rgb(190,190,190)"

/* client/flamegraph.js, embedded at build time (varlink-embed.py). */
extern const char flamegraph_script[];

typedef struct Flamegraph {
        FILE *f;
        uint64_t total_pages;   /* or bytes: unit says */
        const char *unit;       /* "pages", or "bytes" for a heap (FlamegraphInfo.bytes) */
        double px_per_page;
        unsigned height_px;
        unsigned max_depth;
        char **modules;         /* owned: module names in order of appearance, for the legend */
        size_t n_modules;
} Flamegraph;

/* FNV-1a: a stable hash so a module keeps its color from one graph to the next. */
static uint32_t hash_string(const char *s) {
        uint32_t h = 2166136261u;

        for (; s && *s; s++) {
                h ^= (unsigned char) *s;
                h *= 16777619u;
        }
        return h;
}

/* One RGB channel of an HSL color; p, q as in the usual HSL-to-RGB conversion, t the shifted hue (turns). */
static double hsl_channel(double p, double q, double t) {
        if (t < 0)
                t += 1;
        if (t > 1)
                t -= 1;
        if (t < 1.0 / 6)
                return p + (q - p) * 6 * t;
        if (t < 1.0 / 2)
                return q;
        if (t < 2.0 / 3)
                return p + (q - p) * (2.0 / 3 - t) * 6;
        return p;
}

/* The kernel image in flame colors varied per frame; each module in a hue of its own, away from them. */
static void frame_color(const char *frame, const char *module, char *buf, size_t size) {
        if (!module) {
                uint32_t h = hash_string(frame);
                (void) snprintf(buf, size, "rgb(%u,%u,%u)", 205 + h % 50, 90 + (h >> 8) % 110, 40 + (h >> 16) % 40);
                return;
        }
        /* Hue 90..330 degrees (greens, blues, purples), saturation 55%, lightness 62%. */
        double h = (90.0 + (double) (hash_string(module) % 240)) / 360.0, s = 0.55, l = 0.62;
        double q = l < 0.5 ? l * (1 + s) : l + s - l * s, p = 2 * l - q;
        (void) snprintf(buf, size, "rgb(%d,%d,%d)", (int) (hsl_channel(p, q, h + 1.0 / 3) * 255 + 0.5),
                        (int) (hsl_channel(p, q, h) * 255 + 0.5), (int) (hsl_channel(p, q, h - 1.0 / 3) * 255 + 0.5));
}

/* ---- Merging frames by function ---------------------------------------------------------------------- */

static int add_count(json_t *into, const json_t *from, const char *key) {
        uint64_t sum = reply_count(into, key) + reply_count(from, key);

        return json_object_set_new(into, key, json_integer((json_int_t) sum));
}

/* Adds node's counts to the merged node into; its children go to pending, to be merged later. */
static int merge_counts(json_t *into, const json_t *node) {
        int64_t a = reply_node_peak(into), b = reply_node_peak(node);
        json_t *address = json_object_get(into, "address");

        if (add_count(into, node, "currentPages") < 0 || add_count(into, node, "truncatedChildren") < 0 ||
            json_object_set_new(into, "mergedFrames",
                                json_integer((json_int_t) reply_count(into, "mergedFrames") + 1)) < 0)
                return -ENOMEM;
        if (json_object_set_new(into, "peakPages", a >= 0 && b >= 0 ? json_integer((json_int_t) (a + b)) :
                                json_null()) < 0)
                return -ENOMEM;
        if (address && !json_equal(address, json_object_get(node, "address")) &&
            json_object_set_new(into, "address", json_null()) < 0)
                return -ENOMEM;
        return 0;
}

static bool same_function(const json_t *merged, const char *function, const json_t *module) {
        json_t *m = json_object_get(merged, "module");
        bool no_m = !m || json_is_null(m), no_module = !module || json_is_null(module);

        if (!streq(reply_string(merged, "frame") ?: "", function))
                return false;
        return no_m || no_module ? no_m && no_module : json_equal(m, module);
}

/* The nodes of children (borrowed) merged by function, each with its own merged children. */
static json_t *merge_level(json_t *children, unsigned depth) {
        json_auto_t *out = json_array(), *pending = json_array();
        json_t *child, *grandchild;
        size_t i, j, k;

        if (!out || !pending)
                return NULL;
        json_array_foreach(children, i, child) {
                _cleanup_free_ char *function = NULL;
                json_t *module = json_object_get(child, "module"), *merged = NULL, *list = NULL;

                if (!json_is_object(child))
                        continue;
                function = frame_text_function_name(reply_string(child, "frame") ?: "[unknown]");
                if (!function)
                        return NULL;
                json_array_foreach(out, k, merged)
                        if (same_function(merged, function, module)) {
                                list = json_array_get(pending, k);
                                break;
                        }
                if (list) {
                        if (merge_counts(merged, child) < 0)
                                return NULL;
                } else {
                        /* A shallow copy: its children are replaced below. */
                        json_auto_t *copy = json_copy(child);
                        if (!copy || json_object_set_new(copy, "frame", json_string(function)) < 0 ||
                            json_object_set_new(copy, "mergedFrames", json_integer(1)) < 0 ||
                            json_array_append(out, copy) < 0 || json_array_append_new(pending, json_array()) < 0)
                                return NULL;
                        list = json_array_get(pending, json_array_size(pending) - 1);
                        if (!list)
                                return NULL;
                }
                json_array_foreach(reply_array(child, "children"), j, grandchild)
                        if (json_array_append(list, grandchild) < 0)
                                return NULL;
        }
        json_array_foreach(out, k, child) {
                json_t *merged = depth < MERGE_DEPTH_MAX ? merge_level(json_array_get(pending, k), depth + 1) :
                                                           json_array();
                if (!merged || json_object_set_new(child, "children", merged) < 0)
                        return NULL;
        }
        return TAKE_PTR(out);
}

json_t *flamegraph_merge_functions(const json_t *node) {
        json_auto_t *copy = json_copy((json_t *) node);
        json_t *children;

        if (!copy)
                return NULL;
        children = merge_level(reply_array(node, "children"), 1);
        if (!children || json_object_set_new(copy, "children", children) < 0)
                return NULL;
        return TAKE_PTR(copy);
}

/* ---- Drawing ------------------------------------------------------------------------------------------ */

static unsigned tree_depth(const json_t *node, unsigned depth) {
        unsigned max = depth;
        json_t *child;
        size_t i;

        json_array_foreach(reply_array(node, "children"), i, child)
                max = MAX(max, tree_depth(child, depth + 1));
        return max;
}

static int remember_module(Flamegraph *g, const char *module) {
        if (!module)
                return 0;
        for (size_t i = 0; i < g->n_modules; i++)
                if (streq(g->modules[i], module))
                        return 0;
        char **m = reallocarray(g->modules, g->n_modules + 1, sizeof(char *));
        if (!m)
                return -ENOMEM;
        g->modules = m;
        g->modules[g->n_modules] = strdup(module);
        if (!g->modules[g->n_modules])
                return -ENOMEM;
        g->n_modules++;
        return 0;
}

typedef struct Box {
        const char *label;      /* "frame [module]", not yet sanitized */
        const char *color;
        uint64_t pages;
        int64_t peak;           /* -1: unknown */
        uint64_t merged;        /* call sites merged into this frame (0, 1: none) */
        unsigned depth;
        double x;
} Box;

/* Opens a frame's <g> with its tooltip, box and label; the caller writes its children and closes it. */
static int open_box(Flamegraph *g, const Box *b) {
        _cleanup_free_ char *clean = format_sanitize(b->label), *cut = NULL;
        double width = (double) b->pages * g->px_per_page;
        double y = g->height_px - FLAMEGRAPH_MARGIN_PX - BOTTOM_PX - (b->depth + 1.0) * FLAMEGRAPH_FRAME_PX;
        int r;

        if (!clean)
                return -ENOMEM;
        fprintf(g->f, "<g class=\"frame\" data-pages=\"%" PRIu64 "\" data-name=\"", b->pages);
        r = xml_put_text(g->f, clean);
        if (r < 0)
                return r;
        fputs("\">\n<title>", g->f);
        r = xml_put_text(g->f, clean);
        if (r < 0)
                return r;
        fprintf(g->f, ": %" PRIu64 " %s (%.2f%%), peak ", b->pages, g->unit,
                g->total_pages > 0 ? 100.0 * (double) b->pages / (double) g->total_pages : 0.0);
        if (b->peak < 0)
                fputs("unknown", g->f);
        else if (b->merged > 1)
                fprintf(g->f, "at most %" PRIi64 " (%" PRIu64 " call sites)", b->peak, b->merged);
        else
                fprintf(g->f, "%" PRIi64, b->peak);
        fputs("</title>\n", g->f);

        fprintf(g->f, "<rect x=\"%.4f\" y=\"%.1f\" width=\"%.4f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>\n",
                b->x, y, width, FLAMEGRAPH_FRAME_PX - 1, b->color);

        /* As much of the label as fits; nothing if not even three characters do. The script refits it
         * on zoom, so the element is always there. */
        size_t fit = width > 6 ? (size_t) ((width - 6) / CHAR_PX) : 0;
        cut = format_ellipsize(clean, fit >= 3 ? fit : 0);
        if (!cut)
                return -ENOMEM;
        fprintf(g->f, "<text x=\"%.2f\" y=\"%.1f\">", b->x + 3, y + FLAMEGRAPH_FRAME_PX - 4.5);
        r = xml_put_text(g->f, cut);
        if (r < 0)
                return r;
        fputs("</text>\n", g->f);
        return 0;
}

static int write_frame(Flamegraph *g, const json_t *node, unsigned depth, double x) {
        const char *frame = reply_string(node, "frame") ?: "[unknown]", *module = reply_string(node, "module");
        _cleanup_free_ char *label = reply_frame_label(node);
        uint64_t pages = reply_count(node, "currentPages");
        char color[32];
        json_t *child;
        size_t i;
        int r;

        if (!label)
                return -ENOMEM;
        r = remember_module(g, module);
        if (r < 0)
                return r;
        frame_color(frame, module, color, sizeof(color));
        r = open_box(g, &(Box) {
                .label = label,
                .color = color,
                .pages = pages,
                .peak = reply_node_peak(node),
                .merged = reply_count(node, "mergedFrames"),
                .depth = depth,
                .x = x,
        });
        if (r < 0)
                return r;

        /* Children left to right in the order given (biggest first), each as wide as its pages. Those
         * narrower than FLAMEGRAPH_MIN_BOX_PX become one box after the others, or nothing. */
        uint64_t drawn = 0, taken = 0, small_pages = 0;
        size_t n_small = 0;
        json_array_foreach(reply_array(node, "children"), i, child) {
                uint64_t child_pages = reply_count(child, "currentPages");
                /* Children never hold more than their parent; stop at what an edited file might claim. */
                if (child_pages > pages - taken)
                        break;
                taken += child_pages;
                if (child_pages == 0)
                        continue;
                if ((double) child_pages * g->px_per_page < FLAMEGRAPH_MIN_BOX_PX) {
                        n_small++;
                        small_pages += child_pages;
                        continue;
                }
                r = write_frame(g, child, depth + 1, x + (double) drawn * g->px_per_page);
                if (r < 0)
                        return r;
                drawn += child_pages;
        }
        if (n_small > 0 && (double) small_pages * g->px_per_page >= FLAMEGRAPH_MIN_BOX_PX) {
                _cleanup_free_ char *more = NULL;
                if (asprintf(&more, "[%zu smaller frames]", n_small) < 0)
                        return -ENOMEM;
                r = open_box(g, &(Box) {
                        .label = more,
                        .color = SMALL_FRAMES_COLOR,
                        .pages = small_pages,
                        .peak = -1,
                        .depth = depth + 1,
                        .x = x + (double) drawn * g->px_per_page,
                });
                if (r < 0)
                        return r;
                fputs("</g>\n", g->f);
        }
        fputs("</g>\n", g->f);
        return 0;
}

/* "Page allocations on HOST at 2026-11-23 14:48:03 UTC: N pages (SIZE)", parts left out when unknown. */
static int write_title(Flamegraph *g, const FlamegraphInfo *info) {
        char size[FORMAT_BUFFER_MAX];
        int r;

        fprintf(g->f, "<text class=\"title\" x=\"%d\" y=\"24\">%s", FLAMEGRAPH_MARGIN_PX,
                info->bytes ? "User-space heap at its maximum" : "Page allocations");
        if (info->host) {
                _cleanup_free_ char *host = format_sanitize(info->host);
                if (!host)
                        return -ENOMEM;
                fputs(" on ", g->f);
                r = xml_put_text(g->f, host);
                if (r < 0)
                        return r;
        }
        if (info->realtime_usec > 0) {
                time_t t = (time_t) (info->realtime_usec / 1000000);
                struct tm tm;
                char when[64];
                if (gmtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm) > 0)
                        fprintf(g->f, " at %s", when);
        }
        if (info->bytes)
                fprintf(g->f, ": %" PRIu64 " bytes (%s)</text>\n", g->total_pages,
                        format_bytes(size, sizeof(size), g->total_pages));
        else
                fprintf(g->f, ": %" PRIu64 " pages (%s)</text>\n", g->total_pages,
                        format_pages(size, sizeof(size), g->total_pages, info->page_size ?: 4096));
        return 0;
}

int flamegraph_write(const json_t *root, const FlamegraphInfo *info, FILE *f) {
        Flamegraph g = {
                .f = f,
                .total_pages = reply_count(root, "currentPages"),
                .unit = info->bytes ? "bytes" : "pages",
        };
        const double span = FLAMEGRAPH_WIDTH_PX - 2 * FLAMEGRAPH_MARGIN_PX;
        int r;

        assert(root);
        assert(info);
        assert(f);

        g.max_depth = tree_depth(root, 0);
        g.height_px = TITLE_PX + (g.max_depth + 1) * FLAMEGRAPH_FRAME_PX + 2 * FLAMEGRAPH_MARGIN_PX + BOTTOM_PX;
        g.px_per_page = g.total_pages > 0 ? span / (double) g.total_pages : 0.0;

        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%u\" "
                "viewBox=\"0 0 %d %u\" data-total-pages=\"%" PRIu64 "\" data-px-per-page=\"%.9g\" "
                "data-min-box-px=\"%g\" data-margin-px=\"%d\" data-span-px=\"%g\" data-char-px=\"%g\">\n",
                FLAMEGRAPH_WIDTH_PX, g.height_px, FLAMEGRAPH_WIDTH_PX, g.height_px, g.total_pages, g.px_per_page,
                FLAMEGRAPH_MIN_BOX_PX, FLAMEGRAPH_MARGIN_PX, span, CHAR_PX);
        fputs("<style>\n"
              "text { font-family: monospace; font-size: 12px; fill: #000; pointer-events: none; }\n"
              ".frame rect { cursor: pointer; }\n"
              ".frame rect:hover { stroke: #000; stroke-width: 0.5; }\n"
              ".frame.match > rect { fill: rgb(230,0,230); }\n"
              ".frame.ancestor > rect { opacity: 0.5; }\n"
              ".title { font-size: 17px; }\n"
              ".button { fill: #225; text-decoration: underline; cursor: pointer; pointer-events: all; }\n"
              "</style>\n", f);
        fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%u\" fill=\"#f8f8f4\"/>\n", FLAMEGRAPH_WIDTH_PX,
                g.height_px);
        r = write_title(&g, info);
        if (r >= 0)
                r = write_frame(&g, root, 0, FLAMEGRAPH_MARGIN_PX);
        if (r >= 0 && g.n_modules > 0) {
                /* Legend: the modules' colors, in the line under the title. */
                double x = FLAMEGRAPH_MARGIN_PX;
                fputs("<g class=\"legend\">\n", f);
                for (size_t i = 0; i < g.n_modules && i < LEGEND_MODULES_MAX && r >= 0; i++) {
                        char color[32];
                        frame_color("", g.modules[i], color, sizeof(color));
                        fprintf(f, "<rect x=\"%.1f\" y=\"30\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                                "<text x=\"%.1f\" y=\"39\">", x, color, x + 13);
                        r = xml_put_text(f, g.modules[i]);
                        fputs("</text>\n", f);
                        x += 13 + (double) format_text_width(g.modules[i]) * CHAR_PX + 12;
                }
                fputs("</g>\n", f);
        }
        if (r >= 0) {
                /* Controls for the script; without it they are plain text. */
                unsigned y = g.height_px - FLAMEGRAPH_MARGIN_PX;
                int right = FLAMEGRAPH_WIDTH_PX - FLAMEGRAPH_MARGIN_PX;
                fprintf(f, "<text id=\"hint\" x=\"%d\" y=\"%u\">Click a box to zoom in; hover for details.</text>\n",
                        FLAMEGRAPH_MARGIN_PX, y);
                fprintf(f, "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"%u\" style=\"display:none\">"
                        "Reset zoom</text>\n", FLAMEGRAPH_MARGIN_PX, y);
                fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"></text>\n", right - 110, y);
                fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"%u\" text-anchor=\"end\">Search</text>\n",
                        right, y);
                fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", flamegraph_script);
        }
        fputs("</svg>\n", f);

        for (size_t i = 0; i < g.n_modules; i++)
                free(g.modules[i]);
        free(g.modules);
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}
