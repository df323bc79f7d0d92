#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The slab soak at full length (not a test: its figures depend on the machine and what else runs on it):
memstrackd --slab beside ordinary churn (tests/slabsoak.py: short processes, mmap/munmap, pipes, eventfds)
for SECONDS (default 1800), sampled after every reconciliation with /proc/slabinfo. Prints, and writes as
JSON with --json FILE:

- lost frees in all and an hour, and the share lost among the allocations whose frees are visible;
- the caches memstrackd says free behind the tracepoints, each with the share of its frees lost, beside
  those the kernel's own tracepoints (a tracefs instance, a few seconds at the start and at the end) show
  freeing behind them;
- per cache, how far memstrackd's live objects ever went above the kernel's active objects (the caches
  whose frees are visible at any sample, the others right after a reconciliation), and the drift at the end
  against what the kernel held when tracing began;
- the call sites whose frees are visible and whose live objects grew in every sixth of the soak, and what
  Leaks says at the end (minimum age a sixth of the soak, six intervals);
- records lost, objects dropped above the kernel's counts, memstrackd's CPU time and memory.

Usage: bench/slab-soak.py BUILDDIR [--seconds N] [--source ebpf|perf] [--workers N] [--rounds N]
                          [--buffer-pages N] [--json FILE]   (root)
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import livelib  # noqa: E402
import slabsoak  # noqa: E402


def slab(sock, by):
    return livelib.call(sock, "io.memstrack.Slab", {"by": by, "limit": 10000}, timeout=None)


def status(sock):
    return livelib.call(sock, "io.memstrack.Status", timeout=None)


def proven_hidden(view):
    """Caches the kernel's own view shows freeing behind the tracepoints (see test-slab-soak.py)."""
    if view is None:
        return None
    return {name: {"allocs": a, "frees": f, "lost": lost} for name, (a, f, lost) in view.items()
            if lost >= 20 and lost >= 0.1 * a}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=1800)
    ap.add_argument("--source", default="ebpf")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--buffer-pages", type=int, default=4096)
    ap.add_argument("--json")
    args = ap.parse_args()
    memstrackd = os.path.join(args.build, "daemon", "memstrackd")
    work = tempfile.mkdtemp(prefix="slab-soak.")
    sock = os.path.join(work, "memstrackd.sock")
    log = open(os.path.join(work, "memstrackd.log"), "w")
    daemon, _ = livelib.start_memstrackd(memstrackd, sock, "--source", args.source, "--slab",
                                         "--buffer-pages", str(args.buffer_pages), stderr=log)
    try:
        result = soak(args, daemon, sock)
    finally:
        daemon.terminate()
        daemon.wait()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


def soak(args, daemon, sock):
    started = time.monotonic()
    cpu0 = livelib.process_cpu_seconds(daemon.pid)
    churn = slabsoak.Churn(workers=args.workers, rounds=args.rounds)
    over = {}           # cache: the most live objects above the kernel's figure, and when
    history = []        # (seconds, {call site: live objects}) at each sixth of the soak
    samples = 0
    try:
        view_start = proven_hidden(slabsoak.kernel_slab_view(2))
        runs = status(sock)["slabReconciliation"]["runs"]
        next_mark = 0.0
        deadline = started + args.seconds
        while time.monotonic() < deadline:
            while True:
                rec = status(sock)["slabReconciliation"]
                if rec["runs"] > runs:
                    break
                time.sleep(0.1)
            runs = rec["runs"]
            first = slabsoak.rows_by_name(slab(sock, "cache"))
            before = slabsoak.read_slabinfo()
            rows = slabsoak.rows_by_name(slab(sock, "cache"))
            after = slabsoak.read_slabinfo()
            samples += 1
            for name, row in rows.items():
                k = row["kernel"]
                if k is None or name.startswith("[") or name not in before or name not in after:
                    continue
                if row["freesVisible"]:
                    window = row["allocs"] - first.get(name, row)["allocs"]
                    excess = row["liveObjects"] - max(before[name][0], after[name][0]) - window
                else:
                    excess = k["liveObjects"] - k["boundObjects"]
                best = over.get(name)
                if best is None or excess > best["excess"]:
                    over[name] = {"excess": excess, "slab": max(before[name][1], after[name][1]),
                                  "visible": row["freesVisible"], "at": round(time.monotonic() - started)}
            elapsed = time.monotonic() - started
            if elapsed >= next_mark:
                sites = slab(sock, "callsite")
                history.append((elapsed, {r["name"]: (r["liveObjects"], r["freesVisible"]) for r in sites["rows"]}))
                next_mark += args.seconds / 6
        sixth = max(1, int(args.seconds / 6))
        leaks = livelib.call_paced(sock, "io.memstrack.Leaks", {"minAgeSeconds": sixth, "intervalSeconds": sixth,
                                                                "intervals": 6, "limit": 50})
        view_end = proven_hidden(slabsoak.kernel_slab_view(2))
    finally:
        churn.stop()
    sites = slab(sock, "callsite")
    caches = slab(sock, "cache")
    st = status(sock)
    cpu = livelib.process_cpu_seconds(daemon.pid) - cpu0
    rss = livelib.process_rss_bytes(daemon.pid)
    elapsed = time.monotonic() - started

    final = {r["name"]: r for r in sites["rows"]}
    cache_rows = {r["name"]: r for r in caches["rows"]}
    growing = []
    for name, row in final.items():
        if not row["freesVisible"]:
            continue
        counts = [h.get(name, (0, True))[0] for _, h in history] + [row["liveObjects"]]
        if len(counts) > 2 and all(b > a for a, b in zip(counts, counts[1:])):
            # Objects the kernel holds more of too (dentries, inodes, buffer heads of a growing page
            # cache) are live, not freed unseen: its active objects grew at least as much since the start.
            k = (cache_rows.get(row["cache"]) or {}).get("kernel")
            kernel_growth = k["activeObjects"] - k["activeObjectsAtStart"] if k and not row["cache"].startswith("[") else None
            growing.append({"callsite": name, "cache": row["cache"], "live": counts, "kernelGrowth": kernel_growth,
                            "heldByKernel": kernel_growth is not None and kernel_growth >= counts[-1] - counts[0]})
    marked = []
    for r in caches["rows"]:
        if not r["freesVisible"]:
            known = r["frees"] + r["lostFrees"]
            marked.append({"cache": r["name"], "lostFrees": r["lostFrees"],
                           "lostPercent": round(100.0 * r["lostFrees"] / known, 3) if known else None})
    drift = []
    for r in caches["rows"]:
        k = r["kernel"]
        # Held only at a reconciliation for a cache whose frees are not visible; always for the others.
        if k and k["driftObjects"] is not None and r["freesVisible"]:
            drift.append({"cache": r["name"], "drift": k["driftObjects"], "startActive": k["activeObjectsAtStart"],
                          "withinStart": k["driftObjects"] <= k["activeObjectsAtStart"] + k["slackObjects"]})
    result = {
        "seconds": round(elapsed),
        "source": args.source,
        "samples": samples,
        "lostFrees": sites["lostFrees"],
        "lostFreesPerHour": round(sites["lostFreesPerHour"]),
        "visibleAllocs": sites["visibleAllocs"],
        "visibleLostFrees": sites["visibleLostFrees"],
        "visibleLostFreesPercent": sites["visibleLostFreesPercent"],
        "markedCaches": sorted(marked, key=lambda m: -m["lostFrees"]),
        "kernelViewHiddenAtStart": view_start,
        "kernelViewHiddenAtEnd": view_end,
        "maxAboveKernel": {n: o for n, o in sorted(over.items(), key=lambda kv: -kv[1]["excess"])[:15]},
        "cachesEverAboveKernelAndSlab": sorted(n for n, o in over.items() if o["excess"] > o["slab"]),
        "driftBeyondStart": [d for d in drift if not d["withinStart"]],
        "growingVisibleCallSites": growing,
        "growingNotHeldByKernel": [g["callsite"] for g in growing if not g["heldByKernel"]],
        "leakRows": [{"callsite": r["name"], "objects": r["objects"], "growth": r["growth"]} for r in leaks["rows"]],
        "leakRowsGrowingEveryInterval": [r["name"] for r in leaks["rows"] if all(n > 0 for n in r["growth"])],
        "leftOutOfLeaks": [{"callsite": r["name"], "cache": r["cache"], "objects": r["objects"]}
                           for r in leaks["freesNotVisible"]],
        "trimmedObjects": st["slabReconciliation"]["trimmedObjects"],
        "reconciliations": st["slabReconciliation"]["runs"],
        "lostEvents": st["lostEvents"],
        "lostByReason": {r["reason"]: r["count"] for r in st["lostByReason"]},
        "events": st["events"],
        "daemonCpuSeconds": round(cpu, 1),
        "daemonCpuPercent": round(100 * cpu / elapsed, 1),
        "daemonRssBytes": rss,
    }
    return result


if __name__ == "__main__":
    main()
