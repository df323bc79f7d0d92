#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a memstrackctl flame graph: valid XML, nothing external, each frame's box as wide as its pages,
children within their parent, and the root spanning the total.

Usage: check-flamegraph.py FILE.svg [EXPECTED_TOTAL_PAGES]"""
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
EPS = 1e-3


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    path = sys.argv[1]
    text = open(path, encoding="utf-8").read()
    root = ET.fromstring(text)  # raises on invalid XML
    if root.tag != NS + "svg":
        fail(f"root element is {root.tag}")
    for attr in ("href", "{http://www.w3.org/1999/xlink}href", "src"):
        for el in root.iter():
            if el.get(attr):
                fail(f"external reference {el.get(attr)!r}")
    if "<script" in text and "src=" in text:
        fail("external script")

    total = int(root.get("data-total-pages"))
    scale = float(root.get("data-px-per-page"))
    width = float(root.get("width"))
    if len(sys.argv) > 2 and total != int(sys.argv[2]):
        fail(f"data-total-pages {total}, expected {sys.argv[2]}")

    frames = [g for g in root if g.tag == NS + "g" and g.get("class") == "frame"]
    if len(frames) != 1:
        fail(f"{len(frames)} root frames")
    n_boxes = 0

    def check(g, depth):
        nonlocal n_boxes
        rect = g.find(NS + "rect")
        title = g.find(NS + "title")
        if rect is None or title is None or not title.text:
            fail("frame without rect or title")
        pages = int(g.get("data-pages"))
        w = float(rect.get("width"))
        if abs(w - pages * scale) > EPS:
            fail(f"{title.text}: width {w} for {pages} pages at {scale} px/page")
        if f"{pages} pages" not in title.text or "peak" not in title.text:
            fail(f"tooltip {title.text!r} lacks pages or peak")
        n_boxes += 1
        x = float(rect.get("x"))
        child_sum = 0.0
        for child in g:
            if child.tag == NS + "g" and child.get("class") == "frame":
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
    print(f"ok: {n_boxes} boxes, {total} pages")


main()
