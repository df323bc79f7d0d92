#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every query over pages and objects whose owners are gone, asked by a group member of a live memstrackd.

Short processes (cp) each leave a page-cache page charged to them when they exit; past
--max-exited-tasks their records are evicted while the pages stay. Every io.memstrack method is then
called, with the parameters that follow an owner (pid filters, per-task views, stack trees, leaks), by
an unprivileged member of the daemon's group. Asserted: each call answers (a reply or an interface
error, never a closed connection), the daemon is still running afterwards and Status still answers.

Two daemons: --max-exited-tasks=1 with --slab (every exited owner evicted at once), and the default
options after more exits than the default bound keeps (the eviction a fork-heavy host reaches). The
evictions are read from Status (tasksEvicted), not assumed.

Needs root, and a source that can trace (eBPF or perf); exits 77 otherwise, saying why. Waits are
bounds against hanging, not measurements.

Usage: test-evicted-owners.py MEMSTRACKD
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import fail  # noqa: E402

MEMBER_UID = 65534              # nobody, a member of the daemon's --group below
GROUP = "nogroup"
DEFAULT_MAX_EXITED = 4096       # accounting.h ACCOUNTING_CONFIG_DEFAULT.max_exited_tasks


def call_as_member(sock, method, parameters):
    """One call from a child that became MEMBER_UID: ("reply", parameters), ("error", name) or
    ("closed", text) when the daemon closed the connection without answering."""
    import grp
    gid = grp.getgrnam(GROUP).gr_gid
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        result = None
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(MEMBER_UID, MEMBER_UID, MEMBER_UID)
            try:
                result = ["reply", livelib.call_paced(sock, method, parameters)]
            except livelib.VarlinkError as e:
                result = ["error", e.name]
            except (ConnectionError, OSError) as e:
                result = ["closed", str(e)]
        finally:
            os.write(w, json.dumps(result).encode())
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    result = json.loads(data) if data else None
    if not result:
        fail(f"{method} {parameters}: the calling child died")
    return result


def leave_owners(work, n):
    """n short processes, each leaving a page-cache page charged to it; their pids, in order."""
    src = os.path.join(work, "src")
    with open(src, "w") as f:
        f.write("memstrack\n")
    pids = []
    for i in range(n):
        p = subprocess.Popen(["cp", src, os.path.join(work, f"f{i}")])
        pids.append(p.pid)
        p.wait()
        if p.returncode != 0:
            fail(f"cp exited with {p.returncode}")
    return pids


def every_query(evicted_pid):
    """(method, parameters) of every method, with those that follow an owner aimed at evicted_pid."""
    q = []
    for by in ("callsite", "cache", "task", "unit"):
        q.append(("io.memstrack.Slab", {"by": by, "limit": 1000}))
    q += [
        ("io.memstrack.Leaks", {"minAgeSeconds": 0}),
        ("io.memstrack.Leaks", {"minAgeSeconds": 0, "intervalSeconds": 1, "intervals": 60, "limit": 1000}),
        ("io.memstrack.Leaks", {"minAgeSeconds": 0, "pid": evicted_pid}),
        ("io.memstrack.Tasks", {"includeExited": True, "limit": 1000, "threads": True}),
        ("io.memstrack.Tasks", {"pid": evicted_pid}),
        ("io.memstrack.Tasks", {"sortBy": "allocs", "includeExited": True}),
        ("io.memstrack.StackTree", {}),
        ("io.memstrack.StackTree", {"pid": evicted_pid}),
        ("io.memstrack.StackTree", {"sortBy": "peak", "maxDepth": 64}),
        ("io.memstrack.Summary", {"limit": 1000}),
        ("io.memstrack.Units", {"stacks": 5, "limit": 1000}),
        ("io.memstrack.Modules", {}),
        ("io.memstrack.Top", {"limit": 1000, "sortBy": "peak"}),
        ("io.memstrack.History", {"pid": evicted_pid}),
        ("io.memstrack.Snapshot", {"name": "evicted-owners"}),
        ("io.memstrack.Diff", {"name": "evicted-owners", "limit": 1000}),
        ("io.memstrack.ListSnapshots", {}),
        ("io.memstrack.OomKills", {}),
        ("io.memstrack.Status", {}),
    ]
    return q


def check_daemon(memstrackd, work, label, args, n_owners, log):
    sock = os.path.join(work, f"{label}.sock")
    try:
        daemon, _ = livelib.start_memstrackd(memstrackd, sock, "--group", GROUP, *args,
                                             stdout=log, stderr=subprocess.STDOUT)
    except livelib.DaemonExited as e:
        log.seek(0)
        text = log.read()
        if any(w in text for w in ("perf_event_open", "tracefs", "tracepoint", "BPF")):
            print(f"SKIP: memstrackd cannot trace here:\n{text}", file=sys.stderr)
            sys.exit(77)
        fail(f"{label}: memstrackd exited with {e.returncode}:\n{text}")
    try:
        files = os.path.join(work, label)
        os.mkdir(files)
        pids = leave_owners(files, n_owners)
        # Evicted: the oldest exits go first, so the first pid's record is among them.
        status = livelib.wait_for("evictions", lambda: (
            lambda s: s if s["tasksEvicted"] > 0 else None)(livelib.call(sock, "io.memstrack.Status")))
        print(f"{label}: {n_owners} owners exited, tasksEvicted {status['tasksEvicted']}, "
              f"trackedPages {status['trackedPages']}", file=sys.stderr)
        for method, parameters in every_query(pids[0]):
            kind, what = call_as_member(sock, method, parameters)
            if daemon.poll() is not None:
                fail(f"{label}: memstrackd died (exit {daemon.returncode}) on {method} {json.dumps(parameters)}")
            if kind == "closed":
                fail(f"{label}: {method} {json.dumps(parameters)} closed the connection: {what}")
            if kind == "error" and what not in ("io.memstrack.NoSuchTask", "io.memstrack.NotTracing"):
                fail(f"{label}: {method} {json.dumps(parameters)} answered {what}")
        after = livelib.call(sock, "io.memstrack.Status")
        if daemon.poll() is not None or after["events"] < status["events"]:
            fail(f"{label}: the daemon did not live through the queries")
        print(f"{label}: {len(every_query(0))} calls answered, the daemon lives", file=sys.stderr)
    finally:
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(livelib.WAIT)
    if daemon.returncode != 0:
        fail(f"{label}: memstrackd exited with {daemon.returncode} at SIGTERM")


def main():
    if len(sys.argv) != 2:
        fail("usage: test-evicted-owners.py MEMSTRACKD")
    memstrackd = sys.argv[1]
    if os.geteuid() != 0:
        print("SKIP: needs root (tracing, and a group member to call as)", file=sys.stderr)
        return 77
    if not shutil.which("cp"):
        fail("no cp")
    work = tempfile.mkdtemp(prefix="test-evicted-owners.")
    os.chmod(work, 0o755)
    log = open(os.path.join(work, "memstrackd.log"), "w+")
    try:
        check_daemon(memstrackd, work, "one-exited", ["--max-exited-tasks", "1", "--slab"], 50, log)
        # Default options: past the bound plus the slack eviction may take, with a margin.
        check_daemon(memstrackd, work, "default", [], DEFAULT_MAX_EXITED + DEFAULT_MAX_EXITED // 8 + 256, log)
    except SystemExit:
        log.seek(0)
        print(log.read()[-4000:], file=sys.stderr)
        raise
    finally:
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
