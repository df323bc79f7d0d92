#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackd-metrics.socket and .service as built: `systemd-analyze verify` says nothing, offline (no
# systemd as PID 1 needed), and `systemd-analyze security --offline=yes` rates the service's sandbox at
# most MAX_EXPOSURE (0.6 when written: no capabilities, private network, AF_UNIX only; see the unit).
# ExecStart= is pointed at the built binary, which verify wants to exist. Skips (77) without
# systemd-analyze.
#
# Usage: test-metrics-units.sh BUILT_SERVICE SOCKET_UNIT MEMSTRACK_METRICS
set -uo pipefail

SERVICE=${1:?service}
SOCKET=${2:?socket}
METRICS=${3:?memstrack-metrics}
MAX_EXPOSURE=1.0

command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze" >&2; exit 77; }
work=$(mktemp -d /tmp/test-metrics-units.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

sed "s|^ExecStart=[^ ]*|ExecStart=$(realpath "$METRICS")|" "$SERVICE" >"$work/memstrackd-metrics.service"
cp "$SOCKET" "$work/memstrackd-metrics.socket"
cd "$work" || exit 1

out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no ./memstrackd-metrics.socket \
      ./memstrackd-metrics.service 2>&1) || fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify printed: $out"
echo "ok systemd-analyze verify"

line=$(systemd-analyze security --offline=yes ./memstrackd-metrics.service 2>&1 | grep 'Overall exposure level')
score=$(sed -E 's/.*: ([0-9.]+) .*/\1/' <<<"$line")
[ -n "$score" ] || fail "no exposure level from systemd-analyze security: $line"
python3 -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "$score" "$MAX_EXPOSURE" ||
    fail "memstrackd-metrics.service exposure $score, above $MAX_EXPOSURE"
echo "ok systemd-analyze security: $score"
