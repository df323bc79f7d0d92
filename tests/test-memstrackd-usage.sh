#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackd's command line: every usage error (unknown option, missing or unwanted argument, bad value,
# positional argument) exits 2 with one line saying what is wrong and "Try 'memstrackd --help'.", in the
# words memstrackctl uses for its own; --help and --version exit 0; a bad configuration file is not a
# usage error (1). Nothing here opens a perf event: no root needed.
#
# Usage: test-memstrackd-usage.sh MEMSTRACKD MEMSTRACKCTL
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
HINT="Try 'memstrackd --help'."
failed=0
work=$(mktemp -d /tmp/test-memstrackd-usage.XXXXXX)
trap 'rm -rf "$work"' EXIT

bad() {
    echo "FAIL: $*" >&2
    failed=1
}

# run EXPECTED_STATUS ARGS...: runs memstrackd (bounded: a usage error must not start tracing).
run() {
    local want=$1
    shift
    timeout 30 "$D" "$@" >"$work/out" 2>"$work/err"
    status=$?
    [ "$status" = "$want" ] || bad "memstrackd $*: exit $status, expected $want; stderr: $(cat "$work/err")"
}

# usage MESSAGE ARGS...: exit 2, stderr exactly "memstrackd: MESSAGE" and the hint, nothing on stdout.
usage() {
    local msg=$1
    shift
    run 2 "$@"
    printf 'memstrackd: %s\n%s\n' "$msg" "$HINT" >"$work/want"
    cmp -s "$work/want" "$work/err" ||
        bad "memstrackd $*: stderr is '$(cat "$work/err")', expected '$(cat "$work/want")'"
    [ ! -s "$work/out" ] || bad "memstrackd $*: wrote to stdout: $(cat "$work/out")"
}

usage "Unknown option '--bogus'." --bogus
usage "Unknown option '-x'." -x
usage "Unknown option '--bogus'." --foreground --bogus --no-socket
usage "Option '--config' needs an argument." --config
usage "Option '--callchain-depth' needs an argument." --no-socket --callchain-depth
usage "Option '--threads' takes no argument." --threads=yes
usage "Option '--help' takes no argument." --help=1
usage "--callchain-depth takes a number from 0 to 1024, not 'abc'." --callchain-depth=abc
usage "--callchain-depth takes a number from 0 to 1024, not '1025'." --callchain-depth 1025
usage "--callchain-depth takes a number from 0 to 1024, not '-1'." --callchain-depth=-1
usage "--buffer-pages takes a power of two from 1 to 1048576, not '3'." --buffer-pages=3
usage "--buffer-pages takes a power of two from 1 to 1048576, not '0'." --buffer-pages=0
usage "--wakeup-bytes takes a number from 1 to 4294967295, not '0'." --wakeup-bytes=0
usage "--max-stack-nodes takes a number from 16 to 536870912, not '15'." --max-stack-nodes=15
usage "--max-exited-tasks takes a number from 0 to 16777216, not '1k'." --max-exited-tasks=1k
usage "--nested-allocations takes after-miss or always, not 'sometimes'." --nested-allocations=sometimes
usage "--log-level takes emerg, alert, crit, err, warning, notice, info, debug or 0 to 7, not 'loud'." \
    --log-level=loud
usage "Unexpected argument 'foo': memstrackd takes only options." --no-socket foo

# Not usage errors.
run 0 --help
grep -q '^Usage: memstrackd ' "$work/out" || bad "--help printed: $(head -3 "$work/out")"
run 0 --version
grep -q '^memstrackd ' "$work/out" || bad "--version printed: $(cat "$work/out")"
printf 'callchain-depth=zz\n' >"$work/bad.conf"
run 1 --config="$work/bad.conf"
grep -q "bad.conf:1: callchain-depth takes a number from 0 to 1024, not 'zz'." "$work/err" ||
    bad "a bad configuration value: $(cat "$work/err")"
printf 'source=nope\n' >"$work/bad-source.conf"
run 1 --config="$work/bad-source.conf"
grep -q "bad-source.conf:1: source takes auto or one of .*perf.*, not 'nope'." "$work/err" ||
    bad "an unknown source in the configuration file: $(cat "$work/err")"
run 1 --config="$work/missing.conf"
grep -q "missing.conf" "$work/err" || bad "a missing configuration file: $(cat "$work/err")"

# --source: the names --help lists are the ones it takes; any other is a usage error naming them all.
run 0 --help
sources=$(sed -n '/^Event sources/,$p' "$work/out" | awk 'NR > 1 { print $1 }')
grep -qx perf <<<"$sources" || bad "--help lists no perf source: $(cat "$work/out")"
usage "--source takes auto or one of $(paste -sd, <<<"$sources" | sed 's/,/, /g'), not 'foo'." --source=foo
usage "--source takes auto or one of $(paste -sd, <<<"$sources" | sed 's/,/, /g'), not ''." --source=
usage "Option '--source' needs an argument." --no-socket --source

# The same words and status as memstrackctl.
"$CTL" --bogus >/dev/null 2>"$work/ctl.err"
status=$?
[ "$status" = 2 ] || bad "memstrackctl --bogus: exit $status, the two differ"
"$D" --bogus 2>"$work/d.err"
sed 's/memstrackctl/memstrackd/g' "$work/ctl.err" | cmp -s - "$work/d.err" ||
    bad "memstrackctl says '$(cat "$work/ctl.err")', memstrackd says '$(cat "$work/d.err")'"

[ $failed = 0 ] && echo "all usage errors exit 2 with the hint"
exit $failed
