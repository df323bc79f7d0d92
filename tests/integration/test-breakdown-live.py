#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PageBreakdown on the live kernel, with every source that runs here (perf, eBPF, ftrace): a process
that takes order-0 pages through page faults (16 MiB of anonymous memory, touched page by page, no huge
pages) and order-3 pages through a kernel path (a packet socket's receive ring of 64 blocks of 32 KiB,
which the kernel allocates with __get_free_pages(GFP_KERNEL | __GFP_COMP | __GFP_ZERO | __GFP_NOWARN |
__GFP_NORETRY, 3)) shows both by order and by GFP flags: the ring's flags hold exactly its 512 pages, the
order-3 row at least those, order 0 and the fault's flags at least the pages touched, and every
breakdown adds up to what the process holds. By node, every page is on a node the kernel has.

Needs root (perf events, a raw packet socket); exits 77 (skip) otherwise, saying why. No timing: waits
poll for a condition, with a bound.

Usage: test-breakdown-live.py MEMSTRACKD MEMSTRACKCTL
"""

import mmap
import os
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import call, fail, wait_for  # noqa: E402

MEMSTRACKD = MEMSTRACKCTL = None
TOUCHED = 4096                  # order-0 pages touched
RING_BLOCKS, RING_BLOCK = 64, 32768
RING_PAGES = RING_BLOCKS * RING_BLOCK // 4096
SOL_PACKET, PACKET_RX_RING = 263, 5
RING_FLAGS = {"GFP_KERNEL", "__GFP_COMP", "__GFP_ZERO", "__GFP_NOWARN", "__GFP_NORETRY"}


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def holder():
    """The child: takes its pages, says so on fd 1, and holds them until its stdin closes."""
    area = mmap.mmap(-1, TOUCHED * 4096)
    area.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(TOUCHED):
        area[i * 4096] = 1
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.setsockopt(SOL_PACKET, PACKET_RX_RING, struct.pack("IIII", RING_BLOCK, RING_BLOCKS, 2048,
                                                         RING_BLOCKS * RING_BLOCK // 2048))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.read()


def rows(sock, by, pid):
    reply = call(sock, "io.memstrack.PageBreakdown", {"by": by, "pid": pid})
    total = sum(r["pages"] for r in reply["rows"])
    if total != reply["totalPages"] or reply["otherPages"] != 0:
        fail(f"by {by}: rows add up to {total}, not totalPages {reply['totalPages']}: {reply}")
    return reply


def check_source(source, work):
    sock = os.path.join(work, f"{source}.sock")
    try:
        daemon, status = livelib.start_memstrackd(MEMSTRACKD, sock, f"--source={source}", "--state-directory=",
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except livelib.DaemonExited:
        print(f"{source}: cannot run here, not checked")
        return False
    child = subprocess.Popen([sys.executable, __file__, "--holder"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        if child.stdout.readline().strip() != "ready":
            fail(f"{source}: the holder did not get its pages")

        last = {}

        def ring_seen():
            gfp = last["gfp"] = rows(sock, "gfp", child.pid)
            for r in gfp["rows"]:
                if set(r["key"].split("|")) == RING_FLAGS and r["pages"] >= RING_PAGES:
                    return gfp
            return None
        try:
            gfp = wait_for(f"{source}: the ring's pages", ring_seen)
        except SystemExit:
            print(f"{source}: the holder's pages by GFP flags: {[(r['key'], r['pages']) for r in last['gfp']['rows']]}",
                  file=sys.stderr)
            raise
        order = rows(sock, "order", child.pid)
        node = rows(sock, "node", child.pid)
        task = call(sock, "io.memstrack.Tasks", {"pid": child.pid})["tasks"][0]
        by_order = {r["order"]: r["pages"] for r in order["rows"]}
        ring = [r for r in gfp["rows"] if set(r["key"].split("|")) == RING_FLAGS]
        faults = sum(r["pages"] for r in gfp["rows"] if "GFP_HIGHUSER_MOVABLE" in r["key"].split("|"))
        print(f"{source}: by order {by_order}; ring {ring[0]['key']} {ring[0]['pages']} pages; "
              f"movable user pages {faults}; by node {[(r['key'], r['pages']) for r in node['rows']]}; "
              f"the task {task['currentPages']} pages")
        if len(ring) != 1 or ring[0]["pages"] != RING_PAGES:
            fail(f"{source}: the ring's flags hold {[r['pages'] for r in ring]} pages, not {RING_PAGES}")
        if by_order.get(3, 0) < RING_PAGES:
            fail(f"{source}: order 3 holds {by_order.get(3, 0)} pages, fewer than the ring's {RING_PAGES}")
        if by_order.get(0, 0) < TOUCHED or faults < TOUCHED:
            fail(f"{source}: order 0 {by_order.get(0, 0)}, fault flags {faults}: fewer than {TOUCHED} touched")
        for reply in (gfp, order, node):
            if reply["totalPages"] != task["currentPages"]:
                fail(f"{source}: by {reply['by']} {reply['totalPages']} pages, the task {task['currentPages']}")
        if not node["zonesKnown"] or any(r["key"] == "[unknown]" for r in node["rows"]):
            # Several nodes and keys that are not pfns: the node cannot be told, and the reply says so.
            if status["backend"] in ("perf", "ftrace") or node["zonesKnown"]:
                fail(f"{source}: nodes unknown: {node}")
        # What a user sees.
        out = subprocess.run([MEMSTRACKCTL, f"--address=unix:{sock}", "pages", "--by", "order", "--task",
                              str(child.pid)], capture_output=True, text=True)
        if out.returncode != 0 or not any(line.split()[:2] == ["3", str(by_order[3])] for line in out.stdout.splitlines()):
            fail(f"{source}: memstrackctl pages --by order shows no order 3 row of {by_order[3]}: {out.stdout}{out.stderr}")
        return True
    finally:
        child.stdin.close()
        child.wait()
        daemon.terminate()
        daemon.wait()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--holder":
        holder()
        return
    global MEMSTRACKD, MEMSTRACKCTL
    MEMSTRACKD, MEMSTRACKCTL = sys.argv[1:3]
    if os.geteuid() != 0:
        skip("needs root for perf events and a packet socket")
    if not os.path.isdir("/sys/kernel/tracing/events/kmem/mm_page_alloc"):
        skip("no kmem tracepoints in /sys/kernel/tracing")
    with tempfile.TemporaryDirectory(prefix="test-breakdown-live.") as work:
        checked = [s for s in ("perf", "ebpf", "ftrace") if check_source(s, work)]
    if not checked:
        skip("no source could run here")
    print(f"checked with {', '.join(checked)}")


if __name__ == "__main__":
    main()
