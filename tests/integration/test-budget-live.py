#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The memory budget on the live kernel: memstrackd started with --max-memory far below what a load
needs stays alive, keeps its tables under the budget and its RSS under the budget plus its fixed part,
says in Status what it gave up, and takes it back once the load is gone.

The budget is twice the tables an idle memstrackd holds (read from a first, unbudgeted one); the load is
a holder of as many pages as take twice the budget's room above idle in page table (8 bytes a page), so
the daemon must give up tracking pages to stay within it. The fixed part is what the budgeted daemon
holds idle besides its tables (code, symbols, rings, history), and 4 MiB for the allocator's own
headers and free space (under AddressSanitizer, whose quarantine and shadow are no part of the tables,
RSS is not held to it: the tables are). Needs root and the kernel's page tracepoints; exits 77 (skip) without them, or
when MemAvailable does not hold the load with 2 GiB to spare. No timing: every wait polls a condition
and gives up after a bound.

Usage: test-budget-live.py MEMSTRACKD LOADGEN
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import call, fail, wait_for  # noqa: E402

MIB = 1 << 20
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
ALLOCATOR_SLACK = 4 * MIB
SMALL_PAGES = 16384             # the load after the holder: tracked again
TOLERANCE = SMALL_PAGES // 100

MEMSTRACKD, LOADGEN = sys.argv[1:3]
WORK = tempfile.mkdtemp(prefix="test-budget-live.")
children = []


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def core(sock):
    return call(sock, "io.memstrack.Status")["coreMemory"]


def steps_in_effect(sock):
    return {s["name"] for s in core(sock)["steps"] if s["inEffect"]}


def settled_core_bytes(sock):
    """The core's bytes once two reads a poll apart agree (seeding the tasks is over)."""
    last = [None]

    def same():
        now = core(sock)["coreBytes"]
        agreed = now == last[0]
        last[0] = now
        return agreed
    wait_for("memstrackd's tables to settle", same)
    return last[0]


def sanitized(pid):
    """Whether the process runs with AddressSanitizer's runtime mapped."""
    with open(f"/proc/{pid}/maps") as f:
        return any("libasan" in line or "libclang_rt.asan" in line for line in f)


def start(sock, *args):
    d, _ = livelib.start_memstrackd(MEMSTRACKD, sock, *args, stdout=subprocess.DEVNULL)
    children.append(d)
    return d


def task_pages(sock, pid):
    try:
        return call(sock, "io.memstrack.Tasks", {"pid": pid})["tasks"][0]["currentPages"]
    except livelib.VarlinkError:
        return 0


def main():
    if os.geteuid() != 0:
        skip("needs root to trace page events system-wide")
    if not os.path.exists("/sys/kernel/tracing/events/kmem/mm_page_alloc") and \
            not os.path.exists("/sys/kernel/debug/tracing/events/kmem/mm_page_alloc"):
        skip("the kernel has no kmem:mm_page_alloc tracepoint in tracefs")

    # An idle daemon's tables, without a budget.
    sock = os.path.join(WORK, "idle.sock")
    d = start(sock, "--max-memory=infinity")
    idle_core = settled_core_bytes(sock)
    if core(sock)["limitBytes"] is not None:
        fail("--max-memory=infinity still reports a budget")
    d.terminate()
    d.wait()

    budget = 2 * idle_core
    pages = 2 * (budget - idle_core) // 8
    if mem_available() < pages * PAGE_SIZE + (2 << 30):
        skip(f"MemAvailable {mem_available() >> 20} MiB does not hold {pages * PAGE_SIZE >> 20} MiB and 2 GiB")

    sock = os.path.join(WORK, "budget.sock")
    d = start(sock, f"--max-memory={budget}")
    if core(sock)["limitBytes"] != budget:
        fail(f"limitBytes {core(sock)['limitBytes']}, expected {budget}")
    settled_core_bytes(sock)
    fixed = livelib.process_rss_bytes(d.pid) - core(sock)["coreBytes"] + ALLOCATOR_SLACK
    print(f"idle tables {idle_core / MIB:.1f} MiB, budget {budget / MIB:.1f} MiB, fixed part "
          f"{fixed / MIB:.1f} MiB; holder of {pages} pages")

    holder = livelib.Loadgen(LOADGEN, pages, children=children)
    holder.do("alloc", "allocated")
    # The holder's pages all went somewhere: tracked, or not tracked under the step "pages".
    wait_for("the holder's pages to be counted, tracked or given up",
             lambda: task_pages(sock, holder.pid) + core(sock)["untrackedAllocationPages"] >= pages)
    if d.poll() is not None:
        fail(f"memstrackd exited with {d.returncode} under its budget")
    c = core(sock)
    rss = livelib.process_rss_bytes(d.pid)
    print(f"with the holder: tables {c['coreBytes'] / MIB:.1f} MiB, RSS {rss / MIB:.1f} MiB, in effect "
          f"{sorted(steps_in_effect(sock))}, {c['untrackedAllocationPages']} pages not tracked")
    if c["coreBytes"] > budget:
        fail(f"tables {c['coreBytes']} bytes above the budget {budget}")
    # Under AddressSanitizer freed memory waits in its quarantine and its shadow grows with the heap:
    # RSS then says nothing of the tables, which are held to the budget above all the same.
    if sanitized(d.pid):
        print("RSS not held to the budget: memstrackd runs under AddressSanitizer")
    elif rss > budget + fixed:
        fail(f"RSS {rss} above the budget and the fixed part, {budget + fixed}")
    if "pages" not in steps_in_effect(sock):
        fail(f"Status does not say pages are given up: {c['steps']}")
    if c["untrackedAllocationPages"] == 0 or task_pages(sock, holder.pid) >= pages:
        fail(f"the holder's {pages} pages were all tracked within a budget for half of them")
    taken = {s["name"]: s["taken"] for s in c["steps"]}
    for name in ("exitedTasks", "stacks", "pages"):
        if taken[name] < 1:
            fail(f"step {name} never taken: {c['steps']}")

    # The holder gone, the tables fall and the steps are lifted: pages are tracked again.
    holder.do("free", "freed")
    holder.exit()
    wait_for("the budget's steps to be lifted", lambda: not steps_in_effect(sock))
    small = livelib.Loadgen(LOADGEN, SMALL_PAGES, children=children)
    small.do("alloc", "allocated")
    wait_for("a new load to be tracked", lambda: task_pages(sock, small.pid) >= SMALL_PAGES - TOLERANCE)
    small.exit()
    if d.poll() is not None:
        fail(f"memstrackd exited with {d.returncode}")
    d.terminate()
    d.wait()
    print("ok")


if __name__ == "__main__":
    try:
        main()
    finally:
        livelib.kill_children(children, WORK)
