#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackd --report module_summary,task_top:top=3 --output FILE on the live kernel, as an initramfs
# hook uses it: loadgen holds pages, memstrackd is asked what it holds, then stopped with SIGTERM; the
# file must have both sections, not empty, with loadgen by name and pid, its stack tree's pages as the
# daemon gave them just before stopping, at most three children per node, and modules the daemon listed.
#
# Usage: test-report-live.sh MEMSTRACKD MEMSTRACKCTL LOADGEN
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
# shellcheck source=memstrackctl-lib.sh
. "$(dirname "$0")/memstrackctl-lib.sh"
lib_init test-report-live

start_daemon --report module_summary,task_top:top=3 --output "$work/report.txt"
start_loadgen
lg alloc allocated
wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted

# What the daemon says just before it stops: loadgen's pages, its stack tree's, the modules.
task_pages=$(pages_of "$lg_pid")
ctl --json=short stacks --task "$lg_pid" --depth 1 >"$work/tree.json" || fail "stacks --task $lg_pid failed"
tree_pages=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["root"]["currentPages"])' "$work/tree.json") ||
    fail "no stack tree for loadgen: $(head -c 300 "$work/tree.json")"
ctl --json=short modules --limit 10000 >"$work/modules.json" || fail "modules failed"

kill -TERM "$daemon_pid"
wait "$daemon_pid"
rc=$?
[ $rc -eq 0 ] || fail "memstrackd exited $rc after SIGTERM"
[ -s "$work/report.txt" ] || fail "memstrackd wrote no report"

python3 - "$work/report.txt" "$work/modules.json" "$lg_pid" "$PAGES" "$task_pages" "$tree_pages" <<'PY' ||
import json, re, sys
path, modules_path, pid, pages, task_pages, tree_pages = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
text = open(path).read()

def section(name):
    m = re.search(rf"^======== Report format {name}: ========\n(.*?)^======== Report format {name} END ========\n",
                  text, re.S | re.M)
    assert m, f"no {name} section"
    assert m.group(1).strip(), f"the {name} section is empty"
    return m.group(1)

# module_summary: modules the daemon listed before stopping, each with pages.
listed = {m["name"] for m in json.load(open(modules_path))["modules"]}
mods = re.findall(r"^Module (\S+) using [0-9.]+MB \((\d+) pages\), peak allocation [0-9.]+MB \((\d+) pages\)$",
                  section("module_summary"), re.M)
assert mods, "module_summary lists no module"
for name, cur, peak in mods:
    assert name in listed, f"module {name} was not in the daemon's list {sorted(listed)}"
    assert int(peak) >= int(cur) and int(peak) > 0, (name, cur, peak)

# task_top: loadgen by name and pid; its tree's root holds what the daemon said (loadgen holds its pages
# unchanged meanwhile; 1 % for what the kernel may still do to its page tables).
top = section("task_top").split("\n")
head = f"Top stack usage of task loadgen ({pid}):"
assert head in top, f"no '{head}' in task_top"
root = top[top.index(head) + 1]
m = re.match(rf"^  \[pid {pid} loadgen\] Pages: (\d+) \(peak: ", root)
assert m, f"loadgen's root line is '{root}'"
got = int(m.group(1))
assert abs(got - tree_pages) <= tree_pages // 100, f"report says {got} pages, the daemon said {tree_pages}"
assert task_pages >= pages, (task_pages, pages)
assert got > 0

# top=3: no node with more than three children, anywhere in the section.
children = {}
stack = []              # node numbers from the root down to the last line's node
number = 0
for line in top:
    m = re.match(r"^( *)\S.* Pages: \d+ \(peak: ", line)
    if not m:
        stack = []
        continue
    depth = len(m.group(1)) // 2 - 1      # the task's root line is indented by 2
    stack = stack[:depth]
    if stack:
        children[stack[-1]] = children.get(stack[-1], 0) + 1
        assert children[stack[-1]] <= 3, f"more than 3 children above '{line.strip()}'"
    number += 1
    stack.append(number)
# Real task names: every task heading names a comm and a pid.
heads = re.findall(r"^Top stack usage of task (.+) \((\d+)\):$", section("task_top"), re.M)
assert heads and all(n.strip() for n, _ in heads), heads
print(f"report: {len(mods)} modules, {len(heads)} tasks, loadgen {got} pages (daemon said {tree_pages})")
PY
    fail "the report at exit is not what the daemon held: $(head -c 600 "$work/report.txt")"
grep -q "Wrote the report to $work/report.txt." "$work/memstrackd.log" || fail "memstrackd did not log the report"
echo "ok memstrackd --report module_summary,task_top:top=3 at SIGTERM"
