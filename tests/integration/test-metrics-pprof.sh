#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrack-metrics' /debug/pprof end to end: memstrackd (its default source) on the live kernel with a
# heap socket, loadgen holding 64 MiB in a cgroup named like a unit, memstrack-metrics on a loopback
# socket passed the way systemd passes it, and Go's own pprof reading the profiles over HTTP:
#   - the heap profile's inuse_space adds up to the bytes memstrackd tracked at that moment, exactly
#     (the figure its Profile reply carries, as Status gives it), and loadgen's (?pid=) to what Tasks says;
#   - ?unit= keeps only that unit's samples, which add up to what Units says;
#   - -symbolize=none keeps the kernel's function names, and vmlinux's mapping has the running kernel's
#     build ID (from /sys/kernel/notes); a recorded heap's mapping has its program's (readelf -n);
#   - ?seconds=5 over a second loadgen that allocates 32 MiB in those seconds shows them within 1 %;
#   - a malformed query, an unknown filter, a huge seconds and 50 concurrent scrapes each get their
#     HTTP status, and memstrackd and memstrack-metrics serve on.
# Needs root, the kmem tracepoints, a writable cgroup2 hierarchy, go (Debian's golang-go), curl, readelf
# and systemd-socket-activate; skips (77) otherwise.
#
# Usage: test-metrics-pprof.sh MEMSTRACKD MEMSTRACKCTL LOADGEN MEMSTRACK_METRICS TESTS_DIR HEAP_LIBRARY HEAP_TARGET
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
METRICS=${4:?memstrack-metrics}
TESTS=${5:?tests dir}
HEAP_LIBRARY=${6:?heap library}
HEAP_TARGET=${7:?heap-target}
. "$TESTS/integration/memstrackctl-lib.sh"

for p in go curl readelf systemd-socket-activate; do
    command -v "$p" >/dev/null || skip "no $p (scripts/deps installs golang-go, curl, binutils and systemd)"
done
PAGE_SIZE=$(getconf PAGESIZE)
PAGES=$(( (64 << 20) / PAGE_SIZE ))
DELTA_PAGES=$(( (32 << 20) / PAGE_SIZE ))

lib_init test-metrics-pprof
export HOME=$work GOCACHE=$work/gocache GOFLAGS= PPROF_TMPDIR=$work
go tool pprof -h >/dev/null 2>&1 || skip "go tool pprof does not run here"

holder_unit=memstrack-pprof-test-$$.scope
make_unit_cgroup "$holder_unit"
cleanup() {
    exec 7>&- 8<&- 2>/dev/null
    lib_cleanup
    rmdir "$holder_cgroup"
}
trap cleanup EXIT

# GET $1 (a path and query) into $2, headers into $2.hdr; prints the HTTP status.
get() {
    curl -sS --max-time 90 -D "$2.hdr" -o "$2" -w '%{http_code}' "http://127.0.0.1:$mport$1"
}

start_metrics() {
    mport=$(free_port)
    systemd-socket-activate -l "127.0.0.1:$mport" "$METRICS" --address "$work/sock" --top 5 \
        >>"$work/metrics.log" 2>&1 &
    metrics_pid=$!
    pids+=($!)
    wait_for "memstrack-metrics to answer on 127.0.0.1:$mport" curl -sf -o /dev/null "http://127.0.0.1:$mport/metrics"
}

# go tool pprof -raw of a URL or file ($1) with more options, read into JSON: sample types, samples
# (values, stack of function names leaf first, labels), comments, mappings, locations.
raw() {
    local what=$1; shift
    go tool pprof -raw "$@" "$what" >"$work/raw.txt" 2>"$work/raw.err" ||
        fail "go tool pprof -raw $* $what failed: $(cat "$work/raw.err")"
    python3 - "$work/raw.txt" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read().splitlines()
out = {"types": [], "samples": [], "comments": [], "mappings": [], "locations": {}}
section = None
for line in text:
    if line.startswith("Comment: "):
        out["comments"].append(line[len("Comment: "):])
    elif line == "Samples:":
        section = "samples"
    elif line.startswith("Locations"):
        section = "locations"
    elif line.startswith("Mappings"):
        section = "mappings"
    elif section == "samples" and not out["types"]:
        out["types"] = [t.replace("[dflt]", "") for t in line.split()]
    elif section == "samples" and re.match(r"^\s+-?\d", line):
        values, _, stack = line.partition(":")
        out["samples"].append({"values": [int(v) for v in values.split()],
                               "stack": [int(x) for x in stack.split()], "labels": {}})
    elif section == "samples" and out["samples"] and line.strip():
        for k, v in re.findall(r"(\w+):\[(.*?)\](?= \w+:\[|$)", line.strip()):
            out["samples"][-1]["labels"][k] = v
    elif section == "locations":
        m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ (?:M=(\d+) )?(.*?) :\d+(?::\d+)? s=\d+", line)
        if m:
            out["locations"][m.group(1)] = {"mapping": m.group(2), "function": m.group(3)}
    elif section == "mappings" and line.strip():
        out["mappings"].append(line.strip())
print(json.dumps(out))
PY
}

# The sum of sample type $2 over the JSON from raw() in file $1.
total() {
    python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); i = p["types"].index(sys.argv[2])
print(sum(s["values"][i] for s in p["samples"]))' "$1" "$2"
}

# The number in the comment of the JSON from raw() in $1 that matches the Python regex $2 (group 1).
comment_number() {
    python3 -c 'import json, re, sys
for c in json.load(open(sys.argv[1]))["comments"]:
    m = re.search(sys.argv[2], c)
    if m:
        print(m.group(1)); break' "$1" "$2"
}

json_field() {
    python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]:
    v = v[int(k)] if isinstance(v, list) else v[k]
print(v)' "$@"
}

# The running kernel's build ID, from its notes.
kernel_build_id() {
    python3 - <<'PY'
import struct
data = open("/sys/kernel/notes", "rb").read()
at = 0
while at + 12 <= len(data):
    namesz, descsz, kind = struct.unpack_from("=III", data, at)
    at += 12
    name = data[at:at + namesz]; at += (namesz + 3) & ~3
    desc = data[at:at + descsz]; at += (descsz + 3) & ~3
    if kind == 3 and name.rstrip(b"\0") == b"GNU":
        print(desc.hex()); break
PY
}

test_heap_total() {
    local code status tracked_bytes sum
    code=$(get /debug/pprof/heap "$work/heap.pb.gz")
    [ "$code" = 200 ] || fail "GET /debug/pprof/heap answered $code: $(cat "$work/heap.pb.gz")"
    grep -qi '^Content-Type: application/octet-stream' "$work/heap.pb.gz.hdr" || fail "wrong Content-Type: $(cat "$work/heap.pb.gz.hdr")"
    grep -qi '^Content-Disposition: attachment; filename="heap"' "$work/heap.pb.gz.hdr" || fail "wrong Content-Disposition"
    grep -qi '^X-Content-Type-Options: nosniff' "$work/heap.pb.gz.hdr" || fail "no X-Content-Type-Options: nosniff"

    # Over HTTP, as Parca and Pyroscope read it: the samples add up to what memstrackd tracked as it
    # answered (its Profile reply carries Status's trackedPages of that moment), to the byte.
    raw "http://127.0.0.1:$mport/debug/pprof/heap" >"$work/heap.json"
    [ "$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["types"]))' "$work/heap.json")" = \
      "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" ] || fail "not Go's heap sample types"
    tracked_bytes=$(comment_number "$work/heap.json" 'memstrackd tracked \d+ pages \((\d+) bytes\)')
    [ -n "$tracked_bytes" ] || fail "no tracked figure among the comments"
    sum=$(total "$work/heap.json" inuse_space/bytes)
    [ "$sum" = "$tracked_bytes" ] || fail "inuse_space adds up to $sum bytes, memstrackd tracked $tracked_bytes"
    [ "$sum" -ge $((PAGES * PAGE_SIZE)) ] || fail "inuse_space $sum is less than loadgen's $((PAGES * PAGE_SIZE))"
    [ "$(total "$work/heap.json" alloc_space/bytes)" -ge "$sum" ] || fail "less allocated than held"
    status=$(ctl --json=short status)
    [ "$(json_field stackSampleInterval <<<"$status")" -ge 0 ] || fail "no Status"
    echo "ok heap over HTTP: inuse_space $sum bytes = memstrackd's tracked bytes at that moment"

    # -top reads it too, and its total is the same bytes.
    go tool pprof -top -unit=B "http://127.0.0.1:$mport/debug/pprof/heap?pid=$lg_pid" >"$work/top" 2>&1 ||
        fail "go tool pprof -top failed: $(cat "$work/top")"
    grep -q "of $(( $(pages_of "$lg_pid") * PAGE_SIZE ))B total" "$work/top" ||
        fail "-top of loadgen ($lg_pid): $(grep total "$work/top"), Tasks says $(( $(pages_of "$lg_pid") * PAGE_SIZE ))B"
    echo "ok -top of loadgen's profile: $(grep -o 'of [0-9]*B total' "$work/top")"
}

test_pid_and_unit() {
    local held sum unit units_pages
    held=$(( $(pages_of "$lg_pid") * PAGE_SIZE ))
    raw "http://127.0.0.1:$mport/debug/pprof/heap?pid=$lg_pid" >"$work/pid.json"
    sum=$(total "$work/pid.json" inuse_space/bytes)
    [ "$sum" = "$held" ] || fail "?pid=$lg_pid holds $sum bytes, Tasks says $held"
    python3 - "$work/pid.json" "$lg_pid" <<'PY' || fail "?pid= has samples of other tasks"
import json, sys
p = json.load(open(sys.argv[1]))
held = [s for s in p["samples"] if s["values"][3] != 0]
assert held and all(s["labels"]["task"].endswith("(%s)" % sys.argv[2]) for s in held), held[:3]
PY
    echo "ok ?pid=$lg_pid: $sum bytes, as Tasks"

    ctl --json=short units --all --limit 10000 >"$work/units.json" || fail "units --json failed"
    unit=$(python3 -c 'import json, sys
u = [x for x in json.load(open(sys.argv[1]))["units"] if x.get("cgroup") == sys.argv[2]]
print(u[0]["name"], u[0]["currentPages"]) if u else print("")' "$work/units.json" "/$holder_unit")
    [ -n "$unit" ] || fail "no unit with loadgen's cgroup /$holder_unit in Units"
    read -r unit units_pages <<<"$unit"
    raw "http://127.0.0.1:$mport/debug/pprof/heap?unit=$unit" >"$work/unit.json"
    python3 - "$work/unit.json" "$unit" <<'PY' || fail "?unit=$unit keeps samples of other units"
import json, sys
p = json.load(open(sys.argv[1]))
held = [s for s in p["samples"] if s["values"][3] != 0]
assert held and all(s["labels"]["unit"] == sys.argv[2] for s in held), [s["labels"] for s in held][:5]
PY
    sum=$(total "$work/unit.json" inuse_space/bytes)
    [ "$sum" = $((units_pages * PAGE_SIZE)) ] || fail "?unit=$unit holds $sum bytes, Units says $((units_pages * PAGE_SIZE))"
    echo "ok ?unit=$unit: only its samples, $sum bytes as Units"
}

test_names_and_build_ids() {
    local build_id
    build_id=$(kernel_build_id)
    raw "http://127.0.0.1:$mport/debug/pprof/heap" -symbolize=none >"$work/nosym.json"
    python3 - "$work/nosym.json" "$build_id" <<'PY' || fail "-symbolize=none lost the kernel's names or build ID"
import json, re, sys
p = json.load(open(sys.argv[1]))
first = p["mappings"][0]
assert re.match(r"1: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ vmlinux " + sys.argv[2] + r"\b", first), first
kernel = [l["function"] for l in p["locations"].values() if l["mapping"] == "1"]
named = [f for f in kernel if re.match(r"^[A-Za-z_][\w.]*$", f)]
assert len(named) >= 3, kernel[:10]
PY
    echo "ok -symbolize=none: kernel functions named, vmlinux's build ID $build_id"
}

test_userheap() {
    local code want
    LD_PRELOAD=$HEAP_LIBRARY MEMSTRACK_HEAP_SOCKET=$work/heap.sock MEMSTRACK_HEAP_SAMPLE_INTERVAL=1 \
        HEAP_TARGET_EXPECT=$work/expect.json "$HEAP_TARGET" known >"$work/target.out" 2>&1 &
    local target=$!
    wait "$target" || fail "heap-target failed: $(cat "$work/target.out")"
    want=$(readelf -n "$HEAP_TARGET" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
    [ -n "$want" ] || skip "heap-target has no build ID"
    # The daemon reads the heap to its end on its own timer: poll, bounded.
    heap_seen() {
        [ "$(get "/debug/pprof/userheap?pid=$target" "$work/userheap.pb.gz")" = 200 ] &&
            raw "$work/userheap.pb.gz" >"$work/userheap.json" &&
            grep -q "heap-target $want" "$work/userheap.json"
    }
    wait_for "heap-target's heap ($target) in /debug/pprof/userheap with its build ID" heap_seen
    python3 - "$work/userheap.json" "$target" <<'PY' || fail "the user heap profile has no samples of heap-target"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["types"] == ["inuse_objects/count", "inuse_space/bytes"], p["types"]
assert any(s["labels"]["task"].endswith("(%s)" % sys.argv[2]) for s in p["samples"])
PY
    echo "ok userheap: heap-target's mapping has its build ID $want"
}

# A second holder on fds 7 and 8, told to allocate while a delta is being taken.
start_second_loadgen() {
    rm -f "$work/lg2.in" "$work/lg2.out"
    mkfifo "$work/lg2.in" "$work/lg2.out"
    "$LOADGEN" --commands --child --pages "$DELTA_PAGES" <"$work/lg2.in" >"$work/lg2.out" &
    pids+=($!)
    exec 7>"$work/lg2.in" 8<"$work/lg2.out"
    read -r -t "$WAIT" -u 8 line || fail "the second loadgen did not start"
    lg2_pid=${line#pid=}
}

lg2() {
    echo "$1" >&7
    read -r -t "$WAIT" -u 8 line && [ "$line" = "$2" ] || fail "the second loadgen said '$line', expected '$2'"
}

# Whether the delta of curl $1 is being taken: a probe delta (of a pid nobody has: it gives the slot
# back at once) is refused with 429 while one runs. Also true once that curl is done (the probe took
# the slot first and it was refused: the caller sees 429 and tries again).
delta_running() {
    ! kill -0 "$1" 2>/dev/null || [ "$(get '/debug/pprof/heap?seconds=1&pid=2147483647' "$work/probe")" = 429 ]
}

test_delta() {
    local attempt code before after sum d
    start_second_loadgen
    for attempt in 1 2 3 4 5; do
        get "/debug/pprof/heap?seconds=5&pid=$lg2_pid" "$work/delta.pb.gz" >"$work/delta.code" &
        local curl_pid=$!
        wait_for "the delta to be taken" delta_running "$curl_pid"
        lg2 alloc allocated
        wait "$curl_pid"
        code=$(cat "$work/delta.code")
        # The probe took the delta slot first: try again.
        [ "$code" = 429 ] && { lg2 free freed; continue; }
        [ "$code" = 200 ] || fail "the delta answered $code: $(cat "$work/delta.pb.gz")"
        grep -qi '^Content-Disposition: attachment; filename="heap-delta"' "$work/delta.pb.gz.hdr" ||
            fail "the delta's Content-Disposition: $(cat "$work/delta.pb.gz.hdr")"
        raw "$work/delta.pb.gz" >"$work/delta.json"
        read -r before after < <(python3 -c 'import json, re, sys
for c in json.load(open(sys.argv[1]))["comments"]:
    m = re.search(r"held (\d+) pages at its start and (\d+) at its end", c)
    if m:
        print(m.group(1), m.group(2))' "$work/delta.json")
        [ -n "$before" ] || fail "the delta says nothing of what it held"
        # The delta's first profile came after the allocation began: its window missed it, again.
        if [ "$before" -ge $((DELTA_PAGES / 100)) ]; then
            lg2 free freed
            continue
        fi
        sum=$(total "$work/delta.json" inuse_space/bytes)
        [ "$sum" = $(( (after - before) * PAGE_SIZE )) ] ||
            fail "the delta's inuse_space is $sum, memstrackd's counts moved by $(( (after - before) * PAGE_SIZE ))"
        d=$(python3 -c 'import sys; s, w = int(sys.argv[1]), int(sys.argv[2]); print("%.3f" % (abs(s - w) * 100 / w)); sys.exit(abs(s - w) > w / 100)' \
            "$sum" $((DELTA_PAGES * PAGE_SIZE))) ||
            fail "the delta shows $sum bytes for a holder that allocated $((DELTA_PAGES * PAGE_SIZE)) ($d % apart)"
        echo "ok ?seconds=5: $sum bytes of the 32 MiB allocated in the window ($d % apart)"
        lg2 free freed
        return 0
    done
    fail "no delta in 5 attempts had the allocation inside its window"
}

test_hostile() {
    local code i ok=0 busy=0
    for q in 'seconds' 'seconds=5&frobnicate=1' 'seconds=100000' 'pid=1&unit=x' '%zz=1'; do
        code=$(get "/debug/pprof/heap?$q" "$work/bad")
        [ "$code" = 400 ] || fail "?$q answered $code, expected 400: $(cat "$work/bad")"
        [ "$(wc -l <"$work/bad")" = 1 ] || fail "?$q's reason is not one line: $(cat "$work/bad")"
    done
    code=$(get /debug/pprof/nothing "$work/bad")
    [ "$code" = 404 ] || fail "an unknown profile answered $code"
    code=$(get "/debug/pprof/heap?unit=no-such-unit.service" "$work/bad")
    [ "$code" = 404 ] || fail "an unknown unit answered $code"
    echo "ok malformed query, unknown filter, huge seconds: 400; unknown path and unit: 404"

    # Each curl gives up after 90 s: waiting for them is bounded.
    local scrapers=()
    for i in $(seq 50); do
        curl -sS --max-time 90 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$mport/debug/pprof/heap" \
            >"$work/concurrent.$i" 2>&1 &
        scrapers+=($!)
    done
    wait "${scrapers[@]}"
    for i in $(seq 50); do
        case $(cat "$work/concurrent.$i") in
        200) ok=$((ok + 1)) ;;
        429) busy=$((busy + 1)) ;;
        *) fail "a concurrent scrape got '$(cat "$work/concurrent.$i")'" ;;
        esac
    done
    [ "$ok" -ge 1 ] || fail "none of 50 concurrent scrapes was served"
    echo "ok 50 concurrent scrapes: $ok served, $busy told 429"

    ctl status >/dev/null || fail "memstrackd stopped answering"
    code=$(get /metrics "$work/m")
    [ "$code" = 200 ] && grep -q '^memstrack_up 1$' "$work/m" || fail "/metrics answered $code after the abuse"
    code=$(get /debug/pprof/heap "$work/after.pb.gz")
    [ "$code" = 200 ] || fail "/debug/pprof/heap answered $code after the abuse"
    echo "ok memstrackd and memstrack-metrics serve on"
}

start_daemon --heap-socket "$work/heap.sock"
start_loadgen
echo "$lg_pid" >"$holder_cgroup/cgroup.procs" || fail "cannot move loadgen ($lg_pid) into $holder_cgroup"
lg alloc allocated
wait_for "memstrackd to charge $PAGES pages to loadgen ($lg_pid)" loadgen_counted
start_metrics
test_heap_total
test_pid_and_unit
test_names_and_build_ids
test_delta
test_userheap
test_hostile
test_metrics_exit
echo "all metrics-pprof tests passed"
