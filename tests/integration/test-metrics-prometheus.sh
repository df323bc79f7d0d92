#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrack-metrics end to end: memstrackd on the live kernel, loadgen holding 64 MiB, memstrack-metrics
# on a loopback socket passed the way systemd passes it (systemd-socket-activate), promtool on what it
# serves in both formats, and a real Prometheus scraping it every second: its query API must return the
# holder's bytes within 0.5 % of what memstrackd's Tasks says for that pid.
# Needs root, perf events and the kmem tracepoints, and Debian's prometheus package (prometheus,
# promtool), curl and systemd-socket-activate; skips (77) otherwise.
#
# Usage: test-metrics-prometheus.sh MEMSTRACKD MEMSTRACKCTL LOADGEN MEMSTRACK_METRICS TESTS_DIR
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
METRICS=${4:?memstrack-metrics}
TESTS=${5:?tests dir}
. "$TESTS/integration/memstrackctl-lib.sh"

for p in prometheus promtool curl systemd-socket-activate; do
    command -v "$p" >/dev/null ||
        skip "no $p (Debian packages prometheus, curl and systemd; scripts/deps installs them)"
done
# The holder: 64 MiB whatever the page size.
PAGES=$(( (64 << 20) / $(getconf PAGESIZE) ))

lib_init test-metrics-prometheus

# A TCP port on loopback that nothing listens on now (the kernel picks it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

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

# memstrackd gone: a scrape still answers, with memstrack_up 0 and nothing else.
test_daemon_gone() {
    stop_daemon
    scrape 'text/plain' "$work/down" || fail "scrape without memstrackd failed"
    grep -q '^memstrack_up 0$' "$work/down" || fail "memstrack_up is not 0 without memstrackd: $(cat "$work/down")"
    grep -q '^memstrack_task_bytes' "$work/down" && fail "task metrics without memstrackd"
    grep -q 'Cannot query memstrackd' "$work/metrics.log" || fail "memstrack-metrics did not log the failure"
    echo "ok memstrackd gone: memstrack_up 0"
}

# SIGTERM ends memstrack-metrics cleanly (in the sanitizer build, without leaks: ASan would exit 1).
test_metrics_exit() {
    local r
    kill "$metrics_pid"
    wait "$metrics_pid"; r=$?
    [ $r -eq 0 ] || fail "memstrack-metrics exited $r on SIGTERM: $(tail -20 "$work/metrics.log")"
    echo "ok memstrack-metrics exits 0 on SIGTERM"
}

start_daemon
start_loadgen
lg alloc allocated
wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted
start_metrics
test_formats
test_prometheus
test_daemon_gone
test_metrics_exit
echo "all metrics-prometheus tests passed"
