#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackd on the live kernel, queried over its varlink socket.

Needs root, perf events and the kmem tracepoints; exits 77 (skip) otherwise, saying why. Nothing here
depends on timing: every wait polls for a condition and gives up after a bound.

The accuracy cases run once per event source (perf, ftrace, and ebpf unless this memstrackd was built without it
or the kernel has no BTF; then those runs are skipped, saying why, and the test exits 77 after the rest).
Cases without a source named run whatever --source=auto picks (ebpf where it works).

Usage: test-memstrackd-live.py MEMSTRACKD LOADGEN DATADIR [--source auto|perf|ebpf|ftrace] [CASE...]
"""

import collections
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import WAIT, VarlinkError, call, fail, wait_for  # noqa: E402

PAGES = 16384                   # 64 MiB of 4 KiB pages
TOLERANCE = PAGES * 5 // 1000   # 0.5 %
PAGE_TABLES = PAGES // 512 + 1  # PTE pages mapping them, plus a PMD page: "page tables aside"
FORK = 128                      # what forking the memfd holder costs the parent (page tables, stack)
FAULT_PATH = ("handle_mm_fault", "__handle_mm_fault", "do_anonymous_page", "exc_page_fault", "do_user_addr_fault")

MEMSTRACKD, LOADGEN, DATA = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="test-memstrackd-live.")
# Processes of other users run a copy of memstrackd from here: the build directory may sit below a
# directory only its owner can enter (a clone in a 0700 home).
os.chmod(WORK, 0o755)
children = []
BTF = "/sys/kernel/btf/vmlinux"
EBPF_REASONS = ("no BTF", "BPF", "bpf()")  # words of the eBPF source's refusals (ebpf.c)
skipped = []    # cases that could not run here, with the reason: the test then exits 77 after the rest

# The summary memstrackd writes when it stops; its lost count, and per CPU where any were lost.
SUMMARY = re.compile(r"^memstrack summary \(shutdown\) after [0-9.]+ s: .*; ([0-9]+) events, ([0-9]+) lost, "
                     r"([0-9]+) untracked frees\.$", re.M)
LOST_PER_CPU = re.compile(r"^Lost per CPU:((?: cpu[0-9]+=[0-9]+)+)$", re.M)


class Daemon:
    def __init__(self, *extra):
        self.sock = os.path.join(WORK, f"sock-{len(children)}")
        self.log = open(os.path.join(WORK, f"memstrackd-{len(children)}.log"), "w+")
        try:
            self.proc, _ = livelib.start_memstrackd(MEMSTRACKD, self.sock, *extra, stdout=self.log,
                                                    stderr=subprocess.STDOUT)
        except livelib.DaemonExited as e:
            self.log.seek(0)
            fail(f"memstrackd exited with {e.returncode}:\n{self.log.read()}")
        except TimeoutError:
            fail("timed out waiting for memstrackd to answer")
        children.append(self.proc)

    def call(self, method, parameters=None):
        return call(self.sock, method, parameters)

    def task(self, pid):
        try:
            return self.call("io.memstrack.Tasks", {"pid": pid})["tasks"][0]
        except VarlinkError as e:
            if e.name == "io.memstrack.NoSuchTask":
                return None
            raise

    def stop(self):
        """Stops the daemon; its summary must count at least the records Status counted just before
        (records lost in between add to it), and per CPU the same."""
        status = self.call("io.memstrack.Status")
        self.proc.terminate()
        rc = self.proc.wait(WAIT)
        self.log.seek(0)
        text = self.log.read()
        if rc != 0:
            fail(f"memstrackd exited with {rc} on SIGTERM:\n{text}")
        lost, per_cpu = parse_summary(text)
        if lost < status["lostEvents"]:
            fail(f"the summary counts {lost} lost records, Status counted {status['lostEvents']} before:\n{text}")
        for cpu, n in enumerate(status["lostPerCpu"]):
            if per_cpu.get(cpu, 0) < n:
                fail(f"the summary counts {per_cpu.get(cpu, 0)} lost records on CPU {cpu}, Status {n}:\n{text}")
        return lost, text


def Loadgen(*extra, pages=PAGES):
    return livelib.Loadgen(LOADGEN, pages, *extra, children=children)


def parse_summary(text):
    """The lost records of memstrackd's final summary: (total, {cpu: count}). The total is what the
    daemon accounted, the per-CPU counts what the source saw; after the final flush they agree."""
    m = SUMMARY.search(text)
    if not m:
        fail(f"no final summary with a lost count in memstrackd's output:\n{text}")
    lost = int(m.group(2))
    per_cpu = {}
    cpus = LOST_PER_CPU.search(text)
    if cpus:
        per_cpu = {int(c): int(n) for c, n in re.findall(r"cpu([0-9]+)=([0-9]+)", cpus.group(1))}
    if sum(per_cpu.values()) != lost:
        fail(f"the summary's lost records per CPU {per_cpu} do not add up to its total {lost}:\n{text}")
    return lost, per_cpu


def near(value, expected, what, extra=0):
    """Within 0.5 % of expected; extra pages above it are allowed for what the kernel adds on top."""
    if not expected - TOLERANCE <= value <= expected + TOLERANCE + extra:
        fail(f"{what}: {value} pages, expected {expected} +- {TOLERANCE} (+{extra} allowed above)")


def check_64mib(d, *extra, warm_up=False):
    lg = Loadgen(*extra)
    if warm_up:
        # Threads leave their stacks and malloc arenas cached after the first round: measure the second.
        lg.do("alloc", "allocated")
        lg.do("free", "freed")
    # The task exists once it has faulted in its first pages; loadgen has by the time it says pid=.
    start = wait_for("loadgen's task", lambda: d.task(lg.pid))["currentPages"]
    lg.do("alloc", "allocated")
    held = d.task(lg.pid)
    near(held["currentPages"] - start, PAGES, "pages held after touching 64 MiB", PAGE_TABLES)
    lg.do("free", "freed")
    after = d.task(lg.pid)
    near(after["currentPages"], start, "pages held after the free")
    near(after["peakPages"] - start, PAGES, "peak", PAGE_TABLES)
    lg.exit()
    return held


def test_64mib_ten_times(source):
    """A process touching exactly 64 MiB is charged 16384 pages, falls back after the free, and its
    peak is 16384, not more; ten runs in a row."""
    d = Daemon("--source", source)
    for run in range(10):
        check_64mib(d)
    d.stop()


def test_nested_allocations_always():
    """--nested-allocations=always: the eBPF allocation twin runs from the start (by default it waits for
    a first missed nested allocation, see test-ebpf); the counts are as exact with it."""
    d = Daemon("--source", "ebpf", "--nested-allocations", "always")
    for run in range(3):
        check_64mib(d)
    d.stop()


def test_no_call_chains():
    """--callchain-depth 0, the cheapest tracing: tasks are charged exactly as with call chains."""
    d = Daemon("--callchain-depth", "0")
    check_64mib(d)
    tree = d.call("io.memstrack.StackTree")
    if tree["root"]["children"]:
        fail(f"stack frames recorded without call chains: {tree['root']['children'][:2]}")
    d.stop()


def test_four_threads(source):
    """Four threads touching disjoint quarters of the 64 MiB: one process, the same numbers. The peak
    is checked against the start of the measured round, after a warm-up round created the threads."""
    d = Daemon("--source", source)
    lg_task = check_64mib(d, "--threads", "4", warm_up=True)
    tasks = d.call("io.memstrack.Tasks", {"includeExited": True, "comm": "loadgen", "limit": 1000})["tasks"]
    if sum(1 for t in tasks if t["pid"] == lg_task["pid"]) != 1:
        fail(f"the threaded loadgen appears {len(tasks)} times, expected once as one process")
    d.stop()


def test_page_fault_stack(source=None):
    """The heaviest stack of the process goes through the page-fault path, symbolized, and ends in the
    allocator, also with the sources whose stacks begin inside the tracing code (ftrace, eBPF)."""
    d = Daemon(*(("--source", source) if source else ()))
    lg = Loadgen()
    lg.do("alloc", "allocated")
    tree = d.call("io.memstrack.StackTree", {"pid": lg.pid, "maxChildren": 1, "maxDepth": 64})
    frames = []
    node = tree["root"]
    while node["children"]:
        node = node["children"][0]
        frames.append(node["frame"])
    if tree["totalPages"] < PAGES:
        fail(f"the process's stack tree holds {tree['totalPages']} pages, expected at least {PAGES}")
    if not any(f.split("+")[0] in FAULT_PATH for f in frames):
        fail(f"no page-fault frame on the heaviest path: {frames}")
    if any(f.startswith("0x") or f == "[unknown]" for f in frames):
        fail(f"raw addresses on the heaviest path: {frames}")
    # Stacks taken inside the tracer (ftrace's stacktrace, eBPF's bpf_get_stack) lose its frames in the core.
    if any(f.startswith(("trace_event_raw_event_", "__traceiter_", "__bpf_trace_", "bpf_trace_run", "bpf_prog_"))
           for f in frames):
        fail(f"the tracing code's frames on the heaviest path: {frames}")
    lg.exit()
    d.stop()


def test_user_stacks_symbolized():
    """With --user-stacks, user frames below the process node are named from the process's ELF files:
    loadgen's touch_pages(), where its page faults happen, in the file loadgen. Every allocation's stack
    (--stack-sample-interval 1), so the pages below touch_pages can be counted exactly."""
    d = Daemon("--user-stacks", "--stack-sample-interval", "1")
    lg = Loadgen()
    lg.do("alloc", "allocated")
    tree = d.call("io.memstrack.StackTree", {"pid": lg.pid, "maxDepth": 64})
    frames = []

    def walk(node):
        frames.append(node)
        for child in node["children"]:
            walk(child)
    walk(tree["root"])
    touch = [f for f in frames if f["frame"].startswith("touch_pages+0x") and f["module"] == "loadgen"]
    if not touch:
        fail(f"no symbolized touch_pages frame in module loadgen; loadgen frames: "
             f"{[f['frame'] for f in frames if f['module'] == 'loadgen']}, "
             f"raw user frames: {[f['frame'] for f in frames if f['frame'].startswith('[user]')][:10]}")
    # The 64 MiB are touched there: the symbolized frame is on the heavy path, not a stray one.
    near(sum(f["currentPages"] for f in touch), PAGES, "pages below touch_pages", PAGE_TABLES)
    lg.exit()
    d.stop()


def test_memfd_freed_by_another_process(source):
    """Pages of a memfd allocated by one process and freed when another drops the last reference are
    taken off the allocator's count."""
    d = Daemon("--source", source)
    lg = Loadgen("--memfd")
    start = wait_for("loadgen's task", lambda: d.task(lg.pid))["currentPages"]
    lg.do("alloc", "allocated")
    near(d.task(lg.pid)["currentPages"] - start, PAGES, "memfd pages after touching", PAGE_TABLES + FORK)
    # Unmapped and closed by the allocator, but the holder still references the file: still held.
    lg.do("free", "freed")
    near(d.task(lg.pid)["currentPages"] - start, PAGES, "memfd pages while the other process holds them", FORK)
    lg.do("release", "released")
    after = d.task(lg.pid)
    near(after["currentPages"], start, "memfd pages after the last reference went", FORK)
    holder = d.task(lg.holder)
    if holder and holder["currentPages"] > TOLERANCE:
        fail(f"the process that freed the pages was charged {holder['currentPages']} pages")
    lg.exit()
    d.stop()


def test_lost_events_counted(source):
    """A one-page ring under heavy load loses records: counted per CPU and by reason, reported, and the
    daemon stays consistent and alive."""
    d = Daemon("--source", source, "--buffer-pages", "1", "--wakeup-bytes", "4000")
    load = subprocess.Popen([LOADGEN, "--seconds", "3", "--threads", "2"], stdout=subprocess.DEVNULL)
    children.append(load)
    load.wait(WAIT)
    status = d.call("io.memstrack.Status")
    if status["lostEvents"] <= 0:
        fail(f"no lost events reported with a one-page ring under load: {status}")
    if sum(status["lostPerCpu"]) != status["lostEvents"]:
        fail(f"lost per CPU {status['lostPerCpu']} does not add up to {status['lostEvents']}")
    # Records lost are ring overflows and recursion misses; stack failures lose no record.
    by_reason = {r["reason"]: r["count"] for r in status["lostByReason"]}
    lost_records = sum(n for reason, n in by_reason.items() if reason != "stackFailed")
    if lost_records != status["lostEvents"] or by_reason.get("ringFull", by_reason.get("perfLost", 0)) <= 0:
        fail(f"lostByReason {status['lostByReason']} does not account for {status['lostEvents']} lost "
             f"with a full ring")
    for t in d.call("io.memstrack.Tasks", {"includeExited": True, "limit": 10000})["tasks"]:
        if not 0 <= t["currentPages"] <= t["peakPages"]:
            fail(f"inconsistent task after losses: {t}")
    if not 0 <= status["trackedPages"] <= status["peakTrackedPages"]:
        fail(f"inconsistent totals after losses: {status}")
    lost, _ = d.stop()
    if lost < status["lostEvents"]:
        fail(f"the final summary counts {lost} lost records, Status counted {status['lostEvents']}")


def test_own_allocations_filtered():
    """The perf source filters the daemon's own allocations in the kernel (no call chain, no ring space),
    not only dropped when read: its log counts none dropped, unless the kernel refused the filter and it
    says so. (The eBPF program drops them before it writes anything, by construction.)"""
    d = Daemon("--source", "perf", "--log-level", "debug", "--user-stacks")
    lg = Loadgen()
    lg.do("alloc", "allocated")
    # The daemon's tables grew to hold 64 MiB of pages: it allocated pages of its own meanwhile.
    wait_for("loadgen's pages to be counted", lambda: (d.task(lg.pid) or {}).get("currentPages", 0) >= PAGES)
    lg.do("free", "freed")
    lg.exit()
    _, log = d.stop()
    if "Failed to filter our own allocations" in log:
        skipped.append("test_own_allocations_filtered: the kernel refused the filter (own allocations are "
                       "dropped when read instead)")
        return
    line = [x for x in log.splitlines() if "own allocations dropped" in x]
    if not line or " 0 own allocations dropped" not in line[0]:
        fail(f"own allocations reached the ring: {line}")


def test_summary_biggest():
    """Summary's topTasks are the biggest tasks: none holding nothing, no evicted sum among them (it is
    "evicted"); Tasks with hideZero leaves out the same before its limit."""
    d = Daemon()
    lg = Loadgen()
    lg.do("alloc", "allocated")
    wait_for("loadgen's pages to be counted", lambda: (d.task(lg.pid) or {}).get("currentPages", 0) >= PAGES)
    summary = d.call("io.memstrack.Summary", {"limit": 10000})
    if not summary["topTasks"] or any(t["currentPages"] == 0 or t["pid"] < 0 for t in summary["topTasks"]):
        fail(f"Summary lists tasks holding nothing or the evicted sum: {summary['topTasks'][-3:]}")
    if not {"tasks", "currentPages", "peakPages"} <= set(summary["evicted"]):
        fail(f"Summary has no evicted sum: {summary.get('evicted')}")
    everything = d.call("io.memstrack.Tasks", {"limit": 10000})["tasks"]
    shown = d.call("io.memstrack.Tasks", {"limit": 10000, "hideZero": True})["tasks"]
    if any(t["currentPages"] == 0 for t in shown) or len(shown) > len(everything):
        fail(f"hideZero: {len(shown)} of {len(everything)} tasks, some at 0")
    # The limit counts the tasks shown: the top 1 is loadgen, holding its 64 MiB.
    top = d.call("io.memstrack.Tasks", {"limit": 1, "hideZero": True})["tasks"]
    if len(top) != 1 or top[0]["currentPages"] == 0:
        fail(f"hideZero with limit 1: {top}")
    lg.do("free", "freed")
    lg.exit()
    d.stop()


class TopStream:
    """An open Top call with "more": its updates, read by a thread so the daemon never waits on us."""

    def __init__(self, d, **parameters):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT)
        self.sock.connect(d.sock)
        self.sock.sendall(json.dumps({"method": "io.memstrack.Top", "parameters": parameters,
                                      "more": True}).encode() + b"\0")
        self.replies = []
        self.first = self.read()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    buffer = b""

    def read(self):
        while b"\0" not in self.buffer:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def run(self):
        try:
            while (reply := self.read()) is not None:
                self.replies.append(reply)
        except OSError:
            pass

    def close(self):
        # shutdown() wakes the reader out of recv(); close() alone does not, and a stream that sends no
        # more (the refused 17th) kept it there until the socket's WAIT timeout, two minutes of the test.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(WAIT)
        self.sock.close()


def test_hostile_client_does_not_starve_status():
    """One client hammers the costly calls (Diff, filtered StackTree, 16 Top streams at 10 Hz with the
    largest limit); another client's Status and Tasks still answer, with the right numbers. Every Top stream
    keeps getting updates, and a 17th is refused."""
    d = Daemon()
    lg = Loadgen()
    start = wait_for("loadgen's task", lambda: d.task(lg.pid))["currentPages"]
    lg.do("alloc", "allocated")
    d.call("io.memstrack.Snapshot", {"name": "hammer"})

    streams = [TopStream(d, intervalUsec=100000, limit=10000) for _ in range(16)]
    if "error" in streams[0].first:
        fail(f"Top stream refused: {streams[0].first}")
    extra = TopStream(d, intervalUsec=100000)
    if extra.first.get("error") != "io.memstrack.LimitExceeded" or \
            extra.first.get("parameters", {}).get("limit") != "topStreams":
        fail(f"a 17th Top stream was not refused with LimitExceeded topStreams: {extra.first}")
    extra.close()

    stop = threading.Event()
    hammered = []

    def hammer():
        while not stop.is_set():
            d.call("io.memstrack.Diff", {"name": "hammer", "limit": 10000})
            d.call("io.memstrack.StackTree", {"pid": lg.pid, "maxDepth": 255, "maxChildren": 10000, "minPages": 0})
            d.call("io.memstrack.StackTree", {"module": "vmlinux", "maxDepth": 255, "maxChildren": 10000})
            hammered.append(1)

    hammers = [threading.Thread(target=hammer, daemon=True) for _ in range(2)]
    for h in hammers:
        h.start()
    try:
        wait_for("the hammer to get going", lambda: len(hammered) >= 2)
        for _ in range(20):
            status = d.call("io.memstrack.Status")
            task = d.task(lg.pid)
            near(task["currentPages"] - start, PAGES, "loadgen's pages while another client hammers", PAGE_TABLES)
            if not task["currentPages"] <= status["trackedPages"] <= status["peakTrackedPages"]:
                fail(f"Status totals wrong while hammered: {status}, loadgen holds {task['currentPages']}")
            if status["invalidEvents"] != 0:
                fail(f"invalid events from the kernel: {status}")
        # The filtered tree of loadgen adds up to what loadgen holds (it is idle now).
        tree = d.call("io.memstrack.StackTree", {"pid": lg.pid, "maxDepth": 1})
        near(tree["totalPages"], d.task(lg.pid)["currentPages"], "loadgen's filtered stack tree")
        wait_for("Top updates on every stream", lambda: all(len(s.replies) >= 5 for s in streams))
    finally:
        stop.set()
        for h in hammers:
            h.join(WAIT)

    # Every stream kept getting updates while the hammer ran (that streams due together share one frame
    # is test-service's: how the 16 opens fall into the timer's windows depends on how this machine
    # schedules the test).
    def stamps(s):
        return [r["parameters"]["timestampUsec"] for r in list(s.replies) if "parameters" in r]
    if any(len(stamps(s)) < 5 for s in streams):
        fail(f"Top streams starved: {[len(stamps(s)) for s in streams]} updates")
    for s in streams:
        s.close()
    lg.exit()
    d.stop()


def tree_frames(node):
    """Every node of a StackTree reply, depth first."""
    yield node
    for child in node["children"]:
        yield from tree_frames(child)


def test_sampled_stacks_sum_to_exact_counts():
    """eBPF exact mode with sampled stacks (the default interval): the stack tree's totals are the exact
    counts, for the process and for everything; the interval is in Status and in the StackTree reply."""
    d = Daemon("--source", "ebpf")
    status = d.call("io.memstrack.Status")
    if status["backend"] != "ebpf" or status["stackSampleInterval"] <= 1:
        fail(f"--source ebpf: backend {status['backend']}, stackSampleInterval {status['stackSampleInterval']}")
    lg = Loadgen()
    lg.do("alloc", "allocated")
    # Two queries are two moments: the process (its runtime, a pipe page the test read) may still change
    # between them, so the tree counts only between two equal readings of the process.
    for _ in range(5):
        task = d.task(lg.pid)
        tree = d.call("io.memstrack.StackTree", {"pid": lg.pid})
        after = d.task(lg.pid)
        if after["currentPages"] == task["currentPages"]:
            break
        time.sleep(0.2)
    else:
        fail(f"the process's pages kept changing: {task['currentPages']}, then {after['currentPages']}")
    if tree["stackSampleInterval"] != status["stackSampleInterval"]:
        fail(f"StackTree says a stack per {tree['stackSampleInterval']} pages, Status {status['stackSampleInterval']}")
    if tree["totalPages"] != task["currentPages"]:
        fail(f"the process's stack tree holds {tree['totalPages']} pages, the process {task['currentPages']}")
    lg.do("free", "freed")
    lg.exit()
    d.stop()


def test_full_mode_stacks():
    """--stack-sample-interval 1: every allocation's own stack, so no "[not sampled]" frame for a process
    that started after the daemon, and Status says 1."""
    d = Daemon("--source", "ebpf", "--stack-sample-interval", "1")
    if d.call("io.memstrack.Status")["stackSampleInterval"] != 1:
        fail("full mode: Status stackSampleInterval is not 1")
    lg = Loadgen()
    lg.do("alloc", "allocated")
    tree = d.call("io.memstrack.StackTree", {"pid": lg.pid, "maxDepth": 64})
    if tree["stackSampleInterval"] != 1:
        fail(f"full mode: StackTree stackSampleInterval {tree['stackSampleInterval']}")
    unsampled = [f for f in tree_frames(tree["root"]) if f["frame"] == "[not sampled]"]
    if unsampled:
        fail(f"full mode charged {unsampled[0]['currentPages']} pages to [not sampled]")
    if tree["totalPages"] < PAGES:
        fail(f"full mode: the process's stack tree holds {tree['totalPages']} pages, expected >= {PAGES}")
    lg.exit()
    d.stop()


def test_auto_picks_ebpf():
    """--source auto runs the eBPF source where it works, and Status says so and why; every loss reason
    it watches is listed, at 0 or more."""
    d = Daemon()
    status = d.call("io.memstrack.Status")
    if status["backend"] != "ebpf" or status["backendReason"] != "auto":
        fail(f"auto picked {status['backend']} ({status['backendReason']!r}), expected ebpf")
    reasons = {r["reason"] for r in status["lostByReason"]}
    if reasons != {"ringFull", "recursionMiss", "stackFailed", "sequenceGap"}:
        fail(f"lostByReason lists {sorted(reasons)}")
    d.stop()
    d = Daemon("--source", "perf")
    status = d.call("io.memstrack.Status")
    if status["backend"] != "perf" or status["backendReason"] != "asked for" or \
            [r["reason"] for r in status["lostByReason"]] != ["perfLost"] or status["stackSampleInterval"] != 1:
        fail(f"--source perf: {status['backend']} ({status['backendReason']!r}), lostByReason "
             f"{status['lostByReason']}, stackSampleInterval {status['stackSampleInterval']}")
    d.stop()


def test_auto_says_why():
    """On every kernel: --source auto runs eBPF where the kernel has what it needs, else perf, with Status
    naming what eBPF lacks ("auto: ebpf: ..."), and --source ebpf then refuses to start with the same
    reason. (Debian 11's 5.10 has no BPF atomic fetch-and-add.)"""
    d = Daemon()
    status = d.call("io.memstrack.Status")
    d.stop()
    if status["backend"] == "ebpf":
        if status["backendReason"] != "auto":
            fail(f"auto runs ebpf, saying {status['backendReason']!r}")
        return
    m = re.match(r"^auto: ebpf: (.+)$", status["backendReason"])
    if status["backend"] != "perf" or not m:
        fail(f"auto runs {status['backend']} ({status['backendReason']!r}): expected ebpf, or perf and why not ebpf")
    out = run_failing("--source", "ebpf")
    if m.group(1).split(";")[0] not in out:
        fail(f"--source ebpf does not say what auto said ({m.group(1)!r}): {out}")
    print(f"auto: perf, because {m.group(1)}", file=sys.stderr)


def test_ebpf_probe_failure_falls_back():
    """A BTF file that is not there: auto says in one line what the eBPF source lacks and runs perf, and
    Status gives the same reason; --source ebpf refuses to start, naming it."""
    missing = os.path.join(WORK, "no-btf")
    d = Daemon("--btf", missing)
    status = d.call("io.memstrack.Status")
    expected = f"auto: ebpf: no BTF at {missing}"
    if status["backend"] != "perf" or status["backendReason"] != expected:
        fail(f"with no BTF auto ran {status['backend']} ({status['backendReason']!r}), expected perf ({expected!r})")
    _, log = d.stop()
    lines = [x for x in log.splitlines() if missing in x]
    if len(lines) != 1 or "perf" not in lines[0]:
        fail(f"expected one line naming the missing BTF and perf, got {lines}")
    out = run_failing("--source", "ebpf", "--btf", missing)
    if missing not in out:
        fail(f"--source ebpf without BTF does not name the missing file: {out}")


def run_failing(*args, **kwargs):
    r = subprocess.run([MEMSTRACKD, "--foreground", "--no-socket", *args], capture_output=True, text=True,
                       timeout=WAIT, **kwargs)
    if r.returncode == 0:
        fail(f"memstrackd {' '.join(args)} succeeded, expected a failure")
    return r.stdout + r.stderr


def test_bad_environment():
    """No tracefs, a tracepoint missing, tracefs unmounted and not mountable: a clear error, exit != 0."""
    # These are the perf source's failures: it is the one that reads tracefs.
    out = run_failing("--source", "perf", "--tracefs", os.path.join(WORK, "nowhere"))
    if "nowhere" not in out:
        fail(f"the error does not name the missing tracefs: {out}")
    out = run_failing("--source", "perf", "--tracefs", os.path.join(DATA, "tracefs-partial"))
    if "mm_page_free" not in out:
        fail(f"the error does not name the missing tracepoint: {out}")
    # The ftrace source's: formats but no instances (the fixture), and a required event missing.
    out = run_failing("--source", "ftrace", "--tracefs", os.path.join(DATA, "tracefs-6.18"))
    if "instances is missing" not in out:
        fail(f"--source ftrace on a tracefs without instances does not say so: {out}")
    out = run_failing("--source", "ftrace", "--tracefs", os.path.join(DATA, "tracefs-partial"))
    if "mm_page_free" not in out:
        fail(f"--source ftrace does not name the missing tracepoint: {out}")
    for tool in ("setpriv", "unshare"):
        if not shutil.which(tool):
            skipped.append(f"test_bad_environment: unprivileged and unmountable cases need {tool} (util-linux)")
            return
    # Not root: the error says what is missing (CAP_PERFMON, or kernel.perf_event_paranoid). The other
    # user runs a copy it can reach.
    unprivileged = os.path.join(WORK, "memstrackd")
    shutil.copy(MEMSTRACKD, unprivileged)
    os.chmod(unprivileged, 0o755)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", unprivileged, "--foreground",
                        "--no-socket", "--tracefs", "/sys/kernel/tracing"], capture_output=True, text=True, timeout=WAIT)
    out = r.stdout + r.stderr
    if r.returncode == 0 or not ("perf_event_paranoid" in out or "CAP_PERFMON" in out or "root" in out):
        fail(f"as an unprivileged user: exit {r.returncode}, output: {out}")
    # A private mount namespace without tracefs, and no CAP_SYS_ADMIN to mount it. Every tracefs and
    # debugfs mount goes, not just the usual places: memstrackd takes any tracefs in /proc/mounts, so one
    # mounted elsewhere meanwhile (another test's, a container's) would let it start and run until WAIT.
    script = ("for m in /sys/kernel/tracing /sys/kernel/debug/tracing /sys/kernel/debug "
              "$(awk '$3 == \"tracefs\" || $3 == \"debugfs\" { print $2 }' /proc/self/mounts); do "
              "umount -l $m 2>/dev/null; done; "
              "exec setpriv --bounding-set -sys_admin --inh-caps -sys_admin " + MEMSTRACKD +
              " --foreground --no-socket --source perf")
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=WAIT)
    out = r.stdout + r.stderr
    if r.returncode == 0 or "tracefs" not in out:
        fail(f"without a mountable tracefs: exit {r.returncode}, output: {out}")


# (case, source): a source runs the case once with --source=SOURCE, None once with the default (auto).
SOURCES = ("perf", "ebpf", "ftrace")
CASES = [(test_64mib_ten_times, s) for s in SOURCES] + [(test_four_threads, s) for s in SOURCES] + \
        [(test_memfd_freed_by_another_process, s) for s in SOURCES] + \
        [(test_lost_events_counted, s) for s in SOURCES] + \
        [(c, None) for c in (test_no_call_chains, test_page_fault_stack, test_user_stacks_symbolized,
                             test_own_allocations_filtered, test_summary_biggest,
                             test_hostile_client_does_not_starve_status, test_bad_environment,
                             test_auto_says_why)] + \
        [(test_page_fault_stack, "ftrace"), (test_page_fault_stack, "ebpf")] + \
        [(c, "ebpf") for c in (test_sampled_stacks_sum_to_exact_counts, test_full_mode_stacks, test_auto_picks_ebpf,
                               test_ebpf_probe_failure_falls_back, test_nested_allocations_always)]


def ebpf_missing():
    """Why this memstrackd cannot run the eBPF source here, or None if it can."""
    out = subprocess.run([MEMSTRACKD, "--help"], capture_output=True, text=True, timeout=WAIT).stdout
    if not re.search(r"^  ebpf ", out, re.M):
        return "memstrackd was built without the eBPF source (meson -Debpf, needs clang, bpftool, libbpf, BTF)"
    if not os.path.exists(BTF):
        return f"the kernel has no BTF ({BTF})"
    # BPF itself (a kernel without BPF ring buffers, a sandbox without bpf()): auto says what is missing.
    d = Daemon()
    status = d.call("io.memstrack.Status")
    d.stop()
    if status["backend"] != "ebpf":
        return f"the eBPF source cannot run here ({status['backendReason']})"
    return None


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root to trace page events system-wide", file=sys.stderr)
        return 77
    if not os.path.exists("/proc/sys/kernel/perf_event_paranoid"):
        print("SKIP: the kernel has no perf events", file=sys.stderr)
        return 77
    wanted = sys.argv[4:]
    # --source S: only the cases of one source ("auto": those that run the daemon's default), so that a
    # source this machine cannot run skips its own test alone.
    only = None
    if wanted[:1] == ["--source"] and len(wanted) >= 2:
        only, wanted = wanted[1], wanted[2:]
    no_ebpf = ebpf_missing() if only in (None, "ebpf") else None
    try:
        for case, source in CASES:
            name = case.__name__ + (f"[{source}]" if source else "")
            if only is not None and (source or "auto") != only:
                continue
            if wanted and case.__name__ not in wanted and name not in wanted:
                continue
            if source == "ebpf" and no_ebpf:
                skipped.append(f"{name}: {no_ebpf}")
                continue
            print(f"== {name}", file=sys.stderr)
            if case in (test_64mib_ten_times, test_four_threads, test_memfd_freed_by_another_process,
                        test_lost_events_counted, test_page_fault_stack) or source == "ftrace":
                case(source)
            else:
                case()
    finally:
        livelib.kill_children(children, WORK)
    if skipped:
        for reason in skipped:
            print(f"SKIP: {reason}", file=sys.stderr)
        return 77
    print("all cases passed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
