#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pages per unit on the live kernel: a loadgen moved into a cgroup of its own is charged there, by
name, and its pages leave that cgroup when freed even after it moved out again.

Needs root, perf events, the kmem tracepoints and a writable cgroup2 hierarchy (/sys/fs/cgroup, or
/sys/fs/cgroup/unified on hybrid hosts); exits 77 (skip) otherwise, saying why. No timing: every wait
polls for a condition and gives up after a bound.

Usage: test-units-live.py MEMSTRACKD LOADGEN MEMSTRACKCTL
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

PAGES = 16384                   # 64 MiB of 4 KiB pages
TOLERANCE = PAGES * 5 // 1000   # 0.5 %
PAGE_TABLES = PAGES // 512 + 1  # PTE pages mapping them, plus a PMD page
WAIT = 120                      # seconds any one condition may take: a bound, not a measurement
CGROUP2_SUPER_MAGIC = 0x63677270

MEMSTRACKD, LOADGEN, MEMSTRACKCTL = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="test-units-live.")
children = []


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def call(sock_path, method, parameters=None):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(WAIT)
        s.connect(sock_path)
        s.sendall(json.dumps({"method": method, "parameters": parameters or {}}).encode() + b"\0")
        data = b""
        while not data.endswith(b"\0"):
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("memstrackd closed the connection")
            data += chunk
    reply = json.loads(data[:-1])
    if "error" in reply:
        return reply["error"], reply.get("parameters", {})
    return None, reply["parameters"]


def wait_for(what, condition):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


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


class Loadgen:
    def __init__(self):
        self.proc = subprocess.Popen([LOADGEN, "--pages", str(PAGES), "--commands"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        children.append(self.proc)
        self.pid = int(self.expect("pid="))

    def expect(self, prefix):
        line = self.proc.stdout.readline().strip()
        if not line.startswith(prefix):
            fail(f"loadgen said {line!r}, expected {prefix!r}")
        return line[len(prefix):]

    def do(self, command, answer):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        self.expect(answer)


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
        for p in children:
            if p.poll() is None:
                p.kill()
                p.wait()
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
    daemon = subprocess.Popen([MEMSTRACKD, "--foreground", "--source", "perf", "--socket", sock],
                              stdout=log, stderr=subprocess.STDOUT)
    children.append(daemon)

    def ready():
        if daemon.poll() is not None:
            log.seek(0)
            fail(f"memstrackd exited with {daemon.returncode}:\n{log.read()}")
        try:
            return call(sock, "io.memstrack.Status")[1]
        except (FileNotFoundError, ConnectionRefusedError):
            return None
    wait_for("memstrackd to answer", ready)

    def unit():
        error, reply = call(sock, "io.memstrack.Units", {"name": name, "stacks": 3})
        if error == "io.memstrack.NoSuchUnit":
            return None
        if error:
            fail(f"Units: {error} {reply}")
        return reply["units"][0]

    # Started here, moved before it allocates: what it allocated before stays where it was.
    lg = Loadgen()
    move(lg.pid, cgroup)
    lg.do("alloc", "allocated")
    u = unit()
    if u is None:
        log.seek(0)
        text = log.read()
        if "PERF_SAMPLE_CGROUP" in text:
            skip("the kernel does not report cgroups in perf samples (Linux < 5.7)")
        _, units = call(sock, "io.memstrack.Units", {"limit": 20})
        fail(f"no unit {name} after loadgen touched 64 MiB in it; units: {units}")
    near(u["currentPages"], PAGES, f"{name} holding loadgen's 64 MiB", PAGE_TABLES)
    if u["cgroup"] != "/" + name:
        fail(f"unit {name} has cgroup {u['cgroup']!r}, expected '/{name}'")
    if u["tasks"] != 1 or not u["live"]:
        fail(f"unit {name}: {u['tasks']} tasks, live {u['live']}, expected loadgen alone and live")
    stacks = u["topStacks"]
    if not stacks or stacks[0]["currentPages"] < PAGES - TOLERANCE:
        fail(f"the unit's biggest stack does not hold the 64 MiB: {stacks}")
    _, tree = call(sock, "io.memstrack.StackTree", {"unit": name})
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
    lg.do("exit", "bye")
    lg.proc.wait(WAIT)
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
