# SPDX-License-Identifier: MIT
# Shared by the live-kernel integration tests: the start every one makes (lib_init), skip checks, a
# memstrackd on a private socket, loadgen driven line by line, and bounded polling. Source it after
# setting MEMSTRACKD, MEMSTRACKCTL, LOADGEN (those that use them).
# Nothing here sleeps to let time pass as an assertion: each wait polls for a condition, bounded.

WAIT=${WAIT:-120}       # seconds any one condition may take; a bound, not a measurement
PAGES=16384

skip() {
    echo "SKIP: $*" >&2
    exit 77
}

fail() {
    echo "FAIL: $*" >&2
    [ -n "${work:-}" ] && [ -f "$work/memstrackd.log" ] && { echo "--- memstrackd log:" >&2; tail -20 "$work/memstrackd.log" >&2; }
    exit 1
}

require_live_kernel() {
    [ "$(id -u)" -eq 0 ] || skip "needs root to trace page events system-wide"
    [ -e /proc/sys/kernel/perf_event_paranoid ] || skip "the kernel has no perf events"
    local d
    for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
        [ -d "$d/events/kmem/mm_page_alloc" ] && return 0
    done
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
    [ -d /sys/kernel/tracing/events/kmem/mm_page_alloc ] || skip "no tracefs with kmem tracepoints"
}

pids=()         # processes lib_cleanup stops
lib_cleanup() {
    exec 5>&- 6<&- 2>/dev/null
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    [ -n "${work:-}" ] && rm -rf "$work"
}

# The start every test makes, after its own skip checks: skip unless the kernel can be traced, then a
# work directory $work named after $1, which as_nobody's user can enter, removed at exit by lib_cleanup
# with every process in pids. A test with more to undo sets its own EXIT trap afterwards and calls
# lib_cleanup from it.
lib_init() {
    require_live_kernel
    work=$(mktemp -d "/tmp/$1.XXXXXX") || fail "cannot make a work directory in /tmp"
    chmod 0755 "$work"
    trap lib_cleanup EXIT
}

# Runs "$@" as uid and gid 65534 without supplementary groups (python3, which the tests need anyway,
# rather than setpriv, which not every system has). The program must be reachable by that user.
as_nobody() {
    python3 -c 'import os, sys
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}

ctl() {
    "$MEMSTRACKCTL" --address "$work/sock" "$@"
}

# Polls "$@" until it succeeds, up to $WAIT seconds; fails with the description $1.
wait_for() {
    local what=$1; shift
    local deadline=$((SECONDS + WAIT))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || fail "timed out after ${WAIT}s waiting for: $what"
        sleep 0.2
    done
}

# Extra arguments go to memstrackd.
start_daemon() {
    "$MEMSTRACKD" --foreground --socket "$work/sock" "$@" >>"$work/memstrackd.log" 2>&1 &
    daemon_pid=$!
    pids+=("$daemon_pid")
    wait_for "memstrackd to answer on $work/sock" ctl status
}

stop_daemon() {
    kill "$daemon_pid"
    wait "$daemon_pid" 2>/dev/null
    wait_for "memstrackd to exit" test ! -S "$work/sock" -o ! -d "/proc/$daemon_pid"
}

# Reads one line from loadgen into $line, failing after $WAIT seconds.
lg_expect() {
    line=
    read -r -t "$WAIT" -u 6 line || fail "loadgen did not answer within ${WAIT}s (waiting for: $1)"
    [[ $line == $1 ]] || fail "loadgen said '$line', expected '$1'"
}

# Starts loadgen --child --commands (and further loadgen options given); sets $lg_pid, the pid that
# allocates, and $lg_parent.
start_loadgen() {
    rm -f "$work/lg.in" "$work/lg.out"
    mkfifo "$work/lg.in" "$work/lg.out"
    "$LOADGEN" --commands --child --pages "$PAGES" "$@" <"$work/lg.in" >"$work/lg.out" &
    lg_parent=$!
    pids+=($!)
    exec 5>"$work/lg.in" 6<"$work/lg.out"
    lg_expect 'pid=*'
    lg_pid=${line#pid=}
}

lg() {
    echo "$1" >&5
    lg_expect "$2"
}

# The pages memstrackd charges to pid $1 now (0 if it does not list it).
pages_of() {
    ctl --json=short tasks --limit 10000 --all |
        python3 -c 'import json,sys; t=[x for x in json.load(sys.stdin)["tasks"] if x["pid"]==int(sys.argv[1])]; print(t[0]["currentPages"] if t else 0)' "$1"
}

loadgen_counted() {
    [ "$(pages_of "$lg_pid")" -ge "$PAGES" ]
}

# Fails unless the file holds exactly one valid JSON document.
assert_json() {
    python3 -m json.tool "$1" >/dev/null 2>&1 || fail "not valid JSON: $2 ($(head -c 300 "$1"))"
}

# --- What the memstrack-metrics tests share ---

# A cgroup for a holder, named like a unit ($1) so that memstrackd charges its pages to that name: on
# cgroup2, at /sys/fs/cgroup or (hybrid hosts) /sys/fs/cgroup/unified. Sets holder_cgroup, which the
# caller removes at exit; skips where there is none to make.
make_unit_cgroup() {
    local d root=
    for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        [ "$(stat -fc %T "$d" 2>/dev/null)" = cgroup2fs ] && { root=$d; break; }
    done
    [ -n "$root" ] || skip "no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified"
    holder_cgroup=$root/$1
    mkdir "$holder_cgroup" 2>/dev/null || skip "cannot make a cgroup in $root"
}

# A TCP port on loopback that nothing listens on now (the kernel picks it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# SIGTERM ends memstrack-metrics ($metrics_pid, its output in $work/metrics.log) cleanly: exit status 0
# (in the sanitizer build, also without leaks: ASan would exit 1).
test_metrics_exit() {
    local r
    kill "$metrics_pid"
    wait "$metrics_pid"; r=$?
    [ $r -eq 0 ] || fail "memstrack-metrics exited $r on SIGTERM: $(tail -20 "$work/metrics.log")"
    echo "ok memstrack-metrics exits 0 on SIGTERM"
}
