#!/bin/bash
# SPDX-License-Identifier: MIT
# OOM kills where oom:mark_victim cannot be opened (here: a tracefs without it, --tracefs): memstrackd
# logs one line and runs on, Status and OomKills say kills are not watched and why, memstrackctl oom and
# status print it. The replay source, so no kernel tracing and no root.
#
# Usage: test-oom-off.sh MEMSTRACKD MEMSTRACKCTL
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"
mkdir -p "$work/tracefs/events"

printf 'task 4242 a\nalloc 4242 0x1000 2\n' >"$work/events"
"$D" --foreground --source=replay --source-input="$work/events" --tracefs="$work/tracefs" \
    --socket="$work/sock" --group="$(id -gn)" >"$work/log" 2>&1 &
daemon=$!
daemon_answers "the replayed events"

reason="the kernel has no oom:mark_victim tracepoint"
"$CTL" --address "unix:$work/sock" status --json=short >"$work/status" 2>&1 || fail "status: $(cat "$work/status")"
python3 - "$work/status" "$reason" <<'END' || fail "Status: $(cat "$work/status")"
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["oomWatching"] is False and s["oomWatchReason"] == sys.argv[2] else 1)
END
"$CTL" --address "unix:$work/sock" oom --json=short >"$work/oom" 2>&1 || fail "oom --json: $(cat "$work/oom")"
python3 - "$work/oom" "$reason" <<'END' || fail "OomKills: $(cat "$work/oom")"
import json, sys
o = json.load(open(sys.argv[1]))
ok = o["watching"] is False and o["reason"] == sys.argv[2] and o["kills"] == [] and o["killsSeen"] == 0
ok = ok and o["limits"] == {"top": 5, "kills": 16, "peakSnapshots": 16, "peakIntervalUsec": 10000000,
                            "peakGrowthPercent": 10, "pressureRecords": 16}
sys.exit(0 if ok else 1)
END
"$CTL" --address "unix:$work/sock" oom >"$work/oom.txt" 2>&1 || fail "oom: $(cat "$work/oom.txt")"
grep -qx "OOM kills are not watched: $reason." "$work/oom.txt" || fail "memstrackctl oom: $(cat "$work/oom.txt")"
"$CTL" --address "unix:$work/sock" status >"$work/status.txt" 2>&1 || fail "status: $(cat "$work/status.txt")"
grep -q "OOM kills: not watched: $reason$" "$work/status.txt" || fail "memstrackctl status: $(cat "$work/status.txt")"
[ "$(grep -c "Not watching OOM kills: $reason." "$work/log")" = 1 ] || fail "memstrackd did not log it once"
echo "ok: OOM kills off, said by Status, OomKills, memstrackctl oom and status, and one log line"
