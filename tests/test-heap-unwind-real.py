#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The heap library's unwinder against glibc's backtrace() in real programs: the C compiler (cc1, deep
stacks of optimized code without frame pointers), the C++ compiler, and Python. libheap-unwind-check.so,
preloaded, takes every 16th malloc()'s stack both ways and counts the stacks where they differ; each
process appends its counts to a file. Passes when no stack differed and enough stacks were compared.

Usage: test-heap-unwind-real.py CHECK_LIBRARY SOURCE_C SOURCE_CXX INCLUDE_DIR...
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def main():
    lib, source_c, source_cxx = sys.argv[1:4]
    includes = ["-I" + d for d in sys.argv[4:]]
    if os.uname().machine != "x86_64":
        print("the heap unwinder follows x86-64 frames only")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="heap-unwind-real.")
    out = os.path.join(tmp, "counts")
    open(out, "w").close()
    env = dict(os.environ, LD_PRELOAD=lib, HEAP_UNWIND_CHECK_OUTPUT=out)
    programs = []
    if shutil.which("cc"):
        programs.append(["cc", "-O2", "-D_GNU_SOURCE", "-c", source_c, "-o", os.path.join(tmp, "c.o")] + includes)
    if shutil.which("c++"):
        programs.append(["c++", "-O2", "-c", source_cxx, "-o", os.path.join(tmp, "cxx.o")])
    programs.append([sys.executable, "-c",
                     "import json, re\n"
                     "for i in range(2000): json.loads(json.dumps({'k%d' % j: [j] * 10 for j in range(50)}))\n"
                     "re.compile('(a|b)*c+[0-9]{3}')\n"])
    failed = False
    try:
        for cmd in programs:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                print(f"FAIL: {cmd[0]}: exit status {p.returncode}: {p.stderr.strip()[-400:]}")
                failed = True
        stacks = unsupported = mismatches = 0
        for line in open(out):
            pid, s, u, m, *first = line.split(" ", 4)
            stacks += int(s)
            unsupported += int(u)
            mismatches += int(m)
            if int(m):
                print(f"FAIL: process {pid}: {m} of {s} stacks differ; the first: {' '.join(first).strip()}")
                failed = True
        print(f"{stacks} stacks compared in {len(programs)} programs, {unsupported} unsupported "
              f"(backtrace() takes those), {mismatches} differ")
        if stacks < 500:
            print(f"FAIL: only {stacks} stacks compared")
            failed = True
    finally:
        shutil.rmtree(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
