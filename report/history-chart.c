/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format-text.h"
#include "format-util.h"
#include "history-chart.h"
#include "macro.h"
#include "reply.h"
#include "xml.h"

/* The plot inside the picture: room for the value labels on the left, the title above, the times below. */
#define LEFT_PX 80
#define RIGHT_PX 16
#define TOP_PX 40
#define BOTTOM_PX 36
#define TICKS 4

/* The round size at or above bytes: 1, 2 or 5 times a power of ten of the binary unit it is in. */
static uint64_t round_bytes(uint64_t bytes) {
        uint64_t unit = 1, v;

        while (unit <= UINT64_MAX / 1024 && bytes >= unit * 1024)
                unit *= 1024;
        v = (bytes + unit - 1) / unit;
        for (uint64_t base = 1; base <= 1000; base *= 10)
                for (unsigned k = 0; k < 3; k++) {
                        uint64_t step = base * (unsigned[]) { 1, 2, 5 }[k];
                        if (v <= step && step <= UINT64_MAX / unit)
                                return step * unit;
                }
        return bytes;
}

static void time_text(char *buf, size_t size, uint64_t usec, bool with_seconds) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, size, with_seconds ? "%H:%M:%S" : "%H:%M", &tm) == 0)
                (void) snprintf(buf, size, "?");
}

/* Ends a path: an area goes down to the axis and closes, a line just ends. */
static void close_path(FILE *f, bool area, double x, double bottom) {
        if (area)
                fprintf(f, " L%.1f,%.1f Z", x, bottom);
        fputs("\"/>\n", f);
}

int history_chart_write(const json_t *history, uint64_t page_size, const char *title, bool standalone, FILE *f) {
        json_t *points = reply_array(history, "points"), *p;
        uint64_t resolution_usec = (reply_count(history, "resolution") ?: 1) * UINT64_C(1000000);
        size_t n = json_array_size(points), i;
        const double plot_w = HISTORY_CHART_WIDTH_PX - LEFT_PX - RIGHT_PX;
        const double plot_h = HISTORY_CHART_HEIGHT_PX - TOP_PX - BOTTOM_PX;
        uint64_t first = 0, last = 0, top_bytes = 0;
        _cleanup_free_ char *heading = NULL;
        char text[FORMAT_BUFFER_MAX];
        int r;

        page_size = page_size ?: 4096;
        json_array_foreach(points, i, p) {
                uint64_t t = reply_count(p, "timestampUsec");
                if (i == 0)
                        first = t;
                last = t;
                top_bytes = MAX(top_bytes, MAX(reply_count(p, "peak"), reply_count(p, "current")) * page_size);
        }
        top_bytes = round_bytes(MAX(top_bytes, page_size));
        uint64_t end = n > 0 ? last + resolution_usec : 0, span = n > 0 ? end - first : 1;

        if (!title) {
                const char *what = reply_string(history, "what") ?: "total", *name = reply_string(history, "name");
                if (asprintf(&heading, "History of the %s%s%s, %" PRIu64 " s buckets", what, name && *name ? " " : "",
                             name ?: "", resolution_usec / 1000000) < 0)
                        return -ENOMEM;
                title = heading;
        }

        if (standalone)
                fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n", f);
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"history-chart\" viewBox=\"0 0 %d %d\" "
                "width=\"%d\" height=\"%d\" role=\"img\" data-points=\"%zu\" data-top-bytes=\"%" PRIu64 "\">\n",
                HISTORY_CHART_WIDTH_PX, HISTORY_CHART_HEIGHT_PX, HISTORY_CHART_WIDTH_PX, HISTORY_CHART_HEIGHT_PX, n,
                top_bytes);
        fputs("<style>\n"
              ".history-chart text { font-family: sans-serif; font-size: 12px; fill: #333; }\n"
              ".history-chart .title { font-size: 15px; font-weight: bold; }\n"
              ".history-chart .grid { stroke: #ccc; stroke-width: 1; }\n"
              ".history-chart .current { fill: #4a9a4a; fill-opacity: 0.6; stroke: #2d6b2d; stroke-width: 1; }\n"
              ".history-chart .peak { fill: none; stroke: #c8322d; stroke-width: 1.5; }\n"
              "</style>\n", f);
        fputs("<title>", f);
        r = xml_put_text(f, title);
        if (r < 0)
                return r;
        fputs("</title>\n<text class=\"title\" x=\"8\" y=\"20\">", f);
        r = xml_put_text(f, title);
        if (r < 0)
                return r;
        fputs("</text>\n", f);
        /* Legend, top right. */
        fprintf(f, "<rect x=\"%d\" y=\"10\" width=\"12\" height=\"12\" class=\"current\"/>"
                "<text x=\"%d\" y=\"20\">current</text>"
                "<line x1=\"%d\" y1=\"16\" x2=\"%d\" y2=\"16\" class=\"peak\"/><text x=\"%d\" y=\"20\">peak</text>\n",
                HISTORY_CHART_WIDTH_PX - 170, HISTORY_CHART_WIDTH_PX - 154, HISTORY_CHART_WIDTH_PX - 90,
                HISTORY_CHART_WIDTH_PX - 74, HISTORY_CHART_WIDTH_PX - 70);

        /* Value grid and labels. */
        for (int k = 0; k <= TICKS; k++) {
                double y = TOP_PX + plot_h - plot_h * k / TICKS;
                fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                        "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                        LEFT_PX, y, LEFT_PX + plot_w, y, LEFT_PX - 6, y + 4,
                        k == 0 ? "0" : format_bytes(text, sizeof(text), top_bytes / TICKS * (uint64_t) k));
        }
        if (n == 0) {
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">No samples yet</text>\n",
                        LEFT_PX + plot_w / 2, TOP_PX + plot_h / 2);
                fputs("</svg>\n", f);
                return ferror(f) ? -EIO : 0;
        }
        /* Time labels: the start, three between, the end. */
        for (int k = 0; k <= TICKS; k++) {
                char when[32];
                double x = LEFT_PX + plot_w * k / TICKS;
                time_text(when, sizeof(when), first + (uint64_t) ((double) span * k / TICKS), span < 600 * UINT64_C(1000000));
                fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\"/>"
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>\n", x, TOP_PX, x, TOP_PX + plot_h,
                        x, TOP_PX + plot_h + 18, k == 0 ? "start" : k == TICKS ? "end" : "middle", when);
        }

        /* The current pages as areas, one per run of buckets without a gap (the daemon did not sample in
         * a gap: nothing is drawn there); each bucket a step as wide as its time. The peak a line of
         * steps over it. */
        for (int pass = 0; pass < 2; pass++) {
                bool open = false;
                double x_prev = 0;
                uint64_t t_prev = 0;
                json_array_foreach(points, i, p) {
                        uint64_t t = reply_count(p, "timestampUsec");
                        uint64_t v = (pass == 0 ? reply_count(p, "current") :
                                      MAX(reply_count(p, "peak"), reply_count(p, "current"))) * page_size;
                        double x0 = LEFT_PX + plot_w * (double) (t - first) / (double) span;
                        double x1 = LEFT_PX + plot_w * (double) (t + resolution_usec - first) / (double) span;
                        double y = TOP_PX + plot_h - plot_h * (double) MIN(v, top_bytes) / (double) top_bytes;
                        bool gap = open && t > t_prev + resolution_usec;
                        if (gap) {
                                close_path(f, pass == 0, x_prev, TOP_PX + plot_h);
                                open = false;
                        }
                        if (!open) {
                                if (pass == 0)
                                        fprintf(f, "<path class=\"current\" d=\"M%.1f,%.1f L%.1f,%.1f", x0, TOP_PX + plot_h, x0, y);
                                else
                                        fprintf(f, "<path class=\"peak\" d=\"M%.1f,%.1f", x0, y);
                                open = true;
                        } else
                                fprintf(f, " L%.1f,%.1f", x0, y);
                        fprintf(f, " L%.1f,%.1f", x1, y);
                        x_prev = x1;
                        t_prev = t;
                }
                if (open)
                        close_path(f, pass == 0, x_prev, TOP_PX + plot_h);
        }
        fputs("</svg>\n", f);
        return ferror(f) ? -EIO : 0;
}
