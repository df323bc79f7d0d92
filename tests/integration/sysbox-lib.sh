# SPDX-License-Identifier: MIT
# Shared by the tests that boot a Debian container with systemd as PID 1 through shared/tools/sysbox
# (sourced, not run): the host checks they all need, the container's name and teardown, the cgroup-v1
# memory controller handed to the container, booting it, and running and polling commands inside.
# Brings in ../case-lib.sh (run_case, bad, cases_report; CASES_VAR names the case filter variable).
#
# The sourcing script sets, before it calls anything here:
#   SYSBOX  the sysbox script         WORK  its scratch directory (boot.log goes there)
#   WAIT    seconds any awaited state in the container may take: a bound, not a measurement
# and sysbox's own SYSBOX_PACKAGES, SYSBOX_BIND_RO, ... as its container needs them.

. "$(dirname "${BASH_SOURCE[0]}")/../case-lib.sh"

skip() {
    echo "SKIP: $*" >&2
    exit 77
}

# What every test here needs of the host: root to boot a container, sysbox, perf events (memstrackd's
# sources) and tracefs mounted; each test checks the tracepoints it needs itself.
sysbox_require_host() {
    [ "$(id -u)" -eq 0 ] || skip "needs root to boot a container"
    [ -x "$SYSBOX" ] || skip "no $SYSBOX (shared/ is expected beside the checkout)"
    [ -e /proc/sys/kernel/perf_event_paranoid ] || skip "the kernel has no perf events"
    [ -d /sys/kernel/tracing/events/kmem ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
}

# sysbox_container PREFIX: the container is PREFIX-<hash of WORK>, a name of its own per work directory,
# so that neither a developer's sysbox nor a run from another checkout is touched; it is destroyed when
# the script exits (only from here on: before, the name would be sysbox's default, someone else's).
# nspawn gives no CAP_SYSLOG, CAP_BPF or CAP_PERFMON by default; memstrackd.service asks for them
# (kallsyms, the eBPF source; perf falls back on CAP_SYS_ADMIN).
sysbox_container() {
    SYSBOX_NAME=$1-$(printf %s "$WORK" | sha256sum | cut -c1-8)
    export SYSBOX_NAME
    export SYSBOX_NSPAWN_ARGS=--capability=CAP_SYSLOG,CAP_BPF,CAP_PERFMON
    trap sysbox_cleanup EXIT
}

sysbox_cleanup() {
    "$SYSBOX" destroy >/dev/null 2>&1
    memcg_v1_leave
}

# The memory controller in the container (MemoryMax=, units' memory cgroups). Where the host binds it to
# cgroup v1 (a hybrid host like the reference VM), nspawn mounts that hierarchy read-only inside, rooted
# at the cgroup nspawn started in: memcg_v1_enter, before the boot, moves the script into a v1 memory
# cgroup of its own, and sysbox_boot makes that mount writable once the container runs, so that the
# container's systemd makes memory cgroups for units. On a cgroup2 host nspawn delegates the controller
# and nothing needs doing. MEMCG_V1 is that cgroup (empty on cgroup2), MEMCG_SETUP says which it was;
# memcg_v1_enter fails where the controller is on v1 but cannot be used.
MEMCG_V1=
MEMCG_SETUP="the memory controller is cgroup2's"
memcg_v1_enter() {
    local hierarchy
    hierarchy=$(awk '$1 == "memory" {print $2}' /proc/cgroups)
    [ "${hierarchy:-0}" != 0 ] || return 0
    if [ "$(stat -fc %T /sys/fs/cgroup/memory 2>/dev/null)" != cgroupfs ]; then
        MEMCG_SETUP="the memory controller is on cgroup v1 but not mounted at /sys/fs/cgroup/memory"
        return 1
    fi
    MEMCG_V1=/sys/fs/cgroup/memory/$SYSBOX_NAME
    if ! { mkdir -p "$MEMCG_V1" && echo $$ >"$MEMCG_V1/cgroup.procs"; }; then
        MEMCG_SETUP="the memory controller is on cgroup v1 and $MEMCG_V1 cannot be entered"
        rmdir "$MEMCG_V1" 2>/dev/null
        MEMCG_V1=
        return 1
    fi
    MEMCG_SETUP="the memory controller is on cgroup v1: the container runs in $MEMCG_V1"
}
memcg_v1_leave() {
    [ -n "$MEMCG_V1" ] || return 0
    local try
    echo $$ >/sys/fs/cgroup/memory/cgroup.procs
    # The container's last processes may still be leaving it.
    for try in $(seq 50); do
        find "$MEMCG_V1" -depth -type d -exec rmdir {} + 2>/dev/null
        [ -d "$MEMCG_V1" ] || return 0
        sleep 0.1
    done
    echo "could not remove $MEMCG_V1" >&2
}

# Boots the container (with SYSBOX_BIND_RO as set by the caller), leaving BOOT_SECONDS.
# sysbox boot can exit early when it takes a short-lived child of systemd-nspawn for the container's
# PID 1 (its /proc/PID/ns/pid is gone when read, and set -e ends the script): stop and boot again.
sysbox_boot() {
    local t1 try
    for try in 1 2 3; do
        t1=$SECONDS
        "$SYSBOX" boot >"$WORK/boot.log" 2>&1 && break
        cat "$WORK/boot.log"
        "$SYSBOX" stop >/dev/null 2>&1
        [ $try -lt 3 ] || return 1
        echo "boot attempt $try failed, trying again"
    done
    tail -1 "$WORK/boot.log"
    BOOT_SECONDS=$((SECONDS - t1))
    # systemd decides at start which controllers it can use: it starts over (daemon-reexec) to take it up.
    if [ -n "$MEMCG_V1" ]; then
        ct mount -o remount,bind,rw /sys/fs/cgroup/memory && ct systemctl daemon-reexec ||
            bad "cannot make /sys/fs/cgroup/memory writable for the container's systemd"
    fi
}

ct() {
    "$SYSBOX" exec "$@"
}

# show UNIT PROPERTY: the property's value in the container's systemd.
show() {
    ct systemctl show -p "$2" --value "$1"
}

# Polls "$@" (in the container) every 0.2 s until it succeeds, for up to $WAIT seconds.
wait_for() {
    local deadline=$((SECONDS + WAIT))
    until ct "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.2
    done
}
