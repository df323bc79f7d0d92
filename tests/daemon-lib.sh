# SPDX-License-Identifier: MIT
# Shared by the tests that run memstrackd on a file (replayed events, page_owner logs) on a socket of their
# own and question it with memstrackctl (sourced, not run). Sourcing it makes the work directory:
#   work    a fresh directory, mode 755 (the socket in it is for the group's members, not root alone),
#           removed at exit, with the memstrackd still running then (a script that starts more sets its
#           own trap after sourcing this)
#   daemon  the pid of the script's memstrackd: the script starts it with --socket="$work/sock" and its log
#           in $work/log, sets daemon=$!, then calls daemon_answers
# The sourcing script sets CTL (memstrackctl) before it calls daemon_answers.

work=$(mktemp -d "/tmp/$(basename "$0" .sh).XXXXXX")
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; wait; rm -rf "$work"' EXIT
chmod 755 "$work"

# fail WHY: the test fails, with the end of $work/log (memstrackd's, or the command's the script ran last).
fail() {
    echo "FAIL: $*" >&2
    [ -f "$work/log" ] && { echo "--- log:" >&2; tail -n 40 "$work/log" >&2; }
    exit 1
}

# daemon_answers WHAT: waits until $daemon, started on WHAT, answers on $work/sock; fails if it exits, or
# after a minute (a hang guard, not a measurement).
daemon_answers() {
    for _ in $(seq 600); do
        "$CTL" --address "unix:$work/sock" status >/dev/null 2>&1 && return 0
        kill -0 "$daemon" 2>/dev/null || fail "$1: memstrackd exited"
        sleep 0.1
    done
    fail "$1: memstrackd does not answer"
}

# daemon_stop: SIGTERM, and a clean exit (under ASan, no leak either).
daemon_stop() {
    local status
    kill -TERM "$daemon"
    wait "$daemon"
    status=$?
    daemon=
    [ $status = 0 ] || fail "memstrackd exited with status $status after SIGTERM"
}
