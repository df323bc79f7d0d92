#!/bin/bash
# Access control of the generic varlink server with real processes of other users (setpriv): a peer
# neither root nor in the allowed group is refused with io.memstrack.PermissionDenied, a member of the
# group (primary or supplementary) is served, root-only methods stay root's, and the socket file gets
# mode 0660 and the group. Creates a temporary group and removes it again. Needs root.
#
# The processes of the other user reach nothing under the build directory, which may sit below a
# directory only its owner can enter (a clone in a 0700 home): the socket and the client they run live in
# a directory of our own under /tmp, mode 0755. WORKDIR only caches the vlgo build.
#
# usage: varlink-access.sh SERVER VLGO_BUILD SOURCE_ROOT WORKDIR
set -euo pipefail
SERVER=$1 VLGO_BUILD=$2 SRC=$3 CACHE=$4
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to create a group and switch users" >&2; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not installed" >&2; exit 77; }
command -v groupadd >/dev/null || { echo "SKIP: groupadd (passwd) not installed" >&2; exit 77; }

mkdir -p "$CACHE"
WORK=$(mktemp -d /tmp/memstrack-varlink-access.XXXXXX)
. "$SRC/tests/integration/varlink-lib.sh"
GROUP=mstest$$
cleanup() {
    stop_server >/dev/null 2>&1 || true
    groupdel "$GROUP" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

build_vlgo "$(cd "$CACHE" && pwd)/vlgo"
# Other users need to reach the socket and run the client: both in $WORK, which they can enter.
chmod 0755 "$WORK"
install -m 0755 "$VLGO" "$WORK/vlgo"
VLGO=$WORK/vlgo
NOBODY=65534
groupadd --system "$GROUP"
GID=$(getent group "$GROUP" | cut -d: -f3)
SOCK=$WORK/run/io.memstrack
ADDR=unix:$SOCK

as_nobody() {
    local groups=$1
    shift
    if [ -z "$groups" ]; then
        setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$VLGO" "$@"
    else
        setpriv --reuid=$NOBODY --regid=$NOBODY --groups="$groups" "$VLGO" "$@"
    fi
}

# World-connectable socket, so the refusal comes from the credential check and not the file mode.
test_refused_without_group() {
    local rc=0 err
    err=$(as_nobody "" call "$ADDR" io.memstrack.test.Echo '{"text":"x"}' 2>&1 >/dev/null) || rc=$?
    [ "$rc" = 4 ] || fail "non-member: expected exit 4, got $rc: $err"
    case "$err" in
        "ERROR io.memstrack.PermissionDenied "*'"reason"'*) ;;
        *) fail "non-member: expected PermissionDenied, got: $err" ;;
    esac
    # GetInfo is refused as well: nothing is served to a refused peer.
    rc=0
    err=$(as_nobody "" info "$ADDR" 2>&1 >/dev/null) || rc=$?
    [ "$rc" = 4 ] && [[ "$err" == "ERROR io.memstrack.PermissionDenied "* ]] || fail "non-member info: $rc $err"
}

test_member_served() {
    local out
    out=$(as_nobody "$GID" call "$ADDR" io.memstrack.test.Echo '{"text":"member"}') || fail "member refused: $out"
    [ "$(json_get "$out" '(j["text"], j["uid"], j["isRoot"])')" = "('member', $NOBODY, False)" ] || fail "member: $out"
    # As primary group too.
    out=$(setpriv --reuid=$NOBODY --regid="$GID" --clear-groups "$VLGO" call "$ADDR" io.memstrack.test.Echo \
        '{"text":"primary"}') || fail "primary-group member refused: $out"
    [ "$(json_get "$out" 'j["text"]')" = primary ] || fail "primary member: $out"
    # Members do not get root-only methods, root does.
    local rc=0 err
    err=$(as_nobody "$GID" call "$ADDR" io.memstrack.test.RootOnly '{}' 2>&1 >/dev/null) || rc=$?
    [ "$rc" = 4 ] && [[ "$err" == "ERROR io.memstrack.PermissionDenied "* ]] || fail "member RootOnly: $rc $err"
    "$VLGO" call "$ADDR" io.memstrack.test.RootOnly '{}' >/dev/null || fail "root RootOnly refused"
}

# The default mode: 0660 and the allowed group; only members can even connect.
test_default_socket_mode() {
    stop_server
    start_server --socket "$SOCK" --group "$GROUP"
    [ "$(stat -c '%a %g' "$SOCK")" = "660 $GID" ] || fail "socket mode/group: $(stat -c '%a %g' "$SOCK")"
    [ "$(stat -c '%a' "$(dirname "$SOCK")")" = 755 ] || fail "socket dir mode: $(stat -c '%a' "$(dirname "$SOCK")")"
    local rc=0
    as_nobody "" call "$ADDR" io.memstrack.test.Echo '{"text":"x"}' >/dev/null 2>&1 || rc=$?
    [ "$rc" = 3 ] || fail "non-member connected to a 0660 socket (exit $rc)"
    as_nobody "$GID" call "$ADDR" io.memstrack.test.Echo '{"text":"x"}' >/dev/null || fail "member cannot connect"
}

start_server --socket "$SOCK" --group "$GROUP" --socket-mode 0666
for t in test_refused_without_group test_member_served test_default_socket_mode; do
    echo "== $t"
    "$t"
done
stop_server
echo "all access control checks passed"
