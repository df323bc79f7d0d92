#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The boot phase (BootPhase, memstrackctl report --boot): memstrackd takes over the snapshot document
its initramfs instance left (--boot-snapshot) and serves it whole to root, without raw addresses to
anyone else; reports from it are the ones `report --from` makes of the same file; a missing, garbled or
too big file leaves the daemon serving everything else. The replay source feeds events: no kernel
tracing, no root (with root the non-root caller is a child that drops to nobody in the daemon's group).

Usage: test-boot-phase.py MEMSTRACKD MEMSTRACKCTL TESTS_DIR"""

import json
import os
import pwd
import subprocess
import sys
import tempfile

MEMSTRACKD, MEMSTRACKCTL, TESTS = sys.argv[1:4]
sys.path.insert(0, TESTS)
import livelib  # noqa: E402
from livelib import fail  # noqa: E402

FIXTURE = os.path.join(TESTS, "data", "report-snapshot.json")


def start(work, name, snapshot):
    sock = os.path.join(work, name + ".sock")
    log = open(os.path.join(work, name + ".log"), "w+")
    group = subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout.strip()
    proc, _ = livelib.start_memstrackd(MEMSTRACKD, sock, "--source=replay",
                                       "--source-input=" + os.path.join(work, "events"),
                                       "--group=" + group, "--boot-snapshot=" + snapshot, stderr=log)
    return proc, sock, log


def stop(proc, log):
    proc.terminate()
    proc.wait(timeout=livelib.WAIT)
    log.seek(0)
    return log.read()


def call_as_other_user(sock):
    """BootPhase as a caller that is not root but may query: nobody in the daemon's group."""
    if os.geteuid() != 0:
        return livelib.call(sock, "io.memstrack.BootPhase")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(os.getgid())
            os.setuid(pwd.getpwnam("nobody").pw_uid)
            reply = livelib.call(sock, "io.memstrack.BootPhase")
            os.write(w, json.dumps(reply).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 20):
        data += chunk
    os.waitpid(pid, 0)
    if not data:
        fail("the non-root BootPhase call got no answer")
    return json.loads(data)


def addresses(j):
    if isinstance(j, dict):
        return [v for k, v in j.items() if k == "address" and v is not None] + \
            [a for v in j.values() for a in addresses(v)]
    if isinstance(j, list):
        return [a for v in j for a in addresses(v)]
    return []


def ctl(*args):
    return subprocess.run([MEMSTRACKCTL, *args], capture_output=True, text=True)


def main():
    with open(FIXTURE) as f:
        fixture = json.load(f)
    if not addresses(fixture):
        fail("the fixture has no raw addresses: the hiding is not tested")
    with tempfile.TemporaryDirectory(prefix="test-boot-phase.") as work:
        os.chmod(work, 0o755)
        with open(os.path.join(work, "events"), "w") as f:
            f.write("task 4242 replayed\nalloc 4242 0x1000 0 0xffffffff81000000\n")

        proc, sock, log = start(work, "served", FIXTURE)
        try:
            # Root sees the document as it was written.
            if os.geteuid() == 0 and livelib.call(sock, "io.memstrack.BootPhase")["snapshot"] != fixture:
                fail("BootPhase does not return the boot snapshot as written")
            other = call_as_other_user(sock)["snapshot"]
            if addresses(other):
                fail(f"a non-root caller sees raw addresses: {addresses(other)[:3]}")
            if other["status"]["kernelAddressesHidden"] is not True or other["tasks"] != fixture["tasks"]:
                fail("the non-root view differs from the file in more than its addresses")
            # The same reports as from the file itself.
            address = "--address=unix:" + sock
            formats = "--format=module_summary,task_summary,module_top:top=3"
            boot = ctl(address, "report", "--boot", formats)
            from_file = ctl("report", "--from=" + FIXTURE, formats)
            if boot.returncode != 0 or boot.stdout != from_file.stdout or not boot.stdout:
                fail(f"report --boot differs from report --from of the same file:\n{boot.stdout}{boot.stderr}"
                     f"---\n{from_file.stdout}{from_file.stderr}")
            both = ctl(address, "report", "--boot", "--from=" + FIXTURE)
            if both.returncode != 2 or "exclude" not in both.stderr:
                fail(f"--boot with --from is not a usage error: {both.returncode} {both.stderr}")
        finally:
            text = stop(proc, log)
        if "Serving the boot phase recorded in" not in text:
            fail(f"memstrackd did not say it serves the boot phase: {text}")

        # User frames without a symbol carry raw user-space addresses of processes long gone, whose owner is
        # not known: hidden from anyone but root, as their addresses are.
        with_user = json.loads(json.dumps(fixture))
        raw = "[user] 0x7f3a12345678"
        with_user["stackTree"]["root"]["children"].append(
            {"frame": raw, "module": None, "address": "0x00007f3a12345678", "currentPages": 0, "peakPages": 0,
             "children": [], "truncatedChildren": 0})
        with_user["units"]["units"][0]["topStacks"].append({"frames": [raw, "do_syscall_64+0x71"], "currentPages": 1})
        path = os.path.join(work, "with-user.json")
        with open(path, "w") as f:
            json.dump(with_user, f)
        proc, sock, log = start(work, "user-frames", path)
        try:
            text = json.dumps(call_as_other_user(sock)["snapshot"])
            if raw in text or text.count("[user] [unknown]") != 2:
                fail(f"a non-root caller sees the raw user frame, or not its replacement: {raw in text}")
            if os.geteuid() == 0 and raw not in json.dumps(livelib.call(sock, "io.memstrack.BootPhase")["snapshot"]):
                fail("root does not see the raw user frame")
        finally:
            stop(proc, log)

        # No file, a garbled one, one too big for a reply: no boot phase, everything else served.
        garbled = os.path.join(work, "garbled")
        with open(garbled, "w") as f:
            f.write('{"memstrackSnapshot": 1, "status": {')
        big = os.path.join(work, "big")
        with open(big, "w") as f:
            f.truncate(16 << 20)
        for name, path, said in (("missing", os.path.join(work, "none"), None), ("garbled", garbled, "not JSON"),
                                 ("big", big, "over the")):
            proc, sock, log = start(work, name, path)
            try:
                try:
                    livelib.call(sock, "io.memstrack.BootPhase")
                    fail(f"{name}: BootPhase answered without a boot snapshot")
                except livelib.VarlinkError as e:
                    if e.name != "io.memstrack.NoSuchSnapshot" or e.parameters.get("name") != "initramfs":
                        fail(f"{name}: BootPhase failed with {e}, not NoSuchSnapshot initramfs")
                livelib.call(sock, "io.memstrack.Tasks")
                r = ctl("--address=unix:" + sock, "report", "--boot")
                if r.returncode == 0 or "initramfs" not in r.stderr:
                    fail(f"{name}: report --boot without a boot phase: {r.returncode} {r.stderr}")
            finally:
                text = stop(proc, log)
            if said and said not in text:
                fail(f"{name}: memstrackd's log does not say why ({said!r}): {text}")
    print("boot phase served, hidden from non-root, and refused when missing, garbled or too big")
    return 0


sys.exit(main())
