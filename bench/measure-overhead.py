#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What each way of tracing adds to every page the traced system allocates (not a test: the numbers
depend on the machine; docs/performance.md, "Added cost per page, by source").

The load is loadgen mapping, touching (one order-0 page fault per page) and unmapping CHUNK-MiB regions
as fast as it can, on one CPU. Each round runs every configuration once, in a random order, with an
untraced run before the first and after each one (U A U B U ... U), so drifting background load hits
all alike. A configuration's added cost in a round is the load's microseconds per page traced minus the
mean of the two untraced runs around it, measured two ways: the load's own CPU time (user + system from
wait4(), where the kernel's tracepoint and BPF or perf work is charged; other jobs on a shared machine
disturb it least) and the wall clock (which also counts the tracer competing for the CPUs). The report
gives the median and the range over rounds. Per configuration it also gives the tracer's own CPU per
event and per page, the records it lost (Status lostEvents, lostByReason when the daemon reports it;
BPF recursion misses from the programs' fdinfo), and in a second phase the same at full speed on every
CPU at once (loadgen --threads NPROC), where a tracer short of CPU loses records; that phase turns
kernel.bpf_stats_enabled on (restored after) to give each BPF program's ns per run.

A traced run whose tracer saw fewer than --min-events-per-page events (Status events, or what bpftrace's
map counted) per page of load is left out of the medians and reported: on a machine shared with other
tests, memstrackd has been seen receiving no records for minutes while the load ran untraced.

Configurations are memstrackd argument strings, LABEL=ARGS, e.g.
    perf="--source perf" perf-nostack="--source perf --callchain-depth 0" ebpf="--source ebpf"
LABEL@PATH=ARGS runs the memstrackd at PATH instead of BUILD's (to compare two builds). A configuration
the daemon refuses is reported as not available with the daemon's error line. When bpftrace is
installed, two built-in configurations are added: bpftrace-kstack (a count per kernel stack of
mm_page_alloc, as issue 11 measured) and bpftrace-count (a count only); --no-bpftrace leaves them out.

--load eventfds measures slab object events instead (memstrackd --slab): the load opens and closes
eventfds (loadgen --eventfds 64: per eventfd a kmalloc'd context and a struct file, each allocated and
freed), "page" reads "eventfd" throughout, and a last table divides each configuration's added CPU per
eventfd by the events its tracer saw per eventfd: the cost per slab event. The all-CPU phase is not run
(loadgen's eventfd load is one thread), and no run is left out for seeing few events (without --slab a
tracer sees almost none).

Usage: bench/measure-overhead.py [--build DIR] [--seconds S] [--rounds N] [--load pages|eventfds]
                                 [LABEL=ARGS ...]   (root)
The defaults (2 s runs, 6 rounds) take about 4 minutes with four memstrackd configurations and
bpftrace's two.
"""

import argparse
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import livelib  # noqa: E402

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
READY_TIMEOUT = 60
STOP_TIMEOUT = 30

BPFTRACE_PROGRAMS = [
    ("bpftrace-kstack", "tracepoint:kmem:mm_page_alloc { @[kstack] = count(); }"),
    ("bpftrace-count", "tracepoint:kmem:mm_page_alloc { @ = count(); }"),
]


class Unavailable(Exception):
    """A tracer that would not start; the message is its own error line."""


def bpf_programs(pid):
    """The BPF programs whose fds pid holds, by program id: each its fdinfo's numeric fields."""
    programs = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return programs
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                text = f.read()
        except OSError:
            continue
        fields = {}
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if value.strip().isdigit():
                fields[key] = int(value)
        if "prog_id" in fields and "prog_type" in fields:
            programs[fields["prog_id"]] = fields
    return programs


def bpf_prog_stats(pid):
    """Sums run_time_ns, run_cnt and recursion_misses over the BPF programs whose fds pid holds."""
    programs = bpf_programs(pid)
    total = {key: sum(p.get(key, 0) for p in programs.values())
             for key in ("run_time_ns", "run_cnt", "recursion_misses")}
    total["programs"] = len(programs)
    return total


def error_line(path):
    """The line that says why a tracer stopped: its last one, past any "Try ... --help" hint."""
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no output"
    lines = [line for line in lines if not line.startswith("Try ")] or lines
    return lines[-1] if lines else "no output"


def stop_process(p, sig):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Memstrackd:
    kind = "memstrackd"

    def __init__(self, label, exe, args, work):
        self.label, self.exe, self.args = label, exe, args
        self.sock = os.path.join(work, "sock")
        self.stderr = os.path.join(work, f"{label}.stderr")
        self.proc = None
        self.backend = None
        self.details = {}

    def describe(self):
        return f"{self.exe} {' '.join(shlex.quote(a) for a in self.args)}".strip()

    def call(self, method):
        return livelib.call(self.sock, method, timeout=30)

    def start(self):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        try:
            with open(self.stderr, "w") as err:
                self.proc, status = livelib.start_memstrackd(self.exe, self.sock, *self.args,
                                                             stdout=subprocess.DEVNULL, stderr=err,
                                                             timeout=READY_TIMEOUT)
        except livelib.DaemonExited:
            raise Unavailable(error_line(self.stderr))
        except TimeoutError:
            raise Unavailable(f"no answer on {self.sock} within {READY_TIMEOUT} s")
        self.backend = status.get("backend")
        # What says which mode a source runs in (a stack sampling interval, why auto chose it).
        self.details = {k: v for k, v in status.items()
                        if any(w in k.lower() for w in ("sampl", "source", "reason"))}

    def sample(self):
        status = self.call("io.memstrack.Status")
        return {"cpu": livelib.process_cpu_seconds(self.proc.pid), "events": status.get("events", 0),
                "lost": status.get("lostEvents", 0), "lost_by_reason": status.get("lostByReason"),
                "bpf": bpf_prog_stats(self.proc.pid), "status": status}

    def stop(self):
        if self.proc:
            stop_process(self.proc, signal.SIGTERM)
        self.proc = None
        return None


class Bpftrace:
    kind = "bpftrace"

    def __init__(self, label, program, work):
        self.label, self.program = label, program
        self.stdout = os.path.join(work, f"{label}.stdout")
        self.stderr = os.path.join(work, f"{label}.stderr")
        self.proc = None
        self.backend = "bpftrace"
        self.details = {}

    def describe(self):
        return f"bpftrace -e '{self.program}'"

    def start(self):
        with open(self.stdout, "w") as out, open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(["bpftrace", "-e", self.program], stdout=out, stderr=err)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise Unavailable(error_line(self.stderr))
            with open(self.stdout, errors="replace") as f:
                if "Attaching" in f.read():
                    break
            if time.monotonic() > deadline:
                self.stop()
                raise Unavailable(f"bpftrace did not attach within {READY_TIMEOUT} s")
            time.sleep(0.05)
        # "Attaching N probes..." comes before the attach itself.
        time.sleep(1)

    def sample(self):
        return {"cpu": livelib.process_cpu_seconds(self.proc.pid), "events": None, "lost": None, "lost_by_reason": None,
                "bpf": bpf_prog_stats(self.proc.pid), "status": None}

    def stop(self):
        """Stops bpftrace and returns the number of events its map counted (it prints the map at exit)."""
        if not self.proc:
            return None
        stop_process(self.proc, signal.SIGINT)
        self.proc = None
        counted = 0
        with open(self.stdout, errors="replace") as f:
            for line in f:
                head, sep, value = line.rpartition(": ")
                if sep and value.strip().isdigit() and (head.startswith("@") or head.endswith("]")):
                    counted += int(value)
        return counted


# What the load allocates: "page" (loadgen's pages) or "eventfd" (--load eventfds); set by main().
UNIT = "page"
EVENTFDS_PER_ROUND = 64


def loadgen(build, seconds, chunk_pages, threads=1):
    """Runs loadgen; returns its pages (or eventfds, see UNIT), those per second and CPU seconds (user +
    system, from wait4) per one, in the keys named for pages."""
    if UNIT == "eventfd":
        cmd = [os.path.join(build, "bench", "loadgen"), "--seconds", str(seconds),
               "--eventfds", str(EVENTFDS_PER_ROUND)]
    else:
        cmd = [os.path.join(build, "bench", "loadgen"), "--seconds", str(seconds),
               "--pages", str(chunk_pages * threads), "--threads", str(threads)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {err.read().strip()}")
        fields = dict(word.split("=", 1) for word in out.read().split() if "=" in word)
    if UNIT == "eventfd":
        fields = {"pages": fields["eventfds"], "pages_per_sec": fields["eventfds_per_sec"]}
    pages = int(fields["pages"])
    return {"pages": pages, "rate": float(fields["pages_per_sec"]),
            "cpu_us_per_page": (usage.ru_utime + usage.ru_stime) / pages * 1e6}


def traced_run(tracer, build, seconds, chunk_pages, threads=1):
    tracer.start()
    try:
        before = tracer.sample()
        load = loadgen(build, seconds, chunk_pages, threads)
        after = tracer.sample()
    finally:
        counted = tracer.stop()
    events = after["events"] - before["events"] if after["events"] is not None else counted
    cpu = after["cpu"] - before["cpu"]
    lost_by_reason = None
    if isinstance(after["lost_by_reason"], dict):
        lost_by_reason = {k: v - (before["lost_by_reason"] or {}).get(k, 0)
                          for k, v in after["lost_by_reason"].items() if isinstance(v, int)}
    bpf = {k: after["bpf"][k] - before["bpf"][k] for k in ("run_time_ns", "run_cnt", "recursion_misses")}
    bpf["programs"] = after["bpf"]["programs"]
    return {**load, "events": events, "cpu": cpu,
            "us_per_event": cpu / events * 1e6 if events else None,
            "tracer_us_per_page": cpu / load["pages"] * 1e6,
            "lost": after["lost"] - before["lost"] if after["lost"] is not None else None,
            "lost_by_reason": lost_by_reason, "bpf": bpf, "backend": tracer.backend,
            "status": after["status"]}


def wall_us_per_page(run):
    return 1e6 / run["rate"]


def fmt_range(values):
    if not values:
        return "n/a"
    return f"{statistics.median(values):+.2f} ({min(values):+.2f} to {max(values):+.2f})"


def sum_reasons(runs):
    total = {}
    for r in runs:
        for k, v in (r["lost_by_reason"] or {}).items():
            total[k] = total.get(k, 0) + v
    return total


def describe_lost(runs):
    lost = [r["lost"] for r in runs if r["lost"] is not None]
    parts = []
    if lost:
        parts.append(f"{sum(lost)}")
    elif runs:
        parts.append("n/a")
    reasons = sum_reasons(runs)
    if reasons:
        parts.append("(" + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) + ")")
    misses = sum(r["bpf"]["recursion_misses"] for r in runs)
    if any(r["bpf"]["programs"] for r in runs):
        parts.append(f"BPF recursion misses {misses}")
    return " ".join(parts) or "n/a"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("configs", nargs="*", metavar="LABEL[@MEMSTRACKD]=ARGS",
                   help='memstrackd configurations (default: perf="--source perf" '
                        'perf-nostack="--source perf --callchain-depth 0")')
    p.add_argument("--build", default="build", help="build directory (default build)")
    p.add_argument("--seconds", type=int, default=2, help="seconds per loadgen run (default 2)")
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds (default 6)")
    p.add_argument("--chunk-mib", type=int, default=64, help="MiB mapped, touched, unmapped per step (64)")
    p.add_argument("--full-speed-seconds", type=int, default=None,
                   help="seconds of the all-CPU phase per configuration (default --seconds; 0 skips it)")
    p.add_argument("--min-events-per-page", type=float, default=0.5,
                   help="leave out traced runs whose tracer saw fewer events per page of load, as broken "
                        "(default 0.5; 0 for a source that counts aggregates rather than pages)")
    p.add_argument("--no-bpftrace", action="store_true", help="leave out the bpftrace configurations")
    p.add_argument("--seed", type=int, default=None, help="seed of the per-round order (default: random)")
    p.add_argument("--json", metavar="FILE", help="write every run's raw figures to FILE")
    p.add_argument("--load", choices=("pages", "eventfds"), default="pages",
                   help="what the load allocates: pages (default), or slab objects through eventfds")
    args = p.parse_args()
    if args.seconds <= 0 or args.rounds < 1 or args.chunk_mib < 1:
        p.error("--seconds, --rounds and --chunk-mib must be positive")
    if args.full_speed_seconds is None:
        args.full_speed_seconds = args.seconds
    configs = []
    for spec in args.configs or ["perf=--source perf", "perf-nostack=--source perf --callchain-depth 0"]:
        name, sep, rest = spec.partition("=")
        label, _, exe = name.partition("@")
        if not sep or not label:
            p.error(f"a configuration is LABEL=ARGS or LABEL@MEMSTRACKD=ARGS, not {spec!r}")
        if label in (c[0] for c in configs) or label in (b[0] for b in BPFTRACE_PROGRAMS):
            p.error(f"label {label!r} given twice")
        configs.append((label, exe or os.path.join(args.build, "daemon", "memstrackd"), shlex.split(rest)))
    args.configs = configs
    return args


def main():
    global UNIT
    args = parse_args()
    if args.load == "eventfds":
        UNIT = "eventfd"
        args.full_speed_seconds = 0
        args.min_events_per_page = 0
    if os.geteuid() != 0:
        print("measure-overhead: needs root (memstrackd and bpftrace open tracepoints)", file=sys.stderr)
        return 77
    if not os.access(os.path.join(args.build, "bench", "loadgen"), os.X_OK):
        print(f"measure-overhead: no {args.build}/bench/loadgen; build first (meson setup {args.build} && "
              f"ninja -C {args.build})", file=sys.stderr)
        return 1
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    chunk_pages = args.chunk_mib * 2**20 // PAGE_SIZE
    ncpu = os.cpu_count()
    work = tempfile.mkdtemp(prefix="measure-overhead.")
    started = time.monotonic()

    tracers = [Memstrackd(label, exe, a, work) for label, exe, a in args.configs]
    notes = []
    if args.no_bpftrace:
        notes.append("bpftrace left out (--no-bpftrace)")
    elif shutil.which("bpftrace"):
        tracers += [Bpftrace(label, prog, work) for label, prog in BPFTRACE_PROGRAMS]
    else:
        notes.append("bpftrace is not installed: its configurations are left out")

    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    print(f"# {os.uname().release}, {ncpu} CPUs ({model}), load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if UNIT == "eventfd":
        print(f"# loadgen --seconds {args.seconds:g} --eventfds {EVENTFDS_PER_ROUND}, {args.rounds} rounds, "
              f"order seed {seed}")
    else:
        print(f"# loadgen --seconds {args.seconds:g} --pages {chunk_pages} ({args.chunk_mib} MiB chunks), "
              f"{args.rounds} rounds, order seed {seed}")
    for note in notes:
        print(f"# {note}")

    # Which configurations start at all; the rest are reported, not measured.
    unavailable = {}
    for t in tracers:
        try:
            t.start()
            details = "".join(f", {k} {json.dumps(v)}" for k, v in t.details.items())
            print(f"# {t.label}: {t.describe()} (backend {t.backend}{details})", flush=True)
        except Unavailable as e:
            unavailable[t.label] = str(e)
            print(f"# {t.label}: not available: {e}", flush=True)
        finally:
            t.stop()
    live = [t for t in tracers if t.label not in unavailable]

    runs = {t.label: [] for t in live}
    left_out = {t.label: 0 for t in live}
    untraced = []
    raw = []
    for rnd in range(args.rounds):
        order = live[:]
        rng.shuffle(order)
        before = loadgen(args.build, args.seconds, chunk_pages)
        untraced.append(before)
        raw.append({"round": rnd, "config": None, **before})
        print(f"round {rnd + 1}: untraced {before['cpu_us_per_page']:.3f} us CPU, "
              f"{wall_us_per_page(before):.3f} us wall per {UNIT}", flush=True)
        for t in order:
            try:
                r = traced_run(t, args.build, args.seconds, chunk_pages)
            except (Unavailable, OSError, RuntimeError) as e:
                # A tracer that started in the first check and fails now: reported, the run goes on.
                left_out[t.label] += 1
                print(f"round {rnd + 1}: {t.label} left out: {e}", flush=True)
                continue
            after = loadgen(args.build, args.seconds, chunk_pages)
            untraced.append(after)
            r["added_cpu"] = r["cpu_us_per_page"] - (before["cpu_us_per_page"] + after["cpu_us_per_page"]) / 2
            r["added_wall"] = wall_us_per_page(r) - (wall_us_per_page(before) + wall_us_per_page(after)) / 2
            r["share"] = (before["rate"] + after["rate"]) / 2
            r["share"] = r["rate"] / r["share"]
            r["valid"] = r["events"] is None or r["events"] >= args.min_events_per_page * r["pages"]
            if r["valid"]:
                runs[t.label].append(r)
            else:
                left_out[t.label] += 1
                print(f"round {rnd + 1}: {t.label} left out: the tracer saw {r['events']} events for "
                      f"{r['pages']} pages of load", flush=True)
            raw.append({"round": rnd, "config": t.label, **r})
            raw.append({"round": rnd, "config": None, **after})
            cpu = "CPU/event n/a"
            if r["us_per_event"] is not None:
                cpu = f"{r['us_per_event']:.3f} us CPU/event"
            print(f"round {rnd + 1}: {t.label} {r['cpu_us_per_page']:.3f} us CPU ({r['added_cpu']:+.3f}), "
                  f"{wall_us_per_page(r):.3f} us wall ({r['added_wall']:+.3f}) per {UNIT}; tracer {cpu}, "
                  f"lost {describe_lost([r])}; then untraced {after['cpu_us_per_page']:.3f} us CPU, "
                  f"{wall_us_per_page(after):.3f} us wall", flush=True)
            before = after

    full = {}
    if args.full_speed_seconds > 0:
        print(f"# full speed on every CPU: loadgen --threads {ncpu}, {args.full_speed_seconds:g} s per "
              f"configuration, kernel.bpf_stats_enabled=1", flush=True)
        stats_path = "/proc/sys/kernel/bpf_stats_enabled"
        old_stats = None
        try:
            try:
                with open(stats_path) as f:
                    old_stats = f.read().strip()
                with open(stats_path, "w") as f:
                    f.write("1")
            except OSError as e:
                print(f"# cannot enable BPF run-time stats ({e}); no ns per run", flush=True)
                old_stats = None
            full["untraced"] = loadgen(args.build, args.full_speed_seconds, chunk_pages, ncpu)
            raw.append({"phase": "full-speed", "config": None, **full["untraced"]})
            for t in live:
                try:
                    r = traced_run(t, args.build, args.full_speed_seconds, chunk_pages, ncpu)
                except (Unavailable, OSError, RuntimeError) as e:
                    print(f"full speed: {t.label} failed: {e}", flush=True)
                    continue
                full[t.label] = r
                raw.append({"phase": "full-speed", "config": t.label, **r})
                print(f"full speed: {t.label} {r['rate'] / 1e3:.0f} k pages/s, lost {describe_lost([r])}",
                      flush=True)
        finally:
            if old_stats is not None:
                with open(stats_path, "w") as f:
                    f.write(old_stats)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": seed, "chunk_pages": chunk_pages, "seconds": args.seconds,
                       "unavailable": unavailable, "runs": raw}, f, indent=1)

    cpu_base = [u["cpu_us_per_page"] for u in untraced]
    wall_base = [wall_us_per_page(u) for u in untraced]
    print()
    print(f"untraced, median (range) of {len(untraced)} runs: {statistics.median(cpu_base):.3f} us CPU "
          f"({min(cpu_base):.3f} to {max(cpu_base):.3f}), {statistics.median(wall_base):.3f} us wall "
          f"({min(wall_base):.3f} to {max(wall_base):.3f}) per {UNIT}")
    print()
    print(f"| configuration | added CPU us/{UNIT}, median (range) of {args.rounds} rounds | "
          f"added wall us/{UNIT} | "
          f"load's speed | tracer CPU/event | lost | lost at full speed, {ncpu} CPUs | BPF ns/run |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in tracers:
        if t.label in unavailable:
            print(f"| {t.label} | not available: {unavailable[t.label]} | | | | | | |")
            continue
        rs = runs[t.label]
        if not rs:
            print(f"| {t.label} | no valid run: all {left_out[t.label]} failed or saw fewer than "
                  f"{args.min_events_per_page:g} events per page of load | | | | | | |")
            continue
        cpu = [r["us_per_event"] for r in rs if r["us_per_event"] is not None]
        cpu = f"{statistics.median(cpu):.3f} us/event, " if cpu else ""
        cpu += f"{statistics.median(r['tracer_us_per_page'] for r in rs):.3f} us/{UNIT}"
        f = full.get(t.label)
        if f:
            full_lost = describe_lost([f])
            ns = f"{f['bpf']['run_time_ns'] / f['bpf']['run_cnt']:.0f}" if f["bpf"]["run_cnt"] else ""
        else:
            full_lost, ns = "not run", ""
        print(f"| {t.label} | {fmt_range([r['added_cpu'] for r in rs])} | "
              f"{fmt_range([r['added_wall'] for r in rs])} | "
              f"{100 * statistics.median(r['share'] for r in rs):.0f} % | "
              f"{cpu} | {describe_lost(rs)} | "
              f"{full_lost} | {ns} |")
    for label, n in left_out.items():
        if n:
            print(f"\n{label}: {n} of {args.rounds} runs left out (failed, or the tracer saw fewer than "
                  f"{args.min_events_per_page:g} events per page of load; --min-events-per-page 0 keeps "
                  f"those)")
    if UNIT == "eventfd":
        # The cost per slab event: what tracing added per eventfd over the events the tracer saw per
        # eventfd (its own and the rest of the machine's, which on a quiet machine are few).
        print()
        print("| configuration | events per eventfd seen by the tracer | added CPU ns per event, median (range) |")
        print("| --- | --- | --- |")
        for t in tracers:
            rs = [r for r in runs.get(t.label, []) if r["events"]]
            if not rs:
                print(f"| {t.label} | none | n/a |")
                continue
            per_op = [r["events"] / r["pages"] for r in rs]
            if statistics.median(per_op) < 0.5:
                print(f"| {t.label} | {statistics.median(per_op):.2f} | n/a (no slab events) |")
                continue
            ns = [1000 * r["added_cpu"] / (r["events"] / r["pages"]) for r in rs]
            print(f"| {t.label} | {statistics.median(per_op):.2f} | {statistics.median(ns):.0f} "
                  f"({min(ns):.0f} to {max(ns):.0f}) |")
    if full:
        print(f"\nfull speed, untraced: {full['untraced']['rate'] / 1e3:.0f} k pages/s on {ncpu} threads")
    print(f"\n# took {time.monotonic() - started:.0f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
