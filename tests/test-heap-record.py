#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackctl record: exact heap totals, call sites with file:line, and the edge cases.

Usage: test-heap-record.py CASE MEMSTRACKCTL MEMSTRACKD LIBRARY HEAP_TARGET PLUGIN STATIC

heap-target works out what it allocates itself (malloc_usable_size() of every block, per call site) and
writes it to $HEAP_TARGET_EXPECT; each case runs it under `memstrackctl record --json` and compares:

  lifetimes    heap-lifetimes' blocks: lifetimes, temporary ones and heap_lifetimes as it measured them
  phases       heap-lifetimes phases saved with the timeline: report --at, --between, --at max
  moment-html  the same in the HTML report: a click on the chart in each pause shows that phase's site
  build-tree   memstrackctl of a build directory, neither variable set: that build's memstrackd and
               library, said so, exact as below
  exact        every call's stack: each of heap-target's call sites (function, file, line) holds exactly
               the bytes and blocks it expects at the heap's maximum and at exit; totals are the exact
               peak and live bytes, and the call sites add up to them
  sampled      the default sampling: the same totals, exactly; each site within the error the output
               states for it
  churn        4 threads allocating and freeing random sizes, far below the peak and near it, with each
               thread's allowance of live bytes off, tiny (many moves and mode switches) and the default:
               every call site exact at the maximum and at exit, the same totals each time; then the
               same with the threads taking turns (the live-bytes counter owned by one thread after another)
  placement    the library's own start leaves glibc's choices alone: blocks of each size land where they
               do without it (heap or mmap(), as the dynamic mmap threshold says)
  double-free  a double free glibc lets through (tcache off) is counted, nothing crashes
  bad-free     a pointer never allocated: glibc aborts the program, record reports what it got, 134
  signal       allocations in a signal handler that lands inside malloc/free: totals stay exact
  fork         a child that forks without exec is not recorded, the parent's heap is exact
  exec         a process that execs: two heaps of one pid, the first ended by the exec
  dlopen       frames of a library loaded later are named with their file and line
  closefds     a program that closes every descriptor and lowers RLIMIT_NOFILE is recorded
  sigkill      a process killed by SIGKILL: what was received is reported, exit status 137
  many         thousands of blocks live at once, each with a record (a small sample interval), then one
               site's all freed from other threads: every free finds its record (that site holds nothing
               at exit, the kept site exactly its bytes); and the same with every call's stack
  storm        more records than the channel holds, from 4 threads: totals exact, losses counted
  static       a static program: refused with the reason, exit status 1
  setuid       a setuid program of another user: refused with the reason (root only, else 77)
  formats      stack_tree, folded, flamegraph and pprof of a heap, in bytes; the growth of live bytes
  processes    a script of 20 short helpers and heap-target: the table of every process first, then in
               full heap-target's heap (exact) and the command's; --all, --process, --min-share, report
               --from a saved file (and one without the command's pid), the HTML page
  pid          record --pid of a running heap-target: its leak within the stated error, it runs on
  pid-exact    the same with every call's stack: the leak exact
  pid-seconds  --seconds ends the recording by itself
  pid-killed   memstrackctl killed by SIGKILL: its memstrackd and BPF links go, the process runs on
  live         a process hands its heap to a kernel-tracing memstrackd (--heap-socket): Tasks has its
               heap bytes, StackTree its heap tree, exactly; record --live reports a command from there
  live-other-user  a process of another user (nobody) hands over its own heap there
The pid and live cases need root (uprobes and BPF, kernel tracing), else 77.
"""
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAIL:", msg)


def ok(msg):
    print("ok", msg)


def record(args, target_args, env=None, expect_status=0, unset=(), program=None,
           formats="heap_maximum,heap_leaks"):
    """Runs record with --json; returns (reply or None, expected or None, stderr). unset: variables taken
    out of its environment; program: another than heap-target."""
    tmp = tempfile.mkdtemp(prefix="heap-record.")
    try:
        e = dict(os.environ)
        e.update({"MEMSTRACKD": MEMSTRACKD, "MEMSTRACK_HEAP_LIBRARY": LIBRARY,
                  "HEAP_TARGET_EXPECT": os.path.join(tmp, "expect.json"), "MEMSTRACK_HEAP_SEED": "42"})
        e.update(env or {})
        for name in unset:
            e.pop(name, None)
        p = subprocess.run([CTL, "record", "--json=short", "--format", formats] + args +
                           ["--", program or TARGET] + target_args, env=e, capture_output=True, text=True,
                           timeout=300)
        if p.returncode != expect_status:
            fail(f"record {args} {target_args}: exit status {p.returncode}, not {expect_status}; "
                 f"stderr: {p.stderr.strip()}")
        reply = json.loads(p.stdout) if p.stdout.strip() else None
        expect_path = os.path.join(tmp, "expect.json")
        expected = json.load(open(expect_path)) if os.path.exists(expect_path) else None
        return reply, expected, p.stderr
    finally:
        shutil.rmtree(tmp)


def heaps_of(reply, view):
    return reply[view] if reply else []


def sites(heap):
    """heap-target's own call sites in a view: (function, line) -> (bytes, blocks, errorBytes)."""
    out = {}
    for s in heap["callSites"]:
        if s.get("file") and s["file"].endswith(("heap-target.c", "heap-target-cxx.cc", "heap-static.c")):
            key = (s.get("function"), s.get("line"))
            b, n, err = out.get(key, (0, 0, 0))
            out[key] = (b + s["bytes"], n + s["blocks"], err + s.get("errorBytes", 0))
    return out


def check_totals(heap, view):
    """A view's call sites add up to its total, which is the exact count (sampled: up to the rounding of
    each scaled figure, half a byte each)."""
    slack = 0 if heap["sampleInterval"] == 1 else 4 * len(heap["callSites"]) + 4
    total = sum(s["bytes"] for s in heap["callSites"])
    if abs(total - heap["bytes"]) > slack:
        fail(f"{view}: call sites add up to {total}, the total is {heap['bytes']}")
    root = heap["root"]["maxBytes" if view == "heap_maximum" else "currentBytes"]
    if abs(root - heap["bytes"]) > (slack and 1):
        fail(f"{view}: the tree's root holds {root}, the exact total is {heap['bytes']}")


def check_sites(heap, expected, view, exact):
    got = sites(heap)
    key_bytes, key_blocks = ("maxBytes", "maxBlocks") if view == "heap_maximum" else ("leakBytes", "leakBlocks")
    for s in expected["sites"]:
        want_b, want_n = s[key_bytes], s[key_blocks]
        b, n, err = got.get((s["function"], s["line"]), (0, 0, 0))
        where = f"{view} {s['function']} heap-target.c:{s['line']}"
        if exact:
            if (b, n) != (want_b, want_n):
                fail(f"{where}: {b} bytes in {n} blocks, expected {want_b} in {want_n}")
            else:
                ok(f"{where}: {b} bytes in {n} blocks")
        else:
            # The stated error of a site that got no sample is 0; it stands for what it missed below it.
            bound = max(err, int(3 * (want_b * INTERVAL) ** 0.5))
            if abs(b - want_b) > bound:
                fail(f"{where}: {b} bytes, expected {want_b} within {bound}")
            else:
                ok(f"{where}: {b} bytes, expected {want_b} within +-{bound}")
    if exact:
        own = {(s["function"], s["line"]) for s in expected["sites"]}
        for key, (b, n, _) in got.items():
            if key not in own and b > 0:
                fail(f"{view}: a call site heap-target does not have: {key} with {b} bytes")


def one_heap(reply, view):
    hs = heaps_of(reply, view)
    if len(hs) != 1:
        fail(f"{view}: {len(hs)} heaps, expected 1")
        return None
    return hs[0]


INTERVAL = 512 * 1024


def case_exact(unset=()):
    reply, expected, stderr = record(["--sample-interval=1"], ["known"], unset=unset)
    for view in ("heap_maximum", "heap_leaks"):
        h = one_heap(reply, view)
        if not h:
            return
        check_totals(h, view)
        check_sites(h, expected, view, exact=True)
    m, l = one_heap(reply, "heap_maximum"), one_heap(reply, "heap_leaks")
    if m["sampleInterval"] != 1 or l["lostRecords"] != 0 or l["unknownFrees"] != 0:
        fail(f"every-call mode: interval {m['sampleInterval']}, lost {l['lostRecords']}, "
             f"unknown frees {l['unknownFrees']}")
    if unset:
        return stderr
    return m["bytes"], l["bytes"]


def case_build_tree():
    """memstrackctl run from its build directory with neither $MEMSTRACKD nor $MEMSTRACK_HEAP_LIBRARY takes
    that build's memstrackd and heap library (the ones this test was given), says so, and is exact."""
    stderr = case_exact(unset=("MEMSTRACKD", "MEMSTRACK_HEAP_LIBRARY"))
    said = [line for line in (stderr or "").splitlines() if line.startswith("memstrackctl: recording with")]
    want = [f"heap library {os.path.realpath(LIBRARY)} (this build tree's)",
            f"memstrackd {os.path.realpath(MEMSTRACKD)} (this build tree's)"]
    if len(said) != 1 or not all(w in said[0] for w in want):
        fail(f"record did not say it used this build's library and memstrackd ({want}): {said}")
    else:
        ok(said[0])


def case_sampled():
    exact = case_exact()
    reply, expected, _ = record([], ["known"])
    m, l = one_heap(reply, "heap_maximum"), one_heap(reply, "heap_leaks")
    if not m or not l or not exact:
        return
    if m["sampleInterval"] != INTERVAL:
        fail(f"default sample interval {m['sampleInterval']}, not {INTERVAL}")
    # The program and the C library allocate the same in every run: the exact totals agree.
    if (m["bytes"], l["bytes"]) != exact:
        fail(f"sampled totals {m['bytes']}, {l['bytes']} differ from every-call mode's {exact}")
    else:
        ok(f"sampled totals exact: peak {m['bytes']}, never freed {l['bytes']}")
    for view, h in (("heap_maximum", m), ("heap_leaks", l)):
        check_totals(h, view)
        check_sites(h, expected, view, exact=False)


def case_churn():
    for mode in ("churn", "churn-turns"):
        totals = {}
        for allowance in ("0", "4096", None):
            env = {"MEMSTRACK_HEAP_ALLOWANCE": allowance} if allowance else {}
            reply, expected, _ = record(["--sample-interval=1"], [mode], env=env)
            m, l = one_heap(reply, "heap_maximum"), one_heap(reply, "heap_leaks")
            if not m or not l or not expected:
                fail(f"{mode}, allowance {allowance or 'default'}: no heap or no expectations")
                continue
            for view, h in (("heap_maximum", m), ("heap_leaks", l)):
                check_totals(h, view)
                check_sites(h, expected, view, exact=True)
            totals[allowance or "default"] = (m["bytes"], l["bytes"])
        # The threads' sequences are fixed and the peak waits at a barrier: one answer whatever the allowance.
        if len(set(totals.values())) != 1:
            fail(f"{mode}: peak and live bytes differ with the allowance: {totals}")
        else:
            ok(f"{mode}: peak {m['bytes']}, never freed {l['bytes']} with every allowance")


def case_placement():
    untraced = subprocess.run([TARGET, "placement"], capture_output=True, text=True, timeout=60)
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
    traced = subprocess.run([CTL, "record", "--format", "heap_leaks", "--output", os.devnull, "--", TARGET,
                             "placement"], env=e,
                            capture_output=True, text=True, timeout=300)
    if untraced.returncode != 0 or traced.returncode != 0 or not untraced.stdout.strip():
        fail(f"placement: exit {untraced.returncode}, {traced.returncode}: {untraced.stderr} {traced.stderr}")
    elif traced.stdout != untraced.stdout:
        fail(f"placement: glibc placed blocks otherwise under record:\n{traced.stdout}\nwithout it:\n"
             f"{untraced.stdout}")
    else:
        ok(f"placement: the same usable sizes with and without record: {untraced.stdout.split()}")


def case_double_free():
    reply, expected, _ = record(["--sample-interval=1"], ["double-free"],
                                env={"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"})
    l = one_heap(reply, "heap_leaks")
    if l and l["unknownFrees"] != 1:
        fail(f"double free: {l['unknownFrees']} frees of unknown pointers counted, expected 1")
    elif l:
        ok("double free counted once, the program ran on")


def case_bad_free():
    for args in (["--sample-interval=1"], []):
        reply, _, err = record(args, ["bad-free"], expect_status=134)
        l = one_heap(reply, "heap_leaks")
        if not l:
            continue
        if "killed by signal 6" not in err:
            fail(f"bad free {args}: record did not say the command was killed: {err.strip()}")
        if args and l["unknownFrees"] < 1:
            fail(f"bad free: unknown frees {l['unknownFrees']}")
        else:
            ok(f"free of a pointer never allocated {args}: reported, exit 134")


def case_signal():
    reply, expected, _ = record(["--sample-interval=1"], ["signal"])
    l = one_heap(reply, "heap_leaks")
    if l:
        check_totals(l, "heap_leaks")
        check_sites(l, expected, "heap_leaks", exact=True)
        ok(f"signal handler allocations: {l['allocs']} allocations")


def case_fork():
    reply, expected, _ = record(["--sample-interval=1"], ["fork"])
    l = one_heap(reply, "heap_leaks")
    if l:
        check_sites(l, expected, "heap_leaks", exact=True)


def case_exec():
    reply, expected, _ = record(["--sample-interval=1"], ["exec"])
    hs = heaps_of(reply, "heap_leaks")
    if len(hs) != 2 or hs[0]["pid"] != hs[1]["pid"]:
        fail(f"exec: {len(hs)} heaps {[h['pid'] for h in hs]}, expected 2 of one pid")
        return
    if hs[0]["end"] != "exec" or hs[1]["end"] != "exit":
        fail(f"exec: heaps ended by {hs[0]['end']}, {hs[1]['end']}")
    first = sites(hs[0])
    if sum(n for (f, _), (b, n, e) in first.items() if f == "leak_site") != 10:
        fail(f"exec: the first program's leak_site blocks: {first}")
    check_sites(hs[1], expected, "heap_leaks", exact=True)
    ok("exec: two heaps, the first ended by exec")


def case_dlopen():
    reply, _, _ = record(["--sample-interval=1"], ["dlopen", PLUGIN])
    l = one_heap(reply, "heap_leaks")
    if not l:
        return
    s = [x for x in l["callSites"] if x.get("function") == "heap_plugin_alloc"]
    if not s or not s[0]["file"].endswith("heap-plugin.c") or s[0]["blocks"] != 3:
        fail(f"dlopen: the plugin's call site: {s}")
    else:
        ok(f"dlopen: {s[0]['function']} {s[0]['file']}:{s[0]['line']}, {s[0]['blocks']} blocks")


def case_closefds():
    reply, expected, _ = record(["--sample-interval=1"], ["closefds"])
    l = one_heap(reply, "heap_leaks")
    if l:
        check_sites(l, expected, "heap_leaks", exact=True)


def case_sigkill():
    reply, expected, err = record(["--sample-interval=1"], ["sigkill"], expect_status=137)
    l = one_heap(reply, "heap_leaks")
    if l:
        check_sites(l, expected, "heap_leaks", exact=True)
        if "killed by signal 9" not in err:
            fail(f"sigkill: record did not say so: {err.strip()}")


def case_many():
    reply, expected, _ = record(["--sample-interval=1"], ["many"])
    l = one_heap(reply, "heap_leaks")
    if l:
        check_sites(l, expected, "heap_leaks", exact=True)
        if l["unknownFrees"] != 0 or l["lostRecords"] != 0:
            fail(f"many, every call: unknown frees {l['unknownFrees']}, lost {l['lostRecords']}")
    # An interval far below the blocks' size: every block of heap-target's is sampled (the chance that one
    # of 1000 bytes is not is e^-62), so each free goes through the sampled blocks' set.
    reply, expected, _ = record(["--sample-interval=16"], ["many"])
    l = one_heap(reply, "heap_leaks")
    if not l:
        return
    if l["lostRecords"] != 0:
        fail(f"many, sampled: {l['lostRecords']} records lost")
    got = sites(l)
    for s in expected["sites"]:
        b, n, _ = got.get((s["function"], s["line"]), (0, 0, 0))
        want = s["leakBytes"]
        # Sites are scaled to the exact total, which also holds the C library's few blocks.
        if abs(b - want) > want // 100 + 1024:
            fail(f"many, sampled: {s['function']}:{s['line']} holds {b} bytes at exit, expected {want}")
        else:
            ok(f"many, sampled: {s['function']}:{s['line']} holds {b} bytes at exit, expected {want}")


def frames(node):
    """Every frame of a tree, depth first."""
    yield node
    for c in node.get("children", []):
        yield from frames(c)


def case_lifetimes():
    """heap-lifetimes measures its blocks' lives itself: at each of its sites, the frees memstrack counts,
    how many of them were temporary (within what the program's own clock allows) and that none lived less
    than the program saw them live."""
    reply, expected, _ = record(["--sample-interval=1"], [], program=lifetimes_program(),
                                formats="heap_maximum,heap_leaks,heap_lifetimes")
    h = one_heap(reply, "heap_leaks")
    if not h or not expected:
        fail(f"no heap or no expectations: {expected}")
        return
    bounds = reply.get("lifetimeBoundsUsec") or [1000, 10000, 100000, 1000000, 10000000]
    by_function = {}
    for f in frames(h["root"]):
        if f.get("function") in {s["function"] for s in expected["sites"]}:
            by_function.setdefault(f["function"], f)
    for s in expected["sites"]:
        f = by_function.get(s["function"])
        if not f:
            fail(f"lifetimes: no frame {s['function']} in the tree")
            continue
        freed, temporary = f.get("freedBlocks"), f.get("temporaryBlocks")
        where = f"lifetimes {s['function']}"
        if freed is None or sum(freed) != s["frees"]:
            fail(f"{where}: freed {freed}, expected {s['frees']} frees in all")
        if temporary is None or not s["temporaryAtLeast"] <= temporary <= s["temporaryAtMost"]:
            fail(f"{where}: {temporary} temporary, expected {s['temporaryAtLeast']} to {s['temporaryAtMost']}")
        # No block lived less than the program saw it live: the buckets below its shortest life are empty.
        shorter = [i for i, b in enumerate(bounds) if b <= s["minLifetimeUsec"]]
        if freed and any(freed[i] for i in shorter):
            fail(f"{where}: lifetimes {freed} below its shortest life of {s['minLifetimeUsec']} us")
        ok(f"{where}: {sum(freed or [])} freed {freed}, {temporary} temporary "
           f"({s['temporaryAtLeast']} to {s['temporaryAtMost']})")
    # heap_lifetimes says the same per call site, temporary ones first.
    view = (reply or {}).get("heap_lifetimes", {}).get("heaps", [{}])[0]
    sites_seen = {c.get("function"): c for c in view.get("callSites", [])}
    for s in expected["sites"]:
        c = sites_seen.get(s["function"])
        if not c or c["freed"] != s["frees"] or not s["temporaryAtLeast"] <= c["temporaryBlocks"] <= s["temporaryAtMost"]:
            fail(f"heap_lifetimes {s['function']}: {c}, expected {s['frees']} freed and "
                 f"{s['temporaryAtLeast']} to {s['temporaryAtMost']} temporary")
    order = [c.get("temporaryBlocks", 0) for c in view.get("callSites", [])]
    if order != sorted(order, reverse=True):
        fail(f"heap_lifetimes: call sites not by temporary blocks, most first: {order}")


def lifetimes_program():
    return os.path.join(os.path.dirname(TARGET), "heap-lifetimes")


def report_json(path, args):
    p = subprocess.run([CTL, "report", "--from", path, "--json=short"] + args, capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail(f"report {args}: exit status {p.returncode}: {p.stderr.strip()}")
        return None
    return json.loads(p.stdout)


def program_sites(view):
    """heap-lifetimes' own call sites in a heap view's JSON: function -> (bytes, windowFreedBytes)."""
    return {s["function"]: (s["bytes"], s.get("windowFreedBytes", 0)) for s in view["callSites"]
            if (s.get("file") or "").endswith("heap-lifetimes.c") and (s["bytes"] or s.get("windowFreedBytes"))}


def record_phases(tmp):
    """tests/heap-lifetimes phases recorded with every call's stack into tmp/phases.json: the file's path,
    and two moments in the pauses after each phase, in seconds after the heap's start (the program's clock
    and the recording's startUsec are both CLOCK_MONOTONIC), hundreds of milliseconds from either phase
    whatever the buckets' width. None if it could not be recorded (said as a failure)."""
    path = os.path.join(tmp, "phases.json")
    expect_path = os.path.join(tmp, "expect.json")
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY, HEAP_TARGET_EXPECT=expect_path)
    p = subprocess.run([CTL, "record", "--sample-interval=1", "--file", path, "--", lifetimes_program(), "phases"],
                       env=e, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not os.path.exists(expect_path):
        fail(f"record phases: exit status {p.returncode}: {p.stderr.strip()}")
        return None
    x = json.load(open(expect_path))
    one, two = x["phaseOneUsec"], x["phaseTwoUsec"]
    start = [h for h in json.load(open(path))["heap"]["heaps"] if h["comm"] == "heap-lifetimes"][0]["startUsec"]
    return path, ((one[1] + two[0]) / 2 - start) / 1e6, ((two[1] + x["endUsec"]) / 2 - start) / 1e6


def case_phases():
    """A heap of two phases, saved with its timeline: report --at a moment of each phase shows only that
    phase's site, with its exact bytes; --between a window across the change shows phase two's allocation
    and phase one's free, nothing else; --at max is the maximum; a file without timelines is refused."""
    tmp = tempfile.mkdtemp(prefix="heap-phases.")
    try:
        recorded = record_phases(tmp)
        if not recorded:
            return
        path, during_one, during_two = recorded
        maximum = report_json(path, ["--at", "max"])
        at_one = report_json(path, ["--at", str(during_one)])
        at_two = report_json(path, ["--at", str(during_two)])
        window = report_json(path, ["--between", f"{during_one},{during_two}"])
        if not (maximum and at_one and at_two and window):
            return
        b1 = program_sites(maximum["heap_maximum"][0]).get("phase_one_site", (0, 0))[0]
        if b1 < 8 << 20:
            fail(f"phases: the maximum's phase_one_site holds {b1} bytes, not 8 MiB or more")
        got_one = program_sites(at_one["heap_leaks"][0])
        if got_one != {"phase_one_site": (b1, 0)}:
            fail(f"phases --at {during_one}: sites {got_one}, expected phase_one_site with {b1} bytes alone")
        got_two = program_sites(at_two["heap_leaks"][0])
        b2 = got_two.get("phase_two_site", (0, 0))[0]
        if set(got_two) != {"phase_two_site"} or not (4 << 20) <= b2 < (4 << 20) + 8192:
            fail(f"phases --at {during_two}: sites {got_two}, expected phase_two_site with about 4 MiB alone")
        got_window = program_sites(window["heap_leaks"][0])
        if got_window != {"phase_two_site": (b2, 0), "phase_one_site": (0, b1)}:
            fail(f"phases --between: {got_window}, expected phase two's {b2} bytes allocated and phase one's "
                 f"{b1} freed")
        ok(f"phases: {b1} bytes at {during_one:.2f} s, {b2} at {during_two:.2f} s, the window between both")
        doc = json.load(open(path))
        for heap in doc["heap"]["heaps"]:
            heap["timeline"] = None
        bare = os.path.join(tmp, "bare.json")
        json.dump(doc, open(bare, "w"))
        p = subprocess.run([CTL, "report", "--from", bare, "--at", "0.1"], capture_output=True, text=True, timeout=60)
        if p.returncode != 1 or "no timeline" not in p.stderr:
            fail(f"report --at of a file without timelines: status {p.returncode}, {p.stderr.strip()}")
    finally:
        shutil.rmtree(tmp)


def case_moment_html():
    """The HTML report of a recording of two phases, in headless Chromium: a click on a heap's chart in each
    pause shows that phase's call site alone among the program's (needs chromium and playwright-core, which
    scripts/deps installs; else 77)."""
    chromium = shutil.which("chromium")
    node_path = "/opt/memstrack-test-node/node_modules"
    if not chromium or not os.path.isdir(os.path.join(node_path, "playwright-core")):
        print("SKIP: no chromium or no playwright-core in /opt/memstrack-test-node (scripts/deps installs both)")
        sys.exit(SKIP)
    tmp = tempfile.mkdtemp(prefix="heap-moment-html.")
    try:
        recorded = record_phases(tmp)
        if not recorded:
            return
        path, during_one, during_two = recorded
        html = os.path.join(tmp, "phases.html")
        if subprocess.run([CTL, "report", "--from", path, "--format", "html", "--output", html]).returncode != 0:
            fail("report --format html of the phases")
            return
        p = subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "heap-moment-browser.js"),
                            html, chromium, str(during_one), "phase_one_site", str(during_two), "phase_two_site"],
                           env=dict(os.environ, NODE_PATH=node_path), capture_output=True, text=True, timeout=180)
        print(p.stdout, end="")
        if p.returncode != 0:
            fail(f"the chart in Chromium: {p.stderr.strip()}")
    finally:
        shutil.rmtree(tmp)


def case_large():
    """A compiler on four of memstrack's sources with every call's stack, saved: the heaps together are far
    larger than one reply of memstrackd's (16 MiB), so record takes them pid by pid; every process the
    compiler ran is in the file, each with its tree and its timeline."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = [os.path.join(root, "daemon", "core", f) for f in ("accounting.c", "stacktree.c", "chargeindex.c", "units.c")]
    includes = [f"-I{os.path.join(root, d)}" for d in ("common", "daemon/core", "daemon/symbols", "daemon/util")]
    build = os.path.dirname(os.path.dirname(os.path.abspath(MEMSTRACKD)))
    tmp = tempfile.mkdtemp(prefix="heap-large.")
    try:
        path = os.path.join(tmp, "cc.json")
        e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
        p = subprocess.run([CTL, "record", "--sample-interval=1", "--file", path, "--", "cc", "-O2", "-D_GNU_SOURCE",
                            "-c", f"-I{build}"] + includes + sources, env=e, capture_output=True, text=True,
                           timeout=600, cwd=tmp)
        if p.returncode != 0:
            fail(f"record of cc: exit status {p.returncode}: {p.stderr.strip()[-500:]}")
            return
        heaps = json.load(open(path))["heap"]["heaps"]
        size = sum(len(json.dumps(h)) for h in heaps)
        comms = sorted(h["comm"] for h in heaps)
        cc1 = [h for h in heaps if h["comm"] == "cc1"]
        if len(cc1) != len(sources) or "cc" not in comms:
            fail(f"large: heaps of {comms}, expected cc and {len(sources)} cc1")
        if size <= 16 << 20:
            fail(f"large: the heaps hold {size} bytes of JSON, not more than one reply: the case tests nothing")
        missing = [h["pid"] for h in heaps if not h.get("timeline") or not h["root"]["children"]]
        if missing:
            fail(f"large: heaps without their tree or timeline: {missing}; stderr: {p.stderr.strip()}")
        ok(f"large: {len(heaps)} heaps ({' '.join(comms)}), {size >> 20} MiB of JSON, each with its timeline")
    finally:
        shutil.rmtree(tmp)


def case_storm():
    n = 500000
    reply, expected, _ = record(["--sample-interval=1"], ["storm", str(n)])
    l = one_heap(reply, "heap_leaks")
    if not l:
        return
    if l["allocs"] < 4 * n or l["frees"] < 4 * n:
        fail(f"storm: {l['allocs']} allocations, {l['frees']} frees counted, at least {4 * n} each expected")
    check_sites(l, expected, "heap_leaks", exact=l["lostRecords"] == 0)
    ok(f"storm: {l['allocs']} allocations, lost records {l['lostRecords']} (counted)")


def refused(target, reason):
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
    p = subprocess.run([CTL, "record", "--", target], env=e, capture_output=True, text=True, timeout=60)
    if p.returncode != 1 or reason not in p.stderr:
        fail(f"record {target}: exit {p.returncode}, stderr {p.stderr.strip()!r}; expected 1 and {reason!r}")
    else:
        ok(f"refused: {p.stderr.strip()}")


def case_static():
    refused(STATIC, "statically linked")


def case_setuid():
    if os.geteuid() != 0:
        print("setuid: needs root to make a program setuid to another user")
        sys.exit(SKIP)
    tmp = tempfile.mkdtemp(prefix="heap-setuid.")
    try:
        os.chmod(tmp, 0o755)
        target = os.path.join(tmp, "heap-target")
        shutil.copy(TARGET, target)
        os.chown(target, 65534, 65534)
        os.chmod(target, 0o4755)
        refused(target, "setuid")
    finally:
        shutil.rmtree(tmp)


def case_formats():
    """The stack formats (stack_tree, folded, flamegraph) and pprof show a recorded heap at its maximum, in
    bytes: their totals are the exact peak, and peak_site's 8 MiB block is where heap-target put it; the
    heap reports carry the growth of live bytes."""
    tmp = tempfile.mkdtemp(prefix="heap-formats.")
    try:
        snapshot = os.path.join(tmp, "heap.json")
        reply, expected, _ = record(["--sample-interval=1", "--file", snapshot, "--format",
                                     "heap_maximum,stack_tree,folded,flamegraph"], ["known"])
        if not reply:
            return
        peak = one_heap(reply, "heap_maximum")["bytes"]
        site = next(s for s in expected["sites"] if s["function"] == "peak_site")
        tree = reply["stack_tree"]
        if tree.get("unit") != "bytes" or tree.get("totalBytes") != peak:
            fail(f"stack_tree: unit {tree.get('unit')}, total {tree.get('totalBytes')}, expected bytes, {peak}")
        else:
            ok(f"stack_tree in bytes, total {peak}")
        folded = reply["folded"]
        total = sum(x["pages"] for x in folded)
        at_site = sum(x["pages"] for x in folded if x["stack"][-1].startswith("peak_site "))
        if total != peak or at_site != site["maxBytes"]:
            fail(f"folded: {total} bytes in all, {at_site} at peak_site; expected {peak}, {site['maxBytes']}")
        else:
            ok(f"folded: {total} bytes, peak_site {at_site}")
        if reply["flamegraph"]["totalBytes"] != peak:
            fail(f"flamegraph: total {reply['flamegraph']['totalBytes']}, expected {peak}")
        p = subprocess.run([CTL, "report", "--from", snapshot, "--format", "flamegraph"], capture_output=True,
                           text=True, timeout=60)
        if "User-space heap at its maximum" not in p.stdout or f": {peak} bytes (" not in p.stdout:
            fail(f"the flame graph's title does not give the heap's {peak} bytes")
        else:
            ok("flame graph of the heap, in bytes")
        growth = one_heap(reply, "heap_maximum")["growth"]
        if not growth or growth[-1]["liveBytes"] != one_heap(reply, "heap_maximum")["root"]["currentBytes"]:
            fail(f"growth: {growth}")
        else:
            ok(f"growth: {len(growth)} points")
        profile = os.path.join(tmp, "heap.pb.gz")
        p = subprocess.run([CTL, "pprof", "--from", snapshot, "--output", profile], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0 or f"{peak} bytes" not in p.stderr:
            fail(f"pprof of the heap: exit {p.returncode}: {p.stderr.strip()}")
        elif shutil.which("go"):
            p = subprocess.run(["go", "tool", "pprof", "-raw", profile], capture_output=True, text=True, timeout=300)
            # -raw lists each sample as "BLOCKS BYTES: locations"
            values = [line.split(":")[0].split() for line in p.stdout.splitlines()
                      if ":" in line and line.strip()[:1].isdigit()]
            space = sum(int(v[1]) for v in values if len(v) == 2)
            if space != peak:
                fail(f"go tool pprof reads {space} bytes of inuse_space, expected {peak}")
            else:
                ok(f"go tool pprof reads the heap's {space} bytes")
        else:
            ok("pprof of the heap written (go tool pprof not installed: not read back)")
    finally:
        shutil.rmtree(tmp)


# ---- Many processes ---------------------------------------------------------------------------------------

HELPERS = ["/bin/true", "sed s/x/y/", "basename /a/b", "cat /dev/null"]
HELPER_ROUNDS = 5


def write_script(tmp):
    """A shell script that runs 20 short helpers (each a process of its own, recorded) around heap-target
    known. The helpers and the shell take no stack (a sample interval of a TiB: as a small process at the
    default 512 KiB mostly does), heap-target every call's, so its sites are exact."""
    path = os.path.join(tmp, "many.sh")
    lines = ["#!/bin/sh", "set -e"]
    for i in range(HELPER_ROUNDS):
        for h in HELPERS:
            lines.append(f"echo x | {h} >/dev/null")
        if i == 2:
            lines.append(f"MEMSTRACK_HEAP_SAMPLE_INTERVAL=1 {TARGET} known")
    lines.append("exit 0")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, 0o755)
    return path


def run_ctl(args, env_extra=None, expect_status=0):
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
    e.update(env_extra or {})
    p = subprocess.run([CTL] + args, env=e, capture_output=True, text=True, timeout=300)
    if p.returncode != expect_status:
        fail(f"memstrackctl {' '.join(args)}: exit status {p.returncode}, not {expect_status}; "
             f"stderr: {p.stderr.strip()}")
    return p


def full_reports(text, section):
    """The pids of one framed format's heaps: (pids with a tree, pids in one line)."""
    body = text.split(f"======== Report format {section}: ========\n", 1)[-1].split(
        f"======== Report format {section} END ========", 1)[0]
    trees, lines = [], []
    for line in body.splitlines():
        if line.startswith("Heap of pid "):
            pid = int(line.split()[3])
            (lines if "no stack sampled" in line or "nothing allocated" in line else trees).append(pid)
    return trees, lines


def case_processes():
    """A script of 20 short helpers and heap-target: the table of all 22 processes comes first, then in full
    only heap-target's heap (exact) and the command's (the shell's, one line: it took no stack); --all
    shows every one, --process chooses, and report --from a saved file chooses the same."""
    tmp = tempfile.mkdtemp(prefix="heap-processes.")
    try:
        script = write_script(tmp)
        expect = os.path.join(tmp, "expect.json")
        env = {"HEAP_TARGET_EXPECT": expect}
        saved = os.path.join(tmp, "record.json")
        base = ["record", "--sample-interval=1099511627776"]
        p = run_ctl(base + ["--file", saved, "--format", "heap_processes,heap_maximum,heap_leaks", "--", script],
                    env)
        p = run_ctl(["report", "--from", saved])
        text = p.stdout
        n = 2 + len(HELPERS) * HELPER_ROUNDS
        lines = text.splitlines()
        if not lines or lines[0] != "======== Report format heap_processes: ========" or \
                not lines[1].startswith(f"{n} processes recorded"):
            fail(f"the output does not lead with the table of {n} processes: {lines[:2]}")
        table = json.loads(run_ctl(["--json=short", "report", "--from", saved]).stdout)
        rows = table["heap_processes"]["processes"]
        if len(rows) != n or [r["peakBytes"] for r in rows] != sorted((r["peakBytes"] for r in rows), reverse=True):
            fail(f"heap_processes: {len(rows)} rows, expected {n}, biggest maximum first")
        target = [r for r in rows if r["comm"] == "heap-target"]
        command = [r for r in rows if r["command"]]
        if len(target) != 1 or len(command) != 1 or command[0]["comm"] != "many.sh":
            fail(f"heap_processes: heap-target {target}, the command {command}")
            return
        target, command = target[0], command[0]
        shown = sorted(r["pid"] for r in rows if r["shown"])
        if shown != sorted([target["pid"], command["pid"]]):
            fail(f"shown in full: {shown}, expected heap-target's {target['pid']} and the command's {command['pid']}")
        rows_text = [line for line in lines[4:4 + n]]
        if len(rows_text) != n or sum(line.startswith("*") for line in rows_text) != 2:
            fail(f"the text table: {rows_text}")
        for section in ("heap_maximum", "heap_leaks"):
            trees, one_line = full_reports(text, section)
            if trees != [target["pid"]] or one_line != [command["pid"]]:
                fail(f"{section}: trees of {trees}, one line of {one_line}; expected heap-target's tree "
                     f"({target['pid']}) and the shell's line ({command['pid']})")
            else:
                ok(f"{section}: heap-target's tree alone, the shell in one line, {n - 2} helpers in the table only")
        if f"at its maximum: " not in text or f"({command['peakBytes']} bytes); " not in text:
            fail(f"the shell's line does not give its exact maximum, {command['peakBytes']} bytes")
        if f"({n - 2} more processes in heap_processes" not in text:
            fail("heap_maximum does not say how many processes it leaves out")
        # heap-target's call sites, exact.
        with open(expect) as f:
            expected = json.load(f)
        for view in ("heap_maximum", "heap_leaks"):
            hs = table[view]
            mine = [h for h in hs if h["pid"] == target["pid"]]
            if len(hs) != 2 or len(mine) != 1:
                fail(f"{view} --json: heaps of {[h['pid'] for h in hs]}, expected the command's and heap-target's")
                continue
            check_totals(mine[0], view)
            check_sites(mine[0], expected, view, exact=True)

        # The same from record itself, which shows them as it ends.
        p = run_ctl(base + ["--", script], env)
        if not p.stdout.startswith("======== Report format heap_processes: ========\n" + f"{n} processes"):
            fail(f"record's own output does not lead with the table: {p.stdout[:200]!r}")
        elif full_reports(p.stdout, "heap_maximum")[0] != [int(l.split()[3]) for l in p.stdout.splitlines()
                                                            if l.startswith("Heap of pid") and "heap-target" in l][:1]:
            fail("record's own output: heap-target's tree is not the only one")
        else:
            ok(f"record leads with the table of {n} processes")

        # --all: every one; --process: those named, by comm and by pid.
        everything = json.loads(run_ctl(["--json=short", "report", "--from", saved, "--all"]).stdout)
        if len(everything["heap_maximum"]) != n or len(everything["heap_leaks"]) != n:
            fail(f"--all: {len(everything['heap_maximum'])} heaps, expected {n}")
        else:
            ok(f"--all: {n} heaps in full")
        text_all = run_ctl(["report", "--from", saved, "--all"]).stdout
        trees, one_line = full_reports(text_all, "heap_maximum")
        if len(trees) != 1 or len(one_line) != n - 1:
            fail(f"--all as text: {len(trees)} trees, {len(one_line)} lines; expected 1 and {n - 1}")
        for choice, want in ((["--process", "sed"], {r["pid"] for r in rows if r["comm"] == "sed"}),
                             (["--process", "cat,basename"], {r["pid"] for r in rows if r["comm"] in ("cat", "basename")}),
                             (["--process", str(target["pid"]), "--process", "true"],
                              {r["pid"] for r in rows if r["comm"] == "true"} | {target["pid"]})):
            got = json.loads(run_ctl(["--json=short", "report", "--from", saved] + choice).stdout)
            pids = {h["pid"] for h in got["heap_leaks"]}
            if pids != want or len(want) not in (HELPER_ROUNDS, 2 * HELPER_ROUNDS, HELPER_ROUNDS + 1):
                fail(f"{' '.join(choice)}: heaps of {sorted(pids)}, expected {sorted(want)}")
            else:
                ok(f"{' '.join(choice)}: {len(pids)} heaps")
        p = run_ctl(["report", "--from", saved, "--process", "nosuchprogram"], expect_status=1)
        if "nosuchprogram" not in p.stderr:
            fail(f"--process naming nothing: {p.stderr.strip()}")
        # The share: at 100 % only the command's remains.
        got = json.loads(run_ctl(["--json=short", "report", "--from", saved, "--min-share", "100"]).stdout)
        if [h["pid"] for h in got["heap_maximum"]] != [command["pid"]]:
            fail(f"--min-share 100: {[h['pid'] for h in got['heap_maximum']]}, expected the command's alone")
        else:
            ok("--min-share 100: the command's heap alone")

        # A file from before record kept the command's pid: its first heap is the command's, and it says so.
        old = os.path.join(tmp, "old.json")
        doc = json.load(open(saved))
        del doc["heapCommandPid"]
        json.dump(doc, open(old, "w"))
        got = json.loads(run_ctl(["--json=short", "report", "--from", old]).stdout)["heap_processes"]
        first = min(doc["heap"]["heaps"], key=lambda h: h["serial"])
        if got["commandPid"] != first["pid"] or got["commandPidRecorded"] or first["pid"] != command["pid"]:
            fail(f"an older file: command pid {got['commandPid']} (recorded {got['commandPidRecorded']}), "
                 f"expected the first heap's, {first['pid']}")
        elif "the file does not say" not in run_ctl(["report", "--from", old]).stdout:
            fail("an older file: the table does not say the command is taken as the first process")
        else:
            ok("an older file: the first heap is the command's")

        # The HTML page: the table, and call sites of the two chosen.
        page = run_ctl(["report", "--from", saved, "--format", "html"]).stdout
        section = page.split('<section id="heaps">', 1)[-1].split("</section>", 1)[0]
        # Call site tables: at the maximum and never freed, of each process in full with sampled stacks.
        site_tables = len(re.findall(r'id="heap-[0-9]+-(?:maximum|leaks)"', section))
        if section == page or section.count("<tr>") - section.count("<h4>") < n or \
                section.count("<h3>") != 2 or site_tables != 2:
            fail(f"html: the heaps section has {section.count('<h3>')} processes in full, "
                 f"{site_tables} call site tables")
        else:
            ok("html: the table of every process and heap-target's call sites")
    finally:
        shutil.rmtree(tmp)


# ---- record --pid ---------------------------------------------------------------------------------------

def read_line_with(stream, text):
    """Lines of stream until one holds text (True), or its end (False). Every wait here is for an event
    that comes, never for a time to pass; the test's own timeout bounds them."""
    for line in stream:
        if text in line:
            return True
    return False


def start_waiting_target(tmp):
    """heap-target wait-leak, not recorded, its expectations in tmp; once it said it is ready."""
    e = dict(os.environ, HEAP_TARGET_EXPECT=os.path.join(tmp, "expect.json"))
    e.pop("LD_PRELOAD", None)
    target = subprocess.Popen([TARGET, "wait-leak"], env=e, stdout=subprocess.PIPE, text=True)
    if not read_line_with(target.stdout, "ready"):
        fail("heap-target wait-leak did not start")
    return target


def record_pid(args, tmp, leak=True):
    """record --pid of a waiting heap-target: attached, then the target leaks, then Ctrl-C stops the recording.
    Returns (reply, expected, stderr, target) with the target still running (the caller ends it)."""
    if os.geteuid() != 0:
        print("record --pid needs root (uprobes and BPF)")
        sys.exit(SKIP)
    target = start_waiting_target(tmp)
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD)
    ctl = subprocess.Popen([CTL, "record", "--json=short", "--format", "heap_maximum,heap_leaks", "--pid",
                            str(target.pid)] + args, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    err = []
    for line in ctl.stderr:
        err.append(line)
        if "recording the heap of process" in line:
            break
    else:
        out, rest = ctl.communicate(timeout=120)
        stderr = "".join(err) + rest
        target.kill()
        target.wait()
        if "Failed to load the heap uprobes' BPF program" in stderr or "Operation not permitted" in stderr:
            print(f"record --pid cannot load its BPF program here: {stderr.strip()}")
            sys.exit(SKIP)
        fail(f"record --pid did not attach: exit {ctl.returncode}, stderr {stderr.strip()}")
        return None, None, stderr, None
    if leak:
        target.send_signal(signal.SIGUSR1)
        if not read_line_with(target.stdout, "leaked"):
            fail("heap-target did not leak")
    if "--seconds" not in " ".join(args):
        ctl.send_signal(signal.SIGINT)
    out, rest = ctl.communicate(timeout=300)
    stderr = "".join(err) + rest
    if ctl.returncode != 0:
        fail(f"record --pid {args}: exit status {ctl.returncode}; stderr: {stderr.strip()}")
    reply = json.loads(out) if out.strip() else None
    expect_path = os.path.join(tmp, "expect.json")
    expected = json.load(open(expect_path)) if leak and os.path.exists(expect_path) else None
    return reply, expected, stderr, target


def end_target(target):
    """The target ran on through the recording and after it: it must still be there, not a zombie."""
    if target.poll() is not None:
        fail(f"the recorded process did not survive the recording: exit status {target.returncode}")
        return
    state = open(f"/proc/{target.pid}/stat").read().rsplit(")", 1)[1].split()[0]
    if state in ("Z", "X"):
        fail(f"the recorded process is {state} after the recording")
    else:
        ok(f"the recorded process runs on (state {state})")
    target.terminate()
    target.wait()


def check_pid_heap(reply, expected, target, exact):
    for view in ("heap_maximum", "heap_leaks"):
        h = one_heap(reply, view)
        if not h:
            return
        if h["pid"] != target.pid or h["end"] != "closed":
            fail(f"{view}: heap of pid {h['pid']} ended by {h['end']}, expected {target.pid}, closed")
        check_totals(h, view)
    # Every allocation of the phase is the target's own, so both views hold its sites; the leak is the test.
    check_sites(one_heap(reply, "heap_leaks"), expected, "heap_leaks", exact=exact)


def case_pid():
    tmp = tempfile.mkdtemp(prefix="heap-record-pid.")
    try:
        reply, expected, _, target = record_pid([], tmp)
        if target:
            if reply and expected:
                check_pid_heap(reply, expected, target, exact=False)
            end_target(target)
    finally:
        shutil.rmtree(tmp)


def case_pid_exact():
    tmp = tempfile.mkdtemp(prefix="heap-record-pid.")
    try:
        reply, expected, _, target = record_pid(["--sample-interval=1"], tmp)
        if target:
            if reply and expected:
                check_pid_heap(reply, expected, target, exact=True)
                l = one_heap(reply, "heap_leaks")
                if l and (l["lostRecords"] != 0 or l["allocs"] < 8000 or l["frees"] < 4000):
                    fail(f"pid exact: {l['allocs']} allocations, {l['frees']} frees, {l['lostRecords']} lost")
            end_target(target)
    finally:
        shutil.rmtree(tmp)


def case_pid_seconds():
    """--seconds ends the recording by itself; a process that did nothing meanwhile has an empty heap."""
    tmp = tempfile.mkdtemp(prefix="heap-record-pid.")
    try:
        reply, _, _, target = record_pid(["--seconds", "0.5"], tmp, leak=False)
        if target:
            l = one_heap(reply, "heap_leaks")
            if l and (l["end"] != "closed" or l["bytes"] != 0):
                fail(f"pid --seconds: heap ended by {l['end']} with {l['bytes']} bytes, expected closed, 0")
            elif l:
                ok("pid --seconds: the recording ended by itself, nothing allocated meanwhile")
            end_target(target)
    finally:
        shutil.rmtree(tmp)


def case_pid_killed():
    """memstrackctl killed outright: its memstrackd dies with it (PR_SET_PDEATHSIG), and with the daemon
    its BPF links, so the process is left with nothing attached and runs on."""
    if os.geteuid() != 0:
        print("record --pid needs root (uprobes and BPF)")
        sys.exit(SKIP)
    tmp = tempfile.mkdtemp(prefix="heap-record-pid.")
    target = start_waiting_target(tmp)
    try:
        e = dict(os.environ, MEMSTRACKD=MEMSTRACKD)
        ctl = subprocess.Popen([CTL, "record", "--pid", str(target.pid)], env=e, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        if not read_line_with(ctl.stderr, "recording the heap of process"):
            fail("record --pid did not attach")
            return
        children = open(f"/proc/{ctl.pid}/task/{ctl.pid}/children").read().split()
        ctl.kill()
        ctl.wait()
        for child in children:
            # Gone, or a zombie nobody reaps any more (its parent died): either way it holds no link.
            while os.path.exists(f"/proc/{child}"):
                state = open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[0]
                if state in ("Z", "X"):
                    break
                os.sched_yield()
        ok(f"memstrackctl killed: its memstrackd {children} is gone")
        # The process allocates with nothing attached any more, and runs on.
        target.send_signal(signal.SIGUSR1)
        if not read_line_with(target.stdout, "leaked"):
            fail("heap-target did not leak after the recording was killed")
        end_target(target)
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()
        shutil.rmtree(tmp)


# ---- The heap in the live daemon (--heap-socket) ------------------------------------------------------------

def start_live_daemon(tmp):
    """A memstrackd tracing the kernel (its automatic source) with the heap source beside it."""
    if os.geteuid() != 0:
        print("the live daemon traces the kernel: root needed")
        sys.exit(SKIP)
    sock, heap = os.path.join(tmp, "sock"), os.path.join(tmp, "heap")
    log = open(os.path.join(tmp, "log"), "w")
    d = subprocess.Popen([MEMSTRACKD, "--foreground", "--socket=" + sock, "--heap-socket=" + heap,
                          "--group=root"], stderr=log, stdout=log)
    address = "unix:" + sock
    for _ in range(600):
        if d.poll() is not None:
            print(f"memstrackd cannot trace here: {open(os.path.join(tmp, 'log')).read().strip()[-300:]}")
            sys.exit(SKIP)
        p = subprocess.run([CTL, "--address", address, "status"], capture_output=True)
        if p.returncode == 0:
            return d, address, heap
        time.sleep(0.1)
    d.kill()
    fail("memstrackd did not start")
    return None, None, None


def ctl_json(address, *args):
    p = subprocess.run([CTL, "--address", address, "--json=short"] + list(args), capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail(f"memstrackctl {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return None
    return json.loads(p.stdout)


def heap_nodes(node, out):
    """(function, line) -> bytes of the innermost frames of heap-target's, in a HeapNode tree."""
    if node.get("file") and node["file"].endswith("heap-target.c") and not any(
            c.get("file") and c["file"].endswith("heap-target.c") for c in node["children"]):
        key = (node.get("function"), node.get("line"))
        out[key] = out.get(key, 0) + node["currentBytes"]
    for c in node["children"]:
        heap_nodes(c, out)
    return out


def case_live():
    """A process preloading the heap library hands its heap to the system's memstrackd: Tasks has its heap
    bytes, StackTree its heap tree under its pages, exactly; record --live reports a command from there."""
    tmp = tempfile.mkdtemp(prefix="heap-live.")
    d = None
    try:
        d, address, heap = start_live_daemon(tmp)
        if not d:
            return
        e = dict(os.environ, LD_PRELOAD=LIBRARY, MEMSTRACK_HEAP_SOCKET=heap, MEMSTRACK_HEAP_SAMPLE_INTERVAL="1",
                 HEAP_TARGET_EXPECT=os.path.join(tmp, "expect.json"))
        target = subprocess.Popen([TARGET, "wait-leak"], env=e, stdout=subprocess.PIPE, text=True)
        if not read_line_with(target.stdout, "ready"):
            fail("heap-target did not start")
            return
        target.send_signal(signal.SIGUSR1)
        if not read_line_with(target.stdout, "leaked"):
            fail("heap-target did not leak")
            return
        expected = {(x["function"], x["line"]): x["leakBytes"] for x in json.load(open(e["HEAP_TARGET_EXPECT"]))["sites"]}
        # The heap source is polled: ask until the daemon has read what the process counted by now.
        for _ in range(600):
            tasks = ctl_json(address, "tasks", "--comm", "heap-target")
            rows = [t for t in (tasks or {}).get("tasks", []) if t["pid"] == target.pid]
            if rows and rows[0].get("heapBytes") and rows[0]["heapBytes"] >= sum(expected.values()):
                break
            time.sleep(0.1)
        if not rows or rows[0].get("heapBytes") is None:
            fail(f"Tasks shows no heap for pid {target.pid}: {rows}")
        else:
            ok(f"Tasks: pid {target.pid} heapBytes {rows[0]['heapBytes']}, heapPeakBytes {rows[0]['heapPeakBytes']}")
        # The heap source is polled, so the daemon may still read what the process counted before it
        # waited: a StackTree is held against Tasks only when Tasks read the same before and after it.
        tree = None
        for _ in range(50):
            st = ctl_json(address, "stacks", "--task", str(target.pid), "--depth", "64", "--limit", "1000")
            tree = (st or {}).get("heap")
            after = [t for t in (ctl_json(address, "tasks", "--comm", "heap-target") or {}).get("tasks", [])
                     if t["pid"] == target.pid]
            if not after or not rows or after[0].get("heapBytes") == rows[0].get("heapBytes"):
                break
            rows = after
        if not tree:
            fail("StackTree of the process has no heap")
        else:
            got = heap_nodes(tree, {})
            for key, want in expected.items():
                if got.get(key, 0) != want:
                    fail(f"StackTree heap {key}: {got.get(key, 0)} bytes, expected {want}")
                else:
                    ok(f"StackTree heap {key[0]} heap-target.c:{key[1]}: {want} bytes")
            if rows and tree["currentBytes"] != rows[0]["heapBytes"]:
                fail(f"StackTree heap root {tree['currentBytes']} bytes, Tasks {rows[0]['heapBytes']}")
        target.terminate()
        target.wait()

        # A command recorded into the live daemon, reported from it.
        p = subprocess.run([CTL, "--address", address, "record", "--live", "--sample-interval=1", "--json=short",
                            "--format", "heap_maximum,heap_leaks", "--", TARGET, "known"],
                           env=dict(os.environ, MEMSTRACK_HEAP_LIBRARY=LIBRARY,
                                    HEAP_TARGET_EXPECT=os.path.join(tmp, "known.json")),
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            fail(f"record --live: exit {p.returncode}: {p.stderr.strip()}")
            return
        reply, known = json.loads(p.stdout), json.load(open(os.path.join(tmp, "known.json")))
        for view in ("heap_maximum", "heap_leaks"):
            h = one_heap(reply, view)
            if h:
                check_sites(h, known, view, exact=True)
    finally:
        if d:
            d.terminate()
            d.wait()
        shutil.rmtree(tmp)


def case_live_other_user():
    """Beside a kernel source every user's processes hand over their own heap: one of nobody's is taken."""
    tmp = tempfile.mkdtemp(prefix="heap-live.")
    os.chmod(tmp, 0o755)
    d = None
    try:
        d, address, heap = start_live_daemon(tmp)
        if not d:
            return
        target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", TARGET,
                                   "wait-leak"], env=dict(os.environ, LD_PRELOAD=LIBRARY, MEMSTRACK_HEAP_SOCKET=heap),
                                  stdout=subprocess.PIPE, text=True)
        if not read_line_with(target.stdout, "ready"):
            fail("heap-target as nobody did not start")
            return
        for _ in range(600):
            heaps = ctl_json(address, "tasks", "--comm", "heap-target") or {}
            rows = [t for t in heaps.get("tasks", []) if t["pid"] == target.pid and t.get("heapBytes") is not None]
            if rows:
                ok(f"nobody's process {target.pid} hands over its heap: {rows[0]['heapBytes']} bytes")
                break
            time.sleep(0.1)
        else:
            fail(f"the heap of nobody's process {target.pid} never showed")
        target.terminate()
        target.wait()
    finally:
        if d:
            d.terminate()
            d.wait()
        shutil.rmtree(tmp)


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 8 or sys.argv[1] not in CASES:
        print(__doc__)
        sys.exit(2)
    _, case, CTL, MEMSTRACKD, LIBRARY, TARGET, PLUGIN, STATIC = [sys.argv[0], sys.argv[1]] + \
        [os.path.abspath(a) for a in sys.argv[2:]]
    CASES[case]()
    sys.exit(1 if failed else 0)
