#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memstrackctl history --format svg against a stand-in memstrackd (fake-memstrackd.py), read back as XML:
# one area of current pages and one peak line over the fake's 600 buckets, the value axis at a round
# 100 MiB above the 96 MiB spike, five time labels, the title; --output writes the same file; a format
# other than text or svg, and --output without svg, are usage errors. No kernel, no root.
#
# Usage: test-history-svg.py MEMSTRACKCTL TESTS_DIR
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

CTL, TESTS = sys.argv[1], sys.argv[2]
SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    work = tempfile.mkdtemp(prefix="test-history-svg.")
    sock = os.path.join(work, "sock")
    fake = subprocess.Popen([sys.executable, os.path.join(TESTS, "fake-memstrackd.py"), "--socket", sock,
                             "--log", os.path.join(work, "log")], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                fail("the fake memstrackd did not start")
            time.sleep(0.05)
        ctl = [CTL, "--address", sock]
        out = subprocess.run(ctl + ["history", "--task", "4242", "--format", "svg"], capture_output=True, check=False)
        if out.returncode != 0:
            fail(f"history --format svg exited {out.returncode}: {out.stderr.decode()}")
        root = ET.fromstring(out.stdout)
        if root.tag != SVG + "svg" or root.get("viewBox") != "0 0 800 300":
            fail(f"not an 800x300 SVG: {root.tag} {root.attrib}")
        if root.get("data-points") != "600" or root.get("data-top-bytes") != str(100 << 20):
            fail(f"points or top: {root.attrib}")
        areas = root.findall(f"{SVG}path[@class='current']")
        peaks = root.findall(f"{SVG}path[@class='peak']")
        if len(areas) != 1 or len(peaks) != 1:
            fail(f"{len(areas)} areas and {len(peaks)} peak lines, expected one each")
        # Each bucket a step: 2 points per bucket, plus the area's way down and back.
        coords = re.findall(r"[ML]([0-9.]+),([0-9.]+)", peaks[0].get("d"))
        if len(coords) != 1200:
            fail(f"the peak line has {len(coords)} points, expected 1200")
        ys = [float(y) for _, y in coords]
        # The spike (96 of 100 MiB) is the line's highest point: 96 % up the 224 px plot from y=264.
        if abs(min(ys) - (264 - 224 * 0.96)) > 0.2:
            fail(f"the spike is at y={min(ys)}, expected {264 - 224 * 0.96}")
        labels = [t.text for t in root.findall(f"{SVG}text")]
        for want in ("0", "25.0 MiB", "50.0 MiB", "75.0 MiB", "100.0 MiB", "current", "peak"):
            if want not in labels:
                fail(f"no label {want!r} in {labels}")
        times = [t for t in labels if t and re.fullmatch(r"\d\d:\d\d", t)]
        if len(times) != 5:
            fail(f"{len(times)} time labels, expected 5: {labels}")
        if not any(t and t.startswith("History of the task") for t in labels):
            fail(f"no title in {labels}")
        print("ok history --format svg")

        path = os.path.join(work, "chart.svg")
        r = subprocess.run(ctl + ["history", "--format=svg", "--output", path], capture_output=True, check=False)
        if r.returncode != 0 or not os.path.exists(path):
            fail(f"--output: exit {r.returncode} {r.stderr.decode()}")
        if ET.parse(path).getroot().get("data-points") != "600":
            fail("the file is not the chart")
        if os.path.exists(path + ".tmp"):
            fail("the temporary file was left")
        print("ok history --format svg --output FILE")

        for args in (["--format", "png"], ["--output", path]):
            r = subprocess.run(ctl + ["history"] + args, capture_output=True, check=False)
            if r.returncode != 2 or not r.stderr:
                fail(f"history {args}: exit {r.returncode}, expected a usage error (2)")
        print("ok bad --format and --output without svg are usage errors")
    finally:
        fake.kill()
        fake.wait()
        subprocess.run(["rm", "-rf", work], check=False)


main()
