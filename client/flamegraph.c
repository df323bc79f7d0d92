/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "flamegraph.h"
#include "format.h"
#include "macro.h"
#include "reply.h"

#define FONT_PX 12
/* Average advance of the font's glyphs, to fit labels into boxes (as flamegraph.pl estimates it). */
#define CHAR_PX (FONT_PX * 0.59)
#define TITLE_PX 44
#define LEGEND_MODULES_MAX 12

typedef struct Flamegraph {
        FILE *f;
        uint64_t total_pages;
        uint64_t page_size;
        double px_per_page;
        unsigned height_px;
        unsigned max_depth;
        char **modules;         /* owned: module names in order of appearance, for the legend */
        size_t n_modules;
} Flamegraph;

/* XML text: control characters (invalid in XML 1.0) escaped as on a terminal (format_sanitize()), then
 * markup characters as entities. */
static int put_xml(FILE *f, const char *text) {
        _cleanup_free_ char *clean = format_sanitize(text);

        if (!clean)
                return -ENOMEM;
        for (const char *s = clean; *s; s++)
                switch (*s) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&apos;", f);
                        break;
                default:
                        fputc(*s, f);
                }
        return 0;
}

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

static int write_frame(Flamegraph *g, const json_t *node, unsigned depth, double x) {
        const char *frame = reply_string(node, "frame") ?: "[unknown]", *module = reply_string(node, "module");
        uint64_t pages = reply_count(node, "currentPages");
        int64_t peak = reply_node_peak(node);
        double width = (double) pages * g->px_per_page;
        double y = g->height_px - FLAMEGRAPH_MARGIN_PX - (depth + 1.0) * FLAMEGRAPH_FRAME_PX;
        char color[32];
        json_t *child;
        size_t i;
        int r;

        r = remember_module(g, module);
        if (r < 0)
                return r;
        fprintf(g->f, "<g class=\"frame\" data-pages=\"%" PRIu64 "\">\n<title>", pages);
        r = put_xml(g->f, frame);
        if (r < 0)
                return r;
        if (module) {
                fputs(" (", g->f);
                r = put_xml(g->f, module);
                if (r < 0)
                        return r;
                fputc(')', g->f);
        }
        fprintf(g->f, ": %" PRIu64 " pages (%.2f%%), peak ", pages,
                g->total_pages > 0 ? 100.0 * (double) pages / (double) g->total_pages : 0.0);
        if (peak >= 0)
                fprintf(g->f, "%" PRIi64 "</title>\n", peak);
        else
                fputs("unknown</title>\n", g->f);

        frame_color(frame, module, color, sizeof(color));
        fprintf(g->f, "<rect x=\"%.4f\" y=\"%.1f\" width=\"%.4f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>\n",
                x, y, width, FLAMEGRAPH_FRAME_PX - 1, color);

        /* As much of the label as fits; nothing if not even three characters do. */
        size_t fit = width > 6 ? (size_t) ((width - 6) / CHAR_PX) : 0;
        if (fit >= 3) {
                _cleanup_free_ char *label = reply_frame_label(node), *clean = NULL, *cut = NULL;
                /* Cut what will be shown, escapes included. */
                if (!label || !(clean = format_sanitize(label)) || !(cut = format_ellipsize(clean, fit)))
                        return -ENOMEM;
                fprintf(g->f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FLAMEGRAPH_FRAME_PX - 4.5);
                r = put_xml(g->f, cut);
                if (r < 0)
                        return r;
                fputs("</text>\n", g->f);
        }

        /* Children left to right in the order given (biggest first), each as wide as its pages. */
        uint64_t before = 0;
        json_array_foreach(reply_array(node, "children"), i, child) {
                uint64_t child_pages = reply_count(child, "currentPages");
                /* Children never hold more than their parent; stop at what an edited file might claim. */
                if (child_pages > pages - before)
                        break;
                if ((double) child_pages * g->px_per_page >= FLAMEGRAPH_MIN_BOX_PX) {
                        r = write_frame(g, child, depth + 1, x + (double) before * g->px_per_page);
                        if (r < 0)
                                return r;
                }
                before += child_pages;
        }
        fputs("</g>\n", g->f);
        return 0;
}

int flamegraph_write(const json_t *root, uint64_t page_size, FILE *f) {
        Flamegraph g = {
                .f = f,
                .total_pages = reply_count(root, "currentPages"),
                .page_size = page_size ?: 4096,
        };
        const double span = FLAMEGRAPH_WIDTH_PX - 2 * FLAMEGRAPH_MARGIN_PX;
        char size[FORMAT_BUFFER_MAX];
        int r;

        assert(root);
        assert(f);

        g.max_depth = tree_depth(root, 0);
        g.height_px = TITLE_PX + (g.max_depth + 1) * FLAMEGRAPH_FRAME_PX + 2 * FLAMEGRAPH_MARGIN_PX + 20;
        g.px_per_page = g.total_pages > 0 ? span / (double) g.total_pages : 0.0;

        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%u\" "
                "viewBox=\"0 0 %d %u\" data-total-pages=\"%" PRIu64 "\" data-px-per-page=\"%.9g\">\n",
                FLAMEGRAPH_WIDTH_PX, g.height_px, FLAMEGRAPH_WIDTH_PX, g.height_px, g.total_pages, g.px_per_page);
        fputs("<style>\n"
              "text { font-family: monospace; font-size: 12px; fill: #000; pointer-events: none; }\n"
              ".frame rect:hover { stroke: #000; stroke-width: 0.5; }\n"
              ".title { font-size: 17px; }\n"
              "</style>\n", f);
        fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%u\" fill=\"#f8f8f4\"/>\n", FLAMEGRAPH_WIDTH_PX,
                g.height_px);
        fprintf(f, "<text class=\"title\" x=\"%d\" y=\"24\">Page allocations: %" PRIu64 " pages (%s); "
                "box width = pages, hover for details</text>\n", FLAMEGRAPH_MARGIN_PX, g.total_pages,
                format_pages(size, sizeof(size), g.total_pages, g.page_size));

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
                        r = put_xml(f, g.modules[i]);
                        fputs("</text>\n", f);
                        x += 13 + (double) format_text_width(g.modules[i]) * CHAR_PX + 12;
                }
                fputs("</g>\n", f);
        }
        fputs("</svg>\n", f);

        for (size_t i = 0; i < g.n_modules; i++)
                free(g.modules[i]);
        free(g.modules);
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}
