#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackd --report LIST --output FILE: the reports written when memstrackd stops (SIGTERM) are the
# bytes memstrackctl report renders from the same state just before, for memstrack's formats with
# sub-arguments; a report into a FIFO is written in place; and a bad --report is a usage error before
# anything starts. The replay source feeds fixed events: no kernel tracing, no root.
#
# Usage: test-report-exit.sh MEMSTRACKD MEMSTRACKCTL
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"
export MEMSTRACK_SLABINFO=$work/slabinfo

cat >"$work/slabinfo" <<'END'
slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
dentry            80136  80136    192   21    1 : tunables    0    0    0 : slabdata   3816   3816      0
kmalloc-4k          350    352   4096    8    8 : tunables    0    0    0 : slabdata     44     44      0
END

# Three tasks; 4242's pages come from two stacks, one through a shared caller with three callees.
cat >"$work/events" <<'END'
task 4242 replayed-a
task 4300 replayed-b
task 4400 replayed-c
alloc 4242 0x1000 2 0xffffffff81000000 0xffffffff81000010
alloc 4242 0x2000 1 0xffffffff81000020 0xffffffff81000010
alloc 4242 0x3000 0 0xffffffff81000030 0xffffffff81000010
alloc 4242 0x4000 3 0xffffffff81000040
alloc 4300 0x9000 3 0xffffffff81000000
alloc 4400 0xa000 0
free 0x2000 1
END

# start_daemon REPORT [OUTPUT]: memstrackd on the replayed events, answering.
start_daemon() {
    local output=()
    [ -n "${2:-}" ] && output=(--output "$2")
    "$D" --foreground --source=replay --source-input="$work/events" --socket="$work/sock" --group="$(id -gn)" \
        --report "$1" "${output[@]}" >"$work/stdout" 2>"$work/log" &
    daemon=$!
    daemon_answers "the replayed events"
}

list="module_summary,task_summary:top=2:sort_by_peak,task_top:top=1,task_top_json:throttle=90,proc_slab_static:top=1"
start_daemon "$list" "$work/report.txt"
"$CTL" --address "unix:$work/sock" report --format "$list" >"$work/client.txt" 2>"$work/err" ||
    fail "memstrackctl report: $(cat "$work/err")"
[ ! -e "$work/report.txt" ] || fail "the report was written before memstrackd stopped"
daemon_stop
[ -s "$work/report.txt" ] || fail "no report in $work/report.txt"
diff -u "$work/client.txt" "$work/report.txt" || fail "memstrackd's report differs from memstrackctl's"
grep -q "^Wrote the report to $work/report.txt.\|Wrote the report to $work/report.txt." "$work/log" ||
    fail "memstrackd did not say where the report went"
# The content itself: the replayed tasks and their pages.
grep -qx "Task replayed-a (4242) using 0.1MB (13 pages), peak usage 0.1MB (15 pages)" "$work/report.txt" ||
    fail "task_summary lacks replayed-a's 13 pages"
[ "$(grep -c '^Task ' "$work/report.txt")" -eq 2 ] || fail "task_summary:top=2 listed $(grep -c '^Task ' "$work/report.txt") tasks"
grep -q '^ *dentry: 14.9 MB$' "$work/report.txt" && ! grep -q 'kmalloc-4k' "$work/report.txt" ||
    fail "proc_slab_static:top=1 is not dentry alone"
echo "ok memstrackd's report at SIGTERM is memstrackctl's report"

# One format, to standard output: the journal of a service, a console in an initramfs.
start_daemon "task_top_json"
"$CTL" --address "unix:$work/sock" report --format task_top_json >"$work/client.json" 2>"$work/err" ||
    fail "memstrackctl report: $(cat "$work/err")"
daemon_stop
cmp -s "$work/client.json" "$work/stdout" || fail "task_top_json on standard output differs: $(head -5 "$work/stdout")"
python3 -m json.tool "$work/stdout" >/dev/null || fail "task_top_json on standard output is not JSON"
echo "ok --report without --output writes to standard output"

# Into a FIFO: written in place (a rename would replace the FIFO with a file nobody reads).
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/fifo.out" &
reader=$!
start_daemon "module_summary" "$work/fifo"
daemon_stop
wait "$reader"
grep -q "^Module " "$work/fifo.out" || fail "nothing came through the FIFO: $(cat "$work/fifo.out")"
[ -p "$work/fifo" ] || fail "the FIFO was replaced"
echo "ok a report into a FIFO"

# An output that cannot be written: memstrackd says so and exits 1 (the summary is still in its log).
start_daemon "module_summary" "$work/no/such/dir/report.txt"
kill -TERM "$daemon"
wait "$daemon"
rc=$?
daemon=
[ $rc -eq 1 ] || fail "an unwritable --output exited $rc"
grep -q "Failed to write the report to $work/no/such/dir/report.txt: No such file or directory" "$work/log" ||
    fail "an unwritable --output was not reported: $(cat "$work/log")"
echo "ok an unwritable --output"

# Usage errors, before tracing starts.
usage() {
    local want=$1; shift
    timeout 30 "$D" --source=replay --source-input="$work/events" --no-socket "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    [ $rc -eq 2 ] && [ "$(head -1 "$work/err")" = "memstrackd: $want" ] ||
        fail "memstrackd $*: exit $rc, '$(cat "$work/err")', expected 'memstrackd: $want'"
}
usage "--report: module_top: unknown sub-argument 'bogus'; known: top=N, throttle=PERCENT, sort_by_alloc, sort_by_peak." \
    --report module_top:top=5:sort_by_peak:bogus
usage "--report: task_top: top= takes a number from 1 to 1000000, not 'x'." --report task_top:top=x
usage "--report: task_top: throttle= takes a percentage from 1 to 100, not '0'." --report task_top:throttle=0
usage "--report: unknown report format 'nope'; known: task_summary, task_top, module_summary, module_top, unit_summary, unit_top, stack_tree, folded, flamegraph, task_top_json, proc_slab_static, slab_callsites, slab_caches, leaks, explain, cold, cold_flamegraph, html, heap_processes, heap_maximum, heap_leaks, heap_lifetimes, crashkernel." \
    --report nope
usage "--report: a flame graph cannot share the report with other formats; ask for it alone." --report flamegraph,folded
usage "--output names the file of --report, and no --report is given." --output "$work/x"
echo "ok usage errors"
