#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Reads `tmux capture-pane -e -p` on stdin and answers questions about the attributes of its cells.
# capture-pane writes an SGR escape sequence only where the attributes change, even across lines, so
# the state is carried from cell to cell here as a terminal would.
#
#   sgr-cells.py has LINE_REGEX ATTR [PART_REGEX]
#       exit 0 if a non-blank cell of the first line matching LINE_REGEX (its text) has ATTR, within the
#       first match of PART_REGEX in that line if given. ATTR: bold, dim, reverse, fg=N or bg=N (N 0-7
#       for SGR 30-37/40-47, or 256-colour and RGB values as given).
#   sgr-cells.py lacks LINE_REGEX ATTR [PART_REGEX]    the opposite: no such cell has ATTR
#   sgr-cells.py colourless                            exit 0 if no cell has a foreground or background colour
import re
import sys

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(text):
    """Lines of (char, frozenset of attributes)."""
    state = {}
    lines = []
    for raw in text.split("\n"):
        line = []
        pos = 0
        while pos < len(raw):
            m = SGR.match(raw, pos)
            if m:
                codes = [int(c) if c else 0 for c in m.group(1).split(";")]
                i = 0
                while i < len(codes):
                    c = codes[i]
                    if c == 0:
                        state = {}
                    elif c == 1:
                        state["bold"] = True
                    elif c == 2:
                        state["dim"] = True
                    elif c == 22:
                        state.pop("bold", None)
                        state.pop("dim", None)
                    elif c == 7:
                        state["reverse"] = True
                    elif c == 27:
                        state.pop("reverse", None)
                    elif 30 <= c <= 37:
                        state["fg"] = str(c - 30)
                    elif 90 <= c <= 97:
                        state["fg"] = str(c - 90 + 8)
                    elif c == 39:
                        state.pop("fg", None)
                    elif 40 <= c <= 47:
                        state["bg"] = str(c - 40)
                    elif c == 49:
                        state.pop("bg", None)
                    elif c in (38, 48):
                        key = "fg" if c == 38 else "bg"
                        if i + 1 < len(codes) and codes[i + 1] == 5:
                            state[key] = str(codes[i + 2]) if i + 2 < len(codes) else "?"
                            i += 2
                        elif i + 1 < len(codes) and codes[i + 1] == 2:
                            state[key] = ",".join(str(x) for x in codes[i + 2:i + 5])
                            i += 4
                    i += 1
                pos = m.end()
                continue
            attrs = frozenset(k if v is True else f"{k}={v}" for k, v in state.items())
            line.append((raw[pos], attrs))
            pos += 1
        lines.append(line)
    return lines


def find(lines, line_regex, part_regex):
    for line in lines:
        text = "".join(c for c, _ in line)
        if re.search(line_regex, text):
            start, end = 0, len(line)
            if part_regex:
                m = re.search(part_regex, text)
                if not m:
                    return None
                start, end = m.span()
            return [a for c, a in line[start:end] if c != " "]
    return None


def main():
    lines = cells(sys.stdin.read())
    verb = sys.argv[1]
    if verb == "colourless":
        coloured = [(i + 1, "".join(c for c, _ in line).strip()[:40]) for i, line in enumerate(lines)
                    if any(any(x.startswith(("fg=", "bg=")) for x in a) for _, a in line)]
        if coloured:
            print(f"coloured cells on lines {coloured}", file=sys.stderr)
        sys.exit(1 if coloured else 0)
    attrs = find(lines, sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else None)
    if attrs is None:
        print(f"no line matches {sys.argv[2]!r}", file=sys.stderr)
        sys.exit(2)
    has = any(sys.argv[3] in a for a in attrs)
    sys.exit(0 if has == (verb == "has") else 1)


if __name__ == "__main__":
    main()
