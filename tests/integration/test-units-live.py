#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pages per unit on the live kernel: a loadgen moved into a cgroup of its own is charged there, by
name, and its pages leave that cgroup when freed even after it moved out again.

Needs root, perf events, the kmem tracepoints and a writable cgroup2 hierarchy (/sys/fs/cgroup, or
/sys/fs/cgroup/unified on hybrid hosts); exits 77 (skip) otherwise, saying why. No timing: every wait
polls for a condition and gives up after a bound.

Usage: test-units-live.py MEMSTRACKD LOADGEN MEMSTRACKCTL
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import WAIT, VarlinkError, call, fail, wait_for  # noqa: E402

PAGES = 16384                   # 64 MiB of 4 KiB pages
TOLERANCE = PAGES * 5 // 1000   # 0.5 %
PAGE_TABLES = PAGES // 512 + 1  # PTE pages mapping them, plus a PMD page
CGROUP2_SUPER_MAGIC = 0x63677270

MEMSTRACKD, LOADGEN, MEMSTRACKCTL = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="test-units-live.")
children = []


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def near(value, expected, what, extra=0):
    if not expected - TOLERANCE <= value <= expected + TOLERANCE + extra:
        fail(f"{what}: {value} pages, expected {expected} +- {TOLERANCE} (+{extra} allowed above)")


def cgroup2_root():
    """The cgroup2 mount: /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on hybrid ones."""
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        try:
            out = subprocess.run(["stat", "-f", "-c", "%t", path], capture_output=True, text=True, check=True)
        except (subprocess.CalledProcessError, FileNotFoundError):
            continue
        if int(out.stdout.strip(), 16) == CGROUP2_SUPER_MAGIC:
            return path
    return None


def own_cgroup(root):
    """This process's cgroup2 directory ("0::/path" in /proc/self/cgroup)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return root + line[3:].strip().rstrip("/")
    return root


def move(pid, cgroup_dir):
    with open(os.path.join(cgroup_dir, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def main():
    if os.geteuid() != 0:
        skip("needs root to trace page events system-wide and to make a cgroup")
    if not os.path.exists("/proc/sys/kernel/perf_event_paranoid"):
        skip("the kernel has no perf events")
    root = cgroup2_root()
    if not root:
        skip("no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
    home = own_cgroup(root)
    name = f"memstrack-test-{os.getpid()}.scope"
    cgroup = os.path.join(root, name)
    try:
        os.mkdir(cgroup)
    except OSError as e:
        skip(f"cannot make a cgroup in {root}: {e.strerror}")
    try:
        run(root, home, cgroup, name)
    finally:
        livelib.kill_children(children)
        try:
            os.rmdir(cgroup)
        except OSError:
            pass
        subprocess.run(["rm", "-rf", WORK])
    print("all cases passed", file=sys.stderr)
    return 0


def run(root, home, cgroup, name):
    sock = os.path.join(WORK, "sock")
    log = open(os.path.join(WORK, "memstrackd.log"), "w+")
    try:
        daemon, _ = livelib.start_memstrackd(MEMSTRACKD, sock, "--source", "perf", stdout=log,
                                             stderr=subprocess.STDOUT)
    except livelib.DaemonExited as e:
        log.seek(0)
        fail(f"memstrackd exited with {e.returncode}:\n{log.read()}")
    except TimeoutError:
        fail("timed out waiting for memstrackd to answer")
    children.append(daemon)

    def unit():
        try:
            return call(sock, "io.memstrack.Units", {"name": name, "stacks": 3})["units"][0]
        except VarlinkError as e:
            if e.name == "io.memstrack.NoSuchUnit":
                return None
            fail(f"Units: {e}")

    # Started here, moved before it allocates: what it allocated before stays where it was.
    lg = livelib.Loadgen(LOADGEN, PAGES, children=children)
    move(lg.pid, cgroup)
    lg.do("alloc", "allocated")
    u = unit()
    if u is None:
        log.seek(0)
        text = log.read()
        if "PERF_SAMPLE_CGROUP" in text:
            skip("the kernel does not report cgroups in perf samples (Linux < 5.7)")
        units = call(sock, "io.memstrack.Units", {"limit": 20})
        fail(f"no unit {name} after loadgen touched 64 MiB in it; units: {units}")
    near(u["currentPages"], PAGES, f"{name} holding loadgen's 64 MiB", PAGE_TABLES)
    if u["cgroup"] != "/" + name:
        fail(f"unit {name} has cgroup {u['cgroup']!r}, expected '/{name}'")
    if u["tasks"] != 1 or not u["live"]:
        fail(f"unit {name}: {u['tasks']} tasks, live {u['live']}, expected loadgen alone and live")
    stacks = u["topStacks"]
    if not stacks or stacks[0]["currentPages"] < PAGES - TOLERANCE:
        fail(f"the unit's biggest stack does not hold the 64 MiB: {stacks}")
    tree = call(sock, "io.memstrack.StackTree", {"unit": name})
    if tree["totalPages"] != u["currentPages"]:
        fail(f"StackTree of {name} holds {tree['totalPages']} pages, Units says {u['currentPages']}")
    # memstrackctl units: the row of the unit, its pages in the PAGES column.
    out = subprocess.run([MEMSTRACKCTL, "--address", sock, "--no-legend", "units", "--limit", "10000"],
                         capture_output=True, text=True, timeout=WAIT)
    rows = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == [name]]
    if out.returncode != 0 or len(rows) != 1:
        fail(f"memstrackctl units: exit {out.returncode}, no single row for {name}:\n{out.stdout}{out.stderr}")
    near(int(rows[0][3]), PAGES, f"memstrackctl units' PAGES of {name}", PAGE_TABLES)

    # Moved out, then freed: the pages leave the cgroup that allocated them.
    move(lg.pid, home)
    lg.do("free", "freed")
    u = unit()
    near(u["currentPages"], 0, f"{name} after loadgen moved out and freed", PAGE_TABLES)
    near(u["peakPages"], PAGES, f"{name}'s peak", PAGE_TABLES)
    lg.exit()
    print(f"ok {name}: 64 MiB charged to it by name, uncharged after the move", file=sys.stderr)

    # The cgroup removed: the unit stays, not live, once the daemon walked the tree again (a few seconds
    # after processes exit; each poll starts and ends one).
    os.rmdir(cgroup)

    def gone():
        subprocess.run(["true"])
        return not unit()["live"]
    wait_for(f"{name} to be shown as not live after its cgroup was removed", gone)
    print(f"ok {name}: not live once removed", file=sys.stderr)

    daemon.terminate()
    if daemon.wait(WAIT) != 0:
        log.seek(0)
        fail(f"memstrackd exited with {daemon.returncode}:\n{log.read()}")
    log.seek(0)
    if f"Top units by peak:" not in log.read():
        fail("the final summary has no units")


if __name__ == "__main__":
    sys.exit(main())
