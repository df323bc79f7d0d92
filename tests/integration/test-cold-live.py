#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cold memory by owner on the live kernel: memstrackd --access with each access source this machine or a
kernel lab guest offers, against tests/cold-fixture.c (two 128 MiB anonymous buffers from two call sites,
hot_site() touched every 50 ms, cold_site() never).

Cases (one per run, by name):
  damon-read   A kdamond someone else runs on physical memory, read through damon:damon_aggregated. With
               thresholds from its own intervals (warm after 2 aggregation intervals, cold after 6), within
               a bound of the cold threshold plus 40 aggregation intervals (DAMON's regions adapt once per
               aggregation), some round has cold_site()'s pages at least 90 % cold and hot_site()'s at most
               10 %. Every file of every kdamond under /sys/kernel/mm/damon reads the same before memstrackd
               starts and after it stopped.
  kpageflags   /proc/kpageflags: what the LRU's flags say of each buffer, read by the test itself, is what
               memstrackd says (within 10 % of the pages); where the flags tell the buffers apart the hot
               one is at most 10 % cold and the other at least 90 %.
  damon-own    A kdamond of memstrackd's own (kernel lab guests: needs DAMON's sysfs interface with paddr
               and no kdamond configured): the same bound as damon-read with its own intervals, its CPU
               time (its kthread's /proc stat) and memstrackd's per round printed. Then the test, as
               someone else would, commits new intervals (counted as a target change, read on) and stops
               the kdamond (counted, the figures dropped and the reason given; memstrackd leaves the
               stopped kdamond as it is).

Exits 77 (skip) with the reason where the case cannot run: not root, no such source. Every wait polls for
a condition against a bound computed from the source's intervals; nothing asserts how fast anything is.

Usage: test-cold-live.py MEMSTRACKD COLD_FIXTURE CASE
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import livelib  # noqa: E402
from livelib import call, fail  # noqa: E402

MEMSTRACKD, FIXTURE, CASE = sys.argv[1:4]
DAMON = "/sys/kernel/mm/damon/admin"
TRACEFS_EVENT = ("/sys/kernel/tracing/events/damon/damon_aggregated", "/sys/kernel/debug/tracing/events/damon/damon_aggregated")
WORK = tempfile.mkdtemp(prefix="test-cold-live.")
children = []


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def read(path):
    with open(path) as f:
        return f.read().strip()


def damon_files():
    """Every readable file under DAMON's sysfs directory, path -> content (or the error reading it)."""
    out = {}
    for top, dirs, files in os.walk(DAMON):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            try:
                with open(path) as f:
                    out[path] = f.read()
            except OSError as e:
                out[path] = f"<{e.strerror}>"
    return out


def kdamonds():
    """The kdamonds as sysfs says: dicts of index, state, pid, operations, aggr_us, sample_us and the
    first target's regions as (start, end) byte ranges."""
    out = []
    try:
        n = int(read(f"{DAMON}/kdamonds/nr_kdamonds"))
    except OSError:
        return None
    for i in range(n):
        k = f"{DAMON}/kdamonds/{i}"
        d = {"index": i, "state": read(f"{k}/state"), "pid": int(read(f"{k}/pid") or 0)}
        c = f"{k}/contexts/0"
        if os.path.exists(f"{c}/operations"):
            d["operations"] = read(f"{c}/operations")
            d["aggr_us"] = int(read(f"{c}/monitoring_attrs/intervals/aggr_us"))
            d["sample_us"] = int(read(f"{c}/monitoring_attrs/intervals/sample_us"))
            regions = []
            t = f"{c}/targets/0/regions"
            if os.path.exists(f"{t}/nr_regions"):
                for r in range(int(read(f"{t}/nr_regions"))):
                    regions.append((int(read(f"{t}/{r}/start")), int(read(f"{t}/{r}/end"))))
            d["regions"] = regions
        out.append(d)
    return out


class Daemon:
    def __init__(self, *extra):
        self.sock = os.path.join(WORK, "sock")
        self.log = open(os.path.join(WORK, "memstrackd.log"), "w+")
        try:
            self.proc, _ = livelib.start_memstrackd(MEMSTRACKD, self.sock, "--state-directory=", "--group=",
                                                    "--user-stacks", "--stack-sample-interval", "1", *extra,
                                                    stdout=self.log, stderr=subprocess.STDOUT)
        except livelib.DaemonExited as e:
            self.log.seek(0)
            fail(f"memstrackd exited with {e.returncode}:\n{self.log.read()}")
        children.append(self.proc)

    def call(self, method, params=None):
        return call(self.sock, method, params)

    def log_tail(self):
        self.log.seek(0)
        return "memstrackd's log:\n" + self.log.read()[-3000:]

    def stop(self):
        self.proc.terminate()
        if self.proc.wait(livelib.WAIT) != 0:
            self.log.seek(0)
            fail(f"memstrackd exited with {self.proc.returncode}:\n{self.log.read()[-3000:]}")


def start_fixture(*args):
    proc = subprocess.Popen([FIXTURE, *args], stdout=subprocess.PIPE, text=True)
    children.append(proc)
    line = proc.stdout.readline()
    if not line:
        fail(f"cold-fixture ended with {proc.wait()} before it was ready")
    info = json.loads(line)
    for site in ("hot", "cold"):
        print(f"{site}_site(): {info[site]['chunks']} chunks of 2 MiB, {info[site]['hugePages']} huge, pfns "
              f"{info[site]['minPfn']}..{info[site]['maxPfn']}", file=sys.stderr)
    return proc, info


def site_pages(reply, site):
    """The pages by class of the stacks through site (hot_site or cold_site), summed."""
    total = {}
    for s in reply["stacks"]:
        if any(site in f for f in s["frames"]):
            for k, v in s["pages"].items():
                total[k] = total.get(k, 0) + v
    return total


def fraction(pages, key):
    classified = sum(pages.get(k, 0) for k in ("hotPages", "warmPages", "coldPages", "unknownPages", "newerPages"))
    return pages.get(key, 0) / classified if classified else 0.0


def describe(pages):
    return ", ".join(f"{k[:-5]} {v}" for k, v in pages.items())


def poll_cold(d, bound_s, interval_s):
    """Cold replies every interval until hot_site()'s pages are at most 10 % cold and cold_site()'s at least
    90 %, within bound_s; fails with the figures of every round otherwise. Returns (seconds, reply)."""
    start = time.monotonic()
    seen = []
    last_round = None
    r = {}
    while time.monotonic() - start < bound_s:
        time.sleep(interval_s)
        r = d.call("io.memstrack.Cold", {"limit": 5, "stacks": 100})
        if r["source"] is None:
            fail(f"no access source: {r['reason']}\n{d.log_tail()}")
        if r["roundTimestampUsec"] is None or r["roundTimestampUsec"] == last_round:
            continue
        last_round = r["roundTimestampUsec"]
        hot, cold = site_pages(r, "hot_site"), site_pages(r, "cold_site")
        t = time.monotonic() - start
        if not hot or not cold:
            names = [s["frames"][-4:] for s in r["stacks"][:3]]
            seen.append(f"  {t:5.0f} s: the fixture's call sites are not among the stacks yet: {names}")
            continue
        seen.append(f"  {t:5.0f} s: hot_site {describe(hot)}; cold_site {describe(cold)}")
        print(seen[-1], file=sys.stderr)
        if fraction(hot, "coldPages") <= 0.10 and fraction(cold, "coldPages") >= 0.90:
            return t, r
    fail(f"within {bound_s:.0f} s no round had cold_site() >= 90 % cold and hot_site() <= 10 %:\n" + "\n".join(seen) +
         f"\nthe last reply: {r.get('source')} {r.get('detail')} {r.get('reason')} {r.get('counters')}\n{d.log_tail()}")


def wait_cold(d, what, condition, bound_s):
    """The first Cold reply within bound_s for which condition holds; fails with the last one."""
    deadline = time.monotonic() + bound_s
    while True:
        r = d.call("io.memstrack.Cold", {"limit": 5, "stacks": 100})
        if condition(r):
            return r
        if time.monotonic() > deadline:
            fail(f"{what}: not within {bound_s:.0f} s; the last reply: {r['source']} {r['reason']} {r['counters']}")
        time.sleep(0.5)


def case_damon_read():
    if os.geteuid() != 0:
        skip("needs root (perf events on a kdamond, /proc/PID/pagemap)")
    if not any(os.path.exists(p) for p in TRACEFS_EVENT):
        skip("the kernel has no damon:damon_aggregated tracepoint (no DAMON)")
    ks = kdamonds()
    if ks is None:
        skip("the kernel has no DAMON sysfs interface")
    running = [k for k in ks if k["state"] == "on" and k.get("operations") == "paddr" and k["pid"] > 0]
    if not running:
        skip("no kdamond monitors physical memory here (state on, operations paddr): nothing to read")
    k = running[0]
    before = damon_files()
    aggr_s, sample_s = k["aggr_us"] / 1e6, k["sample_us"] / 1e6
    warm_s, cold_s = max(1, round(2 * aggr_s)), max(2, round(6 * aggr_s))
    bound_s = cold_s + 40 * aggr_s
    print(f"kdamond.{k['index']} (pid {k['pid']}): sampling {sample_s} s, aggregating {aggr_s} s; warm after "
          f"{warm_s} s, cold after {cold_s} s, bound {bound_s:.0f} s", file=sys.stderr)
    d = Daemon("--access", "damon-read", "--warm-after", str(warm_s), "--cold-after", str(cold_s),
               "--access-interval", "1")
    args = []
    if k["regions"]:
        # Only what it monitors: the first region of its target, in pfns.
        start, end = k["regions"][0]
        args = ["--pfn-range", f"{start // 4096}-{end // 4096 - 1}"]
    fixture, _ = start_fixture(*args)
    t, r = poll_cold(d, bound_s, aggr_s)
    if r["source"] != "damon-read" or r["kdamondPid"] != k["pid"] or r["ownKdamond"]:
        fail(f"Cold names another source: {r['source']} {r['kdamondPid']} own {r['ownKdamond']}")
    print(f"classified within {t:.0f} s (bound {bound_s:.0f} s); round walk {r['roundDurationUsec']} us; "
          f"counters {r['counters']}", file=sys.stderr)
    fixture.kill()
    fixture.wait()
    d.stop()
    after = damon_files()
    changed = [p for p in sorted(set(before) | set(after)) if before.get(p) != after.get(p)]
    if changed:
        fail("the system's kdamond changed:\n" + "\n".join(f"  {p}: {before.get(p)!r} -> {after.get(p)!r}"
                                                           for p in changed))
    print(f"{len(before)} files under {DAMON} unchanged", file=sys.stderr)


KPF_REFERENCED, KPF_LRU, KPF_ACTIVE = 2, 5, 6


def case_kpageflags():
    if os.geteuid() != 0:
        skip("needs root (/proc/kpageflags, /proc/PID/pagemap)")
    if not os.path.exists("/proc/kpageflags"):
        skip("the kernel has no /proc/kpageflags")
    warm_s, cold_s, interval_s = 4, 12, 2
    d = Daemon("--access", "kpageflags", "--warm-after", str(warm_s), "--cold-after", str(cold_s),
               "--access-interval", str(interval_s), "--kpageflags-budget", "1000000")
    fixture, info = start_fixture("--pool", "1")
    started = time.monotonic()
    # Past the cold threshold since the buffers were made, and two rounds after it.
    time.sleep(cold_s + 2 * interval_s + 1)
    # The kernel's word on each buffer's huge pages (their heads' flags): not on an LRU list (a new page
    # still in a CPU's batch on its way to one): no word, memstrackd's "unknown"; referenced or active:
    # used, "hot"; neither: not seen used since it was allocated, "cold" past the threshold.
    with open("/proc/kpageflags", "rb") as f:
        def word(pfn):
            f.seek(pfn * 8)
            v = struct.unpack("Q", f.read(8))[0]
            if not v >> KPF_LRU & 1:
                return "unknownPages"
            return "hotPages" if v >> KPF_REFERENCED & 1 or v >> KPF_ACTIVE & 1 else "coldPages"
        kernel = {}
        for site in ("hot", "cold"):
            words = [word(p) for p in info[site]["pfns"]]
            kernel[site] = {k: words.count(k) / len(words) for k in ("hotPages", "coldPages", "unknownPages")}
    r = d.call("io.memstrack.Cold", {"limit": 5, "stacks": 100})
    if r["source"] != "kpageflags":
        fail(f"Cold names another source: {r['source']} ({r['reason']})")
    for site in ("hot", "cold"):
        pages = site_pages(r, f"{site}_site")
        said = ", ".join(f"{k[:-5]} {v:.0%}" for k, v in kernel[site].items())
        print(f"{site}_site(): the kernel's flags: {said}; memstrackd: {describe(pages)} "
              f"({time.monotonic() - started:.0f} s after the buffers)", file=sys.stderr)
        for k, v in kernel[site].items():
            if abs(fraction(pages, k) - v) > 0.10:
                fail(f"{site}_site(): memstrackd says {fraction(pages, k):.0%} {k[:-5]}, the kernel's flags {v:.0%}")
    kernel = {site: kernel[site]["hotPages"] for site in kernel}
    if kernel["hot"] >= 0.9:
        if fraction(site_pages(r, "hot_site"), "coldPages") > 0.10 or \
           fraction(site_pages(r, "cold_site"), "coldPages") < 0.90:
            fail("the flags tell the buffers apart and memstrackd does not")
    else:
        print("The LRU's flags do not tell the buffers apart on this kernel: an anonymous page is marked "
              "referenced or active only when reclaim scans it, and nothing reclaims here; memstrackd says "
              "what the flags say.", file=sys.stderr)
    fixture.kill()
    fixture.wait()
    d.stop()


def case_damon_own():
    if os.geteuid() != 0:
        skip("needs root (DAMON's sysfs interface, perf events)")
    ks = kdamonds()
    if ks is None:
        skip("the kernel has no DAMON sysfs interface (CONFIG_DAMON_SYSFS)")
    if ks:
        skip("kdamonds are configured here: memstrackd makes its own only where none is")
    aggr_ms, sample_ms = 1000, 100
    warm_s, cold_s = 2, 6
    bound_s = cold_s + 40 * aggr_ms / 1000
    d = Daemon("--access", "damon", "--warm-after", str(warm_s), "--cold-after", str(cold_s),
               "--access-interval", "1", "--damon-sample-interval", str(sample_ms),
               "--damon-aggregation-interval", str(aggr_ms))
    r = d.call("io.memstrack.Cold")
    if r["source"] is None:
        d.stop()
        skip(f"memstrackd could not start a kdamond: {r['reason']}")
    if r["source"] != "damon" or not r["ownKdamond"]:
        fail(f"expected memstrackd's own kdamond, got {r['source']} own {r['ownKdamond']}")
    pid = r["kdamondPid"]
    cpu0, daemon0, t0 = livelib.process_cpu_seconds(pid), livelib.process_cpu_seconds(d.proc.pid), time.monotonic()
    rounds0 = r["counters"]["rounds"]
    fixture, _ = start_fixture("--pool", "2")
    t, r = poll_cold(d, bound_s, aggr_ms / 1000)
    cpu1, daemon1, t1 = livelib.process_cpu_seconds(pid), livelib.process_cpu_seconds(d.proc.pid), time.monotonic()
    rounds = max(1, r["counters"]["rounds"] - rounds0)
    print(f"classified within {t:.0f} s (bound {bound_s:.0f} s)", file=sys.stderr)
    print(f"kdamond {pid}: {cpu1 - cpu0:.2f} s of CPU in {t1 - t0:.0f} s ({100 * (cpu1 - cpu0) / (t1 - t0):.1f} % of a "
          f"CPU; the reply says {r['kdamondCpuUsec'] / 1e6:.2f} s in {r['kdamondSeconds']} s); memstrackd "
          f"{daemon1 - daemon0:.2f} s over {rounds} rounds, {1000 * (daemon1 - daemon0) / rounds:.1f} ms a round "
          f"(the round's walk {r['roundDurationUsec']} us)", file=sys.stderr)
    fixture.kill()
    fixture.wait()
    d.stop()
    left = kdamonds()
    if left:
        fail(f"memstrackd left kdamonds behind: {left}")
    print("memstrackd's kdamond stopped and removed", file=sys.stderr)

    # Again, and someone else changes the kdamond's intervals (a commit of new ones): counted, read on with
    # the new ones.
    d = Daemon("--access", "damon", "--warm-after", str(warm_s), "--cold-after", str(cold_s),
               "--access-interval", "1", "--damon-sample-interval", str(sample_ms),
               "--damon-aggregation-interval", str(aggr_ms))
    wait_cold(d, "memstrackd's kdamond again", lambda r: r["source"] == "damon" and r["roundTimestampUsec"],
              10 + 6 * aggr_ms / 1000)
    k = f"{DAMON}/kdamonds/0"
    with open(f"{k}/contexts/0/monitoring_attrs/intervals/aggr_us", "w") as f:
        f.write(str(2 * aggr_ms * 1000))
    with open(f"{k}/state", "w") as f:
        f.write("commit")
    wait_cold(d, "the change counted", lambda r: r["counters"]["targetChanges"] >= 1 and r["source"] == "damon"
              and r["intervalUsec"] == 2 * aggr_ms * 1000, 10 + 6 * aggr_ms / 1000)
    # ... then stops it: counted, the figures dropped, said why; memstrackd leaves it as the stopper did.
    with open(f"{k}/state", "w") as f:
        f.write("off")
    r = wait_cold(d, "the stop counted", lambda r: r["counters"]["kdamondStops"] >= 1 and r["source"] is None,
                  10 + 6 * aggr_ms / 1000)
    kept = sum(r["total"][k] for k in ("hotPages", "warmPages", "coldPages", "unknownPages", "newerPages"))
    if kept or r["tasks"]:
        fail(f"figures kept after the kdamond stopped: {r['total']}, {r['tasks'][:2]}")
    print(f"stopped by someone else: {r['reason']}", file=sys.stderr)
    d.stop()
    left = kdamonds()
    if len(left or []) != 1 or left[0]["state"] != "off":
        fail(f"memstrackd changed the kdamond someone else stopped: {left}")
    with open(f"{DAMON}/kdamonds/nr_kdamonds", "w") as f:
        f.write("0")


def main():
    cases = {"damon-read": case_damon_read, "kpageflags": case_kpageflags, "damon-own": case_damon_own}
    if CASE not in cases:
        fail(f"no case {CASE}; cases: {', '.join(cases)}")
    try:
        cases[CASE]()
    finally:
        livelib.kill_children(children, WORK)
    print("all cases passed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
