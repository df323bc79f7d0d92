#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What memstrackd costs, measured on the live kernel (not a test: the numbers depend on the machine).

For each configuration: loadgen's full-speed alloc/touch/free rate for SECONDS untraced and traced (the
runs interleaved, so drifting background load hits both alike), memstrackd's CPU time per event, lost
events and resident memory. With the default configuration it also times queries while the load runs:
Tasks(limit: 50), Status and StackTree, a call every 20 ms, round trip measured by the caller.

Usage: bench/measure-memstrackd.py BUILDDIR [SECONDS] [ROUNDS]   (root)
"""

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import livelib  # noqa: E402

BUILD = sys.argv[1]
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
MEMSTRACKD = os.path.join(BUILD, "daemon", "memstrackd")
LOADGEN = os.path.join(BUILD, "bench", "loadgen")
WORK = tempfile.mkdtemp(prefix="measure-memstrackd.")


def call(sock, method, parameters=None):
    return livelib.call(sock, method, parameters, timeout=None)


def loadgen_rate(*extra):
    out = subprocess.run([LOADGEN, "--seconds", str(SECONDS), *extra], capture_output=True, text=True,
                         check=True).stdout
    for word in out.split():
        if word.startswith("pages_per_sec="):
            return int(word.split("=")[1])
    raise RuntimeError(f"no rate in loadgen's output: {out}")


def traced(options, queries=False):
    sock = os.path.join(WORK, "sock")
    d, _ = livelib.start_memstrackd(MEMSTRACKD, sock, *options, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=60)
    before = call(sock, "io.memstrack.Status")
    cpu0 = livelib.process_cpu_seconds(d.pid)

    latencies = {"Tasks(limit 50)": [], "Status": [], "StackTree": []}
    stop = threading.Event()

    def query_loop():
        methods = [("Tasks(limit 50)", "io.memstrack.Tasks", {"limit": 50}),
                   ("Status", "io.memstrack.Status", {}),
                   ("StackTree", "io.memstrack.StackTree", {})]
        i = 0
        while not stop.is_set():
            name, method, params = methods[i % len(methods)]
            t = time.perf_counter()
            call(sock, method, params)
            latencies[name].append((time.perf_counter() - t) * 1000)
            i += 1
            time.sleep(0.02)

    q = threading.Thread(target=query_loop) if queries else None
    if q:
        q.start()
    rate = loadgen_rate()
    stop.set()
    if q:
        q.join()

    after = call(sock, "io.memstrack.Status")
    cpu = livelib.process_cpu_seconds(d.pid) - cpu0
    rss = livelib.process_rss_bytes(d.pid)
    d.terminate()
    d.wait()
    events = after["events"] - before["events"]
    return {
        "rate": rate,
        "events": events,
        "us_per_event": cpu / events * 1e6 if events else 0,
        "cpu": cpu,
        "lost": after["lostEvents"],
        "rss": rss,
        "latencies": latencies if queries else None,
    }


def main():
    if os.geteuid() != 0:
        sys.exit("needs root")
    configs = [("defaults (kernel call chains, depth 64)", [], True),
               ("--callchain-depth 1", ["--callchain-depth", "1"], False),
               ("--callchain-depth 0 (no call chains)", ["--callchain-depth", "0"], False)]
    print(f"# {os.uname().release}, {os.cpu_count()} CPUs, loadgen --seconds {SECONDS}, {ROUNDS} rounds")
    results = {name: [] for name, _, _ in configs}
    untraced = []
    for _ in range(ROUNDS):
        untraced.append(loadgen_rate())
        for name, options, queries in configs:
            results[name].append(traced(options, queries))
    base = statistics.median(untraced)
    print(f"untraced: {base:,.0f} pages/s (median of {untraced})")
    for name, runs in results.items():
        rate = statistics.median(r["rate"] for r in runs)
        print(f"{name}: {rate:,.0f} pages/s = {100 * rate / base:.0f} % of untraced; "
              f"memstrackd {statistics.median(r['us_per_event'] for r in runs):.2f} us CPU/event "
              f"({statistics.median(r['events'] for r in runs) / SECONDS / 1e6:.2f} M events/s), "
              f"lost {max(r['lost'] for r in runs)}, RSS {max(r['rss'] for r in runs) / 2**20:.1f} MiB")
        for r in runs:
            if r["latencies"]:
                for q, ms in r["latencies"].items():
                    ms.sort()
                    print(f"    {q}: {len(ms)} calls, median {statistics.median(ms):.2f} ms, "
                          f"p99 {ms[int(len(ms) * 0.99) - 1]:.2f} ms, max {ms[-1]:.2f} ms")
    subprocess.run(["rm", "-rf", WORK])


if __name__ == "__main__":
    main()
