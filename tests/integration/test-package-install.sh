#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrack's .deb files installed as a user installs them, on a machine that never saw the source: a
# Debian container booted with systemd as PID 1 (shared/tools/sysbox) gets only the three packages
# and `apt install ./memstrack*.deb`, which takes the libraries they depend on from a Debian archive.
#   install   apt installs them and what they depend on, none of it from the build
#   running   memstrackd.service and its socket enabled and running after the installation, the group
#             memstrack made, memstrackd-metrics.socket installed but not enabled
#   member    memstrackctl status answers a member of the group memstrack, and refuses another user
#   metrics   memstrackd-metrics.socket, once enabled, serves memstrack_up 1
#   remove    apt remove stops every unit and keeps the history
#   purge     apt purge leaves nothing behind: the file tree of the container
#             is what it was before the installation, but for the group memstrack and systemd's
#             /var/lib/private (both kept on purpose, below)
#   upgrade   from the previous version's packages: the daemon restarted on the new version keeps the
#             history the old one recorded in its state directory
#
# The container has no network (sysbox boots it with a private one), so its archive is a local one:
# the host's apt, told the container's installed packages, downloads from Debian's archive what
# installing the three packages needs into a directory that dpkg-scanpackages makes a repository, the
# container's only apt source. The previous version's packages are the same ones with a lower version
# (0.1.0-0 for 0.1.0-1), made with dpkg-deb: the maintainer scripts and the state directory are what
# an upgrade exercises, and no earlier release has others.
#
# The packages come from WORK/out/deb, where test-package-build.sh (run before this one) puts them,
# else scripts/build-packages --deb builds them there. Needs root, perf events, the kmem tracepoints
# and the host's access to Debian's archive; skips (77) otherwise.
#
# Usage: test-package-install.sh SYSBOX SOURCE_ROOT WORK_DIR
set -uo pipefail

SYSBOX=${1:?sysbox}
SRC=${2:?source root}
WORK=${3:?work dir}
DEBS=$WORK/out/deb
T=$WORK/install             # this test's files
CT_DIR=/opt/memstrack-test  # the same, inside the container
WAIT=30                     # seconds any awaited state may take; a bound, not a measurement

# shellcheck source=sysbox-lib.sh
. "$(dirname "$0")/sysbox-lib.sh"

sysbox_require_host
[ -d /sys/kernel/tracing/events/kmem/mm_page_alloc ] || skip "no kmem tracepoints in tracefs"
for p in dpkg-deb dpkg-scanpackages apt-get; do
    command -v "$p" >/dev/null || skip "no $p (scripts/deps installs dpkg-dev)"
done

if ! ls "$DEBS"/memstrack_*.deb >/dev/null 2>&1; then
    echo "building the .deb files into $WORK/out (no package-build run before)"
    "$SRC/scripts/build-packages" --deb --no-check --out "$WORK/out" >"$WORK/build.log" 2>&1 ||
        { tail -n 40 "$WORK/build.log"; echo "scripts/build-packages failed" >&2; exit 1; }
fi

# The container (its name and capabilities: sysbox-lib.sh) with the base image alone (systemd, dbus, apt:
# nothing of ours).
sysbox_container memstrack-pkg
export SYSBOX_PACKAGES=
unset SYSBOX_BIND_RO SYSBOX_BIND

# apt in the container, without questions, bounded.
ct_apt() {
    ct env DEBIAN_FRONTEND=noninteractive timeout 300 "$@"
}

# Every path in the container, but for what apt, dpkg, the journal and the kernel change whatever is
# installed: their own records (which packages were there, logs, caches), and the pseudo file systems.
# Everything a package of ours or its scripts could leave is in what remains: /etc, /usr, /lib,
# /var/lib (deb-systemd-helper's records, state directories), /run.
snapshot() {
    ct sh -c 'find / -xdev -print; find /run -print' |
        grep -Ev '^/(proc|sys|dev|tmp|var/tmp|home)(/|$)' |
        grep -Ev '^/var/(log|cache/apt|cache/debconf|cache/ldconfig|lib/apt|lib/dpkg)(/|$)' |
        grep -Ev '^/run/(systemd|user|lock|log|mount|dbus)(/|$)' |
        grep -Ev '^/var/lib/systemd/(catalog|random-seed|timers|timesync|coredump)(/|$)' |
        sort -u >"$T/$1"
}

# The version of a .deb, and the previous version's one.
VERSION=$(dpkg-deb -f "$(ls "$DEBS"/memstrack_*.deb | head -n 1)" Version)
PREVIOUS=${VERSION%-*}-0

# The packages of version $PREVIOUS, from those of $VERSION: control's Version and the = dependencies
# between them changed, nothing else.
make_previous() {
    local deb dir
    rm -rf "$T/prev" "$T/unpack"
    mkdir -p "$T/prev" "$T/unpack"
    for deb in "$DEBS"/memstrack*.deb; do
        dir=$T/unpack/$(basename "$deb" .deb)
        dpkg-deb -R "$deb" "$dir" || return 1
        sed -i -e "s/^Version: .*/Version: $PREVIOUS/" -e "s/(= $VERSION)/(= $PREVIOUS)/g" "$dir/DEBIAN/control"
        dpkg-deb --root-owner-group -b "$dir" "$T/prev/" >/dev/null || return 1
    done
}

# The local archive: what apt on the host, given the container's dpkg status, downloads to install the
# packages there (as `apt install ./memstrack*.deb` would in the container), from Debian's archive.
make_archive() {
    rm -rf "$T/archive" "$T/repo"
    mkdir -p "$T/archive/partial" "$T/repo"
    ct cat /var/lib/dpkg/status >"$T/ct-status" || return 1
    download() {
        (
            cd "$DEBS" &&
                apt-get -q -y --download-only -o Debug::NoLocking=1 -o Dir::State::status="$T/ct-status" \
                    -o Dir::Cache::archives="$T/archive/" install ./memstrack*.deb
        ) >"$T/download.log" 2>&1
    }
    # Once more after apt-get update, should the host's package lists be missing or stale.
    download || { apt-get update -qq >/dev/null 2>&1; download; } || { cat "$T/download.log" >&2; return 1; }
    cp "$T"/archive/*.deb "$T/repo/" 2>/dev/null
    (cd "$T/repo" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null) || return 1
}

setup() {
    rm -rf "$T"
    mkdir -p "$T"
    ls "$DEBS"/memstrack*.deb >"$T/debs" || return 1
    # One .deb per binary package debian/control declares.
    local want
    want=$(grep -c '^Package: ' "$SRC/debian/control")
    [ "$(wc -l <"$T/debs")" -eq "$want" ] ||
        { bad "expected $want packages in $DEBS: $(cat "$T/debs")"; return 1; }
    dpkg --compare-versions "$PREVIOUS" lt "$VERSION" || return 1
    make_previous || { bad "cannot make the $PREVIOUS packages"; return 1; }
    sysbox_boot || return 1
    make_archive || { bad "cannot download the dependencies from Debian's archive"; return 1; }
    mkdir -p "$T/stage/debs"
    cp "$DEBS"/memstrack*.deb "$T/stage/debs/"
    cp -r "$T/prev" "$T/repo" "$T/stage/"
    "$SYSBOX" install "$T/stage" /opt >/dev/null &&
        ct sh -c "rm -rf $CT_DIR && mv /opt/stage $CT_DIR" || return 1
    # The local archive, the container's only source.
    ct sh -c "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*
        echo 'deb [trusted=yes] file:$CT_DIR/repo ./' >/etc/apt/sources.list.d/memstrack-test.list" &&
        ct_apt apt-get update -q >"$T/update.log" 2>&1 || { cat "$T/update.log"; return 1; }
    echo "  $(ls "$T/repo" | grep -c '\.deb$') packages from Debian's archive for the container: $(ls "$T/repo" |
        sed -n 's/_.*//p' | tr '\n' ' ')"
}

installed_version() {
    ct dpkg-query -W -f '${Status} ${Version}\n' "$1" 2>/dev/null
}

test_install() {
    local p
    # The archive has Debian's packages only: ours come from the .deb files alone.
    ! ls "$T/repo" | grep -q '^memstrack' || bad "the local archive holds memstrack packages" || return
    ct_apt sh -c "cd $CT_DIR/debs && apt install -y ./memstrack*.deb" >"$T/install.log" 2>&1 ||
        { cat "$T/install.log" >&2; bad "apt install ./memstrack*.deb failed"; return 1; }
    for p in memstrack memstrack-client memstrack-metrics memstrack-heap; do
        [ "$(installed_version $p)" = "install ok installed $VERSION" ] ||
            bad "$p: $(installed_version $p), expected $VERSION installed" || return
    done
    # Each library the binaries link was installed with them, from the archive.
    ct sh -c 'ldd /usr/sbin/memstrackd /usr/bin/memstrackctl /usr/sbin/memstrack-metrics' >"$T/ldd" 2>&1 ||
        bad "ldd failed: $(cat "$T/ldd")" || return
    ! grep -q 'not found' "$T/ldd" || bad "libraries not found: $(grep 'not found' "$T/ldd")" || return
    echo "  $(grep -c '^Setting up' "$T/install.log") packages set up: $(sed -n 's/^Setting up \([^ ]*\) .*/\1/p' "$T/install.log" | tr '\n' ' ')"
}

# memstrackctl record from the packages: the heap library the client recommends, preloaded into a command
# whose one known allocation must show in the report.
test_record() {
    ct sh -c 'memstrackctl record -- python3 -c "import sys; b = bytearray(4 << 20); sys.exit(0)" 2>&1 ||
              memstrackctl record -- /bin/sh -c "exit 0" 2>&1' >"$T/record.log" 2>&1 ||
        { cat "$T/record.log" >&2; bad "memstrackctl record failed"; return 1; }
    grep -qi "heap" "$T/record.log" || bad "record printed no heap report: $(head -c 400 "$T/record.log")" || return
    echo "  memstrackctl record ran a command with the packaged heap library"
}

test_running() {
    local u
    for u in memstrackd.service memstrackd.socket; do
        [ "$(ct systemctl is-enabled $u)" = enabled ] || bad "$u is $(ct systemctl is-enabled $u), not enabled" || return
        wait_for systemctl is-active --quiet $u || bad "$u is $(ct systemctl is-active $u), not active" || return
    done
    [ "$(show memstrackd.service NRestarts)" = 0 ] || bad "memstrackd.service restarted" || return
    ct getent group memstrack >/dev/null || bad "no group memstrack" || return
    [ "$(ct stat -c '%G %a' /run/memstrack/io.memstrack)" = "memstrack 660" ] ||
        bad "the socket is $(ct stat -c '%G %a' /run/memstrack/io.memstrack), expected group memstrack, 660" || return
    [ "$(ct systemctl is-enabled memstrackd-metrics.socket)" = disabled ] ||
        bad "memstrackd-metrics.socket is $(ct systemctl is-enabled memstrackd-metrics.socket), not disabled" || return
    ! ct systemctl is-active --quiet memstrackd-metrics.socket || bad "memstrackd-metrics.socket runs" || return
    echo "  memstrackd.service and .socket enabled and active, the metrics socket installed but off"
}

test_member() {
    local out refused
    ct sh -c 'useradd -m -G memstrack sre && useradd -m outsider' || return 1
    out=$(ct runuser -u sre -- memstrackctl status 2>&1) || bad "memstrackctl status as sre: $out" || return
    grep -q '^ *Backend: ' <<<"$out" || bad "no Backend line in: $out" || return
    grep -q "(memstrackd ${VERSION%-*})" <<<"$out" || bad "memstrackd is not version ${VERSION%-*}: $out" || return
    refused=$(ct runuser -u outsider -- memstrackctl status 2>&1) && bad "a user outside the group got: $refused" && return 1
    grep -q 'Permission denied' <<<"$refused" || bad "outsider refused without saying why: $refused" || return
    echo "  sre (group memstrack): $(grep 'Backend:' <<<"$out" | sed 's/^ *//'); outsider: $refused"
}

# One GET /metrics on loopback in the container (bash's /dev/tcp: no curl there).
scrape() {
    ct bash -c 'exec 3<>/dev/tcp/127.0.0.1/19773 && printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && cat <&3'
}

test_metrics() {
    ct systemctl enable --now memstrackd-metrics.socket >/dev/null 2>&1 || bad "cannot enable memstrackd-metrics.socket" || return
    scrape >"$T/metrics" 2>&1 || bad "no answer on 127.0.0.1:19773: $(cat "$T/metrics")" || return
    grep -q '^memstrack_up 1' "$T/metrics" || bad "memstrack_up is not 1: $(head -20 "$T/metrics")" || return
    # Left enabled: the purge must undo an administrator's enabling too.
    echo "  memstrack_up 1 on 127.0.0.1:19773, $(grep -c '^memstrack_' "$T/metrics") samples"
}

# Removal, not purge: the units stopped and gone, the history kept for a later installation.
test_remove() {
    ct_apt apt-get remove -y memstrack memstrack-client memstrack-metrics memstrack-heap >"$T/remove.log" 2>&1 ||
        { cat "$T/remove.log" >&2; bad "apt-get remove failed"; return 1; }
    ! ct systemctl is-active --quiet memstrackd.service memstrackd.socket memstrackd-metrics.socket memstrackd-metrics.service ||
        bad "a memstrack unit still runs" || return
    ct test ! -e /run/memstrack || bad "/run/memstrack is left: $(ct ls -la /run/memstrack)" || return
    ct test -s /var/lib/private/memstrack/history || bad "the removal took the history away" || return
    echo "  stopped; $(ct dpkg-query -W -f '${Package}=${db:Status-Abbrev}' memstrack memstrack-client memstrack-metrics memstrack-heap 2>/dev/null); the history kept"
}

test_purge() {
    local p leftover
    # What the removal left configured (conffiles, state): a package without conffiles is already gone,
    # and apt cannot name one it has no record of.
    local configured
    configured=$(ct dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' \
                     memstrack memstrack-client memstrack-metrics memstrack-heap 2>/dev/null | awk '$1 == "rc" { print $2 }')
    [ -n "$configured" ] || bad "nothing left configured after the removal" || return
    ct_apt apt-get purge -y $configured >"$T/purge.log" 2>&1 ||
        { cat "$T/purge.log" >&2; bad "apt-get purge failed"; return 1; }
    for p in memstrack memstrack-client memstrack-metrics memstrack-heap; do
        [ -z "$(installed_version $p)" ] || bad "$p after the purge: $(installed_version $p)" || return
    done
    ! ct systemctl is-active --quiet memstrackd.service memstrackd.socket memstrackd-metrics.socket memstrackd-metrics.service ||
        bad "a memstrack unit still runs" || return
    ct test ! -e /var/lib/private/memstrack -a ! -e /var/lib/memstrack -a ! -e /run/memstrack ||
        bad "the state directory or /run/memstrack is left: $(ct ls -d /var/lib/private/memstrack /var/lib/memstrack /run/memstrack 2>/dev/null)" || return
    [ -z "$(ct systemctl list-unit-files --no-legend 'memstrack*')" ] ||
        bad "unit files left: $(ct systemctl list-unit-files --no-legend 'memstrack*')" || return
    # The users this test added, and the libraries apt installed for the packages.
    ct sh -c 'userdel -r sre && userdel -r outsider' 2>/dev/null
    ct_apt apt-get autoremove --purge -y >"$T/autoremove.log" 2>&1 || { cat "$T/autoremove.log" >&2; return 1; }
    snapshot after
    # Kept on purpose: systemd made /var/lib/private for the service's DynamicUser= state directory and
    # owns it (other such services share it); the group stays, as dh_installsysusers keeps groups (files
    # outside the packages may still belong to it; Debian does not reuse a removed group's id safely).
    # The shadow tools' backups (/etc/subuid- and the like) come from adding and removing the test's
    # users.
    leftover=$(comm -13 "$T/before" "$T/after" | grep -vx '/var/lib/private' |
        grep -Evx '/etc/(passwd|group|shadow|gshadow|subuid|subgid)-')
    [ -z "$leftover" ] || bad "left behind after the purge: $leftover" || return
    leftover=$(comm -23 "$T/before" "$T/after")
    [ -z "$leftover" ] || bad "removed by the purge, though there before the installation: $leftover" || return
    ct getent group memstrack >/dev/null || bad "the group memstrack was removed" || return
    echo "  nothing left but the group memstrack and systemd's /var/lib/private ($(wc -l <"$T/before") paths compared)"
}

# The history: every point's timestamp, oldest first (machine total, 1 s resolution).
history_times() {
    ct memstrackctl --json=short history | python3 -c 'import json, sys
print("\n".join(str(p["timestampUsec"]) for p in json.load(sys.stdin)["points"]))'
}

history_has_points() {
    [ "$(history_times | wc -l)" -ge "$1" ]
}

test_upgrade() {
    local pid0 pid1 first out
    ct_apt sh -c "cd $CT_DIR/prev && apt install -y ./memstrack*.deb" >"$T/install-prev.log" 2>&1 ||
        { cat "$T/install-prev.log" >&2; bad "apt install of $PREVIOUS failed"; return 1; }
    [ "$(installed_version memstrack)" = "install ok installed $PREVIOUS" ] ||
        bad "memstrack: $(installed_version memstrack), expected $PREVIOUS" || return
    wait_for systemctl is-active --quiet memstrackd.service || bad "memstrackd.service of $PREVIOUS is not active" || return
    # Three 1 s buckets recorded by the old daemon (each poll asks it; a bound, not a time).
    local deadline=$((SECONDS + WAIT))
    until history_has_points 3; do
        [ $SECONDS -lt $deadline ] || bad "the daemon of $PREVIOUS recorded no history: $(history_times | tr '\n' ' ')" || return
        sleep 0.5
    done
    first=$(history_times | sed -n 1p)
    pid0=$(show memstrackd.service MainPID)

    ct_apt sh -c "cd $CT_DIR/debs && apt install -y ./memstrack*.deb" >"$T/upgrade.log" 2>&1 ||
        { cat "$T/upgrade.log" >&2; bad "apt install of $VERSION over $PREVIOUS failed"; return 1; }
    grep -q "Unpacking memstrack ($VERSION) over ($PREVIOUS)" "$T/upgrade.log" ||
        bad "not an upgrade from $PREVIOUS: $(grep -i unpacking "$T/upgrade.log")" || return
    [ "$(installed_version memstrack)" = "install ok installed $VERSION" ] ||
        bad "memstrack: $(installed_version memstrack), expected $VERSION" || return
    wait_for systemctl is-active --quiet memstrackd.service || bad "memstrackd.service is not active after the upgrade" || return
    [ "$(ct systemctl is-enabled memstrackd.service)" = enabled ] || bad "memstrackd.service not enabled after the upgrade" || return
    pid1=$(show memstrackd.service MainPID)
    [ "$pid1" != "$pid0" ] && [ "$pid1" != 0 ] || bad "memstrackd was not restarted by the upgrade (MainPID $pid0, $pid1)" || return
    ct test -s /var/lib/private/memstrack/history || bad "no history file in the state directory" || return
    out=$(history_times)
    grep -qx "$first" <<<"$out" || bad "the history lost the old daemon's first bucket ($first): $(tr '\n' ' ' <<<"$out")" || return
    echo "  $PREVIOUS -> $VERSION: memstrackd restarted ($pid0 -> $pid1), its history still starts at the old daemon's $first"
}

if ! setup; then
    echo "setup failed" >&2
    exit 1
fi
snapshot before
run_case test_install
run_case test_running
run_case test_member
run_case test_metrics
run_case test_record
run_case test_remove
run_case test_purge
run_case test_upgrade

cases_report package-install
