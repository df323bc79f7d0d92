#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""OOM kills on the live kernel: a loadgen in a memory-limited cgroup of its own allocates more than
the limit, the kernel's OOM killer picks it, and memstrackd's OomKills names it (pid, comm) with the
top holders at that moment, the victim's own pages among them; memstrackd logs the kill (on stderr
here: --foreground without journald), and memstrackctl oom --json prints the same.

The cgroup is made for the test and removed on every exit: a cgroup2 directory with memory.max
(memory.oom.group 0, memory.swap.max 0) where the memory controller is or can be enabled, else a
cgroup v1 memory directory (memory.limit_in_bytes; hybrid hosts). Needs root, perf events and the
oom:mark_victim tracepoint; exits 77 (skip) otherwise, saying why. No timing: every wait polls for a
condition and gives up after a bound.

Usage: test-oom-live.py MEMSTRACKD LOADGEN MEMSTRACKCTL
"""

import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import call, fail, wait_for  # noqa: E402

LIMIT_BYTES = 64 << 20
MEMSTRACKD, LOADGEN, MEMSTRACKCTL = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="test-oom-live.")
PAGE_SIZE = os.sysconf("SC_PAGESIZE")
PAGES = 2 * LIMIT_BYTES // PAGE_SIZE    # twice the limit: the kernel must kill it
children = []
cgroup = None


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def mounts(fstype):
    with open("/proc/mounts") as f:
        return [line.split()[1] for line in f if line.split()[2] == fstype]


def make_cgroup():
    """A new memory-limited cgroup directory and its kind ("v2" or "v1"), or a skip saying why not."""
    reasons = []
    for root in mounts("cgroup2"):
        if "memory" not in read(os.path.join(root, "cgroup.controllers")).split():
            reasons.append(f"{root}: the memory controller is bound to cgroup v1 (hybrid host)")
            continue
        if "memory" not in read(os.path.join(root, "cgroup.subtree_control")).split():
            try:
                write(os.path.join(root, "cgroup.subtree_control"), "+memory")
            except OSError as e:
                reasons.append(f"{root}: cannot enable the memory controller in cgroup.subtree_control: {e}")
                continue
        path = os.path.join(root, f"memstrack-oom-test-{os.getpid()}")
        os.mkdir(path)
        write(os.path.join(path, "memory.max"), str(LIMIT_BYTES))
        write(os.path.join(path, "memory.oom.group"), "0")
        if os.path.exists(os.path.join(path, "memory.swap.max")):
            write(os.path.join(path, "memory.swap.max"), "0")
        return path, "v2"
    for root in mounts("cgroup"):
        if not os.path.exists(os.path.join(root, "memory.limit_in_bytes")):
            continue
        path = os.path.join(root, f"memstrack-oom-test-{os.getpid()}")
        os.mkdir(path)
        write(os.path.join(path, "memory.limit_in_bytes"), str(LIMIT_BYTES))
        try:
            write(os.path.join(path, "memory.swappiness"), "0")
        except OSError:
            pass
        return path, "v1"
    skip("no cgroup with a usable memory controller: " + ("; ".join(reasons) or "none mounted"))


def remove_cgroup():
    if not cgroup or not os.path.isdir(cgroup):
        return
    for pid in read(os.path.join(cgroup, "cgroup.procs")).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for("the test cgroup to empty", lambda: not read(os.path.join(cgroup, "cgroup.procs")).strip(), 30)
    os.rmdir(cgroup)


def main():
    global cgroup
    if os.geteuid() != 0:
        skip("needs root (perf events, cgroups)")
    tracefs = next((m for m in mounts("tracefs")), "/sys/kernel/tracing")
    if not os.path.exists(os.path.join(tracefs, "events/oom/mark_victim/id")):
        skip(f"the kernel has no oom:mark_victim tracepoint under {tracefs}")
    cgroup, kind = make_cgroup()

    sock = os.path.join(WORK, "memstrack.sock")
    log_path = os.path.join(WORK, "memstrackd.log")
    with open(log_path, "w") as log:
        try:
            daemon, status = livelib.start_memstrackd(MEMSTRACKD, sock, stderr=log)
        except livelib.DaemonExited:
            skip("memstrackd could not start tracing here: " + read(log_path).strip()[-400:])
    children.append(daemon)
    if not status.get("oomWatching"):
        fail(f"Status says OOM kills are not watched: {status.get('oomWatchReason')!r}")

    # Allocated in the cgroup: the allocation that crosses the limit makes the kernel pick it.
    lg = livelib.Loadgen(LOADGEN, PAGES, "--comm", "oomvictim", children=children)
    write(os.path.join(cgroup, "cgroup.procs"), str(lg.pid))
    lg.proc.stdin.write("alloc\n")
    lg.proc.stdin.flush()
    rc = lg.proc.wait(livelib.WAIT)
    if rc != -signal.SIGKILL:
        fail(f"loadgen ended with {rc}, expected the OOM killer's SIGKILL ({kind} cgroup, {LIMIT_BYTES} bytes)")

    def victim_record():
        reply = call(sock, "io.memstrack.OomKills")
        return next((k for k in reply["kills"] if k["pid"] == lg.pid), None)
    kill = wait_for(f"OomKills to name pid {lg.pid}", victim_record)
    if kill["comm"] != "oomvictim":
        fail(f"the kill names comm {kill['comm']!r}, expected 'oomvictim'")
    victim = kill["victim"]
    if not victim or victim["pid"] != lg.pid:
        fail(f"the kill has no record of the victim: {victim!r}")
    # What it held when it was picked: at least half the limit (the rest may be page cache, page
    # tables or charged before it moved in), at most what it asked for.
    if not LIMIT_BYTES // PAGE_SIZE // 2 <= victim["currentPages"] <= PAGES:
        fail(f"the victim held {victim['currentPages']} pages at the kill, expected about {LIMIT_BYTES // PAGE_SIZE}")
    holders = kill["holders"]
    top = [t for t in holders["tasks"] if t["pid"] == lg.pid]
    if not top or top[0]["currentPages"] != victim["currentPages"]:
        fail(f"the top holders at the kill do not list the victim's pages: {holders['tasks']!r}")
    if len(holders["tasks"]) > 5 or len(holders["units"]) > 5 or len(holders["modules"]) > 5 \
            or len(holders["stacks"]) > 5:
        fail("a holders list is longer than the stated 5")
    if not holders["stacks"]:
        fail("the kill lists no top stacks")

    out = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "oom", "--json=short"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"memstrackctl oom --json failed ({out.returncode}): {out.stderr}")
    ctl = json.loads(out.stdout)
    if not any(k["pid"] == lg.pid and k["comm"] == "oomvictim" for k in ctl["kills"]):
        fail("memstrackctl oom --json does not name the victim")
    text = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "oom"], capture_output=True, text=True)
    if text.returncode != 0 or f"pid {lg.pid} (oomvictim)" not in text.stdout:
        fail(f"memstrackctl oom does not name the victim: {text.stdout!r} {text.stderr!r}")
    print(text.stdout)
    st = subprocess.run([MEMSTRACKCTL, "--address", "unix:" + sock, "status"], capture_output=True, text=True)
    if "OOM kills: watched" not in st.stdout:
        fail(f"memstrackctl status does not say OOM kills are watched: {st.stdout!r}")

    # Without journald (--foreground, no JOURNAL_STREAM) the kill is a line on stderr.
    wait_for("the kill's log line", lambda: f"OOM killer picked pid {lg.pid} (oomvictim)" in read(log_path), 30)
    daemon.send_signal(signal.SIGTERM)
    rc = daemon.wait(livelib.WAIT)
    if rc != 0:
        fail(f"memstrackd exited with {rc} after SIGTERM (sanitizer report?): {read(log_path)[-2000:]}")
    print(f"ok: pid {lg.pid} killed in a {kind} cgroup, held {victim['currentPages']} pages at the kill")


try:
    main()
finally:
    livelib.kill_children(children)
    try:
        remove_cgroup()
    finally:
        subprocess.run(["rm", "-rf", WORK])
