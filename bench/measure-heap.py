#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What recording a heap costs: wall time of two workloads, untraced and under each heap profiler, side by
side in one interleaved run (each round runs every configuration once, in turn, so that a change of the
machine's load hits all of them alike).

Usage: measure-heap.py BUILD_DIR [--rounds N] [--steps N] [--attach-steps N] [--only-attached] [--no-attached]
                      [--baseline BUILD_DIR] [--only-small] [--callgrind [--callgrind-steps N]]

Workloads: (a) build/bench/malloc-bench: 4 threads freeing and allocating random sizes from 16 B to
64 KiB; (b) a real program, the C compiler on four of memstrack's larger sources in one run (cc -O2 -c:
the driver, four cc1 and four as, each a heap of its own; about 0.9 s untraced on the reference VM);
(c) the same compiler run on sixteen sources (the four and twelve more: 33 processes, about 3.5 s
untraced), where record's fixed cost weighs a quarter as much; (d) malloc-bench with one thread and
blocks of 16 to 216 bytes, the calls a compiler makes most (untraced and record only), timed on its steps
alone: the library's cost per call.
Configurations: untraced; memstrackctl record (default sampling, and --sample-interval=1); heaptrack.
A profiler that is not installed is said so and skipped. Prints one Markdown table per workload: median
wall time, its ratio to untraced, and for malloc-bench the process's peak RSS (what it reports of itself).
Then record's fixed cost: the median wall of recording /bin/true (a private memstrackd started and
stopped, one heap reported), which every recorded command pays once whatever it does. Every other round
runs the configurations in reverse order, so that a drift of the machine's load weighs on each alike.

--baseline BUILD_DIR compares a change of the library with the build it started from: the baseline build's
record configurations (its memstrackctl, memstrackd and library) join the same interleaved rounds on (d),
and a table gives each one's cost per call beside this build's, with the difference in percent (of the
medians, and the median of each round's own difference). --only-small measures (d) alone.
--callgrind counts instructions instead of time, the same whatever the machine's load: malloc-bench's (d)
with --callgrind-steps steps under valgrind --tool=callgrind, recorded by each build's record (default and
--sample-interval=1), and the library's own instructions per call (its every function, the start included;
the hooks malloc() and free() apart, with what they inline).

Then the profilers that attach to a running process, on malloc-bench --attach-steps (fewer: uprobes trap on
every call): untraced, record --pid (default and --sample-interval=1), memleak-bpfcc -p (bpfcc-tools;
its default: a stack for every allocation). malloc-bench waits for SIGUSR1 until the profiler is attached
and times its own steps, so the table compares the steps alone, and states the cost per call (each step
is a malloc and a free). Needs root; skipped otherwise.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


# record of a program that does nothing: what every recorded command pays once (untraced and default only)
FIXED = "/bin/true (record's fixed cost)"
FIXED_CONFIGS = ("untraced", "record (default, 1 stack per 512 KiB)")
# small blocks on one thread: the library's cost per call, from the steps' own wall time (untraced and record)
SMALL = "small blocks, 1 thread (malloc-bench STEPS 1 216)"
SMALL_CONFIGS = ("untraced", "record (default, 1 stack per 512 KiB)", "record --sample-interval=1")
# what --baseline's configurations add to the names of this build's
BASELINE = " [baseline]"


def record_configs(build, env, suffix):
    """record's configurations with the memstrackctl, memstrackd and library of build."""
    ctl = os.path.join(build, "client", "memstrackctl")
    benv = dict(env, MEMSTRACKD=os.path.join(build, "daemon", "memstrackd"),
                MEMSTRACK_HEAP_LIBRARY=os.path.join(build, "heap", "libmemstrack-heap.so"))
    record = [ctl, "record", "--format", "heap_leaks", "--output", os.devnull, "--"]
    return [("record (default, 1 stack per 512 KiB)" + suffix, lambda w: record + w, benv),
            ("record --sample-interval=1" + suffix, lambda w: record[:2] + ["--sample-interval=1"] + record[2:] + w,
             benv)]


def compare_baseline(steps, calls, rounds):
    """Each record configuration of (d) against the baseline build's: ns per call and the difference."""
    print(f"\nthis build against the baseline on (d), ns per call (median of {rounds} interleaved rounds)\n")
    print("| configuration | baseline | this build | difference | median of the rounds' differences |")
    print("| --- | --- | --- | --- | --- |")
    for c in SMALL_CONFIGS[1:]:
        new, old = steps[(SMALL, c)], steps[(SMALL, c + BASELINE)]
        mn, mo = statistics.median(new) / calls * 1e9, statistics.median(old) / calls * 1e9
        paired = statistics.median((n - o) / o * 100 for n, o in zip(new, old))
        print(f"| {c} | {mo:.2f} | {mn:.2f} | {(mn - mo) / mo * 100:+.1f} % | {paired:+.1f} % |")


def callgrind_costs(path, library):
    """Instructions of a callgrind output file (the Ir event alone): the self cost of every function in
    the object whose name ends with library, of its malloc() and free(), and the calls of those two."""
    tables = {"ob": {}, "fn": {}}

    def name(kind, rest):
        # name compression: "(id) name" defines an id, "(id)" alone uses it
        m = re.fullmatch(r"\((\d+)\)(?: (.*))?", rest)
        if not m:
            return rest
        if m.group(2) is not None:
            tables[kind][m.group(1)] = m.group(2)
        return tables[kind].get(m.group(1))

    ob = fn = cob = cfn = None
    in_call = False
    total = hooks = 0
    calls = {"malloc": 0, "free": 0}
    with open(path) as f:
        for line in f:
            key, eq, rest = line.rstrip("\n").partition("=")
            if eq and key == "ob":
                ob = cob = name("ob", rest)
            elif eq and key == "cob":
                cob = name("ob", rest)
            elif eq and key == "fn":
                fn, cob = name("fn", rest), ob
            elif eq and key == "cfn":
                cfn = name("fn", rest)
            elif eq and key == "calls":
                if cob and cob.endswith(library) and cfn in calls:
                    calls[cfn] += int(rest.split()[0])
                in_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if in_call:             # the inclusive cost of the call above: not the caller's own
                    in_call, cob = False, ob
                elif ob and ob.endswith(library):
                    cost = int(line.split()[-1])
                    total += cost
                    hooks += cost if fn in calls else 0
    return total, hooks, calls["malloc"] + calls["free"]


def measure_callgrind(a, bench, configs, tmp):
    """Instructions per call of the library on (d) under each record configuration, by callgrind; a fixed
    seed, so that each run samples the same calls."""
    if not shutil.which("valgrind"):
        sys.exit("--callgrind needs valgrind")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(tmp, "callgrind.out"),
           bench, str(a.callgrind_steps), "1", "216"]
    per_call = {}
    for c, make, cenv in configs:
        if not c.startswith("record"):
            continue
        run(make(cmd), dict(cenv, MEMSTRACK_HEAP_SEED="1"), tmp)
        total, hooks, calls = callgrind_costs(os.path.join(tmp, "callgrind.out"), "/libmemstrack-heap.so")
        if calls == 0:
            sys.exit(f"{c}: callgrind saw no call of the library's malloc() or free()")
        per_call[c] = (total / calls, hooks / calls)
    print(f"\n{SMALL.replace('STEPS', str(a.callgrind_steps))} under valgrind --tool=callgrind, instructions "
          "of the library per call\n")
    print("| configuration | the library's own, per call | malloc() and free() with what they inline, per call |")
    print("| --- | --- | --- |")
    for c, (total, hooks) in per_call.items():
        old = per_call.get(c + BASELINE)
        vs = f" ({(total - old[0]) / old[0] * 100:+.2f} % on the baseline)" if old else ""
        print(f"| {c} | {total:.1f}{vs} | {hooks:.1f} |")


def run(cmd, env, cwd):
    start = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit status {p.returncode}: {p.stderr.strip()[-500:]}")
    rss = steps = None
    for line in p.stderr.splitlines():
        if line.startswith("maxrss_kib "):
            rss = int(line.split()[1])
        if line.startswith("steps_wall_s "):
            steps = float(line.split()[1])
    return wall, rss, steps


def attached_run(cmd, env, attach):
    """The steps' own wall time of malloc-bench with attach(pid) -> (Popen, stop) attached before they start."""
    e = dict(env, MALLOC_BENCH_WAIT="1")
    bench = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if bench.stdout.readline().strip() != "ready":
        sys.exit("malloc-bench did not get ready")
    profiler, stop = attach(bench.pid) if attach else (None, None)
    bench.send_signal(signal.SIGUSR1)
    _, err = bench.communicate()
    if profiler:
        stop(profiler)
    if bench.returncode != 0:
        sys.exit(f"malloc-bench: exit status {bench.returncode}: {err[-300:]}")
    for line in err.splitlines():
        if line.startswith("steps_wall_s "):
            return float(line.split()[1])
    sys.exit("malloc-bench did not say how long it took")


def attach_record(ctl, env, args):
    def attach(pid):
        p = subprocess.Popen([ctl, "record", "--pid", str(pid), "--format", "heap_leaks", "--output", os.devnull]
                             + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if "recording the heap of process" in line:
                return p, lambda q: q.communicate()     # it ends with the process
        sys.exit(f"record --pid did not attach: {p.communicate()[1][-300:]}")
    return attach


def attach_memleak(pid):
    p = subprocess.Popen(["memleak-bpfcc", "-p", str(pid), "3600"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        if "Attaching to pid" in line:
            # bcc attaches after it says so: give its uprobes the time to be in place (no event says it)
            time.sleep(2)

            def stop(q):
                q.send_signal(signal.SIGINT)
                q.communicate()
            return p, stop
    sys.exit(f"memleak-bpfcc did not attach: {p.communicate()[0][-300:]}")


def memleak_cannot_run():
    """Why memleak-bpfcc cannot attach here (bcc compiles its program at run time, against the running
    kernel's headers), or None."""
    if not shutil.which("memleak-bpfcc"):
        return "not installed (bpfcc-tools)"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        p = subprocess.run(["memleak-bpfcc", "-p", str(sleeper.pid), "1", "1"], capture_output=True, text=True,
                           timeout=120)
    finally:
        sleeper.kill()
        sleeper.wait()
    if "Attaching to pid" in p.stdout:
        return None
    lines = [x for x in (p.stdout + p.stderr).splitlines() if x.strip()]
    return "cannot run here: " + (next((x for x in lines if "kernel headers" in x), lines[0] if lines else "?"))


def measure_attached(a, build, env, ctl):
    if os.geteuid() != 0:
        print("\nnot measured: profilers that attach to a running process need root")
        return
    cmd = [os.path.join(build, "bench", "malloc-bench"), str(a.attach_steps)]
    configs = [("untraced", None),
               ("record --pid (default, 1 stack per 512 KiB)", attach_record(ctl, env, [])),
               ("record --pid --sample-interval=1", attach_record(ctl, env, ["--sample-interval=1"]))]
    why_not = memleak_cannot_run()
    if why_not:
        print(f"\nnot measured: memleak-bpfcc -p: {why_not}")
    else:
        configs.append(("memleak-bpfcc -p (a stack per allocation)", attach_memleak))
    walls = {c: [] for c, _ in configs}
    for r in range(a.rounds):
        for c, attach in configs:
            walls[c].append(attached_run(cmd, env, attach))
        print(f"attached round {r + 1}/{a.rounds} done", file=sys.stderr)
    calls = 2 * 4 * a.attach_steps
    base = statistics.median(walls["untraced"])
    print(f"\nmalloc-bench {a.attach_steps} (4 threads, {calls} calls), the steps alone, profiler attached "
          f"before them (median of {a.rounds} interleaved rounds)\n")
    print("| configuration | wall of the steps (s) | vs untraced | added per call (us, on 2 vCPUs) |")
    print("| --- | --- | --- | --- |")
    for c, _ in configs:
        m = statistics.median(walls[c])
        print(f"| {c} | {m:.3f} | {m / base:.2f}x | {(m - base) / calls * 1e6:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1000000)
    ap.add_argument("--attach-steps", type=int, default=50000)
    ap.add_argument("--small-steps", type=int, default=4000000)
    ap.add_argument("--only-attached", action="store_true")
    ap.add_argument("--no-attached", action="store_true", help="skip the profilers that attach")
    ap.add_argument("--baseline", metavar="BUILD_DIR", help="another build's record configurations beside (d)")
    ap.add_argument("--only-small", action="store_true", help="the small blocks workload (d) alone")
    ap.add_argument("--callgrind", action="store_true", help="instructions per call of (d), not time")
    ap.add_argument("--callgrind-steps", type=int, default=200000)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    ctl = os.path.join(build, "client", "memstrackctl")
    env = dict(os.environ, MEMSTRACKD=os.path.join(build, "daemon", "memstrackd"),
               MEMSTRACK_HEAP_LIBRARY=os.path.join(build, "heap", "libmemstrack-heap.so"))
    tmp = tempfile.mkdtemp(prefix="measure-heap.")
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    inc = ["-I" + build] + ["-I" + os.path.join(root, d) for d in
                            ("common", "protocol", "report", "daemon/util", "daemon/core", "daemon/symbols",
                             "daemon/varlink", "daemon/api", "daemon/sources", "daemon/observers")]
    sources = [os.path.join(root, f) for f in ("daemon/varlink/varlink-server.c", "daemon/api/service.c",
                                               "daemon/core/accounting.c", "daemon/core/stacktree.c")]
    more = [os.path.join(root, f) for f in ("daemon/sources/perf.c", "daemon/sources/tracepoint.c",
                                            "daemon/symbols/usym.c", "daemon/api/query.c", "daemon/api/explain.c",
                                            "daemon/core/usage.c", "daemon/core/heap.c", "daemon/sources/ftrace.c",
                                            "daemon/sources/page-owner.c", "daemon/api/heapquery.c",
                                            "daemon/core/slab.c", "daemon/api/summary.c")]
    workloads = {
        "malloc-bench": [os.path.join(build, "bench", "malloc-bench"), str(a.steps)],
        "cc -O2 -c (4 files)": ["cc", "-O2", "-D_GNU_SOURCE", "-c"] + sources + inc,
        "cc -O2 -c (16 files)": ["cc", "-O2", "-D_GNU_SOURCE", "-c"] + sources + more + inc,
        FIXED: ["/bin/true"],
        SMALL: [os.path.join(build, "bench", "malloc-bench"), str(a.small_steps), "1", "216"],
    }
    configs = [("untraced", lambda w: w, env)] + record_configs(build, env, "")
    skipped = []
    if shutil.which("heaptrack"):
        configs.append(("heaptrack", lambda w: ["heaptrack", "-o", os.path.join(tmp, "ht")] + w, env))
    else:
        skipped.append("heaptrack: not installed")
    if a.baseline:
        configs += record_configs(os.path.abspath(a.baseline), env, BASELINE)
        small_configs = SMALL_CONFIGS + tuple(c + BASELINE for c in SMALL_CONFIGS[1:])
    else:
        small_configs = SMALL_CONFIGS
    if a.only_small:
        workloads = {SMALL: workloads[SMALL]}
    if a.callgrind:
        measure_callgrind(a, workloads[SMALL][0], configs, tmp)
        shutil.rmtree(tmp)
        return
    if a.only_attached:
        measure_attached(a, build, env, ctl)
        shutil.rmtree(tmp)
        return

    results = {(w, c): [] for w in workloads for c, _, _ in configs}
    rss = {(w, c): [] for w in workloads for c, _, _ in configs}
    steps = {(w, c): [] for w in workloads for c, _, _ in configs}
    for r in range(a.rounds):
        for w, cmd in workloads.items():
            for c, make, cenv in configs if r % 2 == 0 else reversed(configs):
                if (w == FIXED and c not in FIXED_CONFIGS) or (w == SMALL and c not in small_configs) or \
                        (w != SMALL and c.endswith(BASELINE)):
                    continue
                wall, kib, steps_wall = run(make(cmd), cenv, tmp)
                results[(w, c)].append(wall)
                if kib:
                    rss[(w, c)].append(kib)
                if steps_wall:
                    steps[(w, c)].append(steps_wall)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    for w in workloads:
        if w == SMALL:
            continue
        base = statistics.median(results[(w, "untraced")])
        print(f"\n{w} (median of {a.rounds} interleaved rounds)\n")
        print("| configuration | wall (s) | vs untraced | peak RSS (MiB) |")
        print("| --- | --- | --- | --- |")
        for c, _, _ in configs:
            if not results[(w, c)]:
                continue
            m = statistics.median(results[(w, c)])
            kib = statistics.median(rss[(w, c)]) if rss[(w, c)] else None
            print(f"| {c} | {m:.3f} | {m / base:.2f}x | {kib / 1024:.1f} |" if kib else
                  f"| {c} | {m:.3f} | {m / base:.2f}x | |")
    calls = 2 * a.small_steps   # a free and a malloc a step
    base = statistics.median(steps[(SMALL, "untraced")])
    print(f"\n{SMALL.replace('STEPS', str(a.small_steps))}, the steps alone (median of {a.rounds} interleaved "
          "rounds)\n")
    print("| configuration | wall of the steps (s) | ns per call | added ns per call |")
    print("| --- | --- | --- | --- |")
    for c in small_configs:
        m = statistics.median(steps[(SMALL, c)])
        print(f"| {c} | {m:.3f} | {m / calls * 1e9:.1f} | {(m - base) / calls * 1e9:.1f} |")
    if a.baseline:
        compare_baseline(steps, calls, a.rounds)
    for s in skipped:
        print(f"\nnot measured: {s}")
    if a.only_small:
        shutil.rmtree(tmp)
        return
    w = FIXED
    fixed = statistics.median(results[(w, "record (default, 1 stack per 512 KiB)")]) - \
        statistics.median(results[(w, "untraced")])
    print(f"\nrecord's fixed cost (record of /bin/true minus /bin/true): {fixed:.3f} s")
    if not a.no_attached:
        measure_attached(a, build, env, ctl)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
