#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrack-metrics end to end: memstrackd on the live kernel, loadgen holding 64 MiB, memstrack-metrics
# on a loopback socket passed the way systemd passes it (systemd-socket-activate), promtool on what it
# serves in both formats, and a real Prometheus scraping it every second: its query API must return the
# holder's bytes within 0.5 % of what memstrackd's Tasks says for that pid. The holder runs in a cgroup
# of its own named like a unit, and Prometheus loads the shipped alerting rules: every query of the
# shipped Grafana dashboard returns data (the holder's unit among the units), every rule evaluates
# without error, and once memstrackd stops MemstrackDaemonDown is pending.
# Needs root, perf events and the kmem tracepoints, a writable cgroup2 hierarchy, and Debian's
# prometheus package (prometheus, promtool), curl and systemd-socket-activate; skips (77) otherwise.
#
# Usage: test-metrics-prometheus.sh MEMSTRACKD MEMSTRACKCTL LOADGEN MEMSTRACK_METRICS TESTS_DIR ALERT_RULES
#        DASHBOARD
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
METRICS=${4:?memstrack-metrics}
TESTS=${5:?tests dir}
RULES=${6:?alert rules}
DASHBOARD=${7:?dashboard}
. "$TESTS/integration/memstrackctl-lib.sh"

for p in prometheus promtool curl systemd-socket-activate; do
    command -v "$p" >/dev/null ||
        skip "no $p (Debian packages prometheus, curl and systemd; scripts/deps installs them)"
done
# The holder: 64 MiB whatever the page size.
PAGES=$(( (64 << 20) / $(getconf PAGESIZE) ))

lib_init test-metrics-prometheus

# The holder's cgroup, named like a unit.
holder_unit=memstrack-metrics-test-$$.scope
make_unit_cgroup "$holder_unit"
cleanup() {
    lib_cleanup
    rmdir "$holder_cgroup"
}
trap cleanup EXIT

# GET /metrics with the Accept header $1 into $2, headers into $2.hdr.
scrape() {
    curl -sS --max-time 30 -H "Accept: $1" -D "$2.hdr" -o "$2" "http://127.0.0.1:$mport/metrics"
}

# One instant query to Prometheus; prints the single result's value, nothing if there is none.
prom_query() {
    curl -sS --max-time 30 "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
res = r["data"]["result"]
if r["data"]["resultType"] == "scalar":
    print(res[1])
elif len(res) == 1:
    print(res[0]["value"][1])'
}

start_metrics() {
    mport=$(free_port)
    systemd-socket-activate -l "127.0.0.1:$mport" "$METRICS" --address "$work/sock" --top 100 \
        >>"$work/metrics.log" 2>&1 &
    metrics_pid=$!
    pids+=($!)
    wait_for "memstrack-metrics to answer on 127.0.0.1:$mport" scrape '*/*' "$work/probe"
}

test_formats() {
    scrape 'text/plain;version=0.0.4' "$work/m.prom" || fail "scrape (text) failed"
    grep -qi '^Content-Type: text/plain; version=0.0.4' "$work/m.prom.hdr" ||
        fail "text scrape has the wrong Content-Type: $(cat "$work/m.prom.hdr")"
    grep -q '^memstrack_up 1$' "$work/m.prom" || fail "memstrack_up is not 1: $(head -5 "$work/m.prom")"
    grep -q '^# EOF' "$work/m.prom" && fail "the text format ends with # EOF"
    promtool check metrics <"$work/m.prom" >"$work/lint" 2>&1 || fail "promtool check metrics: $(cat "$work/lint")"
    [ -s "$work/lint" ] && fail "promtool check metrics has remarks: $(cat "$work/lint")"

    scrape 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' "$work/m.om" ||
        fail "scrape (OpenMetrics) failed"
    grep -qi '^Content-Type: application/openmetrics-text; version=1.0.0' "$work/m.om.hdr" ||
        fail "OpenMetrics scrape has the wrong Content-Type: $(cat "$work/m.om.hdr")"
    [ "$(tail -n 1 "$work/m.om")" = "# EOF" ] || fail "OpenMetrics text does not end with # EOF"
    sed -E "/^#/! s/\$/ $(date +%s)/" "$work/m.om" >"$work/m.om-ts"
    promtool tsdb create-blocks-from openmetrics "$work/m.om-ts" "$work/blocks" >"$work/om.log" 2>&1 ||
        fail "promtool's OpenMetrics parser rejects the output: $(cat "$work/om.log")"
    echo "ok both formats pass promtool"
}

prom_scraped() {
    [ "$(prom_query 'memstrack_up{job="memstrack"}')" = 1 ]
}

test_prometheus() {
    local want got
    pport=$(free_port)
    cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: memstrack
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
    prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
        --web.listen-address="127.0.0.1:$pport" >>"$work/prometheus.log" 2>&1 &
    pids+=($!)
    wait_for "Prometheus to have scraped memstrack-metrics (127.0.0.1:$pport)" prom_scraped

    # Prometheus 2.x asks for OpenMetrics first: the scrape must have gone through its parser.
    curl -sS --max-time 30 "http://127.0.0.1:$pport/api/v1/targets" >"$work/targets.json"
    python3 - "$work/targets.json" <<'PY' || fail "the target is not healthy: $(cat "$work/targets.json")"
import json, sys
t = json.load(open(sys.argv[1]))["data"]["activeTargets"]
assert len(t) == 1 and t[0]["health"] == "up" and not t[0]["lastError"], t
PY

    # The holder's bytes as Prometheus stored them, against memstrackd's Tasks for the pid. loadgen
    # holds still; a scrape is at most a second old, so wait (bounded) for one that agrees, and say
    # both numbers if none does.
    local deadline=$((SECONDS + WAIT))
    while :; do
        want=$(( $(pages_of "$lg_pid") * $(getconf PAGESIZE) ))
        got=$(prom_query "memstrack_task_bytes{job=\"memstrack\",pid=\"$lg_pid\"}")
        [ -n "$got" ] && python3 -c 'import sys; w, g = int(sys.argv[1]), float(sys.argv[2]); sys.exit(not (w > 0 and abs(g - w) <= 0.005 * w))' "$want" "$got" && break
        [ $SECONDS -lt $deadline ] || fail "Prometheus has ${got:-nothing} bytes for loadgen ($lg_pid), memstrackd $want"
        sleep 0.5
    done
    [ "$want" -ge $(( PAGES * $(getconf PAGESIZE) )) ] || fail "memstrackd charges loadgen only $want bytes"
    echo "ok Prometheus: loadgen ($lg_pid) holds $got bytes, memstrackd says $want"

    # One scrape's tasks, [other] included, add up to its total exactly.
    got=$(prom_query 'scalar(sum(memstrack_task_bytes{job="memstrack"})) - scalar(memstrack_tracked_bytes{job="memstrack"})')
    [ "$got" = 0 ] || fail "sum(memstrack_task_bytes) - memstrack_tracked_bytes = '$got', expected 0"
    got=$(prom_query 'scalar(sum(memstrack_unit_bytes{job="memstrack"})) - scalar(memstrack_tracked_bytes{job="memstrack"})')
    [ "$got" = 0 ] || fail "sum(memstrack_unit_bytes) - memstrack_tracked_bytes = '$got', expected 0"
    got=$(prom_query 'count(memstrack_task_bytes{job="memstrack"})')
    [ -n "$got" ] && [ "$got" -le 101 ] || fail "$got task series, more than --top 100 and [other]"
    echo "ok Prometheus: the top tasks and units with [other] add up to the total"
}

# Every query of the dashboard returns data from this Prometheus (rates and derivatives once it has two
# scrapes in their range: polled, bounded), and the holder's unit is among the units the unit
# variable and the unit panel list.
dashboard_has_data() {
    "$TESTS/dashboard-queries.py" "$DASHBOARD" >"$work/queries" || fail "cannot read the dashboard's queries"
    python3 - "$work/queries" "$pport" "$holder_unit" "$work/empty" <<'PY'
import json, sys, urllib.parse, urllib.request
queries, port, unit, empty_file = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
empty = []
for line in open(queries):
    where, query = line.rstrip("\n").split("\t")
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=30) as r:
        reply = json.load(r)
    if reply["status"] != "success":
        empty.append(f"{where}: {query}: {reply}")
        continue
    result = reply["data"]["result"]
    units = {s["metric"].get("unit") for s in result}
    if not result:
        empty.append(f"{where}: {query}: no data")
    elif where in ("variable unit", "panel 'Held memory by unit' A") and unit not in units:
        empty.append(f"{where}: {query}: no {unit} among {sorted(units)}")
open(empty_file, "w").write("\n".join(empty))
sys.exit(1 if empty else 0)
PY
}

test_dashboard() {
    local n
    if ! wait_for_quiet dashboard_has_data; then
        fail "dashboard queries without data:"$'\n'"$(cat "$work/empty")"
    fi
    n=$(wc -l <"$work/queries")
    echo "ok Prometheus: all $n queries of the dashboard return data, $holder_unit among the units"
}

# Every alerting rule loaded and evaluated without error against the real exporter's series.
rules_healthy() {
    curl -sS --max-time 30 "http://127.0.0.1:$pport/api/v1/rules" >"$work/rules.json" || return 1
    python3 - "$work/rules.json" <<'PY'
import json, sys
rules = [r for g in json.load(open(sys.argv[1]))["data"]["groups"] for r in g["rules"]]
names = sorted(r["name"] for r in rules)
assert names == ["MemstrackDaemonDown", "MemstrackEventsLost", "MemstrackExporterDown",
                 "MemstrackUnitMemoryGrowing"], names
assert all(r["health"] == "ok" and r.get("lastEvaluation", "").startswith("2") for r in rules), rules
PY
}

test_rules() {
    wait_for_quiet rules_healthy || fail "the alerting rules are not all loaded and healthy: $(cat "$work/rules.json")"
    echo "ok Prometheus: the 4 alerting rules evaluate without error"
}

# After memstrackd stopped: the scrapes say memstrack_up 0 and MemstrackDaemonDown is pending (its
# for: 5m has not passed).
daemon_down_pending() {
    curl -sS --max-time 30 "http://127.0.0.1:$pport/api/v1/alerts" >"$work/alerts.json" || return 1
    python3 - "$work/alerts.json" <<'PY'
import json, sys
alerts = json.load(open(sys.argv[1]))["data"]["alerts"]
assert any(a["labels"]["alertname"] == "MemstrackDaemonDown" and a["state"] == "pending" for a in alerts), alerts
PY
}

test_daemon_down_alert() {
    wait_for_quiet daemon_down_pending || fail "MemstrackDaemonDown is not pending: $(cat "$work/alerts.json")"
    echo "ok Prometheus: MemstrackDaemonDown pending once memstrackd stopped"
}

# memstrackd gone: a scrape still answers, with memstrack_up 0 and nothing else.
test_daemon_gone() {
    stop_daemon
    scrape 'text/plain' "$work/down" || fail "scrape without memstrackd failed"
    grep -q '^memstrack_up 0$' "$work/down" || fail "memstrack_up is not 0 without memstrackd: $(cat "$work/down")"
    grep -q '^memstrack_task_bytes' "$work/down" && fail "task metrics without memstrackd"
    grep -q 'Cannot query memstrackd' "$work/metrics.log" || fail "memstrack-metrics did not log the failure"
    echo "ok memstrackd gone: memstrack_up 0"
}

# As wait_for, but returns 1 at the bound instead of failing, so that the caller can say what it saw.
wait_for_quiet() {
    local deadline=$((SECONDS + WAIT))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.5
    done
}

start_daemon
start_loadgen
echo "$lg_pid" >"$holder_cgroup/cgroup.procs" || fail "cannot move loadgen ($lg_pid) into $holder_cgroup"
lg alloc allocated
wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted
start_metrics
test_formats
test_prometheus
test_dashboard
test_rules
test_daemon_gone
test_daemon_down_alert
test_metrics_exit
echo "all metrics-prometheus tests passed"
