#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What each piece of an in-kernel exact mode costs per page, measured alone (not a test: the numbers depend
on the machine; docs/performance.md, "The floor of a BPF program").

Runs bench/bpf-floor VARIANT (bpf-floor.bpf.c says what each variant does) around the page-fault load of
measure-overhead.py (loadgen mapping, touching and unmapping CHUNK-MiB regions on one CPU), interleaved with
untraced runs (U A U B U ...), in random order per round. Two figures per variant:
  - the load's added CPU per page (user + system from wait4(), where the programs run), median and range
    over rounds, kernel.bpf_stats_enabled off;
  - ns per program run and per page event from the kernel's own timing (kernel.bpf_stats_enabled on for a
    second pass of every variant, restored after; the timing adds two clock reads, ~40-50 ns, to every run,
    so these figures are the programs' cost plus that), and the recursion misses.

The fentry variant is exact mode's floor on fentry/fexit programs, where the kernel has BPF trampolines
(not this machine's kernel: run it in the kernel lab); fcover says whether those functions see every page.

Usage: bench/measure-bpf-floor.py [--build DIR] [--rounds N] [--seconds S] [--threads N] [VARIANT ...] (root)
Default: every variant, 6 rounds of 2 s: about 6 minutes.
"""

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("measure_overhead", os.path.join(HERE, "measure-overhead.py"))
overhead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(overhead)

VARIANTS = ["empty", "owner", "twin", "total", "cgroup", "kstack", "getstack", "cell", "storage", "counter", "seq",
            "clock", "fentry", "fcover"]
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def traced(exe, variant, build, seconds, chunk_pages, threads):
    p = subprocess.Popen([exe, variant], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        p.wait()
        raise RuntimeError(f"bpf-floor {variant} did not start")
    try:
        load = overhead.loadgen(build, seconds, chunk_pages, threads)
    finally:
        p.stdin.close()
        out = p.stdout.read()
        p.wait()
    fields = dict(w.split("=", 1) for w in out.split() if "=" in w)
    return load, {k: int(v) for k, v in fields.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variants", nargs="*", default=VARIANTS)
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=int, default=2)
    p.add_argument("--chunk-mib", type=int, default=64)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--threads", type=int, default=1,
                   help="load threads (default 1; 2 on 2 CPUs shows what a line shared by the CPUs costs)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("measure-bpf-floor.py: needs root", file=sys.stderr)
        return 77
    exe = os.path.join(args.build, "bench", "bpf-floor")
    chunk_pages = args.chunk_mib * 1024 * 1024 // overhead.PAGE_SIZE
    rng = random.Random(args.seed)
    started = time.monotonic()
    with open(STATS) as f:
        stats_before = f.read().strip()
    added = {v: [] for v in args.variants}
    timing = {v: [] for v in args.variants}
    untraced = []
    loads = []
    try:
        for phase in ("cpu", "timing"):
            with open(STATS, "w") as f:
                f.write("1" if phase == "timing" else "0")
            for rnd in range(args.rounds if phase == "cpu" else max(1, args.rounds // 2)):
                order = list(args.variants)
                rng.shuffle(order)
                loads.append(os.getloadavg()[0])
                prev = overhead.loadgen(args.build, args.seconds, chunk_pages, args.threads)
                untraced.append(prev["cpu_us_per_page"])
                for v in order:
                    load, fields = traced(exe, v, args.build, args.seconds, chunk_pages, args.threads)
                    after = overhead.loadgen(args.build, args.seconds, chunk_pages, args.threads)
                    untraced.append(after["cpu_us_per_page"])
                    if phase == "cpu":
                        base = (prev["cpu_us_per_page"] + after["cpu_us_per_page"]) / 2
                        added[v].append(load["cpu_us_per_page"] - base)
                    else:
                        timing[v].append((load, fields))
                    prev = after
                print(f"{phase} round {rnd + 1} done, load average {loads[-1]:.1f}", file=sys.stderr, flush=True)
    finally:
        with open(STATS, "w") as f:
            f.write(stats_before)

    print(f"untraced: {statistics.median(untraced):.2f} us CPU per page ({min(untraced):.2f} to "
          f"{max(untraced):.2f}); load average {min(loads):.1f} to {max(loads):.1f}\n")
    print("| variant | added CPU us per page, median (range) | ns per program run (timing on) | "
          "ns per page event | recursion misses per million events |")
    print("| --- | --- | --- | --- | --- |")
    for v in args.variants:
        per_run, per_event, misses = [], [], []
        for load, f in timing[v]:
            if f.get("run_cnt"):
                per_run.append(f["run_time_ns"] / f["run_cnt"])
                # Two page events a page (its allocation and its free), whatever programs run.
                events = 2 * load["pages"]
                per_event.append(f["run_time_ns"] / events)
                misses.append(1e6 * f["recursion_misses"] / f["run_cnt"])
        rng_txt = lambda xs: f"{statistics.median(xs):.0f} ({min(xs):.0f} to {max(xs):.0f})" if xs else "n/a"
        print(f"| {v} | {overhead.fmt_range(added[v])} | {rng_txt(per_run)} | {rng_txt(per_event)} | "
              f"{rng_txt(misses)} |")
    # fcover: the fentry programs beside the tracepoints, each counting pages: what the functions miss.
    for v in args.variants:
        for load, f in timing[v]:
            if f.get("tp_alloc_pages"):
                print(f"\n{v}: the functions counted {f.get('f_alloc_pages', 0)} pages allocated and "
                      f"{f.get('f_free_pages', 0)} freed where the tracepoints counted {f['tp_alloc_pages']} and "
                      f"{f['tp_free_pages']} (load: {load['pages']} pages)")
    print(f"\n# took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
