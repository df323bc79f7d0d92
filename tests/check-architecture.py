#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keeps docs/architecture.md true to the code: every function it names exists.

Usage: check-architecture.py SOURCE_ROOT

Every identifier the page writes as NAME() (in its text, its code spans and its diagram alike) must be
defined or declared as a function in a .c or .h file (.bpf.c included) of the source folders below.
Comments are removed first, so a name that only a comment mentions does not count. A line defines or
declares NAME when NAME( is the first call-like text on it (attributes aside) and what comes before is
nothing, in column 0, or only type words and stars (`static int foo(`, `EXPORT void *malloc(`,
`__attribute__((noinline)) static void foo(`): no keyword such as return or if, no assignment, no call around
it. BPF programs, written `int BPF_PROG(NAME, ...)`, count as functions called NAME. Each missing name is
printed; the exit status is 1 if any is missing, else 0 with the number of names checked.
"""
import os
import re
import sys

DOC = os.path.join("docs", "architecture.md")
FOLDERS = ("daemon", "client", "report", "protocol", "heap", "common", "metrics")

CITED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\)")
ATTRIBUTE = re.compile(r"__attribute__[ \t]*\(\(.*?\)\)")
FIRST_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
TYPE_WORDS = re.compile(r"[A-Za-z0-9_ \t*]*")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BPF_PROGRAM = re.compile(r"\bBPF_PROG[ \t]*\([ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*,")
KEYWORDS = {"return", "if", "else", "while", "for", "do", "switch", "case", "goto", "sizeof", "typeof",
            "__typeof__", "alignof", "_Alignof", "_Static_assert", "static_assert", "defined"}


def strip_comments(text):
        """text without its /* */ and // comments (newlines kept, so lines stay lines); strings stay."""
        out = []
        i, n = 0, len(text)
        while i < n:
                c = text[i]
                if c == "/" and text.startswith("/*", i):
                        end = text.find("*/", i + 2)
                        end = n if end < 0 else end + 2
                        out.append("\n" * text.count("\n", i, end) or " ")
                        i = end
                elif c == "/" and text.startswith("//", i):
                        end = text.find("\n", i)
                        i = n if end < 0 else end
                elif c in "\"'":
                        j = i + 1
                        while j < n and text[j] != c and text[j] != "\n":
                                j += 2 if text[j] == "\\" else 1
                        out.append(text[i:j + 1])
                        i = j + 1
                else:
                        out.append(c)
                        i += 1
        return "".join(out)


def defined_names(text):
        """The function names text (without comments) defines or declares."""
        names = set(BPF_PROGRAM.findall(text))
        for line in text.split("\n"):
                line = ATTRIBUTE.sub(" ", line)
                m = FIRST_CALL.search(line)
                if not m or m.group(1) in KEYWORDS:
                        continue
                prefix = line[:m.start()]
                if not TYPE_WORDS.fullmatch(prefix):
                        continue
                words = WORD.findall(prefix)
                if any(w in KEYWORDS for w in words):
                        continue
                # A call alone on its line (a statement, or an argument on a continuation line) has no words
                # before it but is indented; a definition whose type is on the line before starts in column 0.
                if words or prefix == "":
                        names.add(m.group(1))
        return names


def source_files(root):
        for folder in FOLDERS:
                for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
                        dirnames.sort()
                        for f in sorted(filenames):
                                if f.endswith((".c", ".h")):
                                        yield os.path.join(dirpath, f)


def main(argv):
        if len(argv) != 2:
                print(__doc__.strip(), file=sys.stderr)
                return 2
        root = argv[1]
        try:
                with open(os.path.join(root, DOC), encoding="utf-8") as f:
                        doc = f.read()
        except OSError as e:
                print(f"{DOC}: {e.strerror}", file=sys.stderr)
                return 1
        cited = sorted(set(CITED.findall(doc)))
        if not cited:
                print(f"{DOC}: no function written as NAME() found: nothing to check", file=sys.stderr)
                return 1

        defined = set()
        n_files = 0
        for path in source_files(root):
                with open(path, encoding="utf-8", errors="replace") as f:
                        defined |= defined_names(strip_comments(f.read()))
                n_files += 1
        if n_files == 0:
                print(f"{root}: no .c or .h file in {', '.join(FOLDERS)}", file=sys.stderr)
                return 1

        missing = [name for name in cited if name not in defined]
        for name in missing:
                print(f"{DOC}: {name}() is not defined or declared in {', '.join(FOLDERS)}")
        if missing:
                print(f"{len(missing)} of {len(cited)} function names in {DOC} missing")
                return 1
        print(f"{len(cited)} function names in {DOC} checked against {n_files} source files: all defined")
        return 0


if __name__ == "__main__":
        sys.exit(main(sys.argv))
