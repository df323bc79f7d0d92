#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What tracing adds to real work: a C project built from clean, repeatedly, untraced and traced (not a
test: the numbers depend on the machine; docs/performance.md, "The cost on a real workload").

The work is memstrack's own C sources compiled by make: the script turns BUILD/compile_commands.json
(written by meson) into a Makefile with one rule per object, the compiler commands unchanged but their
objects written to a private directory, and runs `make -B -jJOBS` on it BUILDS times per run. Why these
sources: they are always there, offline and in CI, need no package beyond what builds memstrack, and a
compile is the kind of work the daemon is meant to sit beside all the time (many short processes, each
mapping, faulting and freeing memory: about 150 k page events a second on two CPUs).

Each round runs every configuration once, in a random order, with an untraced run before the first and
after each one (U A U B U ...), so drifting background load hits all alike. A configuration's cost in a
round is its wall time (and the builds' CPU time: user + system of make and everything it ran, from
wait4()) against the mean of the two untraced runs around it, in per cent; the report gives the median
and the range over rounds. Beside it: the tracer's own CPU, the page events it saw per second, what it
lost (Status lostEvents, lostByReason; the BPF programs' recursion misses) and the load average at the
start of each run (the machine's other work, which the interleaving does not fully cancel).

Configurations are memstrackd argument strings, LABEL=ARGS (LABEL@PATH=ARGS runs another build's
memstrackd). Default: exact="--source ebpf" full="--source ebpf --stack-sample-interval 1"
perf="--source perf". Two kinds of reference tracer can sit beside them, to tell what any tracer must cost
on this kernel from what memstrackd adds to it:
  --floor VARIANT  bench/bpf-floor VARIANT (bench/bpf-floor.bpf.c says what each does): e.g. `empty`, two
                   programs that return at once, the floor of any exact mode; `twin`, ownership and counters in
                   the kernel with a nested twin on the free; `owner`, `total`, `kstack`. Row floor-VARIANT.
  --bpftrace       bpftrace's `@[kstack] = count()` on mm_page_alloc (a count per kernel stack, kept in the
                   kernel): the floor of full mode. Row bpftrace-kstack; left out if bpftrace is not installed.
Their page events are what their programs counted (bpftrace counts allocations only; bpf-floor's programs
count only with --bpf-stats); their own CPU is almost nothing, since their programs run in the traced
tasks and are charged to the builds. With either option and no LABEL=ARGS, only the reference tracers run.

Usage: bench/measure-build.py [--build DIR] [--builds N] [--rounds N] [--jobs J] [--floor VARIANT[,VARIANT]]
                              [--bpftrace] [LABEL=ARGS ...]  (root)
The defaults (10 builds per run, 4 rounds, 3 configurations: 28 runs of 10 builds) take about 45 minutes
on a quiet 2-CPU machine; --builds 3 --rounds 3 about 12.
"""

import argparse
import importlib.util
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("measure_overhead", os.path.join(HERE, "measure-overhead.py"))
overhead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(overhead)

DEFAULT_CONFIGS = [
    'exact=--source ebpf',
    'full=--source ebpf --stack-sample-interval 1',
    'perf=--source perf',
]
# Compiler options that name files of the meson build (dependency files) or only colour its output.
DROP_WITH_VALUE = ("-o", "-MQ", "-MF", "-MT")
DROP_ALONE = ("-MD", "-MMD", "-fdiagnostics-color=always")


class BpfFloor:
    """bench/bpf-floor VARIANT as a tracer: loaded until its stdin closes, then prints its programs' counts."""
    kind = "bpf-floor"

    def __init__(self, variant, exe):
        self.variant, self.exe = variant, exe
        self.label = f"floor-{variant}"
        self.args = [variant]
        self.backend = "bpf-floor"
        self.proc = None

    def describe(self):
        return f"bench/bpf-floor {self.variant}"

    def start(self):
        self.proc = subprocess.Popen([self.exe, self.variant], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            err = self.proc.stderr.read().strip()
            self.proc.wait()
            self.proc = None
            raise overhead.Unavailable(err.splitlines()[-1] if err else "bpf-floor did not start")

    def sample(self):
        return {"cpu": overhead.livelib.process_cpu_seconds(self.proc.pid), "events": None, "lost": 0,
                "lost_by_reason": None, "bpf": overhead.bpf_prog_stats(self.proc.pid)}

    def stop(self):
        """Stops bpf-floor; the page events its main pair of programs ran for (the twin's runs left out)."""
        if not self.proc:
            return None
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        self.proc.wait()
        self.proc = None
        fields = dict(w.split("=", 1) for w in out.split() if "=" in w)
        return sum(int(v) for k, v in fields.items()
                   if k.endswith(".run_cnt") and not k.startswith("twin_"))


class Bpftrace(overhead.Bpftrace):
    """measure-overhead.py's bpftrace tracer, with the figures run() reads."""

    def __init__(self, label, program, work):
        super().__init__(label, program, work)
        self.args = ["-e", program]

    def sample(self):
        r = super().sample()
        r["lost"] = 0
        return r


def write_makefile(build, objdir):
    """A Makefile compiling every C file of BUILD's compile_commands.json into objdir; its path and the
    number of objects."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    rules = []
    for i, entry in enumerate(commands):
        args = shlex.split(entry["command"])
        out, skip = [], False
        for arg in args:
            if skip:
                skip = False
                continue
            if arg in DROP_WITH_VALUE:
                skip = True
                continue
            if arg in DROP_ALONE:
                continue
            out.append(arg)
        obj = os.path.join(objdir, f"o{i}.o")
        cmd = " ".join(shlex.quote(a) for a in out + ["-o", obj])
        rules.append((obj, f"cd {shlex.quote(entry['directory'])} && {cmd}"))
    path = os.path.join(objdir, "Makefile")
    with open(path, "w") as f:
        f.write(".PHONY: all\nall: " + " ".join(o for o, _ in rules) + "\n")
        for obj, cmd in rules:
            f.write(f"{obj}:\n\t@{cmd.replace('$', '$$')}\n")
    return path, len(rules)


def build_once(makefile, jobs):
    """One `make -B`; (wall seconds, CPU seconds of make and all it ran)."""
    start = time.monotonic()
    p = subprocess.Popen(["make", "-s", "-B", f"-j{jobs}", "-f", makefile], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    err = p.stderr.read().decode(errors="replace").strip()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"make failed: {err[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def prog_stats(pid):
    """run_time_ns and run_cnt of each BPF program whose fd pid holds, by program id."""
    return {i: (p["run_time_ns"], p["run_cnt"]) for i, p in overhead.bpf_programs(pid).items()
            if "run_time_ns" in p}


def prog_names(ids):
    names = {}
    for i in ids:
        try:
            out = subprocess.run(["bpftool", "prog", "show", "id", str(i), "-j"], capture_output=True, text=True,
                                 check=True).stdout
            names[i] = json.loads(out).get("name", str(i))
        except (OSError, subprocess.CalledProcessError, ValueError):
            names[i] = str(i)
    return names


def reasons(lost_by_reason):
    """Status lostByReason ([{reason, count}]) as a dict."""
    return {e["reason"]: e["count"] for e in lost_by_reason or [] if isinstance(e, dict)}


def run(tracer, makefile, jobs, builds):
    """builds builds, traced by tracer (None: untraced): wall, CPU and the tracer's figures."""
    load = os.getloadavg()[0]
    if tracer:
        tracer.start()
    try:
        before = tracer.sample() if tracer else None
        progs_before = prog_stats(tracer.proc.pid) if tracer else {}
        wall = cpu = 0.0
        for _ in range(builds):
            w, c = build_once(makefile, jobs)
            wall += w
            cpu += c
        after = tracer.sample() if tracer else None
        progs_after = prog_stats(tracer.proc.pid) if tracer else {}
        names = prog_names(progs_after) if progs_after else {}
    finally:
        counted = tracer.stop() if tracer else None
    r = {"wall": wall, "cpu": cpu, "load": load}
    if tracer:
        # A reference tracer's events are what its programs counted, known once it stopped.
        r["events"] = after["events"] - before["events"] if after["events"] is not None else counted or 0
        r["tracer_cpu"] = after["cpu"] - before["cpu"]
        r["lost"] = after["lost"] - before["lost"]
        was = reasons(before["lost_by_reason"])
        r["lost_by_reason"] = {k: v - was.get(k, 0) for k, v in reasons(after["lost_by_reason"]).items()}
        r["bpf"] = {k: after["bpf"][k] - before["bpf"][k] for k in ("run_time_ns", "run_cnt", "recursion_misses")}
        r["bpf"]["programs"] = after["bpf"]["programs"]
        r["per_program"] = {}
        for i, (ns, cnt) in progs_after.items():
            ns0, cnt0 = progs_before.get(i, (0, 0))
            name = names.get(i, str(i))
            t = r["per_program"].setdefault(name, [0, 0])
            t[0] += ns - ns0
            t[1] += cnt - cnt0
    return r


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("configs", nargs="*", metavar="LABEL[@MEMSTRACKD]=ARGS",
                   help="memstrackd configurations (default: " + " ".join(DEFAULT_CONFIGS) + ")")
    p.add_argument("--build", default="build", help="build directory, its compile_commands.json the work "
                   "and its memstrackd the tracer (default build)")
    p.add_argument("--builds", type=int, default=10, help="builds from clean per run (default 10)")
    p.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="make -j (default: the CPUs)")
    p.add_argument("--seed", type=int, default=None, help="seed of the per-round order (default: random)")
    p.add_argument("--json", metavar="FILE", help="write every run's raw figures to FILE")
    p.add_argument("--floor", action="append", default=[], metavar="VARIANT[,VARIANT]",
                   help="add bench/bpf-floor VARIANT as a configuration (floor-VARIANT); repeatable")
    p.add_argument("--bpftrace", action="store_true",
                   help="add bpftrace's `@[kstack] = count()` on mm_page_alloc (bpftrace-kstack), if installed")
    p.add_argument("--bpf-stats", action="store_true",
                   help="turn kernel.bpf_stats_enabled on for the run (restored after) and report each BPF "
                        "program's ns per run and share of the CPUs; the timing adds ~50 ns to every run, so "
                        "the added wall and CPU then include it")
    args = p.parse_args()
    if args.builds < 1 or args.rounds < 1 or args.jobs < 1:
        p.error("--builds, --rounds and --jobs must be at least 1")
    args.floor = [v for spec in args.floor for v in spec.split(",") if v]
    return args


def pct(values):
    if not values:
        return "n/a"
    return f"{statistics.median(values):+.1f} % ({min(values):+.1f} to {max(values):+.1f})"


def main():
    args = parse_args()
    if os.geteuid() != 0:
        print("measure-build.py: needs root (tracepoints, BPF)", file=sys.stderr)
        return 77
    build = os.path.abspath(args.build)
    default_exe = os.path.join(build, "daemon", "memstrackd")
    work = tempfile.mkdtemp(prefix="memstrack-build-bench.")
    objdir = os.path.join(work, "objects")
    os.mkdir(objdir)
    makefile, n_objects = write_makefile(build, objdir)
    tracers = []
    notes = []
    floor_exe = os.path.join(build, "bench", "bpf-floor")
    if args.floor and not os.access(floor_exe, os.X_OK):
        print(f"measure-build.py: no {floor_exe} (built with the eBPF source)", file=sys.stderr)
        return 1
    for spec in args.configs or ([] if args.floor or args.bpftrace else DEFAULT_CONFIGS):
        label, sep, rest = spec.partition("=")
        if not sep:
            print(f"measure-build.py: {spec!r} is not LABEL=ARGS", file=sys.stderr)
            return 2
        label, _, exe = label.partition("@")
        tracers.append(overhead.Memstrackd(label, os.path.abspath(exe) if exe else default_exe,
                                           shlex.split(rest), work))
    tracers += [BpfFloor(v, floor_exe) for v in args.floor]
    if args.bpftrace:
        if shutil.which("bpftrace"):
            tracers.append(Bpftrace(*overhead.BPFTRACE_PROGRAMS[0], work))
        else:
            notes.append("bpftrace is not installed: bpftrace-kstack left out")
    labels = [t.label for t in tracers]
    if len(set(labels)) != len(labels):
        print(f"measure-build.py: a label is given twice: {' '.join(labels)}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    started = time.monotonic()
    stats_path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(stats_path) as f:
        stats_before = f.read().strip()
    if args.bpf_stats:
        with open(stats_path, "w") as f:
            f.write("1")
    try:
        return measure(args, build, makefile, n_objects, tracers, rng, started, work, notes)
    finally:
        if args.bpf_stats:
            with open(stats_path, "w") as f:
                f.write(stats_before)


def measure(args, build, makefile, n_objects, tracers, rng, started, work, notes):
    print(f"# {n_objects} objects, make -B -j{args.jobs}, {args.builds} builds per run, {args.rounds} rounds, "
          f"{os.cpu_count()} CPUs, Linux {os.uname().release}")
    for note in notes:
        print(f"# {note}")
    build_once(makefile, args.jobs)         # warm the page cache: the first build reads every header
    runs = {t.label: [] for t in tracers}
    untraced = []
    unavailable = {}
    for rnd in range(args.rounds):
        order = [t for t in tracers if t.label not in unavailable]
        rng.shuffle(order)
        prev = run(None, makefile, args.jobs, args.builds)
        untraced.append(prev)
        print(f"round {rnd + 1}: untraced {prev['wall']:.1f} s wall, {prev['cpu']:.1f} s CPU, "
              f"load {prev['load']:.1f}", flush=True)
        for t in order:
            try:
                r = run(t, makefile, args.jobs, args.builds)
            except overhead.Unavailable as e:
                unavailable[t.label] = str(e)
                print(f"round {rnd + 1}: {t.label} not available: {e}", flush=True)
                continue
            after = run(None, makefile, args.jobs, args.builds)
            untraced.append(after)
            base_wall = (prev["wall"] + after["wall"]) / 2
            base_cpu = (prev["cpu"] + after["cpu"]) / 2
            r["added_wall"] = 100 * (r["wall"] / base_wall - 1)
            r["added_cpu"] = 100 * (r["cpu"] / base_cpu - 1)
            r["backend"] = t.backend
            runs[t.label].append(r)
            print(f"round {rnd + 1}: {t.label} {r['wall']:.1f} s wall ({r['added_wall']:+.1f} %), {r['cpu']:.1f} s "
                  f"CPU ({r['added_cpu']:+.1f} %), {r['events'] / r['wall'] / 1e3:.0f} k events/s, lost "
                  f"{r['lost']}, load {r['load']:.1f}; untraced after {after['wall']:.1f} s", flush=True)
            prev = after

    walls = [u["wall"] / args.builds for u in untraced]
    loads = [r["load"] for rs in runs.values() for r in rs] + [u["load"] for u in untraced]
    print(f"\nuntraced: {statistics.median(walls):.2f} s wall per build ({min(walls):.2f} to {max(walls):.2f}), "
          f"{statistics.median([u['cpu'] / args.builds for u in untraced]):.2f} s CPU; load average at the "
          f"runs' starts {min(loads):.1f} to {max(loads):.1f}\n")
    print("| configuration | added wall, median (range) | added CPU of the builds | tracer CPU "
          "(% of one CPU) | page events/s | tracer CPU per event | lost | BPF recursion misses |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in tracers:
        if t.label in unavailable:
            print(f"| {t.label} | not available: {unavailable[t.label]} | | | | | | |")
            continue
        rs = runs[t.label]
        events = sum(r["events"] for r in rs)
        tracer_cpu = sum(r["tracer_cpu"] for r in rs)
        wall = sum(r["wall"] for r in rs)
        reasons = {}
        for r in rs:
            for k, v in r["lost_by_reason"].items():
                reasons[k] = reasons.get(k, 0) + v
        lost = f"{sum(r['lost'] for r in rs)}"
        if any(reasons.values()):
            lost += " (" + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()) if v) + ")"
        misses = sum(r["bpf"]["recursion_misses"] for r in rs)
        what = t.describe() if t.kind != "memstrackd" else shlex.join(t.args)
        # bpf-floor counts its programs' runs only with --bpf-stats (the kernel's run_cnt).
        rate = f"{events / wall / 1e3:.0f} k" if events else "n/a"
        per_event = f"{tracer_cpu / events * 1e6:.3f} us" if events else "n/a"
        print(f"| {t.label} (`{what}`) | {pct([r['added_wall'] for r in rs])} | "
              f"{pct([r['added_cpu'] for r in rs])} | {100 * tracer_cpu / wall:.1f} % | {rate} | {per_event} | {lost} | "
              f"{misses if any(r['bpf']['programs'] for r in rs) else 'n/a'} |")
    if args.bpf_stats:
        print("\n| configuration | BPF program | runs per second of build | ns per run | share of the CPUs |")
        print("| --- | --- | --- | --- | --- |")
        ncpu = os.cpu_count()
        for t in tracers:
            rs = runs.get(t.label, [])
            wall = sum(r["wall"] for r in rs)
            total = {}
            for r in rs:
                for name, (ns, cnt) in r.get("per_program", {}).items():
                    v = total.setdefault(name, [0, 0])
                    v[0] += ns
                    v[1] += cnt
            for name, (ns, cnt) in sorted(total.items(), key=lambda kv: -kv[1][0]):
                if cnt:
                    print(f"| {t.label} | {name} | {cnt / wall / 1e3:.1f} k | {ns / cnt:.0f} | "
                          f"{100 * ns / 1e9 / wall / ncpu:.2f} % |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"untraced": untraced, "runs": runs, "unavailable": unavailable}, f, indent=1)
    print(f"\n# took {time.monotonic() - started:.0f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
