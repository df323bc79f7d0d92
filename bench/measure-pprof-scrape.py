#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a profile scrape costs memstrackd and memstrack-metrics, on the live kernel (not a test: the
numbers depend on the machine).

memstrackd (its default source) with loadgen holding PAGES pages (default 1048576: 4 GiB of 4 KiB
pages), memstrack-metrics on a loopback socket passed as systemd passes it. Then ROUNDS rounds, each
of SCRAPES scrapes of /debug/pprof/heap back to back, and beside it a quiet interval as long with no
scrape: memstrackd's CPU time (user + system of all its threads, /proc/PID/stat) over the scrapes less
that over the quiet interval (what the kernel's other events cost it meanwhile), per scrape. Also the
wall time of a scrape as the client sees it, the profile's size, and memstrack-metrics' peak resident
memory (VmHWM) after all of them.

Usage: bench/measure-pprof-scrape.py BUILDDIR [PAGES] [ROUNDS] [SCRAPES]   (root)
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import livelib  # noqa: E402

BUILD = sys.argv[1]
PAGES = int(sys.argv[2]) if len(sys.argv) > 2 else 1048576
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
SCRAPES = int(sys.argv[4]) if len(sys.argv) > 4 else 10
MEMSTRACKD = os.path.join(BUILD, "daemon", "memstrackd")
METRICS = os.path.join(BUILD, "metrics", "memstrack-metrics")
LOADGEN = os.path.join(BUILD, "bench", "loadgen")
WORK = tempfile.mkdtemp(prefix="measure-pprof-scrape.")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_hwm_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def answers(port):
    try:
        return scrape(port)
    except OSError:
        return None


def scrape(port):
    start = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/pprof/heap", timeout=60) as r:
        body = r.read()
        assert r.status == 200, r.status
    return time.monotonic() - start, len(body)


def main():
    children = []
    sock = os.path.join(WORK, "sock")
    daemon, _ = livelib.start_memstrackd(MEMSTRACKD, sock, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(daemon)
    try:
        holder = livelib.Loadgen(LOADGEN, PAGES, "--child", children=children)
        holder.do("alloc", "allocated")
        livelib.wait_for(f"memstrackd to count {PAGES} pages",
                         lambda: livelib.call(sock, "io.memstrack.Status")["trackedPages"] >= PAGES, timeout=300)
        status = livelib.call(sock, "io.memstrack.Status")
        port = free_port()
        exporter = subprocess.Popen(["systemd-socket-activate", "-l", f"127.0.0.1:{port}", METRICS, "--address", sock],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(exporter)
        livelib.wait_for("memstrack-metrics to answer", lambda: answers(port), timeout=60)

        per_scrape, walls, sizes = [], [], []
        for _ in range(ROUNDS):
            cpu0, t0 = livelib.process_cpu_seconds(daemon.pid), time.monotonic()
            for _ in range(SCRAPES):
                wall, size = scrape(port)
                walls.append(wall)
                sizes.append(size)
            cpu1, t1 = livelib.process_cpu_seconds(daemon.pid), time.monotonic()
            time.sleep(t1 - t0)
            cpu2 = livelib.process_cpu_seconds(daemon.pid)
            per_scrape.append(((cpu1 - cpu0) - (cpu2 - cpu1)) / SCRAPES)
        hwm = vm_hwm_bytes(exporter.pid)

        print(f"memstrackd: {status['backend']}, {status['trackedPages']} pages tracked, stacks 1 in "
              f"{status['stackSampleInterval']}, {status['stackNodes']} stack nodes")
        print(f"scrapes: {ROUNDS} rounds of {SCRAPES}, profile {statistics.median(sizes)} bytes gzipped")
        print(f"memstrackd CPU per scrape: median {statistics.median(per_scrape) * 1000:.1f} ms "
              f"(rounds {', '.join(f'{x * 1000:.1f}' for x in per_scrape)})")
        print(f"scrape wall time: median {statistics.median(walls) * 1000:.1f} ms, max {max(walls) * 1000:.1f} ms")
        print(f"memstrack-metrics peak RSS: {hwm / 2**20:.1f} MiB")
        holder.do("free", "freed")
    finally:
        for p in reversed(children):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


if __name__ == "__main__":
    main()
