#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrack's packages, built from this tree as the distributions build them, once: the .deb files by
# dpkg-buildpackage -us -uc -b (debian/), the RPMs by rpmbuild -bb (packaging/memstrack.spec), both
# through scripts/build-packages into WORK/out (integration/test-package-install.sh installs the .deb
# files from there). Then:
#   versions  meson.build, debian/changelog and the spec name the same upstream version
#   lintian   no error, and no warning that debian/*.lintian-overrides does not justify
#   files     each RPM holds the files, with the same modes, of the .deb of the same name (rpm -qlp,
#             dpkg-deb -c), where each distribution's conventions put them (below)
#   heap      the spec's heap subpackage is there by default as in debian/control, and goes with
#             --without heap
# The unit tests are not run inside the package builds (--no-check): this build ran them already.
# MEMSTRACK_PACKAGE_REUSE=1 skips the build where WORK/out has packages, to chase a failure.
# Skips (77) without dpkg-buildpackage, rpmbuild or lintian (scripts/deps installs them).
#
# Usage: test-package-build.sh SOURCE_ROOT WORK_DIR
set -uo pipefail

SRC=${1:?source root}
WORK=${2:?work dir}
OUT=$WORK/out

for p in dpkg-buildpackage rpmbuild rpmspec lintian; do
    command -v "$p" >/dev/null || { echo "SKIP: no $p (scripts/deps installs it)" >&2; exit 77; }
done

# shellcheck source=case-lib.sh
. "$(dirname "$0")/case-lib.sh"

# The packages every build makes, by name, in both formats.
PACKAGES=(memstrack memstrack-client memstrack-metrics memstrack-heap)

test_build() {
    local p
    # MEMSTRACK_PACKAGE_REUSE=1 checks the packages of the last run again, to chase a failure.
    if [ -n "${MEMSTRACK_PACKAGE_REUSE:-}" ] && [ -f "$(deb_of memstrack)" ] && [ -f "$(rpm_of memstrack)" ]; then
        echo "  reusing the packages in $OUT (MEMSTRACK_PACKAGE_REUSE)"
        return 0
    fi
    rm -rf "$WORK"
    mkdir -p "$WORK"
    if ! "$SRC/scripts/build-packages" --no-check --out "$OUT" >"$WORK/build.log" 2>&1; then
        tail -n 40 "$WORK/build.log" >&2
        bad "scripts/build-packages failed (whole log: $WORK/build.log)"
        return
    fi
    for p in "${PACKAGES[@]}"; do
        [ -f "$(deb_of "$p")" ] || bad "no .deb of $p in $OUT/deb" || return
        [ -f "$(rpm_of "$p")" ] || bad "no RPM of $p in $OUT/rpm/RPMS" || return
    done
    echo "  built: $(cd "$OUT" && ls deb/*.deb rpm/RPMS/*/*.rpm | tr '\n' ' ')"
}

deb_of() {
    ls "$OUT"/deb/"$1"_*.deb 2>/dev/null | head -n 1
}

rpm_of() {
    ls "$OUT"/rpm/RPMS/*/"$1"-[0-9]*.rpm 2>/dev/null | head -n 1
}

test_versions() {
    local meson deb spec
    meson=$(sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$SRC/meson.build" | head -n 1)
    deb=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
    spec=$(sed -n 's/^Version: *//p' "$SRC/packaging/memstrack.spec")
    [ -n "$meson" ] && [ "${deb%-*}" = "$meson" ] && [ "$spec" = "$meson" ] ||
        bad "versions disagree: meson.build '$meson', debian/changelog '$deb', memstrack.spec '$spec'" || return
    [ "$(dpkg-deb -f "$(deb_of memstrack)" Version)" = "$deb" ] ||
        bad "the .deb is not version $deb" || return
    echo "  $meson (Debian $deb)"
}

test_lintian() {
    local root=()
    [ "$(id -u)" -ne 0 ] || root=(--allow-root)
    # --show-overrides puts what the overrides hide in the log (O:, with their reasons from
    # debian/*.lintian-overrides as N: lines), and would count them for --fail-on: an error (E:) or a
    # warning (W:) left is what fails.
    if ! lintian "${root[@]}" --fail-on none --show-overrides --display-level '>=warning' \
            "$OUT"/deb/*.changes >"$WORK/lintian.log" 2>&1; then
        cat "$WORK/lintian.log" >&2
        bad "lintian failed"
        return
    fi
    sed 's/^/  /' "$WORK/lintian.log"
    ! grep -q '^[EW]: ' "$WORK/lintian.log" || bad "lintian reports errors or unjustified warnings" || return
    grep -q '^O: ' "$WORK/lintian.log" || bad "lintian shows no override: were they applied?" || return
    echo "  no error, no unjustified warning"
}

# "MODE PATH" of every file that is not a directory, in the layout the RPM uses: Debian's bookworm
# packages put units below /lib (debhelper 13 looks there; merged /usr makes it the same place) and zsh
# completions in vendor-completions (site-functions is the local administrator's on Debian); man pages
# are compressed where each build compresses them; documentation, licenses, lintian's overrides and
# build-id links follow each distribution's own layout and are left out.
# Each distribution's conventions, not differences: Debian's multiarch libdir against Fedora's lib64, and
# shared objects 0644 (dh_fixperms) against 0755 (rpm generates a library's dependencies only from
# executable ELF files).
normalize() {
    sed -E -e 's#^([^ ]+) /lib/systemd/system/#\1 /usr/lib/systemd/system/#' \
        -e 's#^([^ ]+) /usr/lib/[a-z0-9_]+-linux-gnu/#\1 /usr/LIBDIR/#' \
        -e 's#^([^ ]+) /usr/lib64/#\1 /usr/LIBDIR/#' \
        -e 's#^-rwxr-xr-x (/usr/LIBDIR/.*\.so)$#-rw-r--r-- \1#' \
        -e 's#^([^ ]+) /usr/share/zsh/vendor-completions/#\1 /usr/share/zsh/site-functions/#' \
        -e 's#^([^ ]+ /usr/share/man/.*)\.gz$#\1#' |
        grep -Ev '^[^ ]+ /usr/(share/doc|share/licenses|share/lintian|lib/\.build-id)/' | sort
}

deb_files() {
    dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $1, $6 }' | normalize
}

rpm_files() {
    rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" 2>/dev/null | awk '$1 !~ /^d/' | normalize
}

test_files() {
    local p n total=0 ok=0
    for p in "${PACKAGES[@]}"; do
        deb_files "$(deb_of "$p")" >"$WORK/$p.deb.files"
        rpm_files "$(rpm_of "$p")" >"$WORK/$p.rpm.files"
        n=$(wc -l <"$WORK/$p.deb.files")
        total=$((total + n))
        if [ "$n" -eq 0 ]; then
            bad "$p: no files in the .deb"
        elif ! diff -u "$WORK/$p.deb.files" "$WORK/$p.rpm.files" >"$WORK/$p.diff"; then
            bad "$p: the RPM (+) and the .deb (-) differ:"$'\n'"$(cat "$WORK/$p.diff")"
        else
            ok=$((ok + 1))
            echo "  $p: the same $n files"
        fi
    done
    [ "$ok" -eq "${#PACKAGES[@]}" ] || return 1
    # What meson installs, all of it in some package (dh_missing and rpm's check-files fail the builds
    # otherwise): the daemon, the client, the exporter, their units and the rest.
    [ "$total" -ge 19 ] || bad "only $total files in all packages"
}

# The heap library's subpackage: there by default as in debian/control, gone --without heap (rpmspec
# parses the spec, it builds nothing).
test_heap() {
    local load=(--define "_sourcedir $SRC/units") plain without
    [ -n "$(rpm --eval '%{?_unitdir}')" ] || load+=(--load "$SRC/packaging/fedora-on-debian.macros")
    plain=$(rpmspec "${load[@]}" -q --qf '%{NAME}\n' "$SRC/packaging/memstrack.spec" 2>&1 | sort | tr '\n' ' ')
    without=$(rpmspec "${load[@]}" --without heap -q --qf '%{NAME}\n' "$SRC/packaging/memstrack.spec" 2>&1 |
              sort | tr '\n' ' ')
    [ "$plain" = "memstrack memstrack-client memstrack-heap memstrack-metrics " ] ||
        bad "the spec's packages are: $plain" || return
    [ "$without" = "memstrack memstrack-client memstrack-metrics " ] ||
        bad "--without heap the spec's packages are: $without" || return
    grep -q '^Package: memstrack-heap$' "$SRC/debian/control" ||
        bad "debian/control has no memstrack-heap" || return
    echo "  heap subpackage by default, as in debian/control; --without heap leaves it out"
}

run_case test_build
if [ "$fail" -eq 0 ]; then
    run_case test_versions
    run_case test_lintian
    run_case test_files
fi
run_case test_heap

cases_report package-build
