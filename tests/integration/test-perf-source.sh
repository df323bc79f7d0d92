#!/bin/bash
# SPDX-License-Identifier: MIT
# The perf event source on the live kernel, through perf-source-probe (a counting sink) and loadgen.
# Needs root, perf events and the kmem tracepoints; skips (77) otherwise. No case depends on timing:
# each waits, bounded, for a line the other side prints once the thing has happened.
#
# Usage: test-perf-source.sh PROBE LOADGEN DATADIR
set -uo pipefail

PROBE=${1:?probe}
LOADGEN=${2:?loadgen}
DATA=${3:?data dir}
# skip, fail, the live-kernel checks, $work, pids, WAIT and PAGES.
. "$(dirname "${BASH_SOURCE[0]}")/memstrackctl-lib.sh"

lib_init test-perf-source
cleanup() {
    exec 3>&- 4<&- 2>/dev/null
    lib_cleanup
}
trap cleanup EXIT

# Reads one line from fd $1 into $line, failing after $WAIT seconds.
expect_line() {
    line=
    read -r -t "$WAIT" -u "$1" line || fail "no answer within ${WAIT}s (waiting for: $2)"
    [[ $line == $2 ]] || fail "expected '$2', got '$line'"
}

# Starts the probe with the given options, commands on fd 3, answers on fd 4.
start_probe() {
    rm -f "$work/probe.in" "$work/probe.out"
    mkfifo "$work/probe.in" "$work/probe.out"
    "$PROBE" --commands "$@" <"$work/probe.in" >"$work/probe.out" 2>"$work/probe.err" &
    probe_pid=$!
    pids+=($!)
    exec 3>"$work/probe.in" 4<"$work/probe.out"
    expect_line 4 ready
}

stop_probe() {
    echo quit >&3
    exec 3>&- 4<&-
}

# Starts loadgen in command mode, commands on fd 5, answers on fd 6; sets $lg_pid (the allocating pid).
# Not the lib's start_loadgen: the cases here need loadgen without --child and its exact command line.
start_loadgen() {
    rm -f "$work/lg.in" "$work/lg.out"
    mkfifo "$work/lg.in" "$work/lg.out"
    "$LOADGEN" --commands --pages "$PAGES" "$@" <"$work/lg.in" >"$work/lg.out" &
    pids+=($!)
    exec 5>"$work/lg.in" 6<"$work/lg.out"
    expect_line 6 'pid=*'
    lg_pid=${line#pid=}
}

lg() {
    echo "$1" >&5
    expect_line 6 "$2"
}

stop_loadgen() {
    lg exit bye
    exec 5>&- 6<&-
}

# Asks the probe for pid $1's counters; sets $alloc, $freed, $live.
report() {
    echo "report $1" >&3
    expect_line 4 "pid=$1 *"
    for kv in $line; do
        case $kv in
            alloc_pages=*) alloc=${kv#*=} ;;
            freed_pages=*) freed=${kv#*=} ;;
            live_pages=*) live=${kv#*=} ;;
        esac
    done
}

# The pages a child allocates are seen for its pid, and they come back when it frees them. Counted as
# deltas of the child's own allocated and freed pages around each step, so pages the process touches
# for other reasons (stdio, sanitizer shadow memory) do not count against the 0.5 % tolerance.
test_alloc_free() {
    local alloc0 freed1 tolerance=$((PAGES / 200))

    start_probe
    start_loadgen --child
    report "$lg_pid"
    alloc0=$alloc
    lg alloc allocated
    report "$lg_pid"
    echo "after alloc: alloc_pages $((alloc - alloc0))"
    [ $((alloc - alloc0)) -ge $PAGES ] || fail "saw $((alloc - alloc0)) pages allocated by $lg_pid, expected >= $PAGES"
    freed1=$freed
    lg free freed
    report "$lg_pid"
    echo "after free: freed_pages $((freed - freed1)) (tolerance $tolerance)"
    [ $((freed - freed1)) -ge $((PAGES - tolerance)) ] || fail "only $((freed - freed1)) pages came back"
    stop_loadgen
    stop_probe
}

# Two processes share a memfd: the pages stay with the allocator while the other process holds the
# last reference, and come back (charged to the allocator, freed in the other process) when it drops it.
test_memfd() {
    local freed0 freed1 tolerance=$((PAGES / 200))

    start_probe
    start_loadgen --memfd
    lg alloc 'holder=*'
    expect_line 6 allocated
    report "$lg_pid"
    freed0=$freed
    lg free freed
    report "$lg_pid"
    freed1=$freed
    echo "memfd, the allocator unmapped and closed it: freed_pages $((freed1 - freed0))"
    [ $((freed1 - freed0)) -le $tolerance ] || fail "$((freed1 - freed0)) memfd pages freed while the holder had them"
    lg release released
    report "$lg_pid"
    echo "memfd, the holder dropped the last reference: freed_pages $((freed - freed1))"
    echo stats >&3
    expect_line 4 "records=*"
    echo "probe: $line"
    [ $((freed - freed1)) -ge $((PAGES - tolerance)) ] || fail "only $((freed - freed1)) memfd pages came back"
    stop_loadgen
    stop_probe
}

# Asks the probe what it knows about pid $1; sets $line.
task() {
    echo "task $1" >&3
    expect_line 4 "pid=$1 *"
}

# Side-band and seeding: exec (COMM with cmdline), fork (parent), exit, tasks alive before tracing
# (seeded from /proc with a baseline), and the tracer's own allocations left out.
test_tasks() {
    local parent

    start_probe
    start_loadgen --child
    parent=${pids[-1]}
    task "$parent"
    echo "exec'd: $line"
    [[ $line == *" comm=loadgen "* && $line == *"cmdline=$LOADGEN --commands --pages $PAGES --child" ]] ||
        fail "exec of $parent not seen with its comm and cmdline"
    task "$lg_pid"
    echo "forked: $line"
    [[ $line == *" comm=loadgen parent=$parent "*"exited=0"* ]] || fail "fork of $lg_pid from $parent not seen"
    task 1
    echo "seeded: $line"
    [[ $line == *" seeded=1 "* ]] || fail "pid 1 not seeded from /proc"
    [[ $line != *" baseline_pages=0 "* ]] || fail "pid 1 seeded without a baseline"
    report "$probe_pid"
    echo "the probe itself: $line"
    [ "$alloc" -eq 0 ] || fail "the tracer's own allocations were reported"
    stop_loadgen
    wait "$parent"
    task "$lg_pid"
    echo "after exit: $line"
    [[ $line == *" exited=1 "* ]] || fail "exit of $lg_pid not seen"
    stop_probe
}

# Returns the value of key $1 in the probe's "stats" line.
stat_of() {
    sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$stats"
}

# Kernel frames by default and no user frames; with --user-stacks every fault of loadgen has user frames.
test_callchains() {
    start_probe
    "$LOADGEN" --pages $PAGES >/dev/null || fail "loadgen failed"
    echo stats >&3
    expect_line 4 'records=*'
    stats=$line
    echo "kernel stacks only: kernel_frames=$(stat_of kernel_frames) user_frames=$(stat_of user_frames)"
    [ "$(stat_of kernel_frames)" -ge $PAGES ] || fail "allocations without kernel frames"
    [ "$(stat_of user_frames)" -eq 0 ] || fail "user frames recorded without --user-stacks"
    stop_probe

    start_probe --user-stacks --depth 16
    "$LOADGEN" --pages $PAGES >/dev/null || fail "loadgen failed"
    echo stats >&3
    expect_line 4 'records=*'
    stats=$line
    echo "with user stacks: allocs_with_user_frames=$(stat_of allocs_with_user_frames)"
    [ "$(stat_of allocs_with_user_frames)" -ge $PAGES ] || fail "page faults without user frames"
    stop_probe
}

# A one-page ring cannot hold a burst of 16384 faults: the loss is reported, not silent.
test_lost() {
    local lost

    start_probe --buffer-pages 1
    "$LOADGEN" --pages $PAGES --repeat 4 >/dev/null || fail "loadgen failed"
    echo stats >&3
    expect_line 4 'records=*'
    echo "tiny ring: $line"
    lost=$(sed -n 's/.* lost=\([0-9]*\) .*/\1/p' <<<"$line")
    [ "${lost:-0}" -gt 0 ] || fail "no loss reported with a one-page ring"
    stop_probe
}

# A tracefs without kmem/mm_page_free: a clear error naming it and a non-zero exit.
test_missing_tracepoint() {
    local rc=0

    "$PROBE" --seconds 1 --tracefs "$DATA/tracefs-partial" 2>"$work/missing.err" >/dev/null || rc=$?
    cat "$work/missing.err"
    [ $rc -ne 0 ] || fail "the probe started without kmem/mm_page_free"
    grep -q 'kmem/mm_page_free' "$work/missing.err" || fail "the error does not name kmem/mm_page_free"

    rc=0
    "$PROBE" --seconds 1 --tracefs "$work/nowhere" 2>"$work/missing.err" >/dev/null || rc=$?
    cat "$work/missing.err"
    [ $rc -ne 0 ] || fail "the probe started without a tracefs"
    grep -q "$work/nowhere" "$work/missing.err" || fail "the error does not name the tracefs path"
}

for t in test_alloc_free test_memfd test_tasks test_callchains test_lost test_missing_tracepoint; do
    echo "== $t"
    $t
done
echo "all passed"
