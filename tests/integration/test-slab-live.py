#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Slab objects end to end on the live kernel: memstrackd --slab, a child holding N eventfds (each one
kmalloc of the kernel's eventfd context), then memstrackctl slab --json: the eventfd call site holds N more
live objects of one size (allocated >= requested, the allocator's rounding), the child's task row holds
them, report --format slab_callsites lists them, and after the child closes them the call site is back
where it was. Leaks: a child that keeps opening eventfds and closes none is listed at that call site,
growing in every recent interval; one that opens and closes them all the time is not. The same for pages:
loadgen touching 50 pages a second and freeing none grows in every interval, loadgen allocating and
freeing all the time does not, and memstrackctl leaks prints the leaker. Run for each source that can
run here (ebpf, perf); a memstrackd without --slab says it does not trace objects. Needs root and a live
tracing source; exits 77 (skip) otherwise, saying why. No timing: waits poll a condition with a bound.

Usage: test-slab-live.py MEMSTRACKD MEMSTRACKCTL LOADGEN
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import fail, wait_for  # noqa: E402

N = 200
MEMSTRACKD, MEMSTRACKCTL, LOADGEN = sys.argv[1:4]
LEAK_RATE = 100         # pages a second the page leaker touches and keeps
WORK = tempfile.mkdtemp(prefix="test-slab-live.")
HOLDER = f"""
import os, sys
fds = [os.eventfd(0) for _ in range({N})]
print("held", flush=True)
sys.stdin.readline()
"""


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def slab(sock, by="callsite"):
    out = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "--json=short", "slab", "--by", by,
                          "--limit", "10000"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"memstrackctl slab --by {by} failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout)


LEAKER = """
import os, sys, time
fds = []
while True:
    fds.append(os.eventfd(0))
    time.sleep(0.05)
"""
STEADY = """
import os, time
while True:
    os.close(os.eventfd(0))
    time.sleep(0.01)
"""


def check_leaks(source, sock):
    """The leaker's eventfds are old and grow in each of 3 one-second intervals; the steady child's none."""
    leaker = subprocess.Popen([sys.executable, "-c", LEAKER])
    steady = subprocess.Popen([sys.executable, "-c", STEADY])
    try:
        def leaks(pid):
            return livelib.call_paced(sock, "io.memstrack.Leaks", {"minAgeSeconds": 1, "intervalSeconds": 1,
                                                                    "intervals": 3, "pid": pid})["rows"]

        def growing():
            rows = [r for r in leaks(leaker.pid) if r["name"].split("+")[0].endswith("eventfd")]
            return rows if rows and all(n > 0 for n in rows[0]["growth"]) else None
        row = wait_for(f"{source}: Leaks to list the leaking child's eventfds in every interval", growing)[0]
        if row["objects"] <= 0 or row["oldestAgeUsec"] < 1000000:
            fail(f"{source}: the leaking child's row: {row}")
        steady_rows = [r for r in leaks(steady.pid) if r["name"].split("+")[0].endswith("eventfd")]
        if steady_rows:
            fail(f"{source}: Leaks lists the steady child, which frees what it allocates: {steady_rows}")
        return f"growth {row['growth']}, {row['objects']} objects older than 1 s; the steady child not listed"
    finally:
        for p in (leaker, steady):
            p.kill()
            p.wait()


# Where the kernel allocates a process's page tables, and the pages that batch them for an RCU-deferred free.
RCU_FREED_PAGES = ("pte_alloc_one", "__pmd_alloc", "__pud_alloc", "__p4d_alloc", "pgd_alloc", "tlb_remove_table")


def frees_deferred(row):
    """True if the row's pages are page tables or their free batches, freed only after an RCU grace period."""
    return any(f.split("+")[0] in RCU_FREED_PAGES for f in row["frames"])


def check_page_leaks(source, sock):
    """loadgen touching LEAK_RATE pages a second grows in each of 3 one-second intervals by about that many
    pages (ages are kept to 268 ms: at least half of it); loadgen allocating and freeing 16 pages every few
    ms grows, in the intervals that began after its start-up (it says pid= at its first allocation) and
    ended before now, by less than half an interval of the leaker in all of them together, its page tables
    apart."""
    leaker = subprocess.Popen([LOADGEN, "--pages", "100000", "--rate", str(LEAK_RATE), "--hold-until-signal"],
                              stdout=subprocess.DEVNULL)
    steady = subprocess.Popen([LOADGEN, "--pages", "16", "--hold-ms", "2", "--repeat", "100000000"],
                              stdout=subprocess.PIPE, text=True)
    try:
        if not steady.stdout.readline().startswith("pid="):
            fail(f"{source}: the steady loadgen did not start")
        steady_started = time.monotonic()
        def growth(reply, pid):
            rows = [r for r in reply["pages"] if r["pid"] == pid]
            return rows, [sum(r["growth"][k] for r in rows) for k in range(3)]

        def leaks(pid):
            return livelib.call_paced(sock, "io.memstrack.Leaks", {"minAgeSeconds": 1, "intervalSeconds": 1,
                                                                    "intervals": 3, "pid": pid, "limit": 1000})

        def growing():
            rows, g = growth(leaks(leaker.pid), leaker.pid)
            return (rows, g) if all(n >= LEAK_RATE // 2 for n in g) else None
        rows, g = wait_for(f"{source}: Leaks to list the leaking loadgen's pages in every interval", growing)
        if sum(r["pages"] for r in rows) < LEAK_RATE // 2 or max(r["oldestAgeUsec"] for r in rows) < 1000000:
            fail(f"{source}: the leaking loadgen's page rows: {rows}")
        if rows[0]["comm"] != "loadgen":
            fail(f"{source}: the leaker's row names {rows[0]['comm']!r}, not loadgen")
        # The steady one's start (its program, stack and heap) is in the interval it started in: after it,
        # nothing it allocates stays. So its growth is read once all three intervals began after its
        # start-up, plus the grain of a page's age.
        grain = leaks(steady.pid)["pageAgeGrainUsec"] / 1e6
        time.sleep(max(0.0, steady_started + 3 + grain - time.monotonic()))
        # Page tables and the batches that carry them to their free are the kernel's: it frees them after an
        # RCU grace period, which on a loaded machine can take seconds, so they are not the loadgen's growth.
        # The newest interval holds what it uses now, and what it freed that the daemon has yet to read (a
        # while, on a loaded machine): only the older ones say whether it keeps what it allocates.
        reply = leaks(steady.pid)
        steady_rows, sg = growth({"pages": [r for r in reply["pages"] if not frees_deferred(r)]}, steady.pid)
        if sum(sg[:-1]) >= LEAK_RATE // 2:
            fail(f"{source}: Leaks has the steady loadgen growing by {sg} pages, the leaker by {g}: {steady_rows}")
        # memstrackctl leaks prints it as the leaks report does (the snapshot's view is a minute old at least).
        out = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "leaks", "--min-age", "1s"],
                             capture_output=True, text=True)
        if out.returncode != 0 or f"  {leaker.pid} loadgen: " not in out.stdout:
            fail(f"{source}: memstrackctl leaks does not list the leaker (pid {leaker.pid}): "
                 f"{out.stdout[:800]!r} {out.stderr!r}")
        out = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "report", "--format", "leaks"],
                             capture_output=True, text=True)
        if out.returncode != 0 or "Pages by process and stack:" not in out.stdout:
            fail(f"{source}: report --format leaks: {out.stdout[:800]!r} {out.stderr!r}")
        return f"pages: leaker growth {g}, steady {sg}"
    finally:
        for p in (leaker, steady):
            p.kill()
            p.wait()


def eventfd_rows(reply):
    return {r["name"]: r for r in reply["rows"] if r["name"].split("+")[0].endswith("eventfd")}


def check_source(source):
    sock = os.path.join(WORK, f"{source}.sock")
    log_path = os.path.join(WORK, f"{source}.log")
    with open(log_path, "w") as log:
        try:
            daemon, status = livelib.start_memstrackd(MEMSTRACKD, sock, "--source", source, "--slab", stderr=log)
        except livelib.DaemonExited:
            with open(log_path) as f:
                return f"SKIP {source}: memstrackd could not start: {f.read().strip()[-300:]}"
    try:
        before = slab(sock)
        if not before["tracing"]:
            fail(f"{source}: Slab says tracing is off under --slab")
        base = {name: r["liveObjects"] for name, r in eventfd_rows(before).items()}
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        if holder.stdout.readline().strip() != "held":
            fail("the eventfd holder did not start")

        def grown():
            rows = eventfd_rows(slab(sock))
            site = [r for name, r in rows.items() if r["liveObjects"] - base.get(name, 0) >= N]
            return (site[0], rows) if site else None
        site, rows = wait_for(f"{source}: an eventfd call site with {N} more live objects", grown)
        added = site["liveObjects"] - base.get(site["name"], 0)
        if added != N:
            fail(f"{source}: {site['name']} has {added} more live objects, expected exactly {N}: {site}")
        # One object size: the bytes are N times one request, and the allocator rounds up, never down.
        if site["liveBytesRequested"] % site["liveObjects"] or site["liveBytesAllocated"] < site["liveBytesRequested"]:
            fail(f"{source}: {site['name']} bytes are not one size rounded up: {site}")
        tasks = slab(sock, "task")
        mine = [r for r in tasks["rows"] if r["pid"] == holder.pid]
        if not mine or mine[0]["liveObjects"] < N:
            fail(f"{source}: the holder (pid {holder.pid}) is not charged its {N} objects: {mine}")

        # The report format renders the same call site from a snapshot memstrackctl takes.
        out = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "report", "--format", "slab_callsites"],
                             capture_output=True, text=True)
        line = next((x for x in out.stdout.splitlines() if x.strip().startswith(site["name"] + ":")), "")
        if out.returncode != 0 or int(line.split(":")[1].split()[0] if line else -1) < N:
            fail(f"{source}: report --format slab_callsites does not list {site['name']} with {N} objects: "
                 f"{out.stdout[:600]!r} {out.stderr!r}")

        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(livelib.WAIT)
        name = site["name"]

        def back():
            r = eventfd_rows(slab(sock)).get(name)
            return (r or {"liveObjects": 0})["liveObjects"] <= base.get(name, 0) + 0 or None
        wait_for(f"{source}: {name} back to its {base.get(name, 0)} live objects after the close", back)
        leak = check_leaks(source, sock) + "; " + check_page_leaks(source, sock)
        return (f"ok {source}: {name} held {N} eventfd contexts of {site['liveBytesRequested'] // site['liveObjects']}"
                f" bytes ({site['liveBytesAllocated'] // site['liveObjects']} allocated), all freed; leaks: {leak}")
    finally:
        daemon.terminate()
        daemon.wait(livelib.WAIT)


def main():
    if os.geteuid() != 0:
        skip("needs root (tracing)")
    if not hasattr(os, "eventfd"):
        skip("this Python has no os.eventfd")
    results = [check_source(s) for s in ("ebpf", "perf")]
    for line in results:
        print(line)
    if not any(line.startswith("ok") for line in results):
        skip("no source could trace slab objects here")

    # Without --slab: Slab answers, says so, and memstrackctl tells the user how to turn it on.
    sock = os.path.join(WORK, "plain.sock")
    daemon, _ = livelib.start_memstrackd(MEMSTRACKD, sock, "--source", "perf", stderr=subprocess.DEVNULL)
    try:
        reply = slab(sock)
        if reply["tracing"] or reply["liveObjects"] != 0:
            fail(f"without --slab: {reply}")
        out = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "slab"], capture_output=True, text=True)
        if out.returncode != 0 or "--slab" not in out.stdout:
            fail(f"memstrackctl slab without --slab does not say how to turn it on: {out.stdout!r} {out.stderr!r}")
    finally:
        daemon.terminate()
        daemon.wait(livelib.WAIT)
    print("ok: without --slab, Slab says it does not trace them")


if __name__ == "__main__":
    main()
