#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl explain under a real systemd (shared/tools/sysbox), the way a user asks "why is this unit's
# memory this high": transient units made with systemd-run, the kernel's figures read by memstrackd from
# the unit's own memory cgroup, beside memstrack's attribution.
#
#   - a unit holding 64 MiB of anonymous memory: explain's kernel anon and memstrack's user pages agree
#     within 1 %, and the holder's stack goes through the anonymous page fault;
#   - a unit whose short-lived tasks create and stat 100 000 files on a tmpfs and exit (a sleeper keeps the
#     unit, and so its cgroup, alive): their dentries and inodes are held by no live process, by cache, call
#     site and task name, and those bytes are within 10 % of the kernel's slab figure for the cgroup
#     (cgroup2: memory.stat slab; v1, which has none: memory.kmem.usage_in_bytes, its kernel memory). The
#     files come in batches, each made once memstrackd has seen the last: a burst of 100 000 at once on a
#     machine whose CPUs are all busy overflows any ring the daemon would sensibly lock (counted as
#     ringFull, as it should be), and this case is about attribution, not about that race;
#   - a unit pushed past the margin of its limit gets a pressure record before any OOM kill, in OomKills,
#     `memstrackctl oom` and the journal under its own MESSAGE_ID.
# Which hierarchy ran is said. Needs root, perf events and the kmem tracepoints; skips (77) otherwise.
#
# Usage: test-explain-systemd.sh SYSBOX BUILD_DIR WORK_DIR
set -uo pipefail

SYSBOX=${1:?sysbox}
BUILD=${2:?build dir}
WORK=${3:?work dir}
PAGES=16384             # the anonymous holder's pages (64 MiB with 4 KiB pages)
FILES=100000
BATCH=5000             # files per batch: ~40 000 slab records, well inside the --slab ring
WAIT=60                 # seconds any awaited state may take: a bound, not a measurement
PRESSURE_ID=5b7e2c9d4a1f4e08b3c6d2a9e7f1c054   # OOMLOG_PRESSURE_MESSAGE_ID, daemon/api/oomlog.h

# shellcheck source=sysbox-lib.sh
. "$(dirname "$0")/sysbox-lib.sh"
CASES_VAR=MEMSTRACK_EXPLAIN_CASES     # MEMSTRACK_EXPLAIN_CASES="test_a test_b" runs only those

sysbox_require_host
[ -d /sys/kernel/tracing/events/kmem/kmem_cache_alloc ] || skip "no kmem slab tracepoints in tracefs"
command -v jq >/dev/null || skip "no jq"

sysbox_container memstrack-explain
export SYSBOX_PACKAGES=libtraceevent1,libjansson4,libncursesw6,libdw1,libelf1,libbpf1,libmicrohttpd12,libprotobuf-c1,zlib1g,procps,man-db,curl
export SYSBOX_BIND_RO="$WORK/stage:/opt/memstrack-stage $WORK/tools:/opt/memstrack-test"
CTL=/usr/local/bin/memstrackctl

# The memory controller's hierarchy in the container (sysbox-lib.sh hands a v1 controller over): explain
# reads the kernel's figures from it, and the checks below differ by it.
HIERARCHY=v2

# explain UNIT [ARGS...]: the Explain reply as JSON, into $WORK/UNIT.json.
explain_json() {
    local unit=$1
    shift
    ct "$CTL" explain "$unit" --json=short "$@" >"$WORK/$unit.json" 2>"$WORK/$unit.err" ||
        bad "memstrackctl explain $unit failed: $(cat "$WORK/$unit.err")"
}

setup() {
    rm -rf "$WORK"
    mkdir -p "$WORK/stage" "$WORK/tools"
    meson install -C "$BUILD" --no-rebuild --quiet --destdir "$WORK/stage" >"$WORK/install.log" 2>&1 ||
        { cat "$WORK/install.log"; return 1; }
    cp "$BUILD/bench/loadgen" "$WORK/tools/" || return 1
    "$SYSBOX" create >"$WORK/create.log" 2>&1 || { cat "$WORK/create.log"; return 1; }
    memcg_v1_enter || skip "$MEMCG_SETUP"
    [ -z "$MEMCG_V1" ] || HIERARCHY=v1
    echo "memory controller: cgroup $HIERARCHY${MEMCG_V1:+ (the container runs in $MEMCG_V1)}"
    sysbox_boot || return 1
    # memstrackd as installed, tracing slab objects too (explain's dentries and inodes).
    ct sh -ec 'cp -a /opt/memstrack-stage/. /
               systemd-sysusers
               mkdir -p /usr/local/etc/memstrack
               printf "slab=yes\n" >/usr/local/etc/memstrack/memstrackd.conf
               systemctl daemon-reload
               systemctl start memstrackd.service' || return 1
    ct "$CTL" status >"$WORK/status.out" 2>&1 || { cat "$WORK/status.out"; return 1; }
    grep -E 'Backend' "$WORK/status.out"
}

# 64 MiB of anonymous memory in holder.service: the kernel's anon and memstrack's pages allocated movable
# agree within 1 %, and the biggest stack of the live holder is the anonymous page fault.
test_anon_holder() {
    local deadline cmp anon_k anon_m
    ct systemd-run --quiet --unit=holder --collect -p Type=exec -p MemoryAccounting=yes \
        /opt/memstrack-test/loadgen --pages "$PAGES" --hold-until-signal || bad "cannot start loadgen" || return 1
    deadline=$((SECONDS + WAIT))
    while :; do
        explain_json holder.service || return 1
        anon_m=$(jq '.comparisons[] | select(.what == "anon") | .memstrackBytes // 0' "$WORK/holder.service.json")
        [ "${anon_m:-0}" -ge $((PAGES * 4096)) ] 2>/dev/null && break
        [ $SECONDS -lt $deadline ] || break
        sleep 0.3
    done
    ct "$CTL" explain holder.service --limit 3 --stacks 1 >"$WORK/holder.txt" 2>&1
    ct systemctl kill --kill-who=main -s SIGUSR1 holder.service
    cmp=$(jq -c '.comparisons[] | select(.what == "anon")' "$WORK/holder.service.json")
    echo "  cgroup $(jq -r '.kernel.hierarchy // "none"' "$WORK/holder.service.json"): $cmp"
    anon_k=$(jq '.kernelBytes // 0' <<<"$cmp")
    anon_m=$(jq '.memstrackBytes // 0' <<<"$cmp")
    [ "$(jq -r '.kernel.hierarchy' "$WORK/holder.service.json")" = "$HIERARCHY" ] ||
        bad "explain read the kernel's figures from cgroup $(jq -r '.kernel.hierarchy' "$WORK/holder.service.json"), not $HIERARCHY: $(jq -c '{kernel, kernelReason}' "$WORK/holder.service.json")" ||
        return 1
    [ "$anon_k" -ge $((PAGES * 4096)) ] || bad "the kernel's anon is $anon_k, below the $PAGES pages held" || return 1
    [ $((100 * (anon_m > anon_k ? anon_m - anon_k : anon_k - anon_m))) -le "$anon_k" ] ||
        bad "memstrack's anon $anon_m is not within 1 % of the kernel's $anon_k" || return 1
    jq -e '.alive.tasks[0].comm == "loadgen" and
           (.alive.stacks[0].frames | map(select(test("do_anonymous_page|handle_mm_fault"))) | length) > 0' \
        "$WORK/holder.service.json" >/dev/null ||
        bad "the holder's stack is not the page fault: $(jq -c '.alive | {tasks, stacks}' "$WORK/holder.service.json")" ||
        return 1
    grep -q "Held by live processes" "$WORK/holder.txt" && grep -q loadgen "$WORK/holder.txt" ||
        bad "memstrackctl explain does not show the holder: $(cat "$WORK/holder.txt")"
}

# 100 000 files created and stat'ed on a tmpfs by tasks that exit; a sleeper keeps the unit's cgroup.
# Batch B is made when /run/files-go-B appears, which this side creates once memstrackd counts the dentries
# of the batches before it.
test_orphaned_slab() {
    local deadline reply caches kernel_slab orphan_bytes source batch made
    ct sh -c 'mkdir -p /mnt/explain-files && mount -t tmpfs tmpfs /mnt/explain-files' ||
        bad "cannot mount a tmpfs" || return 1
    ct systemd-run --quiet --unit=files --collect -p MemoryAccounting=yes sh -c \
        "cd /mnt/explain-files && b=0 && while [ \$b -lt $((FILES / BATCH)) ]; do
             while [ ! -e /run/files-go-\$b ]; do sleep 0.1; done
             seq \$((b * $BATCH + 1)) \$(((b + 1) * $BATCH)) | sed s/^/f/ | xargs touch || exit 1
             b=\$((b + 1))
         done && ls -l >/dev/null && touch /run/files-done && exec sleep infinity" ||
        bad "cannot start the unit" || return 1
    made=0
    for ((batch = 0; batch < FILES / BATCH; batch++)); do
        ct touch /run/files-go-$batch
        made=$((made + BATCH))
        deadline=$((SECONDS + WAIT))
        while :; do
            explain_json files.service --limit 20 --stacks 0 || return 1
            jq -e --argjson n $made '([.orphaned.slabCaches[] | select(.name == "dentry") | .objects][0] // 0) >= $n' \
                "$WORK/files.service.json" >/dev/null && break
            [ $SECONDS -lt $deadline ] ||
                bad "memstrackd did not count the dentries of the $made files made so far: $(jq -c '.orphaned.slabCaches[:3]' "$WORK/files.service.json")" ||
                break 2
            sleep 0.2
        done
    done
    wait_for test -e /run/files-done || bad "the files were not made" || return 1
    # The tasks that made them are gone once only the sleeper is left, and memstrackd heard of it.
    deadline=$((SECONDS + WAIT))
    while :; do
        explain_json files.service --limit 20 --stacks 2 || return 1
        jq -e --argjson n $FILES '.tasks == 1 and ([.orphaned.slabCaches[] | select(.name == "dentry") | .objects][0] // 0) >= $n' \
            "$WORK/files.service.json" >/dev/null && break
        [ $SECONDS -lt $deadline ] || break
        sleep 0.5
    done
    ct "$CTL" explain files.service --limit 5 --stacks 1 >"$WORK/files.txt" 2>&1
    ct "$CTL" status --json=short >"$WORK/files-status.json" 2>&1
    reply="$WORK/files.service.json"
    ct systemctl stop files.service
    ct umount /mnt/explain-files
    echo "  cgroup $HIERARCHY; orphaned: $(jq -c '.orphaned | {pages, slabObjects, slabBytes,
        caches: [.slabCaches[:4][] | {name, objects, bytes}], tasks: [.tasks[] | {comm, processes}]}' "$reply")"
    echo "  losses: $(jq -c '{lostEvents, lostByReason: [.lostByReason[] | select(.count > 0)]}' "$WORK/files-status.json")"
    # The dentries and inodes: by cache and by call site, held by the exited tasks, named.
    caches=$(jq -c --argjson n $FILES '[.orphaned.slabCaches[] | select(.objects >= $n) | .name]' "$reply")
    jq -e 'index("dentry") != null and (map(select(test("inode"))) | length) > 0' <<<"$caches" >/dev/null ||
        bad "no dentry and inode caches of $FILES objects held by no live process: $caches" || return 1
    jq -e --argjson n $FILES '[.orphaned.slabCallSites[] | select(.objects >= $n) | .name] |
           (map(select(test("d_alloc"))) | length) > 0 and (map(select(test("alloc_inode"))) | length) > 0' \
        "$reply" >/dev/null ||
        bad "no call sites of dentries and inodes: $(jq -c '.orphaned.slabCallSites' "$reply")" || return 1
    jq -e '(.orphaned.tasks | map(.comm) | index("touch")) != null and (.alive.tasks | map(.comm)) == ["sleep"]' \
        "$reply" >/dev/null || bad "tasks: $(jq -c '{alive: .alive.tasks, orphaned: .orphaned.tasks}' "$reply")" ||
        return 1
    # Against the kernel's figure for the cgroup: cgroup2 counts slab; v1 counts none apart, its kernel
    # memory (memory.kmem.usage_in_bytes) holds them, with nothing else of size once the tasks are gone.
    if [ "$HIERARCHY" = v2 ]; then
        kernel_slab=$(jq '[.kernel.stat[] | select(.name == "slab") | .bytes][0] // 0' "$reply")
        source="memory.stat slab"
    else
        kernel_slab=$(jq '[.kernel.stat[] | select(.name == "kernel") | .bytes][0] // 0' "$reply")
        source="memory.kmem.usage_in_bytes"
    fi
    orphan_bytes=$(jq '[.orphaned.slabCaches[] | select(.name == "dentry" or (.name | test("inode"))) | .bytes] | add // 0' \
                   "$reply")
    echo "  dentries and inodes held by no live process: $orphan_bytes bytes; the kernel's $source: $kernel_slab"
    [ "$kernel_slab" -gt 0 ] || bad "no kernel figure for the cgroup: $(jq -c '{kernel, kernelReason}' "$reply")" ||
        return 1
    [ $((10 * (orphan_bytes > kernel_slab ? orphan_bytes - kernel_slab : kernel_slab - orphan_bytes))) -le "$kernel_slab" ] ||
        bad "$orphan_bytes bytes are not within 10 % of the kernel's $kernel_slab" || return 1
    grep -q "Held by no live process" "$WORK/files.txt" && grep -q dentry "$WORK/files.txt" ||
        bad "memstrackctl explain does not show the dentries: $(cat "$WORK/files.txt")"
}

# A unit pushed past the margin of its limit (10 % by default) and held there, below the limit: a pressure
# record names it, with its holders and Explain view, in OomKills, `memstrackctl oom` and the journal under
# its own MESSAGE_ID, and the kernel killed nothing. cgroup2 takes MemoryHigh= (memory.high); v1 has no
# such limit, so there MemoryMax= (memory.limit_in_bytes) is the one pushed.
test_pressure_record() {
    local limit=$((64 << 20)) pages=$((15000)) property unit=memstrack-tight.service rec entry
    if [ "$HIERARCHY" = v2 ]; then property=MemoryHigh; else property=MemoryMax; fi
    echo "  $property=$limit, $pages pages held ($((pages * 4096 * 100 / limit)) % of it), cgroup $HIERARCHY"
    ct systemd-run --quiet --unit=$unit --collect -p Type=exec -p "$property=$limit" -p MemorySwapMax=0 \
        /opt/memstrack-test/loadgen --pages $pages --hold-until-signal || bad "cannot start loadgen" || return 1
    wait_for sh -c "$CTL oom --json=short | grep -q '\"unit\":\"$unit\"'" ||
        bad "no pressure record of $unit: $(ct "$CTL" oom --json=short | jq -c '{pressureRecords: [.pressureRecords[] | {unit, reason, limit}], pressureWatch}')" || {
            ct systemctl stop $unit; return 1; }
    ct "$CTL" oom --json=short >"$WORK/oom.json"
    ct "$CTL" oom >"$WORK/oom.txt" 2>&1
    ct systemctl is-active --quiet $unit || bad "$unit is not running: killed?" || return 1
    ct systemctl kill --kill-who=main -s SIGUSR1 $unit
    rec=$(jq -c --arg u $unit '[.pressureRecords[] | select(.unit == $u)][0]' "$WORK/oom.json")
    echo "  record: $(jq -c '{reason, unit, limit, limitBytes, currentBytes, marginPercent,
        explainAlivePages: .explain.alive.pages, topTask: .holders.tasks[0].comm}' <<<"$rec")"
    jq -e --argjson l $limit '.reason == "limit" and .limitBytes == $l and .currentBytes >= ($l * 9 / 10) and
           .currentBytes < $l and .explain.name == .unit and (.explain.alive.tasks | map(.comm) | index("loadgen")) != null
           and (.holders.tasks | length) > 0' <<<"$rec" >/dev/null || bad "the record does not show $unit near its limit: $rec" || return 1
    jq -e --arg u $unit '[.kills[] | select(.unit == $u)] | length == 0' "$WORK/oom.json" >/dev/null ||
        bad "the kernel killed in $unit" || return 1
    grep -q "Pressure at .*: $unit at " "$WORK/oom.txt" || bad "memstrackctl oom does not show it: $(cat "$WORK/oom.txt")" ||
        return 1
    entry=$(ct journalctl --all "MESSAGE_ID=$PRESSURE_ID" "MEMSTRACK_PRESSURE_UNIT=$unit" -o json --no-pager | tail -1)
    echo "  journal: $(jq -c '{MESSAGE, MEMSTRACK_PRESSURE_LIMIT, MEMSTRACK_PRESSURE_CURRENT_BYTES}' <<<"$entry" 2>/dev/null)"
    jq -e --arg u $unit '.MEMSTRACK_PRESSURE_UNIT == $u and .MEMSTRACK_PRESSURE_REASON == "limit" and
                         (.MEMSTRACK_PRESSURE_RECORD | fromjson | .unit) == $u' <<<"$entry" >/dev/null ||
        bad "no journal entry of the pressure record: ${entry:-nothing}"
}

setup || { echo "FAIL: setup"; echo "0 passed, 1 failed"; exit 1; }
run_case test_anon_holder
run_case test_orphaned_slab
run_case test_pressure_record

echo "hierarchy: cgroup $HIERARCHY"
cases_report explain-systemd
