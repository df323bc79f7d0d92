// SPDX-License-Identifier: MIT
// Runs a flame graph's script (client/flamegraph.js) in node against a small stand-in for the SVG DOM
// built from the graph (check-flamegraph.py writes it as JSON), and clicks and searches as a person
// would: zoom into a frame, back out, search for one, clear. No browser needed.
//
// Usage: node check-flamegraph-script.js GRAPH.json
"use strict";
const fs = require("fs");
const data = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const EPS = 1e-3;

function fail(msg) {
        console.error("FAIL (script): " + msg);
        process.exit(1);
}

class ClassList {
        constructor(s) { this.set = new Set((s || "").split(" ").filter(Boolean)); }
        add(c) { this.set.add(c); }
        remove(c) { this.set.delete(c); }
        contains(c) { return this.set.has(c); }
        toggle(c, force) {
                const on = force === undefined ? !this.set.has(c) : force;
                if (on) this.set.add(c); else this.set.delete(c);
                return on;
        }
}

class Element {
        constructor(tag, attrs) {
                this.tagName = tag;
                this.attrs = {};
                for (const k in attrs || {}) this.attrs[k] = String(attrs[k]);
                this.classList = new ClassList(this.attrs["class"]);
                this.children = [];
                this.parentNode = null;
                this.style = { display: "" };
                this.listeners = {};
                this.textContent = "";
        }
        getAttribute(n) { return n in this.attrs ? this.attrs[n] : null; }
        setAttribute(n, v) { this.attrs[n] = String(v); }
        append(c) { c.parentNode = this; this.children.push(c); return c; }
        contains(o) { for (let n = o; n; n = n.parentNode) if (n === this) return true; return false; }
        descendants() { return this.children.flatMap((c) => [c, ...c.descendants()]); }
        querySelector(tag) { return this.descendants().find((e) => e.tagName === tag) || null; }
        querySelectorAll(selector) {
                if (selector !== "g.frame") fail("unexpected selector " + selector);
                return this.descendants().filter((e) => e.tagName === "g" && e.classList.contains("frame"));
        }
        addEventListener(type, f) { this.listeners[type] = f; }
}

const svg = new Element("svg", data.attributes);
function build(parent, f) {
        const g = parent.append(new Element("g", { "class": "frame", "data-pages": f.pages, "data-name": f.name }));
        g.append(new Element("rect", { x: f.x, width: f.width }));
        g.append(new Element("text", { x: f.x + 3 }));
        f.children.forEach((c) => build(g, c));
        g.frame = f;
        return g;
}
build(svg, data.root);
for (const id of ["hint", "unzoom", "matched", "search"])
        svg.append(new Element("text", { id: id }));
const documentListeners = {};
const document = {
        documentElement: svg,
        getElementById: (id) => svg.descendants().find((e) => e.attrs.id === id) || null,
        addEventListener: (type, f) => { documentListeners[type] = f; },
};
let answer = null;
const window = { prompt: () => answer };
new Function("document", "window", data.script)(document, window);

const margin = Number(data.attributes["data-margin-px"]), span = Number(data.attributes["data-span-px"]);
const frames = svg.querySelectorAll("g.frame");
const rootFrame = frames[0];
const box = (g) => g.children[0];
const width = (g) => Number(box(g).getAttribute("width"));
const x = (g) => Number(box(g).getAttribute("x"));
const shown = (g) => { for (let n = g; n && n !== svg; n = n.parentNode) if (n.style.display === "none") return false; return true; };
const click = (target) => svg.listeners.click({ target: target });

// A frame above the root with callees, and a sibling of it if there is one.
const target = frames.find((g) => g.parentNode === rootFrame && g.frame.children.length > 0) ||
        frames.find((g) => g !== rootFrame);
if (!target)
        fail("no frame to click");
const scale = span / target.frame.width;

click(box(target));
if (Math.abs(width(target) - span) > EPS || Math.abs(x(target) - margin) > EPS)
        fail(`zoomed frame ${target.frame.name} at ${x(target)}+${width(target)}, expected ${margin}+${span}`);
for (const g of frames) {
        if (target.contains(g)) {
                const want = g.frame.width * scale, wantX = margin + (g.frame.x - target.frame.x) * scale;
                if (!shown(g) || Math.abs(width(g) - want) > EPS || Math.abs(x(g) - wantX) > EPS)
                        fail(`callee ${g.frame.name}: ${x(g)}+${width(g)}, expected ${wantX}+${want}`);
                if (x(g) < margin - EPS || x(g) + width(g) > margin + span + EPS)
                        fail(`callee ${g.frame.name} outside the zoomed frame`);
        } else if (g.contains(target)) {
                if (!shown(g) || !g.classList.contains("ancestor") || Math.abs(width(g) - span) > EPS)
                        fail(`caller ${g.frame.name} not shown full width and dimmed`);
        } else if (shown(g))
                fail(`unrelated frame ${g.frame.name} still shown after zooming into ${target.frame.name}`);
}
const label = target.children[1].textContent;
if (!target.frame.name.startsWith(label.replace(/\.\.\.$/, "")) || label.length === 0)
        fail(`zoomed label '${label}' for '${target.frame.name}'`);
if (document.getElementById("unzoom").style.display === "none")
        fail("no Reset zoom after zooming");

click(document.getElementById("unzoom"));
for (const g of frames)
        if (!shown(g) || Math.abs(width(g) - g.frame.width) > EPS || Math.abs(x(g) - g.frame.x) > EPS ||
            g.classList.contains("ancestor"))
                fail(`${g.frame.name} not back in place after Reset zoom`);

// Search the target's name as plain text (escaped so that it is no regular expression of its own).
answer = target.frame.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
documentListeners.keydown({ key: "/", ctrlKey: false, preventDefault() {} });
let pages = 0;
for (const g of frames) {
        const hit = g.frame.name.includes(target.frame.name);
        if (g.classList.contains("match") !== hit)
                fail(`${g.frame.name} ${hit ? "not " : ""}marked by a search for ${target.frame.name}`);
        let inner = false;
        for (let p = g.parentNode; p !== svg; p = p.parentNode)
                inner = inner || p.frame.name.includes(target.frame.name);
        if (hit && !inner)
                pages += g.frame.pages;
}
const matched = document.getElementById("matched").textContent;
if (!matched.includes(`(${pages} pages)`))
        fail(`search says '${matched}', expected ${pages} pages`);
documentListeners.keydown({ key: "Escape", preventDefault() {} });
if (document.getElementById("matched").textContent !== "" || frames.some((g) => g.classList.contains("match")))
        fail("Esc did not clear the search");
console.log(`ok (script): zoom into ${target.frame.name}, reset, search (${pages} pages), clear`);
