#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The PromQL queries of a Grafana dashboard, ready to send to Prometheus.

Prints one query a line, as "WHERE<TAB>QUERY": every panel target's expr and every query variable
(label_values(METRIC, LABEL) becomes count by (LABEL) (METRIC), which returns data exactly when the
variable would have values). Grafana's variables are replaced by values that select everything the
dashboard's "All" would: $instance and $unit by .*, $top by 10, and the built-in intervals by lengths a
test's Prometheus has data for. Fails (exit 1, saying where) on a panel without a query, a target not
on the dashboard's data source variable, or a variable that is neither defined nor built in, so that
a query it cannot substitute never reaches Prometheus as text that only looks valid.

Usage: dashboard-queries.py DASHBOARD.json
"""

import json
import re
import sys

# Grafana's built-in variables that the dashboard may use, with values a test's Prometheus (scraping
# every second for a minute or so) has data for.
BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}
# What a defined variable stands for when its "All" is selected, or its default.
ALL_VALUE = ".*"


def fail(msg):
    print(f"dashboard-queries: {msg}", file=sys.stderr)
    sys.exit(1)


def panels_of(dashboard):
    for p in dashboard.get("panels", []):
        yield p
        yield from p.get("panels", [])      # a collapsed row keeps its panels inside


def variable_values(dashboard):
    values = {}
    for v in dashboard.get("templating", {}).get("list", []):
        name = v["name"]
        if v["type"] == "custom":
            current = v.get("current", {}).get("value")
            values[name] = current if isinstance(current, str) else v["query"].split(",")[0]
        elif v["type"] == "query":
            values[name] = v.get("allValue") or ALL_VALUE
        else:
            values[name] = None             # the data source: not for queries
    return values


def substitute(expr, values, where):
    def one(m):
        name = m.group(1) or m.group(2)
        if name in BUILTINS:
            return BUILTINS[name]
        if values.get(name) is None:
            fail(f"{where}: ${name} is neither a query or custom variable nor one of {sorted(BUILTINS)}")
        return values[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, expr)


def main():
    if len(sys.argv) != 2:
        fail("usage: dashboard-queries.py DASHBOARD.json")
    with open(sys.argv[1]) as f:
        dashboard = json.load(f)
    values = variable_values(dashboard)
    out = []

    for v in dashboard.get("templating", {}).get("list", []):
        if v["type"] != "query":
            continue
        q = v["query"] if isinstance(v["query"], str) else v["query"].get("query", "")
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q)
        if not m:
            fail(f"variable {v['name']}: only label_values(METRIC, LABEL) is understood, not {q!r}")
        out.append((f"variable {v['name']}", substitute(f"count by ({m.group(2)}) ({m.group(1)})", values,
                                                         f"variable {v['name']}")))

    for p in panels_of(dashboard):
        if p.get("type") == "row":
            continue
        where = f"panel {p.get('title')!r}"
        targets = p.get("targets") or []
        if not targets:
            fail(f"{where} has no query")
        for t in targets:
            if t.get("datasource", {}).get("uid") != "${datasource}":
                fail(f"{where} target {t.get('refId')}: not on the data source variable")
            if not t.get("expr"):
                fail(f"{where} target {t.get('refId')} has no expr")
            out.append((f"{where} {t.get('refId')}", substitute(t["expr"], values, where)))

    for where, q in out:
        if "\t" in where or "\n" in q:
            fail(f"{where}: a tab in the name or a newline in the query")
        print(f"{where}\t{q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
