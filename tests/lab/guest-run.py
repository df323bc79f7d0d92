#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the kernel lab's tests inside the guest, as `meson test` would run them on the host.

Usage: guest-run.py LABDIR

LABDIR/tests.json (written by scripts/kernel-lab) lists each test's name, command, environment, working
directory and timeout, and the factor timeouts are stretched by under software emulation. Each test's
output goes to LABDIR/logs/N.log and its result, as soon as it ends, to LABDIR/results.jsonl: a guest
killed at the lab's deadline still leaves the results of the tests that ended."""

import json
import os
import signal
import subprocess
import sys
import time

# What meson test sets when the test does not (mtest.py): the sanitizers stop at their first report.
SANITIZER_DEFAULTS = {
    "ASAN_OPTIONS": "halt_on_error=1:abort_on_error=1:print_summary=1",
    "UBSAN_OPTIONS": "halt_on_error=1:abort_on_error=1:print_summary=1:print_stacktrace=1",
    "MSAN_OPTIONS": "halt_on_error=1:abort_on_error=1:print_summary=1:print_stacktrace=1",
}


def run(test, factor, log_path):
    env = dict(os.environ)
    for k, v in SANITIZER_DEFAULTS.items():
        env.setdefault(k, v)
    env.update(test.get("env") or {})
    env["MESON_TEST_ITERATION"] = "1"
    timeout = test["timeout"] * factor if test.get("timeout") else None
    start = time.monotonic()
    with open(log_path, "w") as log:
        try:
            proc = subprocess.Popen(test["cmd"], cwd=test.get("workdir") or None, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            log.write(f"cannot run {test['cmd'][0]}: {e}\n")
            return "ERROR", None, 0.0
        try:
            rc = proc.wait(timeout)
            result = "OK" if rc == 0 else "SKIP" if rc == 77 else "FAIL"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
            result = "TIMEOUT"
            log.write(f"\nkernel-lab: killed after {timeout} s\n")
        # What the test left behind (a daemon it started) must not run on into the next test.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return result, rc, time.monotonic() - start


def main():
    lab = sys.argv[1]
    with open(os.path.join(lab, "tests.json")) as f:
        plan = json.load(f)
    factor = plan.get("timeout_factor", 1)
    os.makedirs(os.path.join(lab, "logs"), exist_ok=True)
    with open(os.path.join(lab, "results.jsonl"), "a") as results:
        for i, test in enumerate(plan["tests"]):
            print(f"lab-guest: {i + 1}/{len(plan['tests'])} {test['name']} ...", flush=True)
            result, rc, seconds = run(test, factor, os.path.join(lab, "logs", f"{i}.log"))
            print(f"lab-guest: {test['name']}: {result} ({seconds:.0f} s)", flush=True)
            results.write(json.dumps({"index": i, "name": test["name"], "result": result, "returncode": rc,
                                      "seconds": round(seconds, 1)}) + "\n")
            results.flush()
            os.fsync(results.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
