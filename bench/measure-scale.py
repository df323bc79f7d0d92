#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What memstrackd's memory and queries cost as the pages it tracks grow, on the live kernel (not a test:
the numbers depend on the machine; docs/performance.md, "Memory at scale").

For each size N (ascending) and each build (in turn, the builds' order alternating between sizes): a fresh
memstrackd (the default source, eBPF where it runs), its idle RSS; loadgen --pages N --hold-until-signal
(N order-0 pages, held); once memstrackd counts them and its RSS has settled, its VmRSS and VmHWM from
/proc, and the median wall time of `memstrackctl tasks` and `memstrackctl stacks` (a process each, as a
user runs them); then the holder frees its pages and, once memstrackd counts them gone and its RSS has
settled again, its RSS. A size is skipped, and the run says so, when MemAvailable does not hold the
holder's pages with 2 GiB to spare: the machine may be shared.

The model fitted from the points is bytes = idle + per_page * pages (a least-squares line through the
measured RSS above idle), projected to 256 GiB and 1 TiB of tracked 4 KiB pages, with each point's
residual so that the fit can be judged. Each point also gives the stack nodes (what the stack trees
hold does not grow with the pages of one call chain) and, from builds that report coreMemory, the page
table's bytes per tracked page and the tables' bytes.

Usage: bench/measure-scale.py [--pages 1M,3M,5M] [--repeat 7] [--json FILE] [LABEL=BUILD ...]   (root)
Without LABEL=BUILD it measures "new=build". Memory: a size N needs N * 4 KiB + 2 GiB available.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import livelib  # noqa: E402

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
SPARE_BYTES = 2 << 30
SETTLE_SECONDS = 2.0            # RSS unchanged this long counts as settled
SETTLE_TIMEOUT = 120


def parse_size(text):
    units = {"k": 1000, "m": 1000 ** 2, "g": 1000 ** 3}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def meminfo(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/meminfo")


def status_field(pid, field):
    """A /proc/PID/status size field in bytes (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def settle(pid):
    """Waits until the process's RSS has not changed for SETTLE_SECONDS; returns it."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last, since = status_field(pid, "VmRSS"), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        rss = status_field(pid, "VmRSS")
        if rss != last:
            last, since = rss, time.monotonic()
        elif time.monotonic() - since >= SETTLE_SECONDS:
            return rss
    return last


def tracked_pages(sock):
    return livelib.call(sock, "io.memstrack.Status")["trackedPages"]


def time_verb(ctl, address, verb, repeat):
    """Median wall time of memstrackctl VERB, ms."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([ctl, "--address", address, verb], stdout=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def measure(label, build, pages, repeat, work):
    daemon_exe = os.path.join(build, "daemon", "memstrackd")
    ctl = os.path.join(build, "client", "memstrackctl")
    loadgen = os.path.join(build, "bench", "loadgen")
    sock = os.path.join(work, f"{label}.sock")
    d, _ = livelib.start_memstrackd(daemon_exe, sock, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        idle = settle(d.pid)
        base = tracked_pages(sock)
        holder = subprocess.Popen([loadgen, "--pages", str(pages), "--hold-until-signal"],
                                  stdout=subprocess.PIPE, text=True)
        while holder.stdout.readline().strip() != "allocated":
            if holder.poll() is not None:
                raise RuntimeError("loadgen ended before it allocated")
        livelib.wait_for("memstrackd to count the holder's pages",
                         lambda: tracked_pages(sock) >= base + pages * 0.98, timeout=SETTLE_TIMEOUT)
        rss = settle(d.pid)
        hwm = status_field(d.pid, "VmHWM")
        held = livelib.call(sock, "io.memstrack.Status")
        address = "unix:" + sock
        tasks_ms = time_verb(ctl, address, "tasks", repeat)
        stacks_ms = time_verb(ctl, address, "stacks", repeat)
        holder.send_signal(signal.SIGUSR1)
        holder.wait()
        livelib.wait_for("memstrackd to count the holder's pages freed",
                         lambda: tracked_pages(sock) <= base + pages * 0.02, timeout=SETTLE_TIMEOUT)
        freed = settle(d.pid)
        return {
            "label": label, "pages": pages, "idle": idle, "rss": rss, "hwm": hwm, "freed": freed,
            "tasks_ms": tasks_ms, "stacks_ms": stacks_ms, "status": held,
        }
    finally:
        d.terminate()
        d.wait()


def fit(points):
    """Least-squares bytes = a + b * pages through (pages, rss) points."""
    if len(points) < 2:
        return None
    xs = [p for p, _ in points]
    ys = [r for _, r in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def core_line(status):
    """What the daemon says of its own tables, where it says it (coreMemory is newer than some builds)."""
    line = f"{status['stackNodes']} stack nodes"
    core = status.get("coreMemory")
    if core:
        line += (f", page table {core['pageTableBytes'] / status['trackedPages']:.2f} B/tracked page, "
                 f"tables {mib(core['coreBytes'])} MiB")
    return line


def mib(n):
    return f"{n / 2**20:.1f}"


def main():
    if os.geteuid() != 0:
        sys.exit("needs root")
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default="1M,3M,5M")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("builds", nargs="*")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds] or [["new", "build"]]
    sizes = sorted(parse_size(s) for s in args.pages.split(","))
    work = tempfile.mkdtemp(prefix="measure-scale.")
    results = []
    print(f"# {os.uname().release}, {os.cpu_count()} CPUs, {meminfo('MemTotal') / 2**30:.1f} GiB, "
          f"load {os.getloadavg()[0]:.1f}")
    for i, pages in enumerate(sizes):
        order = builds if i % 2 == 0 else list(reversed(builds))
        for label, build in order:
            need = pages * PAGE_SIZE + SPARE_BYTES
            avail = meminfo("MemAvailable")
            if avail < need:
                print(f"{label} {pages:,} pages: skipped, MemAvailable {avail / 2**30:.1f} GiB "
                      f"< {need / 2**30:.1f} GiB", flush=True)
                continue
            r = measure(label, build, pages, args.repeat, work)
            results.append(r)
            print(f"{label} {pages:,} pages: idle {mib(r['idle'])} MiB, RSS {mib(r['rss'])} MiB, "
                  f"HWM {mib(r['hwm'])} MiB ({r['hwm'] / r['rss']:.2f}x RSS), "
                  f"{(r['rss'] - r['idle']) / pages:.1f} B/page above idle; tasks {r['tasks_ms']:.1f} ms, "
                  f"stacks {r['stacks_ms']:.1f} ms; after the free {mib(r['freed'])} MiB "
                  f"({100 * (r['freed'] - r['idle']) / r['idle']:+.0f} % of idle); {core_line(r['status'])}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    for label, _ in builds:
        mine = [r for r in results if r["label"] == label]
        line = fit([(r["pages"], r["rss"] - r["idle"]) for r in mine])
        if not line:
            continue
        a, b = line
        idle = statistics.mean(r["idle"] for r in mine)
        resid = ", ".join(f"{r['pages'] / 1e6:g} M {(r['rss'] - r['idle'] - (a + b * r['pages'])) / 2**20:+.1f}"
                          for r in mine)
        proj = ", ".join(f"{name} {mib(idle + a + b * (size // PAGE_SIZE))} MiB"
                         for name, size in (("256 GiB", 256 << 30), ("1 TiB", 1 << 40)))
        print(f"{label} model: RSS = {mib(idle)} MiB idle + {mib(a)} MiB + {b:.2f} B * pages "
              f"(residuals MiB: {resid}); every page tracked: {proj}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
