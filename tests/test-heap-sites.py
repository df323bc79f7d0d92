#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackctl record's call sites through allocator wrappers: the caller is named, not the wrapper.

Usage: test-heap-sites.py CASE MEMSTRACKCTL MEMSTRACKD LIBRARY HEAP_WRAPPERS PRINT_WRAPPERS CLIENT_MD

heap-wrappers makes one big allocation through a wrapper from a known line and writes the caller's function,
that line and the block's bytes to $HEAP_TARGET_EXPECT, with the wrapper's name; each case records it with
every call's stack and compares:

  xmalloc   a wrapper of the program's own, with a source line: the caller's line is the top call site, exact;
            --keep-frames makes the wrapper the top site, from record and from report --from alike
  custom    a wrapper no list knows (my_pool_alloc) is the top site until --fold-frame names it (or a
            pattern of it): then its caller is
  cxx       C++ new[]: the caller's line, operator new with --keep-frames
  glib      g_malloc, g_new0, g_strdup: the caller's line, g_malloc with --keep-frames (77 without glib)
  python    Debian's /usr/bin/python3 (not one on PATH) under PYTHONMALLOC=malloc, whose frames carry no
            line: no call site is a listed wrapper and the top one is a function of python's own symbol
            table; with --keep-frames CPython's allocators are sites again (77 if it cannot run)
  list      docs/client.md lists exactly the wrappers of the code's table
  diff      diff of two recordings that differ by one 10 MiB site lists that site alone, changed by exactly
            its bytes; a site of one recording alone is shown as such; --json; --process; identical
            recordings differ nowhere
  limits    record --max-peak below the peak exits with 7 naming the site, above it with the command's status
            (0, or its own when it failed, the limit said all the same); --max-leaked likewise
"""
import json
import os
import re
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


def wrappers():
    return subprocess.run([PRINT], capture_output=True, text=True, check=True).stdout.splitlines()


def matches(pattern, name):
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("*")), name) is not None


def names_of(site):
    """The names a site goes by: its function, and its frame's symbol (the frame without its +0x offset),
    each also without glibc's __GI_ prefix and a compiler clone's suffix."""
    out = []
    for name in (site.get("function"), re.sub(r"\+0x[0-9a-f]+$", "", site.get("frame") or "")):
        if not name or name.startswith("["):
            continue
        out.append(name)
        base = name[5:] if name.startswith("__GI_") else name
        if " " not in base and "(" not in base:
            base = base.split(".")[0]
        out.append(base)
    return out


def is_wrapper(site, listed):
    return any(matches(p, n) for p in listed for n in names_of(site))


def record(args, command, env=None, expect_status=0):
    """record --json of command with every call's stack; (heap_maximum's heap, expectations or None)."""
    tmp = tempfile.mkdtemp(prefix="heap-sites.")
    try:
        e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY,
                 HEAP_TARGET_EXPECT=os.path.join(tmp, "expect.json"))
        e.update(env or {})
        p = subprocess.run([CTL, "record", "--json=short", "--sample-interval=1", "--format", "heap_maximum"] + args +
                           ["--"] + command, env=e, capture_output=True, text=True, timeout=300)
        if p.returncode != expect_status:
            fail(f"record {args} {command}: exit status {p.returncode}; stderr: {p.stderr.strip()}")
            return None, None
        heaps = json.loads(p.stdout)["heap_maximum"]
        path = os.path.join(tmp, "expect.json")
        return heaps[0] if len(heaps) == 1 else None, json.load(open(path)) if os.path.exists(path) else None
    finally:
        shutil.rmtree(tmp)


def top(heap):
    return heap["callSites"][0] if heap and heap["callSites"] else {}


def check_caller(heap, expected, what):
    """The top call site is the caller's line, with exactly the block's bytes (and the C library's own
    blocks of no more than a few KiB beside it: the biggest is the one)."""
    want = expected["caller"]
    t = top(heap)
    if (t.get("function"), t.get("line")) != (want["function"], want["line"]) or \
            not t.get("file", "").endswith(("heap-wrappers.c", "heap-wrappers-cxx.cc")):
        fail(f"{what}: the top call site is {t}, expected {want['function']} line {want['line']}")
    elif t["bytes"] < want["bytes"] or t["bytes"] > want["bytes"] + 64 * 1024:
        fail(f"{what}: {want['function']} holds {t['bytes']} bytes, expected {want['bytes']} and its own few")
    else:
        ok(f"{what}: {t['function']} {os.path.basename(t['file'])}:{t['line']}, {t['bytes']} bytes")


def check_no_wrapper(heap, listed, what):
    bad = [s for s in heap["callSites"] if is_wrapper(s, listed)]
    if bad:
        fail(f"{what}: call sites that are allocator wrappers: {bad[:3]}")
    else:
        ok(f"{what}: none of {len(heap['callSites'])} call sites is a wrapper")


def check_wrapper_top(heap, names, what):
    t = top(heap)
    if not any(matches(p, n) for p in names for n in names_of(t)):
        fail(f"{what}: the top call site is {t}, expected the wrapper {names}")
    else:
        ok(f"{what}: the top call site is the wrapper {t.get('function') or t.get('frame')}")


def wrapper_case(mode, keep_names):
    listed = wrappers()
    heap, expected = record([], [WRAPPERS, mode])
    if not heap or not expected:
        fail(f"{mode}: nothing recorded")
        return
    check_caller(heap, expected, mode)
    check_no_wrapper(heap, listed, mode)
    heap, _ = record(["--keep-frames"], [WRAPPERS, mode])
    check_wrapper_top(heap, keep_names, f"{mode} --keep-frames")
    return expected


def case_xmalloc():
    expected = wrapper_case("xmalloc", ["xmalloc"])
    if not expected:
        return
    # The choice is made when reporting: a saved recording folds or keeps alike.
    tmp = tempfile.mkdtemp(prefix="heap-sites.")
    try:
        saved = os.path.join(tmp, "rec.json")
        e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
        subprocess.run([CTL, "record", "--sample-interval=1", "--file", saved, "--", WRAPPERS, "xmalloc"], env=e,
                       check=True, capture_output=True, timeout=300)
        for args, want in (([], expected["caller"]["function"]), (["--keep-frames"], "xmalloc")):
            p = subprocess.run([CTL, "--json=short", "report", "--from", saved, "--format", "heap_maximum"] + args,
                               capture_output=True, text=True, timeout=60)
            t = top(json.loads(p.stdout)["heap_maximum"][0])
            if t.get("function") != want:
                fail(f"report --from {args}: the top call site is {t}, expected {want}")
            else:
                ok(f"report --from {args}: {want}")
        p = subprocess.run([CTL, "report", "--from", saved, "--format", "heap_leaks"], capture_output=True,
                           text=True, timeout=60)
        line = next((l for l in p.stdout.splitlines() if "%" in l and "heap-wrappers.c" in l), "")
        if f"mode_xmalloc  " not in line or "xmalloc  " in line.replace("mode_xmalloc", ""):
            fail(f"report --from as text: the top call site line is {line!r}")
        else:
            ok(f"report --from as text: {line.strip()}")
    finally:
        shutil.rmtree(tmp)


def case_custom():
    heap, expected = record([], [WRAPPERS, "custom"])
    if not heap or not expected:
        fail("custom: nothing recorded")
        return
    if top(heap).get("function") != "my_pool_alloc":
        fail(f"custom: a wrapper of no list is the call site until named; got {top(heap)}")
    else:
        ok("custom: my_pool_alloc is the call site while no list names it")
    for fold in ("my_pool_alloc", "my_pool_*"):
        heap, _ = record(["--fold-frame", fold], [WRAPPERS, "custom"])
        check_caller(heap, expected, f"custom --fold-frame {fold}")


def case_cxx():
    wrapper_case("cxx", ["operator new*", "_Znam*", "_Znwm*"])


def case_glib():
    p = subprocess.run([WRAPPERS, "glib"], capture_output=True, text=True, timeout=60)
    if p.returncode == SKIP:
        print("heap-wrappers was built without glib (scripts/deps installs libglib2.0-dev)")
        sys.exit(SKIP)
    wrapper_case("glib", ["g_malloc"])


def python_symbols(python):
    """The functions python's own executable names in its dynamic symbol table."""
    p = subprocess.run(["nm", "-D", "--defined-only", python], capture_output=True, text=True, timeout=60)
    return {line.split()[2].split("@")[0] for line in p.stdout.splitlines() if len(line.split()) == 3 and
            line.split()[1] in "Tt"}


def case_python():
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK) or subprocess.run([python, "-c", "pass"], capture_output=True).returncode != 0:
        print(f"{python} cannot run here (Debian's python3 package; scripts/deps installs it)")
        sys.exit(SKIP)
    if not shutil.which("nm"):
        print("nm (binutils) is missing: the symbols of python cannot be read")
        sys.exit(SKIP)
    symbols = python_symbols(os.path.realpath(python))
    listed = wrappers()
    # Every object through malloc: pymalloc's arenas are mmap()ed, out of malloc's sight.
    env = {"PYTHONMALLOC": "malloc"}
    program = [python, "-c", "x = [('%d' % i) * 5 for i in range(100000)]; y = {i: [i] for i in range(20000)}"]
    heap, _ = record([], program, env=env)
    if not heap:
        fail("python: nothing recorded")
        return
    check_no_wrapper(heap, listed, "python")
    t = top(heap)
    if t.get("function") not in symbols or is_wrapper(t, listed):
        fail(f"python: the top call site {t} is not a function of python's own")
    else:
        ok(f"python: the top call site is CPython's {t['function']}, {t['bytes']} bytes")
    heap, _ = record(["--keep-frames"], program, env=env)
    kept = [s for s in (heap or {}).get("callSites", []) if is_wrapper(s, listed) and
            any(n.startswith(("_Py", "Py")) for n in names_of(s))]
    if not kept:
        fail("python --keep-frames: no CPython allocator is a call site")
    else:
        ok(f"python --keep-frames: CPython's allocators are sites again: {sorted({s['function'] for s in kept})}")


def case_list():
    """docs/client.md's "Allocator wrappers" item names each wrapper of the code's table in backquotes, and
    no other."""
    text = open(CLIENT_MD).read()
    start = text.find("**Allocator wrappers**")
    if start < 0:
        fail("docs/client.md has no **Allocator wrappers** paragraph")
        return
    ends = [i for i in (text.find("\n- ", start), text.find("\n\n", start)) if i >= 0]
    paragraph = text[start:min(ends)]
    documented = set(re.findall(r"`([^`]+)`", paragraph)) - {"--keep-frames", "--fold-frame FUNCTION", "*"}
    code = set(wrappers())
    if documented != code:
        fail(f"docs/client.md lists {sorted(documented - code)} more and {sorted(code - documented)} less than the code")
    else:
        ok(f"docs/client.md lists the {len(code)} wrappers of the code")


def ctl(args, expect_status=0):
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY)
    p = subprocess.run([CTL] + args, env=e, capture_output=True, text=True, timeout=300)
    if p.returncode != expect_status:
        fail(f"memstrackctl {' '.join(args)}: exit status {p.returncode}, not {expect_status}; "
             f"stderr: {p.stderr.strip()}")
    return p


def save(tmp, name, program_args):
    """record --file of heap-wrappers with every call's stack; (path, expectations)."""
    path, expect = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".expect")
    e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY, HEAP_TARGET_EXPECT=expect)
    subprocess.run([CTL, "record", "--sample-interval=1", "--file", path, "--", WRAPPERS] + program_args, env=e,
                   check=True, capture_output=True, timeout=300)
    return path, json.load(open(expect))


def case_diff():
    tmp = tempfile.mkdtemp(prefix="heap-diff.")
    try:
        a, ea = save(tmp, "a", ["grow", "1"])
        b, eb = save(tmp, "b", ["grow", "11"])
        c, ec = save(tmp, "c", ["grow", "1", "extra"])
        d = json.loads(ctl(["--json=short", "diff", a, b]).stdout)
        grow = ea["grow"]
        change = eb["grow"]["bytes"] - ea["grow"]["bytes"]
        sites = d["sites"]
        if len(sites) != 1 or (sites[0]["function"], sites[0]["line"]) != (grow["function"], grow["line"]) or \
                sites[0]["in"] != "both" or sites[0]["maxBytesChange"] != change or \
                sites[0]["neverFreedBytesChange"] != 0 or sites[0]["a"]["maxBytes"] != grow["bytes"]:
            fail(f"diff: {sites}, expected {grow['function']} line {grow['line']} alone, +{change} bytes")
        else:
            ok(f"diff: {grow['function']} alone, +{change} bytes at the maximum, {d['unchangedSites']} sites the same")
        if not d["a"]["command"] or d["b"]["peakBytes"] - d["a"]["peakBytes"] != change:
            fail(f"diff: the processes compared: {d['a']}, {d['b']}")
        text = ctl(["diff", a, b]).stdout
        rows = [line for line in text.splitlines() if "heap-wrappers.c:" in line]
        if len(rows) != 1 or "grow_site" not in rows[0] or "+10.0 MiB" not in rows[0]:
            fail(f"diff as text: {rows}")
        else:
            ok(f"diff as text: {rows[0].strip()}")
        # A site of one recording alone.
        d = json.loads(ctl(["--json=short", "diff", a, c]).stdout)
        extra = ec["extra"]
        if [(x["function"], x["line"], x["in"], x["b"]["maxBytes"], x["a"]) for x in d["sites"]] != \
                [(extra["function"], extra["line"], "b", extra["bytes"], None)]:
            fail(f"diff with a site of B alone: {d['sites']}")
        elif "(only in B)" not in ctl(["diff", a, c]).stdout:
            fail("diff as text does not mark the site of B alone")
        else:
            ok("diff: a site of B alone is shown as such")
        d = json.loads(ctl(["--json=short", "diff", c, a]).stdout)
        if [x["in"] for x in d["sites"]] != ["a"]:
            fail(f"diff the other way round: {d['sites']}")
        # The same recording twice, and --process by name.
        d = json.loads(ctl(["--json=short", "diff", a, a]).stdout)
        if d["sites"] or d["unchangedSites"] == 0:
            fail(f"diff of a recording with itself: {d['sites']}")
        d = json.loads(ctl(["--json=short", "diff", "--process", "heap-wrappers", a, b]).stdout)
        if len(d["sites"]) != 1:
            fail(f"diff --process heap-wrappers: {d['sites']}")
        ctl(["diff", "--process", "nosuch", a, b], expect_status=1)
        ctl(["diff", "--keep-frames", "snapshot-name"], expect_status=2)
        ok("diff of a recording with itself: nothing; --process by name")
    finally:
        shutil.rmtree(tmp)


def limit_run(args, program_args, expect_status):
    tmp = tempfile.mkdtemp(prefix="heap-limits.")
    try:
        expect = os.path.join(tmp, "expect.json")
        e = dict(os.environ, MEMSTRACKD=MEMSTRACKD, MEMSTRACK_HEAP_LIBRARY=LIBRARY, HEAP_TARGET_EXPECT=expect)
        p = subprocess.run([CTL, "record", "--sample-interval=1"] + args + ["--", WRAPPERS] + program_args, env=e,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != expect_status:
            fail(f"record {args} {program_args}: exit status {p.returncode}, not {expect_status}: {p.stderr.strip()}")
        return p, json.load(open(expect)) if os.path.exists(expect) else None
    finally:
        shutil.rmtree(tmp)


def case_limits():
    p, expected = limit_run(["--max-peak", "5M"], ["grow", "11"], 7)
    said = [line for line in p.stderr.splitlines() if "--max-peak" in line]
    sites = p.stderr.split("its biggest call sites:\n", 1)[-1].splitlines()
    grow = expected["grow"] if expected else {}
    if len(said) != 1 or not sites or f"grow_site  " not in sites[0] or f":{grow.get('line')}" not in sites[0]:
        fail(f"--max-peak 5M: {p.stderr.strip()}")
    else:
        ok(f"--max-peak 5M: exit 7, {sites[0].strip()}")
    if "Heap of pid" not in p.stdout:
        fail("--max-peak: the report was not printed before the verdict")
    limit_run(["--max-peak", "100M"], ["grow", "11"], 0)
    # The command's failure wins; the limit is said all the same.
    p, _ = limit_run(["--max-peak", "5M"], ["grow", "11", "exit=3"], 3)
    if "over --max-peak" not in p.stderr:
        fail("--max-peak with a failing command: the limit was not said")
    limit_run(["--max-peak", "100M"], ["grow", "11", "exit=3"], 3)
    # Never freed: leak_site's 10 blocks of 100000 bytes (and the C and C++ libraries' few) are over 512K,
    # under 2M.
    p, _ = limit_run(["--max-leaked", "512K"], ["grow", "1"], 7)
    sites = p.stderr.split("never freed, over --max-leaked", 1)[-1].split("its biggest call sites:\n", 1)[-1]
    if not sites.splitlines() or "leak_site  " not in sites.splitlines()[0]:
        fail(f"--max-leaked 512K: {p.stderr.strip()}")
    else:
        ok(f"--max-leaked 512K: exit 7, {sites.splitlines()[0].strip()}")
    limit_run(["--max-leaked", "2M"], ["grow", "1"], 0)
    ok("limits above the heap: the command's status")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 8 or sys.argv[1] not in CASES:
        print(__doc__)
        sys.exit(2)
    _, case, CTL, MEMSTRACKD, LIBRARY, WRAPPERS, PRINT, CLIENT_MD = [sys.argv[0], sys.argv[1]] + \
        [os.path.abspath(a) for a in sys.argv[2:]]
    CASES[case]()
    sys.exit(1 if failed else 0)
