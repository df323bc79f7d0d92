#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackd --source ftrace leaves the top-level tracing settings as they were, byte for byte.

It traces in tracefs instances of its own (instances/memstrackd-PID, and memstrackd-PID-stacks for the
allocations when it takes stacks). The test snapshots the top-level
settings (tracing_on, current_tracer, trace_clock, buffer_size_kb, buffer_percent, set_event, every
options/* file, and the enable, filter and trigger files of the events the source uses) and compares them
after: a run stopped with SIGTERM (which removes its instance), a run killed with SIGKILL (which cannot,
so its instance stays), and a restart, which removes that stale instance. The daemon traces a loadgen in
between, so the instance really recorded.

Needs root and tracefs with instances; exits 77 otherwise, saying why. No timing: waits poll a condition
with a bound.

Usage: test-ftrace-settings.py MEMSTRACKD LOADGEN
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

MEMSTRACKD, LOADGEN = sys.argv[1:3]
WAIT = 120
TRACEFS = "/sys/kernel/tracing"
EVENTS = ("kmem/mm_page_alloc", "kmem/mm_page_free", "kmem/mm_page_free_batched", "sched/sched_process_fork",
          "sched/sched_process_exec", "sched/sched_process_exit", "task/task_newtask", "task/task_rename",
          "module/module_load", "module/module_free")
WORK = tempfile.mkdtemp(prefix="test-ftrace-settings.")
children = []


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def wait_for(what, condition):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return f"<{e.strerror}>".encode()


def snapshot():
    """Every top-level setting the source could touch, by path."""
    paths = ["tracing_on", "current_tracer", "trace_clock", "buffer_size_kb", "buffer_percent", "set_event",
             "events/enable", "tracing_cpumask"]
    paths += sorted(os.path.relpath(p, TRACEFS) for p in glob.glob(f"{TRACEFS}/options/*"))
    for e in EVENTS:
        paths += [f"events/{e}/enable", f"events/{e}/filter", f"events/{e}/trigger"]
    paths += sorted(os.path.relpath(p, TRACEFS) for p in glob.glob(f"{TRACEFS}/events/kmem/*/enable"))
    return {p: read(os.path.join(TRACEFS, p)) for p in paths}


def same(path, before, after):
    """Whether a setting is unchanged. A kernel that has not used its top-level buffer yet shows its size as
    "7 (expanded: 1408)"; kernels with one "expanded" flag for all buffers (Debian 12's 6.1) drop that note
    once any instance enables an event, whoever made the instance, and the size stays what it was."""
    if path == "buffer_size_kb" and before is not None and after is not None:
        before, after = (re.sub(rb" \(expanded: [0-9]+\)", b"", v) for v in (before, after))
    return before == after


def compare(before, what):
    after = snapshot()
    changed = {p: (before[p], after.get(p)) for p in before if not same(p, before[p], after.get(p))}
    if changed:
        fail(f"{what}: top-level tracing settings changed: {changed}")
    print(f"ok: {what}: {len(before)} top-level settings unchanged", file=sys.stderr)


def instance(pid):
    return f"{TRACEFS}/instances/memstrackd-{pid}"


def instances(pid):
    """The instances of memstrackd pid that exist: memstrackd-PID, and memstrackd-PID-stacks with stacks."""
    return [p for p in (instance(pid), instance(pid) + "-stacks") if os.path.isdir(p)]


def call(sock_path, method):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(WAIT)
        s.connect(sock_path)
        s.sendall(json.dumps({"method": method}).encode() + b"\0")
        data = b""
        while not data.endswith(b"\0"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data.rstrip(b"\0"))


class Daemon:
    def __init__(self, n):
        self.sock = os.path.join(WORK, f"sock-{n}")
        self.log = open(os.path.join(WORK, f"memstrackd-{n}.log"), "w+")
        self.proc = subprocess.Popen([MEMSTRACKD, "--foreground", "--socket", self.sock, "--source", "ftrace"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        children.append(self.proc)

        def ready():
            if self.proc.poll() is not None:
                fail(f"memstrackd exited with {self.proc.returncode}:\n{self.text()}")
            try:
                return call(self.sock, "io.memstrack.Status")
            except (FileNotFoundError, ConnectionRefusedError):
                return None
        status = wait_for("memstrackd to answer", ready)["parameters"]
        if status["backend"] != "ftrace":
            fail(f"backend {status['backend']}, expected ftrace")
        if not os.path.isdir(instance(self.proc.pid)):
            fail(f"no instance {instance(self.proc.pid)} while memstrackd runs")
        if status["stackSampleInterval"] == 1 and len(instances(self.proc.pid)) != 2:
            fail(f"stacks are taken but there is no {instance(self.proc.pid)}-stacks")

    def text(self):
        self.log.seek(0)
        return self.log.read()

    def traced_something(self):
        """loadgen touches 16 MiB; the daemon must have counted page events from the instance."""
        subprocess.run([LOADGEN, "--pages", "4096"], stdout=subprocess.DEVNULL, timeout=WAIT,
                       check=True)
        status = call(self.sock, "io.memstrack.Status")["parameters"]
        if status["events"] < 4096:
            fail(f"the instance delivered {status['events']} events for a 16 MiB loadgen: {status}")


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root to create trace instances", file=sys.stderr)
        return 77
    if not os.path.isdir(f"{TRACEFS}/instances"):
        print(f"SKIP: no tracefs with instances at {TRACEFS}", file=sys.stderr)
        return 77
    before = snapshot()
    try:
        # A normal run: SIGTERM removes the instance.
        d = Daemon(0)
        d.traced_something()
        compare(before, "while memstrackd runs")
        d.proc.terminate()
        if d.proc.wait(WAIT) != 0:
            fail(f"memstrackd exited with {d.proc.returncode} on SIGTERM:\n{d.text()}")
        if instances(d.proc.pid):
            fail(f"{instances(d.proc.pid)} still there after SIGTERM")
        compare(before, "after SIGTERM")

        # SIGKILL leaves the instance; the next start removes it.
        d = Daemon(1)
        d.traced_something()
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(WAIT)
        stale = instances(d.proc.pid)
        if instance(d.proc.pid) not in stale:
            fail(f"{instance(d.proc.pid)} vanished after SIGKILL: the test cannot tell whether a restart cleans it")
        compare(before, "after SIGKILL")
        d = Daemon(2)
        left = [p for p in stale if os.path.exists(p)]
        if left:
            fail(f"a restarted memstrackd left the stale instances {left}:\n{d.text()}")
        for p in stale:
            if f"Removed the trace instance {p}," not in d.text():
                fail(f"the restart does not say it removed {p}:\n{d.text()}")
        d.proc.terminate()
        if d.proc.wait(WAIT) != 0:
            fail(f"memstrackd exited with {d.proc.returncode} on SIGTERM:\n{d.text()}")
        if instances(d.proc.pid):
            fail(f"{instances(d.proc.pid)} still there after SIGTERM")
        compare(before, "after a restart that cleaned the stale instance")
    finally:
        for p in children:
            if p.poll() is None:
                p.kill()
                p.wait()
        # Whatever a failed run left: not ours to keep.
        for p in children:
            for path in instances(p.pid):
                os.rmdir(path)
        subprocess.run(["rm", "-rf", WORK])
    print("all cases passed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
