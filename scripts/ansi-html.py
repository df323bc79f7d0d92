#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns a terminal capture (`tmux capture-pane -e -p`: text with SGR escape sequences) into an HTML page
of the same cells, so that a browser can take its screenshot (scripts/screenshots).

usage: ansi-html.py < capture.txt > page.html"""

import html
import re
import sys

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
# xterm's 16 colours.
BASIC = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
         "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"]
FG, BG = "#d0d0d0", "#101418"


def colour256(n):
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    level = 8 + 10 * (n - 232)
    return "#%02x%02x%02x" % (level, level, level)


def apply(state, codes):
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            state.clear()
        elif c in (1, 2, 7):
            state[{1: "bold", 2: "dim", 7: "reverse"}[c]] = True
        elif c in (22, 27):
            for k in (("bold", "dim") if c == 22 else ("reverse",)):
                state.pop(k, None)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            state["fg"] = BASIC[c - 30 if c < 90 else c - 90 + 8]
        elif 40 <= c <= 47 or 100 <= c <= 107:
            state["bg"] = BASIC[c - 40 if c < 100 else c - 100 + 8]
        elif c in (39, 49):
            state.pop("fg" if c == 39 else "bg", None)
        elif c in (38, 48) and i + 1 < len(codes):
            key = "fg" if c == 38 else "bg"
            if codes[i + 1] == 5 and i + 2 < len(codes):
                state[key] = colour256(codes[i + 2])
                i += 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                state[key] = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                i += 4
        i += 1


def style(state):
    fg, bg = state.get("fg", FG), state.get("bg", BG)
    if state.get("reverse"):
        fg, bg = bg, fg
    css = [f"color:{fg}", f"background:{bg}"]
    if state.get("bold"):
        css.append("font-weight:bold")
    if state.get("dim"):
        css.append("opacity:0.6")
    return ";".join(css)


def main():
    text = sys.stdin.read()
    state = {}
    out = []
    for line in text.rstrip("\n").split("\n"):
        pos = 0
        for m in SGR.finditer(line):
            if m.start() > pos:
                out.append(f'<span style="{style(state)}">{html.escape(line[pos:m.start()])}</span>')
            apply(state, [int(c) if c else 0 for c in re.split("[;:]", m.group(1))])
            pos = m.end()
        if pos < len(line):
            out.append(f'<span style="{style(state)}">{html.escape(line[pos:])}</span>')
        out.append("\n")
    sys.stdout.write(f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: {BG}; }}
pre {{ margin: 0; padding: 8px; font: 14px/1.25 "DejaVu Sans Mono", monospace; color: {FG}; }}
</style></head><body><pre>{"".join(out)}</pre></body></html>
""")


if __name__ == "__main__":
    main()
