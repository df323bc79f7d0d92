#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A short slab soak on the live kernel: memstrackd --slab beside ordinary churn (short processes,
mmap/munmap, pipes, eventfds; tests/slabsoak.py) for SECONDS (default 120), with the eBPF source, or perf
where eBPF cannot run. Everything expected is derived from the kernel and the processes, nothing from
timing:

- the kernel's own view: a tracefs instance of ours records kmem_cache_alloc and kmem_cache_free with raw
  pointers for a moment of the churn; a cache whose pointers come back without a free in it, at least 20
  times and for a tenth of its allocations (maple_node on 6.18), frees behind the tracepoints, and
  memstrackd must say its frees are not visible, if it holds any of its objects;
- Leaks lists no call site whose frees are not visible among its leaks, and lists the call sites holding
  objects of such a proven cache apart;
- no call site whose frees are visible holds live objects of a churn worker (which keeps nothing) that grow
  at every sample, sampled about every 20 s, by more than the kernel may cache for reuse (8 per CPU: a
  few thread stacks per CPU stay allocated for the next fork, say), unless the kernel's own count of the
  site's cache in /proc/slabinfo grew as much at the same samples (it still holds them: vmap areas of
  exited tasks' stacks wait for a lazy purge);
- at every sample, a cache whose frees are visible holds no more live objects than /proc/slabinfo counts
  active, plus one slab, the allocations between two reads around the query and the records lost; a cache
  whose frees are not visible held at most its bound and a slab right after the last reconciliation, and
  has gained at most its allocations since;
- the reconciliation ran and read /proc/slabinfo, and lostFrees an hour is reported.

Usage: test-slab-soak.py MEMSTRACKD MEMSTRACKCTL [SECONDS]   (root; exits 77 when it cannot run here)
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
import slabsoak  # noqa: E402
from livelib import fail, wait_for  # noqa: E402

MEMSTRACKD, MEMSTRACKCTL = sys.argv[1:3]
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 120
WORK = tempfile.mkdtemp(prefix="test-slab-soak.")
# Lost frees in the kernel's own view that prove a cache frees behind the tracepoints: at least 20, and a
# tenth of its allocations. The view orders the CPUs' events by their clocks, which a VM's CPUs do not
# keep in step to the nanosecond: a free on one CPU and the reuse on another may come out swapped, a few in
# ten thousand at most.
PROVEN = 20
PROVEN_SHARE = 0.1


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def slab(sock, by):
    return livelib.call(sock, "io.memstrack.Slab", {"by": by, "limit": 10000})


def reconciliation(sock):
    return livelib.call(sock, "io.memstrack.Status")["slabReconciliation"]


def next_reconciliation(sock, runs):
    """Waits until memstrackd reconciled after the run numbered runs; its Status slabReconciliation."""
    return wait_for("memstrackd to reconcile with /proc/slabinfo again",
                    lambda: (lambda r: r if r["runs"] > runs else None)(reconciliation(sock)))


def worker_replies(sock, pids):
    """Leaks of each worker's live objects of any age."""
    return [livelib.call_paced(sock, "io.memstrack.Leaks", {"minAgeSeconds": 0, "intervalSeconds": 1, "intervals": 1,
                                                             "pid": pid, "limit": 10000}) for pid in pids]


def worker_objects_from(replies):
    """{call site: live objects} over the workers' Leaks replies."""
    held = {}
    for reply in replies:
        for row in reply["rows"]:
            held[row["name"]] = held.get(row["name"], 0) + row["objects"]
    return held


def worker_objects(sock, pids):
    return worker_objects_from(worker_replies(sock, pids))


def lazy_purge_pages():
    """lazy_max_pages() of mm/vmalloc.c: the lazily freed vmap pages the kernel keeps before purging."""
    return (32 << 20) // os.sysconf("SC_PAGE_SIZE") * os.cpu_count().bit_length()


def start(source):
    sock = os.path.join(WORK, f"{source}.sock")
    log = open(os.path.join(WORK, f"{source}.log"), "w")
    try:
        # A bigger ring than the default: slab events come at many times the page rate.
        daemon, _ = livelib.start_memstrackd(MEMSTRACKD, sock, "--source", source, "--slab",
                                             "--buffer-pages", "4096", stderr=log)
    except livelib.DaemonExited:
        return None, None
    return daemon, sock


def check_sample(sock, lost_events, problems):
    """One sample: Slab by cache between two reads of /proc/slabinfo, and a second query for the
    allocations made meanwhile. Returns the rows."""
    first = slabsoak.rows_by_name(slab(sock, "cache"))
    before = slabsoak.read_slabinfo()
    rows = slabsoak.rows_by_name(slab(sock, "cache"))
    after = slabsoak.read_slabinfo()
    for name, row in rows.items():
        kernel = row["kernel"]
        if kernel is None or name.startswith("[") or name not in before or name not in after:
            continue
        active = max(before[name][0], after[name][0])
        slack = max(before[name][1], after[name][1])
        window = row["allocs"] - first.get(name, row)["allocs"]
        live = row["liveObjects"]
        if row["freesVisible"]:
            # In use at the query, so active then; objects allocated after the first read and freed
            # before the second are the only ones the reads may both miss.
            if live > active + slack + window + lost_events:
                problems.append(f"{name}: {live} live objects, /proc/slabinfo {before[name][0]} and "
                                f"{after[name][0]} active (slab {slack}), {window} allocated between, "
                                f"{lost_events} records lost")
        else:
            if kernel["liveObjects"] > kernel["boundObjects"] + kernel["slackObjects"]:
                problems.append(f"{name}: {kernel['liveObjects']} live objects after the reconciliation, "
                                f"above its bound {kernel['boundObjects']} + {kernel['slackObjects']}")
            if live > kernel["liveObjects"] + (row["allocs"] - kernel["allocs"]):
                problems.append(f"{name}: {live} live objects now, {kernel['liveObjects']} after the "
                                f"reconciliation and {row['allocs'] - kernel['allocs']} allocated since")
    return rows


def soak(source, daemon, sock):
    status = wait_for("the first reconciliation", lambda: (lambda r: r if r["runs"] > 0 else None)(
        reconciliation(sock)))
    if not status["reconciling"]:
        fail(f"{source}: memstrackd did not read /proc/slabinfo as root: {status}")
    churn = slabsoak.Churn(workers=2, rounds=40)
    problems = []
    try:
        # The kernel's own view, while the churn runs; a smaller window if its buffer overran.
        views = None
        for seconds in (2, 1, 0.5):
            views = slabsoak.kernel_slab_views(seconds)
            if views is not None:
                break
        if views is None:
            skip("the tracefs instance's buffer overran at every window: no view of the kernel's own to check against")
        view, site_view = views
        proven = {name for name, (allocs, frees, lost) in view.items()
                  if lost >= PROVEN and lost >= PROVEN_SHARE * allocs}
        proven_sites = {name for name, (allocs, frees, lost) in site_view.items()
                        if lost >= PROVEN and lost >= PROVEN_SHARE * allocs}
        deadline = time.monotonic() + SECONDS
        samples = 0
        runs = status["runs"]
        held = []               # per sample of the workers' objects: {call site: live objects}
        kernel_active = []      # at the same samples, /proc/slabinfo: {cache: (active objects, per slab)}
        while time.monotonic() < deadline:
            status = next_reconciliation(sock, runs)
            runs = status["runs"]
            lost = livelib.call(sock, "io.memstrack.Status")["lostEvents"]
            check_sample(sock, lost, problems)
            if samples % 10 == 0:
                held.append(worker_objects(sock, churn.pids))
                kernel_active.append(slabsoak.read_slabinfo())
            samples += 1
        # Leaks at the end, while the churn still runs: ages of a few intervals. Whether a call site's frees
        # are visible is decided as lost frees come: the call sites read before and after it.
        sites_before = slab(sock, "callsite")
        leaks = livelib.call_paced(sock, "io.memstrack.Leaks", {"minAgeSeconds": 10, "intervalSeconds": 10,
                                                                 "intervals": 3, "limit": 1000})
        worker_leaks = worker_replies(sock, churn.pids)
    finally:
        churn.stop()

    sites = slab(sock, "callsite")
    caches = slabsoak.rows_by_name(slab(sock, "cache"))
    status = livelib.call(sock, "io.memstrack.Status")
    # What the tracepoints hide, memstrackd sees only through its hooks on the bulk calls (Status
    # kernelHooks); where they do not run, it must mark the cache or call site and say why they do not.
    hooks = {h["function"]: h for h in status["kernelHooks"]}
    hooked = bool(hooks) and all(h["attached"] for h in hooks.values())
    site_rows_now = {r["name"]: r for r in sites["rows"]}
    for what, names, counts, rows in (("cache", proven, view, caches), ("call site", proven_sites, site_view,
                                                                         site_rows_now)):
        for name in sorted(names):
            row = rows.get(name)
            if row is None:
                continue
            if row["freesVisible"] and not hooked:
                problems.append(f"{what} {name}: the kernel's own view has {counts[name][2]} of its pointers "
                                f"allocated again without a free in {counts[name][0]} allocations, but "
                                f"memstrackd says its frees are visible: {row}")
            if not row["freesVisible"] and not any(h["reason"] for h in hooks.values()):
                problems.append(f"{what} {name}: marked as its frees not visible, but Status names no hook that "
                                f"does not run: {status['kernelHooks']}")
            verdict = ("seen through the bulk hooks" if row["freesVisible"] else
                       "marked: " + "; ".join(h["reason"] for h in hooks.values() if h["reason"]))
            print(f"{source}: {what} {name} ({row.get('cache', name)}): {counts[name][2]} of {counts[name][0]} "
                  f"allocations found their object's free hidden from the tracepoints in the kernel's own view; "
                  f"{verdict}; memstrackd's lost frees {row['lostFrees']} of {row['allocs']} allocations",
                  file=sys.stderr)
    invisible = {name for name, row in caches.items() if not row["freesVisible"]}
    site_rows = {r["name"]: r for r in sites["rows"]}
    invisible_sites = {r["name"] for r in sites_before["rows"] if not r["freesVisible"]} & \
        {name for name, r in site_rows.items() if not r["freesVisible"]}
    for row in leaks["rows"]:
        site = site_rows.get(row["name"])
        if row["name"] in invisible_sites:
            problems.append(f"Leaks lists {row['name']} of {site['cache']}, whose frees are not visible: {row}")
    listed_apart = {r["name"] for r in leaks["freesNotVisible"]}
    for name in proven & invisible:
        holders = [r["name"] for r in sites["rows"] if r["cache"] == name and r["liveObjects"] > 0
                   and not r["freesVisible"]]
        if holders and not listed_apart & set(holders):
            problems.append(f"Leaks lists none of {name}'s call sites apart: {holders[:5]}, "
                            f"{leaks['freesNotVisible'][:5]}")
    held.append(worker_objects_from(worker_leaks))
    kernel_active.append(slabsoak.read_slabinfo())
    limit = 8 * os.cpu_count()
    for name in sorted(set().union(*held)):
        if name in invisible_sites:
            continue
        counts = [h.get(name, 0) for h in held]
        if len(counts) >= 4 and all(b > a for a, b in zip(counts, counts[1:])) and counts[-1] - counts[0] > limit:
            # Objects the kernel itself still holds are no phantom, whoever freed them last (vmap areas of
            # exited tasks' stacks wait for a lazy purge): its own count of the cache grew as much.
            cache = (site_rows.get(name) or {}).get("cache")
            active = [slabsoak.active_objects(k, cache) for k in kernel_active]
            if cache and active[-1] - active[0] >= counts[-1] - counts[0]:
                continue
            # vmap areas of exited tasks' stacks wait for the lazy purge until their pages pass
            # lazy_max_pages() (32 MiB times fls(CPUs)), each area one page at least; SLUB's slabinfo need
            # not show them (its active count stood still on 6.1 while they piled up).
            if name.split("+")[0] == "alloc_vmap_area" and counts[-1] - counts[0] <= lazy_purge_pages():
                continue
            problems.append(f"the churn workers, which keep nothing, hold ever more objects of {name}: {counts}"
                            f" (the kernel's {cache}: {active})")
    reconciled = status["slabReconciliation"]
    if reconciled["runs"] < samples or reconciled["error"] is not None:
        problems.append(f"reconciliation: {reconciled}")
    if "lostFreesPerHour" not in sites or sites["lostFreesPerHour"] < 0:
        problems.append(f"no lostFreesPerHour in the Slab reply: {sites}")
    # A bulk allocation's call site is the function that called kmem_cache_alloc_bulk(), found past the
    # hook's own frames in its stack: never the hook (a BPF program's symbol, bpf_prog_TAG_NAME), its
    # trampoline (bpf_trampoline_ID) or the bulk function. The kernel's own bpf_prog_alloc() and kin are
    # real callers: anything on the machine that loads a BPF program allocates through them.
    hook_frame = re.compile(r"bpf_prog_[0-9a-f]{16}_|bpf_trampoline_[0-9]+|kmem_cache_alloc_bulk")
    for r in sites["rows"]:
        if hook_frame.match(r["name"]) or r["name"] in ("0x0", "0"):
            problems.append(f"a call site named {r['name']} ({r.get('cache')}): not the allocation's caller")
    # The maple tree's nodes, which the kernel allocates and frees in bulk (and frees through kfree_rcu()):
    # seen where the bulk hooks run, else marked, and then Status says why (a hook that does not run, or
    # records the source lost).
    maple = caches.get("maple_node")
    if maple is not None and maple["allocs"] >= 1000:
        reasons = [h["reason"] for h in hooks.values() if h["reason"]]
        if status["lostEvents"] > 0:
            reasons.append(f"{status['lostEvents']} records lost ({status['lostByReason']})")
        if not maple["freesVisible"] and not reasons:
            problems.append(f"maple_node is marked as its frees not visible, with the bulk hooks running and no "
                            f"record lost: {maple}")
        print(f"{source}: maple_node: {maple['allocs']} allocations, {maple['lostFrees']} lost frees: "
              f"{'seen' if maple['freesVisible'] else 'marked, ' + '; '.join(reasons)}", file=sys.stderr)
    marked = sorted(invisible - {n for n in invisible if n.startswith("[")})
    for name in marked:
        print(f"{source}: marked {name}: {caches[name]['lostFrees']} lost frees in {caches[name]['allocs']} "
              f"allocations; the source lost {status['lostByReason']}", file=sys.stderr)
    if problems:
        fail(f"{source}: " + "\n  ".join(problems))
    return (f"ok {source}: {samples} samples over {SECONDS:.0f} s; frees proven hidden by the kernel's own "
            f"view: {sorted(proven)}, call sites {sorted(proven_sites)}; marked by memstrackd: {marked}; "
            f"lost frees {sites['lostFrees']} "
            f"({sites['lostFreesPerHour']:.0f} an hour), {sites['visibleLostFreesPercent']:.4f}% of the "
            f"allocations whose frees are visible; {reconciled['trimmedObjects']} objects dropped above the "
            f"kernel's counts; records lost {status['lostEvents']}")


def main():
    if os.geteuid() != 0:
        skip("needs root (tracing, /proc/slabinfo)")
    if not os.path.isdir(os.path.join(slabsoak.TRACEFS, "instances")):
        skip(f"no tracefs instances at {slabsoak.TRACEFS}")
    for source in ("ebpf", "perf"):
        daemon, sock = start(source)
        if daemon is None:
            continue
        try:
            print(soak(source, daemon, sock))
            return
        finally:
            daemon.terminate()
            daemon.wait(livelib.WAIT)
    skip("neither the eBPF nor the perf source could run here")


if __name__ == "__main__":
    main()
