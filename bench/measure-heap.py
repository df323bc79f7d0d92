#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What recording a heap costs: wall time of two workloads, untraced and under each heap profiler, side by
side in one interleaved run (each round runs every configuration once, in turn, so that a change of the
machine's load hits all of them alike).

Usage: measure-heap.py BUILD_DIR [--rounds N] [--steps N] [--source FILE]

Workloads: (a) build/bench/malloc-bench: 4 threads freeing and allocating random sizes from 16 B to
64 KiB; (b) a real program, the C compiler on one of memstrack's larger sources (cc -O2 -c).
Configurations: untraced; memstrackctl record (default sampling, and --sample-interval=1); record --pid
(not there yet: said so); heaptrack; memleak-bpfcc -p (where bpfcc-tools is installed). A profiler that
is not installed is said so and skipped. Prints one Markdown table per workload: median wall time, its
ratio to untraced, and for malloc-bench the process's peak RSS (what it reports of itself).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, env):
    start = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit status {p.returncode}: {p.stderr.strip()[-500:]}")
    rss = None
    for line in p.stderr.splitlines():
        if line.startswith("maxrss_kib "):
            rss = int(line.split()[1])
    return wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1000000)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "report", "report-render.c"))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    ctl = os.path.join(build, "client", "memstrackctl")
    env = dict(os.environ, MEMSTRACKD=os.path.join(build, "daemon", "memstrackd"),
               MEMSTRACK_HEAP_LIBRARY=os.path.join(build, "heap", "libmemstrack-heap.so"))
    tmp = tempfile.mkdtemp(prefix="measure-heap.")
    src = os.path.abspath(a.source)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    inc = ["-I" + build] + ["-I" + os.path.join(root, d) for d in ("common", "report")]
    workloads = {
        "malloc-bench": [os.path.join(build, "bench", "malloc-bench"), str(a.steps)],
        "cc -O2 -c " + os.path.basename(src): ["cc", "-O2", "-D_GNU_SOURCE", "-c", src, "-o",
                                               os.path.join(tmp, "out.o")] + inc,
    }
    record = [ctl, "record", "--format", "heap_leaks", "--output", os.devnull, "--"]
    configs = [("untraced", lambda w: w),
               ("record (default, 1 stack per 512 KiB)", lambda w: record + w),
               ("record --sample-interval=1", lambda w: record[:2] + ["--sample-interval=1"] + record[2:] + w)]
    skipped = ["record --pid: not implemented yet"]
    if shutil.which("heaptrack"):
        configs.append(("heaptrack", lambda w: ["heaptrack", "-o", os.path.join(tmp, "ht")] + w))
    else:
        skipped.append("heaptrack: not installed")
    if shutil.which("memleak-bpfcc"):
        skipped.append("memleak-bpfcc -p: attaches to a running pid; not driven by this script yet")
    else:
        skipped.append("memleak-bpfcc -p: not installed (bpfcc-tools)")

    results = {(w, c): [] for w in workloads for c, _ in configs}
    rss = {(w, c): [] for w in workloads for c, _ in configs}
    for r in range(a.rounds):
        for w, cmd in workloads.items():
            for c, make in configs:
                wall, kib = run(make(cmd), env)
                results[(w, c)].append(wall)
                if kib:
                    rss[(w, c)].append(kib)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    for w in workloads:
        base = statistics.median(results[(w, "untraced")])
        print(f"\n{w} (median of {a.rounds} interleaved rounds)\n")
        print("| configuration | wall (s) | vs untraced | peak RSS (MiB) |")
        print("| --- | --- | --- | --- |")
        for c, _ in configs:
            m = statistics.median(results[(w, c)])
            kib = statistics.median(rss[(w, c)]) if rss[(w, c)] else None
            print(f"| {c} | {m:.3f} | {m / base:.2f}x | {kib / 1024:.1f} |" if kib else
                  f"| {c} | {m:.3f} | {m / base:.2f}x | |")
    for s in skipped:
        print(f"\nnot measured: {s}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
