#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl report on the fixed snapshot tests/data/report-snapshot.json (and, for the cases named heap-*,
# tests/data/heap-snapshot.json: a recorded heap with inlined frames): every format's output must equal its
# golden file in tests/data/golden/, every --json output must parse, and the flame graph must
# pass check-flamegraph.py. No daemon needed.
#
# Usage: test-report-golden.sh MEMSTRACKCTL TESTS_DIR [--update]
#   --update rewrites the golden files from the current output (review the diff before committing).
set -uo pipefail

CTL=${1:?memstrackctl}
TESTS=${2:?tests dir}
UPDATE=${3:-}
DATA=$TESTS/data
SNAP=$DATA/report-snapshot.json
HEAP_SNAP=$DATA/heap-snapshot.json
GOLDEN=$DATA/golden
# proc_slab_static reads this fixture instead of the machine's /proc/slabinfo.
export MEMSTRACK_SLABINFO=$DATA/slabinfo.txt
failed=0
# check-flamegraph.py runs the graph's script in node (scripts/deps installs nodejs).
command -v node >/dev/null || command -v nodejs >/dev/null ||
    { echo "SKIP: node is not installed, the flame graph's script cannot be checked"; exit 77; }
work=$(mktemp -d /tmp/test-report-golden.XXXXXX)
trap 'rm -rf "$work"' EXIT

# name, then memstrackctl report arguments.
cases=(
    "task_summary           --format task_summary"
    "task_top               --format task_top"
    "module_summary         --format module_summary"
    "module_top             --format module_top"
    "stack_tree             --format stack_tree"
    "folded                 --format folded"
    "flamegraph             --format flamegraph"
    "default                "
    "all                    --format task_summary,task_top,module_summary,module_top,stack_tree,folded"
    "task_summary-peak      --format task_summary --sort peak"
    "task_summary-throttle  --format task_summary --throttle 80"
    "stack_tree-throttle    --format stack_tree --throttle 90 --sort peak"
    "stack_tree-depth       --format stack_tree --depth 2"
    "stack_tree-task        --format stack_tree --task 812"
    "folded-module          --format folded --module ext4"
    "module_top-module      --format module_top --module nf_conntrack"
    "json                   --format task_summary,task_top,module_summary,module_top,stack_tree,folded,flamegraph --json=pretty"
    "json-throttle          --format module_top,folded --throttle 50 --json=short"
    "unit_summary           --format unit_summary"
    "unit_top               --format unit_top"
    "unit_summary-peak      --format unit_summary --sort peak --throttle 90"
    "unit_top-throttle      --format unit_top --throttle 80"
    "json-units             --format unit_summary,unit_top,module_summary --json=pretty"
    "task_top_json          --format task_top_json"
    "task_top_json-sub      --format task_top_json:top=1:throttle=90"
    "task_top-top           --format task_top:top=1"
    "module_top-top-peak    --format module_top:top=1:sort_by_peak"
    "module_top-top5-peak   --format module_top:top=5:sort_by_peak"
    "summaries-sub          --format task_summary:top=2:sort_by_peak,module_summary:throttle=90 --throttle 50"
    "task_summary-alloc     --format task_summary:sort_by_alloc --sort peak"
    "stack_tree-top         --format stack_tree:top=1"
    "unit_top-top           --format unit_top:top=1"
    "proc_slab_static       --format proc_slab_static"
    "proc_slab_static-top   --format proc_slab_static:top=3"
    "proc_slab_static-throttle --format proc_slab_static:throttle=80"
    "slab_callsites         --format slab_callsites"
    "slab_callsites-top     --format slab_callsites:top=2"
    "slab_caches-throttle   --format slab_caches:throttle=90"
    "json-slab              --format slab_callsites:top=1,slab_caches --json=pretty"
    "leaks                  --format leaks"
    "json-leaks             --format leaks:top=1 --json=pretty"
    "explain                --format explain"
    "json-explain           --format explain:top=1 --json=short"
    "cold                   --format cold"
    "json-cold              --format cold:top=1 --json=pretty"
    "initramfs              --format task_summary,module_summary,module_top:top=2 --throttle 80"
    "json-sub               --format task_top_json,proc_slab_static:top=2,module_summary:sort_by_peak --json=pretty"
    # Every heap view names a frame alike, inlined callers included.
    "heap-default           "
    "heap-stacks            --format heap_maximum,heap_leaks,stack_tree,folded"
    "heap-json              --format heap_maximum,folded --json=pretty"
)

check() {
    local name=$1; shift
    local out=$work/$name.out golden=$GOLDEN/report-$name.txt snap=$SNAP
    [[ $name == heap-* ]] && snap=$HEAP_SNAP
    # shellcheck disable=SC2068
    if ! "$CTL" report --from "$snap" "$@" >"$out" 2>"$work/$name.err"; then
        echo "FAIL $name: memstrackctl report $* exited $?: $(cat "$work/$name.err")"
        failed=1
        return
    fi
    if [[ $* == *--json* ]] && ! python3 -m json.tool "$out" >/dev/null; then
        echo "FAIL $name: --json output is not valid JSON"
        failed=1
    fi
    if [ "$UPDATE" = --update ]; then
        cp "$out" "$golden"
        return
    fi
    if ! diff -u "$golden" "$out"; then
        echo "FAIL $name: output differs from $golden"
        failed=1
        return
    fi
    echo "ok $name"
}

for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    check $c
done

# The same report written with --output is the same bytes.
"$CTL" report --from "$SNAP" --format flamegraph --output "$work/fg.svg" || { echo "FAIL --output"; failed=1; }
cmp -s "$work/fg.svg" "$GOLDEN/report-flamegraph.txt" || { echo "FAIL --output differs from stdout"; failed=1; }
python3 "$TESTS/check-flamegraph.py" "$work/fg.svg" 18872 --title-contains "on testhost<&> at 2026-11-18 11:06:40 UTC" ||
    failed=1
# The cold pages' flame graph: as wide as every cold page (the stacks kept, and the rest as one box).
"$CTL" report --from "$SNAP" --format cold_flamegraph >"$work/cold.svg" &&
    python3 "$TESTS/check-flamegraph.py" "$work/cold.svg" "$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["cold"]["total"]["coldPages"])' "$SNAP")" || failed=1
# Focused and throttled graphs keep their geometry too.
"$CTL" report --from "$SNAP" --format flamegraph --throttle 60 --task 4242 >"$work/fg-task.svg" &&
    python3 "$TESTS/check-flamegraph.py" "$work/fg-task.svg" 16384 || failed=1

# Flame graphs of a tree with one function split over two call sites and 300 one-page frames: merged
# by function (one tower, peaks an upper bound), tiny frames as one box, offsets only when asked.
python3 - "$SNAP" "$work/split.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def node(frame, pages, children=(), module=None, peak=None):
    return {"frame": frame, "module": module, "address": None, "currentPages": pages,
            "peakPages": pages if peak is None else peak, "children": list(children), "truncatedChildren": 0}
tiny = [node(f"tiny_{i}+0x{i:x}", 1) for i in range(300)]
root = node("[all]", 20000, [
    node("entry_SYSCALL_64+0x76", 19700, [
        node("do_syscall_64+0x71", 12000, [node("ksys_write+0x66", 12000, peak=12500)], peak=12500),
        node("do_syscall_64+0x23b", 7700, [node("ksys_write+0x66", 5000), node("ksys_read+0x10", 2700)]),
    ]),
    node("kthread+0xef", 300, tiny),
])
d["stackTree"] = {"root": root, "totalPages": 20000}
json.dump(d, open(sys.argv[2], "w"))
PY
"$CTL" report --from "$work/split.json" --format flamegraph >"$work/split.svg" &&
python3 "$TESTS/check-flamegraph.py" "$work/split.svg" 20000 --expect-small-frames \
    --title-contains "testhost<&>" --title-contains "2026-11-18 11:06:40 UTC" >/dev/null &&
python3 - "$work/split.svg" <<'PY' || { echo "FAIL split flame graph"; failed=1; }
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
frames = [g for g in ET.parse(sys.argv[1]).iter(NS + "g") if g.get("class") == "frame"]
by_name = {}
for g in frames:
    by_name.setdefault(g.get("data-name"), []).append(g)
(sc,) = by_name["do_syscall_64"]
assert sc.get("data-pages") == "19700", sc.get("data-pages")
assert "peak at most 20200 (2 call sites)" in sc.find(NS + "title").text, sc.find(NS + "title").text
(w,) = by_name["ksys_write"]
assert w.get("data-pages") == "17000", w.get("data-pages")
(small,) = by_name["[300 smaller frames]"]
assert small.get("data-pages") == "300"
assert not any(n.startswith("tiny_") for n in by_name), "a sub-pixel frame was drawn"
PY
[ $? -eq 0 ] || { echo "FAIL the merged flame graph"; failed=1; }
"$CTL" report --from "$work/split.json" --format flamegraph --offsets >"$work/split-offsets.svg" &&
python3 "$TESTS/check-flamegraph.py" "$work/split-offsets.svg" 20000 --offsets >/dev/null ||
    { echo "FAIL flame graph --offsets"; failed=1; }
grep -q 'data-name="do_syscall_64+0x23b"' "$work/split-offsets.svg" ||
    { echo "FAIL --offsets merged the call sites"; failed=1; }
python3 "$TESTS/check-flamegraph.py" "$work/split-offsets.svg" 20000 >/dev/null 2>&1 &&
    { echo "FAIL check-flamegraph.py accepts split towers"; failed=1; }

# Several formats with --output: one file per format in that directory, each the same bytes as the
# format alone; an SVG is never framed by text lines.
"$CTL" report --from "$SNAP" --format flamegraph,folded,stack_tree --output "$work/dir" ||
    { echo "FAIL --output DIR"; failed=1; }
for f in flamegraph.svg:flamegraph folded.txt:folded stack_tree.txt:stack_tree; do
    cmp -s "$work/dir/${f%%:*}" "$GOLDEN/report-${f#*:}.txt" || { echo "FAIL $work/dir/${f%%:*} differs"; failed=1; }
done
[ "$(ls "$work/dir" | wc -l)" -eq 3 ] || { echo "FAIL --output DIR wrote $(ls "$work/dir")"; failed=1; }
python3 "$TESTS/check-flamegraph.py" "$work/dir/flamegraph.svg" 18872 >/dev/null || failed=1
# --json: NAME.json each, holding what the combined object holds under NAME.
"$CTL" report --from "$SNAP" --format flamegraph,folded --json=short --output "$work/jdir" &&
"$CTL" report --from "$SNAP" --format flamegraph,folded --json=short >"$work/all.json" &&
python3 - "$work/jdir" "$work/all.json" <<'PY' || { echo "FAIL --json --output DIR"; failed=1; }
import json, os, sys
d, whole = sys.argv[1], json.load(open(sys.argv[2]))
assert sorted(os.listdir(d)) == ["flamegraph.json", "folded.json"], os.listdir(d)
for name in ("flamegraph", "folded"):
    assert json.load(open(os.path.join(d, name + ".json"))) == whole[name], name
PY
# A flame graph with other formats on stdout, or a file where a directory is needed: usage errors (2),
# said before anything is written.
"$CTL" report --from "$SNAP" --format flamegraph,folded >"$work/mixed.out" 2>"$work/mixed.err"
[ $? -eq 2 ] && [ ! -s "$work/mixed.out" ] && grep -q "output DIRECTORY" "$work/mixed.err" ||
    { echo "FAIL flamegraph,folded on stdout: $(cat "$work/mixed.err")"; failed=1; }
"$CTL" report --from "$SNAP" --format folded,stack_tree --output "$work/fg.svg" 2>"$work/file.err"
[ $? -eq 2 ] && grep -q "names a directory" "$work/file.err" || { echo "FAIL several formats into a file"; failed=1; }
cmp -s "$work/fg.svg" "$GOLDEN/report-flamegraph.txt" || { echo "FAIL a refused --output was overwritten"; failed=1; }

# A snapshot without units (from a memstrackd without the Units method, or an earlier memstrackctl): the
# unit formats say so (JSON: null, not an empty list), and every other format is the same bytes.
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["units"]; json.dump(d, open(sys.argv[2], "w"))' \
    "$SNAP" "$work/no-units.json"
"$CTL" report --from "$work/no-units.json" --format unit_summary,unit_top >"$work/no-units.out" 2>&1 &&
    [ "$(grep -c '^(no units: memstrackd did not report them' "$work/no-units.out")" -eq 2 ] ||
    { echo "FAIL unit formats of a snapshot without units: $(cat "$work/no-units.out")"; failed=1; }
"$CTL" report --from "$work/no-units.json" --format unit_summary,unit_top --json=short >"$work/no-units.json.out" &&
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d == {"unit_summary": None, "unit_top": None}, d' \
    "$work/no-units.json.out" || { echo "FAIL --json unit formats without units"; failed=1; }
"$CTL" report --from "$work/no-units.json" --format task_summary,task_top,module_summary,module_top,stack_tree,folded \
    >"$work/no-units-all.out" && cmp -s "$work/no-units-all.out" "$GOLDEN/report-all.txt" ||
    { echo "FAIL the other formats changed without units"; failed=1; }

# task_top_json is JSON as it is: the same tasks, pids (strings, as memstrack wrote them) and counts as
# task_top's source, and equal to its own --json value.
"$CTL" report --from "$SNAP" --format task_top_json:top=1 >"$work/ttj.txt" &&
"$CTL" report --from "$SNAP" --format task_top_json:top=1 --json=short >"$work/ttj.json" &&
python3 - "$work/ttj.txt" "$work/ttj.json" "$SNAP" <<'PY' || { echo "FAIL task_top_json is not the JSON it says"; failed=1; }
import json, sys
text, wrapped, snap = (json.load(open(p)) for p in sys.argv[1:])
assert text == wrapped["task_top_json"], (text, wrapped)
tasks = {t["pid"]: t for t in snap["tasks"]["tasks"]}
assert [t["pid"] for t in text] == ["4242", "812", "1301", "77", "5150"], [t["pid"] for t in text]
for t in text:
    s = tasks[int(t["pid"])]
    assert (t["task_name"], t["pages_alloc"], t["pages_alloc_peak"]) == (s["comm"], s["currentPages"], s["peakPages"])
    node = t
    while node.get("tracenodes"):
        assert len(node["tracenodes"]) <= 1, node    # top=1: one child per level
        node = next(iter(node["tracenodes"].values()))
PY

# Sub-argument errors are usage errors (2) that name the format and what is wrong, before any output.
sub_error() {
    local want=$1; shift
    "$CTL" report --from "$SNAP" --format "$1" >"$work/sub.out" 2>"$work/sub.err"
    local rc=$?
    if [ $rc -ne 2 ] || [ -s "$work/sub.out" ] || ! grep -qF -- "$want" "$work/sub.err"; then
        echo "FAIL --format $1: exit $rc, $(cat "$work/sub.err"), expected '$want'"
        failed=1
    fi
}
sub_error "module_top: unknown sub-argument 'bogus'; known: top=N, throttle=PERCENT, sort_by_alloc, sort_by_peak." \
    module_top:top=5:sort_by_peak:bogus
sub_error "module_top: top= takes a number from 1 to 1000000, not '0'." module_top:top=0
sub_error "task_top: top= takes a number from 1 to 1000000, not '3x'." task_top:top=3x
sub_error "task_top: top= takes a number from 1 to 1000000, not ''." task_top:top=
sub_error "task_summary: throttle= takes a percentage from 1 to 100, not '101'." task_summary:throttle=101
sub_error "task_summary: throttle= takes a percentage from 1 to 100, not '-5'." task_summary:throttle=-5
sub_error "module_top: sort_by_alloc and sort_by_peak exclude each other." module_top:sort_by_alloc:sort_by_peak
sub_error "module_top: empty sub-argument." module_top::top=1
sub_error "module_top is asked for twice, with different sub-arguments." module_top,module_top:top=2
sub_error "unknown report format 'nope'; known: task_summary," nope:top=1
# The same format twice with the same sub-arguments is one format.
"$CTL" report --from "$SNAP" --format module_top:top=1:sort_by_peak,module_top:top=1:sort_by_peak >"$work/twice.out" &&
    cmp -s "$work/twice.out" "$GOLDEN/report-module_top-top-peak.txt" || { echo "FAIL a repeated format"; failed=1; }

# proc_slab_static says in its section what it cannot read, and the other formats are still written.
MEMSTRACK_SLABINFO=$work/none "$CTL" report --from "$SNAP" --format proc_slab_static,module_summary >"$work/noslab.out" &&
    grep -qx "(cannot read $work/none: No such file or directory)" "$work/noslab.out" &&
    grep -q "^Module vmlinux using" "$work/noslab.out" || { echo "FAIL no slabinfo: $(cat "$work/noslab.out")"; failed=1; }
MEMSTRACK_SLABINFO=$SNAP "$CTL" report --from "$SNAP" --format proc_slab_static >"$work/badslab.out" &&
    grep -qx "(cannot read $SNAP: not a slabinfo file of version 2.x)" "$work/badslab.out" ||
    { echo "FAIL a file that is not slabinfo: $(cat "$work/badslab.out")"; failed=1; }
MEMSTRACK_SLABINFO=$work/none "$CTL" report --from "$SNAP" --format proc_slab_static --json=short >"$work/noslab.json" &&
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["proc_slab_static"]; assert d["error"] == "No such file or directory", d' \
    "$work/noslab.json" || { echo "FAIL --json without slabinfo"; failed=1; }

# A SLAB_DEBUG kernel's slabinfo: "(statistics)" in the header and more columns after slabdata.
{
    echo "slabinfo - version: 2.1 (statistics)"
    echo "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail> : globalstat <listallocs> <maxobjs> <grown> <reaped> <error> <maxfreeable> <nodeallocs> <remotefrees> <alienoverflow> : cpustat <allochit> <allocmiss> <freehit> <freemiss>"
    echo "kmalloc-64     1024   1024     64   64    1 : tunables  120   60    8 : slabdata     16     16      0 : globalstat    1200    1024    16    0    0    1    0    0    0 : cpustat   9000   100   8000    50"
    echo "size-4096        10     12   4096    1    1 : tunables   24   12    8 : slabdata     10     12      0 : globalstat      40      12    12    0    0    0    0    0    0 : cpustat     30    12     20     4"
} >"$work/slabinfo-stats"
MEMSTRACK_SLABINFO=$work/slabinfo-stats "$CTL" report --from "$SNAP" --format proc_slab_static >"$work/stats.out" &&
    printf 'Top Slab Usage:\n       kmalloc-64: 0.1 MB\n        size-4096: 0.0 MB\n' | cmp -s - "$work/stats.out" ||
    { echo "FAIL slabinfo with statistics: $(cat "$work/stats.out")"; failed=1; }

# Errors: unknown format (usage, 2), unknown task (1), not a snapshot (1).
"$CTL" report --from "$SNAP" --format nope >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL unknown format"; failed=1; }
"$CTL" report --from "$SNAP" --format task_top --task 1 >/dev/null 2>&1; [ $? -eq 1 ] || { echo "FAIL unknown task"; failed=1; }
echo '{"hello": 1}' >"$work/bad.json"
"$CTL" report --from "$work/bad.json" >/dev/null 2>&1; [ $? -eq 1 ] || { echo "FAIL bad snapshot"; failed=1; }

exit $failed
