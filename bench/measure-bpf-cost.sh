#!/bin/bash
# SPDX-License-Identifier: MIT
# What the eBPF source's programs cost per page event, from the kernel's own accounting (run_time_ns /
# run_cnt with kernel.bpf_stats_enabled=1), under loadgen at full speed; and, for comparison, the same for
# in-kernel aggregation (a pfn -> owner hash map updated on every alloc and free, per-task counters), the
# other way to keep exact counts. Also the end-to-end figure: loadgen's pages/s untraced and traced,
# interleaved, as added µs per page. docs/performance.md has the results.
#
# Usage: [THREADS=N] bench/measure-bpf-cost.sh BUILDDIR [ROUNDS]   (root; bpftool; bpftrace for the aggregation case)
set -euo pipefail

build=${1:?usage: $0 BUILDDIR [ROUNDS]}
rounds=${2:-3}
memstrackd=$build/daemon/memstrackd
loadgen=$build/bench/loadgen
seconds=4
threads=${THREADS:-2}       # loadgen threads: 2 saturates both CPUs of the reference VM
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; sysctl -q kernel.bpf_stats_enabled=$old_stats; rm -rf "$work"' EXIT
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1

load() {
        "$loadgen" --pages 16384 --seconds "$seconds" --threads "$threads" | sed -n 's/.*pages_per_sec=\([0-9]*\).*/\1/p'
}

# Sum of run_time_ns, and of run_cnt but for the *_nested twins, of the programs named $2... that process $1 holds (other tracers on
# the machine may load programs of the same names), as "ns cnt".
prog_stats() {
        local pid=$1; shift
        bpftool prog show -j | python3 -c '
import glob, json, sys
pid, names = sys.argv[1], set(sys.argv[2:])
ids = set()
for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
    try:
        for line in open(f):
            if line.startswith("prog_id:"):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
ns = cnt = 0
for p in json.load(sys.stdin):
    if p.get("id") in ids and p.get("name") in names:
        ns += p.get("run_time_ns", 0)
        # The nested twins run for every event too: their time counts, their runs are not events.
        if not p["name"].endswith("_nested"):
            cnt += p.get("run_cnt", 0)
print(ns, cnt)' "$pid" "$@"
}

# One traced run: starts the tracer ($@), measures loadgen, prints "pages/s ns-per-event events".
traced() {
        local names=$1; shift
        "$@" >"$work/tracer.log" 2>&1 &
        local pid=$!
        sleep 3
        read -r ns0 cnt0 < <(prog_stats "$pid" $names)
        local rate
        rate=$(load)
        read -r ns1 cnt1 < <(prog_stats "$pid" $names)
        kill -TERM "$pid"; wait "$pid" || true
        python3 -c "import sys; ns, cnt = int(sys.argv[2]) - int(sys.argv[1]), int(sys.argv[4]) - int(sys.argv[3]); \
print(sys.argv[5], round(ns / cnt, 1) if cnt else 0, cnt)" "$ns0" "$ns1" "$cnt0" "$cnt1" "$rate"
}

ebpf_progs="page_alloc page_alloc_nested page_free page_free_nested"
# bpftrace 0.17 has no raw tracepoints: the classic ones. run_time_ns counts the program only, not
# the trace buffer the classic tracepoint fills first, so the figure is the aggregation's own cost.
aggregate='tracepoint:kmem:mm_page_alloc /args->pfn != 0xffffffffffffffff/ { @owner[args->pfn] = pid;
        @pages[pid] = @pages[pid] + (1 << args->order); }
tracepoint:kmem:mm_page_free { $o = @owner[args->pfn]; if ($o != 0) {
        @pages[$o] = @pages[$o] - (1 << args->order); delete(@owner[args->pfn]); } }'


printf '%-28s %10s %10s %12s\n' case pages/s ns/event events   # ns/event: all programs of a page event
for r in $(seq "$rounds"); do
        printf '%-28s %10s\n' "untraced" "$(load)"
        read -r rate ns cnt < <(traced "$ebpf_progs" "$memstrackd" --foreground --no-socket --source ebpf)
        printf '%-28s %10s %10s %12s\n' "ebpf exact (1 in 64)" "$rate" "$ns" "$cnt"
        read -r rate ns cnt < <(traced "$ebpf_progs" "$memstrackd" --foreground --no-socket --source ebpf \
                --stack-sample-interval 1)
        printf '%-28s %10s %10s %12s\n' "ebpf full (every stack)" "$rate" "$ns" "$cnt"
        read -r rate ns cnt < <(traced "$ebpf_progs" "$memstrackd" --foreground --no-socket --source ebpf \
                --callchain-depth 0)
        printf '%-28s %10s %10s %12s\n' "ebpf no stacks" "$rate" "$ns" "$cnt"
        read -r rate _ _ < <(traced "" "$memstrackd" --foreground --no-socket --source perf)
        printf '%-28s %10s\n' "perf (call chains)" "$rate"
        if command -v bpftrace >/dev/null; then
                # Room for every page of the load in the owner map, or updates fail and cost less.
                read -r rate ns cnt < <(BPFTRACE_MAP_KEYS_MAX=4194304 traced "mm_page_alloc mm_page_free" \
                        bpftrace -e "$aggregate")
                printf '%-28s %10s %10s %12s\n' "in-kernel aggregation" "$rate" "$ns" "$cnt"
        fi
done
