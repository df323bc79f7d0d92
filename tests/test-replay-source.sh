#!/bin/bash
# SPDX-License-Identifier: MIT
# The replay source (daemon/sources/replay.c) through the whole daemon: memstrackd --source=replay reads
# events from a text file and memstrackctl's answers count exactly those, per task and per unit (cgroups
# named from a fake cgroup tree, --cgroup-root). No kernel tracing, no root.
#
# Usage: test-replay-source.sh MEMSTRACKD MEMSTRACKCTL
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

cat >"$work/events" <<'END'
# 4242 keeps an order-2 block and frees a page; 4300 keeps an order-3 block.
task 4242 replayed-a /usr/bin/replayed-a --flag
task 4300 replayed-b
alloc 4242 0x1000 2 0xffffffff81000000 0xffffffff81000010
alloc 4242 0x2000 0
free 0x2000 0

alloc 4300 0x3000 3

# 4500's pages come as aggregated samples (an alloc and a free for the task): +3, then -5, of
# which 2 no sample had charged.
task 4500 sampled
sample 4500 3 3 0xffffffff81000000
sample 4500 -5 0 0xffffffff81000000
# Slab objects: one allocated and freed, one live (Slab), one free of a pointer never seen.
object 4300 0xffff888000001000 192
object-free 0xffff888000001000
object 4242 0xffff888000002000 64
object-free 0xffff888000003000
# 4600 forked by 4242 keeps a page: its parentPid is 4242 (a task seeded without a parent has none).
fork 4600 4242
alloc 4600 0x5000 0
END

# The group of whoever runs the test may connect, root or not.
"$D" --foreground --source=replay --source-input="$work/events" --socket="$work/sock" --group="$(id -gn)" \
    >"$work/log" 2>&1 &
daemon=$!
daemon_answers "the replayed events"
"$CTL" --address "unix:$work/sock" tasks --all --json=short >"$work/tasks" 2>"$work/err" ||
    fail "memstrackctl tasks: $(cat "$work/err")"
"$CTL" --address "unix:$work/sock" status --json=short >"$work/status" 2>"$work/err" ||
    fail "memstrackctl status: $(cat "$work/err")"
"$CTL" --address "unix:$work/sock" status >"$work/status.txt" 2>"$work/err" ||
    fail "memstrackctl status: $(cat "$work/err")"
"$CTL" --address "unix:$work/sock" slab --by task --json=short >"$work/slab" 2>"$work/err" ||
    fail "memstrackctl slab: $(cat "$work/err")"
python3 - "$work/slab" <<'END' || fail "Slab differs from the replayed objects: $(cat "$work/slab")"
import json, sys
s = json.load(open(sys.argv[1]))
rows = [(r["pid"], r["liveObjects"], r["liveBytesAllocated"], r["peakLiveBytes"]) for r in s["rows"]]
totals = tuple(s[k] for k in ("liveObjects", "liveBytesAllocated", "peakLiveBytes", "allocs", "frees", "unknownFrees"))
sys.exit(0 if rows == [(4242, 1, 64, 64)] and totals == (1, 64, 192, 2, 1, 1) and not s["tracing"] else 1)
END

python3 - "$work/tasks" "$work/status" <<'END' || fail "answers differ from the replayed events"
import json, sys
tasks = {t["pid"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
status = json.load(open(sys.argv[2]))
want = {4242: ("replayed-a", "/usr/bin/replayed-a --flag", 4, 5, 2, 1), 4300: ("replayed-b", None, 8, 8, 1, 0),
        4500: ("sampled", None, 0, 3, 1, 1), 4600: ("replayed-a", "/usr/bin/replayed-a --flag", 1, 1, 1, 0)}
ok = sorted(tasks) == sorted(want)
parents = {pid: t.get("parentPid", "absent") for pid, t in tasks.items()}
if parents != {4242: None, 4300: None, 4500: None, 4600: 4242}:
    print(f"parentPid: {parents}", file=sys.stderr)
    ok = False
counts = {k: status.get(k) for k in ("samples", "sampledPages", "sampleUntrackedPages", "unsupportedEvents")}
if counts != {"samples": 2, "sampledPages": 0, "sampleUntrackedPages": 2, "unsupportedEvents": 0}:
    print(f"status: {counts}", file=sys.stderr)
    ok = False
for pid, (comm, cmdline, cur, peak, allocs, frees) in want.items():
    t = tasks.get(pid, {})
    got = (t.get("comm"), t.get("cmdline"), t.get("currentPages"), t.get("peakPages"), t.get("allocs"), t.get("frees"))
    if got != (comm, cmdline, cur, peak, allocs, frees):
        print(f"task {pid}: {got}, expected {(comm, cmdline, cur, peak, allocs, frees)}", file=sys.stderr)
        ok = False
print(json.dumps(status), file=sys.stderr) if not ok else None
sys.exit(0 if ok else 1)
END
grep -q '"backend": *"replay"' "$work/status" || fail "status does not name the replay backend: $(cat "$work/status")"
grep -q '^ *Samples: 2 (.*; 2 pages taken off that no sample had charged)$' "$work/status.txt" ||
    fail "status does not show the samples: $(cat "$work/status.txt")"
daemon_stop

# Pages per unit without a kernel: cgroup ids are the inode numbers of a fake cgroup tree (--cgroup-root).
# 4242 allocates in replay.service, moves to session-7.scope and allocates there; freeing its first block
# takes the pages off replay.service. A cgroup id the tree does not have is "[removed]".
cg=$work/cgroup
mkdir -p "$cg/system.slice/replay.service" "$cg/user.slice/user-1000.slice/session-7.scope"
service=$(stat -c %i "$cg/system.slice/replay.service")
session=$(stat -c %i "$cg/user.slice/user-1000.slice/session-7.scope")
cat >"$work/units-events" <<END
task 4242 replayed-a
cgroup $service
alloc 4242 0x1000 2 0xffffffff81000000
alloc 4242 0x1100 1 0xffffffff81000000
cgroup $session
alloc 4242 0x2000 3 0xffffffff81000010
free 0x1000 2
cgroup 999999999
alloc 4242 0x3000 0
END
"$D" --foreground --source=replay --source-input="$work/units-events" --socket="$work/sock" --group="$(id -gn)" \
    --cgroup-root="$cg" >"$work/log" 2>&1 &
daemon=$!
daemon_answers "the replayed events"
"$CTL" --address "unix:$work/sock" units --all --stacks 1 --json=short >"$work/units" 2>"$work/err" ||
    fail "memstrackctl units: $(cat "$work/err")"
python3 - "$work/units" <<'END' || fail "units differ from the replayed events: $(cat "$work/units")"
import json, sys
units = {u["name"]: u for u in json.load(open(sys.argv[1]))["units"]}
# 4242 allocated last in the cgroup nobody could find: its one task is counted there.
want = {"session-7.scope": ("/user.slice/user-1000.slice/session-7.scope", 8, 8, 0),
        "replay.service": ("/system.slice/replay.service", 2, 6, 0),
        "[removed]": (None, 1, 1, 1)}
ok = sorted(units) == sorted(want)
for name, (cgroup, cur, peak, tasks) in want.items():
    u = units.get(name, {})
    got = (u.get("cgroup"), u.get("currentPages"), u.get("peakPages"), u.get("tasks"))
    if got != (cgroup, cur, peak, tasks):
        print(f"unit {name}: {got}, expected {(cgroup, cur, peak, tasks)}", file=sys.stderr)
        ok = False
if units.get("[removed]", {}).get("live") is not False or units.get("replay.service", {}).get("live") is not True:
    print("live: [removed] must not be, replay.service must", file=sys.stderr)
    ok = False
stacks = units.get("session-7.scope", {}).get("topStacks") or [{}]
if stacks[0].get("currentPages") != 8 or len(stacks[0].get("frames", [])) != 1:
    print(f"session-7.scope's stack: {stacks}", file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
END
"$CTL" --address "unix:$work/sock" units --no-legend >"$work/units.txt" 2>&1 || fail "memstrackctl units (text)"
awk '$1 == "session-7.scope" && $4 == 8 { f = 1 } END { exit !f }' "$work/units.txt" ||
    fail "memstrackctl units does not list session-7.scope with 8 pages: $(cat "$work/units.txt")"
daemon_stop

# A line that is not an event stops the start, naming the line; so does a missing input.
printf 'task 1 a\nalloc 1 0x10 99\n' >"$work/bad"
"$D" --foreground --no-socket --source=replay --source-input="$work/bad" >"$work/log" 2>&1
status=$?
[ $status = 1 ] || fail "a bad replay file: exit $status"
grep -q "bad:2: not a replay event" "$work/log" || fail "a bad replay file: $(cat "$work/log")"
"$D" --foreground --no-socket --source=replay >"$work/log" 2>&1
status=$?
[ $status = 1 ] || fail "no replay file: exit $status"
grep -q "source-input" "$work/log" || fail "no replay file: $(cat "$work/log")"

echo "the replayed events are what memstrackd reports"
