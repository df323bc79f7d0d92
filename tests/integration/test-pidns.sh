#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackd inside a PID namespace of its own (a container): each source reports tasks by the pids the
# daemon sees, so loadgen's pages are charged to the pid its /proc shows, with its command line, and
# tasks outside the namespace to pid 0, never to a stranger's pid. The kernel's pids differ from the
# namespace's, so a source that passed them through would fail here. Processes outside the namespace fork
# and exit all the while: they have no pid here (0), and must not turn into a stream of task records for
# pid 0 (the eBPF source once sent their fork and exit records as pid 0: one record per fork, and a daemon
# so busy re-creating them that its ring overflowed and the namespace's own exits were lost).
# One source per run (meson runs one test per source). A run that lost records proves nothing about pids
# (a lost exit leaves its task alive): it is tried again, three times at most, and fails if every try lost.
# Needs root, unshare(1) and a source that can trace here; skips (77) otherwise, saying why.
#
# Usage: test-pidns.sh MEMSTRACKD MEMSTRACKCTL LOADGEN SOURCE
set -uo pipefail

MEMSTRACKD=$(realpath "${1:?memstrackd}")
MEMSTRACKCTL=$(realpath "${2:?memstrackctl}")
LOADGEN=$(realpath "${3:?loadgen}")
SOURCE=${4:?source}
PAGES=8192

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (PID namespaces, tracing)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: no unshare(1)"; exit 77; }
unshare -p -f --mount-proc true 2>/dev/null || { echo "SKIP: cannot make a PID namespace here"; exit 77; }

work=$(mktemp -d /tmp/test-pidns.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0

# The whole case runs inside the namespace; it prints one verdict line.
inside() {
    local source=$1 sock=$work/$1.sock lg i pages=0
    "$MEMSTRACKD" --foreground --source "$source" --socket "$sock" >"$work/$source.log" 2>&1 &
    for i in $(seq 100); do "$MEMSTRACKCTL" --address "$sock" status >/dev/null 2>&1 && break; sleep 0.1; done
    if ! "$MEMSTRACKCTL" --address "$sock" status >/dev/null 2>&1; then
        echo "SKIP $source: memstrackd did not start: $(tail -3 "$work/$source.log")"
        return
    fi
    "$LOADGEN" --pages $PAGES --hold-until-signal >/dev/null &
    lg=$!
    for i in $(seq 100); do
        pages=$("$MEMSTRACKCTL" --address "$sock" --json=short tasks --all --limit 10000 2>/dev/null |
                python3 -c 'import json,sys; t=[t for t in json.load(sys.stdin)["tasks"] if t["pid"] == int(sys.argv[1])]
print(t[0]["currentPages"] if t else 0)' "$lg")
        [ "${pages:-0}" -ge $PAGES ] && break
        sleep 0.2
    done
    # The polling above ran short-lived processes; their exits were traced before their parents went on,
    # and every query first takes in what the kernel has reported: only a wrong pid can look alive here
    # and be absent from /proc.
    "$MEMSTRACKCTL" --address "$sock" --json=short tasks --all --limit 10000 >"$work/$source.json"
    "$MEMSTRACKCTL" --address "$sock" --json=short status >"$work/$source-status.json"
    # Checked while loadgen lives, so that every live pid listed can be looked up here.
    python3 - "$work/$source.json" "$lg" "$PAGES" "$source" "$work/$source-status.json" <<'PY'
import json, os, sys
listed = json.load(open(sys.argv[1]))["tasks"]
lost = json.load(open(sys.argv[5]))["lostEvents"]
tasks = {t["pid"]: t for t in listed}
zeros = sum(1 for t in listed if t["pid"] == 0)
lg, pages, source = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t = tasks.get(lg)
ok = t is not None and t["currentPages"] >= pages and t["comm"] == "loadgen" and "loadgen" in (t["cmdline"] or "")
# Every live pid shown other than 0 is one this namespace has (the memstrackctl that asked has exited
# since, unseen by the reply).
strangers = [p for p, x in tasks.items()
             if p > 0 and not x["exited"] and x["comm"] != "memstrackctl" and not os.path.exists(f"/proc/{p}")]
if ok and not strangers and zeros <= 1:
    print(f"ok {source}: loadgen (pid {lg} here) holds {t['currentPages']} pages; no pid from outside")
elif ok and lost > 0:
    # A lost exit leaves its task alive: with records lost the strangers prove nothing either way.
    print(f"LOSSY {source}: {lost} records lost (the machine is busy), {len(strangers)} tasks left alive")
else:
    print(f"FAIL {source}: loadgen {t}; pids that are not this namespace's: {[tasks[p] for p in strangers[:3]]}; "
          f"{zeros} task records for pid 0 (all of outside)")
PY
    kill -USR1 "$lg"; wait "$lg"
    kill %1; wait
}
export -f inside
export MEMSTRACKD MEMSTRACKCTL LOADGEN PAGES work

# Forks and exits outside the namespace while each case runs.
outside_forks() {
    while :; do /bin/true; sleep 0.01; done
}

# A run that lost records (a busy machine: the daemon fell behind) is tried again, three times at most.
for try in 1 2 3; do
    outside_forks &
    forker=$!
    line=$(unshare -p -f --mount-proc bash -c "inside $SOURCE")
    kill $forker; wait $forker 2>/dev/null
    echo "$line"
    case $line in
        ok*) exit 0 ;;
        SKIP*) exit 77 ;;
        LOSSY*) ;;
        *) exit 1 ;;
    esac
done
echo "FAIL $SOURCE: records lost in each of 3 runs: the daemon fell behind the load"
exit 1
