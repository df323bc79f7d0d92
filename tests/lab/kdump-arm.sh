#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel lab's first kernel in a kdump scenario (tests/lab/kdump.py), run as the guest's one test:
# loads the capture kernel and its initramfs from the lab's share with the command line kdump.py wrote
# there (capture-cmdline), and panics. Returns only when it cannot arm: kexec refused, or the kernel
# reserved no memory for a capture kernel.
set -u
lab=/lab
reserved=$(cat /sys/kernel/kexec_crash_size 2>/dev/null || echo 0)
echo "crashkernel reservation: $reserved bytes; the kernel's command line: $(cat /proc/cmdline)"
[ "$reserved" -gt 0 ] || { echo "FAIL: no memory reserved for a capture kernel (crashkernel=)"; exit 1; }
grep -i 'crash kernel' /proc/iomem
if ! kexec -p "$lab/vmlinuz" --initrd="$lab/kdump-initrd.img" --append="$(cat "$lab/capture-cmdline")"; then
        echo "FAIL: kexec -p refused the capture kernel"
        exit 1
fi
[ "$(cat /sys/kernel/kexec_crash_loaded)" = 1 ] || { echo "FAIL: kexec_crash_loaded is not 1"; exit 1; }
cat /proc/modules >"$lab/first-modules"
echo "lab-guest: panicking (sysrq c)" >/dev/console
sync
echo c >/proc/sysrq-trigger
sleep 600
echo "FAIL: sysrq c did not panic the kernel"
exit 1
