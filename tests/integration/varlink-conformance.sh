#!/bin/bash
# Conformance of the generic varlink server with an independent client: vlgo, built on the official Go
# varlink binding, talks to varlink-test-server (io.memstrack.test). Also parses every IDL (the files
# and what the server serves) with the Go binding's own IDL parser.
#
# usage: varlink-conformance.sh SERVER VLGO_BUILD SOURCE_ROOT WORKDIR
set -euo pipefail
SERVER=$1 VLGO_BUILD=$2 SRC=$3 WORK=$4
mkdir -p "$WORK"
WORK=$(mktemp -d "$(cd "$WORK" && pwd)/conformance.XXXXXX")
. "$SRC/tests/integration/varlink-lib.sh"
trap 'stop_server >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

build_vlgo "$(dirname "$WORK")/vlgo"
SOCK=$WORK/io.memstrack.test
ADDR=unix:$SOCK
start_server --socket "$SOCK" --group ""

test_info() {
    local out
    out=$("$VLGO" info "$ADDR")
    [ "$(json_get "$out" 'j["interfaces"]')" = "['org.varlink.service', 'io.memstrack.test']" ] || fail "info: $out"
    [ "$(json_get "$out" 'j["vendor"]')" = memstrack ] || fail "info vendor: $out"
    [ "$(json_get "$out" 'j["product"]')" = varlink-test-server ] || fail "info product: $out"
    [ -n "$(json_get "$out" 'j["version"]')" ] || fail "info version: $out"
}

# The served description is the checked-in file, byte for byte, and Go's IDL parser accepts it.
test_describe() {
    "$VLGO" describe "$ADDR" io.memstrack.test >"$WORK/test.varlink"
    cmp "$WORK/test.varlink" "$SRC/tests/io.memstrack.test.varlink" || fail "describe io.memstrack.test differs"
    "$VLGO" describe "$ADDR" org.varlink.service >"$WORK/service.varlink"
    cmp "$WORK/service.varlink" "$SRC/protocol/org.varlink.service.varlink" || fail "describe org.varlink.service differs"
    expect_error org.varlink.service.InterfaceNotFound '{"interface":"io.nothere"}' describe "$ADDR" io.nothere
}

test_go_idl_parser() {
    local gocache=${GOCACHE:-$(dirname "$WORK")/vlgo/.gocache}
    mkdir -p "$WORK/idlcheck"
    cp "$SRC/tests/integration/idl-parse.go" "$WORK/idlcheck/main.go"
    (cd "$WORK/idlcheck" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$gocache go build -o idl-parse main.go) ||
        fail "cannot build the Go IDL check"
    "$WORK/idlcheck/idl-parse" "$SRC/protocol/io.memstrack.varlink" "$SRC/protocol/org.varlink.service.varlink" \
        "$WORK/test.varlink" "$WORK/service.varlink" || fail "Go's varlink IDL parser rejects an interface"
}

test_call() {
    local out
    out=$("$VLGO" call "$ADDR" io.memstrack.test.Echo '{"text":"hi ü","number":3,"flag":true}')
    [ "$(json_get "$out" '(j["text"], j["number"], j["flag"], j["isRoot"])')" = "('hi ü', 3, True, $([ "$(id -u)" = 0 ] && echo True || echo False))" ] ||
        fail "Echo: $out"
    # GetInfo through the generic call path (the binding sends "parameters": null).
    out=$("$VLGO" call "$ADDR" org.varlink.service.GetInfo)
    [ "$(json_get "$out" 'len(j["interfaces"])')" = 2 ] || fail "GetInfo via call: $out"
}

test_more_stream() {
    local out
    out=$("$VLGO" call --more "$ADDR" io.memstrack.test.Stream '{"count":5,"intervalUsec":1000}')
    [ "$(echo "$out" | wc -l)" = 5 ] || fail "Stream: expected 5 replies, got: $out"
    [ "$(echo "$out" | python3 -c 'import json,sys; print([json.loads(l)["index"] for l in sys.stdin])')" = "[0, 1, 2, 3, 4]" ] ||
        fail "Stream indexes: $out"
    # Without --more: one reply.
    out=$("$VLGO" call "$ADDR" io.memstrack.test.Stream '{"count":5}')
    [ "$(echo "$out" | wc -l)" = 1 ] || fail "Stream without more: $out"
}

test_oneway() {
    local out
    out=$("$VLGO" call --oneway "$ADDR" io.memstrack.test.Fail '{"pid":1}')
    [ -z "$out" ] || fail "oneway produced output: $out"
    # A streaming method called oneway (without more: that combination is refused) answers once, silently;
    # the server is still serving.
    out=$("$VLGO" call --oneway "$ADDR" io.memstrack.test.Stream '{"count":3}')
    [ -z "$out" ] || fail "oneway stream produced output: $out"
    out=$("$VLGO" call "$ADDR" io.memstrack.test.Echo '{"text":"after oneway"}')
    [ "$(json_get "$out" 'j["text"]')" = "after oneway" ] || fail "Echo after oneway: $out"
}

test_standard_errors() {
    expect_error org.varlink.service.InterfaceNotFound '{"interface":"io.nothere"}' call "$ADDR" io.nothere.Foo '{}'
    expect_error org.varlink.service.MethodNotFound '{"method":"io.memstrack.test.Nope"}' \
        call "$ADDR" io.memstrack.test.Nope '{}'
    expect_error org.varlink.service.MethodNotImplemented '{"method":"io.memstrack.test.Unimplemented"}' \
        call "$ADDR" io.memstrack.test.Unimplemented '{}'
    expect_error org.varlink.service.InvalidParameter '{"parameter":"text"}' call "$ADDR" io.memstrack.test.Echo '{}'
    expect_error org.varlink.service.InvalidParameter '{"parameter":"number"}' \
        call "$ADDR" io.memstrack.test.Echo '{"text":"a","number":"3"}'
    expect_error org.varlink.service.InvalidParameter '{"parameter":"extra"}' \
        call "$ADDR" io.memstrack.test.Echo '{"text":"a","extra":1}'
    expect_error io.memstrack.NoSuchTask '{"pid":4242}' call "$ADDR" io.memstrack.test.Fail '{"pid":4242}'
}

for t in test_info test_describe test_go_idl_parser test_call test_more_stream test_oneway test_standard_errors; do
    echo "== $t"
    "$t"
done
stop_server
echo "all conformance checks passed"
