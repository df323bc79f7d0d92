#!/bin/bash
# SPDX-License-Identifier: MIT
# Files memstrackd reads from a path are never waited on forever: a FIFO, a device or endless input where
# a file is expected is refused at once with its path, or (page_owner logs, which may come through a
# pipe) read with a bound, and memstrackd, like memstrackctl import page-owner, stops at SIGTERM or
# SIGINT while it waits or reads. The waits below only guard against a hang; nothing is timed.
#
# Usage: test-input-files.sh MEMSTRACKD MEMSTRACKCTL
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"
# Every process started here, memstrackd or memstrackctl, killed at exit.
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait; rm -rf "$work"' EXIT
# A hang guard: what should end at once (or at a signal) and does not within this is hanging.
GUARD=600

# exits PID WHAT: waits (hang guard) for PID to end and sets $status; a hang fails the test.
exits() {
    for _ in $(seq $GUARD); do
        kill -0 "$1" 2>/dev/null || { wait "$1"; status=$?; return 0; }
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null
    fail "$2: still running after $((GUARD / 10)) s"
}

# alive PID: PID runs (a zombie has ended).
alive() {
    [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# refuses WHAT TEXT ARGS...: memstrackd ARGS exits 1 on its own, saying TEXT.
refuses() {
    local what=$1 text=$2
    shift 2
    "$D" --foreground --no-socket --state-directory= "$@" >"$work/log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    exits "$pid" "$what"
    [ $status = 1 ] || fail "$what: exit status $status, expected 1"
    grep -q -- "$text" "$work/log" || fail "$what: the log does not say '$text'"
    echo "ok $what"
}

# The replayed events name no function: a kallsyms of one symbol, not the running kernel's.
echo "ffffffff81000000 T _text" >"$work/kallsyms"
printf 'task 1 a\nalloc 1 0x1000 0\n' >"$work/events"
mkfifo "$work/fifo"

refuses "a FIFO as the replay file" "replay file $work/fifo: not a regular file" \
    --source=replay --source-input="$work/fifo" --kallsyms="$work/kallsyms"
refuses "a directory as the replay file" "replay file $work: not a regular file" \
    --source=replay --source-input="$work" --kallsyms="$work/kallsyms"
refuses "a FIFO as the configuration file" "configuration file $work/fifo: not a regular file" \
    --config="$work/fifo" --source=replay --source-input="$work/events"
refuses "a FIFO as kallsyms" "kernel symbols from $work/fifo: not a regular file" \
    --source=replay --source-input="$work/events" --kallsyms="$work/fifo"
refuses "endless kallsyms" "kernel symbols from /dev/zero: not a regular file" \
    --source=replay --source-input="$work/events" --kallsyms=/dev/zero
refuses "/dev/urandom as a page_owner log" "page_owner log /dev/urandom: not a regular file or a pipe" \
    --source=page-owner --source-input=/dev/urandom
# Beyond the bound, told before anything is read (a sparse file: no disk used).
if truncate -s 257G "$work/huge-log" 2>/dev/null; then
    refuses "a page_owner log beyond the bound" "huge-log is 257.0 GiB, more than the 256.0 GiB a page_owner log" \
        --source=page-owner --source-input="$work/huge-log"
    rm -f "$work/huge-log"
else
    echo "skip a page_owner log beyond the bound: $work cannot hold a sparse file of 257 GiB"
fi

# A FIFO at the history file's path: a new history, the daemon serves, and the history is written as a file
# at the end.
mkdir "$work/state"
mkfifo "$work/state/history"
"$D" --foreground --source=replay --source-input="$work/events" --kallsyms="$work/kallsyms" \
    --socket="$work/sock" --group="$(id -gn)" --state-directory="$work/state" >"$work/log" 2>&1 &
daemon=$!
pids+=("$daemon")
daemon_answers "a FIFO as the history"
grep -q "history from $work/state/history, starting a new one: not a regular file" "$work/log" ||
    fail "a FIFO as the history: the log does not say so"
kill -TERM "$daemon"
exits "$daemon" "a FIFO as the history"
[ $status = 0 ] || fail "a FIFO as the history: exit status $status"
[ -f "$work/state/history" ] && [ ! -p "$work/state/history" ] ||
    fail "a FIFO as the history: no history file written at the end"
echo "ok a FIFO as the history file"

# A report into a FIFO nobody reads: said at the end, not waited on.
"$D" --foreground --source=replay --source-input="$work/events" --kallsyms="$work/kallsyms" \
    --socket="$work/sock" --group="$(id -gn)" --state-directory= --report=module_summary --output="$work/fifo" \
    >"$work/log" 2>&1 &
daemon=$!
pids+=("$daemon")
daemon_answers "a report into an unread FIFO"
kill -TERM "$daemon"
exits "$daemon" "a report into an unread FIFO"
[ $status = 1 ] || fail "a report into an unread FIFO: exit status $status"
grep -q "Failed to write the report to $work/fifo: no process reads it." "$work/log" ||
    fail "a report into an unread FIFO: the log does not say so"
echo "ok a report into a FIFO nobody reads"

# stops WHAT SIGNAL ARGS...: memstrackd ARGS (a page_owner log that does not end, on the function's
# standard input for -) stops at SIGNAL, sent once it says it reads.
stops() {
    local what=$1 sig=$2
    shift 2
    # A new log, so that the wait below sees this memstrackd's line, not the last one's.
    rm -f "$work/log"
    "$D" --foreground --source=page-owner --socket="$work/sock" --group="$(id -gn)" --state-directory= \
        --log-level=debug "$@" <&0 >"$work/log" 2>&1 &
    daemon=$!
    pids+=("$daemon")
    for _ in $(seq $GUARD); do
        grep -q "Reading the page_owner log" "$work/log" 2>/dev/null && break
        kill -0 "$daemon" 2>/dev/null || fail "$what: memstrackd exited before the signal"
        sleep 0.1
    done
    kill -"$sig" "$daemon"
    exits "$daemon" "$what"
    [ $status = 0 ] || fail "$what: exit status $status after SIG$sig"
    grep -q "Stopped by SIG$sig while reading" "$work/log" || fail "$what: the log does not say why it stopped"
    echo "ok $what"
}

# Nobody writes to the FIFO yet: memstrackd waits for a writer, and stops at SIGTERM.
stops "a page_owner FIFO without a writer" TERM --source-input="$work/fifo"
# Endless good records through a pipe (standard input): read until the signal. (yes ends when the pipe
# closes, even where SIGPIPE is ignored.)
stops "endless page_owner records on standard input" INT --source-input=- \
    < <(yes '1 times, 1 pages, PID 7, task_comm_name: endless' 2>/dev/null)
# Random bytes through a pipe: no record in them, refused without reading on and on.
cat /dev/urandom 2>/dev/null | "$D" --foreground --no-socket --source=page-owner --source-input=- \
    --state-directory= >"$work/log" 2>&1 &
daemon=$!
pids+=("$daemon")
exits "$daemon" "random bytes on standard input"
[ $status = 1 ] || fail "random bytes on standard input: exit status $status"
grep -q "(standard input): no page_owner record in the first 1.0 MiB; not a page_owner log." "$work/log" ||
    fail "random bytes on standard input: not refused"
echo "ok random bytes on standard input"

# memstrackctl import page-owner: SIGTERM, or SIGINT to its process group as Ctrl-C sends it, stops it and
# its private memstrackd, and it cleans up; killed outright, its memstrackd still stops. Job control, so
# that the commands below run as a terminal runs them: SIGINT not ignored, a process group of their own.
set -m
export MEMSTRACKD=$D TMPDIR=$work/tmp
mkdir "$TMPDIR"
daemon_exe=$(readlink -f "$D")
for sig in TERM INT KILL; do
    "$CTL" import page-owner "$work/fifo" >"$work/out" 2>"$work/log" &
    ctl=$!
    pids+=("$ctl")
    child=
    for _ in $(seq $GUARD); do
        child=$(pgrep -P "$ctl" | head -n 1)
        [ -n "$child" ] && [ "$(readlink "/proc/$child/exe" 2>/dev/null)" = "$daemon_exe" ] && break
        kill -0 "$ctl" 2>/dev/null || fail "import (SIG$sig): memstrackctl exited before the signal"
        sleep 0.1
    done
    [ -n "$child" ] || fail "import (SIG$sig): no memstrackd started"
    if [ $sig = INT ]; then
        kill -INT -- -"$ctl"
    else
        kill -"$sig" "$ctl"
    fi
    exits "$ctl" "import (SIG$sig)"
    # Dead of the signal, as a shell expects of a command it interrupted.
    [ $status = $((128 + $(kill -l $sig))) ] || fail "import (SIG$sig): exit status $status"
    # Not a child of this shell: gone is enough.
    for _ in $(seq $GUARD); do
        alive "$child" || break
        sleep 0.1
    done
    alive "$child" && { kill -KILL "$child"; fail "import (SIG$sig): its memstrackd runs on"; }
    if [ $sig != KILL ]; then
        [ -z "$(ls -A "$TMPDIR")" ] || fail "import (SIG$sig) left files behind: $(ls -A "$TMPDIR")"
        grep -q "^memstrackctl: import of $work/fifo stopped by SIG$sig.$" "$work/log" ||
            fail "import (SIG$sig): it does not say why it stopped"
    fi
    rm -rf "${TMPDIR:?}"/*
    echo "ok import page-owner stops at SIG$sig"
done

echo "no input file hangs memstrackd or spins unstoppable"
