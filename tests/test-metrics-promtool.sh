#!/bin/bash
# SPDX-License-Identifier: MIT
# promtool (Debian's prometheus package) on memstrack-metrics' exposition of a fixture whose names need
# escaping: `promtool check metrics` lints the Prometheus text format; the OpenMetrics text goes through
# Prometheus' own OpenMetrics parser (`promtool tsdb create-blocks-from openmetrics`, which wants a
# timestamp on every sample, so one is added), which also checks # UNIT against the names and # EOF.
# Then what ships beside memstrack-metrics: the alerting rules pass `promtool check rules` and their unit
# tests (`promtool test rules`), and every query of the Grafana dashboard parses as PromQL (each one
# made a recording rule for `promtool check rules`; tests/integration/test-metrics-prometheus.sh runs
# them against a real Prometheus).
# Skips (77) without promtool.
#
# Usage: test-metrics-promtool.sh TEST_METRICS ALERT_RULES ALERT_RULES_TEST DASHBOARD DASHBOARD_QUERIES
set -uo pipefail

TEST_METRICS=${1:?test-metrics}
RULES=${2:?alert rules}
RULES_TEST=${3:?alert rules test}
DASHBOARD=${4:?dashboard}
DASHBOARD_QUERIES=${5:?dashboard-queries.py}

command -v promtool >/dev/null || { echo "SKIP: no promtool (apt-get install prometheus)" >&2; exit 77; }
work=$(mktemp -d /tmp/test-metrics-promtool.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$TEST_METRICS" --write "$work" || fail "test-metrics --write failed"

promtool check metrics <"$work/fixture.prom" >"$work/lint" 2>&1 || fail "promtool check metrics: $(cat "$work/lint")"
[ -s "$work/lint" ] && fail "promtool check metrics has remarks: $(cat "$work/lint")"
echo "ok promtool check metrics (text 0.0.4)"

# The parser must reject what is not OpenMetrics, or its passing proves nothing.
om_parses() {
    rm -rf "$work/blocks"
    promtool tsdb create-blocks-from openmetrics "$1" "$work/blocks" >"$work/om.log" 2>&1
}
ts=$(date +%s)
sed -E "/^#/! s/\$/ $ts/" "$work/fixture.om" >"$work/om-ts"
om_parses "$work/om-ts" || fail "promtool's OpenMetrics parser rejects the output: $(cat "$work/om.log")"
grep -E '^memstrack_task_bytes' "$work/fixture.om" | wc -l | grep -qx 5 || fail "expected 5 task series"
grep -v '^# EOF' "$work/om-ts" >"$work/no-eof"
om_parses "$work/no-eof" && fail "promtool's OpenMetrics parser took a text without # EOF"
sed 's/^# UNIT memstrack_uptime_seconds seconds/# UNIT memstrack_uptime_seconds bytes/' "$work/om-ts" >"$work/bad-unit"
om_parses "$work/bad-unit" && fail "promtool's OpenMetrics parser took a unit that is not the name's suffix"
echo "ok promtool's OpenMetrics parser"

promtool check rules "$RULES" >"$work/rules.log" 2>&1 || fail "promtool check rules: $(cat "$work/rules.log")"
grep -q 'SUCCESS: 4 rules found' "$work/rules.log" || fail "expected 4 alerting rules: $(cat "$work/rules.log")"
echo "ok promtool check rules"
promtool test rules "$RULES_TEST" >"$work/rules-test.log" 2>&1 ||
    fail "promtool test rules: $(cat "$work/rules-test.log")"
echo "ok promtool test rules"

# The dashboard's queries as recording rules, for promtool's PromQL parser.
"$DASHBOARD_QUERIES" "$DASHBOARD" >"$work/queries" || fail "cannot read the dashboard's queries"
n=$(wc -l <"$work/queries")
[ "$n" -ge 10 ] || fail "only $n queries in the dashboard"
{
    echo "groups:"
    echo "  - name: dashboard"
    echo "    rules:"
    i=0
    while IFS=$'\t' read -r _ query; do
        i=$((i + 1))
        printf '      - record: dashboard:query_%d\n        expr: %s\n' "$i" \
            "$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$query")"
    done <"$work/queries"
} >"$work/dashboard-rules.yml"
promtool check rules "$work/dashboard-rules.yml" >"$work/dashboard-rules.log" 2>&1 ||
    fail "a dashboard query does not parse: $(cat "$work/dashboard-rules.log")"
grep -q "SUCCESS: $n rules found" "$work/dashboard-rules.log" ||
    fail "expected $n dashboard queries checked: $(cat "$work/dashboard-rules.log")"
echo "ok the dashboard's $n queries parse"
