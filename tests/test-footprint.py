#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackctl footprint is exact against binutils.

Usage: test-footprint.py MEMSTRACKCTL PROGRAM RELOCATABLE NODEBUG
       test-footprint.py MEMSTRACKCTL --vmlinux

For each ELF file: --by section lists every allocated section with the size `size -A` gives it, and
its class totals are `size`'s Berkeley figures (text = text + rodata); --by symbol lists exactly the
(name, size) pairs of `nm --size-sort -S` (absolute symbols aside); --by directory puts each symbol of
tests/footprint/mm/alloc.c under .../footprint/mm and of fs/ext/file.c under .../footprint/fs/ext, and
its rows add up to the sections' total. Files without DWARF keep the section and symbol views. Missing,
non-ELF, truncated, compressed and debug-only (objcopy --only-keep-debug) files are errors with exit
status 1. With --vmlinux, the same section and symbol
checks on /usr/lib/debug/boot/vmlinux-* (linux-image-amd64-dbg), or 77 when it is not installed.
"""
import collections
import glob
import json
import lzma
import os
import struct
import subprocess
import sys
import tempfile

failed = False


def fail(msg):
    global failed
    failed = True
    print("FAIL:", msg)


def ok(msg):
    print("ok", msg)


def footprint(ctl, *args, check=True):
    p = subprocess.run([ctl, "--json=short", "footprint", *args], capture_output=True, text=True)
    if check:
        if p.returncode != 0:
            raise SystemExit(f"FAIL: memstrackctl footprint {' '.join(args)}: {p.returncode} {p.stderr}")
        return json.loads(p.stdout)
    return p


def size_sysv(path):
    """Section name -> size, from size -A."""
    out = subprocess.run(["size", "-A", path], capture_output=True, text=True, check=True).stdout
    sections = {}
    for line in out.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] != "Total":
            sections.setdefault(parts[0], []).append(int(parts[1]))
    return sections


def size_berkeley(path):
    out = subprocess.run(["size", "-B", path], capture_output=True, text=True, check=True).stdout
    text, data, bss = (int(x) for x in out.splitlines()[1].split()[:3])
    return text, data, bss


def nm_sizes(path):
    """Counter of (name, size) of nm --size-sort -S, without absolute symbols."""
    out = subprocess.run(["nm", "--size-sort", "-S", path], capture_output=True, text=True).stdout
    c = collections.Counter()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] not in ("a", "A", "U", "N", "n"):
            c[(parts[3], int(parts[1], 16))] += 1
    return c


def check_sections(ctl, path):
    name = os.path.basename(path)
    j = footprint(ctl, "--by", "section", path)
    want = size_sysv(path)
    seen = collections.defaultdict(list)
    for s in j["sections"]:
        seen[s["name"]].append(s["size"])
    for sec, sizes in seen.items():
        if sorted(sizes) != sorted(want.get(sec, [])):
            fail(f"{name}: section {sec} is {sizes}, size -A says {want.get(sec)}")
    for sec in (".text", ".data", ".bss", ".rodata"):
        if sec in want and sec not in seen:
            fail(f"{name}: section {sec} of size -A is missing")
    t = j["totals"]
    text, data, bss = size_berkeley(path)
    if (t["text"] + t["rodata"], t["data"], t["bss"]) != (text, data, bss):
        fail(f"{name}: text+rodata/data/bss {t['text']}+{t['rodata']}/{t['data']}/{t['bss']}, "
             f"size says {text}/{data}/{bss}")
    if t["total"] != sum(s["size"] for s in j["sections"]):
        fail(f"{name}: the total {t['total']} is not the sum of the sections")
    if j["notShown"] != 0:
        fail(f"{name}: notShown {j['notShown']} without --limit")
    ok(f"{name}: {len(seen)} sections as size -A, text {t['text']} rodata {t['rodata']} data {t['data']} "
       f"bss {t['bss']} as size")
    return j


def check_symbols(ctl, path):
    name = os.path.basename(path)
    j = footprint(ctl, "--by", "symbol", path)
    got = collections.Counter((s["name"], s["size"]) for s in j["symbols"])
    want = nm_sizes(path)
    if got != want:
        fail(f"{name}: symbols differ from nm --size-sort -S: only ours {sorted((got - want).items())[:10]}, "
             f"only nm's {sorted((want - got).items())[:10]}")
    sizes = [s["size"] for s in j["symbols"]]
    if sizes != sorted(sizes, reverse=True):
        fail(f"{name}: symbols are not largest first")
    ok(f"{name}: {sum(got.values())} symbols as nm --size-sort -S")
    return j


MM = ["mm_alloc_pages", "mm_table", "mm_zeroes", "mm_message", "mm_counter", "calls"]
EXT = ["ext_file_read", "main", "ext_filedata", "ext_filebss", "ext_filetable"]


def check_directories(ctl, path, symbols):
    name = os.path.basename(path)
    by_name = {}
    for s in symbols["symbols"]:
        # A function's static local is "calls.0" from gcc, "mm_alloc_pages.calls" from clang.
        parts = s["name"].split(".")
        by_name.setdefault(parts[0] if len(parts) == 1 or parts[-1].isdigit() else parts[-1], s)
    for sym in MM + EXT:
        s = by_name.get(sym)
        want = "footprint/mm" if sym in MM else "footprint/fs/ext"
        if not s:
            fail(f"{name}: no symbol {sym}")
        elif not (s["directory"] or "").endswith(want):
            fail(f"{name}: {sym} is in {s['directory']}, not .../{want}")
    mm_dir = by_name["mm_table"]["directory"]
    ext_dir = by_name["ext_filedata"]["directory"]
    ok(f"{name}: the test's symbols in {mm_dir} and {ext_dir}")

    j = footprint(ctl, path)
    rows = {d["directory"]: d for d in j["directories"]}
    if sum(d["total"] for d in j["directories"]) != j["totals"]["total"]:
        fail(f"{name}: directories add up to {sum(d['total'] for d in j['directories'])}, "
             f"not the total {j['totals']['total']}")
    for d, names in ((mm_dir, MM), (ext_dir, EXT)):
        want = sum(s["size"] for s in symbols["symbols"] if s["directory"] == d)
        want_n = sum(1 for s in symbols["symbols"] if s["directory"] == d)
        if d not in rows or rows[d]["total"] != want or rows[d]["symbols"] != want_n:
            fail(f"{name}: directory {d} is {rows.get(d)}, its symbols add up to {want} in {want_n}")
    totals = [d["total"] for d in j["directories"]]
    if totals != sorted(totals, reverse=True):
        fail(f"{name}: directories are not largest first")
    # --depth: one level less merges mm and fs into .../footprint; two less, into .../footprint's parent
    # (both at depth of "footprint").
    depth = mm_dir.count("/")
    parent = mm_dir.rsplit("/", 1)[0]
    j = footprint(ctl, "--depth", str(depth), path)
    rows = {d["directory"]: d for d in j["directories"]}
    want = sum(s["size"] for s in symbols["symbols"] if s["directory"] in (mm_dir, ext_dir))
    if parent not in rows or rows[parent]["total"] != want:
        fail(f"{name}: --depth {depth}: {parent} is {rows.get(parent)}, not {want} bytes")
    else:
        ok(f"{name}: directories add up, --depth {depth} gives {parent} with {want} bytes")
    j = footprint(ctl, "--limit", "1", path)
    if len(j["directories"]) != 1 or j["notShown"] < 1:
        fail(f"{name}: --limit 1 gave {len(j['directories'])} rows, notShown {j['notShown']}")


def check_errors(ctl, good):
    with tempfile.TemporaryDirectory() as tmp:
        notelf = os.path.join(tmp, "notelf")
        with open(notelf, "w") as f:
            f.write("not an ELF file at all\n")
        data = open(good, "rb").read()
        cases = [("missing", os.path.join(tmp, "missing"), "No such file"),
                 ("not ELF", notelf, "not an ELF file"),
                 ("directory", tmp, "not a regular file")]
        for cut in (40, len(data) // 2, len(data) - 16):
            p = os.path.join(tmp, f"trunc{cut}")
            with open(p, "wb") as f:
                f.write(data[:cut])
            cases.append((f"truncated to {cut} bytes", p, "truncated"))
        # Whole headers, but a section's bytes said to lie past the end (ELF64 little-endian offsets).
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        cut = bytearray(data)
        for i in range(1, shnum):
            h = shoff + i * shentsize
            if struct.unpack_from("<I", cut, h + 4)[0] == 1 and struct.unpack_from("<Q", cut, h + 0x20)[0] > 0:
                struct.pack_into("<Q", cut, h + 0x18, len(data) - 4)
                break
        p = os.path.join(tmp, "section-past-end")
        with open(p, "wb") as f:
            f.write(cut)
        cases.append(("a section past the end", p, "a section past its end"))
        packed = os.path.join(tmp, "packed.ko.xz")
        with open(packed, "wb") as f:
            f.write(lzma.compress(data))
        cases.append(("xz-compressed", packed, "decompress it first"))
        debug = os.path.join(tmp, "only-debug")
        if subprocess.run(["objcopy", "--only-keep-debug", good, debug]).returncode == 0:
            cases.append(("objcopy --only-keep-debug", debug, "separate debug info file"))
        for what, p, words in cases:
            r = footprint(ctl, good, p, check=False)
            if r.returncode != 1 or words not in r.stderr or p not in r.stderr:
                fail(f"{what}: exit {r.returncode}, stderr {r.stderr!r}, expected 1 and '{words}'")
            else:
                ok(f"{what}: {r.stderr.strip()}")
        r = footprint(ctl, "--by", "nothing", good, check=False)
        if r.returncode != 2:
            fail(f"--by nothing: exit {r.returncode}")
        r = footprint(ctl, "--depth", "0", good, check=False)
        if r.returncode != 2:
            fail(f"--depth 0: exit {r.returncode}")
        r = subprocess.run([ctl, "footprint"], capture_output=True, text=True)
        if r.returncode != 2:
            fail(f"footprint without a file: exit {r.returncode}")


def main():
    ctl = sys.argv[1]
    if sys.argv[2:] == ["--vmlinux"]:
        found = sorted(glob.glob("/usr/lib/debug/boot/vmlinux-*"))
        if not found:
            print("SKIP: no /usr/lib/debug/boot/vmlinux-* (linux-image-amd64-dbg is not installed)")
            return 77
        vmlinux = found[-1]
        check_sections(ctl, vmlinux)
        check_symbols(ctl, vmlinux)
        j = footprint(ctl, "--limit", "20", vmlinux)
        dirs = [d["directory"] for d in j["directories"]]
        if not any(d == "mm" or d.endswith("/mm") for d in footprint(ctl, "--depth", "1", vmlinux)["directories"]
                   for d in [d["directory"]]):
            fail(f"{vmlinux}: no mm directory at depth 1; the largest are {dirs}")
        ok(f"{vmlinux}: largest directories {dirs[:5]}")
        return 1 if failed else 0

    program, relocatable, nodebug = sys.argv[2:5]
    for path in (program, relocatable):
        check_sections(ctl, path)
        symbols = check_symbols(ctl, path)
        check_directories(ctl, path, symbols)

    check_sections(ctl, nodebug)
    symbols = check_symbols(ctl, nodebug)
    if any(s["directory"] is not None for s in symbols["symbols"]):
        fail("symbols of a file without DWARF have directories")
    j = footprint(ctl, nodebug)
    if j["files"][0]["debugInfo"] or "[no debug info]" not in [d["directory"] for d in j["directories"]]:
        fail(f"without DWARF: {j['files']} {j['directories']}")
    else:
        ok("without DWARF: every symbol under [no debug info]")

    # Modules: the relocatable as a module of the program, counted per file and named in brackets.
    j = footprint(ctl, "--by", "symbol", program, relocatable)
    names = [f["name"] for f in j["files"]]
    alone = [footprint(ctl, "--by", "section", p)["totals"] for p in (program, relocatable)]
    if names != [os.path.basename(program), "footprint-target"]:
        fail(f"files are named {names}")
    if j["totals"]["total"] != alone[0]["total"] + alone[1]["total"]:
        fail(f"two files total {j['totals']['total']}, alone {alone[0]['total']} + {alone[1]['total']}")
    mods = [s for s in j["symbols"] if s["name"] == "mm_zeroes"]
    if sorted(s["file"] for s in mods) != sorted(names):
        fail(f"mm_zeroes in {mods}")
    text = subprocess.run([ctl, "footprint", "--by", "symbol", program, relocatable], capture_output=True,
                          text=True).stdout
    if "mm_zeroes [footprint-target]" not in text:
        fail("the text view does not name the module of its symbols:\n" + text)
    else:
        ok("a module's symbols carry its name; totals add up per file")

    check_errors(ctl, program)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
