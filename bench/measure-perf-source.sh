#!/bin/bash
# SPDX-License-Identifier: MIT
# Measures what tracing costs the traced system and the tracer: loadgen's full-speed alloc/touch/free
# rate untraced and traced by perf-source-probe (interleaved, so drifting background load hits both
# alike), the probe's lost records and CPU time per million records, and loss against ring size.
# Not a test: numbers depend on the machine. Needs root.
#
# Usage: bench/measure-perf-source.sh BUILDDIR [ROUNDS] [SECONDS]
set -euo pipefail

build=${1:?build dir}
rounds=${2:-3}
seconds=${3:-10}
loadgen=$build/bench/loadgen
probe=$build/tests/perf-source-probe
out=$(mktemp -d /tmp/measure-perf-source.XXXXXX)
trap 'rm -rf "$out"' EXIT

rate() {
    sed -n 's/.*pages_per_sec=\([0-9]*\).*/\1/p' "$1"
}

# Traces one loadgen run; $1: a name, the rest: probe options. Prints one summary line.
traced() {
    local name=$1 lg_args=$2
    shift 2
    "$probe" --seconds $((seconds + 3)) "$@" >"$out/probe" &
    local p=$!
    sleep 1     # let the probe seed /proc and enable its events before the load starts
    "$loadgen" --seconds "$seconds" $lg_args >"$out/lg"
    wait $p
    echo "$name: pages_per_sec=$(rate "$out/lg") $(head -1 "$out/probe" | grep -o 'records=[0-9]* lost=[0-9]* wakeups=[0-9]*') $(tail -1 "$out/probe")"
}

echo "# $(uname -r), $(nproc) CPUs, loadgen --seconds $seconds (256-page rounds, 1 thread)"
for i in $(seq "$rounds"); do
    "$loadgen" --seconds "$seconds" >"$out/lg"
    echo "untraced: pages_per_sec=$(rate "$out/lg")"
    traced "traced, defaults" ""
    traced "traced, depth 1" "" --depth 1
done

echo "# loss against ring size, loadgen --threads 2 (both CPUs busy: the tracer competes for CPU)"
for pages in 64 128 256 512 1024; do
    traced "buffer-pages $pages" "--threads 2" --buffer-pages "$pages"
done
