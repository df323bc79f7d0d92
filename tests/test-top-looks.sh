#!/bin/bash
# SPDX-License-Identifier: MIT
# How memstrackctl top looks, read off a tmux pane against a stand-in memstrackd (fake-memstrackd.py
# --moving: loadgen grows a page and postgres shrinks one at each update): colours (capture-pane -e
# shows them as escape sequences) with and without NO_COLOR, the memory meter, the trees of tasks and
# units, the history chart, mouse clicks, and the settings remembered between runs. No kernel, no root;
# skips (77) without tmux.
#
# Usage: test-top-looks.sh MEMSTRACKCTL TESTS_DIR
set -uo pipefail

CTL=${1:?memstrackctl}
TESTS=${2:?tests dir}
WAIT=60         # seconds any one condition may take; a bound, not a measurement
work=$(mktemp -d /tmp/test-top-looks.XXXXXX)
fake=
panes=0
server=

cleanup() {
    for i in $(seq "$panes"); do
        tmux -L "memstrack-looks-$$-$i" kill-server 2>/dev/null
    done
    [ -n "$fake" ] && kill "$fake" 2>/dev/null
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

command -v tmux >/dev/null || skip "tmux is not installed"

python3 "$TESTS/fake-memstrackd.py" --socket "$work/sock" --log "$work/log" --moving >"$work/fake.out" 2>&1 &
fake=$!
deadline=$((SECONDS + WAIT))
until [ -S "$work/sock" ]; do
    [ $SECONDS -lt $deadline ] || fail "the fake memstrackd did not start: $(cat "$work/fake.out")"
    sleep 0.1
done

tmux_() {
    tmux -L "$server" "$@"
}
screen() {
    tmux_ capture-pane -p -t top
}
# The screen with its attributes as SGR escape sequences.
screen_e() {
    tmux_ capture-pane -e -p -t top
}
keys() {
    tmux_ send-keys -t top "$@"
}

# Polls until the command "$1" succeeds ($2 says what is awaited).
wait_for() {
    local deadline=$((SECONDS + WAIT))
    until eval "$1"; do
        if [ $SECONDS -ge $deadline ]; then
            echo "--- screen:" >&2
            screen_e | cat -v >&2
            fail "after ${WAIT}s: $2"
        fi
        sleep 0.1
    done
}
expect_screen() {
    wait_for "screen | grep -qE -- '$1'" "the screen does not show /$1/ ($2)"
}
# Whether a cell of the first line matching the regex $1 has the attribute $2 (bold, dim, reverse, fg=N:
# 1 red, 2 green, 3 yellow, 4 blue, 5 magenta, 6 cyan), within the part matching $3 if given.
has() {
    screen_e | python3 "$TESTS/sgr-cells.py" has "$@"
}
lacks() {
    screen_e | python3 "$TESTS/sgr-cells.py" lacks "$@"
}

# A shell in a pane with colours (TERM=screen has 8), $HOME in the work directory: the settings go there.
# Each pane has a tmux server of its own (one that is going away cannot take a new session).
start_pane() {
    [ -n "$server" ] && tmux_ kill-server 2>/dev/null
    panes=$((panes + 1))
    server=memstrack-looks-$$-$panes
    echo 'set -g default-terminal screen' >"$work/tmux.conf"
    tmux_ -f "$work/tmux.conf" new-session -d -s top -x 120 -y 40 \
        "env -i PATH=$PATH HOME=$work TERM=screen $1 PS1='prompt\$ ' bash --norc --noprofile"
    expect_screen '^prompt\$' "the shell prompt"
}
run_top() {
    keys -l "$CTL --address $work/sock top -d 0.3; echo TOP-EXIT=\$?"
    keys Enter
    expect_screen '^ 1 Tasks +2 Modules' "top running"
}
quit_top() {
    keys q
    expect_screen '^TOP-EXIT=0$' "a clean exit after q"
    keys -l clear
    keys Enter
    wait_for "! screen | grep -q TOP-EXIT" "a cleared screen"
}

# Rows over this share of the machine's memory are marked: half way between postgres (8 MiB) and loadgen
# (64 MiB), whatever the machine's MemTotal.
mem_kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
high=$(python3 -c "print(32 * 1024 * 100 / $mem_kib)")
mkdir -p "$work/.config/memstrack"
printf 'high-percent=%s\n' "$high" >"$work/.config/memstrack/top.conf"

# ---- colours -----------------------------------------------------------------------------------------
start_pane ""
run_top
expect_screen '^ +4242 loadgen ' "loadgen's row"
# The meter: the machine's memory, what memstrack tracks (73.7 MiB: the fake's trackedPages), slab, cache.
expect_screen '^Mem\[[#=:| ]+\] [0-9.]+ [KMGT]iB/[0-9.]+ [KMGT]iB  tracked 73\.7 MiB  slab [0-9.]+ [KMGT]?i?B  cache [0-9.]+ [KMGT]?i?B  free [0-9.]+ [KMGT]?i?B' \
    "the memory meter"
# loadgen grows: its CURRENT in red; postgres shrinks: green; the exited checkpointer in blue.
wait_for "has ' 4242 loadgen ' fg=1 ' 6[0-9.]+ MiB '" "loadgen's growing CURRENT in red"
wait_for "has ' 812 postgres ' fg=2 ' [0-9.]+ MiB '" "postgres's shrinking CURRENT in green"
lacks ' 812 postgres ' fg=2 ' 16\.0 MiB ' || fail "postgres's PEAK in green too"
wait_for "has ' 815 postgres ' fg=4 exited" "the exited task in blue"
# loadgen holds more than the high share: bold (1) and magenta (35).
wait_for "has ' 4242 loadgen ' fg=5 loadgen" "loadgen over the high share in magenta"
has ' 4242 loadgen ' bold loadgen || fail "loadgen over the high share is not bold"
lacks ' 812 postgres ' fg=5 || fail "postgres (under the share) in magenta"
# The daemon's health: nothing lost, in green.
wait_for "has '^memstrack top - ' fg=2 'lost 0'" "the header's lost count in green"
wait_for "has '^Mem\\[' fg=3 ' cache '" "the meter's cache label in yellow"
has '^Mem\[' fg=6 '^Mem' || fail "the meter's label is not cyan"
echo "ok colours: growing red, shrinking green, exited blue, over the share magenta, meter and header"
quit_top

start_pane "NO_COLOR=1"
run_top
expect_screen '^ +4242 loadgen ' "loadgen's row without colours"
# No colour at all (no SGR 30-37, 40-47, 38/48), while the meaning stays: the exited row dim, the row
# over the share bold, the selection in reverse video, the meter's parts by their characters.
wait_for "has ' 815 postgres ' dim exited" "the exited task dim without colours"
wait_for "has ' 4242 loadgen ' reverse loadgen" "the selection in reverse video without colours"
has ' 4242 loadgen ' bold loadgen || fail "loadgen over the high share is not bold without colours"
screen_e | python3 "$TESTS/sgr-cells.py" colourless || fail "colours with NO_COLOR set"
lacks ' 812 postgres ' bold postgres || fail "postgres (under the share) is bold"
echo "ok NO_COLOR: no colours, dim exited, reverse selection"
quit_top

# ---- trees -------------------------------------------------------------------------------------------
start_pane ""
run_top
keys t
expect_screen 'sort: current  tree' "the tree state in the tab line"
# 815 (postgres's child) hangs below 812; 4242 and 812, whose parent pid 1 is not shown, are roots.
expect_screen '^ +815 postgres .* exited  `- postgres: checkpointer$' "the child below its parent"
rows=$(screen | sed -n '5,30p' | grep -E '^ +[0-9]+ ' | awk '{ print $1 }' | tr '\n' ' ')
[ "$rows" = "4242 812 815 " ] || fail "tree order $rows, expected 4242 812 815"
wait_for "has 'postgres: checkpointer' fg=6 '\`- '" "the tree lines in cyan"
# Select 812 (Down), close it (Left): the child goes, [+] shows; open it again (Right).
keys Down Left
expect_screen '^ +812 postgres .*running \[\+\] postgres: writer$' "812 closed with Left"
screen | grep -q ' 815 ' && fail "815 still shown below its closed parent"
keys Right
expect_screen '^ +815 postgres' "812 opened again with Right"
# Left on a child goes to its parent.
keys Down Left
wait_for "has ' 812 postgres ' reverse postgres" "Left on 815 selects its parent 812"
echo "ok tasks tree: by parent, closed and opened, Left to the parent"

keys 4
expect_screen '^UNIT +\[CURRENT\]' "the units view"
keys t
expect_screen '^system\.slice +[0-9.]+ MiB +18882 +- +4 slice$' "system.slice with its units' sums"
expect_screen '^\|- loadgen-test\.service +64\.0 MiB +16384 +64\.0 MiB +1 live$' "a unit below system.slice"
expect_screen '^`- ghost\.service ' "the last unit of system.slice"
expect_screen '^user\.slice +3\.9 MiB +1000 +- +2 slice$' "user.slice"
expect_screen '^`- user-1000\.slice +3\.9 MiB +1000 +- +2 slice$' "the slice in the slice"
expect_screen '^   `- session-3\.scope +3\.9 MiB +1000 +3\.9 MiB +2 live$' "the scope two slices deep"
echo "ok units tree: by slice, two levels"

# ---- chart -------------------------------------------------------------------------------------------
keys 1 Home
keys g
# The fake's history: a ramp to 64 MiB and a spike to 96 MiB; the axis tops at a round 100 MiB.
expect_screen '^pid 4242 over 10 min, 1 s buckets: current #, peak -   peak 96\.0 MiB  now 64\.0 MiB' "the chart's title"
expect_screen '^100\.0 MiB \|' "the top of the value axis"
expect_screen '^ 50\.0 MiB \|' "the middle of the value axis"
expect_screen '^ +0 \|[.=#]+' "the plot's bottom row"
expect_screen '^ +\+-10m +-5m +now$' "the time axis"
# The spike above the fill is a peak mark, in red; the fill is green.
expect_screen '^100\.0 MiB \| +-' "the peak's mark"
wait_for "has '^100\\.0 MiB' fg=1 ' -'" "the peak's mark in red"
wait_for "has '^ +0 \\|' fg=2 '#+'" "the fill in green"
grep -qF '"resolution": 1' "$work/log" || fail "History was not asked for 1 s buckets"
# The chart is sized to the terminal: wider, the plot is wider.
width_before=$(screen | grep -E '^ +0 \|' | awk '{ print length($0) }')
tmux_ resize-window -t top -x 160 -y 40
wait_for "[ \"\$(screen | grep -E '^ +0 \\|' | awk '{ print length(\$0) }')\" = 160 ]" "the plot 160 columns wide"
[ "$width_before" = 120 ] || fail "the plot was $width_before columns wide in 120"
tmux_ resize-window -t top -x 120 -y 40
keys g
expect_screen '^pid 4242 over 24 h, 1 min buckets' "the 24 h chart after g"
expect_screen '^ +\+-24h +-12h +now$' "the 24 h time axis"
grep -qF '"resolution": 60' "$work/log" || fail "History was not asked for 1 min buckets"
keys g
expect_screen '^pid 4242 [_.:=+*#-]+ peak ' "the one-line sparkline with the chart off"
echo "ok chart: 10 min and 24 h, axes, peak mark, sized to the terminal"

# ---- mouse -------------------------------------------------------------------------------------------
# xterm's mouse report (TERM=screen's kmous): ESC [ M, then 32 + button (0 press, 3 release), 33 + column,
# 33 + line. A click on the PEAK header (line 4, column 36) sorts by peak; on the tab " 4 Units " switches.
click() {
    keys -l "$(printf '\e[M %b%b' "\\$(printf '%03o' $((33 + $1)))" "\\$(printf '%03o' $((33 + $2)))")"
    keys -l "$(printf '\e[M#%b%b' "\\$(printf '%03o' $((33 + $1)))" "\\$(printf '%03o' $((33 + $2)))")"
}
click 36 3
expect_screen 'PID COMM +CURRENT +\[PEAK\]' "PEAK sorted after a click on its header"
expect_screen 'sort: peak' "the sort by peak"
# A click on 812's row selects it (line 6 in the tree: 4242, 812, 815).
click 10 5
wait_for "has ' 812 postgres ' reverse postgres" "812 selected by a click"
click 40 2
expect_screen '^UNIT ' "the units view after a click on its tab"
echo "ok mouse: sort by a header, select a row, switch tabs"

# ---- settings ----------------------------------------------------------------------------------------
quit_top
conf=$work/.config/memstrack/top.conf
grep -qx 'view=units' "$conf" || fail "the view was not saved: $(cat "$conf")"
grep -qx 'tree.units=yes' "$conf" && grep -qx 'tree.tasks=yes' "$conf" || fail "the trees were not saved: $(cat "$conf")"
grep -qx 'sort.tasks=peak' "$conf" || fail "the sort was not saved: $(cat "$conf")"
grep -qx "high-percent=$(python3 -c "print('%g' % $high)")" "$conf" || fail "high-percent was not kept: $(cat "$conf")"
run_top
expect_screen '^system\.slice ' "the units tree again at the next start"
keys 1
expect_screen 'sort: peak  tree' "the tasks' sort and tree again"
echo "ok settings remembered in \$XDG_CONFIG_HOME/memstrack/top.conf"

# A file with nonsense changes nothing and stops nothing.
quit_top
printf 'view=nowhere\nsort.tasks=sideways\ntree.units=maybe\nchart=1y\nhigh-percent=-3\ngarbage\n' >"$conf"
run_top
expect_screen '^    PID COMM +\[CURRENT\]' "the defaults after a file of nonsense"
quit_top

# UTF-8: the tree in box drawing characters.
start_pane "LANG=C.UTF-8"
run_top
keys t
expect_screen '^ +815 postgres .* └─ postgres: checkpointer$' "the tree's corner in box drawing"
quit_top
echo "all top looks tests passed"
