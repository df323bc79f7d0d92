#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl pprof against memstrackd on the live kernel: loadgen holds 64 MiB, and go tool pprof on
# the exported profile of its task shows the bytes Tasks charges it (within 0.5 %) and, as top
# function, the leaf frame holding most of its pages in the daemon's own StackTree for that task. Then
# its unit's profile and the whole machine's, which must hold at least the holder's stacks.
# Needs root, perf events, the kmem tracepoints and go (Debian's golang-go); skips (77) otherwise.
#
# Usage: test-pprof-live.sh MEMSTRACKD MEMSTRACKCTL LOADGEN TESTS_DIR
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
TESTS=${4:?tests dir}
. "$TESTS/integration/memstrackctl-lib.sh"

command -v go >/dev/null || skip "go is not installed (Debian's golang-go): go tool pprof cannot read the profiles"
lib_init test-pprof-live
export HOME=$work GOCACHE=$work/gocache GOFLAGS= PPROF_TMPDIR=$work
go tool pprof -h >/dev/null 2>&1 || skip "go tool pprof does not run here"

PAGE_SIZE=$(getconf PAGESIZE)
PAGES=$((64 * 1024 * 1024 / PAGE_SIZE))

# go tool pprof -top FILE [OPTIONS]: "TOTAL TOPFUNCTION TOPFLAT" in bytes (or pages with inuse_objects).
pprof_top() {
    local f=$1; shift
    go tool pprof -top -unit=B "$@" "$f" 2>"$work/pprof.err" | python3 -c '
import re, sys
text = sys.stdin.read()
total = re.search(r"of ([0-9]+)B? total", text)
rows = text.split("flat  flat%")[1].splitlines()[1:] if "flat  flat%" in text else []
top = rows[0].split() if rows else ["0", "-"]
print(total.group(1) if total else "none", top[-1], top[0].rstrip("B"))' || fail "go tool pprof failed on $f: $(cat "$work/pprof.err")"
}

# Percent difference of $1 from $2, as a number with two decimals; exit status 0 if within 0.5 %.
within() {
    python3 -c 'import sys; a, b = map(float, sys.argv[1:]); d = abs(a - b) / b * 100; print("%.2f" % d); sys.exit(d > 0.5)' "$1" "$2"
}

# The function (offset dropped) whose frames hold the most pages of their own in a StackTree reply.
stacktree_top() {
    python3 -c '
import json, re, sys
flat = {}
def walk(n, depth):
    own = n["currentPages"] - sum(c["currentPages"] for c in n["children"])
    if own > 0 and depth > 0:
        fn = re.sub(r"\+0x[0-9a-fA-F]+$", "", n["frame"])
        flat[fn] = flat.get(fn, 0) + own
    for c in n["children"]:
        walk(c, depth + 1)
walk(json.load(open(sys.argv[1]))["root"], 0)
top = max(flat, key=flat.get)
print(top, flat[top])' "$1"
}

start_daemon
start_loadgen
lg alloc allocated
wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted

test_task() {
    local held total top top_flat pages tree_top tree_flat d
    # loadgen holds still: what Tasks says now is what StackTree and the profile say a moment later.
    held=$(pages_of "$lg_pid")
    ctl pprof --task "$lg_pid" --output "$work/task.pb.gz" 2>"$work/ctl.err" ||
        fail "pprof --task failed: $(cat "$work/ctl.err")"
    ctl --json=short stacks --task "$lg_pid" --depth 255 --limit 10000 >"$work/tree.json" || fail "stacks --json failed"
    [ "$(pages_of "$lg_pid")" -eq "$held" ] || fail "loadgen's pages changed while it held still"

    read -r total top top_flat < <(pprof_top "$work/task.pb.gz" -sample_index=inuse_space)
    d=$(within "$total" $((held * PAGE_SIZE))) ||
        fail "the profile holds ${total} bytes, Tasks says $((held * PAGE_SIZE)) for loadgen ($d % apart)"
    echo "ok task: profile ${total} bytes, Tasks $((held * PAGE_SIZE)) bytes ($d % apart)"
    read -r pages _ _ < <(pprof_top "$work/task.pb.gz" -sample_index=inuse_objects)
    d=$(within "$pages" "$held") || fail "the profile holds $pages pages, Tasks says $held ($d % apart)"

    read -r tree_top tree_flat < <(stacktree_top "$work/tree.json")
    [ "$top" = "$tree_top" ] ||
        fail "pprof's top function is $top ($top_flat bytes), StackTree's biggest leaf is $tree_top ($tree_flat pages)"
    [ "$top_flat" -eq $((tree_flat * PAGE_SIZE)) ] ||
        fail "pprof gives $top $top_flat bytes, StackTree $tree_flat pages"
    echo "ok task: top function $top, $tree_flat pages, as StackTree's biggest leaf"

    # The biggest leaf's whole stack, as StackTree has it (functions, leaf first), is a trace of the profile.
    go tool pprof -traces "$work/task.pb.gz" >"$work/traces" 2>&1 || fail "-traces failed"
    python3 - "$work/tree.json" "$work/traces" <<'PY' || fail "StackTree's biggest stack is not among the profile's traces"
import json, re, sys
fn = lambda f: re.sub(r"\+0x[0-9a-fA-F]+$", "", f)
best = (0, None)
def walk2(n, path):
    global best
    own = n["currentPages"] - sum(c["currentPages"] for c in n["children"])
    if path and own > best[0]:
        best = (own, path)
    for c in n["children"]:
        walk2(c, path + [fn(c["frame"])])
walk2(json.load(open(sys.argv[1]))["root"], [])
want = list(reversed(best[1]))
traces = []
for block in open(sys.argv[2]).read().split("-----------+")[1:]:
    lines = [l for l in block.splitlines()[1:] if l.strip()]
    if lines:
        traces.append([lines[0].split()[-1]] + [l.strip() for l in lines[1:]])
if want not in traces:
    print("StackTree's biggest stack:", want, "\nthe profile's traces:", traces, file=sys.stderr)
    sys.exit(1)
PY
    echo "ok task: StackTree's biggest stack is a trace of the profile"
}

test_unit_and_all() {
    local cgroup unit total top
    cgroup=$(sed -n 's/^0:://p' "/proc/$lg_pid/cgroup")
    # Without a cgroup2 hierarchy there is no unit to profile: said, and the test ends as a skip.
    [ -n "$cgroup" ] || skipped+=("unit: loadgen is in no cgroup2 hierarchy")
    if [ -n "$cgroup" ]; then
        ctl --json=short units --all --limit 10000 >"$work/units.json" || fail "units --json failed"
        unit=$(python3 -c '
import json, sys
u = [x for x in json.load(open(sys.argv[1]))["units"] if x.get("cgroup") == sys.argv[2]]
print(u[0]["name"] if u else "")' "$work/units.json" "$cgroup")
        [ -n "$unit" ] || fail "no unit with loadgen's cgroup $cgroup in Units"
        ctl pprof --unit "$unit" --output "$work/unit.pb.gz" 2>"$work/ctl.err" ||
            fail "pprof --unit $unit failed: $(cat "$work/ctl.err")"
        read -r total top _ < <(pprof_top "$work/unit.pb.gz" -sample_index=inuse_space)
        [ "$total" -ge $((PAGES * PAGE_SIZE * 995 / 1000)) ] ||
            fail "the profile of $unit holds $total bytes, less than loadgen's $((PAGES * PAGE_SIZE))"
        echo "ok unit $unit: $total bytes, top $top"
    fi

    ctl pprof --output "$work/all.pb.gz" 2>"$work/ctl.err" || fail "pprof failed: $(cat "$work/ctl.err")"
    read -r total top _ < <(pprof_top "$work/all.pb.gz" -sample_index=inuse_space)
    [ "$total" -ge $((PAGES * PAGE_SIZE * 995 / 1000)) ] ||
        fail "the whole profile holds $total bytes, less than loadgen's $((PAGES * PAGE_SIZE))"
    go tool pprof -comments "$work/all.pb.gz" 2>&1 | grep -q "kernel pages held now" || fail "no comment in the profile"
    go tool pprof -raw "$work/all.pb.gz" 2>&1 | grep -qE "^ *1: 0x0/0x0/0x0 vmlinux" ||
        fail "vmlinux is not the first mapping: $(go tool pprof -raw "$work/all.pb.gz" 2>&1 | sed -n '/^Mappings/,+3p')"
    echo "ok all: $total bytes, top $top"
}

# The daemon's error for a task it does not know, as every verb says it.
test_unknown_task() {
    local r=0
    ctl pprof --task 999999999 --output "$work/none.pb.gz" 2>"$work/err" || r=$?
    [ $r -eq 1 ] && grep -q "No task with pid 999999999" "$work/err" ||
        fail "pprof --task of no task exited $r: $(cat "$work/err")"
    [ ! -e "$work/none.pb.gz" ] || fail "pprof wrote a profile for a task that does not exist"
    echo "ok unknown task"
}

skipped=()      # cases that cannot run here, with the reason: the test then exits 77 after the rest
test_task
test_unit_and_all
test_unknown_task
lg free freed
if [ ${#skipped[@]} -gt 0 ]; then
    printf 'SKIP: %s\n' "${skipped[@]}" >&2
    exit 77
fi
