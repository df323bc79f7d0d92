#!/bin/bash
# SPDX-License-Identifier: MIT
# promtool (Debian's prometheus package) on memstrack-metrics' exposition of a fixture whose names need
# escaping: `promtool check metrics` lints the Prometheus text format; the OpenMetrics text goes through
# Prometheus' own OpenMetrics parser (`promtool tsdb create-blocks-from openmetrics`, which wants a
# timestamp on every sample, so one is added), which also checks # UNIT against the names and # EOF.
# Skips (77) without promtool.
#
# Usage: test-metrics-promtool.sh TEST_METRICS
set -uo pipefail

TEST_METRICS=${1:?test-metrics}

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
