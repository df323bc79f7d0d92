#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in memstrackd for client tests that need no kernel and no root: it serves fixed io.memstrack
# answers (Status, Tasks, Modules, StackTree, Units, Top with "more", Reset) on a unix socket, with
# varlink's NUL-terminated JSON framing. Units can be switched off (--no-units): Units then answers
# MethodNotFound and Top leaves "units" out, as a memstrackd from before units does. Every call is
# appended to --log as one JSON line, so a test can check what the client asked for.
# --stack-sample-interval N makes Status and StackTree say stacks are sampled 1 in N pages (the eBPF
# source's exact mode); without it they say nothing, as a memstrackd from before sampling. Leaks answers
# every other call with LimitExceeded "leaksPace" (wait 0.2 s), as memstrackd pacing it does.
#
# OomKills answers one kill of loadgen; Slab two call sites (or caches); BootPhase the snapshot document in
# the file --boot-snapshot names.
# History answers 600 one-second buckets ending now: a ramp to 64 MiB with a 96 MiB spike 200 s ago.
# --moving makes loadgen's pages grow by a page and postgres's shrink by one at each Top reply.
#
# Usage: fake-memstrackd.py --socket PATH --log FILE [--no-units] [--stack-sample-interval N] [--moving]
# Prints READY once it listens; ends on SIGTERM.

import argparse
import json
import os
import socket
import threading
import time

PAGE_SIZE = 4096

TASKS = [
    {"pid": 4242, "comm": "loadgen", "cmdline": "loadgen --pages 16384", "currentPages": 16384,
     "peakPages": 16384, "allocs": 16400, "frees": 16, "baselinePages": 0, "exited": False, "parentPid": 1},
    {"pid": 812, "comm": "postgres", "cmdline": "postgres: writer", "currentPages": 2048, "peakPages": 4096,
     "allocs": 9000, "frees": 6952, "baselinePages": 0, "exited": False, "parentPid": 1},
    # postgres's child: the tasks tree hangs it below 812.
    {"pid": 815, "comm": "postgres", "cmdline": "postgres: checkpointer", "currentPages": 100, "peakPages": 120,
     "allocs": 200, "frees": 100, "baselinePages": 0, "exited": True, "parentPid": 812},
]
MODULES = [
    {"name": "vmlinux", "currentPages": 18000, "peakPages": 19000, "loaded": True},
    {"name": "ext4", "currentPages": 432, "peakPages": 500, "loaded": True},
]
UNITS = [
    {"name": "loadgen-test.service", "cgroup": "/system.slice/loadgen-test.service", "currentPages": 16384,
     "peakPages": 16384, "tasks": 1, "live": True,
     "stacks": [(["__alloc_pages+0x1a1", "do_anonymous_page+0x12c", "asm_exc_page_fault+0x22"], 16384)]},
    {"name": "postgresql.service", "cgroup": "/system.slice/postgresql.service", "currentPages": 2048,
     "peakPages": 4096, "tasks": 3, "live": True,
     "stacks": [(["__alloc_pages+0x1a1", "ext4_write_begin+0x10b", "ksys_write+0x66"], 2048)]},
    {"name": "backup.service", "cgroup": "/system.slice/backup.service", "currentPages": 440,
     "peakPages": 900, "tasks": 0, "live": False, "stacks": []},
]

# In Top's units only: a unit gone by the time the client asks for its stacks (StackTree: NoSuchUnit).
# A unit two slices deep (the units tree: user.slice > user-1000.slice > session-3.scope).
SESSION = {"name": "session-3.scope", "cgroup": "/user.slice/user-1000.slice/session-3.scope", "currentPages": 1000,
           "peakPages": 1000, "tasks": 2, "live": True, "stacks": []}
GHOST = {"name": "ghost.service", "cgroup": "/system.slice/ghost.service", "currentPages": 10, "peakPages": 10,
         "tasks": 0, "live": False, "stacks": []}


def unit_json(u, stacks):
    j = {k: v for k, v in u.items() if k != "stacks"}
    if stacks > 0:
        j["topStacks"] = [{"frames": f, "currentPages": p} for f, p in u["stacks"][:stacks]]
    return j


def node(frame, pages, children=()):
    return {"frame": frame, "module": None, "address": None, "currentPages": pages, "peakPages": None,
            "children": list(children), "truncatedChildren": 0}


def tree_from_stacks(label, stacks):
    """A StackNode tree (callers first) from flat stacks (innermost first)."""
    root = node(label, sum(p for _, p in stacks))
    for frames, pages in stacks:
        parent = root
        for f in reversed(frames):
            child = next((c for c in parent["children"] if c["frame"] == f), None)
            if child is None:
                child = node(f, 0)
                parent["children"].append(child)
            child["currentPages"] += pages
            parent = child
    return root


class Fake:
    def __init__(self, args):
        self.units = not args.no_units
        self.sample_interval = args.stack_sample_interval
        self.leaks_calls = 0
        self.moving = args.moving
        self.boot_snapshot = args.boot_snapshot
        self.tops = 0
        self.log = open(args.log, "a", buffering=1)
        self.lock = threading.Lock()

    def record(self, call):
        with self.lock:
            self.log.write(json.dumps(call) + "\n")

    def sampling(self):
        """Status's and StackTree's stackSampleInterval, when asked to report one."""
        return {} if self.sample_interval is None else {"stackSampleInterval": self.sample_interval}

    def status(self):
        return {"backend": "fake", "version": "0.0.0", "uptimeUsec": 5000000, "eventsPerSecond": 100.0,
                "events": 1000, "lostEvents": 0, "lostPerCpu": [0], "trackedPages": 18872,
                "peakTrackedPages": 20000, "untrackedFrees": 0, "untrackedFreePages": 0,
                "daemonMemoryBytes": 1 << 20, "stackNodes": 10, "stackNodeBudget": 1000, "stacksTruncated": 0,
                "tasksEvicted": 0, "kernelAddressesHidden": False, "pageSize": PAGE_SIZE, **self.sampling()}

    def top(self):
        t = {"timestampUsec": int(time.monotonic() * 1e6), "trackedPages": 18872, "peakTrackedPages": 20000,
             "eventsPerSecond": 100.0, "lostEvents": 0, "uptimeUsec": 5000000, "stacksTruncated": 0,
             "tasks": TASKS, "evicted": {"tasks": 0, "currentPages": 0, "peakPages": 0}, "modules": MODULES}
        if self.units:
            t["units"] = [unit_json(u, 0) for u in UNITS + [GHOST, SESSION]]
        if self.moving:
            self.tops += 1
            tasks = [dict(x) for x in TASKS]
            tasks[0]["currentPages"] += self.tops
            tasks[0]["peakPages"] = tasks[0]["currentPages"]
            tasks[1]["currentPages"] -= self.tops
            t["tasks"] = tasks
        return t

    def history(self, p):
        """600 one-second buckets ending now (or 1440 minutes at resolution 60)."""
        res = p.get("resolution", 1)
        n = 1440 if res == 60 else 600
        now = int(time.time()) // res * res
        points = []
        for i in range(n):
            cur = min(16384, 16384 * (i + 1) // (n // 2))
            peak = 24576 if i == n - 200 // res - 1 or (res == 60 and i == n - 5) else cur
            points.append({"timestampUsec": (now - (n - 1 - i) * res) * 1000000, "current": cur, "peak": peak})
        what = "task" if "pid" in p else "unit" if "unit" in p else "module" if "module" in p else "total"
        return {"what": what, "name": "", "resolution": res, "resolutions": [1, 60], "points": points}

    def answer(self, method, p):
        """(error name or None, parameters)."""
        if method == "io.memstrack.Status":
            return None, self.status()
        if method == "io.memstrack.Tasks":
            return None, {"tasks": TASKS, "evicted": {"tasks": 0, "currentPages": 0, "peakPages": 0}}
        if method == "io.memstrack.Modules":
            return None, {"modules": MODULES}
        if method == "io.memstrack.Units" and self.units:
            units = [unit_json(u, p.get("stacks", 0)) for u in UNITS]
            if "name" in p:
                units = [u for u in units if u["name"] == p["name"]]
                if not units:
                    return "io.memstrack.NoSuchUnit", {"name": p["name"]}
            return None, {"units": units}
        if method == "io.memstrack.StackTree":
            if "unit" in p:
                if not self.units:
                    return "org.varlink.service.InvalidParameter", {"parameter": "unit"}
                u = next((u for u in UNITS if u["name"] == p["unit"]), None)
                if u is None:
                    return "io.memstrack.NoSuchUnit", {"name": p["unit"]}
                root = tree_from_stacks("[unit %s]" % u["name"], u["stacks"])
            else:
                root = tree_from_stacks("[all]", [s for u in UNITS for s in u["stacks"]])
            return None, {"root": root, "totalPages": root["currentPages"], **self.sampling()}
        if method == "io.memstrack.History":
            return None, self.history(p)
        if method == "io.memstrack.BootPhase" and self.boot_snapshot:
            with open(self.boot_snapshot) as f:
                return None, {"snapshot": json.load(f)}
        if method == "io.memstrack.OomKills":
            holders = {"trackedPages": 18872, "peakTrackedPages": 20000, "tasks": TASKS[:2], "units": [],
                       "modules": [], "stacks": []}
            kill = {"timestampUsec": 4000000, "realtimeUsec": int(time.time() - 60) * 1000000, "pid": 4242,
                    "comm": "loadgen", "unit": "loadgen-test.service", "victim": TASKS[0], "uid": 0,
                    "oomScoreAdj": 0, "totalVmBytes": None, "anonRssBytes": 67108864, "fileRssBytes": None,
                    "shmemRssBytes": None, "pgtablesBytes": None, "pageSize": PAGE_SIZE, "holders": holders}
            return None, {"watching": True, "reason": None, "lost": 0, "killsSeen": 1, "kills": [kill],
                          "peakSnapshotsTaken": 0, "peakSnapshots": [], "limits": {}}
        if method == "io.memstrack.Slab":
            rows = [{"name": "kmalloc_reserve+0x8f" if p.get("by") == "callsite" else "kmalloc-2k", "address": None,
                     "pid": None, "liveObjects": 300, "liveBytesRequested": 500000, "liveBytesAllocated": 614400,
                     "wastePercent": 18.6, "peakLiveBytes": 700000, "allocs": 900, "frees": 600, "remoteFrees": 3},
                    {"name": "alloc_inode+0x2c" if p.get("by") == "callsite" else "inode_cache", "address": None,
                     "pid": None, "liveObjects": 40, "liveBytesRequested": 20000, "liveBytesAllocated": 24000,
                     "wastePercent": 16.7, "peakLiveBytes": 30000, "allocs": 50, "frees": 10, "remoteFrees": 0}]
            return None, {"tracing": True, "by": p.get("by", "callsite"), "liveObjects": 340,
                          "liveBytesRequested": 520000, "liveBytesAllocated": 638400, "peakLiveBytes": 730000,
                          "wastePercent": 18.5, "allocs": 950, "frees": 610, "unknownFrees": 0, "rows": rows}
        if method == "io.memstrack.Reset":
            return None, {}
        if method == "io.memstrack.Top":
            return None, self.top()
        if method == "io.memstrack.Leaks":
            self.leaks_calls += 1
            if self.leaks_calls % 2 == 1:
                return "io.memstrack.LimitExceeded", {"limit": "leaksPace", "value": 200000}
            return None, {"tracing": False, "minAgeUsec": 60000000, "intervalUsec": 10000000, "intervals": 6,
                          "rows": [], "pageAgeGrainUsec": 268435,
                          "pages": [{"pid": 4242, "comm": "loadgen", "frames": ["__alloc_pages+0x1a1"],
                                     "pages": 16384, "oldestAgeUsec": 61000000, "growth": [0, 0, 0, 0, 0, 0]}]}
        return "org.varlink.service.MethodNotFound", {"method": method}

    def serve(self, c):
        buf = b""
        with c:
            while True:
                data = c.recv(65536)
                if not data:
                    return
                buf += data
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    call = json.loads(raw)
                    self.record(call)
                    method, p = call.get("method", ""), call.get("parameters") or {}
                    error, params = self.answer(method, p)
                    if error:
                        c.sendall(json.dumps({"error": error, "parameters": params}).encode() + b"\0")
                        continue
                    if method == "io.memstrack.Top" and call.get("more"):
                        # A stream until the client goes; nothing else is read on this connection.
                        interval = max(p.get("intervalUsec", 1000000), 100000) / 1e6
                        try:
                            while True:
                                reply = {"parameters": self.top(), "continues": True}
                                c.sendall(json.dumps(reply).encode() + b"\0")
                                time.sleep(interval)
                        except OSError:
                            return
                    c.sendall(json.dumps({"parameters": params}).encode() + b"\0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--no-units", action="store_true")
    ap.add_argument("--stack-sample-interval", type=int)
    ap.add_argument("--moving", action="store_true")
    ap.add_argument("--boot-snapshot")
    args = ap.parse_args()
    fake = Fake(args)
    s = socket.socket(socket.AF_UNIX)
    s.bind(args.socket + ".tmp")
    os.rename(args.socket + ".tmp", args.socket)
    s.listen(16)
    print("READY", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=fake.serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
