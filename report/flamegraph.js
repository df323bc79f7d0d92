/* SPDX-License-Identifier: MIT */
/*
 * Zoom and search for memstrackctl's flame graphs (client/flamegraph.c embeds this file in every SVG).
 * Click a box: it spans the width, its callees scale with it, its callers stay below it (dimmed), the
 * rest is hidden; click the bottom box or "Reset zoom" to go back. "Search" (or / or Ctrl-F) asks for a
 * regular expression (plain text if it is none) and colors the matching frames; the bottom line says
 * how many pages they hold, each page counted once. Esc clears both. The layout comes from the <svg>
 * element's data-* attributes, so this file holds no numbers of its own.
 */
(function () {
        "use strict";
        /* The graph's own <svg>: the document in a file of its own, an element of memstrackctl's HTML
         * report (one flame graph a page) otherwise. */
        var root = document.documentElement;
        var svg = (root.localName || root.tagName) === "svg" ? root : document.querySelector("svg[data-total-pages]");
        var margin = Number(svg.getAttribute("data-margin-px"));
        var span = Number(svg.getAttribute("data-span-px"));
        var charPx = Number(svg.getAttribute("data-char-px"));
        var total = Number(svg.getAttribute("data-total-pages")) || 0;
        var frames = Array.prototype.slice.call(svg.querySelectorAll("g.frame"));
        var unzoomButton = document.getElementById("unzoom");
        var hint = document.getElementById("hint");
        var searchButton = document.getElementById("search");
        var matched = document.getElementById("matched");
        var term = "";

        /* A frame's own box and label come before its children's in the document. */
        function box(g) {
                return g.querySelector("rect");
        }
        function label(g) {
                return g.querySelector("text");
        }

        frames.forEach(function (g) {
                g.origX = Number(box(g).getAttribute("x"));
                g.origWidth = Number(box(g).getAttribute("width"));
        });

        /* As much of the name as fits, cut with "..." as memstrackctl cuts it. */
        function place(g, x, width) {
                var r = box(g), t = label(g), name = g.getAttribute("data-name") || "";
                var n = Math.floor((width - 6) / charPx);
                r.setAttribute("x", x.toFixed(4));
                r.setAttribute("width", width.toFixed(4));
                if (!t)
                        return;
                t.setAttribute("x", (x + 3).toFixed(2));
                if (n < 3)
                        t.textContent = "";
                else if (name.length <= n)
                        t.textContent = name;
                else if (n < 4)
                        t.textContent = name.substring(0, n);
                else
                        t.textContent = name.substring(0, n - 3) + "...";
        }

        function show(element, visible) {
                if (element)
                        element.style.display = visible ? "" : "none";
        }

        function zoom(target) {
                var x0 = target.origX, scale;
                if (!(target.origWidth > 0))
                        return;
                scale = span / target.origWidth;
                frames.forEach(function (g) {
                        if (g === target || target.contains(g)) {
                                show(g, true);
                                g.classList.remove("ancestor");
                                place(g, margin + (g.origX - x0) * scale, g.origWidth * scale);
                        } else if (g.contains(target)) {
                                show(g, true);
                                g.classList.add("ancestor");
                                place(g, margin, span);
                        } else
                                show(g, false);
                });
                show(unzoomButton, true);
                show(hint, false);
        }

        function unzoom() {
                frames.forEach(function (g) {
                        show(g, true);
                        g.classList.remove("ancestor");
                        place(g, g.origX, g.origWidth);
                });
                show(unzoomButton, false);
                show(hint, true);
        }

        function search(text) {
                var re = null, pages = 0;
                term = text || "";
                if (term) {
                        try {
                                re = new RegExp(term);
                        } catch (e) {
                                re = null;
                        }
                }
                frames.forEach(function (g) {
                        var name = g.getAttribute("data-name") || "";
                        g.classList.toggle("match", term !== "" && (re ? re.test(name) : name.indexOf(term) >= 0));
                });
                /* Pages of matches inside other matches are already counted with their caller. */
                frames.forEach(function (g) {
                        var p;
                        if (!g.classList.contains("match"))
                                return;
                        for (p = g.parentNode; p && p !== svg; p = p.parentNode)
                                if (p.classList && p.classList.contains("match"))
                                        return;
                        pages += Number(g.getAttribute("data-pages")) || 0;
                });
                matched.textContent = term === "" ? "" : "Matched: " +
                        (total > 0 ? (100 * pages / total).toFixed(1) : "0.0") + "% (" + pages + " pages)";
                searchButton.textContent = term === "" ? "Search" : "Clear search";
        }

        function ask() {
                var text;
                if (typeof window.prompt !== "function")
                        return;
                text = window.prompt("Search frames (regular expression or text):", term);
                if (text !== null)
                        search(text);
        }

        svg.addEventListener("click", function (e) {
                var n = e.target;
                if (n === unzoomButton) {
                        unzoom();
                        return;
                }
                if (n === searchButton) {
                        if (term === "")
                                ask();
                        else
                                search("");
                        return;
                }
                while (n && n !== svg && !(n.classList && n.classList.contains("frame")))
                        n = n.parentNode;
                if (!n || n === svg)
                        return;
                if (n === frames[0])
                        unzoom();
                else
                        zoom(n);
        });

        document.addEventListener("keydown", function (e) {
                if ((e.ctrlKey && e.key === "f") || e.key === "/") {
                        e.preventDefault();
                        ask();
                } else if (e.key === "Escape") {
                        search("");
                        unzoom();
                }
        });
})();
