#!/bin/bash
# SPDX-License-Identifier: MIT
# Numbers at the top of their range, through the whole daemon: a value no machine can have is refused
# with its file and line; counts that add up beyond their ceiling (2^52 - 1 pages in all, 2^63 - 1 for
# other counts, the most a reply carries) stay there and Status saturatedEvents says so; an address no
# page frame number can hold is an invalid event. No total, in any reply, is ever negative. Replayed events and page_owner logs: no kernel tracing, no root.
#
# Usage: test-input-limits.sh MEMSTRACKD MEMSTRACKCTL
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"
INT64_MAX=9223372036854775807
PAGES_MAX=4503599627370495

# start SOURCE INPUT: memstrackd on INPUT, answering.
start() {
    "$D" --foreground --source="$1" --source-input="$2" --socket="$work/sock" --group="$(id -gn)" \
        --state-directory= >"$work/log" 2>&1 &
    daemon=$!
    daemon_answers "$2"
}

# Every reply a client can ask for, saved for the checks below: status, a snapshot file (tasks, modules,
# units, the stack tree, the summary), the history.
collect() {
    local c="$CTL --address unix:$work/sock"
    $c status --json=short >"$work/status" 2>"$work/err" || fail "$1: memstrackctl status: $(cat "$work/err")"
    $c snapshot --file="$work/snapshot" >/dev/null 2>"$work/err" ||
        fail "$1: memstrackctl snapshot --file: $(cat "$work/err")"
    $c history --json=short >"$work/history" 2>"$work/err" || fail "$1: memstrackctl history: $(cat "$work/err")"
    $c tasks --all --json=short >"$work/tasks" 2>"$work/err" || fail "$1: memstrackctl tasks: $(cat "$work/err")"
    $c status >"$work/status.txt" 2>"$work/err" || fail "$1: memstrackctl status: $(cat "$work/err")"
}

# check NAME PYTHON: no negative number anywhere in the replies, and PYTHON (an expression over status and
# tasks, {pid: task}) true.
check() {
    python3 - "$work" "$2" <<'END' || fail "$1: $(cat "$work/status")"
import json, sys
work, expr = sys.argv[1], sys.argv[2]
load = lambda name: json.load(open(f"{work}/{name}"))
def negatives(v, path):
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        return [path] if v < 0 else []
    if isinstance(v, dict):
        return [p for k, x in v.items() for p in negatives(x, f"{path}.{k}")]
    if isinstance(v, list):
        return [p for i, x in enumerate(v) for p in negatives(x, f"{path}[{i}]")]
    return []
ok = True
for name in ("status", "snapshot", "history", "tasks"):
    bad = negatives(load(name), name)
    if bad:
        print(f"negative numbers: {bad[:10]}", file=sys.stderr)
        ok = False
status, tasks = load("status"), {t["pid"]: t for t in load("tasks")["tasks"]}
if not eval("(" + expr + ")"):
    print(f"not true: {expr}", file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
END
}

# refused NAME FILE LINE TEXT: memstrackd refuses the replay FILE, naming LINE and saying TEXT. Waits a
# minute at most (a hang guard: memstrackd that takes the file runs on).
refused() {
    local status
    "$D" --foreground --no-socket --source=replay --source-input="$2" --state-directory= >"$work/log" 2>&1 &
    daemon=$!
    for _ in $(seq 600); do
        kill -0 "$daemon" 2>/dev/null || break
        sleep 0.1
    done
    kill "$daemon" 2>/dev/null && fail "$1: memstrackd took the file"
    wait "$daemon"
    status=$?
    daemon=
    [ $status = 1 ] || fail "$1: exit status $status, expected 1"
    grep -q "$(basename "$2"):$3: .*$4" "$work/log" || fail "$1: the log does not say '$(basename "$2"):$3: ... $4'"
    echo "ok $1"
}

# Sample deltas that no machine's pages can reach (above 2^52, all of a 64-bit physical address space
# in 4 KiB pages), and loss counts beyond a reply's integers, are refused with their line.
printf 'task 1 a\nsample 1 %s %s 0xffffffff81000000\n' $INT64_MAX $INT64_MAX >"$work/huge-sample"
refused "a sample of 2^63 - 1 pages" "$work/huge-sample" 2 "not a page count"
printf 'task 1 a\nsample 1 -4503599627370497 0 0xffffffff81000000\n' >"$work/huge-negative"
refused "a sample of -(2^52 + 1) pages" "$work/huge-negative" 2 "not a page count"
printf 'task 1 a\nsample 1 1 4503599627370497 0xffffffff81000000\n' >"$work/huge-peak"
refused "a sample rising 2^52 + 1 pages" "$work/huge-peak" 2 "not a page count"
printf 'lost 0 1\nlost 0 18446744073709551615\n' >"$work/huge-lost"
refused "a loss of 2^64 - 1 records" "$work/huge-lost" 2 "more records lost than a count holds"
printf 'task 1 a\nobject 1 0xffff888000001000 4294967296\n' >"$work/huge-object"
refused "a slab object of 4 GiB" "$work/huge-object" 2 "more than 4 GiB in one slab object"

# The most a sample may say, twice: 2^52 pages are already more than 2^52 - 1. The totals stop there, an
# allocation then is not tracked, saturatedEvents counts the three, and what goes afterwards is taken off.
{
    echo "task 1 big"
    echo "task 2 small"
    for _ in 1 2; do echo "sample 1 4503599627370496 4503599627370496 0xffffffff81000000"; done
    echo "alloc 2 0x1000 0"
    echo "sample 1 -5 0 0xffffffff81000000"
} >"$work/saturate"
start replay "$work/saturate"
collect "samples beyond 2^52"
check "samples beyond 2^52" \
    "status['trackedPages'] == $PAGES_MAX - 5 and status['peakTrackedPages'] == $PAGES_MAX and
     status['saturatedEvents'] == 3 and tasks[1]['currentPages'] == $PAGES_MAX - 5 and
     tasks[1]['peakPages'] == $PAGES_MAX and tasks[2]['currentPages'] == 0"
grep -q "^ *Saturated: 3 events" "$work/status.txt" ||
    fail "memstrackctl status does not show the saturation: $(cat "$work/status.txt")"
daemon_stop
grep -q "^Saturated: 3 events would have taken a count beyond its ceiling" "$work/log" ||
    fail "the summary does not show the saturation"
echo "ok samples beyond 2^52 - 1 pages stay at 2^52 - 1"

# Losses: 2^63 - 1 twice, and 5 more, are 2^63 - 1 lost (not 3).
printf 'lost 0 %s\nlost 0 %s\nlost 1 5\n' $INT64_MAX $INT64_MAX >"$work/lost"
start replay "$work/lost"
collect "losses beyond 2^63"
check "losses beyond 2^63" "status['lostEvents'] == $INT64_MAX and status['saturatedEvents'] >= 1"
daemon_stop
echo "ok losses beyond 2^63 - 1 stay at 2^63 - 1"

# Page frame numbers beyond 2^40 (52-bit physical addresses of 4 KiB pages), or a block that would end
# there: invalid events, counted and not applied; the page in range is tracked.
cat >"$work/pfn" <<'END'
task 1 a
alloc 1 0x10000000000 0
alloc 1 0xffffffffff 1
alloc 1 0xffffffffffffffff 0
free 0x10000000000 0
alloc 1 0xffffffffff 0
END
start replay "$work/pfn"
collect "pfns beyond 2^40"
check "pfns beyond 2^40" \
    "status['invalidEvents'] == 4 and status['trackedPages'] == 1 and status['untrackedFrees'] == 0"
daemon_stop
echo "ok pfns beyond 2^40 are invalid events"

# page_owner counts no machine has: skipped as bad records with their line; the rest is imported.
cat >"$work/page-owner" <<'END'
2 times, 18446744073709551615 pages, PID 10, task_comm_name: huge
3 times, 3 pages, PID 11, task_comm_name: fine
2 times, 18446744073709551615 pages, PID 12, task_comm_name: huge
END
start page-owner "$work/page-owner"
collect "page_owner counts beyond a machine"
check "page_owner counts beyond a machine" \
    "status['trackedPages'] == 3 and tasks[11]['currentPages'] == 3 and 10 not in tasks and
     [l['count'] for l in status['lostByReason'] if l['reason'] == 'badRecord'] == [2]"
daemon_stop
for line in 1 3; do
    grep -q "page-owner:$line: not a page_owner record (more pages than a machine has)" "$work/log" ||
        fail "page_owner counts beyond a machine: line $line is not named"
done
echo "ok page_owner counts beyond a machine are bad records"

# Many page_owner records of 2^52 pages each: the totals stop at 2^52 - 1, each record held there.
for i in 1 2 3; do echo "1 times, 4503599627370496 pages, PID 20, task_comm_name: many"; done >"$work/many"
start page-owner "$work/many"
collect "page_owner totals beyond 2^52"
check "page_owner totals beyond 2^52" \
    "status['trackedPages'] == $PAGES_MAX and status['saturatedEvents'] == 3 and tasks[20]['currentPages'] == $PAGES_MAX"
daemon_stop
echo "ok page_owner totals beyond 2^52 - 1 stay at 2^52 - 1"

echo "numbers at the top of their range are refused or held, never wrapped"
