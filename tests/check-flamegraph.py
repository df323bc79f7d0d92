#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a memstrackctl flame graph: valid XML, nothing external, each frame's box as wide as its pages,
children within their parent, the root spanning the total, no box narrower than the threshold, frames
merged by function (no "+0x" offsets, no two siblings of one name) unless --offsets, the zoom and search
script present and, if node is installed, valid JavaScript that zooms and searches right when clicked
(check-flamegraph-script.js), and the title saying what it is asked to.

Usage: check-flamegraph.py FILE.svg [EXPECTED_TOTAL_PAGES] [--offsets] [--min-box PX]
                           [--title-contains TEXT]... [--expect-small-frames]"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
EPS = 1e-3
# A trailing offset, before the " [module]" the label may end with.
OFFSET = re.compile(r"\+0x[0-9a-f]+( \[[^][]*\])?$")


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run_script(node, svg, root_frame, script):
    """Clicks and searches in the graph with check-flamegraph-script.js (node, a stand-in DOM)."""
    def frame(g):
        rect = g.find(NS + "rect")
        return {"name": g.get("data-name"), "pages": int(g.get("data-pages")), "x": float(rect.get("x")),
                "width": float(rect.get("width")),
                "children": [frame(c) for c in g if c.tag == NS + "g" and c.get("class") == "frame"]}
    graph = {"attributes": dict(svg.attrib), "root": frame(root_frame), "script": script}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(graph, f)
        f.flush()
        harness = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-flamegraph-script.js")
        p = subprocess.run([node, harness, f.name], capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"the script misbehaves: {p.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svg")
    ap.add_argument("total", nargs="?", type=int)
    ap.add_argument("--offsets", action="store_true", help="frames are by offset: do not demand merging")
    ap.add_argument("--min-box", type=float, default=1.0, help="narrowest box allowed but the root, in px")
    ap.add_argument("--title-contains", action="append", default=[])
    ap.add_argument("--expect-small-frames", action="store_true",
                    help="at least one '[N smaller frames]' box must be there")
    args = ap.parse_args()

    text = open(args.svg, encoding="utf-8").read()
    root = ET.fromstring(text)  # raises on invalid XML
    if root.tag != NS + "svg":
        fail(f"root element is {root.tag}")
    for attr in ("href", "{http://www.w3.org/1999/xlink}href", "src"):
        for el in root.iter():
            if el.get(attr):
                fail(f"external reference {el.get(attr)!r}")

    scripts = root.findall(NS + "script")
    if len(scripts) != 1 or not (scripts[0].text or "").strip():
        fail(f"{len(scripts)} inline scripts, expected one")
    script = scripts[0].text
    for needed in ("zoom", "search", "addEventListener"):
        if needed not in script:
            fail(f"the script has no {needed}")
    for control in ("search", "unzoom", "matched"):
        if not any(el.get("id") == control for el in root.iter()):
            fail(f"no #{control} element for the script")
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        # scripts/deps installs nodejs: without it the graph's script would go untested, so say so.
        print("SKIP: node is not installed, the flame graph's script cannot be run", file=sys.stderr)
        sys.exit(77)
    with tempfile.NamedTemporaryFile("w", suffix=".js") as f:
        f.write(script)
        f.flush()
        p = subprocess.run([node, "--check", f.name], capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"the script is not valid JavaScript: {p.stderr}")

    titles = [el for el in root if el.tag == NS + "text" and el.get("class") == "title"]
    if len(titles) != 1:
        fail(f"{len(titles)} titles")
    for want in args.title_contains:
        if want not in (titles[0].text or ""):
            fail(f"title {titles[0].text!r} lacks {want!r}")

    total = int(root.get("data-total-pages"))
    scale = float(root.get("data-px-per-page"))
    width = float(root.get("width"))
    min_box = float(root.get("data-min-box-px"))
    if min_box < args.min_box:
        fail(f"data-min-box-px {min_box} is below {args.min_box}")
    if args.total is not None and total != args.total:
        fail(f"data-total-pages {total}, expected {args.total}")

    frames = [g for g in root if g.tag == NS + "g" and g.get("class") == "frame"]
    if len(frames) != 1:
        fail(f"{len(frames)} root frames")
    n_boxes = n_small = 0

    def check(g, depth):
        nonlocal n_boxes, n_small
        rect = g.find(NS + "rect")
        title = g.find(NS + "title")
        label = g.find(NS + "text")
        name = g.get("data-name")
        if rect is None or title is None or not title.text or label is None or name is None:
            fail("frame without rect, title, text or data-name")
        if not title.text.startswith(name + ": "):
            fail(f"tooltip {title.text!r} does not start with the frame's name {name!r}")
        if label.text and not (name.startswith(label.text) or name.startswith(label.text[:-3])):
            fail(f"label {label.text!r} is not the frame's name {name!r}")
        if not args.offsets and OFFSET.search(name):
            fail(f"{name!r}: an offset in a frame merged by function")
        if name.startswith("[") and name.endswith(" smaller frames]"):
            n_small += 1
        pages = int(g.get("data-pages"))
        w = float(rect.get("width"))
        if abs(w - pages * scale) > EPS:
            fail(f"{title.text}: width {w} for {pages} pages at {scale} px/page")
        if depth > 0 and w < min_box - EPS:
            fail(f"{title.text}: {w} px wide, narrower than {min_box} px")
        if f"{pages} pages" not in title.text or "peak" not in title.text:
            fail(f"tooltip {title.text!r} lacks pages or peak")
        n_boxes += 1
        x = float(rect.get("x"))
        child_sum = 0.0
        seen = set()
        for child in g:
            if child.tag == NS + "g" and child.get("class") == "frame":
                cname = child.get("data-name")
                if not args.offsets and cname in seen:
                    fail(f"two towers of {cname!r} under {name!r}: not merged by function")
                seen.add(cname)
                cw = check(child, depth + 1)
                cx = float(child.find(NS + "rect").get("x"))
                if cx < x - EPS or cx + cw > x + w + EPS:
                    fail(f"child {child.find(NS + 'title').text!r} outside its parent {title.text!r}")
                child_sum += cw
        if child_sum > w + EPS:
            fail(f"children of {title.text!r} are {child_sum} wide, more than its {w}")
        return w

    root_width = check(frames[0], 0)
    expected = width - 2 * 10 if total > 0 else 0
    if abs(root_width - expected) > EPS:
        fail(f"root box is {root_width} wide, expected {expected} for {total} pages")
    if args.expect_small_frames and n_small == 0:
        fail("no '[N smaller frames]' box")
    run_script(node, root, frames[0], script)
    print(f"ok: {n_boxes} boxes ({n_small} of smaller frames), {total} pages")


main()
