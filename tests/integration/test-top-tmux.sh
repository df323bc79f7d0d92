#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl top tried as a person would: in a tmux pane against memstrackd and loadgen, a key at a
# time, reading the screen after each (tmux capture-pane). Every check polls the screen until what is
# expected shows up, bounded, so a slow machine is slower, not flaky.
# Needs root, the kmem tracepoints and tmux; skips (77) otherwise.
#
# Usage: test-top-tmux.sh MEMSTRACKD MEMSTRACKCTL LOADGEN TESTS_DIR
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
TESTS=${4:?tests dir}
WAIT=60
. "$TESTS/integration/memstrackctl-lib.sh"

command -v tmux >/dev/null || skip "tmux is not installed"
lib_init test-top-tmux
server=memstrack-test-$$
tmux_() {
    tmux -L "$server" "$@"
}
# The pane's top gets SIGHUP from kill-server and exits; should it not (LeakSanitizer once hung at such
# an exit, spinning for hours after the test), it is killed after 10 s rather than left behind.
cleanup() {
    local i
    tmux_ kill-server 2>/dev/null
    for i in $(seq 100); do
        pgrep -f -- "--address $work/sock top" >/dev/null || break
        sleep 0.1
    done
    pkill -KILL -f -- "--address $work/sock top" 2>/dev/null
    lib_cleanup
}
trap cleanup EXIT

screen() {
    tmux_ capture-pane -p -t top
}

# Polls the screen until it matches the extended regex $1 (or, with -v, until it does not).
expect_screen() {
    local invert=false
    [ "$1" = -v ] && { invert=true; shift; }
    local deadline=$((SECONDS + WAIT))
    while :; do
        if screen | grep -qE -- "$1"; then
            $invert || return 0
        else
            $invert && return 0
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "--- screen:" >&2
            screen >&2
            fail "after ${WAIT}s the screen $($invert && echo still shows || echo does not show) /$1/ ($2)"
        fi
        sleep 0.1
    done
}

keys() {
    tmux_ send-keys -t top "$@"
}

start_daemon
start_loadgen
lg alloc allocated
wait_for "memstrackd to charge loadgen's pages" loadgen_counted

# "screen" is in every terminfo database; tmux's own entry may not be.
echo 'set -g default-terminal screen' >"$work/tmux.conf"
tmux_ -f "$work/tmux.conf" new-session -d -s top -x 120 -y 40 "env -i PATH=$PATH HOME=$work TERM=screen PS1='prompt\$ ' bash --norc --noprofile"
expect_screen '^prompt\$' "the shell prompt"
keys -l "$MEMSTRACKCTL --address $work/sock top -d 0.5; echo TOP-EXIT=\$?"
keys Enter

# The tasks view with the header, totals and loadgen's row.
expect_screen '^memstrack top - tracked .* pages\), peak .* events/s - lost [0-9]+ - up' "the header line"
expect_screen '^ 1 Tasks +2 Modules +3 Stacks +4 Units +5 Slab +sort: current' "the view tabs"
expect_screen 'PID COMM +\[CURRENT\] +PEAK +COLD +ALLOCS +FREES STATE +COMMAND' "the tasks header, sorted by current"
expect_screen "^ +$lg_pid loadgen +6[4-9]\.[0-9] MiB" "loadgen's row with its 64 MiB"
echo "ok tasks view"

keys Tab
expect_screen 'MODULE +\[CURRENT\] +PAGES +PEAK +PAGES +STATE' "the modules header after Tab"
expect_screen '^vmlinux +[0-9.]+ [KMG]iB' "the vmlinux row"
echo "ok modules view (Tab)"

keys Tab
# The header says so first when the daemon samples stacks (the eBPF source's exact mode), as Status does.
interval=$(ctl --json=short status | python3 -c 'import json, sys; print(json.load(sys.stdin).get("stackSampleInterval", 1))') ||
    fail "memstrackctl status --json failed"
if [ "$interval" -gt 1 ]; then
    expect_screen "STACK sampled 1 in $interval pages, scaled to exact counts; callers first" \
        "the stacks header of sampled stacks after the second Tab"
else
    expect_screen 'STACK \(callers first' "the stacks header after the second Tab"
fi
expect_screen '\[-\] \[all\]' "the open root of all stacks"
expect_screen '^ +[0-9.]+ [KMG]iB +[0-9.]+ [KMG]iB +\[\+\] ' "closed children under the root"
keys Down Right
expect_screen '^ +[0-9.]+ [KMG]iB +[0-9.]+ [KMG]iB +\[-\] [^[]' "a child opened with Right"
keys Left
expect_screen -v '^ +[0-9.]+ [KMG]iB +[0-9.]+ [KMG]iB +\[-\] [^[]' "the child closed with Left"
echo "ok stacks view: expand, collapse"

# The units view. (A memstrackd without io.memstrack.Units is test-top-units' fake daemon's case: this
# memstrackd must answer it.)
units_answer=$(python3 - "$work/sock" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"method": "io.memstrack.Units", "parameters": {"limit": 1000}}).encode() + b"\0")
buf = b""
while not buf.endswith(b"\0"):
    data = s.recv(65536)
    if not data:
        break
    buf += data
reply = json.loads(buf.rstrip(b"\0"))
print(reply.get("error") or "units")
PY
) || fail "cannot ask memstrackd for Units"
# The unit loadgen runs in, as the daemon names it: the innermost unit in its cgroup path, else the path.
lg_unit=$(python3 - "$lg_pid" <<'PY'
import re, sys
path = next(l.split(":", 2)[2] for l in open(f"/proc/{sys.argv[1]}/cgroup").read().splitlines() if l.startswith("0::"))
units = [c for c in path.split("/") if re.search(r"\.(service|scope|slice|socket|mount|swap|timer|path|target|device|automount)$", c)]
print(units[-1] if units else path)
PY
)
keys 4
[ "$units_answer" = units ] || fail "memstrackd answered Units with $units_answer"
expect_screen 'UNIT +\[CURRENT\] +PAGES +PEAK +TASKS +STATE' "the units header after 4"
# loadgen's unit holds at least loadgen's 64 MiB (16384 pages); its PAGES column says so. Names over
# the 28 columns of the UNIT column end in an ellipsis: compare what is left of them.
deadline=$((SECONDS + WAIT))
shown="$lg_unit "
[ ${#lg_unit} -gt 28 ] && shown=${lg_unit:0:27}
until screen | awk -v u="$shown" 'substr($0, 1, length(u)) == u && $(NF - 4) >= 16384 { found = 1 }
                                  END { exit !found }'; do
    [ $SECONDS -lt $deadline ] || { screen >&2; fail "no row for loadgen's unit $lg_unit with 16384 pages or more"; }
    sleep 0.1
done
keys /
keys -l "$lg_unit"
keys Enter Home Enter
expect_screen "3 Stacks +4 Units +5 Slab +\[unit $(sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$lg_unit")\]" "loadgen's unit's stacks after Enter"
keys 4 Escape
echo "ok units view: $lg_unit holds loadgen's pages, Enter opens its stacks"

# The slab view: this memstrackd runs without --slab, and the view says how to turn it on.
keys 5
expect_screen 'CALL SITE +OBJECTS +\[BYTES\] +REQUESTED +WASTE +PEAK +ALLOCS +FREES' "the slab view's header after 5"
expect_screen 'memstrackd does not trace slab objects: start it with --slab' "the slab view's note without --slab"
echo "ok slab view: its header, and the note without --slab"

keys 1
expect_screen 'PID COMM +\[CURRENT\]' "the tasks view after 1"
keys s
expect_screen 'sort: peak' "the sort after s"
expect_screen 'PID COMM +CURRENT +\[PEAK\]' "the PEAK column marked"
keys '>'
expect_screen 'sort: allocs' "the sort after >"
keys '<' '<'
expect_screen 'sort: current' "the sort back after < <"
echo "ok sort keys"

keys /
expect_screen '^Filter: _' "the filter prompt"
keys -l loadgen
expect_screen '^Filter: loadgen_' "the typed filter"
keys Enter
expect_screen 'sort: current  filter: loadgen' "the filter in the tab line"
# Only loadgen's rows are left (the parent that forked the child is a loadgen too).
deadline=$((SECONDS + WAIT))
# Lines 5 to 38: the panel; 39 is the history graph, 40 the status line.
until rows=$(screen | sed -n '5,38p' | grep -v '^ *$') && [ -n "$rows" ] && ! echo "$rows" | grep -vq loadgen; do
    [ $SECONDS -lt $deadline ] || { screen >&2; fail "rows other than loadgen's remain after the filter"; }
    sleep 0.1
done
echo "ok filter"
# Above the status line, the selected task's history: a sparkline, its peak and its current size.
# The pane runs in the C locale: ASCII levels.
expect_screen '^pid [0-9]+ [_.:=+*#-]+ peak [0-9.]+ [KMGT]?i?B now [0-9.]+ [KMGT]?i?B' "the selected row's history graph"
# Its highest peak is marked (reverse video) on that line.
graph_marked() {
    tmux_ capture-pane -e -p -t top | sed -n 39p | grep -q $'\e\[[0-9;]*7m'
}
wait_for "the graph's peak marked in reverse video" graph_marked
echo "ok history graph"

# The highlighted row's pid (escape sequences from capture-pane -e: reverse video marks it), below the
# header lines.
selected_pid() {
    tmux_ capture-pane -e -p -t top | tail -n +5 | grep $'\e\[[0-9;]*7m' | sed 's/\x1b\[[0-9;]*m//g' |
        grep -E '^ +[0-9]+ ' | awk '{ print $1 }' | head -1
}
header() {
    screen | head -1
}
# The pid of the panel's first row.
first_pid() {
    screen | tail -n +5 | grep -E '^ +[0-9]+ ' | awk '{ print $1 }' | head -1
}
# Moves the selection with Down, a key at a time, to the row of pid $1 (other loadgens may run too).
# Home is seen to reach the first row before the first Down: pressed together, both may be read before
# a frame is drawn, and the selection seen before Home would then look stuck.
select_pid() {
    local i before deadline
    keys Home
    deadline=$((SECONDS + WAIT))
    until [ -n "$(selected_pid)" ] && [ "$(selected_pid)" = "$(first_pid)" ]; do
        [ $SECONDS -lt $deadline ] || { screen >&2; fail "Home did not select the first row"; }
        sleep 0.1
    done
    for i in $(seq 60); do
        [ "$(selected_pid)" = "$1" ] && return 0
        before=$(selected_pid)
        keys Down
        deadline=$((SECONDS + WAIT))
        until [ "$(selected_pid)" != "$before" ]; do
            [ $SECONDS -lt $deadline ] || { screen >&2; fail "Down did not move the selection from $before"; }
            sleep 0.1
        done
    done
    screen >&2
    fail "Down never reached pid $1"
}
# The parent loadgen sorts below the child, which holds more; then two refreshes pass.
select_pid "$lg_parent"
for i in 1 2; do
    h=$(header)
    deadline=$((SECONDS + WAIT))
    until [ "$(header)" != "$h" ]; do
        [ $SECONDS -lt $deadline ] || fail "the view did not refresh"
        sleep 0.1
    done
done
[ "$(selected_pid)" = "$lg_parent" ] || fail "the selection moved from $lg_parent to $(selected_pid) on refresh"
echo "ok selection kept across refreshes"

# The selection is loadgen's biggest row; Enter shows its stacks, and it survives refreshes meanwhile.
select_pid "$lg_pid"
keys Enter
expect_screen "\[-\] \[pid $lg_pid loadgen\]" "loadgen's own stack tree after Enter"
expect_screen "3 Stacks +4 Units +5 Slab +\[pid $lg_pid loadgen\] sort: current" "the stacks scope in the tab line"
keys a
expect_screen '\[-\] \[all\]' "all stacks after a"
keys 1 Escape
expect_screen -v 'filter: loadgen' "the filter cleared with Esc"
echo "ok Enter opens a task's stacks"

keys p
expect_screen 'PAUSED' "PAUSED after p"
keys p
expect_screen -v 'PAUSED' "PAUSED gone after p again"
echo "ok pause"

keys '?'
expect_screen 'memstrack top help - any key returns' "the help after ?"
expect_screen 'reset peaks \(asks first\)' "the keys in the help"
keys x
expect_screen -v 'memstrack top help' "the help closed by a key"
keys F1
expect_screen 'memstrack top help' "the help after F1"
keys x
expect_screen -v 'memstrack top help' "the help closed again"
echo "ok help"

keys r
expect_screen 'Reset all peaks to the current values\? \[y/N\]' "the reset confirmation"
keys n
expect_screen 'Reset cancelled\.' "the reset cancelled by n"
keys r y
expect_screen 'Peaks reset\.' "the reset done after y"
echo "ok reset peaks with confirmation"

# Small terminal: everything still in place, nothing wraps.
tmux_ resize-window -t top -x 80 -y 24
expect_screen '^memstrack top - tracked' "the header at 80x24"
deadline=$((SECONDS + WAIT))
until [ "$(screen | wc -l)" -eq 24 ] && screen | sed -n 24p | grep -qE 'F1/\? help|Peaks reset' &&
      screen | sed -n 4p | grep -q 'PID COMM'; do
    [ $SECONDS -lt $deadline ] || { screen >&2; fail "the 80x24 layout is wrong"; }
    sleep 0.1
done
screen | awk 'length($0) > 80 { exit 1 }' || fail "a line is wider than 80 columns"
tmux_ resize-window -t top -x 200 -y 50
expect_screen "^ +[0-9]+ loadgen .*loadgen --commands --child --pages $PAGES" "the full command line at 200 columns"
echo "ok resize (SIGWINCH)"

# The daemon goes away and comes back: the view says so and reconnects by itself. The new daemon has the
# smallest stack node budget and takes a stack for every page, so the first process it sees (memstrackctl
# status, which start_daemon runs) fills it however quiet the machine: the bottom line warns about it.
stop_daemon
expect_screen 'memstrackd gone \(.*\), reconnecting\.\.\.' "the status line once the daemon is gone"
start_daemon --max-stack-nodes=16 --stack-sample-interval=1
expect_screen 'Connected to memstrackd at' "the status line after reconnecting"
expect_screen '^memstrack top - tracked' "the header after reconnecting"
echo "ok daemon gone and back"
# A key clears the status message; the bottom line then shows the warning.
keys 1
expect_screen '^Warning: stack node budget full' "the warning once the stack node budget is full"
echo "ok stack budget warning"

keys q
expect_screen '^TOP-EXIT=0$' "a clean exit after q"
expect_screen '^prompt\$ *$' "the prompt after top"
screen | grep -q '1 Tasks' && fail "the TUI is still on the screen after q"
echo "ok quit leaves the shell clean"

# Into a pipe, top prints text as --batch does (and $MEMSTRACK_ADDRESS names the daemon).
keys -l "clear"
keys Enter
expect_screen -v '^TOP-EXIT=0$' "a cleared screen"
keys -l "MEMSTRACK_ADDRESS=$work/sock $MEMSTRACKCTL top -n 1 -d 0.2 --limit 3 | cut -c1-100; echo PIPE-EXIT=\${PIPESTATUS[0]}"
keys Enter
expect_screen '^PIPE-EXIT=0$' "top into a pipe ending after -n 1"
expect_screen '^memstrack top - tracked' "the text header of top into a pipe"
# (The daemon was restarted above and has not seen loadgen allocate: no row to look for.)
# Columns are as wide as their widest cell: a task holding 100000 pages or more widens PAGES.
expect_screen '^ *PID +COMM +CURRENT +PAGES +PEAK' "the text tasks table of top into a pipe"
screen | grep -q ' 1 Tasks' && fail "top into a pipe started the live view"
echo "ok top into a pipe is text"

# SIGTERM restores the terminal too.
keys -l "$MEMSTRACKCTL --address $work/sock top; echo TOP-EXIT=\$?"
keys Enter
expect_screen '^ 1 Tasks' "top running again"
# The pane's shell runs top as its only child.
shell_pid=$(tmux_ display-message -p -t top '#{pane_pid}')
top_pid=$(ps -o pid= --ppid "$shell_pid" | tr -d ' ')
[ -n "$top_pid" ] || fail "cannot find top's pid under the pane's shell $shell_pid"
kill -TERM "$top_pid" || fail "could not signal top ($top_pid)"
expect_screen '^TOP-EXIT=0$' "a clean exit after SIGTERM"
tmux_ send-keys -t top -l "stty -a | grep -o ' echo ' ; echo STTY-DONE"
keys Enter
expect_screen '^ echo *$' "echo restored after SIGTERM"
echo "all top tests passed"
