#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl's side of units against a stand-in memstrackd (fake-memstrackd.py): no kernel, no root.
# Each case runs twice, against a fake that serves units and one that does not (as a memstrackd from
# before units: Units answers MethodNotFound, Top has no "units"), which must keep working.
#
#   text: top --batch and its --json, report unit_summary/unit_top, snapshot --file; the stack views of
#         stacks and report say when stacks are sampled (a fake with --stack-sample-interval)
#   tmux: the live view's Units view in a tmux pane, read off the screen (skips, 77, without tmux), and
#         its Stacks view's line on sampled stacks
#
# Usage: test-top-units.sh MEMSTRACKCTL TESTS_DIR text|tmux
set -uo pipefail

CTL=${1:?memstrackctl}
TESTS=${2:?tests dir}
MODE=${3:?text or tmux}
WAIT=60         # seconds any one condition may take; a bound, not a measurement
work=$(mktemp -d /tmp/test-top-units.XXXXXX)
fakes=()
server=memstrack-units-$$

cleanup() {
    [ "$MODE" = tmux ] && tmux -L "$server" kill-server 2>/dev/null
    for p in "${fakes[@]}"; do
        kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

skip() {
    echo "SKIP: $*" >&2
    exit 77
}

# Starts a fake on $work/$1.sock logging calls to $work/$1.log; extra arguments go to the fake.
start_fake() {
    local name=$1; shift
    python3 "$TESTS/fake-memstrackd.py" --socket "$work/$name.sock" --log "$work/$name.log" "$@" \
        >"$work/$name.out" 2>&1 &
    fakes+=($!)
    local deadline=$((SECONDS + WAIT))
    until [ -S "$work/$name.sock" ]; do
        [ $SECONDS -lt $deadline ] || fail "the fake memstrackd $name did not start: $(cat "$work/$name.out")"
        sleep 0.1
    done
}

# The calls of method $2 the fake $1 got, one JSON object per line.
calls() {
    grep -F "\"method\": \"$2\"" "$work/$1.log"
}

text_cases() {
    local out
    start_fake units
    start_fake old --no-units

    # top --batch: the units table after the modules, from Top's units.
    out=$("$CTL" --address "$work/units.sock" top --batch -n 1 -d 0.2) || fail "top --batch exited $?"
    grep -qE '^UNIT +CURRENT +PAGES +PEAK +PEAK PAGES +TASKS +STATE' <<<"$out" ||
        fail "top --batch has no units table: $out"
    grep -qE '^loadgen-test\.service +64\.0 MiB +16384 +64\.0 MiB +16384 +1 +live' <<<"$out" ||
        fail "top --batch lacks loadgen-test.service's row: $out"
    grep -qE '^backup\.service +1\.7 MiB +440 +3\.5 MiB +900 +0 +removed' <<<"$out" ||
        fail "top --batch lacks the removed backup.service: $out"
    "$CTL" --address "$work/units.sock" --json=short top --batch -n 1 -d 0.2 |
        python3 -c 'import json, sys; u = json.load(sys.stdin)["units"]; assert [x["name"] for x in u] == ["loadgen-test.service", "postgresql.service", "backup.service", "ghost.service", "session-3.scope"], u' ||
        fail "top --batch --json lacks the units"
    echo "ok top --batch shows units"

    # memstrackctl leaks waits out memstrackd's pacing of Leaks (LimitExceeded "leaksPace") and asks again.
    out=$("$CTL" --address "$work/units.sock" leaks) || fail "memstrackctl leaks exited $? on a paced Leaks: $out"
    grep -qE '^  4242 loadgen: 16384 pages, oldest 61 s' <<<"$out" || fail "memstrackctl leaks after the pace: $out"
    [ "$(calls units io.memstrack.Leaks | wc -l)" -eq 2 ] || fail "memstrackctl leaks did not ask again once"
    echo "ok memstrackctl leaks waits out the pace of Leaks"

    out=$("$CTL" --address "$work/old.sock" top --batch -n 1 -d 0.2) || fail "top --batch without units exited $?"
    grep -qE '^MODULE ' <<<"$out" || fail "top --batch without units lost the modules: $out"
    grep -q '^UNIT' <<<"$out" && fail "top --batch printed a units table the daemon did not send: $out"
    echo "ok top --batch without units: no table"

    # report: Units is asked with stacks, the formats show them.
    out=$("$CTL" --address "$work/units.sock" report --format unit_summary,unit_top) || fail "report exited $?"
    grep -qx 'Unit postgresql.service using 8.0MB (2048 pages), peak usage 16.0MB (4096 pages), 3 tasks' <<<"$out" ||
        fail "unit_summary lacks postgresql.service: $out"
    grep -qx 'Top stacks of unit loadgen-test.service:' <<<"$out" || fail "unit_top lacks loadgen-test.service: $out"
    grep -qx '    do_anonymous_page+0x12c' <<<"$out" || fail "unit_top lacks the unit's stack: $out"
    calls units io.memstrack.Units | python3 -c 'import json, sys; p = json.loads(sys.stdin.readline())["parameters"]; assert p["stacks"] > 0, p' ||
        fail "the report did not ask Units for stacks"
    echo "ok report from a memstrackd with units"

    # snapshot --file keeps the Units reply; a report from the file is the same as from the daemon.
    "$CTL" --address "$work/units.sock" snapshot --file "$work/snap.json" >/dev/null || fail "snapshot --file exited $?"
    python3 -c 'import json, sys; u = json.load(open(sys.argv[1]))["units"]["units"]; assert len(u) == 3 and u[0]["topStacks"], u' \
        "$work/snap.json" || fail "the snapshot file lacks the units with their stacks"
    [ "$("$CTL" report --from "$work/snap.json" --format unit_summary,unit_top)" = "$out" ] ||
        fail "the report from the file differs from the report from the daemon"
    echo "ok snapshot --file keeps units"

    # Without Units: the report and the snapshot still work, the unit formats say why they are empty.
    out=$("$CTL" --address "$work/old.sock" report --format unit_summary,module_summary) ||
        fail "report from a memstrackd without units exited $?"
    grep -q '^(no units: memstrackd did not report them' <<<"$out" || fail "unit_summary without units: $out"
    grep -q '^Module vmlinux using' <<<"$out" || fail "module_summary without units: $out"
    calls old io.memstrack.Units >/dev/null || fail "the report did not ask for Units at all"
    "$CTL" --address "$work/old.sock" snapshot --file "$work/old.json" >/dev/null ||
        fail "snapshot --file from a memstrackd without units exited $?"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert "units" not in d and d["tasks"]["tasks"], d.keys()' \
        "$work/old.json" || fail "the snapshot file without units is wrong"
    echo "ok report and snapshot from a memstrackd without units"

    # Sampled stacks (eBPF exact mode): every stack view says so; the other reports and a memstrackd
    # that takes every stack say nothing.
    local sampled='Stacks sampled: 1 in 64 pages, scaled to exact counts'
    start_fake sampled --stack-sample-interval 64
    out=$("$CTL" --address "$work/sampled.sock" stacks) || fail "stacks exited $?"
    grep -qxF "$sampled" <<<"$out" || fail "stacks does not say the stacks are sampled: $out"
    for format in task_top module_top unit_top stack_tree; do
        out=$("$CTL" --address "$work/sampled.sock" report --format "$format") || fail "report $format exited $?"
        grep -qxF "$sampled" <<<"$out" || fail "report $format does not say the stacks are sampled: $out"
    done
    "$CTL" --address "$work/sampled.sock" snapshot --file "$work/sampled.json" >/dev/null ||
        fail "snapshot --file exited $?"
    out=$("$CTL" report --from "$work/sampled.json" --format stack_tree) || fail "report --from exited $?"
    grep -qxF "$sampled" <<<"$out" || fail "a report from a snapshot file does not say the stacks are sampled: $out"
    out=$("$CTL" --address "$work/sampled.sock" report --format task_summary,unit_summary,folded) ||
        fail "report exited $?"
    grep -q '^Stacks sampled' <<<"$out" && fail "a report without stack views speaks of sampling: $out"
    out=$("$CTL" --address "$work/units.sock" report --format task_top,module_top,unit_top,stack_tree) ||
        fail "report exited $?"
    grep -q '^Stacks sampled' <<<"$out" && fail "unsampled stacks reported as sampled: $out"
    echo "ok stack views say when stacks are sampled"
}

tmux_() {
    tmux -L "$server" "$@"
}

screen() {
    tmux_ capture-pane -p -t top
}

# Polls the screen until it matches the extended regex $1 ($2 says what that is).
expect_screen() {
    local deadline=$((SECONDS + WAIT))
    until screen | grep -qE -- "$1"; do
        if [ $SECONDS -ge $deadline ]; then
            echo "--- screen:" >&2
            screen >&2
            fail "after ${WAIT}s the screen does not show /$1/ ($2)"
        fi
        sleep 0.1
    done
}

keys() {
    tmux_ send-keys -t top "$@"
}

tmux_cases() {
    command -v tmux >/dev/null || skip "tmux is not installed"
    start_fake units
    start_fake old --no-units
    echo 'set -g default-terminal screen' >"$work/tmux.conf"
    tmux_ -f "$work/tmux.conf" new-session -d -s top -x 120 -y 30 \
        "env -i PATH=$PATH HOME=$work TERM=screen PS1='prompt\$ ' bash --norc --noprofile"
    expect_screen '^prompt\$' "the shell prompt"
    keys -l "$CTL --address $work/units.sock top -d 0.2; echo TOP-EXIT=\$?"
    keys Enter
    expect_screen '^ 1 Tasks +2 Modules +3 Stacks +4 Units +5 Slab ' "the five view tabs"

    keys 4
    expect_screen '^UNIT +\[CURRENT\] +PAGES +PEAK +TASKS +STATE' "the units header after 4"
    expect_screen '^loadgen-test\.service +64\.0 MiB +16384 +64\.0 MiB +1 +live' "loadgen-test.service's row"
    expect_screen '^backup\.service +1\.7 MiB +440 +3\.5 MiB +0 +removed' "the removed unit's row"
    # In 80 columns a whole row still fits, the state included.
    tmux_ resize-window -t top -x 80 -y 24
    expect_screen '^backup\.service +1\.7 MiB +440 +3\.5 MiB +0 +removed$' "the whole row at 80 columns"
    screen | awk 'length($0) > 80 { exit 1 }' || fail "a line is wider than 80 columns"
    tmux_ resize-window -t top -x 120 -y 30
    echo "ok units view (4)"

    keys s
    expect_screen '^UNIT +CURRENT +PAGES +\[PEAK\]' "the PEAK column marked after s"
    expect_screen 'sort: peak' "the sort after s"
    keys s
    expect_screen 'sort: tasks' "the sort by tasks"
    # postgresql.service has the most tasks: first row.
    deadline=$((SECONDS + WAIT))
    until screen | sed -n 5p | grep -q '^postgresql\.service'; do
        [ $SECONDS -lt $deadline ] || { screen >&2; fail "postgresql.service is not first by tasks"; }
        sleep 0.1
    done
    keys '<' '<'
    expect_screen 'sort: current' "the sort back after < <"
    echo "ok units sort keys"

    # Stacks of every page: the tree's header says nothing of sampling.
    keys 3
    expect_screen '\[-\] \[all\]' "all stacks after 3"
    expect_screen 'PEAK STACK \(callers first' "the stacks header of a memstrackd that takes every stack"
    keys 4
    expect_screen '^UNIT +\[CURRENT\]' "back to the units view"

    # Enter on the second unit: its stacks, asked for by unit name.
    keys Home Down Enter
    expect_screen '3 Stacks +4 Units +5 Slab +\[unit postgresql\.service\] sort: current' "the unit scope in the tab line"
    expect_screen '\[-\] \[unit postgresql\.service\]' "the unit's own tree"
    calls units io.memstrack.StackTree | grep -qF '"unit": "postgresql.service"' ||
        fail "StackTree was not asked for unit postgresql.service"
    keys Down Right
    expect_screen '\[-\] ksys_write\+0x66' "the unit's stack opened"
    echo "ok Enter opens a unit's stacks"

    # A unit gone between the Top update and the StackTree call: the daemon's sentence and what to do.
    keys 4 End Enter
    expect_screen "^No unit 'ghost\.service' is known to memstrackd .* Press a for all stacks\." "NoSuchUnit on the last line"
    keys a
    expect_screen '\[-\] \[all\]' "all stacks after a"
    echo "ok a unit gone meanwhile"

    keys 4 /
    keys -l backup
    keys Enter
    expect_screen 'filter: backup' "the units filter"
    screen | grep -q '^loadgen-test' && fail "the filter left loadgen-test.service"
    keys Escape q
    expect_screen '^TOP-EXIT=0$' "a clean exit after q"
    echo "ok units filter"

    # A memstrackd without units: the view says so rather than looking empty.
    keys -l "clear; $CTL --address $work/old.sock top -d 0.2; echo TOP-EXIT=\$?"
    keys Enter
    expect_screen '^ 1 Tasks' "top against a memstrackd without units"
    keys 4
    expect_screen 'memstrackd does not report units' "the units view of a memstrackd without units"
    keys 1
    expect_screen "^ +4242 loadgen" "the tasks view still working"
    keys q
    expect_screen '^TOP-EXIT=0$' "a clean exit"
    echo "ok units view of a memstrackd without units"

    # Sampled stacks (eBPF exact mode): the Stacks view says so, in 80 columns too, whatever its scope.
    start_fake sampled --stack-sample-interval 64
    tmux_ resize-window -t top -x 80 -y 24
    keys -l "clear; $CTL --address $work/sampled.sock top -d 0.2; echo TOP-EXIT=\$?"
    keys Enter
    expect_screen '^ 1 Tasks' "top against a memstrackd sampling stacks"
    keys 3
    expect_screen '\[-\] \[all\]' "all stacks"
    expect_screen 'PEAK STACK sampled 1 in 64 pages, scaled to exact counts;' "the sampling line of all stacks"
    keys 4 Home Enter
    expect_screen '\[-\] \[unit loadgen-test\.service\]' "a unit's stacks"
    expect_screen 'PEAK STACK sampled 1 in 64 pages, scaled to exact counts;' "the sampling line of a unit's stacks"
    keys q
    expect_screen '^TOP-EXIT=0$' "a clean exit"
    echo "ok the stacks view says when stacks are sampled"
}

case $MODE in
    text) text_cases ;;
    tmux) tmux_cases ;;
    *) fail "unknown mode $MODE" ;;
esac
echo "all $MODE unit tests passed"
