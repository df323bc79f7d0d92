#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackctl record on programs whose malloc is not glibc's: jemalloc, tcmalloc and mimalloc.

Usage: test-heap-allocators.py CASE ALLOCATOR MEMSTRACKCTL MEMSTRACKD LIBRARY HEAP_TARGET TARGET STATIC BUILTIN

TARGET is heap-target linked with ALLOCATOR (its known mode also calls the allocator's own API: jemalloc's
mallocx() and kin, tcmalloc's tc_*(), mimalloc's mi_*()), STATIC heap-static with ALLOCATOR linked into it,
BUILTIN heap-target with ALLOCATOR's static library linked into it and glibc a shared library (each may
be '': not built here, the case skips). For ALLOCATOR glibc they are heap-target and heap-static
themselves. heap-target and heap-static work out what they allocate from malloc_usable_size(), which is
the allocator's, and each case compares it with what record reports, exactly (every call's stack):

  record           record of TARGET known: every call site holds exactly its bytes and blocks at the maximum
                   and at exit, including the aligned blocks, C++'s sized and aligned deletes and the
                   allocator's API
  preloaded        record of heap-target (glibc's build) with ALLOCATOR after the heap library in LD_PRELOAD
                   (as record puts its library before the LD_PRELOAD it is given): the allocator serves
                   every block, the same exact totals
  preloaded-first  a process that puts ALLOCATOR before the heap library in LD_PRELOAD: the library binds
                   the objects' calls to itself, the same exact totals
  builtin          record of BUILTIN: its malloc is its own, called directly; refused with the reason
  pid              record --pid of TARGET wait-known: the uprobes attach to the allocator that provides
                   malloc in the process, exact (each allocator's usable sizes differ: exact only there)
  pid-preloaded    the same of heap-target (glibc's build) running with ALLOCATOR preloaded
  pid-static       record --pid of STATIC wait-known: the program's own malloc from its symbol table, exact;
                   for glibc also a stripped copy, refused with the reason
  pid-builtin      record --pid of BUILTIN wait-known: the program's malloc, before libc's, exact
The pid cases need root (uprobes and BPF), else 77.
"""
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

SKIP = 77

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("heap_record", os.path.join(here, "test-heap-record.py"))
hr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hr)


def skip(why):
    print(why)
    sys.exit(SKIP)


def allocator_library(program):
    """The path of ALLOCATOR's shared library as the dynamic loader finds it for program (linked with it)."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    name = {"jemalloc": "libjemalloc", "tcmalloc": "libtcmalloc", "mimalloc": "libmimalloc"}[ALLOCATOR]
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].startswith(name) and len(parts) >= 3 and parts[2].startswith("/"):
            return parts[2]
    skip(f"{program} does not link {name}: {out.strip()}")


def check_served(expected, want):
    """heap-target says whose malloc served it (dladdr() of malloc)."""
    got = expected.get("malloc", "") if expected else ""
    if want not in got:
        hr.fail(f"malloc in the recorded program is {got!r}, not {want}'s")
    else:
        hr.ok(f"malloc served by {got}")


def check_exact(reply, expected, what, unknown_frees=0):
    if not reply or not expected:
        hr.fail(f"{what}: no reply or no expectations")
        return
    for view in ("heap_maximum", "heap_leaks"):
        h = hr.one_heap(reply, view)
        if not h:
            return
        hr.check_totals(h, view)
        hr.check_sites(h, expected, view, exact=True)
    l = hr.one_heap(reply, "heap_leaks")
    if l["lostRecords"] != 0 or l["unknownFrees"] > unknown_frees:
        fail_text = f"{what}: lost {l['lostRecords']}, unknown frees {l['unknownFrees']}"
        hr.fail(fail_text)


def case_record():
    if not TARGET:
        skip(f"heap-target was not built with {ALLOCATOR} here")
    reply, expected, _ = hr.record(["--sample-interval=1"], ["known"])
    check_exact(reply, expected, f"record on {ALLOCATOR}")
    check_served(expected, "lib" + ALLOCATOR[:2])


def record_preloaded(first, second):
    """record of heap-target (glibc's build) known under env LD_PRELOAD="FIRST SECOND", exact. env sets the
    variable for the program alone: memstrackctl itself may be built with a sanitizer that must come first."""
    lib = allocator_library(TARGET)
    order = [lib if x == "allocator" else LIBRARY for x in (first, second)]
    hr.TARGET = "env"
    reply, expected, _ = hr.record(["--sample-interval=1"], ["LD_PRELOAD=" + " ".join(order), GLIBC_TARGET, "known"])
    if reply:
        reply = {view: [h for h in heaps if h["comm"] == "heap-target"] for view, heaps in reply.items()
                 if view in ("heap_maximum", "heap_leaks")}
    check_exact(reply, expected, f"record with LD_PRELOAD={' '.join(order)}")
    check_served(expected, os.path.basename(lib).split(".so")[0])


def case_preloaded():
    """The allocator after the library, as record puts its library before the LD_PRELOAD it is given."""
    if not TARGET:
        skip(f"{ALLOCATOR} is not installed here")
    record_preloaded("library", "allocator")


def case_preloaded_first():
    """The allocator before the library, as a process may set LD_PRELOAD for its children."""
    if not TARGET:
        skip(f"{ALLOCATOR} is not installed here")
    record_preloaded("allocator", "library")


def case_builtin():
    if not BUILTIN:
        skip(f"no static library of {ALLOCATOR} to link into a program here")
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
    p = subprocess.run([CTL, "record", "--json=short", "--format", "heap_leaks", "--", BUILTIN, "known"], env=e,
                       capture_output=True, text=True, timeout=300)
    said = "not recording this process: its malloc is the one of the program"
    heaps = json.loads(p.stdout)["heap_leaks"] if p.stdout.strip() else []
    if said not in p.stderr or any(h["bytes"] for h in heaps):
        hr.fail(f"builtin: exit {p.returncode}, heaps {heaps}, stderr {p.stderr.strip()}")
    else:
        hr.ok(f"builtin: refused ({said})")


def record_pid_of(program, env=None):
    """record --pid --sample-interval=1 of program wait-known: (reply, expected, stderr)."""
    if os.geteuid() != 0:
        skip("record --pid needs root (uprobes and BPF)")
    tmp = tempfile.mkdtemp(prefix="heap-alloc-pid.")
    target = None
    try:
        e = dict(os.environ, HEAP_TARGET_EXPECT=os.path.join(tmp, "expect.json"))
        e.pop("LD_PRELOAD", None)
        e.update(env or {})
        target = subprocess.Popen([program, "wait-known"], env=e, stdout=subprocess.PIPE, text=True)
        if not hr.read_line_with(target.stdout, "ready"):
            hr.fail(f"{program} wait-known did not start")
            return None, None, ""
        ctl = subprocess.Popen([CTL, "record", "--json=short", "--format", "heap_maximum,heap_leaks", "--pid",
                                str(target.pid), "--sample-interval=1"], env=dict(os.environ, MEMSTRACKD=MEMSTRACKD),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = []
        for line in ctl.stderr:
            err.append(line)
            if "recording the heap of process" in line:
                break
        else:
            out, rest = ctl.communicate(timeout=120)
            stderr = "".join(err) + rest
            if "Failed to load the heap uprobes' BPF program" in stderr:
                skip(f"record --pid cannot load its BPF program here: {stderr.strip()}")
            return None, None, stderr
        target.send_signal(signal.SIGUSR1)
        if not hr.read_line_with(target.stdout, "leaked"):
            hr.fail(f"{program} did not allocate")
        ctl.send_signal(signal.SIGINT)
        out, rest = ctl.communicate(timeout=300)
        if ctl.returncode != 0:
            hr.fail(f"record --pid of {program}: exit {ctl.returncode}: {rest.strip()}")
        reply = json.loads(out) if out.strip() else None
        path = os.path.join(tmp, "expect.json")
        return reply, json.load(open(path)) if os.path.exists(path) else None, "".join(err) + rest
    finally:
        if target and target.poll() is None:
            target.kill()
            target.wait()
        shutil.rmtree(tmp)


def pid_exact(program, what, served, env=None, unknown_frees=0):
    """record --pid of program wait-known exact, served by the malloc of an object whose name holds served."""
    reply, expected, stderr = record_pid_of(program, env)
    if reply is None and expected is None:
        hr.fail(f"record --pid of {what} did not attach: {stderr.strip()}")
        return
    if served:
        check_served(expected, served)
    check_exact(reply, expected, f"record --pid of {what}", unknown_frees)


def case_pid():
    if not TARGET:
        skip(f"heap-target was not built with {ALLOCATOR} here")
    # glibc allocates each thread's tcache inside, not through malloc, and frees it through free when the
    # thread exits: known's 4 threads make 4 frees of blocks never seen allocated.
    pid_exact(TARGET, f"heap-target on {ALLOCATOR}", "lib" + ALLOCATOR[:2] if ALLOCATOR != "glibc" else "libc.so.6",
              unknown_frees=4 if ALLOCATOR == "glibc" else 0)


def case_pid_preloaded():
    if not TARGET:
        skip(f"{ALLOCATOR} is not installed here")
    lib = allocator_library(TARGET)
    pid_exact(GLIBC_TARGET, f"heap-target with {lib} preloaded", os.path.basename(lib).split(".so")[0],
              env={"LD_PRELOAD": lib})


def case_pid_builtin():
    if not BUILTIN:
        skip(f"no static library of {ALLOCATOR} to link into a program here")
    pid_exact(BUILTIN, f"a program with {ALLOCATOR} built in", "heap-target-" + ALLOCATOR + "-builtin")


def case_pid_static():
    if not STATIC:
        skip(f"no static library of {ALLOCATOR} here: no static program with it inside")
    pid_exact(STATIC, f"a static program with {ALLOCATOR}", None)
    if ALLOCATOR != "glibc":
        return
    # Without a symbol table nothing names its malloc: refused, and said why.
    tmp = tempfile.mkdtemp(prefix="heap-alloc-strip.")
    try:
        stripped = os.path.join(tmp, "heap-static")
        subprocess.run(["strip", "-o", stripped, STATIC], check=True)
        reply, expected, stderr = record_pid_of(stripped)
        if reply is not None or "has no symbol for malloc" not in stderr:
            hr.fail(f"record --pid of a stripped static program: {stderr.strip()}")
        else:
            hr.ok(f"stripped static program refused: {stderr.strip().splitlines()[-1]}")
    finally:
        shutil.rmtree(tmp)


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 10 or sys.argv[1] not in CASES:
        print(__doc__)
        sys.exit(2)
    case, ALLOCATOR = sys.argv[1], sys.argv[2]
    CTL, MEMSTRACKD, LIBRARY, GLIBC_TARGET = [os.path.abspath(a) for a in sys.argv[3:7]]
    TARGET, STATIC, BUILTIN = [os.path.abspath(a) if a else "" for a in sys.argv[7:10]]
    hr.CTL, hr.MEMSTRACKD, hr.LIBRARY, hr.TARGET = CTL, MEMSTRACKD, LIBRARY, TARGET
    CASES[case]()
    sys.exit(1 if hr.failed else 0)
