#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The places that list the report formats list exactly the formats of the table (report-formats.c).

Usage: check-report-formats.py PRINT_REPORT_FORMATS MEMSTRACKCTL SOURCE_ROOT

The table is what PRINT_REPORT_FORMATS prints ("NAME FAMILY" a line). memstrackctl --help takes its list
from the table (client/main.c's option table), and the shell completions take theirs from --help's
listing (test-completion checks them against --help); here --help must list the table's formats in its
order. memstrackctl(1)'s REPORT FORMATS section is written by hand: it must describe each format and no
other. Each format's family must be a file report/render-FAMILY.c that defines the format's entry. A
format added to the table without its man page (or removed and left there) fails here, naming the place.
"""
import os
import re
import subprocess
import sys


def table(program):
        out = subprocess.run([program], check=True, capture_output=True, text=True).stdout
        rows = [line.split() for line in out.splitlines() if line.strip()]
        if not rows or any(len(r) != 2 for r in rows):
                sys.exit(f"{program} printed no table of formats:\n{out}")
        return rows


def help_formats(ctl):
        """The names after "--format=LIST report:" up to the "(default" line of --help, in order."""
        text = subprocess.run([ctl, "--help"], check=True, capture_output=True, text=True).stdout
        m = re.search(r"--format=LIST\s+\S*report:(.*?)\(default", text, re.S)
        if not m:
                return None
        return [w for w in re.split(r"[\s,]+", m.group(1)) if w]


def man_formats(path):
        """The names a .B/.BR line right after each .TP of the REPORT FORMATS section gives, in order."""
        lines = open(path, encoding="utf-8").read().splitlines()
        try:
                start = lines.index(".SH REPORT FORMATS")
        except ValueError:
                return None
        names = []
        for prev, line in zip(lines[start:], lines[start + 1:]):
                if line.startswith(".SH"):
                        break
                if line.startswith(".PP"):
                        break       # the sub-arguments follow, in a list of their own
                if prev == ".TP" and line.startswith((".B ", ".BR ")):
                        words = re.sub(r'"[^"]*"', " ", line.split(None, 1)[1])
                        names += re.findall(r"[a-z][a-z0-9_]*", words)
        return names


def main():
        if len(sys.argv) != 4:
                sys.exit(__doc__)
        program, ctl, root = sys.argv[1:]
        rows = table(program)
        names = [name for name, _ in rows]
        errors = []

        for name, family in rows:
                path = os.path.join(root, "report", f"render-{family}.c")
                if not os.path.exists(path):
                        errors.append(f"{name}: its family {family} has no file {path}")
                elif not re.search(rf"\bconst ReportFormat report_format_{name} = {{",
                                   open(path, encoding="utf-8").read()):
                        errors.append(f"{name}: {path} does not define report_format_{name}")

        for where, listed in {"memstrackctl --help (--format=LIST)": help_formats(ctl)}.items():
                if listed is None:
                        errors.append(f"{where}: no list of formats found")
                elif listed != names:
                        missing = [n for n in names if n not in listed]
                        extra = [n for n in listed if n not in names]
                        errors.append(f"{where} lists {' '.join(listed)}; the table has {' '.join(names)}"
                                      f" (missing: {' '.join(missing) or '-'};"
                                      f" not in the table: {' '.join(extra) or '-'})")

        man = man_formats(os.path.join(root, "docs", "memstrackctl.1"))
        if not man:
                errors.append("docs/memstrackctl.1: no REPORT FORMATS section found")
        else:
                for n in names:
                        if n not in man:
                                errors.append(f"docs/memstrackctl.1: REPORT FORMATS does not describe {n}")
                for n in man:
                        if n not in names:
                                errors.append(f"docs/memstrackctl.1: REPORT FORMATS describes {n}, "
                                              "which the table lacks")
                for n in set(man):
                        if man.count(n) > 1:
                                errors.append(f"docs/memstrackctl.1: REPORT FORMATS describes {n} twice")

        for e in errors:
                print(f"FAIL: {e}")
        if errors:
                return 1
        print(f"ok: the {len(names)} formats of the table, and only they, are in --help and memstrackctl(1), "
              f"each defined in its family's file")
        return 0


if __name__ == "__main__":
        sys.exit(main())
