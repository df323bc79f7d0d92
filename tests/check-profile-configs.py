#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shipped configurations for memstrack-metrics' profiles agree with what it serves.

Usage: check-profile-configs.py SOURCE_ROOT

The paths the Parca job (metrics/parca.yaml) and the Alloy block (metrics/alloy-pyroscope.alloy) scrape
are paths the exporter serves (the endpoint table of metrics/pprof-request.c), the memory profile is
Go's /debug/pprof/allocs, the sample types Parca keeps are Go's; every panel of the Grafana dashboard
that shows units links each unit to its profile; docs/metrics.md shows both files as they are shipped.
"""
import json
import os
import re
import sys

import yaml

GO_MEMORY_TYPES = {("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"),
                   ("inuse_space", "bytes")}


def served_paths(root):
    text = open(os.path.join(root, "metrics", "pprof-request.c"), encoding="utf-8").read()
    table = re.search(r"endpoint_names\[_PPROF_ENDPOINT_MAX\] = \{(.*?)\};", text, re.S).group(1)
    return {"/debug/pprof/" + name for name in re.findall(r'= "([a-z]+)"', table)}


def main():
    root = sys.argv[1]
    errors = []
    paths = served_paths(root)
    if "/debug/pprof/allocs" not in paths or "/debug/pprof/heap" not in paths:
        errors.append(f"the exporter's endpoint table reads as {sorted(paths)}")

    parca_text = open(os.path.join(root, "metrics", "parca.yaml"), encoding="utf-8").read()
    jobs = yaml.safe_load(parca_text)["scrape_configs"]
    job = [j for j in jobs if j["job_name"] == "memstrack"][0]
    pprof = job["profiling_config"]["pprof_config"]
    for name, profile in pprof.items():
        path = profile.get("path")
        if profile.get("enabled") and path not in paths:
            errors.append(f"parca.yaml: {name} scrapes {path}, which memstrack-metrics does not serve")
        if path and path not in paths:
            errors.append(f"parca.yaml: {name} names {path}, which memstrack-metrics does not serve")
        if not path and profile.get("enabled", True):
            errors.append(f"parca.yaml: {name} is one of Parca's own profiles and must be disabled")
        for t in profile.get("keep_sample_type", []):
            if (t["type"], t["unit"]) not in GO_MEMORY_TYPES:
                errors.append(f"parca.yaml: {name} keeps {t}, not one of Go's memory types")
    if pprof.get("memory", {}).get("path") != "/debug/pprof/allocs" or not pprof["memory"].get("enabled"):
        errors.append("parca.yaml: the memory profile is not /debug/pprof/allocs, enabled")

    alloy_text = open(os.path.join(root, "metrics", "alloy-pyroscope.alloy"), encoding="utf-8").read()
    blocks = re.findall(r'(profile\.\w+(?: "\w+")?) \{(.*?)\}', alloy_text, re.S)
    if not blocks:
        errors.append("alloy-pyroscope.alloy: no profile blocks")
    for name, body in blocks:
        path = re.search(r'path\s*=\s*"([^"]*)"', body)
        enabled = re.search(r"enabled\s*=\s*(true|false)", body)
        if path and path.group(1) not in paths:
            errors.append(f"alloy-pyroscope.alloy: {name} names {path.group(1)}, which is not served")
        if not path and (not enabled or enabled.group(1) != "false"):
            errors.append(f"alloy-pyroscope.alloy: {name} is one of Alloy's own profiles and must be disabled")
    memory = dict(blocks).get("profile.memory", "")
    if '"/debug/pprof/allocs"' not in memory or "enabled = true" not in memory:
        errors.append("alloy-pyroscope.alloy: profile.memory is not /debug/pprof/allocs, enabled")
    for other in ("process_cpu", "goroutine", "block", "mutex"):
        if f"profile.{other}" not in dict(blocks):
            errors.append(f"alloy-pyroscope.alloy: profile.{other} (on by default) is not turned off")

    dashboard = json.load(open(os.path.join(root, "metrics", "memstrack-dashboard.json"), encoding="utf-8"))
    linked = 0
    for panel in dashboard["panels"]:
        if not any("memstrack_unit_bytes" in t.get("expr", "") for t in panel.get("targets", [])):
            continue
        links = panel.get("fieldConfig", {}).get("defaults", {}).get("links", [])
        urls = [l.get("url", "") for l in links]
        if not any("/debug/pprof/heap?unit=${__field.labels.unit:percentencode}" in u and
                   u.startswith("http://${__field.labels.instance}/") for u in urls):
            errors.append(f"dashboard: panel '{panel['title']}' shows units but links none to its profile")
        linked += 1
    if linked < 3:
        errors.append(f"dashboard: only {linked} panels by unit")

    docs = open(os.path.join(root, "docs", "metrics.md"), encoding="utf-8").read()
    for name, text, start in (("parca.yaml", parca_text, "scrape_configs:"),
                              ("alloy-pyroscope.alloy", alloy_text, "pyroscope.scrape")):
        if text[text.index(start):] not in docs:
            errors.append(f"docs/metrics.md does not show metrics/{name} as shipped (from '{start}' on)")

    for e in errors:
        print("profile configs: " + e, file=sys.stderr)
    if errors:
        return 1
    print(f"profile configs: {len(pprof)} Parca profiles, {len(blocks)} Alloy blocks, {linked} dashboard "
          f"panels linked, all on {sorted(paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
