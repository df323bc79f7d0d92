#!/bin/bash
# SPDX-License-Identifier: MIT
# History against memstrackd on the live kernel: loadgen grows to $PAGES pages, holds them and frees
# them, and `memstrackctl history --task PID --json` shows the three phases with the pages Tasks
# charged it: a bucket peak within 0.5 % of what it held, buckets holding that much, then buckets back
# near 0; no bucket's peak below its current. The minute buckets fold the same. Then the daemon stops
# and starts again on the same --state-directory and still has those buckets; a corrupt state file is
# logged and replaced.
# Needs root, perf events and the kmem tracepoints; skips (77) otherwise.
#
# Usage: test-history-live.sh MEMSTRACKD MEMSTRACKCTL LOADGEN TESTS_DIR
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
TESTS=${4:?tests dir}
. "$TESTS/integration/memstrackctl-lib.sh"

lib_init test-history-live
mkdir "$work/state"

# The history of loadgen's task as JSON into $work/$1.json (arguments after $1 go to history).
history_json() {
    local out=$1; shift
    ctl --json=short history --task "$lg_pid" "$@" >"$work/$out.json" 2>"$work/ctl.err" ||
        fail "history --task $lg_pid failed: $(cat "$work/ctl.err")"
}

# Succeeds once the history has $1 buckets after the first holding $2 pages or more (+-0.5 %).
buckets_after_level() {
    history_json poll
    python3 - "$work/poll.json" "$1" "$2" <<'PY'
import json, sys
points = json.load(open(sys.argv[1]))["points"]
need, level = int(sys.argv[2]), int(sys.argv[3])
idx = [i for i, p in enumerate(points) if abs(p["current"] - level) <= level * 0.005]
sys.exit(0 if idx and len(points) - idx[0] >= need else 1)
PY
}

# Succeeds once the newest bucket's current is below $1 pages.
newest_below() {
    history_json poll
    python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["points"]; sys.exit(0 if p and p[-1]["current"] < int(sys.argv[2]) else 1)' \
        "$work/poll.json" "$1"
}

start_daemon --state-directory "$work/state"
start_loadgen
# Asking for a task starts its history at once, whatever the top N.
history_json before
lg alloc allocated
wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted
held=$(pages_of "$lg_pid")
# Hold: three full buckets at the held level at least (the tick is once a second: a bound, not a time).
wait_for "three 1 s buckets holding $held pages" buckets_after_level 4 "$held"
lg free freed
small=$((held / 100))
wait_for "loadgen's pages to go below $small" test "$(pages_of "$lg_pid")" -lt "$small"
wait_for "a bucket below $small pages" newest_below "$small"
history_json phases

check_phases() {
    python3 - "$1" "$held" "$2" <<'PY'
import json, sys
reply = json.load(open(sys.argv[1]))
held, what = int(sys.argv[2]), sys.argv[3]
points = reply["points"]
assert reply["what"] == "task", reply
assert points, "no buckets"
for a, b in zip(points, points[1:]):
    assert a["timestampUsec"] < b["timestampUsec"], ("not oldest first", a, b)
for p in points:
    assert p["peak"] >= p["current"], ("a peak below its current", p)
near = lambda v: abs(v - held) <= held * 0.005
# grow: the first bucket at the held level; before it less.
hold = [i for i, p in enumerate(points) if near(p["current"])]
assert hold, ("no bucket holds %d pages" % held, points)
first, last = hold[0], hold[-1]
peak = max(p["peak"] for p in points)
assert near(peak), ("the highest peak %d is not within 0.5 %% of %d" % (peak, held))
assert near(points[first]["peak"]), ("the first full bucket's peak", points[first], held)
# hold: every bucket between the first and last at the level holds it.
assert all(near(p["current"]) for p in points[first:last + 1]), ("a dip while held", points[first:last + 1])
# shrink: after the last held bucket, back near 0, and the bucket that saw the free keeps the peak.
after = points[last + 1:]
assert after, "no bucket after the free"
assert after[-1]["current"] < held / 100, ("not back near 0", after[-1])
assert near(max(p["peak"] for p in points[last:])), ("the free's bucket lost the peak", points[last:last + 2])
print("ok %s: grow to %d (peak %d), %d buckets held, back to %d" %
      (what, held, peak, last - first + 1, after[-1]["current"]))
PY
}
check_phases "$work/phases.json" "1 s buckets" || fail "the 1 s history is wrong: $(cat "$work/phases.json")"

# The minute buckets: same peaks, folded (--since beyond 10 minutes picks them).
history_json minutes --since 2h
python3 - "$work/minutes.json" "$held" <<'PY' || fail "the 1 min history is wrong: $(cat "$work/minutes.json")"
import json, sys
reply = json.load(open(sys.argv[1]))
held = int(sys.argv[2])
assert reply["resolution"] == 60, reply
points = reply["points"]
assert 1 <= len(points) <= 3, points
assert abs(max(p["peak"] for p in points) - held) <= held * 0.005, points
assert points[-1]["current"] < held / 100, points
assert all(p["peak"] >= p["current"] for p in points), points
print("ok 1 min buckets: peak %d" % max(p["peak"] for p in points))
PY

# The text table: a header and one line per bucket.
out=$(ctl history --task "$lg_pid" --since 1h) || fail "history (text) failed"
grep -qE '^TIME +CURRENT +PEAK$' <<<"$out" || fail "history has no table: $out"
echo "ok text table"

# Restart on the same state directory: the buckets from before are still there.
stop_daemon
[ -s "$work/state/history" ] || fail "no history file in the state directory after the daemon stopped"
start_daemon --state-directory "$work/state"
history_json restarted
python3 - "$work/phases.json" "$work/restarted.json" <<'PY' || fail "the history did not survive the restart"
import json, sys
before = json.load(open(sys.argv[1]))["points"]
after = {p["timestampUsec"]: p for p in json.load(open(sys.argv[2]))["points"]}
# The newest bucket may have had a later sample before the stop; every older one is kept as it was.
for p in before[:-1]:
    assert after.get(p["timestampUsec"]) == p, ("lost or changed", p, after.get(p["timestampUsec"]))
print("ok restart kept %d buckets" % (len(before) - 1))
PY
grep -q "Read the history from $work/state/history" "$work/memstrackd.log" || fail "the daemon did not say it read the history"

# A corrupt file: logged, ignored, and the daemon serves a new history.
stop_daemon
printf 'MSTKHIST garbage' >"$work/state/history"
start_daemon --state-directory "$work/state"
grep -q "corrupt" "$work/memstrackd.log" || fail "the corrupt history file was not logged"
ctl --json=short history >"$work/total.json" || fail "history of the total failed after a corrupt file"
echo "ok corrupt file logged and replaced"
stop_daemon
[ "$(head -c 8 "$work/state/history")" = MSTKHIST ] && [ "$(stat -c %s "$work/state/history")" -gt 100 ] ||
    fail "the corrupt file was not replaced at exit"
ls "$work/state" | grep -v '^history$' && fail "temporary files left in the state directory"
echo "ok"
