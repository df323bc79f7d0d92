#!/bin/bash
# SPDX-License-Identifier: MIT
# Every memstrackctl verb says the same sentence, and exits with the same status, for the same error
# reply: a small varlink server answers every call with one error, and each verb's stderr must be
# exactly the sentence client/errors.c has for it. No daemon, no root needed.
#
# Usage: test-ctl-errors.sh MEMSTRACKCTL
set -uo pipefail

CTL=${1:?memstrackctl}
work=$(mktemp -d /tmp/test-ctl-errors.XXXXXX)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
failed=0

# Answers every call on every connection with the error $2 and parameters $3 (JSON).
cat >"$work/server.py" <<'PY'
import json, os, socket, sys, threading
path, name, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.bind(path + ".tmp"); os.rename(path + ".tmp", path); s.listen(16)
def serve(c):
    buf = b""
    while True:
        data = c.recv(65536)
        if not data:
            return
        buf += data
        while b"\0" in buf:
            _, buf = buf.split(b"\0", 1)
            c.sendall(json.dumps({"error": name, "parameters": params}).encode() + b"\0")
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY

start_server() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -f "$work/sock"
    python3 "$work/server.py" "$work/sock" "$1" "$2" &
    server=$!
    for _ in $(seq 1 300); do
        [ -S "$work/sock" ] && return 0
        sleep 0.1
    done
    echo "FAIL: the test server did not start"
    exit 1
}

verbs=(
    "status"
    "tasks"
    "modules"
    "units"
    "units --stacks 2"
    "stacks"
    "stacks --task 1"
    "top --batch -n 1"
    "top -n 1"
    "reset"
    "snapshot before"
    "snapshot --file $work/snap.json"
    "diff before"
    "snapshots"
    "snapshots --all"
    "delete-snapshot before"
    "delete-snapshot --uid 1000 before other"
    "report"
    "report --format flamegraph --task 1"
    "pprof --output $work/profile.pb.gz"
    "pprof --unit nope.service --output $work/profile.pb.gz"
)

# error name, parameters, exit status, the sentence.
check_error() {
    local name=$1 params=$2 status=$3 sentence=$4 v r
    start_server "$name" "$params"
    for v in "${verbs[@]}"; do
        # shellcheck disable=SC2086
        "$CTL" --address "$work/sock" $v >"$work/out" 2>"$work/err"; r=$?
        if [ $r -ne "$status" ]; then
            echo "FAIL $name: '$v' exited $r, expected $status"
            failed=1
        fi
        if [ "$(cat "$work/err")" != "$sentence" ]; then
            echo "FAIL $name: '$v' said '$(cat "$work/err")', expected '$sentence'"
            failed=1
        fi
        if [ -s "$work/out" ]; then
            echo "FAIL $name: '$v' printed to stdout: $(head -c 200 "$work/out")"
            failed=1
        fi
    done
    echo "ok $name: ${#verbs[@]} verbs, one sentence"
}

# Usage errors come before any connection: 2, whatever the server would say. Every option is checked
# against the verb's, the last one of the table too.
for v in "status --min-age 5" "status --uid 0" "delete-snapshot" "delete-snapshot x --uid nobody" \
         "delete-snapshot x --uid 4294967295" "snapshots extra"; do
    # shellcheck disable=SC2086
    "$CTL" --address "$work/nothing" $v >/dev/null 2>"$work/err"; r=$?
    if [ $r -ne 2 ]; then
        echo "FAIL: '$v' exited $r, expected 2: $(cat "$work/err")"
        failed=1
    fi
done
echo "ok usage errors"

version=$("$CTL" --version | awk '{ print $2 }')
check_error io.memstrack.NoSuchTask '{"pid": 999999}' 1 \
    "No task with pid 999999 is known to memstrackd (memstrackctl tasks --all lists them)."
check_error io.memstrack.NoSuchModule '{"name": "ext4"}' 1 \
    "No module 'ext4' is known to memstrackd (memstrackctl modules lists them)."
check_error io.memstrack.NoSuchUnit '{"name": "nope.service"}' 1 \
    "No unit 'nope.service' is known to memstrackd (memstrackctl units --all lists them)."
check_error io.memstrack.NoSuchSnapshot '{"name": "before"}' 1 \
    "No snapshot 'before' is saved in memstrackd (save one with: memstrackctl snapshot before)."
check_error io.memstrack.PermissionDenied '{"reason": "not in the group"}' 4 \
    "Permission denied by memstrackd: not in the group (root or group memstrack required)."
check_error io.memstrack.NotTracing '{"reason": "starting"}' 1 "memstrackd is not tracing: starting."
check_error io.memstrack.InternalError '{"errno": 12, "message": "out of memory"}' 1 \
    "memstrackd failed to answer: out of memory."
check_error org.varlink.service.MethodNotFound '{"method": "io.memstrack.Status"}' 5 \
    "memstrackd does not know io.memstrack.Status: it is another version than memstrackctl $version."
check_error com.example.Odd '{"a": 1}' 1 "memstrackd replied with error com.example.Odd {\"a\":1}."

# A name with bytes that are not UTF-8 cannot be sent (JSON strings are UTF-8): a usage error that shows
# the value as memstrackctl shows names, before any daemon is asked.
for args in "stacks --module" "history --unit" "tasks --comm"; do
    # shellcheck disable=SC2086
    "$CTL" --address "$work/none" $args $'bad\xff' >"$work/out" 2>"$work/err"; r=$?
    opt=${args#* }
    expected="memstrackctl: $opt takes a name in UTF-8 (other bytes as \\xNN, as memstrackctl shows them), not 'bad\\xff'."
    if [ $r -ne 2 ] || [ "$(head -1 "$work/err")" != "$expected" ]; then
        echo "FAIL non-UTF-8 $args: exited $r, said '$(head -1 "$work/err")'"
        failed=1
    fi
done
echo "ok names that are not UTF-8: usage errors"
exit $failed
