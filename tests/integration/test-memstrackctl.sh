#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl end to end: memstrackd on the live kernel, loadgen allocating a known number of pages,
# every verb in text and --json, the exit statuses, and a snapshot file that outlives the daemon.
# Needs root, perf events and the kmem tracepoints; skips (77) otherwise.
#
# Usage: test-memstrackctl.sh MEMSTRACKD MEMSTRACKCTL LOADGEN TESTS_DIR
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
TESTS=${4:?tests dir}
. "$TESTS/integration/memstrackctl-lib.sh"

lib_init test-memstrackctl

# Errors before any daemon runs: nothing at the address is 3, bad usage is 2.
test_no_daemon() {
    local r
    ctl status >/dev/null 2>"$work/err"; r=$?
    [ $r -eq 3 ] || fail "status without a daemon exited $r, expected 3"
    grep -q "memstrackd is not running" "$work/err" || fail "no 'not running' message: $(cat "$work/err")"
    ctl --json tasks >/dev/null 2>&1; r=$?
    [ $r -eq 3 ] || fail "--json tasks without a daemon exited $r, expected 3"
    ctl frobnicate >/dev/null 2>&1; r=$?
    [ $r -eq 2 ] || fail "an unknown verb exited $r, expected 2"
    ctl tasks --depth 3 >/dev/null 2>&1; r=$?
    [ $r -eq 2 ] || fail "an option the verb does not take exited $r, expected 2"
    ctl diff >/dev/null 2>&1; r=$?
    [ $r -eq 2 ] || fail "diff without a name exited $r, expected 2"
    ctl delete-snapshot >/dev/null 2>&1; r=$?
    [ $r -eq 2 ] || fail "delete-snapshot without a name exited $r, expected 2"
    ctl delete-snapshot x --uid nobody >/dev/null 2>&1; r=$?
    [ $r -eq 2 ] || fail "--uid nobody exited $r, expected 2"
    ctl status --min-age 5 >/dev/null 2>&1; r=$?
    [ $r -eq 2 ] || fail "status --min-age exited $r, expected 2 (status takes no --min-age)"
    echo "ok no daemon, usage errors"
}

# Something that answers with garbage is a protocol error: 5.
test_protocol_error() {
    local r
    python3 - "$work/garbage.sock" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
c.recv(65536)
c.sendall(b"this is not json\0")
c.close()
PY
    pids+=($!)
    wait_for "the garbage server" test -S "$work/garbage.sock"
    "$MEMSTRACKCTL" --address "unix:$work/garbage.sock" status >/dev/null 2>"$work/err"; r=$?
    [ $r -eq 5 ] || fail "a garbage reply exited $r, expected 5: $(cat "$work/err")"
    echo "ok protocol error"
}

test_loadgen_pages() {
    start_loadgen
    lg alloc allocated
    wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted

    ctl --json tasks --limit 10000 >"$work/tasks.json" || fail "--json tasks failed"
    assert_json "$work/tasks.json" "--json tasks"
    python3 - "$work/tasks.json" "$lg_pid" "$PAGES" <<'PY' || fail "--json tasks does not show loadgen's pages"
import json, sys
tasks = json.load(open(sys.argv[1]))["tasks"]
t = [x for x in tasks if x["pid"] == int(sys.argv[2])]
assert t, "pid not listed"
assert t[0]["currentPages"] >= int(sys.argv[3]), t[0]
assert t[0]["comm"] == "loadgen", t[0]
PY
    # Human output: a row with the pid, the comm and at least $PAGES pages.
    COLUMNS=200 ctl tasks --limit 10000 >"$work/tasks.txt" || fail "tasks failed"
    awk -v pid="$lg_pid" -v pages="$PAGES" '$1 == pid && $2 == "loadgen" && $5 >= pages { found = 1 } END { exit !found }' \
        "$work/tasks.txt" || fail "tasks does not show loadgen's pages: $(grep -E "^ *$lg_pid " "$work/tasks.txt")"
    head -1 "$work/tasks.txt" | grep -q "PID.*COMM.*CURRENT.*PAGES" || fail "tasks has no header"
    grep -E "^ *$lg_pid " "$work/tasks.txt" | grep -q "MiB" || fail "tasks shows no units"
    # 80 columns: no line longer.
    COLUMNS=80 ctl tasks | awk 'length($0) > 80 { exit 1 }' || fail "tasks overflows 80 columns"
    echo "ok loadgen's $PAGES pages in tasks and --json tasks"
}

# tasks --comm: the tasks of that name only, loadgen among them; a name nobody has lists none.
test_comm() {
    ctl --json tasks --comm loadgen --limit 10000 >"$work/comm.json" || fail "tasks --comm loadgen failed"
    python3 - "$work/comm.json" "$lg_pid" <<'PY' || fail "tasks --comm loadgen: $(head -c 2000 "$work/comm.json")"
import json, sys
tasks = json.load(open(sys.argv[1]))["tasks"]
assert tasks and all(t["comm"] == "loadgen" for t in tasks), [t["comm"] for t in tasks]
assert any(t["pid"] == int(sys.argv[2]) for t in tasks), "loadgen's pid is not listed"
PY
    ctl --json tasks --comm no-such-comm >"$work/comm-none.json" || fail "tasks --comm no-such-comm failed"
    python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["tasks"] == []' "$work/comm-none.json" ||
        fail "tasks --comm no-such-comm listed tasks: $(head -c 2000 "$work/comm-none.json")"
    COLUMNS=200 ctl tasks --comm loadgen >"$work/comm.txt" || fail "tasks --comm loadgen (text) failed"
    awk -v pid="$lg_pid" '$1 == pid && $2 == "loadgen" { found = 1 } END { exit !found }' "$work/comm.txt" ||
        fail "tasks --comm loadgen shows no loadgen row: $(cat "$work/comm.txt")"
    echo "ok tasks --comm"
}

# Every --json output parses, in both modes.
test_json_everywhere() {
    local i=0 args
    for args in "status" "tasks" "tasks --all --sort peak --limit 3" "modules" "modules --sort peak" \
                "stacks --depth 4" "stacks --task $lg_pid" "stacks --module vmlinux --limit 2" \
                "snapshot before" "diff before" "reset peaks" "report" \
                "report --format task_summary,task_top,module_summary,module_top,stack_tree,folded,flamegraph --throttle 90"; do
        for mode in --json --json=short --json=pretty; do
            i=$((i + 1))
            # shellcheck disable=SC2086
            ctl $mode $args >"$work/out.$i.json" 2>"$work/err" || fail "$mode $args failed: $(cat "$work/err")"
            assert_json "$work/out.$i.json" "$mode $args"
        done
    done
    # top --batch --json: one document per line.
    ctl --json=short top --batch -n 2 -d 0.2 >"$work/top.jsonl" || fail "top --batch --json failed"
    [ "$(wc -l <"$work/top.jsonl")" -eq 2 ] || fail "top --batch -n 2 printed $(wc -l <"$work/top.jsonl") lines"
    while read -r l; do
        echo "$l" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "tasks" in d and "trackedPages" in d' ||
            fail "top --batch --json line is not a Top reply: $l"
    done <"$work/top.jsonl"
    echo "ok $i --json outputs parse"
}

test_text_verbs() {
    ctl status >"$work/status.txt" || fail "status failed"
    grep -q "Tracked pages:" "$work/status.txt" || fail "status lacks the tracked pages"
    ctl modules | grep -q "^vmlinux" || fail "modules lacks vmlinux"
    ctl stacks --task "$lg_pid" --depth 3 | grep -q "\[pid $lg_pid loadgen\]" || fail "stacks --task lacks the root"
    # How stacks are taken, in status and, when they are sampled (the eBPF source's default), under stacks.
    grep -qE "^ *Stacks taken: (every allocation|1 in [0-9]+ pages, scaled to exact counts)$" \
        "$work/status.txt" || fail "status does not say how stacks are taken"
    if grep -q "Backend: ebpf" "$work/status.txt"; then
        interval=$(ctl status --json | jq -r .stackSampleInterval)
        [ "$interval" -gt 1 ] 2>/dev/null || fail "the eBPF source's default takes every stack (interval $interval)"
        ctl stacks --depth 1 >"$work/stacks-sampled.txt" || fail "stacks failed"
        grep -q "^Stacks sampled: 1 in $interval pages, scaled to exact counts$" "$work/stacks-sampled.txt" ||
            fail "stacks does not say its stacks are sampled"
    fi
    ctl top --batch -n 2 -d 0.2 >"$work/top.txt" || fail "top --batch failed"
    [ "$(grep -c '^memstrack top' "$work/top.txt")" -eq 2 ] || fail "top --batch -n 2 did not print 2 snapshots"
    grep -qE "^ *$lg_pid +loadgen" "$work/top.txt" || fail "top --batch does not list loadgen"
    ctl snapshot mark >/dev/null || fail "snapshot failed"
    ctl diff mark | grep -q "Snapshot 'mark'" || fail "diff lacks its header"
    ctl report --format task_summary --task "$lg_pid" | grep -q "^Task loadgen ($lg_pid) using" ||
        fail "report task_summary lacks loadgen"
    # One condition, one sentence (client/errors.c), whichever verb meets it.
    local expected="No task with pid 999999999 is known to memstrackd (memstrackctl tasks --all lists them)."
    local v
    for v in "stacks --task 999999999" "report --task 999999999" "report --format flamegraph --task 999999999" \
             "--json stacks --task 999999999"; do
        # shellcheck disable=SC2086
        ctl $v >/dev/null 2>"$work/err"; r=$?
        [ $r -eq 1 ] || fail "$v for an unknown pid exited $r, expected 1"
        [ "$(cat "$work/err")" = "$expected" ] || fail "$v said '$(cat "$work/err")', expected '$expected'"
    done
    expected="No module 'no_such_module' is known to memstrackd (memstrackctl modules lists them)."
    for v in "stacks --module no_such_module" "report --module no_such_module"; do
        # shellcheck disable=SC2086
        ctl $v >/dev/null 2>"$work/err"; r=$?
        [ $r -eq 1 ] || fail "$v exited $r, expected 1"
        [ "$(cat "$work/err")" = "$expected" ] || fail "$v said '$(cat "$work/err")', expected '$expected'"
    done
    ctl diff never-saved >/dev/null 2>"$work/err"; r=$?
    [ $r -eq 1 ] || fail "diff of an unknown snapshot exited $r, expected 1"
    grep -qx "No snapshot 'never-saved' is saved in memstrackd (save one with: memstrackctl snapshot never-saved)." \
        "$work/err" || fail "diff said '$(cat "$work/err")'"
    echo "ok text verbs"
}

# systemd-tool habits: $MEMSTRACK_ADDRESS (under --address), --no-legend, top as text into a pipe.
test_conventions() {
    local r
    MEMSTRACK_ADDRESS=$work/sock "$MEMSTRACKCTL" status >/dev/null || fail "status with \$MEMSTRACK_ADDRESS failed"
    MEMSTRACK_ADDRESS=unix:$work/sock "$MEMSTRACKCTL" --json tasks >/dev/null || fail "unix: in \$MEMSTRACK_ADDRESS failed"
    MEMSTRACK_ADDRESS=$work/nowhere "$MEMSTRACKCTL" status >/dev/null 2>"$work/err"; r=$?
    [ $r -eq 3 ] || fail "status with \$MEMSTRACK_ADDRESS at nothing exited $r, expected 3"
    grep -qF "no socket at $work/nowhere (from \$MEMSTRACK_ADDRESS)" "$work/err" ||
        fail "the message does not name the environment: $(cat "$work/err")"
    MEMSTRACK_ADDRESS=$work/nowhere "$MEMSTRACKCTL" --address "$work/sock" status >/dev/null ||
        fail "--address does not override \$MEMSTRACK_ADDRESS"

    # --no-legend: the same rows, without the header lines.
    COLUMNS=200 ctl --no-legend tasks --limit 10000 >"$work/tasks-nl.txt" || fail "--no-legend tasks failed"
    grep -qE "PID +COMM" "$work/tasks-nl.txt" && fail "--no-legend tasks printed its header"
    awk -v pid="$lg_pid" '$1 == pid && $2 == "loadgen" { found = 1 } END { exit !found }' "$work/tasks-nl.txt" ||
        fail "--no-legend tasks lacks loadgen: $(head -3 "$work/tasks-nl.txt")"
    ctl --no-legend modules | grep -q "^vmlinux " || fail "--no-legend modules lacks vmlinux"
    ctl --no-legend modules | grep -q "MODULE" && fail "--no-legend modules printed its header"
    ctl --no-legend stacks --task "$lg_pid" --depth 2 >"$work/stacks-nl.txt" || fail "--no-legend stacks failed"
    grep -q "STACK" "$work/stacks-nl.txt" && fail "--no-legend stacks printed its header"
    grep -q "\[pid $lg_pid loadgen\]" "$work/stacks-nl.txt" || fail "--no-legend stacks lacks the root"
    ctl --no-legend diff mark >"$work/diff-nl.txt" || fail "--no-legend diff failed"
    grep -qE "^Snapshot '|PID +COMM|MODULE +BEFORE" "$work/diff-nl.txt" && fail "--no-legend diff printed a legend"
    ctl --no-legend top --batch -n 1 -d 0.2 >"$work/top-nl.txt" || fail "--no-legend top --batch failed"
    grep -qE "^memstrack top|PID +COMM" "$work/top-nl.txt" && fail "--no-legend top printed a legend"
    grep -qE "^ *$lg_pid +loadgen" "$work/top-nl.txt" || fail "--no-legend top lacks loadgen"

    # top with its output in a file is --batch, as top -b: text, and it ends after -n.
    ctl top -n 2 -d 0.2 >"$work/top-pipe.txt" 2>"$work/err" || fail "top into a file failed: $(cat "$work/err")"
    [ "$(grep -c '^memstrack top' "$work/top-pipe.txt")" -eq 2 ] || fail "top into a file did not print 2 snapshots"
    grep -q $'\e' "$work/top-pipe.txt" && fail "top into a file wrote escape sequences"
    echo "ok \$MEMSTRACK_ADDRESS, --no-legend, top into a file"
}

# Not root and not in the group: the socket (0660) refuses the connection, exit 4. The other user runs
# a copy of memstrackctl in $work (0755): the build directory may be closed to it.
test_permission() {
    local r
    install -m 0755 "$MEMSTRACKCTL" "$work/memstrackctl"
    as_nobody "$work/memstrackctl" --address "$work/sock" status >/dev/null 2>"$work/err"; r=$?
    [ $r -eq 4 ] || fail "an unprivileged status exited $r, expected 4: $(cat "$work/err")"
    grep -qi "permission denied" "$work/err" || fail "no permission message: $(cat "$work/err")"
    echo "ok permission denied"
}

# A snapshot file outlives the daemon: reports from it are the same before and after a restart, and
# hold what the live daemon said.
test_snapshot_file() {
    local live formats=task_summary,task_top,module_summary,module_top,stack_tree,folded
    live=$(pages_of "$lg_pid")
    ctl snapshot --file "$work/snap.json" >/dev/null || fail "snapshot --file failed"
    # A target that is not a regular file is written in place, never replaced by a file.
    mkfifo "$work/snap.fifo"
    timeout 60 cat "$work/snap.fifo" >"$work/snap-from-fifo.json" &
    ctl snapshot --file "$work/snap.fifo" >/dev/null || fail "snapshot --file into a FIFO failed"
    wait $!
    [ -p "$work/snap.fifo" ] || fail "snapshot --file replaced the FIFO with a file"
    jq -e .memstrackSnapshot "$work/snap-from-fifo.json" >/dev/null || fail "the snapshot through the FIFO is not JSON"
    assert_json "$work/snap.json" "the snapshot file"
    python3 - "$work/snap.json" "$lg_pid" "$live" "$PAGES" <<'PY' || fail "the snapshot file lacks loadgen's pages"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["memstrackSnapshot"] == 1
t = [x for x in d["tasks"]["tasks"] if x["pid"] == int(sys.argv[2])][0]
live, pages = int(sys.argv[3]), int(sys.argv[4])
assert t["currentPages"] >= pages, t
# loadgen holds its pages still: what the file says is what the daemon said a moment before.
assert abs(t["currentPages"] - live) <= 64, (t["currentPages"], live)
assert any(s["pid"] == int(sys.argv[2]) for s in d["taskStacks"]), "no stack tree for loadgen"
PY
    # Units: loadgen's unit holds its pages, with stacks. (A daemon without Units, whose units are left
    # out of the file, is test-ctl-errors' fake daemon's case; this memstrackd must answer it.)
    python3 - "$work/snap.json" "$work/sock" "$lg_pid" "$PAGES" <<'PY' || fail "the snapshot file's units are wrong"
import json, re, socket, sys
d = json.load(open(sys.argv[1]))
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[2])
s.sendall(json.dumps({"method": "io.memstrack.Units", "parameters": {}}).encode() + b"\0")
buf = b""
while not buf.endswith(b"\0"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
error = json.loads(buf.rstrip(b"\0")).get("error")
assert error is None, error
# The unit loadgen runs in, as the interface names units: the innermost unit of its cgroup path, else the path.
path = next(l.split(":", 2)[2] for l in open(f"/proc/{sys.argv[3]}/cgroup").read().splitlines() if l.startswith("0::"))
names = [c for c in path.split("/") if re.search(r"\.(service|scope|slice|socket|mount|swap|timer|path|target)$", c)]
name = names[-1] if names else path
u = [x for x in d["units"]["units"] if x["name"] == name]
assert u and u[0]["currentPages"] >= int(sys.argv[4]), (name, u)
assert u[0]["topStacks"], u
PY
    "$MEMSTRACKCTL" report --from "$work/snap.json" --format $formats >"$work/report-before.txt" ||
        fail "report --from failed"
    "$MEMSTRACKCTL" report --from "$work/snap.json" --format flamegraph >"$work/fg.svg" || fail "flamegraph failed"
    python3 "$TESTS/check-flamegraph.py" "$work/fg.svg" --title-contains "on $(hostname) at " >/dev/null ||
        fail "the live flame graph is not right"
    "$MEMSTRACKCTL" report --from "$work/snap.json" --format flamegraph --offsets >"$work/fg-offsets.svg" ||
        fail "flamegraph --offsets failed"
    python3 "$TESTS/check-flamegraph.py" "$work/fg-offsets.svg" --offsets >/dev/null ||
        fail "the live flame graph with offsets is not right"

    stop_daemon
    "$MEMSTRACKCTL" report --from "$work/snap.json" --format $formats >"$work/report-gone.txt" ||
        fail "report --from without a daemon failed"
    start_daemon
    "$MEMSTRACKCTL" report --from "$work/snap.json" --format $formats >"$work/report-after.txt" ||
        fail "report --from after the restart failed"
    cmp -s "$work/report-before.txt" "$work/report-gone.txt" || fail "the report changed when the daemon stopped"
    cmp -s "$work/report-before.txt" "$work/report-after.txt" || fail "the report changed when the daemon restarted"
    grep -q "^Task loadgen ($lg_pid) using" "$work/report-after.txt" || fail "the report lacks loadgen"
    # The new daemon never saw loadgen allocate: only the file still knows about its pages.
    [ "$(pages_of "$lg_pid")" -lt "$PAGES" ] || fail "the restarted daemon already counts loadgen's pages"
    echo "ok snapshot file: reports identical across a daemon restart"
}

# Issue 9, "what a new user trips over", against the daemon started by the tests above.

# Memory held before tracing is shown: this script's shell was alive before memstrackd started and has
# resident pages, so its BASELINE is not 0 and status sums such baselines.
test_baseline() {
    ctl --json=short tasks --all --limit 10000 >"$work/base.json" || fail "tasks --all failed"
    python3 - "$work/base.json" "$$" <<'PY' || fail "this shell (pid $$) has no baselinePages"
import json, sys
t = [x for x in json.load(open(sys.argv[1]))["tasks"] if x["pid"] == int(sys.argv[2])]
assert t and t[0]["baselinePages"] > 0, t
PY
    ctl --json=short status >"$work/status.json" || fail "status --json failed"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["baselinePages"] > 0 and s["baselineTasks"] > 0, s' \
        "$work/status.json" || fail "Status has no baselinePages: $(cat "$work/status.json")"
    ctl status | grep -q "Before tracing: .* resident in [0-9]* tasks" || fail "status does not show the baseline"
    COLUMNS=250 ctl tasks --all --limit 10000 >"$work/base.txt" || fail "tasks failed"
    head -1 "$work/base.txt" | grep -q "BASELINE" || fail "tasks has no BASELINE column"
    awk '$1 == 1 { found = 1; if ($8 == "0" && $9 == "B") bad = 1 } END { exit !(found && !bad) }' "$work/base.txt" ||
        fail "pid 1's BASELINE is empty: $(grep -E '^ *1 ' "$work/base.txt")"
    echo "ok baseline shown"
}

holder_counted() {
    [ "$(pages_of "$1")" -ge 1024 ]
}

# Rows at 0 for the sort key are left out daemon-side, before the limit, unless --all.
test_hide_zero() {
    ctl --json=short tasks --limit 10000 >"$work/nz.json" || fail "tasks failed"
    ctl --json=short tasks --all --limit 10000 >"$work/all.json" || fail "tasks --all failed"
    python3 - "$work/nz.json" "$work/all.json" <<'PY' || fail "tasks lists tasks holding nothing"
import json, sys
nz = json.load(open(sys.argv[1]))["tasks"]
everything = json.load(open(sys.argv[2]))["tasks"]
assert nz, "nothing listed"
assert all(t["currentPages"] > 0 for t in nz), [t for t in nz if t["currentPages"] == 0][:3]
assert len(everything) >= len(nz)
PY
    # --sort peak hides what never held anything, and the limit counts shown rows only. The daemon
    # was restarted, so few live tasks may have a peak on a quiet machine: three holders make sure.
    local holder i
    for i in 1 2 3; do
        python3 -c 'import time; b = bytearray(4 << 20); time.sleep(300)' &
        holder=$!
        pids+=("$holder")
        wait_for "memstrackd to charge holder $i ($holder) its 4 MiB" holder_counted "$holder"
    done
    ctl --json=short tasks --sort peak --limit 3 >"$work/nz3.json" || fail "tasks --sort peak failed"
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tasks"]; assert len(t) == 3 and all(x["peakPages"] > 0 for x in t), t' \
        "$work/nz3.json" || fail "tasks --sort peak --limit 3 is not 3 tasks with a peak"
    # top too (the Top method's hideZero).
    ctl --json=short top --batch -n 1 --limit 10000 >"$work/top-nz.json" || fail "top --batch failed"
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tasks"]; assert t and all(x["currentPages"] > 0 for x in t), [x for x in t if x["currentPages"] == 0][:3]' \
        "$work/top-nz.json" || fail "top lists tasks holding nothing"
    ctl --json=short top --all --batch -n 1 --limit 10000 >/dev/null || fail "top --all failed"
    echo "ok tasks at 0 hidden unless --all (tasks, top)"
}

# loadgen --child allocates in a child that forked without exec: it runs loadgen, and says so.
test_fork_cmdline() {
    ctl --json=short tasks --all --limit 10000 >"$work/fork.json" || fail "tasks failed"
    python3 - "$work/fork.json" "$lg_pid" "$lg_parent" <<'PY' || fail "the forked child has no command line"
import json, sys
tasks = {t["pid"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
child, parent = tasks[int(sys.argv[2])], tasks.get(int(sys.argv[3]))
assert child["cmdline"] and "--commands" in child["cmdline"], child
assert parent is None or child["cmdline"] == parent["cmdline"], (child, parent)
PY
    echo "ok a child forked without exec shows its parent's command line"
}

task_exited() {
    ctl --json=short tasks --all --limit 10000 |
        python3 -c 'import json,sys; t=[x for x in json.load(sys.stdin)["tasks"] if x["pid"]==int(sys.argv[1])]; assert t and t[0]["exited"]' "$1"
}

# Diff: the state of a task now, a note after reset all, and the snapshots listed.
test_diff_states() {
    # A loadgen this daemon saw allocate (the one before predates the restart in test_snapshot_file).
    lg free freed
    lg exit bye
    start_loadgen
    lg alloc allocated
    wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted
    ctl snapshot edge-before >/dev/null || fail "snapshot failed"
    lg free freed
    lg exit bye
    wait_for "loadgen's child ($lg_pid) to be seen exited" task_exited "$lg_pid"
    ctl --json=short diff edge-before --limit 10000 >"$work/diff.json" || fail "diff failed"
    python3 - "$work/diff.json" "$lg_pid" <<'PY' || fail "diff does not say loadgen's child exited"
import json, sys
d = json.load(open(sys.argv[1]))
t = [x for x in d["tasks"] if x["pid"] == int(sys.argv[2])]
assert t and t[0]["exited"] and not t[0]["appeared"] and t[0]["deltaPages"] < 0, t
assert d["resetSince"] is False, d
assert all(x["pid"] >= 0 for x in d["tasks"]), "a task without a pid"
PY
    COLUMNS=200 ctl diff edge-before --limit 10000 >"$work/diff.txt" || fail "diff failed"
    grep -qE "^ *$lg_pid +loadgen .* exited *$" "$work/diff.txt" ||
        fail "diff's table does not show loadgen's child exited: $(grep -E "^ *$lg_pid " "$work/diff.txt")"
    ctl reset all >/dev/null || fail "reset all failed"
    ctl --json=short diff edge-before >"$work/diff2.json" || fail "diff after reset failed"
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["resetSince"] is True' "$work/diff2.json" ||
        fail "diff after reset all does not say resetSince"
    ctl diff edge-before >"$work/diff2.txt" || fail "diff after reset failed"
    grep -q "^Note: the counters were reset" "$work/diff2.txt" || fail "diff after reset all has no note"
    ctl snapshot edge-after >/dev/null || fail "snapshot failed"
    ctl --json=short snapshots >"$work/list.json" || fail "snapshots --json failed"
    python3 - "$work/list.json" <<'PY' || fail "snapshots does not list both: $(cat "$work/list.json")"
import json, sys
s = {x["name"]: x for x in json.load(open(sys.argv[1]))["snapshots"]}
assert s["edge-before"]["resetSince"] is True and s["edge-after"]["resetSince"] is False, s
assert s["edge-before"]["timestampUsec"] <= s["edge-after"]["timestampUsec"]
PY
    ctl snapshots | grep -qE "^edge-before .*reset since" || fail "snapshots does not show the reset"
    # Root sees whose they are with --all; delete-snapshot takes several names and says which it lacks.
    ctl snapshots --all | grep -qE "^edge-after .* root$" || fail "snapshots --all lacks the owner"
    ctl delete-snapshot edge-before edge-after || fail "delete-snapshot failed"
    ctl --json=short snapshots >"$work/list2.json" || fail "snapshots --json failed"
    jq -e '[.snapshots[].name] | index("edge-before") == null and index("edge-after") == null' "$work/list2.json" \
        >/dev/null || fail "delete-snapshot left them: $(cat "$work/list2.json")"
    local r
    ctl delete-snapshot edge-after 2>"$work/err"; r=$?
    [ $r -eq 1 ] && grep -q "No snapshot 'edge-after' is saved" "$work/err" ||
        fail "deleting a deleted snapshot exited $r: $(cat "$work/err")"
    echo "ok diff states, reset note, snapshots listed and deleted"
}

# A daemon with a tiny stack budget and exited-task table: the budget fills at once and short-lived
# writers leave page cache behind when they are forgotten. Every allocation's stack (the eBPF source
# samples 1 in 64 pages by default, which interns few stacks and leaves "[truncated]" a page or two that
# may be gone by the next call).
test_truncated_and_evicted() {
    stop_daemon
    start_daemon --max-stack-nodes=300 --max-exited-tasks=2 --stack-sample-interval=1
    local i
    for i in $(seq 1 40); do
        dd if=/dev/zero of="$work/cache.$i" bs=64k count=4 status=none conv=fsync 2>/dev/null
    done
    wait_for "stacks to be truncated" sh -c \
        "\"$MEMSTRACKCTL\" --address '$work/sock' --json=short status | python3 -c 'import json,sys; s=json.load(sys.stdin); assert s[\"stacksTruncated\"] > 0 and s[\"truncatedPages\"] > 0'"
    ctl --json=short stacks --depth 255 --limit 10000 >"$work/st.json" || fail "stacks failed"
    python3 - "$work/st.json" <<'PY' || fail "no [truncated] node holding pages in the stack tree"
import json, sys
def truncated(n):
    return (n["frame"] == "[truncated]" and n["currentPages"] > 0) or any(truncated(c) for c in n["children"])
assert truncated(json.load(open(sys.argv[1]))["root"])
PY
    ctl status | grep -q "stacks truncated (budget full: .* in \"\[truncated\]\"" || fail "status does not say the budget is full"
    ctl top --batch -n 1 >"$work/top-warn.txt" || fail "top --batch failed"
    grep -q "^Warning: stack node budget full" "$work/top-warn.txt" || fail "top --batch does not warn"

    wait_for "evicted tasks to hold pages" sh -c \
        "\"$MEMSTRACKCTL\" --address '$work/sock' --json=short tasks | python3 -c 'import json,sys; e=json.load(sys.stdin)[\"evicted\"]; assert e[\"tasks\"] > 0 and e[\"currentPages\"] > 0'"
    ctl --json=short tasks --all --limit 10000 >"$work/ev.json" || fail "tasks failed"
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tasks"]; assert all(x["pid"] >= 0 and x["comm"] != "[evicted]" for x in t)' \
        "$work/ev.json" || fail "the evicted sum is listed as a task"
    # Whole outputs to files: grep -q leaving a pipe early would kill the writer (pipefail).
    ctl tasks >"$work/ev.txt" || fail "tasks failed"
    grep -qE "^Evicted: .* still held by [0-9]+ exited tasks" "$work/ev.txt" || fail "tasks has no Evicted line"
    ctl report --format task_top >"$work/ev-report.txt" || fail "report task_top failed"
    grep -q "evicted" "$work/ev-report.txt" && fail "report task_top lists the evicted sum as a task"
    # So does memstrackd's own summary at exit.
    stop_daemon
    awk '/memstrack summary/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$work/memstrackd.log" \
        >"$work/summary.txt"
    grep -q "\[evicted\]" "$work/summary.txt" && fail "the exit summary ranks [evicted] as a task: $(cat "$work/summary.txt")"
    grep -qE "still held by [0-9]+ evicted exited tasks" "$work/summary.txt" ||
        fail "the exit summary does not report the evicted pages: $(cat "$work/summary.txt")"
    start_daemon
    echo "ok [truncated] node, status and top warning; evicted pages as a labelled sum"
}

test_no_daemon
test_protocol_error
start_daemon
test_loadgen_pages
test_comm
test_fork_cmdline
test_json_everywhere
test_text_verbs
test_conventions
test_permission
test_snapshot_file
test_baseline
test_hide_zero
test_diff_states
test_truncated_and_evicted
echo "all memstrackctl tests passed"
