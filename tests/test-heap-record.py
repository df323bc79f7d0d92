#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackctl record: exact heap totals, call sites with file:line, and the edge cases.

Usage: test-heap-record.py CASE MEMSTRACKCTL MEMSTRACKD LIBRARY HEAP_TARGET PLUGIN STATIC

heap-target works out what it allocates itself (malloc_usable_size() of every block, per call site) and
writes it to $HEAP_TARGET_EXPECT; each case runs it under `memstrackctl record --json` and compares:

  exact        every call's stack: each of heap-target's call sites (function, file, line) holds exactly
               the bytes and blocks it expects at the heap's maximum and at exit; totals are the exact
               peak and live bytes, and the call sites add up to them
  sampled      the default sampling: the same totals, exactly; each site within the error the output
               states for it
  double-free  a double free glibc lets through (tcache off) is counted, nothing crashes
  bad-free     a pointer never allocated: glibc aborts the program, record reports what it got, 134
  signal       allocations in a signal handler that lands inside malloc/free: totals stay exact
  fork         a child that forks without exec is not recorded, the parent's heap is exact
  exec         a process that execs: two heaps of one pid, the first ended by the exec
  dlopen       frames of a library loaded later are named with their file and line
  closefds     a program that closes every descriptor and lowers RLIMIT_NOFILE is recorded
  sigkill      a process killed by SIGKILL: what was received is reported, exit status 137
  storm        more records than the channel holds, from 4 threads: totals exact, losses counted
  static       a static program: refused with the reason, exit status 1
  setuid       a setuid program of another user: refused with the reason (root only, else 77)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAIL:", msg)


def ok(msg):
    print("ok", msg)


def record(args, target_args, env=None, expect_status=0):
    """Runs record with --json; returns (reply or None, expected or None, stderr)."""
    tmp = tempfile.mkdtemp(prefix="heap-record.")
    try:
        e = dict(os.environ)
        e.update({"MEMSTRACKD": MEMSTRACKD, "MEMSTRACK_HEAP_LIBRARY": LIBRARY,
                  "HEAP_TARGET_EXPECT": os.path.join(tmp, "expect.json"), "MEMSTRACK_HEAP_SEED": "42"})
        e.update(env or {})
        p = subprocess.run([CTL, "record", "--json=short", "--format", "heap_maximum,heap_leaks"] + args +
                           ["--", TARGET] + target_args, env=e, capture_output=True, text=True, timeout=300)
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
        if s.get("file") and (s["file"].endswith("heap-target.c") or s["file"].endswith("heap-target-cxx.cc")):
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


def case_exact():
    reply, expected, _ = record(["--sample-interval=1"], ["known"])
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
    return m["bytes"], l["bytes"]


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


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 8 or sys.argv[1] not in CASES:
        print(__doc__)
        sys.exit(2)
    _, case, CTL, MEMSTRACKD, LIBRARY, TARGET, PLUGIN, STATIC = [sys.argv[0], sys.argv[1]] + \
        [os.path.abspath(a) for a in sys.argv[2:]]
    CASES[case]()
    sys.exit(1 if failed else 0)
