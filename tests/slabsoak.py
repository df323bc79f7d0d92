# SPDX-License-Identifier: MIT
"""The slab soak's parts, shared by tests/integration/test-slab-soak.py (a couple of minutes, asserts) and
bench/slab-soak.py (30 minutes, figures): ordinary churn (short processes, mmap/munmap, pipes, eventfds),
the kernel's own view of the slab tracepoints in a tracefs instance of our own, and /proc/slabinfo."""

import os
import re
import subprocess
import sys
import tempfile
import time

# One churn worker: each round runs /bin/true (fork, exec, exit: task, mm, creds, pids), maps and unmaps
# anonymous memory (maple tree nodes, VMAs), and opens and closes a pipe and an eventfd; it holds nothing
# from one round to the next. ROUNDS_PER_SECOND paces it so that the tracer keeps up on a small machine.
CHURN = r"""
import mmap, os, subprocess, sys, time
pace = 1.0 / float(sys.argv[1])
print("started", flush=True)
while True:
    start = time.monotonic()
    subprocess.run(["/bin/true"])
    for _ in range(8):
        m = mmap.mmap(-1, 65536)
        m[0] = 1
        m2 = mmap.mmap(-1, 3 * 4096)
        m2[0] = 1
        m.close()
        m2.close()
    r, w = os.pipe()
    os.write(w, b"x" * 100)
    os.read(r, 100)
    os.close(r)
    os.close(w)
    os.close(os.eventfd(0))
    time.sleep(max(0.0, pace - (time.monotonic() - start)))
"""


class Churn:
    """workers churn processes, each ROUNDS a second; stop() ends them."""

    def __init__(self, workers=2, rounds=50):
        self.procs = []
        for _ in range(workers):
            p = subprocess.Popen([sys.executable, "-c", CHURN, str(rounds)], stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            if p.stdout.readline().strip() != "started":
                self.stop()
                raise RuntimeError("a churn worker did not start")

    @property
    def pids(self):
        return [p.pid for p in self.procs]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def read_slabinfo(path="/proc/slabinfo"):
    """{cache: (active objects, objects per slab, bytes per object)}."""
    caches = {}
    with open(path) as f:
        for line in f:
            if line.startswith("slabinfo") or line.startswith("#"):
                continue
            words = line.split()
            if len(words) >= 6:
                caches[words[0]] = (int(words[1]), int(words[4]), int(words[3]))
    return caches


SIZE_CLASS = re.compile(r"^\[size-([0-9]+)\]$")


def active_objects(slabinfo, cache):
    """What /proc/slabinfo counts active of a cache memstrackd names: the cache itself, or for "[size-N]" (the
    objects of a cache the kernel's tracepoints do not name, by their size) every cache of objects of N bytes."""
    m = SIZE_CLASS.match(cache or "")
    if not m:
        return slabinfo.get(cache, (0, 0, 0))[0]
    return sum(active for active, _, size in slabinfo.values() if size == int(m.group(1)))


TRACEFS = "/sys/kernel/tracing"
EVENT = re.compile(r" (kmem_cache_alloc|kmem_cache_free|kfree): call_site=(\S+) ptr=(?:0x)?([0-9a-f]+)(?:.* name=(\S+))?")


def kernel_slab_views(seconds, buffer_kb=65536):
    """What the kernel's own kmem_cache_alloc, kmem_cache_free and kfree tracepoints show for seconds, in a
    tracefs instance of ours with raw pointers (kfree too: an object of a named cache may be freed with it,
    as pidfs's attributes are by put_pid() on 6.18, and that free is not hidden): ({cache: [allocs, frees, lost]}, {call site: [allocs, frees, lost]}),
    lost counting allocations of a pointer allocated before and not freed since (a free that fired no
    tracepoint), charged to the cache and the call site of the allocation whose free was hidden. Call sites
    are as memstrackd names them (function+offset). The caches are empty where the kernel's
    kmem_cache_alloc names none (before 6.18): by pointers alone the view cannot tell which cache lost the
    frees, but the call sites still say. None when the instance's buffer overran (the view would count what
    it dropped) or cannot be made."""
    inst = tempfile.mktemp(prefix="slabsoak-", dir=os.path.join(TRACEFS, "instances"))
    try:
        os.mkdir(inst)
    except OSError:
        return None
    try:
        def write(rel, value):
            with open(os.path.join(inst, rel), "w") as f:
                f.write(value)
        write("buffer_size_kb", str(buffer_kb))
        # Raw pointers where an instance may choose; elsewhere (5.10: a top-level option only) hashed ones,
        # which compare equal exactly when the pointers do.
        try:
            write("options/hash-ptr", "0")
        except OSError:
            pass
        write("events/kmem/kmem_cache_alloc/enable", "1")
        write("events/kmem/kmem_cache_free/enable", "1")
        write("events/kmem/kfree/enable", "1")
        time.sleep(seconds)
        write("tracing_on", "0")
        for cpu in os.listdir(os.path.join(inst, "per_cpu")):
            with open(os.path.join(inst, "per_cpu", cpu, "stats")) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key.strip() in ("overrun", "dropped events") and int(value.split()[0]) > 0:
                        return None
        by_cache, by_site, live = {}, {}, {}
        # Task names are any bytes (another test names one "bad\xff\xfe").
        with open(os.path.join(inst, "trace"), errors="replace") as f:
            for line in f:
                m = EVENT.search(line)
                if not m:
                    continue
                kind, site, ptr, cache = m.groups()
                site = site.split("/", 1)[0]
                if kind == "kmem_cache_alloc":
                    # The counters of this allocation's cache (when named) and call site.
                    counts = (by_cache.setdefault(cache, [0, 0, 0]) if cache else None,
                              by_site.setdefault(site, [0, 0, 0]))
                    for c in counts:
                        if c is not None:
                            c[0] += 1
                    for c in live.get(ptr) or ():
                        if c is not None:
                            c[2] += 1
                    live[ptr] = counts
                else:
                    if cache:
                        by_cache.setdefault(cache, [0, 0, 0])[1] += 1
                    if live.get(ptr):
                        live[ptr][1][1] += 1
                    live[ptr] = None
        return by_cache, by_site
    finally:
        try:
            with open(os.path.join(inst, "tracing_on"), "w") as f:
                f.write("0")
            for event in ("kmem_cache_alloc", "kmem_cache_free", "kfree"):
                with open(os.path.join(inst, "events/kmem", event, "enable"), "w") as f:
                    f.write("0")
        except OSError:
            pass
        os.rmdir(inst)


def kernel_slab_view(seconds, buffer_kb=65536):
    """kernel_slab_views()'s caches alone."""
    views = kernel_slab_views(seconds, buffer_kb)
    return views and views[0]


def rows_by_name(reply):
    return {r["name"]: r for r in reply["rows"]}
