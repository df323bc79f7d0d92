/* SPDX-License-Identifier: MIT */

/*
 * The html format: one self-contained page of a snapshot document, to open offline or send as one
 * file. Everything is inline (styles, the table-sorting script, the history chart and the flame graph
 * as SVG with its zoom script), and a Content-Security-Policy of default-src 'none' keeps the page from
 * loading anything. Sections: summary, the heaps of a recording (memstrackctl record's), history, tasks,
 * units, modules (tables sortable by a click on a column), the flame graph, slab call sites and caches,
 * leaks, OOM kills; a section the document has no
 * data for says so. Print and narrow screens get their own layout (@media rules). Its JSON form is the
 * page as one string.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format-text.h"
#include "format-util.h"
#include "heap-select.h"
#include "heap-sites.h"
#include "history-chart.h"
#include "macro.h"
#include "reply.h"
#include "report-format.h"
#include "xml.h"

/* Rows per table unless top=N says otherwise; the table says how many more there are. */
#define HTML_ROWS 100

static const char page_style[] =
        "body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1250px; padding: 0 1em 2em;"
        " color: #222; background: #fff; }\n"
        "h1 { font-size: 1.5em; margin: 0.8em 0 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em;"
        " border-bottom: 1px solid #ccc; }\n"
        "nav { position: sticky; top: 0; background: #f4f4f0; padding: 0.4em 0.6em; border-bottom: 1px solid #ddd;"
        " z-index: 1; display: flex; flex-wrap: wrap; }\n"
        "nav a { margin-right: 0.9em; color: #225; white-space: nowrap; }\n"
        ".meta { color: #555; }\n"
        "dl.summary { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1.2em; }\n"
        "dl.summary dt { font-weight: bold; } dl.summary dd { margin: 0; }\n"
        ".scroll { overflow-x: auto; }\n"
        "table { border-collapse: collapse; font-size: 0.9em; }\n"
        "th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }\n"
        "td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }\n"
        "th { background: #eef; position: relative; }\n"
        "table.sortable th { cursor: pointer; user-select: none; }\n"
        "th[aria-sort=ascending]::after { content: ' \\25B2'; } th[aria-sort=descending]::after { content: ' \\25BC'; }\n"
        "tr.exited td { color: #778; }\n"
        "td.frames { font-family: monospace; font-size: 0.85em; }\n"
        "td.cmd { max-width: 36em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }\n"
        "svg { max-width: 100%; height: auto; }\n"
        ".none { color: #777; font-style: italic; }\n"
        "svg.heap-chart { cursor: crosshair; border: 1px solid #dde; background: #fbfbff; }\n"
        "svg.heap-chart polyline { fill: none; stroke: #336; stroke-width: 1.5; }\n"
        "svg.heap-chart line.mark { stroke: #c33; stroke-width: 1; }\n"
        "@media (max-width: 700px) { body { padding: 0 0.4em; } th, td { padding: 0.15em 0.3em; }"
        " td.frames { word-break: break-all; } }\n"
        "@media print { nav, #flamegraph .hint { display: none; } body { max-width: none; } h2 { break-after: avoid; }"
        " tr { break-inside: avoid; } .scroll { overflow: visible; } td.cmd { white-space: normal; max-width: none; } a { color: inherit; text-decoration: none; } }\n";

/* Sorting: a click on a column header orders the rows by it (numbers by data-v, text otherwise),
 * a second click the other way round. */
static const char page_script[] =
        "(function () {\n"
        "  \"use strict\";\n"
        "  document.querySelectorAll(\"table.sortable\").forEach(function (table) {\n"
        "    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);\n"
        "    heads.forEach(function (th, col) {\n"
        "      th.addEventListener(\"click\", function () {\n"
        "        var down = th.getAttribute(\"aria-sort\") !== \"descending\";\n"
        "        heads.forEach(function (h) { h.removeAttribute(\"aria-sort\"); });\n"
        "        th.setAttribute(\"aria-sort\", down ? \"descending\" : \"ascending\");\n"
        "        var body = table.tBodies[0];\n"
        "        var rows = Array.prototype.slice.call(body.rows);\n"
        "        var numeric = th.classList.contains(\"n\");\n"
        "        rows.sort(function (a, b) {\n"
        "          var x = a.cells[col], y = b.cells[col], c;\n"
        "          if (numeric)\n"
        "            c = Number(x.getAttribute(\"data-v\")) - Number(y.getAttribute(\"data-v\"));\n"
        "          else\n"
        "            c = x.textContent.localeCompare(y.textContent);\n"
        "          return down ? -c : c;\n"
        "        });\n"
        "        rows.forEach(function (r) { body.appendChild(r); });\n"
        "      });\n"
        "    });\n"
        "  });\n"
        /* A recorded heap's chart of live bytes: a click picks a moment, and the call sites then live are
         * summed from the heap's timeline (cells [bucket, frame, allocBytes, allocBlocks, freeBytes,
         * freeBlocks], each frame's call site from "sites"), as report --at does. */
        "  document.querySelectorAll(\"div.heap-moment\").forEach(function (box) {\n"
        "    var data = JSON.parse(box.querySelector(\"script\").textContent);\n"
        "    var svg = box.querySelector(\"svg\"), mark = svg.querySelector(\"line.mark\");\n"
        "    var body = box.querySelector(\"tbody\"), caption = box.querySelector(\".moment\");\n"
        "    function size(b) {\n"
        "      var u = [\"B\", \"KiB\", \"MiB\", \"GiB\", \"TiB\"], i = 0;\n"
        "      while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }\n"
        "      return (i ? b.toFixed(1) : b) + \" \" + u[i];\n"
        "    }\n"
        "    function pick(usec) {\n"
        "      var live = {}, total = 0;\n"
        "      data.cells.forEach(function (c) {\n"
        "        if (c[0] * data.bucketUsec > usec) return;\n"
        "        var s = data.sites[String(c[1])], d = c[2] - c[4];\n"
        "        if (s === undefined) return;\n"
        "        live[s] = (live[s] || 0) + d; total += d;\n"
        "      });\n"
        "      var rows = Object.keys(live).filter(function (s) { return live[s] > 0; });\n"
        "      rows.sort(function (a, b) { return live[b] - live[a]; });\n"
        "      body.textContent = \"\";\n"
        "      rows.slice(0, data.rows).forEach(function (s) {\n"
        "        var tr = document.createElement(\"tr\"), a = document.createElement(\"td\"), b = document.createElement(\"td\");\n"
        "        a.className = \"frames\"; a.textContent = data.labels[s];\n"
        "        b.className = \"n\"; b.textContent = size(live[s]); b.setAttribute(\"data-v\", live[s]);\n"
        "        tr.appendChild(a); tr.appendChild(b); body.appendChild(tr);\n"
        "      });\n"
        "      var end = (Math.floor(usec / data.bucketUsec) + 1) * data.bucketUsec;\n"
        "      caption.textContent = \"Call sites live at \" + (end / 1e6).toFixed(2) + \" s: \" + size(Math.max(total, 0)) +\n"
        "        (data.exact ? \"\" : \" (estimates from the sampled stacks)\");\n"
        "    }\n"
        "    svg.addEventListener(\"click\", function (e) {\n"
        "      var r = svg.getBoundingClientRect(), x = (e.clientX - r.left) / r.width * data.width;\n"
        "      mark.setAttribute(\"x1\", x); mark.setAttribute(\"x2\", x);\n"
        "      pick(Math.max(0, x / data.width * data.lifeUsec));\n"
        "    });\n"
        "  });\n"
        "})();\n";

static void put(FILE *f, const char *text) {
        (void) xml_put_text(f, text);
}

static void cell_text(FILE *f, const char *text) {
        fputs("<td>", f);
        put(f, text ?: "");
        fputs("</td>", f);
}

static void cell_count(FILE *f, uint64_t v) {
        fprintf(f, "<td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", v, v);
}

static void cell_bytes(FILE *f, uint64_t bytes) {
        char buf[FORMAT_BUFFER_MAX];
        fprintf(f, "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>", bytes, format_bytes(buf, sizeof(buf), bytes));
}

/* A table's head: numeric columns (a leading '#' in the name) align right and sort as numbers. */
static void table_start(FILE *f, const char *id, const char *const *columns) {
        fprintf(f, "<div class=\"scroll\"><table class=\"sortable\" id=\"%s\"><thead><tr>", id);
        for (size_t i = 0; columns[i]; i++) {
                bool numeric = columns[i][0] == '#';
                fprintf(f, "<th%s>%s</th>", numeric ? " class=\"n\"" : "", columns[i] + numeric);
        }
        fputs("</tr></thead><tbody>\n", f);
}

static void table_end(FILE *f, size_t shown, size_t total) {
        fputs("</tbody></table></div>\n", f);
        if (total > shown)
                fprintf(f, "<p class=\"meta\">%zu more not shown (the biggest %zu are).</p>\n", total - shown, shown);
}

static void none(FILE *f, const char *why) {
        fputs("<p class=\"none\">", f);
        put(f, why);
        fputs("</p>\n", f);
}

static size_t rows_for(const ReportOptions *o) {
        return o->top > 0 ? o->top : HTML_ROWS;
}

static void section_summary(FILE *f, json_t *doc, uint64_t page_size) {
        json_t *s = reply_object(doc, "status");
        char a[FORMAT_BUFFER_MAX], b[FORMAT_BUFFER_MAX];

        fputs("<section id=\"summary\"><h2>Summary</h2>\n<dl class=\"summary\">\n", f);
        fprintf(f, "<dt>Tracked now</dt><dd>%s (%" PRIu64 " pages)</dd>\n",
                format_pages(a, sizeof(a), reply_count(s, "trackedPages"), page_size), reply_count(s, "trackedPages"));
        fprintf(f, "<dt>Peak</dt><dd>%s (%" PRIu64 " pages)</dd>\n",
                format_pages(a, sizeof(a), reply_count(s, "peakTrackedPages"), page_size),
                reply_count(s, "peakTrackedPages"));
        fprintf(f, "<dt>Tasks</dt><dd>%zu</dd>\n", json_array_size(reply_array(reply_object(doc, "tasks"), "tasks")));
        fprintf(f, "<dt>Events</dt><dd>%" PRIu64 " (%.0f/s), %" PRIu64 " lost</dd>\n", reply_count(s, "events"),
                reply_double(s, "eventsPerSecond", 0), reply_count(s, "lostEvents"));
        uint64_t up = reply_count(s, "uptimeUsec") / 1000000;
        (void) snprintf(b, sizeof(b), "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", up / 3600, up / 60 % 60, up % 60);
        fprintf(f, "<dt>Traced for</dt><dd>%s</dd>\n", b);
        fputs("<dt>Source</dt><dd>", f);
        put(f, reply_string(s, "backend") ?: "?");
        fputs(", memstrackd ", f);
        put(f, reply_string(s, "version") ?: "?");
        fputs("</dd>\n", f);
        if (reply_count(s, "stackSampleInterval") > 1)
                fprintf(f, "<dt>Stacks</dt><dd>sampled 1 in %" PRIu64 " pages, scaled</dd>\n",
                        reply_count(s, "stackSampleInterval"));
        fputs("</dl></section>\n", f);
}

static void section_history(FILE *f, json_t *doc, uint64_t page_size) {
        json_t *h = reply_object(doc, "history");

        fputs("<section id=\"history\"><h2>History</h2>\n", f);
        if (!h)
                none(f, "This snapshot has no history: memstrackd's own --report has none, nor a snapshot "
                        "from a memstrackd without History or a file written before it.");
        else
                (void) history_chart_write(h, page_size, "Tracked pages over time", false, f);
        fputs("</section>\n", f);
}

static void section_tasks(FILE *f, json_t *doc, const ReportOptions *o, uint64_t page_size) {
        static const char *const columns[] = { "#PID", "Name", "#Current", "#Peak", "#Allocs", "#Frees", "State",
                                                "Command", NULL };
        json_t *tasks = reply_array(reply_object(doc, "tasks"), "tasks"), *t;
        size_t i, shown = 0;

        fputs("<section id=\"tasks\"><h2>Tasks</h2>\n", f);
        table_start(f, "tasks-table", columns);
        json_array_foreach(tasks, i, t) {
                if (shown >= rows_for(o))
                        break;
                bool exited = reply_bool(t, "exited", false);
                fprintf(f, "<tr%s>", exited ? " class=\"exited\"" : "");
                cell_count(f, (uint64_t) MAX(reply_int(t, "pid", 0), (int64_t) 0));
                cell_text(f, reply_string(t, "comm"));
                cell_bytes(f, reply_count(t, "currentPages") * page_size);
                cell_bytes(f, reply_count(t, "peakPages") * page_size);
                cell_count(f, reply_count(t, "allocs"));
                cell_count(f, reply_count(t, "frees"));
                cell_text(f, exited ? "exited" : "running");
                /* Long command lines on one line, cut; the whole one in the tooltip (and in print). */
                fputs("<td class=\"cmd\" title=\"", f);
                put(f, reply_string(t, "cmdline") ?: "");
                fputs("\">", f);
                put(f, reply_string(t, "cmdline") ?: "");
                fputs("</td>", f);
                fputs("</tr>\n", f);
                shown++;
        }
        table_end(f, shown, json_array_size(tasks));
        fputs("</section>\n", f);
}

static void section_units(FILE *f, json_t *doc, const ReportOptions *o, uint64_t page_size) {
        static const char *const columns[] = { "Unit", "#Current", "#Peak", "#Tasks", "State", "Cgroup", NULL };
        json_t *units = reply_array(reply_object(doc, "units"), "units"), *u;
        size_t i, shown = 0;

        fputs("<section id=\"units\"><h2>Units</h2>\n", f);
        if (!units)
                none(f, "This snapshot has no units (memstrackd without units, or an older file).");
        else {
                table_start(f, "units-table", columns);
                json_array_foreach(units, i, u) {
                        if (shown >= rows_for(o))
                                break;
                        fputs("<tr>", f);
                        cell_text(f, reply_string(u, "name"));
                        cell_bytes(f, reply_count(u, "currentPages") * page_size);
                        cell_bytes(f, reply_count(u, "peakPages") * page_size);
                        cell_count(f, reply_count(u, "tasks"));
                        cell_text(f, reply_bool(u, "live", true) ? "live" : "removed");
                        cell_text(f, reply_string(u, "cgroup"));
                        fputs("</tr>\n", f);
                        shown++;
                }
                table_end(f, shown, json_array_size(units));
        }
        fputs("</section>\n", f);
}

static void section_modules(FILE *f, json_t *doc, const ReportOptions *o, uint64_t page_size) {
        static const char *const columns[] = { "Module", "#Current", "#Peak", "State", NULL };
        json_t *modules = reply_array(reply_object(doc, "modules"), "modules"), *m;
        size_t i, shown = 0;

        fputs("<section id=\"modules\"><h2>Modules</h2>\n", f);
        table_start(f, "modules-table", columns);
        json_array_foreach(modules, i, m) {
                if (shown >= rows_for(o))
                        break;
                fputs("<tr>", f);
                cell_text(f, reply_string(m, "name"));
                cell_bytes(f, reply_count(m, "currentPages") * page_size);
                cell_bytes(f, reply_count(m, "peakPages") * page_size);
                cell_text(f, reply_bool(m, "loaded", true) ? "loaded" : "unloaded");
                fputs("</tr>\n", f);
                shown++;
        }
        table_end(f, shown, json_array_size(modules));
        fputs("</section>\n", f);
}

/* One heap's call sites, at its maximum or never freed, as a table. */
static int heap_sites_table(FILE *f, const json_t *h, bool leaks, const ReportOptions *o, const char *id) {
        static const char *const columns[] = { "Call site", "#Bytes", "#Share %", "#Blocks", "#Error +-", NULL };
        _cleanup_(heap_sites_done) HeapSites c = {};
        uint64_t total = reply_count(h, leaks ? "liveBytes" : "peakBytes");
        size_t shown = 0;
        int r;

        r = heap_sites_collect(h, leaks, o, &c);
        if (r < 0)
                return r;
        fprintf(f, "<h4>%s</h4>\n", leaks ? (reply_bool(h, "ended", false) ? "Never freed" : "Live now") :
                                             "At its maximum");
        table_start(f, id, columns);
        for (size_t i = 0; i < c.n && shown < rows_for(o); i++, shown++) {
                _cleanup_free_ char *label = heap_site_label(&c.sites[i]);
                if (!label)
                        return -ENOMEM;
                double share = total > 0 ? 100.0 * (double) c.sites[i].bytes / (double) total : 0.0;
                fputs("<tr>", f);
                fputs("<td class=\"frames\">", f);
                put(f, label);
                fputs("</td>", f);
                cell_bytes(f, c.sites[i].bytes);
                fprintf(f, "<td class=\"n\" data-v=\"%.4f\">%.2f</td>", share, share);
                cell_count(f, c.sites[i].blocks);
                cell_bytes(f, heap_site_error(c.sites[i].bytes, reply_count(h, "sampleInterval")));
                fputs("</tr>\n", f);
        }
        table_end(f, shown, c.n);
        return 0;
}

/* The blocks freed at each call site of a heap, by how long they lived, temporary ones first. */
static int heap_lifetimes_table(FILE *f, const json_t *h, const ReportOptions *o, const char *id) {
        static const char *const columns[] = { "Call site", "#Temporary", "#Freed", "#<1 ms", "#<10 ms",
                                               "#<100 ms", "#<1 s", "#<10 s", "#Longer", "#Never freed", NULL };
        _cleanup_(heap_sites_done) HeapSites c = {};
        size_t shown = 0;
        int r;

        if (!json_is_array(json_object_get(reply_object(h, "root"), "freedBlocks")))
                return 0;       /* recorded before lifetimes were */
        r = heap_sites_collect_lifetimes(h, o, &c);
        if (r < 0)
                return r;
        fputs("<h4>Lifetimes: blocks freed, by how long they lived</h4>\n", f);
        if (c.n == 0) {
                none(f, "No block was freed with a stack.");
                return 0;
        }
        table_start(f, id, columns);
        for (size_t i = 0; i < c.n && shown < rows_for(o); i++, shown++) {
                _cleanup_free_ char *label = heap_site_label(&c.sites[i]);
                if (!label)
                        return -ENOMEM;
                fputs("<tr><td class=\"frames\">", f);
                put(f, label);
                fputs("</td>", f);
                cell_count(f, c.sites[i].temporary);
                cell_count(f, heap_site_freed(&c.sites[i]));
                for (size_t b = 0; b < HEAP_SITE_LIFETIMES; b++)
                        cell_count(f, c.sites[i].lifetimes[b]);
                cell_bytes(f, c.sites[i].bytes);
                fputs("</tr>\n", f);
        }
        table_end(f, shown, c.n);
        return 0;
}

#define HEAP_CHART_WIDTH 600
#define HEAP_CHART_HEIGHT 120

/* JSON inside a <script> element: '<' written as \u003c, so that no "</script>" ends it early. */
static int put_json(FILE *f, const json_t *v) {
        _cleanup_free_ char *text = json_dumps(v, JSON_COMPACT);

        if (!text)
                return -ENOMEM;
        for (const char *p = text; *p; p++)
                if (*p == '<')
                        fputs("\\u003c", f);
                else
                        fputc(*p, f);
        return 0;
}

/* A heap's live bytes over its life as a chart; with its timeline, a click on it picks a moment and a
 * table shows the call sites live then (the page's script sums the timeline as report --at does). */
static int heap_moment_chart(FILE *f, const json_t *h, const ReportOptions *o) {
        json_t *growth = reply_array(h, "growth"), *p;
        const json_t *timeline = reply_object(h, "timeline");
        uint64_t life = 1, most = 1;
        size_t i;

        if (json_array_size(growth) < 2)
                return 0;
        json_array_foreach(growth, i, p) {
                life = MAX(life, reply_count(p, "msec") * 1000);
                most = MAX(most, reply_count(p, "liveBytes"));
        }
        /* To the end of the timeline's last bucket, when it ends after the last point of growth. */
        json_array_foreach(reply_array(timeline, "cells"), i, p)
                life = MAX(life, (uint64_t) (json_integer_value(json_array_get(p, 0)) + 1) *
                                 reply_count(timeline, "bucketUsec"));
        fputs("<div class=\"heap-moment\">\n<h4>Live bytes over time</h4>\n", f);
        fprintf(f, "<svg class=\"heap-chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\"><polyline points=\"",
                HEAP_CHART_WIDTH, HEAP_CHART_HEIGHT, HEAP_CHART_WIDTH, HEAP_CHART_HEIGHT);
        json_array_foreach(growth, i, p)
                fprintf(f, "%s%.1f,%.1f", i ? " " : "",
                        (double) reply_count(p, "msec") * 1000.0 / (double) life * HEAP_CHART_WIDTH,
                        HEAP_CHART_HEIGHT - (double) reply_count(p, "liveBytes") / (double) most * (HEAP_CHART_HEIGHT - 4));
        fprintf(f, "\"/><line class=\"mark\" x1=\"-1\" x2=\"-1\" y1=\"0\" y2=\"%d\"/></svg>\n", HEAP_CHART_HEIGHT);
        if (!timeline) {
                fputs("<p class=\"meta\">This recording has no timeline: the call sites at a moment need one "
                      "(memstrackctl record --file keeps it).</p></div>\n", f);
                return 0;
        }
        json_auto_t *sites = NULL, *labels = NULL;
        int r = heap_sites_of_frames(h, o, &sites, &labels);
        if (r < 0)
                return r;
        json_auto_t *data = json_pack("{s:O, s:O, s:O, s:O, s:I, s:I, s:I, s:b}",
                                      "bucketUsec", json_object_get(timeline, "bucketUsec"),
                                      "cells", reply_array(timeline, "cells"),
                                      "sites", sites, "labels", labels,
                                      "lifeUsec", (json_int_t) life, "width", (json_int_t) HEAP_CHART_WIDTH,
                                      "rows", (json_int_t) rows_for(o),
                                      "exact", reply_count(h, "sampleInterval") <= 1);
        if (!data)
                return -ENOMEM;
        fputs("<p class=\"meta moment\">A click on the chart shows the call sites live at that moment.</p>\n"
              "<div class=\"scroll\"><table><thead><tr><th>Call site</th><th class=\"n\">Live</th></tr></thead>"
              "<tbody></tbody></table></div>\n<script type=\"application/json\">", f);
        r = put_json(f, data);
        fputs("</script>\n</div>\n", f);
        return r;
}

/* Recorded heaps (memstrackctl record): every process in a table, the chosen ones' call sites below it, as
 * heap_processes, heap_maximum and heap_leaks choose them (heap-select.h). */
static int section_heaps(FILE *f, json_t *doc, const ReportOptions *o) {
        static const char *const columns[] = { "Full report", "#PID", "Name", "#Maximum", "#Never freed",
                                               "#Allocations", "#Share %", "Command", NULL };
        _cleanup_free_ json_t **rows = NULL;
        HeapSelection sel;
        size_t n, i;
        int r;

        heap_selection_init(doc, o, &sel);
        r = heap_selection_by_peak(&sel, &rows, &n);
        if (r < 0)
                return r;
        fputs("<section id=\"heaps\"><h2>Heaps</h2>\n<p class=\"meta\">", f);
        fprintf(f, "%zu process%s recorded, biggest maximum first. Call sites below for ", n, n == 1 ? "" : "es");
        if (o->pid >= 0 || o->heap_all || o->n_heap_processes > 0)
                fputs("the processes chosen.", f);
        else
                fprintf(f, "%sthose holding at least %u%% of the total maximum.",
                        sel.command_pid >= 0 ? "the command's and " : "", o->heap_min_share);
        fputs("</p>\n", f);
        table_start(f, "heaps-table", columns);
        for (i = 0; i < n; i++) {
                const json_t *h = rows[i];
                fputs("<tr>", f);
                cell_text(f, heap_selection_shows(&sel, h) ? (heap_selection_is_command(&sel, h) ? "yes, the command" : "yes") :
                          heap_selection_is_command(&sel, h) ? "the command" : "");
                cell_count(f, (uint64_t) MAX(reply_int(h, "pid", 0), (int64_t) 0));
                cell_text(f, reply_string(h, "comm"));
                cell_bytes(f, reply_count(h, "peakBytes"));
                cell_bytes(f, reply_count(h, "liveBytes"));
                cell_count(f, reply_count(h, "allocs"));
                fprintf(f, "<td class=\"n\" data-v=\"%.4f\">%.1f</td>", heap_selection_share(&sel, h),
                        heap_selection_share(&sel, h));
                fputs("<td class=\"cmd\" title=\"", f);
                put(f, reply_string(h, "cmdline") ?: "");
                fputs("\">", f);
                put(f, reply_string(h, "cmdline") ?: "");
                fputs("</td></tr>\n", f);
        }
        table_end(f, n, n);

        json_t *h;
        json_array_foreach(sel.heaps, i, h) {
                char id[64], size[FORMAT_BUFFER_MAX];
                if (!heap_selection_shows(&sel, h))
                        continue;
                fprintf(f, "<h3>pid %" PRIi64 " (", reply_int(h, "pid", 0));
                put(f, reply_string(h, "comm") ?: "?");
                fprintf(f, "), maximum %s</h3>\n", format_bytes(size, sizeof(size), reply_count(h, "peakBytes")));
                if (!heap_is_sampled(h)) {
                        none(f, "No stack was sampled (a stack per sample interval of bytes allocated, on average): "
                             "its exact totals are in the table above.");
                        continue;
                }
                for (int leaks = 0; leaks < 2; leaks++) {
                        (void) snprintf(id, sizeof(id), "heap-%zu-%s", i, leaks ? "leaks" : "maximum");
                        r = heap_sites_table(f, h, leaks, o, id);
                        if (r < 0)
                                return r;
                }
                (void) snprintf(id, sizeof(id), "heap-%zu-lifetimes", i);
                r = heap_lifetimes_table(f, h, o, id);
                if (r >= 0)
                        r = heap_moment_chart(f, h, o);
                if (r < 0)
                        return r;
        }
        fputs("</section>\n", f);
        return 0;
}

/* The flame graph's SVG without its XML declaration, which HTML does not take. */
static int section_flamegraph(FILE *f, json_t *doc, const ReportOptions *o) {
        _cleanup_free_ char *svg = NULL;
        size_t size = 0;
        FILE *m;
        int r;

        fputs("<section id=\"flamegraph\"><h2>Flame graph</h2>\n", f);
        m = open_memstream(&svg, &size);
        if (!m)
                return -ENOMEM;
        /* The flamegraph format's own SVG (render-stacks.c), as report --format flamegraph writes it. */
        r = report_format_find("flamegraph")->text(doc, o, m);
        if (fclose(m) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        const char *start = svg ? strstr(svg, "<svg") : NULL;
        if (start)
                fputs(start, f);
        else
                none(f, "No stack tree in this snapshot.");
        fputs("</section>\n", f);
        return 0;
}

static void section_slab(FILE *f, json_t *doc, const ReportOptions *o) {
        static const char *const columns[] = { "Name", "#Objects", "#Bytes", "#Requested", "#Waste %", "#Peak",
                                               "#Allocs", "#Frees", "#Lost frees", "Note", NULL };
        json_t *slab = reply_object(doc, "slab");

        fputs("<section id=\"slab\"><h2>Slab objects</h2>\n", f);
        if (!slab || !reply_bool(reply_object(slab, "callsites"), "tracing", true) ||
            json_array_size(reply_array(reply_object(slab, "callsites"), "rows")) == 0)
                none(f, "No slab objects in this snapshot (memstrackd traces them with --slab).");
        for (int k = 0; slab && k < 2; k++) {
                json_t *rows = reply_array(reply_object(slab, k == 0 ? "callsites" : "caches"), "rows"), *r;
                size_t i, shown = 0;
                if (json_array_size(rows) == 0)
                        continue;
                fprintf(f, "<h3>By %s</h3>\n", k == 0 ? "call site" : "cache");
                table_start(f, k == 0 ? "slab-callsites-table" : "slab-caches-table", columns);
                json_array_foreach(rows, i, r) {
                        if (shown >= rows_for(o))
                                break;
                        fputs("<tr>", f);
                        cell_text(f, reply_string(r, "name"));
                        cell_count(f, reply_count(r, "liveObjects"));
                        cell_bytes(f, reply_count(r, "liveBytesAllocated"));
                        cell_bytes(f, reply_count(r, "liveBytesRequested"));
                        fprintf(f, "<td class=\"n\" data-v=\"%.2f\">%.1f</td>", reply_double(r, "wastePercent", 0),
                                reply_double(r, "wastePercent", 0));
                        cell_bytes(f, reply_count(r, "peakLiveBytes"));
                        cell_count(f, reply_count(r, "allocs"));
                        cell_count(f, reply_count(r, "frees"));
                        cell_count(f, reply_count(r, "lostFrees"));
                        cell_text(f, json_is_false(json_object_get(r, "freesVisible")) ?
                                  "frees not visible on this kernel" :
                                  reply_bool(reply_object(r, "kernel"), "drifting", false) ? "above the kernel's count" :
                                  "");
                        fputs("</tr>\n", f);
                        shown++;
                }
                table_end(f, shown, json_array_size(rows));
        }
        fputs("</section>\n", f);
}

/* Frames innermost first, one a line. */
static void cell_frames(FILE *f, json_t *frames) {
        json_t *fr;
        size_t i;

        fputs("<td class=\"frames\">", f);
        json_array_foreach(frames, i, fr) {
                if (i > 0)
                        fputs("<br>", f);
                put(f, json_string_value(fr) ?: "?");
        }
        fputs("</td>", f);
}

static void cold_row(FILE *f, json_t *pages, uint64_t page_size) {
        static const char *const keys[] = { "hotPages", "warmPages", "coldPages", "unknownPages", "currentPages" };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                cell_bytes(f, reply_count(pages, keys[k]) * page_size);
}

/* Cold memory: the access source's last round by process and unit, and the cold pages' flame graph (the
 * cold_flamegraph format's SVG). */
static int section_cold(FILE *f, json_t *doc, const ReportOptions *o) {
        static const char *const task_columns[] = { "#PID", "Name", "#Hot", "#Warm", "#Cold", "#Unknown", "#Holds now",
                                                    NULL };
        static const char *const unit_columns[] = { "Unit", "#Hot", "#Warm", "#Cold", "#Unknown", "#Holds now", NULL };
        json_t *cold = reply_object(doc, "cold"), *e;
        size_t i, shown = 0;
        int r;

        fputs("<section id=\"cold\"><h2>Cold memory</h2>\n", f);
        if (!cold || !reply_string(cold, "source") || json_is_null(json_object_get(cold, "roundTimestampUsec"))) {
                fputs("<p class=\"none\">", f);
                put(f, !cold ? "This snapshot has no cold memory view (an older memstrackd or file)." :
                       reply_string(cold, "reason") ?: "No sampling round yet.");
                fputs("</p>\n</section>\n", f);
                return 0;
        }
        uint64_t page_size = reply_count(cold, "pageSize") ?: 4096;
        fputs("<p class=\"meta\">", f);
        put(f, reply_string(cold, "source"));
        fputs(": ", f);
        put(f, reply_string(cold, "detail") ?: "");
        fprintf(f, ". Hot: idle less than %" PRIu64 " s; cold: at least %" PRIu64 " s; warm between.</p>\n",
                reply_count(cold, "warmAfterUsec") / 1000000, reply_count(cold, "coldAfterUsec") / 1000000);
        json_t *tasks = reply_array(cold, "tasks");
        table_start(f, "cold-tasks-table", task_columns);
        json_array_foreach(tasks, i, e) {
                if (shown >= rows_for(o))
                        break;
                fputs("<tr>", f);
                cell_count(f, (uint64_t) MAX(reply_int(e, "pid", 0), (int64_t) 0));
                cell_text(f, reply_string(e, "comm"));
                cold_row(f, reply_object(e, "pages"), page_size);
                fputs("</tr>\n", f);
                shown++;
        }
        table_end(f, shown, json_array_size(tasks));
        json_t *units = reply_array(cold, "units");
        shown = 0;
        table_start(f, "cold-units-table", unit_columns);
        json_array_foreach(units, i, e) {
                if (shown >= rows_for(o))
                        break;
                fputs("<tr>", f);
                cell_text(f, reply_string(e, "name"));
                cold_row(f, reply_object(e, "pages"), page_size);
                fputs("</tr>\n", f);
                shown++;
        }
        table_end(f, shown, json_array_size(units));
        _cleanup_free_ char *svg = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&svg, &size);
        if (!m)
                return -ENOMEM;
        r = report_format_find("cold_flamegraph")->text(doc, o, m);
        if (fclose(m) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        const char *start = svg ? strstr(svg, "<svg") : NULL;
        if (start) {
                fputs("<h3>Cold pages by allocating stack</h3>\n", f);
                fputs(start, f);
        }
        fputs("</section>\n", f);
        return 0;
}

static void section_leaks(FILE *f, json_t *doc, const ReportOptions *o, uint64_t page_size) {
        static const char *const page_columns[] = { "#PID", "Name", "#Pages", "#Oldest (s)", "Stack", NULL };
        static const char *const object_columns[] = { "Call site", "#Objects", "#Bytes", "#Oldest (s)", NULL };
        json_t *leaks = reply_object(doc, "leaks"), *e;
        size_t i, shown = 0;

        fputs("<section id=\"leaks\"><h2>Leaks</h2>\n", f);
        if (!leaks) {
                none(f, "This snapshot has no leak lists (memstrackd without Leaks, or an older file).");
                fputs("</section>\n", f);
                return;
        }
        fprintf(f, "<p class=\"meta\">Live pages and objects older than %" PRIu64 " s, biggest first.</p>\n",
                reply_count(leaks, "minAgeUsec") / 1000000);
        json_t *pages = reply_array(leaks, "pages");
        if (json_array_size(pages) == 0)
                none(f, "No pages that old.");
        else {
                table_start(f, "leak-pages-table", page_columns);
                json_array_foreach(pages, i, e) {
                        if (shown >= rows_for(o))
                                break;
                        fputs("<tr>", f);
                        cell_count(f, (uint64_t) MAX(reply_int(e, "pid", 0), (int64_t) 0));
                        cell_text(f, reply_string(e, "comm"));
                        cell_count(f, reply_count(e, "pages"));
                        cell_count(f, reply_count(e, "oldestAgeUsec") / 1000000);
                        cell_frames(f, reply_array(e, "frames"));
                        fputs("</tr>\n", f);
                        shown++;
                }
                table_end(f, shown, json_array_size(pages));
        }
        json_t *rows = reply_array(leaks, "rows");
        if (json_array_size(rows) > 0) {
                shown = 0;
                table_start(f, "leak-objects-table", object_columns);
                json_array_foreach(rows, i, e) {
                        if (shown >= rows_for(o))
                                break;
                        fputs("<tr>", f);
                        cell_text(f, reply_string(e, "name"));
                        cell_count(f, reply_count(e, "objects"));
                        cell_bytes(f, reply_count(e, "bytes"));
                        cell_count(f, reply_count(e, "oldestAgeUsec") / 1000000);
                        fputs("</tr>\n", f);
                        shown++;
                }
                table_end(f, shown, json_array_size(rows));
        }
        json_t *invisible = reply_array(leaks, "freesNotVisible");
        if (json_array_size(invisible) > 0) {
                static const char *const invisible_columns[] = { "Call site", "Cache", "#Objects", "#Bytes",
                                                                 "#Lost frees", NULL };
                fputs("<p class=\"meta\">Left out: call sites whose frees this kernel makes without a tracepoint, "
                      "so their objects would look leaked. Their counts are an upper bound.</p>\n", f);
                shown = 0;
                table_start(f, "leak-invisible-table", invisible_columns);
                json_array_foreach(invisible, i, e) {
                        if (shown >= rows_for(o))
                                break;
                        fputs("<tr>", f);
                        cell_text(f, reply_string(e, "name"));
                        cell_text(f, reply_string(e, "cache"));
                        cell_count(f, reply_count(e, "objects"));
                        cell_bytes(f, reply_count(e, "bytes"));
                        cell_count(f, reply_count(e, "lostFrees"));
                        fputs("</tr>\n", f);
                        shown++;
                }
                table_end(f, shown, json_array_size(invisible));
        }
        (void) page_size;
        fputs("</section>\n", f);
}

static void when_text(char *buf, size_t size, uint64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / 1000000);
        struct tm tm;

        if (realtime_usec == 0 || !localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                (void) snprintf(buf, size, "?");
}

static void section_oom(FILE *f, json_t *doc, uint64_t page_size) {
        static const char *const columns[] = { "When", "#PID", "Name", "Unit", "#Tracked then", "Biggest holders",
                                               NULL };
        json_t *oom = reply_object(doc, "oomKills"), *k;
        size_t i;

        fputs("<section id=\"oom\"><h2>OOM kills</h2>\n", f);
        if (!oom) {
                none(f, "This snapshot has no OOM records (memstrackd without OomKills, or an older file).");
                fputs("</section>\n", f);
                return;
        }
        if (!reply_bool(oom, "watching", true)) {
                fputs("<p class=\"meta\">OOM kills are not watched: ", f);
                put(f, reply_string(oom, "reason") ?: "unknown reason");
                fputs("</p>\n", f);
        }
        json_t *kills = reply_array(oom, "kills");
        if (json_array_size(kills) == 0) {
                none(f, "No OOM kill while memstrackd ran.");
                fputs("</section>\n", f);
                return;
        }
        table_start(f, "oom-table", columns);
        json_array_foreach(kills, i, k) {
                char when[64];
                json_t *holders = reply_object(k, "holders"), *t;
                size_t j;
                when_text(when, sizeof(when), reply_count(k, "realtimeUsec"));
                fputs("<tr>", f);
                cell_text(f, when);
                cell_count(f, (uint64_t) MAX(reply_int(k, "pid", 0), (int64_t) 0));
                cell_text(f, reply_string(k, "comm"));
                cell_text(f, reply_string(k, "unit"));
                cell_bytes(f, reply_count(holders, "trackedPages") * page_size);
                fputs("<td>", f);
                json_array_foreach(reply_array(holders, "tasks"), j, t) {
                        char size[FORMAT_BUFFER_MAX];
                        if (j >= 5)
                                break;
                        if (j > 0)
                                fputs(", ", f);
                        put(f, reply_string(t, "comm") ?: "?");
                        fprintf(f, " (%" PRIi64 ", %s)", reply_int(t, "pid", 0),
                                format_pages(size, sizeof(size), reply_count(t, "currentPages"), page_size));
                }
                fputs("</td></tr>\n", f);
        }
        table_end(f, json_array_size(kills), json_array_size(kills));
        fputs("</section>\n", f);
}

static int text_html(json_t *doc, const ReportOptions *o, FILE *f) {
        uint64_t page_size = reply_count(reply_object(doc, "status"), "pageSize") ?: 4096;
        const char *host = reply_string(doc, "host");
        char when[64];
        int r;

        when_text(when, sizeof(when), reply_count(doc, "realtimeUsec"));
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              /* Nothing leaves the page: no request of any kind, only what is inline. */
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
              "script-src 'unsafe-inline'; img-src data:\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>memstrack report", f);
        if (host) {
                fputs(" - ", f);
                put(f, host);
        }
        fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>memstrack report</h1>\n<p class=\"meta\">", page_style);
        put(f, host ?: "unknown host");
        fputs(", ", f);
        put(f, when);
        fputs(", ", f);
        put(f, reply_string(doc, "generator") ?: "memstrack");
        /* A recording of heaps (memstrackctl record) has its own section, after the summary. */
        bool heaps = json_array_size(reply_array(reply_object(doc, "heap"), "heaps")) > 0;
        fprintf(f, "</p>\n<nav><a href=\"#summary\">Summary</a>%s<a href=\"#history\">History</a>"
                "<a href=\"#tasks\">Tasks</a><a href=\"#units\">Units</a><a href=\"#modules\">Modules</a>"
                "<a href=\"#flamegraph\">Flame graph</a><a href=\"#slab\">Slab</a><a href=\"#leaks\">Leaks</a>"
                "<a href=\"#cold\">Cold</a>"
                "<a href=\"#oom\">OOM kills</a></nav>\n", heaps ? "<a href=\"#heaps\">Heaps</a>" : "");

        section_summary(f, doc, page_size);
        if (heaps) {
                r = section_heaps(f, doc, o);
                if (r < 0)
                        return r;
        }
        section_history(f, doc, page_size);
        section_tasks(f, doc, o, page_size);
        section_units(f, doc, o, page_size);
        section_modules(f, doc, o, page_size);
        r = section_flamegraph(f, doc, o);
        if (r < 0)
                return r;
        section_slab(f, doc, o);
        section_leaks(f, doc, o, page_size);
        r = section_cold(f, doc, o);
        if (r < 0)
                return r;
        section_oom(f, doc, page_size);
        fprintf(f, "<script>\n%s</script>\n</body>\n</html>\n", page_script);
        return ferror(f) ? -EIO : 0;
}

/* The page as one JSON string. */
static int json_html(json_t *doc, const ReportOptions *o, json_t **ret) {
        _cleanup_free_ char *page = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&page, &size);
        int r;

        if (!m)
                return -ENOMEM;
        r = text_html(doc, o, m);
        if (fclose(m) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = json_stringn(page, size);
        return *ret ? 0 : -ENOMEM;
}

const ReportFormat report_format_html = {
        .name = "html",
        .family = "html",
        .text = text_html,
        .json = json_html,
};
