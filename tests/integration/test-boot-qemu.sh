#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Module accounting on a real distribution kernel, from the first module the initramfs loads: Debian's
# linux-image-amd64 booted in qemu with an initramfs that dracut builds with our module (units/dracut),
# on a small Debian root made with mmdebstrap. Reads the serial console and checks:
#   - under rd.memdebug=5 the initramfs prints module_summary and module_top at pre-pivot, both with
#     dracut's own init and with systemd as the initramfs's init;
#   - the modules it names are modules the guest kernel really loaded (its /proc/modules, printed by
#     the real root's init), at least two of them with pages and peaks above zero, among them the
#     driver of the root disk (virtio_blk) when the kernel has it as a module;
#   - in the real root, memstrackd serves the snapshot the initramfs left (report --boot, equal to
#     `memstrackctl report --from` of the file) under
#     /run/memstrack/ and shows the same modules.
# Usage: test-boot-qemu.sh BUILD_DIR WORK_DIR
# The Debian root is cached (MEMSTRACK_BOOT_CACHE, default /var/cache/memstrack/boot-test) and made
# again after a week, so the kernel is whatever the mirror has now. Skips (77) without root, without
# qemu, or when the mirror cannot be reached.
set -uo pipefail

build=$(realpath "$1")
work=$2
cache=${MEMSTRACK_BOOT_CACHE:-/var/cache/memstrack/boot-test}
suite=${MEMSTRACK_BOOT_SUITE:-bookworm}
boot_timeout=${MEMSTRACK_BOOT_TIMEOUT:-420}
# Which initramfs: dracut's own shell init ("classic"), and systemd as its init (the default where the
# root has systemd, as on Debian, Fedora and RHEL). One boot each.
variants=${MEMSTRACK_BOOT_INITRDS:-classic systemd}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
log() { echo "[$(date +%T)] $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root (mmdebstrap, chroot, mounts)"
qemu=$(command -v qemu-system-x86_64) || skip "no qemu-system-x86_64 (scripts/deps installs qemu-system-x86)"
command -v mmdebstrap >/dev/null || skip "no mmdebstrap (scripts/deps installs it)"
command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4"
[ "$(uname -m)" = x86_64 ] || skip "the guest is amd64; this is $(uname -m)"

start_time=$(date +%s)

# ---- The Debian root, cached --------------------------------------------------------------------------
# Only the kernel, dracut, systemd (for a systemd initramfs), udev and the libraries our binaries link: the
# packages of what ldd finds, so a new library (libprotobuf-c for pprof once) cannot be missed in the
# guest. The dracut settings go in before the kernel, so the kernel's own initramfs (built when it is
# installed) is small and quick too.
libraries=$(for b in "$build/daemon/memstrackd" "$build/client/memstrackctl"; do ldd "$b"; done |
        awk '$3 ~ /^\// { print $3 }' | sort -u | while read -r lib; do
                dpkg -S "$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null ||
                        echo "NONE: $lib"
        done | cut -d: -f1 | sort -u | paste -sd,)
case $libraries in
        *NONE*|"") fail "cannot tell which Debian packages hold the libraries memstrackd and memstrackctl link: $libraries" ;;
esac
packages=linux-image-amd64,dracut,systemd,udev,kmod,$libraries
dracut_conf='hostonly="no"
hostonly_cmdline="no"
compress="cat"
drivers=" virtio_pci virtio_blk virtio_net ext4 "'
key=$(printf '%s\n' "$suite" "$packages" "$dracut_conf" | sha256sum | cut -c1-16)
base=$cache/root-$key
mkdir -p "$cache"
if [ -d "$base" ] && [ -z "$(find "$base/.complete" -mtime +7 2>/dev/null)" ] && [ -e "$base/.complete" ]; then
        log "cached Debian root $base"
else
        log "making the Debian root with mmdebstrap ($suite, $packages)"
        rm -rf --one-file-system "$base.new"
        printf '%s\n' "$dracut_conf" >"$cache/boot-test.conf"
        if ! mmdebstrap --mode=root --variant=minbase --include="$packages" \
                --essential-hook="mkdir -p \"\$1/etc/dracut.conf.d\" && cp '$cache/boot-test.conf' \"\$1/etc/dracut.conf.d/10-boot-test.conf\"" \
                "$suite" "$base.new" >"$cache/mmdebstrap.log" 2>&1; then
                tail -20 "$cache/mmdebstrap.log"
                rm -rf --one-file-system "$base.new"
                if grep -qE 'Failed to fetch|Could not resolve|Temporary failure|Unable to connect|Network is unreachable' \
                        "$cache/mmdebstrap.log"; then
                        # A week-old root still boots: better than nothing.
                        [ -e "$base/.complete" ] || skip "the Debian mirror cannot be reached"
                        log "the Debian mirror cannot be reached: keeping the older root"
                else
                        fail "mmdebstrap failed"
                fi
        else
                touch "$base.new/.complete"
                rm -rf --one-file-system "$base"
                mv "$base.new" "$base"
        fi
        # Older roots (other keys) are dead weight.
        find "$cache" -maxdepth 1 -name 'root-*' ! -name "root-$key" -exec rm -rf {} +
fi
kvers=("$base"/usr/lib/modules/*)
[ ${#kvers[@]} -eq 1 ] && [ -d "${kvers[0]}" ] || fail "expected one kernel in $base/usr/lib/modules: ${kvers[*]}"
kver=$(basename "${kvers[0]}")
log "guest kernel $kver"

# ---- This build, installed over the cached root (an overlay: the cache stays as it was) --------------
# A run killed in the middle may have left the overlay, or /dev and /sys bound into it: unmount them all
# before anything is removed, and never remove across a file system boundary.
if [ -d "$work" ]; then
        findmnt -rn -o TARGET | grep -F "$(realpath "$work")/" | sort -r | while read -r m; do
                umount -l "$m"
        done
fi
rm -rf --one-file-system "$work"
mkdir -p "$work/upper" "$work/ovl" "$work/root"
mounts=()
cleanup() {
        local i
        for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
                umount -l "${mounts[i]}" 2>/dev/null
        done
}
trap cleanup EXIT
mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/ovl" "$work/root" ||
        skip "cannot mount an overlay on $work"
mounts+=("$work/root")
root=$work/root
DESTDIR=$root meson install -C "$build" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
        { cat "$work/install.log"; fail "meson install into the guest root failed"; }
[ -x "$root/usr/lib/dracut/modules.d/99memstrackd/module-setup.sh" ] ||
        fail "meson install put no dracut module in /usr/lib/dracut/modules.d/99memstrackd"
ctl=$(cd "$root" && find usr -path '*/bin/memstrackctl' | head -1)
[ -n "$ctl" ] || fail "no memstrackctl in the installed tree"
daemon=$(cd "$root" && find usr -path '*/sbin/memstrackd' | head -1)
[ -n "$daemon" ] || fail "no memstrackd in the installed tree"

# The real root's init: what the kernel loaded, and the initramfs snapshot as the real root's memstrackd
# serves it (BootPhase, report --boot), which must be the file's own report; then power off.
cat >"$root/sbin/boot-test-init" <<EOF
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "==== boot-test /proc/modules ===="
cat /proc/modules
echo "==== boot-test /proc/modules END ===="
echo "==== boot-test snapshot ===="
ls -l /run/memstrack/
/$daemon --foreground --group= >/run/boot-test-memstrackd.log 2>&1 &
i=0
until /$ctl status >/dev/null 2>&1 || [ \$i -ge 600 ]; do sleep 0.2; i=\$((i + 1)); done
boot=\$(/$ctl report --boot --format=module_summary)
rc=\$?
file=\$(/$ctl report --from=/run/memstrack/initramfs.snapshot --format=module_summary)
[ "\$boot" = "\$file" ] || { echo "report --boot differs from the file's report:"; echo "\$file"; rc=1; }
[ \$rc = 0 ] || tail -5 /run/boot-test-memstrackd.log
echo "\$boot"
echo "==== boot-test snapshot END rc=\$rc ===="
sync
echo o >/proc/sysrq-trigger
sleep 60
EOF
chmod 0755 "$root/sbin/boot-test-init"

# ---- The initramfs ------------------------------------------------------------------------------------
for m in proc sys dev; do
        mkdir -p "$root/$m"
done
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount --rbind /sys "$root/sys" && mounts+=("$root/sys")
mount --rbind /dev "$root/dev" && mounts+=("$root/dev")
for variant in $variants; do
        case $variant in
        classic) omit=(--omit "systemd systemd-initrd dracut-systemd") ;;
        systemd) omit=() ;;
        *) fail "MEMSTRACK_BOOT_INITRDS: unknown initramfs '$variant' (classic, systemd)" ;;
        esac
        log "dracut --add memstrackd for $kver ($variant)"
        if ! chroot "$root" dracut --force --add memstrackd "${omit[@]}" --kver "$kver" \
                        "/boot/initramfs-$variant.img" >"$work/dracut-$variant.log" 2>&1; then
                tail -30 "$work/dracut-$variant.log"
                fail "dracut failed"
        fi
        chroot "$root" lsinitrd "/boot/initramfs-$variant.img" >"$work/lsinitrd-$variant.txt" 2>&1
        grep -q 'memstrackd-initrd' "$work/lsinitrd-$variant.txt" || fail "the $variant initramfs has no memstrackd-initrd"
        if [ "$variant" = systemd ]; then
                grep -q 'init -> .*systemd' "$work/lsinitrd-$variant.txt" || fail "the systemd initramfs has another init"
                grep -q 'sysinit.target.wants/memstrackd-initrd.service' "$work/lsinitrd-$variant.txt" ||
                        fail "the systemd initramfs does not start memstrackd-initrd.service"
        else
                ! grep -q 'init -> .*systemd' "$work/lsinitrd-$variant.txt" || fail "the classic initramfs runs systemd"
        fi
        mv "$root/boot/initramfs-$variant.img" "$work/"
done
cp "$root/boot/vmlinuz-$kver" "$work/"
for ((i = ${#mounts[@]} - 1; i >= 1; i--)); do
        umount -l "${mounts[i]}"
done
mounts=("$root")

# ---- The root disk and the boot ----------------------------------------------------------------------
log "root disk image"
rm -f "$work/root.img"
truncate -s 3G "$work/root.img"
mkfs.ext4 -q -F -L bootroot -d "$root" "$work/root.img" >"$work/mkfs.log" 2>&1 ||
        { cat "$work/mkfs.log"; fail "mkfs.ext4 -d failed"; }

# KVM where it works; nested KVM may still refuse the host CPU model at once (qemu aborts before the
# guest runs a single instruction), and then TCG, the software emulator, boots the same guest more slowly.
boot() {
        rm -f "$console_raw"
        timeout "$boot_timeout" "$qemu" "$@" -smp 2 -m 1024 -nographic -no-reboot \
                -kernel "$work/vmlinuz-$kver" -initrd "$work/initramfs-$variant.img" \
                -append "root=/dev/vda rw console=ttyS0 rd.memdebug=5 init=/sbin/boot-test-init panic=-1 rd.shell=0" \
                -drive "file=$work/root.img,format=raw,if=none,id=root" -device virtio-blk-pci,drive=root \
                -netdev user,id=net0 -device virtio-net-pci,netdev=net0 \
                -serial "file:$console_raw" -monitor none -display none </dev/null >"$work/qemu-$variant.log" 2>&1
}
# Whether a KVM guest runs here, as the kernel lab asks it (once a boot of this machine): some hosts
# offer /dev/kvm but stop or hang every guest, which then boots under TCG.
use_kvm=no
kvm=$("$(dirname "$0")/../../scripts/kernel-lab" --kvm-probe "$work/vmlinuz-$kver" 2>&1 | tail -1)
case $kvm in
        kvm) use_kvm=yes ;;
        *) log "no KVM: ${kvm#tcg }" ;;
esac
boot_times=
boot_and_check() {
        boot_start=$(date +%s)
        rc=1
        accel=
        if [ "$use_kvm" = yes ]; then
                accel=kvm
                log "booting with KVM"
                boot -accel kvm -cpu host
                rc=$?
                if [ $rc -ne 0 ] && [ $rc -ne 124 ] && ! [ -s "$console_raw" ]; then
                        log "KVM refused ($(head -1 "$work/qemu-$variant.log")), falling back to TCG"
                        accel=
                        use_kvm=no
                fi
        fi
        if [ -z "$accel" ]; then
                accel=tcg
                log "booting with TCG"
                boot_start=$(date +%s)
                boot -accel tcg -cpu max
                rc=$?
        fi
        boot_end=$(date +%s)
        log "$variant: qemu ($accel) exited with $rc after $((boot_end - boot_start)) s"
        console=$work/console-$variant.txt
        tr -d '\r' <"$console_raw" >"$console"
        [ $rc -ne 124 ] || { tail -40 "$console"; fail "$variant: the guest did not power off within $boot_timeout s"; }

        # The lines between a line starting with $1 and the next starting with $2.
        section() {
                awk -v a="$1" -v b="$2" 'index($0, a) == 1 { on = 1; next } on && index($0, b) == 1 { exit } on' "$console"
        }

        initrd_summary=$(section '======== Report format module_summary: ========' '======== Report format module_summary END')
        initrd_top=$(section '======== Report format module_top: ========' '======== Report format module_top END')
        loaded=$(section '==== boot-test /proc/modules ====' '==== boot-test /proc/modules END' | awk '{print $1}')
        snapshot=$(section '==== boot-test snapshot ====' '==== boot-test snapshot END')

        if [ -z "$initrd_summary" ]; then
                grep -n 'memstrack' "$console" | head -20
                tail -40 "$console"
                fail "$variant: no module_summary report on the console"
        fi
        [ -n "$initrd_top" ] || fail "$variant: rd.memdebug=5 printed no module_top report"
        [ -n "$loaded" ] || { tail -40 "$console"; fail "$variant: the real root printed no /proc/modules"; }
        grep -q '^==== boot-test snapshot END rc=0 ====' "$console" ||
                { echo "$snapshot"; fail "$variant: the real root's memstrackd did not serve the initramfs snapshot (report --boot)"; }

        echo "---- $variant initramfs module_summary"
        echo "$initrd_summary"
        echo "---- loaded modules: $(tr "\n" " " <<<"$loaded")"

        # "Module NAME using 1.2MB (300 pages), peak allocation 1.5MB (380 pages)"
        check_summary() {
                local what=$1 text=$2 name pages peak n=0 names=
                while read -r name pages peak; do
                        # The kernel image, and "[loading]" (pages of a module load whose module was not named yet).
                        case $name in vmlinux | \[*\]) continue ;; esac
                        grep -qx "$name" <<<"$loaded" ||
                                fail "$what: module $name is not in the guest's /proc/modules"
                        if [ "$pages" -gt 0 ] && [ "$peak" -gt 0 ]; then
                                n=$((n + 1))
                                names="$names $name"
                        fi
                done < <(echo "$text" | sed -nE 's/^Module ([^ ]+) using .*\(([0-9]+) pages\), peak allocation .*\(([0-9]+) pages\).*/\1 \2 \3/p')
                [ $n -ge 2 ] || fail "$what: $n loaded modules with pages and peaks above zero (want 2 or more)"
                if grep -qx virtio_blk <<<"$loaded"; then
                        grep -q ' virtio_blk ' <<<"$names " ||
                                fail "$what: virtio_blk (the root disk's driver, loaded) holds no pages"
                fi
                echo "$what: $n loaded modules with pages and peaks:$names"
                modules_with_pages=$names
        }
        check_summary "$variant initramfs report" "$initrd_summary"
        # module_top: the tree of each of those modules, its root line carrying the module's pages.
        for name in $modules_with_pages; do
                grep -q "^Top stack usage of module $name:\$" <<<"$initrd_top" ||
                        fail "$variant: module_top has no tree for $name"
                grep -qE "^  \[module $name\] Pages: [1-9]" <<<"$initrd_top" ||
                        fail "$variant: module_top's tree for $name holds no pages"
        done
        echo "$variant initramfs module_top: a tree for each of:$modules_with_pages"
        check_summary "$variant: real root, report --boot" "$snapshot"
        boot_times="$boot_times $variant $((boot_end - boot_start)) s,"
}
for variant in $variants; do
        console_raw=$work/console-$variant.log
        boot_and_check
done

end_time=$(date +%s)
echo "PASS: boot test in $((end_time - start_time)) s (boots:${boot_times%,})"
