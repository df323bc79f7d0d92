#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl pprof on the fixed snapshot tests/data/pprof-snapshot.json, read back by Go's own pprof
# (`go tool pprof`, Debian's golang-go, offline on a local file): totals equal the fixture's tree (exactly
# in bytes and pages, and within the display's rounding as pprof shows them by default), the top
# function is the fixture's biggest leaf, comments and no symbolization complaints; usage errors. No
# daemon needed; skips (77) without go.
#
# Usage: test-pprof-go.sh MEMSTRACKCTL TESTS_DIR
set -uo pipefail

CTL=${1:?memstrackctl}
TESTS=${2:?tests dir}
SNAP=$TESTS/data/pprof-snapshot.json

command -v go >/dev/null || { echo "SKIP: go is not installed (Debian's golang-go), go tool pprof cannot read the profiles"; exit 77; }
work=$(mktemp -d /tmp/test-pprof-go.XXXXXX)
trap 'rm -rf "$work"' EXIT
# go keeps caches and pprof its settings under HOME: a private one, so the test touches nothing else.
export HOME=$work GOCACHE=$work/gocache GOFLAGS= PPROF_TMPDIR=$work
go tool pprof -h >/dev/null 2>&1 || { echo "SKIP: go tool pprof does not run here"; exit 77; }

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# What the fixture says for a scope: total pages, page size, and the function whose frames hold the
# most pages of their own (leaf function by flat pages, the offset dropped).
expect() {
    python3 - "$SNAP" "$@" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
kind, name = (sys.argv[2:] + [None, None])[:2]
if kind == "task":
    tree = [t for t in doc["taskStacks"] if t["pid"] == int(name)][0]["stackTree"]
elif kind == "module":
    tree = [m for m in doc["moduleStacks"] if m["name"] == name][0]["stackTree"]
else:
    tree = doc["stackTree"]
flat = {}
def walk(n, root):
    own = n["currentPages"] - sum(c["currentPages"] for c in n["children"])
    fn = re.sub(r"\+0x[0-9a-fA-F]+$", "", n["frame"])
    if own > 0:
        flat[fn] = flat.get(fn, 0) + own
    for c in n["children"]:
        walk(c, False)
walk(tree["root"], True)
top = max(flat, key=flat.get)
print(tree["totalPages"], doc["status"]["pageSize"], top, flat[top])
PY
}

# go tool pprof's number with a unit ("78.12MB", "64MB", "20000", "67108864B") in bytes or a count.
to_number() {
    python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([kMGTP]?B?)", sys.argv[1])
scale = {"": 1, "B": 1, "kB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40, "PB": 2**50}[m.group(2)]
print(float(m.group(1)) * scale, scale)' "$1"
}

# check NAME ARGS...: export with ARGS, then compare what go tool pprof shows with the fixture.
check() {
    local name=$1 scope=$2; shift 2
    local f=$work/$name.pb.gz pages page_size top top_pages total shown scale line
    "$CTL" pprof --from "$SNAP" "$@" --output "$f" 2>"$work/$name.ctl" || fail "$name: memstrackctl pprof failed: $(cat "$work/$name.ctl")"
    read -r pages page_size top top_pages < <(expect $scope)
    local bytes=$((pages * page_size))

    # Exact, in bytes and in pages.
    go tool pprof -top -unit=B -sample_index=inuse_space "$f" >"$work/$name.B" 2>"$work/$name.err" ||
        fail "$name: go tool pprof failed: $(cat "$work/$name.err")"
    grep -q "of ${bytes}B total" "$work/$name.B" || fail "$name: total is not ${bytes}B: $(grep total "$work/$name.B")"
    [ ! -s "$work/$name.err" ] || fail "$name: go tool pprof complained: $(cat "$work/$name.err")"
    go tool pprof -top -sample_index=inuse_objects "$f" >"$work/$name.n" 2>/dev/null || fail "$name: inuse_objects failed"
    grep -q "of $pages total" "$work/$name.n" || fail "$name: pages total is not $pages: $(grep total "$work/$name.n")"

    # As pprof shows it by default: equal within the display's rounding (two decimals of its unit).
    go tool pprof -top -sample_index=inuse_space "$f" >"$work/$name.top" 2>/dev/null || fail "$name: -top failed"
    total=$(sed -n 's/.* of \([0-9.]*[kMGTP]*B\) total.*/\1/p' "$work/$name.top")
    [ -n "$total" ] || fail "$name: no total in: $(head -12 "$work/$name.top")"
    read -r shown scale < <(to_number "$total")
    python3 -c 'import sys; s, e, u = map(float, sys.argv[1:]); sys.exit(abs(s - e) > 0.005 * u + 1e-9)' \
        "$shown" "$bytes" "$scale" || fail "$name: pprof shows $total, the fixture holds $bytes bytes"

    # The top function: the first row under the header, with the fixture's biggest leaf's bytes.
    line=$(awk '/flat  flat%/ { getline; print; exit }' "$work/$name.B")
    [ "$(awk '{ print $NF }' <<<"$line")" = "$top" ] || fail "$name: top function is not $top: $line"
    [ "$(awk '{ print $1 }' <<<"$line")" = "$((top_pages * page_size))B" ] ||
        fail "$name: $top's flat bytes are not $((top_pages * page_size)): $line"
    echo "ok $name: $total ($bytes bytes, $pages pages), top $top"
}

check all ""
check task "task 4242" --task 4242
check module "module ext4" --module ext4

# What the profile says about itself: the scope, the page size and the sampling interval.
go tool pprof -comments "$work/all.pb.gz" >"$work/comments" 2>&1 || fail "-comments failed"
grep -q "by allocation call stack (all)" "$work/comments" || fail "no scope comment: $(cat "$work/comments")"
grep -q "(4096 per page)" "$work/comments" || fail "no page size comment: $(cat "$work/comments")"
grep -q "stacks sampled about 1 in 64 pages" "$work/comments" || fail "no sampling comment: $(cat "$work/comments")"
go tool pprof -comments "$work/task.pb.gz" 2>&1 | grep -q "(task 4242)" || fail "no task scope comment"
# Stacks keep their user frames, and their mappings: the raw report lists the modules.
go tool pprof -raw "$work/all.pb.gz" >"$work/raw" 2>&1 || fail "-raw failed"
for m in vmlinux ext4 nf_conntrack loadgen libc.so.6; do
    grep -qE "^ *[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ $m( |$)" "$work/raw" || fail "no mapping $m in: $(sed -n '/^Mappings/,$p' "$work/raw")"
done
echo "ok comments and mappings"

# An edited file with nonsense where numbers belong: defaults (4096-byte pages, time unknown), no crash.
python3 - "$SNAP" "$work/odd.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["status"]["pageSize"] = -5
doc["realtimeUsec"] = 9 * 10**18
doc["stackTree"]["stackSampleInterval"] = "often"
json.dump(doc, open(sys.argv[2], "w"))
PY
"$CTL" pprof --from "$work/odd.json" --output "$work/odd.pb.gz" 2>"$work/err" || fail "an odd file failed: $(cat "$work/err")"
go tool pprof -top -unit=B "$work/odd.pb.gz" 2>&1 | grep -q "of $((20000 * 4096))B total" || fail "an odd file's total is wrong"
echo "ok odd file"

# Usage and file errors.
r=0; "$CTL" pprof --from "$SNAP" >/dev/null 2>"$work/err" || r=$?
[ $r -eq 2 ] && grep -q -- "--output" "$work/err" || fail "pprof without --output exited $r: $(cat "$work/err")"
r=0; "$CTL" pprof --from "$SNAP" --unit foo.service --output "$work/x" 2>"$work/err" || r=$?
[ $r -eq 2 ] || fail "--unit with --from exited $r: $(cat "$work/err")"
r=0; "$CTL" pprof --task 1 --unit foo.service --output "$work/x" 2>"$work/err" || r=$?
[ $r -eq 2 ] || fail "--task with --unit exited $r: $(cat "$work/err")"
r=0; "$CTL" pprof --from "$SNAP" --task 999999 --output "$work/x" 2>"$work/err" || r=$?
[ $r -eq 1 ] && grep -q "999999" "$work/err" || fail "a task not in the file exited $r: $(cat "$work/err")"
r=0; "$CTL" pprof --from "$SNAP" --output "$work/no/such/dir" 2>"$work/err" || r=$?
[ $r -eq 1 ] && grep -q "Cannot write" "$work/err" || fail "an unwritable output exited $r: $(cat "$work/err")"
r=0; "$CTL" pprof --from "$SNAP" --depth 3 --output "$work/x" 2>"$work/err" || r=$?
[ $r -eq 2 ] || fail "pprof --depth exited $r: $(cat "$work/err")"
echo "ok usage and file errors"
