# Helpers shared by the varlink integration tests (sourced, not run).
# Needs: SERVER (varlink-test-server), VLGO_BUILD (shared/tools/vlgo/build), WORK (scratch dir).

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

skip() {
    echo "SKIP: $*" >&2
    exit 77
}

# Builds vlgo once into $1 (the build script installs Go and the varlink binding if missing).
build_vlgo() {
    local out=$1
    [ -x "$VLGO_BUILD" ] || skip "vlgo build script not found at $VLGO_BUILD (shared/ is not beside the checkout)"
    if [ ! -x "$out/vlgo" ]; then
        "$VLGO_BUILD" "$out" >"$WORK/vlgo-build.log" 2>&1 || {
            cat "$WORK/vlgo-build.log" >&2
            if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/github.com/varlink/go ]; then
                skip "no Go toolchain or Go varlink binding, and they could not be installed"
            fi
            fail "cannot build vlgo"
        }
    fi
    VLGO=$out/vlgo
}

# Starts the test server with the given arguments and waits (bounded) for it to listen.
SERVER_PID=
start_server() {
    # Emptied first: the background shell may not have truncated it yet when the loop reads it, and a
    # previous server's READY would pass for this one's.
    : >"$WORK/server.out"
    "$SERVER" "$@" >"$WORK/server.out" 2>"$WORK/server.err" &
    SERVER_PID=$!
    for _ in $(seq 1 500); do
        grep -q READY "$WORK/server.out" 2>/dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.err" >&2; fail "server exited during start-up"; }
        sleep 0.02
    done
    fail "server did not become ready"
}

# Stops the server and requires a clean exit (0): no crash, and under ASan no leak.
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    local rc=0
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    if [ "$rc" -ne 0 ]; then
        cat "$WORK/server.err" >&2
        fail "server exited with status $rc"
    fi
}

# json_get JSON PYTHON-EXPR: evaluates an expression over the parsed JSON as "j".
json_get() {
    python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# expect_error EXPECTED-NAME EXPECTED-PARAMS-JSON vlgo-args...: the call fails with exit 4 and exactly
# that error (parameters compared as JSON).
expect_error() {
    local name=$1 params=$2 rc=0 err
    shift 2
    err=$("$VLGO" "$@" 2>&1 >/dev/null) || rc=$?
    [ "$rc" -eq 4 ] || fail "expected exit 4 (varlink error) from vlgo $*, got $rc: $err"
    case "$err" in
        "ERROR $name "*) ;;
        *) fail "expected $name from vlgo $*, got: $err" ;;
    esac
    python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))' \
        "${err#"ERROR $name "}" "$params" || fail "parameters of $name: got ${err#"ERROR $name "}, expected $params"
}
