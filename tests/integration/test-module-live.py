#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pages charged to the kernel module in whose code they were allocated, on a kernel with modules.

The module is brd, the RAM disk: every 4 KiB written to /dev/ram0 for the first time makes brd allocate a
page of its own (brd_insert_page(), a frame of brd.ko), held until the module is removed. So after 64 MiB
are written with O_DIRECT (no page cache between), Modules must show brd holding 16384 pages more than
before, and its peak that high; the stack tree of module brd has its pages below a frame of brd; and once
`rmmod brd` frees the disk, brd holds none of them any more and is marked unloaded (or forgotten).

Per source that records a stack for every page: perf, and ebpf with --stack-sample-interval=1 where the
kernel runs it (auto's choice says; it says why not where it does not).

Needs root, a kernel with loadable modules and brd among them (Debian's kernels have it; the kernel lab
boots them: scripts/kernel-lab); exits 77 (skip) otherwise, saying why.

Usage: test-module-live.py MEMSTRACKD MEMSTRACKCTL
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import WAIT, call, fail, wait_for  # noqa: E402

PAGES = 16384                   # 64 MiB of 4 KiB pages
TOLERANCE = PAGES * 5 // 1000   # 0.5 %: the disk's index (xarray nodes come from slab pages)
DISK = "/dev/ram0"

MEMSTRACKD, MEMSTRACKCTL = sys.argv[1:3]
WORK = tempfile.mkdtemp(prefix="test-module-live.")


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def module(sock, name):
    """The Modules entry of name, or None."""
    for m in call(sock, "io.memstrack.Modules", {"limit": 10000})["modules"]:
        if m["name"] == name:
            return m
    return None


def loaded_modules():
    with open("/proc/modules") as f:
        return {line.split()[0] for line in f}


def remove_brd():
    if "brd" in loaded_modules():
        subprocess.run(["rmmod", "brd"], check=True)


def frames(node):
    yield node
    for child in node.get("children") or ():
        yield from frames(child)


def check_source(source, *extra):
    sock = os.path.join(WORK, f"sock-{source}")
    log = open(os.path.join(WORK, f"memstrackd-{source}.log"), "w+")
    daemon, status = livelib.start_memstrackd(MEMSTRACKD, sock, "--source", source, *extra,
                                              stdout=log, stderr=subprocess.STDOUT)
    try:
        if status["backend"] != source:
            fail(f"{source}: memstrackd runs {status['backend']} ({status.get('backendReason')})")
        # A disk twice the size written, in KiB: nothing written yet holds no page.
        subprocess.run(["modprobe", "brd", "rd_nr=1", f"rd_size={2 * PAGES * 4}", "max_part=0"], check=True)
        wait_for(f"{DISK}", lambda: os.path.exists(DISK))
        before = module(sock, "brd")
        held_before = before["currentPages"] if before else 0
        subprocess.run(["dd", "if=/dev/zero", f"of={DISK}", "bs=1M", f"count={PAGES * 4 // 1024}",
                        "oflag=direct", "status=none"], check=True)
        # Every page the writes made is in the daemon's accounting once it read the events: poll.
        held = wait_for("brd's pages", lambda: (lambda m: m if m and m["currentPages"] - held_before >= PAGES
                                                else None)(module(sock, "brd")))
        added = held["currentPages"] - held_before
        if not PAGES <= added <= PAGES + TOLERANCE:
            fail(f"{source}: brd holds {added} pages more after writing {PAGES} pages to {DISK}, "
                 f"expected {PAGES} (+{TOLERANCE} allowed for its index)")
        if held["peakPages"] < held["currentPages"] or not held["loaded"]:
            fail(f"{source}: brd's entry is wrong while it holds the disk: {held}")
        tree = call(sock, "io.memstrack.StackTree", {"module": "brd"})
        brd_frames = [n for n in frames(tree["root"]) if n.get("module") == "brd"]
        if not brd_frames or max(n["currentPages"] for n in brd_frames) < PAGES:
            fail(f"{source}: the stack tree of module brd has no frame of brd holding {PAGES} pages: "
                 f"{[(n['frame'], n['currentPages']) for n in brd_frames][:10]}")
        print(f"{source}: brd holds {added} pages after writing {PAGES}, below "
              f"{max(brd_frames, key=lambda n: n['currentPages'])['frame']}", file=sys.stderr)
        remove_brd()
        after = wait_for("brd's pages freed", lambda: (lambda m: m if m is None or m["currentPages"] < PAGES
                                                        else None)(module(sock, "brd")) or "gone")
        if after != "gone":
            if after["currentPages"] > held_before + TOLERANCE or after["loaded"]:
                fail(f"{source}: after rmmod brd, its entry is {after} (it held {held_before} before the writes)")
            if after["peakPages"] < held["currentPages"]:
                fail(f"{source}: brd's peak {after['peakPages']} is below what it held, {held['currentPages']}")
    finally:
        daemon.terminate()
        daemon.wait(WAIT)
        remove_brd()
        log.seek(0)
        if daemon.returncode != 0:
            print(log.read(), file=sys.stderr)
            fail(f"{source}: memstrackd exited with {daemon.returncode}")


def ebpf_missing():
    """Why the eBPF source cannot run here (auto says, in Status), or None."""
    sock = os.path.join(WORK, "sock-auto")
    daemon, status = livelib.start_memstrackd(MEMSTRACKD, sock, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL)
    daemon.terminate()
    daemon.wait(WAIT)
    return None if status["backend"] == "ebpf" else status["backendReason"]


def main():
    if os.geteuid() != 0:
        skip("needs root to trace page events and load a module")
    if not os.path.exists("/proc/modules"):
        skip("the kernel has no loadable modules")
    if subprocess.run(["modinfo", "brd"], capture_output=True).returncode != 0:
        skip("the kernel has no brd module (modinfo brd)")
    if "brd" in loaded_modules():
        skip("brd is loaded already: its disks may be in use")
    try:
        check_source("perf")
        why_not = ebpf_missing()
        if why_not:
            print(f"ebpf: not checked, {why_not}", file=sys.stderr)
        else:
            check_source("ebpf", "--stack-sample-interval=1")
    finally:
        subprocess.run(["rm", "-rf", WORK])
    print("module pages charged and released", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
